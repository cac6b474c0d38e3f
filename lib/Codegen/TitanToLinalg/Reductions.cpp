//===- Reductions.cpp - titan's reductions and softmax to linalg ----------===//
//
// A reduction is one `linalg.generic` whose reduced dims are `reduction`
// iterators, accumulating into a `linalg.fill`ed tensor: 0 for sums, -inf
// for maxima (`arith.maximumf`, so a NaN propagates as in torch.amax).
// Sums accumulate in f64 (as the interpreter does); a mean, and the
// rounding of a sum to its element type, are an elementwise generic; a
// reduction over dims of extent 1 only is one elementwise copy. With
// `keepdim`, each reduced dim also gets a parallel loop of size 1 that the
// result is indexed by, so the result needs no reshape (every indexing map
// stays a projection).
//
// softmax and log_softmax along any dim are the numerically stable form of
// the interpreter: a max reduction, a reduction of exp(x - max), and one
// elementwise generic (exp(x - max) / sum, or x - max - log(sum)).
//
//===----------------------------------------------------------------------===//

#include "Helpers.h"

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <limits>

using namespace mlir;
using namespace mlir::titan;

namespace {

/// What a titan reduction computes.
enum class Reduction { Sum, Max, Mean };

/// The reduction of `input` over `dims` whose extents are all 1, of
/// `resultType`: each result element is the one element it reduces (plus
/// +0 for a sum or mean, as torch's sum of -0 is +0), an elementwise copy
/// with no accumulator (a reduction over a batch of one would otherwise
/// fill a wide accumulator as large as its input).
Value buildUnitReduction(OpBuilder &b, Location loc, Value input,
                         RankedTensorType resultType, ArrayRef<int64_t> dims,
                         bool keepdim, Reduction kind) {
  MLIRContext *context = b.getContext();
  auto inputType = cast<RankedTensorType>(input.getType());
  // Input dim d is result dim d with keepdim; otherwise the next result
  // dim, or index 0 where d is reduced.
  SmallVector<AffineExpr> indices;
  unsigned next = 0;
  for (int64_t d = 0; d < inputType.getRank(); ++d) {
    if (!keepdim && llvm::is_contained(dims, d))
      indices.push_back(getAffineConstantExpr(0, context));
    else
      indices.push_back(getAffineDimExpr(next++, context));
  }
  AffineMap map = AffineMap::get(resultType.getRank(), 0, indices, context);
  Type computeType = getComputeType(inputType.getElementType());
  return buildFloatMap(
      b, loc, resultType, computeType, {input}, {map},
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) -> Value {
        if (kind == Reduction::Max)
          return args[0];
        return arith::AddFOp::create(
            nested, nestedLoc, args[0],
            createFloat(nested, nestedLoc, computeType, 0.0));
      });
}

/// Replaces the reduction `op` of `input` over `dims`.
LogicalResult rewriteReduction(Operation *op, PatternRewriter &rewriter,
                               Value input, ArrayRef<int64_t> dims,
                               bool keepdim, Reduction kind) {
  Location loc = op->getLoc();
  MLIRContext *context = op->getContext();
  auto inputType = cast<RankedTensorType>(input.getType());
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  Type elementType = inputType.getElementType();
  Type computeType = getComputeType(elementType);

  // Loops: the input's dims in order, each kept reduced dim preceded by a
  // unit parallel loop that indexes the result.
  SmallVector<int64_t> loops, inputLoops, reducedLoops;
  int64_t count = 1;
  for (auto [d, size] : llvm::enumerate(inputType.getShape())) {
    bool reduced = llvm::is_contained(dims, static_cast<int64_t>(d));
    if (reduced && keepdim)
      loops.push_back(1);
    if (reduced) {
      reducedLoops.push_back(loops.size());
      count *= size;
    }
    inputLoops.push_back(loops.size());
    loops.push_back(size);
  }
  AffineMap inputMap = getProjection(context, loops.size(), inputLoops);
  if (count == 1) {
    rewriter.replaceOp(op, buildUnitReduction(rewriter, loc, input, resultType,
                                              dims, keepdim, kind));
    return success();
  }

  // Maxima are exact in the element type; sums accumulate wider.
  Type accumulatorType = kind == Reduction::Max
                             ? elementType
                             : getAccumulatorType(computeType);
  double init =
      kind == Reduction::Max ? -std::numeric_limits<double>::infinity() : 0.0;
  Value accumulated =
      buildReduction(
          rewriter, loc, loops, reducedLoops, input, inputMap,
          createFloat(rewriter, loc, accumulatorType, init),
          [&](OpBuilder &b, Location nestedLoc,
              ValueRange args) -> SmallVector<Value> {
            Value x = convertFloat(b, nestedLoc, args[0], computeType);
            if (kind != Reduction::Max)
              return {accumulate(b, nestedLoc, args[1], x)};
            Value acc = convertFloat(b, nestedLoc, args[1], computeType);
            return {convertFloat(b, nestedLoc, buildMaximum(b, nestedLoc, x, acc),
                                 accumulatorType)};
          })
          .front();
  if (kind == Reduction::Mean) {
    AffineMap identity =
        AffineMap::getMultiDimIdentityMap(resultType.getRank(), context);
    accumulated = buildFloatMap(
        rewriter, loc, resultType, computeType, accumulated, identity,
        [&](OpBuilder &b, Location nestedLoc, ValueRange args) -> Value {
          return arith::DivFOp::create(
              b, nestedLoc, args[0],
              createFloat(b, nestedLoc, computeType, double(count)));
        });
  }
  rewriter.replaceOp(op, buildFloatConversion(rewriter, loc, accumulated,
                                              resultType.getElementType()));
  return success();
}

template <typename OpTy, Reduction kind>
LogicalResult convertReduction(OpTy op, PatternRewriter &rewriter) {
  return rewriteReduction(op, rewriter, op.getInput(), op.getDims(),
                          op.getKeepdim(), kind);
}

/// Replaces `titan.softmax` (or `titan.log_softmax` when `log`) of `input`
/// along `dim`.
LogicalResult rewriteSoftmax(Operation *op, PatternRewriter &rewriter,
                             Value input, int64_t dim, bool log) {
  Location loc = op->getLoc();
  MLIRContext *context = op->getContext();
  auto type = cast<RankedTensorType>(input.getType());
  Type computeType = getComputeType(type.getElementType());
  SoftmaxStatistics statistics =
      buildSoftmaxStatistics(rewriter, loc, input, dim, computeType);
  unsigned rank = type.getRank();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, context);
  AffineMap row = getProjectionWithout(context, rank, dim);
  rewriter.replaceOp(
      op, buildFloatMap(
              rewriter, loc, type, computeType,
              {input, statistics.max, statistics.sum}, {identity, row, row},
              [&](OpBuilder &b, Location nestedLoc, ValueRange args) -> Value {
                Value shifted =
                    arith::SubFOp::create(b, nestedLoc, args[0], args[1]);
                if (log)
                  return arith::SubFOp::create(
                      b, nestedLoc, shifted,
                      math::LogOp::create(b, nestedLoc, args[2]));
                return arith::DivFOp::create(
                    b, nestedLoc, math::ExpOp::create(b, nestedLoc, shifted),
                    args[2]);
              }));
  return success();
}

LogicalResult convertSoftmax(SoftmaxOp op, PatternRewriter &rewriter) {
  return rewriteSoftmax(op, rewriter, op.getInput(), op.getDim(),
                        /*log=*/false);
}

LogicalResult convertLogSoftmax(LogSoftmaxOp op, PatternRewriter &rewriter) {
  return rewriteSoftmax(op, rewriter, op.getInput(), op.getDim(),
                        /*log=*/true);
}

} // namespace

void mlir::titan::populateReductionsToLinalgPatterns(
    RewritePatternSet &patterns) {
  addConversion(patterns, convertReduction<ReduceSumOp, Reduction::Sum>);
  addConversion(patterns, convertReduction<ReduceMaxOp, Reduction::Max>);
  addConversion(patterns, convertReduction<ReduceMeanOp, Reduction::Mean>);
  addConversion(patterns, convertSoftmax);
  addConversion(patterns, convertLogSoftmax);
}
