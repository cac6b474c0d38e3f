//===- PlanTest.cpp - Checkpoint plan files, rank data, plan loads --------===//

#include "titan/Checkpoint/Plan.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cstring>
#include <map>
#include <numeric>

using namespace mlir::titan;

namespace {

std::string errorOf(llvm::Error err) {
  EXPECT_TRUE(bool(err));
  return llvm::toString(std::move(err));
}

/// w [4, 2] split in rows over 2 ranks, a 0-d step both ranks hold, and the
/// same step as an int value.
constexpr const char *kPlanText = "titan-checkpoint-plan 1\n"
                                  "ranks 2\n"
                                  "tensor w w float32 [4,2]\n"
                                  "box 0 [0,0] [2,2] write\n"
                                  "box 1 [2,0] [2,2] write\n"
                                  "tensor optimizer.state.w.step step "
                                  "float32 []\n"
                                  "box 0 [] [] write\n"
                                  "box 1 [] [] hold\n"
                                  "value train_state.step step float32\n";

TEST(PlanTest, PrintsWhatItParses) {
  llvm::Expected<CheckpointPlan> plan = parseCheckpointPlan(kPlanText, "p");
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->numRanks, 2u);
  ASSERT_EQ(plan->tensors.size(), 2u);
  EXPECT_EQ(plan->tensors[1].dtype, ElementType::F32);
  EXPECT_FALSE(plan->tensors[1].boxes[1].writes);
  ASSERT_EQ(plan->values.size(), 1u);
  EXPECT_EQ(plan->values[0].source, "step");
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
  // 2^61 float64 elements count within int64 but their bytes do not.
  std::string huge = "titan-checkpoint-plan 1\nranks 1\n"
                     "tensor w w float64 [2305843009213693952]\n"
                     "box 0 [0] [2305843009213693952] write\n";
  EXPECT_NE(errorOf(parseCheckpointPlan(huge, "p").takeError())
                .find("'w' of shape [2305843009213693952] and dtype float64 "
                      "has more than 2^63-1 bytes"),
            std::string::npos);
}

TEST(PlanTest, SavesAndLoadsThroughThePlan) {
  llvm::Expected<CheckpointPlan> plan = parseCheckpointPlan(kPlanText, "p");
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  DenseTensor w{ElementType::F32, {4, 2}, std::vector<char>(32)};
  std::iota(w.data.begin(), w.data.end(), 0);
  float seven = 7;
  DenseTensor step{ElementType::F32, {}, std::vector<char>(4)};
  std::memcpy(step.data.data(), &seven, 4);
  StateTensors state{{"w", w}, {"step", step}};
  auto lookup = [&](llvm::StringRef source) -> llvm::Expected<DenseTensorRef> {
    return DenseTensorRef(state.at(source.str()));
  };

  std::vector<DcpRankData> ranks;
  for (unsigned rank = 0; rank < 2; ++rank) {
    llvm::Expected<DcpRankData> data = planRankData(*plan, rank, lookup);
    ASSERT_TRUE(bool(data)) << llvm::toString(data.takeError());
    ranks.push_back(std::move(*data));
  }
  EXPECT_EQ(ranks[0].chunks.size(), 2u);
  ASSERT_EQ(ranks[1].chunks.size(), 1u);
  EXPECT_EQ(ranks[1].chunks[0].box.offsets, llvm::SmallVector<int64_t>({2, 0}));
  // The coordinator writes the value: the torch.save archive of the int 7.
  ASSERT_EQ(ranks[0].bytesEntries.size(), 1u);
  EXPECT_TRUE(ranks[1].bytesEntries.empty());
  llvm::Expected<TorchSaveArchive> value =
      readTorchSave(ranks[0].bytesEntries[0].data, "value");
  ASSERT_TRUE(bool(value)) << llvm::toString(value.takeError());
  EXPECT_TRUE(value->root->is(PickleValue::Kind::Int));
  EXPECT_EQ(value->root->getInt(), 7);

  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("plan-test", dir));
  ASSERT_FALSE(bool(writeDcpCheckpoint(dir, ranks, DcpFlavor::Torch2)));
  llvm::Expected<DcpReader> reader = DcpReader::open(dir);
  ASSERT_TRUE(bool(reader)) << llvm::toString(reader.takeError());
  llvm::Expected<StateTensors> loaded = loadPlanState(*reader, *plan);
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  EXPECT_EQ(loaded->at("w").data, w.data);
  EXPECT_EQ(loaded->at("step").data, step.data);
  // Rank 1 loads its own rows of w (read straight into its buffer) and the
  // step.
  std::map<std::string, DenseTensor> local;
  auto allocate = [&](llvm::StringRef source, ElementType dtype,
                      llvm::ArrayRef<int64_t> shape)
      -> llvm::Expected<MutableDenseTensorRef> {
    DenseTensor &tensor = local[source.str()];
    tensor = {dtype, llvm::SmallVector<int64_t>(shape), {}};
    tensor.data.resize(tensor.numElements() * getElementTypeSize(dtype));
    return MutableDenseTensorRef(tensor);
  };
  ASSERT_FALSE(bool(loadPlanRank(*reader, *plan, 1, allocate)));
  EXPECT_EQ(local.at("w").shape, llvm::SmallVector<int64_t>({2, 2}));
  EXPECT_EQ(local.at("w").data,
            std::vector<char>(w.data.begin() + 16, w.data.end()));
  EXPECT_EQ(local.at("step").data, step.data);
  EXPECT_NE(errorOf(loadPlanRank(*reader, *plan, 2, allocate))
                .find("rank 2 is not a rank of the plan, which has 2 ranks"),
            std::string::npos);
  llvm::sys::fs::remove_directories(dir);

  state.at("w").shape = {2, 4};
  EXPECT_NE(errorOf(planRankData(*plan, 0, lookup).takeError())
                .find("'w' is float32 [2, 4], the plan expects float32 "
                      "[4, 2] for 'w'"),
            std::string::npos);
  state.at("w").shape = {4, 2};
  float half = 7.5;
  std::memcpy(state.at("step").data.data(), &half, 4);
  EXPECT_NE(errorOf(planRankData(*plan, 0, lookup).takeError())
                .find("'step' holds 7.5"),
            std::string::npos);
}

} // namespace
