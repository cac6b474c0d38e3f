//===- ImporterImpl.h - internals of the TorchScript importer ---*- C++ -*-===//
//
// The graph importer shared by TorchScriptImporter.cpp (module, graph and
// control flow) and AtenOps.cpp (one conversion per aten op).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_LIB_IMPORT_IMPORTERIMPL_H
#define TITAN_LIB_IMPORT_IMPORTERIMPL_H

#include "titan/Dialect/IndexFunction.h"
#include "titan/Dialect/TensorBuilder.h"
#include "titan/Dialect/TitanDialect.h"
#include "titan/Import/TorchScriptImporter.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

#include <torch/script.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace mlir::titan::import {

/// A TorchScript value during import: a tensor (or a complex tensor as a
/// pair of real tensors), a compile-time scalar, list, string, or a module.
struct ImportedValue {
  enum class Kind {
    None,
    Tensor,
    Complex,
    Int,
    Float,
    Bool,
    String,
    Device,
    Module,
    List,
    /// A dict of string keys (`items` in `keys`' order): a traced model's
    /// output with strict=False, as Hugging Face's return_dict gives.
    Dict,
  };
  Kind kind = Kind::None;
  /// Tensor value; the real part of a complex tensor.
  Value tensor;
  /// Imaginary part of a complex tensor.
  Value imag;
  int64_t intValue = 0;
  double floatValue = 0;
  /// String, device name, or the qualified name of a module ("" = root).
  std::string text;
  /// Elements of a list or tuple; a dict's values.
  std::vector<ImportedValue> items;
  /// A dict's keys, one per item.
  std::vector<std::string> keys;
  /// The module, for Kind::Module.
  std::optional<torch::jit::Module> module;
  /// For a number that TorchScript holds as a 0-d tensor (a Python number
  /// recorded by tracing as a tensor constant, `prim::NumToTensor` of a
  /// size): its element type as a tensor. Null for plain numbers, which
  /// become tensors as PyTorch wraps Python scalars (i64, f32, i1).
  Type wrappedType;
  /// For a value computed in one iteration of a traced loop over the
  /// entries torch.nonzero finds (FoundEntryLoops.cpp): the i1 0-d tensor
  /// that holds where that iteration's entry is found. Null elsewhere.
  Value gate;

  static ImportedValue none() { return {}; }
  static ImportedValue ofTensor(Value v);
  static ImportedValue ofComplex(Value real, Value imag);
  static ImportedValue ofInt(int64_t v);
  static ImportedValue ofFloat(double v);
  static ImportedValue ofBool(bool v);
  static ImportedValue ofString(std::string v, Kind kind = Kind::String);
  static ImportedValue ofList(std::vector<ImportedValue> items);
  static ImportedValue ofDict(std::vector<std::string> keys,
                              std::vector<ImportedValue> values);

  bool isTensor() const { return kind == Kind::Tensor; }
  bool isComplex() const { return kind == Kind::Complex; }
  bool isNone() const { return kind == Kind::None; }
  /// Int, Float or Bool.
  bool isNumber() const {
    return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool;
  }
  /// The value as a double (numbers only).
  double asDouble() const {
    return kind == Kind::Float ? floatValue : static_cast<double>(intValue);
  }
};

/// The meaningful part of a tensor whose length along one dim depends on the
/// data: torch.where(condition)'s indices (torch.nonzero) and what is
/// computed from them row by row. titan gives the dim the largest length it
/// can have; only its first `count` entries along `dim` are meaningful
/// (docs/importer.md, "Lengths that depend on the data").
struct ValidPrefix {
  int64_t dim = 0;
  /// The number of meaningful entries: a 0-d i64 tensor.
  Value count;
  /// The dim's length: the largest count.
  int64_t length = 0;
  /// The op whose result has that length, for errors
  /// ("torch.where(condition) at moe.py:21").
  std::string origin;
  /// For the positions of the nonzero entries of a vector (torch.nonzero
  /// of a 1-d condition): that condition as an i1 vector of `length`; the
  /// entry at position i is found where it holds.
  Value condition;

  /// The same prefix along dim `d` (of the tensor an op moved it to).
  ValidPrefix at(int64_t d) const {
    ValidPrefix moved = *this;
    moved.dim = d;
    return moved;
  }
};

/// The error for `what` (an op), which would read the entries of a tensor
/// past its valid prefix `prefix`: what titan supports on such tensors.
llvm::Error unsupportedValidPrefixReader(const llvm::Twine &what,
                                         const ValidPrefix &prefix);

class GraphImporter;

/// The value every element of integer tensor `v` holds where it is known
/// at import time: a splat constant, seen through reshapes, slices,
/// broadcasts and casts (the positions of a loop over found entries,
/// foundEntryItems, and what `expert_idx[0]` takes of them).
std::optional<int64_t> knownSplatInteger(Value v);

/// Adds the gates of `value` and of the items it holds to `gates`
/// (FoundEntryLoops.cpp).
void collectGates(const ImportedValue &value, llvm::SetVector<Value> &gates);

/// Gives `value` and the items it holds the gate `gate`.
void setGate(ImportedValue &value, Value gate);

/// Converts one node; returns its outputs or an error message.
using Conversion = std::function<llvm::Expected<std::vector<ImportedValue>>(
    GraphImporter &, torch::jit::Node *)>;

/// The table of aten conversions (AtenOps.cpp), by qualified node kind.
const llvm::StringMap<Conversion> &getAtenConversions();

/// Makes an llvm::Error with the message `message`.
llvm::Error makeError(const llvm::Twine &message);

/// Imports the nodes of graphs into the entry block of `func.func @forward`.
class GraphImporter {
public:
  GraphImporter(MLIRContext &context, Block &entry)
      : context(context), builder(&context), entry(entry) {
    builder.setInsertionPointToEnd(&entry);
  }

  /// Imports every node of `block`; `inputs` are the values of its inputs.
  /// Returns the values of its outputs.
  llvm::Expected<std::vector<ImportedValue>>
  importBlock(torch::jit::Block *block,
              const std::vector<ImportedValue> &inputs);

  /// The value of `value` (must have been imported).
  const ImportedValue &lookup(torch::jit::Value *value) const;
  /// The value of input `index` of `node`.
  const ImportedValue &input(torch::jit::Node *node, size_t index) const {
    return lookup(node->input(index));
  }
  /// The input of `node` named `name` by its schema, or nullptr.
  const ImportedValue *namedInput(torch::jit::Node *node,
                                  llvm::StringRef name) const;

  // Typed access to inputs; each fails with a message naming the input.
  /// A real tensor; a number known at import time becomes a 0-d constant.
  llvm::Expected<Value> tensorInput(torch::jit::Node *node, size_t index);
  llvm::Expected<int64_t> intInput(torch::jit::Node *node, size_t index);
  llvm::Expected<double> numberInput(torch::jit::Node *node, size_t index);
  llvm::Expected<std::vector<int64_t>> intListInput(torch::jit::Node *node,
                                                    size_t index);

  OpBuilder &getBuilder() { return builder; }
  MLIRContext &getContext() { return context; }
  /// Location of the node being converted.
  Location getLoc() const { return loc; }

  /// `number` as a 0-d tensor constant of its wrapped element type.
  Value materialize(const ImportedValue &number);

  /// aten::dropout, feature_dropout, alpha_dropout and
  /// feature_alpha_dropout (their in-place forms through importInPlace):
  /// the identity in evaluation (warned about once when p > 0) and with
  /// p = 0, emitTrainingDropout in training mode.
  llvm::Expected<std::vector<ImportedValue>>
  importDropout(torch::jit::Node *node);
  /// Dropout of `x` with probability `p` in training mode, as torch's
  /// _dropout_impl: elements whose emitUniform number is below `p` become
  /// 0, the others are scaled by 1 / (1 - p). With `wholeChannels`
  /// (nn.Dropout1d, 2d, 3d) one number decides each [N, C] channel; with
  /// `alpha` (nn.AlphaDropout) kept elements become a x + b and dropped
  /// ones a constant, which keep a standard normal input so.
  Value emitTrainingDropout(Value x, double p, bool wholeChannels = false,
                            bool alpha = false);
  /// f32 numbers of `shape`, uniform in [0, 1) on a grid of 2^-24, from a
  /// new stream of titan.random_uniform drawn at the elements' row-major
  /// positions in the whole tensor (so every parallel layout draws the
  /// same numbers; titan-build-train-step adds the step and the seed).
  Value emitUniform(ArrayRef<int64_t> shape);

  /// The ops evaluated at import time so far, by kind, in first-seen order.
  const std::vector<FoldedOp> &getFoldedOps() const { return foldedOps; }

  /// Creates an argument of the entry block for a parameter, buffer or
  /// input.
  Value addArgument(Type type, llvm::StringRef name, ArgRole role);
  /// Records attribute `name` = `value` for `argument` (an entry block
  /// argument), set on the function with the names and roles.
  void addArgumentAttr(Value argument, StringRef name, Attribute value) {
    argumentAttrs[argument].set(name, value);
  }
  /// The attributes recorded by addArgumentAttr for `argument`.
  NamedAttrList getArgumentAttrs(Value argument) const {
    return argumentAttrs.lookup(argument);
  }
  /// Names and roles of the entry block arguments, in order.
  const std::vector<std::pair<std::string, ArgRole>> &getArgumentNames() const {
    return argumentNames;
  }

  /// Records a fact that may explain a later error (a table sliced past its
  /// end); the error that ends the import, if one does, ends with them.
  void addErrorHint(std::string hint) {
    if (!llvm::is_contained(errorHints, hint))
      errorHints.push_back(std::move(hint));
  }
  const std::vector<std::string> &getErrorHints() const { return errorHints; }

  /// The valid prefix of `tensor`, or nullptr where all of it is
  /// meaningful.
  const ValidPrefix *validPrefix(Value tensor) const {
    auto it = validPrefixes.find(tensor);
    return it == validPrefixes.end() ? nullptr : &it->second;
  }
  /// Records that only `prefix` of `tensor` is meaningful.
  void setValidPrefix(Value tensor, ValidPrefix prefix) {
    validPrefixes[tensor] = std::move(prefix);
  }
  /// The coordinates of the true elements of each boolean mask searched so
  /// far (torch.where, x[mask]): a mask searched again gives the same ones,
  /// with the same count, so that rows selected by one mask combine.
  DenseMap<Value, SmallVector<Value>> &getMaskCoordinates() {
    return maskCoordinates;
  }
  /// The valid prefix of the tensors among the inputs of `node` (the items
  /// of list inputs too) that have one; the first one's.
  const ValidPrefix *validPrefixOfInputs(torch::jit::Node *node) const;
  /// Tells `evaluator` the value of every one-element buffer argument (its
  /// titan.diagonals, which the function gets only at the end).
  void assumeOneElementBuffers(IndexFunctionEvaluator &evaluator) const;
  /// Names `node` for an error: its op and Python source line.
  std::string opAt(torch::jit::Node *node) const;
  /// Imports the model as it runs under model.eval() (a validation
  /// program): dropout is the identity whatever the graph's train flag.
  bool evaluation = false;
  /// Emits warning `message` at the current location the first time
  /// `topic` is warned about in this import.
  void warnOnce(StringRef topic, const llvm::Twine &message) {
    if (warnedTopics.insert(topic).second)
      emitWarning(loc) << message.str();
  }

  /// The items of aten::unbind along dim 0 of `rows` [length, ...], the
  /// positions of the nonzero entries of a vector (`prefix`): a traced
  /// `for i in condition.nonzero():` (FoundEntryLoops.cpp). Item i is the
  /// position i itself, gated by whether the entry there is found.
  std::vector<ImportedValue> foundEntryItems(Value rows,
                                             const ValidPrefix &prefix);
  /// Item `i` of foundEntryItems: a scripted `for e in found:` selects
  /// each (aten::select of the loop's index).
  ImportedValue foundEntryItem(Value rows, const ValidPrefix &prefix,
                               int64_t i);
  /// Fails when `value` was computed in an iteration of a loop over found
  /// entries (it has a gate) and reaches `what` (the model's results).
  llvm::Error checkUngated(const ImportedValue &value, StringRef what) const;

  /// Hook: resolves `prim::GetAttr` on a module value (set by the module
  /// importer; absent when importing a bare graph).
  std::function<llvm::Expected<ImportedValue>(const ImportedValue &module,
                                              llvm::StringRef name)>
      getAttr;

private:
  llvm::Expected<std::vector<ImportedValue>> importNode(torch::jit::Node *node);
  /// Imports in-place `node` (`aten::mul_`) as its out-of-place form
  /// `functional` in the written tensor's type, and makes every name of the
  /// written tensor mean the result; an error when the tensor may be seen
  /// through another name.
  llvm::Expected<std::vector<ImportedValue>>
  importInPlace(torch::jit::Node *node, const Conversion &functional,
                Value gate);
  /// The gate of the iteration of a loop over found entries whose values
  /// `node` reads (null for none), or an error where it reads two
  /// iterations' values. `exempt` is set for a write whose rows are the
  /// found entries of that iteration (index_add_ or index_put_ at a
  /// torch.where inside it) into a tensor from outside it: the write adds
  /// nothing where the entry is not found, so its result is not gated.
  llvm::Expected<Value> gateOfInputs(torch::jit::Node *node, bool &exempt);
  /// Gives `outputs` of `node` the gate `gate`; the lengths that a
  /// torch.where inside the iteration finds become 0 where the iteration's
  /// entry is not found.
  void gateOutputs(torch::jit::Node *node, Value gate,
                   std::vector<ImportedValue> &outputs);
  llvm::Expected<std::vector<ImportedValue>> importIf(torch::jit::Node *node);
  /// Imports an if whose condition is `condition`, the i1 0-d tensor that
  /// aten::Bool makes of a value known only at run time: both branches,
  /// and a select of their results (if-conversion); an error where a
  /// branch has an effect outside it.
  llvm::Expected<std::vector<ImportedValue>>
  importBothBranches(torch::jit::Node *node, Value condition);
  llvm::Expected<std::vector<ImportedValue>> importLoop(torch::jit::Node *node);
  llvm::Expected<std::vector<ImportedValue>> importPrim(torch::jit::Node *node,
                                                        bool &handled);
  /// Fails when `node` reads a tensor with a valid prefix (ValidPrefix) but
  /// is not an op that keeps or consumes one (ValidPrefixes.cpp).
  llvm::Error checkValidPrefixReader(torch::jit::Node *node) const;
  /// Gives the tensor outputs of `node` the valid prefix of its inputs, at
  /// the dim the op moves it to, for the ops that compute row by row; an
  /// error where the op mixes or drops that dim.
  llvm::Error propagateValidPrefix(torch::jit::Node *node,
                                   const std::vector<ImportedValue> &outputs);
  /// `value` with its float tensors (also in lists) behind a
  /// titan.stop_gradient: what a `with torch.no_grad():` block computes.
  void stopGradients(ImportedValue &value);
  /// Describes `node` for an error: kind, schema and Python source line.
  std::string describe(torch::jit::Node *node) const;
  /// The MLIR location of `node`'s Python source.
  Location locationOf(torch::jit::Node *node);
  /// The Python source of `node` as "file:line", or "".
  std::string sourceOf(torch::jit::Node *node) const;
  /// Counts `node` among the folded ops if it was evaluated at import time.
  void recordIfFolded(torch::jit::Node *node,
                      const std::vector<ImportedValue> &outputs);

  MLIRContext &context;
  OpBuilder builder;
  Block &entry;
  Location loc = UnknownLoc::get(&context);
  std::unordered_map<const torch::jit::Value *, ImportedValue> values;
  std::vector<std::pair<std::string, ArgRole>> argumentNames;
  DenseMap<Value, NamedAttrList> argumentAttrs;
  std::vector<FoldedOp> foldedOps;
  llvm::StringMap<size_t> foldedIndex;
  std::vector<std::string> errorHints;
  /// The branch each prim::If imported so far took (the last time it was
  /// imported, in a loop), which the aliasing of in-place ops follows.
  DenseMap<const torch::jit::Node *, torch::jit::Block *> takenBranches;
  /// How many `with torch.no_grad():` blocks enclose the node imported.
  int noGradDepth = 0;
  /// The tensors with a valid prefix (lengths that depend on the data).
  DenseMap<Value, ValidPrefix> validPrefixes;
  /// See getMaskCoordinates.
  DenseMap<Value, SmallVector<Value>> maskCoordinates;
  /// The gate of each count that gateOutputs made 0 where an iteration's
  /// entry is not found.
  DenseMap<Value, Value> gateOfCount;
  /// What each gate's loop iterates over, for errors ("the entries
  /// aten::nonzero at moe.py:19 finds, iteration 2").
  DenseMap<Value, std::string> gateOrigins;
  /// The topics warnOnce warned about.
  llvm::StringSet<> warnedTopics;
  /// The random streams (titan.random_uniform) taken so far: each dropout
  /// in training mode and each random op (torch.rand, bernoulli_, ...)
  /// draws from its own.
  int64_t randomStreams = 0;
};

//===----------------------------------------------------------------------===//
// Helpers shared by the conversions.
//===----------------------------------------------------------------------===//

/// Row-major offsets into a tensor of `sizes`, as a tensor of the i64 type
/// `type`: the sum over dims d of position(d) * (the product of the sizes
/// after d), position(d) a tensor of `type` (an iota along d, or an index
/// along it); 0 for no dims.
Value rowMajorOffsets(TensorBuilder &tb, RankedTensorType type,
                      ArrayRef<int64_t> sizes,
                      function_ref<Value(int64_t)> position);

/// Registers, once, the schemas of the ops of newer PyTorch releases that
/// the linked LibTorch lacks (scaled_dot_product_attention, nonzero_static,
/// rms_norm), so that models saved by those releases load and import.
void registerNewerTorchOperators();

/// For an error of TorchScript's loader that names an operator this
/// LibTorch lacks ("Unknown builtin op: aten::X", a model saved by a newer
/// PyTorch), what the user should know: the operator, the LibTorch titan
/// links, the newer operators titan reads and what to do; otherwise none.
std::optional<std::string> explainUnknownOperator(llvm::StringRef loaderError);

/// The MLIR element type of a torch scalar type, or null.
Type toElementType(MLIRContext &context, c10::ScalarType type);
/// The torch dtype code of an MLIR element type (toElementType's inverse;
/// float32 for any other type).
int64_t dtypeCode(Type type);
/// The ranked tensor type of `value`.
RankedTensorType tensorType(Value value);
/// The elements of `tensor` (contiguous, of a dtype toElementType converts)
/// as a dense attribute of `type`.
DenseElementsAttr denseElementsOf(const at::Tensor &tensor,
                                  RankedTensorType type);

} // namespace mlir::titan::import

#endif // TITAN_LIB_IMPORT_IMPORTERIMPL_H
