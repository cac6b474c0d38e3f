//===- CsvTest.cpp - torch's CSV form of a pipeline schedule --------------===//

#include "Helpers.h"

using namespace mlir::titan;
using namespace mlir::titan::test;

namespace {

using Kind = PipelineScheduleKind;

TEST(CsvTest, WritesWhatTorchsDumpCsvWrites) {
  // Python's csv.writer: cells joined by ",", each row ended by "\r\n".
  EXPECT_EQ(printPipelineScheduleCsv(generate(Kind::GPipe, 2, 1, 2)),
            "0F0,0F1,0B0,0B1\r\n1F0,1F1,1B0,1B1\r\n");
}

TEST(CsvTest, RoundTrips) {
  for (auto [kind, p, v, m] :
       {std::tuple(Kind::ZBVZeroBubble, 2, 2, 4),
        std::tuple(Kind::Interleaved1F1B, 4, 2, 8),
        std::tuple(Kind::InterleavedZeroBubble, 3, 3, 5)}) {
    SCOPED_TRACE(getPipelineScheduleKindName(kind).str());
    for (bool transfers : {false, true}) {
      PipelineSchedule schedule = generate(kind, p, v, m);
      if (transfers)
        schedule = std::move(*insertCommunication(schedule));
      llvm::Expected<PipelineSchedule> read =
          parsePipelineScheduleCsv(printPipelineScheduleCsv(schedule), p, m);
      ASSERT_TRUE(static_cast<bool>(read)) << messageOf(read.takeError());
      EXPECT_EQ(read->stagesPerRank, v);
      EXPECT_EQ(read->placement, schedule.placement);
      EXPECT_EQ(read->ranks, schedule.ranks);
    }
  }
}

TEST(CsvTest, ReadsTorchsFiles) {
  // A compute_comms dump of torch 2.6 (which wraps each rank in UNSHARD /
  // RESHARD), with a quoted cell and blanks around one.
  llvm::StringRef comms =
      "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,"
      "0RESHARD\r\n"
      "1UNSHARD,1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,\"1F1\", 1B1 ,1SEND_B1,"
      "1RESHARD\r\n";
  llvm::Expected<PipelineSchedule> schedule =
      parsePipelineScheduleCsv(comms, 2, 2);
  ASSERT_TRUE(static_cast<bool>(schedule)) << messageOf(schedule.takeError());
  EXPECT_TRUE(schedule->hasCommunication());
  EXPECT_EQ(render(schedule->ranks[1]), "1UNSHARD 1RECV_F0 1F0 1RECV_F1 1B0 "
                                        "1SEND_B0 1F1 1B1 1SEND_B1 1RESHARD");
  // A pipeline_order dump keeps torch's idle steps as empty cells; "\n"
  // rows and a trailing blank line are fine.
  llvm::StringRef padded = "0F0,0F1,,,,0B0,0B1\n,1F0,1F1,1B0,1B1\n\n";
  schedule = parsePipelineScheduleCsv(padded, 2, 2);
  ASSERT_TRUE(static_cast<bool>(schedule)) << messageOf(schedule.takeError());
  EXPECT_EQ(render(schedule->ranks[0]), "0F0 0F1 0B0 0B1");
  EXPECT_EQ(render(schedule->ranks[1]), "1F0 1F1 1B0 1B1");
  EXPECT_EQ(schedule->placement, StagePlacement::Loop);
}

TEST(CsvTest, ThePlacementFollowsFromTheStages) {
  // Stages 0 and 3 on rank 0 of 2: the v placement.
  llvm::Expected<PipelineSchedule> v =
      parsePipelineScheduleCsv("0F0,3F0,3B0,0B0\r\n1F0,2F0,2B0,1B0\r\n", 2, 1);
  ASSERT_TRUE(static_cast<bool>(v)) << messageOf(v.takeError());
  EXPECT_EQ(v->placement, StagePlacement::V);
  EXPECT_EQ(v->stagesPerRank, 2);
  EXPECT_EQ(messageOf(parsePipelineScheduleCsv(
                "0F0,1F0,1B0,0B0\r\n2F0,3F0,3B0,2B0\r\n", 2, 1)),
            "the stages of the schedule CSV fit neither placement of 4 stages "
            "on 2 ranks (loop: stage s on rank s % 2; v, for 2 stages per "
            "rank: stages r and 3-r on rank r): under loop, stage 1 (rank 0, "
            "cell 1) belongs on rank 1; under v, stage 1 (rank 0, cell 1) "
            "belongs on rank 1");
  EXPECT_EQ(messageOf(parsePipelineScheduleCsv("0F0,0B0\r\n2F0,2B0\r\n", 2, 1)),
            "the schedule CSV names stages up to 2, so 3 stages, which its 2 "
            "rows (pp ranks) cannot share evenly");
}

TEST(CsvTest, ErrorsNameTheRankAndTheCell) {
  EXPECT_EQ(messageOf(parsePipelineScheduleCsv("0F0,,0X1\r\n", 1, 1)),
            "rank 0, cell 2: '0X1' is not a pipeline action: 'X1' does not "
            "start with a kind (write [stage][kind][microbatch] as torch "
            "does, e.g. 0F1, 2I3, 1SEND_F0, 1UNSHARD; kinds: F B I W SEND_F "
            "RECV_F SEND_B RECV_B UNSHARD RESHARD REDUCE_GRAD)");
  // Cells count the idle ones: the duplicate is the CSV's fourth column.
  EXPECT_EQ(messageOf(parsePipelineScheduleCsv(
                "0F0,0F1,,0F1,0B0,0B1\r\n,1F0,1F1,1B0,1B1\r\n", 2, 2)),
            "rank 0, cell 3 '0F1': a second F for stage 0 microbatch 1 (the "
            "first is cell 1)");
  EXPECT_EQ(messageOf(parsePipelineScheduleCsv(
                "0F0,0F1,,0B0\r\n,1F0,1F1,1B0,1B1\r\n", 2, 2)),
            "rank 0: stage 0 microbatch 1 has no backward: it needs one B, or "
            "one I and one W");
  EXPECT_EQ(messageOf(parsePipelineScheduleCsv(
                "0F0,0F1,0B0,0B1\r\n1F0,1F1,1B0,1B1\r\n", 2, 3)),
            "rank 0: stage 0 microbatch 2 has no F");
  EXPECT_EQ(messageOf(parsePipelineScheduleCsv("0F0,0B0\r\n", 2, 1)),
            "the schedule CSV has 1 row(s), one per pp rank, but there are 2 "
            "pp ranks");
  EXPECT_EQ(messageOf(parsePipelineScheduleCsv(",\r\n", 1, 1)),
            "the schedule CSV has no actions");
  // Sizes the actions cannot fill are refused before anything is sized by
  // them.
  EXPECT_EQ(messageOf(parsePipelineScheduleCsv("0F0,2000000000F0\r\n", 1, 1)),
            "the schedule has 2000000001 stages per rank on 1 ranks and 1 "
            "microbatches but only 2 F actions: every stage needs one F per "
            "microbatch");
  EXPECT_EQ(
      messageOf(parsePipelineScheduleCsv("0F0,0B0\r\n", 1, int64_t(1) << 40)),
      "the schedule has 1 stages per rank on 1 ranks and 1099511627776 "
      "microbatches but only 1 F actions: every stage needs one F per "
      "microbatch");
  EXPECT_EQ(messageOf(parsePipelineScheduleCsv("3000000000F0\r\n", 1, 1)),
            "rank 0, cell 0: '3000000000F0' is not a pipeline action: the "
            "stage index is above 2147483647 (write [stage][kind][microbatch] "
            "as torch does, e.g. 0F1, 2I3, 1SEND_F0, 1UNSHARD; kinds: F B I W "
            "SEND_F RECV_F SEND_B RECV_B UNSHARD RESHARD REDUCE_GRAD)");
}

} // namespace
