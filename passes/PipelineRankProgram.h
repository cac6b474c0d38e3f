//===- PipelineRankProgram.h - the program of one pipeline rank -*- C++ -*-===//
//
// The writer behind titan-partition-pipeline: given the stages of a placed
// @train_step (PipelineStages) and a schedule, the program of one pipeline
// rank.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PASSES_PIPELINERANKPROGRAM_H
#define TITAN_PASSES_PIPELINERANKPROGRAM_H

#include "PipelineStages.h"

#include "titan/PipelineSchedule/Schedule.h"

namespace mlir::titan {

/// Writes the program of pipeline rank `rank` as a new function @train_step
/// after `step` (which the caller erases): `schedule`'s compute actions of
/// the rank in order on `microbatches` microbatches, as
/// titan-partition-pipeline's description says. Errors are emitted on the
/// offending op.
FailureOr<func::FuncOp>
writePipelineRankProgram(func::FuncOp step, const PipelineStages &stages,
                         const PipelineSchedule &schedule, int64_t rank,
                         int64_t microbatches);

} // namespace mlir::titan

#endif // TITAN_PASSES_PIPELINERANKPROGRAM_H
