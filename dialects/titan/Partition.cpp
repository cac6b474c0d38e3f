//===- Partition.cpp - the local computation of compute ops ---------------===//
//
// PartitionContext, the defaults of ShardingRuleOpInterface::checkPartition
// and ::partition (the rule explains the placements; the op runs on its
// shards), and the ops whose local form differs without talking about
// vocabularies: constants and iotas whose shard depends on the rank, slices
// of sharded dims, means read as partial sums. The embedding and
// cross-entropy ops are in PartitionVocabulary.cpp.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Partition.h"
#include "titan/Dialect/TensorBuilder.h"

#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::titan;

SmallVector<int64_t> mlir::titan::getStaticShape(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> result(shape);
  for (int64_t &size : result)
    if (ShapedType::isDynamic(size))
      size = 1;
  return result;
}

RankedTensorType mlir::titan::getLocalType(RankedTensorType global,
                                           const DeviceMesh &mesh,
                                           ArrayRef<Placement> placements) {
  SmallVector<int64_t> coordinate(mesh.getNumAxes(), 0);
  LocalShard shard = llvm::cantFail(
      computeLocalShapeAndGlobalOffset(getStaticShape(global.getShape()),
                                       mesh.getSizes(), placements, coordinate),
      "placements are verified before local types are asked for");
  for (auto [local, size] : llvm::zip_equal(shard.shape, global.getShape()))
    if (ShapedType::isDynamic(size))
      local = size;
  return global.clone(shard.shape);
}

SmallVector<unsigned> ValueLayout::getAxesSharding(int64_t dim) const {
  SmallVector<unsigned> axes;
  for (auto [axis, placement] : llvm::enumerate(placements))
    if (placement.isShard(dim))
      axes.push_back(axis);
  return axes;
}

bool ValueLayout::isSharded() const {
  return llvm::any_of(placements, [](Placement p) { return p.isShard(); });
}

//===----------------------------------------------------------------------===//
// PartitionContext
//===----------------------------------------------------------------------===//

PartitionContext::PartitionContext(Operation *op, const DeviceMesh *mesh,
                                   FlatSymbolRefAttr meshSymbol,
                                   SmallVector<ValueLayout> operands,
                                   SmallVector<ValueLayout> results)
    : op(op), mesh(mesh), meshSymbol(meshSymbol), operands(std::move(operands)),
      results(std::move(results)) {}

RankedTensorType PartitionContext::getLocalResultType(unsigned index) const {
  const ValueLayout &layout = results[index];
  if (!mesh)
    return layout.global;
  return getLocalType(layout.global, *mesh, layout.placements);
}

llvm::Expected<SmallVector<AxisChoice>>
PartitionContext::tryExplain(const OpShardingRule &rule) const {
  auto placementsOf = [](ArrayRef<ValueLayout> layouts) {
    return llvm::map_to_vector(
        layouts, [](const ValueLayout &layout) { return layout.placements; });
  };
  SmallVector<std::string> names;
  for (unsigned axis : llvm::seq(getNumAxes()))
    names.push_back(mesh->getAxisName(axis).str());
  SmallVector<int64_t> sizes;
  if (mesh)
    sizes.assign(mesh->getSizes().begin(), mesh->getSizes().end());
  return explainPlacements(rule, placementsOf(operands), placementsOf(results),
                           sizes, names);
}

LogicalResult PartitionContext::explain(const OpShardingRule &rule,
                                        bool emitErrors) {
  llvm::Expected<SmallVector<AxisChoice>> explained = tryExplain(rule);
  if (!explained) {
    std::string message = llvm::toString(explained.takeError());
    if (emitErrors)
      op->emitOpError() << message;
    return failure();
  }
  choices = std::move(*explained);
  return success();
}

LogicalResult PartitionContext::explainEither(const OpShardingRule &rule,
                                              ReduceKind alternative) {
  OpShardingRule other = rule;
  other.partialKind = alternative;
  if (succeeded(explain(other, /*emitErrors=*/false)))
    return success();
  return explain(rule);
}

Value PartitionContext::buildAxisIndex(OpBuilder &builder, Location loc,
                                       ArrayRef<unsigned> axes) const {
  SmallVector<StringRef> names;
  for (unsigned axis : axes)
    names.push_back(mesh->getAxisName(axis));
  return AxisIndexOp::create(builder, loc,
                             RankedTensorType::get({}, builder.getI64Type()),
                             meshSymbol, builder.getStrArrayAttr(names));
}

Value PartitionContext::buildAllReduce(OpBuilder &builder, Location loc,
                                       Value value, ArrayRef<unsigned> axes,
                                       ReduceKind kind) const {
  SmallVector<StringRef> names;
  for (unsigned axis : axes)
    names.push_back(mesh->getAxisName(axis));
  return AllReduceOp::create(builder, loc, value.getType(), value,
                             meshSymbol.getValue(),
                             builder.getStrArrayAttr(names),
                             ReduceKindAttr::get(builder.getContext(), kind));
}

Value PartitionContext::buildRedistribute(OpBuilder &builder, Location loc,
                                          Value local, RankedTensorType global,
                                          ArrayRef<Placement> from,
                                          ArrayRef<Placement> to) const {
  MLIRContext *context = builder.getContext();
  return LocalRedistributeOp::create(
      builder, loc, getLocalType(global, *mesh, to), local,
      TypeAttr::get(global), PlacementsAttr::get(context, meshSymbol, from),
      PlacementsAttr::get(context, meshSymbol, to));
}

//===----------------------------------------------------------------------===//
// Defaults
//===----------------------------------------------------------------------===//

LogicalResult mlir::titan::checkPartitionByRule(Operation *op,
                                                PartitionContext &context) {
  return context.explain(cast<ShardingRuleOpInterface>(op).getShardingRule());
}

FailureOr<SmallVector<Value>>
mlir::titan::partitionByCloning(Operation *op, OpBuilder &builder,
                                ValueRange localOperands,
                                PartitionContext &context) {
  IRMapping mapping;
  mapping.map(op->getOperands(), localOperands);
  Operation *local = builder.clone(*op, mapping);
  local->removeAttr(TitanDialect::kPlacementsAttrName);
  for (OpResult result : local->getResults())
    result.setType(context.getLocalResultType(result.getResultNumber()));
  return SmallVector<Value>(local->getResults());
}

//===----------------------------------------------------------------------===//
// Constants and iotas
//===----------------------------------------------------------------------===//

/// Whether the shard of a constant or iota under `placement` depends on the
/// rank: a partial value does (it is held on some ranks only), a splat
/// never, a sharded constant does, and an iota when sharded along its dim.
static bool dependsOnRank(Placement placement, bool splat,
                          std::optional<int64_t> iotaDim) {
  if (placement.isPartial())
    return true;
  if (!placement.isShard() || splat)
    return false;
  return !iotaDim || placement.getDim() == *iotaDim;
}

/// The local value of a constant or iota: the op itself on the local type
/// when every rank's shard is alike, the whole value redistributed from R
/// otherwise.
static FailureOr<SmallVector<Value>>
partitionSource(Operation *op, OpBuilder &builder, PartitionContext &context,
                bool splat, std::optional<int64_t> iotaDim) {
  const ValueLayout &layout = context.getResultLayout(0);
  if (llvm::none_of(layout.placements, [&](Placement p) {
        return dependsOnRank(p, splat, iotaDim);
      }))
    return partitionByCloning(op, builder, {}, context);
  Operation *whole = builder.clone(*op);
  whole->removeAttr(TitanDialect::kPlacementsAttrName);
  SmallVector<Placement> replicated(layout.placements.size(),
                                    Placement::replicate());
  return SmallVector<Value>{
      context.buildRedistribute(builder, op->getLoc(), whole->getResult(0),
                                layout.global, replicated, layout.placements)};
}

// Any placements of a constant or an iota can be built: from the whole value.
LogicalResult ConstantOp::checkPartition(PartitionContext &) {
  return success();
}
LogicalResult IotaOp::checkPartition(PartitionContext &) { return success(); }

FailureOr<SmallVector<Value>> ConstantOp::partition(OpBuilder &builder,
                                                    ValueRange,
                                                    PartitionContext &context) {
  auto splat = dyn_cast<SplatElementsAttr>(getValue());
  if (splat && llvm::none_of(context.getResultLayout(0).placements,
                             [](Placement p) { return p.isPartial(); }))
    return SmallVector<Value>{ConstantOp::create(
        builder, getLoc(), splat.resizeSplat(context.getLocalResultType(0)))};
  return partitionSource(*this, builder, context, bool(splat), std::nullopt);
}

FailureOr<SmallVector<Value>> IotaOp::partition(OpBuilder &builder, ValueRange,
                                                PartitionContext &context) {
  return partitionSource(*this, builder, context, /*splat=*/false,
                         int64_t(getDim()));
}

//===----------------------------------------------------------------------===//
// Slices and means
//===----------------------------------------------------------------------===//

// A sharded dim is sliced whole (the rule shares a factor only there): its
// local limit is the local size.
FailureOr<SmallVector<Value>> SliceOp::partition(OpBuilder &builder,
                                                 ValueRange localOperands,
                                                 PartitionContext &context) {
  FailureOr<SmallVector<Value>> local =
      partitionByCloning(*this, builder, localOperands, context);
  auto slice = (*local)[0].getDefiningOp<SliceOp>();
  SmallVector<int64_t> limit(slice.getLimit());
  for (auto [dim, size] : llvm::enumerate(slice.getType().getShape()))
    if (!context.getOperandLayout(0).getAxesSharding(dim).empty())
      limit[dim] = size;
  slice.setLimit(limit);
  return local;
}

// The mean of equal shards is also the mean of the local means: P(avg).
LogicalResult ReduceMeanOp::checkPartition(PartitionContext &context) {
  return context.explainEither(getShardingRule(), ReduceKind::Avg);
}

// A mean that is P(sum) over the axes sharding its reduced dims is the local
// mean divided by their ranks.
FailureOr<SmallVector<Value>>
ReduceMeanOp::partition(OpBuilder &builder, ValueRange localOperands,
                        PartitionContext &context) {
  FailureOr<SmallVector<Value>> local =
      partitionByCloning(*this, builder, localOperands, context);
  const ValueLayout &input = context.getOperandLayout(0);
  const ValueLayout &result = context.getResultLayout(0);
  int64_t parts = 1;
  for (int64_t dim : getDims())
    for (unsigned axis : input.getAxesSharding(dim))
      if (result.placements[axis] == Placement::partial(ReduceKind::Sum))
        parts *= context.getMesh().getSize(axis);
  if (parts == 1)
    return local;
  TensorBuilder b(builder, getLoc());
  return SmallVector<Value>{b.scale((*local)[0], 1.0 / double(parts))};
}
