//===- Pipeline.h - the titan compilation pipeline --------------*- C++ -*-===//

#ifndef TITAN_PIPELINE_H
#define TITAN_PIPELINE_H

#include "titan/Config/Mesh.h"
#include "titan/Config/TrainConfig.h"
#include "titan/CostModel/Device.h"
#include "titan/Passes.h"

#include "mlir/Pass/PassManager.h"

#include <optional>

namespace mlir::titan {

/// How far the pipeline goes; each stage includes the ones before it.
enum class PipelineStage {
  /// The imported forward program (+ titan-fuse-rms-norm).
  Forward,
  /// + titan-build-train-step.
  TrainStep,
  /// + titan-apply-parallel-plan, titan-propagate-placements,
  /// titan-materialize-redistributes, titan-select-recompute: the global
  /// step with its placements and activation checkpointing (what the
  /// pipeline ranks' programs are cut from).
  Placed,
  /// + titan-partition-pipeline, titan-spmdize: the program of one rank.
  Spmd,
  /// + the rank's schedule, its kernels and its memory plan
  /// (buildPlanningPipeline): what the memory report, the exact memory of
  /// --summary-json and titan-tune read, without native code.
  MemoryPlan,
  /// + calls into libtitanrt: the executable (an LLVM dialect module that
  /// titan-compile compiles and links).
  Executable,
};

/// Options of every stage.
struct TitanPipelineOptions {
  PipelineStage stage = PipelineStage::TrainStep;
  /// Set: the module already went through this stage; only the passes of
  /// the stages after it are appended.
  std::optional<PipelineStage> resumeAfter;
  BuildTrainStepPassOptions trainStep;
  SelectRecomputePassOptions recompute;
  ApplyParallelPlanPassOptions parallelPlan;
  BalanceSequencePassOptions balanceSequence;
  PropagatePlacementsPassOptions propagation;
  ReshardAfterForwardPassOptions reshard;
  /// Set when gradients are reduced in a wider type than they are computed
  /// in (mixed precision's reduce dtype).
  std::optional<SetGradientReduceDtypePassOptions> gradientReduce;
  /// Set under pipeline parallelism: the program of pipeline rank
  /// `pipeline->rank` (its caller sets the rank; one program per rank).
  std::optional<PartitionPipelinePassOptions> pipeline;
  /// Set when collectives run behind computation
  /// (parallelism.overlap_communication).
  std::optional<ScheduleOverlapPassOptions> overlap;
  /// Set when a block's collectives run as buckets
  /// (parallelism.bucket_collectives).
  std::optional<BucketCollectivesPassOptions> buckets;
  /// Set under async tensor parallelism
  /// (parallelism.enable_async_tensor_parallel with a tp axis).
  std::optional<DecomposeCollectiveMatmulPassOptions> asyncTensorParallel;
  /// Set when each parameter's AdamW steps as soon as its gradient is
  /// complete (optimizer.early_step_in_backward).
  bool stepInBackward = false;
  /// Which ops the runtime executes itself (setPipelineBackend).
  FuseKernelsPassOptions fuseKernels;
  LowerToRuntimePassOptions runtime;
};

/// Sets what the executable's backend ("cpu" or "cuda") changes in
/// `options`: where its kernels are compiled for (runtime.target) and the
/// ops the runtime executes itself (getDefaultRuntimeOps).
void setPipelineBackend(TitanPipelineOptions &options, llvm::StringRef backend);

/// Registers each stage as a named pass pipeline of titan-opt, built from a
/// training config exactly as titan-compile builds it:
/// `--titan-forward-pipeline`, `--titan-train-step-pipeline`,
/// `--titan-spmd-pipeline` and `--titan-executable-pipeline`, each with the
/// options `config=FILE.toml` (default: every key's default), `set=KEY=VALUE`
/// (repeatable, as titan-compile --set), `world-size=N` (default: the
/// product of the config's degrees) and `emit-grads`.
void registerTitanPipelines();

/// Appends the passes of `options.stage` (after import) to `pm`.
void buildTitanPipeline(OpPassManager &pm, const TitanPipelineOptions &options);

/// Appends the passes from the program of one rank to its memory plan:
/// the scheduling passes (buildSchedulingPipeline), then fusible ops are
/// outlined into kernels and compiled to loops, and every value is placed
/// (titan-plan-memory). The stage Executable then lowers to the runtime.
void buildPlanningPipeline(OpPassManager &pm,
                           const TitanPipelineOptions &options);

/// Appends the planning pipeline's first passes, which fix the order of
/// the rank's program: only @train_step is kept, collectives are
/// normalized, the parameters' narrow copies kept as state
/// (titan-keep-param-copies), collectives sunk to their first readers, then
/// (with `options.asyncTensorParallel`) collective matmuls are decomposed into
/// chunks, (with `options.buckets`) a block's collectives bucketed and
/// (with `options.overlap`) collectives scheduled behind computation.
void buildSchedulingPipeline(OpPassManager &pm,
                             const TitanPipelineOptions &options);

/// The options a training config asks for; `mesh` is the config's
/// [parallelism] resolved for the ranks the program is partitioned over
/// (resolveMesh), one rank when the pipeline does not partition. With
/// `device` (the config's [hardware] device), titan-propagate-placements
/// weighs each mesh axis's bytes by the bandwidth of its link when the
/// axes' links differ (some span nodes, others do not).
TitanPipelineOptions
pipelineOptionsFrom(const TrainConfig &config, PipelineStage stage,
                    bool emitGrads, const ResolvedMesh &mesh = {},
                    const DeviceDescription *device = nullptr);

} // namespace mlir::titan

#endif // TITAN_PIPELINE_H
