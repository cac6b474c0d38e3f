//===- Simulator.h - timing a pipeline schedule -----------------*- C++ -*-===//
//
// An event simulation of one training step under a pipeline schedule
// (titan/PipelineSchedule/Schedule.h). Each rank runs its actions strictly
// in list order, one at a time; an action starts when the rank is free and
// its inputs are there:
//
//   F(s, m)       after F(s-1, m), plus the transfer time when stage s-1 is
//                 on another rank;
//   B/I(s, m)     after F(s, m) and after the B or I of (s+1, m), plus the
//                 transfer time across ranks (the last stage: after its F);
//   W(s, m)       after I(s, m).
//
// In a schedule with SEND/RECV actions the transfers are those actions:
// posting a send takes no time on its rank; a transfer starts once both its
// send and its receive are posted (NCCL's rendezvous) and lasts the
// transfer time; a compute whose input comes from another rank waits for
// it. A receive is either posted without waiting (torch's runtime posts an
// irecv and waits at the compute) or blocks its rank until its data has
// arrived (ReceiveMode). A compute-only schedule moves data as if each send
// followed its producer and each receive had been posted in time. UNSHARD,
// RESHARD and REDUCE_GRAD take no time.
//
// Memory per rank: its static bytes, plus for each F the activation bytes
// of its stage from the F's start until its backward frees them: a B frees
// all of them at its end, an I its part, the W the rest.
//
// Only LLVMSupport; docs/pipeline-schedules.md gives the formulas.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PIPELINESCHEDULE_SIMULATOR_H
#define TITAN_PIPELINESCHEDULE_SIMULATOR_H

#include "titan/PipelineSchedule/Schedule.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::titan {

/// What one stage costs per microbatch.
struct StageCost {
  /// Seconds of F, of I and of W; a full backward B takes I + W.
  double forwardSeconds = 0;
  double backwardInputSeconds = 0;
  double backwardWeightSeconds = 0;
  /// Bytes an F keeps alive until its backward, and the part of them an I
  /// frees (its W frees the rest).
  double activationBytes = 0;
  double backwardInputFreedBytes = 0;
};

/// The costs a simulation needs.
struct PipelineCosts {
  /// One entry per stage.
  llvm::SmallVector<StageCost> stages;
  /// Seconds to move one activation or gradient between two ranks.
  double transferSeconds = 0;
  /// Bytes each rank holds throughout (weights, optimizer state); empty for
  /// none, otherwise one entry per rank.
  llvm::SmallVector<double> staticBytesPerRank;
};

/// One simulated action.
struct TimedAction {
  PipelineAction action;
  double startSeconds = 0;
  double endSeconds = 0;
};

/// A rank's memory from `seconds` on.
struct MemorySample {
  double seconds = 0;
  double bytes = 0;
};

/// What one rank did.
struct RankTimeline {
  /// Its actions in list order.
  llvm::SmallVector<TimedAction, 0> actions;
  /// Seconds of compute (F, B, I, W) and the fraction of the step the rank
  /// spends idle: (step - busy) / step.
  double busySeconds = 0;
  double bubbleFraction = 0;
  /// The highest memory and when it is first reached.
  double peakBytes = 0;
  double peakSeconds = 0;
  /// The memory over time: the static bytes at 0, then a sample at each
  /// change.
  llvm::SmallVector<MemorySample, 0> memory;
};

/// The simulated step.
struct PipelineSimulation {
  /// From 0 to the end of the last action.
  double stepSeconds = 0;
  /// The mean of the ranks' bubble fractions.
  double averageBubbleFraction = 0;
  llvm::SmallVector<RankTimeline> ranks;
};

/// How a rank runs a RECV_F or RECV_B.
enum class ReceiveMode : uint8_t {
  /// As torch's runtime does: the receive is posted, taking no time, and
  /// the compute that needs the data waits for it.
  Posted,
  /// The rank waits in the receive until the data has arrived.
  Blocking,
};

/// Simulates `schedule` (verified first) with `costs`, receives run as
/// `receives` says. Costs must be finite and non-negative, one per stage,
/// an I freeing no more than its stage's activation bytes. An order that can
/// never complete is an error naming the action each unfinished rank is
/// stuck at and what it waits for.
llvm::Expected<PipelineSimulation>
simulatePipeline(const PipelineSchedule &schedule, const PipelineCosts &costs,
                 ReceiveMode receives = ReceiveMode::Posted);

/// Writes `simulation` as a Chrome trace (JSON) that Perfetto and
/// chrome://tracing open: one track per pp rank ("pp rank R") with one
/// event per action named like "F3 s1" (kind, microbatch, stage),
/// timestamps in microseconds, and the rank's memory as a counter.
void writeChromeTrace(const PipelineSimulation &simulation,
                      llvm::raw_ostream &os);

} // namespace mlir::titan

#endif // TITAN_PIPELINESCHEDULE_SIMULATOR_H
