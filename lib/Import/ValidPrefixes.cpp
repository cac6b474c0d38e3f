//===- ValidPrefixes.cpp - Lengths that depend on the data ----------------===//
//
// torch.where(condition) with one argument (torch.nonzero) returns as many
// indices as the condition holds: a length known only at run time. titan
// gives such a tensor the largest length it can have and records how many
// of its entries along that dim are meaningful (ValidPrefix). The rules
// here carry that record through the ops that compute row by row (the
// experts of HF's Mixtral and Qwen-MoE take the rows of their tokens,
// compute, and add them back with index_add_; sum and mean leave the
// entries past the count out), and refuse every other op on such a
// tensor: a maximum over its rows, its size, a sort along it would read
// the entries past the count. The ops that read the indices
// themselves (tensor[...], index_add, index_put) are in AtenOps.cpp.
//
//===----------------------------------------------------------------------===//

#include "AtenSupport.h"

#include "llvm/Support/FormatVariadic.h"

namespace mlir::titan::import {

namespace {

/// How an op moves the dims of its inputs to its outputs.
enum class PrefixRule {
  /// Elementwise with broadcasting: dims align from the right.
  Elementwise,
  /// A view in row-major order (reshape, unsqueeze, flatten): the dim
  /// whose elements before it and size stay.
  Reshape,
  /// transpose, permute, t, numpy_T, mT, mH, adjoint, matrix_H: the dim
  /// moves where the permutation takes it.
  Permute,
  /// select and slice of another dim (input 1).
  OtherDim,
  /// linear, matmul: rows of the first operand, contracted along its last
  /// dim.
  Rows,
  /// softmax, log_softmax over another dim (input 1).
  NormalizeOtherDim,
  /// layer_norm, rms_norm over trailing dims that do not include it.
  NormalizeTrailingDims,
  /// size(x, dim) of another dim.
  SizeOfOtherDim,
  /// Conversions that handle the prefix themselves: tensor[...] with the
  /// indices, index_add, index_put, the lists holding the indices, sum
  /// and mean (which leave the entries past the count out) and the class
  /// losses (which ignore the labels past it).
  Handled,
};

} // namespace

/// The rule of each op that may read a tensor with a valid prefix, by its
/// out-of-place name.
static const llvm::StringMap<PrefixRule> &prefixRules() {
  static const llvm::StringMap<PrefixRule> rules = [] {
    llvm::StringMap<PrefixRule> table;
    for (const char *op : {"abs",         "acos",
                           "acosh",       "add",
                           "addcdiv",     "addcmul",
                           "asin",        "asinh",
                           "atan",        "atan2",
                           "atanh",       "bitwise_and",
                           "bitwise_not", "bitwise_or",
                           "ceil",        "celu",
                           "clamp",       "clamp_max",
                           "clamp_min",   "clone",
                           "contiguous",  "copysign",
                           "cos",         "deg2rad",
                           "detach",      "div",
                           "dropout",     "elu",
                           "eq",          "erf",
                           "exp",         "expand",
                           "expand_as",   "feature_dropout",
                           "fill",        "fix",
                           "floor",       "floor_divide",
                           "fmod",        "ge",
                           "gelu",        "gt",
                           "hardshrink",  "hardsigmoid",
                           "hardswish",   "hardtanh",
                           "heaviside",   "hypot",
                           "isinf",       "isnan",
                           "le",          "leaky_relu",
                           "lerp",        "log",
                           "log1p",       "log_sigmoid",
                           "logaddexp",   "logical_and",
                           "logical_not", "logical_or",
                           "logit",       "lt",
                           "masked_fill", "maximum",
                           "minimum",     "mish",
                           "mul",         "nan_to_num",
                           "ne",          "neg",
                           "pow",         "rad2deg",
                           "reciprocal",  "relu",
                           "relu6",       "remainder",
                           "round",       "rsqrt",
                           "rsub",        "selu",
                           "sgn",         "sigmoid",
                           "sign",        "silu",
                           "sin",         "sinc",
                           "softplus",    "softshrink",
                           "softsign",    "sqrt",
                           "square",      "sub",
                           "tanh",        "tanhshrink",
                           "threshold",   "to",
                           "true_divide", "trunc",
                           "type_as",     "where",
                           "xlogy",       "zero"})
      table[(llvm::Twine("aten::") + op).str()] = PrefixRule::Elementwise;
    for (const char *op :
         {"reshape", "view", "_unsafe_view", "flatten", "unflatten",
          "unsqueeze", "squeeze", "reshape_as", "view_as"})
      table[(llvm::Twine("aten::") + op).str()] = PrefixRule::Reshape;
    for (const char *op : {"transpose", "permute", "t", "numpy_T", "mT", "mH",
                           "adjoint", "matrix_H"})
      table[(llvm::Twine("aten::") + op).str()] = PrefixRule::Permute;
    for (const char *op : {"select", "slice"})
      table[(llvm::Twine("aten::") + op).str()] = PrefixRule::OtherDim;
    for (const char *op : {"linear", "matmul", "mm"})
      table[(llvm::Twine("aten::") + op).str()] = PrefixRule::Rows;
    for (const char *op :
         {"softmax", "log_softmax", "_softmax", "_log_softmax"})
      table[(llvm::Twine("aten::") + op).str()] = PrefixRule::NormalizeOtherDim;
    for (const char *op : {"layer_norm", "rms_norm"})
      table[(llvm::Twine("aten::") + op).str()] =
          PrefixRule::NormalizeTrailingDims;
    table["aten::size"] = PrefixRule::SizeOfOtherDim;
    for (const char *op :
         {"index", "index_add", "index_put", "index_select", "index_fill",
          "nonzero", "nonzero_numpy", "argwhere", "__getitem__", "len", "dim",
          "unbind", "sum", "mean", "masked_select", "cross_entropy_loss",
          "nll_loss", "nll_loss_nd", "nll_loss2d"})
      table[(llvm::Twine("aten::") + op).str()] = PrefixRule::Handled;
    return table;
  }();
  return rules;
}

/// The op of `node` as its rule is registered: an in-place op (`mul_`) by
/// its out-of-place name.
static StringRef ruleName(torch::jit::Node *node) {
  StringRef kind = node->kind().toQualString();
  if (kind.ends_with("_") && !kind.ends_with("__") &&
      !prefixRules().count(kind))
    return kind.drop_back();
  return kind;
}

llvm::Error unsupportedValidPrefixReader(const llvm::Twine &what,
                                         const ValidPrefix &prefix) {
  return makeError(llvm::formatv(
      "{0} a tensor whose dim {1} has as many entries as {2} finds: a "
      "number known only at run time (titan gives the dim its largest "
      "length, {3}, and ignores the entries past the count). Such a tensor "
      "may go through elementwise ops, linear "
      "layers and matmuls, softmax and norms of its other dims, reshapes, "
      "transposes, selects and slices that keep that dim, and end as the "
      "indices or rows of tensor[...], index_select, index_add_ or "
      "index_put_, or in a sum or mean; apply the op after index_add_ has "
      "put the rows back into "
      "a tensor of a known shape (as Mixtral's "
      "final_hidden_states.index_add_), or weight every token by a mask "
      "instead of selecting tokens",
      what.str(), prefix.dim, prefix.origin, prefix.length));
}

Value validMask(TensorBuilder &tb, const ValidPrefix &prefix,
                ArrayRef<int64_t> shape) {
  auto positions = RankedTensorType::get(shape, tb.getBuilder().getI64Type());
  Value count = tb.broadcastTo(
      tb.reshape(prefix.count, SmallVector<int64_t>(shape.size(), 1)), shape);
  return tb.compare("lt", tb.iota(positions, prefix.dim), count);
}

const ValidPrefix *
GraphImporter::validPrefixOfInputs(torch::jit::Node *node) const {
  for (torch::jit::Value *input : node->inputs()) {
    auto it = values.find(input);
    if (it == values.end())
      continue;
    const ImportedValue &value = it->second;
    if (value.isTensor())
      if (const ValidPrefix *prefix = validPrefix(value.tensor))
        return prefix;
    for (const ImportedValue &item : value.items)
      if (item.isTensor())
        if (const ValidPrefix *prefix = validPrefix(item.tensor))
          return prefix;
  }
  return nullptr;
}

std::string GraphImporter::opAt(torch::jit::Node *node) const {
  std::string source = sourceOf(node);
  std::string op = node->kind().toQualString();
  return source.empty() ? op : op + " at " + source;
}

llvm::Error
GraphImporter::checkValidPrefixReader(torch::jit::Node *node) const {
  const ValidPrefix *prefix = validPrefixOfInputs(node);
  if (!prefix || prefixRules().count(ruleName(node)))
    return llvm::Error::success();
  return unsupportedValidPrefixReader(
      llvm::Twine(node->kind().toQualString()) + " of", *prefix);
}

/// The dim of a row-major reshape's result that holds dim `dim` of `from`:
/// the one with as many elements before it and the same size, or none.
static std::optional<int64_t> reshapedDim(ArrayRef<int64_t> from, int64_t dim,
                                          ArrayRef<int64_t> to) {
  int64_t before = ShapedType::getNumElements(from.take_front(dim));
  int64_t elements = 1;
  for (auto [d, size] : llvm::enumerate(to)) {
    if (elements == before && size == from[dim])
      return d;
    elements *= size;
  }
  return std::nullopt;
}

llvm::Error
GraphImporter::propagateValidPrefix(torch::jit::Node *node,
                                    const std::vector<ImportedValue> &outputs) {
  if (!validPrefixOfInputs(node))
    return llvm::Error::success();
  PrefixRule rule = prefixRules().lookup(ruleName(node));
  std::string op = node->kind().toQualString();
  // len() of a list holding such tensors counts the list; of such a tensor,
  // its first dim.
  // The trip count of a scripted loop over the positions a vector's
  // nonzero entries are at: the loop runs for each position, each
  // iteration gated (FoundEntryLoops.cpp).
  auto onlyCountsALoop = [&](const ValidPrefix &prefix) {
    return prefix.condition &&
           llvm::all_of(node->output()->uses(), [](const torch::jit::Use &use) {
             return use.user->kind() == torch::jit::prim::Loop &&
                    use.offset == 0;
           });
  };
  if (op == "aten::len" && lookup(node->input(0)).isTensor())
    if (const ValidPrefix *prefix = validPrefix(lookup(node->input(0)).tensor);
        prefix && prefix->dim == 0 && !onlyCountsALoop(*prefix))
      return unsupportedValidPrefixReader("len() of", *prefix);
  if (rule == PrefixRule::Handled)
    return llvm::Error::success();
  // The tensor inputs with a prefix; all must agree on the count.
  SmallVector<std::pair<Value, ValidPrefix>> read;
  for (torch::jit::Value *input : node->inputs()) {
    const ImportedValue &value = lookup(input);
    if (value.isTensor())
      if (const ValidPrefix *prefix = validPrefix(value.tensor))
        read.push_back({value.tensor, *prefix});
  }
  if (read.empty())
    return unsupportedValidPrefixReader(op + " of a list holding",
                                        *validPrefixOfInputs(node));
  const ValidPrefix &first = read.front().second;
  for (auto &[tensor, prefix] : read)
    if (prefix.count != first.count)
      return makeError(llvm::formatv(
          "{0} combines tensors whose lengths depend on the data, from {1} "
          "and from {2}: titan cannot tell that they are equal; combine "
          "rows that come from the same torch.where(condition)",
          op, first.origin, prefix.origin));
  Value x = read.front().first;
  RankedTensorType xType = tensorType(x);
  int64_t rank = xType.getRank(), dim = first.dim;
  int64_t size = xType.getDimSize(dim);
  bool onlyFirst = read.size() == 1 && lookup(node->input(0)).isTensor() &&
                   lookup(node->input(0)).tensor == x;
  auto dimInput = [&](size_t index) -> llvm::Expected<int64_t> {
    llvm::Expected<int64_t> value = intInput(node, index);
    if (!value)
      return value.takeError();
    return normalizeDim(*value, rank);
  };
  // The dim of each tensor output that holds the prefix, given the
  // output's shape; none where the op loses it.
  std::function<std::optional<int64_t>(ArrayRef<int64_t>)> outputDim;
  switch (rule) {
  case PrefixRule::Elementwise:
    outputDim = [&](ArrayRef<int64_t> shape) -> std::optional<int64_t> {
      std::optional<int64_t> common;
      for (auto &[tensor, prefix] : read) {
        int64_t inputRank = tensorType(tensor).getRank();
        int64_t d = prefix.dim + (int64_t)shape.size() - inputRank;
        if (d < 0 || (common && *common != d))
          return std::nullopt;
        common = d;
      }
      return common;
    };
    break;
  case PrefixRule::Reshape:
    if (!onlyFirst)
      return unsupportedValidPrefixReader(op + " to the shape of", first);
    outputDim = [&](ArrayRef<int64_t> shape) {
      return reshapedDim(xType.getShape(), dim, shape);
    };
    break;
  case PrefixRule::Permute: {
    if (!onlyFirst)
      return unsupportedValidPrefixReader(op + " with a second operand", first);
    SmallVector<int64_t> order = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    if (op == "aten::permute") {
      llvm::Expected<std::vector<int64_t>> dims = intListInput(node, 1);
      if (!dims)
        return dims.takeError();
      for (auto [i, d] : llvm::enumerate(*dims)) {
        llvm::Expected<int64_t> normalized = normalizeDim(d, rank);
        if (!normalized)
          return normalized.takeError();
        order[i] = *normalized;
      }
    } else if (op == "aten::t" || op == "aten::numpy_T") {
      std::reverse(order.begin(), order.end());
    } else if (op != "aten::transpose") {
      // mT, mH, adjoint, matrix_H: the last two dims swapped.
      if (rank < 2)
        return unsupportedValidPrefixReader(op + " of fewer than 2 dims",
                                            first);
      std::swap(order[rank - 2], order[rank - 1]);
    } else {
      llvm::Expected<int64_t> a = dimInput(1), b = dimInput(2);
      if (!a || !b)
        return llvm::joinErrors(a.takeError(), b.takeError());
      std::swap(order[*a], order[*b]);
    }
    int64_t moved = llvm::find(order, dim) - order.begin();
    outputDim = [moved](ArrayRef<int64_t>) { return moved; };
    break;
  }
  case PrefixRule::OtherDim: {
    llvm::Expected<int64_t> other = dimInput(1);
    if (!other)
      return other.takeError();
    // A slice of all of it (`found[:, 0]`) is the tensor itself; a select
    // of one of the positions a vector's nonzero entries are at is that
    // position, gated (foundEntryItem).
    if (onlyFirst && *other == dim && outputs.size() == 1 &&
        outputs[0].isTensor() &&
        (outputs[0].tensor == x ||
         (op == "aten::select" && first.condition && outputs[0].gate)))
      return llvm::Error::success();
    if (!onlyFirst || *other == dim)
      return unsupportedValidPrefixReader(
          op + " along the data-dependent dim of", first);
    int64_t kept = op == "aten::select" && *other < dim ? dim - 1 : dim;
    outputDim = [kept](ArrayRef<int64_t>) { return kept; };
    break;
  }
  case PrefixRule::Rows:
    if (!onlyFirst || dim >= rank - 1)
      return unsupportedValidPrefixReader(
          op + " contracting the data-dependent dim of", first);
    outputDim = [&](ArrayRef<int64_t> shape) {
      return dim + (int64_t)shape.size() - rank;
    };
    break;
  case PrefixRule::NormalizeOtherDim: {
    llvm::Expected<int64_t> other = dimInput(1);
    if (!other)
      return other.takeError();
    if (!onlyFirst || *other == dim)
      return unsupportedValidPrefixReader(
          op + " along the data-dependent dim of", first);
    outputDim = [dim](ArrayRef<int64_t>) { return dim; };
    break;
  }
  case PrefixRule::NormalizeTrailingDims: {
    llvm::Expected<std::vector<int64_t>> normalized = intListInput(node, 1);
    if (!normalized)
      return normalized.takeError();
    if (!onlyFirst || dim >= rank - (int64_t)normalized->size())
      return unsupportedValidPrefixReader(
          op + " over the data-dependent dim of", first);
    outputDim = [dim](ArrayRef<int64_t>) { return dim; };
    break;
  }
  case PrefixRule::SizeOfOtherDim: {
    if (node->inputs().size() < 2)
      return unsupportedValidPrefixReader("the sizes of", first);
    llvm::Expected<int64_t> other = dimInput(1);
    if (!other)
      return other.takeError();
    if (*other == dim)
      return unsupportedValidPrefixReader(
          "the size of the data-dependent dim of", first);
    return llvm::Error::success();
  }
  case PrefixRule::Handled:
    llvm_unreachable("handled above");
  }
  for (const ImportedValue &output : outputs) {
    if (!output.isTensor())
      continue;
    ArrayRef<int64_t> shape = tensorType(output.tensor).getShape();
    std::optional<int64_t> d = outputDim(shape);
    if (!d || *d < 0 || *d >= (int64_t)shape.size() || shape[*d] != size)
      return unsupportedValidPrefixReader(
          op + " mixing the data-dependent dim with others of", first);
    ValidPrefix moved = first.at(*d);
    // Only views keep the positions themselves (foundEntryItems).
    if (rule != PrefixRule::Reshape)
      moved.condition = Value();
    setValidPrefix(output.tensor, moved);
  }
  return llvm::Error::success();
}

} // namespace mlir::titan::import
