//===- PipelineReport.h - predicted step of a pipeline ----------*- C++ -*-===//
//
// The plan report of pipeline parallelism. titan-partition-pipeline writes
// on each pipeline rank's @train_step what it chose and predicted
// (`titan.pipeline`: the blocks of each stage and, per stage, the seconds
// and bytes of one microbatch on one rank of the stage); this library turns
// that into the costs of the pipeline-schedule simulator
// (titan/PipelineSchedule/Simulator.h), simulates the configured schedule
// and every other schedule the same stages allow, and writes the stage
// table, the schedule's step time, bubbles, memory per pp rank, tokens/s
// and MFU, and the comparison of the schedules (docs/pipeline-schedules.md).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_REPORT_PIPELINEREPORT_H
#define TITAN_REPORT_PIPELINEREPORT_H

#include "titan/CostModel/Device.h"
#include "titan/PipelineSchedule/Simulator.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace mlir::titan {

/// What `titan.pipeline` holds (titan/Dialect/PipelineMesh.h): the stages
/// and, per stage, one microbatch's costs on one rank of the stage.
struct PipelinePlan {
  /// The pp ranks and the rank whose program carries the plan.
  int64_t degree = 1;
  int64_t rank = 0;
  /// torch's name of the schedule ("1F1B"), or the path of the schedule CSV
  /// the programs run, and the microbatches of a step.
  std::string schedule;
  int64_t microbatches = 1;
  /// Per stage: its transformer blocks; the seconds its blocks were
  /// balanced by (forward and backward); the seconds of its forward, of its
  /// input gradients (I) and of its weight gradients (W); the bytes its
  /// forward keeps for the backward, the part of them I frees, and the
  /// bytes its forward sends to the next stage.
  llvm::SmallVector<int64_t> stageBlocks;
  llvm::SmallVector<double> stageSeconds, forwardSeconds, inputGradSeconds,
      weightGradSeconds, activationBytes, inputGradFreedBytes, sentForwardBytes;

  int64_t getNumStages() const { return stageBlocks.size(); }
};

/// Reads a `titan.pipeline` attribute; the error names a missing or
/// mistyped key, or per-stage arrays of different lengths.
llvm::Expected<PipelinePlan> parsePipelinePlan(DictionaryAttr attr);

/// What the report reads from one pipeline rank's program (titan-compile
/// --emit=spmd under pipeline_parallel_degree > 1).
struct PipelineRankProgram {
  /// Its @train_step's `titan.pipeline`.
  PipelinePlan plan;
  /// The bytes of its parameters, optimizer state and buffers (the rank's
  /// shards).
  double stateBytes = 0;
  /// The element type of its matmuls (the peak MFU divides by; f32 when it
  /// has none).
  ElementType matmulType = ElementType::F32;
};

/// Reads a pipeline rank's program.
llvm::Expected<PipelineRankProgram> readPipelineRankProgram(ModuleOp module);

/// Where the pipeline runs and what a step trains.
struct PipelineTarget {
  DeviceDescription device;
  /// Ranks per node (0: every rank on one node).
  int64_t ranksPerNode = 0;
  /// The ranks of one pipeline stage (dp_replicate x fsdp x cp x tp):
  /// pipeline neighbours are this many global ranks apart (pp outermost).
  int64_t stageSize = 1;
  /// torchtitan's model FLOPs per token (ModelFlops::getFlopsPerToken) and
  /// the tokens of one microbatch over all data-parallel ranks.
  double flopsPerToken = 0;
  double tokensPerMicrobatch = 0;
  /// The element type of the matmuls, whose peak MFU divides by.
  ElementType matmulType = ElementType::F32;
  /// Per pp rank, the bytes it holds throughout the step (parameters,
  /// optimizer state, buffers), where known; empty: none known.
  llvm::SmallVector<std::optional<double>> stateBytesPerRank;
};

/// The seconds to move `bytes` between neighbouring pp ranks: one
/// point-to-point step on the link a mesh axis of `degree` pp ranks outside
/// stages of `stageSize` ranks runs on (getAxesLink), 0 for no bytes.
double predictPipelineTransferSeconds(const DeviceDescription &device,
                                      int64_t degree, int64_t stageSize,
                                      int64_t ranksPerNode, double bytes);

/// The simulator's costs of `plan`'s stages, with `transferSeconds` per
/// transfer between ranks.
PipelineCosts getPipelineCosts(const PipelinePlan &plan,
                               double transferSeconds);

/// The compute-only schedule `plan` names, for its degree, stages and
/// microbatches.
llvm::Expected<PipelineSchedule> generatePlanSchedule(const PipelinePlan &plan);

/// One schedule's simulated step and what it gives.
struct PipelinePrediction {
  /// The schedule's name ("1F1B", or the CSV file it came from).
  std::string name;
  PipelineSchedule schedule;
  PipelineSimulation simulation;
  /// torchtitan's tokens per second per device (the step's tokens over
  /// every rank of the pipeline), and MFU.
  double tokensPerSecond = 0;
  double mfu = 0;
};

/// The report: the configured schedule and the others.
struct PipelineReport {
  PipelinePlan plan;
  PipelineTarget target;
  /// The bytes and seconds of one transfer (the largest stage boundary),
  /// and whether it crosses nodes.
  double transferBytes = 0;
  double transferSeconds = 0;
  bool internode = false;
  /// The configured schedule's prediction, first, then each other schedule
  /// that runs the same stages on the same ranks, in torch's order.
  llvm::SmallVector<PipelinePrediction> predictions;
  /// The schedules that cannot run these stages.
  llvm::SmallVector<std::string> impossible;

  const PipelinePrediction &getConfigured() const {
    return predictions.front();
  }
};

/// Simulates `schedule` (named `name`; a schedule of `plan`'s degree,
/// stages and microbatches, as generatePlanSchedule or
/// parsePipelineScheduleCsv gives it) on `plan`'s costs, and every other
/// schedule of torch's that runs the same number of stages per rank.
llvm::Expected<PipelineReport>
buildPipelineReport(const PipelinePlan &plan, const PipelineTarget &target,
                    const PipelineSchedule &schedule, llvm::StringRef name);

/// Writes the report's section of the plan report: the stage table, the
/// configured schedule's step, bubbles and memory per pp rank, tokens/s and
/// MFU, and the table of the schedules.
void writePipelineReport(const PipelineReport &report, llvm::raw_ostream &os);

} // namespace mlir::titan

#endif // TITAN_REPORT_PIPELINEREPORT_H
