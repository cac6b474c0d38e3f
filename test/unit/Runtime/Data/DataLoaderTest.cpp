//===- DataLoaderTest.cpp - the data loader's windows and files -----------===//

#include "data/DataLoader.h"
#include "data/Tokenizer.h"

#include "titan/Support/Npy.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <numeric>
#include <set>

using namespace titan::rt;

namespace {

/// A temporary folder removed at the end of a test.
class DataLoaderTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("titan-data", folder));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(folder); }

  std::string write(llvm::StringRef name, llvm::StringRef bytes) {
    llvm::SmallString<256> path(folder);
    llvm::sys::path::append(path, name);
    std::error_code error;
    llvm::raw_fd_ostream os(path, error);
    EXPECT_FALSE(error);
    os << bytes;
    return std::string(path);
  }

  llvm::SmallString<256> folder;
};

std::vector<int32_t> iota(int32_t count) {
  std::vector<int32_t> ids(count);
  std::iota(ids.begin(), ids.end(), 0);
  return ids;
}

TEST_F(DataLoaderTest, WindowsArePackedWithoutOverlap) {
  TokenStream stream = TokenStream::fromIds(iota(100));
  BatchWindows windows(stream, /*batch=*/3, /*seqLen=*/4);
  std::vector<int64_t> tokens(12), labels(12);
  windows.read(0, 0, 3, tokens, labels);
  // Row b is the window at b * (seq_len + 1): tokens its first four ids,
  // labels its last four.
  EXPECT_EQ(tokens, (std::vector<int64_t>{0, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12,
                                          13}));
  EXPECT_EQ(labels, (std::vector<int64_t>{1, 2, 3, 4, 6, 7, 8, 9, 11, 12, 13,
                                          14}));
  EXPECT_EQ(windows.next(0), 15);
  // A rank reading rows 1..2 reads what the global batch holds there.
  std::vector<int64_t> part(8), partLabels(8);
  windows.read(15, 1, 2, part, partLabels);
  EXPECT_EQ(part, (std::vector<int64_t>{20, 21, 22, 23, 25, 26, 27, 28}));
}

TEST_F(DataLoaderTest, TheStreamStartsAgainAfterItsEnd) {
  TokenStream stream = TokenStream::fromIds(iota(12));
  BatchWindows windows(stream, 2, 4);
  std::vector<int64_t> tokens(8), labels(8);
  windows.read(10, 0, 2, tokens, labels);
  EXPECT_EQ(tokens, (std::vector<int64_t>{10, 11, 0, 1, 3, 4, 5, 6}));
  EXPECT_EQ(labels, (std::vector<int64_t>{11, 0, 1, 2, 4, 5, 6, 7}));
  EXPECT_EQ(windows.epochOf(10), 0);
  EXPECT_EQ(windows.epochOf(windows.next(10)), 1);
}

TEST_F(DataLoaderTest, DataParallelRanksReadEachWindowOnce) {
  // 4 data-parallel ranks, 2 rows each, over one epoch of 64 windows: every
  // window is read by exactly one rank.
  int64_t seqLen = 7, ranks = 4, rowsPerRank = 2;
  TokenStream stream = TokenStream::fromIds(iota(64 * (seqLen + 1)));
  BatchWindows windows(stream, ranks * rowsPerRank, seqLen);
  std::multiset<int64_t> starts;
  int64_t position = 0;
  for (int step = 0; step < 8; ++step) {
    for (int64_t rank = 0; rank < ranks; ++rank) {
      std::vector<int64_t> tokens(rowsPerRank * seqLen),
          labels(rowsPerRank * seqLen);
      windows.read(position, rank * rowsPerRank, rowsPerRank, tokens, labels);
      for (int64_t row = 0; row < rowsPerRank; ++row)
        starts.insert(tokens[row * seqLen]);
    }
    position = windows.next(position);
  }
  EXPECT_EQ(starts.size(), 64u);
  EXPECT_EQ(std::set<int64_t>(starts.begin(), starts.end()).size(), 64u);
  EXPECT_EQ(windows.epochOf(position), 1);
}

TEST_F(DataLoaderTest, TextDocumentsAreBosBytesEos) {
  std::string path = write("corpus.txt", "hi!");
  ByteTokenizer bytes;
  TokenStream stream;
  ASSERT_TRUE(TokenStream::open(path, bytes, 2048, stream).ok());
  ASSERT_EQ(stream.size(), 5);
  EXPECT_EQ(stream.at(0), ByteTokenizer::kBos);
  EXPECT_EQ(stream.at(1), 'h');
  EXPECT_EQ(stream.at(3), '!');
  EXPECT_EQ(stream.at(4), ByteTokenizer::kEos);
}

TEST_F(DataLoaderTest, JsonLinesHoldOneDocumentEach) {
  std::string path =
      write("data.jsonl", "{\"text\": \"ab\", \"url\": \"x\"}\n\n"
                          "{\"text\": \"c\"}\n");
  ByteTokenizer bytes;
  TokenStream stream;
  ASSERT_TRUE(TokenStream::open(path, bytes, 2048, stream).ok());
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < stream.size(); ++i)
    ids.push_back(stream.at(i));
  EXPECT_EQ(ids, (std::vector<int64_t>{256, 'a', 'b', 257, 256, 'c', 257}));
}

TEST_F(DataLoaderTest, AMalformedRecordNamesItsLine) {
  std::string path = write("bad.jsonl", "{\"text\": \"ok\"}\n{\"body\": 1}\n");
  ByteTokenizer bytes;
  TokenStream stream;
  Status status = TokenStream::open(path, bytes, 2048, stream);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.getMessage().find("bad.jsonl:2"), std::string::npos)
      << status.getMessage();
  EXPECT_NE(status.getMessage().find("\"text\" string"), std::string::npos);
}

TEST_F(DataLoaderTest, ASmallVocabularyRefusesTheByteTokenizer) {
  std::string path = write("corpus.txt", "text");
  ByteTokenizer bytes;
  TokenStream stream;
  Status status = TokenStream::open(path, bytes, 200, stream);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.getMessage().find("tokenizer_path"), std::string::npos)
      << status.getMessage();
}

TEST_F(DataLoaderTest, FlatBinFilesAreUint16ForSmallVocabularies) {
  const uint16_t ids[] = {7, 65535, 3};
  std::string path = write(
      "train.bin", llvm::StringRef(reinterpret_cast<const char *>(ids), 6));
  ByteTokenizer bytes;
  TokenStream stream;
  ASSERT_TRUE(TokenStream::open(path, bytes, 65536, stream).ok());
  ASSERT_EQ(stream.size(), 3);
  EXPECT_EQ(stream.at(1), 65535);
  // A large vocabulary reads uint32: 6 bytes are not a whole number of them.
  Status status = TokenStream::open(path, bytes, 128256, stream);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.getMessage().find("uint32"), std::string::npos)
      << status.getMessage();
}

TEST_F(DataLoaderTest, MegatronIndexesNameTheWidth) {
  const int32_t ids[] = {100000, 5};
  std::string path = write(
      "data.bin", llvm::StringRef(reinterpret_cast<const char *>(ids), 8));
  std::string header("MMIDIDX\0\0", 9);
  header += std::string("\x01\0\0\0\0\0\0\0", 8); // version 1
  header += '\x04';                              // int32
  write("data.idx", header);
  ByteTokenizer bytes;
  TokenStream stream;
  ASSERT_TRUE(TokenStream::open(path, bytes, 128256, stream).ok());
  ASSERT_EQ(stream.size(), 2);
  EXPECT_EQ(stream.at(0), 100000);
  write("data.idx", std::string("NOTANIDX0123456789"));
  EXPECT_FALSE(TokenStream::open(path, bytes, 128256, stream).ok());
}

TEST_F(DataLoaderTest, NpyFilesHoldOneDimensionalIds) {
  llvm::SmallString<256> path(folder);
  llvm::sys::path::append(path, "ids.npy");
  const int64_t ids[] = {1, 2, 3, 4};
  ASSERT_FALSE(mlir::titan::writeNpy(
      path, mlir::titan::ElementType::I64, {4},
      llvm::StringRef(reinterpret_cast<const char *>(ids), sizeof(ids))));
  ByteTokenizer bytes;
  TokenStream stream;
  ASSERT_TRUE(TokenStream::open(std::string(path), bytes, 10, stream).ok());
  EXPECT_EQ(stream.size(), 4);
  EXPECT_EQ(stream.at(3), 4);
}

TEST_F(DataLoaderTest, ADatasetShorterThanAWindowIsRefused) {
  TokenStream stream = TokenStream::fromIds(iota(4));
  BatchWindows windows(stream, 1, 4);
  Status status = windows.check();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.getMessage().find("seq_len + 1"), std::string::npos);
}

} // namespace
