//===- FitRecompute.cpp - activation checkpointing to a memory budget -----===//

#include "FitRecompute.h"

#include "titan/Dialect/TitanDialect.h"
#include "titan/Report/PlanReport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::titan;

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// One try of the search: the bytes per rank it allowed to be kept for
/// the backward, those the solver's choice keeps, the step's exact peak per
/// rank (arena, training state and inputs; under pipeline parallelism the
/// largest of the pipeline ranks', `peakRank`'s) and what is left to
/// recompute.
struct RecomputeTry {
  int64_t allowedBytes = 0;
  int64_t keptBytes = 0;
  int64_t peakBytes = 0;
  int64_t peakRank = 0;
  double recomputeSeconds = 0;
};

/// The exact peak per rank of `trainStep` compiled with at most
/// `keptBytes` kept, and the bytes the choice keeps: one program, or under
/// pipeline parallelism each pipeline rank's (the choice is made once, on
/// the step of one microbatch before it is cut into stages).
llvm::Expected<RecomputeTry> measurePeak(ModuleOp trainStep,
                                         TitanPipelineOptions options,
                                         int64_t keptBytes) {
  auto compilationFailed = [] {
    return llvm::createStringError("compilation failed (see the errors "
                                   "above)");
  };
  options.recompute.mode = "auto";
  options.recompute.keptBytes = keptBytes;
  // The choice, once.
  OwningOpRef<ModuleOp> placed(trainStep.clone());
  {
    TitanPipelineOptions placing = options;
    placing.stage = PipelineStage::Placed;
    placing.resumeAfter = PipelineStage::TrainStep;
    PassManager pm(trainStep.getContext());
    buildTitanPipeline(pm, placing);
    if (failed(pm.run(*placed)))
      return compilationFailed();
  }
  auto step = placed->lookupSymbol<func::FuncOp>("train_step");
  auto plan = step ? step->getAttrOfType<DictionaryAttr>(
                         TitanDialect::kRecomputePlanAttrName)
                   : DictionaryAttr();
  auto keptMiB = plan ? plan.getAs<FloatAttr>("kept_mib") : FloatAttr();
  auto seconds =
      plan ? plan.getAs<FloatAttr>("recompute_seconds") : FloatAttr();
  if (!keptMiB || !seconds)
    return llvm::createStringError("titan-select-recompute wrote no plan");
  RecomputeTry tried;
  tried.allowedBytes = keptBytes;
  tried.keptBytes = int64_t(keptMiB.getValueAsDouble() * 1024.0 * 1024.0);
  tried.recomputeSeconds = seconds.getValueAsDouble();
  // Each rank's program from it.
  options.stage = PipelineStage::Spmd;
  options.resumeAfter = PipelineStage::Placed;
  int64_t degree = options.pipeline ? options.pipeline->degree : 1;
  for (int64_t rank = 0; rank < degree; ++rank) {
    if (options.pipeline)
      options.pipeline->rank = rank;
    OwningOpRef<ModuleOp> program(placed->clone());
    PassManager pm(trainStep.getContext());
    buildTitanPipeline(pm, options);
    buildPlanningPipeline(pm, options);
    if (failed(pm.run(*program)))
      return compilationFailed();
    FailureOr<MemoryBreakdown> memory = computeMemoryBreakdown(*program);
    if (failed(memory))
      return llvm::createStringError("cannot read the memory plan");
    if (rank == 0 || memory->getTotalBytes() > tried.peakBytes) {
      tried.peakBytes = memory->getTotalBytes();
      tried.peakRank = rank;
    }
  }
  return tried;
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
        "{1:F3} GiB per rank{2} even recomputing every block; raise the "
        "budget, {3}or shard over more ranks (data_parallel_shard_degree, "
        "tensor_parallel_degree{4})",
        budgetBytes / kGiB, least->peakBytes / kGiB,
        options.pipeline
            ? llvm::formatv(" (on pipeline rank {0})", least->peakRank).str()
            : "",
        options.reshard.policy == "always"
            ? ""
            : "set parallelism.fsdp_reshard_after_forward = \"always\", ",
        options.pipeline ? ", pipeline_parallel_degree" : ""));
  fit.peakBytes = least->peakBytes;
  // The peak grows about byte for byte with what is kept (the saved
  // values are live together at the start of the backward); each compile
  // corrects the next guess by what the plan measured. Kept bytes come in
  // whole values, so the peak is a step function of the allowance: a guess
  // outside `fits` (the most allowed that fit) and `over` (the least that
  // did not), or within a quarter of their distance below `over`, takes
  // their middle instead.
  int64_t fits = 0, over = -1;
  // Close enough: within 1% of the room above recomputing everything.
  int64_t tolerance = (budgetBytes - least->peakBytes) / 100;
  int64_t next = budgetBytes - least->peakBytes;
  while (fit.compiles < maxCompiles && next > fits) {
    llvm::Expected<RecomputeTry> tried = measure(next);
    if (!tried)
      return tried.takeError();
    int64_t peak = tried->peakBytes;
    if (peak <= budgetBytes) {
      fits = next;
      fit.allowedBytes = next;
      fit.keptBytes = tried->keptBytes;
      fit.peakBytes = peak;
      if (budgetBytes - peak <= tolerance || tried->recomputeSeconds == 0)
        break;
    } else {
      over = next;
    }
    next += budgetBytes - peak;
    // Outside the bracket, or too close to `over` to change the choice:
    // its middle.
    if (over >= 0 &&
        (next <= fits ||
         over - next < std::max<int64_t>((over - fits) / 4, tolerance)))
      next = fits + (over - fits) / 2;
  }
  return fit;
}
