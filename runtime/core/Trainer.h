//===- Trainer.h - running a compiled training step -------------*- C++ -*-===//
//
// What a rank process does with its compiled program: allocate the memory
// regions the plan asks for, fill the state (from a DCP checkpoint, or a
// seeded initialization that does not depend on the parallel layout), feed
// each step its box of the global batch, run the steps, and save the state
// as a DCP checkpoint that PyTorch reads.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CORE_TRAINER_H
#define TITAN_RUNTIME_CORE_TRAINER_H

#include "comm/Progress.h"
#include "core/Context.h"
#include "core/ProgramDescription.h"
#include "core/StagedBatch.h"
#include "core/StepMemory.h"
#include "core/Tracer.h"
#include "core/Validator.h"
#include "data/DataLoader.h"

#include "titan/Checkpoint/Plan.h"
#include "titan/Config/TrainConfig.h"
#include "titan/Support/Npy.h"

#include <memory>
#include <optional>
#include <string>

namespace titan::rt {

class MetricsLog;

/// The global batches a run reads: an .npy file of a folder per input
/// (`tokens.npy` or the model's own name for its token ids, `labels.npy`),
/// each [batch, seq] (the same batch every step) or [steps, batch,
/// seq] (step i reads batch i modulo steps).
class BatchSource {
public:
  /// Maps the folder's files and checks their shapes against the program's
  /// global input shapes.
  Status open(const std::string &folder, const ProgramDescription &program);
  /// Copies this rank's box of batch `step` of input `name` to `target`.
  Status read(const std::string &name, int64_t step, int64_t rank,
              const ProgramDescription &program, uint8_t *target) const;

private:
  std::map<std::string, mlir::titan::MappedNpy> files;
};

/// Options of a run: the job's config (OUT/config.toml with the command
/// line's overrides) and the executable's own flags.
struct RunOptions {
  /// The steps of the whole job (`training.steps`): a run resumed from a
  /// checkpoint trains until this many are done.
  int64_t steps = 1;
  /// `--steps N`: run N steps from the loaded state instead.
  std::optional<int64_t> runSteps;
  /// The learning rate, scaled each step by `lrSchedule`.
  double learningRate = 8e-4;
  mlir::titan::LrSchedule lrSchedule;
  /// `--data DIR`: tokens.npy and labels.npy (BatchSource) instead of the
  /// dataset.
  std::string dataFolder;
  /// `[training] dataset_path` and `[model] tokenizer_path` (DataLoader.h;
  /// torchtitan's hf_assets_path: its config.json serves Hugging Face
  /// saves).
  std::string datasetPath;
  std::string tokenizerPath;
  /// A DCP checkpoint to start from; else the job's checkpoint folder, its
  /// initial checkpoint, or a seeded initialization.
  std::string loadCheckpoint;
  std::string saveCheckpoint;
  /// "torch2" or "torch1.13": the module paths of the saved .metadata.
  std::string checkpointFlavor = "torch2";
  /// `[checkpoint]`; its folder is under `dumpFolder`.
  mlir::titan::CheckpointConfig checkpoint;
  /// `[job] dump_folder`: checkpoints and metrics go under it.
  std::string dumpFolder;
  /// `[metrics] log_freq`: rank 0 logs every this many steps.
  int64_t logFreq = 1;
  /// `[profiling]`: Chrome traces of every profile_freq-th step
  /// (Tracer.h), under `dumpFolder`.
  mlir::titan::ProfilingConfig profiling;
  /// torchtitan's model FLOPs per token and the device's peak FLOP/s
  /// (OUT/manifest.json), for TFLOP/s and MFU; 0 when unknown.
  double flopsPerToken = 0;
  double peakFlopsPerSecond = 0;
  /// The hardware threads a rank had when that peak was measured (a CPU
  /// device; 0 otherwise): the CPU runtime scales the peak by its rank's
  /// own share of the machine over these.
  double deviceHardwareThreadsPerRank = 0;
  /// Global .npy files of the buffers (RoPE tables, ...) the program reads.
  std::string buffersFolder;
  /// The program's checkpoint plan (which box of each tensor every rank
  /// holds): titan-compile's OUT/checkpoint-plan.txt.
  std::string checkpointPlanFile;
  uint64_t seed = 0;
  /// The rank's threads (--threads; 0: the machine's hardware threads
  /// shared by the node's ranks).
  int threads = 0;
  /// A file rank 0 appends one JSON line per step to (besides
  /// dumpFolder/metrics.jsonl).
  std::string metricsFile;
  /// `[validation]`: its data, how often and on how many batches (the
  /// program's batch is compiled in).
  mlir::titan::ValidationConfig validation;
  /// A folder every rank writes its results of the last step to, as
  /// <folder>/rank<R>/<name>.npy (local shards, for debugging).
  std::string dumpResults;
};

/// The job's checkpoint folder: `[checkpoint] folder` under `[job]
/// dump_folder`.
std::string checkpointRoot(const RunOptions &options);

/// The folder checkpoints of step `step` go in: `root/step-<step>`.
std::string checkpointFolderOf(const std::string &root, int64_t step);

/// The steps of the complete checkpoints (`step-N` folders with a
/// `.metadata`) in `root`, ascending.
std::vector<int64_t> listCheckpointSteps(const std::string &root);

/// Checks, before training, what `[checkpoint] last_save_in_hf` will need
/// at the end: the mapping and the model's config.json (HfCheckpoint.cpp).
Status checkHfSaveSettings(const RunOptions &options);

/// Why a run stopped before its last step.
enum class StopReason { None, Interrupted, NonFinite };

/// The signal that asked this process to stop (SIGINT or SIGTERM), or 0;
/// set by the handler installTrainingSignalHandlers installs.
int getStopSignal();

/// Makes SIGINT and SIGTERM ask the training loop to stop after the step
/// it is in (every rank agrees on the step; see Trainer::train).
void installTrainingSignalHandlers();

/// One rank's run of a compiled program.
class Trainer {
public:
  /// `control` spans every rank (the loop's agreement to stop, and the
  /// checkpoints' barriers); `saver` too, for saves on a background thread.
  /// The loop records its step and phase in `progress` (the rank's
  /// heartbeats say them). The step runs on `memory`'s regions; the
  /// Trainer works on their host mirror and copies between the two.
  /// `validator`: the job's validation ([validation] enable), if any.
  Trainer(const ProgramDescription &program, titanrt_step_function step,
          titanrt_context &context, int64_t rank, Communicator &control,
          Communicator &saver, RankProgress &progress,
          std::unique_ptr<StepMemory> memory, Validator *validator = nullptr);
  ~Trainer();

  /// Allocates the regions, opens the data, fills the state (fillState)
  /// and uploads it to the step's memory.
  Status prepare(const RunOptions &options);
  /// Runs the steps, logging on rank 0 and saving the job's checkpoints;
  /// `stopped` says why it stopped early, if it did.
  Status train(const RunOptions &options, StopReason &stopped);
  /// Saves the whole state as a DCP checkpoint in `folder` (every rank its
  /// part; rank 0 commits .metadata after a barrier).
  Status save(const RunOptions &options, const std::string &folder);
  /// Writes this rank's results of the last step as .npy files.
  Status dumpResults(const std::string &folder);
  /// Prints the plan's memory next to what the process used.
  void reportMemory() const;
  /// Whether the job has no step left (a complete job restarted).
  bool isComplete(const RunOptions &options) const;

private:
  class AsyncSave;
  /// What a checkpoint holds.
  enum class SaveKind { Full, ModelOnly };

  /// Fills the host mirror's state: from `--load`, else the newest
  /// checkpoint of the job's folder (or `load_step`'s), else
  /// `initial_load_path`, else a seeded initialization.
  Status fillState(const RunOptions &options);
  /// Fills each parameter copy `copy.<fqn>` (role param_copy: the forward's
  /// bf16 or f16 copy, which AdamW keeps; titan-keep-param-copies) with
  /// parameter `<fqn>` rounded to nearest even.
  Status fillParameterCopies();
  /// Copies `places` (null ones skipped) from the step's memory into the
  /// host mirror and waits for them.
  Status downloadPlaces(llvm::ArrayRef<const TensorPlace *> places);
  /// Downloads every result of the step into the host mirror.
  Status downloadResults();
  /// Downloads the whole state into the host mirror (the step updates it
  /// in place: the mirror's is stale after a step until this).
  Status downloadState();
  /// Loads the DCP checkpoint in `folder` into this rank's state (converted
  /// where it holds another float dtype): the model alone with `modelOnly`
  /// (optimizer state, step and data position 0); with `restartData`
  /// (exclude_from_loading's "dataloader") the data start from the
  /// beginning.
  Status loadCheckpoint(const std::string &folder, bool modelOnly,
                        bool restartData);
  /// Loads the parameters from Hugging Face safetensors in `folder`
  /// (HfCheckpoint.cpp); the optimizer state and the step start at 0.
  Status loadHfModel(const RunOptions &options, const std::string &folder);
  /// Saves the parameters as Hugging Face safetensors in `folder`, in
  /// `export_dtype`, with the model's config.json.
  Status saveHfModel(const RunOptions &options, const std::string &folder);
  Status loadBuffers(const std::string &folder);
  /// Whether `tensor` is part of the model, what a model-only checkpoint
  /// holds: a parameter, another name of one, or a buffer (not optimizer
  /// state or the step).
  bool isModelTensor(const mlir::titan::PlanTensor &tensor) const;
  Status openData(const RunOptions &options);
  /// Fills the inputs of the next step (the batch, lr, step).
  Status readInputs(const RunOptions &options);
  /// Fills the parameters from `seed` (on the rank's threads).
  void initialize(uint64_t seed);
  /// Saves step `stepsDone`'s checkpoint of the job folder as the config
  /// asks: the `last` save of the job in Hugging Face safetensors
  /// (last_save_in_hf) or the model alone (last_save_model_only), any
  /// other save whole.
  Status saveStepCheckpoint(const RunOptions &options, bool last);
  /// Saves step `stepsDone`'s checkpoint of the job folder (async when the
  /// config says so), then drops the oldest beyond keep_latest_k.
  Status saveJobCheckpoint(const RunOptions &options, SaveKind kind);
  /// Writes `kind`'s state from `stateBase` (the state region or a
  /// snapshot of it) into `folder` and commits it over `world`.
  Status writeCheckpoint(const RunOptions &options, const std::string &folder,
                         SaveKind kind, const uint8_t *stateBase,
                         float stepSnapshot, int64_t positionSnapshot,
                         Communicator &world);
  /// The box this rank holds of checkpoint source `source` in the state
  /// region at `stateBase`, or an error.
  llvm::Expected<mlir::titan::MutableDenseTensorRef>
  shardOf(llvm::StringRef source, uint8_t *stateBase, float &stepSlot,
          int64_t &positionSlot);
  /// The first result besides the loss that is not finite, or "".
  std::string findNonFiniteResult() const;
  /// Runs `function` (the training step or the validation program) on the
  /// step's regions, then waits for the asynchronous collectives it left
  /// queued (they finish before anything reads the state or uses their
  /// communicators). Returns the first failure's status (the step's own
  /// first).
  titanrt_status callStep(titanrt_step_function function);
  /// Waits until the sends the step posted without waiting for their
  /// receivers are done; `what` ("step 3") names the step in errors.
  Status completeSends(const std::string &what);
  /// Runs the validation after step `stepsDone` and logs its loss.
  Status validate(MetricsLog &log);

  const ProgramDescription &program;
  titanrt_step_function step;
  /// The job's validation, if it has one.
  Validator *validator;
  titanrt_context &context;
  int64_t rank;
  Communicator &control;
  Communicator &saver;
  RankProgress &progress;
  /// The host mirror of the step's regions, which the Trainer reads and
  /// writes, and the step's regions themselves.
  Regions regions;
  std::unique_ptr<StepMemory> memory;
  mlir::titan::CheckpointPlan plan;
  /// Updates done so far (AdamW's step before the next update).
  int64_t stepsDone = 0;
  /// The 0-d f32 the checkpoint's `step` source is loaded into and saved
  /// from.
  float stepValue = 0;
  /// The data: .npy batches, or a dataset's windows at `dataPosition`.
  std::unique_ptr<BatchSource> batches;
  std::unique_ptr<TokenStream> tokenStream;
  std::unique_ptr<BatchWindows> windows;
  int64_t dataPosition = 0;
  /// This rank's rows of the dataset's global batch.
  StagedBatch staged;
  /// Records the profiled steps.
  std::unique_ptr<Tracer> tracer;
  /// The save running on a background thread, if any.
  std::unique_ptr<AsyncSave> asyncSave;
  /// Bytes in use on the heap after the first step and after the last.
  int64_t heapBeforeSteps = 0;
  int64_t heapAfterSteps = 0;
};

} // namespace titan::rt

#endif // TITAN_RUNTIME_CORE_TRAINER_H
