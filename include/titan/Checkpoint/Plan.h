//===- Plan.h - Checkpoint plans: which rank writes which box ---*- C++ -*-===//
//
// A checkpoint plan lists, for every tensor of a training state, its DCP key,
// the name of the training-state tensor it comes from, its dtype and global
// shape, and the box of it each rank holds; exactly one rank writes each
// distinct box, and the written boxes tile the tensor. titan-compile derives
// a plan from a partitioned program (Layout.h); titan-ckpt and the runtime
// save and load checkpoints through it.
//
// Plan file (text, one record a line, fields separated by single spaces;
// lines starting with '#' and empty lines are ignored):
//
//   titan-checkpoint-plan 1
//   ranks <N>
//   tensor <key> <source> <dtype> <shape> [alias|buffer]
//   box <rank> <offsets> <sizes> write|hold
//   box <rank> none
//   ...
//   value <key> <source> <dtype>
//
// Every `tensor` record is followed by one `box` record per rank 0..N-1, in
// rank order. <key> is the DCP key (e.g. `optimizer.state.norm.weight.
// exp_avg`), <source> the training-state tensor it is taken from (the
// @train_step argument name, e.g. `exp_avg.norm.weight`), <dtype> a torch
// dtype name (`float32`, `bfloat16`, ...), and shapes, offsets and sizes are
// bracketed lists without spaces (`[256,128]`, `[]` for a 0-d tensor).
// `write` marks the one rank that writes that box; `hold` a rank holding a
// copy of a box another rank writes; `none` a rank that does not hold the
// tensor at all (its program is another pipeline rank's: with pipeline
// parallelism each pipeline rank's program holds only its stage's
// parameters and moments, mergePipelineCheckpointPlans). A tensor record
// without a last field is training state, which every load needs; `alias`
// marks another name of a tied parameter (GPT-2's `lm_head.weight`, whose
// source is `transformer.wte.weight`) and `buffer` a buffer of the model
// file (a causal mask, RoPE tables): both are saved, as PyTorch's state_dict
// holds them, and loaded only where the checkpoint has them (PlanTensorKind).
// A `value` record is a
// Python int taken from the 0-d training-state tensor <source> of dtype
// <dtype>; DCP saves it as a bytes entry (BytesStorageMetadata: the torch.save
// archive of the int), which rank 0, the coordinator, writes. torchtitan's
// trainer saves `train_state.step` that way (its state_dict is {"step": int}).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CHECKPOINT_PLAN_H
#define TITAN_CHECKPOINT_PLAN_H

#include "titan/Checkpoint/Dcp.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>
#include <vector>

namespace mlir::titan {

/// The box of a tensor one rank holds.
struct PlanBox {
  /// The box; empty (no offsets, no sizes) when `held` is false.
  IndexBox box;
  /// Whether this rank writes the box (one writer per distinct box); never
  /// when `held` is false.
  bool writes = false;
  /// false: the rank's program does not hold the tensor (another pipeline
  /// rank's); it neither saves nor loads it.
  bool held = true;
};

/// What a tensor of a checkpoint plan is to a save and a load.
enum class PlanTensorKind {
  /// Training state (a parameter, a moment, a step): saved, and every load
  /// needs it.
  State,
  /// Another name of a tied parameter, whose source another key of the plan
  /// holds too: saved, as PyTorch's state_dict has every name; loaded (and
  /// so checked to equal the other key's values) where the checkpoint has it.
  Alias,
  /// A buffer of the model file: saved, as PyTorch's state_dict has it;
  /// loaded where the checkpoint has it.
  Buffer,
};

/// One tensor of a checkpoint plan.
struct PlanTensor {
  /// The DCP key.
  std::string key;
  /// The training-state tensor the value comes from (several keys may share
  /// one, e.g. every `optimizer.state.<fqn>.step` and `train_state.step`).
  std::string source;
  ElementType dtype = ElementType::F32;
  llvm::SmallVector<int64_t> shape;
  /// The box of every rank, indexed by rank (`held` false on the ranks
  /// whose program does not hold the tensor).
  std::vector<PlanBox> boxes;
  PlanTensorKind kind = PlanTensorKind::State;
};

/// One non-tensor value of a checkpoint plan: an int saved as a bytes entry
/// by rank 0.
struct PlanValue {
  /// The DCP key.
  std::string key;
  /// The 0-d training-state tensor holding the value.
  std::string source;
  /// The dtype of the source (float32, float64, int32 or int64).
  ElementType dtype = ElementType::I64;
};

/// What every rank of a program saves and loads.
struct CheckpointPlan {
  unsigned numRanks = 1;
  std::vector<PlanTensor> tensors;
  std::vector<PlanValue> values;
};

/// Checks that `plan` is consistent: keys are unique, every tensor has one
/// in-bounds box per rank, ranks marked `write` hold distinct boxes that
/// tile the tensor exactly (validateTiling), every other rank holding the
/// tensor holds a copy of a written box, a rank that does not hold it
/// (`none`) neither writes nor has a box, and values come from sources that
/// can hold an int.
llvm::Error validateCheckpointPlan(const CheckpointPlan &plan);

/// The plan of a pipeline-parallel job from the plans of its pipeline
/// ranks' programs: `stagePlans[p]` is the plan of pipeline rank p's
/// program over its S ranks (every plan must have the same numRanks S), and
/// global rank p * S + r is rank r of pipeline rank p's program. The result
/// has P * S ranks and the tensors in order of first appearance (pipeline
/// rank 0's, then the new keys of pipeline rank 1, ...); rank p * S + r gets
/// box r of `stagePlans[p]` for the tensors plan p holds, and `none` for
/// the others. A key several pipeline ranks hold (a tied weight, e.g. GPT-2's
/// wte = lm_head) keeps the writes of the first; the later ones' boxes
/// become `hold`, and each must be a copy of a box the first writes (same
/// source, dtype and shape). Values are merged by key (same source and
/// dtype). Fails, naming the key and the pipeline ranks, when the plans
/// disagree, and when the result does not validate.
llvm::Expected<CheckpointPlan>
mergePipelineCheckpointPlans(llvm::ArrayRef<CheckpointPlan> stagePlans);

/// Writes `plan` in the plan file format.
void printCheckpointPlan(const CheckpointPlan &plan, llvm::raw_ostream &os);

/// Parses and validates a plan file; `name` names it in errors.
llvm::Expected<CheckpointPlan> parseCheckpointPlan(llvm::StringRef text,
                                                   llvm::StringRef name);

/// Reads and validates the plan file at `path`.
llvm::Expected<CheckpointPlan> readCheckpointPlan(llvm::StringRef path);

/// Global training-state tensors by source name.
using StateTensors = std::map<std::string, DenseTensor>;

/// Looks up the global training-state tensor of a source name.
using StateLookup =
    llvm::function_ref<llvm::Expected<DenseTensorRef>(llvm::StringRef source)>;

/// What rank `rank` of `plan` writes: its chunks, cut from the global
/// tensors `state` returns (looked up only for what the rank writes, so
/// never for a tensor the rank does not hold), and,
/// on rank 0, the values. Fails when a lookup fails, a source's dtype or
/// shape differs from the plan, or a value is not an integer.
llvm::Expected<DcpRankData> planRankData(const CheckpointPlan &plan,
                                         unsigned rank, StateLookup state);

/// What rank `rank` of `plan` writes, as planRankData, when `shards`
/// returns for each source the box of it this rank holds (its shard, as a
/// runtime rank keeps it) instead of the global tensor; values are 0-d
/// either way.
llvm::Expected<DcpRankData> planRankShardData(const CheckpointPlan &plan,
                                              unsigned rank,
                                              StateLookup shards);

/// Where loaded tensors go: called once per source with the dtype and shape
/// to load, it returns writable memory of that dtype and shape (a runtime's
/// buffer). The memory is filled before the next call, so it needs to stay
/// valid only until then (a tool may write it out and reuse it).
using StateDestination =
    llvm::function_ref<llvm::Expected<MutableDenseTensorRef>(
        llvm::StringRef source, ElementType dtype,
        llvm::ArrayRef<int64_t> shape)>;

/// Loads the global tensors of `plan` from `reader` (any saved sharding)
/// into `destination`, by source name: every tensor whole, straight from
/// the saved chunks (DcpReader::readBoxInto), and every value, read from a
/// bytes entry holding an int or from a 0-d tensor (as older checkpoints
/// store a step). An alias or buffer the checkpoint does not have is
/// skipped. Fails when the checkpoint lacks a state key of the plan, holds
/// a key with another dtype or shape, or when two keys of one source
/// disagree (a tied parameter whose names the checkpoint holds different).
llvm::Error loadPlanState(const DcpReader &reader, const CheckpointPlan &plan,
                          StateDestination destination);

/// What rank `rank` of `plan` does on load: loads the box it holds of every
/// tensor it holds (written or held, as `plan` lays the program out) and
/// every value into `destination`, by source name, checked as loadPlanState
/// does. A tensor the rank does not hold (`none`) is skipped: neither
/// looked up in the checkpoint nor passed to `destination`. A runtime rank
/// calls it once with its own buffers.
llvm::Error loadPlanRank(const DcpReader &reader, const CheckpointPlan &plan,
                         unsigned rank, StateDestination destination);

/// loadPlanState into new tensors.
llvm::Expected<StateTensors> loadPlanState(const DcpReader &reader,
                                           const CheckpointPlan &plan);

} // namespace mlir::titan

#endif // TITAN_CHECKPOINT_PLAN_H
