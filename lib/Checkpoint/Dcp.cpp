//===- Dcp.cpp - PyTorch distributed checkpoint directories ---------------===//

#include "titan/Checkpoint/Dcp.h"

#include "titan/Checkpoint/Pickle.h"
#include "titan/Support/CheckedSize.h"
#include "titan/Support/FormatInts.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <unistd.h>

using namespace mlir::titan;
using llvm::StringRef;
using Kind = PickleValue::Kind;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static std::string formatBox(const IndexBox &box) {
  return "offsets " + formatInts(box.offsets) + " sizes " +
         formatInts(box.sizes);
}

static std::string joinPath(StringRef directory, StringRef name) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

/// The storage key of the chunk of tensor `fqn` at `offsets` (of a bytes
/// entry when `offsets` is empty and `fqn` is not a tensor).
static DcpStorageKey storageKey(StringRef fqn,
                                llvm::ArrayRef<int64_t> offsets) {
  return {fqn.str(), std::vector<int64_t>(offsets.begin(), offsets.end())};
}

//===----------------------------------------------------------------------===//
// Boxes
//===----------------------------------------------------------------------===//

int64_t IndexBox::numElements() const {
  int64_t count = 1;
  for (int64_t size : sizes)
    count *= size;
  return count;
}

std::optional<IndexBox> mlir::titan::intersectBoxes(const IndexBox &a,
                                                    const IndexBox &b) {
  assert(a.offsets.size() == b.offsets.size() && "boxes of different rank");
  IndexBox result;
  for (size_t d = 0; d < a.offsets.size(); ++d) {
    int64_t lo = std::max(a.offsets[d], b.offsets[d]);
    int64_t hi = std::min(a.offsets[d] + a.sizes[d], b.offsets[d] + b.sizes[d]);
    if (hi <= lo)
      return std::nullopt;
    result.offsets.push_back(lo);
    result.sizes.push_back(hi - lo);
  }
  return result;
}

/// Calls `run(sourceOffset, targetOffset, bytes)` for every run of the
/// elements of `region` that is contiguous both in a C-contiguous tensor
/// holding `sourceBox` and in one holding `targetBox` (offsets in bytes from
/// their starts), in row-major order: trailing dimensions that both boxes
/// and the region span whole merge into one run.
static void forEachRun(const IndexBox &sourceBox, const IndexBox &targetBox,
                       const IndexBox &region, size_t elementSize,
                       llvm::function_ref<void(size_t, size_t, size_t)> run) {
  if (region.numElements() == 0)
    return;
  size_t rank = region.sizes.size();
  // Dimensions [outer, rank) form a run: all but the first of them whole.
  size_t outer = rank;
  int64_t runElements = 1;
  while (outer > 0) {
    --outer;
    runElements *= region.sizes[outer];
    if (region.sizes[outer] != sourceBox.sizes[outer] ||
        region.sizes[outer] != targetBox.sizes[outer])
      break;
  }
  auto linear = [&](const IndexBox &box, llvm::ArrayRef<int64_t> index) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d)
      offset = offset * box.sizes[d] + (index[d] - box.offsets[d]);
    return size_t(offset) * elementSize;
  };
  llvm::SmallVector<int64_t> index(region.offsets);
  int64_t runs = region.numElements() / runElements;
  for (int64_t i = 0; i < runs; ++i) {
    run(linear(sourceBox, index), linear(targetBox, index),
        runElements * elementSize);
    for (size_t d = outer; d-- > 0;) {
      if (++index[d] < region.offsets[d] + region.sizes[d])
        break;
      index[d] = region.offsets[d];
    }
  }
}

void mlir::titan::copyRegion(DenseTensorRef source, const IndexBox &sourceBox,
                             MutableDenseTensorRef target,
                             const IndexBox &targetBox,
                             const IndexBox &region) {
  forEachRun(sourceBox, targetBox, region, getElementTypeSize(source.dtype),
             [&](size_t from, size_t to, size_t bytes) {
               std::memcpy(target.data.data() + to, source.data.data() + from,
                           bytes);
             });
}

/// An element of a tensor of shape `size` that no chunk covers, if one is
/// found within a bounded search. The uncovered set is a union of cells of
/// the grid that the chunk boundaries cut, so checking the low corner of
/// every cell finds one; the search gives up after kMaxCells cells.
static std::optional<llvm::SmallVector<int64_t>>
findUncovered(llvm::ArrayRef<int64_t> size, llvm::ArrayRef<IndexBox> chunks) {
  constexpr int64_t kMaxCells = 100000;
  size_t rank = size.size();
  std::vector<std::vector<int64_t>> corners(rank);
  for (size_t d = 0; d < rank; ++d) {
    corners[d].push_back(0);
    for (const IndexBox &chunk : chunks)
      for (int64_t edge : {chunk.offsets[d], chunk.offsets[d] + chunk.sizes[d]})
        if (edge < size[d])
          corners[d].push_back(edge);
    llvm::sort(corners[d]);
    corners[d].erase(llvm::unique(corners[d]), corners[d].end());
  }
  llvm::SmallVector<size_t> cell(rank, 0);
  llvm::SmallVector<int64_t> point(rank);
  for (int64_t tried = 0; tried < kMaxCells; ++tried) {
    for (size_t d = 0; d < rank; ++d)
      point[d] = corners[d][cell[d]];
    bool covered = llvm::any_of(chunks, [&](const IndexBox &chunk) {
      for (size_t d = 0; d < rank; ++d)
        if (point[d] < chunk.offsets[d] ||
            point[d] >= chunk.offsets[d] + chunk.sizes[d])
          return false;
      return true;
    });
    if (!covered)
      return point;
    size_t d = rank;
    while (d > 0 && ++cell[d - 1] == corners[d - 1].size())
      cell[--d] = 0;
    if (d == 0)
      return std::nullopt;
  }
  return std::nullopt;
}

/// Two chunks (in-bounds boxes of one rank) that overlap, or nullopt. Sweeps
/// along the dim with the most distinct offsets, comparing a chunk only with
/// those whose range on that dim meets its own: for the grids that layouts
/// produce, each chunk meets the few of its slab, not all the others.
static std::optional<std::pair<size_t, size_t>>
findOverlap(llvm::ArrayRef<IndexBox> chunks) {
  if (chunks.empty())
    return std::nullopt;
  size_t rank = chunks.front().offsets.size();
  if (rank == 0) // Every two 0-d chunks overlap.
    return chunks.size() > 1 ? std::optional(std::pair<size_t, size_t>(0, 1))
                             : std::nullopt;
  size_t dim = 0, mostOffsets = 0;
  for (size_t d = 0; d < rank; ++d) {
    llvm::DenseSet<int64_t> offsets;
    for (const IndexBox &chunk : chunks)
      offsets.insert(chunk.offsets[d]);
    if (offsets.size() > mostOffsets) {
      mostOffsets = offsets.size();
      dim = d;
    }
  }
  std::vector<size_t> order;
  for (size_t i = 0; i < chunks.size(); ++i)
    if (chunks[i].numElements() != 0) // An empty chunk overlaps nothing.
      order.push_back(i);
  llvm::sort(order, [&](size_t a, size_t b) {
    return chunks[a].offsets[dim] < chunks[b].offsets[dim];
  });
  std::vector<size_t> active;
  for (size_t i : order) {
    const IndexBox &chunk = chunks[i];
    llvm::erase_if(active, [&](size_t j) {
      return chunks[j].offsets[dim] + chunks[j].sizes[dim] <=
             chunk.offsets[dim];
    });
    for (size_t j : active)
      if (intersectBoxes(chunks[j], chunk))
        return std::pair(std::min(i, j), std::max(i, j));
    active.push_back(i);
  }
  return std::nullopt;
}

llvm::Error mlir::titan::validateTiling(StringRef fqn,
                                        llvm::ArrayRef<int64_t> size,
                                        llvm::ArrayRef<IndexBox> chunks) {
  std::optional<int64_t> total = checkedElementCount(size);
  if (!total)
    return fail("tensor '" + fqn + "' has shape " + formatInts(size) +
                (llvm::any_of(size, [](int64_t dim) { return dim < 0; })
                     ? ": a dimension is negative"
                     : ": more than 2^63-1 elements"));
  for (const IndexBox &chunk : chunks) {
    if (chunk.offsets.size() != size.size() ||
        chunk.sizes.size() != size.size())
      return fail("tensor '" + fqn + "' of shape " + formatInts(size) +
                  ": chunk " + formatBox(chunk) + " has the wrong rank");
    // Written so that nothing overflows: 0 <= offset <= size[d] first.
    for (size_t d = 0; d < size.size(); ++d)
      if (chunk.offsets[d] < 0 || chunk.sizes[d] < 0 ||
          chunk.offsets[d] > size[d] ||
          chunk.sizes[d] > size[d] - chunk.offsets[d])
        return fail("tensor '" + fqn + "' of shape " + formatInts(size) +
                    ": chunk " + formatBox(chunk) + " is out of bounds");
  }
  if (std::optional<std::pair<size_t, size_t>> pair = findOverlap(chunks))
    return fail("tensor '" + fqn + "': chunks " +
                formatBox(chunks[pair->first]) + " and " +
                formatBox(chunks[pair->second]) +
                " overlap; a replicated value must be saved by one rank "
                "only");
  // Disjoint chunks within bounds: the sum cannot exceed the total.
  int64_t covered = 0;
  for (const IndexBox &chunk : chunks)
    covered += chunk.numElements();
  if (covered == *total)
    return llvm::Error::success();
  std::string where;
  if (std::optional<llvm::SmallVector<int64_t>> point =
          findUncovered(size, chunks))
    where = ", e.g. element " + formatInts(*point);
  return fail("tensor '" + fqn + "' of shape " + formatInts(size) +
              ": its chunks cover " + llvm::Twine(covered) + " of " +
              llvm::Twine(*total) + " elements (a gap" + where +
              "); every element must be saved by exactly one chunk");
}

//===----------------------------------------------------------------------===//
// .metadata encoding
//===----------------------------------------------------------------------===//

namespace {
/// Builds the pickle objects of one flavor.
class MetadataEncoder {
public:
  explicit MetadataEncoder(DcpFlavor flavor)
      : checkpointModule(flavor == DcpFlavor::Torch2
                             ? "torch.distributed.checkpoint"
                             : "torch.distributed._shard.checkpoint") {
    // TensorProperties and its enum live here in both versions.
    StringRef shardedTensor =
        "torch.distributed._shard.sharded_tensor.metadata";
    propertiesClass = PickleValue::global(shardedTensor, "TensorProperties");
    layout = PickleValue::object(
        PickleValue::global("torch.serialization", "_get_layout"),
        PickleValue::tuple({PickleValue::string("torch.strided")}),
        /*newObj=*/false);
    contiguousFormat = PickleValue::object(
        PickleValue::global("builtins", "getattr"),
        PickleValue::tuple(
            {PickleValue::global(shardedTensor, "MEM_FORMAT_ENCODING"),
             PickleValue::string("TORCH_CONTIGUOUS_FORMAT")}),
        /*newObj=*/false);
  }

  PickleRef encode(const DcpMetadata &metadata);

private:
  /// A dataclass instance: `cls.__new__(cls)` with its field dict as state.
  PickleRef dataclass(StringRef module, StringRef name,
                      std::vector<std::pair<StringRef, PickleRef>> fields) {
    PickleRef node =
        PickleValue::object(global(module, name), PickleValue::tuple({}),
                            /*newObj=*/true);
    std::vector<std::pair<PickleRef, PickleRef>> entries;
    for (auto &[key, value] : fields)
      entries.emplace_back(PickleValue::string(key), std::move(value));
    node->setState(PickleValue::dict(std::move(entries)));
    return node;
  }
  PickleRef global(StringRef module, StringRef name) {
    return PickleValue::global(module, name);
  }
  PickleRef size(llvm::ArrayRef<int64_t> values) {
    std::vector<PickleRef> items;
    for (int64_t value : values)
      items.push_back(PickleValue::integer(value));
    return PickleValue::object(
        global("torch", "Size"),
        PickleValue::tuple({PickleValue::tuple(std::move(items))}),
        /*newObj=*/false);
  }
  std::string module(StringRef leaf) const {
    return (checkpointModule + "." + leaf).str();
  }

  StringRef checkpointModule;
  PickleRef propertiesClass;
  PickleRef layout;
  PickleRef contiguousFormat;
};
} // namespace

PickleRef MetadataEncoder::encode(const DcpMetadata &metadata) {
  std::string metadataModule = module("metadata");
  std::vector<std::pair<PickleRef, PickleRef>> stateDict;
  for (const auto &[fqn, tensor] : metadata.tensors) {
    PickleRef properties = PickleValue::object(
        propertiesClass, PickleValue::tuple({}), /*newObj=*/true);
    properties->setState(
        PickleValue::tuple({global("torch", torchDTypeName(tensor.dtype)),
                            layout, PickleValue::boolean(tensor.requiresGrad),
                            contiguousFormat, PickleValue::boolean(false)}));
    std::vector<PickleRef> chunks;
    for (const IndexBox &chunk : tensor.chunks)
      chunks.push_back(dataclass(
          metadataModule, "ChunkStorageMetadata",
          {{"offsets", size(chunk.offsets)}, {"sizes", size(chunk.sizes)}}));
    stateDict.emplace_back(
        PickleValue::string(fqn),
        dataclass(metadataModule, "TensorStorageMetadata",
                  {{"properties", properties},
                   {"size", size(tensor.size)},
                   {"chunks", PickleValue::list(std::move(chunks))}}));
  }
  for (const std::string &fqn : metadata.bytesEntries)
    stateDict.emplace_back(
        PickleValue::string(fqn),
        PickleValue::object(global(metadataModule, "BytesStorageMetadata"),
                            PickleValue::tuple({}), /*newObj=*/true));

  std::vector<std::pair<PickleRef, PickleRef>> storage;
  for (const auto &[key, info] : metadata.storage) {
    // Not a structured binding: the lambda below captures `offsets`, which
    // C++17 does not allow of a binding (clang rejects it).
    const std::string &fqn = key.first;
    const std::vector<int64_t> &offsets = key.second;
    std::vector<std::pair<StringRef, PickleRef>> indexFields = {
        {"fqn", PickleValue::string(fqn)}};
    auto tensor = metadata.tensors.find(fqn);
    if (tensor == metadata.tensors.end()) {
      indexFields.emplace_back("index", PickleValue::none());
    } else {
      // The index hint is the chunk's position in the tensor's chunk list.
      const auto &chunks = tensor->second.chunks;
      auto chunk = llvm::find_if(chunks, [&](const IndexBox &box) {
        return llvm::ArrayRef<int64_t>(box.offsets) ==
               llvm::ArrayRef<int64_t>(offsets);
      });
      indexFields.emplace_back("index",
                               PickleValue::integer(chunk - chunks.begin()));
      indexFields.emplace_back("offset", size(offsets));
    }
    storage.emplace_back(
        dataclass(metadataModule, "MetadataIndex", std::move(indexFields)),
        dataclass(module("filesystem"), "_StorageInfo",
                  {{"relative_path", PickleValue::string(info.relativePath)},
                   {"offset", PickleValue::integer(info.offset)},
                   {"length", PickleValue::integer(info.length)}}));
  }
  return dataclass(
      metadataModule, "Metadata",
      {{"state_dict_metadata", PickleValue::dict(std::move(stateDict))},
       {"planner_data", PickleValue::none()},
       {"storage_data", PickleValue::dict(std::move(storage))}});
}

std::string mlir::titan::encodeDcpMetadata(const DcpMetadata &metadata,
                                           DcpFlavor flavor) {
  return writePickle(MetadataEncoder(flavor).encode(metadata));
}

//===----------------------------------------------------------------------===//
// .metadata decoding
//===----------------------------------------------------------------------===//

namespace {
/// Walks the generic object tree of a `.metadata` pickle.
class MetadataDecoder {
public:
  explicit MetadataDecoder(StringRef name) : name(name) {}

  llvm::Expected<DcpMetadata> decode(const PickleRef &root);

private:
  llvm::Error malformed(const llvm::Twine &what) const {
    return fail("'" + name + "': malformed DCP metadata: " + what +
                "; is this a torch.distributed.checkpoint .metadata file?");
  }
  /// The field dict of a dataclass instance of class `className`.
  llvm::Expected<PickleRef> fields(const PickleRef &node,
                                   StringRef className) const;
  llvm::Expected<PickleRef> field(const PickleRef &dict, StringRef key,
                                  StringRef className) const;
  llvm::Expected<llvm::SmallVector<int64_t>> size(const PickleRef &node) const;
  llvm::Error tensor(StringRef fqn, const PickleRef &node,
                     DcpTensorMetadata &result) const;
  llvm::Error storageEntry(const PickleRef &key, const PickleRef &value,
                           DcpMetadata &result) const;

  StringRef name;
};
} // namespace

llvm::Expected<PickleRef> MetadataDecoder::fields(const PickleRef &node,
                                                  StringRef className) const {
  if (!node->is(Kind::Object) || node->getName() != className)
    return malformed("expected a " + className + " object");
  if (!node->getState() || !node->getState()->is(Kind::Dict))
    return malformed(className + " without a field dict");
  return node->getState();
}

llvm::Expected<PickleRef> MetadataDecoder::field(const PickleRef &dict,
                                                 StringRef key,
                                                 StringRef className) const {
  PickleRef value = dict->lookup(key);
  if (!value)
    return malformed(className + " has no field '" + key + "'");
  return value;
}

llvm::Expected<llvm::SmallVector<int64_t>>
MetadataDecoder::size(const PickleRef &node) const {
  if (!node->is(Kind::Object) || node->getQualifiedName() != "torch.Size" ||
      node->getArgs()->getItems().size() != 1)
    return malformed("expected a torch.Size");
  const PickleRef &values = node->getArgs()->getItems()[0];
  if (!values->is(Kind::Tuple) && !values->is(Kind::List))
    return malformed("torch.Size of a non-sequence");
  llvm::SmallVector<int64_t> result;
  for (const PickleRef &value : values->getItems()) {
    if (!value->is(Kind::Int))
      return malformed("torch.Size with a non-integer dimension");
    result.push_back(value->getInt());
  }
  return result;
}

llvm::Error MetadataDecoder::tensor(StringRef fqn, const PickleRef &node,
                                    DcpTensorMetadata &result) const {
  llvm::Expected<PickleRef> dict = fields(node, "TensorStorageMetadata");
  if (!dict)
    return dict.takeError();
  llvm::Expected<PickleRef> properties =
      field(*dict, "properties", "TensorStorageMetadata");
  if (!properties)
    return properties.takeError();
  const PickleRef &state =
      (*properties)->is(Kind::Object) ? (*properties)->getState() : nullptr;
  if ((*properties)->getName() != "TensorProperties" || !state ||
      !state->is(Kind::Tuple) || state->getItems().size() < 3)
    return malformed("tensor '" + fqn +
                     "': TensorProperties without its state tuple");
  const PickleRef &dtype = state->getItems()[0];
  std::optional<ElementType> parsed;
  if (dtype->is(Kind::Global) && dtype->getModule() == "torch")
    parsed = parseTorchDTypeName(dtype->getName());
  if (!parsed) {
    std::string what = "an unsupported dtype";
    if (dtype->is(Kind::Global) && dtype->getModule() == "torch") {
      StringRef complexName = torchComplexDTypeName(dtype->getName());
      what = complexName.empty() ? "dtype torch." + dtype->getName().str()
                                 : complexName.str();
    }
    return fail("'" + name + "': tensor '" + fqn + "': " + what +
                " is not supported (supported: " + supportedTorchDTypeNames() +
                ")");
  }
  result.dtype = *parsed;
  const PickleRef &requiresGrad = state->getItems()[2];
  result.requiresGrad = requiresGrad->is(Kind::Bool) && requiresGrad->getBool();

  llvm::Expected<PickleRef> sizeNode =
      field(*dict, "size", "TensorStorageMetadata");
  if (!sizeNode)
    return sizeNode.takeError();
  llvm::Expected<llvm::SmallVector<int64_t>> tensorSize = size(*sizeNode);
  if (!tensorSize)
    return tensorSize.takeError();
  result.size = std::move(*tensorSize);
  if (llvm::any_of(result.size, [](int64_t dim) { return dim < 0; }))
    return fail("'" + name + "': tensor '" + fqn + "' has size " +
                formatInts(result.size) +
                " with a negative dimension; the .metadata is corrupted");

  llvm::Expected<PickleRef> chunks =
      field(*dict, "chunks", "TensorStorageMetadata");
  if (!chunks)
    return chunks.takeError();
  if (!(*chunks)->is(Kind::List))
    return malformed("tensor '" + fqn + "': chunks is not a list");
  for (const PickleRef &chunk : (*chunks)->getItems()) {
    llvm::Expected<PickleRef> chunkFields =
        fields(chunk, "ChunkStorageMetadata");
    if (!chunkFields)
      return chunkFields.takeError();
    IndexBox box;
    for (auto [key, target] :
         {std::pair{"offsets", &box.offsets}, std::pair{"sizes", &box.sizes}}) {
      llvm::Expected<PickleRef> value =
          field(*chunkFields, key, "ChunkStorageMetadata");
      if (!value)
        return value.takeError();
      llvm::Expected<llvm::SmallVector<int64_t>> parsedSize = size(*value);
      if (!parsedSize)
        return parsedSize.takeError();
      *target = std::move(*parsedSize);
    }
    result.chunks.push_back(std::move(box));
  }
  return llvm::Error::success();
}

llvm::Error MetadataDecoder::storageEntry(const PickleRef &key,
                                          const PickleRef &value,
                                          DcpMetadata &result) const {
  llvm::Expected<PickleRef> keyFields = fields(key, "MetadataIndex");
  if (!keyFields)
    return keyFields.takeError();
  llvm::Expected<PickleRef> fqn = field(*keyFields, "fqn", "MetadataIndex");
  if (!fqn)
    return fqn.takeError();
  if (!(*fqn)->is(Kind::String))
    return malformed("MetadataIndex.fqn is not a string");
  std::vector<int64_t> offsets;
  PickleRef offset = (*keyFields)->lookup("offset");
  if (offset && !offset->is(Kind::None)) {
    llvm::Expected<llvm::SmallVector<int64_t>> parsed = size(offset);
    if (!parsed)
      return parsed.takeError();
    offsets.assign(parsed->begin(), parsed->end());
  }

  llvm::Expected<PickleRef> infoFields = fields(value, "_StorageInfo");
  if (!infoFields)
    return infoFields.takeError();
  DcpStorageInfo info;
  llvm::Expected<PickleRef> path =
      field(*infoFields, "relative_path", "_StorageInfo");
  if (!path)
    return path.takeError();
  llvm::Expected<PickleRef> blobOffset =
      field(*infoFields, "offset", "_StorageInfo");
  if (!blobOffset)
    return blobOffset.takeError();
  llvm::Expected<PickleRef> length =
      field(*infoFields, "length", "_StorageInfo");
  if (!length)
    return length.takeError();
  if (!(*path)->is(Kind::String) || !(*blobOffset)->is(Kind::Int) ||
      !(*length)->is(Kind::Int) || (*blobOffset)->getInt() < 0 ||
      (*length)->getInt() < 0)
    return malformed("bad _StorageInfo of '" + (*fqn)->getString() + "'");
  StringRef relativePath = (*path)->getString();
  if (relativePath.contains('/') || relativePath.contains('\\') ||
      relativePath.starts_with("."))
    return fail("'" + name + "': storage path '" + relativePath + "' of '" +
                (*fqn)->getString() +
                "' is not a plain file name in the checkpoint directory");
  info.relativePath = relativePath.str();
  info.offset = (*blobOffset)->getInt();
  info.length = (*length)->getInt();
  result.storage[{(*fqn)->getString().str(), std::move(offsets)}] =
      std::move(info);
  return llvm::Error::success();
}

llvm::Expected<DcpMetadata> MetadataDecoder::decode(const PickleRef &root) {
  llvm::Expected<PickleRef> rootFields = fields(root, "Metadata");
  if (!rootFields)
    return rootFields.takeError();
  DcpMetadata result;
  llvm::Expected<PickleRef> stateDict =
      field(*rootFields, "state_dict_metadata", "Metadata");
  if (!stateDict)
    return stateDict.takeError();
  if (!(*stateDict)->is(Kind::Dict))
    return malformed("state_dict_metadata is not a dict");
  for (const auto &[key, value] : (*stateDict)->getEntries()) {
    if (!key->is(Kind::String))
      return malformed("a state_dict_metadata key is not a string");
    StringRef fqn = key->getString();
    if (value->is(Kind::Object) && value->getName() == "BytesStorageMetadata") {
      result.bytesEntries.push_back(fqn.str());
      continue;
    }
    if (llvm::Error err = tensor(fqn, value, result.tensors[fqn.str()]))
      return std::move(err);
  }
  llvm::Expected<PickleRef> storage =
      field(*rootFields, "storage_data", "Metadata");
  if (!storage)
    return storage.takeError();
  if (!(*storage)->is(Kind::Dict))
    return malformed("storage_data is not a dict (was the checkpoint written "
                     "with a storage writer other than FileSystemWriter?)");
  for (const auto &[key, value] : (*storage)->getEntries())
    if (llvm::Error err = storageEntry(key, value, result))
      return std::move(err);
  return result;
}

llvm::Expected<DcpMetadata> mlir::titan::decodeDcpMetadata(StringRef bytes,
                                                           StringRef name) {
  llvm::Expected<PickleRef> root =
      readPickle(bytes, name, checkpointPickleGlobals());
  if (!root)
    return root.takeError();
  return MetadataDecoder(name).decode(*root);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

llvm::Error mlir::titan::validateDcpMetadata(const DcpMetadata &metadata) {
  for (const auto &[fqn, tensor] : metadata.tensors) {
    if (llvm::Error err = validateTiling(fqn, tensor.size, tensor.chunks))
      return err;
    for (const IndexBox &chunk : tensor.chunks)
      if (!metadata.storage.count(storageKey(fqn, chunk.offsets)))
        return fail("tensor '" + fqn + "' chunk " + formatBox(chunk) +
                    " has no storage entry");
  }
  for (const std::string &fqn : metadata.bytesEntries)
    if (!metadata.storage.count({fqn, {}}))
      return fail("bytes entry '" + fqn + "' has no storage entry");
  return llvm::Error::success();
}

std::string mlir::titan::dcpDataFileName(unsigned rank, unsigned generation) {
  return "__" + std::to_string(rank) + "_" + std::to_string(generation) +
         ".distcp";
}

std::string mlir::titan::dcpRankResultsFileName(unsigned rank) {
  return "__" + std::to_string(rank) + ".results";
}

/// Whether `name` is the name of a data file (`__{rank}_{index}.distcp`,
/// as titan and PyTorch name them) or a rank's results file
/// (`__{rank}.results`).
static bool isDcpSaveFileName(StringRef name) {
  if (!name.consume_front("__"))
    return false;
  auto isNumber = [](StringRef text) {
    return !text.empty() && llvm::all_of(text, llvm::isDigit);
  };
  if (name.consume_back(".results"))
    return isNumber(name);
  if (!name.consume_back(".distcp"))
    return false;
  auto [rank, index] = name.split('_');
  return isNumber(rank) && isNumber(index);
}

/// Adds the chunks of `tensor` to tensor `fqn` of `into`, which must agree
/// on dtype and global size.
static llvm::Error addChunks(DcpMetadata &into, StringRef fqn,
                             const DcpTensorMetadata &tensor) {
  auto [it, inserted] = into.tensors.try_emplace(fqn.str());
  DcpTensorMetadata &merged = it->second;
  if (inserted) {
    merged.dtype = tensor.dtype;
    merged.requiresGrad = tensor.requiresGrad;
    merged.size = tensor.size;
  } else if (merged.dtype != tensor.dtype || merged.size != tensor.size) {
    return fail(
        "tensor '" + fqn + "': its chunks disagree on dtype or global size (" +
        torchDTypeName(merged.dtype) + " " + formatInts(merged.size) + " vs " +
        torchDTypeName(tensor.dtype) + " " + formatInts(tensor.size) + ")");
  }
  llvm::append_range(merged.chunks, tensor.chunks);
  return llvm::Error::success();
}

/// Whether `inner` lies within `outer` (both of `outer`'s rank).
static bool containsBox(const IndexBox &outer, const IndexBox &inner) {
  if (inner.offsets.size() != outer.offsets.size() ||
      inner.sizes.size() != outer.sizes.size())
    return false;
  for (size_t d = 0; d < outer.sizes.size(); ++d)
    if (inner.offsets[d] < outer.offsets[d] || inner.sizes[d] < 0 ||
        inner.offsets[d] + inner.sizes[d] > outer.offsets[d] + outer.sizes[d])
      return false;
  return true;
}

/// The piece of metadata of `rank` without storage entries, each chunk
/// checked against its source.
static llvm::Expected<DcpMetadata> describeRank(const DcpRankData &rank) {
  DcpMetadata piece;
  for (const DcpTensorChunk &chunk : rank.chunks) {
    const DenseTensorRef &source = chunk.source;
    if (chunk.box.offsets.size() != chunk.globalSize.size() ||
        chunk.box.sizes.size() != chunk.globalSize.size())
      return fail("tensor '" + chunk.fqn + "' of shape " +
                  formatInts(chunk.globalSize) + ": chunk " +
                  formatBox(chunk.box) + " has the wrong rank");
    if (llvm::ArrayRef<int64_t>(chunk.sourceBox.sizes) != source.shape ||
        !containsBox(chunk.sourceBox, chunk.box))
      return fail("tensor '" + chunk.fqn + "' chunk " + formatBox(chunk.box) +
                  ": its source of shape " + formatInts(source.shape) +
                  " does not hold it (the source holds " +
                  formatBox(chunk.sourceBox) + ")");
    size_t bytes =
        chunk.sourceBox.numElements() * getElementTypeSize(source.dtype);
    if (source.data.size() != bytes)
      return fail("tensor '" + chunk.fqn + "' chunk " + formatBox(chunk.box) +
                  ": its source has " + llvm::Twine(source.data.size()) +
                  " bytes of data, its shape needs " + llvm::Twine(bytes));
    DcpTensorMetadata tensor;
    tensor.dtype = source.dtype;
    tensor.size = chunk.globalSize;
    tensor.chunks.push_back(chunk.box);
    if (llvm::Error err = addChunks(piece, chunk.fqn, tensor))
      return std::move(err);
  }
  for (const DcpBytesEntry &entry : rank.bytesEntries)
    piece.bytesEntries.push_back(entry.fqn);
  return piece;
}

llvm::Expected<DcpMetadata>
mlir::titan::mergeDcpMetadata(llvm::ArrayRef<DcpMetadata> pieces) {
  DcpMetadata merged;
  for (const DcpMetadata &piece : pieces) {
    for (const auto &[fqn, tensor] : piece.tensors)
      if (llvm::Error err = addChunks(merged, fqn, tensor))
        return std::move(err);
    for (const std::string &fqn : piece.bytesEntries) {
      if (llvm::is_contained(merged.bytesEntries, fqn))
        return fail("'" + fqn + "' is saved twice");
      merged.bytesEntries.push_back(fqn);
    }
    for (const auto &[key, info] : piece.storage)
      merged.storage.try_emplace(key, info);
  }
  for (const std::string &fqn : merged.bytesEntries)
    if (merged.tensors.count(fqn))
      return fail("'" + fqn + "' is saved twice");
  for (const auto &[fqn, tensor] : merged.tensors)
    if (llvm::Error err = validateTiling(fqn, tensor.size, tensor.chunks))
      return std::move(err);
  return merged;
}

/// Opens `path` for writing (truncated) as file descriptor `fd`.
static llvm::Error openForWrite(StringRef path, int &fd) {
  if (std::error_code ec = llvm::sys::fs::openFileForWrite(path, fd))
    return fail("cannot write '" + path + "': " + ec.message());
  return llvm::Error::success();
}

/// Flushes `os`, which writes file descriptor `fd` of `path`, syncs the file
/// to disk and closes it.
static llvm::Error closeSynced(llvm::raw_fd_ostream &os, int fd,
                               StringRef path) {
  os.flush();
  if (!os.has_error() && ::fsync(fd) != 0)
    return fail("cannot sync '" + path + "' to disk: " +
                std::error_code(errno, std::generic_category()).message());
  os.close();
  if (!os.has_error())
    return llvm::Error::success();
  std::string message = os.error().message();
  os.clear_error();
  return fail("cannot write '" + path + "': " + message);
}

/// Syncs `directory` (a rename in it) to disk.
static llvm::Error syncDirectory(StringRef directory) {
  int fd = ::open(std::string(directory).c_str(), O_RDONLY | O_DIRECTORY);
  bool synced = fd >= 0 && ::fsync(fd) == 0;
  std::error_code ec(errno, std::generic_category());
  if (fd >= 0)
    ::close(fd);
  if (!synced)
    return fail("cannot sync directory '" + directory +
                "' to disk: " + ec.message());
  return llvm::Error::success();
}

/// Writes `bytes` as file `name` of `directory` so that it appears whole or
/// not at all, durably: to `name.tmp`, synced, then renamed.
static llvm::Error writeFileAtomically(StringRef directory, StringRef name,
                                       StringRef bytes) {
  std::string path = joinPath(directory, name);
  std::string temporary = path + ".tmp";
  int fd;
  if (llvm::Error err = openForWrite(temporary, fd))
    return err;
  llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
  os << bytes;
  if (llvm::Error err = closeSynced(os, fd, temporary)) {
    llvm::sys::fs::remove(temporary);
    return err;
  }
  if (std::error_code ec = llvm::sys::fs::rename(temporary, path)) {
    llvm::sys::fs::remove(temporary);
    return fail("cannot rename '" + temporary + "' to '" + path +
                "': " + ec.message());
  }
  return syncDirectory(directory);
}

/// The size of the buffers through which data files are written and read.
static constexpr size_t kIOBufferSize = 8 << 20;

/// The alignment of direct I/O: file offsets, sizes and memory (the logical
/// block size of any common device divides it).
static constexpr size_t kDirectAlignment = 4096;

namespace {
/// Writes a file sequentially through one reused buffer of kIOBufferSize,
/// flushed in block-aligned writes that bypass the page cache (O_DIRECT)
/// where the file system allows, else ordinary writes. The last block is
/// padded, then the file truncated to its length. The first error is kept
/// and reported by close().
class DataFileWriter {
public:
  /// Creates `path`, which must not exist.
  static llvm::Expected<std::unique_ptr<DataFileWriter>> create(StringRef path);
  ~DataFileWriter() {
    if (fd >= 0)
      ::close(fd);
  }

  /// The number of bytes written so far.
  uint64_t tell() const { return flushed + used; }
  void write(StringRef bytes);
  /// Writes the elements of `region` of `source`, which holds `sourceBox`,
  /// in row-major order.
  void writeRegion(DenseTensorRef source, const IndexBox &sourceBox,
                   const IndexBox &region);
  /// Writes what is buffered, syncs the file's data to disk (fdatasync) and
  /// closes it.
  llvm::Error close();

private:
  DataFileWriter(std::string path, int fd, bool direct)
      : path(std::move(path)), fd(fd), direct(direct),
        buffer(static_cast<char *>(
                   std::aligned_alloc(kDirectAlignment, kIOBufferSize)),
               &std::free) {
    if (!buffer)
      llvm::report_bad_alloc_error("cannot allocate a write buffer");
  }
  /// Writes the first `bytes` of the buffer at offset `flushed`; a file
  /// system refusing direct I/O on the way gets ordinary writes.
  void writeBuffer(size_t bytes);
  void setError(StringRef what) {
    if (!error)
      error = std::error_code(errno, std::generic_category());
    failedAt = what.str();
  }

  std::string path;
  int fd;
  bool direct;
  std::unique_ptr<char, decltype(&std::free)> buffer;
  size_t used = 0;
  uint64_t flushed = 0;
  std::error_code error;
  std::string failedAt;
};
} // namespace

llvm::Expected<std::unique_ptr<DataFileWriter>>
DataFileWriter::create(StringRef path) {
  std::string name = path.str();
  int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;
  int fd = ::open(name.c_str(), flags | O_DIRECT, 0666);
  bool direct = fd >= 0;
  if (!direct && errno == EINVAL)
    fd = ::open(name.c_str(), flags, 0666);
  if (fd < 0)
    return fail("cannot write '" + path + "': " +
                std::error_code(errno, std::generic_category()).message());
  return std::unique_ptr<DataFileWriter>(
      new DataFileWriter(std::move(name), fd, direct));
}

void DataFileWriter::writeBuffer(size_t bytes) {
  size_t done = 0;
  while (!error && done < bytes) {
    ssize_t n = ::pwrite(fd, buffer.get() + done, bytes - done, flushed + done);
    if (n > 0) {
      done += n;
    } else if (n < 0 && errno == EINVAL && direct) {
      // The file system takes no direct I/O (or not of this size).
      direct = false;
      if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_DIRECT) != 0)
        setError("write");
    } else if (n == 0 || errno != EINTR) {
      setError("write");
    }
  }
}

void DataFileWriter::write(StringRef bytes) {
  while (!bytes.empty() && !error) {
    size_t n = std::min(kIOBufferSize - used, bytes.size());
    std::memcpy(buffer.get() + used, bytes.data(), n);
    used += n;
    bytes = bytes.drop_front(n);
    if (used < kIOBufferSize)
      continue;
    writeBuffer(used);
    flushed += used;
    used = 0;
  }
}

void DataFileWriter::writeRegion(DenseTensorRef source,
                                 const IndexBox &sourceBox,
                                 const IndexBox &region) {
  forEachRun(sourceBox, region, region, getElementTypeSize(source.dtype),
             [&](size_t from, size_t, size_t bytes) {
               write(source.data.substr(from, bytes));
             });
}

llvm::Error DataFileWriter::close() {
  // Pad the tail to a whole block for direct I/O, then cut the padding.
  size_t padded = llvm::alignTo(used, kDirectAlignment);
  std::memset(buffer.get() + used, 0, padded - used);
  writeBuffer(padded);
  if (!error && ::ftruncate(fd, flushed + used) != 0)
    setError("truncate");
  if (!error && ::fdatasync(fd) != 0)
    setError("sync to disk");
  if (::close(fd) != 0)
    setError("close");
  fd = -1;
  if (!error)
    return llvm::Error::success();
  return fail("cannot " + failedAt + " '" + path + "': " + error.message());
}

/// How many data files of one rank a directory may hold before a save
/// refuses to add one (each save adds one and its commit removes the
/// replaced ones, so only saves that died leave more than two).
static constexpr unsigned kMaxDataFileGenerations = 1000;

/// The CRC-32 of the elements of `region` of `source`, which holds
/// `sourceBox`, in row-major order.
static uint32_t regionCrc(DenseTensorRef source, const IndexBox &sourceBox,
                          const IndexBox &region) {
  uint32_t crc = 0;
  forEachRun(sourceBox, region, region, getElementTypeSize(source.dtype),
             [&](size_t from, size_t, size_t bytes) {
               crc = zipCrc32(source.data.substr(from, bytes), crc);
             });
  return crc;
}

llvm::Expected<DcpMetadata>
mlir::titan::writeDcpRankData(StringRef directory, const DcpRankData &data) {
  llvm::Expected<DcpMetadata> piece = describeRank(data);
  if (!piece)
    return piece.takeError();
  // A data file under a name no file has: the checkpoint this save replaces
  // stays whole, and loadable, until the new .metadata is in place.
  std::string name, path;
  for (unsigned generation = 0; name.empty(); ++generation) {
    if (generation == kMaxDataFileGenerations)
      return fail("cannot save rank " + llvm::Twine(data.rank) + " into '" +
                  directory + "': " + llvm::Twine(kMaxDataFileGenerations) +
                  " of its data files are there already; remove the "
                  "directory's stale __" +
                  llvm::Twine(data.rank) + "_*.distcp files");
    if (!llvm::sys::fs::exists(
            joinPath(directory, dcpDataFileName(data.rank, generation))))
      name = dcpDataFileName(data.rank, generation);
  }
  path = joinPath(directory, name);
  llvm::Expected<std::unique_ptr<DataFileWriter>> file =
      DataFileWriter::create(path);
  if (!file)
    return file.takeError();
  DataFileWriter &out = **file;
  auto record = [&](DcpStorageKey key, uint64_t start) {
    piece->storage[std::move(key)] = {name, start, out.tell() - start};
  };
  // Chunks cut from the same memory (another name of a tied parameter)
  // share one blob: by source address, the chunks written from it.
  std::map<const char *, std::vector<const DcpTensorChunk *>> writtenFrom;
  for (const DcpTensorChunk &chunk : data.chunks) {
    std::vector<const DcpTensorChunk *> &same =
        writtenFrom[chunk.source.data.data()];
    auto earlier = llvm::find_if(same, [&](const DcpTensorChunk *other) {
      return other->source.dtype == chunk.source.dtype &&
             other->source.data.size() == chunk.source.data.size() &&
             other->sourceBox == chunk.sourceBox && other->box == chunk.box;
    });
    if (earlier != same.end()) {
      piece->storage[storageKey(chunk.fqn, chunk.box.offsets)] =
          piece->storage.at(storageKey((*earlier)->fqn, chunk.box.offsets));
      continue;
    }
    same.push_back(&chunk);
    uint64_t start = out.tell();
    TorchSaveFraming framing = torchSaveTensorFraming(
        chunk.source.dtype, chunk.box.sizes,
        regionCrc(chunk.source, chunk.sourceBox, chunk.box));
    out.write(framing.prefix);
    out.writeRegion(chunk.source, chunk.sourceBox, chunk.box);
    out.write(framing.suffix);
    record(storageKey(chunk.fqn, chunk.box.offsets), start);
  }
  for (const DcpBytesEntry &entry : data.bytesEntries) {
    uint64_t start = out.tell();
    out.write(entry.data);
    record(storageKey(entry.fqn, {}), start);
  }
  if (llvm::Error err = out.close()) {
    llvm::sys::fs::remove(path);
    return std::move(err);
  }
  return piece;
}

llvm::Error mlir::titan::writeDcpMetadata(StringRef directory,
                                          const DcpMetadata &metadata,
                                          DcpFlavor flavor) {
  if (llvm::Error err = validateDcpMetadata(metadata))
    return fail("refusing to write the .metadata of '" + directory +
                "': " + llvm::toString(std::move(err)));
  // The data files' names reach the disk before the .metadata naming them.
  if (llvm::Error err = syncDirectory(directory))
    return err;
  return writeFileAtomically(directory, ".metadata",
                             encodeDcpMetadata(metadata, flavor));
}

/// Removes the data and results files in `directory` that `metadata` does
/// not refer to: those of the checkpoint it replaced, of ranks it no longer
/// has and of saves that died before their commit. Other files are left
/// alone.
static void removeUnreferencedFiles(StringRef directory,
                                    const DcpMetadata &metadata) {
  std::set<std::string> referenced;
  for (const auto &entry : metadata.storage)
    referenced.insert(entry.second.relativePath);
  std::error_code ec;
  std::vector<std::string> stale;
  for (llvm::sys::fs::directory_iterator it(directory, ec), end;
       !ec && it != end; it.increment(ec)) {
    StringRef name = llvm::sys::path::filename(it->path());
    if (isDcpSaveFileName(name) && !referenced.count(name.str()))
      stale.push_back(it->path());
  }
  for (const std::string &path : stale)
    llvm::sys::fs::remove(path);
}

llvm::Error mlir::titan::commitDcpCheckpoint(StringRef directory,
                                             llvm::ArrayRef<DcpMetadata> pieces,
                                             DcpFlavor flavor) {
  llvm::Expected<DcpMetadata> metadata = mergeDcpMetadata(pieces);
  if (!metadata)
    return fail("refusing to write the .metadata of '" + directory +
                "': " + llvm::toString(metadata.takeError()));
  if (llvm::Error err = writeDcpMetadata(directory, *metadata, flavor))
    return err;
  removeUnreferencedFiles(directory, *metadata);
  return llvm::Error::success();
}

llvm::Error mlir::titan::saveDcpRank(StringRef directory,
                                     const DcpRankData &data) {
  // A results file left by an earlier save must not outlive this one's data.
  std::string results = dcpRankResultsFileName(data.rank);
  llvm::sys::fs::remove(joinPath(directory, results));
  llvm::Expected<DcpMetadata> piece = writeDcpRankData(directory, data);
  if (!piece)
    return piece.takeError();
  return writeFileAtomically(directory, results,
                             encodeDcpMetadata(*piece, DcpFlavor::Torch2));
}

llvm::Error mlir::titan::finishDcpSave(StringRef directory, unsigned numRanks,
                                       DcpFlavor flavor) {
  std::vector<DcpMetadata> pieces;
  for (unsigned rank = 0; rank < numRanks; ++rank) {
    std::string path = joinPath(directory, dcpRankResultsFileName(rank));
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer)
      return fail("rank " + llvm::Twine(rank) +
                  " has not finished its part of the save: '" + path +
                  "' is missing (" + buffer.getError().message() +
                  "); no .metadata was written: save rank " +
                  llvm::Twine(rank) + " again, then finish");
    llvm::Expected<DcpMetadata> piece =
        decodeDcpMetadata((*buffer)->getBuffer(), path);
    if (!piece)
      return piece.takeError();
    pieces.push_back(std::move(*piece));
  }
  // Committing removes the results: they have served their purpose.
  return commitDcpCheckpoint(directory, pieces, flavor);
}

llvm::Error mlir::titan::writeDcpCheckpoint(StringRef directory,
                                            llvm::ArrayRef<DcpRankData> ranks,
                                            DcpFlavor flavor) {
  std::set<unsigned> seenRanks;
  std::vector<DcpMetadata> described;
  for (const DcpRankData &rank : ranks) {
    if (!seenRanks.insert(rank.rank).second)
      return fail("rank " + llvm::Twine(rank.rank) + " is given twice");
    llvm::Expected<DcpMetadata> piece = describeRank(rank);
    if (!piece)
      return piece.takeError();
    described.push_back(std::move(*piece));
  }
  if (llvm::Expected<DcpMetadata> merged = mergeDcpMetadata(described); !merged)
    return merged.takeError();
  if (std::error_code ec = llvm::sys::fs::create_directories(directory))
    return fail("cannot create checkpoint directory '" + directory +
                "': " + ec.message());
  std::vector<DcpMetadata> pieces;
  std::set<std::string> written;
  auto removeWritten = [&] {
    for (const std::string &path : written)
      llvm::sys::fs::remove(path);
  };
  for (const DcpRankData &rank : ranks) {
    llvm::Expected<DcpMetadata> piece = writeDcpRankData(directory, rank);
    if (!piece) {
      removeWritten();
      return piece.takeError();
    }
    for (const auto &entry : piece->storage)
      written.insert(joinPath(directory, entry.second.relativePath));
    pieces.push_back(std::move(*piece));
  }
  if (llvm::Error err = commitDcpCheckpoint(directory, pieces, flavor)) {
    removeWritten();
    return err;
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

/// Checks that every data file `metadata` refers to exists in `directory`
/// and is long enough for the blobs placed in it, and that the blob of every
/// chunk and the chunks in each file together have room for their data: so
/// that no size from `.metadata` is allocated before the files back it.
/// `metadata` must be valid (validateDcpMetadata), so that chunk sizes do
/// not overflow.
static llvm::Error checkDataFiles(StringRef directory,
                                  const DcpMetadata &metadata) {
  // The end of the last blob of each file and the entry that blob holds.
  std::map<std::string, std::pair<uint64_t, std::string>> ends;
  for (const auto &[key, info] : metadata.storage) {
    auto &[end, fqn] = ends[info.relativePath];
    if (info.offset + info.length >= end) {
      end = info.offset + info.length;
      fqn = key.first;
    }
  }
  // The chunk data each file must hold: at least the sum of its chunks'
  // (blobs do not overlap; entries sharing a blob count once).
  std::map<std::string, uint64_t> chunkBytes;
  std::set<std::pair<std::string, uint64_t>> counted;
  for (const auto &[fqn, tensor] : metadata.tensors) {
    for (const IndexBox &chunk : tensor.chunks) {
      const DcpStorageInfo &info =
          metadata.storage.at(storageKey(fqn, chunk.offsets));
      std::optional<int64_t> bytes =
          checkedByteSize(chunk.sizes, getElementTypeSize(tensor.dtype));
      if (!bytes || uint64_t(*bytes) > info.length)
        return fail("'" + joinPath(directory, ".metadata") + "': tensor '" +
                    fqn + "' chunk " + formatBox(chunk) + " needs " +
                    (bytes ? std::to_string(*bytes) : "2^63 or more") +
                    " bytes of " + torchDTypeName(tensor.dtype) +
                    " data, but .metadata gives its blob in " +
                    info.relativePath + " only " + llvm::Twine(info.length) +
                    " bytes; the checkpoint is corrupted");
      if (!counted.emplace(info.relativePath, info.offset).second)
        continue;
      uint64_t &total = chunkBytes[info.relativePath];
      total = llvm::SaturatingAdd(total, uint64_t(*bytes));
    }
  }
  for (const auto &[name, last] : ends) {
    const auto &[end, fqn] = last;
    std::string path = joinPath(directory, name);
    uint64_t size;
    if (std::error_code ec = llvm::sys::fs::file_size(path, size))
      return fail("'" + path + "' is missing (" + ec.message() +
                  "): .metadata stores blobs there, e.g. of '" + fqn +
                  "'; the checkpoint is incomplete (the rank that writes " +
                  name +
                  " did not finish, or the file was removed): save "
                  "it again");
    if (size < end)
      return fail("'" + path + "' is truncated: it has " + llvm::Twine(size) +
                  " bytes, .metadata places blobs up to byte " +
                  llvm::Twine(end) + " (e.g. of '" + fqn +
                  "'); the checkpoint is incomplete or corrupted, save it "
                  "again");
    if (size < chunkBytes[name])
      return fail("'" + path + "' has " + llvm::Twine(size) +
                  " bytes, fewer than the " + llvm::Twine(chunkBytes[name]) +
                  " bytes of chunk data .metadata places in it; the "
                  "checkpoint is corrupted");
  }
  return llvm::Error::success();
}

llvm::Expected<DcpReader> DcpReader::open(StringRef directory) {
  std::string path = joinPath(directory, ".metadata");
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail("'" + path + "': cannot read (" + buffer.getError().message() +
                "); a checkpoint directory needs its .metadata file, which "
                "is written last: the save may not have finished");
  llvm::Expected<DcpMetadata> metadata =
      decodeDcpMetadata((*buffer)->getBuffer(), path);
  if (!metadata)
    return metadata.takeError();
  if (llvm::Error err = validateDcpMetadata(*metadata))
    return fail("'" + path + "': " + llvm::toString(std::move(err)));
  if (llvm::Error err = checkDataFiles(directory, *metadata))
    return std::move(err);
  return DcpReader(directory.str(), std::move(*metadata));
}

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
DcpReader::readBlob(const DcpStorageInfo &info) const {
  std::string path = joinPath(directory, info.relativePath);
  auto buffer = llvm::MemoryBuffer::getFileSlice(path, info.length, info.offset,
                                                 /*IsVolatile=*/false);
  if (!buffer)
    return fail("'" + path + "': cannot read (" + buffer.getError().message() +
                ")");
  return std::move(*buffer);
}

namespace {
/// A file opened for reading with large preads.
class ReadFile {
public:
  explicit ReadFile(StringRef path) : path(path.str()) {
    fd = ::open(this->path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      openError = std::error_code(errno, std::generic_category());
    else
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  ~ReadFile() {
    if (fd >= 0)
      ::close(fd);
  }

  /// Reads `into.size()` bytes at `offset`.
  llvm::Error read(llvm::MutableArrayRef<char> into, uint64_t offset) const {
    std::error_code ec = openError;
    size_t done = 0;
    while (!ec && done < into.size()) {
      ssize_t n =
          ::pread(fd, into.data() + done, into.size() - done, offset + done);
      if (n > 0)
        done += n;
      else if (n == 0)
        return fail("'" + path + "': cannot read: unexpected end of file");
      else if (errno != EINTR)
        ec = std::error_code(errno, std::generic_category());
    }
    if (ec)
      return fail("'" + path + "': cannot read (" + ec.message() + ")");
    return llvm::Error::success();
  }

private:
  std::string path;
  int fd;
  std::error_code openError;
};
} // namespace

llvm::Error DcpReader::readChunk(StringRef fqn, ElementType dtype,
                                 const IndexBox &chunk, const IndexBox &region,
                                 MutableDenseTensorRef target,
                                 const IndexBox &targetBox) const {
  const DcpStorageInfo &info =
      metadata.storage.at(storageKey(fqn, chunk.offsets));
  // The blob is mapped (or read, when small); only its zip records and
  // pickle are touched, the data is read with preads below.
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> blob = readBlob(info);
  if (!blob)
    return blob.takeError();
  StringRef bytes = (*blob)->getBuffer();
  std::string path = joinPath(directory, info.relativePath);
  std::string blobName = (path + "@" + llvm::Twine(info.offset)).str();
  llvm::Expected<TorchSaveArchive> archive =
      readTorchSave(bytes, blobName, /*checkData=*/false);
  if (!archive)
    return archive.takeError();
  llvm::Expected<TorchSaveTensorLayout> layout =
      getTorchSaveTensorLayout(*archive, blobName);
  if (!layout)
    return layout.takeError();
  if (layout->dtype != dtype || layout->shape != chunk.sizes)
    return fail("'" + blobName + "': the saved chunk of '" + fqn + "' is " +
                torchDTypeName(layout->dtype) + " " +
                formatInts(layout->shape) + " but .metadata says " +
                torchDTypeName(dtype) + " " + formatInts(chunk.sizes) +
                " (shape mismatch); the checkpoint is inconsistent");
  auto corrupted = [&](StringRef entry) {
    return fail("'" + blobName + "': CRC-32 mismatch in entry '" + entry +
                "' (corrupted file)");
  };
  for (const ZipEntryView &entry : archive->entries)
    if (entry.data.data() != layout->storage.data.data() &&
        zipCrc32(entry.data) != entry.crc)
      return corrupted(entry.name);

  size_t elementSize = getElementTypeSize(dtype);
  size_t chunkBytes = chunk.numElements() * elementSize;
  if (!layout->isContiguous() || layout->storage.data.size() != chunkBytes) {
    // A view into a larger storage (written by torch.save, not by DCP):
    // read it whole from the mapping.
    if (zipCrc32(layout->storage.data) != layout->storage.crc)
      return corrupted(layout->storage.name);
    llvm::Expected<DenseTensor> saved = readTorchSaveTensor(bytes, blobName);
    if (!saved)
      return saved.takeError();
    copyRegion(*saved, chunk, target, targetBox, region);
    return llvm::Error::success();
  }

  ReadFile file(path);
  uint64_t dataOffset =
      info.offset + (layout->storage.data.data() - bytes.data());
  uint32_t crc = 0;
  auto readPiece = [&](llvm::MutableArrayRef<char> into,
                       uint64_t offset) -> llvm::Error {
    if (llvm::Error err = file.read(into, dataOffset + offset))
      return err;
    crc = zipCrc32(StringRef(into.data(), into.size()), crc);
    return llvm::Error::success();
  };
  // Where the chunk is one run of the target, read it there directly.
  std::optional<size_t> whole;
  if (region == chunk)
    forEachRun(chunk, targetBox, region, elementSize,
               [&](size_t, size_t to, size_t runBytes) {
                 if (runBytes == chunkBytes)
                   whole = to;
               });
  if (whole) {
    for (size_t at = 0; at < chunkBytes; at += kIOBufferSize)
      if (llvm::Error err = readPiece(
              target.data.slice(*whole + at,
                                std::min(kIOBufferSize, chunkBytes - at)),
              at))
        return err;
  } else {
    // Slabs of whole rows (of the outermost dimension) through the scratch
    // buffer, each copied to the target where it meets the region.
    size_t rowBytes = chunk.sizes.empty() || chunk.sizes[0] == 0
                          ? chunkBytes
                          : chunkBytes / chunk.sizes[0];
    int64_t rows = chunk.sizes.empty() ? 1 : chunk.sizes[0];
    int64_t slabRows =
        std::max<int64_t>(1, kIOBufferSize / std::max<size_t>(rowBytes, 1));
    scratch.resize(std::min<size_t>(slabRows * rowBytes, chunkBytes));
    for (int64_t row = 0; row < rows && rowBytes; row += slabRows) {
      IndexBox slab = chunk;
      if (!slab.sizes.empty()) {
        slab.offsets[0] += row;
        slab.sizes[0] = std::min(slabRows, rows - row);
      }
      size_t slabBytes = slab.numElements() * elementSize;
      if (llvm::Error err = readPiece(
              llvm::MutableArrayRef<char>(scratch).take_front(slabBytes),
              row * rowBytes))
        return err;
      if (std::optional<IndexBox> part = intersectBoxes(slab, region))
        copyRegion(DenseTensorRef(dtype, slab.sizes,
                                  StringRef(scratch.data(), slabBytes)),
                   slab, target, targetBox, *part);
    }
  }
  if (crc != layout->storage.crc)
    return corrupted(layout->storage.name);
  return llvm::Error::success();
}

/// The metadata of tensor `fqn` of the checkpoint in `directory`, after
/// checking that `box` lies within it; every size of a valid box fits.
static llvm::Expected<const DcpTensorMetadata &>
findBox(const DcpMetadata &metadata, StringRef directory, StringRef fqn,
        const IndexBox &box) {
  auto it = metadata.tensors.find(fqn.str());
  if (it == metadata.tensors.end())
    return fail("checkpoint '" + directory + "' has no tensor '" + fqn + "'");
  const DcpTensorMetadata &tensor = it->second;
  if (box.offsets.size() != tensor.size.size() ||
      box.sizes.size() != tensor.size.size())
    return fail("tensor '" + fqn + "' has shape " + formatInts(tensor.size) +
                ", the requested box " + formatBox(box) +
                " has a different rank");
  for (size_t d = 0; d < box.sizes.size(); ++d)
    if (box.offsets[d] < 0 || box.sizes[d] < 0 ||
        box.offsets[d] > tensor.size[d] ||
        box.sizes[d] > tensor.size[d] - box.offsets[d])
      return fail("tensor '" + fqn + "' has shape " + formatInts(tensor.size) +
                  ", the requested box " + formatBox(box) +
                  " is out of bounds");
  return tensor;
}

llvm::Error DcpReader::readBoxInto(StringRef fqn, const IndexBox &box,
                                   MutableDenseTensorRef target) const {
  llvm::Expected<const DcpTensorMetadata &> found =
      findBox(metadata, directory, fqn, box);
  if (!found)
    return found.takeError();
  const DcpTensorMetadata &tensor = *found;
  if (target.dtype != tensor.dtype ||
      target.shape != llvm::ArrayRef<int64_t>(box.sizes) ||
      target.data.size() !=
          box.numElements() * getElementTypeSize(tensor.dtype))
    return fail("tensor '" + fqn + "' box " + formatBox(box) + " is " +
                torchDTypeName(tensor.dtype) + " " + formatInts(box.sizes) +
                ", it cannot be read into a " + torchDTypeName(target.dtype) +
                " " + formatInts(target.shape) + " of " +
                llvm::Twine(target.data.size()) + " bytes");
  for (const IndexBox &chunk : tensor.chunks)
    if (std::optional<IndexBox> region = intersectBoxes(chunk, box))
      if (llvm::Error err =
              readChunk(fqn, tensor.dtype, chunk, *region, target, box))
        return err;
  return llvm::Error::success();
}

llvm::Expected<DenseTensor> DcpReader::readBox(StringRef fqn,
                                               const IndexBox &box) const {
  // The box is checked before its memory is allocated.
  llvm::Expected<const DcpTensorMetadata &> tensor =
      findBox(metadata, directory, fqn, box);
  if (!tensor)
    return tensor.takeError();
  DenseTensor result;
  result.dtype = tensor->dtype;
  result.shape = box.sizes;
  result.data.resize(box.numElements() * getElementTypeSize(result.dtype));
  if (llvm::Error err = readBoxInto(fqn, box, result))
    return std::move(err);
  return result;
}

llvm::Expected<DenseTensor> DcpReader::readTensor(StringRef fqn) const {
  auto it = metadata.tensors.find(fqn.str());
  if (it == metadata.tensors.end())
    return fail("checkpoint '" + directory + "' has no tensor '" + fqn + "'");
  IndexBox whole;
  whole.offsets.assign(it->second.size.size(), 0);
  whole.sizes = it->second.size;
  return readBox(fqn, whole);
}

llvm::Expected<std::string> DcpReader::readBytes(StringRef fqn) const {
  auto it = metadata.storage.find({fqn.str(), {}});
  if (!llvm::is_contained(metadata.bytesEntries, fqn) ||
      it == metadata.storage.end())
    return fail("checkpoint '" + directory + "' has no bytes entry '" + fqn +
                "'");
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> blob =
      readBlob(it->second);
  if (!blob)
    return blob.takeError();
  return (*blob)->getBuffer().str();
}
