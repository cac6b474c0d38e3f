//===- KernelModules.cpp - launching the compiler's kernels ---------------===//
//
// Through the CUDA runtime's library API (cudaLibraryLoadData,
// cudaLibraryGetKernel, cudaLaunchKernel with a cudaKernel_t), like the
// rest of the backend: nothing links the driver library, so programs and
// tests start on machines without a GPU.
//
//===----------------------------------------------------------------------===//

#include "cuda/KernelModules.h"

#include "cuda/CudaStatus.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

/// A kernel of a loaded image, with its name for errors.
struct KernelFunction {
  cudaKernel_t kernel;
  std::string name;
};

/// A registered image of kernels, loaded on first use.
struct KernelModule {
  const void *image;
  size_t size;
  std::mutex mutex;
  cudaLibrary_t library = nullptr;
  std::map<std::string, std::unique_ptr<KernelFunction>> functions;
};

thread_local void *computeStream = nullptr;
/// The first error since the last titanrt_cuda_take_launch_error.
thread_local std::optional<std::string> pendingError;
/// The text the last titanrt_cuda_take_launch_error returned.
thread_local std::string takenError;

/// Records `status` unless it is OK or an earlier error is pending (the
/// first error is the cause of the later ones).
void record(const Status &status) {
  if (!status.ok() && !pendingError)
    pendingError = status.getMessage();
}

} // namespace

void *titanrt_cuda_stream(void) { return computeStream; }

void titanrt_cuda_set_stream(void *stream) { computeStream = stream; }

const char *titanrt_cuda_take_launch_error(void) {
  if (!pendingError)
    return nullptr;
  takenError = std::move(*pendingError);
  pendingError.reset();
  return takenError.c_str();
}

void *mgpuModuleLoad(void *image, size_t size) {
  auto *module = new KernelModule;
  module->image = image;
  module->size = size;
  return module;
}

void mgpuModuleUnload(void *handle) {
  auto *module = static_cast<KernelModule *>(handle);
  if (module->library)
    (void)cudaLibraryUnload(module->library);
  delete module;
}

void *mgpuModuleGetFunction(void *handle, const char *name) {
  auto *module = static_cast<KernelModule *>(handle);
  std::lock_guard<std::mutex> lock(module->mutex);
  if (!module->library) {
    Status loaded =
        checkCuda(cudaLibraryLoadData(&module->library, module->image, nullptr,
                                      nullptr, 0, nullptr, nullptr, 0),
                  "cudaLibraryLoadData",
                  "the compiler's kernels (" + formatDeviceBytes(module->size) +
                      "), for kernel " + name);
    if (!loaded.ok()) {
      module->library = nullptr;
      record(loaded);
      return nullptr;
    }
  }
  std::unique_ptr<KernelFunction> &function = module->functions[name];
  if (!function) {
    cudaKernel_t kernel = nullptr;
    Status found =
        checkCuda(cudaLibraryGetKernel(&kernel, module->library, name),
                  "cudaLibraryGetKernel", std::string("kernel ") + name);
    if (!found.ok()) {
      module->functions.erase(name);
      record(found);
      return nullptr;
    }
    function.reset(new KernelFunction{kernel, name});
  }
  return function.get();
}

void mgpuLaunchKernel(void *handle, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t sharedBytes, void *stream,
                      void **params, void **extra, size_t /*paramCount*/) {
  if (!handle) {
    record(Status(TITANRT_ERROR_INTERNAL,
                  "mgpuLaunchKernel: no kernel to launch (finding it failed)"));
    return;
  }
  auto *function = static_cast<KernelFunction *>(handle);
  if (extra) {
    record(Status(TITANRT_ERROR_INTERNAL,
                  "mgpuLaunchKernel (kernel " + function->name +
                      "): extra launch options are not supported"));
    return;
  }
  dim3 grid(gridX, gridY, gridZ), block(blockX, blockY, blockZ);
  record(checkCuda(
      cudaLaunchKernel(reinterpret_cast<const void *>(function->kernel), grid,
                       block, params, sharedBytes,
                       static_cast<cudaStream_t>(stream)),
      "cudaLaunchKernel",
      "kernel " + function->name + ", grid " + std::to_string(gridX) + "x" +
          std::to_string(gridY) + "x" + std::to_string(gridZ) + ", block " +
          std::to_string(blockX) + "x" + std::to_string(blockY) + "x" +
          std::to_string(blockZ)));
}
