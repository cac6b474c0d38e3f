//===- AtenSupport.cpp - what the aten op conversions share ---------------===//
//
// Definitions of AtenSupport.h (documented there).
//
//===----------------------------------------------------------------------===//

#include "AtenSupport.h"

#include "mlir/IR/Matchers.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::titan;
using namespace mlir::titan::import;

llvm::Expected<int64_t> mlir::titan::import::normalizeDim(int64_t dim,
                                                          int64_t rank) {
  int64_t normalized = dim < 0 ? dim + rank : dim;
  if (normalized < 0 || normalized >= std::max<int64_t>(rank, 1))
    return makeError(llvm::formatv(
        "dimension {0} is out of range for a rank-{1} tensor", dim, rank));
  return normalized;
}

llvm::Expected<ArrayRef<int64_t>>
mlir::titan::import::shapeOf(const ImportedValue &value) {
  if (!value.isTensor() && !value.isComplex())
    return makeError("expected a tensor");
  return tensorType(value.tensor).getShape();
}

llvm::Expected<TensorDim>
mlir::titan::import::tensorAndDim(GraphImporter &importer, Node *node,
                                  size_t dimIndex, int64_t extraRank) {
  llvm::Expected<ArrayRef<int64_t>> shape = shapeOf(importer.input(node, 0));
  if (!shape)
    return shape.takeError();
  llvm::Expected<int64_t> dim = importer.intInput(node, dimIndex);
  if (!dim)
    return dim.takeError();
  if (shape->empty() && extraRank == 0)
    return makeError(llvm::formatv(
        "{0} along dimension {1} of a 0-d tensor, which has no dimensions",
        node->kind().toUnqualString(), *dim));
  llvm::Expected<int64_t> normalized =
      normalizeDim(*dim, shape->size() + extraRank);
  if (!normalized)
    return normalized.takeError();
  return TensorDim{*shape, *normalized};
}

static int floatRank(Type type) {
  if (type.isF64())
    return 3;
  if (type.isF32())
    return 2;
  return 1;
}

Type mlir::titan::import::promote(Type a, Type b, MLIRContext &context) {
  if (a == b)
    return a;
  if (!isa<FloatType>(a) && !isa<FloatType>(b))
    return a.getIntOrFloatBitWidth() >= b.getIntOrFloatBitWidth() ? a : b;
  if (!isa<FloatType>(a))
    return b;
  if (!isa<FloatType>(b))
    return a;
  if (floatRank(a) == 1 && floatRank(b) == 1)
    return Float32Type::get(&context);
  return floatRank(a) >= floatRank(b) ? a : b;
}

llvm::Expected<SmallVector<int64_t>>
mlir::titan::import::broadcastShape(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  SmallVector<int64_t> result(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < result.size(); ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      return makeError(
          llvm::formatv("shapes [{0}] and [{1}] cannot be broadcast together",
                        llvm::make_range(a.begin(), a.end()),
                        llvm::make_range(b.begin(), b.end())));
    result[result.size() - 1 - i] = da == 1 ? db : da;
  }
  return result;
}

llvm::Error mlir::titan::import::unify(Emitter &emit, Value &lhs, Value &rhs) {
  RankedTensorType lt = tensorType(lhs), rt = tensorType(rhs);
  llvm::Expected<SmallVector<int64_t>> shape =
      broadcastShape(lt.getShape(), rt.getShape());
  if (!shape)
    return shape.takeError();
  // As in PyTorch, a 0-d tensor does not change the element type of a
  // dimensioned one of the same category (float or integer).
  Type element;
  bool sameCategory = isa<FloatType>(lt.getElementType()) ==
                      isa<FloatType>(rt.getElementType());
  if (sameCategory && lt.getRank() == 0 && rt.getRank() > 0)
    element = rt.getElementType();
  else if (sameCategory && rt.getRank() == 0 && lt.getRank() > 0)
    element = lt.getElementType();
  else
    element = promote(lt.getElementType(), rt.getElementType(), emit.context);
  lhs = emit.broadcastTo(emit.cast(lhs, element), *shape);
  rhs = emit.broadcastTo(emit.cast(rhs, element), *shape);
  return llvm::Error::success();
}

llvm::Expected<Value>
mlir::titan::import::floatTensorInput(GraphImporter &importer, Node *node,
                                      const llvm::Twine &integerError) {
  llvm::Expected<Value> x = importer.tensorInput(node, 0);
  if (!x)
    return x.takeError();
  if (!isa<FloatType>(tensorType(*x).getElementType()))
    return makeError(integerError);
  return *x;
}

std::string mlir::titan::import::numberText(double value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%g", value);
  return text;
}

double mlir::titan::import::numberOr(GraphImporter &importer, Node *node,
                                     StringRef name, double fallback) {
  const ImportedValue *value = importer.namedInput(node, name);
  return value && value->isNumber() ? value->asDouble() : fallback;
}

llvm::Expected<Value>
mlir::titan::import::promotedFloatInput(GraphImporter &importer, Node *node,
                                        size_t index) {
  llvm::Expected<Value> x = importer.tensorInput(node, index);
  if (!x)
    return x.takeError();
  if (isa<FloatType>(tensorType(*x).getElementType()))
    return *x;
  return TensorBuilder(importer.getBuilder(), importer.getLoc())
      .cast(*x, Float32Type::get(&importer.getContext()));
}

Value mlir::titan::import::expm1(Emitter &emit, Value x) {
  Value half =
      emit.min(emit.binary<MaxOp>(emit.scale(x, 0.5), emit.splatLike(x, -0.25)),
               emit.splatLike(x, 0.25));
  Value t = emit.unary<TanhOp>(half);
  Value small = emit.binary<DivOp>(
      emit.scale(t, 2.0), emit.binary<SubOp>(emit.splatLike(x, 1.0), t));
  Value large =
      emit.binary<SubOp>(emit.unary<ExpOp>(x), emit.splatLike(x, 1.0));
  Value near = emit.compare("lt", absolute(emit, x), emit.splatLike(x, 0.5));
  return emit.select(near, small, large);
}

llvm::Expected<SmallVector<Value>>
mlir::titan::import::unifiedFloatOperands(GraphImporter &importer, Node *node,
                                          size_t first, size_t count) {
  Emitter emit(importer);
  SmallVector<Value> operands;
  for (size_t i = first; i < first + count; ++i) {
    const ImportedValue &input = importer.input(node, i);
    if (input.isNumber())
      operands.push_back(importer.materialize(input));
    else if (input.isTensor())
      operands.push_back(input.tensor);
    else
      return makeError(llvm::formatv("{0} takes tensors and numbers",
                                     node->kind().toUnqualString()));
  }
  for (size_t round = 0; round < 2; ++round)
    for (size_t i = 1; i < operands.size(); ++i)
      if (llvm::Error error = unify(emit, operands[0], operands[i]))
        return std::move(error);
  if (!isa<FloatType>(tensorType(operands[0]).getElementType()))
    for (Value &operand : operands)
      operand = emit.cast(operand, Float32Type::get(&importer.getContext()));
  return operands;
}

Value mlir::titan::import::absolute(Emitter &emit, Value x) {
  return emit.binary<MaxOp>(x, emit.unary<NegOp>(x));
}

Value mlir::titan::import::logSigmoid(Emitter &emit, Value x) {
  Value tail = emit.unary<LogOp>(emit.binary<AddOp>(
      emit.splatLike(x, 1.0),
      emit.unary<ExpOp>(emit.unary<NegOp>(absolute(emit, x)))));
  return emit.binary<SubOp>(emit.min(x, emit.splatLike(x, 0.0)), tail);
}

Type mlir::titan::import::exactFloatType(Emitter &emit, Type element) {
  return isa<FloatType>(element) ? element : emit.f64();
}

llvm::Expected<SmallVector<int64_t>>
mlir::titan::import::perSpatialDim(GraphImporter &importer, Node *node,
                                   StringRef name, int64_t spatial,
                                   ArrayRef<int64_t> fallback, StringRef what) {
  const ImportedValue *value = importer.namedInput(node, name);
  if (!value || value->isNone())
    return SmallVector<int64_t>(fallback);
  if (value->isNumber())
    return SmallVector<int64_t>(spatial, value->intValue);
  if (value->kind == ImportedValue::Kind::List &&
      llvm::all_of(value->items,
                   [](const ImportedValue &v) { return v.isNumber(); })) {
    if (value->items.empty())
      return SmallVector<int64_t>(fallback);
    if (value->items.size() == 1)
      return SmallVector<int64_t>(spatial, value->items[0].intValue);
    if (static_cast<int64_t>(value->items.size()) == spatial)
      return llvm::to_vector(llvm::map_range(
          value->items, [](const ImportedValue &v) { return v.intValue; }));
  }
  return makeError(llvm::formatv(
      "{0} '{1}' must be a number or {2} numbers (one per spatial dim)", what,
      name, spatial));
}

Value mlir::titan::import::padSpatial(Emitter &emit, Value x,
                                      ArrayRef<int64_t> low,
                                      ArrayRef<int64_t> high, double fill) {
  for (size_t i = 0; i < low.size(); ++i) {
    int64_t dim = 2 + i;
    auto filled = [&](int64_t count) {
      SmallVector<int64_t> shape(tensorType(x).getShape());
      shape[dim] = count;
      return emit.splat(tensorType(x).clone(shape), fill);
    };
    SmallVector<Value> pieces;
    if (low[i])
      pieces.push_back(filled(low[i]));
    pieces.push_back(x);
    if (high[i])
      pieces.push_back(filled(high[i]));
    if (pieces.size() > 1)
      x = emit.concat(pieces, dim);
  }
  return x;
}

Value mlir::titan::import::windowTap(Emitter &emit, Value x, int64_t t,
                                     ArrayRef<int64_t> kernel,
                                     ArrayRef<int64_t> dilation,
                                     ArrayRef<int64_t> stride,
                                     ArrayRef<int64_t> outSizes) {
  for (int64_t i = static_cast<int64_t>(kernel.size()) - 1; i >= 0; --i) {
    int64_t start = (t % kernel[i]) * dilation[i];
    t /= kernel[i];
    x = emit.slice(x, 2 + i, start, start + (outSizes[i] - 1) * stride[i] + 1,
                   stride[i]);
  }
  return x;
}

Value mlir::titan::import::spreadAlong(Emitter &emit, Value x, int64_t dim,
                                       int64_t stride) {
  if (stride == 1)
    return x;
  SmallVector<int64_t> shape(tensorType(x).getShape());
  int64_t size = shape[dim];
  SmallVector<int64_t> split(shape.begin(), shape.begin() + dim + 1);
  split.push_back(1);
  split.append(shape.begin() + dim + 1, shape.end());
  Value spread = emit.padTo(emit.reshape(x, split), dim + 1, stride);
  shape[dim] = size * stride;
  return emit.slice(emit.reshape(spread, shape), dim, 0,
                    (size - 1) * stride + 1, 1);
}

Value mlir::titan::import::addBatchOfOne(Emitter &emit, Value x) {
  SmallVector<int64_t> shape{1};
  llvm::append_range(shape, tensorType(x).getShape());
  return emit.reshape(x, shape);
}

Value mlir::titan::import::dropBatchOfOne(Emitter &emit, Value x) {
  return emit.reshape(x, tensorType(x).getShape().drop_front());
}

Value mlir::titan::import::moveDim(Emitter &emit, Value x, int64_t dim,
                                   bool toLast) {
  int64_t rank = tensorType(x).getRank();
  if (dim == rank - 1)
    return x;
  SmallVector<int64_t> permutation;
  for (int64_t d = 0; d < rank; ++d)
    if (d != (toLast ? dim : rank - 1))
      permutation.push_back(d);
  permutation.insert(permutation.begin() + (toLast ? rank - 1 : dim),
                     toLast ? dim : rank - 1);
  return emit.transpose(x, permutation);
}

Value mlir::titan::import::matmulLast(Emitter &emit, Value x, Value matrix) {
  SmallVector<int64_t> shape(tensorType(x).getShape());
  shape.back() = tensorType(matrix).getDimSize(1);
  return MatmulOp::create(emit.builder, emit.loc, tensorType(x).clone(shape), x,
                          matrix, /*addend=*/Value(),
                          /*transpose_lhs=*/false, /*transpose_rhs=*/false);
}

std::optional<int64_t> mlir::titan::import::knownSplatInteger(Value v) {
  while (Operation *op = v.getDefiningOp()) {
    if (!isa<ReshapeOp, SliceOp, BroadcastInDimOp, CastOp, StopGradientOp>(op))
      break;
    v = op->getOperand(0);
  }
  DenseElementsAttr constant;
  if (!matchPattern(v, m_Constant(&constant)) || !constant.isSplat() ||
      !isa<IntegerType>(constant.getElementType()) ||
      constant.getElementType().isInteger(1))
    return std::nullopt;
  return constant.getSplatValue<APInt>().getSExtValue();
}

Value mlir::titan::import::floorOf(Emitter &emit, Value x) {
  return RoundedDivOp::create(emit.builder, emit.loc, tensorType(x), x,
                              emit.splatLike(x, 1.0), /*truncate=*/false);
}

Value mlir::titan::import::isEven(Emitter &emit, Value whole) {
  Value half = emit.scale(whole, 0.5);
  return emit.compare("eq", floorOf(emit, half), half);
}

Value mlir::titan::import::roundHalfEven(Emitter &emit, Value x) {
  Value floor = floorOf(emit, x);
  Value rest = emit.binary<SubOp>(x, floor);
  Value half = emit.splatLike(x, 0.5);
  Value one = emit.splatLike(x, 1.0), zero = emit.splatLike(x, 0.0);
  Value up = emit.select(
      emit.compare("gt", rest, half), one,
      emit.select(emit.compare("eq", rest, half),
                  emit.select(isEven(emit, floor), zero, one), zero));
  return emit.binary<AddOp>(floor, up);
}
