//===- Helpers.cpp - shared builders of the titan-to-linalg patterns ------===//

#include "Helpers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace mlir::titan;

//===----------------------------------------------------------------------===//
// Types and scalars
//===----------------------------------------------------------------------===//

Type mlir::titan::getAccumulatorType(Type computeType) {
  return Float64Type::get(computeType.getContext());
}

Value mlir::titan::accumulate(OpBuilder &b, Location loc, Value lhs,
                              Value rhs) {
  return arith::AddFOp::create(b, loc, lhs,
                               convertFloat(b, loc, rhs, lhs.getType()));
}

Type mlir::titan::getWiderFloatType(Type a, Type b) {
  a = getComputeType(a);
  b = getComputeType(b);
  return a.getIntOrFloatBitWidth() >= b.getIntOrFloatBitWidth() ? a : b;
}

Value mlir::titan::convertFloat(OpBuilder &b, Location loc, Value value,
                                Type type) {
  Type from = value.getType();
  if (from == type)
    return value;
  unsigned fromWidth = from.getIntOrFloatBitWidth();
  unsigned toWidth = type.getIntOrFloatBitWidth();
  // Between the 16-bit types, and from f64 to them, through f32 (exact, resp.
  // the interpreter's rounding: double -> float -> bf16/f16).
  Type f32 = Float32Type::get(b.getContext());
  if (toWidth == 16 && fromWidth != 32)
    return convertFloat(b, loc, convertFloat(b, loc, value, f32), type);
  if (fromWidth < toWidth)
    return arith::ExtFOp::create(b, loc, type, value);
  return arith::TruncFOp::create(b, loc, type, value);
}

Value mlir::titan::createFloat(OpBuilder &b, Location loc, Type type,
                               double value) {
  return arith::ConstantOp::create(b, loc, type, b.getFloatAttr(type, value));
}

bool mlir::titan::hasStaticTensors(Operation *op) {
  auto isStatic = [](Type type) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tensor && tensor.hasStaticShape();
  };
  return llvm::all_of(op->getOperandTypes(), isStatic) &&
         llvm::all_of(op->getResultTypes(), isStatic);
}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

Value mlir::titan::createEmpty(OpBuilder &b, Location loc,
                               ArrayRef<int64_t> shape, Type elementType) {
  return tensor::EmptyOp::create(b, loc, shape, elementType);
}

Value mlir::titan::createFilled(OpBuilder &b, Location loc,
                                ArrayRef<int64_t> shape, Value value) {
  Value empty = createEmpty(b, loc, shape, value.getType());
  return linalg::FillOp::create(b, loc, ValueRange{value}, ValueRange{empty})
      .getResult(0);
}

SmallVector<int64_t> mlir::titan::reduceShape(ArrayRef<int64_t> shape,
                                              ArrayRef<int64_t> dims,
                                              bool keep) {
  SmallVector<int64_t> result;
  for (auto [d, size] : llvm::enumerate(shape)) {
    if (!llvm::is_contained(dims, static_cast<int64_t>(d)))
      result.push_back(size);
    else if (keep)
      result.push_back(1);
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Indexing maps
//===----------------------------------------------------------------------===//

AffineMap mlir::titan::getProjection(MLIRContext *context, unsigned numLoops,
                                     ArrayRef<int64_t> loops) {
  SmallVector<AffineExpr> results;
  for (int64_t loop : loops)
    results.push_back(getAffineDimExpr(loop, context));
  return AffineMap::get(numLoops, 0, results, context);
}

AffineMap mlir::titan::getProjectionWithout(MLIRContext *context,
                                            unsigned numLoops,
                                            ArrayRef<int64_t> dropped) {
  SmallVector<int64_t> kept;
  for (int64_t loop = 0; loop < numLoops; ++loop)
    if (!llvm::is_contained(dropped, loop))
      kept.push_back(loop);
  return getProjection(context, numLoops, kept);
}

AffineMap mlir::titan::getBroadcastMap(MLIRContext *context,
                                       ArrayRef<int64_t> shape,
                                       RankedTensorType operand,
                                       ArrayRef<int64_t> dims) {
  SmallVector<AffineExpr> results;
  for (auto [d, resultDim] : llvm::enumerate(dims)) {
    bool broadcast = operand.getDimSize(d) == 1 && shape[resultDim] != 1;
    results.push_back(broadcast ? getAffineConstantExpr(0, context)
                                : getAffineDimExpr(resultDim, context));
  }
  return AffineMap::get(shape.size(), 0, results, context);
}

SmallVector<utils::IteratorType>
mlir::titan::getIterators(unsigned count, ArrayRef<int64_t> reduced) {
  SmallVector<utils::IteratorType> iterators(count,
                                             utils::IteratorType::parallel);
  for (int64_t loop : reduced)
    iterators[loop] = utils::IteratorType::reduction;
  return iterators;
}

//===----------------------------------------------------------------------===//
// linalg.generic
//===----------------------------------------------------------------------===//

SmallVector<Value>
mlir::titan::buildGeneric(OpBuilder &b, Location loc, ValueRange inputs,
                          ArrayRef<AffineMap> inputMaps, ValueRange outputs,
                          ArrayRef<AffineMap> outputMaps,
                          ArrayRef<utils::IteratorType> iterators,
                          GenericBody body) {
  SmallVector<AffineMap> maps(inputMaps);
  llvm::append_range(maps, outputMaps);
  auto generic = linalg::GenericOp::create(
      b, loc, outputs.getTypes(), inputs, outputs, maps, iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        SmallVector<Value> yielded = body(nested, nestedLoc, args);
        linalg::YieldOp::create(nested, nestedLoc, yielded);
      });
  return SmallVector<Value>(generic.getResults());
}

Value mlir::titan::buildMap(
    OpBuilder &b, Location loc, RankedTensorType resultType, ValueRange inputs,
    ArrayRef<AffineMap> inputMaps,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  unsigned rank = resultType.getRank();
  Value init =
      createEmpty(b, loc, resultType.getShape(), resultType.getElementType());
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, b.getContext());
  return buildGeneric(b, loc, inputs, inputMaps, init, identity,
                      getIterators(rank),
                      [&](OpBuilder &nested, Location nestedLoc,
                          ValueRange args) -> SmallVector<Value> {
                        return {body(nested, nestedLoc, args.drop_back())};
                      })
      .front();
}

Value mlir::titan::buildFloatMap(
    OpBuilder &b, Location loc, RankedTensorType resultType, Type computeType,
    ValueRange inputs, ArrayRef<AffineMap> inputMaps,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  return buildMap(b, loc, resultType, inputs, inputMaps,
                  [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
                    SmallVector<Value> converted;
                    for (Value arg : args)
                      converted.push_back(isa<FloatType>(arg.getType())
                                              ? convertFloat(nested, nestedLoc,
                                                             arg, computeType)
                                              : arg);
                    Value result = body(nested, nestedLoc, converted);
                    return convertFloat(nested, nestedLoc, result,
                                        resultType.getElementType());
                  });
}

SmallVector<Value>
mlir::titan::buildReduction(OpBuilder &b, Location loc, ArrayRef<int64_t> loops,
                            ArrayRef<int64_t> reduced, ValueRange inputs,
                            ArrayRef<AffineMap> inputMaps, ValueRange inits,
                            GenericBody body) {
  SmallVector<int64_t> shape = reduceShape(loops, reduced, /*keep=*/false);
  SmallVector<Value> outputs;
  for (Value init : inits)
    outputs.push_back(createFilled(b, loc, shape, init));
  AffineMap outputMap =
      getProjectionWithout(b.getContext(), loops.size(), reduced);
  SmallVector<AffineMap> outputMaps(inits.size(), outputMap);
  return buildGeneric(b, loc, inputs, inputMaps, outputs, outputMaps,
                      getIterators(loops.size(), reduced), body);
}

Value mlir::titan::buildFloatConversion(OpBuilder &b, Location loc,
                                        Value tensor, Type elementType) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (type.getElementType() == elementType)
    return tensor;
  AffineMap identity =
      AffineMap::getMultiDimIdentityMap(type.getRank(), b.getContext());
  return buildMap(b, loc, type.clone(elementType), tensor, identity,
                  [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
                    return convertFloat(nested, nestedLoc, args[0],
                                        elementType);
                  });
}

SoftmaxStatistics mlir::titan::buildSoftmaxStatistics(OpBuilder &b,
                                                      Location loc, Value input,
                                                      int64_t dim,
                                                      Type computeType) {
  auto type = cast<RankedTensorType>(input.getType());
  MLIRContext *context = b.getContext();
  unsigned rank = type.getRank();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, context);
  AffineMap row = getProjectionWithout(context, rank, dim);
  Value max =
      buildReduction(b, loc, type.getShape(), dim, input, identity,
                     createFloat(b, loc, computeType,
                                 -std::numeric_limits<double>::infinity()),
                     [&](OpBuilder &nested, Location nestedLoc,
                         ValueRange args) -> SmallVector<Value> {
                       Value x = convertFloat(nested, nestedLoc, args[0],
                                              computeType);
                       return {buildMaximum(nested, nestedLoc, x, args[1])};
                     })
          .front();
  Value sum =
      buildReduction(
          b, loc, type.getShape(), dim, {input, max}, {identity, row},
          createFloat(b, loc, getAccumulatorType(computeType), 0.0),
          [&](OpBuilder &nested, Location nestedLoc,
              ValueRange args) -> SmallVector<Value> {
            Value x = convertFloat(nested, nestedLoc, args[0], computeType);
            Value shifted =
                arith::SubFOp::create(nested, nestedLoc, x, args[1]);
            Value exp = math::ExpOp::create(nested, nestedLoc, shifted);
            return {accumulate(nested, nestedLoc, args[2], exp)};
          })
          .front();
  return {max, sum};
}

RowLoops::RowLoops(MLIRContext *context, Value input)
    : type(cast<RankedTensorType>(input.getType())),
      computeType(getComputeType(type.getElementType())), rank(type.getRank()),
      last(rank - 1),
      identity(AffineMap::getMultiDimIdentityMap(rank, context)),
      row(getProjectionWithout(context, rank, last)),
      column(getProjection(context, rank, last)) {}

//===----------------------------------------------------------------------===//
// Scalar math
//===----------------------------------------------------------------------===//

Value mlir::titan::buildMaximum(OpBuilder &b, Location loc, Value lhs,
                                Value rhs) {
  return arith::MaximumFOp::create(b, loc, lhs, rhs);
}
