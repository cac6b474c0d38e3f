//===- Optimizer.cpp - AdamW on the CPU -----------------------------------===//
//
// titanrt_adamw: the step's scalars in double, then every element in
// float32 in titan.adamw's order, over ranges of elements on the pool. The
// file is compiled for the baseline instruction set: no FMA contracts two
// of the operations into one, so each is rounded as the op's definition
// (and the reference interpreter) rounds it. (The compiled kernels of the
// expanded update may contract, so they can differ in the last bit.)
//
//===----------------------------------------------------------------------===//

#include "cpu/Arguments.h"
#include "cpu/CpuKernels.h"

#include "core/ComputeBackend.h"
#include "core/LowPrecision.h"

#include <cmath>
#include <string>

using namespace titan::rt;
using namespace titan::rt::cpu;

namespace {

/// Elements per parallel range.
constexpr int64_t kAdamWGrain = 1 << 14;

/// Fails with `what` unless `holds`.
Status require(bool holds, const std::string &what) {
  return holds ? Status::success()
               : Status::invalidArgument("titanrt_adamw: " + what);
}

/// The float32 scalars of one step.
struct StepScalars {
  float decay, stepSize, correction2Sqrt;
  float beta1, oneMinusBeta1, beta2, oneMinusBeta2, eps, gradScale;
};

/// Updates elements [begin, end) (gradients of type G).
template <typename G>
void update(const AdamWOperands &o, const StepScalars &s, int64_t begin,
            int64_t end) {
  const G *grad = static_cast<const G *>(o.grad);
  for (int64_t i = begin; i < end; ++i) {
    float g;
    if constexpr (std::is_same_v<G, float>)
      g = grad[i];
    else
      g = bf16ToFloat(grad[i]);
    if (o.gradScale)
      g = g * s.gradScale;
    const float decayed = o.param[i] * s.decay;
    const float m = o.expAvg[i] * s.beta1 + g * s.oneMinusBeta1;
    const float v = o.expAvgSq[i] * s.beta2 + (g * g) * s.oneMinusBeta2;
    const float denom = std::sqrt(v) / s.correction2Sqrt + s.eps;
    o.paramOut[i] = decayed - (m / denom) * s.stepSize;
    o.expAvgOut[i] = m;
    o.expAvgSqOut[i] = v;
  }
}

} // namespace

Status cpu::adamW(ThreadPool &pool, const AdamWOperands &o) {
  const char *op = "titanrt_adamw";
  TITANRT_RETURN_IF_ERROR(checkNonNegative(op, "numel", o.numel));
  if (o.gradDtype != TITANRT_F32 && o.gradDtype != TITANRT_BF16)
    return Status::unsupported("titanrt_adamw: grad_dtype " +
                               std::to_string(o.gradDtype) +
                               " (the gradient must be f32 or bf16)");
  for (auto [name, pointer] :
       {std::pair{"param", static_cast<const void *>(o.param)},
        {"grad", o.grad},
        {"exp_avg", o.expAvg},
        {"exp_avg_sq", o.expAvgSq},
        {"param_out", o.paramOut},
        {"exp_avg_out", o.expAvgOut},
        {"exp_avg_sq_out", o.expAvgSqOut}})
    TITANRT_RETURN_IF_ERROR(checkBuffer(op, name, pointer, {o.numel}));
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "lr", o.lr, {1}));
  TITANRT_RETURN_IF_ERROR(checkBuffer(op, "step", o.step, {1}));
  TITANRT_RETURN_IF_ERROR(
      require(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1,
              "betas (" + std::to_string(o.beta1) + ", " +
                  std::to_string(o.beta2) + ") must be in [0, 1)"));
  TITANRT_RETURN_IF_ERROR(require(
      o.eps > 0, "eps = " + std::to_string(o.eps) + " must be positive"));
  TITANRT_RETURN_IF_ERROR(
      require(o.weightDecay >= 0, "weight_decay = " +
                                      std::to_string(o.weightDecay) +
                                      " must be >= 0"));
  const double lr = *o.lr, step = *o.step;
  TITANRT_RETURN_IF_ERROR(
      require(lr >= 0, "lr = " + std::to_string(lr) + " must be >= 0"));
  TITANRT_RETURN_IF_ERROR(
      require(step >= 0, "step = " + std::to_string(step) + " is negative"));

  // As titan.adamw's expansion: t = step + 1, beta^t = exp(t * log(beta)).
  const double t = step + 1.0;
  auto oneMinusPower = [&](double beta) {
    return 1.0 - std::exp(t * std::log(beta));
  };
  StepScalars s;
  s.decay = float(1.0 - lr * o.weightDecay);
  s.stepSize = float(lr / oneMinusPower(o.beta1));
  s.correction2Sqrt = float(std::sqrt(oneMinusPower(o.beta2)));
  s.beta1 = float(o.beta1);
  s.oneMinusBeta1 = float(1.0 - o.beta1);
  s.beta2 = float(o.beta2);
  s.oneMinusBeta2 = float(1.0 - o.beta2);
  s.eps = float(o.eps);
  s.gradScale = o.gradScale ? *o.gradScale : 1.0f;
  pool.parallelFor(o.numel, kAdamWGrain, [&](int64_t begin, int64_t end) {
    if (o.gradDtype == TITANRT_F32)
      update<float>(o, s, begin, end);
    else
      update<uint16_t>(o, s, begin, end);
  });
  return Status::success();
}
