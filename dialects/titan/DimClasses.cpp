//===- DimClasses.cpp - value dims that are one factor
//---------------------===//

#include "titan/Dialect/DimClasses.h"
#include "titan/Dialect/TitanDialect.h"

using namespace mlir;
using namespace mlir::titan;

std::optional<int64_t>
mlir::titan::getSoleFactor(const OpShardingRule &rule,
                           ArrayRef<SmallVector<int64_t, 1>> dims,
                           int64_t dim) {
  std::optional<int64_t> sole;
  for (int64_t factor : dims[dim]) {
    if (rule.factorSizes[factor] == 1)
      continue;
    if (sole)
      return std::nullopt;
    sole = factor;
  }
  return sole;
}

/// True when dim `dim` of `value` holds the same elements at every index:
/// a dim a broadcast adds, or any dim of a splat constant. Such a value can
/// be shared by users whose dims mean different things (one broadcast
/// scalar scaling every gradient), so its free dims join no class.
static bool isFreeDim(Value value, int64_t dim) {
  Operation *def = value.getDefiningOp();
  if (auto broadcast = dyn_cast_or_null<BroadcastInDimOp>(def))
    return !llvm::is_contained(broadcast.getDims(), dim) ||
           broadcast.getInput().getType().getDimSize(
               llvm::find(broadcast.getDims(), dim) -
               broadcast.getDims().begin()) == 1;
  if (auto constant = dyn_cast_or_null<ConstantOp>(def))
    if (auto dense = dyn_cast<DenseElementsAttr>(constant.getValue()))
      return dense.isSplat();
  return false;
}

DimClasses DimClasses::build(Block &body) {
  DimClasses classes;
  for (Operation &op : body) {
    auto ruled = dyn_cast<ShardingRuleOpInterface>(op);
    if (!ruled)
      continue;
    OpShardingRule rule = ruled.getShardingRule();
    DenseMap<int64_t, ValueDim> holder;
    auto visit = [&](Value value, ArrayRef<SmallVector<int64_t, 1>> dims) {
      for (int64_t dim : llvm::seq<int64_t>(0, dims.size()))
        if (std::optional<int64_t> factor = getSoleFactor(rule, dims, dim);
            factor && !isFreeDim(value, dim)) {
          auto [it, inserted] = holder.try_emplace(*factor, value, dim);
          if (!inserted)
            classes.join(it->second, ValueDim(value, dim));
        }
    };
    for (auto [operand, dims] : llvm::zip(op.getOperands(), rule.operandDims))
      visit(operand, dims);
    for (auto [result, dims] : llvm::zip(op.getResults(), rule.resultDims))
      visit(result, dims);
  }
  return classes;
}

void DimClasses::join(ValueDim a, ValueDim b) {
  unsigned x = find(a), y = find(b);
  if (x != y)
    parents[std::max(x, y)] = std::min(x, y);
}

unsigned DimClasses::find(ValueDim key) {
  auto [it, inserted] = ids.try_emplace(key, parents.size());
  if (inserted)
    parents.push_back(it->second);
  unsigned id = it->second;
  while (parents[id] != id)
    id = parents[id] = parents[parents[id]];
  return id;
}
