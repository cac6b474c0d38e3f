//===- Partition.h - what an op needs to compute its shards -----*- C++ -*-===//
//
// The context titan-spmdize hands to ShardingRuleOpInterface::checkPartition
// and ::partition: the global types and placements of the op's operands and
// results, the mesh, the choice per mesh axis that explains them, and the IR
// helpers that ops partitioned by hand need (the rank's coordinate, an
// all-reduce over axes, a local redistribution).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_PARTITION_H
#define TITAN_DIALECT_PARTITION_H

#include "titan/Dialect/AxisChoice.h"
#include "titan/Dialect/TitanDialect.h"

#include "mlir/IR/Builders.h"

namespace mlir::titan {

/// `shape` with every dynamic dim replaced by 1, for the placement algebra
/// (no mesh axis may shard a dynamic dim).
SmallVector<int64_t> getStaticShape(ArrayRef<int64_t> shape);

/// The type every rank holds of a value of type `global` under `placements`
/// on `mesh`: the largest shard (torch.chunk gives it to coordinate 0), so
/// that one program fits every rank; a rank whose chunk of a dim is shorter
/// holds padding past it (see DimChunks). Dynamic dims, which no axis
/// shards, stay dynamic.
RankedTensorType getLocalType(RankedTensorType global, const DeviceMesh &mesh,
                              ArrayRef<Placement> placements);

/// How one dim of a value is cut over the ranks (torch.chunk, nested over
/// the axes that shard it): per coordinate of those axes (row-major, outer
/// axis first) the size and global offset of the rank's chunk, and the
/// local size every rank holds (`padded`, the largest chunk).
struct DimChunks {
  /// The mesh axes sharding the dim, outermost first.
  SmallVector<unsigned> axes;
  SmallVector<int64_t> sizes, offsets;
  int64_t padded = 0;

  /// Whether some rank's chunk is shorter than `padded`, so that its local
  /// tensor holds padding (whose values are unspecified) past the chunk.
  bool isUneven() const;
};

/// The chunks of dim `dim` of a tensor of `globalShape` under `placements`.
DimChunks getDimChunks(ArrayRef<int64_t> globalShape, const DeviceMesh &mesh,
                       ArrayRef<Placement> placements, int64_t dim);

/// The entry of `table` (one per row-major coordinate of `axes`) that
/// belongs to the calling rank, as a 0-d i64 tensor.
Value buildRankTableLookup(OpBuilder &builder, Location loc,
                           FlatSymbolRefAttr meshSymbol, const DeviceMesh &mesh,
                           ArrayRef<unsigned> axes, ArrayRef<int64_t> table);

/// An i1 tensor of `shape` that is true where the index along `dim` lies in
/// the calling rank's chunk of `chunks` and false in its padding; null when
/// no rank has padding.
Value buildInChunkMask(OpBuilder &builder, Location loc,
                       FlatSymbolRefAttr meshSymbol, const DeviceMesh &mesh,
                       const DimChunks &chunks, ArrayRef<int64_t> shape,
                       int64_t dim);

/// A tensor of `type` filled with the identity of `kind` (0 for sums and
/// means, the lowest value for max, the highest for min).
Value buildIdentitySplat(OpBuilder &builder, Location loc,
                         RankedTensorType type, ReduceKind kind);

/// How one value of the global program is laid out: its global type and its
/// placements, one per mesh axis (all `R` for a replicated value).
struct ValueLayout {
  RankedTensorType global;
  SmallVector<Placement> placements;

  /// The mesh axes that shard tensor dim `dim`, outermost first.
  SmallVector<unsigned> getAxesSharding(int64_t dim) const;
  /// Whether some mesh axis shards some dim.
  bool isSharded() const;
};

/// What one op of a global program is partitioned with.
class PartitionContext {
public:
  /// `mesh` is null when no value of the function has placements (then
  /// every layout is replicated and has no entries).
  PartitionContext(Operation *op, const DeviceMesh *mesh,
                   FlatSymbolRefAttr meshSymbol,
                   SmallVector<ValueLayout> operands,
                   SmallVector<ValueLayout> results);

  Operation *getOp() const { return op; }
  const DeviceMesh &getMesh() const { return *mesh; }
  FlatSymbolRefAttr getMeshSymbol() const { return meshSymbol; }
  unsigned getNumAxes() const { return mesh ? mesh->getNumAxes() : 0; }
  const ValueLayout &getOperandLayout(unsigned index) const {
    return operands[index];
  }
  const ValueLayout &getResultLayout(unsigned index) const {
    return results[index];
  }
  /// The type of result `index` on one rank.
  RankedTensorType getLocalResultType(unsigned index) const;
  /// The choice on each mesh axis, once `explain` succeeded.
  ArrayRef<AxisChoice> getChoices() const { return choices; }

  /// Explains the placements by `rule` and records the choices. Emits the
  /// reason on the op and fails when `rule` does not explain them, unless
  /// `emitErrors` is false.
  LogicalResult explain(const OpShardingRule &rule, bool emitErrors = true);
  /// Explains the placements by `rule`, or by `rule` with partial kind
  /// `alternative` (an op whose local result may also be read as that
  /// reduction, e.g. a mean of equal shards as P(avg)); the error is the
  /// one of `rule`.
  LogicalResult explainEither(const OpShardingRule &rule,
                              ReduceKind alternative);

  /// The rank's index over mesh axes `axes` (row-major) as a 0-d i64
  /// tensor.
  Value buildAxisIndex(OpBuilder &builder, Location loc,
                       ArrayRef<unsigned> axes) const;
  /// `value` all-reduced with `kind` over mesh axes `axes`.
  Value buildAllReduce(OpBuilder &builder, Location loc, Value value,
                       ArrayRef<unsigned> axes, ReduceKind kind) const;
  /// The chunks of dim `dim` of a value laid out as `layout`.
  DimChunks getDimChunks(const ValueLayout &layout, int64_t dim) const;
  /// `local` (laid out as `layout`) with the padding of dim `dim` replaced
  /// by `makeFill(type of local)`, built after the mask; `local` itself when
  /// no rank has padding.
  Value fillPadding(OpBuilder &builder, Location loc, Value local,
                    const ValueLayout &layout, int64_t dim,
                    function_ref<Value(RankedTensorType)> makeFill) const;
  /// fillPadding with the identity of `kind`.
  Value maskPadding(OpBuilder &builder, Location loc, Value local,
                    const ValueLayout &layout, int64_t dim,
                    ReduceKind kind) const;
  /// The local operands of the op with the padding of every unevenly
  /// sharded Reduction factor that is not custom-lowered replaced by the
  /// identity of the rule's partial kind, so that the op applied to them
  /// reduces only what the rank holds (uneven shards of parallel factors
  /// need nothing: their padding stays in the padding of the results).
  SmallVector<Value> maskReducedPadding(OpBuilder &builder,
                                        ValueRange localOperands) const;

  /// The shard under `to` of `local`, the shard under `from` of a value of
  /// type `global` (a titan.local_redistribute).
  Value buildRedistribute(OpBuilder &builder, Location loc, Value local,
                          RankedTensorType global, ArrayRef<Placement> from,
                          ArrayRef<Placement> to) const;

private:
  /// Explains without emitting; the error says why not.
  llvm::Expected<SmallVector<AxisChoice>>
  tryExplain(const OpShardingRule &rule) const;

  Operation *op;
  const DeviceMesh *mesh;
  FlatSymbolRefAttr meshSymbol;
  SmallVector<ValueLayout> operands, results;
  SmallVector<AxisChoice> choices;
};

} // namespace mlir::titan

#endif // TITAN_DIALECT_PARTITION_H
