//===- AxisChoice.h - what an op does on one mesh axis ----------*- C++ -*-===//
//
// The meaning of a sharding rule (ShardingRule.h) on one mesh axis, as a
// choice: shard one factor, keep one group of linear operands partial, or
// replicate. A choice per mesh axis gives every operand and result of the op
// its placements. titan-propagate-placements picks choices; titan-spmdize
// recovers them from the placements in the IR (`explainPlacements`) and
// hands them to the op's partition method.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_AXISCHOICE_H
#define TITAN_DIALECT_AXISCHOICE_H

#include "titan/Dialect/ShardingRule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace mlir::titan {

/// The factors of each dim of one value in a rule.
using ValueDims = llvm::SmallVector<llvm::SmallVector<int64_t, 1>>;

/// What an op does on one mesh axis.
struct AxisChoice {
  enum class Kind : uint8_t { Shard, Partial, Replicate };
  Kind kind = Kind::Replicate;
  /// The sharded factor (Shard) or the linear operand group (Partial).
  int64_t index = -1;
  /// The partial kind of the group's operands (Partial).
  ReduceKind reduce = ReduceKind::Sum;

  static AxisChoice shard(int64_t factor) { return {Kind::Shard, factor}; }
  static AxisChoice partial(int64_t group, ReduceKind reduce) {
    return {Kind::Partial, group, reduce};
  }
  static AxisChoice replicate() { return {}; }

  bool operator==(const AxisChoice &other) const {
    return kind == other.kind && index == other.index && reduce == other.reduce;
  }
};

/// Index of the dim of `dims` that holds factor `factor`, if any.
std::optional<int64_t> findFactorDim(const ValueDims &dims, int64_t factor);

/// The factor through which a sharding of `dims[dim]` is expressed: its
/// outermost factor whose size is not 1.
std::optional<int64_t> getShardedFactor(const OpShardingRule &rule,
                                        const ValueDims &dims, int64_t dim);

/// True when factor `factor` may be sharded on mesh axis `axis` of a mesh of
/// `meshSizes` by an op whose earlier axes chose `earlier`: it is not
/// NeedReplication, its size is static, and it is the outermost sharded
/// factor of every dim that holds it. A factor the ranks of its axes do not
/// divide is chunked unevenly (torch.chunk), which needs it alone in every
/// dim that holds it and, for a Reduction factor, a rule whose partial kind
/// is not avg.
bool isFactorShardable(const OpShardingRule &rule, int64_t factor,
                       unsigned axis, llvm::ArrayRef<int64_t> meshSizes,
                       llvm::ArrayRef<AxisChoice> earlier);

/// The placement that operand / result `index` has under `choice`.
Placement getOperandPlacement(const OpShardingRule &rule,
                              const AxisChoice &choice, unsigned index);
Placement getResultPlacement(const OpShardingRule &rule,
                             const AxisChoice &choice, unsigned index);

/// The placements (one per mesh axis) of operand / result `index` under
/// `choices`.
llvm::SmallVector<Placement>
getOperandPlacements(const OpShardingRule &rule,
                     llvm::ArrayRef<AxisChoice> choices, unsigned index);
llvm::SmallVector<Placement>
getResultPlacements(const OpShardingRule &rule,
                    llvm::ArrayRef<AxisChoice> choices, unsigned index);

/// True when `choices` (one per mesh axis) can be applied together: each
/// sharded factor is shardable on its axis, and every result is Partial of
/// one reduction at most.
bool areChoicesValid(const OpShardingRule &rule,
                     llvm::ArrayRef<AxisChoice> choices,
                     llvm::ArrayRef<int64_t> meshSizes);

/// Describes a choice for remarks, e.g. `shard operand #0 dim 1 (reduction)`,
/// `keep operands {0} partial` or `replicate`.
std::string describeChoice(const OpShardingRule &rule,
                           const AxisChoice &choice);

/// The choice on each mesh axis that gives the operands and results the
/// placements `operands` and `results` (one list per value, one entry per
/// mesh axis) under `rule`, or an error that says which value's placement
/// no choice of the rule explains and why. `axisNames` name the axes in
/// messages.
llvm::Expected<llvm::SmallVector<AxisChoice>>
explainPlacements(const OpShardingRule &rule,
                  llvm::ArrayRef<llvm::SmallVector<Placement>> operands,
                  llvm::ArrayRef<llvm::SmallVector<Placement>> results,
                  llvm::ArrayRef<int64_t> meshSizes,
                  llvm::ArrayRef<std::string> axisNames);

} // namespace mlir::titan

#endif // TITAN_DIALECT_AXISCHOICE_H
