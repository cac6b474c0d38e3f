//===- CommunicationThread.cpp - a communicator's queue of collectives ----===//

#include "core/CommunicationThread.h"

#include <pthread.h>

#include <string>

namespace titan::rt {

namespace {

/// The queued calls and results a thread has room for from the start.
constexpr size_t kReservedCalls = 256;

} // namespace

CommunicationThread::CommunicationThread(Communicator &communicator,
                                         int32_t index)
    : communicator(communicator), index(index) {
  // Room for a step's worth of queued calls, so that later steps (which
  // may queue more at once than the first) do not allocate.
  queue.reserve(kReservedCalls);
  results.reserve(kReservedCalls);
  thread = std::thread([this] { runQueue(); });
  // "titan-comm-3" in debuggers and top (at most 15 characters).
  std::string name = "titan-comm-" + std::to_string(index);
  pthread_setname_np(thread.native_handle(), name.substr(0, 15).c_str());
}

CommunicationThread::~CommunicationThread() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_one();
  thread.join();
}

void CommunicationThread::enqueue(const CollectiveCall &call, int64_t handle,
                                  Tracer *tracer) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    queue.push_back({call, handle, tracer});
    ++pending;
  }
  wake.notify_one();
}

bool CommunicationThread::isBusy() {
  std::lock_guard<std::mutex> lock(mutex);
  return pending != 0;
}

bool CommunicationThread::waitUntilIdle() {
  std::unique_lock<std::mutex> lock(mutex);
  if (pending == 0)
    return false;
  completed.wait(lock, [&] { return pending == 0; });
  return true;
}

Status CommunicationThread::take(int64_t handle, bool &blocked) {
  std::unique_lock<std::mutex> lock(mutex);
  blocked = false;
  while (true) {
    for (Result &result : results) {
      if (result.handle != handle)
        continue;
      Status status = std::move(result.status);
      result = std::move(results.back());
      results.pop_back();
      return status;
    }
    blocked = true;
    completed.wait(lock);
  }
}

Status CommunicationThread::run(const CollectiveCall &call) {
  return call.run(communicator);
}

CommunicationThread::Result CommunicationThread::drain() {
  std::unique_lock<std::mutex> lock(mutex);
  completed.wait(lock, [&] { return pending == 0; });
  Result first;
  for (Result &result : results)
    if (first.status.ok() && !result.status.ok())
      first = std::move(result);
  results.clear();
  return first;
}

std::optional<CommunicationThread::Result> CommunicationThread::findFailure() {
  std::lock_guard<std::mutex> lock(mutex);
  for (const Result &result : results)
    if (!result.status.ok())
      return result;
  return std::nullopt;
}

void CommunicationThread::runQueue() {
  std::unique_lock<std::mutex> lock(mutex);
  while (true) {
    wake.wait(lock, [&] { return stopping || head < queue.size(); });
    if (head == queue.size())
      return; // Stopping, and nothing is left.
    Item item = queue[head++];
    if (head == queue.size()) {
      queue.clear();
      head = 0;
    }
    lock.unlock();
    Status status;
    {
      // Recorded before the call counts as completed: a step's trace is
      // written once its calls completed.
      TraceScope trace(item.tracer, getCollectiveName(item.call.kind),
                       "collective", Tracer::getThreadTrack(index), index);
      trace.arg("bytes", item.call.getTracedBytes());
      trace.arg("handle", item.handle);
      status = item.call.run(communicator);
    }
    lock.lock();
    results.push_back({item.handle, item.call.kind, std::move(status)});
    --pending;
    completed.notify_all();
  }
}

} // namespace titan::rt
