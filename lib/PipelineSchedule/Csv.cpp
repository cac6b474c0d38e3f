//===- Csv.cpp - torch's CSV form of a pipeline schedule ------------------===//
//
// torch's _PipelineScheduleRuntime._dump_csv writes one row per pp rank with
// Python's csv.writer (cells joined by ",", rows ended by "\r\n", an idle
// step None as an empty cell); _load_csv reads each cell with
// _Action.from_str, which strips blanks and takes an empty cell as None.
//
//===----------------------------------------------------------------------===//

#include "Detail.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <map>

using namespace mlir;
using namespace mlir::titan;
using llvm::formatv;

std::string
mlir::titan::printPipelineScheduleCsv(const PipelineSchedule &schedule) {
  std::string text;
  for (const auto &actions : schedule.ranks) {
    text += llvm::join(llvm::map_range(actions, formatPipelineAction), ",");
    text += "\r\n";
  }
  return text;
}

/// The text of a cell: unquoted when it is one double-quoted field ("" is
/// an escaped quote inside it).
static std::string unquote(llvm::StringRef cell) {
  llvm::StringRef trimmed = cell.trim();
  if (trimmed.size() < 2 || !trimmed.starts_with("\"") ||
      !trimmed.ends_with("\""))
    return trimmed.str();
  std::string text;
  llvm::StringRef inner = trimmed.drop_front().drop_back();
  for (size_t i = 0; i < inner.size(); ++i) {
    text += inner[i];
    if (inner[i] == '"' && i + 1 < inner.size() && inner[i + 1] == '"')
      ++i;
  }
  return text;
}

namespace {

/// The rows of a CSV file: lines split at "\n" (a "\r" before it dropped),
/// without the blank lines at the end.
llvm::SmallVector<llvm::StringRef> splitRows(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef> rows;
  text.split(rows, '\n');
  for (llvm::StringRef &row : rows)
    row.consume_back("\r");
  while (!rows.empty() && rows.back().trim().empty())
    rows.pop_back();
  return rows;
}

/// Where the stages were found: stage -> (rank, cell) of its first action.
using StageSites = std::map<int64_t, std::pair<int64_t, int64_t>>;

/// How the first stage of `sites` that `schedule`'s placement puts on
/// another rank breaks it, or "" when every stage fits.
std::string describeMisfit(const PipelineSchedule &schedule,
                           const StageSites &sites) {
  for (const auto &[stage, site] : sites)
    if (schedule.getRankOfStage(stage) != site.first)
      return formatv("under {0}, stage {1} (rank {2}, cell {3}) belongs on "
                     "rank {4}",
                     getStagePlacementName(schedule.placement), stage,
                     site.first, site.second, schedule.getRankOfStage(stage));
  return "";
}

/// Sets the stages per rank and the placement of `schedule` (loop, else v)
/// so that every stage of `sites` is where it was found, among `numStages`
/// stages.
llvm::Error inferPlacement(PipelineSchedule &schedule, const StageSites &sites,
                           int64_t numStages) {
  if (numStages == 0)
    return detail::scheduleError("the schedule CSV has no actions");
  if (numStages % schedule.numRanks != 0)
    return detail::scheduleError(formatv(
        "the schedule CSV names stages up to {0}, so {1} stages, which its "
        "{2} rows (pp ranks) cannot share evenly",
        numStages - 1, numStages, schedule.numRanks));
  schedule.stagesPerRank = numStages / schedule.numRanks;
  schedule.placement = StagePlacement::Loop;
  std::string misfits = describeMisfit(schedule, sites);
  if (misfits.empty())
    return llvm::Error::success();
  if (schedule.stagesPerRank == 2) {
    schedule.placement = StagePlacement::V;
    std::string misfit = describeMisfit(schedule, sites);
    if (misfit.empty())
      return llvm::Error::success();
    misfits += "; " + misfit;
  }
  return detail::scheduleError(formatv(
      "the stages of the schedule CSV fit neither placement of {0} "
      "stages on {1} ranks (loop: stage s on rank s % {1}; v, for 2 "
      "stages per rank: stages r and {2}-r on rank r): {3}",
      numStages, schedule.numRanks, 2 * schedule.numRanks - 1, misfits));
}

} // namespace

llvm::Expected<PipelineSchedule>
mlir::titan::parsePipelineScheduleCsv(llvm::StringRef text, int64_t numRanks,
                                      int64_t numMicrobatches) {
  llvm::SmallVector<llvm::StringRef> rows = splitRows(text);
  if (static_cast<int64_t>(rows.size()) != numRanks)
    return detail::scheduleError(
        formatv("the schedule CSV has {0} row(s), one per pp rank, but "
                "there are {1} pp ranks",
                rows.size(), numRanks));
  PipelineSchedule schedule;
  schedule.numRanks = numRanks;
  schedule.numMicrobatches = numMicrobatches;
  schedule.ranks.resize(numRanks);
  llvm::SmallVector<llvm::SmallVector<int64_t, 0>> cells(numRanks);
  StageSites sites;
  int64_t numStages = 0;
  for (auto [rank, row] : llvm::enumerate(rows)) {
    llvm::SmallVector<llvm::StringRef> fields;
    row.split(fields, ',');
    for (auto [cell, field] : llvm::enumerate(fields)) {
      std::string content = unquote(field);
      if (content.empty())
        continue;
      llvm::Expected<PipelineAction> action = parsePipelineAction(content);
      if (!action)
        return detail::scheduleError(
            formatv("rank {0}, cell {1}: ", rank, cell) +
            llvm::toString(action.takeError()));
      sites.try_emplace(action->stage, rank, cell);
      numStages = std::max(numStages, action->stage + 1);
      schedule.ranks[rank].push_back(*action);
      cells[rank].push_back(cell);
    }
  }
  if (llvm::Error error = inferPlacement(schedule, sites, numStages))
    return std::move(error);
  if (llvm::Error error = detail::verifySchedule(schedule, cells))
    return std::move(error);
  return schedule;
}

llvm::Expected<PipelineSchedule>
mlir::titan::readPipelineScheduleCsvFile(llvm::StringRef path, int64_t numRanks,
                                         int64_t numMicrobatches) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path);
  if (!file)
    return llvm::createStringError("cannot read the schedule CSV '" + path +
                                   "': " + file.getError().message());
  llvm::Expected<PipelineSchedule> schedule =
      parsePipelineScheduleCsv((*file)->getBuffer(), numRanks, numMicrobatches);
  if (!schedule)
    return llvm::createStringError(path + ": " +
                                   llvm::toString(schedule.takeError()));
  return schedule;
}
