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

#include "core/Context.h"
#include "core/ProgramDescription.h"

#include "titan/Checkpoint/Plan.h"
#include "titan/Support/Npy.h"

#include <memory>
#include <string>

namespace titan::rt {

/// The three memory regions of a rank, allocated once.
class Regions {
public:
  Regions() = default;
  ~Regions();
  Regions(const Regions &) = delete;
  Regions &operator=(const Regions &) = delete;

  /// Allocates the regions (zeroed, page-aligned) of `description`.
  Status allocate(const ProgramDescription &description);

  uint8_t *getBase(Region region) const {
    return bases[static_cast<int>(region)];
  }
  int64_t getBytes(Region region) const {
    return sizes[static_cast<int>(region)];
  }
  /// Where `place` lives.
  uint8_t *address(const TensorPlace &place) const {
    return getBase(place.region) + place.offset;
  }

private:
  uint8_t *bases[3] = {nullptr, nullptr, nullptr};
  int64_t sizes[3] = {0, 0, 0};
};

/// The global batches a run reads: `tokens.npy` and `labels.npy` of a
/// folder, each [batch, seq] (the same batch every step) or [steps, batch,
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

/// Options of a run (the executable's command line).
struct RunOptions {
  int64_t steps = 1;
  /// The learning rate, scaled each step by `lrSchedule`.
  double learningRate = 8e-4;
  mlir::titan::LrSchedule lrSchedule;
  std::string dataFolder;
  /// A DCP checkpoint to start from; else a seeded initialization.
  std::string loadCheckpoint;
  std::string saveCheckpoint;
  /// "torch2" or "torch1.13": the module paths of the saved .metadata.
  std::string checkpointFlavor = "torch2";
  /// Global .npy files of the buffers (RoPE tables, ...) the program reads.
  std::string buffersFolder;
  /// The program's checkpoint plan (which box of each tensor every rank
  /// holds): titan-compile's OUT/checkpoint-plan.txt.
  std::string checkpointPlanFile;
  uint64_t seed = 0;
  int threads = 0;
  /// A file rank 0 appends one JSON line per step to.
  std::string metricsFile;
  /// A folder every rank writes its results of the last step to, as
  /// <folder>/rank<R>/<name>.npy (local shards, for debugging).
  std::string dumpResults;
};

/// One rank's run of a compiled program.
class Trainer {
public:
  Trainer(const ProgramDescription &program, titanrt_step_function step,
          titanrt_context &context, int64_t rank)
      : program(program), step(step), context(context), rank(rank) {}

  /// Allocates the regions and fills the state.
  Status prepare(const RunOptions &options);
  /// Runs the steps, printing one line per step on rank 0.
  Status train(const RunOptions &options);
  /// Saves the state as a DCP checkpoint (every rank its part; rank 0
  /// commits .metadata after a barrier on `world`).
  Status save(const RunOptions &options, Communicator &world);
  /// Writes this rank's results of the last step as .npy files.
  Status dumpResults(const std::string &folder) const;
  /// Prints the plan's memory next to what the process used.
  void reportMemory() const;

private:
  Status loadCheckpoint(const std::string &folder);
  Status loadBuffers(const std::string &folder);
  void initialize(uint64_t seed);
  /// The box this rank holds of checkpoint source `source`, or an error.
  llvm::Expected<mlir::titan::MutableDenseTensorRef>
  shardOf(llvm::StringRef source);

  const ProgramDescription &program;
  titanrt_step_function step;
  titanrt_context &context;
  int64_t rank;
  Regions regions;
  mlir::titan::CheckpointPlan plan;
  /// Updates done so far (AdamW's step before the next update).
  int64_t stepsDone = 0;
  /// The 0-d f32 the checkpoint's `step` source is loaded into and saved
  /// from.
  float stepValue = 0;
  /// Bytes in use on the heap after the first step and after the last.
  int64_t heapBeforeSteps = 0;
  int64_t heapAfterSteps = 0;
};

} // namespace titan::rt

#endif // TITAN_RUNTIME_CORE_TRAINER_H
