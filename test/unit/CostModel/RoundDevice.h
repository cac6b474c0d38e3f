//===- RoundDevice.h - a device of round figures for unit tests -*- C++ -*-===//
//
// The device the cost-model and report tests predict on, with figures that
// make hand arithmetic easy (test/Spmd/Inputs/round-device.toml is the same
// device as a file).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TEST_UNIT_COSTMODEL_ROUNDDEVICE_H
#define TITAN_TEST_UNIT_COSTMODEL_ROUNDDEVICE_H

#include "titan/CostModel/Device.h"

namespace mlir::titan::test {

/// Matmul peaks of 100 TFLOP/s (bf16) and 10 TFLOP/s (f32), a vector peak
/// of 5 TFLOP/s, 1 TB/s of memory at efficiency 0.5, 1 us per op, GEMM
/// efficiency 0.1 at 1e6 FLOPs rising to 0.5 at 1e8, attention at 0.25 of
/// the matmul peak; 100 GB/s and 2 us per ring step within a node, 10 GB/s
/// and 10 us between nodes.
inline DeviceDescription makeRoundDevice() {
  DeviceDescription device;
  device.name = "round";
  device.description = "round figures";
  device.memoryBytes = 1e9;
  device.matmulPeak[static_cast<unsigned>(ElementType::BF16)] = 100e12;
  device.matmulPeak[static_cast<unsigned>(ElementType::F32)] = 10e12;
  device.vectorPeak = 5e12;
  device.memoryBytesPerSecond = 1e12;
  device.memoryEfficiency = 0.5;
  device.opOverheadSeconds = 1e-6;
  device.gemmEfficiency = {{1e6, 0.1}, {1e8, 0.5}};
  device.attentionEfficiency = 0.25;
  device.intraNode = {100e9, 2e-6};
  device.interNode = {10e9, 10e-6};
  return device;
}

} // namespace mlir::titan::test

#endif // TITAN_TEST_UNIT_COSTMODEL_ROUNDDEVICE_H
