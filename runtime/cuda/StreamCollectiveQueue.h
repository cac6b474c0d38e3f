//===- StreamCollectiveQueue.h - collectives on a CUDA stream ---*- C++ -*-===//
//
// The CUDA backend's CollectiveQueue. Its communicator (NCCL) enqueues
// every operation on the rank's communication stream and returns; the
// queue orders that stream with the compute stream by events, as the
// compiler's schedule asks:
//
//   synchronous collective:   communication waits for compute; the
//                             collective; compute waits for it
//   titanrt_start:            communication waits for compute; the
//                             collective (compute goes on)
//   titanrt_wait:             compute waits for that collective
//
// so the host never blocks on a collective, a collective reads its input
// only once the kernels before it wrote it, and the kernels after a
// synchronous collective (or after titanrt_wait) read its result. The
// stream operations are behind StreamOrder so that this order is checked
// without a GPU (test/unit/Runtime/Cuda/StreamCollectiveQueueTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CUDA_STREAMCOLLECTIVEQUEUE_H
#define TITAN_RUNTIME_CUDA_STREAMCOLLECTIVEQUEUE_H

#include "core/CollectiveQueue.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace titan::rt::cuda {

/// The stream operations a StreamCollectiveQueue orders its communicator's
/// work with: a compute stream and a communication stream, and marks
/// (events) on the communication stream.
class StreamOrder {
public:
  virtual ~StreamOrder() = default;
  /// The communication stream waits (on the GPU) for everything queued on
  /// the compute stream so far.
  virtual Status communicationAfterCompute() = 0;
  /// Marks the end of what is queued on the communication stream so far;
  /// `mark` names the point until release().
  virtual Status markCommunication(int64_t &mark) = 0;
  /// The compute stream waits (on the GPU) for `mark`.
  virtual Status computeAfter(int64_t mark) = 0;
  /// Whether the GPU passed `mark`.
  virtual bool isReached(int64_t mark) = 0;
  /// `mark` is not needed any more (its event is reused).
  virtual void release(int64_t mark) = 0;
};

/// StreamOrder over CUDA events between `compute` and `communication`
/// (streams of the current device, which outlive it).
class CudaStreamOrder final : public StreamOrder {
public:
  CudaStreamOrder(cudaStream_t compute, cudaStream_t communication);
  ~CudaStreamOrder() override;
  CudaStreamOrder(const CudaStreamOrder &) = delete;
  CudaStreamOrder &operator=(const CudaStreamOrder &) = delete;

  Status communicationAfterCompute() override;
  Status markCommunication(int64_t &mark) override;
  Status computeAfter(int64_t mark) override;
  bool isReached(int64_t mark) override;
  void release(int64_t mark) override;

private:
  /// An event made on first use (without timing), or a failure.
  Status makeEvent(cudaEvent_t &event);

  cudaStream_t compute;
  cudaStream_t communication;
  /// Recorded on the compute stream for communicationAfterCompute (a wait
  /// takes the event's state when it is enqueued, so one event serves).
  cudaEvent_t computeEvent = nullptr;
  /// Events by mark; `free` lists the released ones.
  std::vector<cudaEvent_t> events;
  std::vector<int64_t> free;
};

/// The collectives of one communicator whose operations are enqueued on a
/// stream (NcclCommunicator), ordered with the compute stream by `order`.
class StreamCollectiveQueue final : public CollectiveQueue {
public:
  /// The queue of `communicator`, the rank's communicator `index`.
  StreamCollectiveQueue(Communicator &communicator, int32_t index,
                        std::unique_ptr<StreamOrder> order);
  /// Releases the marks of collectives never taken (drain() orders them
  /// first).
  ~StreamCollectiveQueue() override;
  StreamCollectiveQueue(const StreamCollectiveQueue &) = delete;
  StreamCollectiveQueue &operator=(const StreamCollectiveQueue &) = delete;

  /// After the compute stream's work; the compute stream waits for it.
  Status run(const CollectiveCall &call) override;
  /// After the compute stream's work; the compute stream goes on.
  void enqueue(const CollectiveCall &call, int64_t handle,
               Tracer *tracer) override;
  /// Whether the GPU has not finished a collective not yet taken.
  bool isBusy() override;
  /// The host never waits: a later operation of the communicator is
  /// ordered after the queued ones on the communication stream.
  bool waitUntilIdle() override { return false; }
  /// The compute stream waits for the collective; the host does not
  /// (`blocked` is false).
  Status take(int64_t handle, bool &blocked) override;
  /// The compute stream waits for every collective not taken.
  Result drain() override;
  std::optional<Result> findFailure() override;

private:
  /// A collective enqueued under a handle and not taken yet: its mark on
  /// the communication stream (-1 when enqueueing failed) and Status.
  struct Item {
    int64_t handle;
    CollectiveKind kind;
    int64_t mark;
    Status status;
  };
  /// Orders `call` after the compute stream's work, enqueues it and marks
  /// its end in `mark` (-1 when it failed).
  Status issue(const CollectiveCall &call, int64_t &mark);
  /// The compute stream waits for `item`, whose mark is released; returns
  /// its Status (or the failure to order it).
  Status join(Item &item);

  Communicator &communicator;
  const int32_t index;
  std::unique_ptr<StreamOrder> order;
  std::vector<Item> items;
};

} // namespace titan::rt::cuda

#endif // TITAN_RUNTIME_CUDA_STREAMCOLLECTIVEQUEUE_H
