//===- Watchdog.h - heartbeats and timed-out collectives --------*- C++ -*-===//
//
// Every rank of a job with peers runs a heartbeat thread that publishes its
// progress (Progress.h) to the rendezvous store, under `heartbeat/<rank>`,
// every interval (a quarter of TITAN_COMM_TIMEOUT, at most 1 s). When one
// of its collectives times out, the rank reads the heartbeats of the
// group's other members and names those that did not arrive. The store
// stays up for the whole job: when rank 0 hosts it, the watchdog keeps the
// server until every rank said it is done (`done/<rank>`), for a bounded
// time.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_WATCHDOG_H
#define TITAN_RUNTIME_COMM_WATCHDOG_H

#include "comm/Connect.h"
#include "comm/Progress.h"
#include "comm/StoreClient.h"
#include "comm/StoreServer.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace titan::rt {

/// A rank's progress, its heartbeat thread and the store it publishes to.
/// Until start() it only records progress (a rank without peers never
/// starts it).
class Watchdog {
public:
  /// The watchdog of `env`'s rank, whose communicator i is over the mesh
  /// axes `axes[i]` ("(tp)").
  Watchdog(const LaunchEnvironment &env, std::vector<std::string> axes);
  /// finish(), if it was not called.
  ~Watchdog();
  Watchdog(const Watchdog &) = delete;
  Watchdog &operator=(const Watchdog &) = delete;

  /// Publishes a first heartbeat to the store at MASTER_ADDR:MASTER_PORT,
  /// under `jobKeyPrefix` (the job's keys), and starts the thread that
  /// publishes the others. `hosted` is the store rank 0
  /// hosts (null when a launcher does): the watchdog keeps it until
  /// finish().
  Status start(const std::string &jobKeyPrefix,
               std::unique_ptr<StoreServer> hosted);

  /// What the rank's threads record as they run.
  RankProgress &getProgress() { return progress; }

  /// Why operation `kind` (collective number `sequence`) on communicator
  /// `communicator` timed out, for its error message: "; at all_reduce #57
  /// of the group, rank 1 did not arrive: ..." (describeTimeout), from the
  /// heartbeats of `members` (world ranks: the group's, or the peer of a
  /// send or recv). Reads the store within a bounded time and says so when
  /// it does not answer; "" before start().
  std::string explainTimeout(CollectiveKind kind, size_t communicator,
                             uint64_t sequence,
                             const std::vector<int64_t> &members);

  /// Stops the heartbeat thread, publishes a last heartbeat saying whether
  /// the rank `failed`, and tells the others the rank is done; rank 0,
  /// when it hosts the store, waits (a bounded time) until every rank is
  /// done, then stops the store. The store's failures are ignored: they
  /// must not hide the job's own outcome. Later calls do nothing.
  void finish(bool failed);

private:
  /// The heartbeat thread: publishes every interval until finish() asks it
  /// to stop.
  void beat();
  /// Publishes the progress now.
  Status publish();

  /// The rank and its store.
  LaunchEnvironment env;
  /// Each communicator's mesh axes.
  std::vector<std::string> axes;
  RankProgress progress;
  /// How often a heartbeat goes out, and how long a read of the store may
  /// take when a collective timed out (or rank 0 waits for the others).
  std::chrono::milliseconds interval;
  std::chrono::milliseconds storeBound;
  /// The job's key prefix in the store.
  std::string keyPrefix;
  /// The store rank 0 hosts, if it does.
  std::unique_ptr<StoreServer> server;
  /// The heartbeat thread's connection; null before start().
  std::unique_ptr<StoreClient> heartbeats;
  /// Wakes the heartbeat thread early when `stopping`.
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  bool finished = false;
  std::thread thread;
};

} // namespace titan::rt

#endif // TITAN_RUNTIME_COMM_WATCHDOG_H
