//===- FormatInts.h - shapes and coordinates in messages --------*- C++ -*-===//
//
// One spelling of a shape, offsets or sizes in titan's messages and tools:
// "[4, 6]", as PyTorch prints a torch.Size's elements.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_SUPPORT_FORMATINTS_H
#define TITAN_SUPPORT_FORMATINTS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

namespace mlir::titan {

/// Formats a shape, offsets or sizes as "[1, 2]".
inline std::string formatInts(llvm::ArrayRef<int64_t> values) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '[';
  llvm::interleaveComma(values, os);
  os << ']';
  return text;
}

} // namespace mlir::titan

#endif // TITAN_SUPPORT_FORMATINTS_H
