//===- CommunicationTest.cpp - sends and receives in a schedule -----------===//

#include "Helpers.h"

using namespace mlir::titan;
using namespace mlir::titan::test;

namespace {

using Kind = PipelineScheduleKind;

TEST(CommunicationTest, OneFOneBGetsTorchsSendsAndReceives) {
  // _add_send_recv on 1F1B p = 2, m = 2 (rank 0: 0F0 0F1 0B0 0B1, rank 1:
  // 1F0 1B0 1F1 1B1), ranks visited in turn:
  //   turn 1: 0F0 + 0SEND_F0 (1RECV_F0 to rank 1); 1F0 is now ready.
  //   turn 2: 0F1 + 0SEND_F1 (1RECV_F1); 1B0 + 1SEND_B0 (0RECV_B0).
  //   turn 3: 0B0; 1F1.
  //   turn 4: 0B1 waits for its gradient; 1B1 + 1SEND_B1 (0RECV_B1).
  //   turn 5: 0B1.
  llvm::Expected<PipelineSchedule> schedule =
      insertCommunication(generate(Kind::OneFOneB, 2, 1, 2));
  ASSERT_TRUE(static_cast<bool>(schedule)) << messageOf(schedule.takeError());
  EXPECT_EQ(render(schedule->ranks[0]),
            "0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1");
  EXPECT_EQ(render(schedule->ranks[1]),
            "1RECV_F0 1F0 1RECV_F1 1B0 1SEND_B0 1F1 1B1 1SEND_B1");
  EXPECT_TRUE(schedule->hasCommunication());
}

TEST(CommunicationTest, StagesOnOneRankExchangeNothing) {
  // ZBV, p = 2: rank 1 holds stages 1 and 2, so the turn of the V (1 -> 2
  // forward, 2 -> 1 backward) needs no transfer; 0 -> 1 and 2 -> 3 do.
  llvm::Expected<PipelineSchedule> schedule =
      insertCommunication(generate(Kind::ZBVZeroBubble, 2, 2, 1));
  ASSERT_TRUE(static_cast<bool>(schedule)) << messageOf(schedule.takeError());
  EXPECT_EQ(render(schedule->ranks[0]),
            "0F0 0SEND_F0 3RECV_F0 3F0 3I0 3SEND_B0 3W0 0RECV_B0 0I0 0W0");
  EXPECT_EQ(render(schedule->ranks[1]),
            "1RECV_F0 1F0 2F0 2SEND_F0 2RECV_B0 2I0 2W0 1I0 1SEND_B0 1W0");
}

TEST(CommunicationTest, OnlyComputeOnlySchedulesAreAccepted) {
  llvm::Expected<PipelineSchedule> once =
      insertCommunication(generate(Kind::GPipe, 2, 1, 1));
  ASSERT_TRUE(static_cast<bool>(once));
  EXPECT_EQ(messageOf(insertCommunication(*once)),
            "rank 0, cell 1 '0SEND_F0': the schedule already has sends and "
            "receives: insertCommunication takes a compute-only schedule");
}

TEST(CommunicationTest, ACyclicOrderIsRefused) {
  PipelineSchedule schedule =
      makeSchedule(1, 2, {"0F0 0B0 0F1 0B1", "1F1 1B1 1F0 1B0"});
  EXPECT_EQ(messageOf(insertCommunication(schedule)),
            "cannot add sends and receives: the order waits in a cycle, every "
            "rank's next action needing an input that a later action "
            "produces: rank 0 at cell 1 '0B0'; rank 1 at cell 0 '1F1'");
}

/// The verification message of a 2-rank, one-microbatch schedule.
std::string verify(llvm::StringRef rank0, llvm::StringRef rank1) {
  return messageOf(verifyPipelineSchedule(makeSchedule(1, 1, {rank0, rank1})));
}

TEST(CommunicationTest, TransfersAreChecked) {
  EXPECT_EQ(verify("0F0 0SEND_F0 0RECV_B0 0B0", "1RECV_F0 1F0 1B0 1SEND_B0"),
            "");
  EXPECT_EQ(verify("0F0 0SEND_F0 0RECV_B0 0B0", "1F0 1B0 1SEND_B0"),
            "rank 1: no RECV_F for stage 1 microbatch 0: its F (cell 0) needs "
            "what stage 0 on rank 0 sends");
  EXPECT_EQ(verify("0F0 0RECV_B0 0B0", "1RECV_F0 1F0 1B0 1SEND_B0"),
            "rank 0: no SEND_F for stage 0 microbatch 0: its F (cell 0) feeds "
            "stage 1 on rank 1");
  EXPECT_EQ(verify("0SEND_F0 0F0 0RECV_B0 0B0", "1RECV_F0 1F0 1B0 1SEND_B0"),
            "rank 0, cell 0 '0SEND_F0': the send comes before the F that "
            "produces it (cell 1)");
  EXPECT_EQ(verify("0F0 0SEND_F0 0B0 0RECV_B0", "1RECV_F0 1F0 1B0 1SEND_B0"),
            "rank 0, cell 3 '0RECV_B0': the receive comes after the backward "
            "that needs it (cell 2)");
  EXPECT_EQ(
      verify("0F0 0SEND_F0 0RECV_B0 0B0 0SEND_B0", "1RECV_F0 1F0 1B0 1SEND_B0"),
      "rank 0, cell 4 '0SEND_B0': stage 0 is the first stage: it has no "
      "previous neighbour to exchange with");
  // Two stages on one rank (v placement, p = 2: rank 1 holds 1 and 2).
  PipelineSchedule v = makeSchedule(
      2, 1,
      {"0F0 0SEND_F0 3RECV_F0 3F0 3I0 3SEND_B0 3W0 0RECV_B0 0I0 0W0",
       "1RECV_F0 1F0 1SEND_F0 2F0 2SEND_F0 2RECV_B0 2I0 2W0 1I0 1SEND_B0 1W0"},
      StagePlacement::V);
  EXPECT_EQ(messageOf(verifyPipelineSchedule(v)),
            "rank 1, cell 2 '1SEND_F0': stages 1 and 2 are both on rank 1: "
            "nothing is sent between them");
}

} // namespace
