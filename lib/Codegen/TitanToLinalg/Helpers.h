//===- Helpers.h - shared builders of the titan-to-linalg patterns -*- C++ -*-//
//
// What every op family's conversion needs: the element type titan computes
// in, scalar constants and conversions, empty and filled tensors, indexing
// maps, and one builder of `linalg.generic` with a body written as a lambda.
// Private to lib/Codegen/TitanToLinalg.
//
// Conventions of the conversion (see TitanToLinalg.h):
//   - every result is written into a `tensor.empty` (never into an input:
//     whether a result may reuse an input's buffer is decided later);
//   - bf16 and f16 values are extended to f32, computed on, and rounded to
//     their type once per op, as the reference interpreter rounds once per
//     op; sums accumulate in f64 (getAccumulatorType);
//   - broadcasts are indexing maps: a result dim is read through a
//     projection, a broadcast size-1 dim through the constant 0, so no
//     tensor reshape is ever needed (reshapes force copies at kernel
//     boundaries after bufferization).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_LIB_CODEGEN_TITANTOLINALG_HELPERS_H
#define TITAN_LIB_CODEGEN_TITANTOLINALG_HELPERS_H

#include "titan/Dialect/TensorBuilder.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::titan {

//===----------------------------------------------------------------------===//
// Families (one populate function each, in <Family>.cpp)
//===----------------------------------------------------------------------===//

/// Elementwise arithmetic and math, gelu(_grad), scale, cast, compare,
/// select, constant, iota.
void populateElementwiseToLinalgPatterns(RewritePatternSet &patterns);
/// reduce_sum, reduce_max, reduce_mean, softmax, log_softmax.
void populateReductionsToLinalgPatterns(RewritePatternSet &patterns);
/// rms_norm(_grad), layer_norm(_grad).
void populateNormsToLinalgPatterns(RewritePatternSet &patterns);
/// broadcast_in_dim, transpose, slice, pad, concat.
void populateShapesToLinalgPatterns(RewritePatternSet &patterns);
/// embedding.
void populateEmbeddingToLinalgPatterns(RewritePatternSet &patterns);
/// rope.
void populateRopeToLinalgPatterns(RewritePatternSet &patterns);
/// cross_entropy, cross_entropy_grad.
void populateCrossEntropyToLinalgPatterns(RewritePatternSet &patterns);

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// True when `op`'s operands and results are all statically shaped ranked
/// tensors (the conversion handles nothing else).
bool hasStaticTensors(Operation *op);

/// Converts ops of type `OpTy` whose tensors all have static shapes with a
/// function `convert(op, rewriter)`, which replaces `op` or fails to match.
template <typename OpTy>
class StaticShapeConversion : public OpRewritePattern<OpTy> {
public:
  using ConvertFn = LogicalResult (*)(OpTy, PatternRewriter &);

  StaticShapeConversion(MLIRContext *context, ConvertFn convert)
      : OpRewritePattern<OpTy>(context), convert(convert) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (!hasStaticTensors(op))
      return rewriter.notifyMatchFailure(op, "needs static shapes");
    return convert(op, rewriter);
  }

private:
  ConvertFn convert;
};

/// Adds `convert` as a StaticShapeConversion of its op type.
template <typename OpTy>
void addConversion(RewritePatternSet &patterns,
                   LogicalResult (*convert)(OpTy, PatternRewriter &)) {
  patterns.add<StaticShapeConversion<OpTy>>(patterns.getContext(), convert);
}

//===----------------------------------------------------------------------===//
// Types and scalars
//===----------------------------------------------------------------------===//

/// The type sums of values computed in `computeType` accumulate in: f64
/// (titan's interpreter sums in double; an f32 sum of the 10^5-10^6 terms
/// of a gradient norm or a vocab-sized row loses ~1e-5 relative accuracy).
Type getAccumulatorType(Type computeType);

/// `lhs + rhs` with `rhs` converted to `lhs`'s (the accumulator's) type.
Value accumulate(OpBuilder &b, Location loc, Value lhs, Value rhs);

/// The wider of two float types (by bit width; f32 over bf16/f16).
Type getWiderFloatType(Type a, Type b);

/// Converts the float scalar `value` to the float type `type` (extf or
/// truncf, which rounds to nearest even; nothing when the types agree).
/// Conversions to bf16/f16 from anything but f32 go through f32, as the
/// interpreter rounds (and no LLVM lowering of f64 -> bf16 is needed).
Value convertFloat(OpBuilder &b, Location loc, Value value, Type type);

/// A scalar float constant of type `type`, `value` rounded to it.
Value createFloat(OpBuilder &b, Location loc, Type type, double value);

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

/// A `tensor.empty` of `shape` and `elementType`.
Value createEmpty(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  Type elementType);

/// A `tensor.empty` of `shape` and `elementType` filled with the scalar
/// `value` (`linalg.fill`): the init of a reduction, the zeros of a pad.
Value createFilled(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                   Value value);

/// `shape` without the dims `dims` (sorted), or with them set to 1 when
/// `keep`.
SmallVector<int64_t> reduceShape(ArrayRef<int64_t> shape,
                                 ArrayRef<int64_t> dims, bool keep);

//===----------------------------------------------------------------------===//
// Indexing maps
//===----------------------------------------------------------------------===//

/// The map from `numLoops` loops onto the loops `loops`, in that order.
AffineMap getProjection(MLIRContext *context, unsigned numLoops,
                        ArrayRef<int64_t> loops);

/// The map from `numLoops` loops onto all loops but `dropped` (sorted).
AffineMap getProjectionWithout(MLIRContext *context, unsigned numLoops,
                               ArrayRef<int64_t> dropped);

/// The map from loops over a tensor of `shape` onto the operand `operand`
/// that `titan.broadcast_in_dim` broadcasts with `dims` (operand dim d is
/// result dim dims[d]; a size-1 operand dim that is broadcast reads index
/// 0).
AffineMap getBroadcastMap(MLIRContext *context, ArrayRef<int64_t> shape,
                          RankedTensorType operand, ArrayRef<int64_t> dims);

/// `count` parallel iterators, with those at `reduced` (sorted) reductions.
SmallVector<utils::IteratorType> getIterators(unsigned count,
                                              ArrayRef<int64_t> reduced = {});

//===----------------------------------------------------------------------===//
// linalg.generic
//===----------------------------------------------------------------------===//

/// The body of a generic: given the block arguments (inputs, then outputs),
/// returns the values to yield, one per output.
using GenericBody =
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)>;

/// Builds `linalg.generic` over loops with `iterators`: `inputs` read
/// through `inputMaps`, `outputs` (inits: `tensor.empty` or filled) written
/// through `outputMaps`. Returns its results.
SmallVector<Value> buildGeneric(OpBuilder &b, Location loc, ValueRange inputs,
                                ArrayRef<AffineMap> inputMaps,
                                ValueRange outputs,
                                ArrayRef<AffineMap> outputMaps,
                                ArrayRef<utils::IteratorType> iterators,
                                GenericBody body);

/// Builds an all-parallel generic over `resultType`'s shape whose inputs
/// are read through `inputMaps` and whose one result (identity map, written
/// into a `tensor.empty`) is `body`'s value.
Value buildMap(OpBuilder &b, Location loc, RankedTensorType resultType,
               ValueRange inputs, ArrayRef<AffineMap> inputMaps,
               function_ref<Value(OpBuilder &, Location, ValueRange)> body);

/// Like `buildMap` for float ops: the input block arguments are converted
/// to `computeType` before `body` and its value is rounded to
/// `resultType`'s element type after it.
Value buildFloatMap(
    OpBuilder &b, Location loc, RankedTensorType resultType, Type computeType,
    ValueRange inputs, ArrayRef<AffineMap> inputMaps,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body);

/// Builds a generic over loops of sizes `loops` that reduces the loops
/// `reduced` (sorted): `inputs` are read through `inputMaps`; there is one
/// accumulator per entry of `inits` (scalars), each a tensor over the loops
/// not reduced, in order, filled with its init. `body` gets the inputs and
/// then the accumulators and yields the new accumulators. Returns the
/// accumulators.
SmallVector<Value> buildReduction(OpBuilder &b, Location loc,
                                  ArrayRef<int64_t> loops,
                                  ArrayRef<int64_t> reduced, ValueRange inputs,
                                  ArrayRef<AffineMap> inputMaps,
                                  ValueRange inits, GenericBody body);

/// `tensor` with its elements converted to the float type `elementType`
/// (an elementwise generic), or `tensor` itself when it has that type.
Value buildFloatConversion(OpBuilder &b, Location loc, Value tensor,
                           Type elementType);

/// The statistics of a numerically stable softmax of `input` along `dim`,
/// in `computeType`, each of `input`'s shape without `dim`.
struct SoftmaxStatistics {
  /// The maximum along `dim` (NaN when the row holds a NaN).
  Value max;
  /// The sum of exp(x - max) along `dim`.
  Value sum;
};

/// Builds the two reductions of SoftmaxStatistics.
SoftmaxStatistics buildSoftmaxStatistics(OpBuilder &b, Location loc,
                                         Value input, int64_t dim,
                                         Type computeType);

/// The loops of an op over a tensor whose last dim is normalized or
/// reduced per row (norms, cross-entropy): the tensor's type and compute
/// type and the indexing maps of its elements, of per-row values (all dims
/// but the last) and of per-column values (the last dim).
struct RowLoops {
  RowLoops(MLIRContext *context, Value input);

  RankedTensorType type;
  Type computeType;
  unsigned rank;
  /// The last dim (and loop).
  int64_t last;
  AffineMap identity, row, column;
};

//===----------------------------------------------------------------------===//
// Scalar math
//===----------------------------------------------------------------------===//

/// `torch.maximum` of two floats: NaN when either is NaN.
Value buildMaximum(OpBuilder &b, Location loc, Value lhs, Value rhs);

} // namespace mlir::titan

#endif // TITAN_LIB_CODEGEN_TITANTOLINALG_HELPERS_H
