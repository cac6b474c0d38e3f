//===- PlacementHints.cpp - known layouts spread before deciding ----------===//
//
// See PlacementHints.h.
//
//===----------------------------------------------------------------------===//

#include "PlacementHints.h"

#include "titan/Dialect/AxisChoice.h"
#include "titan/Dialect/TitanDialect.h"

#include "llvm/ADT/MapVector.h"

using namespace mlir;
using namespace mlir::titan;

using Layout = SmallVector<Placement>;

/// The layout of `from` carried through the factors of `rule` to a value
/// whose dims are `toDims`, if it shards something.
static std::optional<Layout> carryLayout(const OpShardingRule &rule,
                                         const ValueDims &fromDims,
                                         ArrayRef<Placement> from,
                                         const ValueDims &toDims) {
  Layout layout(from.size(), Placement::replicate());
  bool sharded = false;
  for (auto [axis, placement] : llvm::enumerate(from)) {
    if (!placement.isShard() ||
        placement.getDim() >= static_cast<int64_t>(fromDims.size()))
      continue;
    std::optional<int64_t> factor =
        getShardedFactor(rule, fromDims, placement.getDim());
    std::optional<int64_t> dim =
        factor ? findFactorDim(toDims, *factor) : std::nullopt;
    if (!dim || getShardedFactor(rule, toDims, *dim) != factor)
      continue;
    layout[axis] = Placement::shard(*dim);
    sharded = true;
  }
  if (!sharded)
    return std::nullopt;
  return layout;
}

void mlir::titan::spreadPlacementHints(ArrayRef<Operation *> ops,
                                       DenseMap<Value, Layout> &layouts) {
  std::vector<std::pair<Operation *, OpShardingRule>> elementwise;
  for (Operation *op : ops) {
    OpShardingRule rule = cast<ShardingRuleOpInterface>(op).getShardingRule();
    if (llvm::all_of(rule.factorKinds, [](FactorKind kind) {
          return kind == FactorKind::Parallel;
        }))
      elementwise.emplace_back(op, std::move(rule));
  }
  auto known = [&](Value value) -> const Layout * {
    auto it = layouts.find(value);
    return it == layouts.end() ? nullptr : &it->second;
  };
  // Each round carries every known layout one op further, operands' to
  // results and results' to operands; a value takes a hint only when all
  // that reach it agree (a scalar broadcast feeding differently sharded
  // products stays free to be sliced for each).
  while (true) {
    llvm::MapVector<Value, std::optional<Layout>> proposals;
    auto propose = [&](Value to, std::optional<Layout> layout) {
      if (!layout || layouts.count(to))
        return;
      auto [it, inserted] = proposals.try_emplace(to, layout);
      if (!inserted && it->second != layout)
        it->second = std::nullopt;
    };
    for (auto &[op, rule] : elementwise) {
      for (auto [index, operand] : llvm::enumerate(op->getOperands()))
        if (const Layout *layout = known(operand))
          for (auto [resultIndex, result] : llvm::enumerate(op->getResults()))
            propose(result, carryLayout(rule, rule.operandDims[index], *layout,
                                        rule.resultDims[resultIndex]));
      for (auto [index, result] : llvm::enumerate(op->getResults()))
        if (const Layout *layout = known(result))
          for (auto [operandIndex, operand] :
               llvm::enumerate(op->getOperands()))
            propose(operand, carryLayout(rule, rule.resultDims[index], *layout,
                                         rule.operandDims[operandIndex]));
    }
    bool changed = false;
    for (auto &[value, layout] : proposals)
      if (layout) {
        layouts[value] = std::move(*layout);
        changed = true;
      }
    if (!changed)
      return;
  }
}
