//===- AsyncCopy.cuh - emulated global to shared memory copies --*- C++ -*-===//
//
// runtime/cuda/AsyncCopy.cuh for EmulatedCuda.h: a copy completes when it
// is started, so waiting has nothing to wait for. The emulation thus checks
// what is copied where, not that a kernel waits before it reads (the GPU's
// kernel check does, with the real copies).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_ASYNCCOPY_CUH
#define TITAN_RUNTIME_CUDA_ASYNCCOPY_CUH

#include <cstring>

namespace titan::rt::cuda {

inline void copyAsync16(void *destination, const void *source, bool valid) {
  if (valid)
    memcpy(destination, source, 16);
  else
    memset(destination, 0, 16);
}

inline void waitCopies() {}

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_ASYNCCOPY_CUH
