//===- NpyTest.cpp - .npy reading and writing ------------------------------===//

#include "titan/Support/Npy.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

using namespace mlir::titan;

namespace {

TEST(NpyTest, RoundTripsShapesAndTypes) {
  for (llvm::SmallVector<int64_t> shape :
       {llvm::SmallVector<int64_t>{}, {5}, {2, 3}, {2, 0, 4}}) {
    NpyArray array{ElementType::I64, shape, {}};
    array.data.resize(array.numElements() * 8, '\x05');
    std::string bytes = serializeNpy(array);
    EXPECT_EQ(bytes.size() % 64, array.data.size() % 64);
    llvm::Expected<NpyArray> read = parseNpy(bytes, "a.npy");
    ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
    EXPECT_EQ(read->dtype, ElementType::I64);
    EXPECT_EQ(read->shape, shape);
    EXPECT_EQ(read->data, array.data);
  }
}

TEST(NpyTest, ReadsNumpyHeader) {
  // numpy.save of numpy.zeros((2,), numpy.float32), header as numpy writes it.
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  header.append(118 - header.size() - 1, ' ');
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + "v" + '\0' +
                      header + std::string(8, '\0');
  llvm::Expected<NpyArray> read = parseNpy(bytes, "z.npy");
  ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(read->dtype, ElementType::F32);
  EXPECT_EQ(read->shape, llvm::SmallVector<int64_t>({2}));
}

TEST(NpyTest, RejectsTruncatedAndUnsupported) {
  NpyArray array{ElementType::F32, {4}, std::vector<char>(16)};
  std::string bytes = serializeNpy(array);
  llvm::Expected<NpyArray> read =
      parseNpy(llvm::StringRef(bytes).drop_back(1), "t.npy");
  ASSERT_FALSE(bool(read));
  EXPECT_NE(llvm::toString(read.takeError()).find("truncated"),
            std::string::npos);
  std::string bigEndian = bytes;
  bigEndian.replace(bigEndian.find("<f4"), 3, ">f4");
  read = parseNpy(bigEndian, "t.npy");
  ASSERT_FALSE(bool(read));
  EXPECT_NE(llvm::toString(read.takeError()).find("unsupported dtype"),
            std::string::npos);
}

/// An .npy file of descr `descr` and shape text `shape` (e.g. "(2, 3)")
/// followed by `dataBytes` zero bytes.
std::string npyWithHeader(llvm::StringRef descr, llvm::StringRef shape,
                          size_t dataBytes) {
  std::string header = ("{'descr': '" + descr +
                        "', 'fortran_order': False, 'shape': " + shape + ", }")
                           .str();
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  return std::string("\x93NUMPY\x01\x00", 8) + char(header.size() & 0xff) +
         char(header.size() >> 8) + header + std::string(dataBytes, '\0');
}

std::string parseError(const std::string &bytes) {
  llvm::Expected<NpyArray> read = parseNpy(bytes, "hostile.npy");
  EXPECT_FALSE(bool(read));
  return read ? std::string() : llvm::toString(read.takeError());
}

TEST(NpyTest, RefusesShapesWhoseSizeOverflows) {
  // 4 * 2 * 2^61 bytes wrap to 0: the header must not pass for an empty
  // array (titan-eval then threw std::length_error).
  std::string wraps =
      parseError(npyWithHeader("<f4", "(2, 2305843009213693952)", 16));
  EXPECT_NE(wraps.find("'hostile.npy': shape (2, 2305843009213693952) of <f4 "
                       "overflows"),
            std::string::npos)
      << wraps;
  // 4 * (2^62 + 1) bytes wrap to 4, which the file holds.
  std::string four =
      parseError(npyWithHeader("<f4", "(4611686018427387905,)", 4));
  EXPECT_NE(four.find("overflows"), std::string::npos) << four;
  // A zero dimension does not hide an overflowing product.
  std::string empty = parseError(
      npyWithHeader("<f8", "(0, 4611686018427387904, 4611686018427387904)", 0));
  EXPECT_NE(empty.find("overflows"), std::string::npos) << empty;
  // Large but representable: refused as truncated, before any allocation.
  std::string big = parseError(npyWithHeader("<f4", "(300000000, 4)", 64));
  EXPECT_NE(big.find("needs 4800000000 bytes, the file has 64"),
            std::string::npos)
      << big;
}

TEST(NpyTest, NamesComplexDTypes) {
  std::string complex = parseError(npyWithHeader("<c8", "(2,)", 16));
  EXPECT_NE(complex.find("complex64 is not supported"), std::string::npos)
      << complex;
  std::string wide = parseError(npyWithHeader("<c16", "(2,)", 32));
  EXPECT_NE(wide.find("complex128 is not supported"), std::string::npos)
      << wide;
}

TEST(NpyTest, CheckedSizes) {
  EXPECT_EQ(checkedElementCount({}), 1);
  EXPECT_EQ(checkedElementCount({2, 0, 3}), 0);
  EXPECT_EQ(checkedByteSize({2, 3}, 8), 48);
  EXPECT_EQ(checkedElementCount({-1}), std::nullopt);
  EXPECT_EQ(checkedElementCount({INT64_MAX, 1}), INT64_MAX);
  EXPECT_EQ(checkedByteSize({INT64_MAX}, 2), std::nullopt);
  EXPECT_EQ(checkedByteSize({int64_t(1) << 32, int64_t(1) << 31}, 1),
            std::nullopt);
}

TEST(NpyTest, RefusesToWriteDataThatDoesNotMatchTheShape) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("npytest", "npy", path));
  llvm::sys::fs::remove(path);
  llvm::Error err = writeNpy(path, ElementType::F32, {(int64_t(1) << 62) + 1},
                             llvm::StringRef("abcd"));
  ASSERT_TRUE(bool(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("its size overflows"),
            std::string::npos);
  EXPECT_FALSE(llvm::sys::fs::exists(path));
}

TEST(NpyTest, ReadsOnlyRegularFiles) {
  // A name that leads to /dev/zero would be read until memory runs out.
  llvm::SmallString<128> link;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("npytest", link));
  llvm::SmallString<128> folder = link;
  llvm::sys::path::append(link, "zeros.npy");
  ASSERT_FALSE(llvm::sys::fs::create_link("/dev/zero", link));
  for (llvm::StringRef path : {llvm::StringRef(link), llvm::StringRef(folder)}) {
    llvm::Expected<NpyArray> read = readNpy(path);
    ASSERT_FALSE(bool(read));
    EXPECT_NE(llvm::toString(read.takeError()).find("is not a regular file"),
              std::string::npos);
    llvm::Expected<MappedNpy> mapped = mapNpy(path);
    ASSERT_FALSE(bool(mapped));
    EXPECT_NE(llvm::toString(mapped.takeError()).find("is not a regular file"),
              std::string::npos);
  }
  llvm::sys::fs::remove(link);
  llvm::sys::fs::remove(folder);
}

} // namespace
