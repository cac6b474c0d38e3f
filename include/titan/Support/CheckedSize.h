//===- CheckedSize.h - sizes of shapes read from files ----------*- C++ -*-===//
//
// Element counts and byte sizes computed from shapes that come from files
// (.npy headers, torch.save blobs, DCP .metadata) with overflow checks:
// header-only, so the .npy, torch.save and checkpoint readers share it
// without linking each other.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_SUPPORT_CHECKEDSIZE_H
#define TITAN_SUPPORT_CHECKEDSIZE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <cstdint>
#include <optional>

namespace mlir::titan {

/// The size in bytes of a C-contiguous array of `shape` whose elements have
/// `elementSize` bytes, or nullopt when a dimension is negative or the size
/// does not fit in int64_t. As NumPy does, the product of the nonzero
/// dimensions must fit even when a zero dimension makes the array empty, so
/// that strides and offsets computed from the shape cannot wrap either.
/// Every reader of a shape from a file (.npy, torch.save, DCP .metadata)
/// checks it with this before allocating, copying or comparing sizes.
inline std::optional<int64_t> checkedByteSize(llvm::ArrayRef<int64_t> shape,
                                              int64_t elementSize) {
  std::optional<int64_t> bytes = elementSize;
  bool empty = false;
  for (int64_t dim : shape) {
    if (dim < 0)
      return std::nullopt;
    if (dim == 0)
      empty = true;
    else if (!(bytes = llvm::checkedMul(*bytes, dim)))
      return std::nullopt;
  }
  return empty ? 0 : *bytes;
}

/// The number of elements of a C-contiguous array of `shape` (1 for a 0-d
/// array), or nullopt when a dimension is negative or the count does not fit
/// in int64_t (checkedByteSize with 1-byte elements).
inline std::optional<int64_t>
checkedElementCount(llvm::ArrayRef<int64_t> shape) {
  return checkedByteSize(shape, 1);
}

} // namespace mlir::titan

#endif // TITAN_SUPPORT_CHECKEDSIZE_H
