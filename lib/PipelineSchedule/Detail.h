//===- Detail.h - helpers shared by the schedule library --------*- C++ -*-===//
//
// Private to lib/PipelineSchedule: the "rank R, cell C 'ACTION': ..." form
// of errors, and verification that names cells by their column in a CSV
// file rather than their index in a rank's list.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_LIB_PIPELINESCHEDULE_DETAIL_H
#define TITAN_LIB_PIPELINESCHEDULE_DETAIL_H

#include "titan/PipelineSchedule/Schedule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Twine.h"

namespace mlir::titan::detail {

/// An error about the action in cell `cell` of rank `rank`'s list:
/// "rank R, cell C 'ACTION': problem".
llvm::Error cellError(int64_t rank, int64_t cell, const PipelineAction &action,
                      const llvm::Twine &problem);

/// An error with `message`.
llvm::Error scheduleError(const llvm::Twine &message);

/// `verifyPipelineSchedule`, naming action `i` of rank `r` as cell
/// `cells[r][i]` (as cell `i` when `cells` is empty).
llvm::Error verifySchedule(const PipelineSchedule &schedule,
                           llvm::ArrayRef<llvm::SmallVector<int64_t, 0>> cells);

} // namespace mlir::titan::detail

#endif // TITAN_LIB_PIPELINESCHEDULE_DETAIL_H
