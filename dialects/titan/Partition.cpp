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

bool DimChunks::isUneven() const {
  return llvm::any_of(sizes, [&](int64_t size) { return size != padded; });
}

DimChunks mlir::titan::getDimChunks(ArrayRef<int64_t> globalShape,
                                    const DeviceMesh &mesh,
                                    ArrayRef<Placement> placements,
                                    int64_t dim) {
  DimChunks chunks;
  int64_t count = 1;
  for (auto [axis, placement] : llvm::enumerate(placements))
    if (placement.isShard(dim)) {
      chunks.axes.push_back(axis);
      count *= mesh.getSize(axis);
    }
  SmallVector<int64_t> shape = getStaticShape(globalShape);
  SmallVector<int64_t> coordinate(mesh.getNumAxes(), 0);
  for (int64_t index = 0; index < count; ++index) {
    int64_t rest = index;
    for (unsigned axis : llvm::reverse(chunks.axes)) {
      coordinate[axis] = rest % mesh.getSize(axis);
      rest /= mesh.getSize(axis);
    }
    LocalShard shard = llvm::cantFail(
        computeLocalShapeAndGlobalOffset(shape, mesh.getSizes(), placements,
                                         coordinate),
        "placements are verified before their chunks are asked for");
    chunks.sizes.push_back(shard.shape[dim]);
    chunks.offsets.push_back(shard.offset[dim]);
  }
  chunks.padded = *llvm::max_element(chunks.sizes);
  return chunks;
}

Value mlir::titan::buildRankTableLookup(OpBuilder &builder, Location loc,
                                        FlatSymbolRefAttr meshSymbol,
                                        const DeviceMesh &mesh,
                                        ArrayRef<unsigned> axes,
                                        ArrayRef<int64_t> table) {
  TensorBuilder b(builder, loc);
  auto scalar = RankedTensorType::get({}, builder.getI64Type());
  Value result = b.splat(scalar, double(table.back()));
  if (llvm::all_equal(table))
    return result;
  SmallVector<StringRef> names;
  for (unsigned axis : axes)
    names.push_back(mesh.getAxisName(axis));
  Value index = AxisIndexOp::create(builder, loc, scalar, meshSymbol,
                                    builder.getStrArrayAttr(names));
  for (int64_t entry = int64_t(table.size()) - 2; entry >= 0; --entry)
    if (table[entry] != table.back())
      result = b.select(b.indexEquals(index, entry, {}),
                        b.splat(scalar, double(table[entry])), result);
  return result;
}

Value mlir::titan::buildInChunkMask(OpBuilder &builder, Location loc,
                                    FlatSymbolRefAttr meshSymbol,
                                    const DeviceMesh &mesh,
                                    const DimChunks &chunks,
                                    ArrayRef<int64_t> shape, int64_t dim) {
  if (!chunks.isUneven())
    return nullptr;
  TensorBuilder b(builder, loc);
  Value size = buildRankTableLookup(builder, loc, meshSymbol, mesh, chunks.axes,
                                    chunks.sizes);
  Value positions =
      b.iota(RankedTensorType::get(shape, builder.getI64Type()), dim);
  return b.compare("lt", positions, b.broadcastTo(size, shape));
}

Value mlir::titan::buildIdentitySplat(OpBuilder &builder, Location loc,
                                      RankedTensorType type, ReduceKind kind) {
  bool lowest = kind == ReduceKind::Max, highest = kind == ReduceKind::Min;
  Type element = type.getElementType();
  DenseElementsAttr attr;
  if (auto floatType = dyn_cast<FloatType>(element)) {
    const llvm::fltSemantics &semantics = floatType.getFloatSemantics();
    attr = DenseElementsAttr::get(
        type, lowest    ? llvm::APFloat::getInf(semantics, /*Negative=*/true)
              : highest ? llvm::APFloat::getInf(semantics)
                        : llvm::APFloat::getZero(semantics));
  } else {
    unsigned width = element.getIntOrFloatBitWidth();
    attr = DenseElementsAttr::get(
        type, lowest    ? llvm::APInt::getSignedMinValue(width)
              : highest ? llvm::APInt::getSignedMaxValue(width)
                        : llvm::APInt::getZero(width));
  }
  return ConstantOp::create(builder, loc, attr);
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

DimChunks PartitionContext::getDimChunks(const ValueLayout &layout,
                                         int64_t dim) const {
  return titan::getDimChunks(layout.global.getShape(), *mesh, layout.placements,
                             dim);
}

Value PartitionContext::fillPadding(
    OpBuilder &builder, Location loc, Value local, const ValueLayout &layout,
    int64_t dim, function_ref<Value(RankedTensorType)> makeFill) const {
  if (!mesh || layout.getAxesSharding(dim).empty())
    return local;
  RankedTensorType type = tensorTypeOf(local);
  Value inChunk =
      buildInChunkMask(builder, loc, meshSymbol, *mesh,
                       getDimChunks(layout, dim), type.getShape(), dim);
  if (!inChunk)
    return local;
  return TensorBuilder(builder, loc).select(inChunk, local, makeFill(type));
}

Value PartitionContext::maskPadding(OpBuilder &builder, Location loc,
                                    Value local, const ValueLayout &layout,
                                    int64_t dim, ReduceKind kind) const {
  return fillPadding(builder, loc, local, layout, dim,
                     [&](RankedTensorType type) {
                       return buildIdentitySplat(builder, loc, type, kind);
                     });
}

SmallVector<Value>
PartitionContext::maskReducedPadding(OpBuilder &builder,
                                     ValueRange localOperands) const {
  SmallVector<Value> masked(localOperands);
  if (llvm::none_of(choices, [](const AxisChoice &choice) {
        return choice.kind == AxisChoice::Kind::Shard;
      }))
    return masked;
  OpShardingRule rule = cast<ShardingRuleOpInterface>(op).getShardingRule();
  // Each (operand, dim) once, even when several axes shard its factor.
  llvm::SmallDenseSet<std::pair<unsigned, int64_t>> done;
  for (const AxisChoice &choice : choices) {
    if (choice.kind != AxisChoice::Kind::Shard ||
        rule.factorKinds[choice.index] != FactorKind::Reduction ||
        rule.customLowering[choice.index])
      continue;
    for (auto [index, dims] : llvm::enumerate(rule.operandDims)) {
      std::optional<int64_t> dim = findFactorDim(dims, choice.index);
      if (!dim || !done.insert({unsigned(index), *dim}).second)
        continue;
      masked[index] = maskPadding(builder, op->getLoc(), masked[index],
                                  operands[index], *dim, rule.partialKind);
    }
  }
  return masked;
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
  mapping.map(op->getOperands(),
              context.maskReducedPadding(builder, localOperands));
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

// The local mean of the rank's chunks (their padding masked) divides by the
// local count L; a result P(sum) over the axes sharding the reduced dims
// must divide by the global count G instead, exact for uneven shards, and
// a result P(avg) (equal shards only) by G over the ranks it averages.
FailureOr<SmallVector<Value>>
ReduceMeanOp::partition(OpBuilder &builder, ValueRange localOperands,
                        PartitionContext &context) {
  const ValueLayout &input = context.getOperandLayout(0);
  const ValueLayout &result = context.getResultLayout(0);
  Value local = localOperands[0];
  double localCount = 1, globalCount = 1;
  for (int64_t dim : getDims()) {
    SmallVector<unsigned> axes = input.getAxesSharding(dim);
    if (axes.empty())
      continue;
    local = context.maskPadding(builder, getLoc(), local, input, dim,
                                ReduceKind::Sum);
    localCount *= double(tensorTypeOf(local).getDimSize(dim));
    globalCount *= double(input.global.getDimSize(dim));
    for (unsigned axis : axes)
      if (result.placements[axis] == Placement::partial(ReduceKind::Avg))
        globalCount /= double(context.getMesh().getSize(axis));
  }
  FailureOr<SmallVector<Value>> means =
      partitionByCloning(*this, builder, local, context);
  if (localCount == globalCount)
    return means;
  TensorBuilder b(builder, getLoc());
  return SmallVector<Value>{b.scale((*means)[0], localCount / globalCount)};
}
