//===- AsyncCopy.cuh - emulated global to shared memory copies --*- C++ -*-===//
//
// runtime/cuda/AsyncCopy.cuh for EmulatedCuda.h: a thread's copies land
// when it waits for them (titan::emulation::pendingCopies), the latest the
// hardware may land them, so reading a tile before waiting reads what was
// there before, as it may on a GPU; or, under a titan::emulation::Schedule
// with copiesLandWhenStarted, when they start, the earliest.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_ASYNCCOPY_CUH
#define TITAN_RUNTIME_CUDA_ASYNCCOPY_CUH

#include <cstring>
#include <vector>

namespace titan::rt::cuda {

namespace emulated {
/// Copies 16 bytes from `source`, or zeros when !valid.
inline void landCopy(void *destination, const void *source, bool valid) {
  if (valid)
    memcpy(destination, source, 16);
  else
    memset(destination, 0, 16);
}

/// The running thread's copies in flight.
inline std::vector<titan::emulation::PendingCopy> &threadCopies() {
  return titan::emulation::pendingCopies[threadIdx.x +
                                         blockDim.x *
                                             (threadIdx.y +
                                              blockDim.y * threadIdx.z)];
}
} // namespace emulated

inline void copyAsync16(void *destination, const void *source, bool valid) {
  if (titan::emulation::schedule.copiesLandWhenStarted)
    emulated::landCopy(destination, source, valid);
  else
    emulated::threadCopies().push_back({destination, source, valid});
}

inline void waitCopies() {
  std::vector<titan::emulation::PendingCopy> &copies =
      emulated::threadCopies();
  for (const titan::emulation::PendingCopy &copy : copies)
    emulated::landCopy(copy.destination, copy.source, copy.valid);
  copies.clear();
}

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_ASYNCCOPY_CUH
