//===- Validator.h - the validation loss of a training job ------*- C++ -*-===//
//
// A job compiled with `[validation] enable` links a validation program
// beside its training step (titan-compile; lib/Codegen/ValidationProgram.h):
// the forward and the loss of a held-out batch, on the parameters the
// training step keeps and in its arena. After the first step and every
// `validation.freq`-th, the Trainer runs it on `validation.steps` batches
// of `validation.dataset_path` (for -1, one pass over it, its last partial
// batch padded with rows the loss ignores), the same batches each time,
// and logs their mean loss, as torchtitan's Validator does
// (docs/training-jobs.md).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CORE_VALIDATOR_H
#define TITAN_RUNTIME_CORE_VALIDATOR_H

#include "core/ProgramDescription.h"
#include "core/StagedBatch.h"

#include <memory>
#include <utility>

namespace titan::rt {

struct RunOptions;

/// A rank's validation program and its data.
class Validator {
public:
  Validator(const ProgramDescription &program, titanrt_step_function step,
            int64_t rank)
      : program(program), step(step), rank(rank) {}

  /// Checks that the program runs on `training`'s mesh and regions (what
  /// titan-compile links is), and opens the validation data of `options`.
  Status open(const ProgramDescription &training, const RunOptions &options);
  /// Whether the validation runs after step `step` (1-based): after the
  /// first and every `validation.freq`-th, as torchtitan's.
  bool isDue(int64_t step) const { return step == 1 || step % freq == 0; }
  /// The batches of one validation.
  int64_t getBatches() const { return batches; }
  /// The tokens of one validation (over all ranks; a last, partial batch
  /// counts its rows).
  int64_t getTokens() const;
  /// Writes this rank's boxes of batch `batch` (of every validation: each
  /// reads the dataset's first batches) into the host mirror `regions`.
  Status writeBatch(int64_t batch, const RegionTable &regions);
  /// The bytes of the inputs region the program reads: offset and size
  /// (after the training step's inputs).
  std::pair<int64_t, int64_t> getInputRange() const;
  titanrt_step_function getStep() const { return step; }
  /// Where the program leaves its loss.
  const TensorPlace &getLoss() const { return *loss; }

private:
  const ProgramDescription &program;
  titanrt_step_function step;
  int64_t rank;
  const TensorPlace *loss = nullptr;
  int64_t freq = 1;
  int64_t batches = 0;
  /// The rows of the last batch of a validation.steps = -1 pass whose data
  /// end before a whole batch (the rest is padding the loss ignores); 0
  /// when it is whole.
  int64_t lastRows = 0;
  StagedBatch staged;
  std::unique_ptr<TokenStream> stream;
  std::unique_ptr<BatchWindows> windows;
};

} // namespace titan::rt

#endif // TITAN_RUNTIME_CORE_VALIDATOR_H
