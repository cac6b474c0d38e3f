//===- CrossEntropy.cpp - titan's cross-entropy ops to linalg -------------===//
//
// Both ops start from the stable softmax statistics of each row of the
// logits [rows..., vocab] (the row max in the logits' compute type, the sum
// of exp(x - max) accumulated in f64), as the interpreter does.
//
//   cross_entropy       a reduction over all rows into two 0-d
//                       accumulators: the sum of max + log(sum) - x[label]
//                       (the label's logit is a `tensor.extract`; ignored
//                       rows read column 0 and add 0) and the i64 count of
//                       rows not ignored; then total / count, which is
//                       0 / 0 = NaN when every label is ignored.
//   cross_entropy_grad  a reduction counting the rows not ignored, then one
//                       elementwise generic:
//                       (exp(x - max) / sum - onehot) * grad / max(count, 1)
//                       for counted rows and 0 for ignored ones.
//
//===----------------------------------------------------------------------===//

#include "Helpers.h"

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::titan;

namespace {

/// The loops of a cross-entropy over `logits` and what both ops share.
struct LossLoops : RowLoops {
  LossLoops(OpBuilder &b, Value logits, int64_t ignoreIndex)
      : RowLoops(b.getContext(), logits), logits(logits),
        labelRows(AffineMap::getMultiDimIdentityMap(last, b.getContext())),
        ignoreIndex(ignoreIndex) {}

  Value logits;
  /// The identity map of loops over the labels (the rows).
  AffineMap labelRows;
  int64_t ignoreIndex;

  /// The row max and sum of exp(x - max) of the logits.
  SoftmaxStatistics buildStatistics(OpBuilder &b, Location loc) const {
    return buildSoftmaxStatistics(b, loc, logits, last, computeType);
  }

  /// True when `label` is not the ignore index.
  Value isCounted(OpBuilder &b, Location loc, Value label) const {
    Value ignored = arith::ConstantOp::create(
        b, loc, label.getType(),
        b.getIntegerAttr(label.getType(), ignoreIndex));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, label,
                                 ignored);
  }

  /// Reduces over the rows into a 0-d i64 count of the labels not ignored
  /// (`inputs[0]` are the labels, read with the other `inputs` through
  /// `maps`) and, when `term` is given, a 0-d sum over the counted rows of
  /// its value (it gets the inputs and whether the row counts).
  SmallVector<Value>
  reduceRows(OpBuilder &b, Location loc, ValueRange inputs,
             ArrayRef<AffineMap> maps,
             function_ref<Value(OpBuilder &, Location, ValueRange, Value)> term)
      const {
    SmallVector<int64_t> rows(type.getShape().drop_back());
    SmallVector<int64_t> reduced = llvm::to_vector(llvm::seq<int64_t>(0, last));
    SmallVector<Value> inits = {arith::ConstantOp::create(
        b, loc, b.getI64Type(), b.getI64IntegerAttr(0))};
    if (term)
      inits.push_back(
          createFloat(b, loc, getAccumulatorType(computeType), 0.0));
    return buildReduction(
        b, loc, rows, reduced, inputs, maps, inits,
        [&](OpBuilder &nested, Location l,
            ValueRange args) -> SmallVector<Value> {
          Value counted = isCounted(nested, l, args[0]);
          Value one =
              arith::ExtUIOp::create(nested, l, nested.getI64Type(), counted);
          SmallVector<Value> next = {
              arith::AddIOp::create(nested, l, args[inputs.size()], one)};
          if (term) {
            Value value =
                term(nested, l, args.take_front(inputs.size()), counted);
            value = arith::SelectOp::create(
                nested, l, counted, value,
                createFloat(nested, l, computeType, 0.0));
            next.push_back(accumulate(nested, l, args.back(), value));
          }
          return next;
        });
  }
};

LogicalResult convertCrossEntropy(CrossEntropyOp op,
                                  PatternRewriter &rewriter) {
  Location loc = op.getLoc();
  LossLoops loops(rewriter, op.getLogits(), op.getIgnoreIndex());
  SoftmaxStatistics statistics = loops.buildStatistics(rewriter, loc);
  AffineMap rows = loops.labelRows;
  SmallVector<Value> reduced = loops.reduceRows(
      rewriter, loc, {op.getLabels(), statistics.max, statistics.sum},
      {rows, rows, rows},
      [&](OpBuilder &b, Location l, ValueRange args, Value counted) -> Value {
        // Ignored rows read column 0 (their label may be out of range).
        Value label = arith::SelectOp::create(
            b, l, counted, args[0],
            arith::ConstantOp::create(b, l, args[0].getType(),
                                      b.getIntegerAttr(args[0].getType(), 0)));
        SmallVector<Value> indices;
        for (int64_t d = 0; d < loops.last; ++d)
          indices.push_back(linalg::IndexOp::create(b, l, d));
        indices.push_back(
            arith::IndexCastOp::create(b, l, b.getIndexType(), label));
        Value picked = convertFloat(
            b, l, tensor::ExtractOp::create(b, l, loops.logits, indices),
            loops.computeType);
        Value sum = convertFloat(b, l, args[2], loops.computeType);
        Value logSumExp = arith::AddFOp::create(
            b, l, args[1], math::LogOp::create(b, l, sum));
        return arith::SubFOp::create(b, l, logSumExp, picked);
      });
  // total / count: NaN when nothing counted (0 / 0).
  rewriter.replaceOp(
      op,
      buildFloatMap(
          rewriter, loc, op.getType(), loops.computeType,
          {reduced[1], reduced[0]},
          {AffineMap::get(op.getContext()), AffineMap::get(op.getContext())},
          [&](OpBuilder &b, Location l, ValueRange args) -> Value {
            Value count =
                arith::SIToFPOp::create(b, l, loops.computeType, args[1]);
            return arith::DivFOp::create(b, l, args[0], count);
          }));
  return success();
}

LogicalResult convertCrossEntropyGrad(CrossEntropyGradOp op,
                                      PatternRewriter &rewriter) {
  Location loc = op.getLoc();
  LossLoops loops(rewriter, op.getLogits(), op.getIgnoreIndex());
  Value count =
      loops.reduceRows(rewriter, loc, op.getLabels(), loops.labelRows, nullptr)
          .front();
  SoftmaxStatistics statistics = loops.buildStatistics(rewriter, loc);
  AffineMap row = loops.row;
  AffineMap scalar = AffineMap::get(loops.rank, 0, op.getContext());
  rewriter.replaceOp(
      op,
      buildFloatMap(
          rewriter, loc, op.getType(), loops.computeType,
          {op.getLogits(), op.getLabels(), statistics.max, statistics.sum,
           op.getGrad(), count},
          {loops.identity, row, row, row, scalar, scalar},
          [&](OpBuilder &b, Location l, ValueRange args) -> Value {
            Type type = loops.computeType;
            Value label = args[1];
            // grad / max(count, 1).
            Value one = arith::ConstantOp::create(b, l, b.getI64Type(),
                                                  b.getI64IntegerAttr(1));
            Value divisor = arith::SIToFPOp::create(
                b, l, type, arith::MaxSIOp::create(b, l, args[5], one));
            Value factor = arith::DivFOp::create(b, l, args[4], divisor);
            Value probability = arith::DivFOp::create(
                b, l,
                math::ExpOp::create(
                    b, l, arith::SubFOp::create(b, l, args[0], args[2])),
                args[3]);
            Value column = arith::IndexCastOp::create(
                b, l, label.getType(),
                linalg::IndexOp::create(b, l, loops.last));
            Value isLabel = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::eq, column, label);
            Value target = arith::SelectOp::create(
                b, l, isLabel, createFloat(b, l, type, 1.0),
                createFloat(b, l, type, 0.0));
            Value value = arith::MulFOp::create(
                b, l, arith::SubFOp::create(b, l, probability, target), factor);
            return arith::SelectOp::create(b, l, loops.isCounted(b, l, label),
                                           value, createFloat(b, l, type, 0.0));
          }));
  return success();
}

} // namespace

void mlir::titan::populateCrossEntropyToLinalgPatterns(
    RewritePatternSet &patterns) {
  addConversion(patterns, convertCrossEntropy);
  addConversion(patterns, convertCrossEntropyGrad);
}
