//===- FitRecompute.cpp - activation checkpointing to a memory budget -----===//

#include "FitRecompute.h"

#include "titan/Dialect/TitanDialect.h"
#include "titan/Report/PlanReport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::titan;

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// One compile of the search: the bytes per rank it allowed to be kept for
/// the backward, those the solver's choice keeps, the step's exact peak per
/// rank (arena, training state and inputs) and what is left to recompute.
struct RecomputeTry {
  int64_t allowedBytes = 0;
  int64_t keptBytes = 0;
  int64_t peakBytes = 0;
  double recomputeSeconds = 0;
};

/// The exact peak per rank of `trainStep` compiled with at most
/// `keptBytes` kept, and the bytes the choice keeps.
llvm::Expected<RecomputeTry> measurePeak(ModuleOp trainStep,
                                         TitanPipelineOptions options,
                                         int64_t keptBytes) {
  OwningOpRef<ModuleOp> copy(trainStep.clone());
  options.recompute.mode = "auto";
  options.recompute.keptBytes = keptBytes;
  options.stage = PipelineStage::Spmd;
  options.resumeAfter = PipelineStage::TrainStep;
  PassManager pm(trainStep.getContext());
  buildTitanPipeline(pm, options);
  buildPlanningPipeline(pm, options);
  if (failed(pm.run(*copy)))
    return llvm::createStringError("compilation failed (see the errors "
                                   "above)");
  FailureOr<MemoryBreakdown> memory = computeMemoryBreakdown(*copy);
  if (failed(memory))
    return llvm::createStringError("cannot read the memory plan");
  auto step = copy->lookupSymbol<func::FuncOp>("train_step");
  auto plan = step ? step->getAttrOfType<DictionaryAttr>(
                         TitanDialect::kRecomputePlanAttrName)
                   : DictionaryAttr();
  auto keptMiB = plan ? plan.getAs<FloatAttr>("kept_mib") : FloatAttr();
  auto seconds =
      plan ? plan.getAs<FloatAttr>("recompute_seconds") : FloatAttr();
  if (!keptMiB || !seconds)
    return llvm::createStringError("titan-select-recompute wrote no plan");
  return RecomputeTry{keptBytes,
                      int64_t(keptMiB.getValueAsDouble() * 1024.0 * 1024.0),
                      memory->getTotalBytes(), seconds.getValueAsDouble()};
}
} // namespace

llvm::Expected<RecomputeFit>
mlir::titan::fitRecomputeToMemory(ModuleOp trainStep,
                                  TitanPipelineOptions options,
                                  int64_t budgetBytes, unsigned maxCompiles) {
  RecomputeFit fit;
  auto measure = [&](int64_t kept) -> llvm::Expected<RecomputeTry> {
    ++fit.compiles;
    return measurePeak(trainStep, options, kept);
  };
  llvm::Expected<RecomputeTry> least = measure(0);
  if (!least)
    return least.takeError();
  if (least->peakBytes > budgetBytes)
    return llvm::createStringError(llvm::formatv(
        "[activation_checkpoint] memory_budget_gib = {0:F3}: the step needs "
        "{1:F3} GiB per rank even recomputing every block; raise the budget, "
        "set parallelism.fsdp_reshard_after_forward = \"always\", or shard "
        "over more ranks (data_parallel_shard_degree, "
        "tensor_parallel_degree)",
        budgetBytes / kGiB, least->peakBytes / kGiB));
  fit.peakBytes = least->peakBytes;
  // The peak grows about byte for byte with what is kept (the saved
  // values are live together at the start of the backward); each compile
  // corrects the next guess by what the plan measured. `fits` is the most
  // kept that fit, `over` the least that did not.
  int64_t fits = 0, over = -1;
  int64_t next = budgetBytes - least->peakBytes;
  while (fit.compiles < maxCompiles && next > fits &&
         (over < 0 || next < over)) {
    llvm::Expected<RecomputeTry> tried = measure(next);
    if (!tried)
      return tried.takeError();
    int64_t peak = tried->peakBytes;
    if (peak <= budgetBytes) {
      fits = next;
      fit.allowedBytes = next;
      fit.keptBytes = tried->keptBytes;
      fit.peakBytes = peak;
      // Within 1% of the budget, or nothing left to recompute: done.
      if (budgetBytes - peak < budgetBytes / 100 ||
          tried->recomputeSeconds == 0)
        break;
      next += budgetBytes - peak;
    } else {
      over = next;
      next -= peak - budgetBytes;
      // Between what fit and what did not when the correction overshoots.
      if (next <= fits)
        next = fits + (over - fits) / 2;
    }
  }
  return fit;
}
