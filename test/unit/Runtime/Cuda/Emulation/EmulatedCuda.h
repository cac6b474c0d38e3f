//===- EmulatedCuda.h - CUDA's execution model on CPU threads ---*- C++ -*-===//
//
// Lets the host compiler run kernel sources of runtime/cuda on a machine
// without a GPU: included before a .cu file compiled as C++, with include/
// (emulated cuda/Launch.cuh, cuda/Mma.cuh and cuda/AsyncCopy.cuh) ahead of
// runtime/ on the include path. A launch runs its blocks one after another on the calling thread; each
// CUDA thread of a block is a fiber (EmulatedCuda.cpp), which runs until it
// reaches a barrier: __syncthreads parks it until every thread of the block
// that has not finished the block is parked there too, __syncwarp until its
// warp's are. The warp collectives (shuffles, mma, ldmatrix) exchange values
// through per-warp slots between two warp barriers, and atomics are plain
// read-modify-writes (one fiber runs at a time). A barrier no fiber can pass
// (threads of one block parked at different barriers) aborts with the fibers'
// states. A kernel's static __shared__ arrays become function statics where the
// including file defines __shared__ as static (EmulatedKernels.cpp; one block
// runs at a time, so its threads share them); the dynamic `extern __shared__`
// array is the including file's. The CUDA toolkit's headers supply the vector
// types and bf16 (with host conversions, the same rounding as the device's).
//
// This checks a kernel's indexing, tiling, masking and synchronization
// against its CPU reference; it does not check what only hardware can
// (timing, memory model subtleties, the real mma's and ldmatrix's fragment
// layouts, which include/cuda/Mma.cuh encodes from the PTX ISA):
// test/Runtime/Cuda's kernels.test does that on a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TEST_CUDA_EMULATION_EMULATEDCUDA_H
#define TITAN_TEST_CUDA_EMULATION_EMULATEDCUDA_H

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#define __launch_bounds__(...)

namespace titan::emulation {

/// Where a CUDA thread (a fiber) is parked.
enum class FiberState {
  Runnable,
  AtBlockBarrier,
  AtWarpBarrier,
  AtBlockEnd,
  Done
};

/// Parks the running fiber in `state` until the scheduler releases it.
void park(FiberState state);

/// Runs `kernel` (the kernel called with its arguments) for every block of
/// `grid`, `block` threads each, and returns when all are done.
void runGrid(dim3 grid, dim3 block, const std::function<void()> &kernel);

/// One slot per lane of each warp for shuffles, mma operands and ldmatrix
/// row addresses.
struct WarpSlots {
  float shuffle[32][32];
  uint32_t mmaA[32][32][4];
  uint32_t mmaB[32][32][2];
  const void *matrixRows[32][32];
};
inline WarpSlots warpSlots;

/// A cp.async copy a thread started and has not waited for.
struct PendingCopy {
  void *destination;
  const void *source;
  bool valid;
  /// The thread's commit group it belongs to (0, 1, ... in commit order),
  /// or -1 before its thread commits it.
  int64_t group = -1;
};
/// Each thread's copies in flight (by its linear index in the block): they
/// land when it waits, the latest the hardware may land them, so a kernel
/// that reads a tile before waiting for it reads stale data here too. A
/// block starts with none.
inline std::vector<PendingCopy> pendingCopies[1024];
/// How many groups of copies each thread has committed in its block.
inline int64_t committedGroups[1024];
/// Which of the orders the hardware allows a launch runs in.
struct Schedule {
  /// Copies land when they start, the earliest the hardware may land them
  /// (by default when their thread waits, the latest): then a copy into a
  /// tile other threads still read (a missing barrier) overwrites it under
  /// them.
  bool copiesLandWhenStarted = false;
  /// Each warp runs through its warp barriers to its next block barrier
  /// before the next warp starts, as far apart as the hardware may let
  /// warps drift (what a missing __syncthreads between warps exposes); by
  /// default each runnable fiber runs to its next barrier in turn, so the
  /// warps advance together.
  bool warpsRunAhead = false;
};
/// The schedule launches run in.
inline Schedule schedule;
/// Copies landing early and warps drifting apart: the order that exposes
/// a missing barrier.
constexpr Schedule kWarpsApart = {true, true};

/// Runs the launches of its lifetime in `scoped`, then restores the
/// schedule it found (also when a test returns early).
class ScheduleScope {
public:
  explicit ScheduleScope(Schedule scoped) : saved(schedule) {
    schedule = scoped;
  }
  ~ScheduleScope() { schedule = saved; }
  ScheduleScope(const ScheduleScope &) = delete;
  ScheduleScope &operator=(const ScheduleScope &) = delete;

private:
  Schedule saved;
};

} // namespace titan::emulation

// The running fiber's coordinates (the scheduler sets threadIdx when it
// switches fibers, blockIdx when the block changes).
inline uint3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

inline void __syncthreads() {
  titan::emulation::park(titan::emulation::FiberState::AtBlockBarrier);
}
inline void __syncwarp(unsigned = 0xffffffffu) {
  titan::emulation::park(titan::emulation::FiberState::AtWarpBarrier);
}
inline float __shfl_xor_sync(unsigned, float value, int laneMask) {
  float *slots = titan::emulation::warpSlots.shuffle[threadIdx.x / 32];
  slots[threadIdx.x % 32] = value;
  __syncwarp();
  const float result = slots[(threadIdx.x % 32) ^ unsigned(laneMask)];
  __syncwarp();
  return result;
}

// CUDA's device functions that the toolkit's headers declare for device
// code only (__expf is defined in EmulatedCudart.cpp).
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline int min(int a, int b) { return a < b ? a : b; }
inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }
inline int atomicAdd(int *address, int value) {
  const int old = *address;
  *address = old + value;
  return old;
}
inline unsigned long long atomicMin(unsigned long long *address,
                                    unsigned long long value) {
  const unsigned long long old = *address;
  *address = old < value ? old : value;
  return old;
}

#endif // TITAN_TEST_CUDA_EMULATION_EMULATEDCUDA_H
