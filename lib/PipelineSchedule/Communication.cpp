//===- Communication.cpp - adding sends and receives to a schedule --------===//
//
// insertCommunication, after torch's _add_send_recv: the ranks are visited
// in turn; a rank takes its next compute action once that action's input is
// on the rank (its receive placed, or its producer done on the same rank),
// and appends the send right after a compute whose output another rank
// needs, while the matching receive goes to the end of the consumer's list
// at that moment. A receive therefore always follows its send in the order
// the lists grew, which is a valid execution when sends do not block.
//
//===----------------------------------------------------------------------===//

#include "Detail.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <vector>

using namespace mlir;
using namespace mlir::titan;

namespace {

using Kind = PipelineActionKind;

/// The state of one insertion.
class Inserter {
public:
  explicit Inserter(const PipelineSchedule &schedule)
      : schedule(schedule),
        size(schedule.getNumStages() * schedule.numMicrobatches),
        forwardDone(size), backwardDone(size), forwardReceived(size),
        backwardReceived(size) {}

  /// The schedule with its transfers, or why the order cannot get them.
  llvm::Expected<PipelineSchedule> run();

private:
  /// The index of (stage, microbatch) in the per-pair tables.
  int64_t indexOf(int64_t stage, int64_t microbatch) const {
    return stage * schedule.numMicrobatches + microbatch;
  }
  /// Whether `stage` and `other` are on one rank.
  bool sameRank(int64_t stage, int64_t other) const {
    return schedule.getRankOfStage(stage) == schedule.getRankOfStage(other);
  }
  /// Whether `action`'s input is on its rank in the lists built so far.
  bool isReady(const PipelineAction &action) const;
  /// Appends `action` to `rank`'s list, with its send, and its receive to
  /// the consumer's list.
  void place(int64_t rank, const PipelineAction &action);

  /// The compute-only input and the schedule being built.
  const PipelineSchedule &schedule;
  PipelineSchedule result;
  /// Stages x microbatches.
  int64_t size;
  /// Per (stage, microbatch): F placed; B or I placed; RECV_F and RECV_B
  /// placed on the stage's rank.
  std::vector<bool> forwardDone, backwardDone, forwardReceived,
      backwardReceived;
};

} // namespace

bool Inserter::isReady(const PipelineAction &action) const {
  int64_t stage = action.stage;
  switch (action.kind) {
  case Kind::Forward: {
    if (stage == 0)
      return true;
    int64_t index = indexOf(stage, *action.microbatch);
    return sameRank(stage, stage - 1)
               ? forwardDone[index - schedule.numMicrobatches]
               : forwardReceived[index];
  }
  case Kind::Backward:
  case Kind::BackwardInput: {
    if (stage == schedule.getNumStages() - 1)
      return true;
    int64_t index = indexOf(stage, *action.microbatch);
    return sameRank(stage, stage + 1)
               ? backwardDone[index + schedule.numMicrobatches]
               : backwardReceived[index];
  }
  default:
    return true;
  }
}

void Inserter::place(int64_t rank, const PipelineAction &action) {
  result.ranks[rank].push_back(action);
  bool forward = action.kind == Kind::Forward;
  if (!forward && action.kind != Kind::Backward &&
      action.kind != Kind::BackwardInput)
    return;
  int64_t microbatch = *action.microbatch;
  (forward ? forwardDone : backwardDone)[indexOf(action.stage, microbatch)] =
      true;
  int64_t peer = forward ? action.stage + 1 : action.stage - 1;
  if (peer < 0 || peer >= schedule.getNumStages() ||
      sameRank(action.stage, peer))
    return;
  result.ranks[rank].push_back(
      {action.stage, forward ? Kind::SendForward : Kind::SendBackward,
       microbatch});
  result.ranks[schedule.getRankOfStage(peer)].push_back(
      {peer, forward ? Kind::RecvForward : Kind::RecvBackward, microbatch});
  (forward ? forwardReceived : backwardReceived)[indexOf(peer, microbatch)] =
      true;
}

llvm::Expected<PipelineSchedule> Inserter::run() {
  result = schedule;
  for (auto &actions : result.ranks)
    actions.clear();
  llvm::SmallVector<size_t> next(schedule.numRanks, 0);
  while (true) {
    bool remaining = false, progress = false;
    for (int64_t rank = 0; rank < schedule.numRanks; ++rank) {
      const auto &actions = schedule.ranks[rank];
      if (next[rank] == actions.size())
        continue;
      remaining = true;
      if (!isReady(actions[next[rank]]))
        continue;
      place(rank, actions[next[rank]++]);
      progress = true;
    }
    if (!remaining)
      return std::move(result);
    if (progress)
      continue;
    std::string stuck;
    for (int64_t rank = 0; rank < schedule.numRanks; ++rank)
      if (next[rank] < schedule.ranks[rank].size())
        stuck += llvm::formatv(
            "{0}rank {1} at cell {2} '{3}'", stuck.empty() ? "" : "; ", rank,
            next[rank], formatPipelineAction(schedule.ranks[rank][next[rank]]));
    return detail::scheduleError(
        "cannot add sends and receives: the order waits in a cycle, every "
        "rank's next action needing an input that a later action produces: " +
        stuck);
  }
}

llvm::Expected<PipelineSchedule>
mlir::titan::insertCommunication(const PipelineSchedule &schedule) {
  if (llvm::Error error = verifyPipelineSchedule(schedule))
    return std::move(error);
  for (int64_t rank = 0; rank < schedule.numRanks; ++rank)
    for (auto [cell, action] : llvm::enumerate(schedule.ranks[rank]))
      if (isCommunicationAction(action.kind))
        return detail::cellError(
            rank, cell, action,
            "the schedule already has sends and receives: "
            "insertCommunication takes a compute-only schedule");
  return Inserter(schedule).run();
}
