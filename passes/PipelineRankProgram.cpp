//===- PipelineRankProgram.cpp - the program of one pipeline rank ---------===//
//
// Implements writePipelineRankProgram (see PipelineRankProgram.h): the
// rank's actions in the order of its schedule, the transfers between
// stages, the sums over microbatches and the once-per-step optimizer.
//
//===----------------------------------------------------------------------===//

#include "PipelineRankProgram.h"

#include "titan/Dialect/ArgRole.h"
#include "titan/Dialect/FunctionAttributes.h"
#include "titan/Dialect/PipelineMesh.h"
#include "titan/Dialect/PipelineTransfers.h"
#include "titan/Dialect/TensorBuilder.h"
#include "titan/Dialect/ValuePlacements.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/ScopeExit.h"

using namespace mlir;
using namespace mlir::titan;

namespace {

/// What a point-to-point message carries; part of its tag.
enum class MessageKind : int64_t {
  Forward,
  Backward,
  PartialSum,
  Result,
};

/// Tags are equal on the sender and the receiver, distinct for distinct
/// messages between two ranks, and fit in 31 bits (the 32-bit tags of
/// communication libraries): the kind in bits 29-30, then 29 bits.
constexpr int64_t kStageBits = 7, kMicrobatchBits = 16, kIndexBits = 6;
static_assert(kStageBits + kMicrobatchBits + kIndexBits == 29);

/// The tag of value `index` of the boundary after stage `stage` (Forward)
/// or before it (Backward), for microbatch `microbatch`.
int64_t getTransferTag(MessageKind kind, int64_t stage, int64_t microbatch,
                       int64_t index) {
  return int64_t(kind) << 29 | stage << (kMicrobatchBits + kIndexBits) |
         microbatch << kIndexBits | index;
}

/// The tag of message `index` of `kind` (PartialSum, Result).
int64_t getTag(MessageKind kind, int64_t index) {
  return int64_t(kind) << 29 | index;
}

/// `placements` of a value to its op's `titan.placements` entry.
void setPlacements(Value value, PlacementsAttr placements) {
  if (!placements)
    return;
  Operation *op = value.getDefiningOp();
  op->setAttr(TitanDialect::kPlacementsAttrName,
              ArrayAttr::get(op->getContext(), {placements}));
}

/// Writes the program of one pipeline rank.
class RankProgram {
public:
  RankProgram(func::FuncOp step, const PipelineStages &stages,
              const PipelineSchedule &layout, int64_t rank,
              int64_t microbatches)
      : step(step), stages(stages), layout(layout), rank(rank),
        microbatches(microbatches), builder(step.getContext()),
        mbValues(microbatches) {}

  /// Builds the program of the rank's `actions` as a new function after
  /// `step`, and returns it.
  FailureOr<func::FuncOp> build(ArrayRef<PipelineAction> actions);

private:
  bool ownsStage(int64_t s) const { return layout.getRankOfStage(s) == rank; }
  /// The placements `value` of @train_step has.
  PlacementsAttr placementsOf(Value value) const {
    return getValuePlacements(step, value);
  }
  /// The clone of invariant `value` (or the new argument), cloned once at
  /// the current end of the program.
  Value lookupInvariant(Value value);
  /// `value` for microbatch `m`.
  FailureOr<Value> lookup(Value value, int64_t m, Operation *user);
  /// `value` for microbatch `m` where no op of the microbatch is left to
  /// run for it: computed already, a microbatched input's slice, or an
  /// invariant; else null.
  Value lookupAvailable(Value value, int64_t m);
  /// A clone of `op` at the end of the program, its operands mapped by
  /// `operandOf`.
  FailureOr<Operation *>
  cloneWithOperands(Operation *op,
                    function_ref<FailureOr<Value>(Value)> operandOf);
  /// Microbatch `m` of microbatched argument `arg`.
  Value getMicrobatch(BlockArgument arg, int64_t m);
  /// The data-parallel shards of microbatched argument `arg`'s batch dim.
  int64_t getBatchShards(BlockArgument arg) const;
  /// Microbatch `m`'s clone of random numbers `op` (dropout): its counters,
  /// the positions of the elements in the microbatch, moved to those of
  /// the same elements in the whole batch, so that every microbatch draws
  /// its own numbers, the ones the same rows draw without pipelining.
  FailureOr<Operation *> cloneRandom(RandomUniformOp op, int64_t m);
  /// A cross-entropy's weight and count of labels for each microbatch.
  struct LossWeights {
    SmallVector<Value> weights, counts;
  };
  /// The weights of a cross-entropy over `labels` (of the step) ignoring
  /// `ignoreIndex`, made once: microbatch m's count of labels times
  /// microbatches / the step's count (at least 1); none when the labels are
  /// not a function of the microbatched inputs alone.
  const std::optional<LossWeights> &
  getLossWeights(Value labels, int64_t ignoreIndex, Location loc);
  /// Whether `value` is computed from the microbatched inputs and
  /// invariants alone, by at most `budget` forward ops of a microbatch.
  bool isFromInputs(Value value, int64_t &budget) const;
  /// Microbatch `m`'s `value` for such a value: the forward's when it ran,
  /// else cloned into `map`.
  Value cloneFromInputs(Value value, int64_t m, IRMapping &map);
  /// Microbatch `m`'s clone of a cross-entropy or its gradient, weighted by
  /// getLossWeights: the mean over the microbatch's labels counts as its
  /// share of the step's labels (zero for a microbatch without any), so
  /// that the step's loss and gradients are the means over all its labels,
  /// as without microbatches, however the ignored labels fall.
  FailureOr<Operation *> cloneCrossEntropy(Operation *op, int64_t m);
  LogicalResult cloneOps(ArrayRef<Operation *> ops, int64_t m);
  LogicalResult runForward(int64_t s, int64_t m);
  LogicalResult runInputGrad(int64_t s, int64_t m);
  LogicalResult runWeightGrad(int64_t s, int64_t m);
  void send(Value local, Value original, int64_t toRank, int64_t tag);
  Value receive(Value original, int64_t fromRank, int64_t tag);
  /// Adds microbatch `m`'s accumulated values of stage `s` to the sums.
  void accumulate(int64_t s, bool fromBackward, int64_t m);
  /// A per-step value (or invariant, or summed), cloned once.
  FailureOr<Value> lookupStep(Value value);
  /// The pipeline ranks that hold the stages of `set`, ascending.
  SmallVector<int64_t>
  getRanksOf(const llvm::SmallSetVector<int64_t, 4> &set) const;
  /// A sum over gradients of several stages: this rank's part, exchanged.
  FailureOr<Value> exchangeSum(Value root);
  /// Whether `value` is a sum of terms from the stages of several ranks
  /// (the gradient norm's sum of squares): each rank sums its own terms.
  bool isSumOverStages(Value value);
  /// Whether `value` is a sum over stages that the ranks exchange as a
  /// whole (exchangeSum): one that an op other than such a sum reads.
  bool isExchanged(Value value);
  /// Whether per-step `value` can be computed on a rank holding `owned`.
  bool isComputable(Value value, ArrayRef<int64_t> owned);

  func::FuncOp step;
  const PipelineStages &stages;
  const PipelineSchedule &layout;
  int64_t rank, microbatches;
  OpBuilder builder;
  func::FuncOp program;
  IRMapping invariants;
  std::vector<IRMapping> mbValues;
  DenseMap<std::pair<Value, int64_t>, Value> slices;
  DenseMap<Value, Value> sums, stepValues;
  DenseMap<std::pair<Value, int64_t>, std::optional<LossWeights>> lossWeights;
};

Value RankProgram::lookupInvariant(Value value) {
  if (Value mapped = invariants.lookupOrNull(value))
    return mapped;
  Operation *def = value.getDefiningOp();
  Operation *clone =
      *cloneWithOperands(def, [&](Value operand) -> FailureOr<Value> {
        return lookupInvariant(operand);
      });
  for (auto [old, now] : llvm::zip(def->getResults(), clone->getResults()))
    invariants.map(old, now);
  return invariants.lookup(value);
}

FailureOr<Operation *> RankProgram::cloneWithOperands(
    Operation *op, function_ref<FailureOr<Value>(Value)> operandOf) {
  IRMapping operands;
  for (Value operand : op->getOperands()) {
    FailureOr<Value> local = operandOf(operand);
    if (failed(local))
      return failure();
    operands.map(operand, *local);
  }
  return builder.clone(*op, operands);
}

Value RankProgram::getMicrobatch(BlockArgument arg, int64_t m) {
  Value &slice = slices[{arg, m}];
  if (slice)
    return slice;
  // Each data-parallel rank's rows are cut into consecutive microbatches:
  // [shards * microbatches * rows, ...] -> [shards, microbatches * rows,
  // ...], rows [m * rows, (m + 1) * rows) of dim 1, back to [shards * rows].
  auto type = cast<RankedTensorType>(arg.getType());
  PlacementsAttr placements = placementsOf(arg);
  int64_t shards = getBatchShards(arg);
  SmallVector<Placement> split;
  if (placements)
    for (const Placement &placement : placements.getPlacements())
      split.push_back(placement.isShard() && placement.getDim() > 0
                          ? Placement::shard(placement.getDim() + 1)
                          : placement);
  int64_t rows = type.getDimSize(0) / shards;
  TensorBuilder tb(builder, arg.getLoc());
  Value whole = invariants.lookup(arg);
  SmallVector<int64_t> shape{shards, microbatches * rows};
  llvm::append_range(shape, type.getShape().drop_front());
  Value cut = tb.reshape(whole, shape);
  if (placements)
    setPlacements(cut, PlacementsAttr::get(step.getContext(),
                                           placements.getMesh(), split));
  Value part = tb.slice(cut, 1, m * rows, (m + 1) * rows, 1);
  if (placements)
    setPlacements(part, PlacementsAttr::get(step.getContext(),
                                            placements.getMesh(), split));
  slice = tb.reshape(part, type.getShape());
  setPlacements(slice, placements);
  return slice;
}

int64_t RankProgram::getBatchShards(BlockArgument arg) const {
  PlacementsAttr placements = placementsOf(arg);
  if (!placements)
    return 1;
  MeshOp mesh = MeshOp::lookup(step, placements.getMesh());
  int64_t shards = 1;
  for (auto [axis, placement] : llvm::enumerate(placements.getPlacements()))
    if (placement.isShard(0))
      shards *= mesh.getAxisSizes()[axis];
  return shards;
}

FailureOr<Operation *> RankProgram::cloneRandom(RandomUniformOp op, int64_t m) {
  FailureOr<Value> counters = lookup(op.getCounters(), m, op);
  if (failed(counters))
    return failure();
  auto type = cast<RankedTensorType>(op.getCounters().getType());
  auto batch = llvm::find_if(step.getArguments(), [&](BlockArgument arg) {
    return stages.isMicrobatched(arg);
  });
  if (batch == step.getArguments().end() || type.getRank() == 0 ||
      type.getDimSize(0) !=
          cast<RankedTensorType>(batch->getType()).getDimSize(0))
    return op.emitError(
        "titan-partition-pipeline: random numbers (dropout, torch.rand, "
        "bernoulli_, ...) of a tensor whose first dim is not the batch are "
        "not supported under pipeline parallelism");
  // Row i of the microbatch (shards x rows, shard-major) is row
  // s * microbatches * rows + m * rows + r of the batch, i = s * rows + r:
  // its elements' positions move by (s * (microbatches - 1) + m) * rows
  // rows.
  int64_t shards = getBatchShards(*batch);
  int64_t rows = type.getDimSize(0) / shards;
  int64_t rowElements = type.getNumElements() / type.getDimSize(0);
  SmallVector<int64_t> offsets;
  for (int64_t i = 0; i < type.getDimSize(0); ++i)
    offsets.push_back(((i / rows) * (microbatches - 1) + m) * rows *
                      rowElements);
  // The batch dim keeps the counters' sharding; the new dims of size 1 are
  // whole.
  PlacementsAttr placements = placementsOf(op.getCounters());
  PlacementsAttr rowPlacements;
  if (placements) {
    SmallVector<Placement> onRows;
    for (const Placement &placement : placements.getPlacements())
      onRows.push_back(placement.isShard(0) ? placement
                                            : Placement::replicate());
    rowPlacements =
        PlacementsAttr::get(step.getContext(), placements.getMesh(), onRows);
  }
  TensorBuilder tb(builder, op.getLoc());
  auto offsetType =
      RankedTensorType::get({type.getDimSize(0)}, type.getElementType());
  Value offset = ConstantOp::create(
      builder, op.getLoc(), offsetType,
      DenseIntElementsAttr::get(offsetType, ArrayRef<int64_t>(offsets)));
  setPlacements(offset, rowPlacements);
  SmallVector<int64_t> column(type.getRank(), 1);
  column[0] = type.getDimSize(0);
  offset = tb.reshape(offset, column);
  setPlacements(offset, rowPlacements);
  offset = tb.broadcastTo(offset, type.getShape());
  setPlacements(offset, placements);
  Value moved = tb.binary<AddOp>(*counters, offset);
  setPlacements(moved, placements);
  return cloneWithOperands(op, [&](Value operand) -> FailureOr<Value> {
    if (operand == op.getCounters())
      return moved;
    return lookup(operand, m, op);
  });
}

Value RankProgram::lookupAvailable(Value value, int64_t m) {
  if (Value mapped = mbValues[m].lookupOrNull(value))
    return mapped;
  if (stages.isMicrobatched(value))
    return getMicrobatch(cast<BlockArgument>(value), m);
  Operation *def = value.getDefiningOp();
  if (!def || stages.getTiming(def) == OpTiming::Invariant)
    return lookupInvariant(value);
  return {};
}

FailureOr<Value> RankProgram::lookup(Value value, int64_t m, Operation *user) {
  if (Value available = lookupAvailable(value, m))
    return available;
  return user->emitError() << "titan-partition-pipeline: microbatch " << m
                           << " of an operand is not on pipeline rank " << rank
                           << " when this op runs (a schedule whose actions "
                              "do not follow the stages' data flow)";
}

bool RankProgram::isFromInputs(Value value, int64_t &budget) const {
  if (stages.isMicrobatched(value))
    return true;
  Operation *def = value.getDefiningOp();
  if (!def || stages.getTiming(def) == OpTiming::Invariant)
    return true;
  if (stages.getTiming(def) != OpTiming::PerMicrobatch ||
      stages.isBackward(def) || isa<RandomUniformOp>(def) ||
      def->getNumRegions() != 0 || --budget < 0)
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    return isFromInputs(operand, budget);
  });
}

Value RankProgram::cloneFromInputs(Value value, int64_t m, IRMapping &map) {
  if (Value available = lookupAvailable(value, m))
    return available;
  if (Value cloned = map.lookupOrNull(value))
    return cloned;
  Operation *def = value.getDefiningOp();
  Operation *clone = *cloneWithOperands(def, [&](Value operand) {
    return FailureOr<Value>(cloneFromInputs(operand, m, map));
  });
  for (auto [old, now] : llvm::zip(def->getResults(), clone->getResults()))
    map.map(old, now);
  return map.lookup(value);
}

const std::optional<RankProgram::LossWeights> &
RankProgram::getLossWeights(Value labels, int64_t ignoreIndex, Location loc) {
  auto [entry, inserted] = lossWeights.try_emplace({labels, ignoreIndex});
  std::optional<LossWeights> &result = entry->second;
  // Labels computed from more than a few ops of the inputs (or from
  // anything else) keep the mean of the microbatches' means.
  constexpr int64_t kMaxLabelOps = 64;
  int64_t budget = kMaxLabelOps;
  if (!inserted || !isFromInputs(labels, budget))
    return result;
  // Each microbatch's count of labels, summed over the ranks that hold its
  // rows (a partial sum, replicated).
  PlacementsAttr placements = placementsOf(labels);
  PlacementsAttr partial, replicated;
  if (placements) {
    SmallVector<Placement> partials, replicas;
    for (const Placement &placement : placements.getPlacements()) {
      partials.push_back(placement.isShard() ? Placement::partial()
                                             : Placement::replicate());
      replicas.push_back(Placement::replicate());
    }
    partial =
        PlacementsAttr::get(step.getContext(), placements.getMesh(), partials);
    replicated =
        PlacementsAttr::get(step.getContext(), placements.getMesh(), replicas);
  }
  TensorBuilder tb(builder, loc);
  auto place = [&](Value value, PlacementsAttr on) {
    setPlacements(value, on);
    return value;
  };
  LossWeights made;
  Value total;
  for (int64_t m = 0; m < microbatches; ++m) {
    IRMapping map;
    Value local = cloneFromInputs(labels, m, map);
    Value ignored = place(tb.splatLike(local, double(ignoreIndex)), placements);
    Value counted =
        place(tb.cast(place(tb.compare("ne", local, ignored), placements),
                      builder.getF32Type()),
              placements);
    Value count = place(tb.sumAll(counted), partial);
    if (partial && partial != replicated)
      count = RedistributeOp::create(builder, loc, count.getType(), count,
                                     replicated);
    place(count, replicated);
    made.counts.push_back(count);
    total = total ? place(tb.binary<AddOp>(total, count), replicated) : count;
  }
  Value atLeastOne = place(
      tb.binary<MaxOp>(total, place(tb.splatLike(total, 1.0), replicated)),
      replicated);
  for (Value count : made.counts)
    made.weights.push_back(
        place(tb.scale(place(tb.binary<DivOp>(count, atLeastOne), replicated),
                       double(microbatches)),
              replicated));
  result = std::move(made);
  return result;
}

FailureOr<Operation *> RankProgram::cloneCrossEntropy(Operation *op,
                                                      int64_t m) {
  auto plain = [&] {
    return cloneWithOperands(
        op, [&](Value operand) { return lookup(operand, m, op); });
  };
  auto loss = dyn_cast<CrossEntropyOp>(op);
  auto grad = dyn_cast<CrossEntropyGradOp>(op);
  Value labels = loss ? loss.getLabels() : grad.getLabels();
  int64_t ignoreIndex = loss ? loss.getIgnoreIndex() : grad.getIgnoreIndex();
  if (microbatches == 1)
    return plain();
  const std::optional<LossWeights> &weights =
      getLossWeights(labels, ignoreIndex, op->getLoc());
  if (!weights)
    return plain();
  TensorBuilder tb(builder, op->getLoc());
  Type element = cast<RankedTensorType>(
                     (loss ? loss.getResult() : grad.getGrad()).getType())
                     .getElementType();
  Value weight = tb.cast(weights->weights[m], element);
  setPlacements(weight, placementsOf(weights->weights[m]));
  if (grad) {
    // The cotangent reaching the loss scales every gradient it feeds.
    FailureOr<Value> cotangent = lookup(grad.getGrad(), m, op);
    if (failed(cotangent))
      return failure();
    Value weighted = tb.binary<MulOp>(*cotangent, weight);
    setPlacements(weighted, placementsOf(grad.getGrad()));
    return cloneWithOperands(op, [&](Value operand) -> FailureOr<Value> {
      if (operand == grad.getGrad())
        return weighted;
      return lookup(operand, m, op);
    });
  }
  FailureOr<Operation *> clone = plain();
  if (failed(clone))
    return failure();
  PlacementsAttr placements = placementsOf(loss.getResult());
  Value mean = (*clone)->getResult(0);
  Value weighted = tb.binary<MulOp>(mean, weight);
  setPlacements(weighted, placements);
  // A microbatch without labels has a NaN mean (0 / 0) and no share.
  if (!placements ||
      llvm::all_of(placements.getPlacements(), [](const Placement &placement) {
        return placement.isReplicate();
      })) {
    Value count = weights->counts[m];
    Value none = tb.splatLike(count, 0.0);
    setPlacements(none, placements);
    Value some = tb.compare("gt", count, none);
    setPlacements(some, placements);
    Value zero = tb.splatLike(weighted, 0.0);
    setPlacements(zero, placements);
    weighted = tb.select(some, weighted, zero);
    setPlacements(weighted, placements);
  }
  // The op's uses read the weighted loss.
  return weighted.getDefiningOp();
}

LogicalResult RankProgram::cloneOps(ArrayRef<Operation *> ops, int64_t m) {
  for (Operation *op : ops) {
    FailureOr<Operation *> clone = failure();
    if (auto random = dyn_cast<RandomUniformOp>(op))
      clone = cloneRandom(random, m);
    else if (isa<CrossEntropyOp, CrossEntropyGradOp>(op))
      clone = cloneCrossEntropy(op, m);
    else
      clone = cloneWithOperands(
          op, [&](Value operand) { return lookup(operand, m, op); });
    if (failed(clone))
      return failure();
    // A parameter gathered for each microbatch: the copies are not one.
    if (isa<RedistributeOp>(op) && stages.isParameterGather(op))
      (*clone)->setAttr(TitanDialect::kMicrobatchAttrName,
                        builder.getI64IntegerAttr(m));
    for (auto [old, now] : llvm::zip(op->getResults(), (*clone)->getResults()))
      mbValues[m].map(old, now);
  }
  return success();
}

void RankProgram::send(Value local, Value original, int64_t toRank,
                       int64_t tag) {
  SendOp::create(builder, original.getLoc(), local, kPipelineMeshName,
                 builder.getStrArrayAttr({kPipelineAxisName}), toRank, tag);
}

Value RankProgram::receive(Value original, int64_t fromRank, int64_t tag) {
  Value received = RecvOp::create(
      builder, original.getLoc(), original.getType(), kPipelineMeshName,
      builder.getStrArrayAttr({kPipelineAxisName}), fromRank, tag);
  setPlacements(received, placementsOf(original));
  return received;
}

LogicalResult RankProgram::runForward(int64_t s, int64_t m) {
  if (s > 0 && !ownsStage(s - 1))
    for (auto [index, value] : llvm::enumerate(stages.getForwardCarry(s - 1)))
      mbValues[m].map(value, receive(value, layout.getRankOfStage(s - 1),
                                     getTransferTag(MessageKind::Forward, s - 1,
                                                    m, index)));
  if (failed(cloneOps(stages.getForwardOps(s), m)))
    return failure();
  accumulate(s, /*fromBackward=*/false, m);
  if (s + 1 < stages.getNumStages() && !ownsStage(s + 1))
    for (auto [index, value] : llvm::enumerate(stages.getForwardCarry(s)))
      send(mbValues[m].lookup(value), value, layout.getRankOfStage(s + 1),
           getTransferTag(MessageKind::Forward, s, m, index));
  return success();
}

LogicalResult RankProgram::runInputGrad(int64_t s, int64_t m) {
  if (s + 1 < stages.getNumStages() && !ownsStage(s + 1))
    for (auto [index, value] : llvm::enumerate(stages.getBackwardCarry(s + 1)))
      mbValues[m].map(value, receive(value, layout.getRankOfStage(s + 1),
                                     getTransferTag(MessageKind::Backward,
                                                    s + 1, m, index)));
  if (failed(cloneOps(stages.getInputGradOps(s), m)))
    return failure();
  if (s > 0 && !ownsStage(s - 1))
    for (auto [index, value] : llvm::enumerate(stages.getBackwardCarry(s))) {
      FailureOr<Value> local = lookup(value, m, step);
      if (failed(local))
        return failure();
      send(*local, value, layout.getRankOfStage(s - 1),
           getTransferTag(MessageKind::Backward, s, m, index));
    }
  return success();
}

LogicalResult RankProgram::runWeightGrad(int64_t s, int64_t m) {
  if (failed(cloneOps(stages.getWeightGradOps(s), m)))
    return failure();
  accumulate(s, /*fromBackward=*/true, m);
  return success();
}

void RankProgram::accumulate(int64_t s, bool fromBackward, int64_t m) {
  for (Value value : stages.getAccumulated()) {
    if (stages.getValueStage(value) != s ||
        stages.isBackward(value.getDefiningOp()) != fromBackward)
      continue;
    Value part = mbValues[m].lookup(value);
    Value &sum = sums[value];
    if (!sum) {
      sum = part;
      continue;
    }
    TensorBuilder tb(builder, value.getLoc());
    sum = tb.binary<AddOp>(sum, part);
    setPlacements(sum, placementsOf(value));
  }
}

bool RankProgram::isSumOverStages(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def || !isa<AddOp>(def) || stages.getTiming(def) != OpTiming::PerStep)
    return false;
  if (stages.getStageSet(def->getOperand(0)).empty() ||
      stages.getStageSet(def->getOperand(1)).empty())
    return false;
  // On every rank alike: the terms come from stages of several ranks.
  const llvm::SmallSetVector<int64_t, 4> &set = stages.getStageSet(value);
  return llvm::any_of(set, [&](int64_t s) {
    return layout.getRankOfStage(s) != layout.getRankOfStage(set.front());
  });
}

bool RankProgram::isExchanged(Value value) {
  return isSumOverStages(value) &&
         llvm::any_of(value.getUsers(), [&](Operation *user) {
           return !isa<AddOp>(user) || !isSumOverStages(user->getResult(0));
         });
}

bool RankProgram::isComputable(Value value, ArrayRef<int64_t> owned) {
  Operation *def = value.getDefiningOp();
  if (!def || stages.getTiming(def) == OpTiming::Invariant)
    return true;
  if (stages.getTiming(def) == OpTiming::PerMicrobatch)
    return llvm::is_contained(owned, stages.getValueStage(value));
  // A sum exchanged among the ranks of its stages: on those ranks only.
  if (isSumOverStages(value))
    return llvm::any_of(stages.getStageSet(value), [&](int64_t s) {
      return llvm::is_contained(owned, s);
    });
  return llvm::all_of(def->getOperands(),
                      [&](Value v) { return isComputable(v, owned); });
}

SmallVector<int64_t>
RankProgram::getRanksOf(const llvm::SmallSetVector<int64_t, 4> &set) const {
  SmallVector<int64_t> ranks;
  for (int64_t s : set)
    ranks.push_back(layout.getRankOfStage(s));
  llvm::sort(ranks);
  ranks.erase(llvm::unique(ranks), ranks.end());
  return ranks;
}

FailureOr<Value> RankProgram::exchangeSum(Value root) {
  // The ranks whose stages the sum reads exchange their parts. Each term
  // is summed on the first of the ranks its stages are on (the first
  // participant for a term of no stage), in program order.
  SmallVector<int64_t> participants = getRanksOf(stages.getStageSet(root));
  SmallVector<Value> terms;
  SmallVector<Value> worklist{root};
  while (!worklist.empty()) {
    Value node = worklist.pop_back_val();
    if (isSumOverStages(node)) {
      Operation *def = node.getDefiningOp();
      worklist.push_back(def->getOperand(1));
      worklist.push_back(def->getOperand(0));
      continue;
    }
    SmallVector<int64_t> owners = getRanksOf(stages.getStageSet(node));
    if ((owners.empty() ? participants : owners).front() == rank)
      terms.push_back(node);
  }
  TensorBuilder tb(builder, root.getLoc());
  PlacementsAttr placements = placementsOf(root);
  Value partial;
  for (Value term : terms) {
    FailureOr<Value> local = lookupStep(term);
    if (failed(local))
      return failure();
    partial = partial ? tb.binary<AddOp>(partial, *local) : *local;
    setPlacements(partial, placements);
  }
  if (!partial) {
    partial = tb.splatLike(root, 0.0);
    setPlacements(partial, placements);
  }
  // Every participant exchanges parts with each other, in rank order (a
  // send and a receive per peer: NCCL's groups then pair up), and adds
  // the parts in rank order: the same bits everywhere.
  int64_t where = 0;
  for (Operation &op : step.getBody().front()) {
    if (&op == root.getDefiningOp())
      break;
    ++where;
  }
  int64_t tag = getTag(MessageKind::PartialSum, where);
  SmallVector<Value> parts;
  for (int64_t peer : participants) {
    if (peer == rank) {
      parts.push_back(partial);
      continue;
    }
    send(partial, root, peer, tag);
    parts.push_back(receive(root, peer, tag));
  }
  Value total;
  for (Value part : parts) {
    total = total ? tb.binary<AddOp>(total, part) : part;
    setPlacements(total, placements);
  }
  return total;
}

FailureOr<Value> RankProgram::lookupStep(Value value) {
  if (Value known = stepValues.lookup(value))
    return known;
  Operation *def = value.getDefiningOp();
  if (!def || stages.getTiming(def) == OpTiming::Invariant)
    return lookupInvariant(value);
  FailureOr<Value> result = failure();
  if (stages.getTiming(def) == OpTiming::PerMicrobatch) {
    Value sum = sums.lookup(value);
    if (!sum)
      return def->emitError()
             << "titan-partition-pipeline: pipeline rank " << rank
             << " needs this value of stage " << stages.getValueStage(value)
             << ", which another rank computes";
    TensorBuilder tb(builder, value.getLoc());
    result = microbatches == 1 ? sum : tb.scale(sum, 1.0 / microbatches);
    if (microbatches > 1)
      setPlacements(*result, placementsOf(value));
  } else if (isSumOverStages(value)) {
    result = exchangeSum(value);
  } else {
    FailureOr<Operation *> clone = cloneWithOperands(
        def, [&](Value operand) { return lookupStep(operand); });
    if (failed(clone))
      return failure();
    for (auto [old, now] : llvm::zip(def->getResults(), (*clone)->getResults()))
      stepValues[old] = now;
    return stepValues.lookup(value);
  }
  if (succeeded(result))
    stepValues[value] = *result;
  return result;
}

FailureOr<func::FuncOp> RankProgram::build(ArrayRef<PipelineAction> actions) {
  Block &oldBody = step.getBody().front();
  // The same arguments, the microbatched ones with all microbatches; unused
  // ones are dropped at the end.
  SmallVector<Type> argTypes;
  for (BlockArgument arg : oldBody.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    if (!stages.isMicrobatched(arg)) {
      argTypes.push_back(type);
      continue;
    }
    SmallVector<int64_t> shape(type.getShape());
    shape[0] *= microbatches;
    argTypes.push_back(type.clone(shape));
  }
  builder.setInsertionPointAfter(step);
  program = func::FuncOp::create(builder, step.getLoc(), step.getName(),
                                 builder.getFunctionType(argTypes, {}));
  program.setAllArgAttrs(step.getAllArgAttrs());
  Block *body = program.addEntryBlock();
  for (auto [old, now] :
       llvm::zip(oldBody.getArguments(), body->getArguments()))
    invariants.map(old, now);
  builder.setInsertionPointToStart(body);

  for (const PipelineAction &action : actions) {
    LogicalResult done = success();
    int64_t m = action.microbatch.value_or(0);
    switch (action.kind) {
    case PipelineActionKind::Forward:
      done = runForward(action.stage, m);
      break;
    case PipelineActionKind::Backward:
      done = runInputGrad(action.stage, m);
      if (succeeded(done))
        done = runWeightGrad(action.stage, m);
      break;
    case PipelineActionKind::BackwardInput:
      done = runInputGrad(action.stage, m);
      break;
    case PipelineActionKind::BackwardWeight:
      done = runWeightGrad(action.stage, m);
      break;
    default:
      break;
    }
    if (failed(done))
      return failure();
  }

  // The sums exchanged between ranks (a weight's gradient over the stages
  // that read it, the gradient norm, which adds the total), each where the
  // rank takes part, in the order of the step on every rank: computed as
  // each result needed them, a rank that completes a tied gradient itself
  // would exchange the norm first where its peer first exchanges that
  // gradient, and both would wait.
  for (Operation &op : oldBody.without_terminator())
    for (Value value : op.getResults())
      if (isExchanged(value) &&
          llvm::is_contained(getRanksOf(stages.getStageSet(value)), rank) &&
          failed(lookupStep(value)))
        return failure();

  // The results: those of the rank's parameters, and those every rank
  // returns (the loss, the gradient norm), computed where they can be and
  // sent from the first rank that can to the others that need them (a
  // parameter that stages of several ranks read, whose gradient one of
  // them completes, goes with its moments to the others). A rank receives
  // its results after it computed the others: the sender may need this
  // rank's part of an exchange (the gradient norm) first.
  auto ret = cast<func::ReturnOp>(oldBody.getTerminator());
  SmallVector<Value> returned;
  SmallVector<unsigned> kept;
  SmallVector<SmallVector<int64_t>> owned(layout.numRanks);
  for (int64_t s = 0; s < stages.getNumStages(); ++s)
    owned[layout.getRankOfStage(s)].push_back(s);
  struct Received {
    size_t position;
    Value value;
    int64_t source, tag;
  };
  SmallVector<Received> received;
  for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
    auto name = step.getResultAttrOfType<StringAttr>(
        index, TitanDialect::kNameAttrName);
    std::optional<std::pair<ParamSlot, StringRef>> slot =
        name ? parsePrefixedParamSlot(name.getValue()) : std::nullopt;
    // The ranks that return this result: every rank, or for a parameter's
    // slot those holding a stage that reads the parameter.
    std::function<bool(int64_t)> returns = [](int64_t) { return true; };
    if (slot) {
      std::optional<unsigned> param;
      for (BlockArgument arg : oldBody.getArguments())
        if (auto argName = step.getArgAttrOfType<StringAttr>(
                arg.getArgNumber(), TitanDialect::kNameAttrName);
            argName && argName.getValue() == slot->second &&
            getArgRole(step, arg.getArgNumber()) == ArgRole::Param)
          param = arg.getArgNumber();
      if (param) {
        ArrayRef<int64_t> paramStages =
            stages.getParamStages(oldBody.getArgument(*param));
        returns = [&owned, paramStages](int64_t r) {
          return llvm::any_of(paramStages, [&](int64_t s) {
            return llvm::is_contained(owned[r], s);
          });
        };
      }
      if (!returns(rank))
        continue;
    }
    int64_t source = -1;
    for (int64_t r = 0; r < layout.numRanks && source < 0; ++r)
      if (isComputable(value, owned[r]))
        source = r;
    if (source < 0)
      return ret.emitError() << "titan-partition-pipeline: no pipeline rank "
                                "can compute result #"
                             << index;
    int64_t tag = getTag(MessageKind::Result, index);
    Value local;
    if (source == rank || isComputable(value, owned[rank])) {
      FailureOr<Value> computed = lookupStep(value);
      if (failed(computed))
        return failure();
      local = *computed;
      if (source == rank)
        for (int64_t r = 0; r < layout.numRanks; ++r)
          if (r != rank && returns(r) && !isComputable(value, owned[r]))
            send(local, value, r, tag);
    } else {
      received.push_back({returned.size(), value, source, tag});
    }
    returned.push_back(local);
    kept.push_back(index);
  }
  for (const Received &r : received)
    returned[r.position] = receive(r.value, r.source, r.tag);
  func::ReturnOp::create(builder, ret.getLoc(), returned);
  program.setType(
      builder.getFunctionType(argTypes, ValueRange(returned).getTypes()));
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned index : kept)
    resultAttrs.push_back(step.getResultAttrDict(index));
  program.setAllResultAttrs(resultAttrs);

  // Only what the rank's ops read stays an argument (the inputs always).
  llvm::BitVector unused(body->getNumArguments());
  for (BlockArgument arg : body->getArguments())
    if (arg.use_empty() &&
        getArgRole(program, arg.getArgNumber()) != ArgRole::Input)
      unused.set(arg.getArgNumber());
  if (failed(program.eraseArguments(unused)))
    return failure();
  return program;
}

} // namespace

FailureOr<func::FuncOp> mlir::titan::writePipelineRankProgram(
    func::FuncOp step, const PipelineStages &stages,
    const PipelineSchedule &schedule, int64_t rank, int64_t microbatches) {
  int64_t opCount = step.getBody().front().getOperations().size();
  int64_t widestBoundary = 0;
  for (int64_t s = 0; s < stages.getNumStages(); ++s)
    widestBoundary = std::max<int64_t>(
        {widestBoundary, int64_t(stages.getForwardCarry(s).size()),
         int64_t(stages.getBackwardCarry(s).size())});
  auto exceeds = [](int64_t value, int64_t bits) {
    return value > (int64_t(1) << bits);
  };
  if (exceeds(stages.getNumStages(), kStageBits) ||
      exceeds(microbatches, kMicrobatchBits) ||
      exceeds(widestBoundary, kIndexBits) || exceeds(opCount, 29))
    return emitError(step.getLoc())
           << "titan-partition-pipeline: the transfers' 31-bit tags hold at "
              "most "
           << (1 << kStageBits) << " stages, " << (1 << kMicrobatchBits)
           << " microbatches and " << (1 << kIndexBits)
           << " values crossing a stage boundary; this pipeline has "
           << stages.getNumStages() << ", " << microbatches << " and "
           << widestBoundary;
  // Every rank's program, so that the transfers are ordered alike on all
  // (orderPipelineTransfers); the others' are dropped.
  SmallVector<func::FuncOp> programs;
  llvm::scope_exit dropOthers([&] {
    for (auto [peer, built] : llvm::enumerate(programs))
      if (int64_t(peer) != rank)
        built.erase();
  });
  for (int64_t peer = 0; peer < schedule.numRanks; ++peer) {
    RankProgram writer(step, stages, schedule, peer, microbatches);
    FailureOr<func::FuncOp> built = writer.build(schedule.ranks[peer]);
    if (failed(built))
      return failure();
    programs.push_back(*built);
  }
  orderPipelineTransfers(programs);
  return programs[rank];
}
