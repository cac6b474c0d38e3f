//===- FuseRmsNorm.cpp - recognize RMSNorm written with elementwise ops ---===//
//
// Implements titan-fuse-rms-norm (see passes/Passes.td).
//
//===----------------------------------------------------------------------===//

#include "titan/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::titan {
#define GEN_PASS_DEF_FUSERMSNORMPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// The value of a scalar constant seen through broadcasts, casts and
/// reshapes of a splat `titan.constant`.
std::optional<double> scalarConstant(Value value) {
  while (Operation *op = value.getDefiningOp()) {
    if (isa<BroadcastInDimOp, CastOp, ReshapeOp>(op)) {
      value = op->getOperand(0);
      continue;
    }
    auto constant = dyn_cast<ConstantOp>(op);
    if (!constant)
      return std::nullopt;
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    if (!dense || !dense.isSplat() || !isa<FloatType>(dense.getElementType()))
      return std::nullopt;
    return dense.getSplatValue<APFloat>().convertToDouble();
  }
  return std::nullopt;
}

/// If `value` is `broadcast_in_dim(source)`, returns `source`.
Value broadcastSource(Value value) {
  auto broadcast = value.getDefiningOp<BroadcastInDimOp>();
  return broadcast ? broadcast.getInput() : Value();
}

/// Matches `rsqrt(mean(x * x, last dim, keepdim) + eps)` and returns x and
/// eps.
std::optional<std::pair<Value, double>> matchInverseRms(Value value) {
  auto rsqrt = value.getDefiningOp<RsqrtOp>();
  if (!rsqrt)
    return std::nullopt;
  auto add = rsqrt.getInput().getDefiningOp<AddOp>();
  if (!add)
    return std::nullopt;
  for (auto [meanValue, epsValue] : {std::pair{add.getLhs(), add.getRhs()},
                                     std::pair{add.getRhs(), add.getLhs()}}) {
    auto mean = meanValue.getDefiningOp<ReduceMeanOp>();
    std::optional<double> eps = scalarConstant(epsValue);
    if (!mean || !eps || *eps <= 0 || !mean.getKeepdim())
      continue;
    auto inputType = cast<RankedTensorType>(mean.getInput().getType());
    if (mean.getDims() != ArrayRef<int64_t>{inputType.getRank() - 1})
      continue;
    auto square = mean.getInput().getDefiningOp<MulOp>();
    if (!square || square.getLhs() != square.getRhs())
      continue;
    // The add happens in its own element type: round eps to it.
    llvm::APFloat rounded(*eps);
    bool losesInfo;
    rounded.convert(cast<FloatType>(getElementTypeOrSelf(add.getType()))
                        .getFloatSemantics(),
                    llvm::APFloat::rmNearestTiesToEven, &losesInfo);
    return std::pair{square.getLhs(), rounded.convertToDouble()};
  }
  return std::nullopt;
}

/// `(x * broadcast(rsqrt(mean(x*x) + eps))) * broadcast(w)` ->
/// `titan.rms_norm x, w eps`; also with x widened before the norm and the
/// normalized value narrowed back before the weight (`x.float()` ...
/// `.type_as(x) * w`).
struct FuseRmsNorm : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [normedValue, weightValue] :
         {std::pair{op.getLhs(), op.getRhs()},
          std::pair{op.getRhs(), op.getLhs()}}) {
      Value weight = broadcastSource(weightValue);
      // Under mixed precision the norm computes in float32 and rounds back
      // to the input's type before the weight scales it.
      auto narrow = normedValue.getDefiningOp<CastOp>();
      auto normed =
          (narrow ? narrow.getInput() : normedValue).getDefiningOp<MulOp>();
      if (!weight || !normed)
        continue;
      auto weightType = cast<RankedTensorType>(weight.getType());
      auto resultType = op.getType();
      if (weightType.getRank() != 1 ||
          weightType.getDimSize(0) != resultType.getShape().back() ||
          weightType.getElementType() != resultType.getElementType() ||
          cast<BroadcastInDimOp>(weightValue.getDefiningOp()).getDims() !=
              ArrayRef<int64_t>{resultType.getRank() - 1})
        continue;
      for (auto [input, scaleValue] :
           {std::pair{normed.getLhs(), normed.getRhs()},
            std::pair{normed.getRhs(), normed.getLhs()}}) {
        Value inverseRms = broadcastSource(scaleValue);
        if (!inverseRms)
          continue;
        std::optional<std::pair<Value, double>> match =
            matchInverseRms(inverseRms);
        if (!match || match->first != input)
          continue;
        if (narrow) {
          auto widen = input.getDefiningOp<CastOp>();
          if (!widen)
            continue;
          input = widen.getInput();
        }
        if (input.getType() != resultType)
          continue;
        rewriter.replaceOpWithNewOp<RmsNormOp>(
            op, resultType, input, weight,
            rewriter.getF64FloatAttr(match->second));
        return success();
      }
    }
    return failure();
  }
};

class FuseRmsNormPass
    : public titan::impl::FuseRmsNormPassBase<FuseRmsNormPass> {
public:
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseRmsNorm>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
