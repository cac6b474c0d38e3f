//===- Launch.cuh - emulated kernel launches --------------------*- C++ -*-===//
//
// runtime/cuda/Launch.cuh for EmulatedCuda.h: launchKernel validates the
// configuration as the real one does, then runs the grid on CPU threads,
// one block after another (the blocks' dynamic shared memory is the array
// `sharedMemory` the including test defines, since only one block runs at a
// time).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_LAUNCH_CUH
#define TITAN_RUNTIME_CUDA_LAUNCH_CUH

#include "cuda/CudaStatus.h"
#include "cuda/DeviceSupport.cuh"
#include "cuda/LaunchConfig.h"

#include <memory>
#include <thread>
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
  const int threads = int(config.block.count());
  for (int64_t z = 0; z < config.grid.z; ++z)
    for (int64_t y = 0; y < config.grid.y; ++y)
      for (int64_t x = 0; x < config.grid.x; ++x) {
        auto block = std::make_unique<titan::emulation::Block>();
        std::barrier<> blockBarrier(threads);
        std::vector<std::unique_ptr<std::barrier<>>> warps;
        for (int warp = 0; warp < (threads + 31) / 32; ++warp) {
          warps.push_back(std::make_unique<std::barrier<>>(32));
          block->warps[warp] = warps.back().get();
        }
        block->block = &blockBarrier;
        std::vector<std::thread> pool;
        for (int thread = 0; thread < threads; ++thread)
          pool.emplace_back([&, thread] {
            titan::emulation::currentBlock = block.get();
            threadIdx = {unsigned(thread), 0, 0};
            blockIdx = {unsigned(x), unsigned(y), unsigned(z)};
            blockDim = dim3(unsigned(config.block.x), 1, 1);
            gridDim = dim3(unsigned(config.grid.x), unsigned(config.grid.y),
                           unsigned(config.grid.z));
            std::apply(kernel, params);
          });
        for (std::thread &thread : pool)
          thread.join();
      }
  return Status::success();
}

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_LAUNCH_CUH
