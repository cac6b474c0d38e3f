//===- OverlapTimelineTest.cpp - a rank's step with async collectives -----===//
//
// simulateOverlap on programs small enough to time by hand, on the device of
// round figures with every rank on one node (100 GB/s, 2 us per ring step):
//
// - G, an all_gather of a 64 x 256 f32 shard over 2 ranks: 1 ring step of
//   2 us + 65536 B / 100 GB/s = 2.65536 us;
// - S, an exp of 64 x 256 f32: 131072 B read and written at 0.5 TB/s =
//   0.262144 us (its 16384 FLOPs at 5 TFLOP/s take less), + 1 us =
//   1.262144 us, shorter than G;
// - L, an exp of 1024 x 256 f32: 2 MiB at 0.5 TB/s = 4.194304 us, + 1 us =
//   5.194304 us, longer than G.
//
//===----------------------------------------------------------------------===//

#include "titan/Report/OverlapTimeline.h"

#include "../CostModel/RoundDevice.h"

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/JSON.h"

#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::titan;
using testing::HasSubstr;
using testing::Not;

namespace {

constexpr double kG = 2.65536e-6;
constexpr double kS = 1.262144e-6;
constexpr double kL = 5.194304e-6;
/// Sums of a few terms of microseconds: exact to far below a picosecond.
constexpr double kTolerance = 1e-15;

/// The program `body` on a rank of a [dp=2, tp=2] mesh, with a 64 x 256
/// shard %w, a 64 x 256 %x and a 1024 x 256 %y.
std::string makeProgram(StringRef body) {
  return (R"mlir(
titan.mesh @mesh ["dp"=2, "tp"=2]
func.func @train_step(%w: tensor<64x256xf32>, %x: tensor<64x256xf32>,
                      %y: tensor<1024x256xf32>) {
)mlir" + body +
          R"mlir(
  return
}
)mlir")
      .str();
}

class OverlapTimelineTest : public testing::Test {
protected:
  OverlapTimelineTest() {
    context.loadDialect<TitanDialect, func::FuncDialect>();
  }

  /// Simulates makeProgram(`body`) with every rank on one node.
  OverlapTimeline simulate(StringRef body) {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(makeProgram(body), &context);
    EXPECT_TRUE(module);
    if (!module)
      return {};
    FailureOr<OverlapTimeline> timeline =
        simulateOverlap(*module, test::makeRoundDevice(), /*ranksPerNode=*/0);
    EXPECT_TRUE(succeeded(timeline));
    return succeeded(timeline) ? *timeline : OverlapTimeline();
  }

  MLIRContext context;
};

TEST_F(OverlapTimelineTest, SynchronousCollectiveIsExposed) {
  OverlapTimeline timeline = simulate(R"mlir(
  %a = titan.exp %x : tensor<64x256xf32>
  %g = titan.all_gather %w on @mesh ["dp"] dim 0
      : tensor<64x256xf32> -> tensor<128x256xf32>
  %b = titan.exp %x : tensor<64x256xf32>
)mlir");
  EXPECT_NEAR(timeline.step.compute, 2 * kS, kTolerance);
  EXPECT_NEAR(timeline.step.communication, kG, kTolerance);
  EXPECT_NEAR(timeline.step.exposed, kG, kTolerance);
  EXPECT_NEAR(timeline.stepSeconds, 2 * kS + kG, kTolerance);
  // The ops without a phase count in the forward.
  EXPECT_NEAR(timeline.getPhaseSeconds(Phase::Forward).exposed, kG, kTolerance);
  ASSERT_EQ(timeline.communicators.size(), 1u);
  EXPECT_EQ(timeline.communicators[0].axes, "dp");
  EXPECT_EQ(timeline.communicators[0].count, 1);
  EXPECT_EQ(timeline.communicators[0].asynchronous, 0);
  EXPECT_NEAR(timeline.communicators[0].exposed, kG, kTolerance);
  // exp, the all_gather on its stream, compute waiting for it, exp.
  ASSERT_EQ(timeline.events.size(), 4u);
  const TimelineEvent &gather = timeline.events[1];
  EXPECT_EQ(gather.kind, TimelineEventKind::Collective);
  EXPECT_EQ(gather.stream, 0);
  EXPECT_EQ(gather.name, "all_gather");
  EXPECT_FALSE(gather.asynchronous);
  EXPECT_NEAR(gather.startSeconds, kS, kTolerance);
  EXPECT_NEAR(gather.endSeconds, kS + kG, kTolerance);
  const TimelineEvent &waiting = timeline.events[2];
  EXPECT_EQ(waiting.kind, TimelineEventKind::Exposed);
  EXPECT_EQ(waiting.stream, OverlapTimeline::kComputeStream);
  EXPECT_EQ(waiting.name, "wait for all_gather");
  EXPECT_NEAR(waiting.startSeconds, kS, kTolerance);
  EXPECT_NEAR(waiting.endSeconds, kS + kG, kTolerance);
  EXPECT_NEAR(timeline.events[3].startSeconds, kS + kG, kTolerance);
}

TEST_F(OverlapTimelineTest, AsyncBehindLongerComputeIsHidden) {
  OverlapTimeline timeline = simulate(R"mlir(
  %g = titan.all_gather %w on @mesh ["dp"] dim 0 {titan.async}
      : tensor<64x256xf32> -> tensor<128x256xf32>
  %a = titan.exp %y : tensor<1024x256xf32>
  %gw = titan.wait %g : tensor<128x256xf32>
)mlir");
  EXPECT_NEAR(timeline.step.compute, kL, kTolerance);
  EXPECT_NEAR(timeline.step.communication, kG, kTolerance);
  EXPECT_EQ(timeline.step.exposed, 0.0);
  EXPECT_NEAR(timeline.stepSeconds, kL, kTolerance);
  ASSERT_EQ(timeline.communicators.size(), 1u);
  EXPECT_EQ(timeline.communicators[0].asynchronous, 1);
  // The all_gather and the exp start together; no wait.
  ASSERT_EQ(timeline.events.size(), 2u);
  EXPECT_TRUE(timeline.events[0].asynchronous);
  EXPECT_EQ(timeline.events[0].startSeconds, 0.0);
  EXPECT_EQ(timeline.events[1].startSeconds, 0.0);
}

TEST_F(OverlapTimelineTest, AsyncBehindShorterComputeExposesTheRest) {
  OverlapTimeline timeline = simulate(R"mlir(
  %g = titan.all_gather %w on @mesh ["dp"] dim 0 {titan.async}
      : tensor<64x256xf32> -> tensor<128x256xf32>
  %a = titan.exp %x : tensor<64x256xf32>
  %gw = titan.wait %g : tensor<128x256xf32>
)mlir");
  // 2.65536 - 1.262144 = 1.393216 us.
  EXPECT_NEAR(timeline.step.exposed, kG - kS, kTolerance);
  EXPECT_NEAR(timeline.stepSeconds, kG, kTolerance);
}

TEST_F(OverlapTimelineTest, OneCommunicatorRunsItsCollectivesInOrder) {
  OverlapTimeline timeline = simulate(R"mlir(
  %g1 = titan.all_gather %w on @mesh ["dp"] dim 0 {titan.async}
      : tensor<64x256xf32> -> tensor<128x256xf32>
  %g2 = titan.all_gather %x on @mesh ["dp"] dim 0 {titan.async}
      : tensor<64x256xf32> -> tensor<128x256xf32>
  %a = titan.exp %x : tensor<64x256xf32>
  %w1 = titan.wait %g1 : tensor<128x256xf32>
  %w2 = titan.wait %g2 : tensor<128x256xf32>
)mlir");
  // The second all_gather runs from G to 2G; compute waits G - S for the
  // first, then G for the second.
  ASSERT_EQ(timeline.communicators.size(), 1u);
  EXPECT_NEAR(timeline.events[1].startSeconds, kG, kTolerance);
  EXPECT_NEAR(timeline.events[1].endSeconds, 2 * kG, kTolerance);
  EXPECT_NEAR(timeline.step.exposed, 2 * kG - kS, kTolerance);
  EXPECT_NEAR(timeline.stepSeconds, 2 * kG, kTolerance);
}

TEST_F(OverlapTimelineTest, TwoCommunicatorsRunConcurrently) {
  OverlapTimeline timeline = simulate(R"mlir(
  %g1 = titan.all_gather %w on @mesh ["dp"] dim 0 {titan.async}
      : tensor<64x256xf32> -> tensor<128x256xf32>
  %g2 = titan.all_gather %x on @mesh ["tp"] dim 0 {titan.async}
      : tensor<64x256xf32> -> tensor<128x256xf32>
  %a = titan.exp %x : tensor<64x256xf32>
  %w1 = titan.wait %g1 : tensor<128x256xf32>
  %w2 = titan.wait %g2 : tensor<128x256xf32>
)mlir");
  ASSERT_EQ(timeline.communicators.size(), 2u);
  EXPECT_EQ(timeline.communicators[1].axes, "tp");
  EXPECT_EQ(timeline.events[1].stream, 1);
  EXPECT_EQ(timeline.events[1].startSeconds, 0.0);
  EXPECT_NEAR(timeline.step.exposed, kG - kS, kTolerance);
  EXPECT_NEAR(timeline.communicators[0].exposed, kG - kS, kTolerance);
  EXPECT_EQ(timeline.communicators[1].exposed, 0.0);
  EXPECT_NEAR(timeline.stepSeconds, kG, kTolerance);
}

TEST_F(OverlapTimelineTest, SynchronousCollectiveWaitsForTheQueue) {
  OverlapTimeline timeline = simulate(R"mlir(
  %g1 = titan.all_gather %w on @mesh ["dp"] dim 0 {titan.async}
      : tensor<64x256xf32> -> tensor<128x256xf32>
      loc(fused<"titan.phase.forward">[unknown])
  %a = titan.exp %x : tensor<64x256xf32>
  %g2 = titan.all_gather %x on @mesh ["dp"] dim 0
      : tensor<64x256xf32> -> tensor<128x256xf32>
      loc(fused<"titan.phase.backward">[unknown])
  %w1 = titan.wait %g1 : tensor<128x256xf32>
)mlir");
  // At S the queue still runs the first all_gather up to G (exposed G - S,
  // the forward's); the second runs from G to 2G (exposed G, the
  // backward's); the wait for the first is free.
  EXPECT_NEAR(timeline.getPhaseSeconds(Phase::Forward).exposed, kG - kS,
              kTolerance);
  EXPECT_NEAR(timeline.getPhaseSeconds(Phase::Backward).exposed, kG,
              kTolerance);
  EXPECT_NEAR(timeline.step.exposed, 2 * kG - kS, kTolerance);
  EXPECT_NEAR(timeline.stepSeconds, 2 * kG, kTolerance);
  ASSERT_EQ(timeline.communicators.size(), 1u);
  EXPECT_EQ(timeline.communicators[0].count, 2);
  EXPECT_EQ(timeline.communicators[0].asynchronous, 1);
}

TEST_F(OverlapTimelineTest, ChromeTraceNamesTheStreams) {
  OverlapTimeline timeline = simulate(R"mlir(
  %g1 = titan.all_gather %w on @mesh ["dp"] dim 0 {titan.async}
      : tensor<64x256xf32> -> tensor<128x256xf32>
      loc(fused<"titan.module.layers.0.wq">[unknown])
  %g2 = titan.all_gather %x on @mesh ["tp"] dim 0
      : tensor<64x256xf32> -> tensor<128x256xf32>
  %w1 = titan.wait %g1 : tensor<128x256xf32>
)mlir");
  std::string text;
  llvm::raw_string_ostream os(text);
  writeOverlapTrace(timeline, os);
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  const llvm::json::Array *events =
      parsed->getAsObject()->getArray("traceEvents");
  ASSERT_TRUE(events);
  std::map<int64_t, std::string> threads;
  std::vector<const llvm::json::Object *> spans;
  for (const llvm::json::Value &value : *events) {
    const llvm::json::Object &event = *value.getAsObject();
    EXPECT_EQ(event.getInteger("pid"), 0);
    if (event.getString("name") == "thread_name")
      threads[*event.getInteger("tid")] =
          event.getObject("args")->getString("name")->str();
    if (event.getString("ph") == "X")
      spans.push_back(&event);
  }
  EXPECT_EQ(threads,
            (std::map<int64_t, std::string>{{0, "compute"},
                                            {1, "communication (dp)"},
                                            {2, "communication (tp)"}}));
  // Both all_gathers start at 0 on their threads; compute waits for the
  // synchronous one (G us) on thread 0.
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0]->getString("name"), "all_gather");
  EXPECT_EQ(spans[0]->getInteger("tid"), 1);
  EXPECT_EQ(spans[0]->getString("cat"), "communication");
  EXPECT_EQ(spans[0]->getObject("args")->getString("module"), "layers.0.wq");
  EXPECT_EQ(spans[0]->getObject("args")->getBoolean("async"), true);
  EXPECT_EQ(spans[1]->getInteger("tid"), 2);
  EXPECT_EQ(spans[2]->getString("cat"), "exposed");
  EXPECT_EQ(spans[2]->getInteger("tid"), 0);
  EXPECT_NEAR(*spans[2]->getNumber("dur"), kG * 1e6, 1e-9);
}

/// Two blocks of a forward, each gathering its weight and computing.
const char *kTwoBlocks = R"mlir(
#f0 = loc(fused<"titan.phase.forward">[fused<"titan.module.layers.0.w">[unknown]])
#f1 = loc(fused<"titan.phase.forward">[fused<"titan.module.layers.1.w">[unknown]])
titan.mesh @mesh ["dp"=2]
func.func @train_step(%w0: tensor<64x256xf32>, %w1: tensor<64x256xf32>,
                      %y: tensor<1024x256xf32>)
    -> (tensor<128x256xf32>, tensor<128x256xf32>, tensor<1024x256xf32>) {
  %g0 = titan.all_gather %w0 on @mesh ["dp"] dim 0
      : tensor<64x256xf32> -> tensor<128x256xf32> loc(#f0)
  %a0 = titan.exp %g0 : tensor<128x256xf32> loc(#f0)
  %y0 = titan.exp %y : tensor<1024x256xf32> loc(#f0)
  %g1 = titan.all_gather %w1 on @mesh ["dp"] dim 0
      : tensor<64x256xf32> -> tensor<128x256xf32> loc(#f1)
  %a1 = titan.exp %g1 : tensor<128x256xf32> loc(#f1)
  %y1 = titan.exp %y0 : tensor<1024x256xf32> loc(#f1)
  return %a0, %a1, %y1
      : tensor<128x256xf32>, tensor<128x256xf32>, tensor<1024x256xf32>
}
)mlir";

TEST(OverlapComparison, DiffersOnlyByThePass) {
  MLIRContext context;
  context.loadDialect<TitanDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kTwoBlocks, &context);
  ASSERT_TRUE(module);
  DeviceDescription device = test::makeRoundDevice();
  TitanPipelineOptions options;
  options.overlap = ScheduleOverlapPassOptions{};
  FailureOr<OverlapComparison> comparison =
      compareOverlap(*module, options, device, 0);
  ASSERT_TRUE(succeeded(comparison));
  ASSERT_TRUE(comparison->after);
  const OverlapTimeline &before = comparison->before;
  const OverlapTimeline &after = *comparison->after;
  // Both gathers are synchronous before the pass; after it some run behind
  // the blocks' exps (which, is the pass's choice: pinned by its own
  // tests). The ops and their times are the same.
  EXPECT_NEAR(before.step.exposed, 2 * kG, kTolerance);
  EXPECT_LT(after.step.exposed, before.step.exposed);
  EXPECT_LT(after.stepSeconds, before.stepSeconds);
  EXPECT_NEAR(after.step.compute, before.step.compute, kTolerance);
  EXPECT_NEAR(after.step.communication, before.step.communication, kTolerance);
  EXPECT_EQ(before.communicators[0].asynchronous, 0);
  EXPECT_GE(after.communicators[0].asynchronous, 1);
  // The module itself is unchanged.
  EXPECT_FALSE(module
                   ->walk([](Operation *op) {
                     return op->hasAttr(TitanDialect::kAsyncAttrName)
                                ? WalkResult::interrupt()
                                : WalkResult::advance();
                   })
                   .wasInterrupted());

  std::string text;
  llvm::raw_string_ostream os(text);
  writeOverlapReport(*comparison, os);
  EXPECT_THAT(text,
              HasSubstr("\n== Communication overlap (titan-schedule-overlap) "
                        "==\n"));
  EXPECT_THAT(text, HasSubstr("  phase           compute  communication  "
                              "exposed before   exposed after\n"));
  EXPECT_THAT(text, HasSubstr("  by mesh axes       link       collectives "
                              "asynchronous  communication  exposed before "
                              "  exposed after\n"));
  EXPECT_THAT(text, HasSubstr("    [dp]             intra-node           2 "));
  EXPECT_THAT(text, HasSubstr("  exposed communication 5.3 us before, "));

  // Without the pass: "before" alone.
  options.overlap.reset();
  comparison = compareOverlap(*module, options, device, 0);
  ASSERT_TRUE(succeeded(comparison));
  EXPECT_FALSE(comparison->after);
  text.clear();
  writeOverlapReport(*comparison, os);
  EXPECT_THAT(text, HasSubstr("titan-schedule-overlap is off"));
  EXPECT_THAT(text, Not(HasSubstr("exposed after")));
}

} // namespace
