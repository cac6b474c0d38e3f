//===- GeneratorsTest.cpp - torch's schedules, action by action -----------===//
//
// The expected orders are written out by hand from torch 2.6-2.7's
// torch/distributed/pipelining/schedules.py; each test says which code path
// it follows.
//
//===----------------------------------------------------------------------===//

#include "titan/PipelineSchedule/Simulator.h"

#include "Helpers.h"

using namespace mlir::titan;
using namespace mlir::titan::test;

namespace {

using Kind = PipelineScheduleKind;

TEST(GeneratorsTest, GPipeRunsEveryForwardThenEveryBackward) {
  // ScheduleGPipe._step_microbatches: all forwards, then all backwards.
  PipelineSchedule schedule = generate(Kind::GPipe, 2, 1, 3);
  EXPECT_EQ(render(schedule.ranks[0]), "0F0 0F1 0F2 0B0 0B1 0B2");
  EXPECT_EQ(render(schedule.ranks[1]), "1F0 1F1 1F2 1B0 1B1 1B2");
}

TEST(GeneratorsTest, OneFOneBWarmsUpThenAlternates) {
  // Schedule1F1B._step_microbatches: min(m, p - r) warm-up forwards, then
  // "1B1F" (a backward, then a forward while forwards remain), then the
  // remaining backwards. p = 4, m = 8: rank 0 warms up with 4 forwards, the
  // last rank with 1.
  PipelineSchedule schedule = generate(Kind::OneFOneB, 4, 1, 8);
  EXPECT_EQ(render(schedule.ranks[0]), "0F0 0F1 0F2 0F3 0B0 0F4 0B1 0F5 0B2 "
                                       "0F6 0B3 0F7 0B4 0B5 0B6 0B7");
  EXPECT_EQ(render(schedule.ranks[1]), "1F0 1F1 1F2 1B0 1F3 1B1 1F4 1B2 1F5 "
                                       "1B3 1F6 1B4 1F7 1B5 1B6 1B7");
  EXPECT_EQ(render(schedule.ranks[3]), "3F0 3B0 3F1 3B1 3F2 3B2 3F3 3B3 3F4 "
                                       "3B4 3F5 3B5 3F6 3B6 3F7 3B7");
}

TEST(GeneratorsTest, Interleaved1F1BFollowsTorchsRounds) {
  // ScheduleInterleaved1F1B._calculate_single_rank_operations with p = 2,
  // v = 2, m = 4: 2 rounds of 2 microbatches. Rank 0 (stages 0, 2): warm-up
  // (v-1) x 2 + 2 x (p-1-0) = 4 forwards on stages 0 0 2 2; forward step i
  // on local stage (i / 2) % 2, backward step i on 1 - ((i - 4) / 2) % 2.
  PipelineSchedule schedule = generate(Kind::Interleaved1F1B, 2, 2, 4);
  EXPECT_EQ(render(schedule.ranks[0]), "0F0 0F1 2F0 2F1 0F2 2B0 0F3 2B1 2F2 "
                                       "0B0 2F3 0B1 2B2 2B3 0B2 0B3");
  // Rank 1 (stages 1, 3): warm-up 2, so its first backward (stage 3) comes
  // right after the third forward.
  EXPECT_EQ(render(schedule.ranks[1]), "1F0 1F1 3F0 3B0 3F1 3B1 1F2 1B0 1F3 "
                                       "1B1 3F2 3B2 3F3 3B3 1B2 1B3");
}

TEST(GeneratorsTest, InterleavedZeroBubbleDefersWeights) {
  // ScheduleInterleavedZeroBubble with p = 2, v = 2, m = 4: warm-up
  // (v-1) x 2 + 1 x (p-1-r); backwards are I; from backward step r on, each
  // I is followed by the W of the oldest backward step still owed one.
  PipelineSchedule schedule = generate(Kind::InterleavedZeroBubble, 2, 2, 4);
  EXPECT_EQ(render(schedule.ranks[0]),
            "0F0 0F1 2F0 2F1 2I0 2W0 0F2 2I1 2W1 0F3 0I0 0W0 2F2 0I1 0W1 "
            "2F3 2I2 2W2 2I3 2W3 0I2 0W2 0I3 0W3");
  // Rank 1 skips the W after its first I, so it owes one W to the end.
  EXPECT_EQ(render(schedule.ranks[1]),
            "1F0 1F1 3F0 3I0 3F1 3I1 3W0 1F2 1I0 3W1 1F3 1I1 1W0 3F2 3I2 "
            "1W1 3F3 3I3 3W2 1I2 3W3 1I3 1W2 1W3");
}

TEST(GeneratorsTest, ZBVRunsAVOnEachRank) {
  // ScheduleZBVZeroBubble._calculate_single_rank_operations, p = 2, m = 4:
  // rank 0 holds stages 0 and 3. Warm-up 2(p-r)-1 = 3 forwards of stage 0,
  // no (F c1, F c0) pairs, p-r = 2 times (F 3, I 3, W 3); the stable phase
  // (F 0 while stage 0 has forwards left, I 0, W 0, F 3, I 3, W 3) runs
  // twice; the cool-down p-r = 2 times (I 0, W 0).
  PipelineSchedule schedule = generate(Kind::ZBVZeroBubble, 2, 2, 4);
  EXPECT_EQ(schedule.placement, StagePlacement::V);
  EXPECT_EQ(render(schedule.ranks[0]),
            "0F0 0F1 0F2 3F0 3I0 3W0 3F1 3I1 3W1 0F3 0I0 0W0 3F2 3I2 3W2 "
            "0I1 0W1 3F3 3I3 3W3 0I2 0W2 0I3 0W3");
  // Rank 1 holds stages 1 and 2: warm-up 1 forward of stage 1, one pair
  // (F 2, F 1), one (F 2, I 2, W 2), two stable rounds, cool-down (I 1,
  // I 2) once and (I 1, W 1) once, then the owed W of stage 2, then of 1.
  EXPECT_EQ(render(schedule.ranks[1]),
            "1F0 2F0 1F1 2F1 2I0 2W0 1F2 1I0 1W0 2F2 2I1 2W1 1F3 1I1 1W1 "
            "2F3 2I2 2W2 1I2 2I3 1I3 1W2 2W3 1W3");
}

TEST(GeneratorsTest, ZBVDropsTheMicrobatchesTorchPadsWith) {
  // With m < 2p-1 torch generates 2p-1 microbatches and blanks the actions
  // on the extra ones. p = 2, m = 2: rank 1 generates 1F0 2F0 1F1 2F1 2I0
  // 2W0 1F2 1I0 1W0 2F2 2I1 2W1 1I1 2I2 1I2 1W1 2W2 1W2, and microbatch 2
  // goes.
  PipelineSchedule schedule = generate(Kind::ZBVZeroBubble, 2, 2, 2);
  EXPECT_EQ(render(schedule.ranks[0]),
            "0F0 0F1 3F0 3I0 3W0 3F1 3I1 3W1 0I0 0W0 0I1 0W1");
  EXPECT_EQ(render(schedule.ranks[1]),
            "1F0 2F0 1F1 2F1 2I0 2W0 1I0 1W0 2I1 2W1 1I1 1W1");
}

TEST(GeneratorsTest, LoopedBFSRunsStagesBreadthFirst) {
  // ScheduleLoopedBFS: every forward of each local stage in turn, then the
  // backwards with stages and microbatches reversed.
  PipelineSchedule schedule = generate(Kind::LoopedBFS, 2, 2, 2);
  EXPECT_EQ(render(schedule.ranks[0]), "0F0 0F1 2F0 2F1 2B1 2B0 0B1 0B0");
  EXPECT_EQ(render(schedule.ranks[1]), "1F0 1F1 3F0 3F1 3B1 3B0 1B1 1B0");
}

TEST(GeneratorsTest, EveryScheduleIsValidAndCompletes) {
  PipelineCosts costs;
  for (Kind kind :
       {Kind::GPipe, Kind::OneFOneB, Kind::Interleaved1F1B, Kind::LoopedBFS,
        Kind::InterleavedZeroBubble, Kind::ZBVZeroBubble})
    for (int64_t p : {1, 2, 3, 4, 8})
      for (int64_t v : {1, 2, 3})
        for (int64_t m = 1; m <= 3 * p + 1; ++m) {
          llvm::Expected<PipelineSchedule> schedule =
              generatePipelineSchedule(kind, p, v, m);
          if (!schedule) {
            llvm::consumeError(schedule.takeError());
            continue;
          }
          SCOPED_TRACE(getPipelineScheduleKindName(kind).str() +
                       " p=" + std::to_string(p) + " v=" + std::to_string(v) +
                       " m=" + std::to_string(m));
          EXPECT_EQ(messageOf(verifyPipelineSchedule(*schedule)), "");
          costs.stages.assign(schedule->getNumStages(),
                              StageCost{1.0, 1.0, 1.0, 0, 0});
          EXPECT_EQ(messageOf(simulatePipeline(*schedule, costs)), "");
          llvm::Expected<PipelineSchedule> withTransfers =
              insertCommunication(*schedule);
          ASSERT_EQ(messageOf(verifyPipelineSchedule(*withTransfers)), "");
          // Torch's placement of receives cannot deadlock even when they
          // block.
          EXPECT_EQ(messageOf(simulatePipeline(*withTransfers, costs,
                                               ReceiveMode::Blocking)),
                    "");
        }
}

TEST(GeneratorsTest, NamesIgnoreCase) {
  EXPECT_EQ(*parsePipelineScheduleKind("interleaved1f1b"),
            Kind::Interleaved1F1B);
  EXPECT_EQ(*parsePipelineScheduleKind("1f1b"), Kind::OneFOneB);
  EXPECT_EQ(*parsePipelineScheduleKind("ZBVZEROBUBBLE"), Kind::ZBVZeroBubble);
  EXPECT_EQ(*parsePipelineScheduleKind("gpipe"), Kind::GPipe);
  EXPECT_EQ(getPipelineScheduleKindName(Kind::InterleavedZeroBubble),
            "InterleavedZeroBubble");
  EXPECT_EQ(messageOf(parsePipelineScheduleKind("DualPipe")),
            "unknown pipeline schedule 'DualPipe': the known schedules are "
            "1F1B, Interleaved1F1B, GPipe, LoopedBFS, InterleavedZeroBubble, "
            "ZBVZeroBubble (case does not matter)");
}

TEST(GeneratorsTest, TorchsConstraintsAreRefused) {
  EXPECT_EQ(messageOf(generatePipelineSchedule(Kind::OneFOneB, 4, 1, 3)),
            "1F1B needs at least as many microbatches as stages, as torch "
            "does: got 3 microbatches for 4 stages (use 4 or more, or GPipe)");
  EXPECT_EQ(messageOf(generatePipelineSchedule(Kind::GPipe, 4, 2, 8)),
            "GPipe runs one stage per rank (torch's PipelineScheduleSingle); "
            "got 2 stages per rank: use Interleaved1F1B, LoopedBFS or "
            "InterleavedZeroBubble for more");
  // m = 9 over 4 ranks: max(1, 9 / 4) = 2 rounds, and 9 is odd.
  EXPECT_EQ(messageOf(generatePipelineSchedule(Kind::Interleaved1F1B, 4, 2, 9)),
            "Interleaved1F1B needs the microbatch count to be a multiple of "
            "its number of rounds, max(1, microbatches / pp ranks) = 2, as "
            "torch does: got 9 microbatches for 4 pp ranks (8 or 10 would "
            "do)");
  // 13 / 4 = 3 rounds; 14 makes 3 rounds too, 15 is a multiple of 3.
  EXPECT_EQ(
      messageOf(
          generatePipelineSchedule(Kind::InterleavedZeroBubble, 4, 2, 13)),
      "InterleavedZeroBubble needs the microbatch count to be a multiple of "
      "its number of rounds, max(1, microbatches / pp ranks) = 3, as torch "
      "does: got 13 microbatches for 4 pp ranks (12 or 15 would do)");
  // Fewer microbatches than ranks make a single round, which torch allows.
  EXPECT_EQ(generate(Kind::Interleaved1F1B, 4, 2, 3).ranks.size(), 4u);
  EXPECT_EQ(messageOf(generatePipelineSchedule(Kind::ZBVZeroBubble, 2, 3, 4)),
            "ZBVZeroBubble needs exactly 2 stages per rank (the two arms of "
            "its V), as torch does: got 3");
  EXPECT_EQ(messageOf(generatePipelineSchedule(Kind::LoopedBFS, 2, 2, 0)),
            "LoopedBFS needs at least one pp rank, one stage per rank and one "
            "microbatch; got 2 ranks, 2 stages per rank, 0 microbatches");
}

TEST(GeneratorsTest, PlacementsPutStagesOnRanks) {
  PipelineSchedule loop = generate(Kind::Interleaved1F1B, 4, 2, 8);
  EXPECT_EQ(loop.getStagesOfRank(1), (llvm::SmallVector<int64_t>{1, 5}));
  EXPECT_EQ(loop.getRankOfStage(6), 2);
  PipelineSchedule v = generate(Kind::ZBVZeroBubble, 4, 2, 8);
  EXPECT_EQ(v.getStagesOfRank(1), (llvm::SmallVector<int64_t>{1, 6}));
  EXPECT_EQ(v.getRankOfStage(7), 0);
  EXPECT_EQ(v.getRankOfStage(3), 3);
  EXPECT_EQ(v.getRankOfStage(4), 3);
}

} // namespace
