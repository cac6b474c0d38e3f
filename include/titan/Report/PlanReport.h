//===- PlanReport.h - human-readable parallel plan report -------*- C++ -*-===//
//
// Summarizes a partitioned (spmdized) training step for a person: the mesh,
// every parameter's placements with its global and per-rank shape, and the
// collectives one rank runs per step with the bytes each sends (ring
// algorithm estimates): per collective kind, and every collective attributed
// to a transformer block (parameters "<stem>.<index>.*") or to what lies
// outside the blocks (embedding, output, loss, optimizer), in the forward,
// the backward or the optimizer, with its mesh axes, tensor dims and the
// parameter or local tensor it moves.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_REPORT_PLANREPORT_H
#define TITAN_REPORT_PLANREPORT_H

#include "titan/CostModel/Device.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace mlir::titan {

/// Writes the report of `@train_step` in `module` (after titan-spmdize).
LogicalResult writePlanReport(ModuleOp module, llvm::raw_ostream &os);

/// What a step of gradient accumulation over `microbatches` does, as
/// titan-compile and the plan report say it (one line, no newline).
std::string describeGradientAccumulation(int64_t microbatches);

/// A rank's memory from `@train_step`'s memory plan: the regions the runtime
/// allocates, and what the rank holds where the arena's use peaks.
struct MemoryBreakdown {
  int64_t arenaBytes = 0, stateBytes = 0, inputBytes = 0;
  /// The op where the arena's use peaks ("backward of layers.3"), and that
  /// use.
  int64_t peakPosition = 0;
  std::string peakPlace;
  int64_t peakArenaBytes = 0;
  /// At the peak: what (parameters, optimizer state, buffers, each kind of
  /// arena buffer, inputs), its bytes and its region, in report order.
  std::vector<std::tuple<std::string, int64_t, std::string>> atPeak;

  int64_t getTotalBytes() const { return arenaBytes + stateBytes + inputBytes; }
};

/// Reads the MemoryBreakdown of `module` (after titan-plan-memory).
FailureOr<MemoryBreakdown> computeMemoryBreakdown(ModuleOp module);

/// Writes the memory section of the report: the bytes of each memory
/// region of a rank, their share of `device`'s memory (when given), and
/// what a rank holds where the arena's use peaks (parameters, optimizer
/// state, saved activations, gradients, collective buffers, scratch),
/// from `@train_step`'s memory plan (after titan-plan-memory).
LogicalResult writeMemoryReport(ModuleOp module,
                                const DeviceDescription *device,
                                llvm::raw_ostream &os);

/// Writes the launches section of the report: how many compiled kernels
/// `@train_step` launches (after titan-fuse-kernels), the bytes they move
/// (their results, the parts of their operands their kernels read, their
/// scratch written and read back) in all and for the five families
/// (kernels of one root op) that move the most, and the runtime's calls by
/// op; with `device`, the compute of the step as compiled (each launch
/// timed by its bytes, each runtime call by the cost model).
LogicalResult writeLaunchReport(ModuleOp module,
                                const DeviceDescription *device,
                                llvm::raw_ostream &os);

/// Writes the memory of one rank over `@train_step` (after
/// titan-plan-memory) as an SVG picture: the state and inputs, and the
/// arena's live bytes by kind at every op, with the peak, the phases and
/// the planned total marked.
LogicalResult writeMemoryPlot(ModuleOp module, llvm::raw_ostream &os);

/// What a model computes per step by torchtitan's count, read from the
/// global training step (after titan-build-train-step, before
/// partitioning).
struct ModelFlops {
  /// Parameters in all, and those of embedding tables (tables an
  /// embedding lookup reads).
  double parameters = 0;
  double embeddingParameters = 0;
  /// Forward attention layers (titan.attention), the sum over them of
  /// q_heads x head_dim, and their sequence length.
  int64_t attentionLayers = 0;
  double attentionWidthSum = 0;
  int64_t seqLen = 0;
  /// Tokens per step over all ranks: the ids the first embedding reads.
  int64_t tokensPerStep = 0;

  /// torchtitan's FLOPs per token (getModelFlopsPerToken).
  double getFlopsPerToken() const {
    return getModelFlopsPerToken(parameters - embeddingParameters,
                                 attentionWidthSum, double(seqLen));
  }
};

/// Reads ModelFlops from `module`'s global @train_step.
FailureOr<ModelFlops> computeModelFlops(ModuleOp module);

/// The predicted seconds of one phase of a step.
struct PhaseSeconds {
  double compute = 0;
  double communication = 0;
  /// Of `compute`: the recomputed forward ops (titan.recompute).
  double recompute = 0;
};

/// The predicted collectives over one set of mesh axes.
struct AxesSeconds {
  LinkDescription link;
  bool internode = false;
  int64_t count = 0;
  double seconds = 0;
};

/// The predicted step of one rank (predictStepTime).
struct StepTimePrediction {
  /// By Phase, and their sum.
  PhaseSeconds phases[3];
  PhaseSeconds step;
  /// By mesh axes ("[fsdp]", "[dp_shard,cp]").
  std::map<std::string, AxesSeconds> byAxes;
  /// titan's count of the FLOPs a rank runs per step.
  double hardwareFlops = 0;
  int64_t ranks = 0;
  /// torchtitan's tokens per rank per step (the global batch's tokens over
  /// the ranks), and per second.
  double tokensPerRank = 0;
  double tokensPerSecond = 0;
  /// The element type of the matmuls, its peak, and the model FLOP/s over
  /// it.
  ElementType peakType = ElementType::F32;
  double peakFlopsPerSecond = 0;
  double mfu = 0;

  double getStepSeconds() const { return step.compute + step.communication; }
};

/// Predicts one rank of `module`'s partitioned @train_step on `device` with
/// `ranksPerNode` ranks per node (0: one node): every op's roofline time,
/// every collective's alpha-beta time on its mesh axes' link, in sequence
/// as the runtime runs them; tokens/s and MFU by `model`'s count.
FailureOr<StepTimePrediction> predictStepTime(ModuleOp module,
                                              const DeviceDescription &device,
                                              int64_t ranksPerNode,
                                              const ModelFlops &model);

/// Writes predictStepTime for a person: time per phase, communication per
/// mesh axes, tokens/s, MFU and the hardware FLOPs.
LogicalResult writeStepTimeReport(ModuleOp module,
                                  const DeviceDescription &device,
                                  int64_t ranksPerNode, const ModelFlops &model,
                                  llvm::raw_ostream &os);

} // namespace mlir::titan

#endif // TITAN_REPORT_PLANREPORT_H
