//===- TorchSave.cpp - torch.save archives of one tensor ------------------===//

#include "titan/Checkpoint/TorchSave.h"

#include "titan/Checkpoint/Pickle.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/Endian.h"

using namespace mlir::titan;
using llvm::StringRef;
namespace endian = llvm::support::endian;

//===----------------------------------------------------------------------===//
// dtypes
//===----------------------------------------------------------------------===//

namespace {
struct DTypeInfo {
  TorchDType dtype;
  StringRef name;
  StringRef storage;
  size_t size;
};
} // namespace

static constexpr DTypeInfo kDTypes[] = {
    {TorchDType::Float32, "float32", "FloatStorage", 4},
    {TorchDType::Float64, "float64", "DoubleStorage", 8},
    {TorchDType::Float16, "float16", "HalfStorage", 2},
    {TorchDType::BFloat16, "bfloat16", "BFloat16Storage", 2},
    {TorchDType::Int64, "int64", "LongStorage", 8},
    {TorchDType::Int32, "int32", "IntStorage", 4},
};

static const DTypeInfo &info(TorchDType dtype) {
  for (const DTypeInfo &entry : kDTypes)
    if (entry.dtype == dtype)
      return entry;
  llvm_unreachable("every TorchDType has an entry");
}

StringRef mlir::titan::torchDTypeName(TorchDType dtype) {
  return info(dtype).name;
}

StringRef mlir::titan::torchStorageName(TorchDType dtype) {
  return info(dtype).storage;
}

size_t mlir::titan::torchDTypeSize(TorchDType dtype) {
  return info(dtype).size;
}

std::optional<TorchDType> mlir::titan::parseTorchDTypeName(StringRef name) {
  for (const DTypeInfo &entry : kDTypes)
    if (entry.name == name)
      return entry.dtype;
  return std::nullopt;
}

std::optional<TorchDType> mlir::titan::parseTorchStorageName(StringRef name) {
  for (const DTypeInfo &entry : kDTypes)
    if (entry.storage == name)
      return entry.dtype;
  return std::nullopt;
}

int64_t DenseTensor::numElements() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

static llvm::Error fail(StringRef name, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "'" + name + "': " + message);
}

//===----------------------------------------------------------------------===//
// Zip
//===----------------------------------------------------------------------===//

static constexpr uint32_t kLocalHeaderSig = 0x04034b50;
static constexpr uint32_t kCentralHeaderSig = 0x02014b50;
static constexpr uint32_t kEndSig = 0x06054b50;
static constexpr uint32_t kZip64EndSig = 0x06064b50;
static constexpr uint32_t kZip64LocatorSig = 0x07064b50;
static constexpr size_t kLocalHeaderSize = 30;
static constexpr size_t kCentralHeaderSize = 46;
static constexpr size_t kEndSize = 22;
static constexpr size_t kAlignment = 64;

static void put16(std::string &out, uint16_t value) {
  char buffer[2];
  endian::write16le(buffer, value);
  out.append(buffer, 2);
}

static void put32(std::string &out, uint32_t value) {
  char buffer[4];
  endian::write32le(buffer, value);
  out.append(buffer, 4);
}

static void put64(std::string &out, uint64_t value) {
  char buffer[8];
  endian::write64le(buffer, value);
  out.append(buffer, 8);
}

/// `value` as a 32-bit zip field: saturated when zip64 holds it.
static uint32_t field32(uint64_t value, bool inZip64) {
  return inZip64 ? 0xffffffffu : uint32_t(value);
}

std::string mlir::titan::writeStoredZip(llvm::ArrayRef<ZipEntry> entries,
                                        uint64_t zip64Threshold) {
  std::string out;
  std::string central;
  for (const ZipEntry &entry : entries) {
    uint64_t size = entry.data.size();
    uint64_t offset = out.size();
    bool bigSize = size >= zip64Threshold;
    bool bigOffset = offset >= zip64Threshold;
    uint32_t crc = llvm::crc32(llvm::arrayRefFromStringRef(entry.data));
    // The local zip64 extra field holds both sizes.
    size_t localZip64 = bigSize ? 4 + 16 : 0;
    // An extra field "FB" of 'Z's pads the header so that data is aligned.
    size_t unpadded =
        offset + kLocalHeaderSize + entry.name.size() + localZip64 + 4;
    size_t padding = (kAlignment - unpadded % kAlignment) % kAlignment;
    auto putCommon = [&](std::string &to) {
      put16(to, bigSize || bigOffset ? 45 : 20); // Version needed: 4.5 / 2.0.
      put16(to, 0);                              // Flags.
      put16(to, 0);                              // Method: stored.
      put16(to, 0);                              // Modification time.
      put16(to, 0x21); // Modification date: 1980-01-01.
      put32(to, crc);
      put32(to, field32(size, bigSize));
      put32(to, field32(size, bigSize));
      put16(to, entry.name.size());
    };
    put32(out, kLocalHeaderSig);
    putCommon(out);
    put16(out, localZip64 + 4 + padding);
    out += entry.name;
    if (bigSize) {
      put16(out, 1);
      put16(out, 16);
      put64(out, size);
      put64(out, size);
    }
    put16(out, 0x4246); // "FB"
    put16(out, padding);
    out.append(padding, 'Z');
    out += entry.data;

    put32(central, kCentralHeaderSig);
    put16(central, 45); // Version made by.
    putCommon(central);
    size_t centralZip64 = (bigSize ? 16 : 0) + (bigOffset ? 8 : 0);
    put16(central, centralZip64 ? 4 + centralZip64 : 0);
    put16(central, 0); // Comment length.
    put16(central, 0); // Disk number.
    put16(central, 0); // Internal attributes.
    put32(central, 0); // External attributes.
    put32(central, field32(offset, bigOffset));
    central += entry.name;
    if (centralZip64) {
      put16(central, 1);
      put16(central, centralZip64);
      if (bigSize) {
        put64(central, size);
        put64(central, size);
      }
      if (bigOffset)
        put64(central, offset);
    }
  }
  uint64_t centralOffset = out.size();
  out += central;
  bool zip64End = entries.size() >= 0xffff || centralOffset >= zip64Threshold ||
                  central.size() >= zip64Threshold;
  if (zip64End) {
    uint64_t recordOffset = out.size();
    put32(out, kZip64EndSig);
    put64(out, 44); // Size of the rest of the record.
    put16(out, 45); // Version made by.
    put16(out, 45); // Version needed.
    put32(out, 0);  // This disk.
    put32(out, 0);  // Disk of the central directory.
    put64(out, entries.size());
    put64(out, entries.size());
    put64(out, central.size());
    put64(out, centralOffset);
    put32(out, kZip64LocatorSig);
    put32(out, 0); // Disk of the zip64 end record.
    put64(out, recordOffset);
    put32(out, 1); // Number of disks.
  }
  put32(out, kEndSig);
  put16(out, 0);
  put16(out, 0);
  put16(out, zip64End ? 0xffff : entries.size());
  put16(out, zip64End ? 0xffff : entries.size());
  put32(out, field32(central.size(), zip64End));
  put32(out, field32(centralOffset, zip64End));
  put16(out, 0);
  return out;
}

namespace {
/// Bounds-checked little-endian reads of a byte range.
struct Cursor {
  StringRef bytes;
  bool fits(uint64_t offset, uint64_t size) const {
    return offset <= bytes.size() && size <= bytes.size() - offset;
  }
  uint16_t u16(uint64_t offset) const {
    return endian::read16le(bytes.data() + offset);
  }
  uint32_t u32(uint64_t offset) const {
    return endian::read32le(bytes.data() + offset);
  }
  uint64_t u64(uint64_t offset) const {
    return endian::read64le(bytes.data() + offset);
  }
};
} // namespace

llvm::Expected<std::vector<ZipEntryView>>
mlir::titan::readStoredZip(StringRef archive, StringRef name) {
  Cursor zip{archive};
  if (archive.size() < kEndSize)
    return fail(name, "not a zip archive (too short; truncated file?)");
  // The end-of-central-directory record is followed by a comment of at most
  // 64 KiB; search backwards for its signature.
  uint64_t end = archive.size() - kEndSize;
  uint64_t lowest = end > 0xffff ? end - 0xffff : 0;
  while (zip.u32(end) != kEndSig) {
    if (end == lowest)
      return fail(name, "not a zip archive: no end-of-central-directory "
                        "record (truncated file?)");
    --end;
  }
  uint64_t count = zip.u16(end + 10);
  uint64_t centralSize = zip.u32(end + 12);
  uint64_t centralOffset = zip.u32(end + 16);
  if (end >= 20 && zip.u32(end - 20) == kZip64LocatorSig) {
    uint64_t zip64End = zip.u64(end - 20 + 8);
    if (!zip.fits(zip64End, 56) || zip.u32(zip64End) != kZip64EndSig)
      return fail(name, "bad zip64 end-of-central-directory record");
    count = zip.u64(zip64End + 32);
    centralSize = zip.u64(zip64End + 40);
    centralOffset = zip.u64(zip64End + 48);
  }
  if (!zip.fits(centralOffset, centralSize))
    return fail(name, "central directory out of bounds (truncated file?)");

  std::vector<ZipEntryView> entries;
  uint64_t pos = centralOffset;
  for (uint64_t i = 0; i < count; ++i) {
    if (!zip.fits(pos, kCentralHeaderSize) || zip.u32(pos) != kCentralHeaderSig)
      return fail(name, "bad central directory entry " + llvm::Twine(i));
    uint16_t method = zip.u16(pos + 10);
    uint32_t crc = zip.u32(pos + 16);
    uint64_t compressedSize = zip.u32(pos + 20);
    uint64_t size = zip.u32(pos + 24);
    uint16_t nameLength = zip.u16(pos + 28);
    uint16_t extraLength = zip.u16(pos + 30);
    uint16_t commentLength = zip.u16(pos + 32);
    uint64_t localOffset = zip.u32(pos + 42);
    if (!zip.fits(pos + kCentralHeaderSize,
                  uint64_t(nameLength) + extraLength + commentLength))
      return fail(name, "central directory entry " + llvm::Twine(i) +
                            " out of bounds");
    StringRef entryName = archive.substr(pos + kCentralHeaderSize, nameLength);
    // A zip64 extra field holds, in order, those of size, compressed size and
    // offset whose 32-bit fields are saturated.
    uint64_t extra = pos + kCentralHeaderSize + nameLength;
    uint64_t extraEnd = extra + extraLength;
    while (extra + 4 <= extraEnd) {
      uint16_t id = zip.u16(extra);
      uint16_t length = zip.u16(extra + 2);
      uint64_t field = extra + 4;
      if (id == 1) {
        for (uint64_t *value : {&size, &compressedSize, &localOffset}) {
          if (*value != 0xffffffffu)
            continue;
          if (field + 8 > extra + 4 + length)
            return fail(name, "bad zip64 extra field of '" + entryName + "'");
          *value = zip.u64(field);
          field += 8;
        }
      }
      extra += 4 + length;
    }
    if (method != 0)
      return fail(name, "entry '" + entryName + "' is compressed (method " +
                            llvm::Twine(method) +
                            "); only stored entries are supported");
    if (!zip.fits(localOffset, kLocalHeaderSize) ||
        zip.u32(localOffset) != kLocalHeaderSig)
      return fail(name, "bad local header of entry '" + entryName + "'");
    uint64_t dataOffset = localOffset + kLocalHeaderSize +
                          zip.u16(localOffset + 26) + zip.u16(localOffset + 28);
    if (!zip.fits(dataOffset, size) || compressedSize != size)
      return fail(name, "data of entry '" + entryName +
                            "' out of bounds (truncated file?)");
    StringRef data = archive.substr(dataOffset, size);
    if (llvm::crc32(llvm::arrayRefFromStringRef(data)) != crc)
      return fail(name, "CRC-32 mismatch in entry '" + entryName +
                            "' (corrupted file)");
    entries.push_back({entryName, data});
    pos += kCentralHeaderSize + nameLength + extraLength + commentLength;
  }
  return entries;
}

//===----------------------------------------------------------------------===//
// torch.save of one tensor
//===----------------------------------------------------------------------===//

/// Row-major strides of `shape`, in elements.
static llvm::SmallVector<int64_t>
contiguousStrides(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

static PickleRef intTuple(llvm::ArrayRef<int64_t> values) {
  std::vector<PickleRef> items;
  for (int64_t value : values)
    items.push_back(PickleValue::integer(value));
  return PickleValue::tuple(std::move(items));
}

llvm::Expected<std::string>
mlir::titan::writeTorchSaveTensor(const DenseTensor &tensor,
                                  StringRef archiveName) {
  int64_t count = tensor.numElements();
  if (tensor.data.size() != size_t(count) * torchDTypeSize(tensor.dtype))
    return fail(archiveName,
                "tensor data has " + llvm::Twine(tensor.data.size()) +
                    " bytes, its shape needs " +
                    llvm::Twine(count * torchDTypeSize(tensor.dtype)));
  PickleRef storage = PickleValue::persistentId(PickleValue::tuple(
      {PickleValue::string("storage"),
       PickleValue::global("torch", torchStorageName(tensor.dtype)),
       PickleValue::string("0"), PickleValue::string("cpu"),
       PickleValue::integer(count)}));
  PickleRef hooks =
      PickleValue::object(PickleValue::global("collections", "OrderedDict"),
                          PickleValue::tuple({}), /*newObj=*/false);
  PickleRef root = PickleValue::object(
      PickleValue::global("torch._utils", "_rebuild_tensor_v2"),
      PickleValue::tuple({storage, PickleValue::integer(0),
                          intTuple(tensor.shape),
                          intTuple(contiguousStrides(tensor.shape)),
                          PickleValue::boolean(false), hooks}),
      /*newObj=*/false);
  std::string folder = archiveName.str() + "/";
  return writeStoredZip(
      {{folder + "data.pkl", writePickle(root)},
       {folder + "data/0", std::string(tensor.data.begin(), tensor.data.end())},
       {folder + "version", "3\n"}});
}

/// Reads a tuple of ints, e.g. a size or stride.
static std::optional<llvm::SmallVector<int64_t>>
asIntTuple(const PickleRef &value) {
  if (!value->is(PickleValue::Kind::Tuple))
    return std::nullopt;
  llvm::SmallVector<int64_t> result;
  for (const PickleRef &item : value->getItems()) {
    if (!item->is(PickleValue::Kind::Int))
      return std::nullopt;
    result.push_back(item->getInt());
  }
  return result;
}

const ZipEntryView *TorchSaveArchive::find(StringRef suffix) const {
  for (const ZipEntryView &entry : entries)
    if (entry.name.size() == folder.size() + suffix.size() &&
        entry.name.starts_with(folder) && entry.name.ends_with(suffix))
      return &entry;
  return nullptr;
}

llvm::Expected<TorchSaveArchive> mlir::titan::readTorchSave(StringRef archive,
                                                            StringRef name) {
  TorchSaveArchive result;
  llvm::Expected<std::vector<ZipEntryView>> entries =
      readStoredZip(archive, name);
  if (!entries)
    return entries.takeError();
  result.entries = std::move(*entries);
  auto pickleEntry =
      llvm::find_if(result.entries, [](const ZipEntryView &entry) {
        return entry.name.ends_with("/data.pkl");
      });
  if (pickleEntry == result.entries.end())
    return fail(name, "no '<folder>/data.pkl' entry: not a torch.save archive");
  result.folder = pickleEntry->name.drop_back(StringRef("data.pkl").size());
  if (const ZipEntryView *order = result.find("byteorder"))
    if (order->data != "little")
      return fail(name, "byteorder '" + order->data +
                            "' is not supported (only little-endian)");
  llvm::Expected<PickleRef> root =
      readPickle(pickleEntry->data, (name + ":" + pickleEntry->name).str(),
                 checkpointPickleGlobals());
  if (!root)
    return root.takeError();
  result.root = std::move(*root);
  return result;
}

llvm::Expected<DenseTensor> mlir::titan::readTorchSaveTensor(StringRef archive,
                                                             StringRef name) {
  llvm::Expected<TorchSaveArchive> saved = readTorchSave(archive, name);
  if (!saved)
    return saved.takeError();
  std::string pickleName = (name + ":" + saved->folder + "data.pkl").str();
  auto notATensor = [&](const llvm::Twine &why) {
    return fail(pickleName, "not a torch.save of one tensor: " + why);
  };
  const PickleRef &call = saved->root;
  if (!call->is(PickleValue::Kind::Object) ||
      call->getQualifiedName() != "torch._utils._rebuild_tensor_v2")
    return notATensor("the root is not torch._utils._rebuild_tensor_v2(...)");
  const auto &args = call->getArgs()->getItems();
  if (args.size() < 4 || !args[0]->is(PickleValue::Kind::PersistentId) ||
      !args[1]->is(PickleValue::Kind::Int))
    return notATensor("unexpected arguments of _rebuild_tensor_v2");
  const PickleRef &id = args[0]->getPersistentId();
  if (!id->is(PickleValue::Kind::Tuple) || id->getItems().size() < 5)
    return notATensor("unexpected storage persistent id");
  const auto &idItems = id->getItems();
  if (!idItems[0]->is(PickleValue::Kind::String) ||
      idItems[0]->getString() != "storage" ||
      !idItems[1]->is(PickleValue::Kind::Global) ||
      !idItems[2]->is(PickleValue::Kind::String) ||
      !idItems[4]->is(PickleValue::Kind::Int))
    return notATensor("unexpected storage persistent id");
  std::optional<TorchDType> dtype =
      parseTorchStorageName(idItems[1]->getName());
  if (!dtype)
    return notATensor("unsupported storage type '" +
                      idItems[1]->getQualifiedName() + "'");
  std::optional<llvm::SmallVector<int64_t>> shape = asIntTuple(args[2]);
  std::optional<llvm::SmallVector<int64_t>> strides = asIntTuple(args[3]);
  if (!shape || !strides || shape->size() != strides->size())
    return notATensor("bad size or stride");

  const ZipEntryView *storage =
      saved->find(("data/" + idItems[2]->getString()).str());
  if (!storage)
    return fail(name, "missing storage entry '" + saved->folder + "data/" +
                          idItems[2]->getString() + "'");
  size_t elementSize = torchDTypeSize(*dtype);
  int64_t storageCount = idItems[4]->getInt();
  if (storageCount < 0 ||
      storage->data.size() < size_t(storageCount) * elementSize)
    return fail(name, "storage entry '" + storage->name + "' has " +
                          llvm::Twine(storage->data.size()) +
                          " bytes, fewer than its " +
                          llvm::Twine(storageCount) + " elements need");

  DenseTensor tensor;
  tensor.dtype = *dtype;
  tensor.shape = *shape;
  int64_t count = tensor.numElements();
  tensor.data.resize(size_t(count) * elementSize);
  if (count == 0)
    return tensor;
  // Bounds of the strided view within the storage.
  int64_t lowest = args[1]->getInt(), highest = args[1]->getInt();
  for (size_t d = 0; d < shape->size(); ++d) {
    if ((*shape)[d] < 0)
      return notATensor("negative size");
    int64_t reach = ((*shape)[d] - 1) * (*strides)[d];
    (reach < 0 ? lowest : highest) += reach;
  }
  if (lowest < 0 || highest >= storageCount)
    return notATensor("the view exceeds its storage");
  // Copy element by element, walking the index in row-major order.
  llvm::SmallVector<int64_t> index(shape->size(), 0);
  int64_t source = args[1]->getInt();
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(tensor.data.data() + i * elementSize,
                storage->data.data() + source * elementSize, elementSize);
    for (size_t d = shape->size(); d-- > 0;) {
      source += (*strides)[d];
      if (++index[d] < (*shape)[d])
        break;
      source -= index[d] * (*strides)[d];
      index[d] = 0;
    }
  }
  return tensor;
}
