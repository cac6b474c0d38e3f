//===- ShardingRule.h - factor-based sharding rules -------------*- C++ -*-===//
//
// The data of an op's sharding rule (returned by ShardingRuleOpInterface):
// tensor dimensions of operands and results mapped to shared factors, as in
// Shardy's OpShardingRule, plus what titan needs for Partial placements
// (which operands the op is linear in, which reduction a reduction factor
// leaves pending) and which factors need an op-specific SPMD lowering.
//
// Meaning of a rule for one mesh axis `a` (axes are independent):
//  - `a` shards at most one factor `f` (several axes may shard one factor;
//    they nest in mesh-axis order, as DTensor nests them on one dim). Every
//    operand or result with a dim that holds `f` is `S(dim)` on `a`; every
//    operand without `f` is `R` on `a`; every result without `f` is `P` on
//    `a` when `f` is a Reduction factor (with `partialKind`), and a Parallel
//    factor is in every result by construction.
//  - Or `a` shards no factor and is Partial: the operands of one group of
//    `linearOperandGroups` are all `P(sum)` (or all `P(avg)`) on `a`, the
//    other operands `R`, and every result is Partial of the same kind.
//  - Or everything is `R` on `a`.
// A dim made of several factors (reshape) shows a sharding only through its
// outermost factor of size > 1; an inner factor of such a dim is not
// sharded by propagation.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_SHARDINGRULE_H
#define TITAN_DIALECT_SHARDINGRULE_H

#include "titan/Placement/Placement.h"

#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <string>

namespace mlir::titan {

/// How a factor of an op's iteration space may be sharded.
enum class FactorKind : uint8_t {
  /// In every result (and in some operands, or none: iota, broadcast dims):
  /// sharding it shards the results and the operands that have it alike.
  Parallel,
  /// In some operands and missing from at least one result: sharding it
  /// shards the values that have it and leaves the results without it
  /// Partial (`OpShardingRule::partialKind`).
  Reduction,
  /// Must stay whole on every rank (e.g. the softmax dimension).
  NeedReplication,
};

/// Returns "parallel", "reduction" or "need_replication".
llvm::StringRef stringifyFactorKind(FactorKind kind);

/// An einsum-like rule: every dimension of every operand and result is the
/// product of a list of factors (usually one; reshapes may merge several;
/// a dim of size 1 that no factor crosses has none).
struct OpShardingRule {
  /// Size of each factor in the op's global iteration space
  /// (ShapedType::kDynamic when unknown; such a factor is never sharded by
  /// propagation).
  llvm::SmallVector<int64_t> factorSizes;
  /// Kind of each factor.
  llvm::SmallVector<FactorKind> factorKinds;
  /// True for a factor that may be sharded but whose local computation is not
  /// the op applied to local shards: `titan-spmdize` must lower the op with
  /// an op-specific rule when this factor is sharded (e.g. embedding's
  /// vocabulary: a masked lookup with ids shifted to the local shard). The
  /// contract of each such factor is documented where the rule is built
  /// (dialects/titan/ShardingRules.cpp).
  llvm::SmallVector<bool> customLowering;
  /// operandDims[i][d] = factors (outer first) of dimension d of operand i.
  llvm::SmallVector<llvm::SmallVector<llvm::SmallVector<int64_t, 1>>>
      operandDims;
  /// resultDims[i][d] = factors (outer first) of dimension d of result i.
  llvm::SmallVector<llvm::SmallVector<llvm::SmallVector<int64_t, 1>>>
      resultDims;
  /// The reduction that a sharded Reduction factor leaves pending in the
  /// results that lack it (sum for contractions, max for reduce_max).
  ReduceKind partialKind = ReduceKind::Sum;
  /// Sets of operands the op is jointly linear in: all operands of one group
  /// may be Partial (sum or avg, one kind) on a mesh axis on which the others
  /// are replicated, and the results are then Partial of that kind (add:
  /// {{0, 1}}; mul and matmul: {{0}, {1}}; div: {{0}}).
  llvm::SmallVector<llvm::SmallVector<unsigned, 2>> linearOperandGroups;

  /// Adds a factor and returns its index.
  int64_t addFactor(int64_t size, FactorKind kind, bool custom = false);

  /// Prints e.g. `([i, k], [k, j]) -> ([i, j]) {i=8, j=4, k=16 reduction}`
  /// with factors named i, j, k, ... in index order (f<N> past z), the
  /// dims of several factors as `i*j`, custom-lowering factors marked
  /// `custom`, then `partial=<kind>` when not sum and `linear={0, 1}, {2}`.
  std::string str() const;
};

} // namespace mlir::titan

#endif // TITAN_DIALECT_SHARDINGRULE_H
