//===- CudaStepMemory.cpp - the step's regions on the GPU -----------------===//

#include "cuda/CudaStepMemory.h"
#include "cuda/CudaStatus.h"

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
  return checkCuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize",
                   "the step and its copies");
}
