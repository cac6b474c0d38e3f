//===- StreamCollectiveQueue.cpp - collectives on a CUDA stream -----------===//

#include "cuda/StreamCollectiveQueue.h"

#include "cuda/CudaStatus.h"

#include <algorithm>

namespace titan::rt::cuda {

CudaStreamOrder::CudaStreamOrder(cudaStream_t compute,
                                 cudaStream_t communication)
    : compute(compute), communication(communication) {}

CudaStreamOrder::~CudaStreamOrder() {
  if (computeEvent)
    cudaEventDestroy(computeEvent);
  for (cudaEvent_t event : events)
    if (event)
      cudaEventDestroy(event);
}

Status CudaStreamOrder::makeEvent(cudaEvent_t &event) {
  if (event)
    return Status::success();
  return checkCuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                   "cudaEventCreateWithFlags",
                   "creating an event to order collectives");
}

Status CudaStreamOrder::communicationAfterCompute() {
  TITANRT_RETURN_IF_ERROR(makeEvent(computeEvent));
  TITANRT_RETURN_IF_ERROR(checkCuda(cudaEventRecord(computeEvent, compute),
                                    "cudaEventRecord",
                                    "marking the compute stream before a "
                                    "collective"));
  return checkCuda(cudaStreamWaitEvent(communication, computeEvent, 0),
                   "cudaStreamWaitEvent",
                   "ordering a collective after the compute stream");
}

Status CudaStreamOrder::markCommunication(int64_t &mark) {
  if (free.empty()) {
    events.push_back(nullptr);
    free.push_back(int64_t(events.size()) - 1);
  }
  mark = free.back();
  TITANRT_RETURN_IF_ERROR(makeEvent(events[mark]));
  free.pop_back();
  Status recorded =
      checkCuda(cudaEventRecord(events[mark], communication), "cudaEventRecord",
                "marking the end of a collective");
  if (!recorded.ok())
    release(mark);
  return recorded;
}

Status CudaStreamOrder::computeAfter(int64_t mark) {
  return checkCuda(cudaStreamWaitEvent(compute, events[mark], 0),
                   "cudaStreamWaitEvent",
                   "ordering the compute stream after a collective");
}

bool CudaStreamOrder::isReached(int64_t mark) {
  return cudaEventQuery(events[mark]) != cudaErrorNotReady;
}

void CudaStreamOrder::release(int64_t mark) { free.push_back(mark); }

StreamCollectiveQueue::StreamCollectiveQueue(Communicator &communicator,
                                             int32_t index,
                                             std::unique_ptr<StreamOrder> order)
    : communicator(communicator), index(index), order(std::move(order)) {}

StreamCollectiveQueue::~StreamCollectiveQueue() {
  for (const Item &item : items)
    if (item.mark >= 0)
      order->release(item.mark);
}

Status StreamCollectiveQueue::issue(const CollectiveCall &call, int64_t &mark) {
  mark = -1;
  TITANRT_RETURN_IF_ERROR(order->communicationAfterCompute());
  TITANRT_RETURN_IF_ERROR(call.run(communicator));
  return order->markCommunication(mark);
}

Status StreamCollectiveQueue::join(Item &item) {
  if (item.mark < 0)
    return item.status;
  Status joined = order->computeAfter(item.mark);
  order->release(item.mark);
  item.mark = -1;
  return item.status.ok() ? joined : item.status;
}

Status StreamCollectiveQueue::run(const CollectiveCall &call) {
  Item item{-1, call.kind, -1, Status::success()};
  item.status = issue(call, item.mark);
  return join(item);
}

void StreamCollectiveQueue::enqueue(const CollectiveCall &call, int64_t handle,
                                    Tracer *tracer) {
  // The host's part: the collective is enqueued, not done.
  TraceScope trace(tracer, getCollectiveName(call.kind), "collective",
                   Tracer::kCommunicationTrack, index);
  trace.arg("bytes", call.getTracedBytes());
  Item item{handle, call.kind, -1, Status::success()};
  item.status = issue(call, item.mark);
  items.push_back(std::move(item));
}

bool StreamCollectiveQueue::isBusy() {
  return std::any_of(items.begin(), items.end(), [&](const Item &item) {
    return item.mark >= 0 && !order->isReached(item.mark);
  });
}

Status StreamCollectiveQueue::take(int64_t handle, bool &blocked) {
  blocked = false;
  auto found = std::find_if(items.begin(), items.end(), [&](const Item &item) {
    return item.handle == handle;
  });
  if (found == items.end())
    return Status::internal("titanrt_wait: handle " + std::to_string(handle) +
                            " is not queued on this communicator");
  Status status = join(*found);
  items.erase(found);
  return status;
}

CollectiveQueue::Result StreamCollectiveQueue::drain() {
  Result first;
  for (Item &item : items) {
    Status status = join(item);
    if (first.status.ok() && !status.ok())
      first = {item.handle, item.kind, status};
  }
  items.clear();
  return first;
}

std::optional<CollectiveQueue::Result> StreamCollectiveQueue::findFailure() {
  for (const Item &item : items)
    if (!item.status.ok())
      return Result{item.handle, item.kind, item.status};
  return std::nullopt;
}

} // namespace titan::rt::cuda
