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
// longest query tiles (the last) first. All math is f32 on CUDA cores
// (SIMT); docs/cuda-backend.md says what a tensor-core version would add.
//
//===----------------------------------------------------------------------===//

#include "cuda/Arguments.h"
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

  const int64_t numTiles = gridDim.x;
  const int64_t qTileIndex = causal ? numTiles - 1 - blockIdx.x : blockIdx.x;
  const int64_t head = blockIdx.y, batch = blockIdx.z;
  const int64_t kvHead = head / (qHeads / kvHeads);
  const int64_t qOffset = headOffset(batch, head, qHeads, seq, headDim);
  const int64_t kvOffset = headOffset(batch, kvHead, kvHeads, seq, headDim);
  const int row = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
  const int64_t qStart = qTileIndex * kTileRows, query = qStart + row;
  float *pRow = pTile + row * kScoreStride;

  loadTile(queryTile, q + qOffset, qStart, seq, headDim, scoreScale);
  RowAccumulator accumulator;
  clear(accumulator);
  float rowMax = -INFINITY, rowSum = 0.0f;
  const int64_t kvTiles = causal ? qTileIndex + 1 : numTiles;
  for (int64_t kvTile = 0; kvTile < kvTiles; ++kvTile) {
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
      lse[(batch * qHeads + head) * seq + query] =
          (rowMax + log2f(rowSum)) * kLn2;
  }
}

} // namespace

Status cuda::attentionForward(cudaStream_t stream, int32_t dtype,
                              const AttentionShape &shape, const void *q,
                              const void *k, const void *v, void *out,
                              float *lse) {
  const char *op = "attention (CUDA)";
  int64_t rows;
  TITANRT_RETURN_IF_ERROR(checkAttentionCall(op, dtype, shape, rows));
  TITANRT_RETURN_IF_ERROR(checkPointers(
      op, rows, {{"q", q}, {"k", k}, {"v", v}, {"out", out}, {"lse", lse}}));
  if (rows == 0)
    return Status::success();
  const float scoreScale = scaleLog2(shape.scale);
  return withFloatType(dtype, [&](auto t) {
    using T = decltype(t);
    return launchKernel(
        op, attentionForwardLaunch(shape), stream, attentionForwardKernel<T>,
        static_cast<const T *>(q), static_cast<const T *>(k),
        static_cast<const T *>(v), static_cast<T *>(out), lse, shape.qHeads,
        shape.kvHeads, shape.seq, int(shape.headDim), shape.causal, scoreScale);
  });
}
