//===- EmulatorTest.cpp - the CUDA emulation itself -----------------------===//
//
// What CudaEmulationTest's kernels rely on: every thread of every block
// runs with its coordinates, __syncthreads orders the block's threads,
// shuffles exchange between lanes, asynchronous copies land when their
// thread waits, and barriers that can never complete are reported as a
// deadlock instead of hanging.
//
//===----------------------------------------------------------------------===//

#include "EmulatedCuda.h"

#include "cuda/AsyncCopy.cuh"
#include "cuda/Launch.cuh"

#include <gtest/gtest.h>

#include <vector>

namespace {

using namespace titan::rt;
using namespace titan::rt::cuda;

/// out[global thread] = its block and thread coordinates, and what the
/// previous thread of its block wrote before the barrier.
__global__ void coordinatesKernel(int *out, int *previous) {
  static int written[256];
  const int global = int(blockIdx.x * blockDim.x + threadIdx.x);
  written[threadIdx.x] = global;
  __syncthreads();
  out[global] = int(blockIdx.x) * 1000 + int(threadIdx.x);
  previous[global] = written[(threadIdx.x + blockDim.x - 1) % blockDim.x];
}

/// out[thread] = the value of lane (lane ^ 5) of its warp.
__global__ void shuffleKernel(float *out) {
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, float(threadIdx.x), 5);
}

/// Each thread copies its 4 ints of `in` into shared memory asynchronously
/// and reads them back before waiting (into before[]), after waiting
/// (after[]), and zero-fills another 16 bytes (zeroed[]); in and the outputs
/// hold 4 ints per thread.
__global__ void asyncCopyKernel(const int *in, int *before, int *after,
                                int *zeroed) {
  alignas(16) static int tile[2][64][4];
  const int t = int(threadIdx.x);
  for (int i = 0; i < 4; ++i)
    tile[0][t][i] = tile[1][t][i] = -1;
  copyAsync16(tile[0][t], in + 4 * t, true);
  copyAsync16(tile[1][t], in, false);
  for (int i = 0; i < 4; ++i)
    before[4 * t + i] = tile[0][t][i];
  waitCopies();
  for (int i = 0; i < 4; ++i) {
    after[4 * t + i] = tile[0][t][i];
    zeroed[4 * t + i] = tile[1][t][i];
  }
}

/// Each thread copies its 4 ints of `in` into two tiles in two commit
/// groups, then a third copy it does not commit, and waits for all groups
/// but the newest: `older` gets the first tile, `newer` the second,
/// `uncommitted` the third.
__global__ void copyGroupsKernel(const int *in, int *older, int *newer,
                                 int *uncommitted) {
  alignas(16) static int tile[3][64][4];
  const int t = int(threadIdx.x);
  for (int k = 0; k < 3; ++k)
    for (int i = 0; i < 4; ++i)
      tile[k][t][i] = -1;
  copyAsync16(tile[0][t], in + 4 * t, true);
  commitCopies();
  copyAsync16(tile[1][t], in + 4 * t, true);
  commitCopies();
  copyAsync16(tile[2][t], in + 4 * t, true);
  waitCopiesExceptNewest<1>();
  for (int i = 0; i < 4; ++i) {
    older[4 * t + i] = tile[0][t][i];
    newer[4 * t + i] = tile[1][t][i];
    uncommitted[4 * t + i] = tile[2][t][i];
  }
  waitCopies(); // nothing in flight at the block's end
}

/// Half of each warp waits for its warp, the other half for the block:
/// neither barrier is ever complete. (Threads that finished the block
/// count as arrived, as exited threads do on the GPU.)
__global__ void divergentBarrierKernel() {
  if (threadIdx.x % 2)
    __syncwarp();
  else
    __syncthreads();
}

LaunchConfig config(int64_t blocks, int64_t threads) {
  LaunchConfig launch;
  launch.grid.x = blocks;
  launch.block.x = threads;
  return launch;
}

TEST(CudaEmulatorTest, EveryThreadOfEveryBlockAfterTheBarrier) {
  std::vector<int> out(3 * 64), previous(3 * 64);
  ASSERT_TRUE(launchKernel("t", config(3, 64), nullptr, coordinatesKernel,
                           out.data(), previous.data())
                  .ok());
  for (int block = 0; block < 3; ++block)
    for (int thread = 0; thread < 64; ++thread) {
      EXPECT_EQ(out[block * 64 + thread], block * 1000 + thread);
      EXPECT_EQ(previous[block * 64 + thread], block * 64 + (thread + 63) % 64);
    }
}

TEST(CudaEmulatorTest, ShufflesExchangeWithinAWarp) {
  std::vector<float> out(64);
  ASSERT_TRUE(
      launchKernel("t", config(1, 64), nullptr, shuffleKernel, out.data())
          .ok());
  for (int thread = 0; thread < 64; ++thread)
    EXPECT_EQ(out[thread], float((thread & ~31) | ((thread % 32) ^ 5)));
}

TEST(CudaEmulatorTest, AsyncCopiesLandByTheWaitOrWhenStarted) {
  std::vector<int> in(64 * 4), before(in.size()), after(in.size()),
      zeroed(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = int(i) + 7;
  ASSERT_TRUE(launchKernel("t", config(1, 64), nullptr, asyncCopyKernel,
                           in.data(), before.data(), after.data(),
                           zeroed.data())
                  .ok());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(before[i], -1) << i;
    EXPECT_EQ(after[i], in[i]) << i;
    EXPECT_EQ(zeroed[i], 0) << i;
  }
  // As early as the hardware may: when they start.
  {
    titan::emulation::ScheduleScope early({/*copiesLandWhenStarted=*/true,
                                           /*warpsRunAhead=*/false});
    ASSERT_TRUE(launchKernel("t", config(1, 64), nullptr, asyncCopyKernel,
                             in.data(), before.data(), after.data(),
                             zeroed.data())
                    .ok());
  }
  EXPECT_FALSE(titan::emulation::schedule.copiesLandWhenStarted);
  EXPECT_EQ(before, in);
  EXPECT_EQ(after, in);
}

TEST(CudaEmulatorTest, WaitingForAllGroupsButTheNewest) {
  // wait_group 1 lands the older committed group only: the newest group
  // and the copy no commit closed are still in flight (the latest the
  // hardware may land them).
  std::vector<int> in(64 * 4), older(in.size()), newer(in.size()),
      uncommitted(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = int(i) + 3;
  ASSERT_TRUE(launchKernel("t", config(1, 64), nullptr, copyGroupsKernel,
                           in.data(), older.data(), newer.data(),
                           uncommitted.data())
                  .ok());
  EXPECT_EQ(older, in);
  EXPECT_EQ(newer, std::vector<int>(in.size(), -1));
  EXPECT_EQ(uncommitted, std::vector<int>(in.size(), -1));
}

TEST(CudaEmulatorDeathTest, BarriersThatNeverCompleteAreADeadlock) {
  EXPECT_DEATH(
      (void)launchKernel("t", config(2, 64), nullptr, divergentBarrierKernel),
      "emulated CUDA: deadlock in block 0,0,0");
}

TEST(CudaEmulatorTest, RefusesWhatTheGpuRefuses) {
  // validateLaunch, as the real launcher: 48 threads are not whole warps.
  EXPECT_FALSE(
      launchKernel("t", config(1, 48), nullptr, divergentBarrierKernel).ok());
}

} // namespace
