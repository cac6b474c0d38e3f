//===- LrScheduleTest.cpp - torchtitan's learning-rate schedule -----------===//
//
// The expected factors are torchtitan's: its linear_warmup_stable_decay and
// build_lr_schedulers (as test/TrainStep/Inputs/train_oracle.py writes them
// out) evaluated by Python for each step of the run.
//
//===----------------------------------------------------------------------===//

#include "titan/Config/LrSchedule.h"

#include "gtest/gtest.h"

#include <vector>

using namespace mlir::titan;

namespace {

/// The factor of every step of a run of `steps` steps.
std::vector<double> factors(int64_t steps, int64_t warmup, double decayRatio,
                            LrDecayType type, double minLrFactor) {
  LrSchedule schedule =
      LrSchedule::fromConfig(steps, warmup, decayRatio, type, minLrFactor);
  std::vector<double> result;
  for (int64_t step = 0; step < steps; ++step)
    result.push_back(schedule.factor(step));
  return result;
}

void expectNear(const std::vector<double> &actual,
                const std::vector<double> &expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], 1e-15) << "step " << i + 1;
}

TEST(LrSchedule, WarmupStableCosineDecayToAMinimum) {
  expectNear(factors(10, 3, 0.5, LrDecayType::Cosine, 0.1),
             {0.3333333333333333, 0.6666666666666666, 1.0, 1.0, 1.0, 1.0,
              0.9140576474687263, 0.6890576474687263, 0.41094235253127376,
              0.18594235253127372});
}

TEST(LrSchedule, DecayStepsRoundHalvesToEvenAsPython) {
  // round(5 * 0.5) is 2 in Python.
  expectNear(factors(5, 0, 0.5, LrDecayType::Linear, 0.0),
             {1.0, 1.0, 1.0, 1.0, 0.5});
}

TEST(LrSchedule, DecayOverlappingTheWarmupIsCut) {
  // round(6 * 0.9) = 5 decay steps after 2 of warmup: cut to 4.
  expectNear(factors(6, 2, 0.9, LrDecayType::Sqrt, 0.2),
             {0.5, 1.0, 1.0, 0.6000000000000001, 0.434314575050762,
              0.30717967697244913});
}

TEST(LrSchedule, WarmupLongerThanTheRunIsCut) {
  expectNear(factors(4, 10, -1, LrDecayType::Linear, 0.0),
             {0.25, 0.5, 0.75, 1.0});
}

TEST(LrSchedule, WithoutDecayRatioDecaysOverEveryStepAfterWarmup) {
  expectNear(factors(8, 2, -1, LrDecayType::Linear, 0.0),
             {0.5, 1.0, 1.0, 0.8333333333333334, 0.6666666666666667, 0.5,
              0.33333333333333337, 0.16666666666666663});
}

TEST(LrSchedule, ConstantWithoutWarmupOrDecayAndFinalRateHoldsAfterTheRun) {
  LrSchedule constant =
      LrSchedule::fromConfig(5, 0, 0.0, LrDecayType::Linear, 0.0);
  for (int64_t step = 0; step < 20; ++step)
    EXPECT_EQ(constant.factor(step), 1.0);
  LrSchedule decaying =
      LrSchedule::fromConfig(4, 0, 1.0, LrDecayType::Cosine, 0.25);
  EXPECT_EQ(decaying.factor(100), 0.25);
}

TEST(LrSchedule, DecayTypesSpelledAsTorchtitan) {
  for (LrDecayType type :
       {LrDecayType::Linear, LrDecayType::Sqrt, LrDecayType::Cosine})
    EXPECT_EQ(symbolizeLrDecayType(stringifyLrDecayType(type)), type);
  EXPECT_EQ(symbolizeLrDecayType("exponential"), std::nullopt);
}

} // namespace
