//===- DeviceArena.h - a rank's memory regions on its GPU -------*- C++ -*-===//
//
// The CUDA counterpart of the CPU runtime's Regions (core/Trainer.h): the
// three regions of a compiled program (docs/runtime.md: arena, state,
// inputs), each one cudaMalloc of exactly the planned size, allocated once
// when the rank starts and zeroed; a value lives at its region's base plus
// the offset the memory planner gave it. Nothing is allocated while the rank
// steps.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_DEVICEARENA_H
#define TITAN_RUNTIME_CUDA_DEVICEARENA_H

#include "core/ProgramDescription.h"
#include "core/Status.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace titan::rt::cuda {

/// The arena, state and inputs of one rank in GPU memory.
class DeviceArena : public RegionTable {
public:
  DeviceArena() = default;
  ~DeviceArena();
  DeviceArena(const DeviceArena &) = delete;
  DeviceArena &operator=(const DeviceArena &) = delete;

  /// Allocates and zeroes the regions of `description` on the current
  /// device.
  Status allocate(const ProgramDescription &description);
  /// Allocates and zeroes regions of these sizes (in bytes, >= 0) on the
  /// current device; a failure names the region, its size and the GPU's
  /// free memory.
  Status allocate(int64_t arenaBytes, int64_t stateBytes, int64_t inputBytes);

  /// Copies `bytes` bytes from host memory into `region` at `offset`
  /// (checked against the region's size), ordered on `stream`.
  Status upload(Region region, int64_t offset, const void *source,
                int64_t bytes, cudaStream_t stream) const;
  /// Copies `bytes` bytes of `region` at `offset` into host memory, ordered
  /// on `stream` (the host buffer is complete once the stream is).
  Status download(Region region, int64_t offset, void *target, int64_t bytes,
                  cudaStream_t stream) const;

private:
  void release();
};

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_DEVICEARENA_H
