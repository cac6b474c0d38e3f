//===- TensorBuilder.cpp - building titan tensor computations -------------===//

#include "titan/Dialect/TensorBuilder.h"

using namespace mlir;
using namespace mlir::titan;

Value TensorBuilder::splat(RankedTensorType type, double value) {
  Type element = type.getElementType();
  DenseElementsAttr attr;
  if (auto floatType = dyn_cast<FloatType>(element)) {
    bool losesInfo;
    llvm::APFloat number(value);
    number.convert(floatType.getFloatSemantics(),
                   llvm::APFloat::rmNearestTiesToEven, &losesInfo);
    attr = DenseElementsAttr::get(type, number);
  } else {
    unsigned width = element.getIntOrFloatBitWidth();
    attr = DenseElementsAttr::get(type, llvm::APInt(width,
                                                    static_cast<int64_t>(value),
                                                    /*isSigned=*/width > 1));
  }
  return ConstantOp::create(builder, loc, attr);
}

Value TensorBuilder::splatLike(Value like, double value, Type element) {
  RankedTensorType type = tensorTypeOf(like);
  return splat(element ? type.clone(element) : type, value);
}

Type mlir::titan::getComputeType(Type type) {
  if (type.isBF16() || type.isF16())
    return Float32Type::get(type.getContext());
  return type;
}

Value TensorBuilder::cast(Value value, Type element) {
  RankedTensorType type = tensorTypeOf(value);
  if (type.getElementType() == element)
    return value;
  return CastOp::create(builder, loc, type.clone(element), value);
}

Value TensorBuilder::broadcastTo(Value value, ArrayRef<int64_t> shape) {
  RankedTensorType type = tensorTypeOf(value);
  if (type.getShape() == shape)
    return value;
  int64_t offset = shape.size() - type.getRank();
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < type.getRank(); ++d)
    dims.push_back(offset + d);
  return BroadcastInDimOp::create(builder, loc, type.clone(shape), value,
                                  builder.getDenseI64ArrayAttr(dims));
}

Value TensorBuilder::reshape(Value value, ArrayRef<int64_t> shape) {
  RankedTensorType type = tensorTypeOf(value);
  if (type.getShape() == shape)
    return value;
  return ReshapeOp::create(builder, loc, type.clone(shape), value);
}

Value TensorBuilder::transpose(Value value, ArrayRef<int64_t> permutation) {
  RankedTensorType type = tensorTypeOf(value);
  SmallVector<int64_t> shape;
  for (int64_t p : permutation)
    shape.push_back(type.getDimSize(p));
  return TransposeOp::create(builder, loc, type.clone(shape), value,
                             builder.getDenseI64ArrayAttr(permutation));
}

Value TensorBuilder::padTo(Value value, int64_t dim, int64_t size) {
  RankedTensorType type = tensorTypeOf(value);
  if (type.getDimSize(dim) == size)
    return value;
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = size;
  return PadOp::create(
      builder, loc, type.clone(shape), value,
      builder.getDenseI64ArrayAttr(SmallVector<int64_t>(type.getRank(), 0)),
      builder.getDenseI64ArrayAttr(SmallVector<int64_t>(type.getRank(), 1)));
}

Value TensorBuilder::slice(Value value, int64_t dim, int64_t start,
                           int64_t limit, int64_t step) {
  RankedTensorType type = tensorTypeOf(value);
  SmallVector<int64_t> starts(type.getRank(), 0), limits(type.getShape()),
      steps(type.getRank(), 1), shape(type.getShape());
  starts[dim] = start;
  limits[dim] = limit;
  steps[dim] = step;
  shape[dim] = (limit - start + step - 1) / step;
  return SliceOp::create(builder, loc, type.clone(shape), value,
                         builder.getDenseI64ArrayAttr(starts),
                         builder.getDenseI64ArrayAttr(limits),
                         builder.getDenseI64ArrayAttr(steps));
}

Value TensorBuilder::concat(ArrayRef<Value> values, int64_t dim) {
  if (values.size() == 1)
    return values[0];
  RankedTensorType type = tensorTypeOf(values[0]);
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = 0;
  for (Value v : values)
    shape[dim] += tensorTypeOf(v).getDimSize(dim);
  return ConcatOp::create(builder, loc, type.clone(shape), values, dim);
}

Value TensorBuilder::scale(Value input, double factor) {
  return ScaleOp::create(builder, loc, input.getType(), input,
                         builder.getF64FloatAttr(factor));
}

Value TensorBuilder::reduceSum(Value input, ArrayRef<int64_t> dims,
                               bool keepdim) {
  RankedTensorType type = tensorTypeOf(input);
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (!llvm::is_contained(dims, d))
      shape.push_back(type.getDimSize(d));
    else if (keepdim)
      shape.push_back(1);
  }
  return ReduceSumOp::create(builder, loc, type.clone(shape), input,
                             builder.getDenseI64ArrayAttr(dims), keepdim);
}

Value TensorBuilder::sumAll(Value input) {
  RankedTensorType type = tensorTypeOf(input);
  if (type.getRank() == 0)
    return input;
  return reduceSum(input,
                   llvm::to_vector(llvm::seq<int64_t>(0, type.getRank())),
                   /*keepdim=*/false);
}

Value TensorBuilder::compare(StringRef predicate, Value lhs, Value rhs) {
  return CompareOp::create(builder, loc,
                           tensorTypeOf(lhs).clone(builder.getI1Type()),
                           builder.getStringAttr(predicate), lhs, rhs);
}

Value TensorBuilder::select(Value cond, Value onTrue, Value onFalse) {
  return SelectOp::create(builder, loc, onTrue.getType(), cond, onTrue,
                          onFalse);
}

Value TensorBuilder::iota(RankedTensorType type, int64_t dim) {
  return IotaOp::create(builder, loc, type, dim);
}

Value TensorBuilder::min(Value lhs, Value rhs) {
  return unary<NegOp>(binary<MaxOp>(unary<NegOp>(lhs), unary<NegOp>(rhs)));
}

Value TensorBuilder::indexEquals(Value index, int64_t k,
                                 ArrayRef<int64_t> shape) {
  Value equal = compare("eq", index, splat(tensorTypeOf(index), double(k)));
  return broadcastTo(equal, shape);
}
