//===- Mesh.cpp - the device mesh of [parallelism] ------------------------===//

#include "titan/Config/Mesh.h"

#include "titan/Config/TrainConfig.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

using namespace mlir::titan;

llvm::StringRef mlir::titan::getMeshAxisName(MeshAxis axis) {
  static constexpr const char *names[NumMeshAxes] = {"dp_replicate", "fsdp",
                                                     "cp", "tp"};
  return names[axis];
}

llvm::StringRef mlir::titan::getMeshAxisDegreeKey(MeshAxis axis) {
  static constexpr const char *keys[NumMeshAxes] = {
      "data_parallel_replicate_degree", "data_parallel_shard_degree",
      "context_parallel_degree", "tensor_parallel_degree"};
  return keys[axis];
}

int64_t ResolvedMesh::getStageSize() const {
  int64_t size = 1;
  for (int64_t axisSize : sizes)
    size *= axisSize;
  return size;
}

/// The product of `factors`, or nullopt when it does not fit in int64_t.
static std::optional<int64_t> product(llvm::ArrayRef<int64_t> factors) {
  std::optional<int64_t> result = 1;
  for (int64_t factor : factors)
    if (!(result = llvm::checkedMul(*result, factor)))
      return std::nullopt;
  return result;
}

llvm::Expected<ResolvedMesh>
mlir::titan::resolveMesh(const ParallelismConfig &parallelism,
                         int64_t worldSize) {
  auto fail = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  int64_t dpReplicate = parallelism.dataParallelReplicateDegree;
  int64_t cp = parallelism.contextParallelDegree;
  int64_t tp = parallelism.tensorParallelDegree;
  int64_t pp = parallelism.pipelineParallelDegree;
  if (worldSize < 1)
    return fail("the world size must be positive");
  for (auto [value, key] :
       {std::pair<int64_t, llvm::StringRef>{
            dpReplicate, getMeshAxisDegreeKey(DpReplicateAxis)},
        {cp, getMeshAxisDegreeKey(CpAxis)},
        {tp, getMeshAxisDegreeKey(TpAxis)},
        {pp, "pipeline_parallel_degree"}})
    if (value < 1)
      return fail(llvm::formatv("{0} must be at least 1, got {1}", key, value));
  // pp is named where it is more than 1 (it is outermost, as in
  // torchtitan's mesh).
  std::string pipeline =
      pp == 1 ? "" : llvm::formatv("pipeline_parallel_degree={0} x ", pp).str();
  std::optional<int64_t> others = product({pp, dpReplicate, cp, tp});
  int64_t shard = parallelism.dataParallelShardDegree;
  if (shard == -1) {
    if (!others || worldSize % *others != 0)
      return fail(llvm::formatv(
          "the world size {0} is not divisible by "
          "{1}data_parallel_replicate_degree={2} x context_parallel_degree={3} "
          "x tensor_parallel_degree={4}{5}, so data_parallel_shard_degree=-1 "
          "has no value",
          worldSize, pipeline, dpReplicate, cp, tp,
          others ? " = " + std::to_string(*others) : ""));
    shard = worldSize / *others;
  } else if (shard < 1) {
    return fail(llvm::formatv(
        "data_parallel_shard_degree must be -1 or at least 1, got {0}", shard));
  }
  std::optional<int64_t> all = product({pp, dpReplicate, shard, cp, tp});
  if (all != worldSize)
    return fail(llvm::formatv(
        "{0}data_parallel_replicate_degree={1} x "
        "data_parallel_shard_degree={2} "
        "x context_parallel_degree={3} x tensor_parallel_degree={4}{5}, but "
        "the world size is {6}; the degrees must multiply to the world size",
        pipeline, dpReplicate, shard, cp, tp,
        all ? " = " + std::to_string(*all) : " (more than 2^63)", worldSize));
  ResolvedMesh mesh;
  mesh.sizes = {dpReplicate, shard, cp, tp};
  mesh.pipelineDegree = pp;
  return mesh;
}

int64_t
mlir::titan::getConfiguredWorldSize(const ParallelismConfig &parallelism) {
  // A degree below 1 counts as 1 here: resolveMesh names it.
  llvm::SmallVector<int64_t> degrees;
  for (int64_t degree :
       {parallelism.dataParallelReplicateDegree,
        parallelism.dataParallelShardDegree, parallelism.contextParallelDegree,
        parallelism.tensorParallelDegree, parallelism.pipelineParallelDegree})
    degrees.push_back(std::max<int64_t>(degree, 1));
  // Too many ranks to count: resolveMesh refuses it, naming the degrees.
  return product(degrees).value_or(std::numeric_limits<int64_t>::max());
}
