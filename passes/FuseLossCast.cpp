//===- FuseLossCast.cpp - the loss reads narrow logits --------------------===//
//
// Implements titan-fuse-loss-cast (see passes/Passes.td).
//
//===----------------------------------------------------------------------===//

#include "titan/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::titan {
#define GEN_PASS_DEF_FUSELOSSCASTPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// If `logits` is a cast of narrower (bf16 or f16) logits to f32, the
/// precision the loss computes in anyway, returns the narrow logits.
Value getNarrowLogits(Value logits) {
  auto widen = logits.getDefiningOp<CastOp>();
  if (!widen || !widen.getType().getElementType().isF32() ||
      !isExactFloatWidening(widen.getInput().getType(), widen.getType()))
    return Value();
  return widen.getInput();
}

/// `cross_entropy(cast(x) to f32)` -> `cross_entropy(x)`: the same f32 loss.
struct ReadNarrowLogits : OpRewritePattern<CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CrossEntropyOp op,
                                PatternRewriter &rewriter) const override {
    Value narrow = getNarrowLogits(op.getLogits());
    if (!narrow)
      return failure();
    rewriter.modifyOpInPlace(op, [&] { op.getLogitsMutable().assign(narrow); });
    return success();
  }
};

/// `cast(cross_entropy_grad(cast(x) to f32, ...)) to x's type` ->
/// `cross_entropy_grad(x, ...)`, which computes in f32 and rounds once.
struct WriteNarrowGradient : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CastOp op,
                                PatternRewriter &rewriter) const override {
    auto grad = op.getInput().getDefiningOp<CrossEntropyGradOp>();
    if (!grad || !grad->hasOneUse())
      return failure();
    Value narrow = getNarrowLogits(grad.getLogits());
    if (!narrow || narrow.getType() != op.getType())
      return failure();
    auto fused = rewriter.replaceOpWithNewOp<CrossEntropyGradOp>(
        op, op.getType(), narrow, grad.getLabels(), grad.getGrad(),
        grad.getIgnoreIndexAttr(), grad.getReplicatedVocabAttr());
    fused->setDiscardableAttrs(grad->getDiscardableAttrDictionary());
    return success();
  }
};

class FuseLossCastPass
    : public titan::impl::FuseLossCastPassBase<FuseLossCastPass> {
public:
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ReadNarrowLogits, WriteNarrowGradient>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
