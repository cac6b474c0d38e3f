//===- CollectiveQueue.h - a communicator's ordered collectives -*- C++ -*-===//
//
// The collectives of one communicator run in the order the program issued
// them, as every member of a group must see them. A CollectiveQueue is how a
// backend keeps that order while the rank computes: the CPU backend's
// CommunicationThread runs titanrt_start's collectives on a thread of the
// communicator; the CUDA backend's StreamCollectiveQueue enqueues every
// collective on the communication stream, ordered with the compute stream by
// events, and the host never waits. AsyncCollectives (titanrt_start,
// titanrt_wait) keeps the handles and asks the queue.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CORE_COLLECTIVEQUEUE_H
#define TITAN_RUNTIME_CORE_COLLECTIVEQUEUE_H

#include "comm/Communicator.h"
#include "comm/Progress.h"
#include "core/Tracer.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

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

/// The collectives of one communicator, in the order they were given. Only
/// the rank's main thread calls its methods.
class CollectiveQueue {
public:
  virtual ~CollectiveQueue() = default;

  /// Runs `call` as a synchronous collective, after every queued one: what
  /// the rank computes next sees its result. The caller waited
  /// (waitUntilIdle) and checked findFailure first.
  virtual Status run(const CollectiveCall &call) = 0;
  /// Queues `call` under `handle` (titanrt_start); `tracer` (if not null)
  /// records it, if it records when the call runs.
  virtual void enqueue(const CollectiveCall &call, int64_t handle,
                       Tracer *tracer) = 0;
  /// Whether a queued call has not completed yet.
  virtual bool isBusy() = 0;
  /// Blocks until the communicator may be used for a call that is not
  /// queued; returns whether it had to wait.
  virtual bool waitUntilIdle() = 0;
  /// titanrt_wait: once this returns, what the rank computes next sees the
  /// result of the call queued under `handle`; returns its Status.
  /// `blocked` says whether the host had to wait. `handle` must be queued
  /// and not yet taken.
  virtual Status take(int64_t handle, bool &blocked) = 0;
  /// A result no one took.
  struct Result {
    int64_t handle = 0;
    CollectiveKind kind = CollectiveKind::AllGather;
    Status status;
  };
  /// Completes every queued call as take() would, then forgets every result
  /// not taken; returns the first failed one's (ok() if none failed).
  virtual Result drain() = 0;
  /// The first queued call that failed and was not taken yet (a copy; it
  /// stays to be taken), if any.
  virtual std::optional<Result> findFailure() = 0;
};

/// Makes the queue of `communicator`, the rank's communicator `index`.
using CollectiveQueueFactory = std::function<std::unique_ptr<CollectiveQueue>(
    Communicator &communicator, int32_t index)>;

} // namespace titan::rt

#endif // TITAN_RUNTIME_CORE_COLLECTIVEQUEUE_H
