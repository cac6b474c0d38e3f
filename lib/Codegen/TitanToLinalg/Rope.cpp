//===- Rope.cpp - titan.rope to linalg ------------------------------------===//
//
// RoPE is one all-parallel `linalg.generic` over the input [batch, seq,
// heads, head_dim] with four inputs: the element itself, its partner in the
// rotated pair, and the cos and sin of the pair's angle, each read through
// an affine map of the head_dim loop d (H = head_dim / 2):
//
//   style        partner                 pair j       first of the pair
//   interleaved  d + 1 - 2 (d mod 2)     d floordiv 2  d mod 2 == 0
//   half         (d + H) mod head_dim    d mod H       d < H
//
// and the body computes `x c - partner s` for the first element of a pair
// and `x c + partner s` for the second, in the wider of the input's and the
// tables' compute types, rounded to the input's type (the interpreter's
// `(a, b) -> (a c - b s, a s + b c)`).
//
//===----------------------------------------------------------------------===//

#include "Helpers.h"

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::titan;

namespace {

LogicalResult convertRope(RopeOp op, PatternRewriter &rewriter) {
  MLIRContext *context = op.getContext();
  RankedTensorType type = op.getType();
  int64_t headDim = type.getDimSize(3), half = headDim / 2;
  bool interleaved = op.getStyle() == "interleaved";

  AffineExpr batch = getAffineDimExpr(0, context);
  AffineExpr seq = getAffineDimExpr(1, context);
  AffineExpr head = getAffineDimExpr(2, context);
  AffineExpr d = getAffineDimExpr(3, context);
  AffineExpr partner = interleaved ? d + 1 - (d % 2) * 2 : (d + half) % headDim;
  AffineExpr pair = interleaved ? d.floorDiv(2) : d % half;
  AffineMap identity = AffineMap::getMultiDimIdentityMap(4, context);
  AffineMap partnerMap =
      AffineMap::get(4, 0, {batch, seq, head, partner}, context);
  AffineMap tableMap = AffineMap::get(4, 0, {seq, pair}, context);

  Type computeType = getWiderFloatType(type.getElementType(),
                                       op.getCos().getType().getElementType());
  rewriter.replaceOp(
      op, buildFloatMap(
              rewriter, op.getLoc(), type, computeType,
              {op.getInput(), op.getInput(), op.getCos(), op.getSin()},
              {identity, partnerMap, tableMap, tableMap},
              [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
                Value index = linalg::IndexOp::create(b, loc, 3);
                Value first;
                if (interleaved) {
                  Value parity = arith::RemUIOp::create(
                      b, loc, index, arith::ConstantIndexOp::create(b, loc, 2));
                  first = arith::CmpIOp::create(
                      b, loc, arith::CmpIPredicate::eq, parity,
                      arith::ConstantIndexOp::create(b, loc, 0));
                } else {
                  first = arith::CmpIOp::create(
                      b, loc, arith::CmpIPredicate::ult, index,
                      arith::ConstantIndexOp::create(b, loc, half));
                }
                Value own = arith::MulFOp::create(b, loc, args[0], args[2]);
                Value other = arith::MulFOp::create(b, loc, args[1], args[3]);
                return arith::SelectOp::create(
                    b, loc, first, arith::SubFOp::create(b, loc, own, other),
                    arith::AddFOp::create(b, loc, own, other));
              }));
  return success();
}

} // namespace

void mlir::titan::populateRopeToLinalgPatterns(RewritePatternSet &patterns) {
  addConversion(patterns, convertRope);
}
