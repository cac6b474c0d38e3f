//===- ThreadJob.cpp - the ranks of a job as threads of one test ----------===//

#include "ThreadJob.h"

#include "comm/Socket.h"

#include <atomic>
#include <cstdlib>
#include <thread>

namespace titan::rt::test {

int findFreePort() {
  Socket socket;
  int port = 0;
  Status status = listenOnPort(0, socket, port);
  if (!status.ok())
    std::abort();
  return port;
}

ThreadJob::ThreadJob(int64_t worldSize, bool standalone)
    : worldSize(worldSize) {
  static std::atomic<int> jobs{0};
  runId = "job" + std::to_string(jobs++);
  if (standalone) {
    port = findFreePort();
    return;
  }
  if (!StoreServer::start(0, store).ok())
    std::abort();
  port = store->getPort();
}

LaunchEnvironment ThreadJob::getEnvironment(int64_t rank) const {
  LaunchEnvironment env;
  env.rank = rank;
  env.worldSize = worldSize;
  env.localRank = rank;
  env.localWorldSize = worldSize;
  env.masterAddr = "127.0.0.1";
  env.masterPort = port;
  env.useAgentStore = store != nullptr;
  env.runId = runId;
  return env;
}

std::vector<Status>
ThreadJob::run(const std::function<Status(int64_t rank)> &body,
               std::vector<int64_t> ranks) const {
  if (ranks.empty())
    for (int64_t rank = 0; rank < worldSize; ++rank)
      ranks.push_back(rank);
  std::vector<Status> statuses(ranks.size());
  std::vector<std::thread> threads;
  for (size_t index = 0; index < ranks.size(); ++index)
    threads.emplace_back([&, index] { statuses[index] = body(ranks[index]); });
  for (std::thread &thread : threads)
    thread.join();
  return statuses;
}

} // namespace titan::rt::test
