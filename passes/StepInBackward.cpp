//===- StepInBackward.cpp - titan-step-in-backward ------------------------===//
//
// Implements titan-step-in-backward (see passes/Passes.td for the
// contract): each parameter's AdamW step right after its gradient is
// complete, as torchtitan's optimizer-in-backward hooks run it.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/ArgRole.h"
#include "titan/Dialect/TitanDialect.h"
#include "titan/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::titan {
#define GEN_PASS_DEF_STEPINBACKWARDPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// The ops of `block` that read `value`, directly or through reshapes (views
/// of its buffer).
void collectReaders(Block &block, Value value,
                    SmallVectorImpl<Operation *> &readers) {
  for (Operation *user : value.getUsers()) {
    Operation *op = block.findAncestorOpInBlock(*user);
    if (!op)
      continue;
    readers.push_back(op);
    if (auto reshape = dyn_cast<ReshapeOp>(op))
      collectReaders(block, reshape.getResult(), readers);
  }
}

/// The ops right before `step` that compute an operand for it alone, in
/// program order: what titan-sink-to-first-use sank to the step (the
/// gradient's view, or its product), which moves with it. Collectives stay
/// where the schedule put them.
SmallVector<Operation *> getSunkProducers(AdamWOp step) {
  SmallVector<Operation *> producers;
  llvm::SmallPtrSet<Operation *, 8> consumers = {step};
  for (Operation *prev = step->getPrevNode(); prev;
       prev = prev->getPrevNode()) {
    if (!isMemoryEffectFree(prev) || isa<CollectiveOpInterface, WaitOp>(prev) ||
        !prev->hasOneUse() || !consumers.contains(*prev->user_begin()))
      break;
    producers.push_back(prev);
    consumers.insert(prev);
  }
  std::reverse(producers.begin(), producers.end());
  return producers;
}

/// The last op of `block` that `step` and its sunk `producers` must follow:
/// the definitions of their operands and every reader of the state the step
/// overwrites (the parameter, the moments, and the parameter's copy that
/// its new copy replaces).
Operation *getLastPredecessor(Block &block, AdamWOp step,
                              ArrayRef<Operation *> producers,
                              const llvm::StringMap<BlockArgument> &byName,
                              func::FuncOp function) {
  llvm::SmallPtrSet<Operation *, 8> moving(producers.begin(), producers.end());
  moving.insert(step);
  SmallVector<Operation *> predecessors;
  for (Operation *op : moving)
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        predecessors.push_back(block.findAncestorOpInBlock(*def));
  for (Value state : {step.getParam(), step.getExpAvg(), step.getExpAvgSq()})
    collectReaders(block, state, predecessors);
  if (auto param = dyn_cast<BlockArgument>(step.getParam());
      param && step.getNewParamCopy())
    if (auto name = function.getArgAttrOfType<StringAttr>(
            param.getArgNumber(), TitanDialect::kNameAttrName))
      if (auto copy =
              byName.find(getParamSlotName(ParamSlot::Copy, name.getValue()));
          copy != byName.end())
        collectReaders(block, copy->second, predecessors);
  Operation *last = nullptr;
  for (Operation *op : predecessors)
    if (op && !moving.contains(op) && (!last || last->isBeforeInBlock(op)))
      last = op;
  return last;
}

class StepInBackwardPass
    : public titan::impl::StepInBackwardPassBase<StepInBackwardPass> {
public:
  void runOnOperation() override {
    auto function = getOperation().lookupSymbol<func::FuncOp>("train_step");
    if (!function || function.isExternal())
      return;
    Block &block = function.getBody().front();
    llvm::StringMap<BlockArgument> byName;
    for (BlockArgument arg : function.getArguments())
      if (auto name = function.getArgAttrOfType<StringAttr>(
              arg.getArgNumber(), TitanDialect::kNameAttrName))
        byName[name.getValue()] = arg;
    for (AdamWOp step : llvm::to_vector(block.getOps<AdamWOp>())) {
      SmallVector<Operation *> producers = getSunkProducers(step);
      Operation *first = producers.empty() ? step : producers.front();
      Operation *last =
          getLastPredecessor(block, step, producers, byName, function);
      if (last && !last->isBeforeInBlock(first))
        continue; // Nothing moves down.
      producers.push_back(step);
      for (Operation *op : producers) {
        if (last)
          op->moveAfter(last);
        else
          op->moveBefore(&block.front());
        last = op;
      }
    }
  }
};

} // namespace
