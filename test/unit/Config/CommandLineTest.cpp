//===- CommandLineTest.cpp - titan's and torchtitan's config arguments ----===//

#include "titan/Config/CommandLine.h"
#include "titan/Config/TrainConfig.h"

#include "gtest/gtest.h"

using namespace mlir::titan;

namespace {

/// parseConfigCommandLine of "tool ARGS..." (a failure fails the test).
ConfigCommandLine parse(std::vector<const char *> args) {
  args.insert(args.begin(), "tool");
  llvm::Expected<ConfigCommandLine> parsed = parseConfigCommandLine(args);
  if (!parsed) {
    ADD_FAILURE() << llvm::toString(parsed.takeError());
    return {};
  }
  return *parsed;
}

/// The error of parseConfigCommandLine of "tool ARGS...", or "".
std::string commandLineError(std::vector<const char *> args) {
  args.insert(args.begin(), "tool");
  llvm::Expected<ConfigCommandLine> parsed = parseConfigCommandLine(args);
  if (parsed)
    return "";
  return llvm::toString(parsed.takeError());
}

using Strings = std::vector<std::string>;

TEST(ConfigCommandLine, TorchtitansCommandLine) {
  ConfigCommandLine line = parse(
      {"model.pt", "--job.config_file", "llama3_8b.toml", "--training.steps",
       "100", "--parallelism.tensor_parallel_degree=8", "--checkpoint.enable",
       "-o", "out", "--model.converters", "float8,mx",
       "--activation_checkpoint.selective_ac_option", "2", "--job.dump-folder",
       "./runs", "--emit=titan"});
  EXPECT_EQ(line.configFile, "llama3_8b.toml");
  EXPECT_EQ(
      line.overrides,
      (Strings{"training.steps=100", "parallelism.tensor_parallel_degree=8",
               "checkpoint.enable=true",
               "model.converters=[\"float8\", \"mx\"]",
               // tyro takes a string key's value as a string.
               "activation_checkpoint.selective_ac_option=\"2\"",
               "job.dump_folder=\"./runs\""}));
  EXPECT_EQ(line.remaining,
            (Strings{"tool", "model.pt", "-o", "out", "--emit=titan"}));
}

TEST(ConfigCommandLine, TitansOwnSyntax) {
  ConfigCommandLine line =
      parse({"--config", "a.toml", "--set", "training.seq_len=64",
             "--set=optimizer.lr=1e-3", "-set", "model.flavor=8B",
             "--training.steps", "3"});
  EXPECT_EQ(line.configFile, "a.toml");
  EXPECT_EQ(line.overrides, (Strings{"training.seq_len=64", "optimizer.lr=1e-3",
                                     "model.flavor=8B", "training.steps=3"}));
  EXPECT_EQ(parse({"--config=b.toml"}).configFile, "b.toml");
  EXPECT_EQ(parse({"--job.config-file=c.toml"}).configFile, "c.toml");
  EXPECT_EQ(
      parse({"--config", "a.toml", "--job.config_file", "a.toml"}).configFile,
      "a.toml");
}

TEST(ConfigCommandLine, BooleansAreFlags) {
  // A bare boolean is true and takes no value: the next argument stays.
  ConfigCommandLine line = parse(
      {"--checkpoint.enable", "model.pt", "--compile.enable", "false",
       "--checkpoint.no-enable", "--checkpoint.no_initial_load_in_hf",
       "--checkpoint.no-initial-load-model-only",
       "--parallelism.disable_loss_parallel=True", "--debug.deterministic"});
  EXPECT_EQ(
      line.overrides,
      (Strings{"checkpoint.enable=true", "compile.enable=false",
               "checkpoint.enable=false", "checkpoint.initial_load_in_hf=false",
               "checkpoint.initial_load_model_only=false",
               "parallelism.disable_loss_parallel=true",
               "debug.deterministic=true"}));
  EXPECT_EQ(line.remaining, (Strings{"tool", "model.pt"}));
}

TEST(ConfigCommandLine, ListsAndNestedKeys) {
  ConfigCommandLine line =
      parse({"--quantize.linear.float8.filter_fqns", "output,layers.0",
             "--model.converters", "", "--checkpoint.exclude_from_loading",
             "[\"optimizer\"]", "--training.dataloader.num_workers", "2"});
  EXPECT_EQ(line.overrides,
            (Strings{"quantize.linear.float8.filter_fqns=[\"output\", "
                     "\"layers.0\"]",
                     "model.converters=[]",
                     "checkpoint.exclude_from_loading=[\"optimizer\"]",
                     "training.dataloader.num_workers=2"}));
}

TEST(ConfigCommandLine, PipelineKeysAsTyroReadsThem) {
  // list[list[str]]: one A,B,C argument per inner list, up to the next
  // option; list[str]: one A,B,C argument; int | None: an integer.
  ConfigCommandLine line = parse(
      {"--parallelism.pipeline_parallel_degree", "2",
       "--parallelism.module_fqns_per_model_part", "tok_embeddings,layers.0",
       "layers.1,norm,output", "--parallelism.pipeline-parallel-schedule",
       "interleaved1f1b", "--parallelism.pipeline_parallel_layers_per_stage",
       "4", "--parallelism.pipeline_parallel_split_points", "layers.2,layers.4",
       "--parallelism.pipeline_parallel_schedule_csv", "pp.csv",
       "--parallelism.pipeline_parallel_first_stage_less_layers=0",
       "model.pt"});
  EXPECT_EQ(
      line.overrides,
      (Strings{"parallelism.pipeline_parallel_degree=2",
               "parallelism.module_fqns_per_model_part=[[\"tok_"
               "embeddings\", \"layers.0\"], [\"layers.1\", \"norm\", "
               "\"output\"]]",
               "parallelism.pipeline_parallel_schedule="
               "\"interleaved1f1b\"",
               "parallelism.pipeline_parallel_layers_per_stage=4",
               "parallelism.pipeline_parallel_split_points=[\"layers.2\", "
               "\"layers.4\"]",
               "parallelism.pipeline_parallel_schedule_csv=\"pp.csv\"",
               "parallelism.pipeline_parallel_first_stage_less_layers="
               "0"}));
  EXPECT_EQ(line.remaining, (Strings{"tool", "model.pt"}));
  // After '=', one inner list; no argument, the empty list; TOML as is.
  EXPECT_EQ(
      parse({"--parallelism.module_fqns_per_model_part=a,b", "c"}).overrides,
      (Strings{"parallelism.module_fqns_per_model_part=[[\"a\", "
               "\"b\"]]"}));
  EXPECT_EQ(parse({"--parallelism.module_fqns_per_model_part",
                   "--training.steps", "3"})
                .overrides,
            (Strings{"parallelism.module_fqns_per_model_part=[]",
                     "training.steps=3"}));
  EXPECT_EQ(
      parse({"--parallelism.module_fqns_per_model_part", "[[\"a\"], [\"b\"]]"})
          .overrides,
      (Strings{"parallelism.module_fqns_per_model_part=[[\"a\"], "
               "[\"b\"]]"}));

  // They load as the config file's would.
  ConfigCommandLine loads = parse(
      {"--parallelism.pipeline_parallel_degree", "2",
       "--parallelism.module_fqns_per_model_part", "tok_embeddings,layers.0",
       "layers.1,norm,output", "--parallelism.pipeline_parallel_schedule",
       "gpipe", "--parallelism.pipeline_parallel_microbatch_size", "2"});
  llvm::Expected<TrainConfig> config =
      parseTrainConfig("", "cfg.toml", loads.overrides);
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  EXPECT_EQ(config->parallelism.pipelineParallelDegree, 2);
  EXPECT_EQ(config->parallelism.pipelineParallelSchedule, "GPipe");
  EXPECT_EQ(config->parallelism.pipelineParallelMicrobatchSize, 2);
  EXPECT_EQ(config->parallelism.moduleFqnsPerModelPart,
            (std::vector<Strings>{{"tok_embeddings", "layers.0"},
                                  {"layers.1", "norm", "output"}}));
}

TEST(ConfigCommandLine, EverythingAfterDoubleDashStays) {
  ConfigCommandLine line =
      parse({"--training.steps", "3", "--", "--training.steps", "4"});
  EXPECT_EQ(line.overrides, (Strings{"training.steps=3"}));
  EXPECT_EQ(line.remaining, (Strings{"tool", "--", "--training.steps", "4"}));
}

TEST(ConfigCommandLine, ErrorsNameTheArgument) {
  EXPECT_EQ(commandLineError({"--training.stepz", "3"}),
            "unknown config key --training.stepz (did you mean "
            "'--training.steps'?)");
  EXPECT_EQ(commandLineError({"--trainin.steps", "3"}),
            "unknown config key --trainin.steps (did you mean "
            "'--training.steps'?)");
  EXPECT_EQ(commandLineError({"--compile.enabel"}),
            "unknown config key --compile.enabel (did you mean "
            "'--compile.enable'?)");
  EXPECT_EQ(commandLineError({"--training.steps"}), "--training.steps needs a value");
  EXPECT_EQ(commandLineError({"--training.steps", "--checkpoint.enable"}),
            "--training.steps needs a value");
  EXPECT_EQ(commandLineError({"--training.no-steps"}),
            "--training.no-steps: 'training.steps' is not a boolean; give it "
            "a value (--training.steps VALUE)");
  EXPECT_EQ(commandLineError({"--no-checkpoint.enable"}),
            "--no-checkpoint.enable: torchtitan negates a flag after its last "
            "dot: --checkpoint.no-enable");
  EXPECT_EQ(commandLineError({"--checkpoint.no-enable=true"}),
            "--checkpoint.no-enable=true: a negated flag takes no value");
  EXPECT_EQ(commandLineError({"--checkpoint.enable=maybe"}),
            "--checkpoint.enable=maybe: expected true or false");
  EXPECT_EQ(commandLineError({"--config", "a.toml", "--job.config_file", "b.toml"}),
            "--job.config_file b.toml: the config file is already 'a.toml' "
            "(give one --config or --job.config_file)");
  EXPECT_EQ(commandLineError({"--set"}), "--set needs a value");
}

TEST(ConfigCommandLine, OverridesLoadAsTheConfigSays) {
  ConfigCommandLine line =
      parse({"--training.steps=7", "--checkpoint.enable", "--model.converters",
             "", "--activation_checkpoint.selective_ac_option", "3",
             "--lr_scheduler.lr-min", "0.5", "--metrics.enable_tensorboard",
             "--job.description", "a \"quoted\" run"});
  llvm::Expected<TrainConfig> config = parseTrainConfig(
      "[model]\nconverters = [\"float8\"]\n", "cfg.toml", line.overrides);
  ASSERT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  EXPECT_EQ(config->training.steps, 7);
  EXPECT_TRUE(config->checkpoint.enable);
  EXPECT_EQ(config->activationCheckpoint.selectiveAcOption, "3");
  EXPECT_DOUBLE_EQ(config->lrScheduler.minLrFactor, 0.5);
  EXPECT_EQ(config->jobDescription, "a \"quoted\" run");
  // checkpoint.enable is applied (by the executable): no warning.
  ASSERT_EQ(config->warnings.size(), 1u);
  EXPECT_EQ(
      config->warnings[0],
      "metrics.enable_tensorboard = true: titan writes no TensorBoard "
      "events; the executable logs its metrics every metrics.log_freq steps");
}

} // namespace
