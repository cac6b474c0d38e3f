//===- AttentionForward.cu - flash-style causal attention forward ---------===//
//
// One block per (query tile of 64 rows, query head, batch entry); the query
// tile, pre-scaled by scale * log2(e) so that the scores are in base 2,
// stays in shared memory while the key and value tiles stream through it
// (only those at or below the diagonal under the causal mask). For each key
// tile the block computes the [64 x 64] scores, each row's new maximum
// across its 4 lanes, rescales the row's running sum and output by
// 2^(old max - new max), and adds P V (an online softmax: no [seq, seq]
// matrix). The output is divided by the sum once at the end, and each row's
// log-sum-exp (natural) is saved for the backward. Causal grids run the
// longest query tiles (the last) first.
//
// Two kernels do this: bf16 with a head dimension that is a multiple of 16
// runs on tensor cores (attentionForwardMmaKernel: bf16 tiles, 4 warps of
// 16 query rows, scores and output in f32 mma accumulators, probabilities
// rounded to bf16 for P V, as FlashAttention 2 does; the tiles come in
// with cp.async, each value tile while the scores are computed and the next
// key tile while P V is, so no extra shared memory is needed); f32 and
// other head dimensions run on CUDA cores (attentionForwardKernel: f32
// tiles, 4 threads per query row).
//
//===----------------------------------------------------------------------===//

#include "cuda/Arguments.h"
#include "cuda/AttentionMma.cuh"
#include "cuda/AttentionTile.cuh"
#include "cuda/Kernels.h"
#include "cuda/Launch.cuh"

using namespace titan::rt;
using namespace titan::rt::cuda;
using namespace titan::rt::cuda::attention;

namespace {

/// The output and log-sum-exp of one query tile of one query head.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    attentionForwardKernel(const T *q, const T *k, const T *v, T *out,
                           float *lse, int64_t qHeads, int64_t kvHeads,
                           int64_t seq, int headDim, bool causal,
                           float scoreScale) {
  extern __shared__ float4 sharedMemory[];
  float *queryTile = reinterpret_cast<float *>(sharedMemory);
  float *keyTile = queryTile + attentionTileFloats(headDim);
  float *valueTile = keyTile + attentionTileFloats(headDim);
  float *pTile = valueTile + attentionTileFloats(headDim);

  const QueryTileBlock block =
      queryTileBlock(qHeads, kvHeads, seq, headDim, causal);
  const int64_t qOffset = block.qOffset, kvOffset = block.kvOffset;
  const int row = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
  const int64_t qStart = block.start, query = qStart + row;
  float *pRow = pTile + row * kScoreStride;

  loadTile(queryTile, q + qOffset, qStart, seq, headDim, scoreScale);
  RowAccumulator accumulator;
  clear(accumulator);
  float rowMax = -INFINITY, rowSum = 0.0f;
  for (int64_t kvTile = 0; kvTile < block.kvTiles; ++kvTile) {
    const int64_t kvStart = kvTile * kTileRows;
    __syncthreads(); // the previous tiles' readers are done
    loadTile(keyTile, k + kvOffset, kvStart, seq, headDim, 1.0f);
    loadTile(valueTile, v + kvOffset, kvStart, seq, headDim, 1.0f);
    __syncthreads();

    float scores[kColumnsPerLane];
    tileDots(queryTile, row, keyTile, lane, headDim, scores);
    float tileMax = -INFINITY;
#pragma unroll
    for (int j = 0; j < kColumnsPerLane; ++j) {
      const int64_t key = kvStart + columnOf(lane, j);
      if (key >= seq || (causal && key > query))
        scores[j] = -INFINITY;
      tileMax = fmaxf(tileMax, scores[j]);
    }
    const float newMax = fmaxf(rowMax, rowLanesMax(tileMax));
    // A row that saw no visible key yet keeps a sum of 0; exp2(-inf) = 0.
    const float base = newMax == -INFINITY ? 0.0f : newMax;
    const float correction = exp2f(rowMax - base);
    float tileSum = 0.0f;
#pragma unroll
    for (int j = 0; j < kColumnsPerLane; ++j) {
      const float p = exp2f(scores[j] - base);
      tileSum += p;
      pRow[columnOf(lane, j)] = p;
    }
    rowSum = rowSum * correction + rowLanesSum(tileSum);
    rowMax = newMax;
#pragma unroll
    for (int chunk = 0; chunk < kChunksPerLane; ++chunk) {
      accumulator[chunk].x *= correction;
      accumulator[chunk].y *= correction;
      accumulator[chunk].z *= correction;
      accumulator[chunk].w *= correction;
    }
    __syncwarp(); // a row's probabilities are written and read by its lanes
    accumulateRows(accumulator, pRow, valueTile, lane, headDim);
  }

  if (query < seq) {
    storeRow(out + qOffset + query * headDim, accumulator, 1.0f / rowSum, lane,
             headDim);
    if (lane == 0)
      lse[block.statsOffset + query] = (rowMax + log2f(rowSum)) * kLn2;
  }
}

/// The output and log-sum-exp of one query tile of one query head, on
/// tensor cores (bf16; AttentionMma.cuh has the warp tiles).
__global__ void __launch_bounds__(mma::kThreads)
    attentionForwardMmaKernel(const bf16 *q, const bf16 *k, const bf16 *v,
                              bf16 *out, float *lse, int64_t qHeads,
                              int64_t kvHeads, int64_t seq, int headDim,
                              bool causal, float scoreScale) {
  extern __shared__ float4 sharedMemory[];
  const int64_t tileElements = attentionMmaTileElements(headDim);
  bf16 *queryTile = reinterpret_cast<bf16 *>(sharedMemory);
  bf16 *keyTile = queryTile + tileElements;
  bf16 *valueTile = keyTile + tileElements;

  const QueryTileBlock block =
      queryTileBlock(qHeads, kvHeads, seq, headDim, causal);
  const int64_t qOffset = block.qOffset, kvOffset = block.kvOffset;
  const int row0 = int(threadIdx.x / 32) * mma::kWarpRows;
  const mma::LanePosition lane = mma::lanePosition();
  const int64_t qStart = block.start;

  mma::loadTile(queryTile, q + qOffset, qStart, seq, headDim);
  mma::loadTile(keyTile, k + kvOffset, 0, seq, headDim);
  mma::HeadFragments output;
  mma::clear(output);
  // This thread's rows g and g + 8: running maxima, and its partial sums
  // (its columns only; the 4 lanes of a row add theirs at the end).
  float rowMax[2] = {-INFINITY, -INFINITY}, rowSum[2] = {0.0f, 0.0f};
  for (int64_t kvTile = 0; kvTile < block.kvTiles; ++kvTile) {
    const int64_t kvStart = kvTile * kTileRows;
    waitCopies();
    __syncthreads(); // the key tile is there; the value tile's readers are done
    // The value tile lands while the scores are computed.
    mma::loadTile(valueTile, v + kvOffset, kvStart, seq, headDim);

    mma::ScoreFragments scores;
    mma::clear(scores);
    mma::warpScores(scores, queryTile, row0, keyTile, headDim);
    // Only the diagonal tile and a tile past the sequence's end mask.
    const bool masked =
        (causal && kvStart + kTileRows > qStart) || kvStart + kTileRows > seq;
    float tileMax[2] = {-INFINITY, -INFINITY};
    mma::forEachScore([&](int n, int i, int row, int column) {
      float score = scores[n][i] * scoreScale;
      if (masked &&
          !visible(qStart + row0 + row, kvStart + column, seq, causal))
        score = -INFINITY;
      scores[n][i] = score;
      tileMax[i / 2] = fmaxf(tileMax[i / 2], score);
    });
    float base[2], correction[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float newMax = fmaxf(rowMax[h], rowLanesMax(tileMax[h]));
      // A row that saw no visible key yet keeps a sum of 0; exp2(-inf) = 0.
      base[h] = newMax == -INFINITY ? 0.0f : newMax;
      correction[h] = exp2f(rowMax[h] - base[h]);
      rowMax[h] = newMax;
      rowSum[h] *= correction[h];
    }
    mma::forEachScore([&](int n, int i, int, int) {
      const float p = exp2f(scores[n][i] - base[i / 2]);
      scores[n][i] = p;
      rowSum[i / 2] += p;
    });
    waitCopies();
    __syncthreads(); // the value tile is there; the key tile's readers are done
    // The next key tile lands while P V is computed.
    if (kvTile + 1 < block.kvTiles)
      mma::loadTile(keyTile, k + kvOffset, kvStart + kTileRows, seq, headDim);
    mma::scaleRows(output, correction);
    mma::warpAccumulate(output, scores, valueTile, headDim);
  }

  float reciprocal[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float sum = rowLanesSum(rowSum[h]);
    reciprocal[h] = 1.0f / sum;
    const int64_t query = qStart + row0 + lane.group + 8 * h;
    if (lane.thread == 0 && query < seq)
      lse[block.statsOffset + query] = (rowMax[h] + log2f(sum)) * kLn2;
  }
  mma::storeRows(out + qOffset, qStart + row0, seq, output, reciprocal,
                 headDim);
}

} // namespace

Status cuda::attentionForward(cudaStream_t stream, int32_t dtype,
                              const AttentionShape &shape, const void *q,
                              const void *k, const void *v, void *out,
                              float *lse, AttentionKernels kernels) {
  const char *op = "attention (CUDA)";
  int64_t rows;
  TITANRT_RETURN_IF_ERROR(checkAttentionCall(op, dtype, shape, rows));
  TITANRT_RETURN_IF_ERROR(checkPointers(
      op, rows, {{"q", q}, {"k", k}, {"v", v}, {"out", out}, {"lse", lse}}));
  if (rows == 0)
    return Status::success();
  const float scoreScale = scaleLog2(shape.scale);
  if (kernels != AttentionKernels::CudaCores &&
      attentionUsesTensorCores(dtype, shape.headDim) &&
      areAligned(16, {q, k, v, out}))
    return launchKernel(op, attentionForwardMmaLaunch(shape), stream,
                        attentionForwardMmaKernel, static_cast<const bf16 *>(q),
                        static_cast<const bf16 *>(k),
                        static_cast<const bf16 *>(v), static_cast<bf16 *>(out),
                        lse, shape.qHeads, shape.kvHeads, shape.seq,
                        int(shape.headDim), shape.causal, scoreScale);
  return withFloatType(dtype, [&](auto t) {
    using T = decltype(t);
    return launchKernel(
        op, attentionForwardLaunch(shape), stream, attentionForwardKernel<T>,
        static_cast<const T *>(q), static_cast<const T *>(k),
        static_cast<const T *>(v), static_cast<T *>(out), lse, shape.qHeads,
        shape.kvHeads, shape.seq, int(shape.headDim), shape.causal, scoreScale);
  });
}
