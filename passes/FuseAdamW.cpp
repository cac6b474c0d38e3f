//===- FuseAdamW.cpp - a rank's AdamW steps as one runtime call -----------===//
//
// Implements titan-fuse-adamw (see passes/Passes.td).
//
//===----------------------------------------------------------------------===//

#include "titan/Passes.h"

#include "titan/Dialect/Provenance.h"

#include "llvm/ADT/MapVector.h"

namespace mlir::titan {
#define GEN_PASS_DEF_FUSEADAMWPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// What the steps of one titan.fused_adamw share: lr, step, grad_scale and
/// the hyperparameters (beta1, beta2, eps, weight_decay).
using SharedOperands =
    std::tuple<Value, Value, Value, Attribute, Attribute, Attribute, Attribute>;

SharedOperands getSharedOperands(AdamWOp step) {
  return {step.getLr(),
          step.getStep(),
          step.getGradScale(),
          step.getBeta1Attr(),
          step.getBeta2Attr(),
          step.getEpsAttr(),
          step.getWeightDecayAttr()};
}

/// Whether every op that reads a result of `step` comes after `last` in
/// their block.
bool resultsReadAfter(AdamWOp step, Operation *last) {
  Block *block = last->getBlock();
  for (Operation *user : step->getUsers()) {
    Operation *ancestor = block->findAncestorOpInBlock(*user);
    if (!ancestor || !last->isBeforeInBlock(ancestor))
      return false;
  }
  return true;
}

/// Replaces `steps` (in program order) with one titan.fused_adamw where the
/// last of them stands.
void fuse(ArrayRef<AdamWOp> steps) {
  AdamWOp last = steps.back();
  SmallVector<Value> params, grads, expAvgs, expAvgSqs;
  SmallVector<Type> paramTypes, copyTypes;
  SmallVector<int64_t> copied;
  SmallVector<Location> locations;
  for (auto [index, member] : llvm::enumerate(steps)) {
    AdamWOp step = member;
    params.push_back(step.getParam());
    grads.push_back(step.getGrad());
    expAvgs.push_back(step.getExpAvg());
    expAvgSqs.push_back(step.getExpAvgSq());
    paramTypes.push_back(step.getParam().getType());
    if (Value copy = step.getNewParamCopy()) {
      copied.push_back(index);
      copyTypes.push_back(copy.getType());
    }
    locations.push_back(step.getLoc());
  }
  OpBuilder builder(last);
  auto fused = FusedAdamWOp::create(
      builder, FusedLoc::get(builder.getContext(), locations), paramTypes,
      paramTypes, paramTypes, copyTypes, params, grads, expAvgs, expAvgSqs,
      last.getLr(), last.getStep(), last.getGradScale(), last.getBeta1Attr(),
      last.getBeta2Attr(), last.getEpsAttr(), last.getWeightDecayAttr(),
      copied.empty() ? DenseI64ArrayAttr()
                     : builder.getDenseI64ArrayAttr(copied));
  setPhase(fused, Phase::Optimizer);
  unsigned copies = 0;
  for (auto [index, member] : llvm::enumerate(steps)) {
    AdamWOp step = member;
    step.getNewParam().replaceAllUsesWith(fused.getNewParams()[index]);
    step.getNewExpAvg().replaceAllUsesWith(fused.getNewExpAvgs()[index]);
    step.getNewExpAvgSq().replaceAllUsesWith(fused.getNewExpAvgSqs()[index]);
    if (Value copy = step.getNewParamCopy())
      copy.replaceAllUsesWith(fused.getNewParamCopies()[copies++]);
  }
  for (AdamWOp step : steps)
    step->erase();
}

/// Fuses the steps of `block` that share their operands, in groups whose
/// members' results are read only after the group's last member; with
/// `adjacentOnly`, in runs of steps with nothing between them.
void fuseBlock(Block &block, bool adjacentOnly) {
  llvm::MapVector<SharedOperands, SmallVector<AdamWOp>> byOperands;
  for (auto step : block.getOps<AdamWOp>())
    byOperands[getSharedOperands(step)].push_back(step);
  for (auto &[shared, steps] : byOperands) {
    SmallVector<AdamWOp> group;
    for (AdamWOp step : steps) {
      bool follows = group.empty() || !adjacentOnly ||
                     group.back()->getNextNode() == step.getOperation();
      if (!group.empty() &&
          (!follows || !llvm::all_of(group, [&](AdamWOp member) {
            return resultsReadAfter(member, step);
          }))) {
        fuse(group);
        group.clear();
      }
      group.push_back(step);
    }
    fuse(group);
  }
}

struct FuseAdamWPass
    : public mlir::titan::impl::FuseAdamWPassBase<FuseAdamWPass> {
  using FuseAdamWPassBase::FuseAdamWPassBase;

  void runOnOperation() override {
    SmallVector<Block *> blocks;
    getOperation()->walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks)
      fuseBlock(*block, adjacentOnly);
  }
};

} // namespace
