//===- PlanTest.cpp - Checkpoint plan files, rank data, plan loads --------===//

#include "titan/Checkpoint/Plan.h"
#include "CheckpointTestUtil.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <cstring>
#include <map>
#include <numeric>

using namespace mlir::titan;
using namespace mlir::titan::test;

namespace {

/// The error of parsing `text` as a plan file named "p".
std::string parseError(llvm::StringRef text) {
  return errorOf(parseCheckpointPlan(text, "p"));
}

/// Expects `text` to fail to parse with an error that contains `message`.
void expectParseError(llvm::StringRef text, const std::string &message) {
  EXPECT_THAT(parseError(text), ::testing::HasSubstr(message));
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
  expectParseError("ranks 2\n",
                   "'p' line 1: expected 'titan-checkpoint-plan 1'");
  std::string outOfOrder = "titan-checkpoint-plan 1\nranks 2\n"
                           "tensor w w float32 [2]\nbox 1 [0] [2] write\n";
  expectParseError(outOfOrder,
                   "line 4: box of rank 1 of 'w' out of rank order");
  std::string unwritten = "titan-checkpoint-plan 1\nranks 2\n"
                          "tensor w w float32 [2]\nbox 0 [0] [2] write\n"
                          "box 1 [0] [1] hold\n";
  expectParseError(unwritten,
                   "rank 1 holds box offsets [0] sizes [1] of 'w', which "
                   "no rank writes");
  // 2^61 float64 elements count within int64 but their bytes do not.
  std::string huge = "titan-checkpoint-plan 1\nranks 1\n"
                     "tensor w w float64 [2305843009213693952]\n"
                     "box 0 [0] [2305843009213693952] write\n";
  expectParseError(huge, "'w' of shape [2305843009213693952] and dtype float64 "
                         "has more than 2^63-1 bytes");
}

/// kPlanText's state: `w` and the step, 7.
StateTensors planState(DenseTensor w) {
  float seven = 7;
  DenseTensor step{ElementType::F32, {}, std::vector<char>(4)};
  std::memcpy(step.data.data(), &seven, 4);
  return StateTensors{{"w", std::move(w)}, {"step", std::move(step)}};
}

/// What each rank of `plan` writes of `state`, the global tensors by
/// source (empty when a rank fails, which the test reports).
std::vector<DcpRankData> writeRanks(const CheckpointPlan &plan,
                                    const StateTensors &state) {
  auto lookup = [&](llvm::StringRef source) -> llvm::Expected<DenseTensorRef> {
    return DenseTensorRef(state.at(source.str()));
  };
  std::vector<DcpRankData> ranks;
  for (unsigned rank = 0; rank < plan.numRanks; ++rank) {
    llvm::Expected<DcpRankData> data = planRankData(plan, rank, lookup);
    EXPECT_TRUE(bool(data)) << llvm::toString(data.takeError());
    if (!data)
      return {};
    ranks.push_back(std::move(*data));
  }
  return ranks;
}

TEST(PlanTest, SavesAndLoadsThroughThePlan) {
  llvm::Expected<CheckpointPlan> plan = parseCheckpointPlan(kPlanText, "p");
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  DenseTensor w{ElementType::F32, {4, 2}, std::vector<char>(32)};
  std::iota(w.data.begin(), w.data.end(), 0);
  StateTensors state = planState(w);
  const DenseTensor &step = state.at("step");
  auto lookup = [&](llvm::StringRef source) -> llvm::Expected<DenseTensorRef> {
    return DenseTensorRef(state.at(source.str()));
  };

  std::vector<DcpRankData> ranks = writeRanks(*plan, state);
  ASSERT_EQ(ranks.size(), 2u);
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

TEST(PlanTest, LoadsFloatsIntoAnotherFloatType) {
  // Saved by a float32 run; loaded by a pure bf16 one (w in bf16), as
  // DCP's copy_ loads it: each value rounded to nearest even. An int
  // tensor loads into no float.
  llvm::Expected<CheckpointPlan> saved = parseCheckpointPlan(kPlanText, "p");
  ASSERT_TRUE(bool(saved)) << llvm::toString(saved.takeError());
  std::vector<float> values = {
      1.0f, -2.5f, 3.0f + 1.0f / 256, 1e-3f, 65504.0f, 0.0f, -0.0f, 7.0f};
  DenseTensor w{ElementType::F32, {4, 2}, std::vector<char>(32)};
  std::memcpy(w.data.data(), values.data(), 32);
  StateTensors state = planState(w);
  std::vector<DcpRankData> ranks = writeRanks(*saved, state);
  ASSERT_EQ(ranks.size(), 2u);
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("plan-test", dir));
  ASSERT_FALSE(bool(writeDcpCheckpoint(dir, ranks, DcpFlavor::Torch2)));
  llvm::Expected<DcpReader> reader = DcpReader::open(dir);
  ASSERT_TRUE(bool(reader)) << llvm::toString(reader.takeError());

  std::string bf16Text = kPlanText;
  bf16Text.replace(bf16Text.find("tensor w w float32"),
                   std::strlen("tensor w w float32"), "tensor w w bfloat16");
  llvm::Expected<CheckpointPlan> bf16 = parseCheckpointPlan(bf16Text, "p");
  ASSERT_TRUE(bool(bf16)) << llvm::toString(bf16.takeError());
  llvm::Expected<StateTensors> loaded = loadPlanState(*reader, *bf16);
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  const DenseTensor &rounded = loaded->at("w");
  ASSERT_EQ(rounded.dtype, ElementType::BF16);
  std::vector<uint16_t> bits(8);
  ASSERT_EQ(rounded.data.size(), 16u);
  std::memcpy(bits.data(), rounded.data.data(), 16);
  // 3 + 1/256 is halfway between bf16's 3 and 3.015625: even, 3. 1e-3
  // rounds to 0x3a83; 65504 to 65536 (0x4780).
  EXPECT_EQ(bits, (std::vector<uint16_t>{0x3f80, 0xc020, 0x4040, 0x3a83, 0x4780,
                                         0x0000, 0x8000, 0x40e0}));
  EXPECT_EQ(loaded->at("step").data, state.at("step").data);

  std::string intText = kPlanText;
  intText.replace(intText.find("tensor w w float32"),
                  std::strlen("tensor w w float32"), "tensor w w int64");
  llvm::Expected<CheckpointPlan> ints = parseCheckpointPlan(intText, "p");
  ASSERT_TRUE(bool(ints)) << llvm::toString(ints.takeError());
  EXPECT_THAT(errorOf(loadPlanState(*reader, *ints).takeError()),
              ::testing::HasSubstr("the checkpoint holds 'w' as float32 "
                                   "[4, 2], the plan expects int64 [4, 2]"));
  llvm::sys::fs::remove_directories(dir);
}

/// Pipeline rank 0's program of a 2-stage pipeline on 2 ranks a stage: a
/// [4, 2] split in rows, the tied weight wte [2, 2] split in rows, and the
/// step as a value.
constexpr const char *kStage0Text = "titan-checkpoint-plan 1\n"
                                    "ranks 2\n"
                                    "tensor a a float32 [4,2]\n"
                                    "box 0 [0,0] [2,2] write\n"
                                    "box 1 [2,0] [2,2] write\n"
                                    "tensor wte wte float32 [2,2]\n"
                                    "box 0 [0,0] [1,2] write\n"
                                    "box 1 [1,0] [1,2] write\n"
                                    "value train_state.step step float32\n";

/// Pipeline rank 1's program: b [2] replicated, the tied weight wte as
/// pipeline rank 0 splits it, and the same value.
constexpr const char *kStage1Text = "titan-checkpoint-plan 1\n"
                                    "ranks 2\n"
                                    "tensor b b float32 [2]\n"
                                    "box 0 [0] [2] write\n"
                                    "box 1 [0] [2] hold\n"
                                    "tensor wte wte float32 [2,2]\n"
                                    "box 0 [0,0] [1,2] write\n"
                                    "box 1 [1,0] [1,2] write\n"
                                    "value train_state.step step float32\n";

/// A float32 tensor of `shape` holding `values`.
DenseTensor floats(std::vector<float> values, llvm::ArrayRef<int64_t> shape) {
  DenseTensor tensor{ElementType::F32, llvm::SmallVector<int64_t>(shape),
                     std::vector<char>(values.size() * 4)};
  std::memcpy(tensor.data.data(), values.data(), tensor.data.size());
  return tensor;
}

CheckpointPlan parsePlan(llvm::StringRef text) {
  llvm::Expected<CheckpointPlan> plan = parseCheckpointPlan(text, "p");
  EXPECT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  return plan ? std::move(*plan) : CheckpointPlan{};
}

TEST(PlanTest, PrintsWhatItParsesWithAbsentBoxes) {
  std::string text = "titan-checkpoint-plan 1\n"
                     "ranks 3\n"
                     "tensor w w float32 [2]\n"
                     "box 0 none\n"
                     "box 1 [0] [2] write\n"
                     "box 2 none\n"
                     "tensor s step float32 []\n"
                     "box 0 [] [] write\n"
                     "box 1 [] [] hold\n"
                     "box 2 none\n";
  CheckpointPlan plan = parsePlan(text);
  ASSERT_EQ(plan.tensors.size(), 2u);
  const std::vector<PlanBox> &boxes = plan.tensors[0].boxes;
  ASSERT_EQ(boxes.size(), 3u);
  EXPECT_FALSE(boxes[0].held);
  EXPECT_FALSE(boxes[0].writes);
  EXPECT_TRUE(boxes[0].box.offsets.empty() && boxes[0].box.sizes.empty());
  EXPECT_TRUE(boxes[1].held);
  EXPECT_TRUE(boxes[1].writes);
  // A 0-d box is empty too, yet held.
  EXPECT_TRUE(plan.tensors[1].boxes[1].held);
  EXPECT_FALSE(plan.tensors[1].boxes[2].held);
  std::string printed;
  llvm::raw_string_ostream os(printed);
  printCheckpointPlan(plan, os);
  EXPECT_EQ(printed, text);
}

TEST(PlanTest, RejectsBadAbsentBoxes) {
  // The only rank that could write w does not hold it: nothing tiles w.
  std::string unwritten = "titan-checkpoint-plan 1\nranks 2\n"
                          "tensor w w float32 [2]\nbox 0 none\n"
                          "box 1 [0] [2] hold\n";
  expectParseError(unwritten, "the written chunks do not tile");
  std::string nobody = "titan-checkpoint-plan 1\nranks 2\n"
                       "tensor w w float32 [2]\nbox 0 none\nbox 1 none\n";
  expectParseError(nobody, "the written chunks do not tile");
  std::string extra = "titan-checkpoint-plan 1\nranks 1\n"
                      "tensor w w float32 [2]\nbox 0 none write\n";
  expectParseError(extra, "line 4: expected 'box <rank> <offsets> <sizes> "
                          "write|hold' or 'box <rank> none'");
  // What the text cannot say, a plan built in memory can.
  CheckpointPlan plan = parsePlan("titan-checkpoint-plan 1\nranks 2\n"
                                  "tensor w w float32 [2]\n"
                                  "box 0 [0] [2] write\nbox 1 none\n");
  plan.tensors[0].boxes[1].writes = true;
  EXPECT_NE(errorOf(validateCheckpointPlan(plan))
                .find("rank 1 writes 'w', which it does not hold"),
            std::string::npos);
  plan.tensors[0].boxes[1] = PlanBox{IndexBox{{0}, {2}}, false, false};
  EXPECT_NE(errorOf(validateCheckpointPlan(plan))
                .find("rank 1 does not hold 'w' but has a box of it"),
            std::string::npos);
}

TEST(PlanTest, MergesPipelinePlans) {
  CheckpointPlan stage0 = parsePlan(kStage0Text);
  CheckpointPlan stage1 = parsePlan(kStage1Text);
  llvm::Expected<CheckpointPlan> merged =
      mergePipelineCheckpointPlans({stage0, stage1});
  ASSERT_TRUE(bool(merged)) << llvm::toString(merged.takeError());
  std::string printed;
  llvm::raw_string_ostream os(printed);
  printCheckpointPlan(*merged, os);
  // Global rank p * 2 + r is rank r of pipeline rank p; the tied weight is
  // written by pipeline rank 0 and held by pipeline rank 1.
  EXPECT_EQ(printed, "titan-checkpoint-plan 1\n"
                     "ranks 4\n"
                     "tensor a a float32 [4,2]\n"
                     "box 0 [0,0] [2,2] write\n"
                     "box 1 [2,0] [2,2] write\n"
                     "box 2 none\n"
                     "box 3 none\n"
                     "tensor wte wte float32 [2,2]\n"
                     "box 0 [0,0] [1,2] write\n"
                     "box 1 [1,0] [1,2] write\n"
                     "box 2 [0,0] [1,2] hold\n"
                     "box 3 [1,0] [1,2] hold\n"
                     "tensor b b float32 [2]\n"
                     "box 0 none\n"
                     "box 1 none\n"
                     "box 2 [0] [2] write\n"
                     "box 3 [0] [2] hold\n"
                     "value train_state.step step float32\n");
  EXPECT_FALSE(bool(validateCheckpointPlan(*merged)));
  // It parses back as printed.
  CheckpointPlan reparsed = parsePlan(printed);
  EXPECT_EQ(reparsed.numRanks, 4u);
  EXPECT_FALSE(reparsed.tensors[2].boxes[1].held);

  // Disjoint keys only: no tied weight.
  stage1.tensors.pop_back();
  stage0.tensors.pop_back();
  llvm::Expected<CheckpointPlan> disjoint =
      mergePipelineCheckpointPlans({stage0, stage1});
  ASSERT_TRUE(bool(disjoint)) << llvm::toString(disjoint.takeError());
  ASSERT_EQ(disjoint->tensors.size(), 2u);
  EXPECT_EQ(disjoint->tensors[0].key, "a");
  EXPECT_EQ(disjoint->tensors[1].key, "b");
  EXPECT_EQ(disjoint->values.size(), 1u);
  const std::vector<PlanBox> &b = disjoint->tensors[1].boxes;
  ASSERT_EQ(b.size(), 4u);
  EXPECT_FALSE(b[0].held || b[1].held);
  EXPECT_TRUE(b[2].held && b[2].writes);
  EXPECT_TRUE(b[3].held && !b[3].writes);
  EXPECT_EQ(b[3].box, (IndexBox{{0}, {2}}));
}

TEST(PlanTest, RejectsPipelinePlansThatDisagree) {
  CheckpointPlan stage0 = parsePlan(kStage0Text);
  CheckpointPlan stage1 = parsePlan(kStage1Text);
  auto mergeError = [&](const CheckpointPlan &first,
                        const CheckpointPlan &second) {
    return errorOf(mergePipelineCheckpointPlans({first, second}).takeError());
  };

  CheckpointPlan reshaped = stage1;
  reshaped.tensors[1].shape = {4, 1};
  reshaped.tensors[1].boxes = {PlanBox{IndexBox{{0, 0}, {4, 1}}, true},
                               PlanBox{IndexBox{{0, 0}, {4, 1}}, false}};
  EXPECT_NE(mergeError(stage0, reshaped)
                .find("'wte' differs between pipeline ranks 0 and 1: float32 "
                      "[2, 2] from 'wte' on pipeline rank 0, float32 [4, 1] "
                      "from 'wte' on pipeline rank 1"),
            std::string::npos);

  // Pipeline rank 1 splits wte in columns, pipeline rank 0 in rows.
  CheckpointPlan columns = stage1;
  columns.tensors[1].boxes = {PlanBox{IndexBox{{0, 0}, {2, 1}}, true},
                              PlanBox{IndexBox{{0, 1}, {2, 1}}, true}};
  EXPECT_NE(mergeError(stage0, columns)
                .find("'wte' is sharded differently on pipeline ranks 0 and "
                      "1: rank 0 of pipeline rank 1 holds box offsets [0, 0] "
                      "sizes [2, 1], which pipeline rank 0 does not write"),
            std::string::npos);

  CheckpointPlan wider = stage1;
  wider.numRanks = 1;
  for (PlanTensor &tensor : wider.tensors)
    tensor.boxes.resize(1);
  wider.tensors[1].boxes[0] = PlanBox{IndexBox{{0, 0}, {2, 2}}, true};
  EXPECT_NE(mergeError(stage0, wider)
                .find("pipeline rank 0's plan is for 2 ranks, pipeline rank "
                      "1's for 1"),
            std::string::npos);

  CheckpointPlan otherStep = stage1;
  otherStep.values[0].dtype = ElementType::I64;
  EXPECT_NE(mergeError(stage0, otherStep)
                .find("value 'train_state.step' differs between pipeline "
                      "ranks 0 and 1"),
            std::string::npos);
}

TEST(PlanTest, RanksSaveAndLoadOnlyWhatTheyHold) {
  llvm::Expected<CheckpointPlan> merged = mergePipelineCheckpointPlans(
      {parsePlan(kStage0Text), parsePlan(kStage1Text)});
  ASSERT_TRUE(bool(merged)) << llvm::toString(merged.takeError());
  StateTensors state{{"a", floats({0, 1, 2, 3, 4, 5, 6, 7}, {4, 2})},
                     {"wte", floats({10, 11, 12, 13}, {2, 2})},
                     {"b", floats({20, 21}, {2})},
                     {"step", floats({3}, {})}};
  // Every lookup is recorded; a lookup of a source the rank does not hold
  // is an error the save would report.
  std::vector<std::string> lookedUp;
  auto lookup = [&](llvm::StringRef source) -> llvm::Expected<DenseTensorRef> {
    lookedUp.push_back(source.str());
    return DenseTensorRef(state.at(source.str()));
  };

  std::vector<DcpRankData> ranks;
  for (unsigned rank = 0; rank < 4; ++rank) {
    lookedUp.clear();
    llvm::Expected<DcpRankData> data = planRankData(*merged, rank, lookup);
    ASSERT_TRUE(bool(data)) << llvm::toString(data.takeError());
    std::vector<std::string> keys;
    for (const DcpTensorChunk &chunk : data->chunks)
      keys.push_back(chunk.fqn);
    // Pipeline rank 1 (ranks 2 and 3) writes nothing of a, nor of wte,
    // which pipeline rank 0 writes.
    std::vector<std::vector<std::string>> expected = {
        {"a", "wte"}, {"a", "wte"}, {"b"}, {}};
    EXPECT_EQ(keys, expected[rank]) << "rank " << rank;
    // Only what a rank writes is looked up (and, on rank 0, the step).
    if (rank != 0) {
      EXPECT_EQ(lookedUp, keys) << "rank " << rank;
    }
    ranks.push_back(std::move(*data));
  }

  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("plan-test", dir));
  ASSERT_FALSE(bool(writeDcpCheckpoint(dir, ranks, DcpFlavor::Torch2)));
  llvm::Expected<DcpReader> reader = DcpReader::open(dir);
  ASSERT_TRUE(bool(reader)) << llvm::toString(reader.takeError());
  std::map<std::string, DenseTensor> local;
  std::vector<std::string> destinations;
  auto allocate = [&](llvm::StringRef source, ElementType dtype,
                      llvm::ArrayRef<int64_t> shape)
      -> llvm::Expected<MutableDenseTensorRef> {
    destinations.push_back(source.str());
    DenseTensor &tensor = local[source.str()];
    tensor = {dtype, llvm::SmallVector<int64_t>(shape), {}};
    tensor.data.resize(tensor.numElements() * getElementTypeSize(dtype));
    return MutableDenseTensorRef(tensor);
  };
  // Rank 3 (rank 1 of pipeline rank 1) loads its row of the tied weight,
  // b and the step; never a.
  ASSERT_FALSE(bool(loadPlanRank(*reader, *merged, 3, allocate)));
  EXPECT_EQ(destinations, (std::vector<std::string>{"wte", "b", "step"}));
  EXPECT_EQ(local.at("wte").data, floats({12, 13}, {1, 2}).data);
  EXPECT_EQ(local.at("b").data, state.at("b").data);
  EXPECT_EQ(local.at("step").data, state.at("step").data);
  llvm::sys::fs::remove_directories(dir);

  // A checkpoint of pipeline rank 0's program alone lacks b: rank 1 loads
  // from it, as it never looks b up; rank 2, which holds b, cannot.
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("plan-test", dir));
  ranks.resize(2);
  ASSERT_FALSE(bool(writeDcpCheckpoint(dir, ranks, DcpFlavor::Torch2)));
  reader = DcpReader::open(dir);
  ASSERT_TRUE(bool(reader)) << llvm::toString(reader.takeError());
  destinations.clear();
  ASSERT_FALSE(bool(loadPlanRank(*reader, *merged, 1, allocate)));
  EXPECT_EQ(destinations, (std::vector<std::string>{"a", "wte", "step"}));
  EXPECT_EQ(local.at("a").data, floats({4, 5, 6, 7}, {2, 2}).data);
  destinations.clear();
  EXPECT_NE(errorOf(loadPlanRank(*reader, *merged, 2, allocate))
                .find("the checkpoint has no tensor 'b', which the plan "
                      "needs"),
            std::string::npos);
  EXPECT_TRUE(destinations.empty());
  llvm::sys::fs::remove_directories(dir);
}

/// Writes `ranks` as a checkpoint into a new directory, `dir`, and opens it.
llvm::Expected<DcpReader> writeAndOpen(llvm::ArrayRef<DcpRankData> ranks,
                                       llvm::SmallString<128> &dir) {
  if (std::error_code error =
          llvm::sys::fs::createUniqueDirectory("plan-test", dir))
    return llvm::createStringError(error, "cannot create a directory");
  if (llvm::Error error = writeDcpCheckpoint(dir, ranks, DcpFlavor::Torch2))
    return std::move(error);
  return DcpReader::open(dir);
}

/// wte [2, 2] split in rows over 2 ranks, lm_head another name of it (a
/// tied output projection), and a boolean mask buffer both ranks hold.
constexpr const char *kTiedPlanText = "titan-checkpoint-plan 1\n"
                                      "ranks 2\n"
                                      "tensor wte wte float32 [2,2]\n"
                                      "box 0 [0,0] [1,2] write\n"
                                      "box 1 [1,0] [1,2] write\n"
                                      "tensor lm_head wte float32 [2,2] alias\n"
                                      "box 0 [0,0] [1,2] write\n"
                                      "box 1 [1,0] [1,2] write\n"
                                      "tensor mask mask bool [2,2] buffer\n"
                                      "box 0 [0,0] [2,2] write\n"
                                      "box 1 [0,0] [2,2] hold\n";

TEST(PlanTest, SavesTiedNamesAndBuffersAndLoadsThemWhereSaved) {
  CheckpointPlan plan = parsePlan(kTiedPlanText);
  ASSERT_EQ(plan.tensors.size(), 3u);
  EXPECT_EQ(plan.tensors[0].kind, PlanTensorKind::State);
  EXPECT_EQ(plan.tensors[1].kind, PlanTensorKind::Alias);
  EXPECT_EQ(plan.tensors[2].kind, PlanTensorKind::Buffer);
  EXPECT_EQ(plan.tensors[2].dtype, ElementType::I1);
  std::string printed;
  llvm::raw_string_ostream os(printed);
  printCheckpointPlan(plan, os);
  EXPECT_EQ(printed, kTiedPlanText);

  DenseTensor mask{ElementType::I1, {2, 2}, {1, 0, 1, 1}};
  StateTensors state{{"wte", floats({10, 11, 12, 13}, {2, 2})}, {"mask", mask}};
  auto lookup = [&](llvm::StringRef source) -> llvm::Expected<DenseTensorRef> {
    return DenseTensorRef(state.at(source.str()));
  };
  // Every rank saves its rows under both names, and rank 0 the mask.
  std::vector<DcpRankData> ranks;
  for (unsigned rank = 0; rank < 2; ++rank) {
    llvm::Expected<DcpRankData> data = planRankData(plan, rank, lookup);
    ASSERT_TRUE(bool(data)) << llvm::toString(data.takeError());
    EXPECT_EQ(data->chunks.size(), rank == 0 ? 3u : 2u);
    ranks.push_back(std::move(*data));
  }
  llvm::SmallString<128> dir;
  llvm::Expected<DcpReader> reader = writeAndOpen(ranks, dir);
  ASSERT_TRUE(bool(reader)) << llvm::toString(reader.takeError());
  // The two names of a row are one blob of the rank's file.
  const DcpMetadata &metadata = reader->getMetadata();
  for (int64_t row : {0, 1}) {
    const DcpStorageInfo &wte = metadata.storage.at({"wte", {row, 0}});
    const DcpStorageInfo &head = metadata.storage.at({"lm_head", {row, 0}});
    EXPECT_EQ(head.relativePath, wte.relativePath);
    EXPECT_EQ(head.offset, wte.offset);
    EXPECT_EQ(head.length, wte.length);
  }
  llvm::Expected<DenseTensor> head = reader->readTensor("lm_head");
  ASSERT_TRUE(bool(head)) << llvm::toString(head.takeError());
  EXPECT_EQ(head->data, state.at("wte").data);
  llvm::Expected<StateTensors> loaded = loadPlanState(*reader, plan);
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  EXPECT_EQ(loaded->at("wte").data, state.at("wte").data);
  EXPECT_EQ(loaded->at("mask").data, mask.data);
  llvm::sys::fs::remove_directories(dir);

  // A checkpoint without the other name and the buffer (an older titan's,
  // or PyTorch's without a non-persistent buffer) loads.
  CheckpointPlan stateOnly = plan;
  stateOnly.tensors.resize(1);
  ranks.clear();
  for (unsigned rank = 0; rank < 2; ++rank)
    ranks.push_back(llvm::cantFail(planRankData(stateOnly, rank, lookup)));
  reader = writeAndOpen(ranks, dir);
  ASSERT_TRUE(bool(reader)) << llvm::toString(reader.takeError());
  loaded = loadPlanState(*reader, plan);
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  EXPECT_EQ(loaded->size(), 1u);
  EXPECT_EQ(loaded->at("wte").data, state.at("wte").data);
  llvm::sys::fs::remove_directories(dir);

  // A checkpoint of a model that does not tie them: lm_head differs.
  CheckpointPlan untied = plan;
  untied.tensors[1].source = "head";
  untied.tensors[1].kind = PlanTensorKind::State;
  state.emplace("head", floats({10, 11, 12, 14}, {2, 2}));
  ranks.clear();
  for (unsigned rank = 0; rank < 2; ++rank)
    ranks.push_back(llvm::cantFail(planRankData(untied, rank, lookup)));
  reader = writeAndOpen(ranks, dir);
  ASSERT_TRUE(bool(reader)) << llvm::toString(reader.takeError());
  EXPECT_NE(errorOf(loadPlanState(*reader, plan))
                .find("the checkpoint's 'lm_head' and 'wte' differ, but the "
                      "program holds both in 'wte'"),
            std::string::npos);
  llvm::sys::fs::remove_directories(dir);
}

TEST(PlanTest, RejectsAnAliasOfNoStateKey) {
  std::string orphan = "titan-checkpoint-plan 1\nranks 1\n"
                       "tensor head wte float32 [2] alias\n"
                       "box 0 [0] [2] write\n";
  expectParseError(orphan, "alias 'head' of 'wte', which no state key holds");
  std::string reshaped = "titan-checkpoint-plan 1\nranks 1\n"
                         "tensor wte wte float32 [2]\nbox 0 [0] [2] write\n"
                         "tensor head wte float32 [1] alias\n"
                         "box 0 [0] [1] write\n";
  expectParseError(reshaped,
                   "alias 'head' is float32 [1], the 'wte' it aliases "
                   "float32 [2]");
  std::string unknown = "titan-checkpoint-plan 1\nranks 1\n"
                        "tensor w w float32 [2] tied\n";
  expectParseError(unknown, "line 3: expected 'tensor <key> <source> <dtype> "
                            "<shape> [alias|buffer]'");
}
} // namespace
