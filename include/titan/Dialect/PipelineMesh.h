//===- PipelineMesh.h - the mesh pipeline stages talk over ------*- C++ -*-===//
//
// titan-partition-pipeline writes one program per pipeline rank. Its stages
// exchange activations and gradients with titan.send / titan.recv over the
// mesh `@pipeline ["pp" = degree]`: the peer is the rank at that pp
// coordinate with the same coordinates on the SPMD mesh of the stage
// (global rank = pp coordinate x ranks per stage + rank in the stage, pp
// outermost as torchtitan's mesh). Such a transfer moves each rank's own
// part of a value, whatever its placements.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_PIPELINEMESH_H
#define TITAN_DIALECT_PIPELINEMESH_H

#include "titan/Dialect/TitanDialect.h"
#include "titan/Placement/PlacementAlgebra.h"

namespace mlir::titan {

/// The symbol of the pipeline's mesh.
inline constexpr llvm::StringLiteral kPipelineMeshName = "pipeline";
/// The name of its one axis.
inline constexpr llvm::StringLiteral kPipelineAxisName = "pp";

/// The attribute titan-partition-pipeline writes on a pipeline rank's
/// @train_step: degree, rank, schedule, microbatches, stage_blocks (blocks
/// of each stage), stage_seconds (predicted forward + backward seconds of
/// each stage for one microbatch), and per stage for one microbatch on one
/// rank: forward_seconds, input_grad_seconds, weight_grad_seconds,
/// activation_bytes (kept for the backward), input_grad_freed_bytes (of
/// those, read by the input gradient only) and sent_forward_bytes (to the
/// next stage).
inline constexpr llvm::StringLiteral kPipelineAttrName = "titan.pipeline";

/// Whether `op` is a send or receive between pipeline stages.
inline bool isPipelineTransfer(Operation *op) {
  if (auto send = dyn_cast<SendOp>(op))
    return send.getMesh() == kPipelineMeshName;
  if (auto recv = dyn_cast<RecvOp>(op))
    return recv.getMesh() == kPipelineMeshName;
  return false;
}

/// Where the ranks of a program sit in its job. Without pipeline
/// parallelism the job's ranks are the program's mesh. With it, the job's
/// mesh is ["pp"=degree, <the stage mesh's axes>] (pp outermost, as
/// torchtitan's) and the program runs on the ranks of pp coordinate
/// `pipelineRank`: global rank = pipelineRank x stage size + rank in stage.
struct ProgramRanks {
  /// The program's SPMD mesh (its titan.mesh other than @pipeline).
  MeshOp stageMesh;
  int64_t pipelineDegree = 1;
  int64_t pipelineRank = 0;

  /// The number of ranks of the stage mesh.
  int64_t getStageSize();
  /// The job's mesh: the stage mesh, with the pp axis outermost when the
  /// program is a pipeline rank's.
  FailureOr<DeviceMesh> getJobMesh();
  /// The job's rank of the program's rank `rankInStage`.
  int64_t getGlobalRank(int64_t rankInStage) {
    return pipelineRank * getStageSize() + rankInStage;
  }
};

/// Reads where the ranks of partitioned `module` sit: its one SPMD mesh and,
/// for a pipeline rank's program (an @pipeline mesh), the degree and rank
/// titan-partition-pipeline recorded on @train_step. Fails with an error on
/// the module when there is no such mesh, more than one, or the pipeline's
/// record is missing or disagrees with @pipeline.
FailureOr<ProgramRanks> getProgramRanks(ModuleOp module);

} // namespace mlir::titan

#endif // TITAN_DIALECT_PIPELINEMESH_H
