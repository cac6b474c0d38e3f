//===- AttentionMma.cuh - warp tiles of tensor-core attention --*- CUDA -*-===//
//
// What the tensor-core attention kernels (bf16 only) share. A block of 4
// warps works on 64-row tiles of bf16 in shared memory, rows padded to
// headDim + 8 elements (attentionMmaRowStride); warp w owns rows
// [16 w, 16 w + 16) of the block's own tile. Two products cover every
// GEMM of the forward and the backward:
//   - warpScores: the warp's [16 x 64] scores R C^T of its 16 rows of a
//     tile R and all 64 rows of a tile C (Q K^T, dO V^T, and transposed
//     K Q^T, V dO^T), as 8 accumulator fragments of 16 x 8;
//   - warpAccumulate: acc += W T, the warp's [16 x 64] weights (scores
//     turned into probabilities or their gradients, rounded to bf16: the A
//     operand is built from the accumulator fragments in registers) times
//     a [64 x headDim] tile T (P V, dS K, P^T dO, dS^T Q).
// Fragment layouts are Mma.cuh's; the operands in shared memory are loaded
// with ldmatrix (loadMatrices), four 8 x 8 matrices at once. With the
// padded stride, the 8 rows of each matrix fall into distinct banks.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_ATTENTIONMMA_CUH
#define TITAN_RUNTIME_CUDA_ATTENTIONMMA_CUH

#include "cuda/AsyncCopy.cuh"
#include "cuda/AttentionTile.cuh"
#include "cuda/Mma.cuh"

namespace titan::rt::cuda::attention::mma {

constexpr int kThreads = int(kAttentionMmaThreads);
/// Rows of a block's tile one warp owns (the mma's m).
constexpr int kWarpRows = 16;
/// Accumulator fragments of a [16 x 64] score tile (the mma's n is 8).
constexpr int kScoreFragments = kTileRows / 8;
/// Accumulator fragments of a [16 x headDim] row block, headDim <= 128.
constexpr int kHeadFragments = int(kAttentionMaxHeadDim) / 8;

using ScoreFragments = float[kScoreFragments][4];
using HeadFragments = float[kHeadFragments][4];

/// This thread's g = lane / 4 and t = lane % 4 (Mma.cuh).
struct LanePosition {
  int group, thread;
};
__device__ __forceinline__ LanePosition lanePosition() {
  const int lane = threadIdx.x % 32;
  return {lane / 4, lane % 4};
}

/// Starts copying rows [start, start + 64) of a [seq, headDim] bf16 matrix
/// into `tile` in 16-byte chunks (cp.async), zeros for rows >= seq: the
/// tile is there after waitCopies and a __syncthreads. `matrix` is 16-byte
/// aligned and headDim a multiple of 16.
__device__ __forceinline__ void loadTile(bf16 *tile, const bf16 *matrix,
                                         int64_t start, int64_t seq,
                                         int headDim) {
  const int stride = int(attentionMmaRowStride(headDim)), chunks = headDim / 8;
  for (int index = threadIdx.x; index < kTileRows * chunks; index += kThreads) {
    const int r = index / chunks, column = (index - r * chunks) * 8;
    const int64_t row = start + r;
    const bool inside = row < seq;
    copyAsync16(tile + r * stride + column,
                matrix + (inside ? row * headDim + column : 0), inside);
  }
}

/// Zeroes every entry of `fragments`.
template <int N>
__device__ __forceinline__ void clear(float (&fragments)[N][4]) {
#pragma unroll
  for (int n = 0; n < N; ++n)
#pragma unroll
    for (int i = 0; i < 4; ++i)
      fragments[n][i] = 0.0f;
}

/// The address this lane passes to loadMatrices for the four 8 x 8
/// matrices at rows [row, row + 16) and columns [column, column + 16) of a
/// tile with `stride`: matrix j at rows + 8 (j % 2) and columns
/// + 8 (j / 2) when `rowsFirst`, else rows + 8 (j / 2) and columns
/// + 8 (j % 2).
template <bool rowsFirst>
__device__ __forceinline__ const bf16 *
matrixRow(const bf16 *tile, int row, int column, int stride) {
  const int lane = threadIdx.x % 32, matrix = lane / 8;
  const int down = rowsFirst ? matrix % 2 : matrix / 2;
  const int right = rowsFirst ? matrix / 2 : matrix % 2;
  return tile + (row + 8 * down + lane % 8) * stride + column + 8 * right;
}

/// scores += rows [row0, row0 + 16) of `rowTile` times rows [0, 64) of
/// `columnTile`, transposed: scores[n] holds columns [8 n, 8 n + 8).
__device__ __forceinline__ void warpScores(ScoreFragments &scores,
                                           const bf16 *rowTile, int row0,
                                           const bf16 *columnTile,
                                           int headDim) {
  const int stride = int(attentionMmaRowStride(headDim));
  // A's registers are its rows 0-7 and 8-15 of columns 0-7, then of 8-15;
  // B = columnTile^T, so fragment n's registers are rows 8 n .. 8 n + 7 of
  // columnTile, columns 0-7 then 8-15: one load gives fragments 2 p and
  // 2 p + 1.
  const bf16 *aRow = matrixRow</*rowsFirst=*/true>(rowTile, row0, 0, stride);
  const bf16 *bRow = matrixRow</*rowsFirst=*/false>(columnTile, 0, 0, stride);
  for (int k = 0; k < headDim; k += 16) {
    uint32_t a[4];
    loadMatrices(a, aRow + k);
#pragma unroll
    for (int p = 0; p < kScoreFragments / 2; ++p) {
      uint32_t b[4];
      loadMatrices(b, bRow + 16 * p * stride + k);
      const uint32_t even[2] = {b[0], b[1]}, odd[2] = {b[2], b[3]};
      mmaBf16(scores[2 * p], a, even);
      mmaBf16(scores[2 * p + 1], a, odd);
    }
  }
}

/// The backward's pair of products, from zero: scores = the warp's rows of
/// `rows` times `columns` transposed, dp = its rows of `gradientRows` times
/// `gradientColumns` transposed (Q K^T and dO V^T, or K Q^T and V dO^T).
__device__ __forceinline__ void
warpScoresAndGradients(ScoreFragments &scores, ScoreFragments &dp,
                       const bf16 *rows, const bf16 *gradientRows, int row0,
                       const bf16 *columns, const bf16 *gradientColumns,
                       int headDim) {
  clear(scores);
  clear(dp);
  warpScores(scores, rows, row0, columns, headDim);
  warpScores(dp, gradientRows, row0, gradientColumns, headDim);
}

/// accumulator += weights (the warp's [16 x 64], rounded to bf16) times
/// `tile` ([64 x headDim]): accumulator[n] holds columns [8 n, 8 n + 8).
__device__ __forceinline__ void warpAccumulate(HeadFragments &accumulator,
                                               const ScoreFragments &weights,
                                               const bf16 *tile, int headDim) {
  const int stride = int(attentionMmaRowStride(headDim));
  // B = tile: fragment n's registers are its columns 8 n .. 8 n + 7 of
  // rows 0-7, then 8-15, loaded transposed; one load gives fragments 2 p
  // and 2 p + 1.
  const bf16 *bRow = matrixRow</*rowsFirst=*/true>(tile, 0, 0, stride);
#pragma unroll
  for (int j = 0; j < kScoreFragments / 2; ++j) {
    // Columns [16 j, 16 j + 16) of the weights: fragments 2 j and 2 j + 1
    // hold exactly the A operand's pairs.
    const uint32_t a[4] = {
        packBf16(weights[2 * j][0], weights[2 * j][1]),
        packBf16(weights[2 * j][2], weights[2 * j][3]),
        packBf16(weights[2 * j + 1][0], weights[2 * j + 1][1]),
        packBf16(weights[2 * j + 1][2], weights[2 * j + 1][3])};
#pragma unroll
    for (int p = 0; p < kHeadFragments / 2; ++p) {
      if (16 * p >= headDim)
        break;
      uint32_t b[4];
      loadMatrices</*transposed=*/true>(b, bRow + 16 * j * stride + 16 * p);
      const uint32_t even[2] = {b[0], b[1]}, odd[2] = {b[2], b[3]};
      mmaBf16(accumulator[2 * p], a, even);
      mmaBf16(accumulator[2 * p + 1], a, odd);
    }
  }
}

/// Multiplies the row-g entries (i < 2) of every fragment by factors[0] and
/// the row-(g + 8) entries by factors[1].
template <int N>
__device__ __forceinline__ void scaleRows(float (&fragments)[N][4],
                                          const float (&factors)[2]) {
#pragma unroll
  for (int n = 0; n < N; ++n)
#pragma unroll
    for (int i = 0; i < 4; ++i)
      fragments[n][i] *= factors[i / 2];
}

/// Writes the warp's rows of `accumulator` (rows firstRow + g and
/// firstRow + g + 8 of a [seq, headDim] matrix, those below seq), row h
/// multiplied by scales[h].
__device__ __forceinline__ void storeRows(bf16 *matrix, int64_t firstRow,
                                          int64_t seq,
                                          const HeadFragments &accumulator,
                                          const float (&scales)[2],
                                          int headDim) {
  const LanePosition lane = lanePosition();
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t row = firstRow + lane.group + 8 * h;
    if (row >= seq)
      continue;
    bf16 *out = matrix + row * headDim + 2 * lane.thread;
#pragma unroll
    for (int n = 0; n < kHeadFragments; ++n) {
      if (8 * n >= headDim)
        break;
      *reinterpret_cast<uint32_t *>(out + 8 * n) =
          packBf16(accumulator[n][2 * h] * scales[h],
                   accumulator[n][2 * h + 1] * scales[h]);
    }
  }
}

/// Calls visit(n, i, row, column) for entry i of every score fragment n
/// this thread holds, unrolled: `row` is the entry's row among the warp's
/// 16 (g or g + 8), `column` its column among the 64.
template <typename Visit>
__device__ __forceinline__ void forEachScore(Visit &&visit) {
  const LanePosition lane = lanePosition();
#pragma unroll
  for (int n = 0; n < kScoreFragments; ++n)
#pragma unroll
    for (int i = 0; i < 4; ++i)
      visit(n, i, lane.group + 8 * (i / 2), 8 * n + 2 * lane.thread + i % 2);
}

} // namespace titan::rt::cuda::attention::mma

#endif // TITAN_RUNTIME_CUDA_ATTENTIONMMA_CUH
