//===- Mma.cuh - warp-level bf16 tensor-core products ----------*- CUDA -*-===//
//
// One tensor-core instruction, mma.sync.m16n8k16 with bf16 operands and f32
// accumulators (sm_80 and newer): a warp computes D = A B + C for a 16 x 16
// A, a 16 x 8 B and a 16 x 8 C. Each thread holds a fixed part of every
// matrix; with g = lane / 4 and t = lane % 4 (PTX ISA, "Matrix Fragments for
// mma.m16n8k16 with floating point type"):
//   A, 4 registers of 2 bf16: a[0] = A[g][2t, 2t+1], a[1] = A[g+8][2t, 2t+1],
//      a[2] = A[g][2t+8, 2t+9], a[3] = A[g+8][2t+8, 2t+9];
//   B, 2 registers of 2 bf16: b[0] = B[2t, 2t+1][g], b[1] = B[2t+8, 2t+9][g];
//   C and D, 4 floats: c[0], c[1] = C[g][2t, 2t+1], c[2], c[3] =
//      C[g+8][2t, 2t+1].
// The first element of a pair is the register's low half (packBf16,
// DeviceSupport.cuh).
//
// The fragments come from shared memory with ldmatrix (loadMatrices): one
// instruction gives each lane its registers of four 8 x 8 bf16 matrices,
// whose rows the warp's lanes address, in the A and B layouts above (a
// lane's register holds a row's pair of adjacent columns, or transposed a
// column's pair of adjacent rows).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_MMA_CUH
#define TITAN_RUNTIME_CUDA_MMA_CUH

#include <cstdint>

namespace titan::rt::cuda {

/// d += A B for the warp's fragments of A (16 x 16), B (16 x 8) and D
/// (16 x 8), in the layout of the file comment. Every lane of the warp must
/// call it together.
__device__ __forceinline__ void mmaBf16(float (&d)[4], const uint32_t (&a)[4],
                                        const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]),
                 "r"(b[1]));
}

/// Loads four 8 x 8 bf16 matrices from shared memory (ldmatrix.x4): lane
/// 8 j + r passes `row`, the address of row r of matrix j (8 consecutive
/// bf16, 16-byte aligned). Register j of lane l then holds matrix j's
/// elements (l / 4, 2 (l % 4)) and (l / 4, 2 (l % 4) + 1), or with
/// `transposed` its elements (2 (l % 4), l / 4) and (2 (l % 4) + 1, l / 4).
/// Every lane of the warp must call it together.
template <bool transposed = false>
__device__ __forceinline__ void loadMatrices(uint32_t (&r)[4],
                                             const void *row) {
  const uint32_t address =
      static_cast<uint32_t>(__cvta_generic_to_shared(row));
  if constexpr (transposed)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 "
                 "{%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 "
                 "{%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address));
}

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_MMA_CUH
