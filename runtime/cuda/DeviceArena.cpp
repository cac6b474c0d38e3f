//===- DeviceArena.cpp - a rank's memory regions on its GPU ---------------===//

#include "cuda/DeviceArena.h"
#include "cuda/CudaStatus.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

const char *regionName(int region) {
  return getRegionName(static_cast<Region>(region));
}

} // namespace

DeviceArena::~DeviceArena() { release(); }

void DeviceArena::release() {
  for (int i = 0; i < 3; ++i) {
    if (bases[i])
      (void)cudaFree(bases[i]);
    bases[i] = nullptr;
    sizes[i] = 0;
  }
}

Status DeviceArena::allocate(const ProgramDescription &description) {
  return allocate(description.arenaBytes, description.stateBytes,
                  description.inputBytes);
}

Status DeviceArena::allocate(int64_t arenaBytes, int64_t stateBytes,
                             int64_t inputBytes) {
  release();
  int64_t bytes[3] = {arenaBytes, stateBytes, inputBytes};
  for (int i = 0; i < 3; ++i) {
    if (bytes[i] < 0)
      return Status::invalidArgument(std::string("the ") + regionName(i) +
                                     " cannot have " +
                                     std::to_string(bytes[i]) + " bytes");
    // cudaMalloc of 0 bytes returns null; keep a valid base for empty
    // regions as the CPU runtime does.
    size_t size = size_t(std::max<int64_t>(bytes[i], 1));
    void *memory = nullptr;
    cudaError_t error = cudaMalloc(&memory, size);
    if (error != cudaSuccess) {
      size_t freeBytes = 0, totalBytes = 0;
      std::string what = std::string("the ") + regionName(i) + ", " +
                         formatDeviceBytes(bytes[i]);
      (void)cudaGetLastError();
      if (cudaMemGetInfo(&freeBytes, &totalBytes) == cudaSuccess)
        what += "; " + formatDeviceBytes(int64_t(freeBytes)) + " of " +
                formatDeviceBytes(int64_t(totalBytes)) + " free";
      release();
      return checkCuda(error, "cudaMalloc", what);
    }
    bases[i] = static_cast<uint8_t *>(memory);
    sizes[i] = bytes[i];
    TITANRT_RETURN_IF_ERROR(
        checkCuda(cudaMemset(memory, 0, size), "cudaMemset", regionName(i)));
  }
  return Status::success();
}

Status DeviceArena::upload(Region region, int64_t offset, const void *source,
                           int64_t bytes, cudaStream_t stream) const {
  TITANRT_RETURN_IF_ERROR(checkRange("upload", region, offset, bytes));
  if (bytes == 0)
    return Status::success();
  return checkCuda(cudaMemcpyAsync(getBase(region) + offset, source,
                                   size_t(bytes), cudaMemcpyHostToDevice,
                                   stream),
                   "cudaMemcpyAsync", "host to GPU");
}

Status DeviceArena::download(Region region, int64_t offset, void *target,
                             int64_t bytes, cudaStream_t stream) const {
  TITANRT_RETURN_IF_ERROR(checkRange("download", region, offset, bytes));
  if (bytes == 0)
    return Status::success();
  return checkCuda(cudaMemcpyAsync(target, getBase(region) + offset,
                                   size_t(bytes), cudaMemcpyDeviceToHost,
                                   stream),
                   "cudaMemcpyAsync", "GPU to host");
}
