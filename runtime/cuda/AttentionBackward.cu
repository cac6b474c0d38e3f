//===- AttentionBackward.cu - flash-style attention backward --------------===//
//
// The backward recomputes the probabilities from q, k and the forward's
// log-sum-exp instead of storing them, in three kernels and without
// atomics (bitwise reproducible):
//   delta  one warp per query row: delta = rowsum(dO * O);
//   dK dV  one block per (key tile, KV head, batch entry): K and V stay in
//          shared memory while the query tiles (at or after the diagonal
//          under the causal mask) of every query head of the group stream
//          through (on tensor cores double-buffered: the next query and dO
//          tiles land while the block computes on these); the block
//          computes P^T and dP^T = V dO^T for its 64
//          keys, dS = P * (dP - delta), and accumulates dV += P^T dO and
//          dK += dS^T Q in registers;
//   dQ     one block per (query tile, query head, batch entry): Q and dO
//          stay while the key tiles stream, dQ += dS K.
// The scores and dP are computed twice (once per kernel), the price of
// writing dQ without atomics. bf16 with a head dimension that is a multiple
// of 16 runs both gradient kernels on tensor cores (AttentionMma.cuh: P and
// dS are rounded to bf16 for their products, as FlashAttention 2 does);
// f32 and other head dimensions on CUDA cores (AttentionTile.cuh).
//
//===----------------------------------------------------------------------===//

#include "cuda/Arguments.h"
#include "cuda/AttentionMma.cuh"
#include "cuda/AttentionTile.cuh"
#include "cuda/Kernels.h"
#include "cuda/Launch.cuh"

#include <type_traits>

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

  const int64_t seq = args.seq;
  const KeyTileBlock block = keyTileBlock(args.kvHeads, seq, headDim);
  const int64_t kvOffset = block.kvOffset;
  const int row = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
  const int64_t kvStart = block.start, key = kvStart + row;
  float *pRow = pTile + row * kScoreStride;
  float *dsRow = dsTile + row * kScoreStride;

  loadTile(keyTile, args.k + kvOffset, kvStart, seq, headDim, 1.0f);
  loadTile(valueTile, args.v + kvOffset, kvStart, seq, headDim, 1.0f);
  RowAccumulator dkAccumulator, dvAccumulator;
  clear(dkAccumulator);
  clear(dvAccumulator);
  forEachQueryTile(
      block, args.qHeads, args.kvHeads, seq, headDim, args.causal,
      [&](int64_t qOffset, int64_t statsOffset, int64_t qStart) {
        __syncthreads(); // the previous tiles' readers are done
        loadTile(queryTile, args.q + qOffset, qStart, seq, headDim, 1.0f);
        loadTile(doTile, args.dout + qOffset, qStart, seq, headDim, 1.0f);
        loadRowStats(lseRows, args.lse + statsOffset, qStart, seq, kLog2e);
        loadRowStats(deltaRows, args.delta + statsOffset, qStart, seq, 1.0f);
        waitCopies();
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
      });
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

  const int64_t seq = args.seq;
  const QueryTileBlock block =
      queryTileBlock(args.qHeads, args.kvHeads, seq, headDim, args.causal);
  const int64_t qOffset = block.qOffset, kvOffset = block.kvOffset;
  const int64_t statsOffset = block.statsOffset;
  const int row = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
  const int64_t qStart = block.start, query = qStart + row;
  float *dsRow = dsTile + row * kScoreStride;

  loadTile(queryTile, args.q + qOffset, qStart, seq, headDim, 1.0f);
  loadTile(doTile, args.dout + qOffset, qStart, seq, headDim, 1.0f);
  loadRowStats(lseRows, args.lse + statsOffset, qStart, seq, kLog2e);
  loadRowStats(deltaRows, args.delta + statsOffset, qStart, seq, 1.0f);
  RowAccumulator dqAccumulator;
  clear(dqAccumulator);
  for (int64_t kvTile = 0; kvTile < block.kvTiles; ++kvTile) {
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

/// Starts copying the query and dO tiles of `visit` into `queryTile` and
/// `doTile` (cp.async, one commit group) and stores its rows' statistics
/// into `lseRows` (log2 domain) and `deltaRows`.
__device__ __forceinline__ void
loadQueryTilePair(const BackwardArgs<bf16> &args, const QueryTileVisit &visit,
                  bf16 *queryTile, bf16 *doTile, float *lseRows,
                  float *deltaRows) {
  mma::loadTile(queryTile, args.q + visit.qOffset, visit.qStart, args.seq,
                args.headDim);
  mma::loadTile(doTile, args.dout + visit.qOffset, visit.qStart, args.seq,
                args.headDim);
  commitCopies();
  loadRowStats(lseRows, args.lse + visit.statsOffset, visit.qStart, args.seq,
               kLog2e);
  loadRowStats(deltaRows, args.delta + visit.statsOffset, visit.qStart,
               args.seq, 1.0f);
}

/// dK and dV of one key tile of one KV head, on tensor cores: warp w
/// computes the transposed scores and dP of its 16 keys against each query
/// tile, and accumulates dV += P^T dO and dK += dS^T Q. The query and dO
/// tiles are double-buffered: the next pair's copies start before the
/// block computes on this one, so they land while it does.
__global__ void __launch_bounds__(mma::kThreads)
    attentionBackwardKvMmaKernel(BackwardArgs<bf16> args, bf16 *dk, bf16 *dv) {
  extern __shared__ float4 sharedMemory[];
  const int headDim = args.headDim;
  const int64_t tileElements = attentionMmaTileElements(headDim);
  bf16 *keyTile = reinterpret_cast<bf16 *>(sharedMemory);
  bf16 *valueTile = keyTile + tileElements;
  // Buffer b of the query and dO tiles and of the rows' statistics (log2
  // domain lse, then delta), as offsets: an array of pointers indexed by b
  // would live in local memory.
  bf16 *queryTiles = valueTile + tileElements;
  bf16 *doTiles = queryTiles + 2 * tileElements;
  float *lseRows = reinterpret_cast<float *>(doTiles + 2 * tileElements);
  float *deltaRows = lseRows + 2 * kTileRows;

  const int64_t seq = args.seq;
  const KeyTileBlock block = keyTileBlock(args.kvHeads, seq, headDim);
  const int64_t kvOffset = block.kvOffset;
  const int row0 = int(threadIdx.x / 32) * mma::kWarpRows;
  const int64_t kvStart = block.start;
  const QueryTiles tiles(block, args.qHeads, args.kvHeads, seq, headDim,
                         args.causal);

  mma::loadTile(keyTile, args.k + kvOffset, kvStart, seq, headDim);
  mma::loadTile(valueTile, args.v + kvOffset, kvStart, seq, headDim);
  if (tiles.count > 0)
    loadQueryTilePair(args, tiles.visit(0), queryTiles, doTiles, lseRows,
                      deltaRows);
  mma::HeadFragments dkAccumulator, dvAccumulator;
  mma::clear(dkAccumulator);
  mma::clear(dvAccumulator);
  for (int64_t pair = 0; pair < tiles.count; ++pair) {
    const int b = int(pair % 2), next = 1 - b;
    const QueryTileVisit visit = tiles.visit(pair);
    const bf16 *queryTile = queryTiles + b * tileElements;
    const bf16 *doTile = doTiles + b * tileElements;
    const float *lse = lseRows + b * kTileRows;
    const float *delta = deltaRows + b * kTileRows;
    // The other buffers' readers finished with the last iteration's
    // closing barrier: the next pair's copies may start, and this pair's
    // (the older group) are waited for.
    if (pair + 1 < tiles.count) {
      loadQueryTilePair(
          args, tiles.visit(pair + 1), queryTiles + next * tileElements,
          doTiles + next * tileElements, lseRows + next * kTileRows,
          deltaRows + next * kTileRows);
      waitCopiesExceptNewest<1>();
    } else {
      waitCopies();
    }
    __syncthreads(); // this pair's tiles and statistics are there

    // Rows are keys, columns queries: P^T and dP^T, then dS^T in dp.
    mma::ScoreFragments p, dp;
    mma::warpScoresAndGradients(p, dp, keyTile, valueTile, row0, queryTile,
                                doTile, headDim);
    mma::forEachScore([&](int n, int i, int row, int column) {
      const bool shown = visible(visit.qStart + column, kvStart + row0 + row,
                                 seq, args.causal);
      const float probability =
          shown ? exp2f(p[n][i] * args.scoreScale - lse[column]) : 0.0f;
      p[n][i] = probability;
      dp[n][i] = probability * (dp[n][i] - delta[column]);
    });
    mma::warpAccumulate(dvAccumulator, p, doTile, headDim);
    mma::warpAccumulate(dkAccumulator, dp, queryTile, headDim);
    __syncthreads(); // this pair's readers are done: the next copies may
                     // overwrite its buffers
  }
  const float dkScales[2] = {args.scale, args.scale}, dvScales[2] = {1, 1};
  mma::storeRows(dk + kvOffset, kvStart + row0, seq, dkAccumulator, dkScales,
                 headDim);
  mma::storeRows(dv + kvOffset, kvStart + row0, seq, dvAccumulator, dvScales,
                 headDim);
}

/// dQ of one query tile of one query head, on tensor cores: warp w
/// computes the scores and dP of its 16 queries against each key tile and
/// accumulates dQ += dS K.
__global__ void __launch_bounds__(mma::kThreads)
    attentionBackwardQMmaKernel(BackwardArgs<bf16> args, bf16 *dq) {
  extern __shared__ float4 sharedMemory[];
  const int headDim = args.headDim;
  const int64_t tileElements = attentionMmaTileElements(headDim);
  bf16 *queryTile = reinterpret_cast<bf16 *>(sharedMemory);
  bf16 *doTile = queryTile + tileElements;
  bf16 *keyTile = doTile + tileElements;
  bf16 *valueTile = keyTile + tileElements;

  const int64_t seq = args.seq;
  const QueryTileBlock block =
      queryTileBlock(args.qHeads, args.kvHeads, seq, headDim, args.causal);
  const int64_t qOffset = block.qOffset, kvOffset = block.kvOffset;
  const int64_t statsOffset = block.statsOffset;
  const int row0 = int(threadIdx.x / 32) * mma::kWarpRows;
  const mma::LanePosition lane = mma::lanePosition();
  const int64_t qStart = block.start;

  mma::loadTile(queryTile, args.q + qOffset, qStart, seq, headDim);
  mma::loadTile(doTile, args.dout + qOffset, qStart, seq, headDim);
  // The statistics of this thread's rows g and g + 8.
  float rowLse[2], rowDelta[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t query = qStart + row0 + lane.group + 8 * h;
    rowLse[h] = query < seq ? args.lse[statsOffset + query] * kLog2e : 0.0f;
    rowDelta[h] = query < seq ? args.delta[statsOffset + query] : 0.0f;
  }
  mma::HeadFragments dqAccumulator;
  mma::clear(dqAccumulator);
  for (int64_t kvTile = 0; kvTile < block.kvTiles; ++kvTile) {
    const int64_t kvStart = kvTile * kTileRows;
    __syncthreads(); // the previous tiles' readers are done
    mma::loadTile(keyTile, args.k + kvOffset, kvStart, seq, headDim);
    mma::loadTile(valueTile, args.v + kvOffset, kvStart, seq, headDim);
    waitCopies();
    __syncthreads();

    // Scores, then dS in dp.
    mma::ScoreFragments scores, dp;
    mma::warpScoresAndGradients(scores, dp, queryTile, doTile, row0, keyTile,
                                valueTile, headDim);
    mma::forEachScore([&](int n, int i, int row, int column) {
      const bool shown =
          visible(qStart + row0 + row, kvStart + column, seq, args.causal);
      const float probability =
          shown ? exp2f(scores[n][i] * args.scoreScale - rowLse[i / 2]) : 0.0f;
      dp[n][i] = probability * (dp[n][i] - rowDelta[i / 2]);
    });
    mma::warpAccumulate(dqAccumulator, dp, keyTile, headDim);
  }
  const float scales[2] = {args.scale, args.scale};
  mma::storeRows(dq + qOffset, qStart + row0, seq, dqAccumulator, scales,
                 headDim);
}

} // namespace

Status cuda::attentionBackward(cudaStream_t stream, int32_t dtype,
                               const AttentionShape &shape, const void *q,
                               const void *k, const void *v, const void *out,
                               const void *dout, const float *lse, void *dq,
                               void *dk, void *dv, void *workspace,
                               AttentionKernels kernels) {
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
  const bool tensorCores = kernels != AttentionKernels::CudaCores &&
                           attentionUsesTensorCores(dtype, shape.headDim) &&
                           areAligned(16, {q, k, v, dout, dq, dk, dv});
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
    if constexpr (std::is_same_v<T, bf16>)
      if (tensorCores) {
        TITANRT_RETURN_IF_ERROR(
            launchKernel(op, attentionBackwardKvMmaLaunch(shape), stream,
                         attentionBackwardKvMmaKernel, args,
                         static_cast<bf16 *>(dk), static_cast<bf16 *>(dv)));
        return launchKernel(op, attentionBackwardQMmaLaunch(shape), stream,
                            attentionBackwardQMmaKernel, args,
                            static_cast<bf16 *>(dq));
      }
    TITANRT_RETURN_IF_ERROR(launchKernel(op, attentionBackwardKvLaunch(shape),
                                         stream, attentionBackwardKvKernel<T>,
                                         args, static_cast<T *>(dk),
                                         static_cast<T *>(dv)));
    return launchKernel(op, attentionBackwardQLaunch(shape), stream,
                        attentionBackwardQKernel<T>, args,
                        static_cast<T *>(dq));
  });
}
