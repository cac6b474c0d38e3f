//===- DcpTest.cpp - DCP metadata, tiling, boxes, directories -------------===//

#include "CheckpointTestUtil.h"
#include "titan/Checkpoint/Dcp.h"
#include "titan/Checkpoint/Pickle.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cstring>
#include <numeric>

using namespace mlir::titan;
using namespace mlir::titan::test;

namespace {

TEST(DcpTest, IntersectsBoxes) {
  std::optional<IndexBox> both =
      intersectBoxes(box({0, 2}, {4, 4}), box({2, 0}, {4, 3}));
  ASSERT_TRUE(both);
  EXPECT_EQ(*both, box({2, 2}, {2, 1}));
  EXPECT_FALSE(intersectBoxes(box({0}, {2}), box({2}, {2})));
  EXPECT_TRUE(intersectBoxes(box({}, {}), box({}, {})));
}

TEST(DcpTest, ValidatesTiling) {
  EXPECT_FALSE(bool(validateTiling(
      "w", {4, 6},
      {box({0, 0}, {2, 6}), box({2, 0}, {2, 3}), box({2, 3}, {2, 3})})));
  std::string gap = errorOf(validateTiling("w", {4, 6}, {box({0, 0}, {2, 6})}));
  EXPECT_NE(gap.find("'w'"), std::string::npos);
  EXPECT_NE(gap.find("gap, e.g. element [2, 0]"), std::string::npos) << gap;
  std::string hole = errorOf(validateTiling(
      "w", {4, 6},
      {box({0, 0}, {4, 2}), box({0, 2}, {1, 4}), box({2, 2}, {2, 4})}));
  EXPECT_NE(hole.find("element [1, 2]"), std::string::npos) << hole;
  std::string overlap =
      errorOf(validateTiling("w", {4}, {box({0}, {3}), box({2}, {2})}));
  EXPECT_NE(overlap.find("overlap"), std::string::npos);
  std::string bounds = errorOf(validateTiling("w", {4}, {box({2}, {3})}));
  EXPECT_NE(bounds.find("out of bounds"), std::string::npos);
  EXPECT_FALSE(bool(validateTiling("s", {}, {box({}, {})})));
  std::string scalars =
      errorOf(validateTiling("s", {}, {box({}, {}), box({}, {})}));
  EXPECT_NE(scalars.find("overlap"), std::string::npos) << scalars;
}

DcpMetadata sampleMetadata();

TEST(DcpTest, ValidatesTilingWithoutOverflow) {
  // offset + size wraps negative: still out of bounds.
  std::string wraps =
      errorOf(validateTiling("w", {4}, {box({INT64_MAX}, {1})}));
  EXPECT_NE(wraps.find("out of bounds"), std::string::npos) << wraps;
  std::string count = errorOf(
      validateTiling("w", {INT64_MAX, 2}, {box({0, 0}, {INT64_MAX, 2})}));
  EXPECT_NE(count.find("more than 2^63-1 elements"), std::string::npos)
      << count;
  std::string negative = errorOf(validateTiling("w", {0, -5}, {}));
  EXPECT_NE(negative.find("a dimension is negative"), std::string::npos)
      << negative;
}

TEST(DcpTest, DecodeRefusesNegativeSizesAndNamesComplexDTypes) {
  DcpMetadata negative;
  negative.tensors["w"].size = {0, -5};
  llvm::Expected<DcpMetadata> decoded = decodeDcpMetadata(
      encodeDcpMetadata(negative, DcpFlavor::Torch2), "n/.metadata");
  std::string message = errorOf(decoded.takeError());
  EXPECT_NE(message.find("'n/.metadata': tensor 'w' has size [0, -5] with a "
                         "negative dimension"),
            std::string::npos)
      << message;

  // torch.complex64 in place of torch.bfloat16 (GLOBAL names are lines).
  std::string pickle = encodeDcpMetadata(sampleMetadata(), DcpFlavor::Torch113);
  size_t at = pickle.find("torch\nbfloat16\n");
  ASSERT_NE(at, std::string::npos);
  pickle.replace(at, 15, "torch\ncomplex64\n");
  message = errorOf(decodeDcpMetadata(pickle, "c/.metadata").takeError());
  EXPECT_NE(message.find("tensor 'layers.0.w': complex64 is not supported"),
            std::string::npos)
      << message;
}

TEST(DcpTest, FindsOverlapsAmongManyChunks) {
  // 64 x 8 grid of [2, 4] chunks of a [128, 32] tensor, as FSDP 64 x TP 8
  // saves a weight; then one chunk moved onto its neighbour along dim 1 (the
  // dim with fewer distinct offsets), which a sweep along dim 0 must find.
  std::vector<IndexBox> grid;
  for (int64_t row = 0; row < 64; ++row)
    for (int64_t column = 0; column < 8; ++column)
      grid.push_back(box({2 * row, 4 * column}, {2, 4}));
  EXPECT_FALSE(bool(validateTiling("w", {128, 32}, grid)));
  grid[8 * 40 + 3] = box({80, 14}, {2, 4});
  std::string overlap = errorOf(validateTiling("w", {128, 32}, grid));
  EXPECT_NE(overlap.find("chunks offsets [80, 14] sizes [2, 4] and offsets "
                         "[80, 16] sizes [2, 4] overlap"),
            std::string::npos)
      << overlap;

  // 200,000 chunks of one row each: found without comparing every pair.
  std::vector<IndexBox> rows;
  for (int64_t row = 0; row < 200000; ++row)
    rows.push_back(box({0, row}, {3, 1}));
  EXPECT_FALSE(bool(validateTiling("w", {3, 200000}, rows)));
  rows.back() = box({0, 0}, {3, 1});
  EXPECT_NE(errorOf(validateTiling("w", {3, 200000}, rows)).find("overlap"),
            std::string::npos);
}

DcpMetadata sampleMetadata() {
  DcpMetadata metadata;
  DcpTensorMetadata &w = metadata.tensors["layers.0.w"];
  w.dtype = ElementType::BF16;
  w.requiresGrad = true;
  w.size = {4, 6};
  w.chunks = {box({0, 0}, {2, 6}), box({2, 0}, {2, 6})};
  metadata.storage[{"layers.0.w", {0, 0}}] = {"__0_0.distcp", 0, 100};
  metadata.storage[{"layers.0.w", {2, 0}}] = {"__1_0.distcp", 0, 100};
  metadata.bytesEntries = {"train_state"};
  metadata.storage[{"train_state", {}}] = {"__0_0.distcp", 100, 5};
  return metadata;
}

TEST(DcpTest, MetadataRoundTripsInBothFlavors) {
  for (DcpFlavor flavor : {DcpFlavor::Torch2, DcpFlavor::Torch113}) {
    std::string bytes = encodeDcpMetadata(sampleMetadata(), flavor);
    llvm::StringRef module = flavor == DcpFlavor::Torch2
                                 ? "torch.distributed.checkpoint.metadata\n"
                                 : "torch.distributed._shard.checkpoint."
                                   "metadata\n";
    EXPECT_TRUE(llvm::StringRef(bytes).contains(module));
    llvm::Expected<DcpMetadata> read = decodeDcpMetadata(bytes, "m");
    ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
    const DcpTensorMetadata &w = read->tensors.at("layers.0.w");
    EXPECT_EQ(w.dtype, ElementType::BF16);
    EXPECT_TRUE(w.requiresGrad);
    EXPECT_EQ(w.size, llvm::SmallVector<int64_t>({4, 6}));
    EXPECT_EQ(w.chunks, sampleMetadata().tensors.at("layers.0.w").chunks);
    EXPECT_EQ(read->bytesEntries, std::vector<std::string>{"train_state"});
    ASSERT_EQ(read->storage.size(), 3u);
    const DcpStorageInfo &info = read->storage.at({"train_state", {}});
    EXPECT_EQ(info.relativePath, "__0_0.distcp");
    EXPECT_EQ(info.offset, 100u);
    EXPECT_EQ(info.length, 5u);
  }
}

class DcpDirectoryTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("titan-dcp", root));
    dir = path("ckpt");
  }
  void TearDown() override { llvm::sys::fs::remove_directories(root); }
  std::string path(llvm::StringRef name) {
    llvm::SmallString<256> result(root);
    llvm::sys::path::append(result, name);
    return std::string(result);
  }
  /// A 4x6 float32 tensor with value i at linear index i.
  static DenseTensor iota() {
    DenseTensor tensor{ElementType::F32, {4, 6}, {}};
    std::vector<float> values(24);
    std::iota(values.begin(), values.end(), 0.0f);
    tensor.data.resize(sizeof(float) * 24);
    std::memcpy(tensor.data.data(), values.data(), tensor.data.size());
    return tensor;
  }
  /// The chunk `region` of iota(), saved as tensor "w" straight from it.
  static DcpTensorChunk chunk(const IndexBox &region) {
    static const DenseTensor whole = iota();
    return {"w", whole.shape, region, whole, box({0, 0}, {4, 6})};
  }
  /// Two ranks, each saving a block of columns of iota().
  static std::vector<DcpRankData> columnSplit() {
    return {{0, {chunk(box({0, 0}, {4, 2}))}, {}},
            {1, {chunk(box({0, 2}, {4, 4}))}, {}}};
  }

  llvm::SmallString<128> root;
  std::string dir;
};

TEST_F(DcpDirectoryTest, ReadsAnyBoxAfterWriting) {
  std::vector<DcpRankData> ranks = columnSplit();
  ranks[0].bytesEntries.push_back({"step", "abc"});
  ASSERT_FALSE(bool(writeDcpCheckpoint(dir, ranks, DcpFlavor::Torch2)));
  EXPECT_TRUE(llvm::sys::fs::exists(path("ckpt/__0_0.distcp")));
  EXPECT_TRUE(llvm::sys::fs::exists(path("ckpt/__1_0.distcp")));
  EXPECT_FALSE(llvm::sys::fs::exists(path("ckpt/.metadata.tmp")));
  llvm::Expected<DcpReader> reader = DcpReader::open(dir);
  ASSERT_TRUE(bool(reader)) << llvm::toString(reader.takeError());
  // A row box crossing both saved chunks (resharded load).
  llvm::Expected<DenseTensor> rows = reader->readBox("w", box({1, 1}, {2, 4}));
  ASSERT_TRUE(bool(rows)) << llvm::toString(rows.takeError());
  std::vector<float> values(8);
  std::memcpy(values.data(), rows->data.data(), 32);
  EXPECT_EQ(values, std::vector<float>({7, 8, 9, 10, 13, 14, 15, 16}));
  llvm::Expected<DenseTensor> whole = reader->readTensor("w");
  ASSERT_TRUE(bool(whole));
  EXPECT_EQ(whole->data, iota().data);
  llvm::Expected<std::string> step = reader->readBytes("step");
  ASSERT_TRUE(bool(step));
  EXPECT_EQ(*step, "abc");
}

TEST_F(DcpDirectoryTest, RefusesBadTilingAndWritesNothing) {
  std::vector<DcpRankData> ranks = {{0, {chunk(box({0, 0}, {4, 2}))}, {}}};
  std::string gap = errorOf(writeDcpCheckpoint(dir, ranks, DcpFlavor::Torch2));
  EXPECT_NE(gap.find("gap"), std::string::npos);
  ranks.push_back({1, {chunk(box({0, 1}, {4, 5}))}, {}});
  std::string overlap =
      errorOf(writeDcpCheckpoint(dir, ranks, DcpFlavor::Torch2));
  EXPECT_NE(overlap.find("overlap"), std::string::npos);
  ranks = columnSplit();
  DenseTensor truncated = iota();
  truncated.data.pop_back();
  ranks[1].chunks[0].source = truncated;
  std::string size = errorOf(writeDcpCheckpoint(dir, ranks, DcpFlavor::Torch2));
  EXPECT_NE(size.find("its source has 95 bytes of data, its shape needs 96"),
            std::string::npos)
      << size;
  ranks = columnSplit();
  ranks[1].chunks[0].box = box({0, 2}, {4, 5});
  std::string outside =
      errorOf(writeDcpCheckpoint(dir, ranks, DcpFlavor::Torch2));
  EXPECT_NE(outside.find("its source of shape [4, 6] does not hold it"),
            std::string::npos)
      << outside;
  EXPECT_FALSE(llvm::sys::fs::exists(dir));
}

TEST_F(DcpDirectoryTest, WritesRankByRankThenMetadata) {
  // A distributed save: each rank writes its file and returns its piece of
  // the metadata; the coordinator merges the pieces and writes .metadata
  // last.
  ASSERT_FALSE(llvm::sys::fs::create_directories(dir));
  DcpMetadata metadata;
  DcpTensorMetadata &w = metadata.tensors["w"];
  w.size = {4, 6};
  w.chunks = {box({0, 0}, {4, 2}), box({0, 2}, {4, 4})};
  std::string refused =
      errorOf(writeDcpMetadata(dir, metadata, DcpFlavor::Torch2));
  EXPECT_NE(refused.find("has no storage entry"), std::string::npos) << refused;
  EXPECT_FALSE(llvm::sys::fs::exists(path("ckpt/.metadata")));
  std::vector<DcpMetadata> pieces;
  for (const DcpRankData &rank : columnSplit()) {
    llvm::Expected<DcpMetadata> piece = writeDcpRankData(dir, rank);
    ASSERT_TRUE(bool(piece)) << llvm::toString(piece.takeError());
    pieces.push_back(std::move(*piece));
  }
  // Without rank 1's piece the chunks leave a gap: nothing is committed.
  std::string gap =
      errorOf(commitDcpCheckpoint(dir, pieces[0], DcpFlavor::Torch2));
  EXPECT_NE(gap.find("a gap"), std::string::npos) << gap;
  EXPECT_FALSE(llvm::sys::fs::exists(path("ckpt/.metadata")));
  ASSERT_FALSE(bool(commitDcpCheckpoint(dir, pieces, DcpFlavor::Torch2)));
  llvm::Expected<DcpReader> reader = DcpReader::open(dir);
  ASSERT_TRUE(bool(reader)) << llvm::toString(reader.takeError());
  llvm::Expected<DenseTensor> whole = reader->readTensor("w");
  ASSERT_TRUE(bool(whole)) << llvm::toString(whole.takeError());
  EXPECT_EQ(whole->data, iota().data);
}

TEST_F(DcpDirectoryTest, OverwritingKeepsTheOldCheckpointUntilTheCommit) {
  // A checkpoint of one rank holding all of iota() ...
  std::vector<DcpRankData> whole = {{0, {chunk(box({0, 0}, {4, 6}))}, {}}};
  ASSERT_FALSE(bool(writeDcpCheckpoint(dir, whole, DcpFlavor::Torch2)));
  auto oldMetadata = llvm::MemoryBuffer::getFile(path("ckpt/.metadata"));
  ASSERT_TRUE(bool(oldMetadata));
  // ... is overwritten by two ranks. Until the commit, the data goes to
  // fresh files and the old checkpoint still loads, .metadata unchanged.
  std::vector<DcpMetadata> pieces;
  for (const DcpRankData &rank : columnSplit()) {
    llvm::Expected<DcpMetadata> piece = writeDcpRankData(dir, rank);
    ASSERT_TRUE(bool(piece)) << llvm::toString(piece.takeError());
    pieces.push_back(std::move(*piece));
  }
  EXPECT_TRUE(llvm::sys::fs::exists(path("ckpt/__0_1.distcp")));
  EXPECT_TRUE(llvm::sys::fs::exists(path("ckpt/__1_0.distcp")));
  auto metadata = llvm::MemoryBuffer::getFile(path("ckpt/.metadata"));
  ASSERT_TRUE(bool(metadata));
  EXPECT_EQ((*metadata)->getBuffer(), (*oldMetadata)->getBuffer());
  llvm::Expected<DcpReader> old = DcpReader::open(dir);
  ASSERT_TRUE(bool(old)) << llvm::toString(old.takeError());
  llvm::Expected<DenseTensor> oldData = old->readTensor("w");
  ASSERT_TRUE(bool(oldData)) << llvm::toString(oldData.takeError());
  EXPECT_EQ(oldData->data, iota().data);
  // The commit switches to the new files and removes the old one, and
  // nothing it does not own: a stray file of the user's stays.
  ASSERT_FALSE(bool(llvm::sys::fs::create_directories(path("ckpt/notes"))));
  ASSERT_FALSE(bool(commitDcpCheckpoint(dir, pieces, DcpFlavor::Torch2)));
  EXPECT_FALSE(llvm::sys::fs::exists(path("ckpt/__0_0.distcp")));
  EXPECT_TRUE(llvm::sys::fs::exists(path("ckpt/notes")));
  llvm::Expected<DcpReader> reader = DcpReader::open(dir);
  ASSERT_TRUE(bool(reader)) << llvm::toString(reader.takeError());
  llvm::Expected<DenseTensor> data = reader->readTensor("w");
  ASSERT_TRUE(bool(data)) << llvm::toString(data.takeError());
  EXPECT_EQ(data->data, iota().data);
  EXPECT_EQ(reader->getMetadata().storage.begin()->second.relativePath,
            "__0_1.distcp");
}

TEST_F(DcpDirectoryTest, SeparateRankProcessesThenFinish) {
  // Ranks saving in their own processes leave their pieces in results
  // files; finishing needs all of them and equals a one-process save.
  ASSERT_FALSE(llvm::sys::fs::create_directories(dir));
  std::vector<DcpRankData> ranks = columnSplit();
  ASSERT_FALSE(bool(saveDcpRank(dir, ranks[0])));
  EXPECT_FALSE(llvm::sys::fs::exists(path("ckpt/.metadata")));
  std::string missing = errorOf(finishDcpSave(dir, 2, DcpFlavor::Torch2));
  EXPECT_NE(missing.find("rank 1 has not finished its part of the save"),
            std::string::npos)
      << missing;
  EXPECT_NE(missing.find("__1.results' is missing"), std::string::npos)
      << missing;
  EXPECT_FALSE(llvm::sys::fs::exists(path("ckpt/.metadata")));
  ASSERT_FALSE(bool(saveDcpRank(dir, ranks[1])));
  ASSERT_FALSE(bool(finishDcpSave(dir, 2, DcpFlavor::Torch2)));
  EXPECT_FALSE(llvm::sys::fs::exists(path("ckpt/__0.results")));
  auto separate = llvm::MemoryBuffer::getFile(path("ckpt/.metadata"));
  ASSERT_TRUE(bool(separate));

  std::string oneProcess = path("one");
  ASSERT_FALSE(bool(writeDcpCheckpoint(oneProcess, ranks, DcpFlavor::Torch2)));
  auto expected = llvm::MemoryBuffer::getFile(oneProcess + "/.metadata");
  ASSERT_TRUE(bool(expected));
  EXPECT_EQ((*separate)->getBuffer(), (*expected)->getBuffer());
}

TEST_F(DcpDirectoryTest, RefusesCheckpointMissingADataFile) {
  ASSERT_FALSE(bool(writeDcpCheckpoint(dir, columnSplit(), DcpFlavor::Torch2)));
  ASSERT_FALSE(llvm::sys::fs::remove(path("ckpt/__1_0.distcp")));
  std::string message = errorOf(DcpReader::open(dir).takeError());
  EXPECT_NE(message.find("__1_0.distcp' is missing"), std::string::npos)
      << message;
  EXPECT_NE(message.find("the checkpoint is incomplete"), std::string::npos)
      << message;
}

TEST_F(DcpDirectoryTest, StreamsChunksLargerThanTheBuffers) {
  // 3000x1100 float32 (13.2 MB, more than the 8 MiB write and read
  // buffers), saved as column blocks (not contiguous in the source) and a
  // row block (contiguous), read back whole, as a box across the blocks and
  // into a row block of the target (read straight into it).
  DenseTensor big{ElementType::F32, {3000, 1100}, {}};
  big.data.resize(3000 * 1100 * sizeof(float));
  for (size_t i = 0; i < big.data.size(); ++i)
    big.data[i] = char(i * 7 + i / 4093);
  IndexBox whole = box({0, 0}, {3000, 1100});
  std::vector<DcpRankData> ranks = {
      {0, {{"big", big.shape, box({0, 0}, {2000, 500}), big, whole}}, {}},
      {1, {{"big", big.shape, box({0, 500}, {2000, 600}), big, whole}}, {}},
      {2, {{"big", big.shape, box({2000, 0}, {1000, 1100}), big, whole}}, {}}};
  ASSERT_FALSE(bool(writeDcpCheckpoint(dir, ranks, DcpFlavor::Torch2)));
  llvm::Expected<DcpReader> reader = DcpReader::open(dir);
  ASSERT_TRUE(bool(reader)) << llvm::toString(reader.takeError());
  llvm::Expected<DenseTensor> back = reader->readTensor("big");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_TRUE(back->data == big.data);
  IndexBox across = box({1500, 400}, {1000, 300});
  llvm::Expected<DenseTensor> part = reader->readBox("big", across);
  ASSERT_TRUE(bool(part)) << llvm::toString(part.takeError());
  DenseTensor expected{ElementType::F32, across.sizes,
                       std::vector<char>(part->data.size())};
  copyRegion(big, whole, expected, across, across);
  EXPECT_TRUE(part->data == expected.data);
  IndexBox rows = box({2000, 0}, {1000, 1100});
  DenseTensor target{ElementType::F32, rows.sizes,
                     std::vector<char>(rows.numElements() * sizeof(float))};
  ASSERT_FALSE(bool(reader->readBoxInto("big", rows, target)));
  expected.shape = rows.sizes;
  expected.data.resize(target.data.size());
  copyRegion(big, whole, expected, rows, rows);
  EXPECT_TRUE(target.data == expected.data);
  std::string wrong = errorOf(reader->readBoxInto("big", across, target));
  EXPECT_NE(wrong.find("it cannot be read into a float32 [1000, 1100]"),
            std::string::npos)
      << wrong;
}

TEST_F(DcpDirectoryTest, ReportsCorruptedChunkData) {
  ASSERT_FALSE(bool(writeDcpCheckpoint(dir, columnSplit(), DcpFlavor::Torch2)));
  llvm::Expected<DcpReader> reader = DcpReader::open(dir);
  ASSERT_TRUE(bool(reader));
  // Flip a byte of the data of rank 1's chunk, which is read with preads.
  const DcpStorageInfo &info = reader->getMetadata().storage.at({"w", {0, 2}});
  std::string file = path("ckpt/__1_0.distcp");
  auto contents = llvm::MemoryBuffer::getFile(file);
  ASSERT_TRUE(bool(contents));
  std::string bytes = (*contents)->getBuffer().str();
  contents->reset();
  llvm::StringRef blob =
      llvm::StringRef(bytes).substr(info.offset, info.length);
  llvm::Expected<TorchSaveArchive> archive = readTorchSave(blob, "blob");
  ASSERT_TRUE(bool(archive));
  bytes[archive->find("data/0")->data.data() - bytes.data()] ^= 1;
  std::error_code ec;
  llvm::raw_fd_ostream os(file, ec);
  ASSERT_FALSE(ec);
  os << bytes;
  os.close();
  std::string message = errorOf(reader->readTensor("w").takeError());
  EXPECT_NE(message.find("CRC-32 mismatch in entry 'archive/data/0' "
                         "(corrupted file)"),
            std::string::npos)
      << message;
}

TEST_F(DcpDirectoryTest, ReportsMissingMetadata) {
  ASSERT_FALSE(llvm::sys::fs::create_directories(dir));
  llvm::Expected<DcpReader> reader = DcpReader::open(dir);
  std::string message = errorOf(reader.takeError());
  EXPECT_NE(message.find(".metadata"), std::string::npos);
}

TEST_F(DcpDirectoryTest, ReportsTruncatedDataFile) {
  ASSERT_FALSE(
      bool(writeDcpCheckpoint(dir, columnSplit(), DcpFlavor::Torch113)));
  std::string file = path("ckpt/__1_0.distcp");
  auto contents = llvm::MemoryBuffer::getFile(file);
  ASSERT_TRUE(bool(contents));
  std::string kept = (*contents)->getBuffer().drop_back(7).str();
  contents->reset();
  std::error_code ec;
  llvm::raw_fd_ostream os(file, ec);
  ASSERT_FALSE(ec);
  os << kept;
  os.close();

  // Opening refuses the checkpoint before any tensor is read.
  std::string message = errorOf(DcpReader::open(dir).takeError());
  EXPECT_NE(message.find("__1_0.distcp' is truncated"), std::string::npos)
      << message;
}

TEST_F(DcpDirectoryTest, ReportsShapeMismatchBetweenMetadataAndBlob) {
  ASSERT_FALSE(bool(writeDcpCheckpoint(dir, columnSplit(), DcpFlavor::Torch2)));
  // Rewrite .metadata so that it claims different chunk sizes for the same
  // blobs (same tiling, shifted boundary).
  llvm::Expected<DcpReader> reader = DcpReader::open(dir);
  ASSERT_TRUE(bool(reader));
  DcpMetadata metadata = reader->getMetadata();
  DcpTensorMetadata &w = metadata.tensors.at("w");
  w.chunks = {box({0, 0}, {4, 3}), box({0, 3}, {4, 3})};
  DcpStorageInfo second = metadata.storage.at({"w", {0, 2}});
  metadata.storage.erase({"w", {0, 2}});
  metadata.storage[{"w", {0, 3}}] = second;
  std::error_code ec;
  llvm::raw_fd_ostream os(path("ckpt/.metadata"), ec);
  ASSERT_FALSE(ec);
  os << encodeDcpMetadata(metadata, DcpFlavor::Torch2);
  os.close();
  reader = DcpReader::open(dir);
  ASSERT_TRUE(bool(reader));
  std::string message = errorOf(reader->readTensor("w").takeError());
  EXPECT_NE(message.find("shape mismatch"), std::string::npos) << message;
}

TEST_F(DcpDirectoryTest, RefusesMetadataWithForeignGlobals) {
  ASSERT_FALSE(llvm::sys::fs::create_directories(dir));
  std::error_code ec;
  llvm::raw_fd_ostream os(path("ckpt/.metadata"), ec);
  ASSERT_FALSE(ec);
  os << "\x80\x02"
        "cos\nsystem\nX\x02\x00\x00\x00id\x85R.";
  os.close();
  std::string message = errorOf(DcpReader::open(dir).takeError());
  EXPECT_NE(message.find("'os.system'"), std::string::npos) << message;
  EXPECT_NE(message.find(".metadata"), std::string::npos) << message;
}

/// Rewrites the .metadata of the checkpoint in `dir` with `metadata`.
void rewriteMetadata(llvm::StringRef dir, const DcpMetadata &metadata) {
  llvm::SmallString<128> file(dir);
  llvm::sys::path::append(file, ".metadata");
  std::error_code ec;
  llvm::raw_fd_ostream os(file, ec);
  ASSERT_FALSE(ec);
  os << encodeDcpMetadata(metadata, DcpFlavor::Torch2);
}

TEST_F(DcpDirectoryTest, RefusesSizesTheDataFilesDoNotHold) {
  ASSERT_FALSE(bool(writeDcpCheckpoint(dir, columnSplit(), DcpFlavor::Torch2)));
  llvm::Expected<DcpReader> reader = DcpReader::open(dir);
  ASSERT_TRUE(bool(reader));
  const DcpMetadata saved = reader->getMetadata();

  // The same chunks grown to [1e10, ...] rows: a consistent tiling whose
  // data would need 240 GB, refused on open, before anything is allocated.
  DcpMetadata huge = saved;
  DcpTensorMetadata &w = huge.tensors.at("w");
  w.size = {10000000000, 6};
  w.chunks = {box({0, 0}, {10000000000, 2}), box({0, 2}, {10000000000, 4})};
  rewriteMetadata(dir, huge);
  std::string message = errorOf(DcpReader::open(dir).takeError());
  EXPECT_NE(message.find(".metadata': tensor 'w' chunk offsets [0, 0] sizes "
                         "[10000000000, 2] needs 80000000000 bytes"),
            std::string::npos)
      << message;

  // Element counts that fit but byte counts that wrap: 4 * 2 * (2^61 + 1)
  // bytes are 8 mod 2^64.
  DcpMetadata wraps = saved;
  DcpTensorMetadata &v = wraps.tensors.at("w");
  int64_t rows = (int64_t(1) << 61) + 1;
  v.size = {rows, 3};
  v.chunks = {box({0, 0}, {rows, 2}), box({0, 2}, {rows, 1})};
  rewriteMetadata(dir, wraps);
  message = errorOf(DcpReader::open(dir).takeError());
  EXPECT_NE(message.find("needs 2^63 or more bytes"), std::string::npos)
      << message;

  // A requested box far out of bounds is refused before it is allocated.
  rewriteMetadata(dir, saved);
  reader = DcpReader::open(dir);
  ASSERT_TRUE(bool(reader)) << llvm::toString(reader.takeError());
  message =
      errorOf(reader->readBox("w", box({0, 0}, {INT64_MAX, 6})).takeError());
  EXPECT_NE(message.find("out of bounds"), std::string::npos) << message;
  message =
      errorOf(reader->readBox("w", box({INT64_MAX, 0}, {1, 6})).takeError());
  EXPECT_NE(message.find("out of bounds"), std::string::npos) << message;
}

} // namespace
