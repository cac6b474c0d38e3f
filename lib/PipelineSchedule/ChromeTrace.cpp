//===- ChromeTrace.cpp - a simulated step as a Chrome trace ---------------===//
//
// The Trace Event Format of chrome://tracing and Perfetto: one process per
// pp rank (named "pp rank R", sorted by rank) whose thread holds a complete
// ("X") event per action and whose "memory" counter ("C") follows the
// rank's bytes. Times are microseconds.
//
//===----------------------------------------------------------------------===//

#include "titan/PipelineSchedule/Simulator.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::titan;

/// The event name of `action`: kind, microbatch, stage ("F3 s1").
static std::string getEventName(const PipelineAction &action) {
  std::string name = getPipelineActionKindName(action.kind).str();
  if (action.microbatch)
    name += std::to_string(*action.microbatch);
  return name + " s" + std::to_string(action.stage);
}

/// The event category of `action`.
static llvm::StringRef getCategory(PipelineActionKind kind) {
  if (kind == PipelineActionKind::Forward)
    return "forward";
  if (isComputeAction(kind))
    return "backward";
  if (isCommunicationAction(kind))
    return "communication";
  return "other";
}

/// Seconds as the trace's microseconds.
static double toMicroseconds(double seconds) { return seconds * 1e6; }

void mlir::titan::writeChromeTrace(const PipelineSimulation &simulation,
                                   llvm::raw_ostream &os) {
  llvm::json::OStream json(os);
  json.object([&] {
    json.attribute("displayTimeUnit", "ms");
    json.attributeArray("traceEvents", [&] {
      for (auto [rank, timeline] : llvm::enumerate(simulation.ranks)) {
        int64_t pid = static_cast<int64_t>(rank);
        auto metadata = [&](llvm::StringRef name, llvm::json::Object args) {
          json.value(llvm::json::Object{{"name", name},
                                        {"ph", "M"},
                                        {"pid", pid},
                                        {"tid", 0},
                                        {"args", std::move(args)}});
        };
        metadata("process_name",
                 llvm::json::Object{
                     {"name", llvm::formatv("pp rank {0}", rank).str()}});
        metadata("process_sort_index", llvm::json::Object{{"sort_index", pid}});
        metadata("thread_name", llvm::json::Object{{"name", "actions"}});
        for (const TimedAction &timed : timeline.actions) {
          llvm::json::Object args{{"stage", timed.action.stage}};
          if (timed.action.microbatch)
            args["microbatch"] = *timed.action.microbatch;
          json.value(llvm::json::Object{
              {"name", getEventName(timed.action)},
              {"cat", getCategory(timed.action.kind)},
              {"ph", "X"},
              {"pid", pid},
              {"tid", 0},
              {"ts", toMicroseconds(timed.startSeconds)},
              {"dur", toMicroseconds(timed.endSeconds - timed.startSeconds)},
              {"args", std::move(args)}});
        }
        for (const MemorySample &sample : timeline.memory)
          json.value(llvm::json::Object{
              {"name", "memory"},
              {"ph", "C"},
              {"pid", pid},
              {"ts", toMicroseconds(sample.seconds)},
              {"args", llvm::json::Object{{"bytes", sample.bytes}}}});
      }
    });
  });
}
