//===- PlanMemory.cpp - static memory of a rank ---------------------------===//
//
// Implements titan-plan-memory (see passes/Passes.td) over the planner of
// include/titan/Codegen/MemoryPlanner.h.
//
//===----------------------------------------------------------------------===//

#include "titan/Codegen/MemoryPlanner.h"
#include "titan/Passes.h"
#include "titan/Support/CheckedSize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::titan {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

/// Fails with an error naming the largest value unless every value of
/// `function` has a byte size and all of them together stay below 2^62
/// bytes, so that no size, offset or alignment of the plan can overflow.
static LogicalResult checkPlannable(func::FuncOp function) {
  constexpr int64_t kLimit = int64_t(1) << 62;
  int64_t total = 0;
  Value largest;
  int64_t largestBytes = -1;
  bool overflow = false;
  auto count = [&](Value value) {
    auto shaped = dyn_cast<ShapedType>(value.getType());
    if (!shaped || !shaped.hasStaticShape())
      return;
    std::optional<int64_t> bytes = checkedByteSize(
        shaped.getShape(), getElementByteWidth(shaped.getElementType()));
    if (!bytes || *bytes > kLimit - total)
      overflow = true;
    else
      total += *bytes;
    int64_t size = bytes.value_or(std::numeric_limits<int64_t>::max());
    if (size > largestBytes) {
      largest = value;
      largestBytes = size;
    }
  };
  for (BlockArgument arg : function.getArguments())
    count(arg);
  function.walk([&](Operation *op) {
    for (Value result : op->getResults())
      count(result);
  });
  if (!overflow)
    return success();
  return function.emitError()
         << "titan-plan-memory: the values of one rank's step need more than "
            "2^62 bytes (the largest, "
         << largest.getType() << ", alone needs "
         << (largestBytes == std::numeric_limits<int64_t>::max()
                 ? std::string("more than 2^63-1")
                 : std::to_string(largestBytes))
         << " bytes); reduce training.local_batch_size or training.seq_len, "
            "or shard over more ranks";
}

namespace {

struct PlanMemoryPass
    : public mlir::titan::impl::PlanMemoryPassBase<PlanMemoryPass> {
  using PlanMemoryPassBase::PlanMemoryPassBase;

  void runOnOperation() override {
    int64_t align = alignment;
    if (align <= 0 || (align & (align - 1)) != 0) {
      getOperation().emitError()
          << "titan-plan-memory: alignment must be a power of two, got "
          << align;
      return signalPassFailure();
    }
    SymbolTable symbols(getOperation());
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (function->hasAttr(TitanDialect::kKernelAttrName) ||
          function.isExternal())
        continue;
      if (!function.getBody().hasOneBlock()) {
        function.emitError("titan-plan-memory: the function must have one "
                           "block (titan programs are straight-line)");
        return signalPassFailure();
      }
      if (failed(checkPlannable(function)))
        return signalPassFailure();
      MemoryPlanner planner(function, symbols, align);
      planner.plan();
      planner.record();
    }
  }
};

} // namespace
