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

/// The last op of `block` that `step` must follow: the definitions of its
/// operands and every reader of the state it overwrites (the parameter,
/// the moments, and the parameter's copy that its new copy replaces).
Operation *getLastPredecessor(Block &block, AdamWOp step,
                              const llvm::StringMap<BlockArgument> &byName,
                              func::FuncOp function) {
  SmallVector<Operation *> predecessors;
  for (Value operand : step->getOperands())
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
    if (op && op != step && (!last || last->isBeforeInBlock(op)))
      last = op;
  return last;
}

/// Moves `op` right after the last op of `block` it must follow (`last`),
/// first moving up, the same way, each side-effect-free compute op that
/// defines one of its operands for it alone (the gradient's view, or its
/// product when the schedule sank it to the step): the chain comes up with
/// the step. Collectives stay where the schedule put them.
void hoist(Block &block, Operation *op,
           llvm::function_ref<Operation *(Operation *)> lastPredecessor) {
  for (Value operand : op->getOperands()) {
    Operation *def = operand.getDefiningOp();
    if (def && def->getBlock() == &block && def->hasOneUse() &&
        isMemoryEffectFree(def) && !isa<CollectiveOpInterface, WaitOp>(def))
      hoist(block, def, lastPredecessor);
  }
  Operation *last = lastPredecessor(op);
  if (!last)
    op->moveBefore(&block.front());
  else if (last->isBeforeInBlock(op))
    op->moveAfter(last);
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
    auto lastPredecessor = [&](Operation *op) -> Operation * {
      if (auto step = dyn_cast<AdamWOp>(op))
        return getLastPredecessor(block, step, byName, function);
      Operation *last = nullptr;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (Operation *inBlock = block.findAncestorOpInBlock(*def);
              inBlock && (!last || last->isBeforeInBlock(inBlock)))
            last = inBlock;
      return last;
    };
    for (AdamWOp step : llvm::to_vector(block.getOps<AdamWOp>()))
      hoist(block, step, lastPredecessor);
  }
};

} // namespace
