//===- titan-ckpt.cpp - Inspect, write and read DCP checkpoints -----------===//
//
// A developer tool for PyTorch distributed checkpoints:
//
//   titan-ckpt inspect DIR
//       Lists tensors (dtype, shape, chunks and where they are stored),
//       bytes entries (with their value when it is a torch.save archive the
//       restricted pickle reader accepts) and data files.
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
//       tensor (and the values) as NPYDIR/<source>.npy.
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
#include "titan/Checkpoint/Plan.h"
#include "titan/Support/FormatInts.h"
#include "titan/Support/Npy.h"

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

/// The options this tool defines: --help lists only them (the options of
/// the LLVM libraries linked in are still accepted, not listed).
static cl::OptionCategory ckptOptions("titan-ckpt options");

static cl::opt<std::string> inspectDir(cl::Positional, cl::Required,
                                       cl::desc("<checkpoint directory>"),
                                       cl::sub(inspectCommand), cl::cat(ckptOptions));
static cl::opt<std::string> fromDir("from", cl::desc("Source directory"),
                                    cl::sub(saveCommand), cl::sub(loadCommand), cl::cat(ckptOptions));
static cl::opt<std::string> toDir("to", cl::Required,
                                  cl::desc("Destination directory"),
                                  cl::sub(saveCommand), cl::sub(loadCommand), cl::cat(ckptOptions));
static cl::opt<std::string>
    planFile("plan",
             cl::desc("Checkpoint plan (titan-compile --checkpoint-layout): "
                      "save and load as its ranks do"),
             cl::value_desc("file"), cl::sub(saveCommand),
             cl::sub(loadCommand), cl::cat(ckptOptions));
static cl::opt<int>
    rankOption("rank",
               cl::desc("With --plan: save only this rank's part of the "
                        "checkpoint (finish it with --finish), or load only "
                        "the boxes this rank holds"),
               cl::init(-1), cl::sub(saveCommand), cl::sub(loadCommand), cl::cat(ckptOptions));
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
    cl::init(DcpFlavor::Torch2), cl::sub(saveCommand), cl::cat(ckptOptions));

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static llvm::Error inspect() {
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

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  for (cl::SubCommand *command : {&cl::SubCommand::getTopLevel(),
                                   &inspectCommand, &saveCommand,
                                   &loadCommand})
    cl::HideUnrelatedOptions(ckptOptions, *command);
  cl::ParseCommandLineOptions(argc, argv,
                              "titan-ckpt: PyTorch distributed checkpoints\n");
  llvm::Error err = llvm::Error::success();
  if (inspectCommand)
    err = inspect();
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
    err = fail("expected a subcommand: inspect, save or load (see --help)");
  if (err) {
    llvm::WithColor::error(llvm::errs(), "titan-ckpt")
        << llvm::toString(std::move(err)) << "\n";
    return 1;
  }
  return 0;
}
