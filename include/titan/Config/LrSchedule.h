//===- LrSchedule.h - torchtitan's learning-rate schedule -------*- C++ -*-===//
//
// torchtitan's `[lr_scheduler]` (torchtitan/components/lr_scheduler.py,
// `linear_warmup_stable_decay` under a LambdaLR): a linear warmup over
// `warmup_steps`, a stable phase, then a decay over `decay_ratio` of
// the steps the schedule spans (`total_steps`, else `training.steps`; all
// steps after the warmup when it is not given) that is
// linear, sqrt or cosine and ends at `min_lr_factor` of the learning rate.
// As in torchtitan, a virtual last step keeps the final step's rate above
// the minimum, a warmup longer than the run is cut to the run, and a decay
// that would overlap the warmup is cut to the steps after it. Header-only and
// free of dependencies, so that the runtime computes each step's rate from
// the numbers titan-compile writes into the executable.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CONFIG_LRSCHEDULE_H
#define TITAN_CONFIG_LRSCHEDULE_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

namespace mlir::titan {

/// The shape of the decay phase.
enum class LrDecayType { Linear, Sqrt, Cosine };

/// The spelling of `type` in `lr_scheduler.decay_type`.
inline const char *stringifyLrDecayType(LrDecayType type) {
  switch (type) {
  case LrDecayType::Linear:
    return "linear";
  case LrDecayType::Sqrt:
    return "sqrt";
  case LrDecayType::Cosine:
    return "cosine";
  }
  return "linear";
}

/// The decay type spelled `name`, or nullopt.
inline std::optional<LrDecayType> symbolizeLrDecayType(std::string_view name) {
  if (name == "linear")
    return LrDecayType::Linear;
  if (name == "sqrt")
    return LrDecayType::Sqrt;
  if (name == "cosine")
    return LrDecayType::Cosine;
  return std::nullopt;
}

/// The phases of a schedule, in steps, and the shape of its decay.
struct LrSchedule {
  int64_t warmupSteps = 0;
  int64_t stableSteps = 1;
  int64_t decaySteps = 0;
  LrDecayType decayType = LrDecayType::Linear;
  double minLrFactor = 0.0;

  /// The schedule of a run of `trainingSteps` steps as torchtitan builds it
  /// from `[lr_scheduler]` (`decayRatio` < 0: not given).
  static LrSchedule fromConfig(int64_t trainingSteps, int64_t warmupSteps,
                               double decayRatio, LrDecayType decayType,
                               double minLrFactor) {
    LrSchedule schedule;
    schedule.warmupSteps = std::min(warmupSteps, trainingSteps);
    schedule.decaySteps = trainingSteps - schedule.warmupSteps;
    if (decayRatio >= 0)
      // Python's round(): halves to even, as nearbyint rounds by default.
      schedule.decaySteps = std::min<int64_t>(
          int64_t(std::nearbyint(double(trainingSteps) * decayRatio)),
          schedule.decaySteps);
    // The virtual last step.
    schedule.stableSteps =
        trainingSteps + 1 - schedule.warmupSteps - schedule.decaySteps;
    schedule.decayType = decayType;
    schedule.minLrFactor = minLrFactor;
    return schedule;
  }

  /// The factor of the learning rate for the step after `stepsDone` steps
  /// (LambdaLR's lambda of its `last_epoch`). Past the end of the decay the
  /// final factor holds.
  double factor(int64_t stepsDone) const {
    if (stepsDone < warmupSteps)
      return double(stepsDone + 1) / double(warmupSteps);
    int64_t decayStart = warmupSteps + stableSteps;
    if (stepsDone < decayStart || decaySteps == 0)
      return 1.0;
    double progress =
        std::min(1.0, double(stepsDone + 1 - decayStart) / double(decaySteps));
    double adjustment = 1.0 - progress;
    if (decayType == LrDecayType::Sqrt)
      adjustment = 1.0 - std::sqrt(progress);
    else if (decayType == LrDecayType::Cosine)
      adjustment = 0.5 * (1.0 + std::cos(M_PI * progress));
    return minLrFactor + (1.0 - minLrFactor) * adjustment;
  }
};

} // namespace mlir::titan

#endif // TITAN_CONFIG_LRSCHEDULE_H
