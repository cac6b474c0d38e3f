//===- Pipeline.cpp - the titan compilation pipeline ----------------------===//
//
// The one definition of the pass pipeline; titan-compile runs it, titan-opt
// runs any prefix of it pass by pass with the same flags.
//
//===----------------------------------------------------------------------===//

#include "titan/Pipeline.h"

#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::titan;

void mlir::titan::buildTitanPipeline(OpPassManager &pm,
                                     const TitanPipelineOptions &options) {
  if (options.stage >= PipelineStage::TrainStep) {
    pm.addPass(createBuildTrainStepPass(options.trainStep));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
}

BuildTrainStepPassOptions
mlir::titan::trainStepOptionsFrom(const TrainConfig &config, bool emitGrads) {
  BuildTrainStepPassOptions options;
  options.beta1 = config.optimizer.beta1;
  options.beta2 = config.optimizer.beta2;
  options.eps = config.optimizer.eps;
  options.weightDecay = config.optimizer.weightDecay;
  options.maxNorm = config.training.maxNorm;
  options.ignoreIndex = config.training.ignoreIndex;
  options.emitGrads = emitGrads;
  return options;
}
