//===- AsyncCollectives.h - titanrt_start and titanrt_wait ------*- C++ -*-===//
//
// A rank's asynchronous collectives. titanrt_start(handle) makes the next
// collective asynchronous: it is queued on its communicator's
// CollectiveQueue (made when the communicator's first one is: by default a
// CommunicationThread) and titanrt_wait(handle) takes its Status. Every
// other use of a communicator first waits for that communicator's queue, so
// each communicator runs its operations in the order the program issued
// them, as every member of a group needs to. With the CPU backend's queues a
// program that never calls titanrt_start runs every call inline, with no
// thread; a backend whose synchronous collectives must be ordered too (the
// CUDA backend's streams) queues every call.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CORE_ASYNCCOLLECTIVES_H
#define TITAN_RUNTIME_CORE_ASYNCCOLLECTIVES_H

#include "core/CollectiveQueue.h"

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace titan::rt {

/// The asynchronous collectives of a rank's communicators. Used by the
/// rank's main thread only (the thread that runs the step).
class AsyncCollectives {
public:
  AsyncCollectives();
  /// Waits for every queued collective and destroys the queues: it must be
  /// destroyed before the communicators.
  ~AsyncCollectives();
  AsyncCollectives(const AsyncCollectives &) = delete;
  AsyncCollectives &operator=(const AsyncCollectives &) = delete;

  /// titanrt_start: the next collective runs asynchronously under `handle`.
  /// Fails for a negative handle, one in flight (started, not waited for),
  /// and after a titanrt_start no collective consumed.
  Status start(int64_t handle);

  /// Whether a titanrt_start waits for its collective.
  bool hasPendingStart() const { return pendingHandle >= 0; }
  /// Fails, naming the handle, when a titanrt_start was not followed by a
  /// collective; `operation` is the runtime call that came instead
  /// ("titanrt_matmul"). The failure consumes the start.
  Status checkNoPendingStart(const char *operation) {
    return pendingHandle < 0 ? Status::success() : failPendingStart(operation);
  }

  /// Makes every communicator's queue with `factory` from now on (before
  /// the first collective); with `queueEveryCall` a synchronous collective
  /// goes through the queue (CollectiveQueue::run) too, otherwise it runs
  /// on the caller once the queue is idle.
  void setQueueFactory(CollectiveQueueFactory factory, bool queueEveryCall);

  /// Runs `call` on `communicator` (the rank's communicator `index`): after
  /// a titanrt_start queues it on the communicator's queue and returns at
  /// once; otherwise waits for the communicator's queue (synchronize) and
  /// runs it. `tracer` records it.
  Status run(Tracer *tracer, int32_t index, Communicator &communicator,
             const CollectiveCall &call);

  /// Waits until communicator `index` has no queued or running collective;
  /// a wait that blocks is a "wait" event of `tracer`.
  void synchronize(Tracer *tracer, int32_t index);

  /// titanrt_wait: blocks until the collective started under `handle`
  /// completed and returns its Status. When it blocks, `tracer` records a
  /// "wait" event.
  Status wait(Tracer *tracer, int64_t handle);

  /// " (the collective of titanrt_start handle 3)" while a titanrt_start
  /// waits for its collective, else "": for errors of that collective's
  /// arguments. Consumes the start.
  std::string consumePendingStart();

  /// Waits for every queued collective of every communicator (a step that
  /// failed may leave some), forgets the results no titanrt_wait took and
  /// every handle, and cancels a pending titanrt_start. Returns the first
  /// error among the forgotten results (their handles named), else an
  /// error for a pending titanrt_start, else success. A wait that blocks
  /// is a "wait" event of `tracer`.
  Status drain(Tracer *tracer = nullptr);

  /// The queues made so far.
  size_t getNumQueues() const;
  /// Whether some communicator has a queued or running collective.
  bool isBusy();

private:
  /// What a handle is doing.
  enum class State : uint8_t { Free, InFlight, Waited };
  struct Handle {
    State state = State::Free;
    /// While in flight or after: its collective and communicator.
    CollectiveKind kind = CollectiveKind::AllGather;
    int32_t communicator = -1;
  };

  /// checkNoPendingStart's failure.
  Status failPendingStart(const std::string &operation);
  /// The queue of communicator `index`, made for `communicator` if it has
  /// none yet.
  CollectiveQueue &getQueue(int32_t index, Communicator &communicator);

  /// The handle a titanrt_start gave for the next collective, or -1.
  int64_t pendingHandle = -1;
  /// The handles started so far. A drain frees them but keeps their
  /// entries, so that a step that reuses its handles allocates nothing.
  std::unordered_map<int64_t, Handle> handles;
  /// Makes the queues, and whether every call goes through them.
  CollectiveQueueFactory factory;
  bool queueEveryCall = false;
  /// By communicator index; null until its first queued collective.
  std::vector<std::unique_ptr<CollectiveQueue>> queues;
};

} // namespace titan::rt

#endif // TITAN_RUNTIME_CORE_ASYNCCOLLECTIVES_H
