//===- AsyncCopy.cuh - global to shared memory copies in flight -*- CUDA -*-===//
//
// cp.async (sm_80 and newer): a thread starts 16-byte copies from global to
// shared memory that complete while it goes on computing, without passing
// through its registers; waitCopies blocks until the thread's copies have
// landed (waitCopiesExceptNewest until those of its older commitCopies
// groups have), and a __syncthreads after it makes every thread's copies
// visible to the block.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_ASYNCCOPY_CUH
#define TITAN_RUNTIME_CUDA_ASYNCCOPY_CUH

#include <cstdint>

namespace titan::rt::cuda {

/// Starts copying the 16 bytes at `source` (global memory) to
/// `destination` (shared memory), both 16-byte aligned; when `valid` is
/// false, writes 16 zero bytes instead and reads nothing.
__device__ __forceinline__ void copyAsync16(void *destination,
                                            const void *source, bool valid) {
  const uint32_t address =
      static_cast<uint32_t>(__cvta_generic_to_shared(destination));
  const int sourceBytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
               :
               : "r"(address), "l"(source), "r"(sourceBytes)
               : "memory");
}

/// Waits until every copy this thread started has landed in shared memory.
__device__ __forceinline__ void waitCopies() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}

/// Closes the group of the copies this thread started since the last
/// commit (cp.async.commit_group), which waitCopiesExceptNewest counts.
__device__ __forceinline__ void commitCopies() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/// Waits until every committed group of this thread's copies but the
/// `newest` most recent ones has landed (cp.async.wait_group): a kernel
/// that starts the next tile's copies before computing on this one waits
/// for this one only.
template <int newest> __device__ __forceinline__ void waitCopiesExceptNewest() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(newest) : "memory");
}

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_ASYNCCOPY_CUH
