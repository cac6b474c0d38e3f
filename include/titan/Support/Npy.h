//===- Npy.h - NumPy .npy files (format 1.0) --------------------*- C++ -*-===//
//
// Reads and writes NumPy's .npy format, version 1.0 (and reads 2.0/3.0
// headers), for little-endian, C-ordered arrays of a few element types.
// NumPy has no bfloat16: titan stores bfloat16 arrays as their raw bits with
// descr '<u2' (uint16); the caller decides what '<u2' means.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_SUPPORT_NPY_H
#define TITAN_SUPPORT_NPY_H

#include "titan/Support/CheckedSize.h"
#include "titan/Support/ElementType.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mlir::titan {

/// The element type an .npy file holds `type` as: `type` itself, except
/// bf16, which NumPy lacks: its raw bits travel as U16 ('<u2').
ElementType getNpyStorageType(ElementType type);

/// The NumPy descr string of `type` (little-endian), e.g. "<f4"; bf16's is
/// its storage type's, "<u2".
llvm::StringRef npyDescr(ElementType type);

/// A C-ordered array: element type, shape and the raw little-endian bytes.
struct NpyArray {
  ElementType dtype = ElementType::F32;
  llvm::SmallVector<int64_t> shape;
  std::vector<char> data;

  /// The number of elements (1 for a 0-d array).
  int64_t numElements() const;
};

/// Parses the contents of an .npy file. `name` is used in error messages.
llvm::Expected<NpyArray> parseNpy(llvm::StringRef contents,
                                  llvm::StringRef name);

/// Reads an .npy file from disk.
llvm::Expected<NpyArray> readNpy(llvm::StringRef path);

/// An .npy file mapped into memory: its element type and shape, and a view
/// of its data that lives as long as `buffer`.
struct MappedNpy {
  ElementType dtype = ElementType::F32;
  llvm::SmallVector<int64_t> shape;
  llvm::StringRef data;
  std::unique_ptr<llvm::MemoryBuffer> buffer;
};

/// Maps an .npy file without copying its data (pages are read as they are
/// touched).
llvm::Expected<MappedNpy> mapNpy(llvm::StringRef path);

/// Serializes `array` in .npy format 1.0.
std::string serializeNpy(const NpyArray &array);

/// Writes an array of `dtype` and `shape` whose data is `data` to `path`
/// (format 1.0).
llvm::Error writeNpy(llvm::StringRef path, ElementType dtype,
                     llvm::ArrayRef<int64_t> shape, llvm::StringRef data);

/// Writes `array` to `path` (format 1.0).
llvm::Error writeNpy(llvm::StringRef path, const NpyArray &array);

} // namespace mlir::titan

#endif // TITAN_SUPPORT_NPY_H
