//===- Watchdog.cpp - heartbeats and timed-out collectives ----------------===//

#include "comm/Watchdog.h"

#include <algorithm>

namespace titan::rt {

namespace {

using std::chrono::milliseconds;

/// How long the heartbeat thread may take to reach the store: a beat that
/// cannot go out is skipped, and finish() never waits longer for it.
constexpr milliseconds kPublishTimeout(1000);

/// The wall clock now, in milliseconds since the Unix epoch.
int64_t nowUnixMilliseconds() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// The store key of `rank`'s heartbeat.
std::string getHeartbeatKey(int64_t rank) {
  return "heartbeat/" + std::to_string(rank);
}

/// The store key saying that `rank` is done with the store.
std::string getDoneKey(int64_t rank) { return "done/" + std::to_string(rank); }

} // namespace

Watchdog::Watchdog(const LaunchEnvironment &env, std::vector<std::string> axes)
    : env(env), axes(std::move(axes)), progress(this->axes.size()),
      // A quarter of the collectives' timeout: a peer waiting for this rank
      // sees several heartbeats before it gives up.
      interval(std::clamp<milliseconds>(env.collectiveTimeout / 4,
                                        milliseconds(10), milliseconds(1000))),
      storeBound(std::clamp<milliseconds>(
          env.collectiveTimeout, milliseconds(1000), milliseconds(5000))) {}

Watchdog::~Watchdog() { finish(/*failed=*/false); }

Status Watchdog::start(const std::string &jobKeyPrefix,
                       std::unique_ptr<StoreServer> hosted) {
  keyPrefix = jobKeyPrefix;
  server = std::move(hosted);
  TITANRT_RETURN_IF_ERROR(StoreClient::connect(
      env.masterAddr, env.masterPort, keyPrefix, kPublishTimeout, heartbeats));
  // The first heartbeat goes out now: a connected rank always has one.
  TITANRT_RETURN_IF_ERROR(publish());
  thread = std::thread([this] { beat(); });
  return Status::success();
}

void Watchdog::beat() {
  std::unique_lock<std::mutex> lock(mutex);
  while (!wake.wait_for(lock, interval, [&] { return stopping; })) {
    lock.unlock();
    // A beat the store does not take is skipped; the next one retries.
    (void)publish();
    lock.lock();
  }
}

Status Watchdog::publish() {
  std::string text = encodeHeartbeat(
      progress.snapshot(nowUnixMilliseconds(), interval.count()));
  return heartbeats->set(getHeartbeatKey(env.rank),
                         std::vector<uint8_t>(text.begin(), text.end()));
}

std::string Watchdog::explainTimeout(CollectiveKind kind, size_t communicator,
                                     uint64_t sequence,
                                     const std::vector<int64_t> &members) {
  if (!heartbeats)
    return "";
  // A connection of its own, with a short timeout: the store may be the
  // part that hangs.
  std::unique_ptr<StoreClient> reader;
  Status status = StoreClient::connect(env.masterAddr, env.masterPort,
                                       keyPrefix, storeBound, reader);
  std::vector<MemberHeartbeat> beats;
  for (int64_t member : members) {
    if (member == env.rank || !status.ok())
      continue;
    std::string key = getHeartbeatKey(member);
    bool published = false;
    std::vector<uint8_t> value;
    status = reader->check({key}, published);
    if (status.ok() && published)
      status = reader->get(key, value);
    MemberHeartbeat entry{member, std::nullopt};
    Heartbeat beat;
    if (published &&
        decodeHeartbeat(std::string(value.begin(), value.end()), beat))
      entry.beat = std::move(beat);
    beats.push_back(std::move(entry));
  }
  if (!status.ok())
    return "; which ranks did not arrive is unknown: the rendezvous store did "
           "not answer within " +
           formatDuration(storeBound) + " (" + status.getMessage() + ")" +
           (!env.useAgentStore && env.rank != 0
                ? "; rank 0 hosts it: is rank 0 stopped or hung?"
                : "");
  return "; " + describeTimeout(kind, communicator, sequence, beats,
                                nowUnixMilliseconds(), axes);
}

void Watchdog::finish(bool failed) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (finished)
      return;
    finished = stopping = true;
  }
  wake.notify_all();
  if (thread.joinable())
    thread.join();
  progress.setPhase(failed ? RankPhase::Failed : RankPhase::Finished);
  if (!heartbeats)
    return;
  Status status = publish();
  if (!env.useAgentStore && env.rank != 0 && status.ok())
    status = heartbeats->set(getDoneKey(env.rank), {1});
  if (server && status.ok()) {
    std::vector<std::string> keys;
    for (int64_t rank = 1; rank < env.worldSize; ++rank)
      keys.push_back(getDoneKey(rank));
    // A rank that never says it is done (stopped, dead) is not waited for
    // longer than a read of the store may take.
    (void)heartbeats->wait(keys, storeBound);
  }
  server.reset();
}

} // namespace titan::rt
