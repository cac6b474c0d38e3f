//===- CommunicationThread.h - a communicator's collectives -----*- C++ -*-===//
//
// Asynchronous collectives (titanrt_start) run on a thread of their
// communicator, in the order the program issued them, while the main thread
// computes. A CollectiveCall is one call of a Communicator as data, so that
// the same call runs inline on the main thread or later on that thread.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CORE_COMMUNICATIONTHREAD_H
#define TITAN_RUNTIME_CORE_COMMUNICATIONTHREAD_H

#include "comm/Communicator.h"
#include "comm/Progress.h"
#include "core/Tracer.h"

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace titan::rt {

/// One call of a Communicator's operation with its arguments.
struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::AllGather;
  /// all_reduce and reduce_scatter: the elements and their reduction.
  titanrt_dtype dtype = TITANRT_F32;
  titanrt_reduce reduce = TITANRT_SUM;
  const void *in = nullptr;
  void *out = nullptr;
  /// The size argument: bytes (all_gather, broadcast, send, recv), elements
  /// (all_reduce, reduce_scatter) or bytes per peer (all_to_all).
  int64_t size = 0;
  /// broadcast's root; send's and recv's peer.
  int64_t member = 0;
  /// send's and recv's tag.
  int64_t tag = 0;

  /// Whether titanrt_start can make the call asynchronous: every
  /// collective but barrier (send and recv are not).
  bool canBeAsynchronous() const;
  /// The bytes it moves, for traces.
  int64_t getTracedBytes() const;
  /// Runs it on `communicator`.
  Status run(Communicator &communicator) const;
};

/// The asynchronous collectives of one communicator: a thread that runs
/// them in FIFO order, and their results until they are taken. Only one
/// other thread (the rank's main thread) calls its methods; that thread
/// uses the communicator itself only while isBusy() is false, so the
/// communicator is used by one thread at a time.
class CommunicationThread {
public:
  /// Starts the thread of `communicator`, the rank's communicator `index`.
  CommunicationThread(Communicator &communicator, int32_t index);
  /// Runs what is queued, then stops and joins the thread.
  ~CommunicationThread();
  CommunicationThread(const CommunicationThread &) = delete;
  CommunicationThread &operator=(const CommunicationThread &) = delete;

  /// Queues `call` under `handle`; `tracer` (if not null) records it, if
  /// it records when the call runs.
  void enqueue(const CollectiveCall &call, int64_t handle, Tracer *tracer);
  /// Whether a queued call has not completed yet.
  bool isBusy();
  /// Blocks until every queued call completed; returns whether it had to
  /// wait.
  bool waitUntilIdle();
  /// Blocks until the call queued under `handle` completed and returns its
  /// Status; `blocked` says whether it had to wait. `handle` must be
  /// queued and not yet taken.
  Status take(int64_t handle, bool &blocked);
  /// A result no one took.
  struct Result {
    int64_t handle = 0;
    CollectiveKind kind = CollectiveKind::AllGather;
    Status status;
  };
  /// Blocks until every queued call completed, then forgets every result
  /// not taken; returns the first failed one's (ok() if none failed).
  Result drain();
  /// The first completed call that failed and was not taken yet (a copy;
  /// it stays to be taken), if any.
  std::optional<Result> findFailure();

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
