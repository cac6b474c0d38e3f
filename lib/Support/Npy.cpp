//===- Npy.cpp - NumPy .npy files (format 1.0) ----------------------------===//

#include "titan/Support/Npy.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir::titan;
using llvm::StringRef;

/// The NumPy descr string of each element type an .npy file may hold.
static constexpr std::pair<ElementType, StringRef> kDescrs[] = {
    {ElementType::F32, "<f4"}, {ElementType::F64, "<f8"},
    {ElementType::F16, "<f2"}, {ElementType::I64, "<i8"},
    {ElementType::I32, "<i4"}, {ElementType::U16, "<u2"},
    {ElementType::U8, "|u1"},  {ElementType::I1, "|b1"},
};

ElementType mlir::titan::getNpyStorageType(ElementType type) {
  return type == ElementType::BF16 ? ElementType::U16 : type;
}

StringRef mlir::titan::npyDescr(ElementType type) {
  ElementType stored = getNpyStorageType(type);
  for (const auto &[candidate, descr] : kDescrs)
    if (candidate == stored)
      return descr;
  llvm_unreachable("every element type but bf16 has a descr");
}

int64_t NpyArray::numElements() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

static llvm::Error npyError(StringRef name, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "'" + name + "': " + message);
}

/// Formats `shape` as NumPy prints it, e.g. "(2, 3)" or "(4,)".
static std::string formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

/// Returns the text after `'key':` in the header dictionary, with leading
/// spaces removed, or an empty string when the key is absent.
static StringRef headerValue(StringRef header, StringRef key) {
  std::string quoted = ("'" + key + "':").str();
  size_t pos = header.find(quoted);
  if (pos == StringRef::npos)
    return {};
  return header.drop_front(pos + quoted.size()).ltrim();
}

namespace {
/// The header fields of an .npy file and a view of its data.
struct NpyView {
  ElementType dtype = ElementType::F32;
  llvm::SmallVector<int64_t> shape;
  StringRef data;
};
} // namespace

/// Parses the header of `contents` and checks that the data is all there.
static llvm::Expected<NpyView> parseNpyView(StringRef contents,
                                            StringRef name) {
  if (!contents.starts_with("\x93NUMPY") || contents.size() < 10)
    return npyError(name, "not an .npy file (bad magic)");
  uint8_t major = contents[6];
  size_t lengthBytes = major == 1 ? 2 : 4;
  if (major < 1 || major > 3)
    return npyError(name, "unsupported .npy version " + llvm::Twine(major));
  if (contents.size() < 8 + lengthBytes)
    return npyError(name, "truncated .npy header");
  uint64_t headerLength =
      major == 1 ? llvm::support::endian::read16le(contents.data() + 8)
                 : llvm::support::endian::read32le(contents.data() + 8);
  size_t dataStart = 8 + lengthBytes + headerLength;
  if (contents.size() < dataStart)
    return npyError(name, "truncated .npy header");
  StringRef header = contents.slice(8 + lengthBytes, dataStart);

  NpyView array;
  StringRef descr = headerValue(header, "descr");
  if (!descr.consume_front("'"))
    return npyError(name, "header has no 'descr'");
  descr = descr.take_until([](char c) { return c == '\''; });
  if (descr.size() == 3 && descr[0] == '=')
    descr = descr.drop_front();
  const std::pair<ElementType, StringRef> *found = nullptr;
  for (const auto &entry : kDescrs)
    if (entry.second == descr || entry.second.drop_front() == descr)
      found = &entry;
  if (!found) {
    // Name complex arrays as such: their descr alone is cryptic.
    StringRef complexName = llvm::StringSwitch<StringRef>(descr.ltrim("<>=|"))
                                .Case("c8", "complex64")
                                .Case("c16", "complex128")
                                .Case("c32", "complex256")
                                .Default("");
    std::string complexNote =
        complexName.empty() ? ""
                            : (": " + complexName + " is not supported").str();
    return npyError(name, "unsupported dtype '" + descr + "'" + complexNote +
                              " (supported: <f4 <f8 <f2 <i8 <i4 <u2 |u1 "
                              "|b1, little-endian)");
  }
  array.dtype = found->first;

  if (!headerValue(header, "fortran_order").starts_with("False"))
    return npyError(name, "Fortran-ordered arrays are not supported; save "
                          "with numpy.ascontiguousarray");

  StringRef shape = headerValue(header, "shape");
  if (!shape.consume_front("("))
    return npyError(name, "header has no 'shape'");
  shape = shape.take_until([](char c) { return c == ')'; });
  llvm::SmallVector<StringRef> dims;
  shape.split(dims, ',', -1, /*KeepEmpty=*/false);
  for (StringRef dim : dims) {
    dim = dim.trim();
    if (dim.empty())
      continue;
    int64_t value;
    if (dim.getAsInteger(10, value) || value < 0)
      return npyError(name, "bad dimension '" + dim + "' in shape");
    array.shape.push_back(value);
  }

  // The data the shape needs must be in the file: checked before anything
  // is allocated or copied for it.
  uint64_t present = contents.size() - dataStart;
  std::optional<int64_t> bytes =
      checkedByteSize(array.shape, getElementTypeSize(array.dtype));
  if (!bytes)
    return npyError(name, "shape " + formatShape(array.shape) + " of " +
                              npyDescr(array.dtype) +
                              " overflows: its size exceeds 2^63-1 bytes "
                              "(the file has " +
                              llvm::Twine(present) + " data bytes)");
  if (present < uint64_t(*bytes))
    return npyError(name, "truncated data: shape " + formatShape(array.shape) +
                              " needs " + llvm::Twine(*bytes) +
                              " bytes, the file has " + llvm::Twine(present));
  array.data = contents.substr(dataStart, *bytes);
  return array;
}

llvm::Expected<NpyArray> mlir::titan::parseNpy(StringRef contents,
                                               StringRef name) {
  llvm::Expected<NpyView> view = parseNpyView(contents, name);
  if (!view)
    return view.takeError();
  return NpyArray{view->dtype, std::move(view->shape),
                  std::vector<char>(view->data.begin(), view->data.end())};
}

/// The contents of the .npy file `path` (mapped where the system can). Only
/// regular files are read: a device such as /dev/zero, or a FIFO, behind
/// the name would be read without end.
static llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
openNpyFile(StringRef path) {
  llvm::sys::fs::file_status status;
  if (std::error_code error = llvm::sys::fs::status(path, status))
    return npyError(path, "cannot read: " + error.message());
  if (status.type() != llvm::sys::fs::file_type::regular_file)
    return npyError(path, "is not a regular file (a directory, device or "
                          "pipe, possibly behind a symbolic link); .npy "
                          "arrays are read from files");
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return npyError(path, "cannot read: " + buffer.getError().message());
  return std::move(*buffer);
}

llvm::Expected<MappedNpy> mlir::titan::mapNpy(StringRef path) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      openNpyFile(path);
  if (!buffer)
    return buffer.takeError();
  llvm::Expected<NpyView> view = parseNpyView((*buffer)->getBuffer(), path);
  if (!view)
    return view.takeError();
  return MappedNpy{view->dtype, std::move(view->shape), view->data,
                   std::move(*buffer)};
}

llvm::Expected<NpyArray> mlir::titan::readNpy(StringRef path) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      openNpyFile(path);
  if (!buffer)
    return buffer.takeError();
  return parseNpy((*buffer)->getBuffer(), path);
}

/// The .npy header of an array of `dtype` and `shape`, padded so that the
/// data starts 64-byte aligned.
static std::string npyHeader(ElementType dtype, llvm::ArrayRef<int64_t> shape) {
  std::string header =
      "{'descr': '" + npyDescr(dtype).str() +
      "', 'fortran_order': False, 'shape': " + formatShape(shape) + ", }";
  // Pad with spaces and a newline so that the data starts 64-byte aligned.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';

  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header;
}

std::string mlir::titan::serializeNpy(const NpyArray &array) {
  std::string out = npyHeader(array.dtype, array.shape);
  out.append(array.data.begin(), array.data.end());
  return out;
}

llvm::Error mlir::titan::writeNpy(StringRef path, ElementType dtype,
                                  llvm::ArrayRef<int64_t> shape,
                                  StringRef data) {
  // Never write a file whose header promises data it does not hold.
  std::optional<int64_t> bytes =
      checkedByteSize(shape, getElementTypeSize(dtype));
  if (!bytes || uint64_t(*bytes) != data.size()) {
    std::string needs = bytes ? "it needs " + std::to_string(*bytes)
                              : std::string("its size overflows");
    return npyError(path, "refusing to write shape " + formatShape(shape) +
                              " of " + npyDescr(dtype) + " with " +
                              llvm::Twine(data.size()) + " data bytes (" +
                              needs + ")");
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return npyError(path, "cannot write: " + ec.message());
  os << npyHeader(dtype, shape) << data;
  os.close();
  if (os.has_error()) {
    std::string message = os.error().message();
    os.clear_error();
    return npyError(path, "cannot write: " + message);
  }
  return llvm::Error::success();
}

llvm::Error mlir::titan::writeNpy(StringRef path, const NpyArray &array) {
  return writeNpy(path, array.dtype, array.shape,
                  StringRef(array.data.data(), array.data.size()));
}
