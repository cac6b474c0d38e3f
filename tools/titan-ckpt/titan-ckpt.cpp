//===- titan-ckpt.cpp - Inspect, write and read DCP checkpoints -----------===//
//
// A developer tool for PyTorch distributed checkpoints:
//
//   titan-ckpt inspect DIR
//       Lists tensors (dtype, shape, chunks and where they are stored),
//       bytes entries (with their value when it is a torch.save archive the
//       restricted pickle reader accepts) and data files. DIR may also be a
//       Hugging Face safetensors file or folder: its tensors (dtype, shape,
//       file and offsets), metadata and files.
//   titan-ckpt save --from NPYDIR --to DIR [--chunks FQN=GRID]...
//                   [--flavor torch2|torch1.13]
//       Writes every NPYDIR/<fqn>.npy as tensor <fqn>. GRID (e.g. 2x1) splits
//       dimension d into GRID[d] parts as torch.chunk does; the parts, in
//       row-major order, are written by ranks 0, 1, ... A tensor without
//       --chunks is written whole by rank 0.
//   titan-ckpt load --from DIR --to NPYDIR
//       Writes every tensor of the checkpoint, whole, as NPYDIR/<fqn>.npy.
//   titan-ckpt save --plan PLAN --from NPYDIR --to DIR [--flavor ...]
//       Writes the checkpoint as the ranks of PLAN (titan-compile
//       --checkpoint-layout) would: rank r writes __r_0.distcp with the
//       boxes the plan assigns it, cut from NPYDIR/<source>.npy, then
//       .metadata is written atomically.
//   titan-ckpt save --plan PLAN --rank R --from NPYDIR --to DIR
//       Writes rank R's part only, as that rank of a distributed save does:
//       __R_0.distcp and its write results __R_0.distcp.results; no
//       .metadata, so the directory is not a loadable checkpoint yet.
//   titan-ckpt save --plan PLAN --finish --to DIR [--flavor ...]
//       The coordinator's last step once every rank's part is written:
//       merges the ranks' results into .metadata (written atomically) and
//       removes them; refuses, naming the rank, while a rank's part is
//       missing.
//   titan-ckpt load --plan PLAN --from DIR --to NPYDIR
//       Reads the tensors of PLAN from a checkpoint of any sharding and
//       writes the global tensors as NPYDIR/<source>.npy.
//   titan-ckpt load --plan PLAN --rank R --from DIR --to NPYDIR
//       Loads as rank R of PLAN does: writes the box rank R holds of every
//       tensor it holds (and the values) as NPYDIR/<source>.npy; a tensor
//       the plan marks `none` on rank R (another pipeline rank's) is
//       skipped.
//
//   titan-ckpt hf-export DCP_DIR OUT_DIR --mapping FILE [--dtype D]
//                        [--max-shard-size BYTES] [--param NAME=N]...
//                        [--hf-config config.json]
//       Writes the model tensors of a DCP checkpoint as Hugging Face
//       safetensors (sharded with model.safetensors.index.json past
//       --max-shard-size, default 5GB), named and transformed as the mapping
//       says (docs/hf-weights.md); --hf-config gives the mapping's
//       parameters and is copied into OUT_DIR. OUT_DIR appears complete or
//       not at all.
//   titan-ckpt hf-import HF_DIR OUT_DCP_DIR --mapping FILE [--dtype D]
//                        [--param NAME=N]... [--flavor ...]
//       Writes the tensors of a Hugging Face safetensors model as a DCP
//       checkpoint under titan's names (float32 unless --dtype), taking the
//       mapping's parameters from HF_DIR/config.json when present.
//
// Every save syncs its files to disk before it returns (as PyTorch's
// FileSystemWriter does by default). Loads read chunk data with large
// preads straight into one reused buffer per tensor and write it out as the
// .npy file (not synced); a load that fails removes the files it wrote.
// Every size read from a file (.npy header, .metadata, torch.save blob) is
// checked against the bytes the files hold before anything is allocated.
//
// NumPy has no bfloat16: bfloat16 tensors are .npy files of dtype uint16
// holding the raw bits, in both directions.
//
//===----------------------------------------------------------------------===//

#include "titan/Checkpoint/Dcp.h"
#include "titan/Checkpoint/HfMapping.h"
#include "titan/Checkpoint/Plan.h"
#include "titan/Checkpoint/Safetensors.h"
#include "titan/Support/FormatInts.h"
#include "titan/Support/Npy.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace mlir::titan;
using llvm::StringRef;
namespace cl = llvm::cl;

static cl::SubCommand inspectCommand("inspect",
                                     "List the contents of a checkpoint");
static cl::SubCommand saveCommand("save", "Write a checkpoint from .npy files");
static cl::SubCommand
    loadCommand("load", "Read a checkpoint's tensors into .npy files");
static cl::SubCommand
    hfExportCommand("hf-export",
                    "Write a DCP checkpoint's model as Hugging Face "
                    "safetensors");
static cl::SubCommand
    hfImportCommand("hf-import",
                    "Write a Hugging Face safetensors model as a DCP "
                    "checkpoint");

/// The options this tool defines: --help lists only them (the options of
/// the LLVM libraries linked in are still accepted, not listed).
static cl::OptionCategory ckptOptions("titan-ckpt options");

static cl::opt<std::string> inspectDir(cl::Positional, cl::Required,
                                       cl::desc("<checkpoint directory>"),
                                       cl::sub(inspectCommand),
                                       cl::cat(ckptOptions));
static cl::opt<std::string> fromDir("from", cl::desc("Source directory"),
                                    cl::sub(saveCommand), cl::sub(loadCommand),
                                    cl::cat(ckptOptions));
static cl::opt<std::string> toDir("to", cl::Required,
                                  cl::desc("Destination directory"),
                                  cl::sub(saveCommand), cl::sub(loadCommand),
                                  cl::cat(ckptOptions));
static cl::opt<std::string>
    planFile("plan",
             cl::desc("Checkpoint plan (titan-compile --checkpoint-layout): "
                      "save and load as its ranks do"),
             cl::value_desc("file"), cl::sub(saveCommand), cl::sub(loadCommand),
             cl::cat(ckptOptions));
static cl::opt<int>
    rankOption("rank",
               cl::desc("With --plan: save only this rank's part of the "
                        "checkpoint (finish it with --finish), or load only "
                        "the boxes this rank holds"),
               cl::init(-1), cl::sub(saveCommand), cl::sub(loadCommand),
               cl::cat(ckptOptions));
static cl::opt<bool>
    finishSave("finish",
               cl::desc("With --plan: commit a checkpoint whose ranks' parts "
                        "were written with --rank (writes .metadata)"),
               cl::sub(saveCommand), cl::cat(ckptOptions));
static cl::list<std::string>
    chunkSpecs("chunks",
               cl::desc("FQN=GRID: split tensor FQN into a grid of chunks, "
                        "e.g. layers.0.w=2x1 (one rank per chunk)"),
               cl::sub(saveCommand), cl::cat(ckptOptions));
static cl::opt<DcpFlavor> flavor(
    "flavor", cl::desc("Module paths of the .metadata pickle"),
    cl::values(clEnumValN(DcpFlavor::Torch2, "torch2", "PyTorch 2.x"),
               clEnumValN(DcpFlavor::Torch113, "torch1.13", "PyTorch 1.13")),
    cl::init(DcpFlavor::Torch2), cl::sub(saveCommand), cl::sub(hfImportCommand),
    cl::cat(ckptOptions));
static cl::opt<std::string> hfSource(cl::Positional, cl::Required,
                                     cl::desc("<source>"),
                                     cl::sub(hfExportCommand),
                                     cl::sub(hfImportCommand),
                                     cl::cat(ckptOptions));
static cl::opt<std::string> hfDestination(cl::Positional, cl::Required,
                                          cl::desc("<destination>"),
                                          cl::sub(hfExportCommand),
                                          cl::sub(hfImportCommand),
                                          cl::cat(ckptOptions));
static cl::opt<std::string>
    mappingFile("mapping", cl::Required,
                cl::desc("Mapping between Hugging Face names and titan's "
                         "(e.g. models/llama3/hf_mapping.json)"),
                cl::value_desc("file"), cl::sub(hfExportCommand),
                cl::sub(hfImportCommand), cl::cat(ckptOptions));
static cl::opt<std::string>
    hfDType("dtype",
            cl::desc("Float dtype of the written tensors: bfloat16, float16 "
                     "or float32 (export: the checkpoint's dtype by default; "
                     "import: float32)"),
            cl::sub(hfExportCommand), cl::sub(hfImportCommand),
            cl::cat(ckptOptions));
static cl::opt<std::string> maxShardSize(
    "max-shard-size",
    cl::desc("Largest data size of one safetensors file: bytes, or with "
             "KB/MB/GB (powers of 1000) or KiB/MiB/GiB (default 5GB)"),
    cl::init("5GB"), cl::sub(hfExportCommand), cl::cat(ckptOptions));
static cl::list<std::string>
    mappingParams("param",
                  cl::desc("NAME=N: a parameter of the mapping, e.g. "
                           "n_heads=32 (overrides config.json)"),
                  cl::sub(hfExportCommand), cl::sub(hfImportCommand),
                  cl::cat(ckptOptions));
static cl::opt<std::string> hfConfig(
    "hf-config",
    cl::desc("A Hugging Face config.json: the mapping's parameters come from "
             "it, and it is copied into the output folder"),
    cl::value_desc("file"), cl::sub(hfExportCommand), cl::cat(ckptOptions));

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Lists a Hugging Face safetensors file or folder.
static llvm::Error inspectSafetensors() {
  llvm::Expected<SafetensorsReader> reader =
      SafetensorsReader::open(inspectDir);
  if (!reader)
    return reader.takeError();
  llvm::raw_ostream &os = llvm::outs();
  for (const auto &[name, entry] : reader->getTensors())
    os << "tensor " << name << " " << safetensorsDTypeName(entry.info.dtype)
       << " " << formatInts(entry.info.shape) << " -> "
       << llvm::sys::path::filename(reader->getFiles()[entry.file]) << " @"
       << entry.info.begin << " +" << entry.info.end - entry.info.begin << "\n";
  for (auto [file, metadata] :
       llvm::zip(reader->getFiles(), reader->getMetadata())) {
    uint64_t size = 0;
    llvm::sys::fs::file_size(file, size);
    os << "file " << llvm::sys::path::filename(file) << " " << size
       << " bytes\n";
    for (const auto &[key, value] : metadata)
      os << "  metadata " << key << " = " << value << "\n";
  }
  return llvm::Error::success();
}

/// Whether `path` is a safetensors file or a folder of one.
static bool isSafetensorsPath(StringRef path) {
  if (!llvm::sys::fs::is_directory(path))
    return path.ends_with(".safetensors");
  llvm::SmallString<256> index(path), single(path);
  llvm::sys::path::append(index, kSafetensorsIndexFile);
  llvm::sys::path::append(single, kSafetensorsSingleFile);
  return llvm::sys::fs::exists(index) || llvm::sys::fs::exists(single);
}

static llvm::Error inspect() {
  llvm::SmallString<256> metadataPath(inspectDir);
  llvm::sys::path::append(metadataPath, ".metadata");
  if (!llvm::sys::fs::exists(metadataPath) && isSafetensorsPath(inspectDir))
    return inspectSafetensors();
  llvm::Expected<DcpReader> reader = DcpReader::open(inspectDir);
  if (!reader)
    return reader.takeError();
  const DcpMetadata &metadata = reader->getMetadata();
  llvm::raw_ostream &os = llvm::outs();
  auto printStorage = [&](const DcpStorageKey &key) {
    const DcpStorageInfo &info = metadata.storage.at(key);
    os << " -> " << info.relativePath << " @" << info.offset << " +"
       << info.length << "\n";
  };
  for (const auto &[fqn, tensor] : metadata.tensors) {
    os << "tensor " << fqn << " " << torchDTypeName(tensor.dtype) << " "
       << formatInts(tensor.size)
       << (tensor.requiresGrad ? " requires_grad" : "") << "\n";
    for (const IndexBox &chunk : tensor.chunks) {
      os << "  chunk offsets " << formatInts(chunk.offsets) << " sizes "
         << formatInts(chunk.sizes);
      printStorage({fqn, {chunk.offsets.begin(), chunk.offsets.end()}});
    }
  }
  for (const std::string &fqn : metadata.bytesEntries) {
    os << "bytes " << fqn;
    printStorage({fqn, {}});
    // DCP stores a non-tensor value as a torch.save archive of it; show it
    // when it is one the restricted reader accepts.
    llvm::Expected<std::string> blob = reader->readBytes(fqn);
    if (!blob)
      return blob.takeError();
    llvm::Expected<TorchSaveArchive> value = readTorchSave(*blob, fqn);
    if (!value) {
      os << "  raw bytes (" << llvm::toString(value.takeError()) << ")\n";
      continue;
    }
    os << "  value ";
    value->root->print(os);
    os << "\n";
  }
  std::error_code ec;
  std::vector<std::pair<std::string, uint64_t>> files;
  for (llvm::sys::fs::directory_iterator it(inspectDir.getValue(), ec), end;
       it != end && !ec; it.increment(ec)) {
    StringRef name = llvm::sys::path::filename(it->path());
    uint64_t size;
    if (name.ends_with(".distcp") &&
        !llvm::sys::fs::file_size(it->path(), size))
      files.emplace_back(name.str(), size);
  }
  if (ec)
    return fail("cannot list '" + inspectDir + "': " + ec.message());
  llvm::sort(files);
  for (const auto &[name, size] : files)
    os << "file " << name << " " << size << " bytes\n";
  return llvm::Error::success();
}

/// The checkpoint dtype an .npy array of `type` stands for: bf16 travels as
/// U16 (getNpyStorageType).
static llvm::Expected<ElementType> dtypeOf(ElementType type, StringRef path) {
  ElementType dtype = type == ElementType::U16 ? ElementType::BF16 : type;
  if (!isTorchDType(dtype))
    return fail("'" + path + "': dtype " + npyDescr(type) +
                " has no checkpoint counterpart");
  return dtype;
}

namespace {
/// The .npy files of a directory as checkpoint tensors, each mapped on
/// first use (only the pages a save cuts chunks from are read).
class NpyDirectory {
public:
  explicit NpyDirectory(StringRef dir) : dir(dir) {}

  /// The tensor in `<dir>/<name>.npy`.
  llvm::Expected<DenseTensorRef> get(StringRef name);

private:
  std::string dir;
  std::map<std::string, std::pair<ElementType, MappedNpy>> files;
};
} // namespace

llvm::Expected<DenseTensorRef> NpyDirectory::get(StringRef name) {
  auto it = files.find(name.str());
  if (it == files.end()) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, name + ".npy");
    llvm::Expected<MappedNpy> array = mapNpy(path);
    if (!array)
      return array.takeError();
    llvm::Expected<ElementType> dtype = dtypeOf(array->dtype, path);
    if (!dtype)
      return dtype.takeError();
    it = files.try_emplace(name.str(), *dtype, std::move(*array)).first;
  }
  const auto &[dtype, array] = it->second;
  return DenseTensorRef(dtype, array.shape, array.data);
}

namespace {
/// Writes the tensors of a load as .npy files of a directory through one
/// reused buffer: a tensor is written out when the next one is requested,
/// the last by finish().
class NpyOutputs {
public:
  explicit NpyOutputs(StringRef dir) : dir(dir) {}

  /// Writes out the previous tensor and returns memory for
  /// `<dir>/<name>.npy` of `dtype` and `shape`.
  llvm::Expected<MutableDenseTensorRef> next(StringRef name, ElementType dtype,
                                             llvm::ArrayRef<int64_t> shape);

  /// Writes out the last tensor.
  llvm::Error finish();

  /// Removes the files written so far (after a failed load, so that no
  /// partial output is left behind).
  void discard();

private:
  std::string dir;
  /// The files written so far.
  std::vector<std::string> written;
  std::vector<char> buffer;
  /// The tensor in `buffer`, not yet written out.
  std::string name;
  ElementType dtype = ElementType::F32;
  llvm::SmallVector<int64_t> shape;
  size_t size = 0;
};
} // namespace

llvm::Expected<MutableDenseTensorRef>
NpyOutputs::next(StringRef nextName, ElementType nextDType,
                 llvm::ArrayRef<int64_t> nextShape) {
  if (llvm::Error err = finish())
    return std::move(err);
  name = nextName.str();
  dtype = nextDType;
  shape.assign(nextShape.begin(), nextShape.end());
  std::optional<int64_t> bytes =
      checkedByteSize(shape, getElementTypeSize(dtype));
  if (!bytes) {
    name.clear();
    return fail("tensor '" + nextName + "' of shape " + formatInts(shape) +
                " has a negative dimension or more than 2^63-1 bytes");
  }
  size = *bytes;
  if (buffer.size() < size)
    buffer.resize(size);
  return MutableDenseTensorRef(
      dtype, shape, llvm::MutableArrayRef<char>(buffer).take_front(size));
}

llvm::Error NpyOutputs::finish() {
  if (name.empty())
    return llvm::Error::success();
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, name + ".npy");
  name.clear();
  written.push_back(std::string(path));
  return writeNpy(path, getNpyStorageType(dtype), shape,
                  StringRef(buffer.data(), size));
}

void NpyOutputs::discard() {
  name.clear();
  for (const std::string &path : written)
    llvm::sys::fs::remove(path);
  written.clear();
}

/// Parses "2x1" into {2, 1}.
static llvm::Expected<llvm::SmallVector<int64_t>> parseGrid(StringRef spec) {
  StringRef fqn = spec.split('=').first, grid = spec.split('=').second;
  llvm::SmallVector<StringRef> parts;
  grid.split(parts, 'x');
  llvm::SmallVector<int64_t> result;
  for (StringRef part : parts) {
    int64_t value;
    if (part.getAsInteger(10, value) || value < 1)
      return fail("--chunks " + spec + ": expected " + fqn +
                  "=N0xN1x... with positive counts");
    result.push_back(value);
  }
  return result;
}

/// Splits `tensor` into a grid of chunks as torch.chunk does per dimension
/// (parts of ceil(size / count) elements; empty parts are dropped) and adds
/// the chunks, in row-major order, to ranks 0, 1, ...
static llvm::Error splitTensor(StringRef fqn, DenseTensorRef tensor,
                               llvm::ArrayRef<int64_t> grid,
                               std::map<unsigned, DcpRankData> &ranks) {
  if (grid.size() != tensor.shape.size())
    return fail("--chunks for '" + fqn + "' has " + llvm::Twine(grid.size()) +
                " counts but the tensor has rank " +
                llvm::Twine(tensor.shape.size()));
  IndexBox whole;
  whole.offsets.assign(tensor.shape.size(), 0);
  whole.sizes.assign(tensor.shape.begin(), tensor.shape.end());
  // As torch.chunk, more parts than elements along a dim leave the extra
  // parts empty: at most the dim's size of them can hold data, so the grid
  // never has more cells than the tensor has elements.
  llvm::SmallVector<int64_t> counts;
  int64_t cells = 1;
  for (auto [count, size] : llvm::zip_equal(grid, tensor.shape)) {
    counts.push_back(std::min(count, std::max<int64_t>(size, 1)));
    cells *= counts.back();
  }
  grid = counts;
  unsigned rank = 0;
  for (int64_t cell = 0; cell < cells; ++cell) {
    IndexBox box;
    int64_t rest = cell;
    box.offsets.resize(grid.size());
    box.sizes.resize(grid.size());
    for (size_t d = grid.size(); d-- > 0;) {
      int64_t part = rest % grid[d];
      rest /= grid[d];
      int64_t step = (tensor.shape[d] + grid[d] - 1) / grid[d];
      box.offsets[d] = std::min(part * step, tensor.shape[d]);
      box.sizes[d] = std::min(step, tensor.shape[d] - box.offsets[d]);
    }
    if (box.numElements() == 0)
      continue;
    DcpTensorChunk chunk{fqn.str(), llvm::SmallVector<int64_t>(tensor.shape),
                         box, tensor, whole};
    DcpRankData &rankData = ranks[rank];
    rankData.rank = rank++;
    rankData.chunks.push_back(std::move(chunk));
  }
  return llvm::Error::success();
}

static llvm::Error save() {
  if (fromDir.empty())
    return fail("save needs --from NPYDIR");
  std::map<std::string, llvm::SmallVector<int64_t>> grids;
  for (StringRef spec : chunkSpecs) {
    if (!spec.contains('='))
      return fail("--chunks " + spec + ": expected FQN=GRID");
    llvm::Expected<llvm::SmallVector<int64_t>> grid = parseGrid(spec);
    if (!grid)
      return grid.takeError();
    grids[spec.split('=').first.str()] = std::move(*grid);
  }

  std::vector<std::string> paths;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(fromDir.getValue(), ec), end;
       it != end && !ec; it.increment(ec))
    if (StringRef(it->path()).ends_with(".npy"))
      paths.push_back(it->path());
  if (ec)
    return fail("cannot list '" + fromDir + "': " + ec.message());
  if (paths.empty())
    return fail("'" + fromDir +
                "' has no .npy files: nothing to save (a checkpoint holds "
                "one tensor per <fqn>.npy)");
  llvm::sort(paths);

  std::map<unsigned, DcpRankData> ranks;
  NpyDirectory npy(fromDir);
  for (const std::string &path : paths) {
    std::string fqn = llvm::sys::path::stem(path).str();
    llvm::Expected<DenseTensorRef> tensor = npy.get(fqn);
    if (!tensor)
      return tensor.takeError();
    auto grid = grids.find(fqn);
    llvm::SmallVector<int64_t> ones(tensor->shape.size(), 1);
    if (llvm::Error err = splitTensor(
            fqn, *tensor, grid == grids.end() ? ones : grid->second, ranks))
      return err;
    if (grid != grids.end())
      grids.erase(grid);
  }
  if (!grids.empty())
    return fail("--chunks names '" + grids.begin()->first +
                "', which has no .npy file in '" + fromDir + "'");
  std::vector<DcpRankData> rankList;
  for (auto &entry : ranks)
    rankList.push_back(std::move(entry.second));
  return writeDcpCheckpoint(toDir, rankList, flavor);
}

static llvm::Error load() {
  if (fromDir.empty())
    return fail("load needs --from DIR (the checkpoint)");
  llvm::Expected<DcpReader> reader = DcpReader::open(fromDir);
  if (!reader)
    return reader.takeError();
  bool created = !llvm::sys::fs::exists(toDir);
  if (std::error_code ec = llvm::sys::fs::create_directories(toDir))
    return fail("cannot create '" + toDir + "': " + ec.message());
  NpyOutputs outputs(toDir);
  auto loadAll = [&]() -> llvm::Error {
    for (const auto &[fqn, tensor] : reader->getMetadata().tensors) {
      llvm::Expected<MutableDenseTensorRef> target =
          outputs.next(fqn, tensor.dtype, tensor.size);
      if (!target)
        return target.takeError();
      IndexBox whole{llvm::SmallVector<int64_t>(tensor.size.size(), 0),
                     tensor.size};
      if (llvm::Error err = reader->readBoxInto(fqn, whole, *target))
        return err;
    }
    return outputs.finish();
  };
  llvm::Error err = loadAll();
  // A failed load leaves no partial output behind.
  if (err) {
    outputs.discard();
    if (created)
      llvm::sys::fs::remove_directories(toDir);
  }
  return err;
}

static llvm::Error saveWithPlan() {
  if (!chunkSpecs.empty())
    return fail("--chunks and --plan exclude each other");
  if (finishSave && rankOption >= 0)
    return fail("--finish and --rank exclude each other: save every rank's "
                "part with --rank, then finish with --finish");
  llvm::Expected<CheckpointPlan> plan = readCheckpointPlan(planFile);
  if (!plan)
    return plan.takeError();
  if (finishSave)
    return finishDcpSave(toDir, plan->numRanks, flavor);
  if (fromDir.empty())
    return fail("save needs --from NPYDIR (the training state)");
  if (rankOption >= int(plan->numRanks))
    return fail("--rank " + llvm::Twine(rankOption) + " is not a rank of '" +
                planFile + "', which has " + llvm::Twine(plan->numRanks) +
                " ranks");
  NpyDirectory npy(fromDir);
  auto state = [&](StringRef source) { return npy.get(source); };
  if (rankOption >= 0) {
    llvm::Expected<DcpRankData> data = planRankData(*plan, rankOption, state);
    if (!data)
      return data.takeError();
    if (std::error_code ec = llvm::sys::fs::create_directories(toDir))
      return fail("cannot create checkpoint directory '" + toDir +
                  "': " + ec.message());
    return saveDcpRank(toDir, *data);
  }
  std::vector<DcpRankData> ranks;
  for (unsigned rank = 0; rank < plan->numRanks; ++rank) {
    llvm::Expected<DcpRankData> data = planRankData(*plan, rank, state);
    if (!data)
      return data.takeError();
    ranks.push_back(std::move(*data));
  }
  return writeDcpCheckpoint(toDir, ranks, flavor);
}

static llvm::Error loadWithPlan() {
  if (fromDir.empty())
    return fail("load needs --from DIR (the checkpoint)");
  llvm::Expected<CheckpointPlan> plan = readCheckpointPlan(planFile);
  if (!plan)
    return plan.takeError();
  llvm::Expected<DcpReader> reader = DcpReader::open(fromDir);
  if (!reader)
    return reader.takeError();
  bool created = !llvm::sys::fs::exists(toDir);
  if (std::error_code ec = llvm::sys::fs::create_directories(toDir))
    return fail("cannot create '" + toDir + "': " + ec.message());
  NpyOutputs outputs(toDir);
  auto destination = [&](StringRef source, ElementType dtype,
                         llvm::ArrayRef<int64_t> shape) {
    return outputs.next(source, dtype, shape);
  };
  llvm::Error err = rankOption >= 0
                        ? loadPlanRank(*reader, *plan, rankOption, destination)
                        : loadPlanState(*reader, *plan, destination);
  if (!err)
    err = outputs.finish();
  // A failed load leaves no partial output behind.
  if (err) {
    outputs.discard();
    if (created)
      llvm::sys::fs::remove_directories(toDir);
  }
  return err;
}

/// Parses --max-shard-size: bytes, or a number with KB/MB/GB (powers of
/// 1000, as Hugging Face's "5GB") or KiB/MiB/GiB.
static llvm::Expected<uint64_t> parseByteSize(StringRef text) {
  StringRef digits = text.take_while(llvm::isDigit);
  StringRef unit = text.drop_front(digits.size()).trim();
  uint64_t value;
  if (digits.empty() || digits.getAsInteger(10, value))
    return fail("--max-shard-size " + text +
                ": expected bytes, e.g. 5GB, 500MiB or 1000000");
  uint64_t scale = llvm::StringSwitch<uint64_t>(unit.lower())
                       .Case("", 1)
                       .Case("b", 1)
                       .Case("kb", 1000)
                       .Case("mb", 1000 * 1000)
                       .Case("gb", 1000 * 1000 * 1000)
                       .Case("kib", 1 << 10)
                       .Case("mib", 1 << 20)
                       .Case("gib", 1 << 30)
                       .Default(0);
  if (scale == 0 || value == 0 || value > UINT64_MAX / scale)
    return fail("--max-shard-size " + text +
                ": expected a positive size, e.g. 5GB, 500MiB or 1000000");
  return value * scale;
}

/// The float dtype --dtype names, or nullopt when not given.
static llvm::Expected<std::optional<ElementType>> parseHfDType() {
  if (hfDType.empty())
    return std::nullopt;
  std::optional<ElementType> dtype = parseTorchDTypeName(hfDType);
  if (!dtype || !isFloatElementType(*dtype) || *dtype == ElementType::F64)
    return fail("--dtype " + hfDType +
                ": expected bfloat16, float16 or float32");
  return dtype;
}

/// Reads the mapping and sets its parameters from `configPath` (when it
/// exists) and then --param.
static llvm::Expected<HfMapping> loadMapping(StringRef configPath) {
  llvm::Expected<HfMapping> mapping = HfMapping::read(mappingFile);
  if (!mapping)
    return mapping.takeError();
  if (!configPath.empty()) {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> config =
        llvm::MemoryBuffer::getFile(configPath, /*IsText=*/true);
    if (!config)
      return fail("cannot read '" + configPath +
                  "': " + config.getError().message());
    if (llvm::Error err = mapping->setParametersFromHfConfig(
            (*config)->getBuffer(), configPath))
      return std::move(err);
  }
  for (StringRef param : mappingParams) {
    auto [name, value] = param.split('=');
    int64_t number;
    if (value.getAsInteger(10, number))
      return fail("--param " + param + ": expected NAME=N, e.g. n_heads=32");
    if (llvm::Error err = mapping->setParameter(name, number))
      return fail("--param " + param + ": " + llvm::toString(std::move(err)));
  }
  return mapping;
}

static llvm::Error hfExport() {
  llvm::Expected<uint64_t> maxShard = parseByteSize(maxShardSize);
  if (!maxShard)
    return maxShard.takeError();
  llvm::Expected<std::optional<ElementType>> dtype = parseHfDType();
  if (!dtype)
    return dtype.takeError();
  llvm::Expected<HfMapping> mapping = loadMapping(hfConfig);
  if (!mapping)
    return mapping.takeError();
  llvm::Expected<DcpReader> reader = DcpReader::open(hfSource);
  if (!reader)
    return reader.takeError();
  std::vector<SafetensorsTensorSpec> tensors;
  for (const auto &[fqn, tensor] : reader->getMetadata().tensors) {
    ElementType saved = tensor.dtype;
    if (*dtype && isFloatElementType(saved))
      saved = **dtype;
    tensors.push_back({fqn, saved, tensor.size});
  }
  llvm::Expected<SafetensorsLayout> layout =
      computeHfLayout(*mapping, tensors, *maxShard);
  if (!layout)
    return layout.takeError();
  std::vector<std::pair<std::string, std::string>> extraFiles;
  if (!hfConfig.empty()) {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> config =
        llvm::MemoryBuffer::getFile(hfConfig, /*IsText=*/true);
    if (!config)
      return fail("cannot read '" + hfConfig +
                  "': " + config.getError().message());
    extraFiles.emplace_back("config.json", (*config)->getBuffer().str());
  }
  std::vector<std::string> replaceable;
  for (const auto &extra : extraFiles)
    replaceable.push_back(extra.first);
  if (llvm::Error err =
          prepareSafetensorsSave(hfDestination, *layout, replaceable))
    return err;
  auto writeAll = [&]() -> llvm::Error {
    llvm::Expected<SafetensorsWriter> writer =
        SafetensorsWriter::open(hfDestination, *layout);
    if (!writer)
      return writer.takeError();
    for (const SafetensorsTensorSpec &spec : tensors) {
      llvm::Expected<std::optional<HfTensorBinding>> binding =
          mapping->bindTitan(spec.name);
      if (!binding)
        return binding.takeError();
      if (!*binding)
        continue;
      llvm::Expected<DenseTensor> tensor = reader->readTensor(spec.name);
      if (!tensor)
        return tensor.takeError();
      IndexBox whole{llvm::SmallVector<int64_t>(spec.shape.size(), 0),
                     spec.shape};
      if (llvm::Error err = writeHfBox(*writer, *layout, *mapping, spec.name,
                                       whole, *tensor, whole))
        return err;
    }
    if (llvm::Error err = writer->close())
      return err;
    return commitSafetensorsSave(hfDestination, *layout, extraFiles);
  };
  llvm::Error err = writeAll();
  if (err)
    discardSafetensorsSave(hfDestination);
  return err;
}

/// Tensors converted in memory before they are written as one data file of
/// an import (bounds the memory an import needs).
static constexpr uint64_t kImportBatchBytes = 1ull << 30;

/// Converts the bound tensors of an import and writes them as a DCP
/// checkpoint into the existing folder hfDestination.
static llvm::Error
writeImport(const SafetensorsReader &reader, const HfMapping &mapping,
            const std::map<std::string, HfTensorBinding> &byTitan,
            std::optional<ElementType> dtype) {
  std::vector<DcpMetadata> pieces;
  DcpRankData batch;
  std::vector<DenseTensor> batchTensors;
  uint64_t batchBytes = 0;
  auto flush = [&]() -> llvm::Error {
    if (batch.chunks.empty())
      return llvm::Error::success();
    llvm::Expected<DcpMetadata> piece = writeDcpRankData(hfDestination, batch);
    if (!piece)
      return piece.takeError();
    pieces.push_back(std::move(*piece));
    batch.chunks.clear();
    batch.rank = pieces.size();
    batchTensors.clear();
    batchBytes = 0;
    return llvm::Error::success();
  };
  batchTensors.reserve(byTitan.size());
  for (const auto &[titan, binding] : byTitan) {
    const SafetensorsReader::Entry *entry = reader.lookup(binding.hf);
    ElementType stored = entry->info.dtype;
    ElementType target =
        isFloatElementType(stored) ? dtype.value_or(ElementType::F32) : stored;
    llvm::Expected<HfRowPermutation> rows =
        mapping.rowPermutation(binding, entry->info.shape);
    if (!rows)
      return rows.takeError();
    HfRowPermutation permutation = *rows;
    auto rowMap = [permutation](int64_t row) { return permutation.toHf(row); };
    llvm::Expected<DenseTensor> tensor =
        reader.readTensor(binding.hf, target,
                          permutation.isIdentity() ? SafetensorsRowMap()
                                                   : SafetensorsRowMap(rowMap));
    if (!tensor)
      return tensor.takeError();
    batchBytes += tensor->data.size();
    batchTensors.push_back(std::move(*tensor));
    const DenseTensor &held = batchTensors.back();
    IndexBox whole{llvm::SmallVector<int64_t>(held.shape.size(), 0),
                   held.shape};
    batch.chunks.push_back({titan, held.shape, whole, held, whole});
    if (batchBytes >= kImportBatchBytes)
      if (llvm::Error err = flush())
        return err;
  }
  if (llvm::Error err = flush())
    return err;
  return commitDcpCheckpoint(hfDestination, pieces, flavor);
}

static llvm::Error hfImport() {
  llvm::Expected<std::optional<ElementType>> dtype = parseHfDType();
  if (!dtype)
    return dtype.takeError();
  llvm::Expected<SafetensorsReader> reader = SafetensorsReader::open(hfSource);
  if (!reader)
    return reader.takeError();
  llvm::SmallString<256> configPath;
  if (llvm::sys::fs::is_directory(hfSource)) {
    configPath = hfSource;
    llvm::sys::path::append(configPath, "config.json");
    if (!llvm::sys::fs::exists(configPath))
      configPath.clear();
  }
  llvm::Expected<HfMapping> mapping = loadMapping(configPath);
  if (!mapping)
    return mapping.takeError();

  // Bind every tensor first: nothing is written for an unmappable model.
  std::map<std::string, HfTensorBinding> byTitan;
  for (const auto &[hf, entry] : reader->getTensors()) {
    llvm::Expected<std::optional<HfTensorBinding>> binding =
        mapping->bindHf(hf);
    if (!binding)
      return binding.takeError();
    if (!*binding)
      continue;
    if (llvm::Error err =
            mapping->rowPermutation(**binding, entry.info.shape).takeError())
      return err;
    auto [it, inserted] = byTitan.try_emplace((*binding)->titan, **binding);
    if (!inserted)
      return fail("Hugging Face tensors '" + it->second.hf + "' and '" + hf +
                  "' both map to titan's '" + (*binding)->titan + "'");
  }
  if (byTitan.empty())
    return fail("no tensor of '" + hfSource + "' maps to a titan tensor");
  bool created = !llvm::sys::fs::exists(hfDestination);
  if (std::error_code ec = llvm::sys::fs::create_directories(hfDestination))
    return fail("cannot create '" + hfDestination + "': " + ec.message());
  llvm::Error err = writeImport(*reader, *mapping, byTitan, *dtype);
  // A failed import into a new folder leaves nothing behind (into an
  // existing checkpoint folder, the checkpoint there stays loadable: only
  // the commit replaces its .metadata).
  if (err && created)
    llvm::sys::fs::remove_directories(hfDestination);
  return err;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  for (cl::SubCommand *command :
       {&cl::SubCommand::getTopLevel(), &inspectCommand, &saveCommand,
        &loadCommand, &hfExportCommand, &hfImportCommand})
    cl::HideUnrelatedOptions(ckptOptions, *command);
  cl::ParseCommandLineOptions(argc, argv,
                              "titan-ckpt: PyTorch distributed checkpoints\n");
  llvm::Error err = llvm::Error::success();
  if (inspectCommand)
    err = inspect();
  else if (hfExportCommand)
    err = hfExport();
  else if (hfImportCommand)
    err = hfImport();
  else if (rankOption.getNumOccurrences() && rankOption < 0)
    err = fail("--rank " + llvm::Twine(rankOption) +
               ": a rank is 0 or more (leave --rank out to save or load "
               "every rank's part)");
  else if (saveCommand && planFile.empty() && (finishSave || rankOption >= 0))
    err = fail("--rank and --finish save as the ranks of a plan: add --plan");
  else if (loadCommand && planFile.empty() && rankOption >= 0)
    err = fail("--rank loads as a rank of a plan: add --plan");
  else if (saveCommand)
    err = planFile.empty() ? save() : saveWithPlan();
  else if (loadCommand)
    err = planFile.empty() ? load() : loadWithPlan();
  else
    err = fail("expected a subcommand: inspect, save, load, hf-export or "
               "hf-import (see --help)");
  if (err) {
    llvm::WithColor::error(llvm::errs(), "titan-ckpt")
        << llvm::toString(std::move(err)) << "\n";
    return 1;
  }
  return 0;
}
