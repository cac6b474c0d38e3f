//===- OverlapTimeline.h - a step with async collectives --------*- C++ -*-===//
//
// One rank's training step simulated as the executable runs it: a compute
// stream that runs the ops in program order, and one communication stream
// per communicator (set of mesh axes) that runs that communicator's
// collectives in issue order, one at a time. A collective marked
// `titan.async` (titan-schedule-overlap) is queued on its stream and compute
// goes on until its `titan.wait`; any other collective is synchronous: the
// compute stream waits for its communicator's queue to drain and for the
// collective itself. Every op takes the cost model's seconds (OpTime.h,
// Device.h). The plan report compares the step before and after
// titan-schedule-overlap with it; --overlap-trace writes it as a Chrome
// trace.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_REPORT_OVERLAPTIMELINE_H
#define TITAN_REPORT_OVERLAPTIMELINE_H

#include "titan/CostModel/Device.h"
#include "titan/Dialect/Provenance.h"
#include "titan/Pipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::titan {

/// Compute and communication of (part of) a step, and the part of the
/// communication the compute stream waits for.
struct OverlapSeconds {
  double compute = 0;
  double communication = 0;
  /// Seconds the compute stream spends waiting on communication.
  double exposed = 0;
};

/// The collectives of one communicator (set of mesh axes).
struct CommunicatorSeconds {
  /// Its mesh axes joined by commas ("fsdp", "dp_shard,cp"), as the
  /// runtime names its communication thread.
  std::string axes;
  /// Whether it runs on the inter-node link.
  bool internode = false;
  /// Its collectives, and those of them marked `titan.async`.
  int64_t count = 0;
  int64_t asynchronous = 0;
  double communication = 0;
  double exposed = 0;
};

/// What a span of the simulated step is.
enum class TimelineEventKind {
  /// An op on the compute stream.
  Compute,
  /// A collective on its communicator's stream.
  Collective,
  /// The compute stream waiting for a collective (exposed communication).
  Exposed,
};

/// One span of the simulated step.
struct TimelineEvent {
  TimelineEventKind kind = TimelineEventKind::Compute;
  /// OverlapTimeline::kComputeStream, or the index of a communicator in
  /// OverlapTimeline::communicators.
  int64_t stream = -1;
  /// The op's name without its dialect ("matmul", "all_gather"); for a
  /// wait, "wait for " and the collective's.
  std::string name;
  /// The module path of the op (of the collective waited for), if any.
  std::string modulePath;
  std::optional<Phase> phase;
  /// A collective marked `titan.async`.
  bool asynchronous = false;
  double startSeconds = 0;
  double endSeconds = 0;
};

/// One rank's simulated step (simulateOverlap).
struct OverlapTimeline {
  /// The stream of the ops that compute.
  static constexpr int64_t kComputeStream = -1;

  /// The step, and by Phase (an op without a phase counts in the forward).
  /// Exposed time counts in the phase and the communicator of the
  /// collective the compute stream waits for.
  OverlapSeconds step;
  OverlapSeconds phases[3];
  /// The communicators, in the order of their first collective.
  std::vector<CommunicatorSeconds> communicators;
  /// From the start to the end of the last stream: the compute stream's
  /// compute and exposed time, unless communication outlasts it.
  double stepSeconds = 0;
  /// Every op that takes time, every collective and every wait that
  /// exposes communication, in program order.
  std::vector<TimelineEvent> events;

  const OverlapSeconds &getPhaseSeconds(Phase phase) const {
    return phases[static_cast<int>(phase)];
  }
};

/// Simulates one rank of `module`'s partitioned @train_step on `device`
/// with `ranksPerNode` ranks per node (0: one node). Rules, the compute
/// stream's clock at an op being the time the program reaches it:
///
/// - a compute op takes predictOpSeconds (ops without a prediction, views
///   and constants, take none);
/// - a collective marked `titan.async` starts when the program reaches it
///   or when its communicator's stream is free, whichever is later; the
///   compute stream goes on at once;
/// - a `titan.wait` holds the compute stream until its collective ended;
/// - any other collective holds the compute stream until its
///   communicator's stream is free, then runs, the compute stream waiting
///   for it.
///
/// Exposed time waiting at a titan.wait counts for its collective; at a
/// synchronous collective, the wait for the queue counts for the
/// collective queued last, the collective's own time for itself.
FailureOr<OverlapTimeline> simulateOverlap(ModuleOp module,
                                           const DeviceDescription &device,
                                           int64_t ranksPerNode);

/// Writes `ranks` (rank R: ranks[R]) as a Chrome trace (JSON) that
/// Perfetto and chrome://tracing open: one process per rank ("<label> R",
/// "rank R" by default; "pipeline rank R" for the programs of a pipeline),
/// thread 0 "compute" with its ops and the waits that expose communication
/// (category "exposed"), and one thread per communicator, "communication
/// (<its mesh axes>)" as the runtime's traces name them; times in
/// microseconds.
void writeOverlapTrace(ArrayRef<OverlapTimeline> ranks, llvm::raw_ostream &os,
                       StringRef label = "rank");

/// A rank's step before and after titan-schedule-overlap and
/// titan-decompose-collective-matmul.
struct OverlapComparison {
  /// Without the passes: every collective synchronous and whole.
  OverlapTimeline before;
  /// With the passes the options ask for; none when both are off.
  std::optional<OverlapTimeline> after;
  std::string deviceName;
  /// Whether "after" decomposes collective matmuls (async tensor
  /// parallelism).
  bool asyncTensorParallel = false;
  /// Whether both run titan-bucket-collectives.
  bool buckets = false;
};

/// Simulates `module` (a partitioned program before the executable's
/// planning, titan-compile --emit=spmd) as the executable runs it after
/// buildSchedulingPipeline with `options` (on a clone).
FailureOr<OverlapTimeline>
simulateScheduled(ModuleOp module, const TitanPipelineOptions &options,
                  const DeviceDescription &device, int64_t ranksPerNode);

/// Simulates `module` (a partitioned program before the executable's
/// planning, titan-compile --emit=spmd) twice, each on a clone run through
/// buildSchedulingPipeline: "before" without titan-decompose-collective-
/// matmul and titan-schedule-overlap, "after" with those `options` asks
/// for (none when it asks for neither: parallelism.overlap_communication
/// and enable_async_tensor_parallel are off). The two programs differ only
/// by those passes.
FailureOr<OverlapComparison> compareOverlap(ModuleOp module,
                                            const TitanPipelineOptions &options,
                                            const DeviceDescription &device,
                                            int64_t ranksPerNode);

/// Writes the plan report's section "Communication overlap": per phase the
/// compute, the communication and the exposed communication before and
/// after the pass, the step time, and per communicator its collectives,
/// how many run asynchronously and their exposed time.
void writeOverlapReport(const OverlapComparison &comparison,
                        llvm::raw_ostream &os);

} // namespace mlir::titan

#endif // TITAN_REPORT_OVERLAPTIMELINE_H
