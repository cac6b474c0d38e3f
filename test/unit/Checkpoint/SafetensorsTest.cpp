//===- SafetensorsTest.cpp - safetensors files and Hugging Face mappings --===//

#include "CheckpointTestUtil.h"
#include "titan/Checkpoint/Safetensors.h"
#include "titan/Checkpoint/HfMapping.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

using namespace mlir::titan;
using namespace mlir::titan::test;

namespace {

/// A safetensors file: the 8-byte length, `json` and `dataBytes` bytes of
/// data (0, 1, 2, ...).
std::string fileOf(llvm::StringRef json, size_t dataBytes) {
  std::string file(8, '\0');
  llvm::support::endian::write64le(file.data(), json.size());
  file += json.str();
  for (size_t i = 0; i < dataBytes; ++i)
    file.push_back(char(i));
  return file;
}

llvm::Expected<SafetensorsHeader> parse(llvm::StringRef json,
                                        size_t dataBytes) {
  std::string file = fileOf(json, dataBytes);
  return parseSafetensorsHeader(file, file.size(), "f.safetensors");
}

/// A fresh folder under the test's temporary directory.
std::string tempDir(llvm::StringRef name) {
  llvm::SmallString<256> path;
  llvm::sys::fs::createUniqueDirectory("titan-safetensors-" + name, path);
  return std::string(path);
}

std::vector<char> floats(llvm::ArrayRef<float> values) {
  std::vector<char> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

float floatAt(const std::vector<char> &bytes, size_t i) {
  float value;
  std::memcpy(&value, bytes.data() + i * 4, 4);
  return value;
}

uint16_t halfAt(const std::vector<char> &bytes, size_t i) {
  uint16_t value;
  std::memcpy(&value, bytes.data() + i * 2, 2);
  return value;
}

TEST(SafetensorsTest, ParsesAValidHeader) {
  llvm::Expected<SafetensorsHeader> header =
      parse(R"({"__metadata__": {"format": "pt"},
                "b": {"dtype": "BF16", "shape": [2], "data_offsets": [8, 12]},
                "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                "e": {"dtype": "F32", "shape": [0, 3], "data_offsets": [12, 12]}})",
            12);
  ASSERT_TRUE(bool(header)) << llvm::toString(header.takeError());
  ASSERT_EQ(header->tensors.size(), 3u);
  EXPECT_EQ(header->tensors[0].name, "a");
  EXPECT_EQ(header->tensors[1].name, "b");
  EXPECT_EQ(header->tensors[1].dtype, ElementType::BF16);
  EXPECT_EQ(header->tensors[1].begin, header->dataStart + 8);
  EXPECT_EQ(header->metadata.at("format"), "pt");
}

TEST(SafetensorsTest, RefusesBrokenAndHostileHeaders) {
  const char *ab =
      R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                       "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})";
  ASSERT_TRUE(bool(parse(ab, 16)));
  // Truncated: the data ends inside b, or the header runs past the file.
  std::string truncated = errorOf(parse(ab, 12));
  EXPECT_NE(truncated.find("'f.safetensors': tensor 'b'"), std::string::npos)
      << truncated;
  EXPECT_NE(truncated.find("run past the end"), std::string::npos);
  std::string file = fileOf(ab, 16);
  std::string shortHeader = errorOf(parseSafetensorsHeader(
      llvm::StringRef(file).take_front(20), 20, "f.safetensors"));
  EXPECT_NE(shortHeader.find("truncated"), std::string::npos) << shortHeader;
  EXPECT_NE(errorOf(parseSafetensorsHeader("abc", 3, "tiny"))
                .find("fewer than the 8-byte header length"),
            std::string::npos);
  // A header length larger than any header.
  std::string huge(8, '\0');
  llvm::support::endian::write64le(huge.data(), uint64_t(1) << 62);
  EXPECT_NE(errorOf(parseSafetensorsHeader(huge, huge.size(), "h"))
                .find("exceeds the limit"),
            std::string::npos);
  // Overlapping, with a gap, with trailing bytes.
  std::string overlap = errorOf(parse(
      R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
          "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
      12));
  EXPECT_NE(overlap.find("tensor 'b' overlaps tensor 'a'"), std::string::npos)
      << overlap;
  std::string gap = errorOf(parse(
      R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
          "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
      12));
  EXPECT_NE(gap.find("leaving a gap"), std::string::npos) << gap;
  EXPECT_NE(errorOf(parse(ab, 17)).find("bytes after the last tensor"),
            std::string::npos);
  // Offsets past the end, reversed, or not matching the shape.
  std::string past = errorOf(parse(
      R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 1099511627776]}})",
      8));
  EXPECT_NE(past.find("tensor 'a': data_offsets [0, 1099511627776] run past"),
            std::string::npos)
      << past;
  EXPECT_NE(errorOf(parse(R"({"a": {"dtype": "F32", "shape": [0],
                                    "data_offsets": [8, 0]}})",
                          8))
                .find("end before they begin"),
            std::string::npos);
  std::string size = errorOf(parse(
      R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 8));
  EXPECT_NE(size.find("needs 12 bytes"), std::string::npos) << size;
  std::string overflow =
      errorOf(parse(R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296],
                     "data_offsets": [0, 0]}})",
                    0));
  EXPECT_NE(overflow.find("more than 2^63-1 bytes"), std::string::npos)
      << overflow;
  // Dtypes, fields, metadata.
  std::string dtype = errorOf(parse(
      R"({"a": {"dtype": "F8_E4M3", "shape": [8], "data_offsets": [0, 8]}})",
      8));
  EXPECT_NE(dtype.find("tensor 'a': dtype 'F8_E4M3' is not supported"),
            std::string::npos)
      << dtype;
  EXPECT_NE(errorOf(parse(R"({"a": {"dtype": "F32", "shape": [1],
                                    "data_offsets": [0, 4], "x": 1}})",
                          4))
                .find("unknown field 'x'"),
            std::string::npos);
  EXPECT_NE(errorOf(parse(R"({"a": {"dtype": "F32", "shape": [-1],
                                    "data_offsets": [0, 0]}})",
                          0))
                .find("shape is not an array of non-negative"),
            std::string::npos);
  EXPECT_NE(errorOf(parse(R"({"__metadata__": {"n": 1}})", 0))
                .find("__metadata__ entry 'n' is not a string"),
            std::string::npos);
  EXPECT_NE(errorOf(parse("[]", 0)).find("does not start with '{'"),
            std::string::npos);
  EXPECT_NE(errorOf(parse("{\"a\": ", 0)).find("invalid JSON"),
            std::string::npos);
  // What llvm::json would accept silently or crash on.
  std::string duplicate = errorOf(parse(
      R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
          "\u0061": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
      8));
  EXPECT_NE(duplicate.find("the key 'a' twice"), std::string::npos)
      << duplicate;
  std::string deep =
      "{\"a\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_NE(errorOf(parse(deep, 0)).find("nests deeper than 16"),
            std::string::npos);
}

TEST(SafetensorsTest, ConvertsFloatsRoundingToNearestEven) {
  float values[] = {1.0f,
                    -2.5f,
                    1.0f + std::ldexp(1.0f, -8),     // a bf16 tie: stays 1
                    1.0f + 3 * std::ldexp(1.0f, -8), // a tie: rounds up
                    65520.0f,                        // f16: infinity
                    65504.0f,                        // f16: the largest
                    std::ldexp(1.0f, -24),           // f16: the smallest
                    std::ldexp(1.0f, -25),           // f16: a tie to 0
                    std::ldexp(3.0f, -25),           // f16: a tie to 2
                    std::numeric_limits<float>::quiet_NaN()};
  size_t n = std::size(values);
  std::vector<uint16_t> bf16(n), f16(n);
  ASSERT_TRUE(convertElements(ElementType::F32, values, ElementType::BF16,
                              bf16.data(), n));
  ASSERT_TRUE(convertElements(ElementType::F32, values, ElementType::F16,
                              f16.data(), n));
  EXPECT_EQ(bf16[0], 0x3f80);
  EXPECT_EQ(bf16[1], 0xc020);
  EXPECT_EQ(bf16[2], 0x3f80);
  EXPECT_EQ(bf16[3], 0x3f82);
  EXPECT_EQ(bf16[9] & 0x7fc0, 0x7fc0);
  EXPECT_EQ(f16[0], 0x3c00);
  EXPECT_EQ(f16[1], 0xc100);
  EXPECT_EQ(f16[4], 0x7c00);
  EXPECT_EQ(f16[5], 0x7bff);
  EXPECT_EQ(f16[6], 0x0001);
  EXPECT_EQ(f16[7], 0x0000);
  EXPECT_EQ(f16[8], 0x0002);
  EXPECT_EQ(f16[9] & 0x7e00, 0x7e00);
  // And back: every bf16 and f16 value widens exactly.
  std::vector<float> back(n);
  ASSERT_TRUE(convertElements(ElementType::F16, f16.data(), ElementType::F32,
                              back.data(), n));
  EXPECT_EQ(back[5], 65504.0f);
  EXPECT_EQ(back[6], std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(back[4]));
  EXPECT_TRUE(std::isnan(back[9]));
  ASSERT_TRUE(convertElements(ElementType::BF16, bf16.data(), ElementType::F32,
                              back.data(), n));
  EXPECT_EQ(back[1], -2.5f);
  EXPECT_EQ(back[3], 1.0f + std::ldexp(1.0f, -6));
  // Integers convert only to themselves.
  int64_t i = 3;
  float f;
  EXPECT_FALSE(convertElements(ElementType::I64, &i, ElementType::F32, &f, 1));
}

TEST(SafetensorsTest, LaysOutShardsAsHuggingFace) {
  std::vector<SafetensorsTensorSpec> specs = {
      {"small.bf16", ElementType::BF16, {3}}, // 6 bytes
      {"big", ElementType::F32, {10}},        // 40 bytes
      {"mid", ElementType::F32, {4}},         // 16 bytes
      {"last", ElementType::F32, {2}},        // 8 bytes
  };
  // One file when everything fits: no index.
  llvm::Expected<SafetensorsLayout> one = computeSafetensorsLayout(specs);
  ASSERT_TRUE(bool(one)) << llvm::toString(one.takeError());
  ASSERT_EQ(one->files.size(), 1u);
  EXPECT_EQ(one->files[0].name, "model.safetensors");
  EXPECT_FALSE(one->hasIndex());
  EXPECT_EQ(one->totalSize, 70u);
  EXPECT_EQ(one->files[0].header.size() % 8, 0u);
  // Wider elements first (alignment), then the given order.
  const auto &placed = one->tensors;
  EXPECT_LT(placed.at("big").second.begin, placed.at("mid").second.begin);
  EXPECT_LT(placed.at("last").second.begin,
            placed.at("small.bf16").second.begin);
  EXPECT_EQ(placed.at("small.bf16").second.end, one->files[0].size);

  // Shards of at most 20 bytes: big alone (larger than a shard), mid, then
  // last with small.bf16 (14 bytes).
  llvm::Expected<SafetensorsLayout> sharded =
      computeSafetensorsLayout(specs, 20);
  ASSERT_TRUE(bool(sharded));
  ASSERT_EQ(sharded->files.size(), 3u);
  EXPECT_EQ(sharded->files[0].name, "model-00001-of-00003.safetensors");
  EXPECT_EQ(sharded->files[2].name, "model-00003-of-00003.safetensors");
  EXPECT_EQ(sharded->tensors.at("big").first, 0u);
  EXPECT_EQ(sharded->tensors.at("mid").first, 1u);
  EXPECT_EQ(sharded->tensors.at("last").first, 2u);
  EXPECT_EQ(sharded->tensors.at("small.bf16").first, 2u);
  std::string index = sharded->indexJson();
  EXPECT_NE(index.find("\"total_size\": 70"), std::string::npos) << index;
  EXPECT_NE(index.find("\"mid\": \"model-00002-of-00003.safetensors\""),
            std::string::npos)
      << index;
  // Each header parses back to its layout.
  for (const SafetensorsFileLayout &file : sharded->files) {
    std::string bytes =
        file.header + std::string(file.size - file.header.size(), '\0');
    llvm::Expected<SafetensorsHeader> header =
        parseSafetensorsHeader(bytes, bytes.size(), file.name);
    ASSERT_TRUE(bool(header)) << llvm::toString(header.takeError());
    for (const SafetensorsTensorInfo &info : header->tensors) {
      EXPECT_EQ(sharded->tensors.at(info.name).second.begin, info.begin);
      EXPECT_EQ(sharded->files[sharded->tensors.at(info.name).first].name,
                file.name);
    }
  }
  // Deterministic.
  llvm::Expected<SafetensorsLayout> again = computeSafetensorsLayout(specs, 20);
  ASSERT_TRUE(bool(again));
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(again->files[i].header, sharded->files[i].header);

  EXPECT_NE(errorOf(computeSafetensorsLayout({{"a", ElementType::F32, {1}},
                                              {"a", ElementType::F32, {1}}}))
                .find("'a' is saved twice"),
            std::string::npos);
  EXPECT_NE(errorOf(computeSafetensorsLayout({{"a", ElementType::I1, {1}}}))
                .find("cannot hold"),
            std::string::npos);
}

/// Saves `specs` into `outDir` with one writer per box of `boxes` (as the
/// ranks of a distributed save would), from f32 sources holding the global
/// tensors `globals`.
void saveBoxes(llvm::StringRef outDir, const SafetensorsLayout &layout,
               const std::map<std::string, DenseTensor> &globals,
               const std::vector<std::pair<std::string, IndexBox>> &boxes,
               SafetensorsRowMap rowMap = nullptr) {
  ASSERT_FALSE(bool(prepareSafetensorsSave(outDir, layout)));
  for (const auto &[name, region] : boxes) {
    llvm::Expected<SafetensorsWriter> writer =
        SafetensorsWriter::open(outDir, layout);
    ASSERT_TRUE(bool(writer)) << llvm::toString(writer.takeError());
    const DenseTensor &global = globals.at(name);
    IndexBox whole{llvm::SmallVector<int64_t>(global.shape.size(), 0),
                   global.shape};
    llvm::Error err = writer->writeBox(name, region, global, whole, rowMap);
    ASSERT_FALSE(bool(err)) << llvm::toString(std::move(err));
    ASSERT_FALSE(bool(writer->close()));
  }
  llvm::Error err = commitSafetensorsSave(outDir, layout);
  ASSERT_FALSE(bool(err)) << llvm::toString(std::move(err));
}

DenseTensor iota(llvm::ArrayRef<int64_t> shape, float scale = 1.0f) {
  DenseTensor tensor;
  tensor.dtype = ElementType::F32;
  tensor.shape.assign(shape.begin(), shape.end());
  std::vector<float> values(tensor.numElements());
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = float(i) * scale;
  tensor.data = floats(values);
  return tensor;
}

TEST(SafetensorsTest, WritesAndReadsBoxesWithConversion) {
  std::string root = tempDir("boxes");
  std::string out = root + "/model";
  std::map<std::string, DenseTensor> globals;
  globals["w"] = iota({6, 5}, 1.0f / 3.0f);
  globals["n"] = iota({7});
  llvm::Expected<SafetensorsLayout> layout = computeSafetensorsLayout(
      {{"w", ElementType::BF16, {6, 5}}, {"n", ElementType::F32, {7}}}, 64);
  ASSERT_TRUE(bool(layout));
  ASSERT_EQ(layout->files.size(), 2u);
  // Four "ranks" write w in 2x2 boxes; two write n.
  saveBoxes(out, *layout, globals,
            {{"w", box({0, 0}, {3, 2})},
             {"w", box({0, 2}, {3, 3})},
             {"w", box({3, 0}, {3, 2})},
             {"w", box({3, 2}, {3, 3})},
             {"n", box({0}, {4})},
             {"n", box({4}, {3})}});
  EXPECT_FALSE(llvm::sys::fs::exists(safetensorsStagingDirectory(out)));
  llvm::Expected<SafetensorsReader> reader = SafetensorsReader::open(out);
  ASSERT_TRUE(bool(reader)) << llvm::toString(reader.takeError());
  ASSERT_EQ(reader->getFiles().size(), 2u);
  EXPECT_EQ(reader->lookup("w")->info.dtype, ElementType::BF16);

  // The whole of w, widened: each element the bf16 rounding of i/3.
  llvm::Expected<DenseTensor> w = reader->readTensor("w", ElementType::F32);
  ASSERT_TRUE(bool(w));
  for (int i = 0; i < 30; ++i) {
    float value = float(i) * (1.0f / 3.0f);
    uint16_t rounded;
    convertElements(ElementType::F32, &value, ElementType::BF16, &rounded, 1);
    float expected;
    convertElements(ElementType::BF16, &rounded, ElementType::F32, &expected,
                    1);
    EXPECT_EQ(floatAt(w->data, i), expected) << i;
  }
  // A box across the written boxes, read as bf16 (no conversion) and as
  // f16, into a padded target holding a larger box.
  IndexBox region = box({1, 1}, {4, 3});
  DenseTensor bf16{ElementType::BF16, {4, 3}, std::vector<char>(24)};
  ASSERT_FALSE(bool(reader->readBoxInto("w", region, bf16)));
  DenseTensor f16{ElementType::F16, {5, 4}, std::vector<char>(40)};
  ASSERT_FALSE(
      bool(reader->readBoxInto("w", region, f16, box({1, 1}, {5, 4}))));
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c) {
      float viaBf16, viaF16;
      uint16_t b = halfAt(bf16.data, r * 3 + c),
               h = halfAt(f16.data, r * 4 + c);
      convertElements(ElementType::BF16, &b, ElementType::F32, &viaBf16, 1);
      convertElements(ElementType::F16, &h, ElementType::F32, &viaF16, 1);
      EXPECT_EQ(viaBf16, floatAt(w->data, (r + 1) * 5 + c + 1));
      EXPECT_NEAR(viaF16, viaBf16, std::abs(viaBf16) * 1e-3);
    }
  // n was saved as f32: exact.
  llvm::Expected<DenseTensor> n = reader->readTensor("n");
  ASSERT_TRUE(bool(n));
  EXPECT_EQ(n->data, globals["n"].data);

  // Boxes out of bounds, targets of the wrong size, unknown tensors.
  DenseTensor small{ElementType::F32, {2}, std::vector<char>(8)};
  EXPECT_NE(errorOf(reader->readBoxInto("n", box({6}, {2}), small))
                .find("out of bounds"),
            std::string::npos);
  EXPECT_NE(errorOf(reader->readBoxInto("n", box({0}, {3}), small))
                .find("buffer has shape [2]"),
            std::string::npos);
  EXPECT_NE(errorOf(reader->readBoxInto("x", box({0}, {2}), small))
                .find("no tensor 'x'"),
            std::string::npos);
  DenseTensor ints{ElementType::I64, {2}, std::vector<char>(16)};
  EXPECT_NE(errorOf(reader->readBoxInto("n", box({0}, {2}), ints))
                .find("cannot be read as i64"),
            std::string::npos);
  llvm::sys::fs::remove_directories(root);
}

TEST(SafetensorsTest, SavesAtomically) {
  std::string root = tempDir("atomic");
  std::string out = root + "/model";
  std::map<std::string, DenseTensor> globals;
  globals["a"] = iota({4});
  llvm::Expected<SafetensorsLayout> layout =
      computeSafetensorsLayout({{"a", ElementType::F32, {4}}});
  ASSERT_TRUE(bool(layout));
  saveBoxes(out, *layout, globals, {{"a", box({0}, {4})}});

  // A save killed after its files were prepared and half written leaves
  // the previous model as it was (the staging folder aside).
  globals["a"] = iota({4}, 2.0f);
  ASSERT_FALSE(bool(prepareSafetensorsSave(out, *layout)));
  {
    llvm::Expected<SafetensorsWriter> writer =
        SafetensorsWriter::open(out, *layout);
    ASSERT_TRUE(bool(writer));
    ASSERT_FALSE(bool(
        writer->writeBox("a", box({0}, {2}), globals["a"], box({0}, {4}))));
  }
  llvm::Expected<SafetensorsReader> old = SafetensorsReader::open(out);
  ASSERT_TRUE(bool(old));
  llvm::Expected<DenseTensor> a = old->readTensor("a");
  ASSERT_TRUE(bool(a));
  EXPECT_EQ(floatAt(a->data, 3), 3.0f);

  // The next save replaces the stale staging folder and then the model.
  saveBoxes(out, *layout, globals, {{"a", box({0}, {4})}});
  llvm::Expected<SafetensorsReader> fresh = SafetensorsReader::open(out);
  ASSERT_TRUE(bool(fresh));
  a = fresh->readTensor("a");
  ASSERT_TRUE(bool(a));
  EXPECT_EQ(floatAt(a->data, 3), 6.0f);
  EXPECT_FALSE(llvm::sys::fs::exists(safetensorsStagingDirectory(out)));

  // A folder holding anything else is never replaced.
  std::string notes = out + "/notes.txt";
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(notes, ec);
    os << "mine";
  }
  EXPECT_NE(
      errorOf(prepareSafetensorsSave(out, *layout)).find("holds 'notes.txt'"),
      std::string::npos);
  EXPECT_TRUE(llvm::sys::fs::exists(notes));
  llvm::sys::fs::remove_directories(root);
}

TEST(SafetensorsTest, ReaderChecksTheIndex) {
  std::string root = tempDir("index");
  std::map<std::string, DenseTensor> globals;
  globals["a"] = iota({4});
  globals["b"] = iota({4});
  llvm::Expected<SafetensorsLayout> layout = computeSafetensorsLayout(
      {{"a", ElementType::F32, {4}}, {"b", ElementType::F32, {4}}}, 16);
  ASSERT_TRUE(bool(layout));
  std::string out = root + "/m";
  saveBoxes(out, *layout, globals,
            {{"a", box({0}, {4})}, {"b", box({0}, {4})}});
  ASSERT_TRUE(bool(SafetensorsReader::open(out)));
  auto writeIndex = [&](llvm::StringRef text) {
    std::error_code ec;
    llvm::raw_fd_ostream os(out + "/model.safetensors.index.json", ec);
    os << text;
  };
  writeIndex(R"({"weight_map": {"b": "model-00001-of-00002.safetensors"}})");
  EXPECT_NE(
      errorOf(SafetensorsReader::open(out)).find("is not in the weight_map"),
      std::string::npos);
  writeIndex(R"({"weight_map": {"a": "model-00002-of-00002.safetensors",
                                "b": "model-00002-of-00002.safetensors"}})");
  EXPECT_NE(errorOf(SafetensorsReader::open(out)).find("places tensor 'a'"),
            std::string::npos);
  writeIndex(R"({"weight_map": {"a": "/etc/passwd"}})");
  EXPECT_NE(errorOf(SafetensorsReader::open(out)).find("not a file name"),
            std::string::npos);
  writeIndex(R"({"weight_map": {"a": "missing.safetensors"}})");
  EXPECT_NE(errorOf(SafetensorsReader::open(out)).find("cannot open"),
            std::string::npos);
  llvm::sys::fs::remove_directories(root);
}

//===----------------------------------------------------------------------===//
// Mappings
//===----------------------------------------------------------------------===//

const char *kLlamaMapping = R"({
  "titan_hf_mapping": 1,
  "parameters": {
    "n_heads": {"hf_config": "num_attention_heads"},
    "n_kv_heads": {"hf_config": "num_key_value_heads", "fallback": "n_heads"}
  },
  "tensors": [
    {"titan": "tok_embeddings.weight", "hf": "model.embed_tokens.weight"},
    {"titan": "layers.{}.attention.wq.weight",
     "hf": "model.layers.{}.self_attn.q_proj.weight",
     "transform": "rope_permute", "heads": "n_heads"},
    {"titan": "layers.{}.attention.wk.weight",
     "hf": "model.layers.{}.self_attn.k_proj.weight",
     "transform": "rope_permute", "heads": "n_kv_heads"},
    {"titan": "experts.{}.w{}", "hf": "mlp.experts.{}.proj{}"}
  ],
  "ignore_titan": ["optimizer.*"],
  "ignore_hf": ["model.layers.*.self_attn.rotary_emb.inv_freq"]
})";

TEST(HfMappingTest, BindsNamesBothWays) {
  llvm::Expected<HfMapping> mapping = HfMapping::parse(kLlamaMapping, "m");
  ASSERT_TRUE(bool(mapping)) << llvm::toString(mapping.takeError());
  auto titan = mapping->bindTitan("layers.12.attention.wq.weight");
  ASSERT_TRUE(titan && *titan);
  EXPECT_EQ((*titan)->hf, "model.layers.12.self_attn.q_proj.weight");
  auto hf = mapping->bindHf("mlp.experts.3.proj10");
  ASSERT_TRUE(hf && *hf);
  EXPECT_EQ((*hf)->titan, "experts.3.w10");
  auto ignored = mapping->bindTitan("optimizer.state.x.exp_avg");
  ASSERT_TRUE(bool(ignored));
  EXPECT_FALSE(*ignored);
  auto inv = mapping->bindHf("model.layers.0.self_attn.rotary_emb.inv_freq");
  ASSERT_TRUE(bool(inv));
  EXPECT_FALSE(*inv);
  EXPECT_NE(errorOf(mapping->bindTitan("layers.01.attention.wq.weight"))
                .find("matches no rule"),
            std::string::npos);
  EXPECT_NE(errorOf(mapping->bindTitan("output.weight"))
                .find("add a rule, or a pattern to ignore_titan"),
            std::string::npos);
  EXPECT_NE(errorOf(mapping->bindTitan("layers.x.attention.wq.weight"))
                .find("matches no rule"),
            std::string::npos);
}

TEST(HfMappingTest, RefusesBadMappings) {
  auto parseError = [](llvm::StringRef text) {
    return errorOf(HfMapping::parse(text, "m.json"));
  };
  EXPECT_NE(parseError(R"({"tensors": []})").find("version 1"),
            std::string::npos);
  EXPECT_NE(parseError(R"({"titan_hf_mapping": 1, "tensors": [
                            {"titan": "a.{}", "hf": "b"}]})")
                .find("different numbers of '{}'"),
            std::string::npos);
  EXPECT_NE(parseError(R"({"titan_hf_mapping": 1, "tensors": [
                            {"titan": "a{}{}", "hf": "b{}{}"}]})")
                .find("ambiguous"),
            std::string::npos);
  EXPECT_NE(parseError(R"({"titan_hf_mapping": 1, "tensors": [
                            {"titan": "a", "hf": "b", "transform": "flip"}]})")
                .find("unknown transform 'flip'"),
            std::string::npos);
  EXPECT_NE(parseError(R"({"titan_hf_mapping": 1, "tensors": [
                            {"titan": "a", "hf": "b",
                             "transform": "rope_permute", "heads": "h"}]})")
                .find("name of a parameter"),
            std::string::npos);
  EXPECT_NE(parseError(R"({"titan_hf_mapping": 1, "tensor": []})")
                .find("unknown key 'tensor'"),
            std::string::npos);
  EXPECT_NE(parseError(R"({"titan_hf_mapping": 1, "tensors": [
                            {"titan": "a", "hf": "b"}, {"titan": "c", "hf": "b"}]})")
                .find("a second rule for the hf name 'b'"),
            std::string::npos);
  // Two rules matching one name are refused when it is bound.
  llvm::Expected<HfMapping> both = HfMapping::parse(
      R"({"titan_hf_mapping": 1, "tensors": [
            {"titan": "l.{}.w", "hf": "x.{}"}, {"titan": "l.0.w", "hf": "y"}]})",
      "m");
  ASSERT_TRUE(bool(both));
  EXPECT_NE(errorOf(both->bindTitan("l.0.w")).find("matches two rules"),
            std::string::npos);
}

TEST(HfMappingTest, TakesParametersFromConfigAndFallbacks) {
  llvm::Expected<HfMapping> mapping = HfMapping::parse(kLlamaMapping, "m");
  ASSERT_TRUE(bool(mapping));
  EXPECT_NE(errorOf(mapping->getParameter("n_heads")).find("--param n_heads"),
            std::string::npos);
  ASSERT_FALSE(bool(mapping->setParametersFromHfConfig(
      R"({"num_attention_heads": 32, "hidden_size": 4096})", "config.json")));
  EXPECT_EQ(*mapping->getParameter("n_heads"), 32);
  EXPECT_EQ(*mapping->getParameter("n_kv_heads"), 32); // the fallback
  ASSERT_FALSE(bool(mapping->setParametersFromHfConfig(
      R"({"num_attention_heads": 32, "num_key_value_heads": 8})", "c")));
  EXPECT_EQ(*mapping->getParameter("n_kv_heads"), 8);
  ASSERT_FALSE(bool(mapping->setParameter("n_kv_heads", 4)));
  EXPECT_EQ(*mapping->getParameter("n_kv_heads"), 4); // set wins
  EXPECT_NE(errorOf(mapping->setParameter("heads", 4)).find("no parameter"),
            std::string::npos);
}

TEST(HfMappingTest, PermutesRowsAsTransformers) {
  // transformers' permute(w, n_heads): view(n_heads, hd / 2, 2, cols)
  // .transpose(1, 2).reshape(rows, cols): HF row (h, p, i) is titan row
  // (h, i, p).
  HfRowPermutation permutation{2, 8};
  std::vector<int64_t> expected = {0, 4,  1, 5,  2,  6,  3,  7,
                                   8, 12, 9, 13, 10, 14, 11, 15};
  for (int64_t row = 0; row < 16; ++row) {
    EXPECT_EQ(permutation.toHf(row), expected[row]) << row;
    EXPECT_EQ(permutation.toTitan(permutation.toHf(row)), row);
  }
  EXPECT_EQ(HfRowPermutation().toHf(5), 5);
}

TEST(HfMappingTest, WritesAndReadsPermutedBoxes) {
  std::string root = tempDir("permuted");
  std::string out = root + "/hf";
  llvm::Expected<HfMapping> mapping = HfMapping::parse(kLlamaMapping, "m");
  ASSERT_TRUE(bool(mapping));
  ASSERT_FALSE(bool(mapping->setParameter("n_heads", 2)));
  ASSERT_FALSE(bool(mapping->setParameter("n_kv_heads", 1)));
  // wq: 2 heads of head_dim 4 (8 rows), wk: 1 head of 4 rows; 3 columns.
  std::map<std::string, DenseTensor> titan;
  titan["layers.0.attention.wq.weight"] = iota({8, 3});
  titan["layers.0.attention.wk.weight"] = iota({4, 3}, 10.0f);
  titan["optimizer.state.x"] = iota({1});
  std::vector<SafetensorsTensorSpec> specs;
  for (const auto &[name, tensor] : titan)
    specs.push_back({name, ElementType::F32, tensor.shape});
  llvm::Expected<SafetensorsLayout> layout =
      computeHfLayout(*mapping, specs, 64);
  ASSERT_TRUE(bool(layout)) << llvm::toString(layout.takeError());
  EXPECT_EQ(layout->tensors.size(), 2u); // the optimizer state is ignored
  ASSERT_FALSE(bool(prepareSafetensorsSave(out, *layout)));
  // Ranks write row blocks and column blocks that cut across heads.
  std::vector<IndexBox> wqBoxes = {box({0, 0}, {3, 3}), box({3, 0}, {5, 2}),
                                   box({3, 2}, {5, 1})};
  for (const IndexBox &region : wqBoxes) {
    llvm::Expected<SafetensorsWriter> writer =
        SafetensorsWriter::open(out, *layout);
    ASSERT_TRUE(bool(writer));
    const DenseTensor &wq = titan["layers.0.attention.wq.weight"];
    ASSERT_FALSE(bool(writeHfBox(*writer, *layout, *mapping,
                                 "layers.0.attention.wq.weight", region, wq,
                                 box({0, 0}, {8, 3}))));
    ASSERT_FALSE(bool(writer->close()));
  }
  {
    llvm::Expected<SafetensorsWriter> writer =
        SafetensorsWriter::open(out, *layout);
    ASSERT_TRUE(bool(writer));
    ASSERT_FALSE(bool(
        writeHfBox(*writer, *layout, *mapping, "layers.0.attention.wk.weight",
                   box({0, 0}, {4, 3}), titan["layers.0.attention.wk.weight"],
                   box({0, 0}, {4, 3}))));
    ASSERT_FALSE(bool(writer->close()));
  }
  ASSERT_FALSE(bool(commitSafetensorsSave(out, *layout)));

  llvm::Expected<SafetensorsReader> reader = SafetensorsReader::open(out);
  ASSERT_TRUE(bool(reader));
  // The stored rows are transformers' order: HF row (h, p, i) = titan row
  // h * 4 + 2 * i + p.
  llvm::Expected<DenseTensor> stored =
      reader->readTensor("model.layers.0.self_attn.q_proj.weight");
  ASSERT_TRUE(bool(stored));
  int64_t titanRowOf[8] = {0, 2, 1, 3, 4, 6, 5, 7};
  for (int64_t row = 0; row < 8; ++row)
    for (int64_t col = 0; col < 3; ++col)
      EXPECT_EQ(floatAt(stored->data, row * 3 + col),
                float(titanRowOf[row] * 3 + col))
          << row << "," << col;
  llvm::Expected<DenseTensor> k =
      reader->readTensor("model.layers.0.self_attn.k_proj.weight");
  ASSERT_TRUE(bool(k));
  EXPECT_EQ(floatAt(k->data, 1 * 3), 20.0f * 3); // HF row 1 = titan row 2

  // Reading any box back through the mapping undoes the permutation.
  for (const IndexBox &region :
       {box({0, 0}, {8, 3}), box({1, 1}, {5, 2}), box({7, 0}, {1, 3})}) {
    DenseTensor target{ElementType::F32, region.sizes,
                       std::vector<char>(region.numElements() * 4)};
    llvm::Error err =
        readHfBox(*reader, *mapping, "layers.0.attention.wq.weight", {8, 3},
                  region, target, region);
    ASSERT_FALSE(bool(err)) << llvm::toString(std::move(err));
    for (int64_t r = 0; r < region.sizes[0]; ++r)
      for (int64_t c = 0; c < region.sizes[1]; ++c)
        EXPECT_EQ(floatAt(target.data, r * region.sizes[1] + c),
                  float((region.offsets[0] + r) * 3 + region.offsets[1] + c));
  }
  DenseTensor wrong{ElementType::F32, {4, 3}, std::vector<char>(48)};
  EXPECT_NE(errorOf(readHfBox(*reader, *mapping, "layers.0.attention.wq.weight",
                              {4, 3}, box({0, 0}, {4, 3}), wrong,
                              box({0, 0}, {4, 3})))
                .find("has shape [8, 3] but titan's"),
            std::string::npos);
  // Heads that do not divide the rows are refused before anything exists.
  ASSERT_FALSE(bool(mapping->setParameter("n_heads", 3)));
  EXPECT_NE(errorOf(computeHfLayout(*mapping, specs)).find("rope_permute"),
            std::string::npos);
  llvm::sys::fs::remove_directories(root);
}

} // namespace
