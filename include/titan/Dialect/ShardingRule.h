//===- ShardingRule.h - factor-based sharding rules -------------*- C++ -*-===//
//
// The data of an op's sharding rule (returned by ShardingRuleOpInterface):
// tensor dimensions of operands and results mapped to shared factors, as in
// Shardy's OpShardingRule.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_SHARDINGRULE_H
#define TITAN_DIALECT_SHARDINGRULE_H

#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace mlir::titan {

/// How a factor of an op's iteration space may be sharded.
enum class FactorKind : uint8_t {
  /// Appears in operands and results: sharding it shards both alike.
  Parallel,
  /// Appears only in operands: sharding it leaves the results Partial.
  Reduction,
  /// Must stay whole on every rank (e.g. the softmax dimension).
  NeedReplication,
};

/// An einsum-like rule: every dimension of every operand and result is the
/// product of a list of factors (usually one; reshapes may merge several).
struct OpShardingRule {
  /// Size of each factor in the op's global iteration space.
  llvm::SmallVector<int64_t> factorSizes;
  /// Kind of each factor.
  llvm::SmallVector<FactorKind> factorKinds;
  /// operandDims[i][d] = factors (outer first) of dimension d of operand i.
  llvm::SmallVector<llvm::SmallVector<llvm::SmallVector<int64_t, 1>>>
      operandDims;
  /// resultDims[i][d] = factors (outer first) of dimension d of result i.
  llvm::SmallVector<llvm::SmallVector<llvm::SmallVector<int64_t, 1>>>
      resultDims;
};

} // namespace mlir::titan

#endif // TITAN_DIALECT_SHARDINGRULE_H
