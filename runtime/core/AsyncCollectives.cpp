//===- AsyncCollectives.cpp - titanrt_start and titanrt_wait --------------===//

#include "core/AsyncCollectives.h"

#include "core/CommunicationThread.h"

#include <string>

namespace titan::rt {

namespace {

/// drain() forgets the handles themselves, not only their states, when a
/// program used more than this many: one that numbers its handles densely
/// keeps them (and allocates nothing), one that does not cannot grow the
/// table without bound.
constexpr size_t kMaxKeptHandles = size_t(1) << 16;

/// "handle 3".
std::string describeHandle(int64_t handle) {
  return "handle " + std::to_string(handle);
}

/// Whether `tracer` records now.
bool isRecording(Tracer *tracer) { return tracer && tracer->isRecording(); }

/// Records that the main thread waited from `startMicros` until now, with
/// the integer `argName` (if not null) = `arg`.
void recordWait(Tracer *tracer, double startMicros, const char *argName,
                int64_t arg) {
  Tracer::Event event;
  event.name = "wait";
  event.category = "wait";
  event.track = Tracer::kComputeTrack;
  event.startMicros = startMicros;
  event.micros = tracer->now() - startMicros;
  event.argNames[0] = argName;
  event.args[0] = arg;
  tracer->record(event);
}

} // namespace

AsyncCollectives::AsyncCollectives()
    : factory([](Communicator &communicator, int32_t index) {
        return std::make_unique<CommunicationThread>(communicator, index);
      }) {}

AsyncCollectives::~AsyncCollectives() {
  // The collectives' errors went nowhere: the step that started them
  // failed first, or it was never drained.
  (void)drain();
  queues.clear();
}

void AsyncCollectives::setQueueFactory(CollectiveQueueFactory queueFactory,
                                       bool everyCall) {
  factory = std::move(queueFactory);
  queueEveryCall = everyCall;
}

CollectiveQueue &AsyncCollectives::getQueue(int32_t index,
                                            Communicator &communicator) {
  if (size_t(index) >= queues.size())
    queues.resize(size_t(index) + 1);
  if (!queues[index])
    queues[index] = factory(communicator, index);
  return *queues[index];
}

Status AsyncCollectives::failPendingStart(const std::string &operation) {
  int64_t handle = pendingHandle;
  pendingHandle = -1;
  return Status::invalidArgument(
      operation + ": titanrt_start(" + describeHandle(handle) +
      ") was not followed by a collective (all_gather, reduce_scatter, "
      "all_reduce, all_to_all or broadcast)");
}

Status AsyncCollectives::start(int64_t handle) {
  TITANRT_RETURN_IF_ERROR(checkNoPendingStart("titanrt_start"));
  if (handle < 0)
    return Status::invalidArgument("titanrt_start: " + describeHandle(handle) +
                                   " is negative (handles are >= 0)");
  auto found = handles.find(handle);
  if (found != handles.end() && found->second.state == State::InFlight)
    return Status::invalidArgument(
        "titanrt_start: " + describeHandle(handle) +
        " is still in flight: its " + getCollectiveName(found->second.kind) +
        " on communicator " + std::to_string(found->second.communicator) +
        " was not waited for (titanrt_wait)");
  pendingHandle = handle;
  return Status::success();
}

std::string AsyncCollectives::consumePendingStart() {
  if (pendingHandle < 0)
    return "";
  std::string text = " (the collective of titanrt_start " +
                     describeHandle(pendingHandle) + ")";
  pendingHandle = -1;
  return text;
}

Status AsyncCollectives::run(Tracer *tracer, int32_t index,
                             Communicator &communicator,
                             const CollectiveCall &call) {
  if (pendingHandle >= 0) {
    if (!call.canBeAsynchronous())
      return failPendingStart(std::string("titanrt_") +
                              getCollectiveName(call.kind));
    int64_t handle = pendingHandle;
    pendingHandle = -1;
    CollectiveQueue &queue = getQueue(index, communicator);
    Handle &entry = handles[handle];
    entry.state = State::InFlight;
    entry.kind = call.kind;
    entry.communicator = index;
    queue.enqueue(call, handle, tracer);
    return Status::success();
  }
  synchronize(tracer, index);
  // An asynchronous collective queued before it failed: that failure (a
  // peer that died, with the watchdog's account of who did not arrive) is
  // the cause, not the communicator it left unusable.
  if (size_t(index) < queues.size() && queues[index])
    if (std::optional<CollectiveQueue::Result> failed =
            queues[index]->findFailure())
      return Status(failed->status.getCode(),
                    failed->status.getMessage() + " (the asynchronous " +
                        getCollectiveName(failed->kind) + " of " +
                        describeHandle(failed->handle) +
                        ", found failed by the synchronous " +
                        getCollectiveName(call.kind) + " after it)");
  TraceScope trace(tracer, getCollectiveName(call.kind), "collective",
                   Tracer::kCommunicationTrack, index);
  trace.arg("bytes", call.getTracedBytes());
  if (queueEveryCall)
    return getQueue(index, communicator).run(call);
  return call.run(communicator);
}

void AsyncCollectives::synchronize(Tracer *tracer, int32_t index) {
  if (size_t(index) >= queues.size() || !queues[index])
    return;
  double start = isRecording(tracer) ? tracer->now() : 0;
  if (queues[index]->waitUntilIdle() && isRecording(tracer))
    recordWait(tracer, start, "communicator", index);
}

Status AsyncCollectives::wait(Tracer *tracer, int64_t handle) {
  TITANRT_RETURN_IF_ERROR(checkNoPendingStart("titanrt_wait"));
  auto found = handles.find(handle);
  if (found == handles.end() || found->second.state == State::Free)
    return Status::invalidArgument("titanrt_wait: " + describeHandle(handle) +
                                   " was never started");
  Handle &entry = found->second;
  if (entry.state == State::Waited)
    return Status::invalidArgument("titanrt_wait: " + describeHandle(handle) +
                                   " was already waited for");
  double start = isRecording(tracer) ? tracer->now() : 0;
  bool blocked = false;
  Status status = queues[entry.communicator]->take(handle, blocked);
  entry.state = State::Waited;
  if (blocked && isRecording(tracer))
    recordWait(tracer, start, "handle", handle);
  // The collective's own message first, as for one that ran inline
  // ("reduce_scatter over mesh axes (fsdp) [ranks 0, 1]: ...").
  if (!status.ok())
    return Status(status.getCode(),
                  status.getMessage() + " (the asynchronous " +
                      getCollectiveName(entry.kind) + " of " +
                      describeHandle(handle) + ", at its titanrt_wait)");
  return status;
}

Status AsyncCollectives::drain(Tracer *tracer) {
  double start = isRecording(tracer) ? tracer->now() : 0;
  bool blocked = false;
  for (std::unique_ptr<CollectiveQueue> &queue : queues)
    if (queue)
      blocked |= queue->waitUntilIdle();
  if (blocked && isRecording(tracer))
    recordWait(tracer, start, nullptr, 0);
  Status first;
  for (std::unique_ptr<CollectiveQueue> &queue : queues) {
    if (!queue)
      continue;
    CollectiveQueue::Result result = queue->drain();
    if (first.ok() && !result.status.ok())
      first = Status(result.status.getCode(),
                     result.status.getMessage() + " (the asynchronous " +
                         getCollectiveName(result.kind) + " of " +
                         describeHandle(result.handle) + ", never waited for)");
  }
  if (first.ok() && pendingHandle >= 0)
    first = Status::invalidArgument(
        "titanrt_start(" + describeHandle(pendingHandle) +
        ") was not followed by a collective before the step returned");
  pendingHandle = -1;
  if (handles.size() > kMaxKeptHandles)
    handles.clear();
  else
    for (auto &[handle, entry] : handles)
      entry.state = State::Free;
  return first;
}

size_t AsyncCollectives::getNumQueues() const {
  size_t count = 0;
  for (const std::unique_ptr<CollectiveQueue> &queue : queues)
    count += queue != nullptr;
  return count;
}

bool AsyncCollectives::isBusy() {
  for (std::unique_ptr<CollectiveQueue> &queue : queues)
    if (queue && queue->isBusy())
      return true;
  return false;
}

} // namespace titan::rt
