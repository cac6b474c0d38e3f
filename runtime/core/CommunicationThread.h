//===- CommunicationThread.h - a communicator's collectives -----*- C++ -*-===//
//
// The CPU backend's CollectiveQueue: asynchronous collectives
// (titanrt_start) run on a thread of their communicator, in the order the
// program issued them, while the main thread computes; a synchronous one
// runs on the main thread once the queue is idle.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CORE_COMMUNICATIONTHREAD_H
#define TITAN_RUNTIME_CORE_COMMUNICATIONTHREAD_H

#include "core/CollectiveQueue.h"

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace titan::rt {

/// The asynchronous collectives of one communicator: a thread that runs
/// them in FIFO order, and their results until they are taken. Only one
/// other thread (the rank's main thread) calls its methods; that thread
/// uses the communicator itself only while isBusy() is false, so the
/// communicator is used by one thread at a time.
class CommunicationThread final : public CollectiveQueue {
public:
  /// Starts the thread of `communicator`, the rank's communicator `index`.
  CommunicationThread(Communicator &communicator, int32_t index);
  /// Runs what is queued, then stops and joins the thread.
  ~CommunicationThread() override;
  CommunicationThread(const CommunicationThread &) = delete;
  CommunicationThread &operator=(const CommunicationThread &) = delete;

  /// Runs `call` on the caller (AsyncCollectives runs the CPU backend's
  /// synchronous collectives on the caller itself).
  Status run(const CollectiveCall &call) override;
  void enqueue(const CollectiveCall &call, int64_t handle,
               Tracer *tracer) override;
  bool isBusy() override;
  /// Blocks until every queued call completed.
  bool waitUntilIdle() override;
  /// Blocks until the call queued under `handle` completed.
  Status take(int64_t handle, bool &blocked) override;
  /// Blocks until every queued call completed, then forgets the results.
  Result drain() override;
  /// The first completed call that failed and was not taken yet.
  std::optional<Result> findFailure() override;

private:
  /// The thread: runs queued calls until stopped with none left.
  void runQueue();

  /// A queued call.
  struct Item {
    CollectiveCall call;
    int64_t handle = 0;
    Tracer *tracer = nullptr;
  };

  Communicator &communicator;
  const int32_t index;
  /// Guards everything below.
  std::mutex mutex;
  /// Wakes the thread: a call was queued, or stopping.
  std::condition_variable wake;
  /// Wakes the main thread: a call completed.
  std::condition_variable completed;
  /// The calls not started yet: queue[head...]. Emptied, keeping its
  /// memory, whenever the thread takes the last one.
  std::vector<Item> queue;
  size_t head = 0;
  /// The calls queued and not completed (the one running included).
  size_t pending = 0;
  /// The completed calls' results, until taken.
  std::vector<Result> results;
  bool stopping = false;
  std::thread thread;
};

} // namespace titan::rt

#endif // TITAN_RUNTIME_CORE_COMMUNICATIONTHREAD_H
