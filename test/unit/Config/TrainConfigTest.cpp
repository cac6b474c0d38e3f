//===- TrainConfigTest.cpp - training config parsing ----------------------===//

#include "ParseErrors.h"

#include "titan/Config/TrainConfig.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace mlir::titan;

namespace {

TEST(TrainConfig, ReadsTorchtitanKeys) {
  llvm::Expected<TrainConfig> config = parseTrainConfig(R"(
[model]
name = "llama3"
flavor = "debugmodel"
[optimizer]
name = "AdamW"
lr = 3e-4
beta2 = 0.99
weight_decay = 0
[training]
local_batch_size = 4
seq_len = 128
max_norm = 0.5
[parallelism]
data_parallel_shard_degree = -1
tensor_parallel_degree = 2
)",
                                                        "cfg.toml");
  ASSERT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  EXPECT_EQ(config->modelFlavor, "debugmodel");
  EXPECT_DOUBLE_EQ(config->optimizer.lr, 3e-4);
  EXPECT_DOUBLE_EQ(config->optimizer.beta1, 0.9); // default
  EXPECT_DOUBLE_EQ(config->optimizer.beta2, 0.99);
  EXPECT_DOUBLE_EQ(config->optimizer.weightDecay, 0.0); // integer for float
  EXPECT_EQ(config->training.localBatchSize, 4);
  EXPECT_EQ(config->training.seqLen, 128);
  EXPECT_DOUBLE_EQ(config->training.maxNorm, 0.5);
  EXPECT_EQ(config->parallelism.dataParallelShardDegree, -1);
  EXPECT_EQ(config->parallelism.tensorParallelDegree, 2);
}

TEST(TrainConfig, OverridesApplyAfterTheFile) {
  llvm::Expected<TrainConfig> config = parseTrainConfig(
      "[training]\nseq_len = 2048\n", "cfg.toml",
      {"training.seq_len=64", "model.flavor=8B", "optimizer.lr=1e-3",
       "parallelism.enable_sequence_parallel=false"});
  ASSERT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  EXPECT_EQ(config->training.seqLen, 64);
  EXPECT_EQ(config->modelFlavor, "8B");
  EXPECT_DOUBLE_EQ(config->optimizer.lr, 1e-3);
  EXPECT_FALSE(config->parallelism.enableSequenceParallel);
}

TEST(TrainConfig, AnOverrideOfANumberForAStringKeyIsThatString) {
  // `--set activation_checkpoint.selective_ac_option=2`, as torchtitan's
  // command line takes it; a number key keeps its type errors.
  llvm::Expected<TrainConfig> config = parseTrainConfig(
      "", "cfg.toml",
      {"activation_checkpoint.selective_ac_option=2", "model.flavor=8"});
  ASSERT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  EXPECT_EQ(config->activationCheckpoint.selectiveAcOption, "2");
  EXPECT_EQ(config->modelFlavor, "8");
  EXPECT_EQ(errorOf("", {"training.seq_len=long"}),
            "override 'training.seq_len=long':2: 'training.seq_len' must be "
            "an integer");
}

TEST(TrainConfig, TyposAreErrorsWithASuggestion) {
  EXPECT_EQ(errorOf("[training]\nseq_lenn = 8\n"),
            "cfg.toml:2: unknown key 'training.seq_lenn' (did you mean "
            "'seq_len'?)");
  EXPECT_EQ(errorOf("[trainin]\nseq_len = 8\n"),
            "cfg.toml:1: unknown section [trainin] (did you mean "
            "'training'?)");
  EXPECT_EQ(errorOf("[model]\nfoo = 1\n"), "cfg.toml:2: unknown key "
                                           "'model.foo'");
  EXPECT_EQ(errorOf("", {"training.seq_lem=8"}),
            "override 'training.seq_lem=8':2: unknown key "
            "'training.seq_lem' (did you mean 'seq_len'?)");
}

TEST(TrainConfig, WrongTypesAndValuesAreErrors) {
  EXPECT_EQ(errorOf("[training]\nseq_len = \"long\"\n"),
            "cfg.toml:2: 'training.seq_len' must be an integer");
  EXPECT_EQ(errorOf("[optimizer]\nlr = true\n"),
            "cfg.toml:2: 'optimizer.lr' must be a number");
  EXPECT_EQ(errorOf("[optimizer]\nbeta1 = 1.0\n"),
            "cfg.toml: 'optimizer.beta1' must be in [0, 1), got 1.00");
  EXPECT_EQ(errorOf("[optimizer]\nname = \"SGD\"\n"),
            "cfg.toml: 'optimizer.name' must be \"AdamW\" (the only "
            "optimizer titan builds), got \"SGD\"");
  EXPECT_EQ(errorOf("[training]\nlocal_batch_size = 0\n"),
            "cfg.toml: 'training.local_batch_size' must be at least 1");
  EXPECT_EQ(errorOf("[parallelism]\nasync_tensor_parallel_chunks = -2\n"),
            "cfg.toml: 'parallelism.async_tensor_parallel_chunks' must be at "
            "least 0 (0: the count the cost model predicts fastest)");
  EXPECT_EQ(errorOf("training = 3\n"),
            "cfg.toml:1: 'training' must be a section ([training])");
  EXPECT_EQ(errorOf("", {"seq_len=8"}),
            "override 'seq_len=8': expected section.key=value, e.g. "
            "training.seq_len=64");
}

TEST(TrainConfig, NonFiniteAndUnknownValuesAreErrors) {
  EXPECT_EQ(errorOf("[optimizer]\nlr = nan\n"),
            "cfg.toml: 'optimizer.lr' must be a finite number >= 0, got nan");
  EXPECT_EQ(errorOf("[optimizer]\nlr = inf\n"),
            "cfg.toml: 'optimizer.lr' must be a finite number >= 0, got INF");
  EXPECT_EQ(errorOf("[optimizer]\nbeta2 = nan\n"),
            "cfg.toml: 'optimizer.beta2' must be in [0, 1), got nan");
  EXPECT_EQ(errorOf("[optimizer]\neps = -inf\n"),
            "cfg.toml: 'optimizer.eps' must be a finite positive number");
  EXPECT_EQ(errorOf("[training]\nmax_norm = nan\n"),
            "cfg.toml: 'training.max_norm' must be a finite number (<= 0: "
            "no gradient clipping)");
  EXPECT_EQ(errorOf("[training]\nmixed_precision_param = \"float8\"\n"),
            "cfg.toml: 'training.mixed_precision_param' must be one of "
            "\"float32\", \"bfloat16\", \"float16\", got \"float8\" (did you "
            "mean 'float32'?)");
  EXPECT_EQ(errorOf("[activation_checkpoint]\nmode = \"sometimes\"\n"),
            "cfg.toml: 'activation_checkpoint.mode' must be one of \"none\", "
            "\"selective\", \"full\", \"memory_budget\", \"auto\", got "
            "\"sometimes\"");
  EXPECT_EQ(errorOf("[activation_checkpoint]\nmemory_budget = 1.5\n"),
            "cfg.toml: 'activation_checkpoint.memory_budget' must be a "
            "fraction in [0, 1] (0: full checkpointing, 1: none), got 1.50");
  EXPECT_EQ(errorOf("[activation_checkpoint]\nmemory_budget_gib = 0\n"),
            "cfg.toml: 'activation_checkpoint.memory_budget_gib' must be "
            "positive (GiB per rank), got 0.00");
  EXPECT_EQ(
      errorOf("[activation_checkpoint]\nselective_ac_option = \"0\"\n"),
      "cfg.toml: 'activation_checkpoint.selective_ac_option' must be \"op\" "
      "or a positive integer (checkpoint every n-th layer), got \"0\"");
  EXPECT_EQ(errorOf("[lr_scheduler]\ndecay_type = \"cosin\"\n"),
            "cfg.toml: 'lr_scheduler.decay_type' must be one of \"linear\", "
            "\"sqrt\", \"cosine\", got \"cosin\" (did you mean 'cosine'?)");
  // Gradients are reduced in the dtype they are computed in or in float32.
  EXPECT_EQ(errorOf("[training]\nmixed_precision_param = \"bfloat16\"\n"
                    "mixed_precision_reduce = \"float16\"\n"),
            "cfg.toml: 'training.mixed_precision_reduce' = \"float16\" differs "
            "from the parameters' \"bfloat16\": titan reduces gradients in "
            "the dtype they are computed in or in float32 (set it to "
            "\"float32\")");
  // Pure bf16 training: bfloat16 or float32 throughout; the forward reads
  // the bf16 parameters as they are, and the gradients are reduced in
  // bf16 or float32.
  EXPECT_EQ(errorOf("[training]\ndtype = \"float16\"\n"),
            "cfg.toml: 'training.dtype' must be one of \"float32\", "
            "\"bfloat16\", got \"float16\" (did you mean 'bfloat16'?)");
  EXPECT_EQ(errorOf("[training]\ndtype = \"bfloat16\"\n"
                    "mixed_precision_param = \"float16\"\n"),
            "cfg.toml: 'training.mixed_precision_param' = \"float16\" under "
            "training.dtype = \"bfloat16\": the parameters are bfloat16 "
            "already, and the forward reads them as they are (set it to "
            "\"bfloat16\" or \"float32\")");
  EXPECT_EQ(errorOf("[training]\ndtype = \"bfloat16\"\n"
                    "mixed_precision_reduce = \"float16\"\n"),
            "cfg.toml: 'training.mixed_precision_reduce' = \"float16\" differs "
            "from the parameters' \"bfloat16\": titan reduces gradients in "
            "the dtype they are computed in or in float32 (set it to "
            "\"float32\")");
  // A value cannot smuggle a second key in on another line.
  EXPECT_EQ(errorOf("", {"training.seq_len=8\nsteps=5"}),
            "override 'training.seq_len=8\nsteps=5': a value must be on one "
            "line");
}

TEST(TrainConfig, WarnsAboutWhatItDoesNotApply) {
  llvm::Expected<TrainConfig> config = parseTrainConfig(
      "[model]\nname = \"gpt9\"\n[lr_scheduler]\nwarmup_steps = 0\n"
      "decay_ratio = 0.0\n[training]\nmixed_precision_param = "
      "\"bfloat16\"\n",
      "cfg.toml");
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  ASSERT_EQ(config->warnings.size(), 1u);
  EXPECT_EQ(config->warnings[0],
            "model.name \"gpt9\" is not a family of titan's models/ (did you "
            "mean 'gpt2'?); the model is the one MODEL.pt holds");
  llvm::Expected<TrainConfig> flavor = parseTrainConfig(
      "[model]\nname = \"llama3\"\nflavor = \"nope\"\n[lr_scheduler]\n"
      "warmup_steps = 0\ndecay_ratio = 0.0\n[activation_checkpoint]\n"
      "mode = \"none\"\n",
      "cfg.toml");
  ASSERT_TRUE(bool(flavor)) << llvm::toString(flavor.takeError());
  EXPECT_EQ(flavor->warnings,
            std::vector<std::string>{"model.flavor \"nope\" is not a flavor "
                                     "of llama3; the model is the one "
                                     "MODEL.pt holds"});
}

TEST(TrainConfig, SaysAsyncTensorParallelismNeedsTensorParallelism) {
  llvm::Expected<TrainConfig> alone = parseTrainConfig(
      "[parallelism]\nenable_async_tensor_parallel = true\n", "cfg.toml");
  ASSERT_TRUE(bool(alone)) << llvm::toString(alone.takeError());
  EXPECT_TRUE(alone->parallelism.enableAsyncTensorParallel);
  EXPECT_EQ(alone->warnings,
            std::vector<std::string>{
                "parallelism.enable_async_tensor_parallel = true does nothing "
                "without tensor parallelism (tensor_parallel_degree = 1)"});
  llvm::Expected<TrainConfig> withTp =
      parseTrainConfig("[parallelism]\nenable_async_tensor_parallel = true\n"
                       "tensor_parallel_degree = 2\n",
                       "cfg.toml");
  ASSERT_TRUE(bool(withTp)) << llvm::toString(withTp.takeError());
  EXPECT_TRUE(withTp->warnings.empty());
}

TEST(TrainConfig, AcceptsWhatItApplies) {
  // What titan applies is accepted, as is what asks for nothing (what an
  // absent key means); a schedule without pipeline stages does nothing, as
  // in torchtitan.
  for (const char *neutral :
       {"", "[activation_checkpoint]\nmode = \"none\"\n",
        "[activation_checkpoint]\nmode = \"full\"\n",
        "[activation_checkpoint]\nmode = \"selective\"\n"
        "selective_ac_option = \"2\"\n",
        "[parallelism]\nfsdp_reshard_after_forward = \"never\"\n",
        "[parallelism]\nfsdp_reshard_after_forward = \"always\"\n",
        "[parallelism]\nfsdp_reshard_after_forward = \"default\"\n"
        "enable_async_tensor_parallel = false\npipeline_parallel_degree = 1\n"
        "pipeline_parallel_schedule = \"Interleaved1F1B\"\n"})
    EXPECT_EQ(errorOf(neutral), "") << neutral;
  llvm::Expected<TrainConfig> defaults = parseTrainConfig("", "cfg.toml");
  ASSERT_TRUE(bool(defaults)) << llvm::toString(defaults.takeError());
  EXPECT_EQ(defaults->activationCheckpoint.mode, "none");
}

TEST(TrainConfig, ReadsThePipelineKeys) {
  llvm::Expected<TrainConfig> defaults = parseTrainConfig("", "cfg.toml");
  ASSERT_TRUE(bool(defaults)) << llvm::toString(defaults.takeError());
  const ParallelismConfig &none = defaults->parallelism;
  EXPECT_EQ(none.pipelineParallelDegree, 1);
  EXPECT_EQ(none.pipelineParallelSchedule, "1F1B");
  EXPECT_EQ(none.pipelineParallelMicrobatchSize, 1);
  EXPECT_EQ(none.pipelineParallelScheduleCsv, "");
  EXPECT_FALSE(none.pipelineParallelLayersPerStage);
  EXPECT_FALSE(none.pipelineParallelFirstStageLessLayers);
  EXPECT_EQ(none.getFirstStageLessLayers(), 1);
  EXPECT_EQ(none.getLastStageLessLayers(), 1);
  EXPECT_FALSE(none.hasPipelineSplitKey());

  llvm::Expected<TrainConfig> config = parseTrainConfig(R"(
[training]
local_batch_size = 8
[parallelism]
pipeline_parallel_degree = 4
pipeline_parallel_schedule = "interleaved1f1b"
pipeline_parallel_microbatch_size = 2
pipeline_parallel_layers_per_stage = 3
pipeline_parallel_first_stage_less_layers = 0
pipeline_parallel_schedule_csv = "/schedules/mine.csv"
)",
                                                        "cfg.toml");
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  const ParallelismConfig &pp = config->parallelism;
  EXPECT_EQ(pp.pipelineParallelDegree, 4);
  // torch's spelling of a name matched in any case.
  EXPECT_EQ(pp.pipelineParallelSchedule, "Interleaved1F1B");
  EXPECT_EQ(pp.pipelineParallelMicrobatchSize, 2);
  EXPECT_EQ(pp.pipelineParallelLayersPerStage, 3);
  EXPECT_EQ(pp.pipelineParallelFirstStageLessLayers, 0);
  EXPECT_FALSE(pp.pipelineParallelLastStageLessLayers);
  EXPECT_EQ(pp.getLastStageLessLayers(), 1);
  EXPECT_EQ(pp.pipelineParallelScheduleCsv, "/schedules/mine.csv");
  EXPECT_TRUE(pp.hasPipelineSplitKey());
  EXPECT_TRUE(config->warnings.empty());

  llvm::Expected<TrainConfig> lists = parseTrainConfig(R"(
[parallelism]
pipeline_parallel_degree = 2
module_fqns_per_model_part = [["tok_embeddings", "layers.0"], ["layers.1", "norm", "output"]]
)",
                                                       "cfg.toml");
  ASSERT_TRUE(bool(lists)) << llvm::toString(lists.takeError());
  EXPECT_EQ(
      lists->parallelism.moduleFqnsPerModelPart,
      (std::vector<std::vector<std::string>>{{"tok_embeddings", "layers.0"},
                                             {"layers.1", "norm", "output"}}));
  llvm::Expected<TrainConfig> points = parseTrainConfig(
      "[parallelism]\npipeline_parallel_split_points = [\"layers.2\", "
      "\"layers.4\"]\n",
      "cfg.toml");
  ASSERT_TRUE(bool(points)) << llvm::toString(points.takeError());
  EXPECT_EQ(points->parallelism.pipelineParallelSplitPoints,
            (std::vector<std::string>{"layers.2", "layers.4"}));
}

TEST(TrainConfig, PipelineKeyErrorsNameTheKey) {
  // Types.
  EXPECT_EQ(errorOf("[parallelism]\npipeline_parallel_layers_per_stage = "
                    "2.5\n"),
            "cfg.toml:2: 'parallelism.pipeline_parallel_layers_per_stage' "
            "must be an integer");
  EXPECT_EQ(errorOf("[parallelism]\nmodule_fqns_per_model_part = "
                    "[\"layers.0\"]\n"),
            "cfg.toml:2: 'parallelism.module_fqns_per_model_part' must be an "
            "array of arrays of strings");
  EXPECT_EQ(errorOf("[parallelism]\nmodule_fqns_per_model_part = [[1]]\n"),
            "cfg.toml:2: 'parallelism.module_fqns_per_model_part' must be an "
            "array of arrays of strings");
  EXPECT_EQ(errorOf("[parallelism]\npipeline_parallel_split_points = "
                    "\"layers.2\"\n"),
            "cfg.toml:2: 'parallelism.pipeline_parallel_split_points' must be "
            "an array of strings");
  // The schedule: torch's names in any case; a typo whatever the degree.
  EXPECT_EQ(errorOf("[parallelism]\npipeline_parallel_schedule = "
                    "\"Interleaved1F1C\"\n"),
            "cfg.toml: 'parallelism.pipeline_parallel_schedule' must be one "
            "of \"GPipe\", \"1F1B\", \"Interleaved1F1B\", \"LoopedBFS\", "
            "\"InterleavedZeroBubble\", \"ZBVZeroBubble\", \"DualPipeV\" "
            "(in any case), got \"Interleaved1F1C\" (did you mean "
            "'Interleaved1F1B'?)");
  EXPECT_EQ(errorOf("[parallelism]\npipeline_parallel_schedule = "
                    "\"zbvzerobubbel\"\n"),
            "cfg.toml: 'parallelism.pipeline_parallel_schedule' must be one "
            "of \"GPipe\", \"1F1B\", \"Interleaved1F1B\", \"LoopedBFS\", "
            "\"InterleavedZeroBubble\", \"ZBVZeroBubble\", \"DualPipeV\" "
            "(in any case), got \"zbvzerobubbel\" (did you mean "
            "'ZBVZeroBubble'?)");
  // Schedules titan cannot run, with pipeline stages only.
  EXPECT_EQ(errorOf("[parallelism]\npipeline_parallel_schedule = "
                    "\"dualpipev\"\n"),
            "");
  EXPECT_EQ(errorOf("[parallelism]\npipeline_parallel_degree = 2\n"
                    "pipeline_parallel_schedule = \"dualpipev\"\n"),
            "cfg.toml: parallelism.pipeline_parallel_schedule = \"DualPipeV\" "
            "is not supported yet (DualPipeV overlaps one microbatch's "
            "forward with another's backward for mixture-of-experts "
            "communication, which titan does not do); use \"ZBVZeroBubble\", "
            "which places the stages in the same V");
  // Microbatches (torchtitan's rule).
  EXPECT_EQ(errorOf("[training]\nlocal_batch_size = 6\n[parallelism]\n"
                    "pipeline_parallel_degree = 2\n"
                    "pipeline_parallel_microbatch_size = 4\n"),
            "cfg.toml: 'training.local_batch_size' = 6 is not divisible by "
            "'parallelism.pipeline_parallel_microbatch_size' = 4: with "
            "pipeline_parallel_degree > 1 a step runs local_batch_size / "
            "pipeline_parallel_microbatch_size microbatches (torchtitan's "
            "rule); make local_batch_size a multiple of the microbatch size");
  EXPECT_EQ(errorOf("[training]\nlocal_batch_size = 6\n[parallelism]\n"
                    "pipeline_parallel_microbatch_size = 4\n"),
            "");
  EXPECT_EQ(errorOf("[parallelism]\npipeline_parallel_degree = 2\n"
                    "pipeline_parallel_microbatch_size = 0\n"),
            "cfg.toml: 'parallelism.pipeline_parallel_microbatch_size' must "
            "be at least 1, got 0");
  // The split keys, checked after the command line's overrides.
  EXPECT_EQ(errorOf("[parallelism]\npipeline_parallel_layers_per_stage = "
                    "0\n"),
            "");
  EXPECT_EQ(errorOf("[parallelism]\npipeline_parallel_layers_per_stage = 0\n",
                    {"parallelism.pipeline_parallel_degree=2"}),
            "cfg.toml: 'parallelism.pipeline_parallel_layers_per_stage' must "
            "be at least 1, got 0");
  EXPECT_EQ(errorOf("[parallelism]\npipeline_parallel_degree = 2\n"
                    "pipeline_parallel_layers_per_stage = 2\n"
                    "pipeline_parallel_split_points = [\"layers.2\"]\n"),
            "cfg.toml: 'parallelism.pipeline_parallel_layers_per_stage' = 2 "
            "computes the split that "
            "'parallelism.pipeline_parallel_split_points' gives explicitly "
            "(torchtitan takes the explicit one); give one of them");
}

TEST(TrainConfig, PrintedPipelineKeysReadBack) {
  llvm::Expected<TrainConfig> config = parseTrainConfig(R"(
[parallelism]
pipeline_parallel_degree = 2
pipeline_parallel_schedule = "zbvzerobubble"
pipeline_parallel_microbatch_size = 2
pipeline_parallel_last_stage_less_layers = 1
module_fqns_per_model_part = [["tok_embeddings", "layers.0"], [], ["layers.1"], ["norm", "output\"s"]]
pipeline_parallel_schedule_csv = "a b.csv"
)",
                                                        "cfg.toml");
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  std::string printed = printTrainConfig(*config);
  EXPECT_NE(printed.find("pipeline_parallel_schedule = \"ZBVZeroBubble\"\n"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("module_fqns_per_model_part = [[\"tok_embeddings\", "
                         "\"layers.0\"], [], [\"layers.1\"], [\"norm\", "
                         "\"output\\\"s\"]]\n"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("pipeline_parallel_split_points = []\n"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("pipeline_parallel_last_stage_less_layers = 1\n"),
            std::string::npos)
      << printed;
  // Unset optional keys are not written, so they stay unset.
  EXPECT_EQ(printed.find("pipeline_parallel_layers_per_stage"),
            std::string::npos)
      << printed;
  EXPECT_EQ(printed.find("pipeline_parallel_first_stage_less_layers"),
            std::string::npos)
      << printed;
  llvm::Expected<TrainConfig> reread = parseTrainConfig(printed, "config.toml");
  ASSERT_TRUE(bool(reread)) << llvm::toString(reread.takeError());
  const ParallelismConfig &a = config->parallelism, &b = reread->parallelism;
  EXPECT_EQ(b.pipelineParallelDegree, a.pipelineParallelDegree);
  EXPECT_EQ(b.pipelineParallelSchedule, a.pipelineParallelSchedule);
  EXPECT_EQ(b.pipelineParallelMicrobatchSize, a.pipelineParallelMicrobatchSize);
  EXPECT_EQ(b.pipelineParallelLayersPerStage, a.pipelineParallelLayersPerStage);
  EXPECT_EQ(b.pipelineParallelFirstStageLessLayers,
            a.pipelineParallelFirstStageLessLayers);
  EXPECT_EQ(b.pipelineParallelLastStageLessLayers,
            a.pipelineParallelLastStageLessLayers);
  EXPECT_EQ(b.moduleFqnsPerModelPart, a.moduleFqnsPerModelPart);
  EXPECT_EQ(b.pipelineParallelSplitPoints, a.pipelineParallelSplitPoints);
  EXPECT_EQ(b.pipelineParallelScheduleCsv, a.pipelineParallelScheduleCsv);
  EXPECT_EQ(printTrainConfig(*reread), printed);
}

TEST(TrainConfig, BucketCollectivesIsUnsetUnlessGiven) {
  llvm::Expected<TrainConfig> unset = parseTrainConfig("", "cfg.toml");
  ASSERT_TRUE(bool(unset)) << llvm::toString(unset.takeError());
  EXPECT_FALSE(unset->parallelism.bucketCollectives.has_value());
  // Unset, the key is not written, so it reads back unset.
  EXPECT_EQ(printTrainConfig(*unset).find("bucket_collectives"),
            std::string::npos);
  for (bool given : {false, true}) {
    llvm::Expected<TrainConfig> config =
        parseTrainConfig("", "cfg.toml",
                         {std::string("parallelism.bucket_collectives=") +
                          (given ? "true" : "false")});
    ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
    EXPECT_EQ(config->parallelism.bucketCollectives, given);
    llvm::Expected<TrainConfig> reread =
        parseTrainConfig(printTrainConfig(*config), "config.toml");
    ASSERT_TRUE(bool(reread)) << llvm::toString(reread.takeError());
    EXPECT_EQ(reread->parallelism.bucketCollectives, given);
  }
  EXPECT_EQ(errorOf("[parallelism]\nbucket_collectives = 1\n"),
            "cfg.toml:2: 'parallelism.bucket_collectives' must be true or "
            "false");
}

TEST(TrainConfig, ReadsTorchtitansCheckpointOptions) {
  llvm::Expected<TrainConfig> config = parseTrainConfig(
      "[checkpoint]\nenable = true\nenable_first_step_checkpoint = true\n"
      "create_seed_checkpoint = true\nexclude_from_loading = "
      "[\"dataloader\"]\n",
      "cfg.toml");
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  EXPECT_TRUE(config->checkpoint.enableFirstStepCheckpoint);
  EXPECT_TRUE(config->checkpoint.createSeedCheckpoint);
  EXPECT_FALSE(config->checkpoint.loadOnly);
  EXPECT_EQ(config->checkpoint.excludeFromLoading,
            std::vector<std::string>{"dataloader"});
  EXPECT_EQ(errorOf("[checkpoint]\nexclude_from_loading = [\"dataloader\", "
                    "\"lr_scheduler\"]\n"),
            "cfg.toml: 'checkpoint.exclude_from_loading' leaves out "
            "\"lr_scheduler\", which titan loads with the rest: AdamW's bias "
            "correction and the learning-rate schedule both count "
            "train_state.step, the one step a checkpoint holds (only "
            "\"dataloader\" can be left out: the data start from the "
            "beginning; initial_load_model_only loads the model alone)");
  EXPECT_EQ(errorOf("[checkpoint]\ncreate_seed_checkpoint = true\n"),
            "cfg.toml: 'checkpoint.create_seed_checkpoint' needs "
            "checkpoint.enable = true (the seed checkpoint is the job's step-0 "
            "save)");
}

TEST(TrainConfig, EarlyStepInBackwardClipsNothing) {
  llvm::Expected<TrainConfig> config = parseTrainConfig(
      "[optimizer]\nearly_step_in_backward = true\n[training]\n"
      "local_batch_size = 2\nglobal_batch_size = 8\n",
      "cfg.toml");
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  EXPECT_TRUE(config->optimizer.earlyStepInBackward);
  EXPECT_THAT(config->warnings,
              ::testing::Contains(::testing::HasSubstr(
                  "training.max_norm = 1.00 clips nothing under "
                  "optimizer.early_step_in_backward")));
  // 8 rows on 4 data-parallel ranks of 2: no accumulation; on 2 ranks, 2
  // microbatches, whose gradients sum before one step.
  EXPECT_FALSE(bool(config->checkDataParallelDegree(4)));
  EXPECT_THAT(llvm::toString(config->checkDataParallelDegree(2)),
              ::testing::HasSubstr("accumulates 2 microbatches' gradients"));
}

TEST(TrainConfig, PureBf16TrainingReadsTheParametersInBf16) {
  // torchtitan's Llama 3 configs for pure bf16 set the dtype and reduce
  // in bf16 (mixed_precision_param defaults to bfloat16 there, float32
  // here: both read the bf16 parameters as they are).
  for (const char *param : {"float32", "bfloat16"}) {
    llvm::Expected<TrainConfig> config =
        parseTrainConfig(std::string("[training]\ndtype = \"bfloat16\"\n"
                                     "mixed_precision_reduce = \"bfloat16\"\n"
                                     "mixed_precision_param = \"") +
                             param + "\"\n",
                         "cfg.toml");
    ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
    EXPECT_EQ(config->training.getStorageDtype(), ElementType::BF16);
    EXPECT_EQ(config->training.getParamDtype(), ElementType::BF16);
    EXPECT_EQ(config->training.getReduceDtype(), ElementType::BF16);
  }
  llvm::Expected<TrainConfig> fp32 = parseTrainConfig("", "cfg.toml");
  ASSERT_TRUE(bool(fp32)) << llvm::toString(fp32.takeError());
  EXPECT_EQ(fp32->training.dtype, "float32");
  EXPECT_EQ(fp32->training.getStorageDtype(), ElementType::F32);
  EXPECT_EQ(fp32->training.getParamDtype(), ElementType::F32);
}

TEST(TrainConfig, GlobalBatchSizeGivesTheAccumulationSteps) {
  llvm::Expected<TrainConfig> unset =
      parseTrainConfig("[training]\nlocal_batch_size = 2\n", "cfg.toml");
  ASSERT_TRUE(bool(unset)) << llvm::toString(unset.takeError());
  EXPECT_EQ(unset->training.globalBatchSize, -1);
  EXPECT_EQ(unset->training.getAccumulationSteps(4), 1);
  EXPECT_FALSE(bool(unset->training.checkGlobalBatchSize(4)));

  llvm::Expected<TrainConfig> config = parseTrainConfig(
      "[training]\nlocal_batch_size = 2\nglobal_batch_size = 24\n", "cfg.toml");
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  // 24 rows over 3 data-parallel ranks of 2 rows: 4 microbatches; over 4
  // ranks 3, over 12 one (no accumulation); over 5 ranks 24 does not
  // divide.
  EXPECT_FALSE(bool(config->training.checkGlobalBatchSize(3)));
  EXPECT_EQ(config->training.getAccumulationSteps(3), 4);
  EXPECT_EQ(config->training.getAccumulationSteps(4), 3);
  EXPECT_EQ(config->training.getAccumulationSteps(12), 1);
  EXPECT_EQ(llvm::toString(config->training.checkGlobalBatchSize(5)),
            "training.global_batch_size = 24 is not a multiple of "
            "training.local_batch_size = 2 times the data-parallel degree 5 "
            "(data_parallel_replicate_degree x data_parallel_shard_degree): "
            "each step runs global_batch_size / 10 microbatches of "
            "local_batch_size rows per rank (torchtitan's gradient "
            "accumulation); set it to 20 or 30, or to -1 for no accumulation");
  // Fewer rows than the ranks hold at once.
  EXPECT_EQ(llvm::toString(config->training.checkGlobalBatchSize(16)),
            "training.global_batch_size = 24 is not a multiple of "
            "training.local_batch_size = 2 times the data-parallel degree 16 "
            "(data_parallel_replicate_degree x data_parallel_shard_degree): "
            "each step runs global_batch_size / 32 microbatches of "
            "local_batch_size rows per rank (torchtitan's gradient "
            "accumulation); set it to 32 or 64, or to -1 for no accumulation");
  // The value reads back from the printed config.
  llvm::Expected<TrainConfig> reread =
      parseTrainConfig(printTrainConfig(*config), "config.toml");
  ASSERT_TRUE(bool(reread)) << llvm::toString(reread.takeError());
  EXPECT_EQ(reread->training.globalBatchSize, 24);
  EXPECT_EQ(errorOf("[training]\nglobal_batch_size = 0\n"),
            "cfg.toml: 'training.global_batch_size' must be at least 1 (or "
            "-1: local_batch_size times the data-parallel degree)");
}

TEST(TrainConfig, SyntaxErrorsNameTheLine) {
  std::string message = errorOf("[training]\nseq_len = = 3\n");
  EXPECT_EQ(message.rfind("cfg.toml:2: ", 0), 0u) << message;
}

/// Debian's toml++ reaches __builtin_unreachable() when it tests these
/// non-ASCII characters for whitespace (found by the config fuzzer); titan
/// refuses them first (a quote in a malformed value opens no string). The
/// multi-line string is valid TOML that toml++ accepted through that
/// undefined behaviour.
TEST(TrainConfig, NonAsciiWhereTomlppTestsWhitespaceIsRefused) {
  for (const char *text :
       {"[job]\nname = \"a\" \xc3\xa9\n", "[job]\nna\xc3\xa2me = \"a\"\n",
        "[job]\ndescription = \"\"\"\\\n  \xc2\xa7\"\"\"\n",
        "[job]\ndescription = \"\\\xc3\xa9\"\n",
        "[job]\nname = 20g:\"\"\":\xc6\xaf\n",
        "[job]\nname = [[1['\xc3\xa9']]\n"}) {
    std::string message = errorOf(text);
    EXPECT_NE(message.find(": a non-ASCII character outside a string"),
              std::string::npos)
        << text << ": " << message;
  }
  // Anywhere else a non-ASCII character is as TOML has it.
  llvm::Expected<TrainConfig> config =
      parseTrainConfig("# caf\xc3\xa9\n[job]\ndescription = \"\"\"\\\n"
                       "  x\xc2\xa7\"\"\"\nname='\xc3\xa9' # \xc3\xa9\n",
                       "cfg.toml", {"job.dump_folder=/tmp/\xc3\xa9"});
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  EXPECT_EQ(config->jobDescription, "x\xc2\xa7");
  EXPECT_EQ(config->jobName, "\xc3\xa9");
  EXPECT_EQ(config->dumpFolder, "/tmp/\xc3\xa9");
  for (const char *text :
       {"job.\"name\" = \"\xc3\xa9\"\n",
        "job = {name = '\xc3\xa9', description=\"\xc3\xa9\"}\n"})
    EXPECT_EQ(errorOf(text), "") << text;
}

TEST(TrainConfig, BundledConfigsLoad) {
  for (const char *path :
       {"llama3/train_configs/debugmodel.toml",
        "llama3/train_configs/llama3_8b.toml",
        "llama3/train_configs/llama3_70b.toml",
        "llama3/train_configs/llama3_405b.toml", "gpt2/train_configs/tiny.toml",
        "qwen2/train_configs/tiny.toml", "gemma/train_configs/tiny.toml",
        "phi/train_configs/tiny.toml"}) {
    llvm::Expected<TrainConfig> config =
        loadTrainConfig(std::string(TITAN_MODELS_DIR) + "/" + path);
    EXPECT_TRUE(static_cast<bool>(config))
        << path << ": " << llvm::toString(config.takeError());
  }
}

TEST(TrainConfig, PlanFileIsFoundNextToTheConfig) {
  std::string gpt2 = std::string(TITAN_MODELS_DIR) + "/gpt2/train_configs";
  llvm::Expected<TrainConfig> config = loadTrainConfig(gpt2 + "/tiny.toml");
  ASSERT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  EXPECT_EQ(config->parallelism.tpPlan, gpt2 + "/tp_plan.toml");
  // A plan given on the command line is relative to the user's directory.
  llvm::Expected<TrainConfig> overridden =
      loadTrainConfig(gpt2 + "/tiny.toml", {"parallelism.tp_plan=mine.toml"});
  ASSERT_TRUE(static_cast<bool>(overridden))
      << llvm::toString(overridden.takeError());
  EXPECT_EQ(overridden->parallelism.tpPlan, "mine.toml");
}

TEST(TrainConfig, ScheduleCsvIsFoundNextToTheConfig) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("titan-config", dir));
  std::string path = (dir + "/cfg.toml").str();
  {
    std::error_code error;
    llvm::raw_fd_ostream os(path, error);
    ASSERT_FALSE(error) << error.message();
    os << "[parallelism]\npipeline_parallel_schedule_csv = \"pp.csv\"\n";
  }
  llvm::Expected<TrainConfig> config = loadTrainConfig(path);
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  EXPECT_EQ(config->parallelism.pipelineParallelScheduleCsv,
            (dir + "/pp.csv").str());
  // One given on the command line is relative to the user's directory.
  llvm::Expected<TrainConfig> overridden = loadTrainConfig(
      path, {"parallelism.pipeline_parallel_schedule_csv=\"mine.csv\""});
  ASSERT_TRUE(bool(overridden)) << llvm::toString(overridden.takeError());
  EXPECT_EQ(overridden->parallelism.pipelineParallelScheduleCsv, "mine.csv");
  llvm::sys::fs::remove(path);
  llvm::sys::fs::remove(dir);
}

TEST(TrainConfig, HardwareNamesTheDeviceOfThePredictions) {
  llvm::Expected<TrainConfig> defaults = parseTrainConfig("", "cfg.toml");
  ASSERT_TRUE(static_cast<bool>(defaults))
      << llvm::toString(defaults.takeError());
  EXPECT_EQ(defaults->hardware.device, "cpu");
  EXPECT_EQ(defaults->hardware.ranksPerNode, 0);
  llvm::Expected<TrainConfig> config = parseTrainConfig(
      "[hardware]\ndevice = \"h100-sxm\"\nranks_per_node = 4\n", "cfg.toml");
  ASSERT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  EXPECT_EQ(config->hardware.device, "h100-sxm");
  EXPECT_EQ(config->hardware.ranksPerNode, 4);
  EXPECT_EQ(errorOf("[hardware]\nranks_per_node = -1\n"),
            "cfg.toml: 'hardware.ranks_per_node' must be positive (or 0: the "
            "device file's)");
  EXPECT_EQ(errorOf("[hardware]\ndevise = \"h200\"\n"),
            "cfg.toml:2: unknown key 'hardware.devise' (did you mean "
            "'device'?)");
}

TEST(TrainConfig, DeviceFileIsFoundNextToTheConfig) {
  std::string dir = std::string(TITAN_MODELS_DIR) + "/llama3/train_configs";
  // A bundled device's name stays a name; a file is next to the config,
  // unless the command line gave it.
  llvm::Expected<TrainConfig> named =
      loadTrainConfig(dir + "/debugmodel.toml", {"hardware.device=h200"});
  ASSERT_TRUE(static_cast<bool>(named)) << llvm::toString(named.takeError());
  EXPECT_EQ(named->hardware.device, "h200");
  llvm::Expected<TrainConfig> fromCommandLine = loadTrainConfig(
      dir + "/debugmodel.toml", {"hardware.device=boxes/mine.toml"});
  ASSERT_TRUE(static_cast<bool>(fromCommandLine))
      << llvm::toString(fromCommandLine.takeError());
  EXPECT_EQ(fromCommandLine->hardware.device, "boxes/mine.toml");
}

} // namespace
