//===- Mma.cuh - emulated warp-level bf16 tensor-core products --*- C++ -*-===//
//
// runtime/cuda/Mma.cuh for EmulatedCuda.h: mmaBf16, with mma.sync.m16n8k16
// computed by each lane from all 32 lanes' fragments, which it reads in the
// layout runtime/cuda/Mma.cuh documents (PTX ISA, "Matrix Fragments for
// mma.m16n8k16 with floating point type"). The products are exact in f32,
// summed in k order. loadMatrices (ldmatrix.x4) collects the 32 lanes' row
// addresses and gives each lane its elements of the four matrices, in the
// layout of the PTX ISA's "Warp-level matrix load instruction: ldmatrix".
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_MMA_CUH
#define TITAN_RUNTIME_CUDA_MMA_CUH

#include <cuda_bf16.h>

#include <cstdint>
#include <cstring>

namespace titan::rt::cuda {

namespace emulated {
/// Half `half` (0: low) of a register of two bf16, as a float.
inline float unpackBf16(uint32_t reg, int half) {
  const uint16_t bits = half ? uint16_t(reg >> 16) : uint16_t(reg & 0xffffu);
  __nv_bfloat16 value;
  memcpy(&value, &bits, sizeof(bits));
  return __bfloat162float(value);
}
} // namespace emulated

inline void mmaBf16(float (&d)[4], const uint32_t (&a)[4],
                    const uint32_t (&b)[2]) {
  titan::emulation::WarpSlots &slots = titan::emulation::warpSlots;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  memcpy(slots.mmaA[warp][lane], a, sizeof(a));
  memcpy(slots.mmaB[warp][lane], b, sizeof(b));
  __syncwarp();
  // A[r][c] is in lane (r % 8) * 4 + (c % 8) / 2, register (r >= 8) +
  // 2 (c >= 8), half c % 2; B[k][n] in lane n * 4 + (k % 8) / 2, register
  // k >= 8, half k % 2; D[r][c] of lane g * 4 + t is entry
  // 2 (r >= 8) + c % 2 with r % 8 = g and c / 2 = t.
  const int g = lane / 4, t = lane % 4;
  for (int i = 0; i < 4; ++i) {
    const int row = g + 8 * (i / 2), column = 2 * t + i % 2;
    float sum = d[i];
    for (int k = 0; k < 16; ++k) {
      const float x =
          emulated::unpackBf16(slots.mmaA[warp][(row % 8) * 4 + (k % 8) / 2]
                                         [(row >= 8) + 2 * (k >= 8)],
                               k % 2);
      const float y = emulated::unpackBf16(
          slots.mmaB[warp][column * 4 + (k % 8) / 2][k >= 8], k % 2);
      sum += x * y;
    }
    d[i] = sum;
  }
  __syncwarp(); // the slots' readers are done
}

template <bool transposed = false>
inline void loadMatrices(uint32_t (&r)[4], const void *row) {
  titan::emulation::WarpSlots &slots = titan::emulation::warpSlots;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  slots.matrixRows[warp][lane] = row;
  __syncwarp();
  // Matrix j's row i is at the address lane 8 j + i passed; lane
  // g * 4 + t receives elements (g, 2 t + h), transposed (2 t + h, g).
  const int g = lane / 4, t = lane % 4;
  for (int j = 0; j < 4; ++j) {
    uint32_t value = 0;
    for (int h = 0; h < 2; ++h) {
      const int rowIndex = transposed ? 2 * t + h : g;
      const int column = transposed ? g : 2 * t + h;
      uint16_t bits;
      memcpy(&bits,
             static_cast<const uint16_t *>(
                 slots.matrixRows[warp][8 * j + rowIndex]) +
                 column,
             sizeof(bits));
      value |= uint32_t(bits) << (16 * h);
    }
    r[j] = value;
  }
  __syncwarp(); // the slots' readers are done
}

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_MMA_CUH
