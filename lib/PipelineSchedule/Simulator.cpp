//===- Simulator.cpp - timing a pipeline schedule -------------------------===//
//
// See include/titan/PipelineSchedule/Simulator.h. The ranks are advanced in
// turn, each as far as its next action's inputs are known; an action's
// times depend only on its rank's previous action and on its inputs, so the
// result does not depend on the turn order. No rank advancing while some
// have actions left means the order waits in a cycle.
//
//===----------------------------------------------------------------------===//

#include "titan/PipelineSchedule/Simulator.h"

#include "Detail.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <array>
#include <cmath>
#include <limits>
#include <vector>

using namespace mlir;
using namespace mlir::titan;
using llvm::formatv;

namespace {

using Kind = PipelineActionKind;

/// The times kept per (stage, microbatch).
enum Event : unsigned {
  /// The end of its F; of its B or I; of its I.
  kForwardEnd,
  kGradientEnd,
  kInputEnd,
  /// When its SEND_F, SEND_B, RECV_F and RECV_B were posted.
  kSendForward,
  kSendBackward,
  kRecvForward,
  kRecvBackward,
  kNumEvents
};

/// The time an action's inputs are ready, or what it still waits for.
struct Readiness {
  std::optional<double> seconds;
  std::string waitsFor;
};

/// One simulation.
class Simulation {
public:
  Simulation(const PipelineSchedule &schedule, const PipelineCosts &costs,
             ReceiveMode receives)
      : schedule(schedule), costs(costs), receives(receives),
        transfers(schedule.hasCommunication()) {}

  /// The simulated step, or the deadlock that prevents it.
  llvm::Expected<PipelineSimulation> run();

private:
  /// The time of `event` of (stage, microbatch); NaN until it happens.
  double &at(int64_t stage, int64_t microbatch, Event event) {
    return times[stage * schedule.numMicrobatches + microbatch][event];
  }
  /// `event` of (stage, microbatch) plus `delay`, or what the action waits
  /// for, named `producer`.
  Readiness after(int64_t stage, int64_t microbatch, Event event, double delay,
                  const llvm::Twine &producer);
  /// When the activation (`forward`) or gradient that (stage, microbatch)
  /// receives arrives.
  Readiness getArrival(int64_t stage, int64_t microbatch, bool forward);
  /// When `action`'s inputs are ready.
  Readiness getReadiness(const PipelineAction &action);
  /// The seconds `action` computes.
  double getDuration(const PipelineAction &action) const;
  /// Keeps the times of `timed` that other actions wait for.
  void record(const TimedAction &timed);
  /// Fills in `timeline`'s memory samples and peak.
  void measureMemory(int64_t rank, RankTimeline &timeline) const;
  /// The error for ranks stuck at `next`.
  llvm::Error describeDeadlock(llvm::ArrayRef<size_t> next);

  const PipelineSchedule &schedule;
  const PipelineCosts &costs;
  ReceiveMode receives;
  /// Whether the schedule has SEND/RECV actions.
  bool transfers;
  /// Per (stage, microbatch), the time of each event.
  std::vector<std::array<double, kNumEvents>> times;
};

} // namespace

Readiness Simulation::after(int64_t stage, int64_t microbatch, Event event,
                            double delay, const llvm::Twine &producer) {
  double time = at(stage, microbatch, event);
  if (std::isnan(time))
    return {std::nullopt, formatv("{0} on rank {1}", producer.str(),
                                  schedule.getRankOfStage(stage))
                              .str()};
  return {time + delay, ""};
}

/// The name of an action on (stage, microbatch) in messages ("1RECV_F0").
static std::string getName(int64_t stage, llvm::StringRef kind,
                           int64_t microbatch) {
  return formatv("{0}{1}{2}", stage, kind, microbatch).str();
}

Readiness Simulation::getArrival(int64_t stage, int64_t microbatch,
                                 bool forward) {
  int64_t peer = forward ? stage - 1 : stage + 1;
  Readiness recv =
      after(stage, microbatch, forward ? kRecvForward : kRecvBackward, 0,
            getName(stage, forward ? "RECV_F" : "RECV_B", microbatch));
  Readiness send =
      after(peer, microbatch, forward ? kSendForward : kSendBackward, 0,
            getName(peer, forward ? "SEND_F" : "SEND_B", microbatch));
  if (!recv.seconds)
    return recv;
  if (!send.seconds)
    return send;
  return {std::max(*recv.seconds, *send.seconds) + costs.transferSeconds, ""};
}

Readiness Simulation::getReadiness(const PipelineAction &action) {
  int64_t s = action.stage;
  int64_t m = action.microbatch.value_or(0);
  int64_t last = schedule.getNumStages() - 1;
  auto name = [&](int64_t stage, llvm::StringRef kind) {
    return getName(stage, kind, m);
  };
  auto crosses = [&](int64_t other) {
    return schedule.getRankOfStage(s) != schedule.getRankOfStage(other);
  };
  switch (action.kind) {
  case Kind::Forward:
    if (s == 0)
      return {0.0, ""};
    if (!crosses(s - 1))
      return after(s - 1, m, kForwardEnd, 0, name(s - 1, "F"));
    if (transfers)
      return getArrival(s, m, /*forward=*/true);
    return after(s - 1, m, kForwardEnd, costs.transferSeconds,
                 name(s - 1, "F"));
  case Kind::Backward:
  case Kind::BackwardInput: {
    Readiness own = after(s, m, kForwardEnd, 0, name(s, "F"));
    if (!own.seconds || s == last)
      return own;
    std::string next = name(s + 1, "B") + " or " + name(s + 1, "I");
    Readiness input = !crosses(s + 1) ? after(s + 1, m, kGradientEnd, 0, next)
                      : transfers     ? getArrival(s, m, /*forward=*/false)
                                      : after(s + 1, m, kGradientEnd,
                                              costs.transferSeconds, next);
    if (input.seconds)
      input.seconds = std::max(*input.seconds, *own.seconds);
    return input;
  }
  case Kind::BackwardWeight:
    return after(s, m, kInputEnd, 0, name(s, "I"));
  case Kind::RecvForward:
  case Kind::RecvBackward:
    // A blocking receive waits for its send; a posted one for nothing.
    if (receives == ReceiveMode::Posted)
      return {0.0, ""};
    if (action.kind == Kind::RecvForward)
      return after(s - 1, m, kSendForward, 0, name(s - 1, "SEND_F"));
    return after(s + 1, m, kSendBackward, 0, name(s + 1, "SEND_B"));
  default:
    return {0.0, ""};
  }
}

double Simulation::getDuration(const PipelineAction &action) const {
  const StageCost &cost = costs.stages[action.stage];
  switch (action.kind) {
  case Kind::Forward:
    return cost.forwardSeconds;
  case Kind::Backward:
    return cost.backwardInputSeconds + cost.backwardWeightSeconds;
  case Kind::BackwardInput:
    return cost.backwardInputSeconds;
  case Kind::BackwardWeight:
    return cost.backwardWeightSeconds;
  default:
    return 0;
  }
}

void Simulation::record(const TimedAction &timed) {
  const PipelineAction &action = timed.action;
  if (!action.microbatch)
    return;
  auto set = [&](Event event, double time) {
    at(action.stage, *action.microbatch, event) = time;
  };
  switch (action.kind) {
  case Kind::Forward:
    return set(kForwardEnd, timed.endSeconds);
  case Kind::BackwardInput:
    set(kInputEnd, timed.endSeconds);
    [[fallthrough]];
  case Kind::Backward:
    return set(kGradientEnd, timed.endSeconds);
  case Kind::SendForward:
    return set(kSendForward, timed.startSeconds);
  case Kind::SendBackward:
    return set(kSendBackward, timed.startSeconds);
  case Kind::RecvForward:
    return set(kRecvForward, timed.startSeconds);
  case Kind::RecvBackward:
    return set(kRecvBackward, timed.startSeconds);
  default:
    return;
  }
}

void Simulation::measureMemory(int64_t rank, RankTimeline &timeline) const {
  double bytes =
      costs.staticBytesPerRank.empty() ? 0 : costs.staticBytesPerRank[rank];
  timeline.memory.push_back({0, bytes});
  timeline.peakBytes = bytes;
  for (const TimedAction &timed : timeline.actions) {
    const StageCost &cost = costs.stages[timed.action.stage];
    double change = 0, when = timed.endSeconds;
    switch (timed.action.kind) {
    case Kind::Forward:
      change = cost.activationBytes;
      when = timed.startSeconds;
      break;
    case Kind::Backward:
      change = -cost.activationBytes;
      break;
    case Kind::BackwardInput:
      change = -cost.backwardInputFreedBytes;
      break;
    case Kind::BackwardWeight:
      change = cost.backwardInputFreedBytes - cost.activationBytes;
      break;
    default:
      break;
    }
    if (change == 0)
      continue;
    bytes += change;
    timeline.memory.push_back({when, bytes});
    if (bytes > timeline.peakBytes) {
      timeline.peakBytes = bytes;
      timeline.peakSeconds = when;
    }
  }
}

llvm::Error Simulation::describeDeadlock(llvm::ArrayRef<size_t> next) {
  std::string stuck;
  for (int64_t rank = 0; rank < schedule.numRanks; ++rank) {
    if (next[rank] == schedule.ranks[rank].size())
      continue;
    const PipelineAction &action = schedule.ranks[rank][next[rank]];
    stuck +=
        formatv("{0}rank {1} is stuck at cell {2} '{3}', waiting for {4}",
                stuck.empty() ? "" : "; ", rank, next[rank],
                formatPipelineAction(action), getReadiness(action).waitsFor);
  }
  return detail::scheduleError(
      "the pipeline schedule cannot complete: its ranks wait for each other "
      "in a cycle: " +
      stuck);
}

llvm::Expected<PipelineSimulation> Simulation::run() {
  std::array<double, kNumEvents> unknown;
  unknown.fill(std::numeric_limits<double>::quiet_NaN());
  times.assign(schedule.getNumStages() * schedule.numMicrobatches, unknown);
  PipelineSimulation result;
  result.ranks.resize(schedule.numRanks);
  llvm::SmallVector<size_t> next(schedule.numRanks, 0);
  llvm::SmallVector<double> free(schedule.numRanks, 0.0);
  while (true) {
    bool remaining = false, progress = false;
    for (int64_t rank = 0; rank < schedule.numRanks; ++rank) {
      const auto &actions = schedule.ranks[rank];
      while (next[rank] < actions.size()) {
        const PipelineAction &action = actions[next[rank]];
        Readiness ready = getReadiness(action);
        if (!ready.seconds)
          break;
        TimedAction timed{action, free[rank], 0};
        if (action.kind == Kind::RecvForward ||
            action.kind == Kind::RecvBackward) {
          // Posted at once; a blocking one holds the rank until the data,
          // whose transfer starts once both sides are posted, has arrived.
          timed.endSeconds = receives == ReceiveMode::Posted
                                 ? free[rank]
                                 : std::max(free[rank], *ready.seconds) +
                                       costs.transferSeconds;
        } else {
          timed.startSeconds = std::max(free[rank], *ready.seconds);
          timed.endSeconds = timed.startSeconds + getDuration(action);
        }
        free[rank] = timed.endSeconds;
        record(timed);
        result.ranks[rank].actions.push_back(timed);
        if (isComputeAction(action.kind))
          result.ranks[rank].busySeconds += getDuration(action);
        ++next[rank];
        progress = true;
      }
      remaining |= next[rank] < actions.size();
    }
    if (!remaining)
      break;
    if (!progress)
      return describeDeadlock(next);
  }
  result.stepSeconds = *llvm::max_element(free);
  for (auto [rank, timeline] : llvm::enumerate(result.ranks)) {
    if (result.stepSeconds > 0)
      timeline.bubbleFraction =
          (result.stepSeconds - timeline.busySeconds) / result.stepSeconds;
    result.averageBubbleFraction +=
        timeline.bubbleFraction / static_cast<double>(schedule.numRanks);
    measureMemory(rank, timeline);
  }
  return result;
}

/// `value` as printf's %g writes it, for messages.
static std::string formatNumber(double value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.10g", value);
  return text;
}

/// Checks that `costs` fit `schedule` and are finite and non-negative.
static llvm::Error verifyCosts(const PipelineSchedule &schedule,
                               const PipelineCosts &costs) {
  auto invalid = [](const llvm::Twine &message) {
    return detail::scheduleError("pipeline costs: " + message);
  };
  auto bad = [](double value) { return !std::isfinite(value) || value < 0; };
  if (static_cast<int64_t>(costs.stages.size()) != schedule.getNumStages())
    return invalid(formatv("{0} stage costs for a schedule of {1} stages: "
                           "give one per stage",
                           costs.stages.size(), schedule.getNumStages()));
  for (auto [stage, cost] : llvm::enumerate(costs.stages)) {
    for (auto [value, field] :
         {std::pair(cost.forwardSeconds, "forwardSeconds"),
          std::pair(cost.backwardInputSeconds, "backwardInputSeconds"),
          std::pair(cost.backwardWeightSeconds, "backwardWeightSeconds"),
          std::pair(cost.activationBytes, "activationBytes"),
          std::pair(cost.backwardInputFreedBytes, "backwardInputFreedBytes")})
      if (bad(value))
        return invalid(formatv("stage {0}: {1} is {2}; it must be finite and "
                               "non-negative",
                               stage, field, formatNumber(value)));
    if (cost.backwardInputFreedBytes > cost.activationBytes)
      return invalid(formatv("stage {0}: backwardInputFreedBytes ({1}) "
                             "exceeds activationBytes ({2}): an I frees part "
                             "of what the F kept",
                             stage, formatNumber(cost.backwardInputFreedBytes),
                             formatNumber(cost.activationBytes)));
  }
  if (bad(costs.transferSeconds))
    return invalid(formatv("transferSeconds is {0}; it must be finite and "
                           "non-negative",
                           formatNumber(costs.transferSeconds)));
  if (!costs.staticBytesPerRank.empty() &&
      static_cast<int64_t>(costs.staticBytesPerRank.size()) !=
          schedule.numRanks)
    return invalid(formatv("{0} static byte counts for {1} pp ranks: give "
                           "one per rank, or none",
                           costs.staticBytesPerRank.size(), schedule.numRanks));
  for (auto [rank, bytes] : llvm::enumerate(costs.staticBytesPerRank))
    if (bad(bytes))
      return invalid(formatv("rank {0}: static bytes are {1}; they must be "
                             "finite and non-negative",
                             rank, formatNumber(bytes)));
  return llvm::Error::success();
}

llvm::Expected<PipelineSimulation>
mlir::titan::simulatePipeline(const PipelineSchedule &schedule,
                              const PipelineCosts &costs,
                              ReceiveMode receives) {
  if (llvm::Error error = verifyPipelineSchedule(schedule))
    return std::move(error);
  if (llvm::Error error = verifyCosts(schedule, costs))
    return std::move(error);
  return Simulation(schedule, costs, receives).run();
}
