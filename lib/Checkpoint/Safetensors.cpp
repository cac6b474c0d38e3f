//===- Safetensors.cpp - Hugging Face safetensors files -------------------===//

#include "titan/Checkpoint/Safetensors.h"

#include "titan/Support/Bfloat16.h"
#include "titan/Support/CheckedSize.h"
#include "titan/Support/FormatInts.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir::titan;
using llvm::StringRef;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

static std::string errnoMessage() {
  return std::error_code(errno, std::generic_category()).message();
}

static std::string joinPath(StringRef directory, StringRef name) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

//===----------------------------------------------------------------------===//
// Dtypes and conversions
//===----------------------------------------------------------------------===//

std::optional<ElementType> mlir::titan::parseSafetensorsDType(StringRef name) {
  return llvm::StringSwitch<std::optional<ElementType>>(name)
      .Case("F32", ElementType::F32)
      .Case("BF16", ElementType::BF16)
      .Case("F16", ElementType::F16)
      .Case("F64", ElementType::F64)
      .Case("I64", ElementType::I64)
      .Case("I32", ElementType::I32)
      .Default(std::nullopt);
}

bool mlir::titan::isSafetensorsDType(ElementType dtype) {
  switch (dtype) {
  case ElementType::F32:
  case ElementType::BF16:
  case ElementType::F16:
  case ElementType::F64:
  case ElementType::I64:
  case ElementType::I32:
    return true;
  default:
    return false;
  }
}

StringRef mlir::titan::safetensorsDTypeName(ElementType dtype) {
  switch (dtype) {
  case ElementType::F32:
    return "F32";
  case ElementType::BF16:
    return "BF16";
  case ElementType::F16:
    return "F16";
  case ElementType::F64:
    return "F64";
  case ElementType::I64:
    return "I64";
  case ElementType::I32:
    return "I32";
  default:
    llvm_unreachable("not a safetensors dtype");
  }
}

static float bitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

static uint32_t floatToBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

static float f16ToFloat(uint16_t half) {
  uint32_t sign = uint32_t(half & 0x8000u) << 16;
  uint32_t exponent = (half >> 10) & 0x1fu;
  uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1f) // infinity or NaN
    return bitsToFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24.
    float magnitude = std::ldexp(float(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  return bitsToFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

/// `value` rounded to the nearest IEEE binary16 (ties to even); beyond the
/// largest half it becomes infinity, a NaN stays a quiet NaN.
static uint16_t floatToF16(float value) {
  uint32_t bits = floatToBits(value);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  uint32_t x = bits & 0x7fffffffu;
  if (x > 0x7f800000u)
    return sign | 0x7e00u;
  if (x >= 0x477ff000u) // rounds to 65536 or more: infinity
    return sign | 0x7c00u;
  if (x >= 0x38800000u) { // a normal half
    x += 0xfffu + ((x >> 13) & 1u);
    return sign | uint16_t((x - 0x38000000u) >> 13);
  }
  // A subnormal half (or zero): round mantissa * 2^(exponent - 126).
  uint32_t exponent = x >> 23;
  uint32_t shift = 126 - exponent;
  if (shift >= 25 || x == 0)
    return sign;
  uint32_t mantissa = (x & 0x7fffffu) | 0x800000u;
  uint32_t result = mantissa >> shift;
  uint32_t rest = mantissa & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (result & 1u)))
    ++result;
  return sign | uint16_t(result);
}

namespace {
/// Loads element i of a float array of type T as float or double.
template <ElementType T> struct FloatIO;
template <> struct FloatIO<ElementType::F32> {
  using Wide = float;
  static float load(const char *p) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  static void store(char *p, float v) { std::memcpy(p, &v, 4); }
};
template <> struct FloatIO<ElementType::F64> {
  using Wide = double;
  static double load(const char *p) {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  static void store(char *p, double v) { std::memcpy(p, &v, 8); }
};
template <> struct FloatIO<ElementType::BF16> {
  using Wide = float;
  static float load(const char *p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return bf16ToFloat(v);
  }
  static void store(char *p, float v) {
    uint16_t bits = floatToBf16(v);
    std::memcpy(p, &bits, 2);
  }
};
template <> struct FloatIO<ElementType::F16> {
  using Wide = float;
  static float load(const char *p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return f16ToFloat(v);
  }
  static void store(char *p, float v) {
    uint16_t bits = floatToF16(v);
    std::memcpy(p, &bits, 2);
  }
};
} // namespace

template <ElementType From, ElementType To>
static void convertLoop(const char *source, char *target, size_t count) {
  constexpr size_t fromSize = From == ElementType::F64   ? 8
                              : From == ElementType::F32 ? 4
                                                         : 2;
  constexpr size_t toSize = To == ElementType::F64   ? 8
                            : To == ElementType::F32 ? 4
                                                     : 2;
  using ToWide = typename FloatIO<To>::Wide;
  for (size_t i = 0; i < count; ++i)
    FloatIO<To>::store(
        target + i * toSize,
        static_cast<ToWide>(FloatIO<From>::load(source + i * fromSize)));
}

template <ElementType From>
static bool convertFrom(ElementType to, const char *source, char *target,
                        size_t count) {
  switch (to) {
  case ElementType::F32:
    convertLoop<From, ElementType::F32>(source, target, count);
    return true;
  case ElementType::F64:
    convertLoop<From, ElementType::F64>(source, target, count);
    return true;
  case ElementType::BF16:
    convertLoop<From, ElementType::BF16>(source, target, count);
    return true;
  case ElementType::F16:
    convertLoop<From, ElementType::F16>(source, target, count);
    return true;
  default:
    return false;
  }
}

bool mlir::titan::canConvertElements(ElementType from, ElementType to) {
  return from == to || (isFloatElementType(from) && isFloatElementType(to));
}

bool mlir::titan::convertElements(ElementType from, const void *sourcePtr,
                                  ElementType to, void *targetPtr,
                                  size_t count) {
  if (!canConvertElements(from, to))
    return false;
  const char *source = static_cast<const char *>(sourcePtr);
  char *target = static_cast<char *>(targetPtr);
  if (from == to) {
    if (count)
      std::memmove(target, source, count * getElementTypeSize(from));
    return true;
  }
  switch (from) {
  case ElementType::F32:
    return convertFrom<ElementType::F32>(to, source, target, count);
  case ElementType::F64:
    return convertFrom<ElementType::F64>(to, source, target, count);
  case ElementType::BF16:
    return convertFrom<ElementType::BF16>(to, source, target, count);
  case ElementType::F16:
    return convertFrom<ElementType::F16>(to, source, target, count);
  default:
    return false;
  }
}

//===----------------------------------------------------------------------===//
// Header validation
//===----------------------------------------------------------------------===//

/// Checks what llvm::json::parse does not: nesting deeper than
/// kMaxSafetensorsJsonDepth (its parser recurses per level) and duplicate
/// keys in an object (it keeps the last silently). The text need not be
/// valid JSON otherwise: the parser reports the rest.
static llvm::Error checkJsonShape(StringRef text, StringRef name) {
  struct Level {
    bool isObject = false;
    bool expectKey = false;
    std::set<std::string> keys;
  };
  std::vector<Level> stack;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      size_t start = i++;
      while (i < text.size() && text[i] != '"')
        i += text[i] == '\\' ? 2 : 1;
      if (i >= text.size())
        return llvm::Error::success(); // unterminated: the parser says so
      if (!stack.empty() && stack.back().expectKey) {
        llvm::Expected<llvm::json::Value> key =
            llvm::json::parse(text.slice(start, i + 1));
        if (!key) {
          llvm::consumeError(key.takeError());
          return llvm::Error::success(); // the parser says what is wrong
        }
        std::string keyText = key->getAsString()->str();
        if (!stack.back().keys.insert(keyText).second)
          return fail("'" + name + "': the JSON header has the key '" +
                      keyText + "' twice");
        stack.back().expectKey = false;
      }
      continue;
    }
    if (c == '{' || c == '[') {
      if (stack.size() >= kMaxSafetensorsJsonDepth)
        return fail("'" + name + "': the JSON header nests deeper than " +
                    llvm::Twine(kMaxSafetensorsJsonDepth) + " levels (byte " +
                    llvm::Twine(i) + ")");
      stack.push_back({c == '{', c == '{', {}});
    } else if (c == '}' || c == ']') {
      if (!stack.empty())
        stack.pop_back();
    } else if (c == ',' && !stack.empty() && stack.back().isObject) {
      stack.back().expectKey = true;
    }
  }
  return llvm::Error::success();
}

/// Parses JSON from a file after checkJsonShape.
static llvm::Expected<llvm::json::Value> parseJson(StringRef text,
                                                   StringRef name) {
  if (llvm::Error err = checkJsonShape(text, name))
    return std::move(err);
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  if (!value)
    return fail("'" + name +
                "': invalid JSON: " + llvm::toString(value.takeError()));
  return value;
}

llvm::Expected<uint64_t>
mlir::titan::parseSafetensorsHeaderLength(StringRef lengthBytes,
                                          uint64_t fileSize, StringRef name) {
  if (fileSize < 8 || lengthBytes.size() < 8)
    return fail("'" + name +
                "': not a safetensors file: " + llvm::Twine(fileSize) +
                " bytes, fewer than the 8-byte header length");
  uint64_t length = llvm::support::endian::read64le(lengthBytes.data());
  if (length > kMaxSafetensorsHeaderBytes)
    return fail("'" + name + "': the header length " + llvm::Twine(length) +
                " exceeds the limit of " +
                llvm::Twine(kMaxSafetensorsHeaderBytes) +
                " bytes (not a safetensors file, or a hostile one)");
  if (length > fileSize - 8)
    return fail("'" + name + "': truncated: the header length " +
                llvm::Twine(length) + " runs past the end of the file (" +
                llvm::Twine(fileSize) + " bytes)");
  return 8 + length;
}

/// Reads a JSON array of non-negative integers.
static std::optional<llvm::SmallVector<int64_t>>
intArray(const llvm::json::Value *value) {
  const llvm::json::Array *array = value ? value->getAsArray() : nullptr;
  if (!array)
    return std::nullopt;
  llvm::SmallVector<int64_t> result;
  for (const llvm::json::Value &element : *array) {
    std::optional<int64_t> v = element.getAsInteger();
    if (!v || *v < 0)
      return std::nullopt;
    result.push_back(*v);
  }
  return result;
}

llvm::Expected<SafetensorsHeader>
mlir::titan::parseSafetensorsHeader(StringRef prefix, uint64_t fileSize,
                                    StringRef name) {
  llvm::Expected<uint64_t> headerEnd =
      parseSafetensorsHeaderLength(prefix, fileSize, name);
  if (!headerEnd)
    return headerEnd.takeError();
  if (prefix.size() < *headerEnd)
    return fail("'" + name + "': truncated: the header is " +
                llvm::Twine(*headerEnd - 8) + " bytes but only " +
                llvm::Twine(prefix.size() - 8) + " could be read");
  StringRef text = prefix.slice(8, *headerEnd);
  if (!text.starts_with("{"))
    return fail("'" + name +
                "': the header does not start with '{' (not a safetensors "
                "file)");
  llvm::Expected<llvm::json::Value> json = parseJson(text.rtrim(' '), name);
  if (!json)
    return json.takeError();
  const llvm::json::Object *root = json->getAsObject();
  if (!root)
    return fail("'" + name + "': the header is not a JSON object");

  SafetensorsHeader header;
  header.dataStart = *headerEnd;
  uint64_t dataSize = fileSize - *headerEnd;
  for (const auto &[keyRef, value] : *root) {
    std::string key = keyRef.str();
    if (key == "__metadata__") {
      const llvm::json::Object *entries = value.getAsObject();
      if (!entries)
        return fail("'" + name + "': __metadata__ is not an object");
      for (const auto &[metaKey, metaValue] : *entries) {
        std::optional<StringRef> text = metaValue.getAsString();
        if (!text)
          return fail("'" + name + "': __metadata__ entry '" + metaKey.str() +
                      "' is not a string");
        header.metadata[metaKey.str()] = text->str();
      }
      continue;
    }
    auto bad = [&](const llvm::Twine &what) {
      return fail("'" + name + "': tensor '" + key + "': " + what);
    };
    if (key.empty())
      return bad("an empty tensor name");
    const llvm::json::Object *fields = value.getAsObject();
    if (!fields)
      return bad("its entry is not an object");
    for (const auto &field : *fields)
      if (field.first != "dtype" && field.first != "shape" &&
          field.first != "data_offsets")
        return bad("unknown field '" + field.first.str() +
                   "' (expected dtype, shape, data_offsets)");
    std::optional<StringRef> dtypeName = fields->getString("dtype");
    if (!dtypeName)
      return bad("no dtype string");
    std::optional<ElementType> dtype = parseSafetensorsDType(*dtypeName);
    if (!dtype)
      return bad("dtype '" + *dtypeName +
                 "' is not supported (titan reads F32, BF16, F16, F64, I64, "
                 "I32)");
    std::optional<llvm::SmallVector<int64_t>> shape =
        intArray(fields->get("shape"));
    if (!shape)
      return bad("shape is not an array of non-negative integers");
    std::optional<llvm::SmallVector<int64_t>> offsets =
        intArray(fields->get("data_offsets"));
    if (!offsets || offsets->size() != 2)
      return bad("data_offsets is not [begin, end] of non-negative integers");
    uint64_t begin = (*offsets)[0], end = (*offsets)[1];
    if (begin > end)
      return bad("data_offsets [" + llvm::Twine(begin) + ", " +
                 llvm::Twine(end) + "] end before they begin");
    if (end > dataSize)
      return bad("data_offsets [" + llvm::Twine(begin) + ", " +
                 llvm::Twine(end) + "] run past the end of the file (" +
                 llvm::Twine(dataSize) + " data bytes; truncated?)");
    std::optional<int64_t> bytes =
        checkedByteSize(*shape, getElementTypeSize(*dtype));
    if (!bytes)
      return bad("shape " + formatInts(*shape) + " has more than 2^63-1 bytes");
    if (uint64_t(*bytes) != end - begin)
      return bad("shape " + formatInts(*shape) + " of " + *dtypeName +
                 " needs " + llvm::Twine(*bytes) + " bytes but data_offsets [" +
                 llvm::Twine(begin) + ", " + llvm::Twine(end) + "] hold " +
                 llvm::Twine(end - begin));
    header.tensors.push_back(
        {key, *dtype, *shape, *headerEnd + begin, *headerEnd + end});
  }
  // The data must be the tensors' data, back to back: no gap, no overlap,
  // nothing after the last tensor.
  llvm::stable_sort(header.tensors, [](const SafetensorsTensorInfo &a,
                                       const SafetensorsTensorInfo &b) {
    return std::make_pair(a.begin, a.end) < std::make_pair(b.begin, b.end);
  });
  uint64_t at = *headerEnd;
  const SafetensorsTensorInfo *previous = nullptr;
  for (const SafetensorsTensorInfo &tensor : header.tensors) {
    if (tensor.begin < at)
      return fail("'" + name + "': tensor '" + tensor.name +
                  "' overlaps tensor '" + (previous ? previous->name : "") +
                  "' (data_offsets [" + llvm::Twine(tensor.begin - *headerEnd) +
                  ", " + llvm::Twine(tensor.end - *headerEnd) + "])");
    if (tensor.begin > at)
      return fail(
          "'" + name + "': tensor '" + tensor.name +
          "' starts at data offset " + llvm::Twine(tensor.begin - *headerEnd) +
          ", leaving a gap after offset " + llvm::Twine(at - *headerEnd) +
          " (the data must be contiguous)");
    at = tensor.end;
    previous = &tensor;
  }
  if (at != fileSize)
    return fail("'" + name + "': " + llvm::Twine(fileSize - at) +
                " bytes after the last tensor's data (the data must end "
                "with the file)");
  return header;
}

/// Reads exactly `size` bytes at `offset` of `fd`.
static bool preadFull(int fd, char *buffer, size_t size, uint64_t offset) {
  while (size > 0) {
    ssize_t got = ::pread(fd, buffer, size, off_t(offset));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      if (got == 0)
        errno = 0;
      return false;
    }
    buffer += got;
    size -= size_t(got);
    offset += uint64_t(got);
  }
  return true;
}

/// Writes exactly `size` bytes at `offset` of `fd`.
static bool pwriteFull(int fd, const char *buffer, size_t size,
                       uint64_t offset) {
  while (size > 0) {
    ssize_t put = ::pwrite(fd, buffer, size, off_t(offset));
    if (put < 0 && errno == EINTR)
      continue;
    if (put <= 0)
      return false;
    buffer += put;
    size -= size_t(put);
    offset += uint64_t(put);
  }
  return true;
}

/// Reads and validates the header of the open file `fd` at `path`.
static llvm::Expected<SafetensorsHeader> readHeader(int fd, StringRef path) {
  struct stat status;
  if (::fstat(fd, &status) != 0)
    return fail("cannot stat '" + path + "': " + errnoMessage());
  if (!S_ISREG(status.st_mode))
    return fail("'" + path + "' is not a regular file");
  uint64_t fileSize = uint64_t(status.st_size);
  char lengthBytes[8] = {};
  if (fileSize >= 8 && !preadFull(fd, lengthBytes, 8, 0))
    return fail("cannot read '" + path + "': " + errnoMessage());
  llvm::Expected<uint64_t> headerEnd = parseSafetensorsHeaderLength(
      StringRef(lengthBytes, fileSize >= 8 ? 8 : 0), fileSize, path);
  if (!headerEnd)
    return headerEnd.takeError();
  std::string prefix(*headerEnd, '\0');
  if (!preadFull(fd, prefix.data(), prefix.size(), 0))
    return fail("cannot read the header of '" + path + "': " + errnoMessage());
  return parseSafetensorsHeader(prefix, fileSize, path);
}

llvm::Expected<SafetensorsHeader>
mlir::titan::readSafetensorsHeader(StringRef path) {
  int fd = ::open(std::string(path).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail("cannot open '" + path + "': " + errnoMessage());
  llvm::Expected<SafetensorsHeader> header = readHeader(fd, path);
  ::close(fd);
  return header;
}

//===----------------------------------------------------------------------===//
// Boxes
//===----------------------------------------------------------------------===//

/// Checks that `box` lies in a tensor of `shape` and in `memoryBox`, and
/// that `memory` (of `bytes` bytes, elements of `elementSize`) holds
/// `memoryBox`.
static llvm::Error checkBox(StringRef name, llvm::ArrayRef<int64_t> shape,
                            const IndexBox &box, const IndexBox &memoryBox,
                            llvm::ArrayRef<int64_t> memoryShape, size_t bytes,
                            size_t elementSize) {
  auto describe = [](const IndexBox &b) {
    return "offsets " + formatInts(b.offsets) + " sizes " + formatInts(b.sizes);
  };
  size_t rank = shape.size();
  if (box.offsets.size() != rank || box.sizes.size() != rank ||
      memoryBox.offsets.size() != rank || memoryBox.sizes.size() != rank)
    return fail("tensor '" + name + "' of shape " + formatInts(shape) +
                ": the box (" + describe(box) + ") or the buffer's box (" +
                describe(memoryBox) + ") has another rank");
  for (size_t d = 0; d < rank; ++d) {
    if (box.offsets[d] < 0 || box.sizes[d] < 0 ||
        box.offsets[d] > shape[d] - box.sizes[d])
      return fail("tensor '" + name + "' of shape " + formatInts(shape) +
                  ": the box " + describe(box) + " is out of bounds");
    if (box.offsets[d] < memoryBox.offsets[d] ||
        box.offsets[d] + box.sizes[d] >
            memoryBox.offsets[d] + memoryBox.sizes[d])
      return fail("tensor '" + name + "': the box " + describe(box) +
                  " is not within the buffer's box " + describe(memoryBox));
  }
  if (memoryShape != llvm::ArrayRef<int64_t>(memoryBox.sizes))
    return fail("tensor '" + name + "': the buffer has shape " +
                formatInts(memoryShape) + " but its box has sizes " +
                formatInts(memoryBox.sizes));
  std::optional<int64_t> need = checkedByteSize(memoryBox.sizes, elementSize);
  if (!need || uint64_t(*need) != bytes)
    return fail("tensor '" + name + "': the buffer holds " +
                llvm::Twine(bytes) + " bytes, not the " +
                (need ? llvm::Twine(*need) : llvm::Twine("(overflowing)")) +
                " of its shape");
  return llvm::Error::success();
}

/// Calls `run(fileElement, memoryElement, count)` for every run of `box` of
/// a tensor of `shape` that is contiguous both in the tensor (row-major, row
/// r of dimension 0 stored as row rowMap(r)) and in a buffer holding
/// `memoryBox`; stops at the first error.
static llvm::Error
forEachRun(llvm::ArrayRef<int64_t> shape, const IndexBox &box,
           const IndexBox &memoryBox, SafetensorsRowMap rowMap, StringRef name,
           llvm::function_ref<llvm::Error(int64_t, int64_t, int64_t)> run) {
  size_t rank = shape.size();
  if (rank == 0)
    return run(0, 0, 1);
  for (int64_t size : box.sizes)
    if (size == 0)
      return llvm::Error::success();
  llvm::SmallVector<int64_t> fileStride(rank, 1), memoryStride(rank, 1);
  for (size_t d = rank - 1; d > 0; --d) {
    fileStride[d - 1] = fileStride[d] * shape[d];
    memoryStride[d - 1] = memoryStride[d] * memoryBox.sizes[d];
  }
  // The run covers dims [start, rank): the box's extent along `start` and
  // everything of the dims after it, which must be whole in both.
  size_t start = rank - 1;
  int64_t length = box.sizes[rank - 1];
  size_t lowest = rowMap ? 1 : 0;
  if (rowMap && rank == 1) {
    start = 1;
    length = 1;
  } else {
    while (start > lowest && box.sizes[start] == shape[start] &&
           box.sizes[start] == memoryBox.sizes[start]) {
      --start;
      length *= box.sizes[start];
    }
  }
  int64_t fileBase = 0, memoryBase = 0;
  for (size_t d = start; d < rank; ++d) {
    fileBase += box.offsets[d] * fileStride[d];
    memoryBase += (box.offsets[d] - memoryBox.offsets[d]) * memoryStride[d];
  }
  llvm::SmallVector<int64_t> index(box.offsets.begin(),
                                   box.offsets.begin() + start);
  while (true) {
    int64_t fileElement = fileBase, memoryElement = memoryBase;
    for (size_t d = 0; d < start; ++d) {
      int64_t fileIndex = index[d];
      if (d == 0 && rowMap) {
        fileIndex = rowMap(index[d]);
        if (fileIndex < 0 || fileIndex >= shape[0])
          return fail("tensor '" + name + "': the row map sends row " +
                      llvm::Twine(index[d]) + " to row " +
                      llvm::Twine(fileIndex) + ", outside [0, " +
                      llvm::Twine(shape[0]) + ")");
      }
      fileElement += fileIndex * fileStride[d];
      memoryElement += (index[d] - memoryBox.offsets[d]) * memoryStride[d];
    }
    if (llvm::Error err = run(fileElement, memoryElement, length))
      return err;
    // Next outer index (odometer).
    size_t d = start;
    while (d > 0) {
      --d;
      if (++index[d] < box.offsets[d] + box.sizes[d])
        break;
      index[d] = box.offsets[d];
      if (d == 0)
        return llvm::Error::success();
    }
    if (start == 0)
      return llvm::Error::success();
  }
}

/// The most elements converted at once through a scratch buffer.
static constexpr int64_t kScratchElements = 1 << 20;

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

SafetensorsReader::SafetensorsReader(SafetensorsReader &&other)
    : paths(std::move(other.paths)), fds(std::move(other.fds)),
      metadata(std::move(other.metadata)), tensors(std::move(other.tensors)) {
  other.fds.clear();
}

SafetensorsReader &SafetensorsReader::operator=(SafetensorsReader &&other) {
  if (this != &other) {
    closeFiles();
    paths = std::move(other.paths);
    fds = std::move(other.fds);
    metadata = std::move(other.metadata);
    tensors = std::move(other.tensors);
    other.fds.clear();
  }
  return *this;
}

SafetensorsReader::~SafetensorsReader() { closeFiles(); }

void SafetensorsReader::closeFiles() {
  for (int fd : fds)
    if (fd >= 0)
      ::close(fd);
  fds.clear();
}

const SafetensorsReader::Entry *
SafetensorsReader::lookup(StringRef name) const {
  auto it = tensors.find(name.str());
  return it == tensors.end() ? nullptr : &it->second;
}

/// Whether `name` is a plain file name (no folder, not `.` or `..`).
static bool isPlainFileName(StringRef name) {
  return !name.empty() && name != "." && name != ".." && !name.contains('/') &&
         !name.contains('\\') && !name.contains('\0');
}

llvm::Expected<SafetensorsReader> SafetensorsReader::open(StringRef path) {
  SafetensorsReader reader;
  // The file holding each tensor, by the index (empty: one file).
  std::map<std::string, std::string> weightMap;
  std::string indexPath;
  if (llvm::sys::fs::is_directory(path)) {
    indexPath = joinPath(path, kSafetensorsIndexFile);
    std::string single = joinPath(path, kSafetensorsSingleFile);
    if (llvm::sys::fs::exists(indexPath)) {
      llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
          llvm::MemoryBuffer::getFile(indexPath, /*IsText=*/false,
                                      /*RequiresNullTerminator=*/false);
      if (!buffer)
        return fail("cannot read '" + indexPath +
                    "': " + buffer.getError().message());
      if ((*buffer)->getBufferSize() > kMaxSafetensorsHeaderBytes)
        return fail("'" + indexPath + "' is larger than " +
                    llvm::Twine(kMaxSafetensorsHeaderBytes) + " bytes");
      llvm::Expected<llvm::json::Value> json =
          parseJson((*buffer)->getBuffer(), indexPath);
      if (!json)
        return json.takeError();
      const llvm::json::Object *root = json->getAsObject();
      const llvm::json::Object *map =
          root ? root->getObject("weight_map") : nullptr;
      if (!map)
        return fail("'" + indexPath + "' has no weight_map object");
      for (const auto &[tensor, file] : *map) {
        std::optional<StringRef> fileName = file.getAsString();
        if (!fileName || !isPlainFileName(*fileName))
          return fail("'" + indexPath + "': weight_map entry '" + tensor.str() +
                      "' is not a file name in the folder (a string without "
                      "'/')");
        weightMap[tensor.str()] = fileName->str();
      }
      if (weightMap.empty())
        return fail("'" + indexPath + "': weight_map is empty");
      std::set<std::string> files;
      for (const auto &entry : weightMap)
        files.insert(entry.second);
      for (const std::string &file : files)
        reader.paths.push_back(joinPath(path, file));
    } else if (llvm::sys::fs::exists(single)) {
      indexPath.clear();
      reader.paths.push_back(single);
    } else {
      return fail("'" + path + "' holds neither " + kSafetensorsIndexFile +
                  " nor " + kSafetensorsSingleFile);
    }
  } else {
    reader.paths.push_back(path.str());
  }

  for (unsigned file = 0; file < reader.paths.size(); ++file) {
    const std::string &filePath = reader.paths[file];
    int fd = ::open(filePath.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return fail("cannot open '" + filePath + "'" +
                  (indexPath.empty() ? "" : " (named by '" + indexPath + "')") +
                  ": " + errnoMessage());
    reader.fds.push_back(fd);
    llvm::Expected<SafetensorsHeader> header = readHeader(fd, filePath);
    if (!header)
      return header.takeError();
    reader.metadata.push_back(std::move(header->metadata));
    StringRef fileName = llvm::sys::path::filename(filePath);
    for (SafetensorsTensorInfo &tensor : header->tensors) {
      if (!indexPath.empty()) {
        auto it = weightMap.find(tensor.name);
        if (it == weightMap.end())
          return fail("'" + filePath + "': tensor '" + tensor.name +
                      "' is not in the weight_map of '" + indexPath + "'");
        if (it->second != fileName)
          return fail("'" + filePath + "': tensor '" + tensor.name +
                      "' is also here, but '" + indexPath + "' places it in '" +
                      it->second + "'");
      }
      std::string name = tensor.name;
      if (!reader.tensors.try_emplace(name, Entry{file, std::move(tensor)})
               .second)
        return fail("'" + filePath + "': tensor '" + name +
                    "' is in two files");
    }
  }
  for (const auto &[tensor, file] : weightMap)
    if (!reader.tensors.count(tensor))
      return fail("'" + indexPath + "' places tensor '" + tensor + "' in '" +
                  file + "', which does not hold it");
  return std::move(reader);
}

llvm::Error SafetensorsReader::readBoxInto(StringRef name, const IndexBox &box,
                                           MutableDenseTensorRef target,
                                           const IndexBox &targetBox,
                                           SafetensorsRowMap rowMap) const {
  const Entry *entry = lookup(name);
  if (!entry)
    return fail("'" + paths.front() + "'" +
                (paths.size() > 1 ? " and the other files" : "") +
                " hold no tensor '" + name + "'");
  const SafetensorsTensorInfo &info = entry->info;
  if (!canConvertElements(info.dtype, target.dtype))
    return fail("tensor '" + name + "' is stored as " +
                safetensorsDTypeName(info.dtype) + " and cannot be read as " +
                stringifyElementType(target.dtype));
  if (llvm::Error err =
          checkBox(name, info.shape, box, targetBox, target.shape,
                   target.data.size(), getElementTypeSize(target.dtype)))
    return err;
  size_t storedSize = getElementTypeSize(info.dtype);
  size_t targetSize = getElementTypeSize(target.dtype);
  int fd = fds[entry->file];
  const std::string &path = paths[entry->file];
  return forEachRun(
      info.shape, box, targetBox, rowMap, name,
      [&](int64_t fileElement, int64_t targetElement,
          int64_t count) -> llvm::Error {
        uint64_t offset = info.begin + uint64_t(fileElement) * storedSize;
        char *out = target.data.data() + targetElement * targetSize;
        auto readFailed = [&]() {
          return fail("cannot read tensor '" + name + "' from '" + path +
                      "' at byte " + llvm::Twine(offset) + ": " +
                      (errno ? errnoMessage()
                             : std::string("the file ended early (changed "
                                           "since it was opened?)")));
        };
        if (info.dtype == target.dtype) {
          if (!preadFull(fd, out, size_t(count) * storedSize, offset))
            return readFailed();
          return llvm::Error::success();
        }
        for (int64_t done = 0; done < count;) {
          int64_t part = std::min(count - done, kScratchElements);
          scratch.resize(size_t(part) * storedSize);
          if (!preadFull(fd, scratch.data(), scratch.size(), offset))
            return readFailed();
          convertElements(info.dtype, scratch.data(), target.dtype,
                          out + done * targetSize, size_t(part));
          done += part;
          offset += uint64_t(part) * storedSize;
        }
        return llvm::Error::success();
      });
}

llvm::Expected<DenseTensor>
SafetensorsReader::readTensor(StringRef name, std::optional<ElementType> dtype,
                              SafetensorsRowMap rowMap) const {
  const Entry *entry = lookup(name);
  if (!entry)
    return fail("no tensor '" + name + "' in '" + paths.front() + "'");
  DenseTensor tensor;
  tensor.dtype = dtype.value_or(entry->info.dtype);
  tensor.shape = entry->info.shape;
  std::optional<int64_t> bytes =
      checkedByteSize(tensor.shape, getElementTypeSize(tensor.dtype));
  if (!bytes)
    return fail("tensor '" + name + "' is too large");
  tensor.data.resize(size_t(*bytes));
  IndexBox whole{llvm::SmallVector<int64_t>(tensor.shape.size(), 0),
                 tensor.shape};
  if (llvm::Error err = readBoxInto(name, whole, tensor, rowMap))
    return std::move(err);
  return tensor;
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

std::string SafetensorsLayout::indexJson() const {
  llvm::json::Object weightMap;
  for (const auto &[name, placed] : tensors)
    weightMap[name] = files[placed.first].name;
  llvm::json::Object root{
      {"metadata", llvm::json::Object{{"total_size", int64_t(totalSize)}}},
      {"weight_map", std::move(weightMap)}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return text;
}

llvm::Expected<SafetensorsLayout> mlir::titan::computeSafetensorsLayout(
    llvm::ArrayRef<SafetensorsTensorSpec> specs, uint64_t maxShardBytes,
    const std::map<std::string, std::string> &metadata) {
  if (maxShardBytes == 0)
    return fail("the largest shard size must be at least 1 byte");
  std::vector<const SafetensorsTensorSpec *> order;
  llvm::StringSet<> names;
  for (const SafetensorsTensorSpec &spec : specs) {
    if (spec.name.empty() || spec.name == "__metadata__")
      return fail("a tensor cannot be named '" + spec.name +
                  "' in a safetensors file");
    if (!names.insert(spec.name).second)
      return fail("tensor '" + spec.name + "' is saved twice");
    if (!isSafetensorsDType(spec.dtype))
      return fail("tensor '" + spec.name + "': safetensors cannot hold " +
                  stringifyElementType(spec.dtype));
    if (!checkedByteSize(spec.shape, getElementTypeSize(spec.dtype)))
      return fail("tensor '" + spec.name + "' of shape " +
                  formatInts(spec.shape) + " is too large");
    order.push_back(&spec);
  }
  llvm::stable_sort(order, [](const SafetensorsTensorSpec *a,
                              const SafetensorsTensorSpec *b) {
    return getElementTypeSize(a->dtype) > getElementTypeSize(b->dtype);
  });

  // Shards of tensors, as save_pretrained cuts them.
  std::vector<std::vector<const SafetensorsTensorSpec *>> shards;
  uint64_t shardBytes = 0;
  SafetensorsLayout layout;
  for (const SafetensorsTensorSpec *spec : order) {
    uint64_t bytes = uint64_t(
        *checkedByteSize(spec->shape, getElementTypeSize(spec->dtype)));
    if (shards.empty() ||
        (!shards.back().empty() && shardBytes + bytes > maxShardBytes)) {
      shards.emplace_back();
      shardBytes = 0;
    }
    shards.back().push_back(spec);
    shardBytes += bytes;
    layout.totalSize += bytes;
  }
  if (shards.empty())
    shards.emplace_back();

  for (unsigned file = 0; file < shards.size(); ++file) {
    SafetensorsFileLayout fileLayout;
    if (shards.size() == 1)
      fileLayout.name = kSafetensorsSingleFile.str();
    else
      fileLayout.name = llvm::formatv("model-{0:d5}-of-{1:d5}.safetensors",
                                      file + 1, shards.size())
                            .str();
    llvm::json::Object header;
    if (!metadata.empty()) {
      llvm::json::Object meta;
      for (const auto &[key, value] : metadata)
        meta[key] = value;
      header["__metadata__"] = std::move(meta);
    }
    uint64_t offset = 0;
    std::vector<SafetensorsTensorInfo> infos;
    for (const SafetensorsTensorSpec *spec : shards[file]) {
      uint64_t bytes = uint64_t(
          *checkedByteSize(spec->shape, getElementTypeSize(spec->dtype)));
      llvm::json::Array shape;
      for (int64_t dim : spec->shape)
        shape.push_back(dim);
      header[spec->name] = llvm::json::Object{
          {"dtype", safetensorsDTypeName(spec->dtype)},
          {"shape", std::move(shape)},
          {"data_offsets",
           llvm::json::Array{int64_t(offset), int64_t(offset + bytes)}}};
      infos.push_back(
          {spec->name, spec->dtype, spec->shape, offset, offset + bytes});
      offset += bytes;
    }
    std::string json;
    llvm::raw_string_ostream os(json);
    os << llvm::json::Value(std::move(header));
    os.flush();
    // Spaces up to a multiple of 8 bytes, so that the data is aligned.
    json.append((8 - (8 + json.size()) % 8) % 8, ' ');
    if (json.size() > kMaxSafetensorsHeaderBytes)
      return fail("the header of '" + fileLayout.name + "' would have " +
                  llvm::Twine(json.size()) + " bytes, more than the " +
                  llvm::Twine(kMaxSafetensorsHeaderBytes) +
                  " readers accept: use smaller shards");
    char length[8];
    llvm::support::endian::write64le(length, json.size());
    fileLayout.header = std::string(length, 8) + json;
    uint64_t dataStart = fileLayout.header.size();
    fileLayout.size = dataStart + offset;
    for (SafetensorsTensorInfo &info : infos) {
      info.begin += dataStart;
      info.end += dataStart;
      std::string name = info.name;
      layout.tensors.try_emplace(name, file, std::move(info));
    }
    layout.files.push_back(std::move(fileLayout));
  }
  return layout;
}

//===----------------------------------------------------------------------===//
// Saving
//===----------------------------------------------------------------------===//

std::string mlir::titan::safetensorsStagingDirectory(StringRef outDir) {
  StringRef trimmed = outDir;
  while (trimmed.size() > 1 && trimmed.ends_with("/"))
    trimmed = trimmed.drop_back();
  return (trimmed + ".titan-partial").str();
}

/// Checks that `outDir` is absent, or a folder whose entries a save may
/// replace: safetensors files, the index, and `replaceable`.
static llvm::Error checkReplaceable(StringRef outDir,
                                    llvm::ArrayRef<std::string> replaceable) {
  if (!llvm::sys::fs::exists(outDir))
    return llvm::Error::success();
  if (!llvm::sys::fs::is_directory(outDir))
    return fail("'" + outDir + "' exists and is not a folder");
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(outDir, ec), end; it != end && !ec;
       it.increment(ec)) {
    StringRef name = llvm::sys::path::filename(it->path());
    bool ours = (name.ends_with(".safetensors") &&
                 it->type() == llvm::sys::fs::file_type::regular_file) ||
                name == kSafetensorsIndexFile ||
                llvm::is_contained(replaceable, name);
    if (!ours)
      return fail("'" + outDir + "' holds '" + name +
                  "', which is not part of a safetensors model: a save "
                  "replaces the whole folder, so move it away or save "
                  "elsewhere");
  }
  if (ec)
    return fail("cannot list '" + outDir + "': " + ec.message());
  return llvm::Error::success();
}

/// Syncs `directory` (its entries) to disk.
static llvm::Error syncDirectory(StringRef directory) {
  int fd = ::open(std::string(directory).c_str(),
                  O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  bool synced = fd >= 0 && ::fsync(fd) == 0;
  std::string message = errnoMessage();
  if (fd >= 0)
    ::close(fd);
  if (!synced)
    return fail("cannot sync folder '" + directory + "' to disk: " + message);
  return llvm::Error::success();
}

/// The folder containing `path` ("." for a relative name).
static std::string parentOf(StringRef path) {
  StringRef trimmed = path;
  while (trimmed.size() > 1 && trimmed.ends_with("/"))
    trimmed = trimmed.drop_back();
  StringRef parent = llvm::sys::path::parent_path(trimmed);
  return parent.empty() ? "." : parent.str();
}

llvm::Error
mlir::titan::prepareSafetensorsSave(StringRef outDir,
                                    const SafetensorsLayout &layout,
                                    llvm::ArrayRef<std::string> replaceable) {
  if (llvm::Error err = checkReplaceable(outDir, replaceable))
    return err;
  std::string staging = safetensorsStagingDirectory(outDir);
  if (llvm::sys::fs::exists(staging))
    if (std::error_code ec = llvm::sys::fs::remove_directories(staging))
      return fail("cannot remove the stale staging folder '" + staging +
                  "': " + ec.message());
  if (std::error_code ec = llvm::sys::fs::create_directories(staging))
    return fail("cannot create '" + staging + "': " + ec.message());
  for (const SafetensorsFileLayout &file : layout.files) {
    std::string path = joinPath(staging, file.name);
    int fd =
        ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
      return fail("cannot create '" + path + "': " + errnoMessage());
    bool ok = ::ftruncate(fd, off_t(file.size)) == 0 &&
              pwriteFull(fd, file.header.data(), file.header.size(), 0);
    std::string message = errnoMessage();
    ::close(fd);
    if (!ok) {
      llvm::sys::fs::remove_directories(staging);
      return fail("cannot write '" + path + "' (" + llvm::Twine(file.size) +
                  " bytes): " + message);
    }
  }
  return llvm::Error::success();
}

SafetensorsWriter::SafetensorsWriter(SafetensorsWriter &&other)
    : layout(other.layout), paths(std::move(other.paths)),
      fds(std::move(other.fds)), written(std::move(other.written)) {
  other.fds.clear();
}

SafetensorsWriter &SafetensorsWriter::operator=(SafetensorsWriter &&other) {
  if (this != &other) {
    closeFiles();
    layout = other.layout;
    paths = std::move(other.paths);
    fds = std::move(other.fds);
    written = std::move(other.written);
    other.fds.clear();
  }
  return *this;
}

SafetensorsWriter::~SafetensorsWriter() { closeFiles(); }

void SafetensorsWriter::closeFiles() {
  for (int fd : fds)
    if (fd >= 0)
      ::close(fd);
  fds.clear();
}

llvm::Expected<SafetensorsWriter>
SafetensorsWriter::open(StringRef outDir, const SafetensorsLayout &layout) {
  SafetensorsWriter writer;
  writer.layout = &layout;
  std::string staging = safetensorsStagingDirectory(outDir);
  for (const SafetensorsFileLayout &file : layout.files) {
    std::string path = joinPath(staging, file.name);
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0)
      return fail("cannot open '" + path +
                  "' (did prepareSafetensorsSave run?): " + errnoMessage());
    writer.fds.push_back(fd);
    writer.paths.push_back(path);
    std::string header(file.header.size(), '\0');
    struct stat status;
    if (::fstat(fd, &status) != 0 || uint64_t(status.st_size) != file.size ||
        !preadFull(fd, header.data(), header.size(), 0) ||
        header != file.header)
      return fail("'" + path +
                  "' is not the file this layout prepares (another layout, "
                  "or a save running concurrently?)");
  }
  writer.written.assign(layout.files.size(), false);
  return std::move(writer);
}

llvm::Error SafetensorsWriter::writeBox(StringRef name, const IndexBox &box,
                                        DenseTensorRef source,
                                        const IndexBox &sourceBox,
                                        SafetensorsRowMap rowMap) {
  if (!layout || fds.size() != layout->files.size())
    return fail("writing tensor '" + name + "' through a closed writer");
  auto it = layout->tensors.find(name.str());
  if (it == layout->tensors.end())
    return fail("the save has no tensor '" + name + "'");
  unsigned file = it->second.first;
  const SafetensorsTensorInfo &info = it->second.second;
  if (!canConvertElements(source.dtype, info.dtype))
    return fail("tensor '" + name + "' is saved as " +
                safetensorsDTypeName(info.dtype) +
                " and cannot be written from " +
                stringifyElementType(source.dtype));
  if (llvm::Error err =
          checkBox(name, info.shape, box, sourceBox, source.shape,
                   source.data.size(), getElementTypeSize(source.dtype)))
    return err;
  size_t savedSize = getElementTypeSize(info.dtype);
  size_t sourceSize = getElementTypeSize(source.dtype);
  int fd = fds[file];
  const std::string &path = paths[file];
  written[file] = true;
  return forEachRun(
      info.shape, box, sourceBox, rowMap, name,
      [&](int64_t fileElement, int64_t sourceElement,
          int64_t count) -> llvm::Error {
        uint64_t offset = info.begin + uint64_t(fileElement) * savedSize;
        const char *in = source.data.data() + sourceElement * sourceSize;
        auto writeFailed = [&]() {
          return fail("cannot write tensor '" + name + "' into '" + path +
                      "' at byte " + llvm::Twine(offset) + ": " +
                      errnoMessage());
        };
        if (info.dtype == source.dtype) {
          if (!pwriteFull(fd, in, size_t(count) * savedSize, offset))
            return writeFailed();
          return llvm::Error::success();
        }
        for (int64_t done = 0; done < count;) {
          int64_t part = std::min(count - done, kScratchElements);
          scratch.resize(size_t(part) * savedSize);
          convertElements(source.dtype, in + done * sourceSize, info.dtype,
                          scratch.data(), size_t(part));
          if (!pwriteFull(fd, scratch.data(), scratch.size(), offset))
            return writeFailed();
          done += part;
          offset += uint64_t(part) * savedSize;
        }
        return llvm::Error::success();
      });
}

llvm::Error SafetensorsWriter::close() {
  llvm::Error result = llvm::Error::success();
  for (size_t file = 0; file < fds.size(); ++file)
    if (written[file] && ::fsync(fds[file]) != 0 && !result)
      result =
          fail("cannot sync '" + paths[file] + "' to disk: " + errnoMessage());
  closeFiles();
  layout = nullptr;
  return result;
}

/// Writes `bytes` as `path`, synced.
static llvm::Error writeSynced(const std::string &path, StringRef bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail("cannot create '" + path + "': " + errnoMessage());
  bool ok = pwriteFull(fd, bytes.data(), bytes.size(), 0) && ::fsync(fd) == 0;
  std::string message = errnoMessage();
  ::close(fd);
  if (!ok)
    return fail("cannot write '" + path + "': " + message);
  return llvm::Error::success();
}

llvm::Error mlir::titan::commitSafetensorsSave(
    StringRef outDir, const SafetensorsLayout &layout,
    llvm::ArrayRef<std::pair<std::string, std::string>> extraFiles) {
  std::string staging = safetensorsStagingDirectory(outDir);
  for (const SafetensorsFileLayout &file : layout.files) {
    std::string path = joinPath(staging, file.name);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return fail("cannot open '" + path + "' to commit it: " + errnoMessage());
    struct stat status;
    bool sized =
        ::fstat(fd, &status) == 0 && uint64_t(status.st_size) == file.size;
    bool synced = ::fsync(fd) == 0;
    std::string message = errnoMessage();
    ::close(fd);
    if (!sized)
      return fail("'" + path + "' does not have the layout's " +
                  llvm::Twine(file.size) + " bytes");
    if (!synced)
      return fail("cannot sync '" + path + "' to disk: " + message);
  }
  std::vector<std::string> replaceable;
  for (const auto &[name, contents] : extraFiles) {
    if (!isPlainFileName(name))
      return fail("'" + name + "' is not a file name");
    replaceable.push_back(name);
    if (llvm::Error err = writeSynced(joinPath(staging, name), contents))
      return err;
  }
  if (layout.hasIndex())
    if (llvm::Error err = writeSynced(joinPath(staging, kSafetensorsIndexFile),
                                      layout.indexJson()))
      return err;
  if (llvm::Error err = syncDirectory(staging))
    return err;

  std::string outPath = outDir.str();
  if (!llvm::sys::fs::exists(outDir)) {
    if (::rename(staging.c_str(), outPath.c_str()) != 0)
      return fail("cannot rename '" + staging + "' to '" + outDir +
                  "': " + errnoMessage());
  } else {
    if (llvm::Error err = checkReplaceable(outDir, replaceable))
      return err;
    // Swap the new model and the old one in one step, then remove the old.
    if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, outPath.c_str(),
                    RENAME_EXCHANGE) != 0) {
      if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
        return fail("cannot exchange '" + staging + "' and '" + outDir +
                    "': " + errnoMessage());
      // A file system without the exchange: move the old model aside first.
      std::string old = outPath + ".titan-old";
      llvm::sys::fs::remove_directories(old);
      if (::rename(outPath.c_str(), old.c_str()) != 0)
        return fail("cannot move '" + outDir + "' aside: " + errnoMessage());
      if (::rename(staging.c_str(), outPath.c_str()) != 0) {
        std::string message = errnoMessage();
        ::rename(old.c_str(), outPath.c_str());
        return fail("cannot rename '" + staging + "' to '" + outDir +
                    "': " + message);
      }
      llvm::sys::fs::remove_directories(old);
    } else {
      llvm::sys::fs::remove_directories(staging);
    }
  }
  return syncDirectory(parentOf(outDir));
}

void mlir::titan::discardSafetensorsSave(StringRef outDir) {
  llvm::sys::fs::remove_directories(safetensorsStagingDirectory(outDir));
}
