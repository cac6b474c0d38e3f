//===- CudnnLibrary.h - cuDNN's graph API, loaded at run time ---*- C++ -*-===//
//
// The CUDA backend calls cuDNN (attention: CudnnAttention.h) through the
// backend graph API of cuDNN 9 (cudnn_graph.h), loaded with dlopen the
// first time it is asked for: a rank runs without cuDNN installed (titan's
// own kernels take its calls), and the library it finds is the one on the
// machine (the CUDA toolkit's, or a Python environment's nvidia-cudnn on
// LD_LIBRARY_PATH), not a copy carried with the executables. Only the
// header is needed at build time.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_CUDNNLIBRARY_H
#define TITAN_RUNTIME_CUDA_CUDNNLIBRARY_H

#include "core/Status.h"

#include <cudnn_graph.h>

#include <cstdint>
#include <string>

namespace titan::rt::cuda {

/// The entry points of cuDNN's graph API the backend calls.
struct CudnnLibrary {
  /// The library's version as cudnnGetVersion reports it (91900 for 9.19).
  size_t version = 0;
  /// Where it was loaded from (the dlopen name that succeeded).
  std::string path;

  decltype(&::cudnnGetVersion) getVersion = nullptr;
  decltype(&::cudnnGetErrorString) getErrorString = nullptr;
  decltype(&::cudnnGetLastErrorString) getLastErrorString = nullptr;
  decltype(&::cudnnCreate) create = nullptr;
  decltype(&::cudnnDestroy) destroy = nullptr;
  decltype(&::cudnnSetStream) setStream = nullptr;
  decltype(&::cudnnBackendCreateDescriptor) createDescriptor = nullptr;
  decltype(&::cudnnBackendDestroyDescriptor) destroyDescriptor = nullptr;
  decltype(&::cudnnBackendSetAttribute) setAttribute = nullptr;
  decltype(&::cudnnBackendGetAttribute) getAttribute = nullptr;
  decltype(&::cudnnBackendFinalize) finalize = nullptr;
  decltype(&::cudnnBackendExecute) execute = nullptr;

  /// Success, or an error naming `call` and what it was for, with cuDNN's
  /// name for the status and its last error message.
  Status check(cudnnStatus_t status, const char *call,
               const std::string &what = "") const;
};

/// cuDNN 9 (libcudnn.so.9), loaded the first time; on failure `library` is
/// null and the Status says what is missing (no library on the loader's
/// path, a version before 9.0, a missing entry point) and the fix.
Status loadCudnn(const CudnnLibrary *&library);

/// An owned cuDNN backend descriptor (destroyed with the object).
class CudnnDescriptor {
public:
  CudnnDescriptor() = default;
  ~CudnnDescriptor() { reset(); }
  CudnnDescriptor(CudnnDescriptor &&other) noexcept {
    *this = std::move(other);
  }
  CudnnDescriptor &operator=(CudnnDescriptor &&other) noexcept;
  CudnnDescriptor(const CudnnDescriptor &) = delete;
  CudnnDescriptor &operator=(const CudnnDescriptor &) = delete;

  /// Creates a descriptor of `type` (replacing any held one).
  Status create(const CudnnLibrary &library, cudnnBackendDescriptorType_t type);
  void reset();

  cudnnBackendDescriptor_t get() const { return descriptor; }
  /// The address of the handle, for attributes that take descriptors.
  const cudnnBackendDescriptor_t *address() const { return &descriptor; }

private:
  const CudnnLibrary *library = nullptr;
  cudnnBackendDescriptor_t descriptor = nullptr;
};

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_CUDNNLIBRARY_H
