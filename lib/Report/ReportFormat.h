//===- ReportFormat.h - numbers as the plan report prints them --*- C++ -*-===//
//
// Seconds, counts and bytes in the units a person reads, shared by the plan
// report's sections.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_LIB_REPORT_REPORTFORMAT_H
#define TITAN_LIB_REPORT_REPORTFORMAT_H

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdint>
#include <string>

namespace mlir::titan {

/// "12.35 ms", "1.234 s", "45.6 us".
inline std::string humanSeconds(double seconds) {
  if (seconds >= 1)
    return llvm::formatv("{0:F3} s", seconds).str();
  if (seconds >= 1e-3)
    return llvm::formatv("{0:F2} ms", seconds * 1e3).str();
  return llvm::formatv("{0:F1} us", seconds * 1e6).str();
}

/// "6.29 M", "1.23 G", "45.0 T" (powers of 1000).
inline std::string humanCount(double value) {
  const char *units[] = {"", " k", " M", " G", " T", " P", " E"};
  int unit = 0;
  while (std::abs(value) >= 1000 && unit < 6) {
    value /= 1000;
    ++unit;
  }
  return llvm::formatv("{0:F2}{1}", value, units[unit]).str();
}

/// "12.34 MiB", "2.00 KiB", "512 B".
inline std::string formatBytes(int64_t bytes) {
  if (bytes >= (int64_t(1) << 30))
    return llvm::formatv("{0:F2} GiB", bytes / double(int64_t(1) << 30)).str();
  if (bytes >= (1 << 20))
    return llvm::formatv("{0:F2} MiB", bytes / double(1 << 20)).str();
  if (bytes >= (1 << 10))
    return llvm::formatv("{0:F2} KiB", bytes / double(1 << 10)).str();
  return std::to_string(bytes) + " B";
}

} // namespace mlir::titan

#endif // TITAN_LIB_REPORT_REPORTFORMAT_H
