//===- TorchScriptImporter.cpp - TorchScript -> titan dialect -------------===//
//
// Loads a TorchScript module, inlines its forward method, and walks the graph
// with a value map: tensors become titan ops (AtenOps.cpp), while everything
// TorchScript computes on scalars, lists and shapes is evaluated at import
// time, because titan programs have static shapes. Control flow is resolved
// the same way: `prim::If` on a known condition imports one branch and
// `prim::Loop` with a known trip count is unrolled.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "titan/Dialect/ElementTypes.h"
#include "titan/Dialect/FunctionAttributes.h"
#include "titan/Dialect/Provenance.h"
#include "titan/Dialect/TensorBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/csrc/jit/passes/constant_pooling.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>

#include <sstream>

using namespace mlir;
using namespace mlir::titan;
using namespace mlir::titan::import;

//===----------------------------------------------------------------------===//
// ImportedValue
//===----------------------------------------------------------------------===//

ImportedValue ImportedValue::ofTensor(Value v) {
  ImportedValue result;
  result.kind = Kind::Tensor;
  result.tensor = v;
  return result;
}

ImportedValue ImportedValue::ofComplex(Value real, Value imag) {
  ImportedValue result;
  result.kind = Kind::Complex;
  result.tensor = real;
  result.imag = imag;
  return result;
}

ImportedValue ImportedValue::ofInt(int64_t v) {
  ImportedValue result;
  result.kind = Kind::Int;
  result.intValue = v;
  return result;
}

ImportedValue ImportedValue::ofFloat(double v) {
  ImportedValue result;
  result.kind = Kind::Float;
  result.floatValue = v;
  return result;
}

ImportedValue ImportedValue::ofBool(bool v) {
  ImportedValue result;
  result.kind = Kind::Bool;
  result.intValue = v;
  return result;
}

ImportedValue ImportedValue::ofString(std::string v, Kind kind) {
  ImportedValue result;
  result.kind = kind;
  result.text = std::move(v);
  return result;
}

ImportedValue ImportedValue::ofList(std::vector<ImportedValue> items) {
  ImportedValue result;
  result.kind = Kind::List;
  result.items = std::move(items);
  return result;
}

ImportedValue ImportedValue::ofDict(std::vector<std::string> keys,
                                    std::vector<ImportedValue> values) {
  ImportedValue result;
  result.kind = Kind::Dict;
  result.keys = std::move(keys);
  result.items = std::move(values);
  return result;
}

llvm::Error mlir::titan::import::makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

RankedTensorType mlir::titan::import::tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

Type mlir::titan::import::toElementType(MLIRContext &context,
                                        c10::ScalarType type) {
  switch (type) {
  case c10::ScalarType::Float:
    return Float32Type::get(&context);
  case c10::ScalarType::Double:
    return Float64Type::get(&context);
  case c10::ScalarType::Half:
    return Float16Type::get(&context);
  case c10::ScalarType::BFloat16:
    return BFloat16Type::get(&context);
  case c10::ScalarType::Long:
    return IntegerType::get(&context, 64);
  case c10::ScalarType::Int:
    return IntegerType::get(&context, 32);
  case c10::ScalarType::Bool:
    return IntegerType::get(&context, 1);
  default:
    return {};
  }
}

int64_t mlir::titan::import::dtypeCode(Type type) {
  if (type.isF64())
    return static_cast<int64_t>(c10::ScalarType::Double);
  if (type.isF16())
    return static_cast<int64_t>(c10::ScalarType::Half);
  if (type.isBF16())
    return static_cast<int64_t>(c10::ScalarType::BFloat16);
  if (type.isInteger(64))
    return static_cast<int64_t>(c10::ScalarType::Long);
  if (type.isInteger(32))
    return static_cast<int64_t>(c10::ScalarType::Int);
  if (type.isInteger(1))
    return static_cast<int64_t>(c10::ScalarType::Bool);
  return static_cast<int64_t>(c10::ScalarType::Float);
}

DenseElementsAttr mlir::titan::import::denseElementsOf(const at::Tensor &tensor,
                                                       RankedTensorType type) {
  if (type.getElementType().isInteger(1)) {
    // MLIR packs i1 elements differently than torch.
    const bool *data = tensor.data_ptr<bool>();
    SmallVector<bool> bits(data, data + tensor.numel());
    return DenseElementsAttr::get(type, bits);
  }
  ArrayRef<char> raw(static_cast<const char *>(tensor.data_ptr()),
                     tensor.numel() * tensor.element_size());
  return DenseElementsAttr::getFromRawBuffer(type, raw);
}

/// Whether `tensor` holds the data of all its elements (a shape-only
/// export's expanded views do not, and must never be materialized).
static bool hasAllData(const at::Tensor &tensor) {
  return tensor.has_storage() &&
         tensor.storage().nbytes() >=
             size_t(tensor.numel()) * tensor.element_size();
}

/// The diagonals of a buffer [1, ..., 1, n, n] that is constant along each
/// diagonal of its last two dims (titan.diagonals: element [..., i, j] is
/// diagonal j - i + n - 1), or null: for any other tensor, and for one
/// without its data (a shape-only export).
static DenseElementsAttr diagonalsOf(const at::Tensor &tensor, Type element) {
  // One element (GPT-NeoX's `norm_factor`): its one diagonal.
  if (tensor.numel() == 1 && !tensor.is_complex() && hasAllData(tensor))
    return denseElementsOf(tensor.reshape({1}).contiguous(),
                           RankedTensorType::get({1}, element));
  int64_t rank = tensor.dim();
  if (rank < 2 || tensor.size(-1) != tensor.size(-2) || tensor.size(-1) < 2 ||
      tensor.numel() != tensor.size(-1) * tensor.size(-2) ||
      tensor.is_complex() || !hasAllData(tensor))
    return {};
  int64_t n = tensor.size(-1);
  at::Tensor square = tensor.reshape({n, n});
  // Constant along diagonals: each element equals its upper-left neighbour
  // (at::equal never matches a NaN).
  if (!at::equal(square.narrow(0, 1, n - 1).narrow(1, 1, n - 1),
                 square.narrow(0, 0, n - 1).narrow(1, 0, n - 1)))
    return {};
  // Diagonal d = j - i + n - 1: the first column bottom up, then the first
  // row after its first element.
  at::Tensor diagonals = at::cat({square.select(1, 0).flip({0}),
                                  square.select(0, 0).narrow(0, 1, n - 1)})
                             .contiguous();
  return denseElementsOf(diagonals,
                         RankedTensorType::get({2 * n - 1}, element));
}

/// Converts a compile-time IValue (a constant or a module attribute).
static llvm::Expected<ImportedValue> fromIValue(const c10::IValue &value) {
  if (value.isNone())
    return ImportedValue::none();
  if (value.isBool())
    return ImportedValue::ofBool(value.toBool());
  if (value.isInt())
    return ImportedValue::ofInt(value.toInt());
  if (value.isDouble())
    return ImportedValue::ofFloat(value.toDouble());
  if (value.isString())
    return ImportedValue::ofString(value.toStringRef());
  if (value.isDevice())
    return ImportedValue::ofString(value.toDevice().str(),
                                   ImportedValue::Kind::Device);
  if (value.isList() || value.isTuple()) {
    std::vector<ImportedValue> items;
    auto addAll = [&](auto &&elements) -> llvm::Error {
      for (const c10::IValue &element : elements) {
        llvm::Expected<ImportedValue> item = fromIValue(element);
        if (!item)
          return item.takeError();
        items.push_back(std::move(*item));
      }
      return llvm::Error::success();
    };
    if (llvm::Error error = value.isList()
                                ? addAll(value.toListRef())
                                : addAll(value.toTupleRef().elements()))
      return std::move(error);
    return ImportedValue::ofList(std::move(items));
  }
  return makeError("a constant of type " + value.tagKind() +
                   " is not supported");
}

//===----------------------------------------------------------------------===//
// GraphImporter
//===----------------------------------------------------------------------===//

const ImportedValue &GraphImporter::lookup(torch::jit::Value *value) const {
  auto it = values.find(value);
  assert(it != values.end() && "value used before its definition");
  return it->second;
}

const ImportedValue *GraphImporter::namedInput(torch::jit::Node *node,
                                               llvm::StringRef name) const {
  const c10::FunctionSchema *schema = node->maybeSchema();
  if (!schema)
    return nullptr;
  for (auto [index, argument] : llvm::enumerate(schema->arguments()))
    if (argument.name() == name && index < node->inputs().size())
      return &lookup(node->input(index));
  return nullptr;
}

llvm::Expected<Value> GraphImporter::tensorInput(torch::jit::Node *node,
                                                 size_t index) {
  const ImportedValue &value = input(node, index);
  if (value.isNumber())
    return materialize(value);
  if (!value.isTensor())
    return makeError(llvm::formatv("input #{0} must be a real tensor", index));
  return value.tensor;
}

Value GraphImporter::materialize(const ImportedValue &number) {
  Type element = number.wrappedType;
  if (!element)
    element = number.kind == ImportedValue::Kind::Float
                  ? Type(Float32Type::get(&context))
              : number.kind == ImportedValue::Kind::Bool
                  ? Type(IntegerType::get(&context, 1))
                  : Type(IntegerType::get(&context, 64));
  auto type = RankedTensorType::get({}, element);
  Attribute value = isa<FloatType>(element)
                        ? Attribute(FloatAttr::get(element, number.asDouble()))
                        : Attribute(IntegerAttr::get(element, number.intValue));
  return ConstantOp::create(builder, loc, DenseElementsAttr::get(type, value));
}

llvm::Expected<int64_t> GraphImporter::intInput(torch::jit::Node *node,
                                                size_t index) {
  const ImportedValue &value = input(node, index);
  if (value.kind != ImportedValue::Kind::Int &&
      value.kind != ImportedValue::Kind::Bool)
    return makeError(llvm::formatv(
        "input #{0} must be an integer known at compile time", index));
  return value.intValue;
}

llvm::Expected<double> GraphImporter::numberInput(torch::jit::Node *node,
                                                  size_t index) {
  const ImportedValue &value = input(node, index);
  if (!value.isNumber())
    return makeError(llvm::formatv(
        "input #{0} must be a number known at compile time", index));
  return value.asDouble();
}

llvm::Expected<std::vector<int64_t>>
GraphImporter::intListInput(torch::jit::Node *node, size_t index) {
  const ImportedValue &value = input(node, index);
  if (value.kind == ImportedValue::Kind::Int)
    return std::vector<int64_t>{value.intValue};
  if (value.kind != ImportedValue::Kind::List)
    return makeError(llvm::formatv(
        "input #{0} must be a list of integers known at compile time", index));
  std::vector<int64_t> result;
  for (const ImportedValue &item : value.items) {
    if (item.kind != ImportedValue::Kind::Int)
      return makeError(llvm::formatv(
          "input #{0} must be a list of integers known at compile time",
          index));
    result.push_back(item.intValue);
  }
  return result;
}

Value GraphImporter::addArgument(Type type, llvm::StringRef name,
                                 ArgRole role) {
  // Parameters and buffers come before the model inputs.
  unsigned position = entry.getNumArguments();
  if (role != ArgRole::Input)
    while (position > 0 && argumentNames[position - 1].second == ArgRole::Input)
      --position;
  argumentNames.insert(argumentNames.begin() + position, {name.str(), role});
  return entry.insertArgument(position, type, UnknownLoc::get(&context));
}

namespace {
/// A frame of a traced op's Python stack.
struct ModelFrame {
  std::string path;
  unsigned line = 0;
  std::string function;
};
} // namespace

/// The first frame outside torch of a traced op's Python stack ("file(line):
/// function" per frame, innermost first, which the range holds); none for a
/// scripted range.
static std::optional<ModelFrame>
findModelFrame(const torch::jit::SourceRange &range) {
  if (!range.source())
    return std::nullopt;
  std::string stack = range.text().str();
  llvm::SmallVector<llvm::StringRef> frames;
  llvm::StringRef(stack).split(frames, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef frame : frames) {
    auto [where, function] = frame.trim().split("): ");
    auto [path, lineText] = where.rsplit('(');
    unsigned line = 0;
    if (function.empty() || lineText.empty() || path.contains("/torch/") ||
        lineText.getAsInteger(10, line))
      continue;
    return ModelFrame{path.str(), line, function.str()};
  }
  return std::nullopt;
}

/// findModelFrame as "file:line, function".
static std::optional<std::string>
modelFrameOf(const torch::jit::SourceRange &range) {
  std::optional<ModelFrame> frame = findModelFrame(range);
  if (!frame)
    return std::nullopt;
  return llvm::formatv("{0}:{1}, {2}", frame->path, frame->line,
                       frame->function)
      .str();
}

llvm::Expected<std::vector<ImportedValue>>
GraphImporter::importDropout(torch::jit::Node *node) {
  // Dropout is the identity in evaluation and with p = 0.
  llvm::Expected<double> p = numberInput(node, 1);
  llvm::Expected<int64_t> train = intInput(node, 2);
  if (!p || !train)
    return makeError("dropout needs a constant p and train flag");
  if (*p < 0.0 || *p > 1.0)
    return makeError(llvm::formatv(
        "dropout probability has to be between 0 and 1, but got {0}", *p));
  StringRef kind = node->kind().toUnqualString();
  bool wholeChannels = kind.starts_with("feature_");
  bool alpha = kind.contains("alpha_dropout");
  const ImportedValue &value = input(node, 0);
  if (*train && *p != 0.0 && !evaluation) {
    if (!value.isTensor() ||
        !isa<FloatType>(
            cast<RankedTensorType>(value.tensor.getType()).getElementType()))
      return makeError("dropout needs a floating-point tensor");
    if (wholeChannels &&
        cast<RankedTensorType>(value.tensor.getType()).getRank() < 2)
      return makeError("dropout of whole channels (nn.Dropout1d, 2d, 3d, "
                       "FeatureAlphaDropout) needs an input [N, C, ...] of "
                       "at least 2 dims");
    return std::vector<ImportedValue>{ImportedValue::ofTensor(
        emitTrainingDropout(value.tensor, *p, wholeChannels, alpha))};
  }
  // A model exported in eval mode would train with dropout in PyTorch: say
  // once that titan does not.
  if (*p != 0.0 && !*train && !evaluation &&
      !warnedTopics.contains("eval dropout")) {
    torch::jit::SourceRange range = node->sourceRange();
    if (auto original = range.findSourceRangeThatGenerated())
      range = *original;
    std::optional<std::string> frame = modelFrameOf(range);
    std::string where = frame ? *frame : sourceOf(node);
    warnOnce("eval dropout",
             "the model's dropout (p = " + llvm::formatv("{0}", *p).str() +
                 (where.empty() ? "" : ", at " + where) +
                 ") was exported in eval mode: titan trains without "
                 "dropout (set p = 0 to say so, or export with "
                 "model.train() to train with it)");
  }
  return std::vector<ImportedValue>{value};
}

Value GraphImporter::emitUniform(ArrayRef<int64_t> shape) {
  TensorBuilder tb(builder, loc);
  // The elements' row-major positions: sums of iotas, whose lowering to a
  // rank's shard adds the shard's offset, so that a position is the same
  // under any layout.
  auto positions = RankedTensorType::get(shape, builder.getI64Type());
  Value counters = rowMajorOffsets(tb, positions, shape, [&](int64_t dim) {
    return tb.iota(positions, dim);
  });
  return RandomUniformOp::create(
      builder, loc, positions.clone(builder.getF32Type()), counters,
      /*step=*/Value(), builder.getI64IntegerAttr(randomStreams++),
      builder.getI64IntegerAttr(0));
}

Value GraphImporter::emitTrainingDropout(Value x, double p, bool wholeChannels,
                                         bool alpha) {
  TensorBuilder tb(builder, loc);
  ArrayRef<int64_t> shape = cast<RankedTensorType>(x.getType()).getShape();
  // PyTorch's make_feature_noise: one number per [N, C] channel.
  SmallVector<int64_t> noiseShape(shape);
  if (wholeChannels)
    for (int64_t &size : llvm::drop_begin(noiseShape, 2))
      size = 1;
  Value uniform = emitUniform(noiseShape);
  Value keep = tb.compare(
      "ge", uniform, tb.splat(cast<RankedTensorType>(uniform.getType()), p));
  if (wholeChannels)
    keep = tb.broadcastTo(keep, shape);
  if (p >= 1.0)
    return tb.splatLike(x, 0.0);
  if (!alpha)
    return tb.select(keep, tb.scale(x, 1.0 / (1.0 - p)), tb.splatLike(x, 0.0));
  // Alpha dropout (SELU's): kept elements a x + alpha' a p, dropped ones
  // alpha' a (p - 1), which keep a standard normal input's mean and
  // variance (torch's _dropout_impl, alpha' = -SELU's negative saturation).
  constexpr double kSaturation = 1.7580993408473766;
  double a = 1.0 / std::sqrt((kSaturation * kSaturation * p + 1) * (1 - p));
  Value kept =
      tb.binary<AddOp>(tb.scale(x, a), tb.splatLike(x, kSaturation * a * p));
  return tb.select(keep, kept, tb.splatLike(x, kSaturation * a * (p - 1)));
}

std::string GraphImporter::describe(torch::jit::Node *node) const {
  std::string text = "'" + std::string(node->kind().toQualString()) + "'";
  if (const c10::FunctionSchema *schema = node->maybeSchema()) {
    std::ostringstream os;
    os << *schema;
    text += " (schema: " + os.str() + ")";
  }
  torch::jit::SourceRange range = node->sourceRange();
  if (auto original = range.findSourceRangeThatGenerated())
    range = *original;
  if (auto fileLineCol = range.file_line_col()) {
    auto [file, line, col] = *fileLineCol;
    text += llvm::formatv(" at {0}:{1}", file, line).str();
    if (range.source()) {
      std::string source =
          range.source()
              ->get_line(range.source()->lineno_for_offset(range.start()))
              .str();
      text += ": " + llvm::StringRef(source).trim().str();
    }
    // A traced op of a torch.nn module or function is located inside
    // PyTorch: name the model's own line too.
    if (llvm::StringRef(file).contains("/torch/"))
      if (std::optional<std::string> frame = modelFrameOf(range))
        text += " (in the model: " + *frame + ")";
  }
  return text;
}

std::string GraphImporter::sourceOf(torch::jit::Node *node) const {
  torch::jit::SourceRange range = node->sourceRange();
  if (auto original = range.findSourceRangeThatGenerated())
    range = *original;
  if (auto fileLineCol = range.file_line_col()) {
    auto [file, line, col] = *fileLineCol;
    if (!file.empty())
      return llvm::formatv("{0}:{1}", llvm::sys::path::filename(file), line);
  }
  return "";
}

void GraphImporter::recordIfFolded(torch::jit::Node *node,
                                   const std::vector<ImportedValue> &outputs) {
  torch::jit::NodeKind kind = node->kind();
  std::string name = kind.toQualString();
  bool controlFlow =
      kind == torch::jit::prim::If || kind == torch::jit::prim::Loop;
  if (kind == torch::jit::prim::Constant) {
    // Only a 0-d tensor that tracing recorded for a Python number is an
    // assumption; other constants are constants.
    if (node->output()->type()->kind() != c10::TypeKind::TensorType ||
        outputs.empty() || !outputs[0].isNumber())
      return;
    name += " (0-d tensor)";
  } else if (!controlFlow) {
    // Plumbing that computes nothing, and nodes that emitted tensor ops.
    if (kind == torch::jit::prim::GetAttr ||
        kind == torch::jit::prim::ListConstruct ||
        kind == torch::jit::prim::TupleConstruct ||
        kind == torch::jit::prim::ListUnpack ||
        kind == torch::jit::prim::TupleUnpack ||
        kind == c10::Symbol::fromQualString("prim::TupleIndex"))
      return;
    if (llvm::any_of(outputs, [](const ImportedValue &value) {
          return value.isTensor() || value.isComplex() ||
                 value.kind == ImportedValue::Kind::Module;
        }))
      return;
  }
  auto [it, inserted] = foldedIndex.try_emplace(name, foldedOps.size());
  if (inserted)
    foldedOps.push_back(FoldedOp{name, 0, sourceOf(node)});
  ++foldedOps[it->second].count;
}

/// The node attribute in which the importer records the path of the module
/// whose method a node was inlined from.
static c10::Symbol modulePathAttr() {
  return c10::Symbol::attr("titan_module_path");
}

Location GraphImporter::locationOf(torch::jit::Node *node) {
  Location loc = UnknownLoc::get(&context);
  torch::jit::SourceRange range = node->sourceRange();
  if (auto original = range.findSourceRangeThatGenerated())
    range = *original;
  if (auto fileLineCol = range.file_line_col()) {
    auto [file, line, col] = *fileLineCol;
    loc = FileLineColLoc::get(&context, file, line, col + 1);
    // An op traced inside PyTorch (nn.Dropout, F.gelu) is located at the
    // model's line that called it: later passes' diagnostics point there.
    if (StringRef(file).contains("/torch/"))
      if (std::optional<ModelFrame> frame = findModelFrame(range))
        loc = FileLineColLoc::get(&context, frame->path, frame->line, 1);
  }
  if (node->hasAttribute(modulePathAttr()))
    loc = addModulePath(loc, node->s(modulePathAttr()));
  return loc;
}

void GraphImporter::assumeOneElementBuffers(
    IndexFunctionEvaluator &evaluator) const {
  for (const auto &[argument, attrs] : argumentAttrs) {
    auto type = cast<RankedTensorType>(argument.getType());
    auto diagonals = dyn_cast_or_null<DenseElementsAttr>(
        attrs.get(TitanDialect::kDiagonalsAttrName));
    if (!diagonals || type.getNumElements() != 1 ||
        diagonals.getNumElements() != 1)
      continue;
    double value =
        isa<FloatType>(diagonals.getElementType())
            ? (*diagonals.getValues<APFloat>().begin()).convertToDouble()
            : static_cast<double>(
                  (*diagonals.getValues<APInt>().begin()).getSExtValue());
    evaluator.assume(argument, IndexFunction::constant(type.getRank(), value));
  }
}

void GraphImporter::stopGradients(ImportedValue &value) {
  TensorBuilder tb(builder, loc);
  auto stopped = [&](Value tensor) {
    if (!tensor || tensor.getDefiningOp<StopGradientOp>() ||
        !isa<FloatType>(
            cast<RankedTensorType>(tensor.getType()).getElementType()))
      return tensor;
    Value result = tb.unary<StopGradientOp>(tensor);
    if (const ValidPrefix *prefix = validPrefix(tensor))
      setValidPrefix(result, *prefix);
    return result;
  };
  if (value.isTensor() || value.isComplex()) {
    value.tensor = stopped(value.tensor);
    value.imag = stopped(value.imag);
  }
  for (ImportedValue &item : value.items)
    stopGradients(item);
}

llvm::Expected<std::vector<ImportedValue>>
GraphImporter::importBlock(torch::jit::Block *block,
                           const std::vector<ImportedValue> &inputs) {
  for (auto [value, imported] : llvm::zip(block->inputs(), inputs))
    values[value] = imported;
  for (torch::jit::Node *node : block->nodes()) {
    llvm::Expected<std::vector<ImportedValue>> outputs = importNode(node);
    if (!outputs)
      return outputs.takeError();
    if (outputs->size() != node->outputs().size())
      return makeError(llvm::formatv(
          "internal error: {0} produced {1} values for {2} outputs",
          describe(node), outputs->size(), node->outputs().size()));
    recordIfFolded(node, *outputs);
    if (noGradDepth > 0)
      for (ImportedValue &output : *outputs)
        stopGradients(output);
    for (auto [value, imported] : llvm::zip(node->outputs(), *outputs))
      values[value] = std::move(imported);
  }
  std::vector<ImportedValue> results;
  for (torch::jit::Value *output : block->outputs())
    results.push_back(lookup(output));
  return results;
}

/// Whether `node` is an in-place op: its schema writes its first operand
/// and returns it (`Tensor(a!) self -> Tensor(a!)`).
static bool writesInPlace(torch::jit::Node *node) {
  const c10::FunctionSchema *schema = node->maybeSchema();
  if (!schema || schema->arguments().empty() || schema->returns().size() != 1)
    return false;
  const c10::AliasInfo *self = schema->arguments()[0].alias_info();
  return self && self->isWrite() && schema->returns()[0].alias_info() &&
         StringRef(node->kind().toUnqualString()).ends_with("_");
}

/// Whether an output of `node` may be another name of an input's tensor (a
/// view: `aten::view`, `aten::transpose`, `aten::to`, ...), or `node` is an
/// op without a schema that could say.
static bool mayReturnAnAlias(torch::jit::Node *node) {
  const c10::FunctionSchema *schema = node->maybeSchema();
  if (!schema)
    return true;
  return llvm::any_of(schema->returns(), [](const c10::Argument &result) {
    return result.alias_info() != nullptr;
  });
}

/// The branch that `ifNode` (a prim::If) took when it was imported, or
/// nullptr when it was not imported (yet).
using TakenBranch = function_ref<torch::jit::Block *(torch::jit::Node *)>;

/// Whether `node` runs only in a branch that an imported prim::If did not
/// take.
static bool isInBranchNotTaken(torch::jit::Node *node,
                               TakenBranch takenBranch) {
  for (torch::jit::Block *block = node->owningBlock(); block->owningNode();
       block = block->owningNode()->owningBlock()) {
    torch::jit::Node *owner = block->owningNode();
    if (owner->kind() == c10::prim::If && takenBranch(owner) &&
        takenBranch(owner) != block)
      return true;
  }
  return false;
}

/// The block `node` runs in, seen through the branches imported prim::Ifs
/// took (at import time a branch's ops run where its prim::If stands): the
/// first enclosing block that is not such a branch.
static torch::jit::Block *getRunningBlock(torch::jit::Node *node,
                                          TakenBranch takenBranch) {
  torch::jit::Block *block = node->owningBlock();
  while (torch::jit::Node *owner = block->owningNode()) {
    if (owner->kind() != c10::prim::If || takenBranch(owner) != block)
      break;
    block = owner->owningBlock();
  }
  return block;
}

/// What an imported `.to(dtype)`, `.type_as(x)` or `.contiguous()` did:
/// returned its input (the same tensor, another name of it), or converted
/// it into a new tensor; None for other ops and ones not imported yet.
enum class Converted { None, SameTensor, NewTensor };
using ConvertedBy = function_ref<Converted(torch::jit::Node *)>;

/// Whether `node` is the end of the branch an imported prim::If took: it
/// returns the values of the if's results.
static bool returnsFromBranchTaken(torch::jit::Node *node,
                                   TakenBranch takenBranch) {
  torch::jit::Node *owner = node->owningBlock()->owningNode();
  return node->kind() == c10::prim::Return && owner &&
         owner->kind() == c10::prim::If &&
         takenBranch(owner) == node->owningBlock();
}

/// Every name of the tensor `value` holds: the value of the op that created
/// it (or of a conversion that made a new tensor), the results of the
/// in-place ops that write it (each returns the tensor it wrote), of the
/// conversions that returned it as it was (`.float()` of a float tensor)
/// and of imported prim::Ifs whose branch taken returns one of those; empty
/// when the tensor may have other names: it is an input, a parameter or
/// buffer, a constant, or a view of another tensor.
static SmallVector<torch::jit::Value *> namesOfTensor(torch::jit::Value *value,
                                                      TakenBranch takenBranch,
                                                      ConvertedBy convertedBy) {
  bool copied = false;
  while (true) {
    torch::jit::Node *node = value->node();
    if (writesInPlace(node) || convertedBy(node) == Converted::SameTensor) {
      value = node->input(0);
    } else if (node->kind() == c10::prim::If && takenBranch(node)) {
      value = takenBranch(node)->outputs()[value->offset()];
    } else {
      copied = convertedBy(node) == Converted::NewTensor;
      break;
    }
  }
  if (!copied && mayReturnAnAlias(value->node()))
    return {};
  SmallVector<torch::jit::Value *> names{value};
  for (size_t i = 0; i < names.size(); ++i)
    for (const torch::jit::Use &use : names[i]->uses()) {
      if (use.offset == 0 && (writesInPlace(use.user) ||
                              convertedBy(use.user) == Converted::SameTensor))
        names.push_back(use.user->output());
      if (returnsFromBranchTaken(use.user, takenBranch))
        names.push_back(
            use.user->owningBlock()->owningNode()->output(use.offset));
    }
  return names;
}

/// Whether the values of prim `node` are computed from its inputs' (a
/// number from a tensor, a detached tensor); not for those that move
/// values whole (list and tuple construction and unpacking, control flow,
/// calls, whose values keep their own gates).
static bool computesFromInputs(torch::jit::Node *node) {
  torch::jit::NodeKind kind = node->kind();
  return kind != torch::jit::prim::ListConstruct &&
         kind != torch::jit::prim::TupleConstruct &&
         kind != torch::jit::prim::ListUnpack &&
         kind != torch::jit::prim::TupleUnpack &&
         kind != c10::Symbol::fromQualString("prim::TupleIndex") &&
         kind != c10::Symbol::fromQualString("aten::__getitem__") &&
         kind != torch::jit::prim::If && kind != torch::jit::prim::Loop &&
         kind != torch::jit::prim::CallMethod &&
         kind != torch::jit::prim::CallFunction &&
         kind != torch::jit::prim::GetAttr;
}

llvm::Expected<std::vector<ImportedValue>>
GraphImporter::importNode(torch::jit::Node *node) {
  loc = locationOf(node);
  bool handled = false;
  llvm::Expected<std::vector<ImportedValue>> prim = importPrim(node, handled);
  if (handled || !prim) {
    if (!prim)
      return makeError(describe(node) + ": " + toString(prim.takeError()));
    if (computesFromInputs(node)) {
      bool exempt = false;
      llvm::Expected<Value> gate = gateOfInputs(node, exempt);
      if (!gate)
        return makeError(describe(node) + ": " + toString(gate.takeError()));
      if (*gate)
        gateOutputs(node, *gate, *prim);
    }
    return prim;
  }
  if (llvm::Error error = checkValidPrefixReader(node))
    return makeError(describe(node) + ": " + toString(std::move(error)));
  bool exempt = false;
  llvm::Expected<Value> gate = gateOfInputs(node, exempt);
  if (!gate)
    return makeError(describe(node) + ": " + toString(gate.takeError()));
  const llvm::StringMap<Conversion> &conversions = getAtenConversions();
  auto it = conversions.find(node->kind().toQualString());
  llvm::Expected<std::vector<ImportedValue>> outputs =
      std::vector<ImportedValue>();
  if (it != conversions.end()) {
    // A node whose inputs no converter expects (another overload, an
    // argument missing) makes torch's accessors throw: an error naming
    // the node, not a crash.
    try {
      outputs = it->second(*this, node);
    } catch (const std::exception &error) {
      return makeError("cannot import " + describe(node) +
                       " (an overload or argument titan does not expect: " +
                       error.what() + ")");
    }
  } else if (writesInPlace(node)) {
    // `aten::mul_` is `aten::mul` written into its first operand.
    auto functional =
        conversions.find(StringRef(node->kind().toQualString()).drop_back());
    if (functional == conversions.end())
      return makeError("unsupported TorchScript op " + describe(node) +
                       "; see docs/importer.md for the supported ops");
    outputs = importInPlace(node, functional->second, exempt ? Value() : *gate);
  } else {
    return makeError("unsupported TorchScript op " + describe(node) +
                     "; see docs/importer.md for the supported ops");
  }
  if (!outputs)
    return makeError(describe(node) + ": " + toString(outputs.takeError()));
  if (llvm::Error error = propagateValidPrefix(node, *outputs))
    return makeError(describe(node) + ": " + toString(std::move(error)));
  if (*gate && !exempt)
    gateOutputs(node, *gate, *outputs);
  return outputs;
}

/// Whether everything that reads `view`'s outputs (a view or an in-place
/// op) does so before `write`, through views too: what it read is the old
/// value, and nothing names it after the write (`x[:, 1:] = x[:, 1:] * 2`,
/// or an earlier write through another slice).
static bool isDoneBefore(torch::jit::Node *view, torch::jit::Node *write) {
  for (torch::jit::Value *output : view->outputs())
    for (const torch::jit::Use &use : output->uses())
      if (use.user->owningBlock() != write->owningBlock() ||
          !use.user->isBefore(write) ||
          (mayReturnAnAlias(use.user) && !isDoneBefore(use.user, write)))
        return false;
  return true;
}

/// Whether `node` is a view that an in-place op may write through: a slice
/// or a select (`x[:, a:b] = y`, `x[..., 0].fill_(v)`).
static bool isWritableView(torch::jit::Node *node) {
  return node->kind() == c10::Symbol::fromQualString("aten::slice") ||
         node->kind() == c10::Symbol::fromQualString("aten::select");
}

/// `source` with the elements that `start`, `limit` and `step` (one each
/// per dim) select replaced by `updated` (of their shape), built of slices,
/// reshapes, pads and concatenations (which titan differentiates), one dim
/// at a time from `dim`. A strided dim (`pe[:, 1::2] = ...`) is split into
/// [count, step]: lane 0 of the step axis is the selected elements.
static Value insertBlock(TensorBuilder &tb, Value source,
                         ArrayRef<int64_t> start, ArrayRef<int64_t> limit,
                         ArrayRef<int64_t> step, Value updated,
                         int64_t dim = 0) {
  auto type = cast<RankedTensorType>(source.getType());
  while (dim < type.getRank() && start[dim] == 0 &&
         limit[dim] == type.getDimSize(dim) && step[dim] == 1)
    ++dim;
  if (dim == type.getRank())
    return updated;
  int64_t size = type.getDimSize(dim);
  if (step[dim] == 1) {
    Value inner =
        insertBlock(tb, tb.slice(source, dim, start[dim], limit[dim], 1), start,
                    limit, step, updated, dim + 1);
    SmallVector<Value> parts;
    if (start[dim] > 0)
      parts.push_back(tb.slice(source, dim, 0, start[dim], 1));
    parts.push_back(inner);
    if (limit[dim] < size)
      parts.push_back(tb.slice(source, dim, limit[dim], size, 1));
    return tb.concat(parts, dim);
  }
  // The selected elements start[dim] + i * k, i < count, and the k - 1
  // after each: a region of count * k, padded past the end if it runs over.
  int64_t k = step[dim];
  int64_t count = cast<RankedTensorType>(updated.getType()).getDimSize(dim);
  int64_t end = start[dim] + count * k;
  Value padded = end > size ? tb.padTo(source, dim, end) : source;
  Value region = tb.slice(padded, dim, start[dim], end, 1);
  SmallVector<int64_t> shape(
      cast<RankedTensorType>(region.getType()).getShape());
  SmallVector<int64_t> split(shape.begin(), shape.begin() + dim);
  split.append({count, k});
  split.append(shape.begin() + dim + 1, shape.end());
  Value grid = tb.reshape(region, split);
  SmallVector<int64_t> laneShape(shape);
  laneShape[dim] = count;
  Value lane = tb.reshape(tb.slice(grid, dim + 1, 0, 1, 1), laneShape);
  // The later dims may select part of the lane.
  Value written = insertBlock(tb, lane, start, limit, step, updated, dim + 1);
  SmallVector<int64_t> writtenSplit(split);
  writtenSplit[dim + 1] = 1;
  Value rebuilt = tb.reshape(tb.concat({tb.reshape(written, writtenSplit),
                                        tb.slice(grid, dim + 1, 1, k, 1)},
                                       dim + 1),
                             shape);
  SmallVector<Value> parts;
  if (start[dim] > 0)
    parts.push_back(tb.slice(padded, dim, 0, start[dim], 1));
  parts.push_back(rebuilt);
  int64_t paddedSize = std::max(size, end);
  if (end < paddedSize)
    parts.push_back(tb.slice(padded, dim, end, paddedSize, 1));
  Value whole = tb.concat(parts, dim);
  return end > size ? tb.slice(whole, dim, 0, size, 1) : whole;
}

/// `source` with the elements that `view` (the value the importer made of
/// a slice or select of `source`) reads replaced by `updated` (of view's
/// shape), or failure for another view.
static FailureOr<Value> writeThroughView(TensorBuilder &tb, Value source,
                                         Value view, Value updated) {
  if (view == source)
    return updated; // A slice of everything (`x[:, 0:]`).
  // A select is a reshape (dropping the dim) of a one-element slice.
  Operation *op = view.getDefiningOp();
  if (auto reshape = dyn_cast_or_null<ReshapeOp>(op)) {
    updated = tb.reshape(
        updated,
        cast<RankedTensorType>(reshape.getInput().getType()).getShape());
    if (reshape.getInput() == source)
      return updated; // The select of a dim of size 1.
    op = reshape.getInput().getDefiningOp();
  }
  auto slice = dyn_cast_or_null<SliceOp>(op);
  if (!slice || slice.getInput() != source)
    return failure();
  return insertBlock(tb, source, slice.getStart(), slice.getLimit(),
                     slice.getStep(), updated);
}

/// The attribute path of `value` when it is read from the graph's first
/// input (`self`) by a chain of attribute reads ("bn.num_batches_tracked"),
/// or "" for any other value.
static std::string attributePathOf(torch::jit::Value *value) {
  torch::jit::Value *self = value->owningGraph()->inputs()[0];
  SmallVector<std::string> names;
  for (; value != self; value = value->node()->input(0)) {
    if (value->node()->kind() != torch::jit::prim::GetAttr)
      return "";
    names.push_back(value->node()->s(torch::jit::attr::name));
  }
  return llvm::join(llvm::reverse(names), ".");
}

/// Whether `node`, an in-place op, updates a buffer (an attribute of the
/// module) that nothing reads afterwards: neither its result nor a later
/// read of the attribute (BatchNorm's `num_batches_tracked.add_(1)` in
/// training mode).
static bool isUnreadBufferUpdate(torch::jit::Node *node) {
  std::string path = attributePathOf(node->input(0));
  if (path.empty() || node->outputs().size() != 1 ||
      !node->output()->uses().empty())
    return false;
  std::function<bool(torch::jit::Block *)> readsLater =
      [&](torch::jit::Block *block) {
        for (torch::jit::Node *other : block->nodes()) {
          if (other->kind() == torch::jit::prim::GetAttr && other != node &&
              node->isBefore(other) && attributePathOf(other->output()) == path)
            return true;
          for (torch::jit::Block *nested : other->blocks())
            if (readsLater(nested))
              return true;
        }
        return false;
      };
  return !readsLater(node->owningGraph()->block());
}

llvm::Expected<std::vector<ImportedValue>>
GraphImporter::importInPlace(torch::jit::Node *node,
                             const Conversion &functional, Value gate) {
  // A write through views of the tensor (`mask[:, a:b] = y`): the chain of
  // slices and selects from the written view back to the tensor, each read
  // by nothing but the next (or the write) but for its dtype or sizes, or
  // by ops before the write that copy what they read (a scripted
  // `x[:, ids] += v` reads `x[:, ids]` from the view it writes). (A
  // scripted `x[i] = 7.0` also asks the view its dtype and device.)
  auto onlyWrittenBy = [](torch::jit::Value *view, torch::jit::Node *writer) {
    return llvm::all_of(view->uses(), [&](const torch::jit::Use &use) {
      return use.user == writer ||
             (use.user->isBefore(writer) && !mayReturnAnAlias(use.user)) ||
             llvm::none_of(use.user->outputs(), [](torch::jit::Value *out) {
               return out->type()->kind() == c10::TypeKind::TensorType;
             });
    });
  };
  SmallVector<torch::jit::Node *> views;
  torch::jit::Value *written = node->input(0);
  torch::jit::Node *next = node;
  while (isWritableView(written->node()) && onlyWrittenBy(written, next)) {
    views.push_back(written->node());
    next = written->node();
    written = next->input(0);
  }
  auto takenBranch = [&](torch::jit::Node *ifNode) {
    return takenBranches.lookup(ifNode);
  };
  auto convertedBy = [&](torch::jit::Node *converting) {
    StringRef kind = converting->kind().toQualString();
    if (kind != "aten::to" && kind != "aten::type_as" &&
        kind != "aten::contiguous")
      return Converted::None;
    auto in = values.find(converting->input(0));
    auto out = values.find(converting->output());
    if (in == values.end() || out == values.end() || !in->second.isTensor() ||
        !out->second.isTensor())
      return Converted::None;
    return in->second.tensor == out->second.tensor ? Converted::SameTensor
                                                   : Converted::NewTensor;
  };
  SmallVector<torch::jit::Value *> names =
      namesOfTensor(written, takenBranch, convertedBy);
  // A reader of the tensor after the op reads the written value (each
  // name means it from now on). One before the op reads the old value; it
  // must run in this block (the branches imported ifs took run where their
  // if stands; a branch not taken never runs, and one taken returns a
  // name of the tensor), and not be a view that is read after.
  torch::jit::Node *writer = views.empty() ? node : views.back();
  torch::jit::Block *running = getRunningBlock(node, takenBranch);
  bool aliased = names.empty();
  for (torch::jit::Value *name : names)
    for (const torch::jit::Use &use : name->uses()) {
      torch::jit::Node *user = use.user;
      if (user == writer || !user->isBefore(node) ||
          isInBranchNotTaken(user, takenBranch) ||
          returnsFromBranchTaken(user, takenBranch) ||
          convertedBy(user) != Converted::None)
        continue;
      if (getRunningBlock(user, takenBranch) != running ||
          (!writesInPlace(user) && mayReturnAnAlias(user) &&
           !isDoneBefore(user, node)))
        aliased = true;
    }
  if (aliased && views.empty() && isUnreadBufferUpdate(node)) {
    warnOnce("buffer update",
             llvm::formatv("the model updates buffer '{0}' in place ({1}), "
                           "and nothing reads the update: titan's step keeps "
                           "no buffer state, so the buffer keeps its initial "
                           "value",
                           attributePathOf(written), opAt(node))
                 .str());
    return std::vector<ImportedValue>{lookup(written)};
  }
  if (aliased)
    return makeError(
        "an in-place op is imported only on a tensor that the model created "
        "and that no view, input, parameter or buffer shares, or on a slice "
        "or select of one that nothing else reads; write it out of place "
        "(`x = x.mul(y)` for `x.mul_(y)`)");
  llvm::Expected<std::vector<ImportedValue>> outputs = functional(*this, node);
  if (!outputs)
    return outputs.takeError();
  ImportedValue &result = outputs->front();
  const ImportedValue &self = lookup(node->input(0));
  if (self.isTensor() && result.isTensor()) {
    // The tensor keeps its shape and type: torch computes in the promoted
    // type and rounds into the written tensor.
    RankedTensorType selfType = tensorType(self.tensor);
    RankedTensorType type = tensorType(result.tensor);
    if (type.getShape() != selfType.getShape())
      return makeError(llvm::formatv(
          "an in-place op cannot change the shape of the tensor it writes "
          "('{0}' to '{1}')",
          selfType, type));
    if (type.getElementType() != selfType.getElementType())
      result = ImportedValue::ofTensor(
          TensorBuilder(builder, loc)
              .cast(result.tensor, selfType.getElementType()));
  }
  // Through views: each view's source gets the written elements.
  ImportedValue whole = result;
  for (torch::jit::Node *view : views) {
    const ImportedValue &source = lookup(view->input(0));
    TensorBuilder tb(builder, loc);
    FailureOr<Value> updated =
        source.isTensor() && whole.isTensor()
            ? writeThroughView(tb, source.tensor, lookup(view->output()).tensor,
                               whole.tensor)
            : FailureOr<Value>(failure());
    if (failed(updated))
      return makeError("an in-place op writes through a view of a complex "
                       "tensor; write it out of place");
    whole = ImportedValue::ofTensor(*updated);
  }
  whole.gate = gate;
  for (torch::jit::Value *name : names)
    values[name] = whole;
  return outputs;
}

llvm::Expected<std::vector<ImportedValue>>
GraphImporter::importIf(torch::jit::Node *node) {
  const ImportedValue &condition = input(node, 0);
  if (condition.isTensor())
    return importBothBranches(node, condition.tensor);
  if (condition.kind != ImportedValue::Kind::Bool &&
      condition.kind != ImportedValue::Kind::Int)
    return makeError("the condition of an 'if' must be known at compile "
                     "time (titan programs have no data-dependent control "
                     "flow)");
  torch::jit::Block *taken = node->blocks()[condition.intValue ? 0 : 1];
  takenBranches[node] = taken;
  return importBlock(taken, {});
}

/// Whether `value` is defined in `block` or a block nested in it.
static bool isDefinedWithin(torch::jit::Value *value,
                            torch::jit::Block *block) {
  for (torch::jit::Block *owner = value->node()->owningBlock(); owner;
       owner = owner->owningNode() ? owner->owningNode()->owningBlock()
                                   : nullptr)
    if (owner == block)
      return true;
  return false;
}

/// The first node in `block` (or nested in it) with an effect outside it:
/// an in-place write to a tensor defined before the block (through views
/// too), a module attribute set, or an exception raised.
static torch::jit::Node *findOutsideEffect(torch::jit::Block *block,
                                           torch::jit::Block *branch) {
  for (torch::jit::Node *node : block->nodes()) {
    if (node->kind() == torch::jit::prim::SetAttr ||
        node->kind() == torch::jit::prim::RaiseException)
      return node;
    if (writesInPlace(node)) {
      torch::jit::Value *written = node->input(0);
      while (isWritableView(written->node()))
        written = written->node()->input(0);
      if (!isDefinedWithin(written, branch))
        return node;
    }
    for (torch::jit::Block *nested : node->blocks())
      if (torch::jit::Node *found = findOutsideEffect(nested, branch))
        return found;
  }
  return nullptr;
}

/// The value an if on a condition known only at run time gives: `onTrue`
/// where `condition` holds, else `onFalse` (numbers, strings and None
/// must be equal; tensors of one shape and type are selected).
static llvm::Expected<ImportedValue>
selectBranchValue(TensorBuilder &tb, Value condition,
                  const ImportedValue &onTrue, const ImportedValue &onFalse,
                  const GraphImporter &importer) {
  if (onTrue.kind != onFalse.kind)
    return makeError("the branches give values of different kinds");
  switch (onTrue.kind) {
  case ImportedValue::Kind::Tensor: {
    auto trueType = cast<RankedTensorType>(onTrue.tensor.getType());
    auto falseType = cast<RankedTensorType>(onFalse.tensor.getType());
    if (trueType != falseType)
      return makeError(llvm::formatv(
          "the branches give tensors of types {0} and {1}; titan selects "
          "between tensors of one shape and element type",
          trueType, falseType));
    for (Value v : {onTrue.tensor, onFalse.tensor})
      if (const ValidPrefix *prefix = importer.validPrefix(v))
        return unsupportedValidPrefixReader("selecting between the branches",
                                            *prefix);
    if (onTrue.tensor == onFalse.tensor)
      return onTrue;
    Value mask = tb.broadcastTo(
        tb.reshape(condition, SmallVector<int64_t>(trueType.getRank(), 1)),
        trueType.getShape());
    return ImportedValue::ofTensor(
        tb.select(mask, onTrue.tensor, onFalse.tensor));
  }
  case ImportedValue::Kind::List:
  case ImportedValue::Kind::Dict: {
    if (onTrue.items.size() != onFalse.items.size())
      return makeError("the branches give lists of different lengths");
    if (onTrue.keys != onFalse.keys)
      return makeError("the branches give dicts of different keys");
    std::vector<ImportedValue> items;
    for (auto [a, b] : llvm::zip(onTrue.items, onFalse.items)) {
      llvm::Expected<ImportedValue> item =
          selectBranchValue(tb, condition, a, b, importer);
      if (!item)
        return item.takeError();
      items.push_back(std::move(*item));
    }
    ImportedValue list = onTrue;
    list.items = std::move(items);
    return list;
  }
  case ImportedValue::Kind::None:
    return onTrue;
  case ImportedValue::Kind::Int:
  case ImportedValue::Kind::Float:
  case ImportedValue::Kind::Bool: {
    if (onTrue.asDouble() == onFalse.asDouble())
      return onTrue;
    auto text = [](const ImportedValue &number) {
      return number.kind == ImportedValue::Kind::Float
                 ? llvm::formatv("{0}", llvm::format("%g", number.floatValue))
                       .str()
                 : std::to_string(number.intValue);
    };
    return makeError(llvm::formatv(
        "the branches give the numbers {0} and {1}: a Python number cannot "
        "depend on the data in a titan program (its shapes are static); "
        "make it a tensor in both branches (torch.tensor(...))",
        text(onTrue), text(onFalse)));
  }
  default:
    if (onTrue.text == onFalse.text &&
        onTrue.kind != ImportedValue::Kind::Complex &&
        onTrue.kind != ImportedValue::Kind::Module)
      return onTrue;
    return makeError("the branches give different strings, devices, modules "
                     "or complex tensors");
  }
}

/// Whether every path through `block` raises an exception (a
/// prim::RaiseException among its own nodes, as `if cond: raise ...`).
static bool alwaysRaises(torch::jit::Block *block) {
  return llvm::any_of(block->nodes(), [](torch::jit::Node *node) {
    return node->kind() == torch::jit::prim::RaiseException;
  });
}

llvm::Expected<std::vector<ImportedValue>>
GraphImporter::importBothBranches(torch::jit::Node *node, Value condition) {
  // A check on the data that raises (`if torch.any(var < 0): raise
  // ValueError(...)`): titan programs cannot stop on the data, so the path
  // that does not raise, the only one PyTorch goes on with, is imported,
  // and a warning says that the check is not made.
  torch::jit::Block *raising = node->blocks()[0], *other = node->blocks()[1];
  if (alwaysRaises(other))
    std::swap(raising, other);
  if (alwaysRaises(raising) && !alwaysRaises(other) &&
      !findOutsideEffect(other, other)) {
    std::string where = sourceOf(node);
    emitWarning(loc) << "the check "
                     << (where.empty() ? "" : "at " + where + " ")
                     << "raises an exception where the data make its "
                        "condition "
                     << (raising == node->blocks()[0] ? "true" : "false")
                     << ": titan does not make the check at run time and "
                        "computes the path that does not raise";
    return importBlock(other, {});
  }
  for (torch::jit::Block *branch : node->blocks())
    if (torch::jit::Node *effect = findOutsideEffect(branch, branch))
      return makeError(
          "an 'if' on a value known only at run time: titan computes both "
          "branches and selects their results, which it cannot do for a "
          "branch that " +
          (effect->kind() == torch::jit::prim::RaiseException
               ? std::string("raises an exception")
           : effect->kind() == torch::jit::prim::SetAttr
               ? std::string("sets a module attribute")
               : "writes in place into a tensor from before the 'if' (" +
                     opAt(effect) + ")") +
          "; compute both values and pick one with torch.where(condition, "
          "a, b)");
  std::vector<std::vector<ImportedValue>> results;
  for (torch::jit::Block *branch : node->blocks()) {
    llvm::Expected<std::vector<ImportedValue>> outputs =
        importBlock(branch, {});
    if (!outputs)
      return outputs.takeError();
    results.push_back(std::move(*outputs));
  }
  loc = locationOf(node);
  TensorBuilder selecting(builder, loc);
  std::vector<ImportedValue> selected;
  for (auto [i, pair] : llvm::enumerate(llvm::zip(results[0], results[1]))) {
    llvm::Expected<ImportedValue> value = selectBranchValue(
        selecting, condition, std::get<0>(pair), std::get<1>(pair), *this);
    if (!value)
      return makeError(llvm::formatv(
          "result {0} of an 'if' on a value known only at run time (titan "
          "computes both branches and selects their results): {1}",
          i, toString(value.takeError())));
    // A result computed in an iteration of a loop over found entries (in
    // either branch, or under its condition) stays gated by it.
    llvm::SetVector<Value> gates;
    collectGates(input(node, 0), gates);
    collectGates(std::get<0>(pair), gates);
    collectGates(std::get<1>(pair), gates);
    if (gates.size() > 1)
      return makeError(llvm::formatv(
          "an 'if' on a value known only at run time combines values of two "
          "iterations of a loop over {0}: titan runs every iteration, gated "
          "by whether its entry is found, so a value cannot pass from one "
          "iteration to the next; compute it within the iteration that "
          "uses it",
          gateOrigins.lookup(gates[0])));
    if (!gates.empty())
      setGate(*value, gates.front());
    selected.push_back(std::move(*value));
  }
  return selected;
}

llvm::Expected<std::vector<ImportedValue>>
GraphImporter::importLoop(torch::jit::Node *node) {
  llvm::Expected<int64_t> tripCount = intInput(node, 0);
  if (!tripCount)
    return makeError("the trip count of a loop must be known at compile "
                     "time");
  const ImportedValue &condition = input(node, 1);
  if (!condition.isNumber())
    return makeError("the condition of a loop must be known at compile "
                     "time");
  bool running = condition.intValue != 0;
  std::vector<ImportedValue> carried;
  for (size_t i = 2; i < node->inputs().size(); ++i)
    carried.push_back(input(node, i));
  torch::jit::Block *body = node->blocks()[0];
  for (int64_t iteration = 0; running && iteration < *tripCount; ++iteration) {
    std::vector<ImportedValue> blockInputs{ImportedValue::ofInt(iteration)};
    blockInputs.insert(blockInputs.end(), carried.begin(), carried.end());
    llvm::Expected<std::vector<ImportedValue>> outputs =
        importBlock(body, blockInputs);
    if (!outputs)
      return outputs.takeError();
    if ((*outputs)[0].kind != ImportedValue::Kind::Bool)
      return makeError("the condition of a loop must be known at compile "
                       "time");
    running = (*outputs)[0].intValue != 0;
    carried.assign(outputs->begin() + 1, outputs->end());
  }
  return carried;
}

/// Unpacks a list or tuple into `count` values.
static llvm::Expected<std::vector<ImportedValue>>
unpack(const ImportedValue &value, size_t count) {
  if (value.kind != ImportedValue::Kind::List)
    return makeError("expected a list or tuple to unpack");
  if (value.items.size() != count)
    return makeError(llvm::formatv("cannot unpack {0} values into {1}",
                                   value.items.size(), count));
  return value.items;
}

llvm::Expected<std::vector<ImportedValue>>
GraphImporter::importPrim(torch::jit::Node *node, bool &handled) {
  handled = true;
  torch::jit::NodeKind kind = node->kind();
  if (kind == torch::jit::prim::Constant) {
    if (node->output()->type()->kind() == c10::TypeKind::TensorType) {
      handled = false; // Tensor constants are materialized by AtenOps.
      return std::vector<ImportedValue>{};
    }
    std::optional<c10::IValue> constant = torch::jit::toIValue(node->output());
    if (!constant)
      return makeError("unreadable constant");
    llvm::Expected<ImportedValue> value = fromIValue(*constant);
    if (!value)
      return value.takeError();
    return std::vector<ImportedValue>{std::move(*value)};
  }
  if (kind == torch::jit::prim::GetAttr) {
    if (!getAttr)
      return makeError("module attributes need a module");
    llvm::Expected<ImportedValue> value =
        getAttr(input(node, 0), node->s(torch::jit::attr::name));
    if (!value)
      return value.takeError();
    return std::vector<ImportedValue>{std::move(*value)};
  }
  // list.append(x) (a scripted list comprehension, which loops run
  // unrolled): the list's value gets the item. A list that is also passed
  // elsewhere (into a block, another container) would keep a stale copy
  // there, so such a list is refused, but for a block's return after the
  // appends.
  if (kind == c10::Symbol::fromQualString("aten::append")) {
    torch::jit::Value *list = node->input(0);
    auto found = values.find(list);
    if (found == values.end() ||
        found->second.kind != ImportedValue::Kind::List)
      return makeError("append to something other than a list");
    // A block may return the list once every append to it has run (a
    // scripted F.interpolate's list of scale factors).
    auto appendedBefore = [&](torch::jit::Node *reader) {
      return llvm::all_of(list->uses(), [&](const torch::jit::Use &other) {
        return other.user->kind() != node->kind() ||
               other.user->isBefore(reader);
      });
    };
    for (const torch::jit::Use &use : list->uses()) {
      StringRef user = use.user->kind().toQualString();
      if (user == "prim::Return" && appendedBefore(use.user))
        continue;
      if (user != "aten::append" && user != "aten::len" &&
          user != "aten::__getitem__" && user != "prim::ListUnpack" &&
          user != "aten::cat" && user != "aten::stack" && user != "aten::all" &&
          user != "aten::any" && user != "aten::tensordot")
        return makeError(llvm::formatv(
            "a list appended to is also read by '{0}', which titan cannot "
            "follow; build the list with torch.stack / torch.cat of its "
            "items, or without append",
            user));
    }
    found->second.items.push_back(input(node, 1));
    return std::vector<ImportedValue>{found->second};
  }
  if (kind == torch::jit::prim::ListConstruct ||
      kind == torch::jit::prim::TupleConstruct) {
    std::vector<ImportedValue> items;
    for (size_t i = 0; i < node->inputs().size(); ++i)
      items.push_back(input(node, i));
    return std::vector<ImportedValue>{ImportedValue::ofList(std::move(items))};
  }
  // A dict of string keys: {"logits": ..., "hidden_states": ...}.
  if (kind == torch::jit::prim::DictConstruct) {
    std::vector<std::string> keys;
    std::vector<ImportedValue> values;
    for (size_t i = 0; i + 1 < node->inputs().size(); i += 2) {
      const ImportedValue &key = input(node, i);
      if (key.kind != ImportedValue::Kind::String)
        return makeError("titan reads dicts of string keys only");
      if (llvm::is_contained(keys, key.text))
        return makeError("the dict has the key '" + key.text + "' twice");
      keys.push_back(key.text);
      values.push_back(input(node, i + 1));
    }
    return std::vector<ImportedValue>{
        ImportedValue::ofDict(std::move(keys), std::move(values))};
  }
  if (kind == torch::jit::prim::ListUnpack ||
      kind == torch::jit::prim::TupleUnpack) {
    const ImportedValue &list = input(node, 0);
    if (list.kind == ImportedValue::Kind::List && !list.items.empty() &&
        list.items.front().gate && list.items.size() != node->outputs().size())
      return makeError(llvm::formatv(
          "the trace unrolled this loop over {0} {1} times, as many as the "
          "input it was traced on gave, but there can be up to {2}: trace "
          "the model on an input that gives all {2} (a batch that routes "
          "tokens to every expert)",
          gateOrigins.lookup(list.items.front().gate), node->outputs().size(),
          list.items.size()));
    return unpack(list, node->outputs().size());
  }
  if (kind == torch::jit::prim::If)
    return importIf(node);
  if (kind == torch::jit::prim::Loop)
    return importLoop(node);
  // Numbers that TorchScript moves between Python numbers and 0-d tensors
  // (traced size arithmetic): they stay numbers known at import time.
  if (kind == torch::jit::prim::NumToTensor ||
      kind == c10::Symbol::fromQualString("aten::ScalarImplicit") ||
      kind == c10::Symbol::fromQualString("aten::Int") ||
      kind == c10::Symbol::fromQualString("aten::Float")) {
    ImportedValue number = input(node, 0);
    // A one-element tensor whose value is known (the position of an
    // iteration of a loop over found entries: `int(expert_idx)`).
    if (number.isTensor() &&
        cast<RankedTensorType>(number.tensor.getType()).getNumElements() == 1)
      if (std::optional<int64_t> known = knownSplatInteger(number.tensor)) {
        Value gate = number.gate;
        number = ImportedValue::ofInt(*known);
        number.gate = gate;
      }
    if (!number.isNumber())
      return makeError("the value must be known at import time (titan "
                       "programs have static shapes; a tensor's contents "
                       "cannot become a Python number)");
    if (kind == c10::Symbol::fromQualString("aten::Int"))
      number = ImportedValue::ofInt(
          number.kind == ImportedValue::Kind::Float
              ? static_cast<int64_t>(std::trunc(number.floatValue))
              : number.intValue);
    else if (kind == c10::Symbol::fromQualString("aten::Float"))
      number = ImportedValue::ofFloat(number.asDouble());
    else if (kind == torch::jit::prim::NumToTensor)
      number.wrappedType = number.kind == ImportedValue::Kind::Float
                               ? Type(Float64Type::get(&context))
                           : number.kind == ImportedValue::Kind::Bool
                               ? Type(IntegerType::get(&context, 1))
                               : Type(IntegerType::get(&context, 64));
    return std::vector<ImportedValue>{std::move(number)};
  }
  // Values that only change the static type: pass them through.
  if (kind == torch::jit::prim::unchecked_cast ||
      kind == c10::Symbol::fromQualString("prim::TupleIndex") ||
      kind == c10::Symbol::fromQualString("aten::contiguous") ||
      kind == c10::Symbol::fromQualString("aten::detach") ||
      kind == c10::Symbol::fromQualString("aten::clone") ||
      kind == c10::Symbol::fromQualString("aten::alias")) {
    if (kind == c10::Symbol::fromQualString("prim::TupleIndex")) {
      llvm::Expected<int64_t> index = intInput(node, 1);
      if (!index)
        return index.takeError();
      const ImportedValue &tuple = input(node, 0);
      if (*index < 0 || *index >= (int64_t)tuple.items.size())
        return makeError("tuple index out of range");
      return std::vector<ImportedValue>{tuple.items[*index]};
    }
    // detach: the same values, through which no gradient flows.
    const ImportedValue &value = input(node, 0);
    if (kind == c10::Symbol::fromQualString("aten::detach") &&
        value.isTensor()) {
      Value detached =
          TensorBuilder(builder, loc).unary<StopGradientOp>(value.tensor);
      if (const ValidPrefix *prefix = validPrefix(value.tensor))
        setValidPrefix(detached, *prefix);
      return std::vector<ImportedValue>{ImportedValue::ofTensor(detached)};
    }
    return std::vector<ImportedValue>{value};
  }
  if (kind == torch::jit::prim::RaiseException)
    return makeError("the model raises an exception on this path");
  // `with torch.no_grad():` in scripted code: the object, its __init__,
  // and the block between prim::Enter and prim::Exit, whose tensors flow
  // on without gradients (importBlock stops them).
  if (kind == torch::jit::prim::CreateObject &&
      node->output()->type()->str() ==
          "__torch__.torch.autograd.grad_mode.no_grad")
    return std::vector<ImportedValue>{
        ImportedValue::ofString("torch.no_grad", ImportedValue::Kind::Module)};
  auto isNoGrad = [&](size_t index) {
    const ImportedValue &object = input(node, index);
    return object.kind == ImportedValue::Kind::Module &&
           object.text == "torch.no_grad" && !object.module;
  };
  // Its __init__ (inlined: `self.prev = False`) has nothing to run.
  if (kind == torch::jit::prim::CallMethod && isNoGrad(0) &&
      node->s(c10::attr::name) == "__init__")
    return std::vector<ImportedValue>{ImportedValue::none()};
  if (kind == torch::jit::prim::SetAttr && isNoGrad(0))
    return std::vector<ImportedValue>{};
  if ((kind == torch::jit::prim::Enter || kind == torch::jit::prim::Exit) &&
      isNoGrad(0)) {
    noGradDepth += kind == torch::jit::prim::Enter ? 1 : -1;
    return std::vector<ImportedValue>{ImportedValue::none()};
  }
  // prim::Uninitialized: the value TorchScript's compiler gives a variable
  // on a path that raises or has returned (`_Reduction.get_enum`'s `raise
  // ValueError`, scripted F.cross_entropy in test/Import/losses.test). The
  // import follows the path taken, which never reads it.
  if (kind == torch::jit::prim::Uninitialized)
    return std::vector<ImportedValue>{ImportedValue::none()};
  handled = false;
  return std::vector<ImportedValue>{};
}

//===----------------------------------------------------------------------===//
// Building the function
//===----------------------------------------------------------------------===//

/// The tensor type of a graph input from the options or, failing that, from
/// the type recorded by tracing.
static llvm::Expected<RankedTensorType>
inputType(MLIRContext &context, torch::jit::Value *input,
          const std::string &name, const TorchScriptImportOptions &options) {
  auto it = options.inputs.find(name);
  const InputSpec *spec = it != options.inputs.end() ? &it->second
                          : options.defaultInput     ? &*options.defaultInput
                                                     : nullptr;
  if (spec) {
    // A model input holds floats or integer ids.
    std::optional<ElementType> element =
        symbolizeElementType(spec->elementType);
    if (!element ||
        !(isFloatElementType(*element) || element == ElementType::I64 ||
          element == ElementType::I32))
      return makeError("input '" + name + "': unknown element type '" +
                       spec->elementType + "'");
    return RankedTensorType::get(spec->shape, getMLIRType(&context, *element));
  }
  auto tensor = input->type()->cast<c10::TensorType>();
  if (tensor) {
    c10::optional<std::vector<int64_t>> sizes =
        tensor->sizes().concrete_sizes();
    c10::optional<c10::ScalarType> scalar = tensor->scalarType();
    if (sizes && scalar) {
      if (Type element = toElementType(context, *scalar))
        return RankedTensorType::get(*sizes, element);
    }
  }
  return makeError("the shape of input '" + name +
                   "' is not recorded in the model (a saved TorchScript "
                   "module, traced or scripted, does not keep its inputs' "
                   "shapes); give it with --input-shape " +
                   name + "=<dims>x<type>, e.g. " + name +
                   "=2x64xi64 (a language model's token ids take the "
                   "training batch's shape from --config)");
}

/// The name of a graph input: its TorchScript debug name without the
/// ".<n>" suffix TorchScript adds to make names unique.
static std::string inputName(torch::jit::Value *value, size_t index) {
  if (!value->hasDebugName())
    return "input" + std::to_string(index);
  // debugName() returns a copy: keep it alive while `name` refers to it.
  std::string debugName = value->debugName();
  llvm::StringRef name = debugName;
  auto [base, suffix] = name.rsplit('.');
  if (!suffix.empty() && llvm::all_of(suffix, llvm::isDigit))
    name = base;
  return name.str();
}

/// Imports `graph` (already inlined) into a new module; `self` resolves
/// module attributes when the graph is a method.
static llvm::Expected<OwningOpRef<ModuleOp>> importGraph(
    MLIRContext &context, torch::jit::Graph &graph,
    const TorchScriptImportOptions &options,
    const std::function<llvm::Error(GraphImporter &,
                                    std::vector<ImportedValue> &)> &bindSelf) {
  context.loadDialect<TitanDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
  auto block = std::make_unique<Block>();
  GraphImporter importer(context, *block);
  importer.evaluation = options.evaluation;

  std::vector<ImportedValue> graphInputs;
  size_t first = 0;
  if (bindSelf) {
    if (llvm::Error error = bindSelf(importer, graphInputs))
      return std::move(error);
    first = 1;
  }
  for (size_t i = first; i < graph.inputs().size(); ++i) {
    torch::jit::Value *input = graph.inputs()[i];
    std::string name = inputName(input, i - first);
    // An Optional[Tensor] input of a scripted forward (Hugging Face's
    // `attention_mask: Optional[Tensor] = None`) is None unless
    // --input-shape names it.
    if (input->type()->kind() == c10::TypeKind::OptionalType &&
        !options.inputs.count(name)) {
      graphInputs.push_back(ImportedValue::none());
      continue;
    }
    llvm::Expected<RankedTensorType> type =
        inputType(context, input, name, options);
    if (!type)
      return type.takeError();
    graphInputs.push_back(ImportedValue::ofTensor(
        importer.addArgument(*type, name, ArgRole::Input)));
  }
  llvm::Expected<std::vector<ImportedValue>> outputs =
      importer.importBlock(graph.block(), graphInputs);
  if (!outputs) {
    std::string message = toString(outputs.takeError());
    for (const std::string &hint : importer.getErrorHints())
      message += "\nnote: " + hint;
    return makeError(message);
  }
  if (options.foldedOps)
    *options.foldedOps = importer.getFoldedOps();

  // The model returns one tensor or a tuple of tensors, or a dict with the
  // logits under "logits" (Hugging Face's return_dict, traced with
  // strict=False): the logits are the result, the other entries are left.
  std::vector<ImportedValue> results = *outputs;
  if (results.size() == 1 && results[0].kind == ImportedValue::Kind::List)
    results = results[0].items;
  if (results.size() == 1 && results[0].kind == ImportedValue::Kind::Dict) {
    const ImportedValue &dict = results[0];
    auto logits = llvm::find(dict.keys, "logits");
    if (logits == dict.keys.end())
      return makeError("the model returns a dict without \"logits\" (keys: " +
                       llvm::join(dict.keys, ", ") +
                       "); return the logits, or a dict with them under "
                       "\"logits\"");
    SmallVector<std::string> left;
    for (const std::string &key : dict.keys)
      if (key != "logits")
        left.push_back(key);
    if (!left.empty())
      emitWarning(UnknownLoc::get(&context))
          << "the model returns a dict: titan trains its \"logits\" and "
             "leaves the other entries ("
          << llvm::join(left, ", ") << ")";
    results = {dict.items[logits - dict.keys.begin()]};
  }
  // Tuples after the first output (Hugging Face's past_key_values, which a
  // model exported with torchscript=True returns while use_cache is on)
  // are left, with a warning.
  std::vector<ImportedValue> kept;
  for (auto [index, result] : llvm::enumerate(results)) {
    if (index == 0 || result.kind != ImportedValue::Kind::List) {
      kept.push_back(std::move(result));
      continue;
    }
    emitWarning(UnknownLoc::get(&context))
        << "the model's output " << index
        << " is a tuple, not a tensor (as Hugging Face's past_key_values, "
           "returned while use_cache is on): titan leaves it; set use_cache "
           "to false to drop it";
  }
  results = std::move(kept);
  SmallVector<Value> returned;
  for (ImportedValue &result : results) {
    if (result.isNumber())
      result = ImportedValue::ofTensor(importer.materialize(result));
    if (!result.isTensor())
      return makeError("the model must return tensors; it returns a " +
                       std::string(result.isComplex() ? "complex tensor"
                                                      : "non-tensor value"));
    if (const ValidPrefix *prefix = importer.validPrefix(result.tensor))
      return unsupportedValidPrefixReader("the model returns", *prefix);
    if (llvm::Error error = importer.checkUngated(result, "the model returns"))
      return std::move(error);
    returned.push_back(result.tensor);
  }
  OpBuilder builder(&context);
  builder.setInsertionPointToEnd(block.get());
  func::ReturnOp::create(builder, UnknownLoc::get(&context), returned);

  builder.setInsertionPointToEnd(module->getBody());
  auto function = func::FuncOp::create(
      builder, UnknownLoc::get(&context), "forward",
      builder.getFunctionType(block->getArgumentTypes(),
                              ValueRange(returned).getTypes()));
  function.getBody().push_back(block.release());
  const auto &argumentNames = importer.getArgumentNames();
  setEachArgAttr(function, TitanDialect::kNameAttrName, [&](unsigned index) {
    return builder.getStringAttr(argumentNames[index].first);
  });
  setEachArgRole(function,
                 [&](unsigned index) { return argumentNames[index].second; });
  for (BlockArgument argument : function.getArguments())
    for (NamedAttribute attr : importer.getArgumentAttrs(argument))
      function.setArgAttr(argument.getArgNumber(), attr.getName(),
                          attr.getValue());
  setEachResultAttr(function, TitanDialect::kNameAttrName, [&](unsigned index) {
    return builder.getStringAttr(returned.size() == 1
                                     ? std::string("logits")
                                     : "output" + std::to_string(index));
  });
  if (failed(verify(*module)))
    return makeError("internal error: the imported program does not verify");
  // The conversions emit locally simple IR (one reshape per view, constants
  // per use); fold and deduplicate it once here.
  PassManager cleanup(&context);
  cleanup.addPass(createCanonicalizerPass());
  cleanup.addPass(createCSEPass());
  if (failed(cleanup.run(*module)))
    return makeError("internal error: cleaning up the imported program "
                     "failed");
  return module;
}

/// The raw bytes of a CPU tensor in row-major order, or empty when the
/// tensor holds less storage than its shape needs (a shape-only export's
/// expanded view, which must never be materialized).
static std::vector<char> tensorBytes(const at::Tensor &tensor) {
  if (!hasAllData(tensor))
    return {};
  size_t bytes = tensor.numel() * tensor.element_size();
  at::Tensor dense = tensor.contiguous();
  const char *data = static_cast<const char *>(dense.data_ptr());
  return std::vector<char>(data, data + bytes);
}

namespace {
/// Resolves module attributes to parameters, buffers, submodules and
/// constants of a loaded module, creating one function argument per tensor
/// (tied parameters share one).
class ModuleAttributes {
public:
  ModuleAttributes(MLIRContext &context, torch::jit::Module root,
                   const TorchScriptImportOptions &options)
      : context(context), root(std::move(root)), options(options) {}

  /// Adds an argument for every parameter, in module order.
  llvm::Error addParameters(GraphImporter &importer) {
    for (const auto &parameter : root.named_parameters(/*recurse=*/true))
      if (llvm::Error error = addTensor(importer, parameter.name,
                                        parameter.value, ArgRole::Param))
        return error;
    return llvm::Error::success();
  }

  /// The value of attribute `name` of `module`.
  llvm::Expected<ImportedValue> get(GraphImporter &importer,
                                    const ImportedValue &module,
                                    llvm::StringRef name) {
    if (module.kind != ImportedValue::Kind::Module || !module.module)
      return makeError("attribute '" + name +
                       "' of a value that is not a "
                       "module");
    std::string fqn =
        module.text.empty() ? name.str() : module.text + "." + name.str();
    if (!module.module->hasattr(name.str()))
      return makeError("module has no attribute '" + fqn + "'");
    c10::IValue value = module.module->attr(name.str());
    if (value.isModule()) {
      ImportedValue sub =
          ImportedValue::ofString(fqn, ImportedValue::Kind::Module);
      sub.module = value.toModule();
      return sub;
    }
    if (value.isTensor())
      return tensorAttribute(importer, fqn, value.toTensor());
    // A list of tensors (scripted nn.LSTM's `_flat_weights`, its
    // parameters): each item as a tensor attribute of its own.
    if (value.isList() && value.toListRef().size() > 0 &&
        llvm::all_of(value.toListRef(),
                     [](const c10::IValue &item) { return item.isTensor(); })) {
      std::vector<ImportedValue> items;
      for (auto [index, item] : llvm::enumerate(value.toListRef())) {
        llvm::Expected<ImportedValue> tensor = tensorAttribute(
            importer, fqn + "." + std::to_string(index), item.toTensor());
        if (!tensor)
          return tensor.takeError();
        items.push_back(std::move(*tensor));
      }
      return ImportedValue::ofList(std::move(items));
    }
    return fromIValue(value);
  }

  /// The `titan.state_dict` of the program: the entries of the root
  /// module's state_dict besides its parameters under their own names, that
  /// is every other name of a tied parameter and every buffer that has an
  /// argument, by key, to that argument's name. A complex buffer, held as
  /// two arguments, has none.
  DictionaryAttr stateDictNames() const {
    llvm::SmallVector<NamedAttribute> entries;
    auto add = [&](const std::string &key, const at::Tensor &tensor,
                   bool isParameter) {
      auto it = argumentNames.find(tensor.unsafeGetTensorImpl());
      if (it != argumentNames.end() && (!isParameter || it->second != key))
        entries.emplace_back(StringAttr::get(&context, key),
                             StringAttr::get(&context, it->second));
    };
    for (const auto &parameter : root.named_parameters(/*recurse=*/true))
      add(parameter.name, parameter.value, /*isParameter=*/true);
    for (const auto &buffer : root.named_buffers(/*recurse=*/true))
      add(buffer.name, buffer.value, /*isParameter=*/false);
    return DictionaryAttr::get(&context, entries);
  }

  /// The root module as a value (the graph's `self`).
  ImportedValue self() const {
    ImportedValue value =
        ImportedValue::ofString("", ImportedValue::Kind::Module);
    value.module = root;
    return value;
  }

private:
  /// The value of tensor attribute `fqn`: its parameter's argument, or a
  /// buffer argument made for it. Every parameter has its argument
  /// already: any other tensor is state the model reads but does not train
  /// (a registered buffer or a plain tensor attribute).
  llvm::Expected<ImportedValue> tensorAttribute(GraphImporter &importer,
                                                const std::string &fqn,
                                                const at::Tensor &tensor) {
    auto it = arguments.find(tensor.unsafeGetTensorImpl());
    if (it != arguments.end())
      return it->second;
    if (llvm::Error error = addTensor(importer, fqn, tensor, ArgRole::Buffer))
      return std::move(error);
    return arguments.at(tensor.unsafeGetTensorImpl());
  }

  /// Creates the argument(s) of one tensor; complex tensors become a real
  /// and an imaginary argument.
  llvm::Error addTensor(GraphImporter &importer, const std::string &fqn,
                        const at::Tensor &tensor, ArgRole role) {
    if (arguments.count(tensor.unsafeGetTensorImpl()))
      return llvm::Error::success(); // A tied parameter.
    std::vector<int64_t> shape(tensor.sizes().begin(), tensor.sizes().end());
    if (tensor.is_complex()) {
      at::Tensor real = at::real(tensor);
      at::Tensor imag = at::imag(tensor);
      Type element = toElementType(context, real.scalar_type());
      auto type = RankedTensorType::get(shape, element);
      Value realArg = importer.addArgument(type, fqn + ".real", role);
      Value imagArg = importer.addArgument(type, fqn + ".imag", role);
      if (llvm::Error error = emit(fqn + ".real", shape, element, real, role))
        return error;
      if (llvm::Error error = emit(fqn + ".imag", shape, element, imag, role))
        return error;
      arguments[tensor.unsafeGetTensorImpl()] =
          ImportedValue::ofComplex(realArg, imagArg);
      return llvm::Error::success();
    }
    Type element = toElementType(context, tensor.scalar_type());
    at::Tensor data = tensor;
    // A uint8, int8 or int16 buffer (older Hugging Face GPT-2's uint8
    // causal mask) is held as int32, which holds each of its values.
    c10::ScalarType dtype = tensor.scalar_type();
    if (!element && role == ArgRole::Buffer &&
        (dtype == c10::ScalarType::Byte || dtype == c10::ScalarType::Char ||
         dtype == c10::ScalarType::Short)) {
      element = IntegerType::get(&context, 32);
      if (hasAllData(tensor))
        data = tensor.to(at::kInt);
    }
    if (!element)
      return makeError(llvm::formatv(
          "{0} '{1}' has unsupported dtype {2}; titan holds parameters in "
          "float32, float64, float16 or bfloat16 and buffers also in int64, "
          "int32, int16, int8, uint8 or bool",
          role == ArgRole::Param ? "parameter" : "buffer", fqn,
          c10::toString(dtype)));
    if (role == ArgRole::Param && options.parameterComputeType &&
        isa<FloatType>(element))
      return addMasterParameter(importer, fqn, tensor, shape);
    if (role == ArgRole::Param && options.parameterStorageType &&
        isa<FloatType>(element)) {
      element = getMLIRType(&context, *options.parameterStorageType);
      auto stored = static_cast<c10::ScalarType>(dtypeCode(element));
      // A shape-only tensor has no data to round (tensorBytes gives none).
      if (hasAllData(tensor) && tensor.scalar_type() != stored)
        data = tensor.to(stored);
    }
    Value argument =
        importer.addArgument(RankedTensorType::get(shape, element), fqn, role);
    // A buffer is never trained: what its value is may be proven from it.
    if (role == ArgRole::Buffer)
      if (DenseElementsAttr diagonals = diagonalsOf(data, element))
        importer.addArgumentAttr(argument, TitanDialect::kDiagonalsAttrName,
                                 diagonals);
    arguments[tensor.unsafeGetTensorImpl()] = ImportedValue::ofTensor(argument);
    argumentNames[tensor.unsafeGetTensorImpl()] = fqn;
    return emit(fqn, shape, element, data, role);
  }

  /// Under mixed precision: a float32 argument holding the master weight
  /// (widened when stored narrower), cast to the compute type at the top of
  /// the forward with the location of the parameter's module, so the
  /// forward reads the parameter in the compute type as FSDP2 gives it.
  llvm::Error addMasterParameter(GraphImporter &importer,
                                 const std::string &fqn,
                                 const at::Tensor &tensor,
                                 const std::vector<int64_t> &shape) {
    Type f32 = Float32Type::get(&context);
    Value master = importer.addArgument(RankedTensorType::get(shape, f32), fqn,
                                        ArgRole::Param);
    Type compute = getMLIRType(&context, *options.parameterComputeType);
    Location loc = addModulePath(UnknownLoc::get(&context),
                                 llvm::StringRef(fqn).rsplit('.').first);
    Value cast =
        TensorBuilder(importer.getBuilder(), loc).cast(master, compute);
    arguments[tensor.unsafeGetTensorImpl()] = ImportedValue::ofTensor(cast);
    argumentNames[tensor.unsafeGetTensorImpl()] = fqn;
    // A shape-only tensor has no data to widen (tensorBytes gives none).
    return emit(fqn, shape, f32,
                hasAllData(tensor) ? tensor.to(at::kFloat) : tensor,
                ArgRole::Param);
  }

  /// Hands a tensor's data to the weight callback, if any.
  llvm::Error emit(const std::string &name, const std::vector<int64_t> &shape,
                   Type element, const at::Tensor &tensor, ArgRole role) {
    if (!options.onWeight)
      return llvm::Error::success();
    ImportedTensor weight{name, shape, *getElementTypeOf(element),
                          tensorBytes(tensor), role};
    return options.onWeight(weight);
  }

  MLIRContext &context;
  torch::jit::Module root;
  const TorchScriptImportOptions &options;
  std::unordered_map<const c10::TensorImpl *, ImportedValue> arguments;
  /// The argument name of each tensor held by one argument (not complex).
  std::unordered_map<const c10::TensorImpl *, std::string> argumentNames;
};
} // namespace

llvm::Expected<InputSpec> mlir::titan::parseInputSpec(llvm::StringRef text) {
  InputSpec spec;
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, 'x');
  for (auto [index, part] : llvm::enumerate(parts)) {
    int64_t size;
    if (!part.getAsInteger(10, size) && size >= 0) {
      spec.shape.push_back(size);
      continue;
    }
    if (index + 1 == parts.size() && index > 0) {
      spec.elementType = part.str();
      continue;
    }
    return makeError("bad input shape '" + text +
                     "': expected dims separated by 'x' and an optional "
                     "element type, e.g. 2x64xi64");
  }
  return spec;
}

/// The path of the module `value` holds when it is read from `self` by a
/// chain of attribute reads ("layers.0" for self.layers.0), or nullopt.
static std::optional<std::string> modulePathOf(torch::jit::Value *value,
                                               torch::jit::Value *self) {
  SmallVector<std::string> names;
  for (; value != self; value = value->node()->input(0)) {
    if (value->node()->kind() != torch::jit::prim::GetAttr)
      return std::nullopt;
    names.push_back(value->node()->s(torch::jit::attr::name));
  }
  return llvm::join(llvm::reverse(names), ".");
}

/// Records module path `path` on `node` and the nodes of its blocks
/// (constants belong to no module: they stay poolable).
static void setModulePath(torch::jit::Node *node, const std::string &path) {
  if (node->kind() != torch::jit::prim::Constant)
    node->s_(modulePathAttr(), path);
  for (torch::jit::Block *block : node->blocks())
    for (torch::jit::Node *nested : block->nodes())
      setModulePath(nested, path);
}

/// Inlines every function and method call in `block`, as torch::jit::Inline
/// does, and records on each inlined node the path of the module whose
/// method it came from (a function's nodes keep the caller's). `self` is the
/// root module's value.
static void inlineRecordingModulePaths(torch::jit::Block *block,
                                       torch::jit::Value *self) {
  torch::jit::Node *node = block->param_node()->next();
  while (node != block->return_node()) {
    torch::jit::GraphFunction *callee = torch::jit::tryToGraphFunction(node);
    if (!callee) {
      for (torch::jit::Block *nested : node->blocks())
        inlineRecordingModulePaths(nested, self);
      node = node->next();
      continue;
    }
    std::optional<std::string> path;
    if (node->kind() == torch::jit::prim::CallMethod)
      path = modulePathOf(node->input(0), self);
    if (!path && node->hasAttribute(modulePathAttr()))
      path = node->s(modulePathAttr());
    if (node->kind() == torch::jit::prim::CallFunction)
      node->removeInput(0);
    torch::jit::Node *before = node->prev(), *after = node->next();
    torch::jit::inlineCallTo(node, callee, callee->graph().get());
    if (path && !path->empty())
      for (torch::jit::Node *n = before->next(); n != after; n = n->next())
        setModulePath(n, *path);
    // The inlined nodes may call further methods.
    node = before->next();
  }
}

llvm::Expected<OwningOpRef<ModuleOp>>
mlir::titan::importTorchScriptFile(MLIRContext &context, llvm::StringRef path,
                                   const TorchScriptImportOptions &options) {
  registerNewerTorchOperators();
  torch::jit::Module module;
  try {
    module = torch::jit::load(path.str());
  } catch (const c10::Error &error) {
    std::string what = error.what_without_backtrace();
    return makeError("cannot load '" + path +
                     "' as a TorchScript module (is it a file written by "
                     "torch.jit.save, complete and not truncated?): " +
                     llvm::StringRef(what).split('\n').first);
  } catch (const std::exception &error) {
    std::optional<std::string> newer = explainUnknownOperator(error.what());
    return makeError("cannot load '" + path + "' as a TorchScript module: " +
                     (newer ? *newer : std::string(error.what())));
  }
  if (!module.find_method("forward"))
    return makeError("'" + path + "' has no forward method");
  try {
    std::shared_ptr<torch::jit::Graph> graph =
        module.get_method("forward").graph()->copy();
    inlineRecordingModulePaths(graph->block(), graph->inputs()[0]);
    // Each inlined method brought its own copies of the constants.
    torch::jit::ConstantPooling(graph);
    torch::jit::EliminateDeadCode(graph);
    ModuleAttributes attributes(context, module, options);
    auto bindSelf = [&](GraphImporter &importer,
                        std::vector<ImportedValue> &inputs) -> llvm::Error {
      importer.getAttr = [&attributes, &importer](const ImportedValue &owner,
                                                  llvm::StringRef name) {
        return attributes.get(importer, owner, name);
      };
      inputs.push_back(attributes.self());
      return attributes.addParameters(importer);
    };
    llvm::Expected<OwningOpRef<ModuleOp>> imported =
        importGraph(context, *graph, options, bindSelf);
    if (imported)
      (**imported)
          ->setAttr(TitanDialect::kStateDictAttrName,
                    attributes.stateDictNames());
    return imported;
  } catch (const c10::Error &error) {
    return makeError("while importing '" + path +
                     "': " + error.what_without_backtrace());
  }
}

/// Gives the single-element tensor constants of graph IR text
/// (`%c : Long(...) = prim::Constant[value={4}]()`, as tracing prints Python
/// numbers) the values the text shows: LibTorch's parser makes them with
/// uninitialized contents.
static llvm::Error fillTensorConstants(
    llvm::StringRef irText,
    const std::unordered_map<std::string, torch::jit::Value *> &values) {
  llvm::Regex constant("^[ \t]*%([A-Za-z0-9_.]+)[ \t]*:.*=[ \t]*"
                       "prim::Constant\\[value=\\{([^}]*)\\}\\]");
  llvm::SmallVector<llvm::StringRef> lines;
  irText.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    llvm::SmallVector<llvm::StringRef, 3> match;
    if (!constant.match(line, &match))
      continue;
    auto it = values.find(match[1].str());
    if (it == values.end())
      continue;
    torch::jit::Node *node = it->second->node();
    at::Tensor tensor = node->t(torch::jit::attr::value);
    double number;
    if (match[2].trim().getAsDouble(number))
      return makeError("tensor constant %" + match[1] + ": '" + match[2] +
                       "' is not a number");
    node->t_(torch::jit::attr::value,
             at::scalar_tensor(number, tensor.options()));
  }
  return llvm::Error::success();
}

llvm::Expected<OwningOpRef<ModuleOp>>
mlir::titan::importTorchScriptIR(MLIRContext &context, llvm::StringRef irText,
                                 const TorchScriptImportOptions &options) {
  registerNewerTorchOperators();
  auto graph = std::make_shared<torch::jit::Graph>();
  try {
    std::unordered_map<std::string, torch::jit::Value *> values;
    torch::jit::parseIR(irText.str(), graph.get(), values,
                        /*parse_tensor_constants=*/true);
    if (llvm::Error error = fillTensorConstants(irText, values))
      return std::move(error);
  } catch (const std::exception &error) {
    return makeError(std::string("cannot parse TorchScript IR: ") +
                     error.what());
  }
  try {
    return importGraph(context, *graph, options, nullptr);
  } catch (const c10::Error &error) {
    return makeError(std::string("while importing TorchScript IR: ") +
                     error.what_without_backtrace());
  }
}
