//===- Mesh.h - the device mesh of [parallelism] ----------------*- C++ -*-===//
//
// torchtitan's [parallelism] degrees become a pipeline of
// pipeline_parallel_degree stages, each stage's ranks one SPMD mesh
// ["dp_replicate", "fsdp", "cp", "tp"] (DTensor mesh-dim order). As in
// torchtitan's world mesh ["pp", "dp_replicate", "dp_shard", "cp", "tp"],
// pp is outermost: global rank = pp coordinate x stage size + rank within
// the stage, so that a stage's ranks are consecutive. resolveMesh is the
// one place that resolves data_parallel_shard_degree = -1 ("the ranks the
// other degrees leave") against the world size and validates the degrees;
// titan-compile, the pipeline options and titan-apply-parallel-plan read its
// result.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CONFIG_MESH_H
#define TITAN_CONFIG_MESH_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>

namespace mlir::titan {

struct ParallelismConfig;

/// The axes of the mesh; each enumerator is the axis' index in the mesh.
enum MeshAxis : unsigned {
  DpReplicateAxis,
  FsdpAxis,
  CpAxis,
  TpAxis,
  NumMeshAxes
};

/// The axis' name in the IR: "dp_replicate", "fsdp", "cp" or "tp".
llvm::StringRef getMeshAxisName(MeshAxis axis);

/// The [parallelism] key of the axis' degree, e.g. "tensor_parallel_degree".
llvm::StringRef getMeshAxisDegreeKey(MeshAxis axis);

/// A validated mesh: the pipeline degree and every SPMD axis' size are at
/// least 1, and their product is the world size.
class ResolvedMesh {
public:
  /// The mesh of one rank: every axis of size 1, no pipeline.
  ResolvedMesh() = default;

  /// The size of an SPMD axis (within one pipeline stage).
  int64_t getSize(MeshAxis axis) const { return sizes[axis]; }
  /// The size of every SPMD axis, in mesh order.
  llvm::ArrayRef<int64_t> getSizes() const { return sizes; }
  /// pipeline_parallel_degree: the pipeline ranks (1: no pipeline).
  int64_t getPipelineDegree() const { return pipelineDegree; }
  /// dp_replicate x fsdp x cp x tp: the ranks of one pipeline stage (of
  /// the whole world without a pipeline).
  int64_t getStageSize() const;
  /// The number of ranks: getPipelineDegree() x getStageSize().
  int64_t getWorldSize() const { return pipelineDegree * getStageSize(); }
  /// dp_replicate x fsdp: the number of different batches the ranks train
  /// on (torchtitan's global batch is local_batch_size times this).
  int64_t getDataParallelDegree() const {
    return sizes[DpReplicateAxis] * sizes[FsdpAxis];
  }
  /// The global rank of rank `rankInStage` of pipeline rank `pipelineRank`:
  /// pipelineRank x getStageSize() + rankInStage (pp outermost).
  int64_t getGlobalRank(int64_t pipelineRank, int64_t rankInStage) const {
    return pipelineRank * getStageSize() + rankInStage;
  }
  /// The pipeline rank (pp coordinate) of `globalRank`.
  int64_t getPipelineRank(int64_t globalRank) const {
    return globalRank / getStageSize();
  }
  /// The rank of `globalRank` within its pipeline stage, which the SPMD
  /// axes' coordinates are taken from.
  int64_t getRankInStage(int64_t globalRank) const {
    return globalRank % getStageSize();
  }

private:
  friend llvm::Expected<ResolvedMesh>
  resolveMesh(const ParallelismConfig &parallelism, int64_t worldSize);

  std::array<int64_t, NumMeshAxes> sizes = {1, 1, 1, 1};
  int64_t pipelineDegree = 1;
};

/// Resolves the degrees of `parallelism` for `worldSize` ranks:
/// data_parallel_shard_degree = -1 takes the ranks the other degrees
/// (pipeline_parallel_degree among them) leave. Fails, with a message that
/// names the keys and the fix, on a world size below 1, a degree below 1
/// (or below -1 for data_parallel_shard_degree), or degrees whose product
/// is not the world size.
llvm::Expected<ResolvedMesh> resolveMesh(const ParallelismConfig &parallelism,
                                         int64_t worldSize);

/// The world size `parallelism` names when no other is given: the product of
/// its degrees (pipeline_parallel_degree among them), an unset
/// data_parallel_shard_degree (-1) counting as 1.
int64_t getConfiguredWorldSize(const ParallelismConfig &parallelism);

} // namespace mlir::titan

#endif // TITAN_CONFIG_MESH_H
