//===- Dcp.h - PyTorch distributed checkpoint directories -------*- C++ -*-===//
//
// Reads and writes PyTorch's distributed checkpoint (DCP) directory format:
// `__{rank}_{k}.distcp` files of concatenated torch.save blobs, one per
// contiguous chunk, and a `.metadata` pickle (written last, to a temporary
// name, then renamed) describing every tensor's chunks and where they lie.
// Loading intersects the saved chunk boxes with the requested box, so a
// checkpoint can be read back under any sharding.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CHECKPOINT_DCP_H
#define TITAN_CHECKPOINT_DCP_H

#include "titan/Checkpoint/TorchSave.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlir::titan {

/// Which module paths the `.metadata` pickle uses.
enum class DcpFlavor {
  /// `torch.distributed.checkpoint.*` (PyTorch 2.x).
  Torch2,
  /// `torch.distributed._shard.checkpoint.*` (PyTorch 1.13).
  Torch113,
};

/// A box in a tensor's index space: `offsets[d] <= i[d] < offsets[d] +
/// sizes[d]`.
struct IndexBox {
  llvm::SmallVector<int64_t> offsets;
  llvm::SmallVector<int64_t> sizes;

  /// The number of elements in the box (1 for a 0-d box).
  int64_t numElements() const;
  bool operator==(const IndexBox &other) const {
    return offsets == other.offsets && sizes == other.sizes;
  }
};

/// The intersection of two boxes of the same rank, or nullopt when it is
/// empty.
std::optional<IndexBox> intersectBoxes(const IndexBox &a, const IndexBox &b);

/// Copies the elements of `region` from `source`, which holds the box
/// `sourceBox` of some tensor, into `target`, which holds `targetBox` of a
/// tensor of the same dtype; the boxes are in that tensor's global
/// coordinates and `region` lies within both. Runs contiguous in both are
/// copied with one memcpy each.
void copyRegion(DenseTensorRef source, const IndexBox &sourceBox,
                MutableDenseTensorRef target, const IndexBox &targetBox,
                const IndexBox &region);

/// Checks that `chunks` tile a tensor of shape `size` exactly: every chunk
/// has the tensor's rank and lies within bounds, no two overlap, and
/// together they cover every element. `fqn` names the tensor in errors.
llvm::Error validateTiling(llvm::StringRef fqn, llvm::ArrayRef<int64_t> size,
                           llvm::ArrayRef<IndexBox> chunks);

/// TensorStorageMetadata: a tensor's properties, global size and chunks.
struct DcpTensorMetadata {
  ElementType dtype = ElementType::F32;
  bool requiresGrad = false;
  llvm::SmallVector<int64_t> size;
  std::vector<IndexBox> chunks;
};

/// _StorageInfo: where one chunk's (or bytes entry's) blob lies.
struct DcpStorageInfo {
  std::string relativePath;
  uint64_t offset = 0;
  uint64_t length = 0;
};

/// The key of a storage entry: (fqn, chunk offsets); bytes entries have no
/// offsets.
using DcpStorageKey = std::pair<std::string, std::vector<int64_t>>;

/// The contents of a `.metadata` file.
struct DcpMetadata {
  /// Tensor entries (TensorStorageMetadata) by FQN.
  std::map<std::string, DcpTensorMetadata> tensors;
  /// FQNs of BytesStorageMetadata entries (opaque byte blobs).
  std::vector<std::string> bytesEntries;
  /// Where each chunk and bytes entry is stored.
  std::map<DcpStorageKey, DcpStorageInfo> storage;
};

/// Serializes `metadata` as the `.metadata` pickle of `flavor`, with the
/// object layout PyTorch 1.13 writes (dataclasses as NEWOBJ + BUILD of
/// their field dict, TensorProperties with its tuple state).
std::string encodeDcpMetadata(const DcpMetadata &metadata, DcpFlavor flavor);

/// Parses a `.metadata` pickle of either flavor with the restricted reader.
/// `name` names the file in errors.
llvm::Expected<DcpMetadata> decodeDcpMetadata(llvm::StringRef bytes,
                                              llvm::StringRef name);

/// Checks that `metadata` describes a loadable checkpoint: every tensor's
/// chunks tile it exactly and every chunk and bytes entry has a storage
/// entry.
llvm::Error validateDcpMetadata(const DcpMetadata &metadata);

/// One chunk of a tensor to save. Its data is not copied out beforehand:
/// the writer streams it from `source` into the data file.
struct DcpTensorChunk {
  std::string fqn;
  /// The tensor's global shape.
  llvm::SmallVector<int64_t> globalSize;
  /// The chunk's box in the global tensor.
  IndexBox box;
  /// A tensor holding the box `sourceBox` of the global tensor, which
  /// contains `box`: the global tensor itself, a rank's shard or the chunk
  /// alone. Its data must outlive the write.
  DenseTensorRef source;
  IndexBox sourceBox;
};

/// An opaque byte blob to save (BytesStorageMetadata).
struct DcpBytesEntry {
  std::string fqn;
  std::string data;
};

/// What one rank saves; it goes to its data file `__{rank}_0.distcp`.
struct DcpRankData {
  unsigned rank = 0;
  std::vector<DcpTensorChunk> chunks;
  std::vector<DcpBytesEntry> bytesEntries;
};

/// The name of a data file of rank `rank`, `__{rank}_{generation}.distcp`
/// (PyTorch's `__{rank}_{index}.distcp`).
std::string dcpDataFileName(unsigned rank, unsigned generation = 0);

/// Rank `data.rank`'s part of a distributed save (PyTorch's
/// `write_data`): writes the rank's data file one blob at a time, under the
/// first name dcpDataFileName(rank, 0, 1, ...) that no file in `directory`
/// has, syncs it to disk and returns the rank's piece of the metadata:
/// its chunks and bytes entries and where each blob landed. Chunk data is
/// streamed from its source through one reused buffer in large,
/// block-aligned writes that bypass the page cache where the file system
/// allows (O_DIRECT), after a pass over the source for the CRC-32 that the
/// zip headers before the data need; the file is synced once, at the end.
/// A chunk cut from the same memory, box and dtype as an earlier one (a tied
/// parameter's other name) is not written again: its entry points to the
/// earlier chunk's blob, which PyTorch's reader reads for each.
/// Each chunk is checked (ranks and bounds of its boxes, source data of its
/// shape) before anything is written; tiling needs every rank's piece and is
/// checked by mergeDcpMetadata. `directory` must exist. On error the data
/// file is removed. Nothing of a checkpoint already in `directory` is
/// touched: it stays loadable until commitDcpCheckpoint replaces its
/// `.metadata`, whatever happens to this save (an error, a full disk, the
/// process killed).
llvm::Expected<DcpMetadata> writeDcpRankData(llvm::StringRef directory,
                                             const DcpRankData &data);

/// Merges the pieces of metadata of every rank (PyTorch's coordinator
/// gathering write results): fails when two pieces disagree on a tensor's
/// dtype or global size, save an entry twice, or when the chunks do not tile
/// a tensor exactly (a rank's piece is missing, or overlapping chunks).
llvm::Expected<DcpMetadata>
mergeDcpMetadata(llvm::ArrayRef<DcpMetadata> pieces);

/// Validates `metadata` (validateDcpMetadata) and writes it as
/// `directory/.metadata`: to `.metadata.tmp` first, synced, then renamed, so
/// that a reader never sees a partial file and the previous checkpoint stays
/// loadable until the rename.
llvm::Error writeDcpMetadata(llvm::StringRef directory,
                             const DcpMetadata &metadata, DcpFlavor flavor);

/// Merges `pieces` (mergeDcpMetadata) and commits the checkpoint by writing
/// `.metadata` (writeDcpMetadata): the coordinator's last step, after every
/// rank's writeDcpRankData returned. Once the new `.metadata` is in place,
/// removes the data and results files of `directory` it does not name (the
/// replaced checkpoint's, those of ranks it no longer has, those of saves
/// that died); no other file is touched.
llvm::Error commitDcpCheckpoint(llvm::StringRef directory,
                                llvm::ArrayRef<DcpMetadata> pieces,
                                DcpFlavor flavor);

/// The name of the file in which a rank saving in its own process leaves its
/// piece of the metadata for the finishing step, `__{rank}.results`.
std::string dcpRankResultsFileName(unsigned rank);

/// Writes rank `data.rank`'s part of a save made by separate processes:
/// writeDcpRankData, then the returned piece into the rank's results file
/// (synced, written under a temporary name and renamed, so that it exists
/// only once the rank's data file is complete).
llvm::Error saveDcpRank(llvm::StringRef directory, const DcpRankData &data);

/// Finishes a save made by separate processes of ranks 0 .. numRanks-1
/// (saveDcpRank): reads every rank's results file, commits the checkpoint
/// (commitDcpCheckpoint) and removes the results files. Fails, writing no
/// `.metadata`, when a rank's results file is missing (that rank has not
/// finished) or the pieces do not form a complete checkpoint.
llvm::Error finishDcpSave(llvm::StringRef directory, unsigned numRanks,
                          DcpFlavor flavor);

/// Writes a whole checkpoint from one process into `directory` (created if
/// missing): every rank's data file, then `.metadata`. Everything is
/// validated first (consistent dtypes and global sizes per tensor, data
/// sizes, exact tiling, unique names); on any error nothing is left behind.
llvm::Error writeDcpCheckpoint(llvm::StringRef directory,
                               llvm::ArrayRef<DcpRankData> ranks,
                               DcpFlavor flavor);

/// A checkpoint directory opened for reading.
class DcpReader {
public:
  /// Reads and validates (validateDcpMetadata) `directory/.metadata` and
  /// checks that every data file it refers to exists and holds its blobs, so
  /// that a checkpoint missing a rank's file is refused up front.
  static llvm::Expected<DcpReader> open(llvm::StringRef directory);

  const DcpMetadata &getMetadata() const { return metadata; }

  /// Reads the part `box` of tensor `fqn` into `target`, a tensor of the
  /// saved dtype and of the box's shape, by intersecting it with the saved
  /// chunks. Each chunk's data is read with large preads, straight into
  /// `target` where the chunk is one contiguous run of it, else through a
  /// reused buffer, and checked against its CRC-32 as it is read (so a chunk
  /// is read whole even when `box` needs part of it, as PyTorch does).
  llvm::Error readBoxInto(llvm::StringRef fqn, const IndexBox &box,
                          MutableDenseTensorRef target) const;

  /// Reads the part `box` of tensor `fqn` (readBoxInto) into a new tensor.
  llvm::Expected<DenseTensor> readBox(llvm::StringRef fqn,
                                      const IndexBox &box) const;

  /// Reads all of tensor `fqn`.
  llvm::Expected<DenseTensor> readTensor(llvm::StringRef fqn) const;

  /// Reads the raw blob of the bytes entry `fqn`.
  llvm::Expected<std::string> readBytes(llvm::StringRef fqn) const;

private:
  DcpReader(std::string directory, DcpMetadata metadata)
      : directory(std::move(directory)), metadata(std::move(metadata)) {}

  /// Reads the blob `info` points to (open checked that the file holds it).
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
  readBlob(const DcpStorageInfo &info) const;

  /// Reads the part `region` of the saved chunk `chunk` of `dtype` into
  /// `target`, which holds `targetBox`.
  llvm::Error readChunk(llvm::StringRef fqn, ElementType dtype,
                        const IndexBox &chunk, const IndexBox &region,
                        MutableDenseTensorRef target,
                        const IndexBox &targetBox) const;

  std::string directory;
  DcpMetadata metadata;
  /// The buffer through which chunks not contiguous in their target are
  /// read, reused between reads (a reader serves one thread at a time).
  mutable std::vector<char> scratch;
};

} // namespace mlir::titan

#endif // TITAN_CHECKPOINT_DCP_H
