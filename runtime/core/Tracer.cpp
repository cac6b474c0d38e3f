//===- Tracer.cpp - Chrome traces of a rank's steps -----------------------===//

#include "core/Tracer.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace titan::rt;

Tracer::Tracer(std::vector<std::string> communicatorNames)
    : origin(std::chrono::steady_clock::now()),
      communicatorNames(std::move(communicatorNames)) {
  // A step of a large model makes thousands of calls: room for them, so
  // that a traced step does not allocate.
  events.reserve(1 << 16);
}

double Tracer::now() const {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now() - origin)
      .count();
}

void Tracer::begin(int64_t traced) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    events.clear();
    step = traced;
    stepStart = lastEnd = now();
  }
  recording.store(true, std::memory_order_release);
}

void Tracer::recordKernelsUntil(double micros) {
  // What ran between two calls of the step: the compiled kernels.
  if (micros > lastEnd + 1.0) {
    Event kernels;
    kernels.name = "compiled kernels";
    kernels.category = "kernel";
    kernels.startMicros = lastEnd;
    kernels.micros = micros - lastEnd;
    events.push_back(kernels);
  }
}

void Tracer::record(const Event &event) {
  std::lock_guard<std::mutex> lock(mutex);
  if (event.track <= kCommunicationTrack) {
    recordKernelsUntil(event.startMicros);
    lastEnd = event.startMicros + event.micros;
  }
  events.push_back(event);
}

void Tracer::stepReturned() {
  std::lock_guard<std::mutex> lock(mutex);
  double end = now();
  recordKernelsUntil(end);
  lastEnd = end;
}

Status Tracer::finish(const std::string &folder, int64_t rank) {
  recording.store(false, std::memory_order_release);
  std::lock_guard<std::mutex> lock(mutex);
  double end = now();
  llvm::SmallString<256> path(folder);
  llvm::sys::path::append(path, "iteration_" + std::to_string(step));
  if (std::error_code error = llvm::sys::fs::create_directories(path))
    return Status::io("cannot create the trace folder '" + std::string(path) +
                      "': " + error.message());
  llvm::sys::path::append(path, "rank" + std::to_string(rank) + "_trace.json");
  std::error_code error;
  llvm::raw_fd_ostream os(path, error);
  if (error)
    return Status::io("cannot write '" + std::string(path) +
                      "': " + error.message());
  os << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  os << llvm::formatv("{{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": "
                      "{0}, \"args\": {{\"name\": \"rank {0}\"}},\n",
                      rank);
  for (auto [track, name] :
       {std::pair<int, const char *>{0, "compute"}, {1, "communication"}})
    os << llvm::formatv("{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": "
                        "{0}, \"tid\": {1}, \"args\": {{\"name\": \"{2}\"}},\n",
                        rank, track, name);
  // The communication threads that ran collectives of this step.
  std::vector<bool> threads(communicatorNames.size());
  for (const Event &event : events)
    if (event.track > kCommunicationTrack && event.communicator >= 0 &&
        size_t(event.communicator) < threads.size())
      threads[event.communicator] = true;
  for (size_t communicator = 0; communicator < threads.size(); ++communicator)
    if (threads[communicator])
      os << llvm::formatv(
          "{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {0}, "
          "\"tid\": {1}, \"args\": {{\"name\": \"communication ({2})\"}},\n",
          rank, getThreadTrack(int32_t(communicator)),
          communicatorNames[communicator]);
  os << llvm::formatv("{{\"ph\": \"X\", \"name\": \"step {0}\", \"cat\": "
                      "\"step\", \"pid\": {1}, \"tid\": 0, \"ts\": {2:F3}, "
                      "\"dur\": {3:F3}}",
                      step, rank, stepStart, end - stepStart);
  for (const Event &event : events) {
    os << llvm::formatv(",\n{{\"ph\": \"X\", \"name\": \"{0}{1}\", \"cat\": "
                        "\"{2}\", \"pid\": {3}, \"tid\": {4}, \"ts\": {5:F3}, "
                        "\"dur\": {6:F3}, \"args\": {{",
                        event.name,
                        event.communicator >= 0 && size_t(event.communicator) <
                                                       communicatorNames.size()
                            ? " [" + communicatorNames[event.communicator] + "]"
                            : std::string(),
                        event.category, rank, event.track, event.startMicros,
                        event.micros);
    bool first = true;
    for (int i = 0; i < 3; ++i) {
      if (!event.argNames[i])
        continue;
      os << (first ? "" : ", ") << "\"" << event.argNames[i]
         << "\": " << event.args[i];
      first = false;
    }
    os << "}}";
  }
  os << "\n]}\n";
  return Status::success();
}
