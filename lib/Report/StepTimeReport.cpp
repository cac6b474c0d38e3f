//===- StepTimeReport.cpp - predicted step time, tokens/s and MFU ---------===//
//
// The plan report's prediction: every op of one rank's program timed by the
// cost model (titan/CostModel/Device.h) on the configured device, summed per
// phase in program order, every collective in sequence with the ops, so
// compute and communication add up (the overlap section, OverlapTimeline.h,
// runs titan-schedule-overlap's asynchronous collectives behind compute).
// The model FLOPs behind tokens/s and MFU are torchtitan's count (6 x
// parameters outside embeddings + the attention term), read from the global
// training step; titan's own count of what a rank runs (recomputation and
// padding included) is printed next to it.
//
//===----------------------------------------------------------------------===//

#include "titan/Report/PlanReport.h"

#include "titan/CostModel/CollectiveTime.h"
#include "PartitionedStep.h"
#include "ReportFormat.h"

#include "titan/CostModel/OpTime.h"
#include "titan/Dialect/ArgRole.h"
#include "titan/Dialect/ArgumentTrace.h"
#include "titan/Dialect/ElementTypes.h"
#include "titan/Dialect/Provenance.h"
#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

using namespace mlir;
using namespace mlir::titan;

FailureOr<ModelFlops> mlir::titan::computeModelFlops(ModuleOp module) {
  auto function = module.lookupSymbol<func::FuncOp>("train_step");
  if (!function)
    return emitError(module.getLoc()) << "the model FLOPs need @train_step";
  ModelFlops model;
  llvm::SmallDenseSet<unsigned> tables;
  function.walk([&](Operation *op) {
    if (getPhase(op) != Phase::Forward ||
        op->hasAttr(TitanDialect::kRecomputeAttrName))
      return;
    if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
      // The table argument itself, or its cast to the compute type.
      if (BlockArgument table = traceToArgument(embedding.getTable()))
        tables.insert(table.getArgNumber());
      if (!model.tokensPerStep)
        model.tokensPerStep =
            getStaticNumElements(embedding.getIds().getType());
    } else if (auto attention = dyn_cast<AttentionOp>(op)) {
      ArrayRef<int64_t> q = attention.getQ().getType().getShape();
      ++model.attentionLayers;
      model.attentionWidthSum += double(q[1]) * double(q[3]);
      model.seqLen = q[2];
    }
  });
  for (unsigned i = 0; i < function.getNumArguments(); ++i) {
    if (getArgRole(function, i) != ArgRole::Param)
      continue;
    double elements = getStaticNumElements(function.getArgument(i).getType());
    model.parameters += elements;
    if (tables.contains(i))
      model.embeddingParameters += elements;
  }
  return model;
}

FailureOr<StepTimePrediction>
mlir::titan::predictStepTime(ModuleOp module, const DeviceDescription &device,
                             int64_t ranksPerNode, const ModelFlops &model) {
  FailureOr<PartitionedStep> step =
      getPartitionedStep(module, "the predicted step time");
  if (failed(step))
    return failure();
  func::FuncOp function = step->function;
  MeshOp mesh = step->mesh;

  StepTimePrediction prediction;
  prediction.ranks = mesh.getNumDevices();
  std::optional<ElementType> matmulType;
  function.walk([&](Operation *op) {
    PhaseSeconds &phase =
        prediction
            .phases[static_cast<int>(getPhase(op).value_or(Phase::Forward))];
    if (auto collective = dyn_cast<CollectiveOpInterface>(op)) {
      CollectiveTime time =
          predictCollectiveTime(collective, mesh, device, ranksPerNode);
      phase.communication += time.seconds;
      AxesSeconds &entry = prediction.byAxes[time.getAxesKey()];
      entry.link = *time.link;
      entry.internode = time.internode;
      ++entry.count;
      entry.seconds += time.seconds;
      return;
    }
    std::optional<double> seconds = predictOpSeconds(device, op);
    if (!seconds)
      return;
    if (classifyCompute(op) == ComputeClass::Gemm && !matmulType)
      matmulType = getComputeElementType(op);
    phase.compute += *seconds;
    if (op->hasAttr(TitanDialect::kRecomputeAttrName))
      phase.recompute += *seconds;
    prediction.hardwareFlops += double(cast<CostOpInterface>(op).getFlops());
  });
  for (const PhaseSeconds &phase : prediction.phases) {
    prediction.step.compute += phase.compute;
    prediction.step.communication += phase.communication;
    prediction.step.recompute += phase.recompute;
  }
  prediction.tokensPerRank =
      double(model.tokensPerStep) / double(prediction.ranks);
  prediction.tokensPerSecond =
      prediction.tokensPerRank / prediction.getStepSeconds();
  prediction.peakType = matmulType.value_or(ElementType::F32);
  prediction.peakFlopsPerSecond = getMatmulPeak(device, prediction.peakType);
  prediction.mfu = model.getFlopsPerToken() * prediction.tokensPerSecond /
                   prediction.peakFlopsPerSecond;
  return prediction;
}

LogicalResult mlir::titan::writeStepTimeReport(ModuleOp module,
                                               const DeviceDescription &device,
                                               int64_t ranksPerNode,
                                               const ModelFlops &model,
                                               llvm::raw_ostream &os) {
  FailureOr<StepTimePrediction> predicted =
      predictStepTime(module, device, ranksPerNode, model);
  if (failed(predicted))
    return failure();
  const StepTimePrediction &prediction = *predicted;
  os << "\n== Predicted step time per rank (cost model; device " << device.name
     << ": " << device.description << ", ";
  if (ranksPerNode > 0)
    os << ranksPerNode << (ranksPerNode == 1 ? " rank" : " ranks")
       << " per node) ==\n";
  else
    os << "all ranks on one node) ==\n";
  os << llvm::formatv("  {0,-10} {1,12} {2,14} {3,12}\n", "phase", "compute",
                      "communication", "total");
  auto printPhase = [&](StringRef name, const PhaseSeconds &phase) {
    os << llvm::formatv("  {0,-10} {1,12} {2,14} {3,12}\n", name,
                        humanSeconds(phase.compute),
                        humanSeconds(phase.communication),
                        humanSeconds(phase.compute + phase.communication));
  };
  for (Phase phase : {Phase::Forward, Phase::Backward, Phase::Optimizer})
    printPhase(stringifyPhase(phase),
               prediction.phases[static_cast<int>(phase)]);
  printPhase("step", prediction.step);
  os << "  (collectives in sequence with the ops, as without "
        "titan-schedule-overlap: compute and communication add up; the "
        "communication overlap section runs them as the executable does)\n";
  if (prediction.step.recompute > 0)
    os << "  recomputation (activation checkpointing): "
       << humanSeconds(prediction.step.recompute)
       << " of the backward's compute\n";
  // What titan-select-recompute's budgeted modes chose.
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (auto plan = step ? step->getAttrOfType<DictionaryAttr>(
                             TitanDialect::kRecomputePlanAttrName)
                       : DictionaryAttr()) {
    auto number = [&](StringRef key) {
      auto value = plan.getAs<FloatAttr>(key);
      return value ? value.getValueAsDouble() : 0.0;
    };
    auto solver = plan.getAs<StringAttr>("solver");
    os << llvm::formatv("  kept for the backward: {0:F2} MiB per rank of an "
                        "allowance of {1:F2} MiB (solver: {2})\n",
                        number("kept_mib"), number("budget_mib"),
                        solver ? solver.getValue() : "");
  }
  if (!prediction.byAxes.empty()) {
    os << "  communication by mesh axes:\n";
    for (const auto &[axes, entry] : prediction.byAxes)
      os << llvm::formatv(
          "    {0,-16} {1,-10} {2,4} collectives {3,12}  ({4:F1} GB/s, "
          "{5:F1} us per ring step)\n",
          axes, entry.internode ? "inter-node" : "intra-node", entry.count,
          humanSeconds(entry.seconds), entry.link.bytesPerSecond * 1e-9,
          entry.link.latencySeconds * 1e6);
  }
  double flopsPerToken = model.getFlopsPerToken();
  os << llvm::formatv("  tokens per rank     {0} per step ({1} over {2} "
                      "ranks); {3} tokens/s\n",
                      humanCount(prediction.tokensPerRank),
                      humanCount(double(model.tokensPerStep)), prediction.ranks,
                      humanCount(prediction.tokensPerSecond));
  os << llvm::formatv("  model FLOPs         {0} per token = 6 x {1} "
                      "parameters outside embeddings + 12 x {2} attention "
                      "width x {3} tokens of context (torchtitan's count; "
                      "{4} attention layers)\n",
                      humanCount(flopsPerToken),
                      humanCount(model.parameters - model.embeddingParameters),
                      humanCount(model.attentionWidthSum), model.seqLen,
                      model.attentionLayers);
  os << llvm::formatv("  MFU                 {0:F1}% ({1}FLOP/s per rank of "
                      "the {2} matmul peak, {3}FLOP/s)\n",
                      100 * prediction.mfu,
                      humanCount(flopsPerToken * prediction.tokensPerSecond),
                      stringifyElementType(prediction.peakType),
                      humanCount(prediction.peakFlopsPerSecond));
  os << llvm::formatv("  hardware FLOPs      {0} per step per rank (titan's "
                      "count of the ops a rank runs, recomputation and "
                      "padding included): {1:F1}% of the peak\n",
                      humanCount(prediction.hardwareFlops),
                      100 * prediction.hardwareFlops /
                          prediction.getStepSeconds() /
                          prediction.peakFlopsPerSecond);
  return success();
}
