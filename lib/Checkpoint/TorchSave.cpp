//===- TorchSave.cpp - torch.save archives of one tensor ------------------===//

#include "titan/Checkpoint/TorchSave.h"

#include "titan/Checkpoint/Pickle.h"
#include "titan/Support/CheckedSize.h"
#include "titan/Support/FormatInts.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <libdeflate.h>

using namespace mlir::titan;
using llvm::StringRef;
namespace endian = llvm::support::endian;

//===----------------------------------------------------------------------===//
// dtypes
//===----------------------------------------------------------------------===//

namespace {
/// The torch names of one checkpoint dtype.
struct DTypeInfo {
  ElementType dtype;
  StringRef name;
  StringRef storage;
};
} // namespace

static constexpr DTypeInfo kDTypes[] = {
    {ElementType::F32, "float32", "FloatStorage"},
    {ElementType::F64, "float64", "DoubleStorage"},
    {ElementType::F16, "float16", "HalfStorage"},
    {ElementType::BF16, "bfloat16", "BFloat16Storage"},
    {ElementType::I64, "int64", "LongStorage"},
    {ElementType::I32, "int32", "IntStorage"},
    // One byte per element, 0 or 1, as titan holds i1 (a boolean buffer).
    {ElementType::I1, "bool", "BoolStorage"},
};

static const DTypeInfo &info(ElementType dtype) {
  for (const DTypeInfo &entry : kDTypes)
    if (entry.dtype == dtype)
      return entry;
  llvm_unreachable("not a torch dtype (isTorchDType)");
}

bool mlir::titan::isTorchDType(ElementType dtype) {
  return llvm::any_of(
      kDTypes, [&](const DTypeInfo &entry) { return entry.dtype == dtype; });
}

StringRef mlir::titan::torchDTypeName(ElementType dtype) {
  return info(dtype).name;
}

StringRef mlir::titan::torchStorageName(ElementType dtype) {
  return info(dtype).storage;
}

std::optional<ElementType> mlir::titan::parseTorchDTypeName(StringRef name) {
  for (const DTypeInfo &entry : kDTypes)
    if (entry.name == name)
      return entry.dtype;
  return std::nullopt;
}

std::optional<ElementType> mlir::titan::parseTorchStorageName(StringRef name) {
  for (const DTypeInfo &entry : kDTypes)
    if (entry.storage == name)
      return entry.dtype;
  return std::nullopt;
}

StringRef mlir::titan::torchComplexDTypeName(StringRef name) {
  return llvm::StringSwitch<StringRef>(name)
      .Cases({"complex32", "chalf", "ComplexHalfStorage"}, "complex32")
      .Cases({"complex64", "cfloat", "ComplexFloatStorage"}, "complex64")
      .Cases({"complex128", "cdouble", "ComplexDoubleStorage"}, "complex128")
      .Default("");
}

StringRef mlir::titan::supportedTorchDTypeNames() {
  return "float32, float64, float16, bfloat16, int64, int32";
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

uint32_t mlir::titan::zipCrc32(StringRef data, uint32_t crc) {
  return libdeflate_crc32(crc, data.data(), data.size());
}

static constexpr uint32_t kLocalHeaderSig = 0x04034b50;
static constexpr uint32_t kCentralHeaderSig = 0x02014b50;
static constexpr uint32_t kEndSig = 0x06054b50;
static constexpr uint32_t kZip64EndSig = 0x06064b50;
static constexpr uint32_t kZip64LocatorSig = 0x07064b50;
static constexpr size_t kLocalHeaderSize = 30;
static constexpr size_t kCentralHeaderSize = 46;
static constexpr size_t kEndSize = 22;
static constexpr size_t kAlignment = 64;

namespace {
/// Little-endian record fields, appended to a string.
struct Record {
  std::string bytes;
  void put16(uint16_t value) { put<uint16_t>(value); }
  void put32(uint32_t value) { put<uint32_t>(value); }
  void put64(uint64_t value) { put<uint64_t>(value); }

private:
  template <typename T> void put(T value) {
    char buffer[sizeof(T)];
    endian::write<T>(buffer, value, llvm::endianness::little);
    bytes.append(buffer, sizeof(T));
  }
};
} // namespace

/// `value` as a 32-bit zip field: saturated when zip64 holds it.
static uint32_t field32(uint64_t value, bool inZip64) {
  return inZip64 ? 0xffffffffu : uint32_t(value);
}

namespace {
/// An entry of an archive being written: its name, size and CRC-32, and its
/// data when it is held in memory.
struct ZipEntrySpec {
  StringRef name;
  uint64_t size;
  uint32_t crc;
  StringRef data;
};
} // namespace

/// Writes `entries` as an uncompressed zip archive with every entry's data
/// 64-byte aligned: `emit` receives the records, `emitData` is called where
/// an entry's data goes (writeStoredZip documents the zip64 threshold).
static void writeZip(llvm::ArrayRef<ZipEntrySpec> entries,
                     uint64_t zip64Threshold,
                     llvm::function_ref<void(StringRef)> emit,
                     llvm::function_ref<void(const ZipEntrySpec &)> emitData) {
  // Offsets are relative to the archive's start.
  uint64_t written = 0;
  Record central;
  for (const ZipEntrySpec &entry : entries) {
    uint64_t size = entry.size;
    uint64_t offset = written;
    bool bigSize = size >= zip64Threshold;
    bool bigOffset = offset >= zip64Threshold;
    // The local zip64 extra field holds both sizes.
    size_t localZip64 = bigSize ? 4 + 16 : 0;
    // An extra field "FB" of 'Z's pads the header so that data is aligned.
    size_t unpadded =
        offset + kLocalHeaderSize + entry.name.size() + localZip64 + 4;
    size_t padding = (kAlignment - unpadded % kAlignment) % kAlignment;
    auto putCommon = [&](Record &to) {
      to.put16(bigSize || bigOffset ? 45 : 20); // Version needed: 4.5 / 2.0.
      to.put16(0);                              // Flags.
      to.put16(0);                              // Method: stored.
      to.put16(0);                              // Modification time.
      to.put16(0x21); // Modification date: 1980-01-01.
      to.put32(entry.crc);
      to.put32(field32(size, bigSize));
      to.put32(field32(size, bigSize));
      to.put16(entry.name.size());
    };
    Record local;
    local.put32(kLocalHeaderSig);
    putCommon(local);
    local.put16(localZip64 + 4 + padding);
    local.bytes += entry.name;
    if (bigSize) {
      local.put16(1);
      local.put16(16);
      local.put64(size);
      local.put64(size);
    }
    local.put16(0x4246); // "FB"
    local.put16(padding);
    local.bytes.append(padding, 'Z');
    emit(local.bytes);
    emitData(entry);
    written += local.bytes.size() + size;

    central.put32(kCentralHeaderSig);
    central.put16(45); // Version made by.
    putCommon(central);
    size_t centralZip64 = (bigSize ? 16 : 0) + (bigOffset ? 8 : 0);
    central.put16(centralZip64 ? 4 + centralZip64 : 0);
    central.put16(0); // Comment length.
    central.put16(0); // Disk number.
    central.put16(0); // Internal attributes.
    central.put32(0); // External attributes.
    central.put32(field32(offset, bigOffset));
    central.bytes += entry.name;
    if (centralZip64) {
      central.put16(1);
      central.put16(centralZip64);
      if (bigSize) {
        central.put64(size);
        central.put64(size);
      }
      if (bigOffset)
        central.put64(offset);
    }
  }
  uint64_t centralOffset = written;
  uint64_t centralSize = central.bytes.size();
  Record end;
  bool zip64End = entries.size() >= 0xffff || centralOffset >= zip64Threshold ||
                  centralSize >= zip64Threshold;
  if (zip64End) {
    uint64_t recordOffset = centralOffset + centralSize;
    end.put32(kZip64EndSig);
    end.put64(44); // Size of the rest of the record.
    end.put16(45); // Version made by.
    end.put16(45); // Version needed.
    end.put32(0);  // This disk.
    end.put32(0);  // Disk of the central directory.
    end.put64(entries.size());
    end.put64(entries.size());
    end.put64(centralSize);
    end.put64(centralOffset);
    end.put32(kZip64LocatorSig);
    end.put32(0); // Disk of the zip64 end record.
    end.put64(recordOffset);
    end.put32(1); // Number of disks.
  }
  end.put32(kEndSig);
  end.put16(0);
  end.put16(0);
  end.put16(zip64End ? 0xffff : entries.size());
  end.put16(zip64End ? 0xffff : entries.size());
  end.put32(field32(centralSize, zip64End));
  end.put32(field32(centralOffset, zip64End));
  end.put16(0);
  emit(central.bytes);
  emit(end.bytes);
}

/// The spec of an entry held in memory.
static ZipEntrySpec inMemory(StringRef name, StringRef data) {
  return {name, data.size(), zipCrc32(data), data};
}

void mlir::titan::writeStoredZip(llvm::ArrayRef<ZipEntryView> entries,
                                 llvm::raw_ostream &os,
                                 uint64_t zip64Threshold) {
  std::vector<ZipEntrySpec> specs;
  for (const ZipEntryView &entry : entries)
    specs.push_back(inMemory(entry.name, entry.data));
  writeZip(
      specs, zip64Threshold, [&](StringRef bytes) { os << bytes; },
      [&](const ZipEntrySpec &entry) { os << entry.data; });
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
mlir::titan::readStoredZip(StringRef archive, StringRef name, bool checkData) {
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
    if (checkData && zipCrc32(data) != crc)
      return fail(name, "CRC-32 mismatch in entry '" + entryName +
                            "' (corrupted file)");
    entries.push_back({entryName, data, crc});
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

/// Writes the torch.save archive of `root` under the folder `archiveName`:
/// `data.pkl`, the storage `data/0` when `storage` is given (`emitData` is
/// called where its data goes) and `version`; `emit` receives the rest.
static void writeTorchSave(const PickleRef &root,
                           std::optional<ZipEntrySpec> storage,
                           StringRef archiveName,
                           llvm::function_ref<void(StringRef)> emit,
                           llvm::function_ref<void()> emitData) {
  std::string folder = archiveName.str() + "/";
  std::string pickle = writePickle(root);
  std::string pickleName = folder + "data.pkl";
  std::string storageName = folder + "data/0";
  std::string versionName = folder + "version";
  std::vector<ZipEntrySpec> entries = {inMemory(pickleName, pickle)};
  if (storage) {
    storage->name = storageName;
    entries.push_back(*storage);
  }
  entries.push_back(inMemory(versionName, "3\n"));
  writeZip(entries, kZip64Limit, emit, [&](const ZipEntrySpec &entry) {
    if (entry.name == storageName)
      emitData();
    else
      emit(entry.data);
  });
}

/// The root object of the torch.save of a C-contiguous tensor of `dtype` and
/// `shape`: torch._utils._rebuild_tensor_v2 of storage "0".
static PickleRef tensorPickle(ElementType dtype,
                              llvm::ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  PickleRef storage = PickleValue::persistentId(
      PickleValue::tuple({PickleValue::string("storage"),
                          PickleValue::global("torch", torchStorageName(dtype)),
                          PickleValue::string("0"), PickleValue::string("cpu"),
                          PickleValue::integer(count)}));
  PickleRef hooks =
      PickleValue::object(PickleValue::global("collections", "OrderedDict"),
                          PickleValue::tuple({}), /*newObj=*/false);
  return PickleValue::object(
      PickleValue::global("torch._utils", "_rebuild_tensor_v2"),
      PickleValue::tuple({storage, PickleValue::integer(0), intTuple(shape),
                          intTuple(contiguousStrides(shape)),
                          PickleValue::boolean(false), hooks}),
      /*newObj=*/false);
}

TorchSaveFraming
mlir::titan::torchSaveTensorFraming(ElementType dtype,
                                    llvm::ArrayRef<int64_t> shape,
                                    uint32_t dataCrc, StringRef archiveName) {
  uint64_t size = getElementTypeSize(dtype);
  for (int64_t dim : shape)
    size *= dim;
  TorchSaveFraming framing;
  std::string *to = &framing.prefix;
  writeTorchSave(
      tensorPickle(dtype, shape), ZipEntrySpec{{}, size, dataCrc, {}},
      archiveName, [&](StringRef bytes) { *to += bytes; },
      [&] { to = &framing.suffix; });
  return framing;
}

llvm::Error mlir::titan::writeTorchSaveTensor(const DenseTensor &tensor,
                                              llvm::raw_ostream &os,
                                              StringRef archiveName) {
  std::optional<int64_t> bytes =
      checkedByteSize(tensor.shape, getElementTypeSize(tensor.dtype));
  if (!bytes)
    return fail(archiveName, "tensor shape " + formatInts(tensor.shape) +
                                 " has a negative dimension or more than "
                                 "2^63-1 bytes");
  if (tensor.data.size() != uint64_t(*bytes))
    return fail(archiveName,
                "tensor data has " + llvm::Twine(tensor.data.size()) +
                    " bytes, its shape needs " + llvm::Twine(*bytes));
  StringRef data(tensor.data.data(), tensor.data.size());
  TorchSaveFraming framing = torchSaveTensorFraming(
      tensor.dtype, tensor.shape, zipCrc32(data), archiveName);
  os << framing.prefix << data << framing.suffix;
  return llvm::Error::success();
}

std::string mlir::titan::writeTorchSaveObject(const PickleRef &root,
                                              StringRef archiveName) {
  std::string archive;
  writeTorchSave(
      root, std::nullopt, archiveName,
      [&](StringRef bytes) { archive += bytes; },
      [] { llvm_unreachable("an object archive has no storage"); });
  return archive;
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

llvm::Expected<TorchSaveArchive>
mlir::titan::readTorchSave(StringRef archive, StringRef name, bool checkData) {
  TorchSaveArchive result;
  llvm::Expected<std::vector<ZipEntryView>> entries =
      readStoredZip(archive, name, checkData);
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

bool TorchSaveTensorLayout::isContiguous() const {
  return storageOffset == 0 &&
         llvm::ArrayRef<int64_t>(strides) ==
             llvm::ArrayRef<int64_t>(contiguousStrides(shape));
}

llvm::Expected<TorchSaveTensorLayout>
mlir::titan::getTorchSaveTensorLayout(const TorchSaveArchive &saved,
                                      StringRef name) {
  std::string pickleName = (name + ":" + saved.folder + "data.pkl").str();
  auto notATensor = [&](const llvm::Twine &why) {
    return fail(pickleName, "not a torch.save of one tensor: " + why);
  };
  const PickleRef &call = saved.root;
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
  std::optional<ElementType> dtype =
      parseTorchStorageName(idItems[1]->getName());
  if (!dtype) {
    StringRef complexName = torchComplexDTypeName(idItems[1]->getName());
    return fail(pickleName,
                (complexName.empty()
                     ? "storage type '" + idItems[1]->getQualifiedName() + "'"
                     : complexName.str()) +
                    " is not supported (supported: " +
                    supportedTorchDTypeNames() + ")");
  }
  std::optional<llvm::SmallVector<int64_t>> shape = asIntTuple(args[2]);
  std::optional<llvm::SmallVector<int64_t>> strides = asIntTuple(args[3]);
  if (!shape || !strides || shape->size() != strides->size())
    return notATensor("bad size or stride");

  const ZipEntryView *storage =
      saved.find(("data/" + idItems[2]->getString()).str());
  if (!storage)
    return fail(name, "missing storage entry '" + saved.folder + "data/" +
                          idItems[2]->getString() + "'");
  // Every size below comes from the file: checked against the bytes present
  // before a caller allocates or copies anything for it.
  size_t elementSize = getElementTypeSize(*dtype);
  int64_t storageCount = idItems[4]->getInt();
  std::optional<int64_t> storageBytes =
      checkedByteSize(llvm::ArrayRef<int64_t>(storageCount), elementSize);
  if (!storageBytes || storage->data.size() < uint64_t(*storageBytes))
    return fail(name, "storage entry '" + storage->name + "' has " +
                          llvm::Twine(storage->data.size()) +
                          " bytes, fewer than its " +
                          llvm::Twine(storageCount) + " elements need");
  if (llvm::any_of(*shape, [](int64_t dim) { return dim < 0; }))
    return notATensor("negative size in " + formatInts(*shape));
  std::optional<int64_t> count = checkedElementCount(*shape);
  if (!count || !checkedByteSize(*shape, elementSize))
    return notATensor("size " + formatInts(*shape) +
                      " overflows (more than 2^63-1 bytes)");
  // A view with more elements than its storage (a broadcast, e.g. of
  // expand()) would be materialized larger than the data in the file.
  if (*count > storageCount)
    return notATensor("the view of size " + formatInts(*shape) + " has " +
                      llvm::Twine(*count) + " elements, more than the " +
                      llvm::Twine(storageCount) +
                      " of its storage (a broadcast view; save a "
                      "contiguous copy)");
  TorchSaveTensorLayout layout{*dtype, *shape, *strides, args[1]->getInt(),
                               *storage};
  if (*count == 0)
    return layout;
  // Bounds of the strided view within the storage; a bound that overflows
  // lies outside any storage.
  std::optional<int64_t> lowest = layout.storageOffset;
  std::optional<int64_t> highest = layout.storageOffset;
  for (size_t d = 0; d < shape->size() && lowest && highest; ++d) {
    std::optional<int64_t> reach =
        llvm::checkedMul((*shape)[d] - 1, (*strides)[d]);
    if (!reach)
      return notATensor("the view exceeds its storage");
    std::optional<int64_t> &bound = *reach < 0 ? lowest : highest;
    bound = llvm::checkedAdd(*bound, *reach);
  }
  if (!lowest || !highest || *lowest < 0 || *highest >= storageCount)
    return notATensor("the view exceeds its storage");
  return layout;
}

llvm::Expected<DenseTensor> mlir::titan::readTorchSaveTensor(StringRef archive,
                                                             StringRef name) {
  llvm::Expected<TorchSaveArchive> saved = readTorchSave(archive, name);
  if (!saved)
    return saved.takeError();
  return readTorchSaveTensor(*saved, name);
}

llvm::Expected<DenseTensor>
mlir::titan::readTorchSaveTensor(const TorchSaveArchive &archive,
                                 StringRef name) {
  llvm::Expected<TorchSaveTensorLayout> layout =
      getTorchSaveTensorLayout(archive, name);
  if (!layout)
    return layout.takeError();
  DenseTensor tensor;
  tensor.dtype = layout->dtype;
  tensor.shape = layout->shape;
  int64_t count = tensor.numElements();
  size_t elementSize = getElementTypeSize(tensor.dtype);
  tensor.data.resize(size_t(count) * elementSize);
  if (count == 0)
    return tensor;
  // Copy runs of the innermost dimension (all of the data when the view is
  // contiguous), walking the outer index in row-major order.
  llvm::ArrayRef<int64_t> shape = layout->shape, strides = layout->strides;
  int64_t run = 1;
  size_t inner = shape.size();
  for (int64_t expected = 1; inner > 0 && strides[inner - 1] == expected;
       --inner)
    expected = run *= shape[inner - 1];
  llvm::SmallVector<int64_t> index(inner, 0);
  int64_t source = layout->storageOffset;
  size_t runBytes = run * elementSize;
  for (int64_t target = 0; target < count; target += run) {
    std::memcpy(tensor.data.data() + target * elementSize,
                layout->storage.data.data() + source * elementSize, runBytes);
    for (size_t d = inner; d-- > 0;) {
      source += strides[d];
      if (++index[d] < shape[d])
        break;
      source -= index[d] * strides[d];
      index[d] = 0;
    }
  }
  return tensor;
}
