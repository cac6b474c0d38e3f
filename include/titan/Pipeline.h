//===- Pipeline.h - the titan compilation pipeline --------------*- C++ -*-===//

#ifndef TITAN_PIPELINE_H
#define TITAN_PIPELINE_H

#include "titan/Config/TrainConfig.h"
#include "titan/Passes.h"

#include "mlir/Pass/PassManager.h"

namespace mlir::titan {

/// How far the pipeline goes; each stage includes the ones before it.
enum class PipelineStage {
  /// The imported forward program only.
  Forward,
  /// + titan-build-train-step.
  TrainStep,
};

/// Options of every stage.
struct TitanPipelineOptions {
  PipelineStage stage = PipelineStage::TrainStep;
  BuildTrainStepPassOptions trainStep;
};

/// Appends the passes of `options.stage` (after import) to `pm`.
void buildTitanPipeline(OpPassManager &pm, const TitanPipelineOptions &options);

/// The train-step options a training config asks for.
BuildTrainStepPassOptions trainStepOptionsFrom(const TrainConfig &config,
                                               bool emitGrads);

} // namespace mlir::titan

#endif // TITAN_PIPELINE_H
