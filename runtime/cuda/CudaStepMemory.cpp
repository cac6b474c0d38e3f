//===- CudaStepMemory.cpp - the step's regions on the GPU -----------------===//

#include "cuda/CudaStepMemory.h"

#include "cuda/CudaStatus.h"
#include "cuda/KernelModules.h"

using namespace titan::rt;
using namespace titan::rt::cuda;

Status CudaStepMemory::allocate(const ProgramDescription &description,
                                Regions &hostMirror) {
  mirror = &hostMirror;
  return arena.allocate(description);
}

Status CudaStepMemory::upload(Region region, int64_t offset, int64_t bytes) {
  return arena.upload(region, offset, mirror->getBase(region) + offset, bytes,
                      stream);
}

Status CudaStepMemory::download(Region region, int64_t offset, int64_t bytes) {
  return arena.download(region, offset, mirror->getBase(region) + offset, bytes,
                        stream);
}

Status CudaStepMemory::synchronize() {
  TITANRT_RETURN_IF_ERROR(checkCuda(cudaStreamSynchronize(stream),
                                    "cudaStreamSynchronize",
                                    "the step and its copies"));
  // The compiler's kernels cannot return a status: their launch errors
  // wait here.
  if (const char *error = titanrt_cuda_take_launch_error())
    return Status::internal(error);
  return Status::success();
}

std::optional<int64_t> CudaStepMemory::getDeviceBytesInUse() const {
  size_t freeBytes = 0, totalBytes = 0;
  if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess)
    return std::nullopt;
  return int64_t(totalBytes - freeBytes);
}
