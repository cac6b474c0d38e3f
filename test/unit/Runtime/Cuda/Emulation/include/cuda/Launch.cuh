//===- Launch.cuh - emulated kernel launches --------------------*- C++ -*-===//
//
// runtime/cuda/Launch.cuh for EmulatedCuda.h: launchKernel validates the
// configuration as the real one does, then runs the grid's blocks one
// after another (titan::emulation::runGrid) and returns when they are done (the
// blocks' dynamic shared memory is the array `sharedMemory` the including file
// defines, since only one block runs at a time).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_LAUNCH_CUH
#define TITAN_RUNTIME_CUDA_LAUNCH_CUH

#include "cuda/CudaStatus.h"
#include "cuda/DeviceSupport.cuh"
#include "cuda/LaunchConfig.h"

#include <tuple>
#include <vector>

namespace titan::rt::cuda {

namespace emulated {
/// The kernels launched so far, in order.
inline std::vector<void *> launchedKernels;
} // namespace emulated

template <typename... Params, typename... Args>
Status launchKernel(const char *name, const LaunchConfig &config, cudaStream_t,
                    void (*kernel)(Params...), Args &&...args) {
  TITANRT_RETURN_IF_ERROR(validateLaunch(name, config));
  emulated::launchedKernels.push_back(reinterpret_cast<void *>(kernel));
  const std::tuple<Params...> params(std::forward<Args>(args)...);
  titan::emulation::runGrid(
      dim3(unsigned(config.grid.x), unsigned(config.grid.y),
           unsigned(config.grid.z)),
      dim3(unsigned(config.block.x), unsigned(config.block.y),
           unsigned(config.block.z)),
      [&] { std::apply(kernel, params); });
  return Status::success();
}

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_LAUNCH_CUH
