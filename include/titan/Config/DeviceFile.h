//===- DeviceFile.h - device descriptions as TOML files ---------*- C++ -*-===//
//
// A device file describes one device for the cost model
// (titan/CostModel/Device.h) in TOML; docs/cost-model.md lists its keys.
// titan bundles files for H100 SXM, H200, A100 SXM, B200 and this project's
// CPU machine ("cpu", written by titan-calibrate); `[hardware] device` in a
// training config names one of them or a file.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CONFIG_DEVICEFILE_H
#define TITAN_CONFIG_DEVICEFILE_H

#include "titan/CostModel/Device.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace mlir::titan {

/// Parses the device file `text` (named `fileName` in errors) and verifies
/// it (verifyDevice).
llvm::Expected<DeviceDescription> parseDeviceFile(llvm::StringRef text,
                                                  llvm::StringRef fileName);

/// The names of the bundled devices, in a stable order.
std::vector<llvm::StringRef> getBundledDeviceNames();

/// The bundled device `nameOrPath`, or else the device file at that path
/// (a name that is neither gets an error listing the bundled names).
llvm::Expected<DeviceDescription> loadDevice(llvm::StringRef nameOrPath);

} // namespace mlir::titan

#endif // TITAN_CONFIG_DEVICEFILE_H
