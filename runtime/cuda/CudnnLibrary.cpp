//===- CudnnLibrary.cpp - cuDNN's graph API, loaded at run time -----------===//

#include "cuda/CudnnLibrary.h"

#include <dlfcn.h>

#include <string>
#include <vector>

using namespace titan::rt;
using namespace titan::rt::cuda;

Status CudnnLibrary::check(cudnnStatus_t status, const char *call,
                           const std::string &what) const {
  if (status == CUDNN_STATUS_SUCCESS)
    return Status::success();
  char last[1024] = "";
  if (getLastErrorString)
    getLastErrorString(last, sizeof last);
  std::string message = std::string(call);
  if (!what.empty())
    message += " (" + what + ")";
  message += ": " + std::string(getErrorString(status));
  if (last[0])
    message += ": " + std::string(last);
  // The NOT_SUPPORTED family (no engine for this graph on this GPU) is a
  // limit of the library, not a broken program.
  bool unsupported = status / 1000 == CUDNN_STATUS_NOT_SUPPORTED / 1000;
  return unsupported ? Status::unsupported(message) : Status::internal(message);
}

namespace {

/// The library and why loading failed, decided once per process.
struct LoadedCudnn {
  CudnnLibrary library;
  Status status;
};

/// Looks up `name` in `handle` into `function`; false if it is missing.
template <typename Function>
bool lookUp(void *handle, const char *name, Function &function) {
  function = reinterpret_cast<Function>(dlsym(handle, name));
  return function != nullptr;
}

LoadedCudnn loadOnce() {
  LoadedCudnn loaded;
  void *handle = nullptr;
  // The loader's path first, then the folder the build found cuDNN in.
  std::vector<std::string> names = {"libcudnn.so.9", "libcudnn.so"};
#ifdef TITAN_CUDNN_LIBRARY_DIR
  names.push_back(std::string(TITAN_CUDNN_LIBRARY_DIR) + "/libcudnn.so.9");
#endif
  std::string failures;
  for (const std::string &name : names) {
    handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      loaded.library.path = name;
      break;
    }
    failures += std::string(failures.empty() ? "" : "; ") + dlerror();
  }
  if (!handle) {
    loaded.status = Status::unsupported(
        "cuDNN 9 (libcudnn.so.9) is not on the loader's path (" + failures +
        "): install it (the CUDA toolkit's cuDNN, or a Python "
        "environment's nvidia-cudnn-cu13) and add its lib folder to "
        "LD_LIBRARY_PATH, or set TITAN_CUDA_ATTENTION=titan");
    return loaded;
  }
  CudnnLibrary &library = loaded.library;
  const char *missing = nullptr;
#define TITAN_CUDNN_LOOK_UP(field, symbol)                                     \
  if (!missing && !lookUp(handle, #symbol, library.field))                     \
    missing = #symbol;
  TITAN_CUDNN_LOOK_UP(getVersion, cudnnGetVersion)
  TITAN_CUDNN_LOOK_UP(getErrorString, cudnnGetErrorString)
  TITAN_CUDNN_LOOK_UP(getLastErrorString, cudnnGetLastErrorString)
  TITAN_CUDNN_LOOK_UP(create, cudnnCreate)
  TITAN_CUDNN_LOOK_UP(destroy, cudnnDestroy)
  TITAN_CUDNN_LOOK_UP(setStream, cudnnSetStream)
  TITAN_CUDNN_LOOK_UP(createDescriptor, cudnnBackendCreateDescriptor)
  TITAN_CUDNN_LOOK_UP(destroyDescriptor, cudnnBackendDestroyDescriptor)
  TITAN_CUDNN_LOOK_UP(setAttribute, cudnnBackendSetAttribute)
  TITAN_CUDNN_LOOK_UP(getAttribute, cudnnBackendGetAttribute)
  TITAN_CUDNN_LOOK_UP(finalize, cudnnBackendFinalize)
  TITAN_CUDNN_LOOK_UP(execute, cudnnBackendExecute)
#undef TITAN_CUDNN_LOOK_UP
  if (missing) {
    loaded.status = Status::unsupported(
        loaded.library.path + " has no " + missing +
        ": titan needs cuDNN 9's graph API; install cuDNN 9");
    return loaded;
  }
  library.version = library.getVersion();
  if (library.version < 90000)
    loaded.status = Status::unsupported(loaded.library.path + " is cuDNN " +
                                        std::to_string(library.version) +
                                        "; titan needs cuDNN 9 or newer");
  return loaded;
}

} // namespace

Status cuda::loadCudnn(const CudnnLibrary *&library) {
  static LoadedCudnn loaded = loadOnce();
  library = loaded.status.ok() ? &loaded.library : nullptr;
  return loaded.status;
}

CudnnDescriptor &CudnnDescriptor::operator=(CudnnDescriptor &&other) noexcept {
  if (this != &other) {
    reset();
    library = other.library;
    descriptor = other.descriptor;
    other.descriptor = nullptr;
  }
  return *this;
}

Status CudnnDescriptor::create(const CudnnLibrary &library,
                               cudnnBackendDescriptorType_t type) {
  reset();
  this->library = &library;
  return library.check(library.createDescriptor(type, &descriptor),
                       "cudnnBackendCreateDescriptor");
}

void CudnnDescriptor::reset() {
  if (descriptor)
    library->destroyDescriptor(descriptor);
  descriptor = nullptr;
}
