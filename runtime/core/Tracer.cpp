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
  events.clear();
  step = traced;
  stepStart = lastEnd = now();
  recording = true;
}

void Tracer::record(const Event &event) {
  if (event.track == 0 || event.communicator >= 0) {
    // What ran between two calls of the step: the compiled kernels.
    if (event.startMicros > lastEnd + 1.0) {
      Event kernels;
      kernels.name = "compiled kernels";
      kernels.category = "kernel";
      kernels.startMicros = lastEnd;
      kernels.micros = event.startMicros - lastEnd;
      events.push_back(kernels);
    }
    lastEnd = event.startMicros + event.micros;
  }
  events.push_back(event);
}

Status Tracer::finish(const std::string &folder, int64_t rank) {
  recording = false;
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
