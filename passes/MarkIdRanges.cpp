//===- MarkIdRanges.cpp - valid ranges of integer inputs ------------------===//
//
// Implements titan-mark-id-ranges (see passes/Passes.td).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/TitanDialect.h"
#include "titan/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/TypeSwitch.h"

#include <optional>

namespace mlir::titan {
#define GEN_PASS_DEF_MARKIDRANGESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// The values an integer input may hold: [lo, hi), or `ignore`.
struct IdRange {
  int64_t lo = 0;
  int64_t hi = 0;
  std::optional<int64_t> ignore;
};

/// The range the uses of `value` impose, following ops that only move data;
/// nullopt when nothing it reaches indexes a table.
std::optional<IdRange> rangeOfUses(Value value) {
  std::optional<IdRange> range;
  bool ignoredByAll = true;
  auto meet = [&](IdRange use) {
    ignoredByAll &= use.ignore.has_value();
    if (!range) {
      range = use;
      return;
    }
    range->lo = std::max(range->lo, use.lo);
    range->hi = std::min(range->hi, use.hi);
    if (range->ignore != use.ignore)
      range->ignore.reset();
  };
  auto rows = [](Value table, int64_t dim) {
    auto type = cast<RankedTensorType>(table.getType());
    return type.getDimSize(dim < 0 ? type.getRank() + dim : dim);
  };
  SmallVector<Value> worklist = {value};
  llvm::DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    if (!seen.insert(current).second)
      continue;
    for (OpOperand &use : current.getUses()) {
      Operation *user = use.getOwner();
      TypeSwitch<Operation *>(user)
          .Case([&](EmbeddingOp op) {
            if (use.get() == op.getIds())
              meet({0, rows(op.getTable(), 0), std::nullopt});
          })
          .Case([&](EmbeddingGradOp op) {
            if (use.get() == op.getIds())
              meet({0, rows(op.getResult(), 0), std::nullopt});
          })
          .Case([&](CrossEntropyOp op) {
            if (use.get() == op.getLabels())
              meet({0, rows(op.getLogits(), -1), op.getIgnoreIndex()});
          })
          .Case([&](CrossEntropyGradOp op) {
            if (use.get() == op.getLabels())
              meet({0, rows(op.getLogits(), -1), op.getIgnoreIndex()});
          })
          .Case<ReshapeOp, TransposeOp, SliceOp, BroadcastInDimOp, ConcatOp>(
              [&](Operation *op) { worklist.push_back(op->getResult(0)); });
    }
  }
  if (range && !ignoredByAll)
    range->ignore.reset();
  return range;
}

class MarkIdRangesPass
    : public titan::impl::MarkIdRangesPassBase<MarkIdRangesPass> {
public:
  void runOnOperation() override {
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (function.isExternal())
        continue;
      for (BlockArgument arg : function.getArguments()) {
        auto type = dyn_cast<RankedTensorType>(arg.getType());
        if (!type || !type.getElementType().isSignlessInteger() ||
            function.getArgAttr(arg.getArgNumber(),
                                TitanDialect::kIdRangeAttrName))
          continue;
        std::optional<IdRange> range = rangeOfUses(arg);
        if (!range)
          continue;
        SmallVector<int64_t> values = {range->lo, range->hi};
        if (range->ignore)
          values.push_back(*range->ignore);
        if (range->lo >= range->hi) {
          function.emitError() << "argument #" << arg.getArgNumber()
                               << " indexes a table without rows: no id "
                                  "is valid";
          return signalPassFailure();
        }
        function.setArgAttr(arg.getArgNumber(), TitanDialect::kIdRangeAttrName,
                            DenseI64ArrayAttr::get(&getContext(), values));
      }
    }
  }
};

} // namespace
