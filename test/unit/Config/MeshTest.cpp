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
std::string errorOf(const ParallelismConfig &parallelism, int64_t worldSize) {
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
  EXPECT_EQ(errorOf(degrees(4), 6),
            "the world size 6 is not divisible by "
            "data_parallel_replicate_degree=1 x context_parallel_degree=1 x "
            "tensor_parallel_degree=4 = 4, so data_parallel_shard_degree=-1 "
            "has no value");
  EXPECT_EQ(errorOf(degrees(2, 2), 8),
            "data_parallel_replicate_degree=1 x data_parallel_shard_degree=2 "
            "x context_parallel_degree=1 x tensor_parallel_degree=2 = 4, but "
            "the world size is 8; the degrees must multiply to the world "
            "size");
  EXPECT_EQ(errorOf(degrees(1), 0), "the world size must be positive");
  EXPECT_EQ(errorOf(degrees(0), 4),
            "tensor_parallel_degree must be at least 1, got 0");
  EXPECT_EQ(errorOf(degrees(1, -2), 4),
            "data_parallel_shard_degree must be -1 or at least 1, got -2");
  EXPECT_EQ(errorOf(degrees(1, 1, 1, 1, /*pp=*/2), 2),
            "pipeline_parallel_degree=2 is not supported yet: pipeline stages "
            "come with the pipeline issue; set it to 1");
  // Degrees whose product does not fit in 64 bits cannot wrap into a match.
  int64_t huge = int64_t(1) << 32;
  EXPECT_EQ(errorOf(degrees(huge, huge), 1),
            "data_parallel_replicate_degree=1 x data_parallel_shard_degree="
            "4294967296 x context_parallel_degree=1 x tensor_parallel_degree="
            "4294967296 (more than 2^63), but the world size is 1; the "
            "degrees must multiply to the world size");
}

TEST(Mesh, ConfiguredWorldSizeCountsAnUnsetShardDegreeAsOne) {
  EXPECT_EQ(getConfiguredWorldSize(degrees(2, -1, 2)), 4);
  EXPECT_EQ(getConfiguredWorldSize(degrees(2, 3, 1, 2)), 12);
  int64_t huge = int64_t(1) << 32;
  EXPECT_EQ(getConfiguredWorldSize(degrees(huge, huge)),
            std::numeric_limits<int64_t>::max());
}

} // namespace
