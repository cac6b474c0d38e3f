//===- AtenOrderOps.cpp - order statistics written with titan ops ---------===//
//
// The ops that read the order of a tensor's elements along a dim:
// aten::median / nanmedian, kthvalue, quantile / nanquantile (the sorted
// values, sortAlong, at the positions they name), cummax / cummin (the
// latest position of the running extremum, over the pairs of positions),
// bucketize / searchsorted (how many boundaries come before each value)
// and aminmax. Dims are of at most kMaxOneHotDim positions, as sortAlong
// compares every pair of their elements.
//
//===----------------------------------------------------------------------===//

#include "AtenSupport.h"

#include "mlir/IR/Matchers.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::titan;
using namespace mlir::titan::import;

namespace {

/// The float tensor an order statistic `what` reads along a dim, that dim
/// (the whole tensor flattened when `dim` is absent or None) and keepdim.
struct OrderOperand {
  Value x;
  int64_t dim;
  bool keepdim;
  /// The tensor was flattened (no dim given): the result has no dims.
  bool whole;
};

llvm::Expected<OrderOperand> orderOperand(GraphImporter &importer, Node *node,
                                          StringRef what) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  Emitter emit(importer);
  Value input = *x;
  Type element = tensorType(input).getElementType();
  if (!isa<FloatType>(element))
    input = emit.cast(input, exactFloatType(emit, element));
  const ImportedValue *dimArg = importer.namedInput(node, "dim");
  bool keepdim = flagOr(importer, node, "keepdim", false);
  RankedTensorType type = tensorType(input);
  if (!dimArg || dimArg->isNone()) {
    int64_t n = type.getNumElements();
    if (n > kMaxOneHotDim)
      return makeError(llvm::formatv(
          "{0} of {1} elements: titan orders at most {2} (it compares every "
          "pair)",
          what, n, kMaxOneHotDim));
    return OrderOperand{emit.reshape(input, {n}), 0, keepdim, true};
  }
  if (type.getRank() == 0)
    return makeError(what + " along a dim of a 0-d tensor");
  llvm::Expected<int64_t> dim = normalizeDim(dimArg->intValue, type.getRank());
  if (!dim)
    return dim.takeError();
  if (type.getDimSize(*dim) > kMaxOneHotDim)
    return makeError(llvm::formatv(
        "{0} along a dim of {1}: titan orders along dims of at most {2} (it "
        "compares every pair of elements of a row)",
        what, type.getDimSize(*dim), kMaxOneHotDim));
  return OrderOperand{input, *dim, keepdim, false};
}

/// `values` (the operand's shape, but one position along the dim) as the
/// order statistic returns it: without the dim unless keepdim, a 0-d
/// tensor for the whole tensor (of the original element type `element`).
Value shapeResult(Emitter &emit, const OrderOperand &operand, Value values,
                  Type element) {
  SmallVector<int64_t> shape(tensorType(values).getShape());
  if (operand.whole)
    shape.clear();
  else if (!operand.keepdim)
    shape.erase(shape.begin() + operand.dim);
  Value result = emit.reshape(values, shape);
  Type type = tensorType(result).getElementType();
  return type == element ? result : emit.cast(result, element);
}

/// The sorted operand's element at `position` (an integer tensor of the
/// operand's shape but one position along the dim), and its index.
std::pair<Value, Value> sortedAt(Emitter &emit, const OrderOperand &operand,
                                 Value sorted, Value indices, Value position) {
  return {gatherOneHot(emit, sorted, operand.dim, position),
          emit.cast(gatherOneHot(emit, emit.cast(indices, emit.f64()),
                                 operand.dim, position),
                    emit.builder.getI64Type())};
}

/// The number of non-NaN elements along the operand's dim, keepdim, as
/// f64.
Value countNumbers(Emitter &emit, const OrderOperand &operand) {
  Value isNumber = emit.compare("eq", operand.x, operand.x);
  return emit.reduceSum(emit.cast(isNumber, emit.f64()), {operand.dim},
                        /*keepdim=*/true);
}

/// aten::median / nanmedian (whole, or along a dim with indices): the lower
/// median, sorted[(k - 1) / 2] for the k numbers of the row (nanmedian; NaN
/// sorts last) or all n of them, NaN where the row has one (median).
Outputs convertMedian(GraphImporter &importer, Node *node, bool ignoreNan) {
  StringRef what = ignoreNan ? "nanmedian" : "median";
  llvm::Expected<OrderOperand> operand = orderOperand(importer, node, what);
  if (!operand)
    return operand.takeError();
  Type element = tensorType(importer.input(node, 0).tensor).getElementType();
  Emitter emit(importer);
  auto [sorted, indices] =
      sortAlong(emit, operand->x, operand->dim, /*descending=*/false, true);
  // The row's numbers (k) and its length (n).
  Value numbers = countNumbers(emit, *operand);
  Value length = emit.splatLike(
      numbers,
      static_cast<double>(tensorType(operand->x).getDimSize(operand->dim)));
  Value count = ignoreNan ? numbers : length;
  // floor((k - 1) / 2), 0 for a row of NaNs (whose median is NaN).
  Value position = RoundedDivOp::create(
      emit.builder, emit.loc, tensorType(count),
      emit.binary<MaxOp>(emit.binary<SubOp>(count, emit.splatLike(count, 1.0)),
                         emit.splatLike(count, 0.0)),
      emit.splatLike(count, 2.0), /*truncate=*/false);
  auto [value, index] =
      sortedAt(emit, *operand, sorted, indices,
               emit.cast(position, emit.builder.getI64Type()));
  if (!ignoreNan) {
    // A row with a NaN: NaN, at the first NaN's index (the stable sort puts
    // it first among the NaNs, at the number count).
    auto [nan, nanIndex] =
        sortedAt(emit, *operand, sorted, indices,
                 emit.cast(numbers, emit.builder.getI64Type()));
    Value withNan = emit.compare("lt", numbers, length);
    value = emit.select(withNan, nan, value);
    index = emit.select(withNan, nanIndex, index);
  }
  Value result = shapeResult(emit, *operand, value, element);
  if (operand->whole)
    return single(result);
  return std::vector<ImportedValue>{
      ImportedValue::ofTensor(result),
      ImportedValue::ofTensor(
          shapeResult(emit, *operand, index, emit.builder.getI64Type()))};
}

/// aten::kthvalue(x, k, dim, keepdim): the k-th smallest (sorted[k - 1],
/// NaN largest) and its index.
Outputs convertKthvalue(GraphImporter &importer, Node *node) {
  llvm::Expected<OrderOperand> operand =
      orderOperand(importer, node, "kthvalue");
  if (!operand)
    return operand.takeError();
  llvm::Expected<int64_t> k = importer.intInput(node, 1);
  if (!k)
    return k.takeError();
  int64_t n = tensorType(operand->x).getDimSize(operand->dim);
  if (*k < 1 || *k > n)
    return makeError(llvm::formatv(
        "kthvalue's k must be in [1, {0}] (the dim's size), not {1}", n, *k));
  Type element = tensorType(importer.input(node, 0).tensor).getElementType();
  Emitter emit(importer);
  auto [sorted, indices] =
      sortAlong(emit, operand->x, operand->dim, /*descending=*/false, true);
  Value value = emit.slice(sorted, operand->dim, *k - 1, *k, 1);
  Value index = emit.slice(indices, operand->dim, *k - 1, *k, 1);
  return std::vector<ImportedValue>{
      ImportedValue::ofTensor(shapeResult(emit, *operand, value, element)),
      ImportedValue::ofTensor(
          shapeResult(emit, *operand, index, emit.builder.getI64Type()))};
}

/// The quantiles `q` asks for: a number, or a 1-d tensor known at import
/// time.
llvm::Expected<SmallVector<double>> quantileLevels(GraphImporter &importer,
                                                   Node *node, bool &asTensor) {
  const ImportedValue &q = importer.input(node, 1);
  asTensor = false;
  SmallVector<double> levels;
  if (q.isNumber()) {
    levels.push_back(q.asDouble());
  } else if (q.isTensor()) {
    asTensor = tensorType(q.tensor).getRank() == 1;
    // `torch.tensor([...])` traces as a constant, converted and detached.
    Value levelsTensor = q.tensor;
    while (Operation *op = levelsTensor.getDefiningOp()) {
      if (!isa<StopGradientOp, CastOp>(op))
        break;
      levelsTensor = op->getOperand(0);
    }
    DenseElementsAttr constant;
    if (tensorType(q.tensor).getRank() > 1 ||
        !matchPattern(levelsTensor, m_Constant(&constant)) ||
        !isa<FloatType>(constant.getElementType()))
      return makeError("quantile takes levels q known at import time: a "
                       "number or a constant 1-d float tensor");
    for (const APFloat &level : constant.getValues<APFloat>())
      levels.push_back(level.convertToDouble());
  } else {
    return makeError("quantile needs a level q");
  }
  for (double level : levels)
    if (!(level >= 0 && level <= 1))
      return makeError(
          llvm::formatv("quantile's q must be in [0, 1], not {0}", level));
  return levels;
}

/// aten::quantile / nanquantile(x, q, dim, keepdim, interpolation): for
/// each level q, position q (k - 1) among the k sorted numbers of the row
/// (all n for quantile, whose rows with a NaN give NaN), between the
/// elements below and above it as `interpolation` says ('linear',
/// 'lower', 'higher', 'midpoint', 'nearest' to even). Several levels
/// stack in a leading dim.
Outputs convertQuantile(GraphImporter &importer, Node *node, bool ignoreNan) {
  StringRef what = ignoreNan ? "nanquantile" : "quantile";
  bool asTensor = false;
  llvm::Expected<SmallVector<double>> levels =
      quantileLevels(importer, node, asTensor);
  if (!levels)
    return levels.takeError();
  llvm::Expected<OrderOperand> operand = orderOperand(importer, node, what);
  if (!operand)
    return operand.takeError();
  if (!isa<FloatType>(
          tensorType(importer.input(node, 0).tensor).getElementType()))
    return makeError(what + " takes only floating-point tensors, as "
                            "PyTorch's");
  std::string interpolation = "linear";
  if (const ImportedValue *given = importer.namedInput(node, "interpolation"))
    if (given->kind == ImportedValue::Kind::String)
      interpolation = given->text;
  if (!llvm::is_contained({"linear", "lower", "higher", "midpoint", "nearest"},
                          interpolation))
    return makeError(llvm::formatv(
        "{0}'s interpolation '{1}': PyTorch's are 'linear', 'lower', "
        "'higher', 'midpoint' and 'nearest'",
        what, interpolation));
  Type element = tensorType(operand->x).getElementType();
  Emitter emit(importer);
  auto [sorted, indices] =
      sortAlong(emit, operand->x, operand->dim, /*descending=*/false, true);
  int64_t n = tensorType(operand->x).getDimSize(operand->dim);
  // The rows' last positions: k - 1 (0 for a row of NaNs), or n - 1.
  Value count = countNumbers(emit, *operand);
  Value last =
      ignoreNan ? count : emit.splatLike(count, static_cast<double>(n));
  last = emit.binary<SubOp>(last, emit.splatLike(last, 1.0));
  last = emit.binary<MaxOp>(last, emit.splatLike(last, 0.0));
  // quantile gives NaN for a row with a NaN, nanquantile for a row of
  // NaNs.
  Value nanRow =
      ignoreNan ? emit.compare("eq", count, emit.splatLike(count, 0.0))
                : emit.compare("lt", count,
                               emit.splatLike(count, static_cast<double>(n)));
  auto i64 = emit.builder.getI64Type();
  auto rounded = [&](Value v, bool up) {
    Value floor = floorOf(emit, v);
    if (!up)
      return floor;
    Value whole = emit.compare("eq", floor, v);
    return emit.select(whole, floor,
                       emit.binary<AddOp>(floor, emit.splatLike(v, 1.0)));
  };
  SmallVector<Value> results;
  for (double level : *levels) {
    Value position = emit.scale(last, level);
    Value below = rounded(position, false), above = rounded(position, true);
    Value low = gatherOneHot(emit, sorted, operand->dim, emit.cast(below, i64));
    Value high =
        gatherOneHot(emit, sorted, operand->dim, emit.cast(above, i64));
    Value value;
    if (interpolation == "lower") {
      value = low;
    } else if (interpolation == "higher") {
      value = high;
    } else if (interpolation == "midpoint") {
      value = emit.scale(emit.binary<AddOp>(low, high), 0.5);
    } else if (interpolation == "nearest") {
      // Round half to even, as torch.round.
      Value nearest = roundHalfEven(emit, position);
      value = emit.select(emit.compare("eq", nearest, below), low, high);
    } else {
      Value fraction = emit.cast(emit.binary<SubOp>(position, below), element);
      value = emit.binary<AddOp>(
          low, emit.binary<MulOp>(emit.binary<SubOp>(high, low), fraction));
    }
    Value nan = emit.splatLike(value, std::numeric_limits<double>::quiet_NaN());
    value = emit.select(nanRow, nan, value);
    Value shaped = shapeResult(emit, *operand, value, element);
    results.push_back(emit.reshape(shaped, [&] {
      SmallVector<int64_t> withLevel{1};
      llvm::append_range(withLevel, tensorType(shaped).getShape());
      return withLevel;
    }()));
  }
  Value stacked = emit.concat(results, 0);
  if (!asTensor)
    stacked =
        emit.reshape(stacked, tensorType(stacked).getShape().drop_front());
  return single(stacked);
}

/// aten::cummax / cummin(x, dim): at each position i, the largest
/// (smallest) element up to it and its index: the latest position j <= i
/// holding it (PyTorch's `>=`), or the latest NaN once one came; the values
/// are gathered there, so their gradient goes to that position alone.
Outputs convertRunningExtremum(GraphImporter &importer, Node *node,
                               bool largest) {
  StringRef what = largest ? "cummax" : "cummin";
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  llvm::Expected<int64_t> rawDim = importer.intInput(node, 1);
  if (llvm::Error error =
          requireAll(what + " needs a tensor and a dim", x, rawDim))
    return std::move(error);
  RankedTensorType type = tensorType(*x);
  Emitter emit(importer);
  Value input = *x;
  bool scalar = type.getRank() == 0;
  if (scalar)
    input = emit.reshape(input, {1});
  Type element = type.getElementType();
  Value keys = isa<FloatType>(element)
                   ? input
                   : emit.cast(input, exactFloatType(emit, element));
  llvm::Expected<int64_t> dim =
      normalizeDim(*rawDim, tensorType(keys).getRank());
  if (!dim)
    return dim.takeError();
  int64_t n = tensorType(keys).getDimSize(*dim);
  if (n > kMaxOneHotDim)
    return makeError(llvm::formatv(
        "{0} along a dim of {1}: titan takes running extrema along dims of "
        "at most {2} (it compares every pair of positions)",
        what, n, kMaxOneHotDim));
  // x_j along a new dim after `dim`, for each position i along `dim`.
  ArrayRef<int64_t> shape = tensorType(keys).getShape();
  SmallVector<int64_t> pairs(shape), asJ(shape);
  pairs.insert(pairs.begin() + *dim + 1, n);
  asJ.insert(asJ.begin() + *dim, 1);
  Value xj = emit.broadcastTo(emit.reshape(keys, asJ), pairs);
  auto positions = RankedTensorType::get(pairs, emit.builder.getI64Type());
  Value i = emit.iota(positions, *dim), j = emit.iota(positions, *dim + 1);
  Value upTo = emit.compare("le", j, i);
  Value isNan = emit.compare("ne", xj, xj);
  double worst = largest ? -std::numeric_limits<double>::infinity()
                         : std::numeric_limits<double>::infinity();
  Value candidates =
      emit.select(upTo, emit.select(isNan, emit.splatLike(xj, worst), xj),
                  emit.splatLike(xj, worst));
  RankedTensorType pairType = tensorType(candidates);
  SmallVector<int64_t> keptShape(pairs);
  keptShape[*dim + 1] = 1;
  auto reduceMax = [&](Value v) {
    return ReduceMaxOp::create(
        emit.builder, emit.loc, tensorType(v).clone(keptShape), v,
        emit.builder.getDenseI64ArrayAttr({*dim + 1}), /*keepdim=*/true);
  };
  Value best =
      largest ? reduceMax(candidates)
              : emit.unary<NegOp>(reduceMax(emit.unary<NegOp>(candidates)));
  Value reached =
      emit.compare("eq", xj, emit.broadcastTo(best, pairType.getShape()));
  Value nanUpTo = emit.select(upTo, isNan, upTo);
  Value nanSeen = emit.compare(
      "gt", reduceMax(emit.cast(nanUpTo, emit.builder.getF32Type())),
      emit.splat(RankedTensorType::get(keptShape, emit.builder.getF32Type()),
                 0.0));
  Value nanSeenPairs = emit.broadcastTo(nanSeen, pairs);
  Value holds =
      emit.select(nanSeenPairs, nanUpTo, emit.select(upTo, reached, upTo));
  Value latest = reduceMax(emit.select(
      holds, emit.cast(j, emit.builder.getF32Type()),
      emit.splat(RankedTensorType::get(pairs, emit.builder.getF32Type()),
                 -1.0)));
  SmallVector<int64_t> resultShape(shape);
  Value index =
      emit.cast(emit.reshape(latest, resultShape), emit.builder.getI64Type());
  Value values = gatherOneHot(emit, keys, *dim, index);
  if (values.getType() != input.getType())
    values = emit.cast(values, element);
  if (scalar) {
    values = emit.reshape(values, {});
    index = emit.reshape(index, {});
  }
  return std::vector<ImportedValue>{ImportedValue::ofTensor(values),
                                    ImportedValue::ofTensor(index)};
}

/// How many of `boundaries` (sorted, along its last dim, broadcast against
/// `values` [.., K]'s leading dims) come before each value: those below it
/// (`right`: not above it); a NaN value comes after all. [.., K] int64 (or
/// int32 with `int32`).
Value boundariesBefore(Emitter &emit, Value boundaries, Value values,
                       bool right, bool int32) {
  RankedTensorType valueType = tensorType(values);
  int64_t m = tensorType(boundaries).getShape().back();
  SmallVector<int64_t> pairs(valueType.getShape());
  pairs.push_back(m);
  SmallVector<int64_t> asBoundary(tensorType(boundaries).getShape());
  asBoundary.insert(asBoundary.end() - 1, 1);
  while (asBoundary.size() < pairs.size())
    asBoundary.insert(asBoundary.begin(), 1);
  SmallVector<int64_t> asValue(valueType.getShape());
  asValue.push_back(1);
  Value b = emit.broadcastTo(emit.reshape(boundaries, asBoundary), pairs);
  Value v = emit.broadcastTo(emit.reshape(values, asValue), pairs);
  Value before = emit.compare(right ? "le" : "lt", b, v);
  Value isNan = emit.compare("ne", v, v);
  before = emit.select(isNan, isNan, before);
  Value count = emit.reduceSum(emit.cast(before, emit.f64()),
                               {static_cast<int64_t>(pairs.size()) - 1},
                               /*keepdim=*/false);
  return emit.cast(count, int32 ? emit.builder.getI32Type()
                                : emit.builder.getI64Type());
}

/// The flags of bucketize / searchsorted: out_int32 and right (or side).
std::pair<bool, bool> searchFlags(GraphImporter &importer, Node *node) {
  bool right = flagOr(importer, node, "right", false);
  if (const ImportedValue *side = importer.namedInput(node, "side"))
    if (side->kind == ImportedValue::Kind::String)
      right = side->text == "right";
  return {flagOr(importer, node, "out_int32", false), right};
}

/// A tensor or number input `index` of a search, as a float tensor in the
/// type it is compared in.
llvm::Expected<Value> searchOperand(GraphImporter &importer, Node *node,
                                    size_t index, Type compared) {
  const ImportedValue &value = importer.input(node, index);
  Emitter emit(importer);
  if (value.isNumber())
    return emit.splat(RankedTensorType::get({}, compared), value.asDouble());
  if (!value.isTensor())
    return makeError("expected a tensor or a number");
  return emit.cast(value.tensor, compared);
}

/// aten::bucketize(x, boundaries [M], out_int32, right): each element's
/// bucket, the number of boundaries below it (not above it with right).
/// aten::searchsorted(sorted [.., M], values [.., K], out_int32, right,
/// side): the same per row of sorted (a 1-d one for all values).
Outputs convertSearch(GraphImporter &importer, Node *node, bool bucketize) {
  StringRef what = bucketize ? "bucketize" : "searchsorted";
  size_t valuesAt = bucketize ? 0 : 1, boundariesAt = bucketize ? 1 : 0;
  const ImportedValue &boundaryValue = importer.input(node, boundariesAt);
  if (!boundaryValue.isTensor() ||
      tensorType(boundaryValue.tensor).getRank() == 0)
    return makeError(what + " needs a tensor of sorted boundaries");
  if (const ImportedValue *sorter = importer.namedInput(node, "sorter");
      sorter && !sorter->isNone())
    return makeError("searchsorted with a sorter is not supported; sort the "
                     "sequence first");
  Emitter emit(importer);
  const ImportedValue &valueInput = importer.input(node, valuesAt);
  Type compared = emit.f64();
  if (valueInput.isTensor() && boundaryValue.isTensor()) {
    Type a = tensorType(valueInput.tensor).getElementType();
    Type b = tensorType(boundaryValue.tensor).getElementType();
    if (isa<FloatType>(a) && a == b)
      compared = a;
  }
  llvm::Expected<Value> values =
      searchOperand(importer, node, valuesAt, compared);
  if (!values)
    return values.takeError();
  Value boundaries = emit.cast(boundaryValue.tensor, compared);
  RankedTensorType boundaryType = tensorType(boundaries);
  RankedTensorType valueType = tensorType(*values);
  if (bucketize && boundaryType.getRank() != 1)
    return makeError(
        llvm::formatv("bucketize needs 1-d boundaries, not {0}", boundaryType));
  if (boundaryType.getRank() > 1 &&
      (valueType.getRank() != boundaryType.getRank() ||
       valueType.getShape().drop_back() != boundaryType.getShape().drop_back()))
    return makeError(llvm::formatv(
        "searchsorted of sorted rows {0} and values {1}: the leading dims "
        "must match (or the sorted sequence be 1-d)",
        boundaryType, valueType));
  auto [int32, right] = searchFlags(importer, node);
  return single(boundariesBefore(emit, boundaries, *values, right, int32));
}

/// aten::aminmax(x, dim, keepdim): the smallest and the largest elements,
/// along dim or of the whole tensor.
Outputs convertAminmax(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  RankedTensorType type = tensorType(*x);
  const ImportedValue *dimArg = importer.namedInput(node, "dim");
  bool keepdim = flagOr(importer, node, "keepdim", false);
  SmallVector<int64_t> dims;
  if (dimArg && !dimArg->isNone()) {
    llvm::Expected<int64_t> dim =
        normalizeDim(dimArg->intValue, type.getRank());
    if (!dim)
      return dim.takeError();
    dims.push_back(*dim);
  } else {
    for (int64_t d = 0; d < type.getRank(); ++d)
      dims.push_back(d);
  }
  SmallVector<int64_t> shape;
  for (auto [d, size] : llvm::enumerate(type.getShape()))
    if (!llvm::is_contained(dims, static_cast<int64_t>(d)))
      shape.push_back(size);
    else if (keepdim)
      shape.push_back(1);
  Emitter emit(importer);
  auto reduceMax = [&](Value v) -> Value {
    return ReduceMaxOp::create(emit.builder, emit.loc, type.clone(shape), v,
                               emit.builder.getDenseI64ArrayAttr(dims),
                               keepdim);
  };
  return std::vector<ImportedValue>{ImportedValue::ofTensor(emit.unary<NegOp>(
                                        reduceMax(emit.unary<NegOp>(*x)))),
                                    ImportedValue::ofTensor(reduceMax(*x))};
}

} // namespace

void mlir::titan::import::addOrderConversions(
    llvm::StringMap<Conversion> &table) {
  table["aten::median"] = [](GraphImporter &i, Node *n) {
    return convertMedian(i, n, /*ignoreNan=*/false);
  };
  table["aten::nanmedian"] = [](GraphImporter &i, Node *n) {
    return convertMedian(i, n, /*ignoreNan=*/true);
  };
  table["aten::kthvalue"] = convertKthvalue;
  table["aten::quantile"] = [](GraphImporter &i, Node *n) {
    return convertQuantile(i, n, /*ignoreNan=*/false);
  };
  table["aten::nanquantile"] = [](GraphImporter &i, Node *n) {
    return convertQuantile(i, n, /*ignoreNan=*/true);
  };
  table["aten::cummax"] = [](GraphImporter &i, Node *n) {
    return convertRunningExtremum(i, n, /*largest=*/true);
  };
  table["aten::cummin"] = [](GraphImporter &i, Node *n) {
    return convertRunningExtremum(i, n, /*largest=*/false);
  };
  table["aten::bucketize"] = [](GraphImporter &i, Node *n) {
    return convertSearch(i, n, /*bucketize=*/true);
  };
  table["aten::searchsorted"] = [](GraphImporter &i, Node *n) {
    return convertSearch(i, n, /*bucketize=*/false);
  };
  table["aten::aminmax"] = convertAminmax;
}
