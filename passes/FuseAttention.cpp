//===- FuseAttention.cpp - recognize attention written with matmuls -------===//
//
// Implements titan-fuse-attention (see passes/Passes.td).
//
// The causal mask is proven, not guessed: every value the mask is computed
// from (constants, iotas, and elementwise and shape ops on them) is evaluated
// symbolically as a function of its element indices (IndexFunction), with
// the rounding of each op's element type, and the mask must let position j
// through to position i exactly when j <= i.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/TensorBuilder.h"
#include "titan/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

namespace mlir::titan {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

//===----------------------------------------------------------------------===//
// Compile-time values as functions of their indices
//===----------------------------------------------------------------------===//

/// A tensor whose every element is known at compile time as a function of
/// its indices i_0, ..., i_{n-1}: either affine, `offset + sum_d coef[d] *
/// i_d` (a constant when every coef is 0), or a function of the difference
/// of two indices whose dims have the same size n, `table[i_a - i_b + n -
/// 1]` (the shape of causal and banded masks).
struct IndexFunction {
  SmallVector<double> coef;
  double offset = 0;
  /// The table form when `a` >= 0.
  int64_t a = -1, b = -1;
  std::vector<double> table;

  bool isTable() const { return a >= 0; }
  bool isConstant() const {
    return !isTable() && llvm::all_of(coef, [](double c) { return c == 0; });
  }
  static IndexFunction constant(int64_t rank, double value) {
    IndexFunction f;
    f.coef.assign(rank, 0);
    f.offset = value;
    return f;
  }
};

/// `value` converted to `element` as titan.cast converts (floats round to
/// nearest even, to integers truncate toward zero, to i1 `value != 0`);
/// nullopt when the integer conversion overflows.
std::optional<double> roundTo(Type element, double value) {
  if (element.isInteger(1))
    return value != 0 ? 1.0 : 0.0;
  if (auto integer = dyn_cast<IntegerType>(element)) {
    double limit = std::ldexp(1.0, integer.getWidth() - 1);
    double truncated = std::trunc(value);
    if (!std::isfinite(value) || truncated >= limit || truncated < -limit)
      return std::nullopt;
    return truncated;
  }
  llvm::APFloat rounded(value);
  bool losesInfo;
  rounded.convert(cast<FloatType>(element).getFloatSemantics(),
                  llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return rounded.convertToDouble();
}

/// The largest integer up to which `element` holds every integer exactly.
double exactIntegerLimit(Type element) {
  if (element.isInteger(1))
    return 1;
  if (auto integer = dyn_cast<IntegerType>(element))
    return std::ldexp(1.0, integer.getWidth() - 1) - 1;
  return std::ldexp(1.0, llvm::APFloat::semanticsPrecision(
                             cast<FloatType>(element).getFloatSemantics()));
}

/// The dims (a, b) whose index difference `f` is a function of, for an
/// affine `f` of the form `k * (i_a - i_b) + offset` over dims of one size.
std::optional<std::pair<int64_t, int64_t>>
differenceDims(const IndexFunction &f, ArrayRef<int64_t> shape) {
  if (f.isTable())
    return std::pair{f.a, f.b};
  SmallVector<int64_t> dims;
  for (auto [dim, c] : llvm::enumerate(f.coef))
    if (c != 0)
      dims.push_back(dim);
  if (dims.size() != 2 || f.coef[dims[0]] != -f.coef[dims[1]] ||
      shape[dims[0]] != shape[dims[1]])
    return std::nullopt;
  return std::pair{dims[0], dims[1]};
}

/// The values of `f` as a function of `i_a - i_b` (dims of size `n`), or
/// nullopt when `f` depends on anything else.
std::optional<std::vector<double>> tabulate(const IndexFunction &f, int64_t a,
                                            int64_t b, int64_t n) {
  if (f.isTable()) {
    if (f.a == a && f.b == b)
      return f.table;
    if (f.a == b && f.b == a)
      return std::vector<double>(f.table.rbegin(), f.table.rend());
    return std::nullopt;
  }
  for (auto [dim, c] : llvm::enumerate(f.coef))
    if (c != 0 && static_cast<int64_t>(dim) != a &&
        static_cast<int64_t>(dim) != b)
      return std::nullopt;
  if (f.coef[a] != -f.coef[b])
    return std::nullopt;
  std::vector<double> table(2 * n - 1);
  for (int64_t d = 1 - n; d < n; ++d)
    table[d + n - 1] = f.offset + f.coef[a] * static_cast<double>(d);
  return table;
}

/// `f` with the values the elements of `type` hold: affine values must be
/// integers the element type holds exactly (iotas and their sums), anything
/// else is tabulated and rounded. Nullopt when neither is possible.
std::optional<IndexFunction> roundToType(IndexFunction f,
                                         RankedTensorType type) {
  Type element = type.getElementType();
  // The index along a dim of size 1 is always 0.
  if (f.isTable() && type.getDimSize(f.a) == 1)
    f = IndexFunction::constant(type.getRank(), f.table.front());
  for (auto [dim, c] : llvm::enumerate(f.coef))
    if (type.getDimSize(dim) == 1)
      c = 0;
  if (f.isTable()) {
    for (double &value : f.table) {
      std::optional<double> rounded = roundTo(element, value);
      if (!rounded)
        return std::nullopt;
      value = *rounded;
    }
    return f;
  }
  if (f.isConstant()) {
    std::optional<double> rounded = roundTo(element, f.offset);
    if (!rounded)
      return std::nullopt;
    f.offset = *rounded;
    return f;
  }
  double bound = std::abs(f.offset);
  bool integral = std::trunc(f.offset) == f.offset;
  for (auto [dim, c] : llvm::enumerate(f.coef)) {
    integral &= std::trunc(c) == c;
    bound += std::abs(c) * static_cast<double>(type.getDimSize(dim) - 1);
  }
  if (integral && bound <= exactIntegerLimit(element))
    return f;
  std::optional<std::pair<int64_t, int64_t>> dims =
      differenceDims(f, type.getShape());
  if (!dims)
    return std::nullopt;
  IndexFunction tabulated;
  tabulated.a = dims->first;
  tabulated.b = dims->second;
  tabulated.table =
      *tabulate(f, dims->first, dims->second, type.getDimSize(dims->first));
  return roundToType(std::move(tabulated), type);
}

/// Evaluates the compile-time values that masks and scales are made of.
class IndexFunctionEvaluator {
public:
  /// The function `value` computes, or nullopt when it is not a compile-time
  /// value of a supported form.
  std::optional<IndexFunction> evaluate(Value value);

private:
  std::optional<IndexFunction> compute(Operation *op, RankedTensorType type);
  /// Applies `fn` element by element to `operands` (results of `type`).
  std::optional<IndexFunction>
  pointwise(ArrayRef<IndexFunction> operands, RankedTensorType type,
            llvm::function_ref<double(ArrayRef<double>)> fn);
  std::optional<IndexFunction> fromConstant(DenseElementsAttr dense,
                                            RankedTensorType type);

  DenseMap<Value, std::optional<IndexFunction>> known;
};

std::optional<IndexFunction> IndexFunctionEvaluator::evaluate(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  Operation *op = value.getDefiningOp();
  if (!type || !type.hasStaticShape() || !op)
    return std::nullopt;
  auto it = known.find(value);
  if (it != known.end())
    return it->second;
  std::optional<IndexFunction> f = compute(op, type);
  if (f)
    f = roundToType(std::move(*f), type);
  known[value] = f;
  return f;
}

std::optional<IndexFunction> IndexFunctionEvaluator::pointwise(
    ArrayRef<IndexFunction> operands, RankedTensorType type,
    llvm::function_ref<double(ArrayRef<double>)> fn) {
  SmallVector<double> args;
  if (llvm::all_of(operands,
                   [](const IndexFunction &f) { return f.isConstant(); })) {
    for (const IndexFunction &f : operands)
      args.push_back(f.offset);
    return IndexFunction::constant(type.getRank(), fn(args));
  }
  std::optional<std::pair<int64_t, int64_t>> dims;
  for (const IndexFunction &f : operands)
    if (!f.isConstant() && (dims = differenceDims(f, type.getShape())))
      break;
  if (!dims)
    return std::nullopt;
  int64_t n = type.getDimSize(dims->first);
  SmallVector<std::vector<double>> tables;
  for (const IndexFunction &f : operands) {
    std::optional<std::vector<double>> table =
        tabulate(f, dims->first, dims->second, n);
    if (!table)
      return std::nullopt;
    tables.push_back(std::move(*table));
  }
  IndexFunction result;
  result.a = dims->first;
  result.b = dims->second;
  result.table.resize(2 * n - 1);
  for (auto [index, value] : llvm::enumerate(result.table)) {
    args.clear();
    for (const std::vector<double> &table : tables)
      args.push_back(table[index]);
    value = fn(args);
  }
  return result;
}

std::optional<IndexFunction>
IndexFunctionEvaluator::fromConstant(DenseElementsAttr dense,
                                     RankedTensorType type) {
  auto toDouble = [&](auto element) -> double {
    if constexpr (std::is_same_v<decltype(element), APFloat>)
      return element.convertToDouble();
    else if (element.getBitWidth() == 1)
      return element.isZero() ? 0.0 : 1.0;
    else
      return static_cast<double>(element.getSExtValue());
  };
  bool isFloat = isa<FloatType>(dense.getElementType());
  if (!isFloat && !isa<IntegerType>(dense.getElementType()))
    return std::nullopt;
  if (dense.isSplat())
    return IndexFunction::constant(
        type.getRank(), isFloat ? toDouble(dense.getSplatValue<APFloat>())
                                : toDouble(dense.getSplatValue<APInt>()));
  // A literal mask: a function of the difference of the last two indices,
  // every other dim of size 1.
  ArrayRef<int64_t> shape = type.getShape();
  int64_t rank = type.getRank();
  if (rank < 2 || shape[rank - 1] != shape[rank - 2] ||
      llvm::any_of(shape.drop_back(2), [](int64_t d) { return d != 1; }))
    return std::nullopt;
  int64_t n = shape.back();
  SmallVector<double> values;
  if (isFloat)
    for (APFloat element : dense.getValues<APFloat>())
      values.push_back(toDouble(element));
  else
    for (APInt element : dense.getValues<APInt>())
      values.push_back(toDouble(element));
  IndexFunction f;
  f.a = rank - 1;
  f.b = rank - 2;
  f.table.resize(2 * n - 1);
  for (int64_t row = 0; row < n; ++row)
    for (int64_t col = 0; col < n; ++col) {
      double value = values[row * n + col];
      double &entry = f.table[col - row + n - 1];
      // The first element of each diagonal defines it (NaN never matches).
      if (row == 0 || col == 0)
        entry = value;
      else if (!(entry == value))
        return std::nullopt;
    }
  return f;
}

std::optional<IndexFunction>
IndexFunctionEvaluator::compute(Operation *op, RankedTensorType type) {
  int64_t rank = type.getRank();
  // The operands' functions, or nullopt.
  auto operands = [&]() -> std::optional<SmallVector<IndexFunction>> {
    SmallVector<IndexFunction> fs;
    for (Value operand : op->getOperands()) {
      std::optional<IndexFunction> f = evaluate(operand);
      if (!f)
        return std::nullopt;
      fs.push_back(std::move(*f));
    }
    return fs;
  };
  // `input` (of `inputShape`) seen in the result's dims: input dim d is
  // result dim map[d] (-1: a dim of size 1 that the result drops).
  auto remap = [&](IndexFunction input, ArrayRef<int64_t> map,
                   ArrayRef<int64_t> inputShape)
      -> std::optional<IndexFunction> {
    if (input.isTable()) {
      if (map[input.a] < 0 || map[input.b] < 0)
        return std::nullopt;
      input.a = map[input.a];
      input.b = map[input.b];
      input.coef.assign(rank, 0);
      return input;
    }
    SmallVector<double> coef(rank, 0);
    for (auto [dim, c] : llvm::enumerate(input.coef))
      if (inputShape[dim] != 1)
        coef[map[dim]] = c;
    input.coef = std::move(coef);
    return input;
  };

  return llvm::TypeSwitch<Operation *, std::optional<IndexFunction>>(op)
      .Case([&](ConstantOp constant) -> std::optional<IndexFunction> {
        auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
        if (!dense)
          return std::nullopt;
        return fromConstant(dense, type);
      })
      .Case([&](IotaOp iota) {
        IndexFunction f = IndexFunction::constant(rank, 0);
        f.coef[iota.getDim()] = 1;
        return f;
      })
      .Case<CastOp, ScaleOp, NegOp>([&](auto) -> std::optional<IndexFunction> {
        std::optional<SmallVector<IndexFunction>> in = operands();
        if (!in)
          return std::nullopt;
        IndexFunction f = std::move(in->front());
        double factor = 1;
        if (auto scale = dyn_cast<ScaleOp>(op))
          factor = *roundTo(type.getElementType(),
                            scale.getFactor().convertToDouble());
        else if (isa<NegOp>(op))
          factor = -1;
        if (factor == 1)
          return f;
        if (!f.isTable()) {
          for (double &c : f.coef)
            c *= factor;
          f.offset *= factor;
          return f;
        }
        for (double &value : f.table)
          value *= factor;
        return f;
      })
      .Case([&](BroadcastInDimOp broadcast) -> std::optional<IndexFunction> {
        std::optional<IndexFunction> input = evaluate(broadcast.getInput());
        if (!input)
          return std::nullopt;
        return remap(std::move(*input), broadcast.getDims(),
                     broadcast.getInput().getType().getShape());
      })
      .Case([&](TransposeOp transpose) -> std::optional<IndexFunction> {
        std::optional<IndexFunction> input = evaluate(transpose.getInput());
        if (!input)
          return std::nullopt;
        SmallVector<int64_t> map(rank);
        for (auto [dim, from] : llvm::enumerate(transpose.getPermutation()))
          map[from] = dim;
        return remap(std::move(*input), map,
                     transpose.getInput().getType().getShape());
      })
      .Case([&](ReshapeOp reshape) -> std::optional<IndexFunction> {
        // Only reshapes that insert or drop dims of size 1.
        ArrayRef<int64_t> in = reshape.getInput().getType().getShape();
        ArrayRef<int64_t> out = type.getShape();
        SmallVector<int64_t> map(in.size(), -1);
        size_t next = 0;
        for (auto [dim, size] : llvm::enumerate(in)) {
          if (size == 1)
            continue;
          while (next < out.size() && out[next] == 1)
            ++next;
          if (next == out.size() || out[next] != size)
            return std::nullopt;
          map[dim] = next++;
        }
        std::optional<IndexFunction> input = evaluate(reshape.getInput());
        if (!input)
          return std::nullopt;
        return remap(std::move(*input), map, in);
      })
      .Case<AddOp, SubOp>([&](auto) -> std::optional<IndexFunction> {
        std::optional<SmallVector<IndexFunction>> in = operands();
        if (!in)
          return std::nullopt;
        double sign = isa<SubOp>(op) ? -1 : 1;
        const IndexFunction &lhs = (*in)[0], &rhs = (*in)[1];
        if (!lhs.isTable() && !rhs.isTable()) {
          IndexFunction f = lhs;
          for (auto [c, r] : llvm::zip(f.coef, rhs.coef))
            c += sign * r;
          f.offset += sign * rhs.offset;
          return f;
        }
        return pointwise(*in, type, [&](ArrayRef<double> v) {
          return v[0] + sign * v[1];
        });
      })
      .Case<MulOp, DivOp, MaxOp>([&](auto) -> std::optional<IndexFunction> {
        std::optional<SmallVector<IndexFunction>> in = operands();
        if (!in)
          return std::nullopt;
        return pointwise(*in, type, [&](ArrayRef<double> v) {
          if (isa<MulOp>(op))
            return v[0] * v[1];
          if (isa<DivOp>(op))
            return v[0] / v[1];
          return std::isnan(v[0]) || std::isnan(v[1]) ? NAN
                                                      : std::max(v[0], v[1]);
        });
      })
      .Case([&](CompareOp compare) -> std::optional<IndexFunction> {
        std::optional<SmallVector<IndexFunction>> in = operands();
        if (!in)
          return std::nullopt;
        // Iotas compare exactly as their difference compares with 0 (both
        // hold integers exactly), which may be a function of i_a - i_b when
        // neither side is.
        IndexFunction &lhs = (*in)[0], &rhs = (*in)[1];
        if (!lhs.isTable() && !rhs.isTable() && std::isfinite(lhs.offset) &&
            std::isfinite(rhs.offset)) {
          for (auto [c, r] : llvm::zip(lhs.coef, rhs.coef))
            c -= r;
          lhs.offset -= rhs.offset;
          rhs = IndexFunction::constant(rank, 0);
        }
        StringRef predicate = compare.getPredicate();
        return pointwise(*in, type, [&](ArrayRef<double> v) -> double {
          if (predicate == "eq")
            return v[0] == v[1];
          if (predicate == "ne")
            return v[0] != v[1];
          if (predicate == "lt")
            return v[0] < v[1];
          if (predicate == "le")
            return v[0] <= v[1];
          if (predicate == "gt")
            return v[0] > v[1];
          return v[0] >= v[1];
        });
      })
      .Case([&](SelectOp) -> std::optional<IndexFunction> {
        std::optional<SmallVector<IndexFunction>> in = operands();
        if (!in)
          return std::nullopt;
        return pointwise(*in, type, [](ArrayRef<double> v) {
          return v[0] != 0 ? v[1] : v[2];
        });
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// The value of a compile-time scalar (a splat, possibly cast, broadcast or
/// reshaped).
std::optional<double> scalarConstant(IndexFunctionEvaluator &evaluator,
                                     Value value) {
  std::optional<IndexFunction> f = evaluator.evaluate(value);
  if (!f || !f->isConstant())
    return std::nullopt;
  return f->offset;
}

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

/// Whether a mask hides each key position from each query position of
/// scores [..., queries, keys]: `hidden(value at i_keys - i_queries)`.
/// Returns true for the causal mask (keys after the query hidden), false for
/// no mask (nothing hidden), nullopt for any other mask or one that is not a
/// compile-time function of the two positions.
std::optional<bool> isCausal(IndexFunctionEvaluator &evaluator, Value mask,
                             llvm::function_ref<std::optional<bool>(double)>
                                 hidden) {
  std::optional<IndexFunction> f = evaluator.evaluate(mask);
  if (!f)
    return std::nullopt;
  RankedTensorType type = tensorTypeOf(mask);
  int64_t keys = type.getRank() - 1, queries = keys - 1;
  int64_t n = type.getDimSize(keys);
  if (type.getDimSize(queries) != n)
    return std::nullopt;
  std::optional<std::vector<double>> table = tabulate(*f, keys, queries, n);
  if (!table)
    return std::nullopt;
  bool causal = true, none = true;
  for (int64_t d = 1 - n; d < n; ++d) {
    std::optional<bool> isHidden = hidden((*table)[d + n - 1]);
    if (!isHidden)
      return std::nullopt;
    causal &= *isHidden == (d > 0);
    none &= !*isHidden;
  }
  if (none)
    return false;
  if (causal)
    return true;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// The attention pattern
//===----------------------------------------------------------------------===//

/// What lies between the scores `q @ k^T` and the softmax: scales by
/// compile-time factors and causal masks (or masks that hide nothing).
struct ScoresChain {
  MatmulOp scores;
  double scale = 1;
  bool causal = false;
};

/// Walks from the softmax input back to the scores matmul. Every value on
/// the way must have no other user.
std::optional<ScoresChain> matchScoresChain(IndexFunctionEvaluator &evaluator,
                                            Value value) {
  ScoresChain chain;
  // An additive mask hides with -inf and lets through with 0.
  auto additive = [](double v) -> std::optional<bool> {
    if (v == 0)
      return false;
    if (v == -INFINITY)
      return true;
    return std::nullopt;
  };
  auto isTrue = [](double v) -> std::optional<bool> { return v != 0; };
  auto isFalse = [](double v) -> std::optional<bool> { return v == 0; };
  auto minusInfinity = [&](Value v) {
    std::optional<double> c = scalarConstant(evaluator, v);
    return c && *c == -INFINITY;
  };
  while (value.hasOneUse()) {
    Operation *op = value.getDefiningOp();
    if (!op)
      return std::nullopt;
    if (auto scores = dyn_cast<MatmulOp>(op)) {
      chain.scores = scores;
      return chain;
    }
    Type element = getElementTypeOrSelf(value.getType());
    std::optional<Value> next;
    if (auto cast = dyn_cast<CastOp>(op)) {
      // `.float()` on f32 only: a real conversion is a rounding the fused
      // op would not do.
      if (cast.getInput().getType() == cast.getType())
        next = cast.getInput();
    } else if (auto scale = dyn_cast<ScaleOp>(op)) {
      chain.scale *=
          *roundTo(element, scale.getFactor().convertToDouble());
      next = scale.getInput();
    } else if (auto mul = dyn_cast<MulOp>(op)) {
      for (auto [input, factor] : {std::pair{mul.getLhs(), mul.getRhs()},
                                   std::pair{mul.getRhs(), mul.getLhs()}})
        if (std::optional<double> c = scalarConstant(evaluator, factor)) {
          chain.scale *= *c;
          next = input;
          break;
        }
    } else if (auto div = dyn_cast<DivOp>(op)) {
      if (std::optional<double> c = scalarConstant(evaluator, div.getRhs())) {
        chain.scale /= *c;
        next = div.getLhs();
      }
    } else if (auto add = dyn_cast<AddOp>(op)) {
      for (auto [input, mask] : {std::pair{add.getLhs(), add.getRhs()},
                                 std::pair{add.getRhs(), add.getLhs()}})
        if (std::optional<bool> causal = isCausal(evaluator, mask, additive)) {
          chain.causal |= *causal;
          next = input;
          break;
        }
    } else if (auto select = dyn_cast<SelectOp>(op)) {
      // masked_fill(mask, -inf) and where(mask, scores, -inf).
      std::optional<bool> causal;
      if (minusInfinity(select.getOnTrue()) &&
          (causal = isCausal(evaluator, select.getCond(), isTrue)))
        next = select.getOnFalse();
      else if (minusInfinity(select.getOnFalse()) &&
               (causal = isCausal(evaluator, select.getCond(), isFalse)))
        next = select.getOnTrue();
      if (causal)
        chain.causal |= *causal;
    }
    if (!next)
      return std::nullopt;
    value = *next;
  }
  return std::nullopt;
}

/// `transpose(source, permutation)`: a value seen through the transposes
/// that produce it.
struct TransposedView {
  Value source;
  SmallVector<int64_t> permutation;
};

/// `value` transposed by `permutation`, seen from before its transposes.
TransposedView viewThroughTransposes(Value value,
                                     ArrayRef<int64_t> permutation) {
  TransposedView view{value, SmallVector<int64_t>(permutation)};
  while (auto transpose = view.source.getDefiningOp<TransposeOp>()) {
    // transpose(transpose(x, inner), p) = transpose(x, inner[p[d]]).
    for (int64_t &dim : view.permutation)
      dim = transpose.getPermutation()[dim];
    view.source = transpose.getInput();
  }
  return view;
}

/// A tensor and the shape that views it without a repeated dim.
using Unrepeated = std::pair<Value, SmallVector<int64_t>>;

/// The KV heads before Llama's repeat_kv: if `value` repeats every index of
/// its dim `dim` r times in a row (`x.unsqueeze(dim + 1).expand(..., r,
/// ...).reshape(...)`: a broadcast_in_dim to [..., n, r, ...] and a reshape
/// to [..., n * r, ...]), the broadcast's input and the shape [..., n, ...]
/// that holds each index once.
std::optional<Unrepeated> matchRepeat(Value value, int64_t dim) {
  auto reshape = value.getDefiningOp<ReshapeOp>();
  if (!reshape)
    return std::nullopt;
  auto broadcast = reshape.getInput().getDefiningOp<BroadcastInDimOp>();
  if (!broadcast)
    return std::nullopt;
  ArrayRef<int64_t> shape = reshape.getType().getShape();
  ArrayRef<int64_t> expanded = broadcast.getType().getShape();
  if (expanded.size() != shape.size() + 1 ||
      expanded.take_front(dim) != shape.take_front(dim) ||
      expanded.drop_front(dim + 2) != shape.drop_front(dim + 1) ||
      expanded[dim] * expanded[dim + 1] != shape[dim])
    return std::nullopt;
  // Every dim but the repeat (dim + 1) comes whole and in order from the
  // input; the repeat is new or of size 1 there.
  ArrayRef<int64_t> inputShape = broadcast.getInput().getType().getShape();
  ArrayRef<int64_t> dims = broadcast.getDims();
  size_t whole = 0;
  for (auto [index, to] : llvm::enumerate(dims)) {
    if (index > 0 && to <= dims[index - 1])
      return std::nullopt;
    if (to == dim + 1 ? inputShape[index] != 1
                      : inputShape[index] != expanded[to])
      return std::nullopt;
    whole += to != dim + 1;
  }
  if (whole != shape.size())
    return std::nullopt;
  SmallVector<int64_t> once(shape);
  once[dim] = expanded[dim];
  return std::pair{broadcast.getInput(), once};
}

/// `probs @ v` with `probs = softmax(scale * q @ k^T + causal mask)` ->
/// `titan.attention q, k, v`.
struct FuseAttention : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp output,
                                PatternRewriter &rewriter) const override {
    if (output.getTransposeLhs())
      return rewriter.notifyMatchFailure(output, "transposed probabilities");
    // The probabilities, through casts that change nothing.
    Value probs = output.getLhs();
    while (auto cast = probs.getDefiningOp<CastOp>()) {
      if (cast.getInput().getType() != cast.getType() || !probs.hasOneUse())
        return rewriter.notifyMatchFailure(output, "not attention");
      probs = cast.getInput();
    }
    auto softmax = probs.getDefiningOp<SoftmaxOp>();
    if (!softmax || !probs.hasOneUse())
      return rewriter.notifyMatchFailure(output, "not softmax @ v");
    RankedTensorType type = output.getType();
    if (type.getRank() != 4 || !type.hasStaticShape() ||
        softmax.getDim() != 3)
      return rewriter.notifyMatchFailure(output, "not a last-dim softmax of "
                                                 "[batch, heads, seq, seq]");
    IndexFunctionEvaluator evaluator;
    std::optional<ScoresChain> chain =
        matchScoresChain(evaluator, softmax.getInput());
    if (!chain || !(chain->scale > 0) || std::isinf(chain->scale))
      return rewriter.notifyMatchFailure(
          output, "no q @ k^T under positive scales and causal masks");
    MatmulOp scores = chain->scores;
    auto sameElements = [&](Value value) {
      RankedTensorType other = tensorTypeOf(value);
      return other.getRank() == 4 &&
             other.getElementType() == type.getElementType();
    };
    if (!sameElements(scores.getLhs()) || !sameElements(scores.getRhs()) ||
        !sameElements(output.getRhs()) || !sameElements(softmax.getResult()))
      return rewriter.notifyMatchFailure(output, "element types differ");

    // q, k and v as [batch, heads, seq, head_dim]: the matmul operands,
    // transposed where the matmul reads them transposed.
    SmallVector<int64_t> identity = {0, 1, 2, 3}, swapped = {0, 1, 3, 2};
    struct Operand {
      Value value;
      TransposedView view;
      bool transposed;
    };
    auto operand = [&](Value value, bool transposed) {
      return Operand{value,
                     viewThroughTransposes(value,
                                           transposed ? swapped : identity),
                     transposed};
    };
    Operand q = operand(scores.getLhs(), scores.getTransposeLhs());
    Operand k = operand(scores.getRhs(), !scores.getTransposeRhs());
    Operand v = operand(output.getRhs(), output.getTransposeRhs());
    auto shapeOf = [](const Operand &operand) {
      SmallVector<int64_t> shape;
      for (int64_t dim : operand.view.permutation)
        shape.push_back(tensorTypeOf(operand.view.source).getDimSize(dim));
      return shape;
    };
    SmallVector<int64_t> shape(type.getShape());
    if (shapeOf(q) != shape || shapeOf(k) != shape || shapeOf(v) != shape)
      return rewriter.notifyMatchFailure(
          output, "q, k, v and the output differ in shape");

    // Grouped KV heads: attention reads the KV heads before their repeat.
    auto kRepeat = matchRepeat(k.view.source, k.view.permutation[1]);
    auto vRepeat = matchRepeat(v.view.source, v.view.permutation[1]);
    bool grouped = kRepeat && vRepeat && kRepeat->second == vRepeat->second;

    Location loc = rewriter.getFusedLoc(
        {scores.getLoc(), softmax.getLoc(), output.getLoc()});
    TensorBuilder b(rewriter, loc);
    auto materialize = [&](const Operand &operand,
                           const std::optional<Unrepeated> &repeat) {
      bool unrepeat = grouped && repeat;
      if (!operand.transposed && !unrepeat)
        return operand.value;
      Value source = unrepeat ? b.reshape(repeat->first, repeat->second)
                              : operand.view.source;
      return operand.view.permutation == identity
                 ? source
                 : b.transpose(source, operand.view.permutation);
    };
    auto attention = AttentionOp::create(
        rewriter, loc, type, materialize(q, std::nullopt),
        materialize(k, kRepeat), materialize(v, vRepeat),
        chain->causal ? rewriter.getUnitAttr() : UnitAttr(),
        rewriter.getF64FloatAttr(chain->scale));
    rewriter.replaceOp(output, attention.getResult());
    return success();
  }
};

class FuseAttentionPass
    : public titan::impl::FuseAttentionPassBase<FuseAttentionPass> {
public:
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseAttention>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
