//===- LaunchConfig.h - launch shapes of the CUDA kernels -------*- C++ -*-===//
//
// The grid, block and dynamic shared memory of every kernel of the CUDA
// backend, chosen by pure host functions that the launchers call and the
// CPU unit tests check (test/unit/Runtime/Cuda) without a GPU. Also the
// shared-memory layout of the attention kernels, which device and host code
// compute alike, and the workspaces some kernels need (the caller plans them
// in the rank's arena). No CUDA header is needed to include this file.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_LAUNCHCONFIG_H
#define TITAN_RUNTIME_CUDA_LAUNCHCONFIG_H

#include "core/Status.h"
#include "cuda/KernelTypes.h"

#include <cstdint>
#include <vector>

namespace titan::rt::cuda {

//===----------------------------------------------------------------------===//
// Limits of sm_90 (H100, H200) that the configurations respect
//===----------------------------------------------------------------------===//

/// Threads per warp.
constexpr int64_t kWarpSize = 32;
/// Threads per block at most.
constexpr int64_t kMaxThreadsPerBlock = 1024;
/// Blocks per grid along x, and along y or z, at most.
constexpr int64_t kMaxGridX = 2147483647;
constexpr int64_t kMaxGridYZ = 65535;
/// Dynamic shared memory a block gets without opting in.
constexpr int64_t kDefaultSharedBytes = 48 * 1024;
/// The most shared memory one block of sm_90 may opt in to (227 KiB).
constexpr int64_t kMaxSharedBytes = 227 * 1024;

/// A grid or block extent (CUDA's dim3, without CUDA headers).
struct Dim3 {
  int64_t x = 1, y = 1, z = 1;
  int64_t count() const { return x * y * z; }
};

/// How one kernel is launched.
struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  /// Dynamic shared memory per block, in bytes.
  int64_t sharedBytes = 0;
};

/// Fails (naming `op`) unless `config` is launchable on sm_90: every extent
/// at least 1, a block of at most 1024 threads made of whole warps, the
/// grid within its limits and the shared memory at most kMaxSharedBytes.
Status validateLaunch(const char *op, const LaunchConfig &config);

/// ceil(a / b) for a >= 0, b > 0.
TITAN_HOST_DEVICE inline int64_t ceilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

//===----------------------------------------------------------------------===//
// Generic shapes
//===----------------------------------------------------------------------===//

/// Threads of an elementwise block.
constexpr int64_t kElementwiseThreads = 256;
/// The most blocks of an elementwise grid; its kernels loop over the
/// elements with the grid's stride, so any count is covered.
constexpr int64_t kMaxElementwiseBlocks = 65536;

/// `count` independent elements, one per thread and grid-stride loop:
/// grid = min(ceil(count / 256), kMaxElementwiseBlocks), block = 256.
LaunchConfig elementwiseLaunch(int64_t count);

/// Elements of a row each thread of a row kernel takes at least.
constexpr int64_t kRowElementsPerThread = 8;

/// One block per row of `cols` elements (rows <= kMaxGridX), its threads
/// striding over the row: a power of two in [32, 1024] threads, enough for
/// kRowElementsPerThread elements each. Used by RMSNorm, softmax,
/// cross-entropy and the embedding's rows.
LaunchConfig rowLaunch(int64_t rows, int64_t cols);

/// One warp per row of at most a few hundred elements (attention's
/// rowsum(dO * O)): 8 warps per block.
LaunchConfig warpRowLaunch(int64_t rows);

/// A single block of 1024 threads (reductions over all rows that must be
/// deterministic: cross-entropy's mean, the embedding gradient's scan).
LaunchConfig singleBlockLaunch();

//===----------------------------------------------------------------------===//
// RMSNorm backward
//===----------------------------------------------------------------------===//

/// Blocks of the RMSNorm backward's first kernel: row r goes to block
/// r mod G, G = min(rows, kRmsNormGradBlocks), a function of the shape
/// only, so that the weight gradient's sums are bitwise reproducible.
constexpr int64_t kRmsNormGradBlocks = 256;

/// The two kernels of RMSNorm's backward.
struct RmsNormBackwardLaunch {
  /// dx, and each block's partial weight gradient [G, cols] in the
  /// workspace.
  LaunchConfig rows;
  /// The weight gradient: a block per kRmsNormColumnsPerBlock columns,
  /// whose kRmsNormColumnWarps warps each sum every such warp count-th
  /// partial row (a lane per column), then add their sums in warp order.
  LaunchConfig columns;
};

/// Columns of the weight gradient per block of its sum, and the warps
/// that split the partial rows between them.
constexpr int64_t kRmsNormColumnsPerBlock = 32;
constexpr int64_t kRmsNormColumnWarps = 8;
RmsNormBackwardLaunch rmsNormBackwardLaunch(int64_t rows, int64_t cols);

/// Workspace bytes of the RMSNorm backward: G x cols f32 partial sums.
int64_t rmsNormBackwardWorkspaceBytes(int64_t rows, int64_t cols);

//===----------------------------------------------------------------------===//
// Attention (flash-style, SIMT: tiles in shared memory, fp32 math)
//===----------------------------------------------------------------------===//

/// Query and key rows per tile.
constexpr int64_t kAttentionTile = 64;
/// Threads per attention block: 4 per tile row.
constexpr int64_t kAttentionThreads = 256;
/// The largest head dimension the kernels support (a multiple of 4).
constexpr int64_t kAttentionMaxHeadDim = 128;
/// Floats per row of a [64 x 64] score tile in shared memory (padded so
/// that the 8 rows a warp reads fall into distinct banks).
constexpr int64_t kAttentionScoreStride = kAttentionTile + 4;

/// Floats per row of a [64 x headDim] tile in shared memory: padded by 4,
/// which keeps float4 accesses aligned and the rows on distinct banks.
TITAN_HOST_DEVICE inline int64_t attentionRowStride(int64_t headDim) {
  return headDim + 4;
}
/// Floats of one [64 x headDim] tile in shared memory.
TITAN_HOST_DEVICE inline int64_t attentionTileFloats(int64_t headDim) {
  return kAttentionTile * attentionRowStride(headDim);
}
/// Floats of one [64 x 64] score tile in shared memory.
constexpr int64_t kAttentionScoreFloats =
    kAttentionTile * kAttentionScoreStride;

/// The shared memory of each attention kernel: `tiles` [64 x headDim]
/// tiles, `scoreTiles` [64 x 64] tiles, then `rowStats` arrays of 64 f32
/// row statistics, in this order.
struct AttentionSharedLayout {
  int64_t tiles;
  int64_t scoreTiles;
  int64_t rowStats;
};
/// Forward: Q, K, V tiles and the probabilities.
constexpr AttentionSharedLayout kAttentionForwardShared = {3, 1, 0};
/// Backward over key tiles: K, V, Q, dO tiles; P and dS transposed; the
/// query rows' log-sum-exp and rowsum(dO * O).
constexpr AttentionSharedLayout kAttentionBackwardKvShared = {4, 2, 2};
/// Backward over query tiles: Q, dO, K, V tiles; dS; the row statistics.
constexpr AttentionSharedLayout kAttentionBackwardQShared = {4, 1, 2};

/// Bytes of `layout` for `headDim`.
int64_t attentionSharedBytes(const AttentionSharedLayout &layout,
                             int64_t headDim);

/// Fails (naming `op` and the argument) unless the kernels support `shape`:
/// non-negative extents, kvHeads dividing qHeads, headDim a multiple of 4
/// in [4, 128], batch and heads within the grid's y and z limits, a
/// positive scale.
Status checkAttentionShape(const char *op, const AttentionShape &shape);

/// Forward: one block per (query tile, query head, batch); causal grids
/// start with the longest tiles (the kernel reverses blockIdx.x).
LaunchConfig attentionForwardLaunch(const AttentionShape &shape);
/// Backward, dK and dV: one block per (key tile, KV head, batch), looping
/// over the query heads of its group and their query tiles.
LaunchConfig attentionBackwardKvLaunch(const AttentionShape &shape);
/// Backward, dQ: one block per (query tile, query head, batch).
LaunchConfig attentionBackwardQLaunch(const AttentionShape &shape);
/// Workspace bytes of the backward: rowsum(dO * O) per query row, f32.
int64_t attentionBackwardWorkspaceBytes(const AttentionShape &shape);

//===----------------------------------------------------------------------===//
// Attention on tensor cores (bf16 tiles, mma.sync m16n8k16, f32 accumulators)
//===----------------------------------------------------------------------===//

/// Warps of a tensor-core attention block: each takes 16 rows of the
/// block's 64-row tile.
constexpr int64_t kAttentionMmaWarps = 4;
constexpr int64_t kAttentionMmaThreads = kAttentionMmaWarps * kWarpSize;

/// bf16 elements per row of a [64 x headDim] tile in shared memory: padded
/// by 8 (16 bytes), which keeps rows 16-byte aligned and puts the 8 rows of
/// a fragment load on distinct banks.
TITAN_HOST_DEVICE inline int64_t attentionMmaRowStride(int64_t headDim) {
  return headDim + 8;
}
/// bf16 elements of one [64 x headDim] tile in shared memory.
TITAN_HOST_DEVICE inline int64_t attentionMmaTileElements(int64_t headDim) {
  return kAttentionTile * attentionMmaRowStride(headDim);
}

/// Whether attention of `dtype` with `headDim` runs on tensor cores: bf16
/// with a head dimension that is a multiple of 16 (the mma's k), up to 128.
/// Everything else runs the SIMT kernels above, and so do operands whose
/// addresses are not 16-byte aligned (the launchers check).
bool attentionUsesTensorCores(int32_t dtype, int64_t headDim);

/// The shared memory of a tensor-core attention kernel: `tiles` bf16
/// [64 x headDim] tiles, then `rowStats` arrays of 64 f32 row statistics.
int64_t attentionMmaSharedBytes(int64_t tiles, int64_t rowStats,
                                int64_t headDim);

/// Forward on tensor cores: one block of 4 warps per (query tile, query
/// head, batch); Q, K, V tiles in shared memory.
LaunchConfig attentionForwardMmaLaunch(const AttentionShape &shape);
/// Backward on tensor cores, dK and dV: one block per (key tile, KV head,
/// batch); K and V tiles, and two buffers each of the Q and dO tiles and
/// the query rows' statistics (the next pair lands while one is used).
LaunchConfig attentionBackwardKvMmaLaunch(const AttentionShape &shape);
/// Backward on tensor cores, dQ: one block per (query tile, query head,
/// batch); Q, dO, K, V tiles.
LaunchConfig attentionBackwardQMmaLaunch(const AttentionShape &shape);

//===----------------------------------------------------------------------===//
// Embedding gradient (deterministic, sort-free)
//===----------------------------------------------------------------------===//

/// Positions the single-block stable scatter takes per round.
constexpr int64_t kEmbeddingScatterChunk = 1024;

/// The kernels of the embedding gradient: a histogram of the ids, an
/// exclusive scan of it, a stable scatter of the positions into id order,
/// and one block per vocabulary row summing its positions' rows in order.
struct EmbeddingGradLaunch {
  LaunchConfig histogram;
  LaunchConfig scan;
  LaunchConfig scatter;
  LaunchConfig reduce;
};
EmbeddingGradLaunch embeddingGradLaunch(int64_t numIds, int64_t vocab,
                                        int64_t dim);

/// Workspace bytes of the embedding gradient: int32 offsets [vocab + 1],
/// cursors [vocab] and positions [numIds], each 256-byte aligned.
int64_t embeddingGradWorkspaceBytes(int64_t numIds, int64_t vocab);

/// Offsets (in int32 elements) of the embedding gradient's workspace
/// arrays: offsets, cursors, positions.
struct EmbeddingGradWorkspace {
  int64_t offsets;
  int64_t cursors;
  int64_t positions;
};
EmbeddingGradWorkspace embeddingGradWorkspace(int64_t vocab);

//===----------------------------------------------------------------------===//
// Fused AdamW
//===----------------------------------------------------------------------===//

/// Elements one AdamW block updates (32 per thread).
constexpr int64_t kAdamWChunkElements = 8192;
/// Threads per AdamW block.
constexpr int64_t kAdamWThreads = 256;

/// One block's work: elements [start, start + kAdamWChunkElements) of
/// tensor `tensor`, clipped to its size.
struct AdamWChunk {
  /// The tensor's index in the list.
  int32_t tensor;
  /// Padding (0): the table is copied to the GPU as is.
  int32_t reserved;
  /// The first element of the chunk.
  int64_t start;
};

/// Cuts tensors of `numels` elements into chunks, in tensor order; empty
/// tensors get none.
std::vector<AdamWChunk> planAdamWChunks(const std::vector<int64_t> &numels);

/// One block per chunk.
LaunchConfig adamWLaunch(int64_t numChunks);

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_LAUNCHCONFIG_H
