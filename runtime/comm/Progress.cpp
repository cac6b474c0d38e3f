//===- Progress.cpp - where a rank is in its job, as heartbeats -----------===//

#include "comm/Progress.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace titan::rt {

namespace {

/// The first word of a heartbeat and its format version.
constexpr const char *kHeartbeatTag = "titan-heartbeat";
constexpr int kHeartbeatVersion = 1;

/// The most ranks describeTimeout lists.
constexpr size_t kListedRanks = 8;

/// A communicator's packed state: sequence << 8 | kind << 1 | inside.
uint64_t pack(uint64_t sequence, CollectiveKind kind, bool inside) {
  return sequence << 8 | uint64_t(kind) << 1 | uint64_t(inside);
}

/// "4.2 s".
std::string formatSeconds(int64_t milliseconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", milliseconds / 1000.0);
  return text;
}

/// What the rank of `beat` was doing: the operations it was inside, or its
/// phase.
std::string describeActivity(const Heartbeat &beat,
                             const std::vector<std::string> &axes) {
  std::string inside;
  for (size_t index = 0; index < beat.communicators.size(); ++index) {
    const CommunicatorState &state = beat.communicators[index];
    if (!state.inside)
      continue;
    inside += std::string(inside.empty() ? "inside " : " and ") +
              getCollectiveName(state.kind);
    if (isCollective(state.kind))
      inside += " #" + std::to_string(state.sequence);
    inside += index < axes.size() ? " over mesh axes " + axes[index]
                                  : " on communicator " + std::to_string(index);
  }
  return inside.empty() ? describePhase(beat.phase) : inside;
}

/// Whether `beat` says its rank left the job.
bool hasLeft(const Heartbeat &beat) {
  return beat.phase == RankPhase::Finished || beat.phase == RankPhase::Failed;
}

/// Whether no heartbeat came after `beat` for three of its intervals.
bool isOverdue(const Heartbeat &beat, int64_t nowUnixMilliseconds) {
  return nowUnixMilliseconds - beat.unixMilliseconds >
         3 * beat.intervalMilliseconds;
}

} // namespace

const char *getCollectiveName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  case CollectiveKind::Broadcast:
    return "broadcast";
  case CollectiveKind::Barrier:
    return "barrier";
  case CollectiveKind::Send:
    return "send";
  case CollectiveKind::Recv:
    return "recv";
  }
  return "operation";
}

bool isCollective(CollectiveKind kind) {
  return kind != CollectiveKind::Send && kind != CollectiveKind::Recv;
}

const char *describePhase(RankPhase phase) {
  switch (phase) {
  case RankPhase::Starting:
    return "before its first step";
  case RankPhase::ReadingBatch:
    return "reading the batch";
  case RankPhase::Computing:
    return "computing";
  case RankPhase::BetweenSteps:
    return "between steps";
  case RankPhase::Checkpointing:
    return "writing a checkpoint";
  case RankPhase::Validating:
    return "validating";
  case RankPhase::Finishing:
    return "after its last step";
  case RankPhase::Finished:
    return "done";
  case RankPhase::Failed:
    return "failed";
  }
  return "unknown";
}

std::string encodeHeartbeat(const Heartbeat &beat) {
  std::string text =
      std::string(kHeartbeatTag) + " " + std::to_string(kHeartbeatVersion) +
      " " + std::to_string(beat.unixMilliseconds) + " " +
      std::to_string(beat.intervalMilliseconds) + " " +
      std::to_string(beat.step) + " " + std::to_string(int(beat.phase)) + " " +
      std::to_string(beat.communicators.size());
  for (const CommunicatorState &state : beat.communicators)
    text += " " + std::to_string(state.sequence) + " " +
            std::to_string(int(state.kind)) + " " +
            std::to_string(int(state.inside));
  return text;
}

bool decodeHeartbeat(const std::string &text, Heartbeat &beat) {
  std::istringstream in(text);
  std::string tag;
  int version = 0, phase = 0;
  size_t count = 0;
  Heartbeat parsed;
  if (!(in >> tag >> version >> parsed.unixMilliseconds >>
        parsed.intervalMilliseconds >> parsed.step >> phase >> count) ||
      tag != kHeartbeatTag || version != kHeartbeatVersion || phase < 0 ||
      phase > int(RankPhase::Failed) || count > (size_t(1) << 16))
    return false;
  parsed.phase = RankPhase(phase);
  for (size_t index = 0; index < count; ++index) {
    CommunicatorState state;
    int kind = 0, inside = 0;
    if (!(in >> state.sequence >> kind >> inside) || kind < 0 ||
        kind > int(CollectiveKind::Recv) || (inside != 0 && inside != 1))
      return false;
    state.kind = CollectiveKind(kind);
    state.inside = inside;
    parsed.communicators.push_back(state);
  }
  std::string rest;
  if (in >> rest)
    return false;
  beat = std::move(parsed);
  return true;
}

RankProgress::RankProgress(size_t communicators)
    : states(new std::atomic<uint64_t>[communicators]()), count(communicators) {
}

void RankProgress::setStep(int64_t step, RankPhase phase) {
  stepAndPhase.store(uint64_t(step) << 8 | uint64_t(phase),
                     std::memory_order_relaxed);
}

void RankProgress::setPhase(RankPhase phase) {
  uint64_t current = stepAndPhase.load(std::memory_order_relaxed);
  stepAndPhase.store((current & ~uint64_t(0xff)) | uint64_t(phase),
                     std::memory_order_relaxed);
}

uint64_t RankProgress::enter(size_t index, CollectiveKind kind) {
  // Only the thread using the communicator writes its state.
  uint64_t sequence = states[index].load(std::memory_order_relaxed) >> 8;
  if (isCollective(kind))
    ++sequence;
  states[index].store(pack(sequence, kind, true), std::memory_order_relaxed);
  return sequence;
}

void RankProgress::leave(size_t index) {
  uint64_t current = states[index].load(std::memory_order_relaxed);
  states[index].store(current & ~uint64_t(1), std::memory_order_relaxed);
}

Heartbeat RankProgress::snapshot(int64_t unixMilliseconds,
                                 int64_t intervalMilliseconds) const {
  Heartbeat beat;
  beat.unixMilliseconds = unixMilliseconds;
  beat.intervalMilliseconds = intervalMilliseconds;
  uint64_t current = stepAndPhase.load(std::memory_order_relaxed);
  beat.step = int64_t(current >> 8);
  beat.phase = RankPhase(current & 0xff);
  for (size_t index = 0; index < count; ++index) {
    uint64_t state = states[index].load(std::memory_order_relaxed);
    beat.communicators.push_back(
        {state >> 8, CollectiveKind((state >> 1) & 0x7f), bool(state & 1)});
  }
  return beat;
}

std::string describeHeartbeat(const Heartbeat &beat,
                              int64_t nowUnixMilliseconds,
                              const std::vector<std::string> &axes) {
  std::string age = formatSeconds(
      std::max<int64_t>(0, nowUnixMilliseconds - beat.unixMilliseconds));
  std::string step =
      beat.step > 0 ? " at step " + std::to_string(beat.step) : "";
  if (hasLeft(beat))
    return "it left the job " + age + " ago" + step +
           (beat.phase == RankPhase::Failed ? ", after an error" : "");
  std::string activity =
      (step.empty() ? " " : step + ", ") + describeActivity(beat, axes);
  if (isOverdue(beat, nowUnixMilliseconds))
    return "no heartbeat for " + age + " (stopped, hung or dead), the last" +
           activity;
  return "last seen " + age + " ago" +
         (step.empty() ? "," + activity : activity);
}

std::string describeTimeout(CollectiveKind kind, size_t communicator,
                            uint64_t sequence,
                            const std::vector<MemberHeartbeat> &members,
                            int64_t nowUnixMilliseconds,
                            const std::vector<std::string> &axes) {
  std::vector<std::string> entries;
  size_t unlisted = 0;
  auto add = [&](std::string entry) {
    if (entries.size() < kListedRanks)
      entries.push_back(std::move(entry));
    else
      ++unlisted;
  };
  for (const MemberHeartbeat &member : members) {
    std::string rank = "rank " + std::to_string(member.rank);
    if (!isCollective(kind)) {
      add("peer " + rank + ": " +
          (member.beat
               ? describeHeartbeat(*member.beat, nowUnixMilliseconds, axes)
               : "it never sent a heartbeat"));
      continue;
    }
    if (!member.beat) {
      add(rank + " did not arrive: it never sent a heartbeat");
      continue;
    }
    const Heartbeat &beat = *member.beat;
    bool arrived = communicator < beat.communicators.size() &&
                   beat.communicators[communicator].sequence >= sequence;
    std::string said = describeHeartbeat(beat, nowUnixMilliseconds, axes);
    if (!arrived)
      add(rank + " did not arrive: " + said);
    else if (hasLeft(beat) || isOverdue(beat, nowUnixMilliseconds))
      add(rank + " arrived but did not finish: " + said);
  }
  std::string text;
  for (const std::string &entry : entries)
    text += (text.empty() ? "" : "; ") + entry;
  if (unlisted)
    text += "; and " + std::to_string(unlisted) + " more";
  if (!isCollective(kind))
    return text;
  return "at " + std::string(getCollectiveName(kind)) + " #" +
         std::to_string(sequence) + " of the group, " +
         (text.empty() ? "every other member had arrived by its last heartbeat"
                       : text);
}

} // namespace titan::rt
