//===- EmulatedCuda.h - CUDA's execution model on CPU threads ---*- C++ -*-===//
//
// Lets the host compiler run kernel sources of runtime/cuda on a machine
// without a GPU: force-included before a .cu file compiled as C++, with
// include/ (emulated cuda/Launch.cuh and cuda/Mma.cuh) ahead of runtime/ on
// the include path. Every CUDA thread of a block is a std::thread (blocks
// run one after another); __syncthreads is a block barrier, __syncwarp a
// barrier of the thread's warp, and the warp collectives (shuffles, mma)
// exchange values through the block's slots between two warp barriers.
// The CUDA toolkit's headers supply the vector types and bf16 (with host
// conversions, the same rounding as the device's).
//
// This checks a kernel's indexing, tiling, masking and synchronization
// against its CPU reference; it does not check what only hardware can
// (timing, memory model subtleties, the real mma's fragment layout, which
// include/cuda/Mma.cuh encodes from the PTX ISA): test/Runtime/Cuda's
// kernels.test does that on a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TEST_CUDA_EMULATION_EMULATEDCUDA_H
#define TITAN_TEST_CUDA_EMULATION_EMULATEDCUDA_H

#include <cuda_runtime.h>

#include <barrier>
#include <cmath>
#include <cstdint>

#define __launch_bounds__(...)

namespace titan::emulation {

/// What the threads of one block share besides shared memory.
struct Block {
  std::barrier<> *block;
  std::barrier<> *warps[32];
  /// One slot per lane of each warp for shuffles and mma operands.
  float shuffle[32][32];
  uint32_t mmaA[32][32][4];
  uint32_t mmaB[32][32][2];
};

/// The block of the calling thread.
inline thread_local Block *currentBlock;

} // namespace titan::emulation

inline thread_local uint3 threadIdx, blockIdx;
inline thread_local dim3 blockDim, gridDim;

inline void __syncthreads() {
  titan::emulation::currentBlock->block->arrive_and_wait();
}
inline void __syncwarp(unsigned = 0xffffffffu) {
  titan::emulation::currentBlock->warps[threadIdx.x / 32]->arrive_and_wait();
}
inline float __shfl_xor_sync(unsigned, float value, int laneMask) {
  float *slots = titan::emulation::currentBlock->shuffle[threadIdx.x / 32];
  slots[threadIdx.x % 32] = value;
  __syncwarp();
  const float result = slots[(threadIdx.x % 32) ^ unsigned(laneMask)];
  __syncwarp();
  return result;
}

#endif // TITAN_TEST_CUDA_EMULATION_EMULATEDCUDA_H
