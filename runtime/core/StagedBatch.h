//===- StagedBatch.h - a rank's rows of a dataset's batch -----------------===//
//
// The data loader's batches reach a program's inputs in two moves: a rank
// stages the rows its boxes cover from the dataset's windows (DataLoader.h),
// then copies its box of the token ids and of the labels into their
// arguments. The training loop and the validation loop feed their programs
// alike.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CORE_STAGEDBATCH_H
#define TITAN_RUNTIME_CORE_STAGEDBATCH_H

#include "core/ProgramDescription.h"
#include "data/DataLoader.h"

#include "titan/Checkpoint/TorchSave.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace titan::rt {

/// `shape` as "[2, 128]".
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// Copies the box `box` of `source` (a global tensor, possibly stored with
/// a chunk order along one dim, `layout`) into the first part of `target`
/// (the box's shape, or larger for an uneven shard: its padding is zeroed).
void copyBox(mlir::titan::DenseTensorRef source, const Box &box,
             const InputLayout &layout,
             mlir::titan::MutableDenseTensorRef target);

/// Checks that every id of the global batch `data` of input `name` (batch
/// `batchIndex`, `dtype` ids) is in its range (`layout`'s): kernels do not
/// check indices, and once the vocabulary is sharded an id outside it would
/// fall in no rank's shard.
Status checkIdRange(const std::string &name, int64_t batchIndex,
                    const InputLayout &layout, int32_t dtype,
                    llvm::StringRef data);

/// One rank's rows of a program's batch of token ids and labels, staged
/// from a dataset (allocated once).
class StagedBatch {
public:
  /// Checks that `program` takes int64 token ids and `labels` [batch, seq]
  /// cut into the same rows on every rank, and sizes the staging for
  /// `rank`'s rows.
  Status open(const ProgramDescription &program, int64_t rank);
  /// Opens the dataset at `datasetPath` (tokenized with the tokenizer at
  /// `tokenizerPath`, docs/data.md) as `stream` and its windows of this
  /// program's global batch as `windows`.
  Status openDataset(const std::string &datasetPath,
                     const std::string &tokenizerPath,
                     std::unique_ptr<TokenStream> &stream,
                     std::unique_ptr<BatchWindows> &windows) const;
  /// Stages the rows of the batch at `position` of `windows`.
  void read(const BatchWindows &windows, int64_t position);
  /// Makes the global batch's rows from `firstRow` on padding (of a last,
  /// partial batch): token 0, every label `ignoreIndex`, which the loss
  /// does not count.
  void padRows(int64_t firstRow, int64_t ignoreIndex);
  /// The label the loss ignores, where the program's labels may hold one.
  std::optional<int64_t> getIgnoreIndex() const;
  /// Writes this rank's boxes of the staged tokens and labels into their
  /// arguments in `regions` (`batchIndex` names the batch in errors).
  Status write(int64_t batchIndex, const RegionTable &regions) const;

  /// The name of the model's token-id input (ProgramDescription::
  /// findTokenInput).
  const std::string &getTokenInput() const { return tokenInput; }
  /// The global batch [rows, seq] of the token ids.
  const std::vector<int64_t> &getGlobalShape() const {
    return program->inputs.at(tokenInput).globalShape;
  }
  /// The range of ids the token input takes (the vocabulary).
  int64_t getVocabularySize() const;

private:
  const ProgramDescription *program = nullptr;
  int64_t rank = 0;
  std::string tokenInput;
  std::vector<int64_t> tokens, labels;
};

} // namespace titan::rt

#endif // TITAN_RUNTIME_CORE_STAGEDBATCH_H
