//===- TrainConfig.h - torchtitan-style TOML training configs ---*- C++ -*-===//
//
// Reads a training config with torchtitan's sections and key names
// ([job], [model], [optimizer], [lr_scheduler], [training], [parallelism],
// [activation_checkpoint], [checkpoint], [metrics]). Every key is checked
// against a schema: an unknown section or key (a typo) and a value of the
// wrong type are errors that name the key, the file and line, and the fix.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CONFIG_TRAINCONFIG_H
#define TITAN_CONFIG_TRAINCONFIG_H

#include "titan/Support/ElementType.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::titan {

/// [optimizer]: AdamW with PyTorch's semantics.
struct OptimizerConfig {
  std::string name = "AdamW";
  double lr = 8e-4;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weightDecay = 0.1;
  /// Step each parameter's AdamW as soon as its gradient is complete, in
  /// the backward (torchtitan's optimizer hooks): its gradient is freed
  /// there, and no gradient is clipped (training.max_norm does nothing:
  /// no norm of them all exists before the steps).
  bool earlyStepInBackward = false;
};

/// [lr_scheduler]: linear warmup, then decay.
struct LrSchedulerConfig {
  int64_t warmupSteps = 200;
  double decayRatio = -1; // < 0: decay over all steps after warmup
  std::string decayType = "linear";
  double minLrFactor = 0.0;
  /// The steps the schedule spans (torchtitan's total_steps); < 0: the
  /// run's training.steps. A run may stop before it (a shorter run on the
  /// same curve) or go past it (at the rate of its last step).
  int64_t totalSteps = -1;

  /// The steps the schedule spans in a run of `trainingSteps` steps.
  int64_t getScheduleSteps(int64_t trainingSteps) const {
    return totalSteps < 0 ? trainingSteps : totalSteps;
  }
};

/// [training].
struct TrainingConfig {
  int64_t localBatchSize = 8;
  /// The rows of a step over all data-parallel ranks (torchtitan's
  /// global_batch_size); below 0: localBatchSize times the data-parallel
  /// degree. More rows than that are gradient accumulation: each rank runs
  /// the step's rows as microbatches of localBatchSize rows and sums their
  /// gradients before one optimizer step.
  int64_t globalBatchSize = -1;
  int64_t seqLen = 2048;
  double maxNorm = 1.0; // <= 0: no gradient clipping
  int64_t steps = 10;
  std::string dataset = "fixture";
  std::string datasetPath;
  int64_t seed = 42;
  bool deterministic = false;
  /// The dtype parameters, their gradients and AdamW's moments are held in
  /// (torchtitan's training.dtype): "float32", or "bfloat16" for pure bf16
  /// training (no float32 master weights; the forward and backward compute
  /// in bf16 wherever the model does not cast).
  std::string dtype = "float32";
  /// The dtype the forward and backward compute parameters in (FSDP2's
  /// param_dtype): "float32" (no mixed precision), "bfloat16" or "float16".
  /// Under pure bf16 training the parameters are bf16 already, whatever it
  /// says ("float32" or "bfloat16").
  std::string mixedPrecisionParam = "float32";
  /// The dtype gradients are reduced in across data-parallel ranks (FSDP2's
  /// reduce_dtype).
  std::string mixedPrecisionReduce = "float32";
  /// Label value whose tokens do not count in the loss.
  int64_t ignoreIndex = -100;
  /// FSDP2's CPU offload (torchtitan's enable_cpu_offload): parameters,
  /// gradients and optimizer state in host memory, the optimizer stepped
  /// there. On the CPU backend that is where a rank keeps everything
  /// already; titan-compile refuses it for the CUDA backend, whose memory
  /// plan has no offload.
  bool enableCpuOffload = false;

  /// dtype as an element type.
  ElementType getStorageDtype() const;
  /// The dtype the forward reads parameters in: bf16 under pure bf16
  /// training, else mixedPrecisionParam as an element type.
  ElementType getParamDtype() const;
  /// mixedPrecisionReduce as an element type.
  ElementType getReduceDtype() const;
  /// The microbatches of gradient accumulation on `dataParallelDegree`
  /// data-parallel ranks: globalBatchSize / (localBatchSize x
  /// dataParallelDegree), 1 when globalBatchSize is unset. Call
  /// checkGlobalBatchSize first.
  int64_t getAccumulationSteps(int64_t dataParallelDegree) const;
  /// Checks that globalBatchSize, when set, is a multiple of
  /// localBatchSize x `dataParallelDegree` (torchtitan's rule); the error
  /// names the keys, their values and the fix.
  llvm::Error checkGlobalBatchSize(int64_t dataParallelDegree) const;
};

/// [parallelism]: torchtitan's degrees.
struct ParallelismConfig {
  int64_t dataParallelReplicateDegree = 1;
  /// -1: the ranks the other degrees leave (see resolveMesh).
  int64_t dataParallelShardDegree = -1;
  /// "always": the backward gathers every parameter again
  /// (titan-reshard-after-forward); "default" and "never": the backward
  /// reuses the parameters FSDP gathered in the forward.
  std::string fsdpReshardAfterForward = "default";
  int64_t tensorParallelDegree = 1;
  bool enableSequenceParallel = true;
  /// titan's: collectives run behind computation (titan-schedule-overlap:
  /// FSDP's prefetch of the next block's parameters, gradient reductions
  /// completing during the next block's backward).
  bool overlapCommunication = true;
  /// titan's: the parameter gathers of each block and phase run as one
  /// all-gather, its gradient reductions as one reduce-scatter or
  /// all-reduce (titan-bucket-collectives: FSDP2's and DDP's buckets),
  /// where the cost model of [hardware] device predicts it faster. Unset:
  /// titan-compile keeps the buckets only if the simulated step on that
  /// device is faster with them than without; true: every bucket the pass
  /// keeps; false: none.
  std::optional<bool> bucketCollectives;
  /// Async tensor parallelism: tensor-parallel all-gather -> matmul and
  /// matmul -> reduce-scatter run as chunks whose communication overlaps
  /// the other chunks' matmuls (titan-decompose-collective-matmul).
  bool enableAsyncTensorParallel = false;
  /// titan's: the chunks of each such collective; 0: the count the cost
  /// model predicts fastest on [hardware] device (1: left whole).
  int64_t asyncTensorParallelChunks = 0;
  bool disableLossParallel = false;
  int64_t contextParallelDegree = 1;
  /// The pipeline ranks (torchtitan's "pp" mesh dimension, outermost; see
  /// Mesh.h). 1: no pipeline; the other pipeline keys then do nothing, as
  /// in torchtitan.
  int64_t pipelineParallelDegree = 1;
  /// One of torch's schedules (titan/Config/PipelineSplit.h), in torch's
  /// spelling: parseTrainConfig matches the name case-insensitively, as
  /// torch's get_schedule_class does, and stores torch's spelling.
  std::string pipelineParallelSchedule = "1F1B";
  /// A schedule file in the CSV form of torch's _PipelineScheduleRuntime;
  /// empty: none. A relative path in a config file is relative to the
  /// file's directory (loadTrainConfig resolves it).
  std::string pipelineParallelScheduleCsv;
  /// The rows of one microbatch: each step runs local_batch_size /
  /// pipelineParallelMicrobatchSize microbatches through the pipeline.
  int64_t pipelineParallelMicrobatchSize = 1;
  /// torchtitan v0.2's split of the blocks (PipelineSplit.h): the blocks of
  /// each (virtual) stage, counting the first stage's modules before the
  /// blocks as pipelineParallelFirstStageLessLayers blocks and the last
  /// stage's modules after them as pipelineParallelLastStageLessLayers.
  /// Unset (absent from the config): none.
  std::optional<int64_t> pipelineParallelLayersPerStage;
  /// Unset: not written in the config; torchtitan's default (1) then
  /// applies (getFirstStageLessLayers), but does not by itself ask for
  /// torchtitan's split.
  std::optional<int64_t> pipelineParallelFirstStageLessLayers;
  /// As pipelineParallelFirstStageLessLayers, for the last stage.
  std::optional<int64_t> pipelineParallelLastStageLessLayers;
  /// torchtitan v0.2's explicit split: the module FQNs of each stage
  /// ([["tok_embeddings", "layers.0"], ["layers.1", "norm", "output"]]).
  /// Empty: none.
  std::vector<std::vector<std::string>> moduleFqnsPerModelPart;
  /// torchtitan v0.1's explicit split: the blocks that begin the second
  /// and later stages (["layers.4", "layers.8"]). Empty: none.
  std::vector<std::string> pipelineParallelSplitPoints;
  /// Tensor-parallel plan file (see ParallelPlan.h); empty: the built-in
  /// Llama plan. A relative path in a config file is relative to the file's
  /// directory (loadTrainConfig resolves it).
  std::string tpPlan;

  /// pipelineParallelFirstStageLessLayers, or torchtitan's default 1.
  int64_t getFirstStageLessLayers() const {
    return pipelineParallelFirstStageLessLayers.value_or(1);
  }
  /// pipelineParallelLastStageLessLayers, or torchtitan's default 1.
  int64_t getLastStageLessLayers() const {
    return pipelineParallelLastStageLessLayers.value_or(1);
  }
  /// Whether a key fixes the blocks of each pipeline stage (layers per
  /// stage, either less-layers key written, module FQNs per model part or
  /// split points); otherwise titan balances the stages by its cost model.
  bool hasPipelineSplitKey() const {
    return pipelineParallelLayersPerStage ||
           pipelineParallelFirstStageLessLayers ||
           pipelineParallelLastStageLessLayers ||
           !moduleFqnsPerModelPart.empty() ||
           !pipelineParallelSplitPoints.empty();
  }
};

/// [activation_checkpoint] (titan-select-recompute): torchtitan's "none",
/// "full", "selective" and "memory_budget", and titan's "auto". The default
/// is "none" (torchtitan's is "selective"), so that a config without the
/// section says what titan does.
struct ActivationCheckpointConfig {
  std::string mode = "none";
  std::string selectiveAcOption = "op";
  /// mode "memory_budget": torchtitan's fraction of what no checkpointing
  /// keeps for the backward (0: full checkpointing; 1: none).
  double memoryBudget = 0.5;
  /// mode "auto" (titan's key): the bytes per rank, in GiB, the compiled
  /// step may use at its peak; unset: the device's memory.
  std::optional<double> memoryBudgetGib;
};

/// [checkpoint]: torchtitan's keys (v0.1 and v0.2 spellings), applied by
/// the executable (docs/training-jobs.md).
struct CheckpointConfig {
  /// `enable` (v0.2) or `enable_checkpoint` (v0.1).
  bool enable = false;
  /// Under `job.dump_folder`; checkpoints are `step-N` folders in it.
  std::string folder = "checkpoint";
  /// Save every `interval` steps (and after the last step).
  int64_t interval = 500;
  /// The last save holds the model's weights only, in `exportDtype`
  /// (`last_save_model_only`, v0.1's `model_weights_only`).
  bool modelWeightsOnly = false;
  std::string exportDtype = "float32";
  /// Keep this many of the newest checkpoints (0: all).
  int64_t keepLatestK = 10;
  /// "disabled", "async" or "async_with_pinned_mem": saves run on a
  /// background thread from a snapshot of the state.
  std::string asyncMode = "disabled";
  /// Resume from `step-N` (-1: the newest checkpoint in the folder).
  int64_t loadStep = -1;
  /// Start from this checkpoint when the folder has none.
  std::string initialLoadPath;
  /// The initial checkpoint holds the model only (no optimizer state).
  bool initialLoadModelOnly = true;
  /// The initial checkpoint is Hugging Face safetensors.
  bool initialLoadInHf = false;
  /// The last save is Hugging Face safetensors (model only).
  bool lastSaveInHf = false;
  /// Also save right after the job's first step (torchtitan's check that
  /// checkpointing works before the first interval).
  bool enableFirstStepCheckpoint = false;
  /// Load as configured, never save.
  bool loadOnly = false;
  /// Save the seeded model as checkpoint step-0, as the job's last save
  /// would be, and train no step (torchtitan's seed checkpoint; a job that
  /// finds step-0 in its folder starts from its model).
  bool createSeedCheckpoint = false;
  /// What a load leaves out (torchtitan's state names): "dataloader" starts
  /// the data from the beginning. The others are refused: AdamW's bias
  /// correction and the learning-rate schedule both count the one step
  /// the checkpoint holds.
  std::vector<std::string> excludeFromLoading;
  /// titan's key: the mapping between the model's names and Hugging Face's
  /// (docs/hf-weights.md; models/llama3/hf_mapping.json), for the two keys
  /// above. A relative path is relative to the config file.
  std::string hfMapping;
};

/// [profiling]: Chrome traces of the runtime's work.
struct ProfilingConfig {
  bool enableProfiling = false;
  /// Under `job.dump_folder`.
  std::string saveTracesFolder = "profile_traces";
  /// Trace every `profileFreq`-th step.
  int64_t profileFreq = 10;
};

/// [validation]: the loss on held-out data every `freq` steps, as
/// torchtitan's Validator computes it (forward and loss only, dropout off).
/// `enable`, `localBatchSize` and `seqLen` are compiled in (titan-compile
/// builds a validation program for that batch beside the step); the rest
/// are read at run time.
struct ValidationConfig {
  bool enable = false;
  /// torchtitan's dataset name; titan reads `datasetPath` (docs/data.md).
  std::string dataset = "c4_validation";
  std::string datasetPath;
  /// Rows per data-parallel rank, as training.local_batch_size.
  int64_t localBatchSize = 8;
  int64_t seqLen = 2048;
  /// Validate after step 1 and every `freq`-th step.
  int64_t freq = 10;
  /// Batches per validation; -1: one pass over the whole dataset.
  int64_t steps = -1;
};

/// [hardware] (titan's own section): the device the plan report's
/// predictions are for.
struct HardwareConfig {
  /// A bundled device ("h100-sxm", "h200", "a100-sxm", "b200", "cpu") or
  /// the path of a device file (titan/Config/DeviceFile.h).
  std::string device = "cpu";
  /// Ranks per node; 0: the device file's.
  int64_t ranksPerNode = 0;
};

/// A whole training config.
struct TrainConfig {
  std::string jobName;
  std::string jobDescription;
  std::string dumpFolder = "./outputs";
  int64_t logFreq = 10;
  std::string modelName;
  std::string modelFlavor;
  std::string tokenizerPath;
  OptimizerConfig optimizer;
  LrSchedulerConfig lrScheduler;
  TrainingConfig training;
  ParallelismConfig parallelism;
  ActivationCheckpointConfig activationCheckpoint;
  CheckpointConfig checkpoint;
  ProfilingConfig profiling;
  ValidationConfig validation;
  HardwareConfig hardware;
  /// What the config asks for that titan does not do (yet), or values it
  /// does not know but can proceed without (an unknown model family): one
  /// line each, for the tools to print as warnings.
  std::vector<std::string> warnings;

  /// Checks what depends on the data-parallel degree of the resolved mesh:
  /// training.global_batch_size (TrainingConfig::checkGlobalBatchSize),
  /// and no early optimizer steps under gradient accumulation (each
  /// microbatch's backward would step).
  llvm::Error checkDataParallelDegree(int64_t dataParallelDegree) const;
};

/// Parses `text` (named `fileName` in errors). `overrides` are
/// "section.key=value" assignments applied after the file, as torchtitan's
/// command-line overrides are (e.g. "training.seq_len=64").
llvm::Expected<TrainConfig>
parseTrainConfig(llvm::StringRef text, llvm::StringRef fileName,
                 llvm::ArrayRef<std::string> overrides = {});

/// `config` as a TOML file of every key titan's schema knows (one spelling
/// each): parseTrainConfig reads it back to an equal config, warnings
/// aside. titan-compile writes it as OUT/config.toml, the config the
/// executable was compiled with.
std::string printTrainConfig(const TrainConfig &config);

/// Reads and parses the file at `path`.
llvm::Expected<TrainConfig>
loadTrainConfig(llvm::StringRef path,
                llvm::ArrayRef<std::string> overrides = {});

} // namespace mlir::titan

#endif // TITAN_CONFIG_TRAINCONFIG_H
