//===- PlanTest.cpp - Checkpoint plan files, rank data, plan loads --------===//

#include "titan/Checkpoint/Plan.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <numeric>

using namespace mlir::titan;

namespace {

std::string errorOf(llvm::Error err) {
  EXPECT_TRUE(bool(err));
  return llvm::toString(std::move(err));
}

/// w [4, 2] split in rows over 2 ranks, and a 0-d step both ranks hold.
constexpr const char *kPlanText = "titan-checkpoint-plan 1\n"
                                  "ranks 2\n"
                                  "tensor w w float32 [4,2]\n"
                                  "box 0 [0,0] [2,2] write\n"
                                  "box 1 [2,0] [2,2] write\n"
                                  "tensor train_state.step step int64 []\n"
                                  "box 0 [] [] write\n"
                                  "box 1 [] [] hold\n";

TEST(PlanTest, PrintsWhatItParses) {
  llvm::Expected<CheckpointPlan> plan = parseCheckpointPlan(kPlanText, "p");
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->numRanks, 2u);
  ASSERT_EQ(plan->tensors.size(), 2u);
  EXPECT_EQ(plan->tensors[1].dtype, TorchDType::Int64);
  EXPECT_FALSE(plan->tensors[1].boxes[1].writes);
  std::string printed;
  llvm::raw_string_ostream os(printed);
  printCheckpointPlan(*plan, os);
  EXPECT_EQ(printed, kPlanText);
}

TEST(PlanTest, RejectsMalformedRecords) {
  EXPECT_NE(errorOf(parseCheckpointPlan("ranks 2\n", "p").takeError())
                .find("'p' line 1: expected 'titan-checkpoint-plan 1'"),
            std::string::npos);
  std::string outOfOrder = "titan-checkpoint-plan 1\nranks 2\n"
                           "tensor w w float32 [2]\nbox 1 [0] [2] write\n";
  EXPECT_NE(errorOf(parseCheckpointPlan(outOfOrder, "p").takeError())
                .find("line 4: box of rank 1 of 'w' out of rank order"),
            std::string::npos);
  std::string unwritten = "titan-checkpoint-plan 1\nranks 2\n"
                          "tensor w w float32 [2]\nbox 0 [0] [2] write\n"
                          "box 1 [0] [1] hold\n";
  EXPECT_NE(errorOf(parseCheckpointPlan(unwritten, "p").takeError())
                .find("rank 1 holds box offsets [0] sizes [1] of 'w', which "
                      "no rank writes"),
            std::string::npos);
}

TEST(PlanTest, SavesAndLoadsThroughThePlan) {
  llvm::Expected<CheckpointPlan> plan = parseCheckpointPlan(kPlanText, "p");
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  DenseTensor w{TorchDType::Float32, {4, 2}, std::vector<char>(32)};
  std::iota(w.data.begin(), w.data.end(), 0);
  DenseTensor step{TorchDType::Int64, {}, std::vector<char>(8, 3)};
  StateTensors state{{"w", w}, {"step", step}};

  std::vector<DcpRankData> ranks;
  for (unsigned rank = 0; rank < 2; ++rank) {
    llvm::Expected<DcpRankData> data = planRankData(*plan, rank, state);
    ASSERT_TRUE(bool(data)) << llvm::toString(data.takeError());
    ranks.push_back(std::move(*data));
  }
  EXPECT_EQ(ranks[0].chunks.size(), 2u);
  ASSERT_EQ(ranks[1].chunks.size(), 1u);
  EXPECT_EQ(ranks[1].chunks[0].offsets, llvm::SmallVector<int64_t>({2, 0}));

  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("plan-test", dir));
  ASSERT_FALSE(bool(writeDcpCheckpoint(dir, ranks, DcpFlavor::Torch2)));
  llvm::Expected<DcpReader> reader = DcpReader::open(dir);
  ASSERT_TRUE(bool(reader)) << llvm::toString(reader.takeError());
  llvm::Expected<StateTensors> loaded = loadPlanState(*reader, *plan);
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  EXPECT_EQ(loaded->at("w").data, w.data);
  EXPECT_EQ(loaded->at("step").data, step.data);
  llvm::sys::fs::remove_directories(dir);

  state.at("w").shape = {2, 4};
  EXPECT_NE(errorOf(planRankData(*plan, 0, state).takeError())
                .find("'w' is float32 [2, 4], the plan expects float32 "
                      "[4, 2] for 'w'"),
            std::string::npos);
}

} // namespace
