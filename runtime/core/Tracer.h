//===- Tracer.h - Chrome traces of a rank's steps ---------------*- C++ -*-===//
//
// `[profiling] enable_profiling`: every `profile_freq`-th step, each rank
// records what its step did (every runtime call: GEMMs, attention, the
// embedding's scatter-add, each collective with its mesh axes and bytes; the
// compiled kernels between them; reading the batch) and writes it as a
// Chrome trace (open in Perfetto or chrome://tracing) to
// `dump_folder/save_traces_folder/iteration_N/rank<R>_trace.json`, where
// torchtitan's profiler writes its traces.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CORE_TRACER_H
#define TITAN_RUNTIME_CORE_TRACER_H

#include "core/Status.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace titan::rt {

/// The events of one traced step. The main thread begins and finishes a
/// step; while it records, the communication threads (CommunicationThread.h)
/// record their collectives too, on tracks of their own.
class Tracer {
public:
  /// The track of the main thread's runtime calls and compiled kernels.
  static constexpr int kComputeTrack = 0;
  /// The track of the collectives the main thread runs itself.
  static constexpr int kCommunicationTrack = 1;
  /// The track of communicator `communicator`'s communication thread,
  /// named "communication (<its mesh axes>)".
  static int getThreadTrack(int32_t communicator) {
    return kCommunicationTrack + 1 + communicator;
  }

  /// One complete event ("ph": "X").
  struct Event {
    const char *name = "";
    const char *category = "";
    /// kComputeTrack, kCommunicationTrack or a getThreadTrack().
    int track = kComputeTrack;
    double startMicros = 0;
    double micros = 0;
    /// A communicator index, or -1.
    int32_t communicator = -1;
    /// Up to three named integers ("bytes", "m", ...): null names unused.
    const char *argNames[3] = {nullptr, nullptr, nullptr};
    int64_t args[3] = {0, 0, 0};
  };

  /// `names`: each communicator's mesh axes ("fsdp", "dp_shard,cp").
  explicit Tracer(std::vector<std::string> communicatorNames);

  /// Microseconds since the tracer was made.
  double now() const;
  /// Starts recording step `step`.
  void begin(int64_t step);
  /// Records `event` (from any thread); for an event of the main thread
  /// (the compute or communication track), the time since its previous one
  /// becomes a "compiled kernels" event on the compute track.
  void record(const Event &event);
  /// The compiled step function returned: the time since the main
  /// thread's last event becomes a "compiled kernels" event (the step's
  /// code after its last runtime call).
  void stepReturned();
  /// Ends the step and writes the trace of `rank` into `folder`. Every
  /// communication thread must have finished its step's collectives.
  Status finish(const std::string &folder, int64_t rank);
  /// Whether a step is being recorded.
  bool isRecording() const { return recording.load(std::memory_order_acquire); }

private:
  /// Records the time from the main thread's last event to `micros` as a
  /// "compiled kernels" event, if there is any; `mutex` is held.
  void recordKernelsUntil(double micros);

  std::chrono::steady_clock::time_point origin;
  std::vector<std::string> communicatorNames;
  /// Guards `events` and `lastEnd` against the communication threads.
  std::mutex mutex;
  std::vector<Event> events;
  int64_t step = 0;
  double stepStart = 0;
  double lastEnd = 0;
  std::atomic<bool> recording{false};
};

/// Records the runtime call it spans when a tracer records.
class TraceScope {
public:
  TraceScope(Tracer *tracer, const char *name, const char *category,
             int track = 0, int32_t communicator = -1)
      : tracer(tracer && tracer->isRecording() ? tracer : nullptr) {
    if (!this->tracer)
      return;
    event.name = name;
    event.category = category;
    event.track = track;
    event.communicator = communicator;
    event.startMicros = this->tracer->now();
  }
  ~TraceScope() {
    if (!tracer)
      return;
    event.micros = tracer->now() - event.startMicros;
    tracer->record(event);
  }
  TraceScope(const TraceScope &) = delete;
  TraceScope &operator=(const TraceScope &) = delete;

  /// Adds a named integer to the event (at most three).
  void arg(const char *name, int64_t value) {
    for (int i = 0; i < 3; ++i)
      if (!event.argNames[i]) {
        event.argNames[i] = name;
        event.args[i] = value;
        return;
      }
  }

private:
  Tracer *tracer;
  Tracer::Event event;
};

} // namespace titan::rt

#endif // TITAN_RUNTIME_CORE_TRACER_H
