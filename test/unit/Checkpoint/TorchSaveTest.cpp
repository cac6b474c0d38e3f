//===- TorchSaveTest.cpp - torch.save archives and zip --------------------===//

#include "titan/Checkpoint/TorchSave.h"

#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace mlir::titan;

namespace {

TEST(TorchSaveTest, ZipRoundTripAlignsData) {
  std::string data(100, '\x07');
  std::vector<ZipEntryView> entries = {
      {"a/data.pkl", "xyz"}, {"a/data/0", data}, {"a/version", "3\n"}};
  // The default writes 32-bit records; threshold 0 forces every zip64 record
  // (sizes, offsets, end of central directory), as a 4 GiB entry would.
  for (uint64_t threshold : {kZip64Limit, uint64_t(0)}) {
    std::string zip;
    llvm::raw_string_ostream os(zip);
    // Offsets count from the archive's start, not the stream's.
    os << "prefix";
    writeStoredZip(entries, os, threshold);
    zip.erase(0, 6);
    EXPECT_EQ(llvm::StringRef(zip).contains("PK\x06\x06"), threshold == 0);
    llvm::Expected<std::vector<ZipEntryView>> read = readStoredZip(zip, "z");
    ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
    ASSERT_EQ(read->size(), entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
      EXPECT_EQ((*read)[i].name, entries[i].name);
      EXPECT_EQ((*read)[i].data, entries[i].data);
      EXPECT_EQ(((*read)[i].data.data() - zip.data()) % 64, 0);
    }
  }
}

TEST(TorchSaveTest, ZipDetectsTruncationAndCorruption) {
  std::string zip;
  llvm::raw_string_ostream os(zip);
  writeStoredZip({{"a/data/0", std::string(64, 'x')}}, os);
  auto truncated = readStoredZip(llvm::StringRef(zip).drop_back(10), "z.zip");
  ASSERT_FALSE(bool(truncated));
  EXPECT_NE(llvm::toString(truncated.takeError()).find("z.zip"),
            std::string::npos);
  std::string corrupted = zip;
  corrupted[corrupted.find('x')] = 'y';
  auto bad = readStoredZip(corrupted, "z.zip");
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("CRC"), std::string::npos);
}

TEST(TorchSaveTest, TensorRoundTripEveryDType) {
  for (ElementType dtype :
       {ElementType::F32, ElementType::F64, ElementType::F16, ElementType::BF16,
        ElementType::I64, ElementType::I32}) {
    DenseTensor tensor{dtype, {2, 3}, {}};
    tensor.data.resize(6 * getElementTypeSize(dtype));
    for (size_t i = 0; i < tensor.data.size(); ++i)
      tensor.data[i] = char(i * 7);
    std::string blob;
    llvm::raw_string_ostream os(blob);
    ASSERT_FALSE(bool(writeTorchSaveTensor(tensor, os)));
    llvm::Expected<DenseTensor> read = readTorchSaveTensor(blob, "blob");
    ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
    EXPECT_EQ(read->dtype, dtype);
    EXPECT_EQ(read->shape, tensor.shape);
    EXPECT_EQ(read->data, tensor.data);
  }
}

TEST(TorchSaveTest, TorchNamesOfTheCheckpointDTypes) {
  for (ElementType dtype :
       {ElementType::F32, ElementType::F64, ElementType::F16, ElementType::BF16,
        ElementType::I64, ElementType::I32, ElementType::I1}) {
    ASSERT_TRUE(isTorchDType(dtype));
    EXPECT_EQ(parseTorchDTypeName(torchDTypeName(dtype)), dtype);
    EXPECT_EQ(parseTorchStorageName(torchStorageName(dtype)), dtype);
  }
  EXPECT_EQ(torchDTypeName(ElementType::BF16), "bfloat16");
  EXPECT_EQ(torchStorageName(ElementType::I64), "LongStorage");
  EXPECT_EQ(torchStorageName(ElementType::I1), "BoolStorage");
  // .npy's unsigned arrays have no checkpoint counterpart.
  for (ElementType dtype : {ElementType::U16, ElementType::U8})
    EXPECT_FALSE(isTorchDType(dtype));
  EXPECT_EQ(parseTorchDTypeName("uint8"), std::nullopt);
}

TEST(TorchSaveTest, RejectsWrongDataSize) {
  DenseTensor tensor{ElementType::F32, {4}, std::vector<char>(12)};
  std::string blob;
  llvm::raw_string_ostream os(blob);
  llvm::Error err = writeTorchSaveTensor(tensor, os);
  ASSERT_TRUE(bool(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("16"), std::string::npos);
  EXPECT_TRUE(blob.empty());
}

/// A torch.save archive of a view of shape `shape` and `strides` starting at
/// element `offset` of an int64 storage holding 0, 1, ..., count - 1; its
/// persistent id claims `claimed` elements (`count` when negative) of
/// storage class `storageType`.
std::string strided(int64_t count, int64_t offset, std::vector<int64_t> shape,
                    std::vector<int64_t> strides, int64_t claimed = -1,
                    llvm::StringRef storageType = "LongStorage") {
  auto ints = [](const std::vector<int64_t> &values) {
    std::vector<PickleRef> items;
    for (int64_t value : values)
      items.push_back(PickleValue::integer(value));
    return PickleValue::tuple(std::move(items));
  };
  PickleRef storage = PickleValue::persistentId(PickleValue::tuple(
      {PickleValue::string("storage"),
       PickleValue::global("torch", storageType), PickleValue::string("0"),
       PickleValue::string("cpu"),
       PickleValue::integer(claimed < 0 ? count : claimed)}));
  PickleRef root = PickleValue::object(
      PickleValue::global("torch._utils", "_rebuild_tensor_v2"),
      PickleValue::tuple({storage, PickleValue::integer(offset), ints(shape),
                          ints(strides), PickleValue::boolean(false),
                          PickleValue::object(
                              PickleValue::global("collections", "OrderedDict"),
                              PickleValue::tuple({}), /*newObj=*/false)}),
      /*newObj=*/false);
  std::vector<int64_t> values(count);
  for (int64_t i = 0; i < count; ++i)
    values[i] = i;
  std::string pickle = writePickle(root);
  std::string zip;
  llvm::raw_string_ostream os(zip);
  writeStoredZip(
      {{"a/data.pkl", pickle},
       {"a/data/0",
        llvm::StringRef(reinterpret_cast<char *>(values.data()), count * 8)},
       {"a/version", "3\n"}},
      os);
  return zip;
}

TEST(TorchSaveTest, ReadsStridedViews) {
  auto elements = [](const DenseTensor &tensor) {
    std::vector<int64_t> values(tensor.numElements());
    std::memcpy(values.data(), tensor.data.data(), tensor.data.size());
    return values;
  };
  // A transposed view: [i][j] = storage[1 + i + 3j].
  llvm::Expected<DenseTensor> transposed =
      readTorchSaveTensor(strided(7, 1, {3, 2}, {1, 3}), "t");
  ASSERT_TRUE(bool(transposed)) << llvm::toString(transposed.takeError());
  EXPECT_EQ(elements(*transposed), std::vector<int64_t>({1, 4, 2, 5, 3, 6}));
  // Rows of a wider storage: [i][j] = storage[4i + j], runs of 2.
  llvm::Expected<DenseTensor> rows =
      readTorchSaveTensor(strided(8, 0, {2, 2}, {4, 1}), "r");
  ASSERT_TRUE(bool(rows)) << llvm::toString(rows.takeError());
  EXPECT_EQ(elements(*rows), std::vector<int64_t>({0, 1, 4, 5}));
  // A view past the end of its storage is refused.
  llvm::Expected<DenseTensor> outside =
      readTorchSaveTensor(strided(4, 1, {2, 2}, {2, 1}), "o");
  ASSERT_FALSE(bool(outside));
  EXPECT_NE(llvm::toString(outside.takeError()).find("exceeds its storage"),
            std::string::npos);
}

/// The error of reading `blob`, which must fail.
std::string readError(const std::string &blob) {
  llvm::Expected<DenseTensor> read = readTorchSaveTensor(blob, "hostile.pt");
  EXPECT_FALSE(bool(read));
  return read ? std::string() : llvm::toString(read.takeError());
}

TEST(TorchSaveTest, RefusesSizesThatOverflowOrExceedTheStorage) {
  constexpr int64_t kHuge = (int64_t(1) << 62) + 1;
  // Shape x stride wraps: [2^62+1] with stride 0 over one element would be
  // copied element by element into a buffer of 8 * (2^62+1) mod 2^64 bytes.
  std::string broadcast = readError(strided(1, 0, {kHuge}, {0}));
  EXPECT_NE(broadcast.find("overflows"), std::string::npos) << broadcast;
  // Without the wrap, a broadcast larger than its storage is refused too
  // (it would be materialized larger than the file).
  std::string expanded = readError(strided(1, 0, {int64_t(1) << 40}, {0}));
  EXPECT_NE(expanded.find("more than the 1 of its storage"), std::string::npos)
      << expanded;
  // A contiguous view whose byte count wraps: 8 * (2^61+1) bytes are 8 mod
  // 2^64, which the one element of data present would "hold".
  constexpr int64_t kWraps = (int64_t(1) << 61) + 1;
  std::string contiguous = readError(strided(1, 0, {kWraps}, {1}, kWraps));
  EXPECT_NE(contiguous.find("fewer than its 2305843009213693953 elements"),
            std::string::npos)
      << contiguous;
  // A reach (size - 1) x stride or an offset sum that overflows.
  std::string reach = readError(strided(4, 0, {2, 2}, {INT64_MAX, 1}));
  EXPECT_NE(reach.find("exceeds its storage"), std::string::npos) << reach;
  std::string offset = readError(strided(4, INT64_MAX, {2}, {INT64_MAX}));
  EXPECT_NE(offset.find("exceeds its storage"), std::string::npos) << offset;
  // A storage whose element count overflows in bytes.
  std::string storage = readError(strided(1, 0, {1}, {1}, INT64_MAX));
  EXPECT_NE(storage.find("fewer than its"), std::string::npos) << storage;
}

TEST(TorchSaveTest, NamesComplexStorages) {
  std::string complex =
      readError(strided(2, 0, {2}, {1}, -1, "ComplexFloatStorage"));
  EXPECT_NE(complex.find("complex64 is not supported"), std::string::npos)
      << complex;
}

TEST(TorchSaveTest, ObjectArchiveHoldsAnInt) {
  std::string blob = writeTorchSaveObject(PickleValue::integer(12));
  llvm::Expected<TorchSaveArchive> read = readTorchSave(blob, "blob");
  ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
  ASSERT_TRUE(read->root->is(PickleValue::Kind::Int));
  EXPECT_EQ(read->root->getInt(), 12);
  EXPECT_EQ(read->folder, "archive/");
}

} // namespace
