//===- Norms.cpp - titan's normalizations to linalg -----------------------===//
//
// The norms normalize over the last dim ("rows" are all the others). Each
// is a few generics over the input's loops, in the interpreter's order of
// operations: reductions over the last dim into per-row accumulators (f32
// for bf16/f16), then an elementwise generic that reads them through the
// row projection and recomputes the per-row scale inline (LLVM hoists it
// out of the inner loop):
//
//   rms_norm         sum(x^2) | x * rsqrt(ss/D + eps) * w
//   layer_norm       sum(x) | sum((x - mean)^2) | (x - mean) * r * w + b
//   rms_norm_grad    sum(x^2), sum(dy w x) | dx | dw = sum over rows
//   layer_norm_grad  sum(x) | sum((x - mean)^2) | sum(g), sum(g xhat) | dx
//                    | dw, db = sums over rows
//
// (biased variance, two passes, as the interpreter).
//
//===----------------------------------------------------------------------===//

#include "Helpers.h"

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::titan;

namespace {

/// The loops of a norm over `input` and the scalars its generics share.
struct NormLoops : RowLoops {
  NormLoops(OpBuilder &b, Value input, double eps)
      : RowLoops(b.getContext(), input), eps(eps) {}

  double eps;

  int64_t columns() const { return type.getShape().back(); }

  Value constant(OpBuilder &b, Location loc, double value) const {
    return createFloat(b, loc, computeType, value);
  }

  /// `sum / D`, a per-row mean.
  Value mean(OpBuilder &b, Location loc, Value sum) const {
    return arith::DivFOp::create(b, loc, sum,
                                 constant(b, loc, double(columns())));
  }

  /// rsqrt(squares / D + eps): the per-row scale of both norms.
  Value inverseRms(OpBuilder &b, Location loc, Value squares) const {
    return math::RsqrtOp::create(b, loc,
                                 arith::AddFOp::create(b, loc,
                                                       mean(b, loc, squares),
                                                       constant(b, loc, eps)));
  }

  /// Converts the element block arguments of `args` to the compute type.
  SmallVector<Value> extend(OpBuilder &b, Location loc, ValueRange args) const {
    SmallVector<Value> values;
    for (Value arg : args)
      values.push_back(convertFloat(b, loc, arg, computeType));
    return values;
  }

  /// Sums over the loops `reduced` of each value `terms` returns for the
  /// elements of `inputs` (converted to the compute type).
  SmallVector<Value>
  sum(OpBuilder &b, Location loc, ArrayRef<int64_t> reduced, ValueRange inputs,
      ArrayRef<AffineMap> maps, unsigned numSums,
      function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)> terms)
      const {
    SmallVector<Value> zeros(
        numSums, createFloat(b, loc, getAccumulatorType(computeType), 0.0));
    return buildReduction(
        b, loc, type.getShape(), reduced, inputs, maps, zeros,
        [&](OpBuilder &nested, Location nestedLoc,
            ValueRange args) -> SmallVector<Value> {
          SmallVector<Value> values =
              terms(nested, nestedLoc,
                    extend(nested, nestedLoc, args.drop_back(numSums)));
          SmallVector<Value> sums;
          for (auto [acc, value] :
               llvm::zip_equal(args.take_back(numSums), values))
            sums.push_back(accumulate(nested, nestedLoc, acc, value));
          return sums;
        });
  }

  /// Per-row sums (over the last dim) of the values `terms` returns.
  SmallVector<Value>
  sumRows(OpBuilder &b, Location loc, ValueRange inputs,
          ArrayRef<AffineMap> maps, unsigned numSums,
          function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)>
              terms) const {
    return sum(b, loc, last, inputs, maps, numSums, terms);
  }

  /// Per-column sums (over the rows) of the values `terms` returns, each
  /// converted to `elementType`.
  SmallVector<Value>
  sumColumns(OpBuilder &b, Location loc, ValueRange inputs,
             ArrayRef<AffineMap> maps, unsigned numSums, Type elementType,
             function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)>
                 terms) const {
    SmallVector<int64_t> rows = llvm::to_vector(llvm::seq<int64_t>(0, last));
    SmallVector<Value> sums = sum(b, loc, rows, inputs, maps, numSums, terms);
    for (Value &value : sums)
      value = buildFloatConversion(b, loc, value, elementType);
    return sums;
  }

  /// An elementwise generic over the input's shape.
  Value map(OpBuilder &b, Location loc, ValueRange inputs,
            ArrayRef<AffineMap> maps,
            function_ref<Value(OpBuilder &, Location, ValueRange)> body) const {
    return buildFloatMap(b, loc, type, computeType, inputs, maps, body);
  }
};

Value mul(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  return arith::MulFOp::create(b, loc, lhs, rhs);
}

Value sub(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  return arith::SubFOp::create(b, loc, lhs, rhs);
}

Value add(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  return arith::AddFOp::create(b, loc, lhs, rhs);
}

LogicalResult convertRmsNorm(RmsNormOp op, PatternRewriter &rewriter) {
  Location loc = op.getLoc();
  NormLoops loops(rewriter, op.getInput(), op.getEps().convertToDouble());
  Value squares = loops
                      .sumRows(rewriter, loc, op.getInput(), loops.identity, 1,
                               [](OpBuilder &b, Location l,
                                  ValueRange x) -> SmallVector<Value> {
                                 return {mul(b, l, x[0], x[0])};
                               })
                      .front();
  rewriter.replaceOp(
      op, loops.map(rewriter, loc, {op.getInput(), op.getWeight(), squares},
                    {loops.identity, loops.column, loops.row},
                    [&](OpBuilder &b, Location l, ValueRange args) {
                      Value scale = loops.inverseRms(b, l, args[2]);
                      return mul(b, l, mul(b, l, args[0], scale), args[1]);
                    }));
  return success();
}

LogicalResult convertRmsNormGrad(RmsNormGradOp op, PatternRewriter &rewriter) {
  Location loc = op.getLoc();
  NormLoops loops(rewriter, op.getInput(), op.getEps().convertToDouble());
  Value x = op.getInput(), w = op.getWeight(), dy = op.getGrad();
  // Per row: sum(x^2) and sum(dy * w * x).
  SmallVector<Value> sums = loops.sumRows(
      rewriter, loc, {x, w, dy}, {loops.identity, loops.column, loops.identity},
      2, [](OpBuilder &b, Location l, ValueRange v) -> SmallVector<Value> {
        return {mul(b, l, v[0], v[0]), mul(b, l, mul(b, l, v[2], v[1]), v[0])};
      });
  // dx = r * (dy * w - x * r^2 * dot / D) (+ the addend).
  SmallVector<Value> inputs = {x, w, dy, sums[0], sums[1]};
  SmallVector<AffineMap> maps = {loops.identity, loops.column, loops.identity,
                                 loops.row, loops.row};
  if (Value addend = op.getAddend()) {
    inputs.push_back(addend);
    maps.push_back(loops.identity);
  }
  Value inputGrad = loops.map(
      rewriter, loc, inputs, maps,
      [&](OpBuilder &b, Location l, ValueRange v) -> Value {
        Value scale = loops.inverseRms(b, l, v[3]);
        Value correction =
            loops.mean(b, l, mul(b, l, mul(b, l, scale, scale), v[4]));
        Value grad =
            mul(b, l, scale,
                sub(b, l, mul(b, l, v[2], v[1]), mul(b, l, v[0], correction)));
        return v.size() > 5 ? add(b, l, grad, v[5]) : grad;
      });
  // dw = sum over rows of dy * x * r.
  Value weightGrad =
      loops
          .sumColumns(rewriter, loc, {x, dy, sums[0]},
                      {loops.identity, loops.identity, loops.row}, 1,
                      op.getWeight().getType().getElementType(),
                      [&](OpBuilder &b, Location l,
                          ValueRange v) -> SmallVector<Value> {
                        Value scale = loops.inverseRms(b, l, v[2]);
                        return {mul(b, l, mul(b, l, v[1], v[0]), scale)};
                      })
          .front();
  rewriter.replaceOp(op, {inputGrad, weightGrad});
  return success();
}

/// Per row: the sum of x and the sum of squared deviations from the mean.
std::pair<Value, Value> buildMoments(OpBuilder &b, Location loc,
                                     const NormLoops &loops, Value x) {
  Value sum =
      loops
          .sumRows(b, loc, x, loops.identity, 1,
                   [](OpBuilder &, Location,
                      ValueRange v) -> SmallVector<Value> { return {v[0]}; })
          .front();
  Value deviations =
      loops
          .sumRows(b, loc, {x, sum}, {loops.identity, loops.row}, 1,
                   [&](OpBuilder &nested, Location l,
                       ValueRange v) -> SmallVector<Value> {
                     Value centered =
                         sub(nested, l, v[0], loops.mean(nested, l, v[1]));
                     return {mul(nested, l, centered, centered)};
                   })
          .front();
  return {sum, deviations};
}

/// xhat = (x - mean) * scale from the row's sum and scale.
Value buildNormalized(OpBuilder &b, Location loc, const NormLoops &loops,
                      Value x, Value sum, Value scale) {
  return mul(b, loc, sub(b, loc, x, loops.mean(b, loc, sum)), scale);
}

LogicalResult convertLayerNorm(LayerNormOp op, PatternRewriter &rewriter) {
  Location loc = op.getLoc();
  NormLoops loops(rewriter, op.getInput(), op.getEps().convertToDouble());
  auto [sum, deviations] = buildMoments(rewriter, loc, loops, op.getInput());
  rewriter.replaceOp(
      op,
      loops.map(
          rewriter, loc,
          {op.getInput(), op.getWeight(), op.getBias(), sum, deviations},
          {loops.identity, loops.column, loops.column, loops.row, loops.row},
          [&](OpBuilder &b, Location l, ValueRange v) -> Value {
            Value normalized = buildNormalized(b, l, loops, v[0], v[3],
                                               loops.inverseRms(b, l, v[4]));
            return arith::AddFOp::create(b, l, mul(b, l, normalized, v[1]),
                                         v[2]);
          }));
  return success();
}

LogicalResult convertLayerNormGrad(LayerNormGradOp op,
                                   PatternRewriter &rewriter) {
  Location loc = op.getLoc();
  NormLoops loops(rewriter, op.getInput(), op.getEps().convertToDouble());
  Value x = op.getInput(), w = op.getWeight(), dy = op.getGrad();
  auto [sum, deviations] = buildMoments(rewriter, loc, loops, x);
  SmallVector<Value> elements = {x, w, dy, sum, deviations};
  SmallVector<AffineMap> maps = {loops.identity, loops.column, loops.identity,
                                 loops.row, loops.row};
  // Per row: sum(g) and sum(g * xhat) with g = dy * w.
  SmallVector<Value> sums = loops.sumRows(
      rewriter, loc, elements, maps, 2,
      [&](OpBuilder &b, Location l, ValueRange v) -> SmallVector<Value> {
        Value g = mul(b, l, v[2], v[1]);
        Value normalized = buildNormalized(b, l, loops, v[0], v[3],
                                           loops.inverseRms(b, l, v[4]));
        return {g, mul(b, l, g, normalized)};
      });
  // dx = r * (g - mean(g) - xhat * mean(g * xhat)).
  SmallVector<Value> withSums(elements);
  withSums.append(sums);
  SmallVector<AffineMap> withSumMaps(maps);
  withSumMaps.append({loops.row, loops.row});
  Value inputGrad = loops.map(
      rewriter, loc, withSums, withSumMaps,
      [&](OpBuilder &b, Location l, ValueRange v) -> Value {
        Value scale = loops.inverseRms(b, l, v[4]);
        Value normalized = buildNormalized(b, l, loops, v[0], v[3], scale);
        Value centered =
            sub(b, l, sub(b, l, mul(b, l, v[2], v[1]), loops.mean(b, l, v[5])),
                mul(b, l, normalized, loops.mean(b, l, v[6])));
        return mul(b, l, scale, centered);
      });
  // dw = sum over rows of dy * xhat, db = sum over rows of dy.
  SmallVector<Value> paramGrads = loops.sumColumns(
      rewriter, loc, {x, dy, sum, deviations},
      {loops.identity, loops.identity, loops.row, loops.row}, 2,
      op.getWeight().getType().getElementType(),
      [&](OpBuilder &b, Location l, ValueRange v) -> SmallVector<Value> {
        Value normalized = buildNormalized(b, l, loops, v[0], v[2],
                                           loops.inverseRms(b, l, v[3]));
        return {mul(b, l, v[1], normalized), v[1]};
      });
  rewriter.replaceOp(op, {inputGrad, paramGrads[0], paramGrads[1]});
  return success();
}

} // namespace

void mlir::titan::populateNormsToLinalgPatterns(RewritePatternSet &patterns) {
  addConversion(patterns, convertRmsNorm);
  addConversion(patterns, convertRmsNormGrad);
  addConversion(patterns, convertLayerNorm);
  addConversion(patterns, convertLayerNormGrad);
}
