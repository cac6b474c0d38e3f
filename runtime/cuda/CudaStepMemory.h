//===- CudaStepMemory.h - the step's regions on the GPU ---------*- C++ -*-===//
//
// StepMemory (core/StepMemory.h) of the CUDA backend: the step function gets
// the DeviceArena's regions, and the Trainer's copies between them and its
// host mirror are queued on the stream the step's work is queued on, so an
// upload is done before the step's kernels read it and a download starts
// after they wrote it; synchronize() waits for that stream and reports the
// first launch error of the compiler's kernels (KernelModules.h) since the
// last one.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_CUDASTEPMEMORY_H
#define TITAN_RUNTIME_CUDA_CUDASTEPMEMORY_H

#include "core/StepMemory.h"
#include "cuda/DeviceArena.h"

#include <cuda_runtime_api.h>

namespace titan::rt::cuda {

/// The step's regions in GPU memory, copied on one stream.
class CudaStepMemory final : public StepMemory {
public:
  /// Copies on `stream`: the stream the step's work is queued on
  /// (CudaBackend::getStream).
  explicit CudaStepMemory(cudaStream_t stream) : stream(stream) {}

  Status allocate(const ProgramDescription &description,
                  Regions &mirror) override;
  uint8_t *getStepBase(Region region) const override {
    return arena.getBase(region);
  }
  Status upload(Region region, int64_t offset, int64_t bytes) override;
  Status download(Region region, int64_t offset, int64_t bytes) override;
  Status synchronize() override;
  /// The GPU's memory in use (cudaMemGetInfo: total minus free, so other
  /// processes on the GPU count too).
  std::optional<int64_t> getDeviceBytesInUse() const override;

private:
  cudaStream_t stream;
  Regions *mirror = nullptr;
  DeviceArena arena;
};

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_CUDASTEPMEMORY_H
