//===- Generators.cpp - torch's pipeline schedules ------------------------===//
//
// The compute order of each rank in torch.distributed.pipelining's
// schedules (torch 2.6-2.7, schedules.py), written from their definitions:
//
//   GPipe        every F, then every B, microbatches in order.
//   1F1B         p - r forwards, then B and F alternating, then the rest of
//                the B (the order of Schedule1F1B._step_microbatches).
//   LoopedBFS    each local stage's F for all microbatches, stages in
//                order; then the B, stages and microbatches in reverse.
//   Interleaved1F1B, InterleavedZeroBubble
//                microbatches go in rounds of m / max(1, m / p); a rank
//                runs (v-1) x round + k x (p-1-r) warm-up forwards (k = 2;
//                1 for zero bubble), then one F and one backward per step,
//                then the remaining backwards. Forward step i works on local
//                stage (i / round) % v, backward step i on local stage
//                v-1 - ((i - warm-up) / round) % v. Zero bubble splits each
//                backward into I and W and, from the r-th backward step on,
//                follows each I with the oldest W still owed.
//   ZBVZeroBubble
//                chunks c0 = r and c1 = 2p-1-r; 2(p-r)-1 forwards of c0;
//                r times (F c1, F c0); p-r times (F c1, I c1, W c1); then
//                (F c0, I c0, W c0, F c1, I c1, W c1) until c0 has had
//                max(m, 2p-1) forwards and c1 caught up (the F c0 only
//                while c0 has forwards left); r times (I c0, I c1); p-r
//                times (I c0, W c0); then the owed W of c1, then of c0.
//                Actions on microbatches >= m are dropped.
//
//===----------------------------------------------------------------------===//

#include "Detail.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <array>
#include <vector>

using namespace mlir;
using namespace mlir::titan;
using llvm::formatv;

/// The schedules in the order of torch's get_schedule_class map.
static constexpr std::pair<PipelineScheduleKind, llvm::StringLiteral>
    kScheduleNames[] = {
        {PipelineScheduleKind::OneFOneB, "1F1B"},
        {PipelineScheduleKind::Interleaved1F1B, "Interleaved1F1B"},
        {PipelineScheduleKind::GPipe, "GPipe"},
        {PipelineScheduleKind::LoopedBFS, "LoopedBFS"},
        {PipelineScheduleKind::InterleavedZeroBubble, "InterleavedZeroBubble"},
        {PipelineScheduleKind::ZBVZeroBubble, "ZBVZeroBubble"},
};

llvm::StringRef
mlir::titan::getPipelineScheduleKindName(PipelineScheduleKind kind) {
  for (const auto &[known, name] : kScheduleNames)
    if (known == kind)
      return name;
  llvm_unreachable("unknown pipeline schedule kind");
}

llvm::Expected<PipelineScheduleKind>
mlir::titan::parsePipelineScheduleKind(llvm::StringRef name) {
  for (const auto &[kind, known] : kScheduleNames)
    if (name.equals_insensitive(known))
      return kind;
  std::string names = llvm::join(
      llvm::map_range(kScheduleNames,
                      [](const auto &entry) { return entry.second.str(); }),
      ", ");
  return detail::scheduleError("unknown pipeline schedule '" + name +
                               "': the known schedules are " + names +
                               " (case does not matter)");
}

StagePlacement mlir::titan::getStagePlacement(PipelineScheduleKind kind) {
  return kind == PipelineScheduleKind::ZBVZeroBubble ? StagePlacement::V
                                                     : StagePlacement::Loop;
}

namespace {

/// Appends one rank's actions, numbering each stage's microbatches per kind
/// in the order they are appended.
class RankBuilder {
public:
  RankBuilder(llvm::SmallVector<PipelineAction, 0> &actions, int64_t numStages)
      : actions(actions), next(numStages, {0, 0, 0, 0}) {}

  /// Appends `kind` for the next microbatch of `stage`.
  void add(int64_t stage, PipelineActionKind kind) {
    int64_t &counter = next[stage][counterOf(kind)];
    actions.push_back({stage, kind, counter++});
  }
  /// How many actions of `kind` `stage` has had.
  int64_t count(int64_t stage, PipelineActionKind kind) const {
    return next[stage][counterOf(kind)];
  }

private:
  /// The counter of `kind`: F, B, I, and W.
  static unsigned counterOf(PipelineActionKind kind) {
    switch (kind) {
    case PipelineActionKind::Forward:
      return 0;
    case PipelineActionKind::Backward:
      return 1;
    case PipelineActionKind::BackwardInput:
      return 2;
    default:
      return 3;
    }
  }

  /// The rank's list, and per stage the next microbatch of each counter.
  llvm::SmallVector<PipelineAction, 0> &actions;
  std::vector<std::array<int64_t, 4>> next;
};

using Kind = PipelineActionKind;

/// Fills `schedule`'s ranks with GPipe's order.
void buildGPipe(PipelineSchedule &schedule) {
  for (int64_t rank = 0; rank < schedule.numRanks; ++rank) {
    RankBuilder builder(schedule.ranks[rank], schedule.getNumStages());
    for (int64_t i = 0; i < schedule.numMicrobatches; ++i)
      builder.add(rank, Kind::Forward);
    for (int64_t i = 0; i < schedule.numMicrobatches; ++i)
      builder.add(rank, Kind::Backward);
  }
}

/// Fills `schedule`'s ranks with 1F1B's order.
void build1F1B(PipelineSchedule &schedule) {
  int64_t m = schedule.numMicrobatches;
  for (int64_t rank = 0; rank < schedule.numRanks; ++rank) {
    RankBuilder builder(schedule.ranks[rank], schedule.getNumStages());
    for (int64_t i = 0, e = std::min(m, schedule.numRanks - rank); i < e; ++i)
      builder.add(rank, Kind::Forward);
    while (builder.count(rank, Kind::Backward) < m) {
      builder.add(rank, Kind::Backward);
      if (builder.count(rank, Kind::Forward) < m)
        builder.add(rank, Kind::Forward);
    }
  }
}

/// Fills `schedule`'s ranks with LoopedBFS's order.
void buildLoopedBFS(PipelineSchedule &schedule) {
  for (int64_t rank = 0; rank < schedule.numRanks; ++rank) {
    llvm::SmallVector<PipelineAction, 0> &actions = schedule.ranks[rank];
    llvm::SmallVector<int64_t> stages = schedule.getStagesOfRank(rank);
    for (int64_t stage : stages)
      for (int64_t i = 0; i < schedule.numMicrobatches; ++i)
        actions.push_back({stage, Kind::Forward, i});
    for (int64_t stage : llvm::reverse(stages))
      for (int64_t i = schedule.numMicrobatches - 1; i >= 0; --i)
        actions.push_back({stage, Kind::Backward, i});
  }
}

/// Fills `schedule`'s ranks with Interleaved1F1B's order, or
/// InterleavedZeroBubble's when `zeroBubble`.
void buildInterleaved(PipelineSchedule &schedule, bool zeroBubble) {
  int64_t p = schedule.numRanks, v = schedule.stagesPerRank;
  int64_t m = schedule.numMicrobatches;
  int64_t perRound = m / std::max<int64_t>(1, m / p);
  int64_t hopFactor = zeroBubble ? 1 : 2;
  Kind backwardKind = zeroBubble ? Kind::BackwardInput : Kind::Backward;
  for (int64_t rank = 0; rank < p; ++rank) {
    RankBuilder builder(schedule.ranks[rank], schedule.getNumStages());
    int64_t warmup =
        std::min((v - 1) * perRound + hopFactor * (p - 1 - rank), m * v);
    auto forwardStage = [&](int64_t step) {
      return (step / perRound) % v * p + rank;
    };
    auto backwardStage = [&](int64_t step) {
      return (v - 1 - (step - warmup) / perRound % v) * p + rank;
    };
    // The steps whose backward has run, in order; a W repeats the oldest
    // one whose W is still owed.
    llvm::SmallVector<int64_t> backwardSteps;
    size_t weightsDone = 0;
    auto addWeight = [&] {
      builder.add(backwardStage(backwardSteps[weightsDone++]),
                  Kind::BackwardWeight);
    };
    for (int64_t step = 0, e = m * v + warmup; step < e; ++step) {
      if (step < m * v)
        builder.add(forwardStage(step), Kind::Forward);
      if (step < warmup)
        continue;
      builder.add(backwardStage(step), backwardKind);
      backwardSteps.push_back(step);
      if (zeroBubble && step - warmup >= rank)
        addWeight();
    }
    while (zeroBubble && weightsDone < backwardSteps.size())
      addWeight();
  }
}

/// Fills `schedule`'s ranks with ZBVZeroBubble's order.
void buildZBV(PipelineSchedule &schedule) {
  int64_t p = schedule.numRanks, m = schedule.numMicrobatches;
  // Torch generates at least 2p-1 microbatches, then drops those >= m.
  int64_t forwards = std::max(m, 2 * p - 1);
  for (int64_t rank = 0; rank < p; ++rank) {
    llvm::SmallVector<PipelineAction, 0> actions;
    RankBuilder builder(actions, schedule.getNumStages());
    int64_t c0 = rank, c1 = 2 * p - 1 - rank;
    auto repeat = [](int64_t times, auto body) {
      for (int64_t i = 0; i < times; ++i)
        body();
    };
    auto add = [&](int64_t stage, Kind kind) { builder.add(stage, kind); };
    repeat(2 * (p - rank) - 1, [&] { add(c0, Kind::Forward); });
    repeat(rank, [&] {
      add(c1, Kind::Forward);
      add(c0, Kind::Forward);
    });
    repeat(p - rank, [&] {
      add(c1, Kind::Forward);
      add(c1, Kind::BackwardInput);
      add(c1, Kind::BackwardWeight);
    });
    while (builder.count(c1, Kind::Forward) <
               builder.count(c0, Kind::Forward) ||
           builder.count(c0, Kind::Forward) < forwards) {
      if (builder.count(c0, Kind::Forward) < forwards)
        add(c0, Kind::Forward);
      add(c0, Kind::BackwardInput);
      add(c0, Kind::BackwardWeight);
      add(c1, Kind::Forward);
      add(c1, Kind::BackwardInput);
      add(c1, Kind::BackwardWeight);
    }
    repeat(rank, [&] {
      add(c0, Kind::BackwardInput);
      add(c1, Kind::BackwardInput);
    });
    repeat(p - rank, [&] {
      add(c0, Kind::BackwardInput);
      add(c0, Kind::BackwardWeight);
    });
    for (int64_t stage : {c1, c0})
      while (builder.count(stage, Kind::BackwardWeight) <
             builder.count(stage, Kind::BackwardInput))
        add(stage, Kind::BackwardWeight);
    llvm::copy_if(
        actions, std::back_inserter(schedule.ranks[rank]),
        [&](const PipelineAction &action) { return *action.microbatch < m; });
  }
}

/// The microbatch counts nearest to `m` below and above it that `valid`
/// accepts, as "A or B" (just "B" when none below).
std::string nearestValid(int64_t m, llvm::function_ref<bool(int64_t)> valid) {
  int64_t above = m + 1;
  while (!valid(above))
    ++above;
  int64_t below = m - 1;
  while (below > 0 && !valid(below))
    --below;
  return below > 0 ? formatv("{0} or {1}", below, above).str()
                   : std::to_string(above);
}

/// Torch's constraints on (p, v, m) for `kind`.
llvm::Error checkShape(PipelineScheduleKind kind, int64_t p, int64_t v,
                       int64_t m) {
  llvm::StringRef name = getPipelineScheduleKindName(kind);
  if (p < 1 || v < 1 || m < 1)
    return detail::scheduleError(formatv(
        "{0} needs at least one pp rank, one stage per rank and one "
        "microbatch; got {1} ranks, {2} stages per rank, {3} microbatches",
        name, p, v, m));
  switch (kind) {
  case PipelineScheduleKind::GPipe:
  case PipelineScheduleKind::OneFOneB:
    if (v != 1)
      return detail::scheduleError(formatv(
          "{0} runs one stage per rank (torch's PipelineScheduleSingle); got "
          "{1} stages per rank: use Interleaved1F1B, LoopedBFS or "
          "InterleavedZeroBubble for more",
          name, v));
    if (kind == PipelineScheduleKind::OneFOneB && m < p)
      return detail::scheduleError(formatv(
          "1F1B needs at least as many microbatches as stages, as torch "
          "does: got {0} microbatches for {1} stages (use {1} or more, or "
          "GPipe)",
          m, p));
    return llvm::Error::success();
  case PipelineScheduleKind::Interleaved1F1B:
  case PipelineScheduleKind::InterleavedZeroBubble: {
    auto valid = [p](int64_t count) {
      return count % std::max<int64_t>(1, count / p) == 0;
    };
    if (!valid(m))
      return detail::scheduleError(formatv(
          "{0} needs the microbatch count to be a multiple of its number of "
          "rounds, max(1, microbatches / pp ranks) = {1}, as torch does: got "
          "{2} microbatches for {3} pp ranks ({4} would do)",
          name, m / p, m, p, nearestValid(m, valid)));
    return llvm::Error::success();
  }
  case PipelineScheduleKind::ZBVZeroBubble:
    if (v != 2)
      return detail::scheduleError(formatv(
          "ZBVZeroBubble needs exactly 2 stages per rank (the two arms of "
          "its V), as torch does: got {0}",
          v));
    return llvm::Error::success();
  case PipelineScheduleKind::LoopedBFS:
    return llvm::Error::success();
  }
  llvm_unreachable("unknown pipeline schedule kind");
}

} // namespace

llvm::Expected<PipelineSchedule>
mlir::titan::generatePipelineSchedule(PipelineScheduleKind kind,
                                      int64_t numRanks, int64_t stagesPerRank,
                                      int64_t numMicrobatches) {
  if (llvm::Error error =
          checkShape(kind, numRanks, stagesPerRank, numMicrobatches))
    return std::move(error);
  PipelineSchedule schedule;
  schedule.numRanks = numRanks;
  schedule.stagesPerRank = stagesPerRank;
  schedule.numMicrobatches = numMicrobatches;
  schedule.placement = getStagePlacement(kind);
  schedule.ranks.resize(numRanks);
  switch (kind) {
  case PipelineScheduleKind::GPipe:
    buildGPipe(schedule);
    break;
  case PipelineScheduleKind::OneFOneB:
    build1F1B(schedule);
    break;
  case PipelineScheduleKind::LoopedBFS:
    buildLoopedBFS(schedule);
    break;
  case PipelineScheduleKind::Interleaved1F1B:
    buildInterleaved(schedule, /*zeroBubble=*/false);
    break;
  case PipelineScheduleKind::InterleavedZeroBubble:
    buildInterleaved(schedule, /*zeroBubble=*/true);
    break;
  case PipelineScheduleKind::ZBVZeroBubble:
    buildZBV(schedule);
    break;
  }
  return schedule;
}
