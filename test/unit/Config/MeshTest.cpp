//===- MeshTest.cpp - resolving [parallelism] into a mesh -----------------===//

#include "titan/Config/Mesh.h"
#include "titan/Config/TrainConfig.h"

#include "gtest/gtest.h"

#include <limits>

using namespace mlir::titan;

namespace {

/// [parallelism] with the given degrees (data_parallel_shard_degree -1 by
/// default, as torchtitan's).
ParallelismConfig degrees(int64_t tp, int64_t dpShard = -1, int64_t cp = 1,
                          int64_t dpReplicate = 1, int64_t pp = 1) {
  ParallelismConfig parallelism;
  parallelism.tensorParallelDegree = tp;
  parallelism.dataParallelShardDegree = dpShard;
  parallelism.contextParallelDegree = cp;
  parallelism.dataParallelReplicateDegree = dpReplicate;
  parallelism.pipelineParallelDegree = pp;
  return parallelism;
}

/// The message of a failed resolution.
std::string meshError(const ParallelismConfig &parallelism, int64_t worldSize) {
  llvm::Expected<ResolvedMesh> mesh = resolveMesh(parallelism, worldSize);
  if (mesh)
    return "";
  return llvm::toString(mesh.takeError());
}

TEST(Mesh, AxesAreNamedInMeshOrder) {
  EXPECT_EQ(getMeshAxisName(DpReplicateAxis), "dp_replicate");
  EXPECT_EQ(getMeshAxisName(FsdpAxis), "fsdp");
  EXPECT_EQ(getMeshAxisName(CpAxis), "cp");
  EXPECT_EQ(getMeshAxisName(TpAxis), "tp");
  EXPECT_EQ(getMeshAxisDegreeKey(FsdpAxis), "data_parallel_shard_degree");
  EXPECT_EQ(getMeshAxisDegreeKey(TpAxis), "tensor_parallel_degree");
}

TEST(Mesh, ShardDegreeMinusOneTakesTheRest) {
  llvm::Expected<ResolvedMesh> mesh =
      resolveMesh(degrees(/*tp=*/2, -1, /*cp=*/2, /*dpReplicate=*/2), 16);
  ASSERT_TRUE(bool(mesh)) << llvm::toString(mesh.takeError());
  EXPECT_EQ(mesh->getSizes(), llvm::ArrayRef<int64_t>({2, 2, 2, 2}));
  EXPECT_EQ(mesh->getWorldSize(), 16);
  EXPECT_EQ(mesh->getDataParallelDegree(), 4);
  ResolvedMesh one;
  EXPECT_EQ(one.getWorldSize(), 1);
  EXPECT_EQ(one.getDataParallelDegree(), 1);
}

TEST(Mesh, DegreesMustMultiplyToTheWorldSize) {
  EXPECT_EQ(meshError(degrees(4), 6),
            "the world size 6 is not divisible by "
            "data_parallel_replicate_degree=1 x context_parallel_degree=1 x "
            "tensor_parallel_degree=4 = 4, so data_parallel_shard_degree=-1 "
            "has no value");
  EXPECT_EQ(meshError(degrees(2, 2), 8),
            "data_parallel_replicate_degree=1 x data_parallel_shard_degree=2 "
            "x context_parallel_degree=1 x tensor_parallel_degree=2 = 4, but "
            "the world size is 8; the degrees must multiply to the world "
            "size");
  EXPECT_EQ(meshError(degrees(1), 0), "the world size must be positive");
  EXPECT_EQ(meshError(degrees(0), 4),
            "tensor_parallel_degree must be at least 1, got 0");
  EXPECT_EQ(meshError(degrees(1, -2), 4),
            "data_parallel_shard_degree must be -1 or at least 1, got -2");
  EXPECT_EQ(meshError(degrees(1, 1, 1, 1, /*pp=*/0), 2),
            "pipeline_parallel_degree must be at least 1, got 0");
  // Degrees whose product does not fit in 64 bits cannot wrap into a match.
  int64_t huge = int64_t(1) << 32;
  EXPECT_EQ(meshError(degrees(huge, huge), 1),
            "data_parallel_replicate_degree=1 x data_parallel_shard_degree="
            "4294967296 x context_parallel_degree=1 x tensor_parallel_degree="
            "4294967296 (more than 2^63), but the world size is 1; the "
            "degrees must multiply to the world size");
}

TEST(Mesh, PipelineStagesAreOutermost) {
  // 16 ranks: 2 pipeline stages of 8 ranks, fsdp taking what pp, tp and
  // dp_replicate leave.
  llvm::Expected<ResolvedMesh> mesh = resolveMesh(
      degrees(/*tp=*/2, -1, /*cp=*/1, /*dpReplicate=*/2, /*pp=*/2), 16);
  ASSERT_TRUE(bool(mesh)) << llvm::toString(mesh.takeError());
  EXPECT_EQ(mesh->getPipelineDegree(), 2);
  EXPECT_EQ(mesh->getSizes(), llvm::ArrayRef<int64_t>({2, 2, 1, 2}));
  EXPECT_EQ(mesh->getStageSize(), 8);
  EXPECT_EQ(mesh->getWorldSize(), 16);
  EXPECT_EQ(mesh->getDataParallelDegree(), 4);
  // Global rank = pp coordinate x stage size + rank within the stage.
  EXPECT_EQ(mesh->getGlobalRank(0, 5), 5);
  EXPECT_EQ(mesh->getGlobalRank(1, 0), 8);
  EXPECT_EQ(mesh->getGlobalRank(1, 7), 15);
  EXPECT_EQ(mesh->getPipelineRank(11), 1);
  EXPECT_EQ(mesh->getRankInStage(11), 3);
  EXPECT_EQ(mesh->getPipelineRank(7), 0);
  EXPECT_EQ(mesh->getRankInStage(7), 7);
  // A pipeline alone: one rank per stage.
  llvm::Expected<ResolvedMesh> alone =
      resolveMesh(degrees(1, -1, 1, 1, /*pp=*/4), 4);
  ASSERT_TRUE(bool(alone)) << llvm::toString(alone.takeError());
  EXPECT_EQ(alone->getSizes(), llvm::ArrayRef<int64_t>({1, 1, 1, 1}));
  EXPECT_EQ(alone->getStageSize(), 1);
  EXPECT_EQ(alone->getWorldSize(), 4);
  EXPECT_EQ(alone->getPipelineRank(3), 3);
  ResolvedMesh one;
  EXPECT_EQ(one.getPipelineDegree(), 1);
  EXPECT_EQ(one.getStageSize(), 1);
}

TEST(Mesh, PipelineDegreeIsNamedAmongTheDegrees) {
  EXPECT_EQ(meshError(degrees(2, -1, 1, 1, /*pp=*/4), 12),
            "the world size 12 is not divisible by pipeline_parallel_degree=4 "
            "x data_parallel_replicate_degree=1 x context_parallel_degree=1 x "
            "tensor_parallel_degree=2 = 8, so data_parallel_shard_degree=-1 "
            "has no value");
  EXPECT_EQ(meshError(degrees(2, 2, 1, 1, /*pp=*/2), 16),
            "pipeline_parallel_degree=2 x data_parallel_replicate_degree=1 x "
            "data_parallel_shard_degree=2 x context_parallel_degree=1 x "
            "tensor_parallel_degree=2 = 8, but the world size is 16; the "
            "degrees must multiply to the world size");
  EXPECT_EQ(getConfiguredWorldSize(degrees(2, -1, 1, 1, /*pp=*/4)), 8);
}

TEST(Mesh, ConfiguredWorldSizeCountsAnUnsetShardDegreeAsOne) {
  EXPECT_EQ(getConfiguredWorldSize(degrees(2, -1, 2)), 4);
  EXPECT_EQ(getConfiguredWorldSize(degrees(2, 3, 1, 2)), 12);
  int64_t huge = int64_t(1) << 32;
  EXPECT_EQ(getConfiguredWorldSize(degrees(huge, huge)),
            std::numeric_limits<int64_t>::max());
}

} // namespace
