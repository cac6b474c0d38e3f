//===- Mesh.h - the device mesh of [parallelism] ----------------*- C++ -*-===//
//
// torchtitan's [parallelism] degrees become one mesh ["dp_replicate", "fsdp",
// "cp", "tp"] (DTensor mesh-dim order). resolveMesh is the one place that
// resolves data_parallel_shard_degree = -1 ("the ranks the other degrees
// leave") against the world size and validates the degrees; titan-compile,
// the pipeline options and titan-apply-parallel-plan read its result.
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

/// A validated mesh: every axis' size is at least 1, and their product is the
/// world size.
class ResolvedMesh {
public:
  /// The mesh of one rank: every axis of size 1.
  ResolvedMesh() = default;

  int64_t getSize(MeshAxis axis) const { return sizes[axis]; }
  /// The size of every axis, in mesh order.
  llvm::ArrayRef<int64_t> getSizes() const { return sizes; }
  /// The number of ranks.
  int64_t getWorldSize() const;
  /// dp_replicate x fsdp: the number of different batches the ranks train
  /// on (torchtitan's global batch is local_batch_size times this).
  int64_t getDataParallelDegree() const {
    return sizes[DpReplicateAxis] * sizes[FsdpAxis];
  }

private:
  friend llvm::Expected<ResolvedMesh>
  resolveMesh(const ParallelismConfig &parallelism, int64_t worldSize);

  std::array<int64_t, NumMeshAxes> sizes = {1, 1, 1, 1};
};

/// Resolves the degrees of `parallelism` for `worldSize` ranks:
/// data_parallel_shard_degree = -1 takes the ranks the other degrees leave.
/// Fails, with a message that names the keys and the fix, on a world size
/// below 1, a degree below 1 (or below -1 for data_parallel_shard_degree),
/// pipeline_parallel_degree above 1 (no pipeline stages yet), or degrees
/// whose product is not the world size.
llvm::Expected<ResolvedMesh> resolveMesh(const ParallelismConfig &parallelism,
                                         int64_t worldSize);

/// The world size `parallelism` names when no other is given: the product of
/// its degrees, an unset data_parallel_shard_degree (-1) counting as 1.
int64_t getConfiguredWorldSize(const ParallelismConfig &parallelism);

} // namespace mlir::titan

#endif // TITAN_CONFIG_MESH_H
