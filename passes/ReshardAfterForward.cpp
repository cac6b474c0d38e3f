//===- ReshardAfterForward.cpp - FSDP's reshard after forward -------------===//
//
// Implements titan-reshard-after-forward (see passes/Passes.td for the
// contract): the backward gathers a parameter again instead of reading what
// the forward gathered.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/ArgRole.h"
#include "titan/Dialect/ArgumentTrace.h"
#include "titan/Dialect/Provenance.h"
#include "titan/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/StringMap.h"

#include <functional>

namespace mlir::titan {
#define GEN_PASS_DEF_RESHARDAFTERFORWARDPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// Whether `op` carries a gathered parameter on to its result: one operand,
/// one result, no communication (views, slices, casts).
bool forwardsGatheredValue(Operation *op) {
  return op->getNumOperands() == 1 && op->getNumResults() == 1 &&
         !isa<CollectiveOpInterface>(op) && getPhase(op) == Phase::Forward;
}

/// Makes the backward gather the parameter of `gather` (a forward
/// all_gather of a parameter argument) again.
void reshard(AllGatherOp gather) {
  // The uses of the gathered value and of what the forward derived from
  // it that the backward makes.
  SmallVector<OpOperand *> backwardUses;
  SmallVector<Value> worklist = {gather.getResult()};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (getPhase(user) == Phase::Backward)
        backwardUses.push_back(&use);
      else if (forwardsGatheredValue(user))
        worklist.push_back(user->getResult(0));
    }
  }
  if (backwardUses.empty())
    return;
  Operation *first = backwardUses.front()->getOwner();
  for (OpOperand *use : backwardUses)
    if (use->getOwner()->isBeforeInBlock(first))
      first = use->getOwner();

  // Clones, in order, right before the first backward reader.
  OpBuilder builder(first);
  DenseMap<Value, Value> clones;
  std::function<Value(Value)> cloneOf = [&](Value value) -> Value {
    if (isa<BlockArgument>(value))
      return value;
    if (Value clone = clones.lookup(value))
      return clone;
    Operation *op = value.getDefiningOp();
    IRMapping mapping;
    for (Value operand : op->getOperands())
      mapping.map(operand, cloneOf(operand));
    Operation *clone = builder.clone(*op, mapping);
    setPhase(clone, Phase::Backward);
    clone->setAttr(TitanDialect::kRecomputeAttrName, builder.getUnitAttr());
    for (auto [result, cloned] :
         llvm::zip(op->getResults(), clone->getResults()))
      clones[result] = cloned;
    return clones.lookup(value);
  };
  for (OpOperand *use : backwardUses)
    use->set(cloneOf(use->get()));
}

class ReshardAfterForwardPass
    : public titan::impl::ReshardAfterForwardPassBase<ReshardAfterForwardPass> {
public:
  using ReshardAfterForwardPassBase::ReshardAfterForwardPassBase;

  void runOnOperation() override {
    if (policy == "never")
      return;
    if (policy != "always" && policy != "default") {
      emitError(getOperation().getLoc())
          << "titan-reshard-after-forward: unknown policy '" << policy
          << "' (expected never, default or always)";
      return signalPassFailure();
    }
    auto function = getOperation().lookupSymbol<func::FuncOp>("train_step");
    if (!function)
      return;
    // Each forward gather of a parameter, with the list and index of the
    // transformer block the parameter belongs to (an empty list: none).
    struct Gather {
      AllGatherOp op;
      StringRef list;
      int64_t index;
    };
    SmallVector<Gather> gathers;
    function.walk([&](AllGatherOp gather) {
      // The parameter itself, or its cast to the compute type (mixed
      // precision casts the shard before gathering it).
      BlockArgument arg = traceToArgument(gather.getInput());
      if (!arg || getPhase(gather) != Phase::Forward ||
          getArgRole(function, arg.getArgNumber()) != ArgRole::Param)
        return;
      auto name = function.getArgAttrOfType<StringAttr>(
          arg.getArgNumber(), TitanDialect::kNameAttrName);
      auto [list, index] =
          splitBlock(name ? getTransformerBlock(name.getValue()) : "");
      gathers.push_back({gather, list, index});
    });
    // torchtitan's default (without pipeline parallelism): every transformer
    // block reshards except the last of its list, which the backward needs
    // first; the root module's parameters (embeddings, final norm, output)
    // stay gathered, as FSDP2 keeps the root's.
    llvm::StringMap<int64_t> lastOfList;
    for (const Gather &gather : gathers)
      if (!gather.list.empty())
        lastOfList[gather.list] =
            std::max(lastOfList.lookup(gather.list), gather.index);
    for (const Gather &gather : gathers)
      if (policy == "always" ||
          (!gather.list.empty() &&
           gather.index != lastOfList.lookup(gather.list)))
        reshard(gather.op);
  }

private:
  /// The list and index of transformer block `block` ("layers", 3 of
  /// "layers.3"); an empty list when `block` is not one.
  static std::pair<StringRef, int64_t> splitBlock(StringRef block) {
    auto [list, index] = block.rsplit('.');
    int64_t number;
    if (block.empty() || index.getAsInteger(10, number))
      return {"", 0};
    return {list, number};
  }
};

} // namespace
