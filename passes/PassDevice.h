//===- PassDevice.h - the device a pass's cost decisions use ----*- C++ -*-===//
//
// Passes that weigh time (buckets, async TP's chunks, recomputation) load
// the device their `device` option names (a bundled name or a TOML file,
// titan/Config/DeviceFile.h) and report a bad one the same way.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PASSES_PASSDEVICE_H
#define TITAN_PASSES_PASSDEVICE_H

#include "titan/Config/DeviceFile.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"

namespace mlir::titan {

/// The device `nameOrPath` names, or failure after an error at `loc`:
/// "<pass>: device '<nameOrPath>': <why>".
inline FailureOr<DeviceDescription> loadPassDevice(Location loc, StringRef pass,
                                                   StringRef nameOrPath) {
  llvm::Expected<DeviceDescription> device = loadDevice(nameOrPath);
  if (device)
    return std::move(*device);
  emitError(loc) << pass << ": device '" << nameOrPath
                 << "': " << llvm::toString(device.takeError());
  return failure();
}

} // namespace mlir::titan

#endif // TITAN_PASSES_PASSDEVICE_H
