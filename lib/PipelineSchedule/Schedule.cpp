//===- Schedule.cpp - pipeline actions and schedules ----------------------===//
//
// See include/titan/PipelineSchedule/Schedule.h.
//
//===----------------------------------------------------------------------===//

#include "titan/PipelineSchedule/Schedule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"

using namespace mlir;
using namespace mlir::titan;

/// Every kind with torch's spelling. No spelling is a prefix of another, so
/// the first one a cell's text starts with is its kind.
static constexpr std::pair<PipelineActionKind, llvm::StringLiteral>
    kKindNames[] = {
        {PipelineActionKind::ReduceGrad, "REDUCE_GRAD"},
        {PipelineActionKind::Unshard, "UNSHARD"},
        {PipelineActionKind::Reshard, "RESHARD"},
        {PipelineActionKind::SendForward, "SEND_F"},
        {PipelineActionKind::RecvForward, "RECV_F"},
        {PipelineActionKind::SendBackward, "SEND_B"},
        {PipelineActionKind::RecvBackward, "RECV_B"},
        {PipelineActionKind::Forward, "F"},
        {PipelineActionKind::Backward, "B"},
        {PipelineActionKind::BackwardInput, "I"},
        {PipelineActionKind::BackwardWeight, "W"},
};

llvm::StringRef
mlir::titan::getPipelineActionKindName(PipelineActionKind kind) {
  for (const auto &[known, name] : kKindNames)
    if (known == kind)
      return name;
  llvm_unreachable("unknown pipeline action kind");
}

bool mlir::titan::isComputeAction(PipelineActionKind kind) {
  return kind == PipelineActionKind::Forward ||
         kind == PipelineActionKind::Backward ||
         kind == PipelineActionKind::BackwardInput ||
         kind == PipelineActionKind::BackwardWeight;
}

bool mlir::titan::isCommunicationAction(PipelineActionKind kind) {
  return kind == PipelineActionKind::SendForward ||
         kind == PipelineActionKind::RecvForward ||
         kind == PipelineActionKind::SendBackward ||
         kind == PipelineActionKind::RecvBackward;
}

/// Whether torch's actions of `kind` may go without a microbatch.
static bool mayOmitMicrobatch(PipelineActionKind kind) {
  return kind == PipelineActionKind::Unshard ||
         kind == PipelineActionKind::Reshard ||
         kind == PipelineActionKind::ReduceGrad;
}

std::string mlir::titan::formatPipelineAction(const PipelineAction &action) {
  std::string text = std::to_string(action.stage);
  text += getPipelineActionKindName(action.kind);
  if (action.microbatch)
    text += std::to_string(*action.microbatch);
  return text;
}

static llvm::Error badAction(llvm::StringRef text, const llvm::Twine &why) {
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "'" + text + "' is not a pipeline action: " + why +
          " (write [stage][kind][microbatch] as torch does, e.g. 0F1, 2I3, "
          "1SEND_F0, 1UNSHARD; kinds: F B I W SEND_F RECV_F SEND_B RECV_B "
          "UNSHARD RESHARD REDUCE_GRAD)");
}

/// The largest stage or microbatch index an action may name: far beyond
/// any pipeline, and small enough that counts derived from it cannot
/// overflow.
static constexpr uint64_t kMaxIndex = INT32_MAX;

/// Reads a decimal index of at most kMaxIndex.
static std::optional<int64_t> parseIndex(llvm::StringRef digits) {
  uint64_t value = 0;
  if (digits.empty() || digits.getAsInteger(10, value) || value > kMaxIndex)
    return std::nullopt;
  return static_cast<int64_t>(value);
}

llvm::Expected<PipelineAction>
mlir::titan::parsePipelineAction(llvm::StringRef text) {
  llvm::StringRef cell = text.trim();
  if (cell.empty())
    return badAction(cell, "the cell is empty");
  llvm::StringRef rest = cell.drop_while(llvm::isDigit);
  llvm::StringRef stageDigits = cell.take_front(cell.size() - rest.size());
  if (stageDigits.empty())
    return badAction(cell, "it does not start with a stage index");
  std::optional<int64_t> stage = parseIndex(stageDigits);
  if (!stage)
    return badAction(cell,
                     "the stage index is above " + llvm::Twine(kMaxIndex));
  if (rest.starts_with("BW"))
    return badAction(cell, "BW is torch 2.5's spelling of a full backward; "
                           "torch 2.6 and later, like titan, write it B, and "
                           "2.5's input-only B as I");
  const auto *kind = llvm::find_if(kKindNames, [&](const auto &entry) {
    return rest.starts_with(entry.second);
  });
  if (kind == std::end(kKindNames))
    return badAction(cell, "'" + rest + "' does not start with a kind");
  llvm::StringRef microbatchDigits = rest.drop_front(kind->second.size());
  PipelineAction action{*stage, kind->first, std::nullopt};
  if (microbatchDigits.empty()) {
    if (!mayOmitMicrobatch(action.kind))
      return badAction(cell, llvm::Twine(kind->second) +
                                 " needs a microbatch index after the kind");
    return action;
  }
  if (!llvm::all_of(microbatchDigits, llvm::isDigit))
    return badAction(cell, "'" + microbatchDigits +
                               "' after the kind is not a microbatch index");
  action.microbatch = parseIndex(microbatchDigits);
  if (!action.microbatch)
    return badAction(cell,
                     "the microbatch index is above " + llvm::Twine(kMaxIndex));
  return action;
}

llvm::StringRef mlir::titan::getStagePlacementName(StagePlacement placement) {
  return placement == StagePlacement::V ? "v" : "loop";
}

int64_t PipelineSchedule::getRankOfStage(int64_t stage) const {
  if (placement == StagePlacement::V && stage >= numRanks)
    return 2 * numRanks - 1 - stage;
  return stage % numRanks;
}

llvm::SmallVector<int64_t>
PipelineSchedule::getStagesOfRank(int64_t rank) const {
  llvm::SmallVector<int64_t> stages;
  for (int64_t stage = 0; stage < getNumStages(); ++stage)
    if (getRankOfStage(stage) == rank)
      stages.push_back(stage);
  return stages;
}

bool PipelineSchedule::hasCommunication() const {
  return llvm::any_of(ranks, [](const auto &actions) {
    return llvm::any_of(actions, [](const PipelineAction &action) {
      return isCommunicationAction(action.kind);
    });
  });
}
