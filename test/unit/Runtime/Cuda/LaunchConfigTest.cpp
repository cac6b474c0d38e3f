//===- LaunchConfigTest.cpp - launch shapes of the CUDA kernels -----------===//
//
// The pure host functions that choose every kernel's grid, block and shared
// memory (runtime/cuda/LaunchConfig.h), on the CPU: sm_90's limits hold,
// every element is covered (tails included), workspaces do not overlap.
//
//===----------------------------------------------------------------------===//

#include "cuda/LaunchConfig.h"

#include "gtest/gtest.h"

#include <climits>
#include <set>

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

void expectValid(const LaunchConfig &config) {
  Status status = validateLaunch("test", config);
  EXPECT_TRUE(status.ok()) << status.getMessage();
}

TEST(CudaLaunchConfigTest, ValidateLaunchEnforcesSm90Limits) {
  LaunchConfig good;
  good.grid = {kMaxGridX, kMaxGridYZ, kMaxGridYZ};
  good.block = {32, 32, 1};
  good.sharedBytes = kMaxSharedBytes;
  expectValid(good);

  auto rejected = [&](auto mutate, const char *fragment) {
    LaunchConfig config = good;
    mutate(config);
    Status status = validateLaunch("rms_norm (CUDA)", config);
    EXPECT_EQ(status.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(status.getMessage().find("rms_norm (CUDA): "), std::string::npos)
        << status.getMessage();
    EXPECT_NE(status.getMessage().find(fragment), std::string::npos)
        << status.getMessage();
  };
  rejected([](LaunchConfig &c) { c.grid.x = 0; }, "empty grid");
  rejected([](LaunchConfig &c) { c.grid.x = kMaxGridX + 1; }, "split the call");
  rejected([](LaunchConfig &c) { c.grid.y = 65536; }, "split the call");
  rejected([](LaunchConfig &c) { c.grid.z = 65536; }, "split the call");
  rejected([](LaunchConfig &c) { c.block = {1025, 1, 1}; }, "whole warps");
  rejected([](LaunchConfig &c) { c.block = {48, 1, 1}; }, "whole warps");
  rejected([](LaunchConfig &c) { c.sharedBytes = kMaxSharedBytes + 1; },
           "shared memory");
}

/// Every index below `count` is visited exactly once by a grid-stride loop
/// over `config` (simulated for small counts).
void expectGridStrideCovers(const LaunchConfig &config, int64_t count) {
  const int64_t threads = config.grid.x * config.block.x;
  ASSERT_GT(threads, 0);
  if (count <= (int64_t(1) << 20)) {
    std::vector<int> visits(static_cast<size_t>(count), 0);
    for (int64_t thread = 0; thread < threads; ++thread)
      for (int64_t i = thread; i < count; i += threads)
        ++visits[static_cast<size_t>(i)];
    for (int64_t i = 0; i < count; ++i)
      ASSERT_EQ(visits[static_cast<size_t>(i)], 1) << "element " << i;
  }
}

TEST(CudaLaunchConfigTest, ElementwiseCoversEveryElement) {
  for (int64_t count : {int64_t(1), int64_t(255), int64_t(256), int64_t(257),
                        int64_t(1000003), int64_t(1) << 34}) {
    LaunchConfig config = elementwiseLaunch(count);
    expectValid(config);
    EXPECT_EQ(config.block.x, kElementwiseThreads);
    EXPECT_LE(config.grid.x, kMaxElementwiseBlocks);
    if (count <= kMaxElementwiseBlocks * kElementwiseThreads) {
      EXPECT_EQ(config.grid.x, ceilDiv(count, kElementwiseThreads));
    } else {
      EXPECT_EQ(config.grid.x, kMaxElementwiseBlocks);
    }
    expectGridStrideCovers(config, count);
  }
  EXPECT_EQ(elementwiseLaunch(0).grid.x, 0); // launchers skip empty work
}

TEST(CudaLaunchConfigTest, RowLaunchFitsItsRows) {
  for (int64_t cols :
       {int64_t(0), int64_t(1), int64_t(31), int64_t(256), int64_t(1000),
        int64_t(4096), int64_t(5000), int64_t(128256)}) {
    LaunchConfig config = rowLaunch(7, cols);
    SCOPED_TRACE(cols);
    expectValid(config);
    EXPECT_EQ(config.grid.x, 7);
    int64_t threads = config.block.x;
    EXPECT_EQ(threads & (threads - 1), 0) << "a power of two";
    EXPECT_GE(threads, kWarpSize);
    EXPECT_LE(threads, kMaxThreadsPerBlock);
    // Enough threads for 8 elements each, unless the block is full.
    EXPECT_TRUE(threads * kRowElementsPerThread >= cols ||
                threads == kMaxThreadsPerBlock);
    // Not more than needed: half the block would not do.
    EXPECT_TRUE(threads == kWarpSize ||
                threads / 2 * kRowElementsPerThread < cols);
  }
  EXPECT_EQ(rowLaunch(1000, 1000).block.x, 128); // 1000 / 8 -> 128
  expectValid(rowLaunch(kMaxGridX, 16));
  EXPECT_FALSE(validateLaunch("t", rowLaunch(kMaxGridX + 1, 16)).ok());
}

TEST(CudaLaunchConfigTest, WarpRowsAndSingleBlock) {
  for (int64_t rows : {int64_t(1), int64_t(8), int64_t(9), int64_t(65536)}) {
    LaunchConfig config = warpRowLaunch(rows);
    expectValid(config);
    int64_t warps = config.block.x / kWarpSize;
    EXPECT_GE(config.grid.x * warps, rows);
    EXPECT_LT((config.grid.x - 1) * warps, rows);
  }
  LaunchConfig single = singleBlockLaunch();
  expectValid(single);
  EXPECT_EQ(single.grid.count(), 1);
  EXPECT_EQ(single.block.x, 1024);
}

TEST(CudaLaunchConfigTest, RmsNormBackwardSplitsRowsOverFixedBlocks) {
  for (int64_t rows :
       {int64_t(1), int64_t(255), int64_t(256), int64_t(16384)}) {
    RmsNormBackwardLaunch launch = rmsNormBackwardLaunch(rows, 4096);
    expectValid(launch.rows);
    expectValid(launch.columns);
    int64_t blocks = std::min<int64_t>(rows, kRmsNormGradBlocks);
    EXPECT_EQ(launch.rows.grid.x, blocks);
    EXPECT_EQ(launch.rows.block.x, 512);
    EXPECT_EQ(rmsNormBackwardWorkspaceBytes(rows, 4096), blocks * 4096 * 4);
    EXPECT_EQ(launch.columns.grid.x, 4096 / kRmsNormColumnsPerBlock);
    EXPECT_EQ(launch.columns.block.x, kRmsNormColumnWarps * 32);
  }
}

TEST(CudaLaunchConfigTest, AttentionSharedMemoryFitsSm90) {
  // Hand-computed for head_dim 128 (rows padded to 132 floats): the
  // forward holds Q, K, V tiles and P, the backward's key-tile kernel K, V,
  // Q, dO, P^T, dS^T and two row statistics, the query-tile kernel one
  // score tile less.
  EXPECT_EQ(attentionSharedBytes(kAttentionForwardShared, 128),
            (3 * 64 * 132 + 64 * 68) * 4);
  EXPECT_EQ(attentionSharedBytes(kAttentionForwardShared, 128), 118784);
  EXPECT_EQ(attentionSharedBytes(kAttentionBackwardKvShared, 128), 170496);
  EXPECT_EQ(attentionSharedBytes(kAttentionBackwardQShared, 128), 153088);
  EXPECT_EQ(kAttentionThreads, 4 * kAttentionTile); // 4 lanes per row
  EXPECT_EQ(kAttentionMaxHeadDim % 16, 0);          // float4 chunks per lane

  for (int64_t headDim = 4; headDim <= kAttentionMaxHeadDim; headDim += 4) {
    AttentionShape shape{2, 32, 8, 1000, headDim, true, 0.125};
    ASSERT_TRUE(checkAttentionShape("t", shape).ok());
    for (const LaunchConfig &config :
         {attentionForwardLaunch(shape), attentionBackwardKvLaunch(shape),
          attentionBackwardQLaunch(shape)}) {
      expectValid(config);
      EXPECT_LE(config.sharedBytes, kMaxSharedBytes);
      EXPECT_EQ(config.sharedBytes % 16, 0); // float4 tiles stay aligned
      EXPECT_EQ(config.block.x, kAttentionThreads);
    }
    EXPECT_EQ(attentionRowStride(headDim) % 4, 0);
  }
}

TEST(CudaLaunchConfigTest, AttentionGridsCoverEveryTile) {
  for (int64_t seq : {int64_t(1), int64_t(63), int64_t(64), int64_t(65),
                      int64_t(1000), int64_t(8192)}) {
    AttentionShape shape{3, 32, 8, seq, 128, true, 0.088};
    LaunchConfig forward = attentionForwardLaunch(shape);
    LaunchConfig kv = attentionBackwardKvLaunch(shape);
    LaunchConfig q = attentionBackwardQLaunch(shape);
    // Heads x batch entries in x, tiles in y: every head's first tiles
    // start before any head's next ones.
    for (const LaunchConfig *config : {&forward, &kv, &q}) {
      EXPECT_GE(config->grid.y * kAttentionTile, seq);
      EXPECT_LT((config->grid.y - 1) * kAttentionTile, seq);
      EXPECT_EQ(config->grid.z, 1);
    }
    EXPECT_EQ(forward.grid.x, 32 * 3);
    EXPECT_EQ(q.grid.x, 32 * 3);
    EXPECT_EQ(kv.grid.x, 8 * 3);
  }

  EXPECT_EQ(attentionBackwardWorkspaceBytes({2, 4, 2, 100, 64, true, 1}),
            2 * 4 * 100 * 4);
}

TEST(CudaLaunchConfigTest, AttentionOnTensorCores) {
  // bf16 with a head dimension the mma's k (16) divides runs on tensor
  // cores; f32 and the other head dimensions on CUDA cores.
  for (int64_t headDim : {16, 32, 64, 80, 128})
    EXPECT_TRUE(attentionUsesTensorCores(TITANRT_BF16, headDim)) << headDim;
  for (int64_t headDim : {0, 4, 36, 72, 144})
    EXPECT_FALSE(attentionUsesTensorCores(TITANRT_BF16, headDim)) << headDim;
  EXPECT_FALSE(attentionUsesTensorCores(TITANRT_F32, 64));

  // Hand-computed for head_dim 128 (rows padded to 136 bf16): the forward
  // holds Q, K, V tiles, the query-tile backward Q, dO, K, V, and the
  // key-tile backward K, V and two buffers each of Q, dO and the two row
  // statistics of 64 floats (double-buffered: 104.5 KiB, two blocks per
  // SM).
  AttentionShape shape{3, 32, 8, 1000, 128, true, 0.088};
  LaunchConfig forward = attentionForwardMmaLaunch(shape);
  LaunchConfig kv = attentionBackwardKvMmaLaunch(shape);
  LaunchConfig q = attentionBackwardQMmaLaunch(shape);
  EXPECT_EQ(forward.sharedBytes, 3 * 64 * 136 * 2);
  EXPECT_EQ(kv.sharedBytes, 6 * 64 * 136 * 2 + 4 * 64 * 4);
  EXPECT_LE(2 * kv.sharedBytes, 227 * 1024); // H100/H200 shared memory
  EXPECT_EQ(q.sharedBytes, 4 * 64 * 136 * 2);
  for (const LaunchConfig *config : {&forward, &kv, &q}) {
    EXPECT_EQ(config->block.x, 128); // 4 warps of 16 tile rows
    EXPECT_EQ(config->grid.y, 16);   // ceil(1000 / 64) tiles
    EXPECT_EQ(config->grid.z, 1);
  }
  EXPECT_EQ(forward.grid.x, 32 * 3);
  EXPECT_EQ(q.grid.x, 32 * 3);
  EXPECT_EQ(kv.grid.x, 8 * 3);
  EXPECT_EQ(kAttentionMmaWarps * 16, kAttentionTile);

  for (int64_t headDim = 16; headDim <= kAttentionMaxHeadDim; headDim += 16) {
    shape.headDim = headDim;
    // 16-byte chunks of a row stay aligned in shared memory.
    EXPECT_EQ(attentionMmaRowStride(headDim) * 2 % 16, 0);
    for (const LaunchConfig &config :
         {attentionForwardMmaLaunch(shape), attentionBackwardKvMmaLaunch(shape),
          attentionBackwardQMmaLaunch(shape)}) {
      expectValid(config);
      EXPECT_EQ(config.sharedBytes % 16, 0);
    }
  }
}

TEST(CudaLaunchConfigTest, AttentionKernelsFromTheEnvironment) {
  AttentionKernels kernels = AttentionKernels::CudaCores;
  ASSERT_TRUE(parseAttentionKernels("", kernels).ok());
  EXPECT_EQ(kernels, AttentionKernels::Auto);
  ASSERT_TRUE(parseAttentionKernels("cuda_cores", kernels).ok());
  EXPECT_EQ(kernels, AttentionKernels::CudaCores);
  ASSERT_TRUE(parseAttentionKernels("cudnn", kernels).ok());
  EXPECT_EQ(kernels, AttentionKernels::Cudnn);
  ASSERT_TRUE(parseAttentionKernels("titan", kernels).ok());
  EXPECT_EQ(kernels, AttentionKernels::Titan);
  ASSERT_TRUE(parseAttentionKernels("auto", kernels).ok());
  EXPECT_EQ(kernels, AttentionKernels::Auto);
  Status status = parseAttentionKernels("simt", kernels);
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(status.getMessage(),
            "TITAN_CUDA_ATTENTION=simt is not a choice of attention kernels: "
            "auto (cuDNN's fused attention where it applies, else titan's; "
            "the default), cudnn, titan (titan's kernels: tensor cores where "
            "they apply) or cuda_cores");
}

TEST(CudaLaunchConfigTest, AttentionShapeChecks) {
  auto code = [](AttentionShape shape) {
    return checkAttentionShape("attention (CUDA)", shape).getCode();
  };
  AttentionShape llama{1, 32, 8, 8192, 128, true, 0.088};
  EXPECT_EQ(code(llama), TITANRT_OK);
  AttentionShape shape = llama;
  shape.headDim = 132;
  EXPECT_EQ(code(shape), TITANRT_ERROR_UNSUPPORTED);
  shape.headDim = 6;
  EXPECT_EQ(code(shape), TITANRT_ERROR_UNSUPPORTED);
  shape = llama;
  shape.kvHeads = 5;
  EXPECT_EQ(code(shape), TITANRT_ERROR_INVALID_ARGUMENT);
  shape = llama;
  shape.scale = 0;
  EXPECT_EQ(code(shape), TITANRT_ERROR_INVALID_ARGUMENT);
  // The grid's limits: heads x batch entries in x (below 2^31), 64-row
  // tiles in y (at most 65535).
  shape = llama;
  shape.batch = 70000;
  EXPECT_EQ(code(shape), TITANRT_OK);
  shape.batch = int64_t(1) << 26; // x 32 heads = 2^31
  EXPECT_EQ(code(shape), TITANRT_ERROR_INVALID_ARGUMENT);
  shape = llama;
  shape.seq = 65535 * 64;
  EXPECT_EQ(code(shape), TITANRT_OK);
  shape.seq += 1;
  Status tooLong = checkAttentionShape("attention (CUDA)", shape);
  EXPECT_EQ(tooLong.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(tooLong.getMessage().find("seq at most 4194240"), std::string::npos)
      << tooLong.getMessage();
  shape = llama;
  shape.seq = -1;
  Status status = checkAttentionShape("attention (CUDA)", shape);
  EXPECT_NE(status.getMessage().find("seq = -1 is negative"), std::string::npos)
      << status.getMessage();
}

TEST(CudaLaunchConfigTest, EmbeddingGradWorkspaceDoesNotOverlap) {
  for (auto [numIds, vocab] : {std::pair<int64_t, int64_t>{1, 1},
                               {16384, 128256},
                               {100, 7},
                               {0, 50257}}) {
    EmbeddingGradWorkspace layout = embeddingGradWorkspace(vocab);
    int64_t bytes = embeddingGradWorkspaceBytes(numIds, vocab);
    EXPECT_EQ(layout.offsets, 0);
    EXPECT_GE(layout.cursors, vocab + 1); // after the offsets
    EXPECT_GE(layout.positions, layout.cursors + vocab);
    EXPECT_GE(bytes, (layout.positions + numIds) * 4);
    EXPECT_EQ(layout.cursors * 4 % 256, 0);
    EXPECT_EQ(layout.positions * 4 % 256, 0);
    EmbeddingGradLaunch launch = embeddingGradLaunch(numIds, vocab, 4096);
    expectValid(launch.scan);
    expectValid(launch.scatter);
    expectValid(launch.reduce);
    EXPECT_EQ(launch.reduce.grid.x, vocab);
    if (numIds > 0)
      expectGridStrideCovers(launch.histogram, numIds);
  }
}

TEST(CudaLaunchConfigTest, AdamWChunksCoverEveryElementOnce) {
  std::vector<int64_t> numels = {
      0, 1, kAdamWChunkElements, kAdamWChunkElements + 1, 20000, 0, 5};
  std::vector<AdamWChunk> chunks = planAdamWChunks(numels);
  std::vector<std::vector<int>> visits;
  for (int64_t numel : numels)
    visits.emplace_back(static_cast<size_t>(numel), 0);
  int32_t previousTensor = -1;
  int64_t previousStart = -1;
  for (const AdamWChunk &chunk : chunks) {
    ASSERT_GE(chunk.tensor, 0);
    ASSERT_LT(static_cast<size_t>(chunk.tensor), numels.size());
    const int64_t numel = numels[static_cast<size_t>(chunk.tensor)];
    ASSERT_LT(chunk.start, numel) << "no empty chunk";
    EXPECT_EQ(chunk.start % kAdamWChunkElements, 0);
    // In tensor order, then start order.
    EXPECT_TRUE(
        chunk.tensor > previousTensor ||
        (chunk.tensor == previousTensor && chunk.start > previousStart));
    previousTensor = chunk.tensor;
    previousStart = chunk.start;
    // What the kernel does: [start, min(numel, start + chunk)).
    for (int64_t i = chunk.start;
         i < std::min(numel, chunk.start + kAdamWChunkElements); ++i)
      ++visits[static_cast<size_t>(chunk.tensor)][static_cast<size_t>(i)];
  }
  for (const std::vector<int> &tensor : visits)
    for (int count : tensor)
      ASSERT_EQ(count, 1);
  EXPECT_EQ(chunks.size(), 1u + 1 + 2 + 3 + 1);
  expectValid(adamWLaunch(int64_t(chunks.size())));
  EXPECT_TRUE(planAdamWChunks({}).empty());
}

} // namespace
