//===- AttentionBackward.cu - flash-style attention backward --------------===//
//
// The backward recomputes the probabilities from q, k and the forward's
// log-sum-exp instead of storing them, in three kernels and without
// atomics (bitwise reproducible):
//   delta  one warp per query row: delta = rowsum(dO * O);
//   dK dV  one block per (key tile, KV head, batch entry): K and V stay in
//          shared memory while the query tiles (at or after the diagonal
//          under the causal mask) of every query head of the group stream
//          through; the block computes P^T and dP^T = V dO^T for its 64
//          keys, dS = P * (dP - delta), and accumulates dV += P^T dO and
//          dK += dS^T Q in registers;
//   dQ     one block per (query tile, query head, batch entry): Q and dO
//          stay while the key tiles stream, dQ += dS K.
// The scores and dP are computed twice (once per kernel), the price of
// writing dQ without atomics. AttentionTile.cuh has the tile layout.
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

/// delta[row] = sum over d of out[row, d] * dout[row, d], one warp per row.
template <typename T>
__global__ void attentionDeltaKernel(const T *out, const T *dout, float *delta,
                                     int64_t rows, int headDim) {
  const int64_t row =
      int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) // uniform over the warp
    return;
  float sum = 0.0f;
  for (int d = lane; d < headDim; d += 32)
    sum += toFloat(out[row * headDim + d]) * toFloat(dout[row * headDim + d]);
  sum = warpSum(sum);
  if (lane == 0)
    delta[row] = sum;
}

/// The pointers and extents both gradient kernels read.
template <typename T> struct BackwardArgs {
  const T *q, *k, *v, *dout;
  const float *lse, *delta;
  int64_t qHeads, kvHeads, seq;
  int headDim;
  bool causal;
  /// scale * log2(e) (scaleLog2), and scale.
  float scoreScale, scale;
};

/// dK and dV of one key tile of one KV head (see the file comment).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    attentionBackwardKvKernel(BackwardArgs<T> args, T *dk, T *dv) {
  extern __shared__ float4 sharedMemory[];
  const int headDim = args.headDim;
  float *keyTile = reinterpret_cast<float *>(sharedMemory);
  float *valueTile = keyTile + attentionTileFloats(headDim);
  float *queryTile = valueTile + attentionTileFloats(headDim);
  float *doTile = queryTile + attentionTileFloats(headDim);
  float *pTile = doTile + attentionTileFloats(headDim); // P^T
  float *dsTile = pTile + kScoreStride * kTileRows;     // dS^T
  float *lseRows = dsTile + kScoreStride * kTileRows;   // log2 domain
  float *deltaRows = lseRows + kTileRows;

  const int64_t numTiles = gridDim.x, seq = args.seq;
  const int64_t kvTileIndex = blockIdx.x; // tile 0 has the most work
  const int64_t kvHead = blockIdx.y, batch = blockIdx.z;
  const int64_t group = args.qHeads / args.kvHeads;
  const int64_t kvOffset =
      headOffset(batch, kvHead, args.kvHeads, seq, headDim);
  const int row = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
  const int64_t kvStart = kvTileIndex * kTileRows, key = kvStart + row;
  float *pRow = pTile + row * kScoreStride;
  float *dsRow = dsTile + row * kScoreStride;

  loadTile(keyTile, args.k + kvOffset, kvStart, seq, headDim, 1.0f);
  loadTile(valueTile, args.v + kvOffset, kvStart, seq, headDim, 1.0f);
  RowAccumulator dkAccumulator, dvAccumulator;
  clear(dkAccumulator);
  clear(dvAccumulator);
  for (int64_t head = kvHead * group; head < (kvHead + 1) * group; ++head) {
    const int64_t qOffset = headOffset(batch, head, args.qHeads, seq, headDim);
    const int64_t statsOffset = (batch * args.qHeads + head) * seq;
    for (int64_t qTileIndex = args.causal ? kvTileIndex : 0;
         qTileIndex < numTiles; ++qTileIndex) {
      const int64_t qStart = qTileIndex * kTileRows;
      __syncthreads(); // the previous tiles' readers are done
      loadTile(queryTile, args.q + qOffset, qStart, seq, headDim, 1.0f);
      loadTile(doTile, args.dout + qOffset, qStart, seq, headDim, 1.0f);
      loadRowStats(lseRows, args.lse + statsOffset, qStart, seq, kLog2e);
      loadRowStats(deltaRows, args.delta + statsOffset, qStart, seq, 1.0f);
      __syncthreads();

      float scores[kColumnsPerLane], dp[kColumnsPerLane];
      tileDots(keyTile, row, queryTile, lane, headDim, scores);
      tileDots(valueTile, row, doTile, lane, headDim, dp);
#pragma unroll
      for (int j = 0; j < kColumnsPerLane; ++j) {
        const int i = columnOf(lane, j);
        const float p = visible(qStart + i, key, seq, args.causal)
                            ? exp2f(scores[j] * args.scoreScale - lseRows[i])
                            : 0.0f;
        pRow[i] = p;
        dsRow[i] = p * (dp[j] - deltaRows[i]);
      }
      __syncwarp(); // a key row's P and dS are written and read by its lanes
      accumulateRows(dvAccumulator, pRow, doTile, lane, headDim);
      accumulateRows(dkAccumulator, dsRow, queryTile, lane, headDim);
    }
  }
  if (key < seq) {
    storeRow(dk + kvOffset + key * headDim, dkAccumulator, args.scale, lane,
             headDim);
    storeRow(dv + kvOffset + key * headDim, dvAccumulator, 1.0f, lane, headDim);
  }
}

/// dQ of one query tile of one query head (see the file comment).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    attentionBackwardQKernel(BackwardArgs<T> args, T *dq) {
  extern __shared__ float4 sharedMemory[];
  const int headDim = args.headDim;
  float *queryTile = reinterpret_cast<float *>(sharedMemory);
  float *doTile = queryTile + attentionTileFloats(headDim);
  float *keyTile = doTile + attentionTileFloats(headDim);
  float *valueTile = keyTile + attentionTileFloats(headDim);
  float *dsTile = valueTile + attentionTileFloats(headDim);
  float *lseRows = dsTile + kScoreStride * kTileRows; // log2 domain
  float *deltaRows = lseRows + kTileRows;

  const int64_t numTiles = gridDim.x, seq = args.seq;
  const int64_t qTileIndex =
      args.causal ? numTiles - 1 - blockIdx.x : blockIdx.x;
  const int64_t head = blockIdx.y, batch = blockIdx.z;
  const int64_t kvHead = head / (args.qHeads / args.kvHeads);
  const int64_t qOffset = headOffset(batch, head, args.qHeads, seq, headDim);
  const int64_t kvOffset =
      headOffset(batch, kvHead, args.kvHeads, seq, headDim);
  const int64_t statsOffset = (batch * args.qHeads + head) * seq;
  const int row = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
  const int64_t qStart = qTileIndex * kTileRows, query = qStart + row;
  float *dsRow = dsTile + row * kScoreStride;

  loadTile(queryTile, args.q + qOffset, qStart, seq, headDim, 1.0f);
  loadTile(doTile, args.dout + qOffset, qStart, seq, headDim, 1.0f);
  loadRowStats(lseRows, args.lse + statsOffset, qStart, seq, kLog2e);
  loadRowStats(deltaRows, args.delta + statsOffset, qStart, seq, 1.0f);
  RowAccumulator dqAccumulator;
  clear(dqAccumulator);
  const int64_t kvTiles = args.causal ? qTileIndex + 1 : numTiles;
  for (int64_t kvTile = 0; kvTile < kvTiles; ++kvTile) {
    const int64_t kvStart = kvTile * kTileRows;
    __syncthreads(); // the previous tiles' readers are done
    loadTile(keyTile, args.k + kvOffset, kvStart, seq, headDim, 1.0f);
    loadTile(valueTile, args.v + kvOffset, kvStart, seq, headDim, 1.0f);
    __syncthreads();

    float scores[kColumnsPerLane], dp[kColumnsPerLane];
    tileDots(queryTile, row, keyTile, lane, headDim, scores);
    tileDots(doTile, row, valueTile, lane, headDim, dp);
    const float rowLse = lseRows[row], rowDelta = deltaRows[row];
#pragma unroll
    for (int j = 0; j < kColumnsPerLane; ++j) {
      const int c = columnOf(lane, j);
      const float p = visible(query, kvStart + c, seq, args.causal)
                          ? exp2f(scores[j] * args.scoreScale - rowLse)
                          : 0.0f;
      dsRow[c] = p * (dp[j] - rowDelta);
    }
    __syncwarp(); // a query row's dS is written and read by its lanes
    accumulateRows(dqAccumulator, dsRow, keyTile, lane, headDim);
  }
  if (query < seq)
    storeRow(dq + qOffset + query * headDim, dqAccumulator, args.scale, lane,
             headDim);
}

} // namespace

Status cuda::attentionBackward(cudaStream_t stream, int32_t dtype,
                               const AttentionShape &shape, const void *q,
                               const void *k, const void *v, const void *out,
                               const void *dout, const float *lse, void *dq,
                               void *dk, void *dv, void *workspace) {
  const char *op = "attention_grad (CUDA)";
  int64_t rows;
  TITANRT_RETURN_IF_ERROR(checkAttentionCall(op, dtype, shape, rows));
  TITANRT_RETURN_IF_ERROR(checkPointers(op, rows,
                                        {{"q", q},
                                         {"k", k},
                                         {"v", v},
                                         {"out", out},
                                         {"dout", dout},
                                         {"lse", lse},
                                         {"dq", dq},
                                         {"dk", dk},
                                         {"dv", dv},
                                         {"workspace", workspace}}));
  if (rows == 0)
    return Status::success();
  float *delta = static_cast<float *>(workspace);
  return withFloatType(dtype, [&](auto t) {
    using T = decltype(t);
    TITANRT_RETURN_IF_ERROR(
        launchKernel(op, warpRowLaunch(rows), stream, attentionDeltaKernel<T>,
                     static_cast<const T *>(out), static_cast<const T *>(dout),
                     delta, rows, int(shape.headDim)));
    BackwardArgs<T> args = {static_cast<const T *>(q),
                            static_cast<const T *>(k),
                            static_cast<const T *>(v),
                            static_cast<const T *>(dout),
                            lse,
                            delta,
                            shape.qHeads,
                            shape.kvHeads,
                            shape.seq,
                            int(shape.headDim),
                            shape.causal,
                            scaleLog2(shape.scale),
                            float(shape.scale)};
    TITANRT_RETURN_IF_ERROR(launchKernel(op, attentionBackwardKvLaunch(shape),
                                         stream, attentionBackwardKvKernel<T>,
                                         args, static_cast<T *>(dk),
                                         static_cast<T *>(dv)));
    return launchKernel(op, attentionBackwardQLaunch(shape), stream,
                        attentionBackwardQKernel<T>, args,
                        static_cast<T *>(dq));
  });
}
