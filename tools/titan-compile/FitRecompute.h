//===- FitRecompute.h - activation checkpointing to a memory budget -*- C++
//-*-===//
//
// [activation_checkpoint] mode = "auto": titan-select-recompute keeps at
// most a given number of bytes per rank for the backward; this finds the
// largest such number whose compiled step fits `memory_budget_gib` by the
// exact memory plan (the same titan-plan-memory the runtime allocates by).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TOOLS_FITRECOMPUTE_H
#define TITAN_TOOLS_FITRECOMPUTE_H

#include "titan/Pipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

namespace mlir::titan {

/// The search's outcome: the allowance to compile with (the largest that
/// fit among those tried), the bytes the solver's choice keeps under it,
/// its exact peak per rank, and the compiles the search took (a compile
/// builds every pipeline rank's program).
struct RecomputeFit {
  int64_t allowedBytes = 0;
  int64_t keptBytes = 0;
  int64_t peakBytes = 0;
  unsigned compiles = 0;
};

/// Compiles copies of `trainStep` (a module through the TrainStep stage)
/// with `options` through memory planning (under pipeline parallelism every
/// pipeline rank's program: the peak is the largest rank's), recompute mode
/// "auto" and varying kept bytes: first nothing kept (everything recomputed:
/// fails with advice when even that exceeds `budgetBytes`), then the headroom
/// that leaves, corrected by the measured overshoot or slack, at most
/// `maxCompiles` compiles in all.
llvm::Expected<RecomputeFit> fitRecomputeToMemory(ModuleOp trainStep,
                                                  TitanPipelineOptions options,
                                                  int64_t budgetBytes,
                                                  unsigned maxCompiles = 6);

} // namespace mlir::titan

#endif // TITAN_TOOLS_FITRECOMPUTE_H
