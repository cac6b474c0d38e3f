//===- AsyncCopy.cuh - emulated global to shared memory copies --*- C++ -*-===//
//
// runtime/cuda/AsyncCopy.cuh for EmulatedCuda.h: a thread's copies land
// when it waits for them (titan::emulation::pendingCopies), the latest the
// hardware may land them, so reading a tile before waiting reads what was
// there before, as it may on a GPU; or, under a titan::emulation::Schedule
// with copiesLandWhenStarted, when they start, the earliest. Groups
// (commitCopies, waitCopiesExceptNewest) are numbered per thread.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_ASYNCCOPY_CUH
#define TITAN_RUNTIME_CUDA_ASYNCCOPY_CUH

#include <cstdint>
#include <cstring>
#include <utility>
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

/// The running thread's linear index in its block.
inline unsigned threadIndex() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

/// The running thread's copies in flight.
inline std::vector<titan::emulation::PendingCopy> &threadCopies() {
  return titan::emulation::pendingCopies[threadIndex()];
}

/// Lands the running thread's copies that `lands` selects.
template <typename Lands> void landCopies(Lands &&lands) {
  std::vector<titan::emulation::PendingCopy> &copies = threadCopies();
  std::vector<titan::emulation::PendingCopy> left;
  for (const titan::emulation::PendingCopy &copy : copies) {
    if (lands(copy))
      landCopy(copy.destination, copy.source, copy.valid);
    else
      left.push_back(copy);
  }
  copies = std::move(left);
}
} // namespace emulated

inline void copyAsync16(void *destination, const void *source, bool valid) {
  if (titan::emulation::schedule.copiesLandWhenStarted)
    emulated::landCopy(destination, source, valid);
  else
    emulated::threadCopies().push_back({destination, source, valid});
}

inline void waitCopies() {
  emulated::landCopies(
      [](const titan::emulation::PendingCopy &) { return true; });
}

inline void commitCopies() {
  int64_t &committed =
      titan::emulation::committedGroups[emulated::threadIndex()];
  for (titan::emulation::PendingCopy &copy : emulated::threadCopies())
    if (copy.group < 0)
      copy.group = committed;
  ++committed;
}

/// Lands the copies of every committed group but the `newest` most recent
/// ones; copies not committed yet stay in flight, as on the GPU.
template <int newest> void waitCopiesExceptNewest() {
  const int64_t landed =
      titan::emulation::committedGroups[emulated::threadIndex()] - newest;
  emulated::landCopies([&](const titan::emulation::PendingCopy &copy) {
    return copy.group >= 0 && copy.group < landed;
  });
}

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_ASYNCCOPY_CUH
