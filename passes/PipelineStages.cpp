//===- PipelineStages.cpp - the stages of a pipelined training step -------===//
//
// Implements PipelineStages (see PipelineStages.h).
//
//===----------------------------------------------------------------------===//

#include "PipelineStages.h"

#include "titan/Dialect/ArgRole.h"
#include "titan/Dialect/Provenance.h"
#include "titan/Dialect/TitanDialect.h"
#include "titan/Dialect/ValuePlacements.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <limits>
#include <vector>

using namespace mlir;
using namespace mlir::titan;

namespace {

/// The transformer block `op` lies in, or "".
StringRef getBlock(Operation *op) {
  std::optional<StringRef> path = getModulePath(op->getLoc());
  return path ? getTransformerBlock(*path) : StringRef();
}

/// Whether `op` only widens a float exactly or rearranges elements: a
/// gradient is summed over the microbatches after it (in the wider type).
bool isWideningOrView(Operation *op) {
  if (isa<ReshapeOp, TransposeOp>(op))
    return true;
  auto cast = dyn_cast<CastOp>(op);
  return cast &&
         isExactFloatWidening(cast.getInput().getType(), cast.getType());
}

} // namespace

FailureOr<PipelineStages> PipelineStages::analyze(
    func::FuncOp step, int64_t numStages, ArrayRef<int64_t> stageBlocks,
    function_ref<double(Operation *)> seconds, bool fsdpPerMicrobatch) {
  PipelineStages stages(step, numStages);
  if (failed(stages.classify(fsdpPerMicrobatch)) ||
      failed(stages.assignStages(stageBlocks, seconds)))
    return failure();
  stages.sumAcrossStagesOnce();
  if (failed(stages.findCarries()) || failed(stages.assignParams()))
    return failure();
  stages.splitBackward();
  return stages;
}

int64_t PipelineStages::getValueStage(Value value) const {
  return stage.lookup(value.getDefiningOp());
}

const llvm::SmallSetVector<int64_t, 4> &
PipelineStages::getStageSet(Value value) const {
  static const llvm::SmallSetVector<int64_t, 4> none;
  auto it = stageSets.find(value);
  return it == stageSets.end() ? none : it->second;
}

bool PipelineStages::isParameterGather(Operation *op) const {
  auto redistribute = dyn_cast<RedistributeOp>(op);
  if (!redistribute)
    return false;
  Value source = redistribute.getInput();
  while (Operation *def = source.getDefiningOp()) {
    if (def->getNumOperands() != 1)
      return false;
    source = def->getOperand(0);
  }
  auto param = dyn_cast<BlockArgument>(source);
  if (!param || getArgRole(step, param.getArgNumber()) != ArgRole::Param)
    return false;
  PlacementsAttr from = getValuePlacements(step, redistribute.getInput());
  if (!from)
    return false;
  bool gathers = false;
  for (auto [before, after] :
       llvm::zip(from.getPlacements(), redistribute.getTo().getPlacements()))
    gathers |= before.isShard() && !after.isShard();
  return gathers && llvm::none_of(op->getUsers(), [](Operation *user) {
           return getPhase(user) == Phase::Optimizer;
         });
}

LogicalResult PipelineStages::classify(bool fsdpPerMicrobatch) {
  Block &body = step.getBody().front();
  for (BlockArgument arg : body.getArguments())
    if (getArgRole(step, arg.getArgNumber()) == ArgRole::Input &&
        cast<RankedTensorType>(arg.getType()).getRank() >= 1)
      microbatched.insert(arg);
  llvm::DenseSet<Value> dependent(microbatched.begin(), microbatched.end());
  llvm::DenseSet<Value> fromMicrobatch(microbatched.begin(),
                                       microbatched.end());
  for (Operation &op : body.without_terminator()) {
    // Random numbers (dropout) are drawn anew for each microbatch, and
    // parameters resharded after the forward are gathered anew.
    bool readsTokens = isa<RandomUniformOp>(op) ||
                       llvm::any_of(op.getOperands(), [&](Value v) {
                         return fromMicrobatch.contains(v);
                       });
    bool isDependent =
        readsTokens || (fsdpPerMicrobatch && isParameterGather(&op)) ||
        llvm::any_of(op.getOperands(),
                     [&](Value v) { return dependent.contains(v); });
    if (!isDependent) {
      timing[&op] = OpTiming::Invariant;
      continue;
    }
    dependent.insert(op.result_begin(), op.result_end());
    if (readsTokens) {
      fromMicrobatch.insert(op.result_begin(), op.result_end());
      readsMicrobatch.insert(&op);
    }
    Phase phase = getPhase(&op).value_or(Phase::Forward);
    if (phase != Phase::Optimizer) {
      timing[&op] = OpTiming::PerMicrobatch;
      if (phase == Phase::Backward)
        backward.insert(&op);
      continue;
    }
    // A gradient is summed over the microbatches in the type it is reduced
    // in: widening casts before the sum run per microbatch.
    Operation *def =
        op.getNumOperands() == 1 ? op.getOperand(0).getDefiningOp() : nullptr;
    if (def && isWideningOrView(&op) &&
        timing.lookup(def) == OpTiming::PerMicrobatch) {
      timing[&op] = OpTiming::PerMicrobatch;
      backward.insert(&op);
      continue;
    }
    timing[&op] = OpTiming::PerStep;
  }
  // A redistribution that sums a gradient across ranks for the optimizer
  // runs once, on the sum over the microbatches (FSDP2 accumulates the
  // unsharded gradient under a pipeline schedule, which syncs gradients at
  // the last backward only, whatever it reshards); FSDP per microbatch
  // without a pipeline (gradient accumulation) reduces each microbatch's
  // and sums the shards.
  if (fsdpPerMicrobatch && numStages == 1)
    return success();
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    auto redistribute = dyn_cast<RedistributeOp>(&op);
    if (!redistribute || timing[&op] != OpTiming::PerMicrobatch)
      continue;
    PlacementsAttr from = getValuePlacements(step, redistribute.getInput());
    if (!from || llvm::none_of(from.getPlacements(), [](const Placement &p) {
          return p.isPartial();
        }))
      continue;
    if (llvm::all_of(op.getUsers(), [&](Operation *user) {
          return isa<func::ReturnOp>(user) ||
                 timing.lookup(user) == OpTiming::PerStep;
        })) {
      timing[&op] = OpTiming::PerStep;
      backward.erase(&op);
    }
  }
  return success();
}

/// The split of consecutive `costs` into `parts` groups of at least one
/// (`first` and `last` added to the first and last group) whose largest sum
/// is smallest: the number in each group.
static SmallVector<int64_t> balance(ArrayRef<double> costs, int64_t parts,
                                    double first, double last) {
  int64_t n = costs.size();
  SmallVector<double> prefix{0.0};
  for (double cost : costs)
    prefix.push_back(prefix.back() + cost);
  auto groupCost = [&](int64_t part, int64_t begin, int64_t end) {
    return prefix[end] - prefix[begin] + (part == 0 ? first : 0.0) +
           (part == parts - 1 ? last : 0.0);
  };
  // best[p][i]: the smallest largest sum of the first p + 1 groups over
  // the first i costs; cut[p][i]: where its last group begins.
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(parts,
                                        std::vector<double>(n + 1, kInfinity));
  std::vector<std::vector<int64_t>> cut(parts, std::vector<int64_t>(n + 1, 0));
  for (int64_t i = 1; i <= n; ++i)
    best[0][i] = groupCost(0, 0, i);
  for (int64_t p = 1; p < parts; ++p)
    for (int64_t i = p + 1; i <= n; ++i)
      for (int64_t j = p; j < i; ++j) {
        double worst = std::max(best[p - 1][j], groupCost(p, j, i));
        if (worst < best[p][i]) {
          best[p][i] = worst;
          cut[p][i] = j;
        }
      }
  SmallVector<int64_t> sizes(parts);
  for (int64_t p = parts - 1, end = n; p >= 0; --p) {
    int64_t begin = p == 0 ? 0 : cut[p][end];
    sizes[p] = end - begin;
    end = begin;
  }
  return sizes;
}

LogicalResult
PipelineStages::assignStages(ArrayRef<int64_t> stageBlocks,
                             function_ref<double(Operation *)> seconds) {
  Block &body = step.getBody().front();
  auto perMicrobatch = [&](Operation *op) {
    return op && timing.lookup(op) == OpTiming::PerMicrobatch;
  };
  // The blocks in the order the microbatch flows through them (a
  // parameter gathered for each microbatch may be gathered earlier).
  SmallVector<StringRef> blocks;
  for (Operation &op : body.without_terminator())
    if (readsMicrobatch.contains(&op) && !backward.contains(&op))
      if (StringRef block = getBlock(&op);
          !block.empty() && !llvm::is_contained(blocks, block))
        blocks.push_back(block);
  int64_t numBlocks = blocks.size();
  // One stage (gradient accumulation) holds the whole model, blocks or
  // none.
  if (numBlocks < numStages && numStages > 1)
    return emitError(step.getLoc())
           << "titan-partition-pipeline: the model has " << numBlocks
           << " transformer blocks, fewer than the " << numStages
           << " pipeline stages; use fewer stages (pipeline_parallel_degree, "
              "pipeline_parallel_layers_per_stage)";
  // The predicted seconds of each block's forward and backward, and of the
  // ops before the first block and after the last (by top-level module).
  llvm::StringMap<double> blockSeconds;
  llvm::StringSet<> leadingModules;
  double leading = 0, trailing = 0;
  bool seenBlock = false;
  for (Operation &op : body.without_terminator()) {
    if (!perMicrobatch(&op))
      continue;
    StringRef block = getBlock(&op);
    std::optional<StringRef> path = getModulePath(op.getLoc());
    StringRef module = path ? path->split('.').first : StringRef();
    double opSeconds = seconds(&op);
    if (!block.empty()) {
      blockSeconds[block] += opSeconds;
      seenBlock = seenBlock ||
                  (!backward.contains(&op) && readsMicrobatch.contains(&op));
    } else if (!backward.contains(&op) ? !seenBlock
                                       : leadingModules.contains(module)) {
      leading += opSeconds;
      if (!backward.contains(&op))
        leadingModules.insert(module);
    } else {
      trailing += opSeconds;
    }
  }
  SmallVector<int64_t> perStage(stageBlocks);
  if (perStage.empty() && numStages == 1) {
    perStage.push_back(numBlocks);
  } else if (perStage.empty()) {
    SmallVector<double> costs;
    for (StringRef block : blocks)
      costs.push_back(blockSeconds.lookup(block));
    perStage = balance(costs, numStages, leading, trailing);
  } else {
    int64_t total = 0;
    for (int64_t n : perStage)
      total += n;
    if (int64_t(perStage.size()) != numStages || total != numBlocks ||
        llvm::any_of(perStage, [](int64_t n) { return n < 0; }))
      return emitError(step.getLoc())
             << "titan-partition-pipeline: stage-blocks must give " << numStages
             << " non-negative block counts adding up to the model's "
             << numBlocks << " blocks";
  }
  llvm::StringMap<int64_t> blockStage;
  for (int64_t s = 0, next = 0; s < numStages; ++s)
    for (int64_t i = 0; i < perStage[s]; ++i)
      blockStage[blocks[next++]] = s;
  blocksPerStage = perStage;

  // Forward ops outside the blocks: before the first block in stage 0 (or
  // with the stage they read from), after the last block in the last stage.
  llvm::DenseSet<Operation *> feedsBlock;
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (!perMicrobatch(&op) || backward.contains(&op))
      continue;
    if (llvm::any_of(op.getUsers(), [&](Operation *user) {
          return perMicrobatch(user) && !backward.contains(user) &&
                 (!getBlock(user).empty() || feedsBlock.contains(user));
        }))
      feedsBlock.insert(&op);
  }
  forward.resize(numStages);
  inputGrad.resize(numStages);
  weightGrad.resize(numStages);
  for (Operation &op : body.without_terminator()) {
    if (!perMicrobatch(&op))
      continue;
    bool isBackward = backward.contains(&op);
    SmallVector<int64_t> operandStages;
    for (Value operand : op.getOperands())
      if (perMicrobatch(operand.getDefiningOp()))
        operandStages.push_back(stage[operand.getDefiningOp()]);
    int64_t s;
    if (StringRef block = getBlock(&op); !block.empty())
      s = blockStage.lookup(block);
    else if (isBackward)
      s = operandStages.empty() ? numStages - 1
                                : *llvm::min_element(operandStages);
    else if (feedsBlock.contains(&op))
      s = operandStages.empty() ? 0 : *llvm::max_element(operandStages);
    else
      s = numStages - 1;
    // A sum of gradients that all come from later stages (the cotangents of
    // a value a later stage reads twice, as a block's input is) is summed
    // there: one tensor crosses the boundary instead of each term.
    if (isBackward && isa<AddOp>(op) && !operandStages.empty() &&
        *llvm::min_element(operandStages) > s &&
        llvm::all_of(op.getOperands(), [&](Value operand) {
          return backward.contains(operand.getDefiningOp());
        }))
      s = *llvm::min_element(operandStages);
    for (Value operand : op.getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!perMicrobatch(def))
        continue;
      int64_t from = stage[def];
      bool fromBackward = backward.contains(def);
      if ((!isBackward && from > s) || (fromBackward && from < s))
        return op.emitError()
               << "titan-partition-pipeline: this "
               << (isBackward ? "backward" : "forward") << " op of stage " << s
               << " reads a value the "
               << (fromBackward ? "backward" : "forward") << " of stage "
               << from
               << " computes, against the direction its data flows between "
                  "stages; the model's blocks must run in order";
    }
    stage[&op] = s;
    if (!isBackward)
      forward[s].push_back(&op);
  }
  return success();
}

void PipelineStages::sumAcrossStagesOnce() {
  // A gradient summed from several stages (a tied weight's) is summed once
  // per step, after each stage has summed its part over the microbatches,
  // with its widening: each stage keeps its part instead of sending it
  // through the stages between.
  Block &body = step.getBody().front();
  llvm::DenseSet<Operation *> crossStage;
  for (Operation &op : body.without_terminator()) {
    if (timing.lookup(&op) != OpTiming::PerMicrobatch)
      continue;
    auto stageOf = [&](Value v) -> std::optional<int64_t> {
      Operation *def = v.getDefiningOp();
      if (!def || timing.lookup(def) != OpTiming::PerMicrobatch)
        return std::nullopt;
      return stage.lookup(def);
    };
    if (isa<AddOp>(op)) {
      std::optional<int64_t> lhs = stageOf(op.getOperand(0));
      std::optional<int64_t> rhs = stageOf(op.getOperand(1));
      if (lhs && rhs && *lhs != *rhs)
        crossStage.insert(&op);
    } else if (isWideningOrView(&op) &&
               crossStage.contains(op.getOperand(0).getDefiningOp())) {
      crossStage.insert(&op);
    }
  }
  for (Operation &op : llvm::reverse(body.without_terminator()))
    if (crossStage.contains(&op) &&
        llvm::all_of(op.getUsers(), [&](Operation *user) {
          return isa<func::ReturnOp>(user) ||
                 timing.lookup(user) == OpTiming::PerStep;
        })) {
      timing[&op] = OpTiming::PerStep;
      backward.erase(&op);
    }
}

LogicalResult PipelineStages::findCarries() {
  Block &body = step.getBody().front();
  forwardCarry.resize(numStages);
  backwardCarry.resize(numStages);
  for (Operation &op : body.without_terminator()) {
    OpTiming opTiming = timing.lookup(&op);
    if (opTiming == OpTiming::PerStep) {
      llvm::SmallSetVector<int64_t, 4> set;
      for (Value operand : op.getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def && timing.lookup(def) == OpTiming::PerMicrobatch)
          set.insert(stage[def]);
        else
          set.insert(getStageSet(operand).begin(), getStageSet(operand).end());
      }
      for (Value result : op.getResults())
        stageSets[result] = set;
    }
    if (opTiming != OpTiming::PerMicrobatch)
      continue;
    int64_t from = stage[&op];
    bool fromBackward = backward.contains(&op);
    for (Value result : op.getResults()) {
      for (Operation *user : result.getUsers()) {
        if (isa<func::ReturnOp>(user) ||
            timing.lookup(user) == OpTiming::PerStep) {
          accumulated.insert(result);
          stageSets[result].insert(from);
          continue;
        }
        int64_t to = stage[user];
        if (!fromBackward && to < from)
          return user->emitError()
                 << "titan-partition-pipeline: this backward op of stage " << to
                 << " reads a forward value of the later stage " << from
                 << "; the model's blocks must run in order";
        for (int64_t k = from; !fromBackward && k < to; ++k)
          forwardCarry[k].insert(result);
        for (int64_t k = from; fromBackward && k > to; --k)
          backwardCarry[k].insert(result);
      }
    }
  }
  return success();
}

void PipelineStages::splitBackward() {
  Block &body = step.getBody().front();
  for (int64_t s = 0; s < numStages; ++s) {
    // What the gradients sent to stage s - 1 are computed from.
    llvm::DenseSet<Operation *> needed;
    SmallVector<Operation *> worklist;
    if (s > 0)
      for (Value value : backwardCarry[s])
        if (Operation *def = value.getDefiningOp(); backward.contains(def) &&
                                                    stage[def] == s &&
                                                    needed.insert(def).second)
          worklist.push_back(def);
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && backward.contains(def) && stage[def] == s &&
            needed.insert(def).second)
          worklist.push_back(def);
    }
    for (Operation &op : body.without_terminator())
      if (backward.contains(&op) && stage[&op] == s)
        (needed.contains(&op) ? inputGrad : weightGrad)[s].push_back(&op);
  }
}

LogicalResult PipelineStages::assignParams() {
  Block &body = step.getBody().front();
  // The parameters each invariant value is computed from.
  DenseMap<Value, llvm::SmallSetVector<BlockArgument, 2>> sources;
  for (BlockArgument arg : body.getArguments())
    if (getArgRole(step, arg.getArgNumber()) == ArgRole::Param)
      sources[arg].insert(arg);
  DenseMap<BlockArgument, llvm::SmallSetVector<int64_t, 2>> stagesOf;
  for (Operation &op : body.without_terminator()) {
    OpTiming opTiming = timing.lookup(&op);
    if (opTiming == OpTiming::PerStep)
      continue;
    llvm::SmallSetVector<BlockArgument, 2> from;
    for (Value operand : op.getOperands()) {
      auto it = sources.find(operand);
      if (it != sources.end())
        from.insert(it->second.begin(), it->second.end());
    }
    if (opTiming == OpTiming::Invariant) {
      if (!from.empty())
        for (Value result : op.getResults())
          sources[result] = from;
      continue;
    }
    for (BlockArgument param : from)
      stagesOf[param].insert(stage[&op]);
  }
  for (BlockArgument arg : body.getArguments()) {
    if (getArgRole(step, arg.getArgNumber()) != ArgRole::Param)
      continue;
    llvm::SmallSetVector<int64_t, 2> &stages = stagesOf[arg];
    if (stages.empty())
      stages.insert(0);
    paramStages[arg] = stages;
  }
  return success();
}

SmallVector<PipelineStages::StageCost>
PipelineStages::computeStageCosts(function_ref<double(Operation *)> seconds,
                                  function_ref<double(Value)> bytes) const {
  SmallVector<StageCost> costs(numStages);
  for (int64_t s = 0; s < numStages; ++s) {
    StageCost &cost = costs[s];
    for (Operation *op : forward[s])
      cost.forwardSeconds += seconds(op);
    for (Operation *op : inputGrad[s])
      cost.inputGradSeconds += seconds(op);
    for (Operation *op : weightGrad[s])
      cost.weightGradSeconds += seconds(op);
    for (Value value : forwardCarry[s])
      cost.sentForwardBytes += bytes(value);
    // What the stage's backward reads of the forward values it holds (its
    // own and those it received).
    llvm::DenseSet<Operation *> weightOps(weightGrad[s].begin(),
                                          weightGrad[s].end());
    auto account = [&](Value value) {
      bool read = false, readByWeight = false;
      for (Operation *user : value.getUsers())
        if (backward.contains(user) && stage.lookup(user) == s) {
          read = true;
          readByWeight = readByWeight || weightOps.contains(user);
        }
      if (!read)
        return;
      cost.activationBytes += bytes(value);
      if (!readByWeight)
        cost.inputGradFreedBytes += bytes(value);
    };
    for (Operation *op : forward[s])
      for (Value result : op->getResults())
        account(result);
    if (s > 0)
      for (Value value : forwardCarry[s - 1])
        account(value);
  }
  return costs;
}
