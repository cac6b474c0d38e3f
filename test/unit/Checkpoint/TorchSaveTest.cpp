//===- TorchSaveTest.cpp - torch.save archives and zip --------------------===//

#include "titan/Checkpoint/TorchSave.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace mlir::titan;

namespace {

TEST(TorchSaveTest, ZipRoundTripAlignsData) {
  std::vector<ZipEntry> entries = {{"a/data.pkl", "xyz"},
                                   {"a/data/0", std::string(100, '\x07')},
                                   {"a/version", "3\n"}};
  // The default writes 32-bit records; threshold 0 forces every zip64 record
  // (sizes, offsets, end of central directory), as a 4 GiB entry would.
  for (uint64_t threshold : {kZip64Limit, uint64_t(0)}) {
    std::string zip = writeStoredZip(entries, threshold);
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
  std::string zip = writeStoredZip({{"a/data/0", std::string(64, 'x')}});
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
  for (TorchDType dtype :
       {TorchDType::Float32, TorchDType::Float64, TorchDType::Float16,
        TorchDType::BFloat16, TorchDType::Int64, TorchDType::Int32}) {
    DenseTensor tensor{dtype, {2, 3}, {}};
    tensor.data.resize(6 * torchDTypeSize(dtype));
    for (size_t i = 0; i < tensor.data.size(); ++i)
      tensor.data[i] = char(i * 7);
    llvm::Expected<std::string> blob = writeTorchSaveTensor(tensor);
    ASSERT_TRUE(bool(blob)) << llvm::toString(blob.takeError());
    llvm::Expected<DenseTensor> read = readTorchSaveTensor(*blob, "blob");
    ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
    EXPECT_EQ(read->dtype, dtype);
    EXPECT_EQ(read->shape, tensor.shape);
    EXPECT_EQ(read->data, tensor.data);
  }
}

TEST(TorchSaveTest, RejectsWrongDataSize) {
  DenseTensor tensor{TorchDType::Float32, {4}, std::vector<char>(12)};
  llvm::Expected<std::string> blob = writeTorchSaveTensor(tensor);
  ASSERT_FALSE(bool(blob));
  EXPECT_NE(llvm::toString(blob.takeError()).find("16"), std::string::npos);
}

} // namespace
