//===- PartitionPipeline.cpp - titan-partition-pipeline ------------------===//
//
// Implements titan-partition-pipeline (see passes/Passes.td for the
// contract): the schedule, the stages (PipelineStages: what runs where),
// the rank's program (PipelineRankProgram) and the `titan.pipeline`
// summary.
//
//===----------------------------------------------------------------------===//

#include "PipelineRankProgram.h"
#include "RankSizes.h"

#include "titan/Config/DeviceFile.h"
#include "titan/Dialect/PipelineMesh.h"
#include "titan/Passes.h"

namespace mlir::titan {
#define GEN_PASS_DEF_PARTITIONPIPELINEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

class PartitionPipelinePass
    : public titan::impl::PartitionPipelinePassBase<PartitionPipelinePass> {
public:
  using PartitionPipelinePassBase::PartitionPipelinePassBase;

  void runOnOperation() override {
    if (failed(partition()))
      signalPassFailure();
  }

private:
  LogicalResult partition();
};

LogicalResult PartitionPipelinePass::partition() {
  ModuleOp module = getOperation();
  auto fail = [&](const Twine &message) {
    return module.emitError("titan-partition-pipeline: " + message);
  };
  if (degree < 1 || rank < 0 || rank >= degree)
    return fail("rank " + Twine(rank) + " is not a rank of a pipeline of " +
                Twine(degree));
  if (microbatches < 1)
    return fail("microbatches must be at least 1, got " + Twine(microbatches));
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!step)
    return fail("no @train_step to partition (run titan-build-train-step "
                "first)");
  if (module.lookupSymbol(kPipelineMeshName))
    return fail("the module already has a symbol @" + kPipelineMeshName);
  llvm::Expected<PipelineScheduleKind> kind =
      parsePipelineScheduleKind(schedule);
  if (!kind)
    return fail(llvm::toString(kind.takeError()));
  int64_t perRank = stages / degree;
  if (stages == 0)
    perRank = getStagePlacement(*kind) == StagePlacement::V ||
                      (*kind != PipelineScheduleKind::GPipe &&
                       *kind != PipelineScheduleKind::OneFOneB)
                  ? 2
                  : 1;
  else if (stages % degree != 0)
    return fail(Twine(stages) + " stages cannot be spread evenly over " +
                Twine(degree) + " pipeline ranks");
  llvm::Expected<PipelineSchedule> plan =
      scheduleCsv.empty()
          ? generatePipelineSchedule(*kind, degree, perRank, microbatches)
          : readPipelineScheduleCsvFile(scheduleCsv, degree, microbatches);
  if (!plan)
    return fail(llvm::toString(plan.takeError()));
  if (stages != 0 && plan->getNumStages() != stages)
    return fail("the schedule in '" + scheduleCsv + "' runs " +
                Twine(plan->getNumStages()) +
                " stages, but the model is cut "
                "into " +
                Twine(stages) +
                " (pipeline_parallel_schedule, layers_per_stage or "
                "module_fqns_per_model_part must agree with the CSV)");
  int64_t numStages = plan->getNumStages();
  llvm::Expected<DeviceDescription> deviceDescription = loadDevice(device);
  if (!deviceDescription)
    return fail(llvm::toString(deviceDescription.takeError()));
  RankSizes sizes(step, *deviceDescription,
                  ranksPerNode ? ranksPerNode
                               : deviceDescription->ranksPerNode);
  FailureOr<PipelineStages> analysis = PipelineStages::analyze(
      step, numStages, stageBlocks,
      [&](Operation *op) { return sizes.getSeconds(op); }, fsdpPerMicrobatch);
  if (failed(analysis))
    return failure();

  OpBuilder builder(module.getContext());
  builder.setInsertionPointToStart(module.getBody());
  MeshOp::create(builder, module.getLoc(), kPipelineMeshName,
                 builder.getStrArrayAttr({kPipelineAxisName}),
                 ArrayRef<int64_t>{degree});
  FailureOr<func::FuncOp> program =
      writePipelineRankProgram(step, *analysis, *plan, rank, microbatches);
  if (failed(program))
    return failure();
  // What was chosen, for reports and for the reader of the IR.
  MLIRContext *context = module.getContext();
  SmallVector<NamedAttribute> summary{
      builder.getNamedAttr("degree", builder.getI64IntegerAttr(degree)),
      builder.getNamedAttr("rank", builder.getI64IntegerAttr(rank)),
      builder.getNamedAttr(
          "schedule",
          builder.getStringAttr(scheduleCsv.empty()
                                    ? getPipelineScheduleKindName(*kind)
                                    : StringRef(scheduleCsv))),
      builder.getNamedAttr("microbatches",
                           builder.getI64IntegerAttr(microbatches)),
      builder.getNamedAttr("stage_blocks", builder.getDenseI64ArrayAttr(
                                               analysis->getStageBlocks()))};
  SmallVector<PipelineStages::StageCost> costs = analysis->computeStageCosts(
      [&](Operation *op) { return sizes.getSeconds(op); },
      [&](Value value) { return sizes.getBytes(value); });
  auto addCosts =
      [&](StringRef name,
          function_ref<double(const PipelineStages::StageCost &)> field) {
        summary.push_back(builder.getNamedAttr(
            name,
            builder.getDenseF64ArrayAttr(llvm::map_to_vector(costs, field))));
      };
  addCosts("stage_seconds", [](const auto &cost) {
    return cost.forwardSeconds + cost.inputGradSeconds + cost.weightGradSeconds;
  });
  addCosts("forward_seconds",
           [](const auto &cost) { return cost.forwardSeconds; });
  addCosts("input_grad_seconds",
           [](const auto &cost) { return cost.inputGradSeconds; });
  addCosts("weight_grad_seconds",
           [](const auto &cost) { return cost.weightGradSeconds; });
  addCosts("activation_bytes",
           [](const auto &cost) { return cost.activationBytes; });
  addCosts("input_grad_freed_bytes",
           [](const auto &cost) { return cost.inputGradFreedBytes; });
  addCosts("sent_forward_bytes",
           [](const auto &cost) { return cost.sentForwardBytes; });
  (*program)->setAttr(kPipelineAttrName, DictionaryAttr::get(context, summary));
  step.erase();
  return success();
}

} // namespace
