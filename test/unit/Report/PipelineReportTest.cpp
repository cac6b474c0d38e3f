//===- PipelineReportTest.cpp - the plan report of a pipeline -------------===//
//
// buildPipelineReport and writePipelineReport on hand-built stage costs:
// equal stages without transfers give the textbook 1F1B bubble, and a small
// pipeline on a device of round figures gives the report's exact lines.
//
//===----------------------------------------------------------------------===//

#include "titan/Report/PipelineReport.h"

#include "../CostModel/RoundDevice.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::titan;

namespace {

/// `stages` equal stages of `schedule` on `degree` pp ranks: 2 blocks, a
/// forward of 1 s, a backward of 0.5 s for the inputs and 0.5 s for the
/// weights, 1 MiB of activations, and `sent` bytes to the next stage.
PipelinePlan makeEqualStages(StringRef schedule, int64_t degree, int64_t stages,
                             int64_t microbatches, double sent) {
  PipelinePlan plan;
  plan.degree = degree;
  plan.schedule = schedule.str();
  plan.microbatches = microbatches;
  plan.stageBlocks.assign(stages, 2);
  plan.stageSeconds.assign(stages, 2.0);
  plan.forwardSeconds.assign(stages, 1.0);
  plan.inputGradSeconds.assign(stages, 0.5);
  plan.weightGradSeconds.assign(stages, 0.5);
  plan.activationBytes.assign(stages, 1 << 20);
  plan.inputGradFreedBytes.assign(stages, 0);
  plan.sentForwardBytes.assign(stages, sent);
  plan.sentForwardBytes.back() = 0;
  return plan;
}

TEST(PipelineReport, OneFOneBBubbleIsTheClosedForm) {
  // p = 4, m = 8, F = B = 1 s, nothing sent: T = 2 (m + p - 1) = 22 s and
  // every rank idles (p - 1) / (m + p - 1) = 3 / 11 of it.
  PipelinePlan plan = makeEqualStages("1F1B", 4, 4, 8, 0);
  PipelineTarget target;
  target.device = test::makeRoundDevice();
  target.stageSize = 2;
  target.flopsPerToken = 1e9;
  target.tokensPerMicrobatch = 1000;
  llvm::Expected<PipelineSchedule> schedule = generatePlanSchedule(plan);
  ASSERT_TRUE(bool(schedule)) << llvm::toString(schedule.takeError());
  llvm::Expected<PipelineReport> report =
      buildPipelineReport(plan, target, *schedule, plan.schedule);
  ASSERT_TRUE(bool(report)) << llvm::toString(report.takeError());
  EXPECT_EQ(report->transferSeconds, 0);
  const PipelinePrediction &configured = report->getConfigured();
  EXPECT_EQ(configured.name, "1F1B");
  EXPECT_DOUBLE_EQ(configured.simulation.stepSeconds, 22);
  EXPECT_DOUBLE_EQ(configured.simulation.averageBubbleFraction, 3.0 / 11);
  for (const RankTimeline &rank : configured.simulation.ranks)
    EXPECT_DOUBLE_EQ(rank.bubbleFraction, 3.0 / 11);
  // 8000 tokens per step over 4 x 2 ranks in 22 s; MFU of the f32 peak.
  EXPECT_DOUBLE_EQ(configured.tokensPerSecond, 1000.0 / 22);
  EXPECT_DOUBLE_EQ(configured.mfu, 1e9 * (1000.0 / 22) / 10e12);
  // GPipe's bubble is the same; the others run one stage per rank too.
  std::vector<std::string> names;
  for (const PipelinePrediction &prediction : report->predictions)
    names.push_back(prediction.name);
  EXPECT_THAT(names,
              testing::ElementsAre("1F1B", "Interleaved1F1B", "GPipe",
                                   "LoopedBFS", "InterleavedZeroBubble"));
  EXPECT_DOUBLE_EQ(report->predictions[2].simulation.averageBubbleFraction,
                   3.0 / 11);
  EXPECT_THAT(report->impossible, testing::ElementsAre("ZBVZeroBubble"));
}

TEST(PipelineReport, ReadsTheAttributeThePassWrites) {
  MLIRContext context;
  Builder b(&context);
  auto attr = b.getDictionaryAttr({
      b.getNamedAttr("degree", b.getI64IntegerAttr(2)),
      b.getNamedAttr("rank", b.getI64IntegerAttr(1)),
      b.getNamedAttr("schedule", b.getStringAttr("ZBVZeroBubble")),
      b.getNamedAttr("microbatches", b.getI64IntegerAttr(4)),
      b.getNamedAttr("stage_blocks", b.getDenseI64ArrayAttr({1, 1, 1, 1})),
      b.getNamedAttr("stage_seconds", b.getDenseF64ArrayAttr({3, 3, 3, 3})),
      b.getNamedAttr("forward_seconds", b.getDenseF64ArrayAttr({1, 1, 1, 1})),
      b.getNamedAttr("input_grad_seconds",
                     b.getDenseF64ArrayAttr({0, 1, 1, 1})),
      b.getNamedAttr("weight_grad_seconds",
                     b.getDenseF64ArrayAttr({2, 1, 1, 1})),
      b.getNamedAttr("activation_bytes", b.getDenseF64ArrayAttr({8, 8, 8, 8})),
      b.getNamedAttr("input_grad_freed_bytes",
                     b.getDenseF64ArrayAttr({0, 4, 4, 4})),
      b.getNamedAttr("sent_forward_bytes",
                     b.getDenseF64ArrayAttr({2, 2, 2, 0})),
  });
  llvm::Expected<PipelinePlan> plan = parsePipelinePlan(attr);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->rank, 1);
  EXPECT_EQ(plan->schedule, "ZBVZeroBubble");
  EXPECT_EQ(plan->getNumStages(), 4);
  EXPECT_THAT(plan->inputGradFreedBytes, testing::ElementsAre(0, 4, 4, 4));

  auto shortArray = b.getDictionaryAttr(
      llvm::map_to_vector(attr.getValue(), [&](NamedAttribute entry) {
        return entry.getName() == "activation_bytes"
                   ? b.getNamedAttr("activation_bytes",
                                    b.getDenseF64ArrayAttr({8, 8}))
                   : entry;
      }));
  llvm::Expected<PipelinePlan> refused = parsePipelinePlan(shortArray);
  ASSERT_FALSE(bool(refused));
  EXPECT_EQ(llvm::toString(refused.takeError()),
            "titan.pipeline: 'activation_bytes' has 2 entries for 4 stages");
}

TEST(PipelineReport, WritesTheStagesAndTheSchedules) {
  // 2 stages on 2 pp ranks, 2 microbatches, 1 MiB sent between them over
  // the inter-node link (4 ranks per node, stages of 4 ranks): 10 us +
  // 1 MiB / 10 GB/s = 114.9 us per transfer t. 1F1B: rank 0 runs F0 F1
  // from 0 s and keeps both (2 MiB); rank 1 runs F0 B0 F1 B1 from 1 + t;
  // rank 0's B0 starts at 3 + 2t, its B1 ends the step at 6 + 2t: each
  // rank busy 4 s, a bubble of 1/3, 8192 tokens over 8 ranks, 170.66
  // tokens/s per device. InterleavedZeroBubble splits the backwards (I and
  // W of 0.5 s) and fills the gap: 5 s, a bubble of 1/5.
  PipelinePlan plan = makeEqualStages("1F1B", 2, 2, 2, 1 << 20);
  PipelineTarget target;
  target.device = test::makeRoundDevice();
  target.ranksPerNode = 4;
  target.stageSize = 4;
  target.flopsPerToken = 1e9;
  target.tokensPerMicrobatch = 4096;
  target.matmulType = ElementType::BF16;
  target.stateBytesPerRank = {3.0 * (1 << 20), std::nullopt};
  llvm::Expected<PipelineSchedule> schedule = generatePlanSchedule(plan);
  ASSERT_TRUE(bool(schedule)) << llvm::toString(schedule.takeError());
  llvm::Expected<PipelineReport> report =
      buildPipelineReport(plan, target, *schedule, plan.schedule);
  ASSERT_TRUE(bool(report)) << llvm::toString(report.takeError());
  std::string text;
  llvm::raw_string_ostream os(text);
  writePipelineReport(*report, os);
  EXPECT_EQ(text, R"(
== Pipeline stages (cost model; device round: round figures, 4 ranks per node) ==
  per microbatch on one rank of a stage; backward: input and weight gradients; activations: kept from the forward for the backward
  stage pp rank blocks  forward ms  backward ms  activations MiB
      0       0      2    1000.000     1000.000             1.00
      1       1      2    1000.000     1000.000             1.00
  between stages on two pp ranks: 1.00 MiB per microbatch each way, 114.9 us on the inter-node link (10.0 GB/s, 10.0 us latency)

== Pipeline schedule 1F1B: 2 stages on 2 pp ranks, 2 microbatches (simulated step) ==
  step time  6.000 s (every microbatch's forward and backward with the transfers between stages; the optimizer and once-per-step collectives are not simulated)
  bubble     33.3% on average over the pp ranks
  pp rank  stages         busy  bubble peak activations      state  activations + state
        0  0           4.000 s   33.3%         2.00 MiB   3.00 MiB             5.00 MiB
        1  1           4.000 s   33.3%         1.00 MiB          -                    -
  (state: the rank's parameters, optimizer state and buffers; the parameters FSDP gathers, gradients and temporaries are not counted)
  tokens/s   170.66 per device (8.19 k tokens per step over 8 ranks)
  MFU        0.2% (170.66 GFLOP/s per device of the bf16 matmul peak, 100.00 TFLOP/s; torchtitan's 1.00 GFLOPs per token)

== Pipeline schedules for 2 stages on 2 pp ranks, 2 microbatches (the same stage costs) ==
  schedule                         step  bubble peak activations  tokens/s per device    MFU
  1F1B (configured)             6.000 s   33.3%         2.00 MiB               170.66   0.2%
  Interleaved1F1B               6.000 s   33.3%         2.00 MiB               170.66   0.2%
  GPipe                         6.000 s   33.3%         2.00 MiB               170.66   0.2%
  LoopedBFS                     6.000 s   33.3%         2.00 MiB               170.66   0.2%
  InterleavedZeroBubble         5.000 s   20.0%         2.00 MiB               204.79   0.2%
  (peak activations: of the pp rank that keeps the most)
  not with 1 stage per rank: ZBVZeroBubble
)");
}

} // namespace
