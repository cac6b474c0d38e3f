//===- IndexFunction.cpp - compile-time tensors as index functions --------===//
//
// See include/titan/Dialect/IndexFunction.h.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/IndexFunction.h"
#include "titan/Dialect/TitanDialect.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::titan;

/// `value` converted to `element` as titan.cast converts (floats round to
/// nearest even, to integers truncate toward zero, to i1 `value != 0`);
/// nullopt when the integer conversion overflows.
std::optional<double> mlir::titan::roundToElementType(Type element,
                                                      double value) {
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
static double exactIntegerLimit(Type element) {
  if (element.isInteger(1))
    return 1;
  if (auto integer = dyn_cast<IntegerType>(element))
    return std::ldexp(1.0, integer.getWidth() - 1) - 1;
  return std::ldexp(1.0, llvm::APFloat::semanticsPrecision(
                             cast<FloatType>(element).getFloatSemantics()));
}

/// The dims (a, b) whose index difference `f` is a function of, for an
/// affine `f` of the form `k * (i_a - i_b) + offset` over dims of one size.
static std::optional<std::pair<int64_t, int64_t>>
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
std::optional<std::vector<double>>
mlir::titan::tabulateDifference(const IndexFunction &f, int64_t a, int64_t b,
                                int64_t n) {
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

/// The diagonals of the row-major `n` x `n` matrix `values` (element [i, j]
/// at `j - i + n - 1`), or nullopt when a diagonal holds two values.
static std::optional<std::vector<double>>
diagonalsOfSquare(ArrayRef<double> values, int64_t n) {
  std::vector<double> diagonals(2 * n - 1);
  for (int64_t row = 0; row < n; ++row)
    for (int64_t col = 0; col < n; ++col) {
      double value = values[row * n + col];
      double &entry = diagonals[col - row + n - 1];
      // The first element of each diagonal defines it (NaN never matches).
      if (row == 0 || col == 0)
        entry = value;
      else if (!(entry == value))
        return std::nullopt;
    }
  return diagonals;
}

/// `f` with the values the elements of `type` hold: affine values must be
/// integers the element type holds exactly (iotas and their sums), anything
/// else is tabulated and rounded. Nullopt when neither is possible.
static std::optional<IndexFunction> roundToType(IndexFunction f,
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
      std::optional<double> rounded = roundToElementType(element, value);
      if (!rounded)
        return std::nullopt;
      value = *rounded;
    }
    return f;
  }
  if (f.isConstant()) {
    std::optional<double> rounded = roundToElementType(element, f.offset);
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
  tabulated.table = *tabulateDifference(f, dims->first, dims->second,
                                        type.getDimSize(dims->first));
  return roundToType(std::move(tabulated), type);
}

/// A float element as a double.
static double toDouble(const APFloat &element) {
  return element.convertToDouble();
}
/// An integer element as a double (signed; i1 is 0 or 1).
static double toDouble(const APInt &element) {
  return element.getBitWidth() == 1
             ? (element.isZero() ? 0.0 : 1.0)
             : static_cast<double>(element.getSExtValue());
}

/// The elements of `dense` (integer or float) as doubles, in row-major
/// order.
static std::optional<SmallVector<double>>
elementValues(DenseElementsAttr dense) {
  SmallVector<double> values;
  if (isa<FloatType>(dense.getElementType()))
    for (APFloat element : dense.getValues<APFloat>())
      values.push_back(toDouble(element));
  else if (isa<IntegerType>(dense.getElementType()))
    for (APInt element : dense.getValues<APInt>())
      values.push_back(toDouble(element));
  else
    return std::nullopt;
  return values;
}

/// The function of an entry-block argument whose value the importer recorded
/// by diagonals (titan.diagonals), or nullopt.
static std::optional<IndexFunction> fromDiagonals(BlockArgument argument,
                                                  RankedTensorType type) {
  auto function =
      dyn_cast_or_null<FunctionOpInterface>(argument.getOwner()->getParentOp());
  if (!function || argument.getOwner() != &function.getFunctionBody().front())
    return std::nullopt;
  auto diagonals = function.getArgAttrOfType<DenseElementsAttr>(
      argument.getArgNumber(), TitanDialect::kDiagonalsAttrName);
  if (!diagonals)
    return std::nullopt;
  std::optional<SmallVector<double>> values = elementValues(diagonals);
  int64_t rank = type.getRank();
  if (values && values->size() == 1 && type.getNumElements() == 1)
    return IndexFunction::constant(rank, values->front());
  if (!values || rank < 2 ||
      static_cast<int64_t>(values->size()) != 2 * type.getShape().back() - 1)
    return std::nullopt;
  IndexFunction f;
  f.a = rank - 1;
  f.b = rank - 2;
  f.table.assign(values->begin(), values->end());
  return f;
}

std::optional<IndexFunction> IndexFunctionEvaluator::evaluate(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  auto it = known.find(value);
  if (it != known.end())
    return it->second;
  auto argument = dyn_cast<BlockArgument>(value);
  std::optional<IndexFunction> f = argument
                                       ? fromDiagonals(argument, type)
                                       : compute(value.getDefiningOp(), type);
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
        tabulateDifference(f, dims->first, dims->second, n);
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
  if (dense.isSplat()) {
    if (isa<FloatType>(dense.getElementType()))
      return IndexFunction::constant(type.getRank(),
                                     toDouble(dense.getSplatValue<APFloat>()));
    if (isa<IntegerType>(dense.getElementType()))
      return IndexFunction::constant(type.getRank(),
                                     toDouble(dense.getSplatValue<APInt>()));
    return std::nullopt;
  }
  // A literal mask: a function of the difference of the last two indices,
  // every other dim of size 1.
  ArrayRef<int64_t> shape = type.getShape();
  int64_t rank = type.getRank();
  if (rank < 2 || shape[rank - 1] != shape[rank - 2] ||
      llvm::any_of(shape.drop_back(2), [](int64_t d) { return d != 1; }))
    return std::nullopt;
  std::optional<SmallVector<double>> values = elementValues(dense);
  if (!values)
    return std::nullopt;
  std::optional<std::vector<double>> diagonals =
      diagonalsOfSquare(*values, shape.back());
  if (!diagonals)
    return std::nullopt;
  IndexFunction f;
  f.a = rank - 1;
  f.b = rank - 2;
  f.table = std::move(*diagonals);
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
  auto remap =
      [&](IndexFunction input, ArrayRef<int64_t> map,
          ArrayRef<int64_t> inputShape) -> std::optional<IndexFunction> {
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
          factor = *roundToElementType(type.getElementType(),
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
      .Case([&](SliceOp slice) -> std::optional<IndexFunction> {
        std::optional<IndexFunction> input = evaluate(slice.getInput());
        if (!input)
          return std::nullopt;
        ArrayRef<int64_t> start = slice.getStart(), step = slice.getStep();
        if (!input->isTable()) {
          // Result index j reads input index start + j * step.
          for (auto [dim, c] : llvm::enumerate(input->coef)) {
            input->offset += c * static_cast<double>(start[dim]);
            c *= static_cast<double>(step[dim]);
          }
          return input;
        }
        // i_a - i_b of the input is (start_a - start_b) + s * (j_a - j_b)
        // of the result when both dims step by s and keep one size m.
        int64_t a = input->a, b = input->b;
        int64_t n = slice.getInput().getType().getDimSize(a);
        int64_t m = type.getDimSize(a);
        if (step[a] != step[b] || type.getDimSize(b) != m)
          return std::nullopt;
        IndexFunction f;
        f.a = a;
        f.b = b;
        f.table.resize(2 * m - 1);
        for (int64_t d = 1 - m; d < m; ++d)
          f.table[d + m - 1] =
              input->table[step[a] * d + start[a] - start[b] + n - 1];
        return f;
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
        return pointwise(
            *in, type, [&](ArrayRef<double> v) { return v[0] + sign * v[1]; });
      })
      .Case<MulOp, DivOp, MaxOp>([&](auto) -> std::optional<IndexFunction> {
        std::optional<SmallVector<IndexFunction>> in = operands();
        if (!in)
          return std::nullopt;
        // An affine function times a finite constant stays affine (positions
        // times an all-ones mask).
        const IndexFunction &lhs = (*in)[0], &rhs = (*in)[1];
        if (isa<MulOp>(op) && !lhs.isTable() && !rhs.isTable() &&
            (lhs.isConstant() || rhs.isConstant())) {
          IndexFunction f = rhs.isConstant() ? lhs : rhs;
          double factor = rhs.isConstant() ? rhs.offset : lhs.offset;
          if (std::isfinite(factor)) {
            for (double &c : f.coef)
              c *= factor;
            f.offset *= factor;
            return f;
          }
        }
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

std::optional<double> IndexFunctionEvaluator::evaluateScalar(Value value) {
  std::optional<IndexFunction> f = evaluate(value);
  if (!f || !f->isConstant())
    return std::nullopt;
  return f->offset;
}
