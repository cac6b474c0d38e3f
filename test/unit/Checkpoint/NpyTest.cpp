//===- NpyTest.cpp - .npy reading and writing
//------------------------------===//

#include "titan/Support/Npy.h"

#include "gtest/gtest.h"

using namespace mlir::titan;

namespace {

TEST(NpyTest, RoundTripsShapesAndTypes) {
  for (llvm::SmallVector<int64_t> shape :
       {llvm::SmallVector<int64_t>{}, {5}, {2, 3}, {2, 0, 4}}) {
    NpyArray array{NpyDType::I64, shape, {}};
    array.data.resize(array.numElements() * 8, '\x05');
    std::string bytes = serializeNpy(array);
    EXPECT_EQ(bytes.size() % 64, array.data.size() % 64);
    llvm::Expected<NpyArray> read = parseNpy(bytes, "a.npy");
    ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
    EXPECT_EQ(read->dtype, NpyDType::I64);
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
  EXPECT_EQ(read->dtype, NpyDType::F32);
  EXPECT_EQ(read->shape, llvm::SmallVector<int64_t>({2}));
}

TEST(NpyTest, RejectsTruncatedAndUnsupported) {
  NpyArray array{NpyDType::F32, {4}, std::vector<char>(16)};
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

} // namespace
