//===- Launch.cuh - launching the CUDA kernels -----------------*- CUDA -*-===//
//
// What every launcher does after checking its arguments and picking the
// kernel instance for its element type (withFloatType, DeviceSupport.cuh):
// validate the launch shape, opt in to more than 48 KiB of shared memory
// where needed, launch on the stream and turn a launch error into a Status.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_LAUNCH_CUH
#define TITAN_RUNTIME_CUDA_LAUNCH_CUH

#include "cuda/CudaStatus.h"
#include "cuda/DeviceSupport.cuh"
#include "cuda/LaunchConfig.h"

namespace titan::rt::cuda {

inline dim3 toDim3(const Dim3 &dim) {
  return dim3(unsigned(dim.x), unsigned(dim.y), unsigned(dim.z));
}

/// Launches `kernel` with `config` on `stream` (`name` in errors).
template <typename... Params, typename... Args>
Status launchKernel(const char *name, const LaunchConfig &config,
                    cudaStream_t stream, void (*kernel)(Params...),
                    Args &&...args) {
  TITANRT_RETURN_IF_ERROR(validateLaunch(name, config));
  if (config.sharedBytes > kDefaultSharedBytes)
    TITANRT_RETURN_IF_ERROR(checkCuda(
        cudaFuncSetAttribute(reinterpret_cast<const void *>(kernel),
                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                             int(config.sharedBytes)),
        "cudaFuncSetAttribute", name));
  kernel<<<toDim3(config.grid), toDim3(config.block),
           size_t(config.sharedBytes), stream>>>(std::forward<Args>(args)...);
  return checkLaunch(name);
}

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_LAUNCH_CUH
