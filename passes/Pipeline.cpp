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
  // Forward: fused forms of what models write by hand. Causal attention
  // masks by stored position, which load-balanced context parallelism
  // permutes (titan-balance-sequence): there the mask stays explicit.
  pm.addPass(createFuseRmsNormPass());
  if (options.balanceSequence.ways <= 1)
    pm.addPass(createFuseAttentionPass());
  if (options.stage >= PipelineStage::TrainStep) {
    pm.addPass(createBuildTrainStepPass(options.trainStep));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  if (options.stage >= PipelineStage::Spmd) {
    // Before sharding hides which table an id indexes.
    pm.addPass(createMarkIdRangesPass());
    pm.addPass(createApplyParallelPlanPass(options.parallelPlan));
    pm.addPass(createBalanceSequencePass(options.balanceSequence));
    pm.addPass(createPropagatePlacementsPass(options.propagation));
    pm.addPass(createMaterializeRedistributesPass());
    pm.addPass(createSpmdizePass());
    pm.addPass(createRedistributeToCollectivesPass());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
  }
  if (options.stage >= PipelineStage::Executable) {
    buildPlanningPipeline(pm);
    pm.addPass(createLowerToRuntimePass(options.runtime));
  }
}

void mlir::titan::buildPlanningPipeline(OpPassManager &pm) {
  // The executable runs @train_step only.
  pm.addPass(createSymbolPrivatizePass({"train_step"}));
  pm.addPass(createSymbolDCEPass());
  pm.addPass(createNormalizeCollectivesPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createFuseKernelsPass());
  pm.addPass(createLowerKernelsPass());
  pm.addPass(createPlanMemoryPass());
}

TitanPipelineOptions
mlir::titan::pipelineOptionsFrom(const TrainConfig &config, PipelineStage stage,
                                 bool emitGrads, const ResolvedMesh &mesh) {
  TitanPipelineOptions options;
  options.stage = stage;
  BuildTrainStepPassOptions &step = options.trainStep;
  step.beta1 = config.optimizer.beta1;
  step.beta2 = config.optimizer.beta2;
  step.eps = config.optimizer.eps;
  step.weightDecay = config.optimizer.weightDecay;
  step.maxNorm = config.training.maxNorm;
  step.ignoreIndex = config.training.ignoreIndex;
  step.emitGrads = emitGrads;
  ApplyParallelPlanPassOptions &plan = options.parallelPlan;
  const ParallelismConfig &parallelism = config.parallelism;
  plan.worldSize = mesh.getWorldSize();
  plan.dpReplicate = mesh.getSize(DpReplicateAxis);
  plan.dpShard = mesh.getSize(FsdpAxis);
  plan.cp = mesh.getSize(CpAxis);
  plan.tp = mesh.getSize(TpAxis);
  plan.planFile = parallelism.tpPlan;
  plan.sequenceParallel = parallelism.enableSequenceParallel;
  plan.lossParallel = !parallelism.disableLossParallel;
  options.balanceSequence.ways = parallelism.contextParallelDegree;
  options.runtime.learningRate = config.optimizer.lr;
  options.runtime.steps = config.training.steps;
  options.runtime.seed = config.training.seed;
  // Tensor parallelism keeps the weights sharded over "tp" (the activations
  // move to them, never the other way round); data and context parallelism
  // keep each rank on its own tokens.
  PropagatePlacementsPassOptions &propagation = options.propagation;
  if (mesh.getSize(TpAxis) > 1)
    propagation.stationaryParamAxes = {getMeshAxisName(TpAxis).str()};
  for (MeshAxis axis : {DpReplicateAxis, FsdpAxis, CpAxis})
    if (mesh.getSize(axis) > 1)
      propagation.stationaryInputAxes.push_back(getMeshAxisName(axis).str());
  return options;
}
