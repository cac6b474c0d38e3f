//===- TrainConfig.cpp - torchtitan-style TOML training configs -----------===//

#include "titan/Config/TrainConfig.h"

#include "titan/Config/PipelineSplit.h"

#include "Toml.h"
#include "TorchtitanKeys.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <variant>

using namespace mlir::titan;

/// The element type of a validated mixed-precision dtype name.
static ElementType mixedPrecisionDtype(llvm::StringRef name) {
  return llvm::StringSwitch<ElementType>(name)
      .Case("bfloat16", ElementType::BF16)
      .Case("float16", ElementType::F16)
      .Default(ElementType::F32);
}

ElementType TrainingConfig::getStorageDtype() const {
  return mixedPrecisionDtype(dtype);
}

ElementType TrainingConfig::getParamDtype() const {
  if (getStorageDtype() != ElementType::F32)
    return getStorageDtype();
  return mixedPrecisionDtype(mixedPrecisionParam);
}

ElementType TrainingConfig::getReduceDtype() const {
  return mixedPrecisionDtype(mixedPrecisionReduce);
}

int64_t TrainingConfig::getAccumulationSteps(int64_t dataParallelDegree) const {
  if (globalBatchSize < 0)
    return 1;
  return std::max<int64_t>(1, globalBatchSize /
                                  (localBatchSize * dataParallelDegree));
}

llvm::Error
TrainingConfig::checkGlobalBatchSize(int64_t dataParallelDegree) const {
  int64_t rows = localBatchSize * dataParallelDegree;
  if (globalBatchSize < 0 || globalBatchSize % rows == 0)
    return llvm::Error::success();
  int64_t lower = std::max(rows, globalBatchSize / rows * rows);
  return llvm::createStringError(llvm::formatv(
      "training.global_batch_size = {0} is not a multiple of "
      "training.local_batch_size = {1} times the data-parallel degree {2} "
      "(data_parallel_replicate_degree x data_parallel_shard_degree): each "
      "step runs global_batch_size / {3} microbatches of local_batch_size "
      "rows per rank (torchtitan's gradient accumulation); set it to {4} or "
      "{5}, or to -1 for no accumulation",
      globalBatchSize, localBatchSize, dataParallelDegree, rows, lower,
      lower + rows));
}

llvm::Error
TrainConfig::checkDataParallelDegree(int64_t dataParallelDegree) const {
  if (llvm::Error error = training.checkGlobalBatchSize(dataParallelDegree))
    return error;
  if (optimizer.earlyStepInBackward &&
      training.getAccumulationSteps(dataParallelDegree) > 1)
    return llvm::createStringError(llvm::formatv(
        "optimizer.early_step_in_backward steps each parameter as its "
        "gradient is complete, but training.global_batch_size = {0} "
        "accumulates {1} microbatches' gradients before one step: set one of "
        "them off (early_step_in_backward = false, or global_batch_size = "
        "-1)",
        training.globalBatchSize,
        training.getAccumulationSteps(dataParallelDegree)));
  return llvm::Error::success();
}

namespace {

/// The schema of a config: every section and key titan reads, bound to the
/// fields of `config`.
std::vector<TomlSection> schema(TrainConfig &c) {
  return {
      {"job",
       {{"name", &c.jobName},
        {"description", &c.jobDescription},
        {"dump_folder", &c.dumpFolder}}},
      {"metrics", {{"log_freq", &c.logFreq}}},
      {"model",
       {{"name", &c.modelName},
        {"flavor", &c.modelFlavor},
        {"tokenizer_path", &c.tokenizerPath}}},
      {"optimizer",
       {{"name", &c.optimizer.name},
        {"lr", &c.optimizer.lr},
        {"beta1", &c.optimizer.beta1},
        {"beta2", &c.optimizer.beta2},
        {"eps", &c.optimizer.eps},
        {"weight_decay", &c.optimizer.weightDecay},
        {"early_step_in_backward", &c.optimizer.earlyStepInBackward}}},
      {"lr_scheduler",
       {{"warmup_steps", &c.lrScheduler.warmupSteps},
        {"decay_ratio", &c.lrScheduler.decayRatio},
        {"decay_type", &c.lrScheduler.decayType},
        {"min_lr_factor", &c.lrScheduler.minLrFactor},
        {"total_steps", &c.lrScheduler.totalSteps}}},
      {"training",
       {{"local_batch_size", &c.training.localBatchSize},
        {"batch_size", &c.training.localBatchSize},
        {"global_batch_size", &c.training.globalBatchSize},
        {"seq_len", &c.training.seqLen},
        {"max_norm", &c.training.maxNorm},
        {"steps", &c.training.steps},
        {"dataset", &c.training.dataset},
        {"dataset_path", &c.training.datasetPath},
        {"seed", &c.training.seed},
        {"deterministic", &c.training.deterministic},
        {"dtype", &c.training.dtype},
        {"mixed_precision_param", &c.training.mixedPrecisionParam},
        {"mixed_precision_reduce", &c.training.mixedPrecisionReduce},
        {"ignore_index", &c.training.ignoreIndex},
        {"enable_cpu_offload", &c.training.enableCpuOffload}}},
      {"parallelism",
       {{"data_parallel_replicate_degree",
         &c.parallelism.dataParallelReplicateDegree},
        {"data_parallel_shard_degree", &c.parallelism.dataParallelShardDegree},
        {"fsdp_reshard_after_forward", &c.parallelism.fsdpReshardAfterForward},
        {"tensor_parallel_degree", &c.parallelism.tensorParallelDegree},
        {"enable_sequence_parallel", &c.parallelism.enableSequenceParallel},
        {"overlap_communication", &c.parallelism.overlapCommunication},
        {"bucket_collectives", &c.parallelism.bucketCollectives},
        {"enable_async_tensor_parallel",
         &c.parallelism.enableAsyncTensorParallel},
        {"async_tensor_parallel_chunks",
         &c.parallelism.asyncTensorParallelChunks},
        {"disable_loss_parallel", &c.parallelism.disableLossParallel},
        {"context_parallel_degree", &c.parallelism.contextParallelDegree},
        {"pipeline_parallel_degree", &c.parallelism.pipelineParallelDegree},
        {"pipeline_parallel_schedule", &c.parallelism.pipelineParallelSchedule},
        {"pipeline_parallel_schedule_csv",
         &c.parallelism.pipelineParallelScheduleCsv},
        {"pipeline_parallel_microbatch_size",
         &c.parallelism.pipelineParallelMicrobatchSize},
        {"pipeline_parallel_layers_per_stage",
         &c.parallelism.pipelineParallelLayersPerStage},
        {"pipeline_parallel_first_stage_less_layers",
         &c.parallelism.pipelineParallelFirstStageLessLayers},
        {"pipeline_parallel_last_stage_less_layers",
         &c.parallelism.pipelineParallelLastStageLessLayers},
        {"module_fqns_per_model_part", &c.parallelism.moduleFqnsPerModelPart},
        {"pipeline_parallel_split_points",
         &c.parallelism.pipelineParallelSplitPoints},
        {"tp_plan", &c.parallelism.tpPlan}}},
      {"activation_checkpoint",
       {{"mode", &c.activationCheckpoint.mode},
        {"selective_ac_option", &c.activationCheckpoint.selectiveAcOption},
        {"memory_budget", &c.activationCheckpoint.memoryBudget},
        {"memory_budget_gib", &c.activationCheckpoint.memoryBudgetGib}}},
      {"checkpoint",
       {{"enable", &c.checkpoint.enable},
        {"enable_checkpoint", &c.checkpoint.enable},
        {"folder", &c.checkpoint.folder},
        {"interval", &c.checkpoint.interval},
        {"last_save_model_only", &c.checkpoint.modelWeightsOnly},
        {"model_weights_only", &c.checkpoint.modelWeightsOnly},
        {"export_dtype", &c.checkpoint.exportDtype},
        {"keep_latest_k", &c.checkpoint.keepLatestK},
        {"async_mode", &c.checkpoint.asyncMode},
        {"load_step", &c.checkpoint.loadStep},
        {"initial_load_path", &c.checkpoint.initialLoadPath},
        {"initial_load_model_only", &c.checkpoint.initialLoadModelOnly},
        {"initial_load_in_hf", &c.checkpoint.initialLoadInHf},
        {"last_save_in_hf", &c.checkpoint.lastSaveInHf},
        {"enable_first_step_checkpoint",
         &c.checkpoint.enableFirstStepCheckpoint},
        {"load_only", &c.checkpoint.loadOnly},
        {"create_seed_checkpoint", &c.checkpoint.createSeedCheckpoint},
        {"exclude_from_loading", &c.checkpoint.excludeFromLoading},
        {"hf_mapping", &c.checkpoint.hfMapping}}},
      {"profiling",
       {{"enable_profiling", &c.profiling.enableProfiling},
        {"save_traces_folder", &c.profiling.saveTracesFolder},
        {"profile_freq", &c.profiling.profileFreq}}},
      {"validation",
       {{"enable", &c.validation.enable},
        {"dataset", &c.validation.dataset},
        {"dataset_path", &c.validation.datasetPath},
        {"local_batch_size", &c.validation.localBatchSize},
        {"seq_len", &c.validation.seqLen},
        {"freq", &c.validation.freq},
        {"steps", &c.validation.steps}}},
      {"hardware",
       {{"device", &c.hardware.device},
        {"ranks_per_node", &c.hardware.ranksPerNode}}},
  };
}

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// suggestName over the names `nameOf` gives the elements of `candidates`.
template <typename Range, typename NameFn>
std::string suggest(llvm::StringRef name, const Range &candidates,
                    NameFn nameOf) {
  std::vector<llvm::StringRef> names;
  for (const auto &candidate : candidates)
    names.push_back(nameOf(candidate));
  return suggestName(name, names);
}

/// The model families of models/ and their flavors (torchtitan's names for
/// Llama 3). titan compiles whatever MODEL.pt holds; these only catch typos.
const std::vector<std::pair<llvm::StringRef, std::vector<llvm::StringRef>>> &
knownModels() {
  static const std::vector<
      std::pair<llvm::StringRef, std::vector<llvm::StringRef>>>
      models = {{"llama3",
                 {"tiny", "debugmodel", "debugmodel_gqa",
                  "debugmodel_flex_attn", "8B", "70B", "405B"}},
                {"gpt2", {"tiny"}},
                {"qwen2", {"tiny"}},
                {"gemma", {"tiny"}},
                {"phi", {"tiny"}}};
  return models;
}

/// Checks values that every consumer relies on, refuses settings that ask
/// for what titan cannot do yet, and records in `c.warnings` what titan does
/// not apply but can train without.
llvm::Error validate(TrainConfig &c, llvm::StringRef file) {
  auto bad = [&](llvm::StringRef key, const llvm::Twine &why) {
    return error(file + ": '" + key + "' " + why);
  };
  // One of `allowed`, or an error listing them.
  auto oneOf = [&](llvm::StringRef key, llvm::StringRef value,
                   llvm::ArrayRef<llvm::StringRef> allowed) -> llvm::Error {
    if (llvm::is_contained(allowed, value))
      return llvm::Error::success();
    std::string list;
    for (llvm::StringRef name : allowed)
      list += (list.empty() ? "\"" : ", \"") + name.str() + "\"";
    return bad(key, "must be one of " + list + ", got \"" + value + "\"" +
                        suggest(value, allowed,
                                [](llvm::StringRef name) { return name; }));
  };
  if (c.optimizer.name != "AdamW")
    return bad("optimizer.name", "must be \"AdamW\" (the only optimizer "
                                 "titan builds), got \"" +
                                     c.optimizer.name + "\"");
  // Written so that NaN fails every check (comparisons with NaN are false).
  for (auto [key, value] :
       {std::pair<const char *, double>{"optimizer.lr", c.optimizer.lr},
        {"optimizer.weight_decay", c.optimizer.weightDecay},
        {"lr_scheduler.min_lr_factor", c.lrScheduler.minLrFactor}})
    if (!(value >= 0 && std::isfinite(value)))
      return bad(key,
                 llvm::formatv("must be a finite number >= 0, got {0}", value));
  for (auto [key, beta] :
       {std::pair<const char *, double>{"optimizer.beta1", c.optimizer.beta1},
        {"optimizer.beta2", c.optimizer.beta2}})
    if (!(beta >= 0 && beta < 1))
      return bad(key, llvm::formatv("must be in [0, 1), got {0}", beta));
  if (!(c.optimizer.eps > 0 && std::isfinite(c.optimizer.eps)))
    return bad("optimizer.eps", "must be a finite positive number");
  if (std::isnan(c.training.maxNorm) || std::isinf(c.training.maxNorm))
    return bad("training.max_norm",
               "must be a finite number (<= 0: no gradient clipping)");
  if (c.training.localBatchSize < 1)
    return bad("training.local_batch_size", "must be at least 1");
  if (c.training.globalBatchSize == 0)
    return bad("training.global_batch_size",
               "must be at least 1 (or -1: local_batch_size times the "
               "data-parallel degree)");
  if (c.training.seqLen < 1)
    return bad("training.seq_len", "must be at least 1");
  if (c.training.steps < 0)
    return bad("training.steps", "must be non-negative");
  if (c.lrScheduler.warmupSteps < 0)
    return bad("lr_scheduler.warmup_steps", "must be non-negative");
  if (c.lrScheduler.totalSteps == 0 || c.lrScheduler.totalSteps < -1)
    return bad("lr_scheduler.total_steps",
               "must be at least 1 (leave it out to span training.steps)");
  if (!(c.lrScheduler.decayRatio < 0 || c.lrScheduler.decayRatio <= 1))
    return bad("lr_scheduler.decay_ratio", "must be in [0, 1]");
  const std::vector<llvm::StringRef> dtypes = {"float32", "bfloat16",
                                               "float16"};
  struct Choice {
    const char *key;
    const std::string &value;
    std::vector<llvm::StringRef> allowed;
  };
  for (const Choice &choice :
       {Choice{"training.dtype", c.training.dtype, {"float32", "bfloat16"}},
        Choice{"lr_scheduler.decay_type",
               c.lrScheduler.decayType,
               {"linear", "sqrt", "cosine"}},
        Choice{"training.mixed_precision_param", c.training.mixedPrecisionParam,
               dtypes},
        Choice{"training.mixed_precision_reduce",
               c.training.mixedPrecisionReduce, dtypes},
        Choice{"checkpoint.export_dtype", c.checkpoint.exportDtype, dtypes},
        Choice{"activation_checkpoint.mode",
               c.activationCheckpoint.mode,
               {"none", "selective", "full", "memory_budget", "auto"}},
        Choice{"checkpoint.async_mode",
               c.checkpoint.asyncMode,
               {"disabled", "async", "async_with_pinned_mem"}},
        Choice{"parallelism.fsdp_reshard_after_forward",
               c.parallelism.fsdpReshardAfterForward,
               {"default", "always", "never"}}})
    if (llvm::Error e = oneOf(choice.key, choice.value, choice.allowed))
      return e;
  if (c.training.dtype != "float32" &&
      c.training.mixedPrecisionParam != "float32" &&
      c.training.mixedPrecisionParam != c.training.dtype)
    return bad("training.mixed_precision_param",
               "= \"" + c.training.mixedPrecisionParam +
                   "\" under training.dtype = \"" + c.training.dtype +
                   "\": the parameters are " + c.training.dtype +
                   " already, and the forward reads them as they are (set "
                   "it to \"" +
                   c.training.dtype + "\" or \"float32\")");
  const std::string &paramName = c.training.dtype != "float32"
                                     ? c.training.dtype
                                     : c.training.mixedPrecisionParam;
  if (c.training.mixedPrecisionReduce != "float32" &&
      c.training.mixedPrecisionReduce != paramName)
    return bad("training.mixed_precision_reduce",
               "= \"" + c.training.mixedPrecisionReduce +
                   "\" differs from the parameters' \"" + paramName +
                   "\": titan reduces gradients in the dtype they are "
                   "computed in or in float32 (set it to \"float32\")");
  for (const std::string &state : c.checkpoint.excludeFromLoading) {
    if (llvm::Error e = oneOf("checkpoint.exclude_from_loading", state,
                              {"model", "optimizer", "lr_scheduler",
                               "dataloader", "train_state"}))
      return e;
    if (state != "dataloader")
      return bad("checkpoint.exclude_from_loading",
                 "leaves out \"" + state +
                     "\", which titan loads with the rest: AdamW's bias "
                     "correction and the learning-rate schedule both count "
                     "train_state.step, the one step a checkpoint holds "
                     "(only \"dataloader\" can be left out: the data start "
                     "from the beginning; initial_load_model_only loads the "
                     "model alone)");
  }
  if (c.validation.enable) {
    const ValidationConfig &v = c.validation;
    if (v.localBatchSize < 1)
      return bad("validation.local_batch_size", "must be at least 1");
    if (v.seqLen < 1)
      return bad("validation.seq_len", "must be at least 1");
    if (v.freq < 1)
      return bad("validation.freq",
                 llvm::formatv("must be at least 1, got {0}", v.freq));
    if (v.steps == 0 || v.steps < -1)
      return bad("validation.steps",
                 llvm::formatv("must be positive or -1 (one pass over the "
                               "dataset), got {0}",
                               v.steps));
    if (v.datasetPath.empty())
      return bad("validation.dataset_path",
                 "is empty: titan reads validation data from a local file "
                 "or folder (text, JSON lines or token ids; docs/data.md), "
                 "not from the Hugging Face hub that torchtitan's \"" +
                     v.dataset + "\" downloads from: set it to one");
    int64_t microbatchSize = c.parallelism.pipelineParallelMicrobatchSize;
    if (c.parallelism.pipelineParallelDegree > 1 && microbatchSize > 0 &&
        v.localBatchSize % microbatchSize != 0)
      return bad("validation.local_batch_size",
                 llvm::formatv(
                     "= {0} is not divisible by "
                     "'parallelism.pipeline_parallel_microbatch_size' = {1}: "
                     "under pipeline parallelism a validation batch runs "
                     "through the pipeline as microbatches of that size; make "
                     "it a multiple of the microbatch size",
                     v.localBatchSize, microbatchSize));
  }
  if (c.optimizer.earlyStepInBackward &&
      c.parallelism.pipelineParallelDegree > 1)
    return bad("optimizer.early_step_in_backward",
               "cannot step in the backward of a pipeline, whose stages "
               "accumulate every microbatch's gradients first (torchtitan "
               "refuses it too): set it to false");
  if (c.lrScheduler.totalSteps > 0 &&
      c.training.steps > c.lrScheduler.totalSteps)
    c.warnings.push_back(
        llvm::formatv("lr_scheduler.total_steps = {0} ends the learning-rate "
                      "schedule before training.steps = {1}: the steps after "
                      "it keep its last rate (torchtitan's decay would go "
                      "on past its end)",
                      c.lrScheduler.totalSteps, c.training.steps)
            .str());
  if (c.optimizer.earlyStepInBackward && c.training.maxNorm > 0)
    c.warnings.push_back(
        llvm::formatv("training.max_norm = {0} clips nothing under "
                      "optimizer.early_step_in_backward: each parameter "
                      "steps before the norm of all gradients exists, as "
                      "torchtitan's optimizer hooks leave no gradient to "
                      "clip (set max_norm = 0 to say so)",
                      c.training.maxNorm)
            .str());
  if (c.checkpoint.createSeedCheckpoint && !c.checkpoint.enable)
    return bad("checkpoint.create_seed_checkpoint",
               "needs checkpoint.enable = true (the seed checkpoint is the "
               "job's step-0 save)");
  if (c.checkpoint.createSeedCheckpoint && c.checkpoint.loadOnly)
    return bad("checkpoint.create_seed_checkpoint",
               "saves a checkpoint, which checkpoint.load_only = true "
               "forbids: set one of them to false");
  llvm::StringRef option = c.activationCheckpoint.selectiveAcOption;
  unsigned every;
  if (option != "op" && (option.getAsInteger(10, every) || every == 0))
    return bad("activation_checkpoint.selective_ac_option",
               "must be \"op\" or a positive integer (checkpoint every "
               "n-th layer), got \"" +
                   option + "\"");
  double budget = c.activationCheckpoint.memoryBudget;
  if (!(budget >= 0 && budget <= 1))
    return bad("activation_checkpoint.memory_budget",
               "must be a fraction in [0, 1] (0: full checkpointing, 1: "
               "none), got " +
                   llvm::formatv("{0}", budget).str());
  if (std::optional<double> gib = c.activationCheckpoint.memoryBudgetGib;
      gib && !(*gib > 0))
    return bad("activation_checkpoint.memory_budget_gib",
               "must be positive (GiB per rank), got " +
                   llvm::formatv("{0}", *gib).str());
  if (c.parallelism.asyncTensorParallelChunks < 0)
    return bad("parallelism.async_tensor_parallel_chunks",
               "must be at least 0 (0: the count the cost model predicts "
               "fastest)");
  if (c.checkpoint.interval < 1)
    return bad("checkpoint.interval", "must be at least 1");
  if (c.checkpoint.keepLatestK < 0)
    return bad("checkpoint.keep_latest_k", "must be at least 0 (0: keep all)");
  if (c.profiling.profileFreq < 1)
    return bad("profiling.profile_freq", "must be at least 1");
  if (c.hardware.ranksPerNode < 0)
    return bad("hardware.ranks_per_node",
               "must be positive (or 0: the device file's)");

  // The pipeline keys. The schedule's name is checked whatever the degree
  // (a typo is a typo); the rest only acts with pipeline stages, as in
  // torchtitan.
  ParallelismConfig &parallelism = c.parallelism;
  const PipelineScheduleInfo *schedule =
      lookupPipelineSchedule(parallelism.pipelineParallelSchedule);
  if (!schedule) {
    llvm::StringRef name = parallelism.pipelineParallelSchedule;
    std::string list, suggestion;
    unsigned bestDistance = 4;
    for (const PipelineScheduleInfo &known : getPipelineSchedules()) {
      list += (list.empty() ? "\"" : ", \"") + known.name.str() + "\"";
      unsigned distance = llvm::StringRef(known.name.lower())
                              .edit_distance(name.lower(), true, bestDistance);
      if (distance < bestDistance) {
        bestDistance = distance;
        suggestion = " (did you mean '" + known.name.str() + "'?)";
      }
    }
    return bad("parallelism.pipeline_parallel_schedule",
               "must be one of " + list + " (in any case), got \"" + name +
                   "\"" + suggestion);
  }
  parallelism.pipelineParallelSchedule = schedule->name.str();
  if (parallelism.pipelineParallelDegree > 1) {
    int64_t microbatchSize = parallelism.pipelineParallelMicrobatchSize;
    if (microbatchSize < 1)
      return bad("parallelism.pipeline_parallel_microbatch_size",
                 llvm::formatv("must be at least 1, got {0}", microbatchSize));
    if (c.training.localBatchSize % microbatchSize != 0)
      return bad("training.local_batch_size",
                 llvm::formatv(
                     "= {0} is not divisible by "
                     "'parallelism.pipeline_parallel_microbatch_size' = {1}: "
                     "with pipeline_parallel_degree > 1 a step runs "
                     "local_batch_size / pipeline_parallel_microbatch_size "
                     "microbatches (torchtitan's rule); make "
                     "local_batch_size a multiple of the microbatch size",
                     c.training.localBatchSize, microbatchSize));
    if (llvm::Error e = checkPipelineSplitKeys(parallelism))
      return error(file + ": " + llvm::toString(std::move(e)));
  }

  // Settings whose pass has not landed are refused, not ignored: a user must
  // never believe a setting took effect. The value that asks for nothing
  // stays accepted.
  auto unsupported = [&](llvm::StringRef key, const llvm::Twine &value,
                         const llvm::Twine &missing, const llvm::Twine &fix) {
    return error(file + ": " + key + " = " + value + " is not supported yet (" +
                 missing + "); " + fix);
  };
  if (parallelism.pipelineParallelDegree > 1 && !schedule->supported)
    return unsupported("parallelism.pipeline_parallel_schedule",
                       "\"" + schedule->name + "\"",
                       schedule->unsupportedReason, schedule->unsupportedFix);
  // Known values titan does not apply yet: said, not silently dropped.
  auto warn = [&](const llvm::Twine &message) {
    c.warnings.push_back(message.str());
  };
  if (c.parallelism.enableAsyncTensorParallel &&
      c.parallelism.tensorParallelDegree == 1)
    warn("parallelism.enable_async_tensor_parallel = true does nothing "
         "without tensor parallelism (tensor_parallel_degree = 1)");
  if (!c.modelName.empty()) {
    const auto &models = knownModels();
    auto model = llvm::find_if(
        models, [&](const auto &entry) { return entry.first == c.modelName; });
    if (model == models.end())
      warn("model.name \"" + c.modelName +
           "\" is not a family of titan's models/" +
           suggest(c.modelName, models,
                   [](const auto &entry) { return entry.first; }) +
           "; the model is the one MODEL.pt holds");
    else if (!c.modelFlavor.empty() &&
             !llvm::is_contained(model->second, c.modelFlavor))
      warn("model.flavor \"" + c.modelFlavor + "\" is not a flavor of " +
           c.modelName +
           suggest(c.modelFlavor, model->second,
                   [](llvm::StringRef name) { return name; }) +
           "; the model is the one MODEL.pt holds");
  }
  return llvm::Error::success();
}

} // namespace

std::vector<std::pair<std::string, ConfigValueType>>
mlir::titan::getTitanConfigKeys() {
  TrainConfig config;
  std::vector<std::pair<std::string, ConfigValueType>> keys;
  for (const TomlSection &section : schema(config))
    for (const TomlKey &key : section.keys) {
      const TomlTarget &target = key.target;
      ConfigValueType type = ConfigValueType::Number;
      if (std::holds_alternative<std::string *>(target))
        type = ConfigValueType::String;
      else if (std::holds_alternative<int64_t *>(target) ||
               std::holds_alternative<std::optional<int64_t> *>(target))
        type = ConfigValueType::Integer;
      else if (std::holds_alternative<bool *>(target) ||
               std::holds_alternative<std::optional<bool> *>(target))
        type = ConfigValueType::Boolean;
      else if (std::holds_alternative<std::vector<double> *>(target))
        type = ConfigValueType::NumberList;
      else if (std::holds_alternative<std::vector<std::string> *>(target))
        type = ConfigValueType::StringList;
      else if (std::holds_alternative<std::vector<std::vector<std::string>> *>(
                   target))
        type = ConfigValueType::StringListList;
      keys.emplace_back(std::string(section.name) + "." + key.name, type);
    }
  return keys;
}

llvm::Expected<TrainConfig>
mlir::titan::parseTrainConfig(llvm::StringRef text, llvm::StringRef fileName,
                              llvm::ArrayRef<std::string> overrides) {
  TrainConfig config;
  llvm::Expected<toml::table> parsed = parseToml(text, fileName);
  if (!parsed)
    return parsed.takeError();
  // torchtitan's keys that titan's schema lacks: stored (another release's
  // spelling of a titan key), ignored, noted or refused once the overrides
  // have had their say (TorchtitanKeys.h).
  std::vector<TomlSection> sections = schema(config);
  TorchtitanKeys torchtitan(sections);
  if (llvm::Error e = applyTomlSchema(*parsed, sections, fileName, &torchtitan))
    return std::move(e);
  for (const std::string &assignment : overrides) {
    if (assignment.find_first_of("\n\r") != std::string::npos)
      return error("override '" + llvm::StringRef(assignment).trim() +
                   "': a value must be on one line");
    auto [key, value] = llvm::StringRef(assignment).split('=');
    auto [section, name] = key.split('.');
    if (name.empty() || value.empty())
      return error("override '" + assignment +
                   "': expected section.key=value, e.g. training.seq_len=64");
    // Parse the value as a TOML value: numbers and booleans as such,
    // anything else as a string.
    std::string line = ("[" + section + "]\n" + name + " = " + value).str();
    llvm::Expected<toml::table> one = parseToml(line, "override");
    if (!one) {
      llvm::consumeError(one.takeError());
      line = ("[" + section + "]\n" + name + " = \"" + value + "\"").str();
      one = parseToml(line, "override");
    }
    if (!one) {
      llvm::consumeError(one.takeError());
      return error("override '" + assignment + "': cannot parse the value");
    }
    std::string where = "override '" + assignment + "'";
    llvm::Error applied = applyTomlSchema(*one, sections, where, &torchtitan);
    if (applied && !value.starts_with("\"")) {
      // A number or boolean for a key that takes a string
      // (selective_ac_option=2) means that string, as torchtitan's command
      // line takes it; else the typed value's error stands.
      std::string quoted =
          ("[" + section + "]\n" + name + " = \"" + value + "\"").str();
      llvm::Expected<toml::table> asString = parseToml(quoted, "override");
      if (asString) {
        if (llvm::Error retried =
                applyTomlSchema(*asString, sections, where, &torchtitan))
          llvm::consumeError(std::move(retried));
        else
          llvm::consumeError(std::move(applied));
      } else {
        llvm::consumeError(asString.takeError());
      }
    }
    if (applied)
      return std::move(applied);
  }
  if (llvm::Error e = torchtitan.finish(config))
    return std::move(e);
  if (llvm::Error e = validate(config, fileName))
    return std::move(e);
  return config;
}

llvm::Expected<TrainConfig>
mlir::titan::loadTrainConfig(llvm::StringRef path,
                             llvm::ArrayRef<std::string> overrides) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return error("cannot read config '" + path +
                 "': " + buffer.getError().message());
  llvm::Expected<TrainConfig> config =
      parseTrainConfig((*buffer)->getBuffer(), path, overrides);
  if (!config)
    return config.takeError();
  // Files named by the config (a plan, a device) are found next to it; a
  // path given on the command line is the user's, relative to where they
  // are. A device without a slash or ".toml" is a bundled device's name.
  auto resolve = [&](std::string &file, llvm::StringRef key) {
    bool fromCommandLine = llvm::any_of(overrides, [&](const std::string &set) {
      return llvm::StringRef(set).starts_with((key + "=").str());
    });
    if (file.empty() || fromCommandLine || !llvm::sys::path::is_relative(file))
      return;
    llvm::SmallString<256> resolved = llvm::sys::path::parent_path(path);
    llvm::sys::path::append(resolved, file);
    file = std::string(resolved);
  };
  resolve(config->parallelism.tpPlan, "parallelism.tp_plan");
  resolve(config->parallelism.pipelineParallelScheduleCsv,
          "parallelism.pipeline_parallel_schedule_csv");
  resolve(config->checkpoint.hfMapping, "checkpoint.hf_mapping");
  llvm::StringRef device = config->hardware.device;
  if (device.contains('/') || device.ends_with(".toml"))
    resolve(config->hardware.device, "hardware.device");
  return config;
}

/// `value` as a TOML basic string.
static std::string quoteToml(llvm::StringRef value) {
  std::string quoted = "\"";
  for (unsigned char c : value) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += char(c);
    } else if (c < 0x20 || c == 0x7f) {
      quoted += llvm::formatv("\\u{0:x-4}", unsigned(c)).str();
    } else {
      quoted += char(c);
    }
  }
  return quoted + "\"";
}

/// `value` as a TOML float that reads back to the same double.
static std::string formatTomlFloat(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  // The shortest of %.15g .. %.17g that reads back exactly.
  char buffer[32];
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", digits, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  std::string text = buffer;
  if (text.find_first_of(".eE") == std::string::npos)
    text += ".0";
  return text;
}

std::string mlir::titan::printTrainConfig(const TrainConfig &config) {
  // The schema binds fields for writing; printing only reads them.
  TrainConfig &fields = const_cast<TrainConfig &>(config);
  std::string text;
  llvm::raw_string_ostream os(text);
  std::vector<const void *> printed;
  for (const TomlSection &section : schema(fields)) {
    os << (text.empty() ? "" : "\n") << "[" << section.name << "]\n";
    for (const TomlKey &key : section.keys) {
      const void *field = std::visit(
          [](auto *target) -> const void * { return target; }, key.target);
      // A second spelling of a field (v0.1's names) is not repeated.
      if (llvm::is_contained(printed, field))
        continue;
      printed.push_back(field);
      std::visit(
          [&](auto *target) {
            using T = std::decay_t<decltype(*target)>;
            auto quoteAll = [](const std::vector<std::string> &strings) {
              return "[" +
                     llvm::join(llvm::map_range(strings, quoteToml), ", ") +
                     "]";
            };
            if constexpr (std::is_same_v<T, std::string>)
              os << key.name << " = " << quoteToml(*target) << "\n";
            else if constexpr (std::is_same_v<T, int64_t>)
              os << key.name << " = " << *target << "\n";
            else if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
              if (*target)
                os << key.name << " = " << **target << "\n";
            } else if constexpr (std::is_same_v<T, std::vector<std::string>>)
              os << key.name << " = " << quoteAll(*target) << "\n";
            else if constexpr (std::is_same_v<
                                   T, std::vector<std::vector<std::string>>>)
              os << key.name << " = ["
                 << llvm::join(llvm::map_range(*target, quoteAll), ", ")
                 << "]\n";
            else if constexpr (std::is_same_v<T, double>)
              os << key.name << " = " << formatTomlFloat(*target) << "\n";
            else if constexpr (std::is_same_v<T, std::optional<double>>) {
              if (*target)
                os << key.name << " = " << formatTomlFloat(**target) << "\n";
            } else if constexpr (std::is_same_v<T, bool>)
              os << key.name << " = " << (*target ? "true" : "false") << "\n";
            else if constexpr (std::is_same_v<T, std::optional<bool>>) {
              if (*target)
                os << key.name << " = " << (**target ? "true" : "false")
                   << "\n";
            } else
              os << key.name << " = ["
                 << llvm::join(llvm::map_range(*target, formatTomlFloat), ", ")
                 << "]\n";
          },
          key.target);
    }
  }
  return text;
}
