//===- ScheduleTest.cpp - actions and the checks of a schedule ------------===//

#include "Helpers.h"

using namespace mlir::titan;
using namespace mlir::titan::test;

namespace {

/// The list of kinds a malformed action's message ends with.
constexpr llvm::StringLiteral kHelp =
    " (write [stage][kind][microbatch] as torch does, e.g. 0F1, 2I3, "
    "1SEND_F0, 1UNSHARD; kinds: F B I W SEND_F RECV_F SEND_B RECV_B UNSHARD "
    "RESHARD REDUCE_GRAD)";

TEST(ScheduleTest, ActionsReadAndWriteTorchsStrings) {
  for (llvm::StringRef text :
       {"0F1", "12B3", "2I0", "2W0", "3SEND_F7", "4RECV_F7", "1SEND_B0",
        "0RECV_B10", "1UNSHARD", "1RESHARD", "0REDUCE_GRAD", "1UNSHARD2"}) {
    llvm::Expected<PipelineAction> action = parsePipelineAction(text);
    ASSERT_TRUE(static_cast<bool>(action))
        << llvm::toString(action.takeError());
    EXPECT_EQ(formatPipelineAction(*action), text);
  }
  PipelineAction send = *parsePipelineAction(" 3SEND_F7 ");
  EXPECT_EQ(send, (PipelineAction{3, PipelineActionKind::SendForward, 7}));
  EXPECT_EQ(*parsePipelineAction("1UNSHARD"),
            (PipelineAction{1, PipelineActionKind::Unshard, std::nullopt}));
}

TEST(ScheduleTest, MalformedActionsAreRefused) {
  EXPECT_EQ(messageOf(parsePipelineAction("F1")),
            "'F1' is not a pipeline action: it does not start with a stage "
            "index" +
                kHelp.str());
  EXPECT_EQ(messageOf(parsePipelineAction("0X1")),
            "'0X1' is not a pipeline action: 'X1' does not start with a "
            "kind" +
                kHelp.str());
  EXPECT_EQ(messageOf(parsePipelineAction("0f1")),
            "'0f1' is not a pipeline action: 'f1' does not start with a "
            "kind" +
                kHelp.str());
  EXPECT_EQ(messageOf(parsePipelineAction("0F")),
            "'0F' is not a pipeline action: F needs a microbatch index after "
            "the kind" +
                kHelp.str());
  EXPECT_EQ(messageOf(parsePipelineAction("0F1x")),
            "'0F1x' is not a pipeline action: '1x' after the kind is not a "
            "microbatch index" +
                kHelp.str());
  EXPECT_EQ(messageOf(parsePipelineAction("1BW0")),
            "'1BW0' is not a pipeline action: BW is torch 2.5's spelling of a "
            "full backward; torch 2.6 and later, like titan, write it B, and "
            "2.5's input-only B as I" +
                kHelp.str());
  EXPECT_EQ(messageOf(parsePipelineAction("99999999999999999999F0")),
            "'99999999999999999999F0' is not a pipeline action: the stage "
            "index is above 2147483647" +
                kHelp.str());
}

TEST(ScheduleTest, KindsAreSorted) {
  EXPECT_TRUE(isComputeAction(PipelineActionKind::BackwardWeight));
  EXPECT_FALSE(isComputeAction(PipelineActionKind::SendForward));
  EXPECT_TRUE(isCommunicationAction(PipelineActionKind::RecvBackward));
  EXPECT_FALSE(isCommunicationAction(PipelineActionKind::Unshard));
  EXPECT_EQ(getPipelineActionKindName(PipelineActionKind::ReduceGrad),
            "REDUCE_GRAD");
}

/// The verification message of a schedule over one stage per rank.
std::string verify(int64_t numMicrobatches,
                   llvm::ArrayRef<llvm::StringRef> ranks) {
  return messageOf(
      verifyPipelineSchedule(makeSchedule(1, numMicrobatches, ranks)));
}

TEST(ScheduleTest, EveryMicrobatchIsComputedOnce) {
  EXPECT_EQ(verify(2, {"0F0 0F1 0B0 0I1 0W1"}), "");
  EXPECT_EQ(verify(1, {"0F0 0F0 0B0"}),
            "rank 0, cell 1 '0F0': a second F for stage 0 microbatch 0 (the "
            "first is cell 0)");
  EXPECT_EQ(verify(2, {"0F0 0B0 0B1"}),
            "rank 0: stage 0 microbatch 1 has no F");
  EXPECT_EQ(verify(2, {"0F0 0F1 0B0"}),
            "rank 0: stage 0 microbatch 1 has no backward: it needs one B, or "
            "one I and one W");
  EXPECT_EQ(verify(1, {"0F0 0I0"}),
            "rank 0: stage 0 microbatch 0 has an I (cell 1) but no W");
  EXPECT_EQ(verify(1, {"0F0 0W0"}),
            "rank 0, cell 1 '0W0': a W for stage 0 microbatch 0, which has no "
            "I: a W follows its I");
  EXPECT_EQ(verify(1, {"0F0 0I0 0B0 0W0"}),
            "rank 0, cell 2 '0B0': stage 0 microbatch 0 already has an I "
            "(cell 1): a microbatch's backward is one B, or one I and one W");
  EXPECT_EQ(verify(1, {"0F0 0B0 0W0"}),
            "rank 0, cell 2 '0W0': stage 0 microbatch 0 already has a B (cell "
            "1): a microbatch's backward is one B, or one I and one W");
}

TEST(ScheduleTest, OrderWithinARankIsChecked) {
  EXPECT_EQ(verify(1, {"0B0 0F0"}),
            "rank 0, cell 0 '0B0': the backward of stage 0 microbatch 0 comes "
            "before its F (cell 1)");
  EXPECT_EQ(verify(1, {"0F0 0W0 0I0"}),
            "rank 0, cell 1 '0W0': the W of stage 0 microbatch 0 comes before "
            "its I (cell 2)");
}

TEST(ScheduleTest, ActionsMustBeInRangeAndOnTheirRank) {
  EXPECT_EQ(verify(1, {"0F0 1F0 0B0", "1B0"}),
            "rank 0, cell 1 '1F0': stage 1 runs on rank 1 under the loop "
            "placement, not on rank 0");
  EXPECT_EQ(verify(1, {"0F0 0B0", "1F0 1B0 2F0"}),
            "rank 1, cell 2 '2F0': stage 2 is out of range: the schedule has "
            "2 stages (2 ranks x 1 per rank)");
  EXPECT_EQ(verify(2, {"0F0 0B0 0F2"}),
            "rank 0, cell 2 '0F2': microbatch 2 is out of range: the schedule "
            "has 2 microbatches (0 to 1)");
  // Under the v placement rank 0 of 2 holds stages 0 and 3.
  PipelineSchedule v = makeSchedule(
      2, 1, {"0F0 3F0 3B0 0B0", "1F0 2F0 2B0 1B0"}, StagePlacement::V);
  EXPECT_EQ(messageOf(verifyPipelineSchedule(v)), "");
  v.placement = StagePlacement::Loop;
  EXPECT_EQ(messageOf(verifyPipelineSchedule(v)),
            "rank 0, cell 1 '3F0': stage 3 runs on rank 1 under the loop "
            "placement, not on rank 0");
}

TEST(ScheduleTest, TheShapeIsChecked) {
  PipelineSchedule schedule = makeSchedule(1, 1, {"0F0 0B0"});
  schedule.numRanks = 2;
  EXPECT_EQ(messageOf(verifyPipelineSchedule(schedule)),
            "the schedule has 1 action lists for 2 pp ranks: it needs one "
            "list per rank");
  schedule.placement = StagePlacement::V;
  EXPECT_EQ(messageOf(verifyPipelineSchedule(schedule)),
            "the v placement puts two stages on each rank; this schedule has "
            "1 stages per rank");
  schedule.numMicrobatches = 0;
  EXPECT_EQ(messageOf(verifyPipelineSchedule(schedule)),
            "a pipeline schedule needs at least one rank, one stage per rank "
            "and one microbatch; got 2 ranks, 1 stages per rank, 0 "
            "microbatches");
}

} // namespace
