//===- AttentionTile.cuh - tiles of the attention kernels ------*- CUDA -*-===//
//
// What the forward and both backward kernels share. A block of 256 threads
// works on 64-row tiles in shared memory (f32, rows padded to headDim + 4
// floats). Thread t owns tile row t / 4 and is lane t % 4 of that row:
//   - for a [64 x 64] product of two tiles (scores, or dO V^T), it computes
//     the 16 entries of its row in columns lane, lane + 4, ..., lane + 60;
//     the 4 lanes of a row are consecutive threads of one warp, so row-wise
//     reductions are two shuffles;
//   - for a [64 x headDim] accumulator (the output, dQ, dK, dV), it keeps
//     the float4 chunks lane, lane + 4, ... of its row in registers (at
//     most 8: headDim <= 128).
// With these strides, the 8 rows a warp touches fall into distinct banks.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_ATTENTIONTILE_CUH
#define TITAN_RUNTIME_CUDA_ATTENTIONTILE_CUH

#include "cuda/DeviceSupport.cuh"
#include "cuda/LaunchConfig.h"

namespace titan::rt::cuda::attention {

/// Rows of a tile, and threads of a block.
constexpr int kTileRows = int(kAttentionTile);
constexpr int kThreads = int(kAttentionThreads);
/// Threads per tile row, and columns of a score row per thread.
constexpr int kLanes = 4;
constexpr int kColumnsPerLane = kTileRows / kLanes;
/// float4 chunks of an accumulator row per thread.
constexpr int kChunksPerLane = int(kAttentionMaxHeadDim) / 4 / kLanes;
/// Floats per row of a score tile.
constexpr int kScoreStride = int(kAttentionScoreStride);
/// log2(e) and ln(2): the kernels' exponentials are in base 2.
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

/// scale * log2(e) in f32, rounded once: the factor that turns q . k into
/// base-2 scores.
inline float scaleLog2(double scale) {
  return float(scale * 1.4426950408889634);
}

/// An accumulator row's slice owned by one thread.
using RowAccumulator = float4[kChunksPerLane];

/// Copies rows [start, start + 64) of a [seq, headDim] matrix into `tile`,
/// multiplied by `scale`, with zeros for rows >= seq.
template <typename T>
__device__ __forceinline__ void loadTile(float *tile, const T *matrix,
                                         int64_t start, int64_t seq,
                                         int headDim, float scale) {
  const int stride = headDim + 4, total = kTileRows * headDim;
  for (int index = threadIdx.x; index < total; index += kThreads) {
    const int r = index / headDim, d = index - r * headDim;
    const int64_t row = start + r;
    tile[r * stride + d] =
        row < seq ? toFloat(matrix[row * headDim + d]) * scale : 0.0f;
  }
}

/// Copies 64 row statistics from `source` (rows [start, start + 64) of a
/// [seq] vector) into `rows`, multiplied by `scale`, 0 past seq.
__device__ __forceinline__ void loadRowStats(float *rows, const float *source,
                                             int64_t start, int64_t seq,
                                             float scale) {
  if (threadIdx.x < kTileRows) {
    const int64_t row = start + threadIdx.x;
    rows[threadIdx.x] = row < seq ? source[row] * scale : 0.0f;
  }
}

/// dots[j] = tile row `row` of `rowTile` . row (lane + 4 j) of `columnTile`.
__device__ __forceinline__ void tileDots(const float *rowTile, int row,
                                         const float *columnTile, int lane,
                                         int headDim,
                                         float (&dots)[kColumnsPerLane]) {
  const int stride = headDim + 4;
#pragma unroll
  for (int j = 0; j < kColumnsPerLane; ++j)
    dots[j] = 0.0f;
  const float4 *own = reinterpret_cast<const float4 *>(rowTile + row * stride);
  for (int d4 = 0; d4 < headDim / 4; ++d4) {
    const float4 a = own[d4];
#pragma unroll
    for (int j = 0; j < kColumnsPerLane; ++j) {
      const float4 b = reinterpret_cast<const float4 *>(
          columnTile + (lane + kLanes * j) * stride)[d4];
      dots[j] += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
    }
  }
}

/// The tile column of a lane's j-th score entry.
__device__ __forceinline__ int columnOf(int lane, int j) {
  return lane + kLanes * j;
}

/// accumulator += sum over c < 64 of weights[c] * row c of `tile`, for this
/// thread's chunks of the row.
__device__ __forceinline__ void accumulateRows(RowAccumulator &accumulator,
                                               const float *weights,
                                               const float *tile, int lane,
                                               int headDim) {
  const int stride = headDim + 4;
  for (int c = 0; c < kTileRows; ++c) {
    const float w = weights[c];
    const float4 *source = reinterpret_cast<const float4 *>(tile + c * stride);
#pragma unroll
    for (int chunk = 0; chunk < kChunksPerLane; ++chunk) {
      const int d4 = lane + kLanes * chunk;
      if (4 * d4 < headDim) {
        const float4 x = source[d4];
        accumulator[chunk].x += w * x.x;
        accumulator[chunk].y += w * x.y;
        accumulator[chunk].z += w * x.z;
        accumulator[chunk].w += w * x.w;
      }
    }
  }
}

/// Zeroes this thread's slice of an accumulator row.
__device__ __forceinline__ void clear(RowAccumulator &accumulator) {
#pragma unroll
  for (int chunk = 0; chunk < kChunksPerLane; ++chunk)
    accumulator[chunk] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

/// Writes this thread's chunks of `accumulator` * `scale` into `row` (one
/// row of a [seq, headDim] matrix).
template <typename T>
__device__ __forceinline__ void storeRow(T *row,
                                         const RowAccumulator &accumulator,
                                         float scale, int lane, int headDim) {
#pragma unroll
  for (int chunk = 0; chunk < kChunksPerLane; ++chunk) {
    const int d = 4 * (lane + kLanes * chunk);
    if (d < headDim) {
      row[d] = fromFloat<T>(accumulator[chunk].x * scale);
      row[d + 1] = fromFloat<T>(accumulator[chunk].y * scale);
      row[d + 2] = fromFloat<T>(accumulator[chunk].z * scale);
      row[d + 3] = fromFloat<T>(accumulator[chunk].w * scale);
    }
  }
}

/// The maximum (or sum) of `value` over the 4 lanes of a tile row.
__device__ __forceinline__ float rowLanesMax(float value) {
  value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, 1));
  return fmaxf(value, __shfl_xor_sync(0xffffffffu, value, 2));
}
__device__ __forceinline__ float rowLanesSum(float value) {
  value += __shfl_xor_sync(0xffffffffu, value, 1);
  return value + __shfl_xor_sync(0xffffffffu, value, 2);
}

/// Whether key `key` is visible from query `query`.
__device__ __forceinline__ bool visible(int64_t query, int64_t key, int64_t seq,
                                        bool causal) {
  return query < seq && key < seq && (!causal || key <= query);
}

/// The offset of head `head` of batch entry `batch` in a [batch, heads,
/// seq, headDim] tensor.
__device__ __forceinline__ int64_t headOffset(int64_t batch, int64_t head,
                                              int64_t heads, int64_t seq,
                                              int headDim) {
  return ((batch * heads + head) * seq) * headDim;
}

/// What a block of a query-tile grid (the forward, dQ: grid (query heads x
/// batch, query tiles), attentionLaunch) works on.
struct QueryTileBlock {
  /// The query tile and its first row; causal grids start with the last
  /// (longest) tile.
  int64_t tile, start;
  /// Key tiles it reads: those at or below the diagonal when causal.
  int64_t kvTiles;
  /// Its query head in [batch, q_heads, seq, headDim], its KV head in
  /// [batch, kv_heads, seq, headDim], its rows' statistics in [batch,
  /// q_heads, seq].
  int64_t qOffset, kvOffset, statsOffset;
};
__device__ __forceinline__ QueryTileBlock queryTileBlock(
    int64_t qHeads, int64_t kvHeads, int64_t seq, int headDim, bool causal) {
  const int64_t numTiles = gridDim.y;
  const int64_t tile = causal ? numTiles - 1 - blockIdx.y : blockIdx.y;
  const int64_t head = blockIdx.x % qHeads, batch = blockIdx.x / qHeads;
  const int64_t kvHead = head / (qHeads / kvHeads);
  return {tile,
          tile * kTileRows,
          causal ? tile + 1 : numTiles,
          headOffset(batch, head, qHeads, seq, headDim),
          headOffset(batch, kvHead, kvHeads, seq, headDim),
          (batch * qHeads + head) * seq};
}

/// What a block of a key-tile grid (dK and dV: grid (KV heads x batch, key
/// tiles), attentionLaunch) works on.
struct KeyTileBlock {
  /// The key tile (tile 0 has the most work) and its first row.
  int64_t tile, start;
  int64_t kvHead, batch;
  /// Its KV head in [batch, kv_heads, seq, headDim].
  int64_t kvOffset;
};
__device__ __forceinline__ KeyTileBlock keyTileBlock(int64_t kvHeads,
                                                     int64_t seq, int headDim) {
  const int64_t tile = blockIdx.y, kvHead = blockIdx.x % kvHeads,
                batch = blockIdx.x / kvHeads;
  return {tile, tile * kTileRows, kvHead, batch,
          headOffset(batch, kvHead, kvHeads, seq, headDim)};
}

/// A query tile a key-tile block reads: the offsets of its query head in
/// [batch, q_heads, seq, headDim] and of its statistics in [batch,
/// q_heads, seq], and its first row.
struct QueryTileVisit {
  int64_t qOffset, statsOffset, qStart;
};

/// The query tiles a key-tile block reads, in order: for each query head
/// of its KV head's group, the tiles at or after the diagonal when causal,
/// all otherwise. `count` of them; visit(i) is the i-th.
struct QueryTiles {
  int64_t count;
  __device__ __forceinline__ QueryTiles(const KeyTileBlock &block,
                                        int64_t qHeads, int64_t kvHeads,
                                        int64_t seq, int headDim, bool causal)
      : block(block), qHeads(qHeads), seq(seq), headDim(headDim),
        group(qHeads / kvHeads), first(causal ? block.tile : 0),
        perHead(int64_t(gridDim.y) - first) {
    count = group * perHead;
  }
  __device__ __forceinline__ QueryTileVisit visit(int64_t i) const {
    const int64_t head = block.kvHead * group + i / perHead;
    const int64_t tile = first + i % perHead;
    return {headOffset(block.batch, head, qHeads, seq, headDim),
            (block.batch * qHeads + head) * seq, tile * kTileRows};
  }

private:
  KeyTileBlock block;
  int64_t qHeads, seq;
  int headDim;
  int64_t group, first, perHead;
};

/// Calls visit(qOffset, statsOffset, qStart) for every query tile a
/// key-tile block reads (QueryTiles), in order.
template <typename Visit>
__device__ __forceinline__ void
forEachQueryTile(const KeyTileBlock &block, int64_t qHeads, int64_t kvHeads,
                 int64_t seq, int headDim, bool causal, Visit &&visit) {
  const QueryTiles tiles(block, qHeads, kvHeads, seq, headDim, causal);
  for (int64_t i = 0; i < tiles.count; ++i) {
    const QueryTileVisit at = tiles.visit(i);
    visit(at.qOffset, at.statsOffset, at.qStart);
  }
}

} // namespace titan::rt::cuda::attention

#endif // TITAN_RUNTIME_CUDA_ATTENTIONTILE_CUH
