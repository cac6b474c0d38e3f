//===- EmulatedCuda.cpp - CUDA threads as fibers --------------------------===//
//
// The scheduler of EmulatedCuda.h. A launch makes one fiber (a ucontext
// with its own stack, entered once; later switches are _setjmp/_longjmp,
// which make no system call) per thread of a block, on the calling
// thread; each
// fiber runs the kernel for every block in turn, parking at the end of a
// block. The scheduler resumes runnable fibers in thread order until all
// are parked, then releases a warp whose live lanes all wait at
// __syncwarp, or else the block when all its live threads wait at
// __syncthreads, or else, when every fiber has finished the block, moves
// on to the next one. Nothing else is released: that is a deadlock, which
// aborts with each fiber's state.
//
//===----------------------------------------------------------------------===//

// Jumps between the fibers' stacks are what __longjmp_chk refuses.
#undef _FORTIFY_SOURCE

#include "EmulatedCuda.h"

#include <setjmp.h>
#include <ucontext.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

using namespace titan::emulation;

namespace {

/// Bytes of a fiber's stack: the kernels' registers (accumulator
/// fragments, row slices) live there.
constexpr size_t kStackBytes = 128 * 1024;

struct Fiber {
  ucontext_t context;
  std::unique_ptr<char[]> stack;
  FiberState state = FiberState::Runnable;
  bool started = false;
  /// Where it parked.
  jmp_buf parked;
};

/// The launch that runs (one at a time).
struct Launch {
  /// Where the scheduler resumed a fiber from (the first entry's
  /// swapcontext saves into `entry`).
  jmp_buf scheduler;
  ucontext_t entry;
  std::vector<Fiber> fibers;
  int current = -1;
  int64_t blocks = 0;
  const std::function<void()> *kernel = nullptr;
};
Launch launch;

void fiberMain() {
  Fiber &self = launch.fibers[launch.current];
  for (int64_t block = 0; block < launch.blocks; ++block) {
    (*launch.kernel)();
    park(FiberState::AtBlockEnd);
  }
  self.state = FiberState::Done;
  _longjmp(launch.scheduler, 1);
}

/// Whether a fiber no longer takes part in the block's barriers.
bool finishedBlock(FiberState state) {
  return state == FiberState::AtBlockEnd || state == FiberState::Done;
}

/// Forgets every thread's copies in flight and groups (a block starts with
/// none).
void dropPendingCopies() {
  for (std::vector<PendingCopy> &copies : pendingCopies)
    copies.clear();
  for (int64_t &groups : committedGroups)
    groups = 0;
}

/// Releases warp `warp` from its warp barrier if every lane is there (or
/// done with the block); whether it did.
bool releaseWarp(int warp) {
  std::vector<Fiber> &fibers = launch.fibers;
  const int end = std::min(int(fibers.size()), warp * 32 + 32);
  bool waiting = false, all = true;
  for (int lane = warp * 32; lane < end; ++lane) {
    waiting |= fibers[lane].state == FiberState::AtWarpBarrier;
    all &= fibers[lane].state == FiberState::AtWarpBarrier ||
           finishedBlock(fibers[lane].state);
  }
  if (!waiting || !all)
    return false;
  for (int lane = warp * 32; lane < end; ++lane)
    if (fibers[lane].state == FiberState::AtWarpBarrier)
      fibers[lane].state = FiberState::Runnable;
  return true;
}

/// Releases what can be released; false if nothing can (a deadlock).
bool release(int64_t &block, dim3 grid) {
  std::vector<Fiber> &fibers = launch.fibers;
  const int count = int(fibers.size());
  bool released = false;
  for (int warp = 0; warp * 32 < count; ++warp)
    released |= releaseWarp(warp);
  if (released)
    return true;
  bool waiting = false, all = true, ended = true;
  for (const Fiber &fiber : fibers) {
    waiting |= fiber.state == FiberState::AtBlockBarrier;
    all &=
        fiber.state == FiberState::AtBlockBarrier || finishedBlock(fiber.state);
    ended &= fiber.state == FiberState::AtBlockEnd;
  }
  if (waiting && all) {
    for (Fiber &fiber : fibers)
      if (fiber.state == FiberState::AtBlockBarrier)
        fiber.state = FiberState::Runnable;
    return true;
  }
  if (!ended)
    return false;
  // The next block (or, after the last, the fibers' exit).
  ++block;
  dropPendingCopies();
  blockIdx = {unsigned(block % grid.x), unsigned(block / grid.x % grid.y),
              unsigned(block / grid.x / grid.y)};
  for (Fiber &fiber : fibers)
    fiber.state = FiberState::Runnable;
  return true;
}

} // namespace

void titan::emulation::park(FiberState state) {
  Fiber &self = launch.fibers[launch.current];
  self.state = state;
  if (_setjmp(self.parked) == 0)
    _longjmp(launch.scheduler, 1);
}

namespace {
/// Runs fiber `index` until it parks or finishes.
void resume(int index) {
  Fiber &fiber = launch.fibers[index];
  launch.current = index;
  if (_setjmp(launch.scheduler) != 0)
    return;
  if (fiber.started)
    _longjmp(fiber.parked, 1);
  fiber.started = true;
  swapcontext(&launch.entry, &fiber.context);
}
} // namespace

void titan::emulation::runGrid(dim3 grid, dim3 block,
                               const std::function<void()> &kernel) {
  const int count = int(block.x * block.y * block.z);
  launch.fibers = std::vector<Fiber>(count);
  launch.blocks = int64_t(grid.x) * grid.y * grid.z;
  launch.kernel = &kernel;
  blockDim = block;
  gridDim = grid;
  blockIdx = {0, 0, 0};
  dropPendingCopies();
  for (Fiber &fiber : launch.fibers) {
    fiber.stack.reset(
        new char[kStackBytes]); // not zeroed: only touched pages cost
    getcontext(&fiber.context);
    fiber.context.uc_stack.ss_sp = fiber.stack.get();
    fiber.context.uc_stack.ss_size = kStackBytes;
    fiber.context.uc_link = nullptr; // fiberMain never returns
    makecontext(&fiber.context, fiberMain, 0);
  }
  // Runs the runnable fibers of threads [first, end); whether any ran.
  auto runFibers = [&](int first, int end) {
    bool ran = false;
    for (int i = first; i < end; ++i)
      if (launch.fibers[i].state == FiberState::Runnable) {
        threadIdx = {unsigned(i % block.x), unsigned(i / block.x % block.y),
                     unsigned(i / block.x / block.y)};
        resume(i);
        ran = true;
      }
    return ran;
  };
  int64_t current = 0;
  for (;;) {
    if (schedule.warpsRunAhead) {
      // Each warp, through its warp barriers, to its next block barrier
      // before the next warp starts.
      for (int warp = 0; warp * 32 < count; ++warp)
        while (runFibers(warp * 32, std::min(count, warp * 32 + 32)) &&
               releaseWarp(warp)) {
        }
    } else {
      runFibers(0, count);
    }
    bool done = true;
    for (const Fiber &fiber : launch.fibers)
      done &= fiber.state == FiberState::Done;
    if (done)
      break;
    if (!release(current, grid)) {
      std::fprintf(stderr,
                   "emulated CUDA: deadlock in block %u,%u,%u:", blockIdx.x,
                   blockIdx.y, blockIdx.z);
      for (int i = 0; i < count; ++i)
        std::fprintf(stderr, " %d:%d", i, int(launch.fibers[i].state));
      std::fprintf(stderr, "\n");
      std::abort();
    }
  }
  launch.fibers.clear();
}
