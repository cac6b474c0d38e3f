//===- ThreadJob.h - the ranks of a job as threads of one test --*- C++ -*-===//
//
// The unit tests run each rank of a job on a thread of the test process,
// with its own LaunchEnvironment, meeting at a store on an ephemeral port.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TEST_UNIT_RUNTIME_COMM_THREADJOB_H
#define TITAN_TEST_UNIT_RUNTIME_COMM_THREADJOB_H

#include "comm/Connect.h"
#include "comm/StoreServer.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace titan::rt::test {

/// Seconds of the steady clock since `start`.
inline double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start)
      .count();
}

/// A port nothing listens on right now.
int findFreePort();

/// A job of `worldSize` ranks on threads. By default the job hosts a
/// StoreServer as a launcher's agent does (TORCHELASTIC_USE_AGENT_STORE);
/// a standalone job leaves it to rank 0, at a free port.
class ThreadJob {
public:
  explicit ThreadJob(int64_t worldSize, bool standalone = false);

  /// Rank `rank`'s environment.
  LaunchEnvironment getEnvironment(int64_t rank) const;
  /// Runs `body` for every rank in `ranks` (all when empty), each on its
  /// own thread, and returns their Statuses in that order.
  std::vector<Status> run(const std::function<Status(int64_t rank)> &body,
                          std::vector<int64_t> ranks = {}) const;
  /// The agent store (null when standalone).
  StoreServer *getStore() const { return store.get(); }

private:
  int64_t worldSize;
  std::unique_ptr<StoreServer> store;
  int port;
  std::string runId;
};

} // namespace titan::rt::test

#endif // TITAN_TEST_UNIT_RUNTIME_COMM_THREADJOB_H
