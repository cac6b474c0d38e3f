//===- Pipeline.h - the titan compilation pipeline --------------*- C++ -*-===//

#ifndef TITAN_PIPELINE_H
#define TITAN_PIPELINE_H

#include "titan/Config/TrainConfig.h"
#include "titan/Passes.h"

#include "mlir/Pass/PassManager.h"

namespace mlir::titan {

/// How far the pipeline goes; each stage includes the ones before it.
enum class PipelineStage {
  /// The imported forward program (+ titan-fuse-rms-norm).
  Forward,
  /// + titan-build-train-step.
  TrainStep,
  /// + titan-apply-parallel-plan, titan-propagate-placements, titan-spmdize:
  /// the program of one rank.
  Spmd,
};

/// Options of every stage.
struct TitanPipelineOptions {
  PipelineStage stage = PipelineStage::TrainStep;
  BuildTrainStepPassOptions trainStep;
  ApplyParallelPlanPassOptions parallelPlan;
  BalanceSequencePassOptions balanceSequence;
  PropagatePlacementsPassOptions propagation;
};

/// Appends the passes of `options.stage` (after import) to `pm`.
void buildTitanPipeline(OpPassManager &pm, const TitanPipelineOptions &options);

/// The options a training config asks for; `worldSize` is the number of
/// ranks the program is compiled for.
TitanPipelineOptions pipelineOptionsFrom(const TrainConfig &config,
                                         PipelineStage stage, bool emitGrads,
                                         int64_t worldSize);

} // namespace mlir::titan

#endif // TITAN_PIPELINE_H
