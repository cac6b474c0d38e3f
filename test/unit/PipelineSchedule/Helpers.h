//===- Helpers.h - shared helpers of the pipeline schedule tests -*- C++
//-*-===//

#ifndef TITAN_TEST_UNIT_PIPELINESCHEDULE_HELPERS_H
#define TITAN_TEST_UNIT_PIPELINESCHEDULE_HELPERS_H

#include "titan/PipelineSchedule/Schedule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include "gtest/gtest.h"

namespace mlir::titan::test {

/// The message of `error`, "" for success.
inline std::string messageOf(llvm::Error error) {
  return error ? llvm::toString(std::move(error)) : "";
}

/// The error message of `value`, "" when it holds a value.
template <typename T> std::string messageOf(llvm::Expected<T> value) {
  return value ? "" : llvm::toString(value.takeError());
}

/// The actions in torch's string form, separated by spaces.
inline std::string render(llvm::ArrayRef<PipelineAction> actions) {
  return llvm::join(llvm::map_range(actions, formatPipelineAction), " ");
}

/// A schedule of `numRanks` ranks with `stagesPerRank` stages each under
/// `placement`, rank r's actions parsed from the space-separated `ranks[r]`.
inline PipelineSchedule
makeSchedule(int64_t stagesPerRank, int64_t numMicrobatches,
             llvm::ArrayRef<llvm::StringRef> ranks,
             StagePlacement placement = StagePlacement::Loop) {
  PipelineSchedule schedule;
  schedule.numRanks = static_cast<int64_t>(ranks.size());
  schedule.stagesPerRank = stagesPerRank;
  schedule.numMicrobatches = numMicrobatches;
  schedule.placement = placement;
  for (llvm::StringRef text : ranks) {
    llvm::SmallVector<llvm::StringRef> cells;
    text.split(cells, ' ', -1, /*KeepEmpty=*/false);
    auto &actions = schedule.ranks.emplace_back();
    for (llvm::StringRef cell : cells) {
      llvm::Expected<PipelineAction> action = parsePipelineAction(cell);
      if (!action) {
        ADD_FAILURE() << llvm::toString(action.takeError());
        continue;
      }
      actions.push_back(*action);
    }
  }
  return schedule;
}

/// `kind`'s schedule for (p, v, m), which must exist.
inline PipelineSchedule generate(PipelineScheduleKind kind, int64_t p,
                                 int64_t v, int64_t m) {
  llvm::Expected<PipelineSchedule> schedule =
      generatePipelineSchedule(kind, p, v, m);
  if (!schedule) {
    ADD_FAILURE() << llvm::toString(schedule.takeError());
    return {};
  }
  return std::move(*schedule);
}

} // namespace mlir::titan::test

#endif // TITAN_TEST_UNIT_PIPELINESCHEDULE_HELPERS_H
