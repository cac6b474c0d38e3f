//===- AdamW.h - AdamW's hyperparameters and step scalars -------*- C++ -*-===//
//
// What every AdamW of the runtime shares (titanrt_adamw on the CPU and the
// GPU, FusedAdamW): torch.optim.AdamW's hyperparameters, their checks, and
// the scalars of one step as titan.adamw's definition computes them (in
// double, rounded to f32 once). Header-only: the CUDA backend, built
// alone on GPU machines, compiles it for the host and the device.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CORE_ADAMW_H
#define TITAN_RUNTIME_CORE_ADAMW_H

#include "core/ComputeBackend.h"
#include "core/Status.h"

#include <cmath>
#include <cstdint>
#include <string>

#ifdef __CUDACC__
#define TITAN_HOST_DEVICE __host__ __device__
#else
#define TITAN_HOST_DEVICE
#endif

namespace titan::rt {

/// torch.optim.AdamW's hyperparameters (torchtitan's defaults) and the
/// step.
struct AdamWHyperparameters {
  double lr = 8e-4;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weightDecay = 0.1;
  /// The steps done before this one (titan's `step` input): the bias
  /// corrections use t = step + 1.
  int64_t step = 0;
};

/// The hyperparameters of a titanrt_fused_adamw `call` with the values of
/// its lr and step (read by the caller: on the host or on the device).
TITAN_HOST_DEVICE inline AdamWHyperparameters
adamWHyperparameters(const AdamWCall &call, double lr, double step) {
  AdamWHyperparameters hyper;
  hyper.lr = lr;
  hyper.beta1 = call.beta1;
  hyper.beta2 = call.beta2;
  hyper.eps = call.eps;
  hyper.weightDecay = call.weightDecay;
  hyper.step = int64_t(step);
  return hyper;
}

/// What the update multiplies and adds, computed in double and rounded to
/// f32 once (as the compiled program computes them in f64 and broadcasts
/// them in f32).
struct AdamWScalars {
  /// 1 - lr * weight_decay.
  float decay;
  float beta1;
  float oneMinusBeta1;
  float beta2;
  float oneMinusBeta2;
  /// lr / (1 - beta1^t).
  float stepSize;
  /// sqrt(1 - beta2^t).
  float correction2Sqrt;
  float eps;
};

/// The scalars of one step (pure; unit-tested on the CPU), computed as
/// titan.adamw's expansion computes them: beta^t as exp(t * log(beta)).
TITAN_HOST_DEVICE inline AdamWScalars
adamWScalars(const AdamWHyperparameters &hyper) {
  const double t = double(hyper.step) + 1.0;
  AdamWScalars s;
  s.decay = float(1.0 - hyper.lr * hyper.weightDecay);
  s.beta1 = float(hyper.beta1);
  s.oneMinusBeta1 = float(1.0 - hyper.beta1);
  s.beta2 = float(hyper.beta2);
  s.oneMinusBeta2 = float(1.0 - hyper.beta2);
  s.stepSize = float(hyper.lr / (1.0 - ::exp(t * ::log(hyper.beta1))));
  s.correction2Sqrt = float(::sqrt(1.0 - ::exp(t * ::log(hyper.beta2))));
  s.eps = float(hyper.eps);
  return s;
}

/// The update of one element from its gradient `g` (clipped already): the
/// parameter, m and v are read from the first three and written to the
/// last three (which may be the same places), each operation in f32 in
/// titan.adamw's order.
TITAN_HOST_DEVICE inline void
updateAdamWElement(const AdamWScalars &s, float g, const float &param,
                   const float &expAvg, const float &expAvgSq, float &paramOut,
                   float &expAvgOut, float &expAvgSqOut) {
  const float decayed = param * s.decay;
  const float m = expAvg * s.beta1 + g * s.oneMinusBeta1;
  const float v = expAvgSq * s.beta2 + (g * g) * s.oneMinusBeta2;
  const float denom = ::sqrtf(v) / s.correction2Sqrt + s.eps;
  paramOut = decayed - (m / denom) * s.stepSize;
  expAvgOut = m;
  expAvgSqOut = v;
}

/// Fails, the message starting with `op`, unless the hyperparameters are
/// usable: lr >= 0, betas in [0, 1), eps > 0, weight decay >= 0, step >= 0.
inline Status checkAdamWHyperparameters(const AdamWHyperparameters &hyper,
                                        const char *op = "adamw") {
  auto fail = [&](const std::string &what) {
    return Status::invalidArgument(std::string(op) + ": " + what);
  };
  if (!(hyper.lr >= 0))
    return fail("lr = " + std::to_string(hyper.lr) + " must be >= 0");
  if (!(hyper.beta1 >= 0 && hyper.beta1 < 1) ||
      !(hyper.beta2 >= 0 && hyper.beta2 < 1))
    return fail("betas (" + std::to_string(hyper.beta1) + ", " +
                std::to_string(hyper.beta2) + ") must be in [0, 1)");
  if (!(hyper.eps > 0))
    return fail("eps = " + std::to_string(hyper.eps) + " must be positive");
  if (!(hyper.weightDecay >= 0))
    return fail("weight_decay = " + std::to_string(hyper.weightDecay) +
                " must be >= 0");
  if (hyper.step < 0)
    return fail("step = " + std::to_string(hyper.step) + " is negative");
  return Status::success();
}

} // namespace titan::rt

#endif // TITAN_RUNTIME_CORE_ADAMW_H
