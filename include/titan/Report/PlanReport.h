//===- PlanReport.h - human-readable parallel plan report -------*- C++ -*-===//
//
// Summarizes a partitioned (spmdized) training step for a person: the mesh,
// every parameter's placements with its global and per-rank shape, and the
// collectives one rank runs per step with the bytes each sends (ring
// algorithm estimates): per collective kind, and every collective attributed
// to a transformer block (parameters "<stem>.<index>.*") or to what lies
// outside the blocks (embedding, output, loss, optimizer), in the forward,
// the backward or the optimizer, with its mesh axes, tensor dims and the
// parameter or local tensor it moves.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_REPORT_PLANREPORT_H
#define TITAN_REPORT_PLANREPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::titan {

/// Writes the report of `@train_step` in `module` (after titan-spmdize).
LogicalResult writePlanReport(ModuleOp module, llvm::raw_ostream &os);

/// Writes the memory section of the report: the bytes of each memory
/// region of a rank and where the arena's use peaks, from `@train_step`'s
/// memory plan (after titan-plan-memory).
LogicalResult writeMemoryReport(ModuleOp module, llvm::raw_ostream &os);

} // namespace mlir::titan

#endif // TITAN_REPORT_PLANREPORT_H
