//===- SimulatorTest.cpp - timing and memory of pipeline schedules --------===//

#include "titan/PipelineSchedule/Simulator.h"

#include "Helpers.h"

#include "llvm/Support/JSON.h"

using namespace mlir::titan;
using namespace mlir::titan::test;

namespace {

using Kind = PipelineScheduleKind;

/// Costs of `numStages` equal stages: forward and backward of `seconds`
/// each (an I and a W of half of it), `activationBytes` per microbatch.
PipelineCosts equalCosts(int64_t numStages, double seconds,
                         double activationBytes = 0) {
  PipelineCosts costs;
  costs.stages.assign(numStages, StageCost{seconds, seconds / 2, seconds / 2,
                                           activationBytes, 0});
  return costs;
}

PipelineSimulation simulate(const PipelineSchedule &schedule,
                            const PipelineCosts &costs) {
  llvm::Expected<PipelineSimulation> simulation =
      simulatePipeline(schedule, costs);
  if (!simulation) {
    ADD_FAILURE() << llvm::toString(simulation.takeError());
    return {};
  }
  return std::move(*simulation);
}

TEST(SimulatorTest, GPipeAndOneFOneBBubblesAreTheClosedForm) {
  // Equal F and B times t per stage, no transfer time: both take
  // (m + p - 1) x 2t, of which each rank computes m x 2t, so every rank
  // idles (p - 1) / (m + p - 1) of the step.
  for (Kind kind : {Kind::GPipe, Kind::OneFOneB})
    for (auto [p, m] : {std::pair(2, 2), std::pair(4, 4), std::pair(4, 8),
                        std::pair(4, 32), std::pair(8, 16)}) {
      SCOPED_TRACE(getPipelineScheduleKindName(kind).str() +
                   " p=" + std::to_string(p) + " m=" + std::to_string(m));
      PipelineSimulation simulation =
          simulate(generate(kind, p, 1, m), equalCosts(p, 1.0));
      double bubble = (p - 1.0) / (m + p - 1.0);
      EXPECT_DOUBLE_EQ(simulation.stepSeconds, 2.0 * (m + p - 1));
      EXPECT_DOUBLE_EQ(simulation.averageBubbleFraction, bubble);
      for (const RankTimeline &rank : simulation.ranks) {
        EXPECT_DOUBLE_EQ(rank.busySeconds, 2.0 * m);
        EXPECT_DOUBLE_EQ(rank.bubbleFraction, bubble);
      }
    }
}

TEST(SimulatorTest, InterleavingDividesTheBubbleByTheStagesPerRank) {
  // A model of p x t seconds per microbatch (each way) cut into p x v
  // chunks of t / v: Interleaved1F1B idles (p - 1) / (v m + p - 1).
  for (auto [p, v, m] :
       {std::tuple(2, 2, 4), std::tuple(4, 2, 8), std::tuple(4, 4, 8),
        std::tuple(4, 2, 16), std::tuple(8, 2, 16), std::tuple(2, 3, 6)}) {
    SCOPED_TRACE("p=" + std::to_string(p) + " v=" + std::to_string(v) +
                 " m=" + std::to_string(m));
    PipelineSimulation simulation = simulate(
        generate(Kind::Interleaved1F1B, p, v, m), equalCosts(p * v, 1.0 / v));
    double bubble = (p - 1.0) / (v * m + p - 1.0);
    EXPECT_NEAR(simulation.averageBubbleFraction, bubble, 1e-12);
    for (const RankTimeline &rank : simulation.ranks)
      EXPECT_NEAR(rank.bubbleFraction, bubble, 1e-12);
  }
}

TEST(SimulatorTest, OneFOneBHoldsFewerActivationsThanGPipe) {
  // 100 bytes per microbatch's activations, 1000 static bytes per rank:
  // 1F1B keeps p - r microbatches in flight on rank r, GPipe all m.
  int64_t p = 4, m = 8;
  PipelineCosts costs = equalCosts(p, 1.0, 100);
  costs.staticBytesPerRank.assign(p, 1000);
  PipelineSimulation gpipe = simulate(generate(Kind::GPipe, p, 1, m), costs);
  PipelineSimulation oneFOneB =
      simulate(generate(Kind::OneFOneB, p, 1, m), costs);
  for (int64_t rank = 0; rank < p; ++rank) {
    EXPECT_DOUBLE_EQ(gpipe.ranks[rank].peakBytes, 1000 + 100 * m);
    EXPECT_DOUBLE_EQ(oneFOneB.ranks[rank].peakBytes, 1000 + 100 * (p - rank));
    // The peak comes with the last F that adds to it: GPipe's last forward
    // starts at r + m - 1; 1F1B's last warm-up forward at r + (p - r - 1).
    EXPECT_DOUBLE_EQ(gpipe.ranks[rank].peakSeconds, rank + m - 1);
    EXPECT_DOUBLE_EQ(oneFOneB.ranks[rank].peakSeconds, p - 1);
  }
  // Every byte is freed by the end.
  EXPECT_DOUBLE_EQ(oneFOneB.ranks[0].memory.back().bytes, 1000);
}

TEST(SimulatorTest, SplitBackwardFreesInTwoSteps) {
  // One rank, one stage: F (1 s) keeps 100 bytes, I (2 s) frees 40 of them,
  // W (3 s) the other 60.
  PipelineSchedule schedule = makeSchedule(1, 1, {"0F0 0I0 0W0"});
  PipelineCosts costs;
  costs.stages = {StageCost{1, 2, 3, 100, 40}};
  costs.staticBytesPerRank = {10};
  PipelineSimulation simulation = simulate(schedule, costs);
  const RankTimeline &rank = simulation.ranks[0];
  ASSERT_EQ(rank.memory.size(), 4u);
  std::vector<std::pair<double, double>> memory;
  for (const MemorySample &sample : rank.memory)
    memory.emplace_back(sample.seconds, sample.bytes);
  EXPECT_EQ(memory, (std::vector<std::pair<double, double>>{
                        {0, 10}, {0, 110}, {3, 70}, {6, 10}}));
  EXPECT_DOUBLE_EQ(rank.peakBytes, 110);
  EXPECT_DOUBLE_EQ(simulation.stepSeconds, 6);
  EXPECT_DOUBLE_EQ(rank.bubbleFraction, 0);
}

TEST(SimulatorTest, TransfersDelayConsumersOnOtherRanksOnly) {
  // GPipe over 2 ranks, one microbatch, F = B = 1 s, 0.5 s per transfer:
  // 0F0 [0, 1], 1F0 [1.5, 2.5], 1B0 [2.5, 3.5], 0B0 [4, 5].
  PipelineCosts costs = equalCosts(2, 1.0);
  costs.transferSeconds = 0.5;
  PipelineSimulation simulation =
      simulate(generate(Kind::GPipe, 2, 1, 1), costs);
  EXPECT_DOUBLE_EQ(simulation.ranks[1].actions[0].startSeconds, 1.5);
  EXPECT_DOUBLE_EQ(simulation.ranks[0].actions[1].startSeconds, 4);
  EXPECT_DOUBLE_EQ(simulation.stepSeconds, 5);
  // ZBV's V: stage 1 -> 2 stays on rank 1 (p = 2), so only 0 -> 1 and
  // 2 -> 3 cross ranks: a forward through all 4 stages pays 2 transfers.
  PipelineCosts vCosts = equalCosts(4, 1.0);
  vCosts.transferSeconds = 0.5;
  PipelineSimulation v =
      simulate(generate(Kind::ZBVZeroBubble, 2, 2, 1), vCosts);
  // Rank 0's 3F0 starts after 0F0 [0, 1], 1F0 [1.5, 2.5], 2F0 [2.5, 3.5]
  // and one transfer.
  const TimedAction &lastForward = v.ranks[0].actions[1];
  EXPECT_EQ(formatPipelineAction(lastForward.action), "3F0");
  EXPECT_DOUBLE_EQ(lastForward.startSeconds, 4);
}

TEST(SimulatorTest, ReceivesArePostedOrBlock) {
  // 1F1B p = 2, m = 2 with its sends and receives (rank 1: 1RECV_F0 1F0
  // 1RECV_F1 1B0 1SEND_B0 1F1 1B1 1SEND_B1), F = B = 1 s, 0.5 s per
  // transfer. Without transfer actions: rank 1 runs 1F0 [1.5, 2.5], 1B0
  // [2.5, 3.5], 1F1 [3.5, 4.5], 1B1 [4.5, 5.5]; rank 0 ends with 0B1
  // [6, 7].
  PipelineCosts costs = equalCosts(2, 1.0);
  costs.transferSeconds = 0.5;
  PipelineSchedule computeOnly = generate(Kind::OneFOneB, 2, 1, 2);
  EXPECT_DOUBLE_EQ(simulate(computeOnly, costs).stepSeconds, 7);
  llvm::Expected<PipelineSchedule> schedule = insertCommunication(computeOnly);
  ASSERT_TRUE(static_cast<bool>(schedule));

  // Posted as torch's irecv: the same times, receives taking none.
  PipelineSimulation posted = simulate(*schedule, costs);
  EXPECT_DOUBLE_EQ(posted.stepSeconds, 7);
  const TimedAction &firstForward = posted.ranks[1].actions[1];
  EXPECT_EQ(formatPipelineAction(firstForward.action), "1F0");
  EXPECT_DOUBLE_EQ(firstForward.startSeconds, 1.5);
  EXPECT_DOUBLE_EQ(posted.ranks[1].actions[0].endSeconds, 0);

  // Blocking: 1RECV_F1, reached at 2.5, holds rank 1 until 0F1's output
  // arrives at 3 (the transfer starts when both sides are posted), so 1B0
  // runs [3, 4] and the step ends at 7.5.
  llvm::Expected<PipelineSimulation> blocking =
      simulatePipeline(*schedule, costs, ReceiveMode::Blocking);
  ASSERT_TRUE(static_cast<bool>(blocking));
  const TimedAction &receive = blocking->ranks[1].actions[2];
  EXPECT_EQ(formatPipelineAction(receive.action), "1RECV_F1");
  EXPECT_DOUBLE_EQ(receive.startSeconds, 2.5);
  EXPECT_DOUBLE_EQ(receive.endSeconds, 3);
  EXPECT_DOUBLE_EQ(blocking->ranks[1].actions[3].startSeconds, 3);
  EXPECT_DOUBLE_EQ(blocking->stepSeconds, 7.5);
  // Receiving is waiting, not work.
  EXPECT_DOUBLE_EQ(blocking->ranks[1].busySeconds, 4);
}

TEST(SimulatorTest, PostedTransfersCostNothingWhenInstant) {
  // With zero transfer time, torch's send/recv placement changes no time:
  // every receive is posted before the compute that needs it.
  for (auto [kind, p, v, m] : {std::tuple(Kind::OneFOneB, 4, 1, 8),
                               std::tuple(Kind::Interleaved1F1B, 4, 2, 8),
                               std::tuple(Kind::InterleavedZeroBubble, 4, 2, 8),
                               std::tuple(Kind::ZBVZeroBubble, 4, 2, 8),
                               std::tuple(Kind::LoopedBFS, 3, 2, 5)}) {
    SCOPED_TRACE(getPipelineScheduleKindName(kind).str());
    PipelineSchedule schedule = generate(kind, p, v, m);
    PipelineCosts costs;
    costs.stages.assign(p * v, StageCost{1.0, 2.0, 1.5, 0, 0});
    llvm::Expected<PipelineSchedule> withTransfers =
        insertCommunication(schedule);
    ASSERT_TRUE(static_cast<bool>(withTransfers));
    EXPECT_DOUBLE_EQ(simulate(*withTransfers, costs).stepSeconds,
                     simulate(schedule, costs).stepSeconds);
  }
}

TEST(SimulatorTest, ADeadlockNamesWhereEachRankIsStuck) {
  // Rank 1 starts with microbatch 1, which rank 0 only forwards after the
  // backward of microbatch 0, which needs rank 1's 1B0.
  PipelineSchedule schedule =
      makeSchedule(1, 2, {"0F0 0B0 0F1 0B1", "1F1 1B1 1F0 1B0"});
  EXPECT_EQ(messageOf(simulatePipeline(schedule, equalCosts(2, 1.0))),
            "the pipeline schedule cannot complete: its ranks wait for each "
            "other in a cycle: rank 0 is stuck at cell 1 '0B0', waiting for "
            "1B0 or 1I0 on rank 1; rank 1 is stuck at cell 0 '1F1', waiting "
            "for 0F1 on rank 0");
}

TEST(SimulatorTest, CostsAreChecked) {
  PipelineSchedule schedule = generate(Kind::GPipe, 2, 1, 2);
  EXPECT_EQ(messageOf(simulatePipeline(schedule, equalCosts(3, 1.0))),
            "pipeline costs: 3 stage costs for a schedule of 2 stages: give "
            "one per stage");
  PipelineCosts costs = equalCosts(2, 1.0, 10);
  costs.stages[1].backwardInputFreedBytes = 20;
  EXPECT_EQ(messageOf(simulatePipeline(schedule, costs)),
            "pipeline costs: stage 1: backwardInputFreedBytes (20) exceeds "
            "activationBytes (10): an I frees part of what the F kept");
  costs = equalCosts(2, 1.0);
  costs.stages[0].forwardSeconds = -1;
  EXPECT_EQ(messageOf(simulatePipeline(schedule, costs)),
            "pipeline costs: stage 0: forwardSeconds is -1; it must be finite "
            "and non-negative");
  costs = equalCosts(2, 1.0);
  costs.staticBytesPerRank = {1};
  EXPECT_EQ(messageOf(simulatePipeline(schedule, costs)),
            "pipeline costs: 1 static byte counts for 2 pp ranks: give one "
            "per rank, or none");
}

TEST(SimulatorTest, ChromeTraceHasOneTrackPerRank) {
  PipelineCosts costs = equalCosts(2, 1e-3, 64);
  PipelineSimulation simulation =
      simulate(generate(Kind::OneFOneB, 2, 1, 2), costs);
  std::string text;
  llvm::raw_string_ostream os(text);
  writeChromeTrace(simulation, os);
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  ASSERT_TRUE(static_cast<bool>(json)) << llvm::toString(json.takeError());
  const llvm::json::Array *events =
      json->getAsObject()->getArray("traceEvents");
  ASSERT_NE(events, nullptr);
  std::vector<std::string> rankNames, rank1Actions;
  for (const llvm::json::Value &value : *events) {
    const llvm::json::Object &event = *value.getAsObject();
    llvm::StringRef phase = *event.getString("ph");
    if (phase == "M" && *event.getString("name") == "process_name")
      rankNames.push_back(event.getObject("args")->getString("name")->str());
    if (phase == "X" && *event.getInteger("pid") == 1)
      rank1Actions.push_back(event.getString("name")->str());
  }
  EXPECT_EQ(rankNames, (std::vector<std::string>{"pp rank 0", "pp rank 1"}));
  EXPECT_EQ(rank1Actions,
            (std::vector<std::string>{"F0 s1", "B0 s1", "F1 s1", "B1 s1"}));
  // Microseconds: rank 1's first backward starts at 2 ms.
  for (const llvm::json::Value &value : *events) {
    const llvm::json::Object &event = *value.getAsObject();
    if (event.getString("name") == llvm::StringRef("B0 s1")) {
      EXPECT_DOUBLE_EQ(*event.getNumber("ts"), 2000);
      EXPECT_DOUBLE_EQ(*event.getNumber("dur"), 1000);
    }
  }
}

} // namespace
