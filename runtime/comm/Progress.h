//===- Progress.h - where a rank is in its job, as heartbeats ---*- C++ -*-===//
//
// Every rank records in memory the step it runs and, per communicator, the
// sequence number of the collective it is in or last completed: a few
// relaxed atomic stores per collective, no communication. The watchdog
// (Watchdog.h) publishes that record as a heartbeat; when a collective times
// out, the heartbeats of the group's other members say which of them did
// not arrive at it and what they were doing instead.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_PROGRESS_H
#define TITAN_RUNTIME_COMM_PROGRESS_H

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace titan::rt {

/// The operations of a Communicator. Every member of a group calls its
/// collectives in the same order, so their sequence numbers agree; send and
/// recv involve two members and are not numbered.
enum class CollectiveKind : uint8_t {
  AllGather,
  ReduceScatter,
  AllReduce,
  AllToAll,
  Broadcast,
  Barrier,
  Send,
  Recv,
};

/// "all_gather", "send", ...: the operation in messages.
const char *getCollectiveName(CollectiveKind kind);

/// Whether every member of the group takes part in `kind` (not send, recv).
bool isCollective(CollectiveKind kind);

/// What a rank does when it is not communicating.
enum class RankPhase : uint8_t {
  /// Before its first step: loading its state and data.
  Starting,
  /// Copying its box of the step's batch.
  ReadingBatch,
  /// Running the compiled step.
  Computing,
  /// Logging the step and agreeing whether to stop.
  BetweenSteps,
  /// Writing a checkpoint.
  Checkpointing,
  /// Computing the validation loss ([validation]).
  Validating,
  /// After its last step.
  Finishing,
  /// Out of the job without an error.
  Finished,
  /// Out of the job with an error.
  Failed,
};

/// "computing", "writing a checkpoint", ...: the phase in messages.
const char *describePhase(RankPhase phase);

/// Where a rank is on one communicator.
struct CommunicatorState {
  /// The number of collectives it entered: the one it is in, or the last
  /// it completed (0: none yet).
  uint64_t sequence = 0;
  /// The operation it is in, or was in last.
  CollectiveKind kind = CollectiveKind::AllGather;
  /// Whether it is inside that operation.
  bool inside = false;
};

/// A rank's progress as it publishes it.
struct Heartbeat {
  /// When the rank took it: milliseconds since the Unix epoch (wall clocks,
  /// so ranks on hosts with synchronized clocks can compare them).
  int64_t unixMilliseconds = 0;
  /// How often the rank publishes a heartbeat.
  int64_t intervalMilliseconds = 0;
  /// The step it runs (1 for the first), or 0 before its first.
  int64_t step = 0;
  RankPhase phase = RankPhase::Starting;
  /// By communicator index (the same on every rank of a job).
  std::vector<CommunicatorState> communicators;
};

/// The store value of `beat`: "titan-heartbeat 1 TIME INTERVAL STEP PHASE N"
/// and then N times " SEQUENCE KIND INSIDE", in decimal.
std::string encodeHeartbeat(const Heartbeat &beat);

/// Parses encodeHeartbeat's text into `beat`; false if it is not one.
bool decodeHeartbeat(const std::string &text, Heartbeat &beat);

/// A rank's progress: written by the threads that run the steps and the
/// collectives (each communicator used by one thread at a time), read at
/// any time by the heartbeat thread.
class RankProgress {
public:
  /// The progress of a rank with `communicators` communicators.
  explicit RankProgress(size_t communicators);

  /// The rank starts step `step` (1 for the first) in `phase`.
  void setStep(int64_t step, RankPhase phase);
  /// The rank moves on to `phase` within its step.
  void setPhase(RankPhase phase);
  /// The rank enters `kind` on communicator `index`; returns the
  /// collective's sequence number (for send and recv, the last
  /// collective's: they are not numbered).
  uint64_t enter(size_t index, CollectiveKind kind);
  /// The rank leaves the operation it entered on communicator `index`.
  void leave(size_t index);
  /// The progress now, as a heartbeat taken at `unixMilliseconds` by a rank
  /// that publishes one every `intervalMilliseconds`.
  Heartbeat snapshot(int64_t unixMilliseconds,
                     int64_t intervalMilliseconds) const;

private:
  /// step << 8 | phase.
  std::atomic<uint64_t> stepAndPhase{0};
  /// Per communicator: sequence << 8 | kind << 1 | inside.
  std::unique_ptr<std::atomic<uint64_t>[]> states;
  size_t count;
};

/// A member of a group and its last heartbeat, if it published one.
struct MemberHeartbeat {
  /// Its world rank.
  int64_t rank = 0;
  std::optional<Heartbeat> beat;
};

/// What a heartbeat says at `nowUnixMilliseconds`, for messages: "last seen
/// 0.4 s ago at step 7, computing"; "no heartbeat for 9.0 s (stopped, hung
/// or dead), the last at step 7, inside all_gather #12 over mesh axes
/// (tp)"; "it left the job 1.2 s ago at step 7, after an error". `axes`
/// names each communicator's mesh axes ("(tp)"). A heartbeat is missing
/// when none came for three of its intervals.
std::string describeHeartbeat(const Heartbeat &beat,
                              int64_t nowUnixMilliseconds,
                              const std::vector<std::string> &axes);

/// Why operation `kind` of this rank on communicator `communicator` (for a
/// collective, its number `sequence`) timed out, from the last heartbeats
/// of the other members it waited for (for send and recv, the peer): "at
/// all_reduce #57 of the group, rank 1 did not arrive: no heartbeat for
/// 3.2 s (stopped, hung or dead), the last at step 12, computing". A
/// member arrived when its sequence number on the communicator reached
/// `sequence`; one that did and then stopped publishing heartbeats is
/// named too. Lists at most 8 ranks.
std::string describeTimeout(CollectiveKind kind, size_t communicator,
                            uint64_t sequence,
                            const std::vector<MemberHeartbeat> &members,
                            int64_t nowUnixMilliseconds,
                            const std::vector<std::string> &axes);

} // namespace titan::rt

#endif // TITAN_RUNTIME_COMM_PROGRESS_H
