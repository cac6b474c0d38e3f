//===- OverlapTimeline.cpp - a rank's step with asynchronous collectives --===//
//
// The simulation of titan/Report/OverlapTimeline.h, its Chrome trace
// (the conventions of lib/PipelineSchedule/ChromeTrace.cpp: metadata events
// name the processes and threads, one complete "X" event per span, times in
// microseconds) and the plan report's overlap section.
//
//===----------------------------------------------------------------------===//

#include "titan/Report/OverlapTimeline.h"

#include "PartitionedStep.h"
#include "ReportFormat.h"
#include "titan/CostModel/CollectiveTime.h"

#include "titan/CostModel/OpTime.h"
#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::titan;

namespace {

/// The name of `op` without its dialect ("all_gather").
std::string getShortName(Operation *op) {
  return op->getName().stripDialect().str();
}

/// The streams of one rank while the simulation walks its program.
class Simulation {
public:
  Simulation(MeshOp mesh, const DeviceDescription &device, int64_t ranksPerNode)
      : mesh(mesh), device(device), ranksPerNode(ranksPerNode) {}

  /// Advances the streams over `op`, the next op of the program.
  void step(Operation *op);
  /// The timeline, once every op is stepped.
  OverlapTimeline finish();

private:
  /// A collective issued on a communication stream.
  struct Issued {
    int64_t stream = 0;
    double end = 0;
  };

  /// The index of the communicator of `time`, added on first use.
  int64_t getStream(const CollectiveTime &time);
  /// Holds the compute stream until `until`, waiting for `collective`.
  void wait(double until, Operation *collective);
  /// Adds a span of `op` on `stream`.
  TimelineEvent &addEvent(TimelineEventKind kind, int64_t stream, Operation *op,
                          double start, double end);
  OverlapSeconds &getPhaseSeconds(Operation *op) {
    return timeline
        .phases[static_cast<int>(getPhase(op).value_or(Phase::Forward))];
  }

  MeshOp mesh;
  const DeviceDescription &device;
  int64_t ranksPerNode;
  OverlapTimeline timeline;
  /// The compute stream's clock: where the program is.
  double now = 0;
  /// By communicator: when its stream is free, and the collective it ran
  /// or queued last.
  SmallVector<double> streamFree;
  SmallVector<Operation *> lastIssued;
  llvm::StringMap<int64_t> streamOf;
  DenseMap<Operation *, Issued> issued;
};

int64_t Simulation::getStream(const CollectiveTime &time) {
  auto [entry, inserted] =
      streamOf.try_emplace(time.axes, timeline.communicators.size());
  if (inserted) {
    CommunicatorSeconds communicator;
    communicator.axes = time.axes;
    communicator.internode = time.internode;
    timeline.communicators.push_back(std::move(communicator));
    streamFree.push_back(0);
    lastIssued.push_back(nullptr);
  }
  return entry->second;
}

TimelineEvent &Simulation::addEvent(TimelineEventKind kind, int64_t stream,
                                    Operation *op, double start, double end) {
  TimelineEvent &event = timeline.events.emplace_back();
  event.kind = kind;
  event.stream = stream;
  event.name = getShortName(op);
  if (std::optional<StringRef> path = getModulePath(op->getLoc()))
    event.modulePath = path->str();
  event.phase = getPhase(op);
  event.startSeconds = start;
  event.endSeconds = end;
  return event;
}

void Simulation::wait(double until, Operation *collective) {
  if (until <= now)
    return;
  double exposed = until - now;
  timeline.step.exposed += exposed;
  getPhaseSeconds(collective).exposed += exposed;
  int64_t stream = issued.lookup(collective).stream;
  timeline.communicators[stream].exposed += exposed;
  TimelineEvent &event =
      addEvent(TimelineEventKind::Exposed, OverlapTimeline::kComputeStream,
               collective, now, until);
  event.name = "wait for " + event.name;
  now = until;
}

void Simulation::step(Operation *op) {
  if (auto waitOp = dyn_cast<WaitOp>(op)) {
    Operation *collective = waitOp.getInput().getDefiningOp();
    auto found = issued.find(collective);
    if (found != issued.end())
      wait(found->second.end, collective);
    return;
  }
  if (auto collective = dyn_cast<CollectiveOpInterface>(op)) {
    CollectiveTime time =
        predictCollectiveTime(collective, mesh, device, ranksPerNode);
    int64_t stream = getStream(time);
    CommunicatorSeconds &communicator = timeline.communicators[stream];
    bool asynchronous = op->hasAttr(TitanDialect::kAsyncAttrName);
    ++communicator.count;
    communicator.asynchronous += asynchronous;
    communicator.communication += time.seconds;
    timeline.step.communication += time.seconds;
    getPhaseSeconds(op).communication += time.seconds;
    // A synchronous collective runs once its communicator's queue drained.
    if (!asynchronous && lastIssued[stream])
      wait(streamFree[stream], lastIssued[stream]);
    double start = std::max(now, streamFree[stream]);
    double end = start + time.seconds;
    streamFree[stream] = end;
    lastIssued[stream] = op;
    issued[op] = Issued{stream, end};
    addEvent(TimelineEventKind::Collective, stream, op, start, end)
        .asynchronous = asynchronous;
    if (!asynchronous)
      wait(end, op);
    return;
  }
  std::optional<double> seconds = predictOpSeconds(device, op);
  if (!seconds)
    return;
  addEvent(TimelineEventKind::Compute, OverlapTimeline::kComputeStream, op, now,
           now + *seconds);
  timeline.step.compute += *seconds;
  getPhaseSeconds(op).compute += *seconds;
  now += *seconds;
}

OverlapTimeline Simulation::finish() {
  timeline.stepSeconds = now;
  for (double free : streamFree)
    timeline.stepSeconds = std::max(timeline.stepSeconds, free);
  return std::move(timeline);
}

/// Seconds as the trace's microseconds.
double toMicroseconds(double seconds) { return seconds * 1e6; }

/// The trace category of `kind`.
StringRef getCategory(TimelineEventKind kind) {
  switch (kind) {
  case TimelineEventKind::Compute:
    return "compute";
  case TimelineEventKind::Collective:
    return "communication";
  case TimelineEventKind::Exposed:
    return "exposed";
  }
  llvm_unreachable("unknown event kind");
}

} // namespace

FailureOr<OverlapTimeline>
mlir::titan::simulateOverlap(ModuleOp module, const DeviceDescription &device,
                             int64_t ranksPerNode) {
  FailureOr<PartitionedStep> step =
      getPartitionedStep(module, "the overlap timeline");
  if (failed(step))
    return failure();
  Simulation simulation(step->mesh, device, ranksPerNode);
  step->function.walk([&](Operation *op) { simulation.step(op); });
  return simulation.finish();
}

void mlir::titan::writeOverlapTrace(ArrayRef<OverlapTimeline> ranks,
                                    llvm::raw_ostream &os, StringRef label) {
  llvm::json::OStream json(os);
  json.object([&] {
    json.attribute("displayTimeUnit", "ms");
    json.attributeArray("traceEvents", [&] {
      for (auto [rank, timeline] : llvm::enumerate(ranks)) {
        int64_t pid = static_cast<int64_t>(rank);
        auto metadata = [&](StringRef name, int64_t tid,
                            llvm::json::Object args) {
          json.value(llvm::json::Object{{"name", name},
                                        {"ph", "M"},
                                        {"pid", pid},
                                        {"tid", tid},
                                        {"args", std::move(args)}});
        };
        metadata("process_name", 0,
                 llvm::json::Object{
                     {"name", llvm::formatv("{0} {1}", label, rank).str()}});
        metadata("process_sort_index", 0,
                 llvm::json::Object{{"sort_index", pid}});
        // Thread 0 computes; communicator i is thread i + 1.
        metadata("thread_name", 0, llvm::json::Object{{"name", "compute"}});
        metadata("thread_sort_index", 0, llvm::json::Object{{"sort_index", 0}});
        for (auto [index, communicator] :
             llvm::enumerate(timeline.communicators)) {
          int64_t tid = static_cast<int64_t>(index) + 1;
          metadata("thread_name", tid,
                   llvm::json::Object{
                       {"name", "communication (" + communicator.axes + ")"}});
          metadata("thread_sort_index", tid,
                   llvm::json::Object{{"sort_index", tid}});
        }
        for (const TimelineEvent &event : timeline.events) {
          llvm::json::Object args;
          if (!event.modulePath.empty())
            args["module"] = event.modulePath;
          if (event.phase)
            args["phase"] = stringifyPhase(*event.phase);
          if (event.kind == TimelineEventKind::Collective)
            args["async"] = event.asynchronous;
          json.value(llvm::json::Object{
              {"name", event.name},
              {"cat", getCategory(event.kind)},
              {"ph", "X"},
              {"pid", pid},
              {"tid", event.stream + 1},
              {"ts", toMicroseconds(event.startSeconds)},
              {"dur", toMicroseconds(event.endSeconds - event.startSeconds)},
              {"args", std::move(args)}});
        }
      }
    });
  });
}

FailureOr<OverlapTimeline> mlir::titan::simulateScheduled(
    ModuleOp module, const TitanPipelineOptions &options,
    const DeviceDescription &device, int64_t ranksPerNode) {
  OwningOpRef<ModuleOp> program(module.clone());
  PassManager pm(module.getContext());
  buildSchedulingPipeline(pm, options);
  if (failed(pm.run(*program)))
    return failure();
  return simulateOverlap(*program, device, ranksPerNode);
}

FailureOr<OverlapComparison> mlir::titan::compareOverlap(
    ModuleOp module, const TitanPipelineOptions &options,
    const DeviceDescription &device, int64_t ranksPerNode) {
  auto simulate = [&](const TitanPipelineOptions &scheduling) {
    return simulateScheduled(module, scheduling, device, ranksPerNode);
  };
  OverlapComparison comparison;
  comparison.deviceName = device.name;
  comparison.buckets = options.buckets.has_value();
  TitanPipelineOptions unscheduled = options;
  unscheduled.overlap.reset();
  unscheduled.asyncTensorParallel.reset();
  FailureOr<OverlapTimeline> before = simulate(unscheduled);
  if (failed(before))
    return failure();
  comparison.before = std::move(*before);
  if (options.overlap || options.asyncTensorParallel) {
    FailureOr<OverlapTimeline> after = simulate(options);
    if (failed(after))
      return failure();
    comparison.after = std::move(*after);
    comparison.asyncTensorParallel = options.asyncTensorParallel.has_value();
  }
  return comparison;
}

void mlir::titan::writeOverlapReport(const OverlapComparison &comparison,
                                     llvm::raw_ostream &os) {
  const OverlapTimeline &before = comparison.before;
  const OverlapTimeline *after =
      comparison.after ? &*comparison.after : nullptr;
  os << "\n== Communication overlap (titan-schedule-overlap"
     << (comparison.asyncTensorParallel ? ", titan-decompose-collective-matmul"
                                        : "")
     << ") ==\n";
  os << "  one rank's step on device " << comparison.deviceName
     << ", as the executable runs it: a collective marked titan.async runs "
        "on its communicator's thread while compute goes on, up to its "
        "titan.wait; compute waits for the others (exposed: the time "
        "compute waits for communication)\n";
  if (!after)
    os << "  titan-schedule-overlap is off "
          "(parallelism.overlap_communication = false): every collective "
          "is synchronous\n";
  if (comparison.buckets)
    os << "  titan-bucket-collectives runs the parameter "
          "gathers of a block and phase as one all-gather, its gradient "
          "reductions as one reduce-scatter or all-reduce, where the step "
          "gains (parallelism.bucket_collectives)\n";
  if (comparison.asyncTensorParallel)
    os << "  after: async tensor parallelism "
          "(parallelism.enable_async_tensor_parallel) cuts tensor-parallel "
          "collective matmuls into chunks, each chunk's collective behind "
          "the other chunks' matmuls\n";
  // The exposed communication columns: before, and after the pass.
  auto exposedColumns = [&](double beforeSeconds, double afterSeconds) {
    std::string columns = llvm::formatv("{0,15}", humanSeconds(beforeSeconds));
    if (after)
      columns += llvm::formatv(" {0,15}", humanSeconds(afterSeconds)).str();
    return columns;
  };
  os << llvm::formatv("  {0,-10} {1,12} {2,14} {3,15}", "phase", "compute",
                      "communication", after ? "exposed before" : "exposed");
  if (after)
    os << llvm::formatv(" {0,15}", "exposed after");
  os << "\n";
  auto printRow = [&](StringRef name, const OverlapSeconds &seconds,
                      const OverlapSeconds *scheduled) {
    os << llvm::formatv("  {0,-10} {1,12} {2,14} ", name,
                        humanSeconds(seconds.compute),
                        humanSeconds(seconds.communication))
       << exposedColumns(seconds.exposed, scheduled ? scheduled->exposed : 0)
       << "\n";
  };
  for (Phase phase : {Phase::Forward, Phase::Backward, Phase::Optimizer})
    printRow(stringifyPhase(phase), before.getPhaseSeconds(phase),
             after ? &after->getPhaseSeconds(phase) : nullptr);
  printRow("step", before.step, after ? &after->step : nullptr);
  os << llvm::formatv("  {0,-10} {1,12} {2,14} ", "step time", "", "")
     << exposedColumns(before.stepSeconds, after ? after->stepSeconds : 0)
     << "\n";
  if (!before.communicators.empty()) {
    os << llvm::formatv("  {0,-18} {1,-10} {2,11} {3,12} {4,14} {5,15}",
                        "by mesh axes", "link", "collectives", "asynchronous",
                        "communication", after ? "exposed before" : "exposed");
    if (after)
      os << llvm::formatv(" {0,15}", "exposed after");
    os << "\n";
    for (const CommunicatorSeconds &communicator : before.communicators) {
      const CommunicatorSeconds *scheduled = nullptr;
      if (after)
        for (const CommunicatorSeconds &candidate : after->communicators)
          if (candidate.axes == communicator.axes)
            scheduled = &candidate;
      os << llvm::formatv("    {0,-16} {1,-10} {2,11} {3,12} {4,14} ",
                          "[" + communicator.axes + "]",
                          communicator.internode ? "inter-node" : "intra-node",
                          scheduled ? scheduled->count : communicator.count,
                          scheduled ? scheduled->asynchronous : 0,
                          humanSeconds(communicator.communication))
         << exposedColumns(communicator.exposed,
                           scheduled ? scheduled->exposed : 0)
         << "\n";
    }
  }
  if (!after)
    return;
  double hidden = before.step.exposed - after->step.exposed;
  os << "  exposed communication " << humanSeconds(before.step.exposed)
     << " before, " << humanSeconds(after->step.exposed) << " after";
  if (before.step.exposed > 0)
    os << llvm::formatv(" ({0:F1}% hidden behind compute)",
                        100 * hidden / before.step.exposed);
  os << "; step time " << humanSeconds(before.stepSeconds) << " before, "
     << humanSeconds(after->stepSeconds) << " after";
  if (before.stepSeconds > 0) {
    double change =
        100 * (after->stepSeconds - before.stepSeconds) / before.stepSeconds;
    os << llvm::formatv(" ({0:F1}% {1})", std::abs(change),
                        change > 0 ? "longer" : "shorter");
  }
  os << "\n";
}
