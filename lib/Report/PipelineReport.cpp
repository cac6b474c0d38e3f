//===- PipelineReport.cpp - predicted step of a pipeline ------------------===//
//
// See include/titan/Report/PipelineReport.h. The simulator times one step
// from `titan.pipeline`'s per-stage costs: a full backward is the input
// gradients plus the weight gradients, every transfer between pp ranks
// takes the time of the largest stage boundary on the pp axis' link, and
// memory per rank is the activations the schedule keeps alive (the state
// each rank holds throughout is added where known). The optimizer and the
// collectives run once per step are outside the simulation.
//
//===----------------------------------------------------------------------===//

#include "titan/Report/PipelineReport.h"

#include "ReportFormat.h"

#include "titan/CostModel/OpTime.h"
#include "titan/Dialect/ArgRole.h"
#include "titan/Dialect/PipelineMesh.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::titan;

static llvm::Error planError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "titan.pipeline: " + message);
}

llvm::Expected<PipelinePlan>
mlir::titan::parsePipelinePlan(DictionaryAttr attr) {
  PipelinePlan plan;
  auto readInteger = [&](StringRef key, int64_t &value) -> llvm::Error {
    auto integer = attr.getAs<IntegerAttr>(key);
    if (!integer)
      return planError("'" + key + "' is missing or not an integer");
    value = integer.getInt();
    return llvm::Error::success();
  };
  if (llvm::Error error = readInteger("degree", plan.degree))
    return std::move(error);
  if (llvm::Error error = readInteger("rank", plan.rank))
    return std::move(error);
  if (llvm::Error error = readInteger("microbatches", plan.microbatches))
    return std::move(error);
  auto schedule = attr.getAs<StringAttr>("schedule");
  if (!schedule)
    return planError("'schedule' is missing or not a string");
  plan.schedule = schedule.getValue().str();
  auto blocks = attr.getAs<DenseI64ArrayAttr>("stage_blocks");
  if (!blocks)
    return planError("'stage_blocks' is missing or not an array of i64");
  plan.stageBlocks.assign(blocks.asArrayRef().begin(),
                          blocks.asArrayRef().end());
  std::pair<StringRef, llvm::SmallVector<double> *> arrays[] = {
      {"stage_seconds", &plan.stageSeconds},
      {"forward_seconds", &plan.forwardSeconds},
      {"input_grad_seconds", &plan.inputGradSeconds},
      {"weight_grad_seconds", &plan.weightGradSeconds},
      {"activation_bytes", &plan.activationBytes},
      {"input_grad_freed_bytes", &plan.inputGradFreedBytes},
      {"sent_forward_bytes", &plan.sentForwardBytes}};
  for (auto &[key, values] : arrays) {
    auto array = attr.getAs<DenseF64ArrayAttr>(key);
    if (!array)
      return planError("'" + key + "' is missing or not an array of f64");
    if (int64_t(array.size()) != plan.getNumStages())
      return planError("'" + key + "' has " + llvm::Twine(array.size()) +
                       " entries for " + llvm::Twine(plan.getNumStages()) +
                       " stages");
    values->assign(array.asArrayRef().begin(), array.asArrayRef().end());
  }
  if (plan.degree < 1 || plan.rank < 0 || plan.rank >= plan.degree)
    return planError("rank " + llvm::Twine(plan.rank) +
                     " is not a rank of a pipeline of " +
                     llvm::Twine(plan.degree));
  if (plan.microbatches < 1)
    return planError("microbatches must be at least 1, got " +
                     llvm::Twine(plan.microbatches));
  if (plan.getNumStages() == 0 || plan.getNumStages() % plan.degree != 0)
    return planError(llvm::Twine(plan.getNumStages()) +
                     " stages cannot be spread evenly over " +
                     llvm::Twine(plan.degree) + " pipeline ranks");
  return plan;
}

llvm::Expected<PipelineRankProgram>
mlir::titan::readPipelineRankProgram(ModuleOp module) {
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!step)
    return llvm::createStringError(
        "the pipeline report needs a pipeline rank's @train_step");
  auto attr = step->getAttrOfType<DictionaryAttr>(kPipelineAttrName);
  if (!attr)
    return llvm::createStringError(
        "@train_step has no titan.pipeline (run titan-partition-pipeline)");
  llvm::Expected<PipelinePlan> plan = parsePipelinePlan(attr);
  if (!plan)
    return plan.takeError();
  PipelineRankProgram program;
  program.plan = std::move(*plan);
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    std::optional<ArgRole> role = getArgRole(step, i);
    if (!role || *role == ArgRole::Input)
      continue;
    Type type = step.getArgument(i).getType();
    program.stateBytes +=
        double(getStaticNumElements(type)) *
        double(getElementByteWidth(getElementTypeOrSelf(type)));
  }
  step.walk([&](Operation *op) {
    if (!isa<CostOpInterface>(op) || classifyCompute(op) != ComputeClass::Gemm)
      return WalkResult::advance();
    program.matmulType = getComputeElementType(op);
    return WalkResult::interrupt();
  });
  return program;
}

/// The link between neighbouring pp ranks: that of the pp axis of a mesh
/// [pp, stage].
static const LinkDescription &getPipelineLink(const DeviceDescription &device,
                                              int64_t degree, int64_t stageSize,
                                              int64_t ranksPerNode) {
  return getAxesLink(device, {degree, stageSize}, {0}, ranksPerNode);
}

double mlir::titan::predictPipelineTransferSeconds(
    const DeviceDescription &device, int64_t degree, int64_t stageSize,
    int64_t ranksPerNode, double bytes) {
  if (bytes <= 0)
    return 0;
  return predictCollectiveSeconds(
      getPipelineLink(device, degree, stageSize, ranksPerNode),
      CollectiveKind::Send, 2, bytes);
}

PipelineCosts mlir::titan::getPipelineCosts(const PipelinePlan &plan,
                                            double transferSeconds) {
  PipelineCosts costs;
  costs.transferSeconds = transferSeconds;
  for (int64_t s = 0; s < plan.getNumStages(); ++s) {
    StageCost stage;
    stage.forwardSeconds = plan.forwardSeconds[s];
    stage.backwardInputSeconds = plan.inputGradSeconds[s];
    stage.backwardWeightSeconds = plan.weightGradSeconds[s];
    stage.activationBytes = plan.activationBytes[s];
    stage.backwardInputFreedBytes = plan.inputGradFreedBytes[s];
    costs.stages.push_back(stage);
  }
  return costs;
}

llvm::Expected<PipelineSchedule>
mlir::titan::generatePlanSchedule(const PipelinePlan &plan) {
  llvm::Expected<PipelineScheduleKind> kind =
      parsePipelineScheduleKind(plan.schedule);
  if (!kind)
    return kind.takeError();
  return generatePipelineSchedule(
      *kind, plan.degree, plan.getNumStages() / plan.degree, plan.microbatches);
}

/// Simulates `schedule` on `costs` and derives tokens/s and MFU.
static llvm::Expected<PipelinePrediction>
predict(const PipelineSchedule &schedule, llvm::StringRef name,
        const PipelineCosts &costs, const PipelinePlan &plan,
        const PipelineTarget &target) {
  llvm::Expected<PipelineSimulation> simulation =
      simulatePipeline(schedule, costs);
  if (!simulation)
    return simulation.takeError();
  PipelinePrediction prediction;
  prediction.name = name.str();
  prediction.schedule = schedule;
  prediction.simulation = std::move(*simulation);
  double ranks = double(plan.degree * target.stageSize);
  double tokensPerStep = target.tokensPerMicrobatch * double(plan.microbatches);
  if (prediction.simulation.stepSeconds > 0)
    prediction.tokensPerSecond =
        tokensPerStep / ranks / prediction.simulation.stepSeconds;
  prediction.mfu = target.flopsPerToken * prediction.tokensPerSecond /
                   getMatmulPeak(target.device, target.matmulType);
  return prediction;
}

llvm::Expected<PipelineReport> mlir::titan::buildPipelineReport(
    const PipelinePlan &plan, const PipelineTarget &target,
    const PipelineSchedule &schedule, llvm::StringRef name) {
  if (schedule.numRanks != plan.degree ||
      schedule.getNumStages() != plan.getNumStages() ||
      schedule.numMicrobatches != plan.microbatches)
    return llvm::createStringError(llvm::formatv(
        "the schedule '{0}' runs {1} stages on {2} pp ranks with {3} "
        "microbatches, but the pipeline has {4} stages on {5} pp ranks with "
        "{6} microbatches",
        name, schedule.getNumStages(), schedule.numRanks,
        schedule.numMicrobatches, plan.getNumStages(), plan.degree,
        plan.microbatches));
  if (!target.stateBytesPerRank.empty() &&
      int64_t(target.stateBytesPerRank.size()) != plan.degree)
    return llvm::createStringError(llvm::formatv(
        "the state bytes of {0} pp ranks were given for a pipeline of {1}",
        target.stateBytesPerRank.size(), plan.degree));
  PipelineReport report;
  report.plan = plan;
  report.target = target;
  for (int64_t s = 0; s + 1 < plan.getNumStages(); ++s)
    report.transferBytes =
        std::max(report.transferBytes, plan.sentForwardBytes[s]);
  report.transferSeconds = predictPipelineTransferSeconds(
      target.device, plan.degree, target.stageSize, target.ranksPerNode,
      report.transferBytes);
  report.internode =
      &getPipelineLink(target.device, plan.degree, target.stageSize,
                       target.ranksPerNode) == &target.device.interNode;
  PipelineCosts costs = getPipelineCosts(plan, report.transferSeconds);
  llvm::Expected<PipelinePrediction> configured =
      predict(schedule, name, costs, plan, target);
  if (!configured)
    return configured.takeError();
  report.predictions.push_back(std::move(*configured));
  for (PipelineScheduleKind kind :
       {PipelineScheduleKind::OneFOneB, PipelineScheduleKind::Interleaved1F1B,
        PipelineScheduleKind::GPipe, PipelineScheduleKind::LoopedBFS,
        PipelineScheduleKind::InterleavedZeroBubble,
        PipelineScheduleKind::ZBVZeroBubble}) {
    StringRef other = getPipelineScheduleKindName(kind);
    if (other == name)
      continue;
    llvm::Expected<PipelineSchedule> generated = generatePipelineSchedule(
        kind, plan.degree, schedule.stagesPerRank, plan.microbatches);
    if (!generated) {
      llvm::consumeError(generated.takeError());
      report.impossible.push_back(other.str());
      continue;
    }
    llvm::Expected<PipelinePrediction> prediction =
        predict(*generated, other, costs, plan, target);
    if (!prediction)
      return prediction.takeError();
    report.predictions.push_back(std::move(*prediction));
  }
  return report;
}

/// "0, 2": the stages of `rank`.
static std::string describeStages(const PipelineSchedule &schedule,
                                  int64_t rank) {
  return llvm::join(
      llvm::map_range(schedule.getStagesOfRank(rank),
                      [](int64_t s) { return std::to_string(s); }),
      ", ");
}

/// The highest peak over the ranks of `simulation`.
static double getMaxPeakBytes(const PipelineSimulation &simulation) {
  double peak = 0;
  for (const RankTimeline &rank : simulation.ranks)
    peak = std::max(peak, rank.peakBytes);
  return peak;
}

void mlir::titan::writePipelineReport(const PipelineReport &report,
                                      llvm::raw_ostream &os) {
  const PipelinePlan &plan = report.plan;
  const PipelineTarget &target = report.target;
  const PipelinePrediction &configured = report.getConfigured();
  constexpr double kMiB = 1024.0 * 1024.0;
  os << "\n== Pipeline stages (cost model; device " << target.device.name
     << ": " << target.device.description << ", ";
  if (target.ranksPerNode > 0)
    os << target.ranksPerNode << (target.ranksPerNode == 1 ? " rank" : " ranks")
       << " per node) ==\n";
  else
    os << "all ranks on one node) ==\n";
  os << "  per microbatch on one rank of a stage; backward: input and weight "
        "gradients; activations: kept from the forward for the backward\n";
  os << llvm::formatv("  {0,5} {1,7} {2,6} {3,11} {4,12} {5,16}\n", "stage",
                      "pp rank", "blocks", "forward ms", "backward ms",
                      "activations MiB");
  for (int64_t s = 0; s < plan.getNumStages(); ++s)
    os << llvm::formatv("  {0,5} {1,7} {2,6} {3,11:F3} {4,12:F3} {5,16:F2}\n",
                        s, configured.schedule.getRankOfStage(s),
                        plan.stageBlocks[s], plan.forwardSeconds[s] * 1e3,
                        (plan.inputGradSeconds[s] + plan.weightGradSeconds[s]) *
                            1e3,
                        plan.activationBytes[s] / kMiB);
  const LinkDescription &link =
      report.internode ? target.device.interNode : target.device.intraNode;
  os << llvm::formatv("  between stages on two pp ranks: {0} per microbatch "
                      "each way, {1} on the {2} link ({3:F1} GB/s, {4:F1} us "
                      "latency)\n",
                      formatBytes(int64_t(report.transferBytes)),
                      humanSeconds(report.transferSeconds),
                      report.internode ? "inter-node" : "intra-node",
                      link.bytesPerSecond * 1e-9, link.latencySeconds * 1e6);

  const PipelineSimulation &simulation = configured.simulation;
  os << "\n== Pipeline schedule " << configured.name << ": "
     << plan.getNumStages() << " stages on " << plan.degree << " pp ranks, "
     << plan.microbatches << " microbatches (simulated step) ==\n";
  os << llvm::formatv("  step time  {0} (every microbatch's forward and "
                      "backward with the transfers between stages; the "
                      "optimizer and once-per-step collectives are not "
                      "simulated)\n",
                      humanSeconds(simulation.stepSeconds));
  os << llvm::formatv("  bubble     {0:F1}% on average over the pp ranks\n",
                      100 * simulation.averageBubbleFraction);
  os << llvm::formatv("  {0,7}  {1,-8} {2,10} {3,7} {4,16} {5,10} {6,20}\n",
                      "pp rank", "stages", "busy", "bubble", "peak activations",
                      "state", "activations + state");
  for (auto [r, rank] : llvm::enumerate(simulation.ranks)) {
    std::optional<double> state;
    if (!target.stateBytesPerRank.empty())
      state = target.stateBytesPerRank[r];
    os << llvm::formatv(
        "  {0,7}  {1,-8} {2,10} {3,6:F1}% {4,16} {5,10} {6,20}\n", r,
        describeStages(configured.schedule, r), humanSeconds(rank.busySeconds),
        100 * rank.bubbleFraction, formatBytes(int64_t(rank.peakBytes)),
        state ? formatBytes(int64_t(*state)) : "-",
        state ? formatBytes(int64_t(*state + rank.peakBytes)) : "-");
  }
  os << "  (state: the rank's parameters, optimizer state and buffers; the "
        "parameters FSDP gathers, gradients and temporaries are not "
        "counted)\n";
  double ranks = double(plan.degree * target.stageSize);
  double peakFlops = getMatmulPeak(target.device, target.matmulType);
  os << llvm::formatv(
      "  tokens/s   {0} per device ({1} tokens per step "
      "over {2} ranks)\n",
      humanCount(configured.tokensPerSecond),
      humanCount(target.tokensPerMicrobatch * double(plan.microbatches)),
      int64_t(ranks));
  os << llvm::formatv(
      "  MFU        {0:F1}% ({1}FLOP/s per device of the {2} "
      "matmul peak, {3}FLOP/s; torchtitan's {4}FLOPs per "
      "token)\n",
      100 * configured.mfu,
      humanCount(target.flopsPerToken * configured.tokensPerSecond),
      stringifyElementType(target.matmulType), humanCount(peakFlops),
      humanCount(target.flopsPerToken));

  os << "\n== Pipeline schedules for " << plan.getNumStages() << " stages on "
     << plan.degree << " pp ranks, " << plan.microbatches
     << " microbatches (the same stage costs) ==\n";
  os << llvm::formatv("  {0,-26} {1,10} {2,7} {3,16} {4,20} {5,6}\n",
                      "schedule", "step", "bubble", "peak activations",
                      "tokens/s per device", "MFU");
  for (auto [i, prediction] : llvm::enumerate(report.predictions))
    os << llvm::formatv(
        "  {0,-26} {1,10} {2,6:F1}% {3,16} {4,20} {5,5:F1}%\n",
        prediction.name + (i == 0 ? " (configured)" : ""),
        humanSeconds(prediction.simulation.stepSeconds),
        100 * prediction.simulation.averageBubbleFraction,
        formatBytes(int64_t(getMaxPeakBytes(prediction.simulation))),
        humanCount(prediction.tokensPerSecond), 100 * prediction.mfu);
  os << "  (peak activations: of the pp rank that keeps the most)\n";
  int64_t perRank = plan.getNumStages() / plan.degree;
  if (!report.impossible.empty())
    os << "  not with " << perRank << (perRank == 1 ? " stage" : " stages")
       << " per rank: " << llvm::join(report.impossible, ", ") << "\n";
}
