//===- DimClasses.h - value dims that are one factor ------------*- C++ -*-===//
//
// The equivalence classes of the dims of a function's values under the ops'
// sharding rules: two dims are in one class when some op's rule gives them
// the same factor and that factor alone spans each (e.g. every dim that is
// "the sequence", or "the hidden size", of a program). Passes use it to tell
// which dims play the same role without knowing the model.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_DIMCLASSES_H
#define TITAN_DIALECT_DIMCLASSES_H

#include "titan/Dialect/ShardingRule.h"

#include "mlir/IR/Block.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>

namespace mlir::titan {

/// One dim of one value.
using ValueDim = std::pair<Value, int64_t>;

/// The factor that alone spans dim `dim` of a value whose dims are `dims`
/// under `rule` (its only factor of size > 1), if there is one.
std::optional<int64_t>
getSoleFactor(const OpShardingRule &rule,
              llvm::ArrayRef<llvm::SmallVector<int64_t, 1>> dims, int64_t dim);

/// Union-find over the dims of the values of a block.
class DimClasses {
public:
  /// The classes of the dims of the values of `body`, joined through the
  /// rule of every op that has one (ops without a rule join nothing).
  static DimClasses build(Block &body);

  /// Puts `a` and `b` in one class.
  void join(ValueDim a, ValueDim b);
  /// The representative id of the class of `key`.
  unsigned find(ValueDim key);
  /// True when `a` and `b` are in one class.
  bool same(ValueDim a, ValueDim b) { return find(a) == find(b); }

private:
  llvm::DenseMap<ValueDim, unsigned> ids;
  llvm::SmallVector<unsigned> parents;
};

} // namespace mlir::titan

#endif // TITAN_DIALECT_DIMCLASSES_H
