//===- SelectRecompute.cpp - activation checkpointing ---------------------===//
//
// Implements titan-select-recompute (see passes/Passes.td for the contract):
// the forward values of a checkpointed transformer block that the backward
// reads are recomputed, right before the block's first backward op that
// reads one of them, from what the block keeps.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Provenance.h"
#include "titan/Passes.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::titan {
#define GEN_PASS_DEF_SELECTRECOMPUTEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// The forward ops of one transformer block, in program order.
struct BlockOps {
  StringRef name;
  SmallVector<Operation *> ops;
};

/// Which values of a checkpointed block stay from the forward.
enum class Policy {
  /// Only the block's inputs (full activation checkpointing).
  Full,
  /// Also torchtitan's selective save list: attention, max reductions and
  /// every other matmul.
  SaveOps,
};

class SelectRecomputePass
    : public titan::impl::SelectRecomputePassBase<SelectRecomputePass> {
public:
  using SelectRecomputePassBase::SelectRecomputePassBase;

  void runOnOperation() override {
    if (mode == "none")
      return;
    std::optional<Policy> policy;
    int64_t every = 1;
    if (mode == "full") {
      policy = Policy::Full;
    } else if (mode == "selective" && selectiveOption == "op") {
      policy = Policy::SaveOps;
    } else if (mode == "selective" &&
               !StringRef(selectiveOption).getAsInteger(10, every) &&
               every >= 1) {
      policy = Policy::Full;
    } else {
      emitError(getOperation().getLoc())
          << "titan-select-recompute: mode '" << mode
          << "' with selective-ac-option '" << selectiveOption
          << "' is not one of none, full, selective with op or a positive "
             "integer";
      return signalPassFailure();
    }
    auto step = getOperation().lookupSymbol<func::FuncOp>("train_step");
    if (!step) {
      emitError(getOperation().getLoc())
          << "titan-select-recompute: no @train_step to checkpoint (run "
             "titan-build-train-step first)";
      return signalPassFailure();
    }
    SmallVector<BlockOps> blocks = collectBlocks(step);
    for (auto [index, block] : llvm::enumerate(blocks))
      if ((int64_t(index) + 1) % every == 0)
        recompute(block, *policy);
  }

private:
  /// The transformer blocks of `step`'s forward, in forward order.
  static SmallVector<BlockOps> collectBlocks(func::FuncOp step);
  /// Recomputes the values of `block` that the backward reads and that
  /// `policy` does not keep.
  static void recompute(const BlockOps &block, Policy policy);
};

} // namespace

SmallVector<BlockOps> SelectRecomputePass::collectBlocks(func::FuncOp step) {
  llvm::MapVector<StringRef, SmallVector<Operation *>> byName;
  for (Operation &op : step.getBody().front().without_terminator()) {
    if (getPhase(&op) != Phase::Forward || op.getNumRegions() != 0)
      continue;
    std::optional<StringRef> path = getModulePath(op.getLoc());
    StringRef name = path ? getTransformerBlock(*path) : StringRef();
    if (!name.empty())
      byName[name].push_back(&op);
  }
  return llvm::map_to_vector(byName, [](auto &entry) {
    return BlockOps{entry.first, std::move(entry.second)};
  });
}

void SelectRecomputePass::recompute(const BlockOps &block, Policy policy) {
  llvm::SmallPtrSet<Operation *, 32> inBlock(block.ops.begin(),
                                             block.ops.end());
  // Kept: the block's outputs (read by later forward ops: the next block's
  // inputs) and, under the op policy, torchtitan's saved results.
  DenseSet<Value> kept;
  int64_t matmuls = 0;
  for (Operation *op : block.ops) {
    bool saved = false;
    if (policy == Policy::SaveOps) {
      if (isa<MatmulOp>(op))
        saved = ++matmuls % 2 == 1;
      else
        saved = isa<AttentionOp, ReduceMaxOp>(op);
    }
    for (Value result : op->getResults()) {
      bool output = llvm::any_of(result.getUsers(), [&](Operation *user) {
        return !inBlock.contains(user) && getPhase(user) == Phase::Forward;
      });
      if (saved || output)
        kept.insert(result);
    }
  }
  // The values the backward reads that are not kept, and the first backward
  // op that reads one of them.
  llvm::SetVector<Value> needed;
  Operation *firstUse = nullptr;
  for (Operation *op : block.ops)
    for (Value result : op->getResults()) {
      if (kept.contains(result))
        continue;
      for (Operation *user : result.getUsers()) {
        if (inBlock.contains(user) || getPhase(user) != Phase::Backward)
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
    if (!def || !inBlock.contains(def) || !toClone.insert(def).second)
      continue;
    for (Value operand : def->getOperands())
      if (!kept.contains(operand))
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
