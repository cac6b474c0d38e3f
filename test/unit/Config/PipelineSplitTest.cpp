//===- PipelineSplitTest.cpp - the stages of a pipeline -------------------===//
//
// The expected splits are torchtitan's: v0.2.x pipeline_llm and
// generate_llm_fqn_per_model_part (torchtitan/distributed/
// pipeline_parallel.py), v0.1.0 split points
// (torchtitan/models/llama3/infra/pipeline.py).
//
//===----------------------------------------------------------------------===//

#include "titan/Config/PipelineSplit.h"
#include "titan/Config/TrainConfig.h"

#include "gtest/gtest.h"

using namespace mlir::titan;

namespace {

using P = PipelineStagePlacement;
using Counts = std::vector<int64_t>;
using Strings = std::vector<std::string>;

/// "PREFIX0" .. "PREFIX<n-1>".
Strings blocks(int n, llvm::StringRef prefix = "layers.") {
  Strings names;
  for (int i = 0; i < n; ++i)
    names.push_back(prefix.str() + std::to_string(i));
  return names;
}

const Strings kLeading = {"tok_embeddings"};
const Strings kTrailing = {"norm", "output"};

ParallelismConfig pipeline(int64_t degree) {
  ParallelismConfig parallelism;
  parallelism.pipelineParallelDegree = degree;
  return parallelism;
}

/// The split of `numBlocks` Llama blocks (a failure fails the test).
PipelineSplit split(const ParallelismConfig &parallelism, int numBlocks,
                    P placement) {
  llvm::Expected<PipelineSplit> result = splitPipelineStages(
      parallelism, blocks(numBlocks), placement, kLeading, kTrailing);
  if (!result) {
    ADD_FAILURE() << llvm::toString(result.takeError());
    return {};
  }
  return *result;
}

Counts countsOf(const PipelineSplit &split) {
  return Counts(split.blocksPerStage.begin(), split.blocksPerStage.end());
}

/// The message of a failed split, or "".
std::string splitError(const ParallelismConfig &parallelism, int numBlocks,
                    P placement) {
  llvm::Expected<PipelineSplit> result = splitPipelineStages(
      parallelism, blocks(numBlocks), placement, kLeading, kTrailing);
  if (result)
    return "";
  return llvm::toString(result.takeError());
}

TEST(PipelineSplit, SchedulesAreTorchsMatchedInAnyCase) {
  const PipelineScheduleInfo *schedule =
      lookupPipelineSchedule("interleaved1f1b");
  ASSERT_NE(schedule, nullptr);
  EXPECT_EQ(schedule->name, "Interleaved1F1B");
  EXPECT_EQ(schedule->placement, P::Loop);
  EXPECT_EQ(lookupPipelineSchedule("GPIPE")->placement, P::Single);
  EXPECT_EQ(lookupPipelineSchedule("1f1b")->placement, P::Single);
  EXPECT_EQ(lookupPipelineSchedule("ZBVZeroBubble")->placement, P::V);
  EXPECT_EQ(lookupPipelineSchedule("DualPipeV")->placement, P::V);
  EXPECT_EQ(lookupPipelineSchedule("InterleavedZeroBubble")->placement,
            P::Loop);
  EXPECT_EQ(lookupPipelineSchedule("Interleaved1F1C"), nullptr);
  std::vector<llvm::StringRef> unsupported;
  for (const PipelineScheduleInfo &known : getPipelineSchedules())
    if (!known.supported)
      unsupported.push_back(known.name);
  EXPECT_EQ(unsupported,
            (std::vector<llvm::StringRef>{"DualPipeV"}));
  EXPECT_EQ(getPipelineSchedules().size(), 7u);
}

TEST(PipelineSplit, NoPipelineIsOneStage) {
  ParallelismConfig parallelism = pipeline(1);
  parallelism.pipelineParallelLayersPerStage = 3;
  PipelineSplit one = split(parallelism, 16, P::Loop);
  EXPECT_EQ(one.numStages, 1);
  EXPECT_EQ(one.stagesPerRank, 1);
  EXPECT_TRUE(one.blocksPerStage.empty());
}

TEST(PipelineSplit, WithoutASplitKeyTheCostModelBalancesTheStages) {
  // torchtitan's stage counts: 1 per rank for GPipe and 1F1B, 2 otherwise.
  PipelineSplit single = split(pipeline(4), 16, P::Single);
  EXPECT_EQ(single.numStages, 4);
  EXPECT_EQ(single.stagesPerRank, 1);
  EXPECT_TRUE(single.blocksPerStage.empty());
  PipelineSplit looped = split(pipeline(4), 32, P::Loop);
  EXPECT_EQ(looped.numStages, 8);
  EXPECT_EQ(looped.stagesPerRank, 2);
  EXPECT_TRUE(looped.blocksPerStage.empty());
  PipelineSplit v = split(pipeline(2), 12, P::V);
  EXPECT_EQ(v.numStages, 4);
  EXPECT_TRUE(v.blocksPerStage.empty());
  // The split torchtitan would compute must exist: 8 stages need 8
  // effective layers (5 blocks + 1 + 1 is 7).
  EXPECT_EQ(splitError(pipeline(4), 5, P::Loop),
            "pipeline_parallel_degree=4 with a multi-stage schedule gives 8 "
            "stages, more than the 7 effective layers torchtitan splits (5 "
            "blocks + pipeline_parallel_first_stage_less_layers 1 + "
            "pipeline_parallel_last_stage_less_layers 1); use fewer stages (a "
            "lower pipeline_parallel_degree, a larger "
            "pipeline_parallel_layers_per_stage or a single-stage schedule)");
}

TEST(PipelineSplit, WrittenLessLayersAskForTorchtitansSplit) {
  // generate_llm_fqn_per_model_part(4, 16, 1, 1): 18 effective layers, 4
  // and 2 over: 5, 5, 4, 4 less the embeddings and the output.
  ParallelismConfig parallelism = pipeline(4);
  parallelism.pipelineParallelFirstStageLessLayers = 1;
  PipelineSplit torchtitan = split(parallelism, 16, P::Single);
  EXPECT_EQ(torchtitan.numStages, 4);
  EXPECT_EQ(countsOf(torchtitan), (Counts{4, 5, 4, 3}));
  parallelism.pipelineParallelFirstStageLessLayers.reset();
  parallelism.pipelineParallelLastStageLessLayers = 1;
  EXPECT_EQ(countsOf(split(parallelism, 16, P::Single)), (Counts{4, 5, 4, 3}));
  parallelism.pipelineParallelFirstStageLessLayers = 2;
  parallelism.pipelineParallelLastStageLessLayers = 0;
  EXPECT_EQ(countsOf(split(parallelism, 16, P::Single)), (Counts{3, 5, 4, 4}));
  parallelism.pipelineParallelFirstStageLessLayers = 0;
  EXPECT_EQ(countsOf(split(parallelism, 16, P::Single)), (Counts{4, 4, 4, 4}));
  parallelism.pipelineParallelFirstStageLessLayers = 1;
  parallelism.pipelineParallelLastStageLessLayers = 2;
  EXPECT_EQ(countsOf(split(parallelism, 16, P::Single)), (Counts{4, 5, 5, 2}));
  // Two stages per rank for a multi-stage schedule.
  ParallelismConfig looped = pipeline(4);
  looped.pipelineParallelLastStageLessLayers = 1;
  PipelineSplit eight = split(looped, 32, P::Loop);
  EXPECT_EQ(eight.numStages, 8);
  EXPECT_EQ(eight.stagesPerRank, 2);
  EXPECT_EQ(countsOf(eight), (Counts{4, 5, 4, 4, 4, 4, 4, 3}));
  // A stage may get no block (torchtitan's split of 6 blocks in 8 stages).
  EXPECT_EQ(countsOf(split(looped, 6, P::Loop)),
            (Counts{0, 1, 1, 1, 1, 1, 1, 0}));
  // More than a stage's effective layers is refused, as torchtitan does.
  parallelism.pipelineParallelFirstStageLessLayers = 6;
  parallelism.pipelineParallelLastStageLessLayers = 1;
  EXPECT_EQ(splitError(parallelism, 16, P::Single),
            "'parallelism.pipeline_parallel_first_stage_less_layers' = 6 is "
            "more than the 5 effective layers of a stage (23 = 16 blocks + 6 "
            "+ 1, over 4 stages), which torchtitan refuses; set it to at most "
            "5");
  parallelism.pipelineParallelFirstStageLessLayers = 1;
  parallelism.pipelineParallelLastStageLessLayers = 7;
  EXPECT_EQ(splitError(parallelism, 16, P::Single),
            "'parallelism.pipeline_parallel_last_stage_less_layers' = 7 is "
            "more than the 6 effective layers of a stage (24 = 16 blocks + 1 "
            "+ 7, over 4 stages), which torchtitan refuses; set it to at most "
            "5");
}

TEST(PipelineSplit, LayersPerStageGivesTheNumberOfStages) {
  // ceil((32 + 1 + 1) / 3) = 12 stages, 3 per rank.
  ParallelismConfig parallelism = pipeline(4);
  parallelism.pipelineParallelLayersPerStage = 3;
  PipelineSplit twelve = split(parallelism, 32, P::Loop);
  EXPECT_EQ(twelve.numStages, 12);
  EXPECT_EQ(twelve.stagesPerRank, 3);
  EXPECT_EQ(countsOf(twelve), (Counts{2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 1}));
  // Without the embeddings' and the output's weight, 4 layers fit 8 stages.
  parallelism.pipelineParallelLayersPerStage = 4;
  parallelism.pipelineParallelFirstStageLessLayers = 0;
  parallelism.pipelineParallelLastStageLessLayers = 0;
  PipelineSplit eight = split(parallelism, 32, P::Loop);
  EXPECT_EQ(eight.numStages, 8);
  EXPECT_EQ(eight.stagesPerRank, 2);
  EXPECT_EQ(countsOf(eight), (Counts{4, 4, 4, 4, 4, 4, 4, 4}));
  // Single-stage schedules, stages at most one layer apart.
  ParallelismConfig single = pipeline(4);
  single.pipelineParallelLayersPerStage = 5;
  EXPECT_EQ(countsOf(split(single, 16, P::Single)), (Counts{4, 5, 4, 3}));
  ParallelismConfig two = pipeline(2);
  two.pipelineParallelLayersPerStage = 9;
  EXPECT_EQ(countsOf(split(two, 15, P::Single)), (Counts{8, 7}));
  // A V schedule with two stages per rank.
  two.pipelineParallelLayersPerStage = 5;
  PipelineSplit v = split(two, 16, P::V);
  EXPECT_EQ(v.numStages, 4);
  EXPECT_EQ(countsOf(v), (Counts{4, 5, 4, 3}));
}

TEST(PipelineSplit, LayersPerStageErrorsAreTorchtitans) {
  ParallelismConfig parallelism = pipeline(4);
  parallelism.pipelineParallelLayersPerStage = 4;
  // 32 blocks + the embeddings' and the output's weight are 34 effective
  // layers: 9 stages of 4, which 4 ranks cannot share.
  EXPECT_EQ(splitError(parallelism, 32, P::Loop),
            "'parallelism.pipeline_parallel_layers_per_stage' = 4 gives "
            "ceil((32 blocks + 1 + 1) / 4) = 9 stages, not a multiple of "
            "pipeline_parallel_degree=4; set it to 3 (12 stages)");
  EXPECT_EQ(splitError(parallelism, 16, P::Single),
            "'parallelism.pipeline_parallel_layers_per_stage' = 4 gives "
            "ceil((16 blocks + 1 + 1) / 4) = 5 stages, not a multiple of "
            "pipeline_parallel_degree=4; set it to 5 (4 stages)");
  parallelism.pipelineParallelLayersPerStage = 5;
  EXPECT_EQ(splitError(parallelism, 16, P::Loop),
            "'parallelism.pipeline_parallel_layers_per_stage' = 5 gives "
            "ceil((16 blocks + 1 + 1) / 5) = 4 stages, 1 per rank, but a "
            "multi-stage schedule runs at least 2 stages per rank; no value "
            "of it splits these blocks so; change pipeline_parallel_degree or "
            "the schedule");
  ParallelismConfig two = pipeline(2);
  two.pipelineParallelLayersPerStage = 1;
  EXPECT_EQ(splitError(two, 2, P::Single),
            "'parallelism.pipeline_parallel_layers_per_stage' = 1 gives "
            "ceil((2 blocks + 1 + 1) / 1) = 4 stages, 2 per rank, but a "
            "single-stage schedule (GPipe, 1F1B) runs exactly 1 stage per "
            "rank; set it to 2 (2 stages)");
  // torchtitan's V schedules take exactly two stages per rank
  // (pipeline_module_split).
  two.pipelineParallelLayersPerStage = 3;
  EXPECT_EQ(splitError(two, 16, P::V),
            "'parallelism.pipeline_parallel_layers_per_stage' = 3 gives "
            "ceil((16 blocks + 1 + 1) / 3) = 6 stages, 3 per rank, but a V "
            "schedule (ZBVZeroBubble) runs exactly 2 stages per rank; set it "
            "to 5 (4 stages)");
  two.pipelineParallelLayersPerStage = 0;
  EXPECT_EQ(splitError(two, 16, P::Single),
            "'parallelism.pipeline_parallel_layers_per_stage' must be at "
            "least 1, got 0");
}

TEST(PipelineSplit, ModuleFqnsPerModelPartNameEachStagesModules) {
  // torchtitan's own example (job_config.py, test_job_config.py).
  ParallelismConfig three = pipeline(3);
  three.moduleFqnsPerModelPart = {{"tok_embeddings", "layers.0"},
                                  {"layers.1", "layers.2"},
                                  {"layers.3", "norm", "output"}};
  PipelineSplit example = split(three, 4, P::Single);
  EXPECT_EQ(example.numStages, 3);
  EXPECT_EQ(example.stagesPerRank, 1);
  EXPECT_EQ(countsOf(example), (Counts{1, 2, 1}));
  // Stages without blocks, two per rank; the order within a part of the
  // modules around the blocks is free.
  ParallelismConfig looped = pipeline(2);
  looped.moduleFqnsPerModelPart = {{"tok_embeddings"},
                                   {"layers.0", "layers.1"},
                                   {"layers.2", "layers.3"},
                                   {"output", "norm"}};
  PipelineSplit four = split(looped, 4, P::Loop);
  EXPECT_EQ(four.numStages, 4);
  EXPECT_EQ(four.stagesPerRank, 2);
  EXPECT_EQ(countsOf(four), (Counts{0, 2, 2, 0}));
  // GPT-2's names.
  ParallelismConfig gpt2 = pipeline(2);
  gpt2.moduleFqnsPerModelPart = {
      {"transformer.wte", "transformer.wpe", "transformer.h.0"},
      {"transformer.h.1", "transformer.ln_f", "lm_head"}};
  llvm::Expected<PipelineSplit> gpt2Split = splitPipelineStages(
      gpt2, blocks(2, "transformer.h."), P::Single,
      {"transformer.wte", "transformer.wpe"}, {"transformer.ln_f", "lm_head"});
  ASSERT_TRUE(bool(gpt2Split)) << llvm::toString(gpt2Split.takeError());
  EXPECT_EQ(countsOf(*gpt2Split), (Counts{1, 1}));
}

TEST(PipelineSplit, ModuleFqnsPerModelPartErrors) {
  auto errorWith = [](std::vector<Strings> parts, P placement = P::Single,
                      int64_t degree = 2) {
    ParallelismConfig parallelism = pipeline(degree);
    parallelism.moduleFqnsPerModelPart = std::move(parts);
    return splitError(parallelism, 4, placement);
  };
  EXPECT_EQ(errorWith({{"tok_embeddings", "layer.0", "layers.1"},
                       {"layers.2", "layers.3", "norm", "output"}}),
            "'parallelism.module_fqns_per_model_part': part 0 names "
            "'layer.0', which is not a module of the model (did you mean "
            "'layers.0'?); the parts name the blocks ('layers.0' to "
            "'layers.3'), the modules before them ('tok_embeddings'), the "
            "modules after them ('norm', 'output')");
  EXPECT_EQ(errorWith({{"tok_embeddings", "layers.0", "layers.1", "norm"},
                       {"layers.2", "layers.3", "output"}}),
            "'parallelism.module_fqns_per_model_part': part 0 names 'norm', a "
            "module after the blocks: it belongs in the last part (part 1)");
  EXPECT_EQ(
      errorWith({{"layers.0", "layers.1"},
                 {"tok_embeddings", "layers.2", "layers.3", "norm", "output"}}),
      "'parallelism.module_fqns_per_model_part': part 1 names "
      "'tok_embeddings', a module before the blocks: it belongs in the "
      "first part (part 0)");
  EXPECT_EQ(errorWith({{"tok_embeddings", "layers.0", "layers.2"},
                       {"layers.1", "layers.3", "norm", "output"}}),
            "'parallelism.module_fqns_per_model_part': part 0 names "
            "'layers.2' where 'layers.1' comes next: the parts take the "
            "blocks in the model's order, every block in exactly one part");
  EXPECT_EQ(errorWith({{"tok_embeddings", "layers.0", "layers.1"},
                       {"layers.1", "layers.2", "layers.3", "norm", "output"}}),
            "'parallelism.module_fqns_per_model_part': 'layers.1' is in part "
            "0 and part 1: every module is in exactly one part");
  EXPECT_EQ(errorWith({{"tok_embeddings", "tok_embeddings", "layers.0"},
                       {"layers.1", "layers.2", "layers.3", "norm", "output"}}),
            "'parallelism.module_fqns_per_model_part': part 0 names "
            "'tok_embeddings' twice: every module is in exactly one part");
  EXPECT_EQ(errorWith({{"tok_embeddings", "layers.0"},
                       {"layers.1", "norm", "output"}}),
            "'parallelism.module_fqns_per_model_part': 'layers.2' to "
            "'layers.3' are in no part: every block must be in exactly one "
            "part");
  EXPECT_EQ(errorWith({{"layers.0", "layers.1"},
                       {"layers.2", "layers.3", "norm", "output"}}),
            "'parallelism.module_fqns_per_model_part': 'tok_embeddings' is in "
            "no part: it belongs in the first part, with the first blocks");
  EXPECT_EQ(errorWith({{"tok_embeddings", "layers.0", "layers.1"},
                       {"layers.2", "layers.3", "norm"}}),
            "'parallelism.module_fqns_per_model_part': 'output' is in no "
            "part: it belongs in the last part, with the last blocks");
  // Stage counts: a multiple of the degree (torchtitan asserts it), one
  // per rank for single-stage schedules, two for V schedules.
  EXPECT_EQ(errorWith({{"tok_embeddings", "layers.0"},
                       {"layers.1", "layers.2"},
                       {"layers.3", "norm", "output"}}),
            "'parallelism.module_fqns_per_model_part' has 3 parts, not a "
            "multiple of pipeline_parallel_degree=2: every rank runs the same "
            "number of stages");
  std::vector<Strings> four = {{"tok_embeddings", "layers.0"},
                               {"layers.1"},
                               {"layers.2"},
                               {"layers.3", "norm", "output"}};
  EXPECT_EQ(errorWith(four),
            "'parallelism.module_fqns_per_model_part' has 4 parts, 2 per "
            "rank, but a single-stage schedule (GPipe, 1F1B) runs exactly 1 "
            "stage per rank; give 2 stages");
  EXPECT_EQ(errorWith(four, P::V, 2), "");
  EXPECT_EQ(errorWith(four, P::V, 4),
            "'parallelism.module_fqns_per_model_part' has 4 parts, 1 per "
            "rank, but a V schedule (ZBVZeroBubble) runs exactly 2 stages per "
            "rank; give 8 stages");
  // A looped schedule takes any number per rank, as torch does.
  EXPECT_EQ(errorWith(four, P::Loop, 4), "");
}

TEST(PipelineSplit, SplitPointsBeginStages) {
  ParallelismConfig two = pipeline(2);
  two.pipelineParallelSplitPoints = {"layers.4"};
  PipelineSplit halves = split(two, 8, P::Single);
  EXPECT_EQ(halves.numStages, 2);
  EXPECT_EQ(countsOf(halves), (Counts{4, 4}));
  two.pipelineParallelSplitPoints = {"layers.0"};
  EXPECT_EQ(countsOf(split(two, 8, P::Single)), (Counts{0, 8}));
  two.pipelineParallelSplitPoints = {"layers.1", "layers.4", "layers.6"};
  PipelineSplit looped = split(two, 8, P::Loop);
  EXPECT_EQ(looped.stagesPerRank, 2);
  EXPECT_EQ(countsOf(looped), (Counts{1, 3, 2, 2}));

  two.pipelineParallelSplitPoints = {"layers.9"};
  EXPECT_EQ(splitError(two, 8, P::Single),
            "'parallelism.pipeline_parallel_split_points' names 'layers.9', "
            "which is not a block of the model (did you mean 'layers.0'?); "
            "split points name the blocks where stages begin ('layers.0' to "
            "'layers.7')");
  two.pipelineParallelSplitPoints = {"norm"};
  EXPECT_EQ(splitError(two, 8, P::Single),
            "'parallelism.pipeline_parallel_split_points' names 'norm', which "
            "is not a block of the model; split points name the blocks where "
            "stages begin ('layers.0' to 'layers.7')");
  two.pipelineParallelSplitPoints = {"layers.4", "layers.2", "layers.6"};
  EXPECT_EQ(splitError(two, 8, P::Loop),
            "'parallelism.pipeline_parallel_split_points' names 'layers.2' "
            "after 'layers.4': split points must be in the model's order, "
            "each once");
  two.pipelineParallelSplitPoints = {"layers.2", "layers.2", "layers.6"};
  EXPECT_EQ(splitError(two, 8, P::Loop),
            "'parallelism.pipeline_parallel_split_points' names 'layers.2' "
            "twice: split points must be in the model's order, each once");
  two.pipelineParallelSplitPoints = {"layers.2", "layers.4"};
  EXPECT_EQ(splitError(two, 8, P::Loop),
            "'parallelism.pipeline_parallel_split_points' has 2 split points, "
            "so 3 stages, not a multiple of pipeline_parallel_degree=2: every "
            "rank runs the same number of stages");
  two.pipelineParallelSplitPoints = {"layers.2", "layers.4", "layers.6"};
  EXPECT_EQ(splitError(two, 8, P::Single),
            "'parallelism.pipeline_parallel_split_points' has 3 split points, "
            "so 4 stages, 2 per rank, but a single-stage schedule (GPipe, "
            "1F1B) runs exactly 1 stage per rank; give 2 stages");
}

TEST(PipelineSplit, ExplicitSplitsExcludeTheComputedOnes) {
  ParallelismConfig parallelism = pipeline(2);
  parallelism.moduleFqnsPerModelPart = {
      {"tok_embeddings", "layers.0", "layers.1"},
      {"layers.2", "layers.3", "norm", "output"}};
  parallelism.pipelineParallelSplitPoints = {"layers.2"};
  EXPECT_EQ(splitError(parallelism, 4, P::Single),
            "'parallelism.module_fqns_per_model_part' (torchtitan v0.2) and "
            "'parallelism.pipeline_parallel_split_points' (v0.1) both split "
            "the model into stages; give one of them");
  parallelism.pipelineParallelSplitPoints.clear();
  parallelism.pipelineParallelLayersPerStage = 2;
  EXPECT_EQ(splitError(parallelism, 4, P::Single),
            "'parallelism.pipeline_parallel_layers_per_stage' = 2 computes "
            "the split that 'parallelism.module_fqns_per_model_part' gives "
            "explicitly (torchtitan takes the explicit one); give one of "
            "them");
  parallelism.pipelineParallelLayersPerStage.reset();
  // The less-layers keys only weigh a computed split: their default says
  // nothing, another value is refused.
  parallelism.pipelineParallelFirstStageLessLayers = 1;
  EXPECT_EQ(splitError(parallelism, 4, P::Single), "");
  parallelism.pipelineParallelLastStageLessLayers = 2;
  EXPECT_EQ(splitError(parallelism, 4, P::Single),
            "'parallelism.pipeline_parallel_last_stage_less_layers' = 2 does "
            "nothing with 'parallelism.module_fqns_per_model_part', which "
            "names the modules of every stage (torchtitan ignores it); remove "
            "it");
  ParallelismConfig points = pipeline(2);
  points.pipelineParallelSplitPoints = {"layers.2"};
  points.pipelineParallelLayersPerStage = 2;
  EXPECT_EQ(splitError(points, 4, P::Single),
            "'parallelism.pipeline_parallel_layers_per_stage' = 2 computes "
            "the split that 'parallelism.pipeline_parallel_split_points' "
            "gives explicitly (torchtitan takes the explicit one); give one "
            "of them");
  // Without a pipeline none of this is read, as in torchtitan.
  points.pipelineParallelDegree = 1;
  EXPECT_FALSE(llvm::errorToBool(checkPipelineSplitKeys(points)));
  points.pipelineParallelDegree = 0;
  EXPECT_EQ(splitError(points, 4, P::Single),
            "'parallelism.pipeline_parallel_degree' must be at least 1, got "
            "0");
}

} // namespace
