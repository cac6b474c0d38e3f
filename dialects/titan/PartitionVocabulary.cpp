//===- PartitionVocabulary.cpp - lookups and losses on shards -------------===//
//
// The local computation of the ops whose sharded vocabulary or token count
// changes what a rank computes (their custom-lowered factors are documented
// in ShardingRules.cpp):
//  - embedding with the table's rows sharded: a masked lookup of the ids in
//    the rank's range (P(sum)); embedding_grad: a scatter-add of those rows;
//  - cross_entropy with sharded labels: each rank's mean weighted by its
//    share of the counted labels (counts all-reduced over the batch axes);
//    with a sharded vocabulary (loss parallel): logsumexp from all-reduced
//    row statistics, target logits read in the rank's range;
//  - cross_entropy_grad: the softmax from the all-reduced statistics and a
//    one-hot of the labels in range, rescaled to the global count.
// Ids are compared and shifted in f64, exact for any vocabulary that fits in
// memory. Ops are built one statement at a time so that their order does not
// depend on the compiler's order of evaluating arguments.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Partition.h"
#include "titan/Dialect/TensorBuilder.h"

using namespace mlir;
using namespace mlir::titan;

namespace {

/// Ids relative to the first row of the rank's shard of a sharded vocab, and
/// which of them fall in the shard.
struct ShardIds {
  /// The ids minus the shard's first row; 0 where out of the shard.
  Value local;
  /// i1, true where the id is in the shard.
  Value inRange;
};

/// The ids `localIds` (replicated over the axes that shard the vocab) shifted
/// to the rank's chunk of dim `vocabDim` of a table or logits laid out as
/// `vocab` (torch.chunk: a rank's chunk may be short or empty).
ShardIds shiftIdsToShard(OpBuilder &builder, Location loc,
                         const PartitionContext &context, Value localIds,
                         const ValueLayout &vocab, int64_t vocabDim) {
  TensorBuilder b(builder, loc);
  RankedTensorType idsType = tensorTypeOf(localIds);
  Type f64 = builder.getF64Type();
  DimChunks chunks = context.getDimChunks(vocab, vocabDim);
  auto lookup = [&](ArrayRef<int64_t> table) {
    return b.cast(buildRankTableLookup(builder, loc, context.getMeshSymbol(),
                                       context.getMesh(), chunks.axes, table),
                  f64);
  };
  // Chunk k of one axis starts at k * padded; nested chunks by the table.
  bool strided = llvm::all_of(llvm::enumerate(chunks.offsets), [&](auto entry) {
    return entry.value() == int64_t(entry.index()) * chunks.padded;
  });
  Value offset =
      strided
          ? b.scale(
                b.cast(context.buildAxisIndex(builder, loc, chunks.axes), f64),
                double(chunks.padded))
          : lookup(chunks.offsets);
  Value idsF64 = b.cast(localIds, f64);
  Value shifted =
      b.binary<SubOp>(idsF64, b.broadcastTo(offset, idsType.getShape()));
  Value zeros = b.splatLike(shifted, 0.0);
  Value aboveStart = b.compare("ge", shifted, zeros);
  Value end = chunks.isUneven()
                  ? b.broadcastTo(lookup(chunks.sizes), idsType.getShape())
                  : b.splatLike(shifted, double(chunks.padded));
  Value belowEnd = b.compare("lt", shifted, end);
  Value never = b.splatLike(shifted, 0.0, builder.getI1Type());
  Value inRange = b.select(aboveStart, belowEnd, never);
  Value inShard =
      b.cast(b.select(inRange, shifted, zeros), idsType.getElementType());
  return ShardIds{inShard, inRange};
}

/// `localIds` (operand `index`, sharded like `layout`) with the padding of
/// every unevenly sharded dim replaced by `fill` (an id that indexes
/// nothing wrong: 0 for a lookup, the ignore index for labels).
Value fillIdPadding(OpBuilder &builder, Location loc,
                    const PartitionContext &context, Value localIds,
                    const ValueLayout &layout, double fill) {
  for (int64_t dim = 0, rank = tensorTypeOf(localIds).getRank(); dim < rank;
       ++dim)
    localIds = context.fillPadding(
        builder, loc, localIds, layout, dim, [&](RankedTensorType type) {
          return TensorBuilder(builder, loc).splat(type, fill);
        });
  return localIds;
}

/// `perRow` ([rows...]) broadcast along a new last dim to `like`'s shape
/// ([rows..., k]).
Value expandRows(OpBuilder &builder, Value perRow, RankedTensorType like) {
  RankedTensorType type = tensorTypeOf(perRow);
  SmallVector<int64_t> dims =
      llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  return BroadcastInDimOp::create(builder, perRow.getLoc(),
                                  like.clone(type.getElementType()), perRow,
                                  builder.getDenseI64ArrayAttr(dims));
}

/// `rows` ([ids..., dim]) with the rows whose id is out of range zeroed.
Value maskRows(OpBuilder &builder, Location loc, Value rows, Value inRange) {
  TensorBuilder b(builder, loc);
  RankedTensorType type = tensorTypeOf(rows);
  Value rowMask = expandRows(builder, inRange, type);
  Value zeroRows = b.splat(type, 0.0);
  return b.select(rowMask, rows, zeroRows);
}

/// The labels of a cross-entropy that a rank and all ranks count.
struct LabelCounts {
  /// 0-d: labels other than the ignore index on this rank, and over the
  /// ranks of the batch axes (all-reduced).
  Value local, total;
  /// The number of ranks of the mesh axes that shard the labels.
  int64_t groupSize;
};

/// Counts the local labels `localLabels` (operand #1, sharded) other than
/// `ignoreIndex` as 0-d tensors of `type`.
LabelCounts countLabels(OpBuilder &builder, Location loc,
                        const PartitionContext &context, Value localLabels,
                        int64_t ignoreIndex, FloatType type) {
  const ValueLayout &layout = context.getOperandLayout(1);
  SmallVector<unsigned> axes;
  for (int64_t dim = 0; dim < layout.global.getRank(); ++dim)
    llvm::append_range(axes, layout.getAxesSharding(dim));
  llvm::sort(axes);
  TensorBuilder b(builder, loc);
  Value ignore = b.splatLike(localLabels, double(ignoreIndex));
  Value counted = b.cast(b.compare("ne", localLabels, ignore), type);
  Value count = b.sumAll(counted);
  int64_t groupSize = 1;
  for (unsigned axis : axes)
    groupSize *= context.getMesh().getSize(axis);
  Value total =
      context.buildAllReduce(builder, loc, count, axes, ReduceKind::Sum);
  return LabelCounts{count, total, groupSize};
}

/// The softmax of rows whose vocab is sharded, as loss parallel needs it.
struct VocabRows {
  /// exp(logits - max) of the local logits, in `type`.
  Value exp;
  /// Per row (kept dim): the global max and the global sum of `exp`.
  Value max, sumExp;
  /// i1 like the logits: true at each row's label (within the shard).
  Value target;
  /// i1 per row: the label is not the ignore index.
  Value counted;
};

/// Builds `VocabRows` for the local logits and labels of a cross-entropy
/// (operands #0 and #1) whose vocab (last) dim is sharded.
VocabRows buildVocabRows(OpBuilder &builder, Location loc,
                         const PartitionContext &context, Value localLogits,
                         Value localLabels, int64_t ignoreIndex,
                         FloatType type) {
  const ValueLayout &layout = context.getOperandLayout(0);
  int64_t vocabDim = layout.global.getRank() - 1;
  SmallVector<unsigned> axes = layout.getAxesSharding(vocabDim);
  TensorBuilder b(builder, loc);
  // Padding columns (uneven vocab chunks) count as -inf: no max, no exp.
  Value local = context.maskPadding(builder, loc, b.cast(localLogits, type),
                                    layout, vocabDim, ReduceKind::Max);
  RankedTensorType localType = tensorTypeOf(local);
  SmallVector<int64_t> keptShape(localType.getShape());
  keptShape.back() = 1;
  Value localMax = ReduceMaxOp::create(
      builder, loc, localType.clone(keptShape), local,
      builder.getDenseI64ArrayAttr({vocabDim}), /*keepdim=*/true);
  Value max =
      context.buildAllReduce(builder, loc, localMax, axes, ReduceKind::Max);
  Value centered =
      b.binary<SubOp>(local, b.broadcastTo(max, localType.getShape()));
  Value exp = b.unary<ExpOp>(centered);
  Value sumExp = context.buildAllReduce(
      builder, loc, b.reduceSum(exp, {vocabDim}, /*keepdim=*/true), axes,
      ReduceKind::Sum);
  ShardIds ids =
      shiftIdsToShard(builder, loc, context, localLabels, layout, vocabDim);
  Value columns = b.iota(localType.clone(builder.getI64Type()), vocabDim);
  Value isLabel =
      b.compare("eq", columns, expandRows(builder, ids.local, localType));
  Value inRange = expandRows(builder, ids.inRange, localType);
  Value never = b.splatLike(isLabel, 0.0);
  Value target = b.select(isLabel, inRange, never);
  Value ignore = b.splatLike(localLabels, double(ignoreIndex));
  Value counted = b.compare("ne", localLabels, ignore);
  return VocabRows{exp, max, sumExp, target, counted};
}

/// Whether some mesh axis shards some dim of the labels (operand #1).
bool hasShardedLabels(const PartitionContext &context) {
  return context.getOperandLayout(1).isSharded();
}

/// The mesh axes that shard the vocab (last) dim of the logits (operand #0).
SmallVector<unsigned> getVocabAxes(const PartitionContext &context) {
  const ValueLayout &logits = context.getOperandLayout(0);
  return logits.getAxesSharding(logits.global.getRank() - 1);
}

} // namespace

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<Value>>
EmbeddingOp::partition(OpBuilder &builder, ValueRange localOperands,
                       PartitionContext &context) {
  // Ids in the padding of uneven shards look up row 0 (their rows are
  // padding of the result).
  Value localIds = fillIdPadding(builder, getLoc(), context, localOperands[1],
                                 context.getOperandLayout(1), 0.0);
  const ValueLayout &table = context.getOperandLayout(0);
  if (table.getAxesSharding(0).empty())
    return partitionByCloning(*this, builder, {localOperands[0], localIds},
                              context);
  Value localTable = localOperands[0];
  ShardIds ids =
      shiftIdsToShard(builder, getLoc(), context, localIds, table, /*dim=*/0);
  Value lookup = EmbeddingOp::create(
      builder, getLoc(), context.getLocalResultType(0), localTable, ids.local);
  return SmallVector<Value>{maskRows(builder, getLoc(), lookup, ids.inRange)};
}

FailureOr<SmallVector<Value>>
EmbeddingGradOp::partition(OpBuilder &builder, ValueRange localOperands,
                           PartitionContext &context) {
  const ValueLayout &table = context.getResultLayout(0);
  if (table.getAxesSharding(0).empty())
    return partitionByCloning(*this, builder, localOperands, context);
  // Uneven shards of the ids: their padding adds zero rows to row 0.
  SmallVector<Value> operands =
      context.maskReducedPadding(builder, localOperands);
  RankedTensorType type = context.getLocalResultType(0);
  ShardIds ids =
      shiftIdsToShard(builder, getLoc(), context, operands[0], table, 0);
  // Rows of ids outside the shard add zeros to row 0.
  Value masked = maskRows(builder, getLoc(), operands[1], ids.inRange);
  return SmallVector<Value>{
      EmbeddingGradOp::create(builder, getLoc(), type, ids.local, masked)
          .getResult()};
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

// Over the batch axes the loss may be read as P(sum) or P(avg) (the ranks'
// weighted means scaled by their number).
LogicalResult CrossEntropyOp::checkPartition(PartitionContext &context) {
  return context.explainEither(getShardingRule(), ReduceKind::Avg);
}

FailureOr<SmallVector<Value>>
CrossEntropyOp::partition(OpBuilder &builder, ValueRange localOperands,
                          PartitionContext &context) {
  SmallVector<unsigned> vocabAxes = getVocabAxes(context);
  bool shardedLabels = hasShardedLabels(context);
  if (vocabAxes.empty() && !shardedLabels)
    return partitionByCloning(*this, builder, localOperands, context);
  Location loc = getLoc();
  TensorBuilder b(builder, loc);
  auto type = cast<FloatType>(getType().getElementType());
  // Labels in the padding of uneven shards are ignored.
  Value localLogits = localOperands[0];
  Value localLabels = fillIdPadding(builder, loc, context, localOperands[1],
                                    context.getOperandLayout(1),
                                    double(int64_t(getIgnoreIndex())));
  SmallVector<Value> operands = {localLogits, localLabels};
  // The mean over the rank's rows (a partial sum over the vocab axes).
  Value mean;
  if (vocabAxes.empty()) {
    mean = (*partitionByCloning(*this, builder, operands, context))[0];
  } else {
    VocabRows rows = buildVocabRows(builder, loc, context, localLogits,
                                    localLabels, getIgnoreIndex(), type);
    RankedTensorType expType = tensorTypeOf(rows.exp);
    Value logsumexp = b.binary<AddOp>(b.unary<LogOp>(rows.sumExp), rows.max);
    SmallVector<int64_t> rowShape(expType.getShape().drop_back());
    Value rowLogsumexp = b.reshape(logsumexp, rowShape);
    Value isFirst = b.indexEquals(
        context.buildAxisIndex(builder, loc, vocabAxes), 0, rowShape);
    Value rowZeros = b.splatLike(rowLogsumexp, 0.0);
    Value ownLogsumexp = b.select(isFirst, rowLogsumexp, rowZeros);
    Value local = b.cast(localLogits, type);
    Value picked = b.select(rows.target, local, b.splatLike(local, 0.0));
    Value targetLogit = b.reduceSum(picked, {expType.getRank() - 1},
                                    /*keepdim=*/false);
    Value rowLoss = b.binary<SubOp>(ownLogsumexp, targetLogit);
    Value countedLoss = b.select(rows.counted, rowLoss, rowZeros);
    Value total = b.sumAll(countedLoss);
    Value count = b.sumAll(b.cast(rows.counted, type));
    mean = b.binary<DivOp>(total, count);
  }
  if (!shardedLabels)
    return SmallVector<Value>{mean};
  // The rank's mean weighted by its share of the counted labels; a rank
  // without counted labels contributes zero (its mean is NaN), and the
  // result is NaN when no rank counts any, as in PyTorch.
  LabelCounts counts =
      countLabels(builder, loc, context, localLabels, getIgnoreIndex(), type);
  Value share = b.binary<DivOp>(counts.local, counts.total);
  Value weighted = b.binary<MulOp>(mean, share);
  bool average = llvm::is_contained(context.getResultLayout(0).placements,
                                    Placement::partial(ReduceKind::Avg));
  if (average)
    weighted = b.scale(weighted, double(counts.groupSize));
  Value zero = b.splatLike(weighted, 0.0);
  Value hasLabels = b.compare("gt", counts.local, zero);
  Value noneAnywhere = b.compare("eq", counts.total, zero);
  Value always = b.splatLike(hasLabels, 1.0);
  Value keep = b.select(hasLabels, always, noneAnywhere);
  return SmallVector<Value>{b.select(keep, weighted, zero)};
}

FailureOr<SmallVector<Value>>
CrossEntropyGradOp::partition(OpBuilder &builder, ValueRange localOperands,
                              PartitionContext &context) {
  SmallVector<unsigned> vocabAxes = getVocabAxes(context);
  bool shardedLabels = hasShardedLabels(context);
  if (vocabAxes.empty() && !shardedLabels)
    return partitionByCloning(*this, builder, localOperands, context);
  Location loc = getLoc();
  TensorBuilder b(builder, loc);
  // The loss's cotangent is f32 (f64 for f64 logits): the precision the
  // rows are computed in, rounded once to the logits' type.
  auto computeType = cast<FloatType>(getGrad().getType().getElementType());
  Value localLabels = fillIdPadding(builder, loc, context, localOperands[1],
                                    context.getOperandLayout(1),
                                    double(int64_t(getIgnoreIndex())));
  Value localGrad = localOperands[2];
  if (shardedLabels) {
    // A row's cotangent divides by the global count of labels, the op by
    // the rank's: scale the loss's cotangent by local / global count (zero
    // on a rank without counted labels, whose rows are all zero anyway).
    LabelCounts counts = countLabels(builder, loc, context, localLabels,
                                     getIgnoreIndex(), computeType);
    Value zero = b.splatLike(counts.local, 0.0);
    Value hasLabels = b.compare("gt", counts.local, zero);
    Value ratio = b.binary<DivOp>(counts.local, counts.total);
    localGrad = b.binary<MulOp>(localGrad, b.select(hasLabels, ratio, zero));
  }
  SmallVector<Value> operands = {localOperands[0], localLabels, localGrad};
  if (vocabAxes.empty())
    return partitionByCloning(*this, builder, operands, context);
  // The cotangent of the rank's rows, divided by their count.
  VocabRows rows = buildVocabRows(builder, loc, context, localOperands[0],
                                  localLabels, getIgnoreIndex(), computeType);
  RankedTensorType localType = tensorTypeOf(rows.exp);
  Value softmax = b.binary<DivOp>(
      rows.exp, b.broadcastTo(rows.sumExp, localType.getShape()));
  Value ones = b.splatLike(softmax, 1.0);
  Value zeros = b.splatLike(softmax, 0.0);
  Value oneHot = b.select(rows.target, ones, zeros);
  Value diff = b.binary<SubOp>(softmax, oneHot);
  Value count = b.sumAll(b.cast(rows.counted, computeType));
  Value perRow = b.binary<DivOp>(localGrad, count);
  Value factor = b.broadcastTo(perRow, localType.getShape());
  Value scaled = b.binary<MulOp>(diff, factor);
  Value local =
      b.select(expandRows(builder, rows.counted, localType), scaled, zeros);
  return SmallVector<Value>{b.cast(local, getType().getElementType())};
}
