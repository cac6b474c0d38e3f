//===- LaunchConfig.cpp - launch shapes of the CUDA kernels ---------------===//

#include "cuda/LaunchConfig.h"

#include <algorithm>
#include <string>

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

/// The smallest power of two >= `value` (>= 1).
int64_t nextPowerOfTwo(int64_t value) {
  int64_t power = 1;
  while (power < value)
    power *= 2;
  return power;
}

/// `bytes` rounded up to a multiple of 256 (cudaMalloc's alignment).
int64_t align256(int64_t bytes) { return ceilDiv(bytes, 256) * 256; }

std::string describe(const Dim3 &dim) {
  return "(" + std::to_string(dim.x) + ", " + std::to_string(dim.y) + ", " +
         std::to_string(dim.z) + ")";
}

} // namespace

Status cuda::validateLaunch(const char *op, const LaunchConfig &config) {
  auto fail = [&](const std::string &what) {
    return Status::invalidArgument(
        std::string(op) + ": " + what + " (grid " + describe(config.grid) +
        ", block " + describe(config.block) + ", " +
        std::to_string(config.sharedBytes) + " bytes of shared memory)");
  };
  const Dim3 &grid = config.grid, &block = config.block;
  if (grid.x < 1 || grid.y < 1 || grid.z < 1)
    return fail("an empty grid");
  if (grid.x > kMaxGridX || grid.y > kMaxGridYZ || grid.z > kMaxGridYZ)
    return fail("the problem needs more blocks than a grid holds (x <= 2^31 "
                "- 1, y and z <= 65535); split the call");
  if (block.x < 1 || block.y < 1 || block.z < 1 ||
      block.count() > kMaxThreadsPerBlock || block.count() % kWarpSize != 0)
    return fail("a block must have 32 to 1024 threads in whole warps");
  if (config.sharedBytes < 0 || config.sharedBytes > kMaxSharedBytes)
    return fail("more shared memory than an sm_90 block can have (" +
                std::to_string(kMaxSharedBytes) + " bytes)");
  return Status::success();
}

LaunchConfig cuda::elementwiseLaunch(int64_t count) {
  LaunchConfig config;
  config.block.x = kElementwiseThreads;
  config.grid.x =
      std::min(ceilDiv(std::max<int64_t>(count, 0), kElementwiseThreads),
               kMaxElementwiseBlocks);
  return config;
}

LaunchConfig cuda::rowLaunch(int64_t rows, int64_t cols) {
  LaunchConfig config;
  config.grid.x = rows;
  int64_t wanted = nextPowerOfTwo(
      ceilDiv(std::max<int64_t>(cols, 1), kRowElementsPerThread));
  config.block.x = std::clamp(wanted, kWarpSize, kMaxThreadsPerBlock);
  return config;
}

LaunchConfig cuda::warpRowLaunch(int64_t rows) {
  constexpr int64_t warpsPerBlock = 8;
  LaunchConfig config;
  config.block.x = warpsPerBlock * kWarpSize;
  config.grid.x = ceilDiv(rows, warpsPerBlock);
  return config;
}

LaunchConfig cuda::singleBlockLaunch() {
  LaunchConfig config;
  config.block.x = kMaxThreadsPerBlock;
  return config;
}

RmsNormBackwardLaunch cuda::rmsNormBackwardLaunch(int64_t rows, int64_t cols) {
  RmsNormBackwardLaunch launch;
  launch.rows = rowLaunch(std::min(rows, kRmsNormGradBlocks), cols);
  launch.columns.grid.x = ceilDiv(cols, kRmsNormColumnsPerBlock);
  launch.columns.block.x = kRmsNormColumnWarps * kWarpSize;
  return launch;
}

int64_t cuda::rmsNormBackwardWorkspaceBytes(int64_t rows, int64_t cols) {
  return std::min(rows, kRmsNormGradBlocks) * cols * int64_t(sizeof(float));
}

int64_t cuda::attentionSharedBytes(const AttentionSharedLayout &layout,
                                   int64_t headDim) {
  return (layout.tiles * attentionTileFloats(headDim) +
          layout.scoreTiles * kAttentionScoreFloats +
          layout.rowStats * kAttentionTile) *
         int64_t(sizeof(float));
}

Status cuda::checkAttentionShape(const char *op, const AttentionShape &shape) {
  auto fail = [&](const std::string &what) {
    return Status::invalidArgument(std::string(op) + ": " + what);
  };
  using Extent = std::pair<const char *, int64_t>;
  for (auto [name, value] :
       {Extent{"batch", shape.batch}, Extent{"q_heads", shape.qHeads},
        Extent{"kv_heads", shape.kvHeads}, Extent{"seq", shape.seq},
        Extent{"head_dim", shape.headDim}})
    if (value < 0)
      return fail(std::string(name) + " = " + std::to_string(value) +
                  " is negative");
  if (shape.kvHeads == 0 ? shape.qHeads != 0
                         : shape.qHeads % shape.kvHeads != 0)
    return fail("kv_heads = " + std::to_string(shape.kvHeads) +
                " does not divide q_heads = " + std::to_string(shape.qHeads));
  if (shape.headDim % 4 != 0 || shape.headDim < 4 ||
      shape.headDim > kAttentionMaxHeadDim)
    return Status::unsupported(
        std::string(op) + ": head_dim = " + std::to_string(shape.headDim) +
        " is not supported by the CUDA attention kernels (a multiple of 4 "
        "from 4 to " +
        std::to_string(kAttentionMaxHeadDim) + ")");
  if (shape.batch * shape.qHeads > kMaxGridX ||
      ceilDiv(shape.seq, kAttentionTile) > kMaxGridYZ)
    return fail("batch x q_heads must be below 2^31 and seq at most " +
                std::to_string(kMaxGridYZ * kAttentionTile) +
                " (grid limits); split the call");
  if (!(shape.scale > 0))
    return fail("scale = " + std::to_string(shape.scale) + " must be positive");
  return Status::success();
}

namespace {

/// One block of `threads` threads per (head, batch entry) in x and 64-row
/// tile in y: blocks start in order of their linear index (x first), so
/// every head's tile of one y starts before any head's next tile, and the
/// kernels give the blocks of the first y the longest tiles (longest work
/// first: the short ones fill in the tail).
LaunchConfig attentionLaunch(const AttentionShape &shape, int64_t heads,
                             int64_t threads, int64_t sharedBytes) {
  LaunchConfig config;
  config.grid = {heads * shape.batch, ceilDiv(shape.seq, kAttentionTile), 1};
  config.block.x = threads;
  config.sharedBytes = sharedBytes;
  return config;
}

LaunchConfig attentionSimtLaunch(const AttentionShape &shape, int64_t heads,
                                 const AttentionSharedLayout &layout) {
  return attentionLaunch(shape, heads, kAttentionThreads,
                         attentionSharedBytes(layout, shape.headDim));
}

LaunchConfig attentionMmaLaunch(const AttentionShape &shape, int64_t heads,
                                int64_t tiles, int64_t rowStats) {
  return attentionLaunch(
      shape, heads, kAttentionMmaThreads,
      attentionMmaSharedBytes(tiles, rowStats, shape.headDim));
}

} // namespace

LaunchConfig cuda::attentionForwardLaunch(const AttentionShape &shape) {
  return attentionSimtLaunch(shape, shape.qHeads, kAttentionForwardShared);
}

LaunchConfig cuda::attentionBackwardKvLaunch(const AttentionShape &shape) {
  return attentionSimtLaunch(shape, shape.kvHeads, kAttentionBackwardKvShared);
}

LaunchConfig cuda::attentionBackwardQLaunch(const AttentionShape &shape) {
  return attentionSimtLaunch(shape, shape.qHeads, kAttentionBackwardQShared);
}

int64_t cuda::attentionBackwardWorkspaceBytes(const AttentionShape &shape) {
  return shape.batch * shape.qHeads * shape.seq * int64_t(sizeof(float));
}

bool cuda::attentionUsesTensorCores(int32_t dtype, int64_t headDim) {
  return dtype == TITANRT_BF16 && headDim % 16 == 0 && headDim >= 16 &&
         headDim <= kAttentionMaxHeadDim;
}

int64_t cuda::attentionMmaSharedBytes(int64_t tiles, int64_t rowStats,
                                      int64_t headDim) {
  return tiles * attentionMmaTileElements(headDim) * 2 +
         rowStats * kAttentionTile * int64_t(sizeof(float));
}

LaunchConfig cuda::attentionForwardMmaLaunch(const AttentionShape &shape) {
  return attentionMmaLaunch(shape, shape.qHeads, 3, 0);
}

LaunchConfig cuda::attentionBackwardKvMmaLaunch(const AttentionShape &shape) {
  return attentionMmaLaunch(shape, shape.kvHeads, 6, 4);
}

LaunchConfig cuda::attentionBackwardQMmaLaunch(const AttentionShape &shape) {
  return attentionMmaLaunch(shape, shape.qHeads, 4, 0);
}

EmbeddingGradLaunch cuda::embeddingGradLaunch(int64_t numIds, int64_t vocab,
                                              int64_t dim) {
  EmbeddingGradLaunch launch;
  launch.histogram = elementwiseLaunch(numIds);
  launch.scan = singleBlockLaunch();
  launch.scatter = singleBlockLaunch();
  launch.reduce = rowLaunch(vocab, dim);
  return launch;
}

EmbeddingGradWorkspace cuda::embeddingGradWorkspace(int64_t vocab) {
  constexpr int64_t int32Bytes = sizeof(int32_t);
  EmbeddingGradWorkspace layout;
  layout.offsets = 0;
  layout.cursors = align256((vocab + 1) * int32Bytes) / int32Bytes;
  layout.positions = layout.cursors + align256(vocab * int32Bytes) / int32Bytes;
  return layout;
}

int64_t cuda::embeddingGradWorkspaceBytes(int64_t numIds, int64_t vocab) {
  EmbeddingGradWorkspace layout = embeddingGradWorkspace(vocab);
  return layout.positions * int64_t(sizeof(int32_t)) +
         align256(numIds * int64_t(sizeof(int32_t)));
}

std::vector<AdamWChunk>
cuda::planAdamWChunks(const std::vector<int64_t> &numels) {
  std::vector<AdamWChunk> chunks;
  for (size_t tensor = 0; tensor < numels.size(); ++tensor)
    for (int64_t start = 0; start < numels[tensor];
         start += kAdamWChunkElements)
      chunks.push_back({int32_t(tensor), 0, start});
  return chunks;
}

LaunchConfig cuda::adamWLaunch(int64_t numChunks) {
  LaunchConfig config;
  config.grid.x = numChunks;
  config.block.x = kAdamWThreads;
  return config;
}
