//===- SinkToFirstUse.cpp - ops right before their first user -------------===//
//
// Implements titan-sink-to-first-use (see passes/Passes.td for the
// contract).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/TitanDialect.h"
#include "titan/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::titan {
#define GEN_PASS_DEF_SINKTOFIRSTUSEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// Bytes of a value of static tensor type (0 for anything else).
int64_t bytesOf(Value value) { return getStaticByteSize(value.getType()); }

/// Whether moving `op` down to right before `first` frees at least as much
/// memory as it holds: its results then live from `first` on, but the
/// operands it reads last (not arguments, which live through the step) live
/// on to `first`.
bool sinkingPays(Operation *op, Operation *first) {
  int64_t results = 0, extended = 0;
  for (Value result : op->getResults())
    results += bytesOf(result);
  for (Value operand :
       llvm::SmallSetVector<Value, 4>(op->operand_begin(), op->operand_end())) {
    if (isa<BlockArgument>(operand))
      continue;
    bool readLater = llvm::any_of(operand.getUsers(), [&](Operation *user) {
      return user != op && !user->isBeforeInBlock(first);
    });
    if (!readLater)
      extended += bytesOf(operand);
  }
  return results >= extended;
}

class SinkToFirstUsePass
    : public titan::impl::SinkToFirstUsePassBase<SinkToFirstUsePass> {
public:
  using SinkToFirstUsePassBase::SinkToFirstUsePassBase;

  void runOnOperation() override {
    auto function = getOperation().lookupSymbol<func::FuncOp>("train_step");
    if (!function || !function.getBody().hasOneBlock())
      return;
    Block &body = function.getBody().front();
    // Last op first: its users are where they will stay when it moves, and
    // its operands' ops move after it.
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops)) {
      if (op->use_empty() || !isMemoryEffectFree(op))
        continue;
      Operation *first = nullptr;
      for (Operation *user : op->getUsers()) {
        Operation *inBody = body.findAncestorOpInBlock(*user);
        if (inBody && (!first || inBody->isBeforeInBlock(first)))
          first = inBody;
      }
      if (first && first != op->getNextNode() && sinkingPays(op, first))
        op->moveBefore(first);
    }
  }
};

} // namespace
