//===- SelectRecompute.cpp - activation checkpointing ---------------------===//
//
// Implements titan-select-recompute (see passes/Passes.td for the contract):
// the forward values of a checkpointed transformer block that the backward
// reads are recomputed, right before the block's first backward op that
// reads one of them, from what the block keeps. What a block keeps comes
// from torchtitan's policies (full, selective "op", every N-th block) or,
// under a memory budget, from the integer program of RecomputeSolver.h over
// per-rank bytes and predicted seconds.
//
//===----------------------------------------------------------------------===//

#include "PassDevice.h"
#include "RankSizes.h"
#include "RecomputeSolver.h"

#include "titan/CostModel/CostModel.h"
#include "titan/CostModel/OpTime.h"
#include "titan/Dialect/ArgRole.h"
#include "titan/Dialect/ArgumentTrace.h"
#include "titan/Dialect/Partition.h"
#include "titan/Dialect/Provenance.h"
#include "titan/Dialect/ValuePlacements.h"
#include "titan/Passes.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

namespace mlir::titan {
#define GEN_PASS_DEF_SELECTRECOMPUTEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// The forward ops of one transformer block, in program order.
struct BlockOps {
  func::FuncOp function;
  StringRef name;
  SmallVector<Operation *> ops;
  /// The ops' results that later forward ops outside the block read: the
  /// block's outputs, always kept.
  DenseSet<Value> outputs;
  /// Whether `op` is one of `ops`.
  llvm::SmallPtrSet<Operation *, 32> contains;
};

class SelectRecomputePass
    : public titan::impl::SelectRecomputePassBase<SelectRecomputePass> {
public:
  using SelectRecomputePassBase::SelectRecomputePassBase;

  void runOnOperation() override;

private:
  /// The transformer blocks of `step`'s forward, in forward order.
  static std::vector<BlockOps> collectBlocks(func::FuncOp step);
  /// What torchtitan's selective "op" policy keeps of `block`: the results
  /// of attention, of max reductions, of reduce-scatters and of every
  /// other matmul (the 1st, 3rd, ...).
  static DenseSet<Value> getSelectiveOpKept(const BlockOps &block);
  /// The candidates of `block` for the solver: its ops and the values it
  /// need not keep (its ops' results minus its outputs), listed in `values`.
  static RecomputeBlock describe(const BlockOps &block, RankSizes &sizes,
                                 SmallVectorImpl<Value> &values);
  /// Chooses what every block keeps with at most `budget` bytes kept per
  /// rank (without one: `budgetFraction` of what no recomputation keeps);
  /// writes the choice on `step` as titan.recompute_plan.
  LogicalResult solve(func::FuncOp step, ArrayRef<BlockOps> blocks,
                      std::optional<double> budget, double budgetFraction,
                      SmallVectorImpl<DenseSet<Value>> &kept);
  /// Recomputes the values of `block` that the backward reads and that are
  /// neither in `kept` nor outputs of the block.
  static void recompute(const BlockOps &block, const DenseSet<Value> &kept);
};

} // namespace

void SelectRecomputePass::runOnOperation() {
  if (mode == "none")
    return;
  int64_t every = 1;
  bool everyN = mode == "selective" && selectiveOption != "op";
  if (everyN &&
      (StringRef(selectiveOption).getAsInteger(10, every) || every < 1)) {
    emitError(getOperation().getLoc())
        << "titan-select-recompute: selective-ac-option '" << selectiveOption
        << "' is neither op nor a positive integer";
    return signalPassFailure();
  }
  if (!llvm::is_contained({"full", "selective", "memory_budget", "auto"},
                          StringRef(mode))) {
    emitError(getOperation().getLoc())
        << "titan-select-recompute: mode '" << mode
        << "' is not one of none, full, selective, memory_budget, auto";
    return signalPassFailure();
  }
  if (mode == "memory_budget" && !(memoryBudget >= 0 && memoryBudget <= 1)) {
    emitError(getOperation().getLoc())
        << "titan-select-recompute: memory-budget "
        << llvm::formatv("{0:F2}", double(memoryBudget)).str()
        << " is not a fraction in [0, 1]";
    return signalPassFailure();
  }
  if (mode == "auto" && keptBytes < 0) {
    emitError(getOperation().getLoc())
        << "titan-select-recompute: mode auto needs kept-bytes, the bytes "
           "per rank to keep for the backward (titan-compile derives it "
           "from [activation_checkpoint] memory_budget_gib)";
    return signalPassFailure();
  }
  auto step = getOperation().lookupSymbol<func::FuncOp>("train_step");
  if (!step) {
    emitError(getOperation().getLoc())
        << "titan-select-recompute: no @train_step to checkpoint (run "
           "titan-build-train-step first)";
    return signalPassFailure();
  }
  std::vector<BlockOps> blocks = collectBlocks(step);
  SmallVector<DenseSet<Value>> kept(blocks.size());
  if (mode == "memory_budget" || mode == "auto") {
    std::optional<double> budget;
    if (mode == "auto")
      budget = double(keptBytes);
    if (failed(solve(step, blocks, budget, memoryBudget, kept)))
      return signalPassFailure();
  } else if (mode == "selective" && !everyN) {
    for (auto [block, keep] : llvm::zip(blocks, kept))
      keep = getSelectiveOpKept(block);
  }
  for (auto [index, block] : llvm::enumerate(blocks))
    if ((int64_t(index) + 1) % every == 0)
      recompute(block, kept[index]);
}

std::vector<BlockOps> SelectRecomputePass::collectBlocks(func::FuncOp step) {
  llvm::MapVector<StringRef, SmallVector<Operation *>> byName;
  for (Operation &op : step.getBody().front().without_terminator()) {
    if (getPhase(&op) != Phase::Forward || op.getNumRegions() != 0)
      continue;
    // A parameter's gather (and the cast to the compute type before it,
    // under mixed precision) stays where FSDP's reshard policy puts it
    // (titan-reshard-after-forward): it is not the block's to recompute.
    if (isa<RedistributeOp, CastOp>(op))
      if (BlockArgument arg = traceToArgument(op.getOperand(0)))
        if (getArgRole(step, arg.getArgNumber()) == ArgRole::Param)
          continue;
    std::optional<StringRef> path = getModulePath(op.getLoc());
    StringRef name = path ? getTransformerBlock(*path) : StringRef();
    if (!name.empty())
      byName[name].push_back(&op);
  }
  std::vector<BlockOps> blocks;
  for (auto &[name, ops] : byName) {
    BlockOps &block = blocks.emplace_back();
    block.function = step;
    block.name = name;
    block.ops = std::move(ops);
    block.contains.insert(block.ops.begin(), block.ops.end());
    for (Operation *op : block.ops)
      for (Value result : op->getResults())
        if (llvm::any_of(result.getUsers(), [&](Operation *user) {
              return !block.contains.contains(user) &&
                     getPhase(user) == Phase::Forward;
            }))
          block.outputs.insert(result);
  }
  return blocks;
}

DenseSet<Value> SelectRecomputePass::getSelectiveOpKept(const BlockOps &block) {
  DenseSet<Value> kept;
  int64_t matmuls = 0;
  for (Operation *op : block.ops) {
    bool saved = false;
    if (isa<MatmulOp>(op)) {
      saved = ++matmuls % 2 == 1;
    } else if (auto redistribute = dyn_cast<RedistributeOp>(op)) {
      // A reduce-scatter: partial sums become shards.
      PlacementsAttr from =
          getValuePlacements(block.function, redistribute.getInput());
      saved =
          from && llvm::any_of(llvm::zip(from.getPlacements(),
                                         redistribute.getTo().getPlacements()),
                               [](auto pair) {
                                 return std::get<0>(pair).isPartial() &&
                                        std::get<1>(pair).isShard();
                               });
    } else {
      saved = isa<AttentionOp, ReduceMaxOp>(op);
    }
    if (saved)
      kept.insert(op->result_begin(), op->result_end());
  }
  return kept;
}

RecomputeBlock SelectRecomputePass::describe(const BlockOps &block,
                                             RankSizes &sizes,
                                             SmallVectorImpl<Value> &values) {
  RecomputeBlock problem;
  DenseMap<Value, unsigned> valueIndex;
  DenseMap<Operation *, unsigned> opIndex;
  for (Operation *op : block.ops) {
    opIndex[op] = problem.ops.size();
    RecomputeBlock::Op &entry = problem.ops.emplace_back();
    entry.seconds = sizes.getSeconds(op);
    for (Value operand : op->getOperands())
      if (auto it = valueIndex.find(operand); it != valueIndex.end())
        entry.operands.push_back(it->second);
    for (Value result : op->getResults()) {
      if (block.outputs.contains(result))
        continue;
      valueIndex[result] = problem.values.size();
      values.push_back(result);
      RecomputeBlock::Value &value = problem.values.emplace_back();
      value.bytes = sizes.getBytes(result);
      value.def = opIndex[op];
      value.readByBackward =
          llvm::any_of(result.getUsers(), [&](Operation *user) {
            return !block.contains.contains(user) &&
                   getPhase(user) == Phase::Backward;
          });
    }
  }
  return problem;
}

LogicalResult
SelectRecomputePass::solve(func::FuncOp step, ArrayRef<BlockOps> blocks,
                           std::optional<double> budget, double budgetFraction,
                           SmallVectorImpl<DenseSet<Value>> &kept) {
  FailureOr<DeviceDescription> loaded =
      loadPassDevice(step.getLoc(), "titan-select-recompute", device);
  if (failed(loaded))
    return failure();
  RankSizes sizes(step, *loaded,
                  ranksPerNode ? int64_t(ranksPerNode) : loaded->ranksPerNode);
  std::vector<RecomputeBlock> problems;
  SmallVector<SmallVector<Value>> values(blocks.size());
  for (auto [block, list] : llvm::zip(blocks, values))
    problems.push_back(describe(block, sizes, list));
  if (!budget) {
    // torchtitan's memory_budget: 0 keeps what full checkpointing keeps,
    // 1 what no checkpointing keeps (every value the backward reads).
    double all = 0;
    for (const RecomputeBlock &problem : problems)
      for (const RecomputeBlock::Value &value : problem.values)
        if (value.readByBackward)
          all += value.bytes;
    budget = budgetFraction * all;
  }
  RecomputeSolution solution = solveRecompute(problems, *budget, solverSeconds);
  for (auto [list, choice, keep] : llvm::zip(values, solution.kept, kept))
    for (auto [value, chosen] : llvm::zip(list, choice))
      if (chosen)
        keep.insert(value);
  constexpr double kMiB = 1024.0 * 1024.0;
  Builder builder(step.getContext());
  std::string solver = llvm::formatv(
      "{0}: {1} blocks in {2} classes, {3} choices, {4:F2} s",
      stringifyRecomputeSolveStatus(solution.status), blocks.size(),
      solution.blockClasses, solution.choices, solution.solveSeconds);
  step->setAttr(
      TitanDialect::kRecomputePlanAttrName,
      builder.getDictionaryAttr(
          {builder.getNamedAttr("budget_mib",
                                builder.getF64FloatAttr(*budget / kMiB)),
           builder.getNamedAttr(
               "kept_mib", builder.getF64FloatAttr(solution.keptBytes / kMiB)),
           builder.getNamedAttr(
               "recompute_seconds",
               builder.getF64FloatAttr(solution.recomputeSeconds)),
           builder.getNamedAttr("solver", builder.getStringAttr(solver))}));
  return success();
}

void SelectRecomputePass::recompute(const BlockOps &block,
                                    const DenseSet<Value> &kept) {
  auto isKept = [&](Value value) {
    return kept.contains(value) || block.outputs.contains(value);
  };
  // The values the backward reads that are not kept, and the first backward
  // op that reads one of them.
  llvm::SetVector<Value> needed;
  Operation *firstUse = nullptr;
  for (Operation *op : block.ops)
    for (Value result : op->getResults()) {
      if (isKept(result))
        continue;
      for (Operation *user : result.getUsers()) {
        if (block.contains.contains(user) || getPhase(user) != Phase::Backward)
          continue;
        needed.insert(result);
        if (!firstUse || user->isBeforeInBlock(firstUse))
          firstUse = user;
      }
    }
  if (needed.empty())
    return;
  // The ops to clone: those computing a needed value, through every operand
  // that is neither kept nor from outside the block.
  llvm::SmallPtrSet<Operation *, 32> toClone;
  SmallVector<Value> worklist(needed.begin(), needed.end());
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || !block.contains.contains(def) || !toClone.insert(def).second)
      continue;
    for (Value operand : def->getOperands())
      if (!isKept(operand))
        worklist.push_back(operand);
  }
  // Clone them in forward order before the first backward reader.
  OpBuilder builder(firstUse);
  IRMapping mapping;
  for (Operation *op : block.ops) {
    if (!toClone.contains(op))
      continue;
    Operation *clone = builder.clone(*op, mapping);
    clone->setAttr(TitanDialect::kRecomputeAttrName, builder.getUnitAttr());
    setPhase(clone, Phase::Backward);
  }
  // The backward reads the clones.
  for (Value value : needed)
    value.replaceUsesWithIf(mapping.lookup(value), [&](OpOperand &use) {
      return getPhase(use.getOwner()) == Phase::Backward &&
             !use.getOwner()->hasAttr(TitanDialect::kRecomputeAttrName);
    });
}
