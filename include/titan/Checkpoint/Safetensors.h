//===- Safetensors.h - Hugging Face safetensors files -----------*- C++ -*-===//
//
// Reads and writes Hugging Face's safetensors format: a file is an 8-byte
// little-endian header length N, N bytes of JSON header (padded with spaces)
// and the data; the header maps each tensor's name to its dtype, shape and
// `data_offsets` [begin, end) into the data, plus an optional `__metadata__`
// object of strings. A model of several files ("shards",
// `model-00001-of-00003.safetensors`, ...) has a `model.safetensors.index.json`
// whose `weight_map` names the file of each tensor; a model of one file is
// `model.safetensors` alone.
//
// Reading validates every header strictly before any data is touched (see
// docs/limits.md) and reads any box of a tensor, converting between float
// dtypes. Writing lays the tensors out deterministically
// (computeSafetensorsLayout), so that every rank of a distributed save can
// write its boxes straight into the shared files at known offsets:
//
//   every rank:  layout = computeSafetensorsLayout(tensors, maxShardBytes)
//   rank 0:      prepareSafetensorsSave(outDir, layout)     (files, headers)
//   barrier
//   every rank:  writer = SafetensorsWriter::open(outDir, layout)
//                writer->writeBox(name, box, source, sourceBox) ...
//                writer->close()                              (fsync)
//   barrier
//   rank 0:      commitSafetensorsSave(outDir, layout)      (index, rename)
//
// Until the commit everything lives in a staging folder beside `outDir`
// (safetensorsStagingDirectory); the commit renames it into place in one
// step, so a killed save never leaves a half-written model under `outDir`.
//
// Only LLVMSupport, TitanSupport and TitanCheckpoint: the runtime links it.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CHECKPOINT_SAFETENSORS_H
#define TITAN_CHECKPOINT_SAFETENSORS_H

#include "titan/Checkpoint/Dcp.h"
#include "titan/Checkpoint/TorchSave.h"
#include "titan/Support/ElementType.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlir::titan {

/// The largest JSON header accepted (as the safetensors library: 100 MB).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

/// The deepest nesting of JSON arrays and objects accepted in a header or
/// an index (a valid one nests 3 levels).
inline constexpr unsigned kMaxSafetensorsJsonDepth = 16;

/// Hugging Face's default `max_shard_size` (5 GB).
inline constexpr uint64_t kDefaultSafetensorsShardBytes = 5'000'000'000;

/// The file of a model saved as one file.
inline constexpr llvm::StringLiteral kSafetensorsSingleFile =
    "model.safetensors";
/// The index of a model saved as several files.
inline constexpr llvm::StringLiteral kSafetensorsIndexFile =
    "model.safetensors.index.json";

/// The element type of a safetensors dtype name ("F32", "BF16", "F16",
/// "F64", "I64", "I32"), or nullopt for any other name.
std::optional<ElementType> parseSafetensorsDType(llvm::StringRef name);

/// The safetensors name of `dtype`, which must be one of the types
/// parseSafetensorsDType returns.
llvm::StringRef safetensorsDTypeName(ElementType dtype);

/// Whether safetensors files can hold `dtype`.
bool isSafetensorsDType(ElementType dtype);

/// Converts `count` elements from `source` (of type `from`) into `target`
/// (of type `to`). Between float types (F32, F64, F16, BF16) values are
/// rounded to nearest even (NaN stays NaN, overflow becomes infinity); other
/// types are copied only to themselves. Returns false, converting nothing,
/// for a pair it cannot convert.
bool convertElements(ElementType from, const void *source, ElementType to,
                     void *target, size_t count);

/// Whether convertElements converts `from` into `to`.
bool canConvertElements(ElementType from, ElementType to);

/// One tensor of a safetensors file: its data lies at [begin, end) of the
/// file (absolute offsets, the header included).
struct SafetensorsTensorInfo {
  std::string name;
  ElementType dtype = ElementType::F32;
  llvm::SmallVector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

/// The validated header of a safetensors file.
struct SafetensorsHeader {
  /// Tensors in the order of their data.
  std::vector<SafetensorsTensorInfo> tensors;
  /// The `__metadata__` strings.
  std::map<std::string, std::string> metadata;
  /// Where the data starts: 8 + the header length.
  uint64_t dataStart = 0;
};

/// Parses and validates the header of a safetensors file of `fileSize`
/// bytes whose first bytes are `prefix` (at least the 8-byte length and the
/// header it announces; parseSafetensorsHeaderLength says how many). Checks:
/// the header fits in the file and in kMaxSafetensorsHeaderBytes; it is a
/// JSON object nested at most kMaxSafetensorsJsonDepth deep, without
/// duplicate keys; every tensor has exactly `dtype` (a supported one),
/// `shape` (non-negative ints, whose byte size fits in int64) and
/// `data_offsets` ([begin, end] with end - begin the shape's byte size);
/// the tensors' data is contiguous from the start of the data to the end of
/// the file, without gaps or overlaps; `__metadata__` holds strings. `name`
/// (the file) and the tensor are named in every error.
llvm::Expected<SafetensorsHeader> parseSafetensorsHeader(llvm::StringRef prefix,
                                                         uint64_t fileSize,
                                                         llvm::StringRef name);

/// The number of bytes parseSafetensorsHeader needs from the start of a file
/// of `fileSize` bytes whose first 8 bytes are `lengthBytes` (8 + the header
/// length), checked against the file size and kMaxSafetensorsHeaderBytes.
llvm::Expected<uint64_t>
parseSafetensorsHeaderLength(llvm::StringRef lengthBytes, uint64_t fileSize,
                             llvm::StringRef name);

/// Reads and validates the header of the safetensors file at `path`.
llvm::Expected<SafetensorsHeader> readSafetensorsHeader(llvm::StringRef path);

/// Maps an index of the rows (dimension 0) of a tensor as the caller sees
/// it to the row of the tensor as the file stores it (e.g. Hugging Face's
/// RoPE permutation of wq and wk, HfMapping.h). It must be a bijection of
/// [0, rows). Empty: the identity.
using SafetensorsRowMap = llvm::function_ref<int64_t(int64_t)>;

/// A set of safetensors files opened for reading: one file, or the shards an
/// index names.
class SafetensorsReader {
public:
  /// Opens `path`: a safetensors file, or a folder holding
  /// `model.safetensors.index.json` (its shards) or `model.safetensors`.
  /// Every file's header is validated (parseSafetensorsHeader); the index
  /// must name plain file names in the folder, each tensor once, and agree
  /// with the files: every tensor the index names lies in the file it says,
  /// and every tensor of the files is in the index.
  static llvm::Expected<SafetensorsReader> open(llvm::StringRef path);

  SafetensorsReader(SafetensorsReader &&other);
  SafetensorsReader &operator=(SafetensorsReader &&other);
  ~SafetensorsReader();

  /// One tensor: its file (index into getFiles()) and where it lies there.
  struct Entry {
    unsigned file = 0;
    SafetensorsTensorInfo info;
  };

  /// The tensors by name.
  const std::map<std::string, Entry> &getTensors() const { return tensors; }

  /// The tensor `name`, or null.
  const Entry *lookup(llvm::StringRef name) const;

  /// The paths of the files read.
  llvm::ArrayRef<std::string> getFiles() const { return paths; }

  /// The `__metadata__` of each file, by file.
  llvm::ArrayRef<std::map<std::string, std::string>> getMetadata() const {
    return metadata;
  }

  /// Reads the part `box` of tensor `name` into `target`, which holds the
  /// box `targetBox` (containing `box`) of a tensor of the same shape: in
  /// `target`'s dtype, converted from the stored one (convertElements).
  /// With `rowMap`, row r of the tensor as the caller sees it is row
  /// rowMap(r) of the stored tensor. Reads with pread, straight into
  /// `target` where the dtype is the stored one and a run of elements is
  /// contiguous in both, else through a reused buffer.
  llvm::Error readBoxInto(llvm::StringRef name, const IndexBox &box,
                          MutableDenseTensorRef target,
                          const IndexBox &targetBox,
                          SafetensorsRowMap rowMap = nullptr) const;

  /// readBoxInto of a target holding exactly `box`.
  llvm::Error readBoxInto(llvm::StringRef name, const IndexBox &box,
                          MutableDenseTensorRef target,
                          SafetensorsRowMap rowMap = nullptr) const {
    return readBoxInto(name, box, target, box, rowMap);
  }

  /// Reads all of tensor `name` as a new tensor of `dtype` (the stored one
  /// when nullopt).
  llvm::Expected<DenseTensor>
  readTensor(llvm::StringRef name, std::optional<ElementType> dtype = {},
             SafetensorsRowMap rowMap = nullptr) const;

private:
  SafetensorsReader() = default;
  void closeFiles();

  std::vector<std::string> paths;
  std::vector<int> fds;
  std::vector<std::map<std::string, std::string>> metadata;
  std::map<std::string, Entry> tensors;
  /// The buffer through which converted runs are read (one thread at a
  /// time).
  mutable std::vector<char> scratch;
};

/// A tensor to save: its name, the dtype it is saved in, its shape.
struct SafetensorsTensorSpec {
  std::string name;
  ElementType dtype = ElementType::BF16;
  llvm::SmallVector<int64_t> shape;
};

/// One file of a layout.
struct SafetensorsFileLayout {
  /// The file name (`model.safetensors` or `model-0000i-of-0000n.safetensors`).
  std::string name;
  /// The header: 8-byte length, JSON, spaces up to a multiple of 8 bytes.
  std::string header;
  /// The size of the whole file.
  uint64_t size = 0;
};

/// Where every tensor of a save lies.
struct SafetensorsLayout {
  std::vector<SafetensorsFileLayout> files;
  /// The tensors by name: file index and absolute offsets in it.
  std::map<std::string, std::pair<unsigned, SafetensorsTensorInfo>> tensors;
  /// The sum of the tensors' data bytes (the index's `total_size`).
  uint64_t totalSize = 0;

  /// Whether the files have an index (more than one file).
  bool hasIndex() const { return files.size() > 1; }
  /// The index JSON (`metadata.total_size` and `weight_map`).
  std::string indexJson() const;
};

/// Lays out `tensors` as Hugging Face's save_pretrained shards them: in
/// order of decreasing element size (so every tensor is aligned to its
/// element size), stably, a new file starts when the next tensor would take
/// the current one past `maxShardBytes` of data (a larger tensor gets a file
/// of its own); one file is `model.safetensors`, n files are
/// `model-0000i-of-0000n.safetensors` with an index. Each header carries
/// `metadata` as `__metadata__` (Hugging Face writes {"format": "pt"}).
/// Deterministic: every rank computes the same layout. Fails on duplicate or
/// empty names, unsupported dtypes, or sizes that overflow.
llvm::Expected<SafetensorsLayout> computeSafetensorsLayout(
    llvm::ArrayRef<SafetensorsTensorSpec> tensors,
    uint64_t maxShardBytes = kDefaultSafetensorsShardBytes,
    const std::map<std::string, std::string> &metadata = {{"format", "pt"}});

/// The folder a save into `outDir` writes before its commit: `outDir`
/// followed by `.titan-partial`.
std::string safetensorsStagingDirectory(llvm::StringRef outDir);

/// The first step of a save, on one rank (rank 0): checks that `outDir` is
/// absent or holds nothing but a previous save (`*.safetensors`, the index,
/// and the names in `replaceable`), creates the staging folder anew (a
/// stale one from a killed save is removed), creates every file of `layout`
/// at its full size and writes its header. Other ranks open the files
/// afterwards (SafetensorsWriter).
llvm::Error
prepareSafetensorsSave(llvm::StringRef outDir, const SafetensorsLayout &layout,
                       llvm::ArrayRef<std::string> replaceable = {});

/// Writes boxes of tensors into the prepared files of a save (any rank).
class SafetensorsWriter {
public:
  /// Opens the files of `layout` in the staging folder of `outDir`, which
  /// prepareSafetensorsSave created; checks that each has its header.
  /// `layout` must outlive the writer.
  static llvm::Expected<SafetensorsWriter>
  open(llvm::StringRef outDir, const SafetensorsLayout &layout);

  SafetensorsWriter(SafetensorsWriter &&other);
  SafetensorsWriter &operator=(SafetensorsWriter &&other);
  /// Closes the files (without syncing: call close() for that).
  ~SafetensorsWriter();

  /// Writes the part `box` of tensor `name` from `source`, which holds the
  /// box `sourceBox` (containing `box`) of the tensor, converting from
  /// `source`'s dtype to the saved one (convertElements). With `rowMap`, row
  /// r of the tensor as the caller sees it is written as row rowMap(r) of
  /// the saved tensor. Writes with pwrite, straight from `source` where no
  /// conversion is needed and a run is contiguous in both, else through a
  /// reused buffer.
  llvm::Error writeBox(llvm::StringRef name, const IndexBox &box,
                       DenseTensorRef source, const IndexBox &sourceBox,
                       SafetensorsRowMap rowMap = nullptr);

  /// writeBox of a source holding exactly `box`.
  llvm::Error writeBox(llvm::StringRef name, const IndexBox &box,
                       DenseTensorRef source,
                       SafetensorsRowMap rowMap = nullptr) {
    return writeBox(name, box, source, box, rowMap);
  }

  /// Syncs the files this writer wrote to disk and closes them.
  llvm::Error close();

private:
  SafetensorsWriter() = default;
  void closeFiles();

  const SafetensorsLayout *layout = nullptr;
  std::vector<std::string> paths;
  std::vector<int> fds;
  std::vector<bool> written;
  std::vector<char> scratch;
};

/// The last step of a save, on one rank (rank 0) once every rank's writer
/// is closed: syncs every file, writes the index (when the layout has one)
/// and `extraFiles` (name, contents: e.g. `config.json`) into the staging
/// folder, syncs it and puts it in place of `outDir` in one rename (an
/// existing `outDir`, checked again as prepareSafetensorsSave does, is
/// exchanged atomically and then removed).
llvm::Error commitSafetensorsSave(
    llvm::StringRef outDir, const SafetensorsLayout &layout,
    llvm::ArrayRef<std::pair<std::string, std::string>> extraFiles = {});

/// Removes the staging folder of a save into `outDir` (after an error).
void discardSafetensorsSave(llvm::StringRef outDir);

} // namespace mlir::titan

#endif // TITAN_CHECKPOINT_SAFETENSORS_H
