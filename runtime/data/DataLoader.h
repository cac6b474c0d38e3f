//===- DataLoader.h - training batches from a dataset ----------*- C++ -*-===//
//
// The data loader of a training job (docs/data.md): `[training] dataset_path`
// names text (a .txt file, a .jsonl/.json file of {"text": ...} records, or
// a folder of them) that is tokenized with `[model] tokenizer_path`'s
// tokenizer (bytes without one), or pre-tokenized ids (a flat .bin of
// uint16/uint32 as nanoGPT writes them, Megatron's .bin/.idx pair, or a 1-d
// integer .npy). The ids form one stream, each document as BOS ids EOS; as
// torchtitan's loader packs it, the stream is cut into windows of seq_len + 1
// ids that do not overlap, the tokens being the first seq_len and the
// labels the last seq_len of a window.
//
// The global batch of a step is the next `batch` windows: row b starts at
// position + b * (seq_len + 1), and the position then moves past them; past
// the end the stream starts again (a new epoch). Every rank reads only the
// rows and columns of its box of the global batch, so each data-parallel
// coordinate reads its own rows and no window is read by two of them in an
// epoch. The position is all the state there is: it is saved in the
// checkpoint (`dataloader.position`), so a resumed job, under any layout,
// reads the same next batch.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_DATA_DATALOADER_H
#define TITAN_RUNTIME_DATA_DATALOADER_H

#include "core/Status.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace titan::rt {

class Tokenizer;

/// The ids of a dataset as one stream.
class TokenStream {
public:
  /// Opens `path` (see the file comment); `tokenizer` tokenizes text.
  /// `vocabSize` (the embedding's rows) decides the width of a raw .bin
  /// (uint16 up to 65,536 ids, else uint32) and bounds every id.
  static Status open(const std::string &path, Tokenizer &tokenizer,
                     int64_t vocabSize, TokenStream &stream);
  /// A stream of `ids` (tests).
  static TokenStream fromIds(std::vector<int32_t> ids);

  /// The number of ids.
  int64_t size() const { return count; }
  /// The id at `index` (0 <= index < size()).
  int64_t at(int64_t index) const;
  /// What the stream was read from, for messages.
  const std::string &getDescription() const { return description; }

private:
  /// Ids of tokenized text.
  std::vector<int32_t> owned;
  /// A mapped file of fixed-width ids.
  std::unique_ptr<llvm::MemoryBuffer> mapped;
  const char *data = nullptr;
  int elementBytes = 4;
  bool elementSigned = true;
  int64_t count = 0;
  std::string description;
};

/// Windows of a TokenStream, batch by batch.
class BatchWindows {
public:
  BatchWindows(const TokenStream &stream, int64_t batch, int64_t seqLen)
      : stream(stream), batch(batch), seqLen(seqLen) {}

  /// The global batch's rows [rowBegin, rowBegin + rows) at `position`:
  /// `tokens` and `labels` get rows x seqLen ids each (row-major).
  void read(int64_t position, int64_t rowBegin, int64_t rows,
            llvm::MutableArrayRef<int64_t> tokens,
            llvm::MutableArrayRef<int64_t> labels) const;

  /// The position after the batch at `position`.
  int64_t next(int64_t position) const {
    return position + batch * (seqLen + 1);
  }
  /// The epoch (0-based) the batch at `position` starts in.
  int64_t epochOf(int64_t position) const { return position / stream.size(); }

  /// Whether the stream holds at least one window.
  Status check() const;

private:
  const TokenStream &stream;
  int64_t batch;
  int64_t seqLen;
};

} // namespace titan::rt

#endif // TITAN_RUNTIME_DATA_DATALOADER_H
