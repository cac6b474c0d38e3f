//===- ExpandAdamW.cpp - titan.adamw as elementwise ops -------------------===//

#include "ExpandAdamW.h"

#include "titan/Dialect/TensorBuilder.h"

#include <cmath>

using namespace mlir;
using namespace mlir::titan;

AdamWExpander::StepScalars AdamWExpander::getStepScalars(AdamWOp op,
                                                         OpBuilder &builder) {
  StepKey key{op.getLr(), op.getStep(), op.getBeta1().convertToDouble(),
              op.getBeta2().convertToDouble(),
              op.getWeightDecay().convertToDouble()};
  for (const auto &[built, scalars] : stepScalars)
    if (built == key)
      return scalars;
  // PyTorch computes these in Python floats: f64 here.
  TensorBuilder tb(builder, op.getLoc());
  auto scalarF64 = RankedTensorType::get({}, builder.getF64Type());
  Value lr = tb.cast(op.getLr(), builder.getF64Type());
  Value t = tb.binary<AddOp>(tb.cast(op.getStep(), builder.getF64Type()),
                             tb.splat(scalarF64, 1.0));
  auto oneMinusPower = [&](double beta) { // 1 - beta^t
    Value power = tb.unary<ExpOp>(tb.scale(t, std::log(beta)));
    return tb.binary<SubOp>(tb.splat(scalarF64, 1.0), power);
  };
  StepScalars scalars;
  scalars.decay =
      tb.binary<SubOp>(tb.splat(scalarF64, 1.0),
                       tb.scale(lr, op.getWeightDecay().convertToDouble()));
  scalars.stepSize =
      tb.binary<DivOp>(lr, oneMinusPower(op.getBeta1().convertToDouble()));
  scalars.correction2Sqrt =
      tb.unary<SqrtOp>(oneMinusPower(op.getBeta2().convertToDouble()));
  stepScalars.push_back({key, scalars});
  return scalars;
}

void AdamWExpander::expand(AdamWOp op) {
  OpBuilder builder(op);
  StepScalars scalars = getStepScalars(op, builder);
  TensorBuilder tb(builder, op.getLoc());
  RankedTensorType type = op.getParam().getType();
  // A bf16 or f16 parameter updates in f32 and rounds its three results once
  // (torch's fused AdamW); f32 and f64 ones compute in their own type.
  Type computeType = getComputeType(type.getElementType());
  auto widen = [&](Value value) { return tb.cast(value, computeType); };
  // A scalar in the compute type, broadcast to the parameter's shape.
  auto broadcast = [&](Value scalar) {
    return tb.broadcastTo(widen(scalar), type.getShape());
  };
  double beta1 = op.getBeta1().convertToDouble();
  double beta2 = op.getBeta2().convertToDouble();
  Value g = widen(op.getGrad());
  if (Value gradScale = op.getGradScale())
    g = tb.binary<MulOp>(g, broadcast(gradScale));
  Value decayed =
      tb.binary<MulOp>(widen(op.getParam()), broadcast(scalars.decay));
  Value m = tb.binary<AddOp>(tb.scale(widen(op.getExpAvg()), beta1),
                             tb.scale(g, 1 - beta1));
  Value v = tb.binary<AddOp>(tb.scale(widen(op.getExpAvgSq()), beta2),
                             tb.scale(tb.binary<MulOp>(g, g), 1 - beta2));
  Value denom = tb.binary<AddOp>(
      tb.binary<DivOp>(tb.unary<SqrtOp>(v), broadcast(scalars.correction2Sqrt)),
      tb.splatLike(v, op.getEps().convertToDouble()));
  Value update =
      tb.binary<MulOp>(tb.binary<DivOp>(m, denom), broadcast(scalars.stepSize));
  Value p = tb.binary<SubOp>(decayed, update);
  SmallVector<Value> results;
  for (Value result : {p, m, v})
    results.push_back(tb.cast(result, type.getElementType()));
  if (Value copy = op.getNewParamCopy())
    results.push_back(
        tb.cast(p, cast<RankedTensorType>(copy.getType()).getElementType()));
  op.replaceAllUsesWith(results);
  op.erase();
}
