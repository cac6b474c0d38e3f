//===- Pipeline.cpp - the titan compilation pipeline ----------------------===//
//
// The one definition of the pass pipeline; titan-compile runs it, titan-opt
// runs any prefix of it pass by pass with the same flags.
//
//===----------------------------------------------------------------------===//

#include "titan/Pipeline.h"

#include "titan/Config/DeviceFile.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::titan;

void mlir::titan::buildTitanPipeline(OpPassManager &pm,
                                     const TitanPipelineOptions &options) {
  // Whether the passes of `stage` are appended.
  auto runs = [&](PipelineStage stage) {
    return options.stage >= stage &&
           (!options.resumeAfter || *options.resumeAfter < stage);
  };
  // Forward: fused forms of what models write by hand. Causal attention
  // masks by stored position, which load-balanced context parallelism
  // permutes (titan-balance-sequence): there the mask stays explicit.
  if (runs(PipelineStage::Forward)) {
    pm.addPass(createFuseRmsNormPass());
    pm.addPass(createFuseRopePass());
    if (options.balanceSequence.ways <= 1)
      pm.addPass(createFuseAttentionPass());
  }
  if (runs(PipelineStage::TrainStep)) {
    pm.addPass(createBuildTrainStepPass(options.trainStep));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    pm.addPass(createFuseLossCastPass());
  }
  if (runs(PipelineStage::Placed)) {
    // Before sharding hides which table an id indexes.
    pm.addPass(createMarkIdRangesPass());
    pm.addPass(createApplyParallelPlanPass(options.parallelPlan));
    pm.addPass(createBalanceSequencePass(options.balanceSequence));
    pm.addPass(createPropagatePlacementsPass(options.propagation));
    pm.addPass(createMaterializeRedistributesPass());
    if (options.gradientReduce)
      pm.addPass(createSetGradientReduceDtypePass(*options.gradientReduce));
    // On the placed program: bytes and seconds are one rank's, and clones
    // of redistributions recompute their communication.
    pm.addPass(createSelectRecomputePass(options.recompute));
  }
  if (runs(PipelineStage::Spmd)) {
    if (options.pipeline)
      pm.addPass(createPartitionPipelinePass(*options.pipeline));
    pm.addPass(createSpmdizePass());
    pm.addPass(createRedistributeToCollectivesPass());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    // After CSE, which would fold the backward's gathers into the forward's
    // (they carry titan.recompute, which later CSE respects).
    pm.addPass(createReshardAfterForwardPass(options.reshard));
  }
  if (runs(PipelineStage::MemoryPlan))
    buildPlanningPipeline(pm, options);
  if (runs(PipelineStage::Executable))
    pm.addPass(createLowerToRuntimePass(options.runtime));
}

void mlir::titan::buildSchedulingPipeline(OpPassManager &pm,
                                          const TitanPipelineOptions &options) {
  // The executable runs @train_step only.
  pm.addPass(createSymbolPrivatizePass({"train_step"}));
  pm.addPass(createSymbolDCEPass());
  pm.addPass(createNormalizeCollectivesPass());
  pm.addPass(createKeepParamCopiesPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createSinkToFirstUsePass());
  // Before the overlap schedule, which leaves the chunks' collectives (they
  // are asynchronous already) where they are.
  if (options.asyncTensorParallel)
    pm.addPass(
        createDecomposeCollectiveMatmulPass(*options.asyncTensorParallel));
  // On the collectives in their final form (async TP's chunks stay as
  // they are), before the schedule moves the buckets behind computation.
  if (options.buckets)
    pm.addPass(createBucketCollectivesPass(*options.buckets));
  if (options.overlap)
    pm.addPass(createScheduleOverlapPass(*options.overlap));
  if (options.stepInBackward)
    pm.addPass(createStepInBackwardPass());
}

void mlir::titan::buildPlanningPipeline(OpPassManager &pm,
                                        const TitanPipelineOptions &options) {
  buildSchedulingPipeline(pm, options);
  // On the rank's local tensors, where merging a batch with a sharded
  // sequence dim is a view.
  pm.addPass(createFoldMatmulBatchPass());
  pm.addPass(createFuseAddendsPass());
  pm.addPass(createFuseKernelsPass(options.fuseKernels));
  pm.addPass(createFuseAdamWPass({/*adjacentOnly=*/options.stepInBackward}));
  pm.addPass(createLowerKernelsPass());
  pm.addPass(createPlanMemoryPass());
}

void mlir::titan::setPipelineBackend(TitanPipelineOptions &options,
                                     StringRef backend) {
  options.runtime.target = backend.str();
  std::vector<std::string> runtimeOps = getDefaultRuntimeOps(backend);
  options.fuseKernels.runtimeOps.assign(runtimeOps.begin(), runtimeOps.end());
}

TitanPipelineOptions
mlir::titan::pipelineOptionsFrom(const TrainConfig &config, PipelineStage stage,
                                 bool emitGrads, const ResolvedMesh &mesh,
                                 const DeviceDescription *device) {
  TitanPipelineOptions options;
  options.stage = stage;
  BuildTrainStepPassOptions &step = options.trainStep;
  step.beta1 = config.optimizer.beta1;
  step.beta2 = config.optimizer.beta2;
  step.eps = config.optimizer.eps;
  step.weightDecay = config.optimizer.weightDecay;
  // Stepped in the backward, no gradient waits for a norm of them all.
  step.maxNorm =
      config.optimizer.earlyStepInBackward ? 0 : config.training.maxNorm;
  options.stepInBackward = config.optimizer.earlyStepInBackward;
  step.ignoreIndex = config.training.ignoreIndex;
  step.emitGrads = emitGrads;
  step.seed = config.training.seed;
  if (config.training.getParamDtype() != config.training.getReduceDtype())
    options.gradientReduce = SetGradientReduceDtypePassOptions{
        stringifyElementType(config.training.getReduceDtype()).str()};
  options.recompute.mode = config.activationCheckpoint.mode;
  options.recompute.selectiveOption =
      config.activationCheckpoint.selectiveAcOption;
  options.recompute.memoryBudget = config.activationCheckpoint.memoryBudget;
  options.recompute.device = config.hardware.device;
  options.recompute.ranksPerNode = config.hardware.ranksPerNode;
  ApplyParallelPlanPassOptions &plan = options.parallelPlan;
  const ParallelismConfig &parallelism = config.parallelism;
  plan.worldSize = mesh.getStageSize();
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
  options.runtime.scheduleSteps =
      config.lrScheduler.getScheduleSteps(config.training.steps);
  options.runtime.seed = config.training.seed;
  options.runtime.warmupSteps = config.lrScheduler.warmupSteps;
  options.runtime.decayRatio = config.lrScheduler.decayRatio;
  options.runtime.decayType = config.lrScheduler.decayType;
  options.runtime.minLrFactor = config.lrScheduler.minLrFactor;
  // Tensor parallelism keeps the weights sharded over "tp" (the activations
  // move to them, never the other way round); data and context parallelism
  // keep each rank on its own tokens.
  // FSDP2's reshard_after_forward, by torchtitan's policy names.
  options.reshard.policy = parallelism.fsdpReshardAfterForward;
  if (parallelism.overlapCommunication)
    options.overlap = ScheduleOverlapPassOptions{};
  if (parallelism.bucketCollectives.value_or(true)) {
    BucketCollectivesPassOptions buckets;
    buckets.deviceName = config.hardware.device;
    buckets.ranksPerNode = config.hardware.ranksPerNode;
    options.buckets = buckets;
  }
  if (parallelism.enableAsyncTensorParallel && mesh.getSize(TpAxis) > 1) {
    DecomposeCollectiveMatmulPassOptions asyncTp;
    asyncTp.axis = getMeshAxisName(TpAxis).str();
    asyncTp.deviceName = config.hardware.device;
    asyncTp.ranksPerNode = config.hardware.ranksPerNode;
    asyncTp.chunks = parallelism.asyncTensorParallelChunks;
    options.asyncTensorParallel = asyncTp;
  }
  // Pipeline parallelism: each pipeline rank's program (the rank is set
  // by the caller). torchtitan's "default" keeps the parameters FSDP
  // gathers for every microbatch of the step under a pipeline; "always"
  // gathers them for each microbatch's forward and backward. Gradient
  // accumulation without a pipeline is a pipeline of one rank and one stage,
  // its microbatches local_batch_size rows each, run forward then backward one
  // after the other (1F1B); FSDP gathers for each microbatch's forward and,
  // resharded after it, again for its backward (FSDP2 under torchtitan's
  // accumulation).
  int64_t accumulation =
      config.training.getAccumulationSteps(mesh.getDataParallelDegree());
  if (mesh.getPipelineDegree() > 1 || accumulation > 1) {
    PartitionPipelinePassOptions pipeline;
    pipeline.degree = mesh.getPipelineDegree();
    if (pipeline.degree > 1) {
      pipeline.microbatches = config.training.localBatchSize * accumulation /
                              parallelism.pipelineParallelMicrobatchSize;
      pipeline.schedule = parallelism.pipelineParallelSchedule;
      pipeline.scheduleCsv = parallelism.pipelineParallelScheduleCsv;
    } else {
      pipeline.microbatches = accumulation;
      pipeline.schedule = "1F1B";
    }
    pipeline.device = config.hardware.device;
    pipeline.ranksPerNode = config.hardware.ranksPerNode;
    if (pipeline.degree > 1 && options.reshard.policy == "default")
      options.reshard.policy = "never";
    pipeline.fsdpPerMicrobatch = options.reshard.policy != "never";
    options.pipeline = pipeline;
  }
  PropagatePlacementsPassOptions &propagation = options.propagation;
  if (mesh.getSize(TpAxis) > 1)
    propagation.stationaryParamAxes = {getMeshAxisName(TpAxis).str()};
  for (MeshAxis axis : {DpReplicateAxis, FsdpAxis, CpAxis})
    if (mesh.getSize(axis) > 1)
      propagation.stationaryInputAxes.push_back(getMeshAxisName(axis).str());
  // Bytes over a slower link cost more. With the same link on every axis
  // the bandwidths change no choice (every cost scales alike), so none are
  // given and costs stay in bytes.
  if (device) {
    SmallVector<int64_t> sizes;
    for (unsigned axis = 0; axis < NumMeshAxes; ++axis)
      sizes.push_back(mesh.getSize(static_cast<MeshAxis>(axis)));
    int64_t ranksPerNode = config.hardware.ranksPerNode
                               ? config.hardware.ranksPerNode
                               : device->ranksPerNode;
    SmallVector<double> bandwidth;
    for (unsigned axis = 0; axis < NumMeshAxes; ++axis)
      bandwidth.push_back(
          getAxesLink(*device, sizes, {axis}, ranksPerNode).bytesPerSecond);
    if (llvm::any_of(bandwidth, [&](double b) { return b != bandwidth[0]; }))
      propagation.axisBandwidth = bandwidth;
  }
  return options;
}

namespace {
/// The options of the named pipelines (see registerTitanPipelines).
struct NamedPipelineOptions : PassPipelineOptions<NamedPipelineOptions> {
  Option<std::string> config{*this, "config",
                             llvm::cl::desc("Training config (TOML); default: "
                                            "every key's default")};
  ListOption<std::string> overrides{
      *this, "set",
      llvm::cl::desc("KEY=VALUE overrides of the config, as titan-compile "
                     "--set")};
  Option<int64_t> worldSize{
      *this, "world-size",
      llvm::cl::desc("Ranks to partition for (default: the product of the "
                     "config's degrees)"),
      llvm::cl::init(0)};
  Option<bool> emitGrads{
      *this, "emit-grads",
      llvm::cl::desc("With the train step, also return grad.<fqn>"),
      llvm::cl::init(false)};
  Option<std::string> backend{
      *this, "backend",
      llvm::cl::desc("Where the executable computes, as titan-compile "
                     "--backend: cpu or cuda"),
      llvm::cl::init("cpu")};
};

/// Builds the pipeline of `stage` from textual `options`.
LogicalResult
buildNamedPipeline(PipelineStage stage, OpPassManager &pm, StringRef text,
                   function_ref<LogicalResult(const Twine &)> errorHandler) {
  std::unique_ptr<NamedPipelineOptions> options =
      NamedPipelineOptions::createFromString(text);
  if (!options)
    return errorHandler("cannot parse the pipeline options '" + text + "'");
  llvm::Expected<TrainConfig> config =
      options->config.empty()
          ? llvm::Expected<TrainConfig>(TrainConfig())
          : loadTrainConfig(options->config, options->overrides);
  if (!config)
    return errorHandler(llvm::toString(config.takeError()));
  llvm::Expected<DeviceDescription> device =
      loadDevice(config->hardware.device);
  if (!device)
    return errorHandler("[hardware] device: " +
                        llvm::toString(device.takeError()));
  ResolvedMesh mesh;
  if (stage >= PipelineStage::Spmd) {
    llvm::Expected<ResolvedMesh> resolved = resolveMesh(
        config->parallelism, options->worldSize
                                 ? options->worldSize
                                 : getConfiguredWorldSize(config->parallelism));
    if (!resolved)
      return errorHandler(llvm::toString(resolved.takeError()));
    mesh = *resolved;
    if (llvm::Error error =
            config->checkDataParallelDegree(mesh.getDataParallelDegree()))
      return errorHandler(llvm::toString(std::move(error)));
  }
  if (options->backend != "cpu" && options->backend != "cuda")
    return errorHandler("backend '" + options->backend +
                        "': choose cpu or cuda");
  TitanPipelineOptions pipeline =
      pipelineOptionsFrom(*config, stage, options->emitGrads, mesh, &*device);
  // titan-compile decides the unset parallelism.bucket_collectives by
  // simulating the whole step, which a pass pipeline cannot: here it runs
  // no buckets unless the config asks for them.
  if (!config->parallelism.bucketCollectives)
    pipeline.buckets.reset();
  setPipelineBackend(pipeline, options->backend);
  buildTitanPipeline(pm, pipeline);
  return success();
}
} // namespace

void mlir::titan::registerTitanPipelines() {
  struct Named {
    const char *argument, *description;
    PipelineStage stage;
  };
  for (const Named &named :
       {Named{"titan-forward-pipeline",
              "The forward program's fused forms (titan-compile --emit=titan)",
              PipelineStage::Forward},
        Named{"titan-train-step-pipeline",
              "Up to the training step (titan-compile --emit=train-step)",
              PipelineStage::TrainStep},
        Named{"titan-spmd-pipeline",
              "Up to the program of one rank (titan-compile --emit=spmd)",
              PipelineStage::Spmd},
        Named{"titan-memory-plan-pipeline",
              "Up to the rank's kernels and memory plan (titan-compile "
              "--emit=memory-plan)",
              PipelineStage::MemoryPlan},
        Named{"titan-executable-pipeline",
              "Up to the executable's LLVM dialect module (what titan-compile "
              "compiles)",
              PipelineStage::Executable}}) {
    PipelineStage stage = named.stage;
    registerPassPipeline(
        named.argument, named.description,
        [stage](OpPassManager &pm, StringRef text,
                function_ref<LogicalResult(const Twine &)> errorHandler) {
          return buildNamedPipeline(stage, pm, text, errorHandler);
        },
        [](function_ref<void(const mlir::detail::PassOptions &)> printOptions) {
          printOptions(NamedPipelineOptions());
        });
  }
}
