//===- Verify.cpp - checking a pipeline schedule --------------------------===//
//
// verifyPipelineSchedule: every action in range and on its stage's rank,
// every (stage, microbatch) computed exactly once in a valid order, and, in
// a schedule with transfers, exactly the sends and receives that
// insertCommunication would add, each on the right side of its compute.
//
//===----------------------------------------------------------------------===//

#include "Detail.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <array>

using namespace mlir;
using namespace mlir::titan;
using llvm::formatv;

llvm::Error mlir::titan::detail::scheduleError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error mlir::titan::detail::cellError(int64_t rank, int64_t cell,
                                           const PipelineAction &action,
                                           const llvm::Twine &problem) {
  return scheduleError(formatv("rank {0}, cell {1} '{2}': ", rank, cell,
                               formatPipelineAction(action)) +
                       problem);
}

namespace {

/// The (stage, microbatch) pairs a schedule may have whatever its actions:
/// above this, it must have one F per pair.
constexpr int64_t kSmallSchedule = int64_t(1) << 20;

/// The actions recorded per (stage, microbatch), one of each at most.
enum Slot : unsigned {
  kF,
  kB,
  kI,
  kW,
  kSendF,
  kRecvF,
  kSendB,
  kRecvB,
  kNumSlots
};

/// The slot of `kind`; none for UNSHARD, RESHARD and REDUCE_GRAD.
std::optional<Slot> getSlot(PipelineActionKind kind) {
  switch (kind) {
  case PipelineActionKind::Forward:
    return kF;
  case PipelineActionKind::Backward:
    return kB;
  case PipelineActionKind::BackwardInput:
    return kI;
  case PipelineActionKind::BackwardWeight:
    return kW;
  case PipelineActionKind::SendForward:
    return kSendF;
  case PipelineActionKind::RecvForward:
    return kRecvF;
  case PipelineActionKind::SendBackward:
    return kSendB;
  case PipelineActionKind::RecvBackward:
    return kRecvB;
  case PipelineActionKind::Unshard:
  case PipelineActionKind::Reshard:
  case PipelineActionKind::ReduceGrad:
    return std::nullopt;
  }
  llvm_unreachable("unknown pipeline action kind");
}

/// One verification of one schedule.
class Verifier {
public:
  Verifier(const PipelineSchedule &schedule,
           llvm::ArrayRef<llvm::SmallVector<int64_t, 0>> cells)
      : schedule(schedule), cells(cells) {}

  /// Success, or the first problem found.
  llvm::Error run();

private:
  /// Index in its rank's list of `slot` of (stage, microbatch), -1 if none.
  int64_t &at(int64_t stage, int64_t microbatch, Slot slot) {
    return positions[stage * schedule.numMicrobatches + microbatch][slot];
  }
  /// The cell that action `index` of `rank` is named by.
  int64_t cellOf(int64_t rank, int64_t index) const {
    return cells.empty() ? index : cells[rank][index];
  }
  /// An error about action `index` of `rank`.
  llvm::Error errorAt(int64_t rank, int64_t index, const llvm::Twine &problem) {
    return detail::cellError(rank, cellOf(rank, index),
                             schedule.ranks[rank][index], problem);
  }
  /// Whether `stage` and `other` exist and sit on different ranks.
  bool crossesRanks(int64_t stage, int64_t other) const {
    return other >= 0 && other < schedule.getNumStages() &&
           schedule.getRankOfStage(stage) != schedule.getRankOfStage(other);
  }

  /// The counts and the placement's stages per rank.
  llvm::Error checkShape();
  /// Action `index` of `rank`: in range, on its rank, not a duplicate nor
  /// a second kind of backward; records its position.
  llvm::Error checkAction(int64_t rank, int64_t index);
  /// That the transfer at `index` of `rank` crosses two ranks.
  llvm::Error checkTransferIsNeeded(int64_t rank, int64_t index);
  /// The F, backward and W of (stage, microbatch), present and in order.
  llvm::Error checkCompute(int64_t stage, int64_t microbatch);
  /// The sends and receives of (stage, microbatch)'s outputs.
  llvm::Error checkTransfers(int64_t stage, int64_t microbatch);

  const PipelineSchedule &schedule;
  /// The cell names of the actions (see detail::verifySchedule).
  llvm::ArrayRef<llvm::SmallVector<int64_t, 0>> cells;
  /// Per (stage, microbatch), the position of each slot in its rank's list.
  std::vector<std::array<int64_t, kNumSlots>> positions;
};

} // namespace

llvm::Error Verifier::checkShape() {
  if (schedule.numRanks < 1 || schedule.stagesPerRank < 1 ||
      schedule.numMicrobatches < 1)
    return detail::scheduleError(formatv(
        "a pipeline schedule needs at least one rank, one stage per rank and "
        "one microbatch; got {0} ranks, {1} stages per rank, {2} microbatches",
        schedule.numRanks, schedule.stagesPerRank, schedule.numMicrobatches));
  if (schedule.placement == StagePlacement::V && schedule.stagesPerRank != 2)
    return detail::scheduleError(
        formatv("the v placement puts two stages on each rank; this schedule "
                "has {0} stages per rank",
                schedule.stagesPerRank));
  if (static_cast<int64_t>(schedule.ranks.size()) != schedule.numRanks)
    return detail::scheduleError(
        formatv("the schedule has {0} action lists for {1} pp ranks: it needs "
                "one list per rank",
                schedule.ranks.size(), schedule.numRanks));
  // The tables below hold every (stage, microbatch): as many as the F
  // actions of a valid schedule. Sizes the actions cannot fill are refused
  // before they are allocated.
  int64_t forwards = 0;
  for (const auto &actions : schedule.ranks)
    forwards += llvm::count_if(actions, [](const PipelineAction &action) {
      return action.kind == PipelineActionKind::Forward;
    });
  int64_t pairs = std::max<int64_t>(forwards, kSmallSchedule);
  if (schedule.stagesPerRank > pairs / schedule.numRanks ||
      schedule.numMicrobatches > pairs / schedule.getNumStages())
    return detail::scheduleError(
        formatv("the schedule has {0} stages per rank on {1} ranks and {2} "
                "microbatches but only {3} F actions: every stage needs one F "
                "per microbatch",
                schedule.stagesPerRank, schedule.numRanks,
                schedule.numMicrobatches, forwards));
  return llvm::Error::success();
}

llvm::Error Verifier::checkTransferIsNeeded(int64_t rank, int64_t index) {
  const PipelineAction &action = schedule.ranks[rank][index];
  bool forward = action.kind == PipelineActionKind::SendForward ||
                 action.kind == PipelineActionKind::RecvBackward;
  // A forward send and a backward receive face the next stage, the others
  // the previous one.
  int64_t peer = forward ? action.stage + 1 : action.stage - 1;
  if (peer < 0 || peer >= schedule.getNumStages())
    return errorAt(rank, index,
                   formatv("stage {0} is the {1} stage: it has no {2} "
                           "neighbour to exchange with",
                           action.stage, forward ? "last" : "first",
                           forward ? "next" : "previous"));
  if (!crossesRanks(action.stage, peer))
    return errorAt(rank, index,
                   formatv("stages {0} and {1} are both on rank {2}: nothing "
                           "is sent between them",
                           std::min(action.stage, peer),
                           std::max(action.stage, peer), rank));
  return llvm::Error::success();
}

llvm::Error Verifier::checkAction(int64_t rank, int64_t index) {
  const PipelineAction &action = schedule.ranks[rank][index];
  if (action.stage < 0 || action.stage >= schedule.getNumStages())
    return errorAt(rank, index,
                   formatv("stage {0} is out of range: the schedule has {1} "
                           "stages ({2} ranks x {3} per rank)",
                           action.stage, schedule.getNumStages(),
                           schedule.numRanks, schedule.stagesPerRank));
  int64_t owner = schedule.getRankOfStage(action.stage);
  if (owner != rank)
    return errorAt(rank, index,
                   formatv("stage {0} runs on rank {1} under the {2} "
                           "placement, not on rank {3}",
                           action.stage, owner,
                           getStagePlacementName(schedule.placement), rank));
  std::optional<Slot> slot = getSlot(action.kind);
  if (!slot)
    return llvm::Error::success();
  llvm::StringRef kind = getPipelineActionKindName(action.kind);
  if (!action.microbatch)
    return errorAt(rank, index, kind + " needs a microbatch");
  int64_t microbatch = *action.microbatch;
  if (microbatch < 0 || microbatch >= schedule.numMicrobatches)
    return errorAt(rank, index,
                   formatv("microbatch {0} is out of range: the schedule has "
                           "{1} microbatches (0 to {2})",
                           microbatch, schedule.numMicrobatches,
                           schedule.numMicrobatches - 1));
  if (isCommunicationAction(action.kind))
    if (llvm::Error error = checkTransferIsNeeded(rank, index))
      return error;
  int64_t &position = at(action.stage, microbatch, *slot);
  if (position >= 0)
    return errorAt(rank, index,
                   formatv("a second {0} for stage {1} microbatch {2} (the "
                           "first is cell {3})",
                           kind, action.stage, microbatch,
                           cellOf(rank, position)));
  // A microbatch's backward is one B, or one I and one W.
  for (auto [mine, theirs, theirName] :
       {std::tuple(kB, kI, "an I"), std::tuple(kB, kW, "a W"),
        std::tuple(kI, kB, "a B"), std::tuple(kW, kB, "a B")}) {
    int64_t other = at(action.stage, microbatch, theirs);
    if (*slot == mine && other >= 0)
      return errorAt(rank, index,
                     formatv("stage {0} microbatch {1} already has {2} (cell "
                             "{3}): a microbatch's backward is one B, or one "
                             "I and one W",
                             action.stage, microbatch, theirName,
                             cellOf(rank, other)));
  }
  position = index;
  return llvm::Error::success();
}

llvm::Error Verifier::checkCompute(int64_t stage, int64_t microbatch) {
  int64_t rank = schedule.getRankOfStage(stage);
  int64_t forward = at(stage, microbatch, kF);
  int64_t full = at(stage, microbatch, kB);
  int64_t input = at(stage, microbatch, kI);
  int64_t weight = at(stage, microbatch, kW);
  if (forward < 0)
    return detail::scheduleError(
        formatv("rank {0}: stage {1} microbatch {2} has no F", rank, stage,
                microbatch));
  if (full < 0 && input < 0) {
    if (weight >= 0)
      return errorAt(rank, weight,
                     formatv("a W for stage {0} microbatch {1}, which has no "
                             "I: a W follows its I",
                             stage, microbatch));
    return detail::scheduleError(
        formatv("rank {0}: stage {1} microbatch {2} has no backward: it needs "
                "one B, or one I and one W",
                rank, stage, microbatch));
  }
  if (input >= 0 && weight < 0)
    return detail::scheduleError(
        formatv("rank {0}: stage {1} microbatch {2} has an I (cell {3}) but "
                "no W",
                rank, stage, microbatch, cellOf(rank, input)));
  int64_t backward = full >= 0 ? full : input;
  if (backward < forward)
    return errorAt(rank, backward,
                   formatv("the backward of stage {0} microbatch {1} comes "
                           "before its F (cell {2})",
                           stage, microbatch, cellOf(rank, forward)));
  if (weight >= 0 && weight < input)
    return errorAt(rank, weight,
                   formatv("the W of stage {0} microbatch {1} comes before "
                           "its I (cell {2})",
                           stage, microbatch, cellOf(rank, input)));
  return llvm::Error::success();
}

llvm::Error Verifier::checkTransfers(int64_t stage, int64_t microbatch) {
  int64_t rank = schedule.getRankOfStage(stage);
  // The producer on `stage`, its send, the consumer on `peer` and its
  // receive, for the activation going forward and the gradient going back.
  struct Edge {
    int64_t peer;
    Slot send, recv;
    const char *sendName, *recvName, *what;
  };
  for (const Edge &edge :
       {Edge{stage + 1, kSendF, kRecvF, "SEND_F", "RECV_F", "F"},
        Edge{stage - 1, kSendB, kRecvB, "SEND_B", "RECV_B", "backward"}}) {
    if (!crossesRanks(stage, edge.peer))
      continue;
    bool forward = edge.send == kSendF;
    auto computeOf = [&](int64_t onStage) {
      return forward ? at(onStage, microbatch, kF)
                     : std::max(at(onStage, microbatch, kB),
                                at(onStage, microbatch, kI));
    };
    int64_t peerRank = schedule.getRankOfStage(edge.peer);
    int64_t producer = computeOf(stage);
    int64_t send = at(stage, microbatch, edge.send);
    if (send < 0)
      return detail::scheduleError(formatv(
          "rank {0}: no {1} for stage {2} microbatch {3}: its {4} (cell {5}) "
          "feeds stage {6} on rank {7}",
          rank, edge.sendName, stage, microbatch, edge.what,
          cellOf(rank, producer), edge.peer, peerRank));
    if (send < producer)
      return errorAt(rank, send,
                     formatv("the send comes before the {0} that produces it "
                             "(cell {1})",
                             edge.what, cellOf(rank, producer)));
    int64_t consumer = computeOf(edge.peer);
    int64_t recv = at(edge.peer, microbatch, edge.recv);
    if (recv < 0)
      return detail::scheduleError(formatv(
          "rank {0}: no {1} for stage {2} microbatch {3}: its {4} (cell {5}) "
          "needs what stage {6} on rank {7} sends",
          peerRank, edge.recvName, edge.peer, microbatch, edge.what,
          cellOf(peerRank, consumer), stage, rank));
    if (recv > consumer)
      return errorAt(peerRank, recv,
                     formatv("the receive comes after the {0} that needs it "
                             "(cell {1})",
                             edge.what, cellOf(peerRank, consumer)));
  }
  return llvm::Error::success();
}

llvm::Error Verifier::run() {
  if (llvm::Error error = checkShape())
    return error;
  std::array<int64_t, kNumSlots> none;
  none.fill(-1);
  positions.assign(schedule.getNumStages() * schedule.numMicrobatches, none);
  for (int64_t rank = 0; rank < schedule.numRanks; ++rank)
    for (int64_t index = 0,
                 e = static_cast<int64_t>(schedule.ranks[rank].size());
         index < e; ++index)
      if (llvm::Error error = checkAction(rank, index))
        return error;
  // Every compute first: the transfers of a stage look at its neighbours'.
  for (int64_t stage = 0; stage < schedule.getNumStages(); ++stage)
    for (int64_t microbatch = 0; microbatch < schedule.numMicrobatches;
         ++microbatch)
      if (llvm::Error error = checkCompute(stage, microbatch))
        return error;
  if (!schedule.hasCommunication())
    return llvm::Error::success();
  for (int64_t stage = 0; stage < schedule.getNumStages(); ++stage)
    for (int64_t microbatch = 0; microbatch < schedule.numMicrobatches;
         ++microbatch)
      if (llvm::Error error = checkTransfers(stage, microbatch))
        return error;
  return llvm::Error::success();
}

llvm::Error mlir::titan::detail::verifySchedule(
    const PipelineSchedule &schedule,
    llvm::ArrayRef<llvm::SmallVector<int64_t, 0>> cells) {
  return Verifier(schedule, cells).run();
}

llvm::Error
mlir::titan::verifyPipelineSchedule(const PipelineSchedule &schedule) {
  return detail::verifySchedule(schedule, {});
}
