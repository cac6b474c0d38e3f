//===- PipelineStages.h - the stages of a pipelined training step -*- C++
//-*-===//
//
// What titan-partition-pipeline reads from a placed @train_step before it
// writes the program of one pipeline rank: which ops run once per microbatch
// and in which stage, which run once per step, which values cross a stage
// boundary, and which are summed over the microbatches.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PASSES_PIPELINESTAGES_H
#define TITAN_PASSES_PIPELINESTAGES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::titan {

/// When an op of the training step runs in a pipelined step.
enum class OpTiming {
  /// It does not depend on the tokens: once per step, where it is needed.
  Invariant,
  /// Once per microbatch, in one stage's forward or backward.
  PerMicrobatch,
  /// Once per step, after every microbatch (the optimizer, the gradients'
  /// reduction across data-parallel ranks).
  PerStep,
};

/// The stages of a placed @train_step built for one microbatch.
class PipelineStages {
public:
  /// Analyzes `step` for `numStages` stages; `stageBlocks` gives the blocks
  /// per stage, or is empty: then the stages are balanced by `seconds`
  /// (each per-microbatch op's predicted seconds), the ops before the first
  /// block counting in stage 0 and those after the last in the last stage.
  /// With `fsdpPerMicrobatch` a parameter's all-gather (isParameterGather)
  /// and the reduction of each gradient across ranks run for each
  /// microbatch, else once per step. Errors are emitted on the offending
  /// op.
  static FailureOr<PipelineStages>
  analyze(func::FuncOp step, int64_t numStages, ArrayRef<int64_t> stageBlocks,
          function_ref<double(Operation *)> seconds,
          bool fsdpPerMicrobatch = false);

  /// What one stage costs for one microbatch on one rank (the event
  /// simulator's inputs).
  struct StageCost {
    double forwardSeconds = 0, inputGradSeconds = 0, weightGradSeconds = 0;
    /// Bytes the forward keeps for the backward; the part only the input
    /// gradient reads is freed after it.
    double activationBytes = 0, inputGradFreedBytes = 0;
    /// Bytes sent to the next stage in the forward (its forward carry).
    double sentForwardBytes = 0;
  };
  /// The cost of every stage by `seconds` and `bytes` (one rank's).
  SmallVector<StageCost>
  computeStageCosts(function_ref<double(Operation *)> seconds,
                    function_ref<double(Value)> bytes) const;

  /// The blocks of each stage.
  ArrayRef<int64_t> getStageBlocks() const { return blocksPerStage; }
  /// Whether `op` gathers a parameter: a redistribution of a parameter's
  /// shards (through ops of one operand: casts, views) that replicates a
  /// sharded dim, read by the forward or the backward, not the optimizer.
  bool isParameterGather(Operation *op) const;

  int64_t getNumStages() const { return numStages; }
  OpTiming getTiming(Operation *op) const { return timing.lookup(op); }
  /// The stage of a per-microbatch op.
  int64_t getStage(Operation *op) const { return stage.lookup(op); }
  /// Whether a per-microbatch op belongs to the backward.
  bool isBackward(Operation *op) const { return backward.contains(op); }

  /// The forward ops of stage `s`, in program order.
  ArrayRef<Operation *> getForwardOps(int64_t s) const { return forward[s]; }
  /// The backward ops of stage `s` that the gradients it sends to stage
  /// s - 1 need (a zero-bubble schedule's I), in program order.
  ArrayRef<Operation *> getInputGradOps(int64_t s) const {
    return inputGrad[s];
  }
  /// The other backward ops of stage `s` (W), in program order.
  ArrayRef<Operation *> getWeightGradOps(int64_t s) const {
    return weightGrad[s];
  }
  /// The forward values stage `k` sends to stage k + 1.
  ArrayRef<Value> getForwardCarry(int64_t k) const {
    return forwardCarry[k].getArrayRef();
  }
  /// The backward values stage `k` sends to stage k - 1.
  ArrayRef<Value> getBackwardCarry(int64_t k) const {
    return backwardCarry[k].getArrayRef();
  }
  /// The per-microbatch values read once per step (gradients, the loss),
  /// summed over the microbatches, in program order.
  ArrayRef<Value> getAccumulated() const { return accumulated.getArrayRef(); }
  /// The stage of per-microbatch value `value`.
  int64_t getValueStage(Value value) const;
  /// Whether `value` is an argument cut into microbatches (the tokens and
  /// labels).
  bool isMicrobatched(Value value) const {
    return microbatched.contains(value);
  }
  /// The stages whose gradients a per-step or accumulated value depends on
  /// (empty for an invariant value).
  const llvm::SmallSetVector<int64_t, 4> &getStageSet(Value value) const;
  /// The stages that read a parameter argument (several for a tied
  /// weight, whose gradient is then summed across them; stage 0 for an
  /// unused one).
  ArrayRef<int64_t> getParamStages(BlockArgument param) const {
    auto it = paramStages.find(param);
    return it == paramStages.end() ? ArrayRef<int64_t>()
                                   : it->second.getArrayRef();
  }

private:
  explicit PipelineStages(func::FuncOp step, int64_t numStages)
      : step(step), numStages(numStages) {}

  LogicalResult classify(bool fsdpPerMicrobatch);
  LogicalResult assignStages(ArrayRef<int64_t> stageBlocks,
                             function_ref<double(Operation *)> seconds);
  void sumAcrossStagesOnce();
  LogicalResult findCarries();
  void splitBackward();
  LogicalResult assignParams();

  func::FuncOp step;
  int64_t numStages;
  DenseMap<Operation *, OpTiming> timing;
  DenseMap<Operation *, int64_t> stage;
  llvm::DenseSet<Operation *> backward;
  /// The per-microbatch ops that read the microbatch (its tokens or random
  /// numbers), not only parameters gathered anew for it: they give the
  /// order of the blocks.
  llvm::DenseSet<Operation *> readsMicrobatch;
  llvm::DenseSet<Value> microbatched;
  SmallVector<SmallVector<Operation *>> forward, inputGrad, weightGrad;
  SmallVector<llvm::SetVector<Value>> forwardCarry, backwardCarry;
  llvm::SetVector<Value> accumulated;
  DenseMap<Value, llvm::SmallSetVector<int64_t, 4>> stageSets;
  DenseMap<BlockArgument, llvm::SmallSetVector<int64_t, 2>> paramStages;
  SmallVector<int64_t> blocksPerStage;
};

} // namespace mlir::titan

#endif // TITAN_PASSES_PIPELINESTAGES_H
