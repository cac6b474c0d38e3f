//===- Spmdize.cpp - the local program of one rank ------------------------===//
//
// Implements titan-spmdize (see passes/Passes.td for the contract): every
// value of an annotated global function gets the local type of its shard,
// every op is rebuilt on those types, and every titan.redistribute becomes
// the collectives of the placement algebra's plan.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/TensorBuilder.h"
#include "titan/Passes.h"
#include "titan/Placement/PlacementAlgebra.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::titan {
#define GEN_PASS_DEF_SPMDIZEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// How one value of the global program is laid out: its global type and its
/// placements (none: replicated, as titan-eval reads a missing attribute).
struct Layout {
  RankedTensorType global;
  PlacementsAttr placements;

  /// The placement of mesh axis `axis` (`R` without placements).
  Placement get(unsigned axis) const {
    return placements ? placements.getPlacements()[axis]
                      : Placement::replicate();
  }
  /// The number of mesh axes the placements name (0 without placements).
  unsigned getNumAxes() const { return placements ? placements.size() : 0; }
  /// Whether `other` describes the same layout (missing placements and
  /// all-`R` placements alike mean replicated).
  bool isSameLayout(const Layout &other) const {
    if (placements && other.placements)
      return placements == other.placements;
    const Layout &annotated = placements ? *this : other;
    return !annotated.placements || annotated.placements.isFullyReplicated();
  }
  /// The mesh axes that shard tensor dim `dim`, outermost first.
  SmallVector<unsigned> axesSharding(int64_t dim) const {
    SmallVector<unsigned> axes;
    if (placements)
      for (auto [axis, placement] : llvm::enumerate(placements.getPlacements()))
        if (placement.isShard(dim))
          axes.push_back(axis);
    return axes;
  }
};

/// `shape` with every dynamic dim replaced by 1, for the placement algebra
/// (callers make sure no mesh axis shards a dynamic dim).
SmallVector<int64_t> staticShape(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> result(shape);
  for (int64_t &size : result)
    if (ShapedType::isDynamic(size))
      size = 1;
  return result;
}

/// The local type of a value of global type `global` under `placements` on
/// `mesh`, for an even layout (every rank's shard has this type); dynamic
/// dims, which no axis shards, stay dynamic.
RankedTensorType getLocalType(RankedTensorType global, const DeviceMesh &mesh,
                              ArrayRef<Placement> placements) {
  SmallVector<int64_t> coordinate(mesh.getNumAxes(), 0);
  LocalShard shard = llvm::cantFail(
      computeLocalShapeAndGlobalOffset(staticShape(global.getShape()),
                                       mesh.getSizes(), placements, coordinate),
      "layouts are verified when they are collected");
  for (auto [local, size] : llvm::zip_equal(shard.shape, global.getShape()))
    if (ShapedType::isDynamic(size))
      local = size;
  return global.clone(shard.shape);
}

/// The reduction that a reduce op leaves pending on an axis that shards one of
/// its reduced dims.
std::optional<ReduceKind> getPendingReduction(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<ReduceKind>>(op)
      .Case([](ReduceSumOp) { return ReduceKind::Sum; })
      .Case([](ReduceMaxOp) { return ReduceKind::Max; })
      .Case([](ReduceMeanOp) { return ReduceKind::Avg; })
      .Default([](Operation *) { return std::nullopt; });
}

/// The map from the row-major positions of one rank's shard to row-major
/// positions of the global tensor: a base offset plus (size, stride) runs,
/// outermost first, with unit dims dropped and adjacent runs that are
/// contiguous merged, so that two shards are laid out alike exactly when
/// their runs and bases agree.
struct ShardRuns {
  int64_t base = 0;
  SmallVector<std::pair<int64_t, int64_t>> runs;

  bool operator==(const ShardRuns &other) const {
    return base == other.base && runs == other.runs;
  }
};

ShardRuns getShardRuns(ArrayRef<int64_t> globalShape, const LocalShard &shard) {
  ShardRuns result;
  int64_t stride = 1;
  SmallVector<std::pair<int64_t, int64_t>> innerFirst;
  for (int64_t d = globalShape.size() - 1; d >= 0; --d) {
    result.base += shard.offset[d] * stride;
    if (shard.shape[d] != 1) {
      if (!innerFirst.empty() &&
          innerFirst.back().first * innerFirst.back().second == stride)
        innerFirst.back().first *= shard.shape[d];
      else
        innerFirst.push_back({shard.shape[d], stride});
    }
    stride *= globalShape[d];
  }
  result.runs.assign(innerFirst.rbegin(), innerFirst.rend());
  return result;
}

/// Rewrites the body of one annotated function into the program of one rank.
class FunctionSpmdizer {
public:
  explicit FunctionSpmdizer(func::FuncOp function)
      : function(function), builder(function.getContext()) {}

  LogicalResult run();

private:
  /// Reads and checks the layouts of every argument, op result and function
  /// result before anything is rewritten.
  LogicalResult collectLayouts();
  /// Checks one layout (mesh, placements, static and even sharded dims);
  /// `describe` names the value in messages.
  LogicalResult checkLayout(Operation *anchor, Attribute attr, Type type,
                            const Twine &describe, Layout &layout);
  /// The device mesh `symbol`, built once.
  FailureOr<const DeviceMesh *> getMesh(Operation *user,
                                        FlatSymbolRefAttr symbol);
  /// The mesh of a layout that has placements.
  const DeviceMesh &meshOf(const Layout &layout) {
    return meshes.find(layout.placements.getMesh().getValue())->second;
  }
  /// The local type of a value with `layout`.
  RankedTensorType localTypeOf(const Layout &layout) {
    if (!layout.placements)
      return layout.global;
    return getLocalType(layout.global, meshOf(layout),
                        layout.placements.getPlacements());
  }

  /// Emits the local form of `op` and maps its results.
  LogicalResult rewriteOp(Operation *op);
  /// Fails with an error when `op` is not computable on its operands' shards
  /// as the layouts say.
  LogicalResult checkLocal(Operation *op);
  /// `op` rebuilt on the mapped operands with the local result types.
  Operation *cloneLocal(Operation *op);
  /// Builds the local value of a constant or iota whose shard depends on the
  /// rank: the whole value, then its shard as a redistribution from R.
  FailureOr<Value> buildFromReplicated(Operation *op, const Layout &layout);
  /// Ids relative to the first row of the rank's shard of a vocab-sharded
  /// table, and which of them fall in the shard.
  struct ShardIds {
    /// The ids minus the shard's first row; 0 where out of the shard.
    Value local;
    /// i1, true where the id is in the shard.
    Value inRange;
  };
  /// Shifts the ids `ids` (global value, replicated over the vocab axes) to
  /// the shard of a value with layout `vocab` whose dim `vocabDim` is
  /// sharded, `rows` entries per shard.
  FailureOr<ShardIds> shiftIdsToShard(Operation *op, Value ids,
                                      const Layout &vocab, int64_t vocabDim,
                                      int64_t rows);
  /// `perRow` ([rows...]) broadcast along a new last dim to `like`'s shape
  /// ([rows..., k]).
  Value expandRows(Value perRow, RankedTensorType like);
  /// `rows` ([ids..., dim]) with the rows whose id is out of range zeroed.
  Value maskRows(TensorBuilder &b, Value rows, Value inRange);
  /// Vocabulary-parallel lookup: the table's rows are sharded, each rank
  /// looks up the ids in its range and leaves zeros elsewhere (P(sum)).
  FailureOr<Value> buildShardedEmbedding(EmbeddingOp op);
  /// The cotangent of a vocab-sharded table: each rank scatter-adds the rows
  /// of the ids in its range.
  FailureOr<Value> buildShardedEmbeddingGrad(EmbeddingGradOp op);

  /// The labels of a cross-entropy that a rank and all ranks count.
  struct LabelCounts {
    /// 0-d: labels other than the ignore index on this rank, and over the
    /// ranks of the batch axes (all-reduced).
    Value local, total;
    /// The number of ranks of the mesh axes that shard the labels.
    int64_t groupSize;
  };
  /// Counts the labels of `labels` (sharded) other than `ignoreIndex` as
  /// 0-d tensors of `type`.
  LabelCounts countLabels(Operation *op, Value labels, int64_t ignoreIndex,
                          FloatType type);
  /// Cross-entropy with sharded labels (a sharded batch) or a sharded
  /// vocabulary (loss parallel). Over the batch axes, the result is the
  /// partial sum (or average) of each rank's mean weighted by its share of
  /// the counted labels; over the vocab axes it is the partial sum of the
  /// rows' logsumexp (on coordinate 0) minus the target logits that fall in
  /// the rank's shard, the softmax statistics all-reduced.
  FailureOr<Value> buildShardedCrossEntropy(CrossEntropyOp op);
  /// Its cotangent: the softmax from all-reduced statistics and a one-hot
  /// of the labels in the rank's vocab shard; the local cotangent rescaled
  /// from the local count of labels to the global one.
  FailureOr<Value> buildShardedCrossEntropy(CrossEntropyGradOp op);
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
  /// Builds `VocabRows` for logits with a sharded vocab (last) dim.
  FailureOr<VocabRows> buildVocabRows(Operation *op, Value logits, Value labels,
                                      int64_t ignoreIndex, FloatType type);
  /// Emits the local form of the ops whose local computation differs from
  /// the global op; returns a null value for the others.
  FailureOr<Value> buildSpecialOp(Operation *op);

  /// Emits the steps that take `local` (a shard of a value of global type
  /// `global` under `from`) to its shard under `to`, both on `mesh`.
  FailureOr<Value> emitRedistribution(Operation *anchor, Value local,
                                      RankedTensorType global,
                                      FlatSymbolRefAttr mesh,
                                      ArrayRef<Placement> from,
                                      ArrayRef<Placement> to);
  /// The rank's index over mesh axes `axes` (row-major) as a 0-d i64 tensor.
  Value axisIndex(TensorBuilder &b, FlatSymbolRefAttr mesh,
                  ArrayRef<unsigned> axes);
  /// Whether the 0-d `index` equals `k`, broadcast to `shape`.
  Value indexEquals(TensorBuilder &b, Value index, int64_t k,
                    ArrayRef<int64_t> shape);

  func::FuncOp function;
  OpBuilder builder;
  IRMapping mapping;
  llvm::StringMap<DeviceMesh> meshes;
  /// The layout of every value of the global program.
  DenseMap<Value, Layout> layouts;
  /// The layouts the function declares for its results.
  SmallVector<Layout> resultLayouts;
};

} // namespace

FailureOr<const DeviceMesh *>
FunctionSpmdizer::getMesh(Operation *user, FlatSymbolRefAttr symbol) {
  auto it = meshes.find(symbol.getValue());
  if (it != meshes.end())
    return &it->second;
  MeshOp mesh = MeshOp::lookup(user, symbol);
  if (!mesh)
    return user->emitError() << "placements refer to unknown mesh " << symbol;
  FailureOr<DeviceMesh> deviceMesh = mesh.getDeviceMesh();
  if (failed(deviceMesh))
    return failure();
  return &meshes.try_emplace(symbol.getValue(), std::move(*deviceMesh))
              .first->second;
}

LogicalResult FunctionSpmdizer::checkLayout(Operation *anchor, Attribute attr,
                                            Type type, const Twine &describe,
                                            Layout &layout) {
  layout.global = dyn_cast<RankedTensorType>(type);
  if (!layout.global)
    return anchor->emitError()
           << describe << ": titan-spmdize handles ranked tensors only, got "
           << type;
  if (!attr)
    return success();
  layout.placements = dyn_cast<PlacementsAttr>(attr);
  if (!layout.placements)
    return anchor->emitError()
           << describe << ": expected #titan.placements, got " << attr;
  FailureOr<const DeviceMesh *> mesh =
      getMesh(anchor, layout.placements.getMesh());
  if (failed(mesh))
    return failure();
  ArrayRef<int64_t> shape = layout.global.getShape();
  ArrayRef<Placement> list = layout.placements.getPlacements();
  if (llvm::Error error =
          verifyPlacements(staticShape(shape), (*mesh)->getSizes(), list))
    return anchor->emitError()
           << describe << ": " << llvm::toString(std::move(error));
  for (int64_t dim = 0, rank = shape.size(); dim < rank; ++dim) {
    int64_t remaining = shape[dim];
    for (unsigned axis : layout.axesSharding(dim)) {
      StringRef name = (*mesh)->getAxisName(axis);
      int64_t axisSize = (*mesh)->getSize(axis);
      if (ShapedType::isDynamic(remaining))
        return anchor->emitError()
               << describe << ": dim " << dim
               << " is dynamic and sharded over mesh axis \"" << name
               << "\"; titan-spmdize needs static sizes for sharded dims";
      if (remaining % axisSize != 0) {
        InFlightDiagnostic diag = anchor->emitError()
                                  << describe << ": dim " << dim << " of size "
                                  << shape[dim];
        if (remaining != shape[dim])
          diag << " (" << remaining << " per shard of the outer mesh axes)";
        return diag << " does not divide over mesh axis \"" << name
                    << "\" of size " << axisSize
                    << "; pick sizes that divide or do not shard this dim "
                       "over that axis (titan-spmdize does not pad uneven "
                       "shards)";
      }
      remaining /= axisSize;
    }
  }
  return success();
}

LogicalResult FunctionSpmdizer::collectLayouts() {
  Block &body = function.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    unsigned index = arg.getArgNumber();
    std::string describe = "argument #" + std::to_string(index);
    if (auto name = function.getArgAttrOfType<StringAttr>(
            index, TitanDialect::kNameAttrName))
      describe += " '" + name.str() + "'";
    if (failed(checkLayout(
            function,
            function.getArgAttr(index, TitanDialect::kPlacementsAttrName),
            arg.getType(), describe, layouts[arg])))
      return failure();
  }
  for (auto [index, type] : llvm::enumerate(function.getResultTypes())) {
    std::string describe = "result #" + std::to_string(index);
    if (auto name = function.getResultAttrOfType<StringAttr>(
            index, TitanDialect::kNameAttrName))
      describe += " '" + name.str() + "'";
    if (failed(checkLayout(
            function,
            function.getResultAttr(index, TitanDialect::kPlacementsAttrName),
            type, describe, resultLayouts.emplace_back())))
      return failure();
  }
  for (Operation &op : body.without_terminator()) {
    auto placements =
        op.getAttrOfType<ArrayAttr>(TitanDialect::kPlacementsAttrName);
    for (OpResult result : op.getResults()) {
      Attribute attr;
      if (placements)
        attr = placements[result.getResultNumber()];
      else if (auto redistribute = dyn_cast<RedistributeOp>(op))
        attr = redistribute.getTo();
      if (failed(checkLayout(&op, attr, result.getType(),
                             "result #" + Twine(result.getResultNumber()),
                             layouts[result])))
        return failure();
    }
  }
  return success();
}

Value FunctionSpmdizer::axisIndex(TensorBuilder &b, FlatSymbolRefAttr mesh,
                                  ArrayRef<unsigned> axes) {
  const DeviceMesh &deviceMesh = meshes.find(mesh.getValue())->second;
  SmallVector<Attribute> names;
  for (unsigned axis : axes)
    names.push_back(b.getBuilder().getStringAttr(deviceMesh.getAxisName(axis)));
  return AxisIndexOp::create(
      b.getBuilder(), b.getLoc(),
      RankedTensorType::get({}, b.getBuilder().getI64Type()), mesh,
      b.getBuilder().getArrayAttr(names));
}

Value FunctionSpmdizer::indexEquals(TensorBuilder &b, Value index, int64_t k,
                                    ArrayRef<int64_t> shape) {
  Value equal = b.compare("eq", index, b.splat(tensorTypeOf(index), double(k)));
  return b.broadcastTo(equal, shape);
}

FailureOr<Value> FunctionSpmdizer::emitRedistribution(
    Operation *anchor, Value local, RankedTensorType global,
    FlatSymbolRefAttr mesh, ArrayRef<Placement> from, ArrayRef<Placement> to) {
  const DeviceMesh &deviceMesh = meshes.find(mesh.getValue())->second;
  llvm::Expected<std::vector<RedistributeStep>> steps = planRedistribution(
      staticShape(global.getShape()), deviceMesh.getSizes(), from, to);
  if (!steps)
    return anchor->emitError() << llvm::toString(steps.takeError());
  TensorBuilder b(builder, anchor->getLoc());
  MLIRContext *context = builder.getContext();
  for (const RedistributeStep &step : *steps) {
    RankedTensorType type = getLocalType(global, deviceMesh, step.after);
    unsigned axis = step.meshAxis;
    ArrayAttr axes = builder.getStrArrayAttr({deviceMesh.getAxisName(axis)});
    auto reduce = [&] { return ReduceKindAttr::get(context, *step.reduce); };
    switch (step.kind) {
    case StepKind::AllGather:
      local = AllGatherOp::create(builder, b.getLoc(), type, local,
                                  mesh.getValue(), axes, *step.unshardDim);
      break;
    case StepKind::AllReduce:
      local = AllReduceOp::create(builder, b.getLoc(), type, local,
                                  mesh.getValue(), axes, reduce());
      break;
    case StepKind::ReduceScatter:
      if (!isa<FloatType>(type.getElementType()))
        return anchor->emitError()
               << "cannot reduce-scatter a partial " << global
               << ": titan.reduce_scatter takes floating-point tensors";
      local = ReduceScatterOp::create(builder, b.getLoc(), type, local,
                                      mesh.getValue(), axes, *step.shardDim,
                                      reduce());
      break;
    case StepKind::AllToAll:
      local =
          AllToAllOp::create(builder, b.getLoc(), type, local, mesh.getValue(),
                             axes, *step.shardDim, *step.unshardDim);
      break;
    case StepKind::LocalChunk: {
      // Chunk k of the local value, chosen by the rank's coordinate: a chain
      // of selects, exact for every element type. (Ops are built one
      // statement at a time so that their order does not depend on the
      // compiler's order of evaluating arguments.)
      int64_t dim = *step.shardDim, size = type.getDimSize(dim);
      Value index = axisIndex(b, mesh, axis);
      int64_t last = deviceMesh.getSize(axis) - 1;
      Value chunk = b.slice(local, dim, last * size, (last + 1) * size, 1);
      for (int64_t k = last - 1; k >= 0; --k) {
        Value candidate = b.slice(local, dim, k * size, (k + 1) * size, 1);
        Value isK = indexEquals(b, index, k, type.getShape());
        chunk = b.select(isK, candidate, chunk);
      }
      local = chunk;
      break;
    }
    case StepKind::Partition:
      // Sum: coordinate 0 keeps the value, the others hold zero; the other
      // reductions keep it on every rank.
      if (*step.reduce == ReduceKind::Sum) {
        Value isFirst =
            indexEquals(b, axisIndex(b, mesh, axis), 0, type.getShape());
        Value zeros = b.splat(type, 0.0);
        local = b.select(isFirst, local, zeros);
      }
      break;
    }
  }
  return local;
}

Operation *FunctionSpmdizer::cloneLocal(Operation *op) {
  Operation *local = builder.clone(*op, mapping);
  local->removeAttr(TitanDialect::kPlacementsAttrName);
  for (auto [result, localResult] :
       llvm::zip_equal(op->getResults(), local->getResults()))
    localResult.setType(localTypeOf(layouts.find(result)->second));
  return local;
}

FailureOr<Value> FunctionSpmdizer::buildFromReplicated(Operation *op,
                                                       const Layout &layout) {
  Operation *whole = builder.clone(*op);
  whole->removeAttr(TitanDialect::kPlacementsAttrName);
  SmallVector<Placement> replicated(layout.placements.size(),
                                    Placement::replicate());
  return emitRedistribution(op, whole->getResult(0), layout.global,
                            layout.placements.getMesh(), replicated,
                            layout.placements.getPlacements());
}

FailureOr<FunctionSpmdizer::ShardIds>
FunctionSpmdizer::shiftIdsToShard(Operation *op, Value ids, const Layout &vocab,
                                  int64_t vocabDim, int64_t rows) {
  const Layout &idsLayout = layouts.find(ids)->second;
  SmallVector<unsigned> vocabAxes = vocab.axesSharding(vocabDim);
  for (unsigned axis : vocabAxes)
    if (!idsLayout.get(axis).isReplicate())
      return op->emitError()
             << "the vocab dim is sharded over mesh axis \""
             << meshOf(vocab).getAxisName(axis)
             << "\", which needs every id there, but the ids are "
             << idsLayout.get(axis).str() << " on it";
  // Ids are compared and shifted in f64, exact for any vocabulary that fits
  // in memory; the rows of the shard start at index * rows. Ops are built
  // one statement at a time, in a fixed order.
  TensorBuilder b(builder, op->getLoc());
  Value localIds = mapping.lookupOrDefault(ids);
  RankedTensorType idsType = tensorTypeOf(localIds);
  Type f64 = builder.getF64Type();
  Value index = axisIndex(b, vocab.placements.getMesh(), vocabAxes);
  Value offset = b.scale(b.cast(index, f64), double(rows));
  Value idsF64 = b.cast(localIds, f64);
  Value shifted =
      b.binary<SubOp>(idsF64, b.broadcastTo(offset, idsType.getShape()));
  Value zeros = b.splatLike(shifted, 0.0);
  Value aboveStart = b.compare("ge", shifted, zeros);
  Value belowEnd = b.compare("lt", shifted, b.splatLike(shifted, rows));
  Value never = b.splatLike(shifted, 0.0, builder.getI1Type());
  Value inRange = b.select(aboveStart, belowEnd, never);
  Value inShard =
      b.cast(b.select(inRange, shifted, zeros), idsType.getElementType());
  return ShardIds{inShard, inRange};
}

Value FunctionSpmdizer::expandRows(Value perRow, RankedTensorType like) {
  RankedTensorType type = tensorTypeOf(perRow);
  SmallVector<int64_t> dims =
      llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  return BroadcastInDimOp::create(builder, perRow.getLoc(),
                                  like.clone(type.getElementType()), perRow,
                                  builder.getDenseI64ArrayAttr(dims));
}

Value FunctionSpmdizer::maskRows(TensorBuilder &b, Value rows, Value inRange) {
  RankedTensorType type = tensorTypeOf(rows);
  Value rowMask = expandRows(inRange, type);
  Value zeroRows = b.splat(type, 0.0);
  return b.select(rowMask, rows, zeroRows);
}

FailureOr<Value> FunctionSpmdizer::buildShardedEmbedding(EmbeddingOp op) {
  const Layout &table = layouts.find(op.getTable())->second;
  const Layout &result = layouts.find(op.getResult())->second;
  for (unsigned axis : table.axesSharding(0))
    if (result.get(axis) != Placement::partial(ReduceKind::Sum))
      return op.emitError()
             << "the table's vocab dim is sharded over mesh axis \""
             << meshOf(table).getAxisName(axis)
             << "\", so the lookup is P(sum) there, but the result is "
             << result.get(axis).str();
  Value localTable = mapping.lookupOrDefault(op.getTable());
  FailureOr<ShardIds> ids = shiftIdsToShard(
      op, op.getIds(), table, 0, tensorTypeOf(localTable).getDimSize(0));
  if (failed(ids))
    return failure();
  TensorBuilder b(builder, op.getLoc());
  Value lookup = EmbeddingOp::create(builder, op.getLoc(), localTypeOf(result),
                                     localTable, ids->local);
  return maskRows(b, lookup, ids->inRange);
}

FailureOr<Value>
FunctionSpmdizer::buildShardedEmbeddingGrad(EmbeddingGradOp op) {
  const Layout &result = layouts.find(op.getResult())->second;
  const Layout &grad = layouts.find(op.getGrad())->second;
  for (unsigned axis : result.axesSharding(0))
    if (!grad.get(axis).isReplicate())
      return op.emitError()
             << "the vocab dim of the result is sharded over mesh axis \""
             << meshOf(result).getAxisName(axis)
             << "\", which needs the whole cotangent there, but it is "
             << grad.get(axis).str() << " on it";
  RankedTensorType type = localTypeOf(result);
  FailureOr<ShardIds> ids =
      shiftIdsToShard(op, op.getIds(), result, 0, type.getDimSize(0));
  if (failed(ids))
    return failure();
  // Rows of ids outside the shard add zeros to row 0.
  TensorBuilder b(builder, op.getLoc());
  Value masked =
      maskRows(b, mapping.lookupOrDefault(op.getGrad()), ids->inRange);
  return EmbeddingGradOp::create(builder, op.getLoc(), type, ids->local, masked)
      .getResult();
}

FunctionSpmdizer::LabelCounts FunctionSpmdizer::countLabels(Operation *op,
                                                            Value labels,
                                                            int64_t ignoreIndex,
                                                            FloatType type) {
  const Layout &layout = layouts.find(labels)->second;
  SmallVector<unsigned> axes;
  for (int64_t dim = 0; dim < layout.global.getRank(); ++dim)
    llvm::append_range(axes, layout.axesSharding(dim));
  llvm::sort(axes);
  TensorBuilder b(builder, op->getLoc());
  Value local = mapping.lookupOrDefault(labels);
  Value ignore = b.splatLike(local, double(ignoreIndex));
  Value counted = b.cast(b.compare("ne", local, ignore), type);
  Value count = b.sumAll(counted);
  const DeviceMesh &mesh = meshOf(layout);
  SmallVector<StringRef> names;
  int64_t groupSize = 1;
  for (unsigned axis : axes) {
    names.push_back(mesh.getAxisName(axis));
    groupSize *= mesh.getSize(axis);
  }
  Value total = AllReduceOp::create(
      builder, op->getLoc(), count.getType(), count,
      layout.placements.getMesh().getValue(), builder.getStrArrayAttr(names),
      ReduceKindAttr::get(builder.getContext(), ReduceKind::Sum));
  return LabelCounts{count, total, groupSize};
}

FailureOr<FunctionSpmdizer::VocabRows>
FunctionSpmdizer::buildVocabRows(Operation *op, Value logits, Value labels,
                                 int64_t ignoreIndex, FloatType type) {
  const Layout &layout = layouts.find(logits)->second;
  int64_t vocabDim = layout.global.getRank() - 1;
  SmallVector<unsigned> axes = layout.axesSharding(vocabDim);
  const DeviceMesh &mesh = meshOf(layout);
  SmallVector<StringRef> names;
  for (unsigned axis : axes)
    names.push_back(mesh.getAxisName(axis));
  StringRef meshName = layout.placements.getMesh().getValue();
  ArrayAttr axesAttr = builder.getStrArrayAttr(names);
  auto allReduce = [&](Value value, ReduceKind kind) -> Value {
    return AllReduceOp::create(builder, op->getLoc(), value.getType(), value,
                               meshName, axesAttr,
                               ReduceKindAttr::get(builder.getContext(), kind));
  };
  TensorBuilder b(builder, op->getLoc());
  Value local = b.cast(mapping.lookupOrDefault(logits), type);
  RankedTensorType localType = tensorTypeOf(local);
  SmallVector<int64_t> keptShape(localType.getShape());
  keptShape.back() = 1;
  Value localMax = ReduceMaxOp::create(
      builder, op->getLoc(), localType.clone(keptShape), local,
      builder.getDenseI64ArrayAttr({vocabDim}), /*keepdim=*/true);
  Value max = allReduce(localMax, ReduceKind::Max);
  Value centered =
      b.binary<SubOp>(local, b.broadcastTo(max, localType.getShape()));
  Value exp = b.unary<ExpOp>(centered);
  Value sumExp = allReduce(b.reduceSum(exp, {vocabDim}, /*keepdim=*/true),
                           ReduceKind::Sum);
  FailureOr<ShardIds> ids = shiftIdsToShard(op, labels, layout, vocabDim,
                                            localType.getShape().back());
  if (failed(ids))
    return failure();
  Value columns = b.iota(localType.clone(builder.getI64Type()), vocabDim);
  Value isLabel = b.compare("eq", columns, expandRows(ids->local, localType));
  Value inRange = expandRows(ids->inRange, localType);
  Value never = b.splatLike(isLabel, 0.0);
  Value target = b.select(isLabel, inRange, never);
  Value localLabels = mapping.lookupOrDefault(labels);
  Value ignore = b.splatLike(localLabels, double(ignoreIndex));
  Value counted = b.compare("ne", localLabels, ignore);
  return VocabRows{exp, max, sumExp, target, counted};
}

FailureOr<Value> FunctionSpmdizer::buildShardedCrossEntropy(CrossEntropyOp op) {
  const Layout &result = layouts.find(op.getResult())->second;
  const Layout &logits = layouts.find(op.getLogits())->second;
  const Layout &labels = layouts.find(op.getLabels())->second;
  auto type = cast<FloatType>(op.getType().getElementType());
  SmallVector<unsigned> vocabAxes =
      logits.axesSharding(logits.global.getRank() - 1);
  for (unsigned axis : vocabAxes)
    if (result.get(axis) != Placement::partial(ReduceKind::Sum))
      return op.emitError()
             << "the vocab dim is sharded over mesh axis \""
             << meshOf(logits).getAxisName(axis)
             << "\" (loss parallel), so the loss is P(sum) there, but its "
                "placements say "
             << result.get(axis).str();
  // The result must be partial over the batch axes, all alike.
  std::optional<Placement> pending;
  for (int64_t dim = 0; dim < labels.global.getRank(); ++dim)
    for (unsigned axis : labels.axesSharding(dim)) {
      pending = pending.value_or(result.get(axis));
      if (result.get(axis) != *pending ||
          (*pending != Placement::partial(ReduceKind::Sum) &&
           *pending != Placement::partial(ReduceKind::Avg)))
        return op.emitError()
               << "averages over labels sharded over mesh axis \""
               << meshOf(result).getAxisName(axis)
               << "\", so its result is P(sum) or P(avg) there (the same on "
                  "every such axis), but its placements say "
               << result.get(axis).str();
    }
  TensorBuilder b(builder, op.getLoc());
  // The mean over the rank's rows (a partial sum over the vocab axes).
  Value mean;
  if (vocabAxes.empty()) {
    mean = cloneLocal(op)->getResult(0);
  } else {
    FailureOr<VocabRows> rows = buildVocabRows(
        op, op.getLogits(), op.getLabels(), op.getIgnoreIndex(), type);
    if (failed(rows))
      return failure();
    RankedTensorType expType = tensorTypeOf(rows->exp);
    Value logsumexp = b.binary<AddOp>(b.unary<LogOp>(rows->sumExp), rows->max);
    SmallVector<int64_t> rowShape(expType.getShape().drop_back());
    Value rowLogsumexp = b.reshape(logsumexp, rowShape);
    Value isFirst = indexEquals(
        b, axisIndex(b, logits.placements.getMesh(), vocabAxes), 0, rowShape);
    Value rowZeros = b.splatLike(rowLogsumexp, 0.0);
    Value ownLogsumexp = b.select(isFirst, rowLogsumexp, rowZeros);
    Value local = b.cast(mapping.lookupOrDefault(op.getLogits()), type);
    Value picked = b.select(rows->target, local, b.splatLike(local, 0.0));
    Value targetLogit = b.reduceSum(picked, {expType.getRank() - 1},
                                    /*keepdim=*/false);
    Value rowLoss = b.binary<SubOp>(ownLogsumexp, targetLogit);
    Value countedLoss = b.select(rows->counted, rowLoss, rowZeros);
    Value total = b.sumAll(countedLoss);
    Value count = b.sumAll(b.cast(rows->counted, type));
    mean = b.binary<DivOp>(total, count);
  }
  if (!pending)
    return mean;
  // The rank's mean weighted by its share of the counted labels; a rank
  // without counted labels contributes zero (its mean is NaN), and the
  // result is NaN when no rank counts any, as in PyTorch.
  LabelCounts counts =
      countLabels(op, op.getLabels(), op.getIgnoreIndex(), type);
  Value share = b.binary<DivOp>(counts.local, counts.total);
  Value weighted = b.binary<MulOp>(mean, share);
  if (pending->getReduce() == ReduceKind::Avg)
    weighted = b.scale(weighted, double(counts.groupSize));
  Value zero = b.splatLike(weighted, 0.0);
  Value hasLabels = b.compare("gt", counts.local, zero);
  Value noneAnywhere = b.compare("eq", counts.total, zero);
  Value always = b.splatLike(hasLabels, 1.0);
  Value keep = b.select(hasLabels, always, noneAnywhere);
  return b.select(keep, weighted, zero);
}

FailureOr<Value>
FunctionSpmdizer::buildShardedCrossEntropy(CrossEntropyGradOp op) {
  const Layout &logits = layouts.find(op.getLogits())->second;
  const Layout &labels = layouts.find(op.getLabels())->second;
  auto countType = cast<FloatType>(op.getGrad().getType().getElementType());
  TensorBuilder b(builder, op.getLoc());
  // The cotangent of the rank's rows, divided by their count.
  Value local;
  if (logits.axesSharding(logits.global.getRank() - 1).empty()) {
    local = cloneLocal(op)->getResult(0);
  } else {
    auto type = cast<FloatType>(op.getType().getElementType());
    FailureOr<VocabRows> rows = buildVocabRows(
        op, op.getLogits(), op.getLabels(), op.getIgnoreIndex(), type);
    if (failed(rows))
      return failure();
    RankedTensorType localType = tensorTypeOf(rows->exp);
    Value softmax = b.binary<DivOp>(
        rows->exp, b.broadcastTo(rows->sumExp, localType.getShape()));
    Value ones = b.splatLike(softmax, 1.0);
    Value zeros = b.splatLike(softmax, 0.0);
    Value oneHot = b.select(rows->target, ones, zeros);
    Value diff = b.binary<SubOp>(softmax, oneHot);
    Value count = b.sumAll(b.cast(rows->counted, countType));
    Value perRow =
        b.binary<DivOp>(mapping.lookupOrDefault(op.getGrad()), count);
    Value factor = b.broadcastTo(b.cast(perRow, type), localType.getShape());
    Value scaled = b.binary<MulOp>(diff, factor);
    local = b.select(expandRows(rows->counted, localType), scaled, zeros);
  }
  if (llvm::all_of(llvm::seq<int64_t>(0, labels.global.getRank()),
                   [&](int64_t d) { return labels.axesSharding(d).empty(); }))
    return local;
  // Rescale from the local count to the global count (a rank without
  // counted labels has a zero cotangent).
  LabelCounts counts =
      countLabels(op, op.getLabels(), op.getIgnoreIndex(), countType);
  Value zero = b.splatLike(counts.local, 0.0);
  Value hasLabels = b.compare("gt", counts.local, zero);
  Value ratio = b.binary<DivOp>(counts.local, counts.total);
  Value share = b.select(hasLabels, ratio, zero);
  RankedTensorType localType = tensorTypeOf(local);
  Value factor = b.broadcastTo(b.cast(share, localType.getElementType()),
                               localType.getShape());
  return b.binary<MulOp>(local, factor);
}

LogicalResult FunctionSpmdizer::checkLocal(Operation *op) {
  // The first mesh axis that shards dim `dim` of `value`, if any.
  auto shardingAxis = [&](Value value, int64_t dim) -> std::optional<unsigned> {
    SmallVector<unsigned> axes = layouts.find(value)->second.axesSharding(dim);
    if (axes.empty())
      return std::nullopt;
    return axes.front();
  };
  auto axisName = [&](Value value, unsigned axis) {
    return meshOf(layouts.find(value)->second).getAxisName(axis);
  };
  // Fails when a mesh axis shards dim `dim` of `value`, which `op` needs
  // whole; `why` says what the dim is to the op.
  auto needWhole = [&](Value value, int64_t dim,
                       StringRef why) -> LogicalResult {
    std::optional<unsigned> axis = shardingAxis(value, dim);
    if (!axis)
      return success();
    return op->emitError()
           << "'" << op->getName() << "' needs dim " << dim << " (" << why
           << ") whole on every rank, but mesh axis \""
           << axisName(value, *axis)
           << "\" shards it; redistribute the operand to replicate that dim "
              "first";
  };
  // Fails with "not supported yet" when a mesh axis shards dim `dim`.
  auto notYet = [&](Value value, int64_t dim, StringRef what) -> LogicalResult {
    std::optional<unsigned> axis = shardingAxis(value, dim);
    if (!axis)
      return success();
    return op->emitError() << what << " ('" << op->getName() << "' with dim "
                           << dim << " sharded over mesh axis \""
                           << axisName(value, *axis)
                           << "\") is not supported yet by titan-spmdize";
  };
  auto lastDim = [](Value value) { return tensorTypeOf(value).getRank() - 1; };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<SoftmaxOp, LogSoftmaxOp>([&](auto softmax) {
        return needWhole(softmax.getInput(), softmax.getDim(),
                         "the normalized dim");
      })
      .Case<RmsNormOp, LayerNormOp>([&](auto norm) {
        return needWhole(norm.getInput(), lastDim(norm.getInput()),
                         "the normalized dim");
      })
      .Case([&](RopeOp rope) {
        return needWhole(rope.getInput(), 3, "head_dim, rotated in pairs");
      })
      .Case([&](AttentionOp attention) {
        if (failed(notYet(attention.getQ(), 2, "context parallel attention")) ||
            failed(notYet(attention.getK(), 2, "context parallel attention")))
          return failure();
        return needWhole(attention.getQ(), 3, "head_dim");
      })
      .Case<RmsNormGradOp, LayerNormGradOp>([&](auto norm) -> LogicalResult {
        if (failed(needWhole(norm.getInput(), lastDim(norm.getInput()),
                             "the normalized dim")))
          return failure();
        // The parameter cotangents sum over the rows.
        const Layout &input = layouts.find(norm.getInput())->second;
        for (int64_t dim = 0; dim < lastDim(norm.getInput()); ++dim)
          for (unsigned axis : input.axesSharding(dim))
            for (OpResult result : llvm::drop_begin(op->getResults())) {
              Placement placement = layouts.find(result)->second.get(axis);
              if (placement != Placement::partial(ReduceKind::Sum))
                return op->emitError()
                       << "sums parameter cotangents over dim " << dim
                       << ", which mesh axis \""
                       << axisName(norm.getInput(), axis)
                       << "\" shards, so they are P(sum) there, but result #"
                       << result.getResultNumber() << " is " << placement.str();
            }
        return success();
      })
      .Case([&](AttentionGradOp attention) {
        if (failed(notYet(attention.getQ(), 2, "context parallel attention")) ||
            failed(notYet(attention.getK(), 2, "context parallel attention")))
          return failure();
        return needWhole(attention.getQ(), 3, "head_dim");
      })
      .Case([&](PadOp pad) {
        const Layout &input = layouts.find(pad.getInput())->second;
        const Layout &result = layouts.find(pad.getResult())->second;
        for (auto [dim, start, step] :
             llvm::enumerate(pad.getStart(), pad.getStep()))
          if (start != 0 || step != 1 ||
              input.global.getDimSize(dim) != result.global.getDimSize(dim))
            if (failed(notYet(pad.getInput(), dim, "padding a sharded dim")) ||
                failed(notYet(pad.getResult(), dim, "padding a sharded dim")))
              return failure();
        return success();
      })
      .Case([&](ConcatOp concat) {
        for (Value input : concat.getInputs())
          if (failed(notYet(input, concat.getDim(),
                            "concatenation along a "
                            "sharded dim")))
            return failure();
        return success();
      })
      .Case([&](SliceOp slice) {
        ArrayRef<int64_t> shape =
            layouts.find(slice.getInput())->second.global.getShape();
        for (auto [dim, start, limit, step] : llvm::enumerate(
                 slice.getStart(), slice.getLimit(), slice.getStep()))
          if (start != 0 || limit != shape[dim] || step != 1)
            if (failed(notYet(slice.getInput(), dim,
                              "a partial slice of a sharded dim")))
              return failure();
        return success();
      })
      .Case<ReduceSumOp, ReduceMaxOp, ReduceMeanOp>([&](auto reduce)
                                                        -> LogicalResult {
        const Layout &input = layouts.find(reduce.getInput())->second;
        const Layout &result = layouts.find(reduce.getResult())->second;
        Placement pending = Placement::partial(*getPendingReduction(op));
        // A mean may also be P(sum): the local mean over the ranks.
        bool isMean = isa<ReduceMeanOp>(op);
        for (int64_t dim : reduce.getDims())
          for (unsigned axis : input.axesSharding(dim)) {
            Placement placement = result.get(axis);
            if (placement != pending &&
                !(isMean && placement == Placement::partial(ReduceKind::Sum)))
              return op->emitError()
                     << "reduces dim " << dim << ", which mesh axis \""
                     << axisName(reduce.getInput(), axis)
                     << "\" shards, so the result is " << pending.str()
                     << (isMean ? " or P(sum)" : "")
                     << " there, but its placements say " << placement.str();
          }
        return success();
      })
      .Case([&](ReshapeOp reshape) -> LogicalResult {
        const Layout &in = layouts.find(reshape.getInput())->second;
        const Layout &out = layouts.find(reshape.getResult())->second;
        if (!in.placements && !out.placements)
          return success();
        const Layout &withMesh = in.placements ? in : out;
        const DeviceMesh &mesh = meshOf(withMesh);
        SmallVector<Placement> inList, outList;
        for (unsigned axis = 0; axis < mesh.getNumAxes(); ++axis) {
          inList.push_back(in.get(axis));
          outList.push_back(out.get(axis));
        }
        if (!in.global.hasStaticShape() || !out.global.hasStaticShape())
          return inList == outList &&
                         llvm::none_of(inList,
                                       [](Placement p) { return p.isShard(); })
                     ? success()
                     : op->emitError() << "a reshape of a dynamic shape "
                                          "with sharded dims is not "
                                          "supported yet by titan-spmdize";
        for (int64_t rank = 0; rank < mesh.getNumRanks(); ++rank) {
          SmallVector<int64_t> coordinate = mesh.getCoordinate(rank);
          auto runsOf = [&](const Layout &layout, ArrayRef<Placement> list) {
            return getShardRuns(layout.global.getShape(),
                                llvm::cantFail(computeLocalShapeAndGlobalOffset(
                                    layout.global.getShape(), mesh.getSizes(),
                                    list, coordinate)));
          };
          if (!(runsOf(in, inList) == runsOf(out, outList)))
            return op->emitError()
                   << "the shard of rank " << rank << " under " << in.placements
                   << " does not reshape into its shard "
                   << "under " << out.placements
                   << ": the reshape moves elements between ranks; "
                      "redistribute before or after it";
        }
        return success();
      })
      .Default([&](Operation *) -> LogicalResult {
        if (op->hasTrait<OpTrait::Elementwise>()) {
          const Layout &result = layouts.find(op->getResult(0))->second;
          for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
            const Layout &in = layouts.find(operand)->second;
            for (unsigned axis = 0,
                          e = std::max(in.getNumAxes(), result.getNumAxes());
                 axis < e; ++axis)
              if ((in.get(axis).isShard() || result.get(axis).isShard()) &&
                  in.get(axis) != result.get(axis))
                return op->emitError()
                       << "operand #" << index << " is " << in.get(axis).str()
                       << " on mesh axis #" << axis << " but the result is "
                       << result.get(axis).str()
                       << "; an elementwise op needs its operands and "
                          "result sharded alike";
          }
          return success();
        }
        if (isa<ConstantOp, IotaOp, MatmulOp, TransposeOp, BroadcastInDimOp,
                EmbeddingOp, EmbeddingGradOp, CrossEntropyOp,
                CrossEntropyGradOp>(op))
          return success();
        if (isa<AllGatherOp, ReduceScatterOp, AllReduceOp, AllToAllOp,
                BroadcastOp, SendOp, RecvOp, AxisIndexOp>(op))
          return op->emitError()
                 << "'" << op->getName()
                 << "' is an op of the local program; the global program "
                    "communicates through titan.redistribute only";
        // Any op computes locally on replicated and partial shards of its
        // whole shape; sharded operands need a rule the pass knows.
        for (Value value :
             llvm::concat<Value>(op->getOperands(), op->getResults())) {
          auto it = layouts.find(value);
          if (it == layouts.end() || !it->second.placements)
            continue;
          for (int64_t dim = 0; dim < it->second.global.getRank(); ++dim)
            if (failed(notYet(value, dim, "computing this op on shards")))
              return failure();
        }
        return success();
      });
}

FailureOr<Value> FunctionSpmdizer::buildSpecialOp(Operation *op) {
  // Whether a mesh axis shards dim `dim` of `value` (any dim when none).
  auto isSharded = [&](Value value, std::optional<int64_t> dim) {
    const Layout &layout = layouts.find(value)->second;
    if (dim)
      return !layout.axesSharding(*dim).empty();
    return llvm::any_of(
        llvm::seq<int64_t>(0, layout.global.getRank()),
        [&](int64_t d) { return !layout.axesSharding(d).empty(); });
  };
  return llvm::TypeSwitch<Operation *, FailureOr<Value>>(op)
      .Case([&](EmbeddingOp embedding) -> FailureOr<Value> {
        if (!isSharded(embedding.getTable(), 0))
          return Value();
        return buildShardedEmbedding(embedding);
      })
      .Case([&](EmbeddingGradOp grad) -> FailureOr<Value> {
        if (!isSharded(grad.getResult(), 0))
          return Value();
        return buildShardedEmbeddingGrad(grad);
      })
      .Case<CrossEntropyOp, CrossEntropyGradOp>([&](auto loss) {
        Value logits = loss.getLogits();
        if (!isSharded(loss.getLabels(), std::nullopt) &&
            !isSharded(logits, tensorTypeOf(logits).getRank() - 1))
          return FailureOr<Value>(Value());
        return buildShardedCrossEntropy(loss);
      })
      .Case([&](ReduceMeanOp mean) -> FailureOr<Value> {
        // A mean that is P(sum) over the axes sharding its reduced dims is
        // the local mean divided by their ranks.
        const Layout &input = layouts.find(mean.getInput())->second;
        const Layout &result = layouts.find(mean.getResult())->second;
        int64_t parts = 1;
        for (int64_t dim : mean.getDims())
          for (unsigned axis : input.axesSharding(dim))
            if (result.get(axis).isPartial() &&
                result.get(axis).getReduce() == ReduceKind::Sum)
              parts *= meshOf(input).getSize(axis);
        if (parts == 1)
          return Value();
        TensorBuilder b(builder, op->getLoc());
        return b.scale(cloneLocal(op)->getResult(0), 1.0 / double(parts));
      })
      .Default([](Operation *) -> FailureOr<Value> { return Value(); });
}

LogicalResult FunctionSpmdizer::rewriteOp(Operation *op) {
  builder.setInsertionPoint(op);
  if (auto redistribute = dyn_cast<RedistributeOp>(op)) {
    const Layout &in = layouts.find(redistribute.getInput())->second;
    PlacementsAttr to = redistribute.getTo();
    if (in.placements && in.placements.getMesh() != to.getMesh())
      return op->emitError()
             << "moves a value from mesh " << in.placements.getMesh()
             << " to mesh " << to.getMesh()
             << "; titan-spmdize redistributes within one "
                "mesh";
    SmallVector<Placement> from;
    for (unsigned axis = 0; axis < to.size(); ++axis)
      from.push_back(in.get(axis));
    FailureOr<Value> local =
        emitRedistribution(op, mapping.lookupOrDefault(redistribute.getInput()),
                           in.global, to.getMesh(), from, to.getPlacements());
    if (failed(local))
      return failure();
    mapping.map(redistribute.getResult(), *local);
    return success();
  }
  if (failed(checkLocal(op)))
    return failure();
  // Constants and iotas whose shard depends on the rank.
  if (isa<ConstantOp, IotaOp>(op)) {
    const Layout &layout = layouts.find(op->getResult(0))->second;
    auto constant = dyn_cast<ConstantOp>(op);
    bool splat = constant && isa<SplatElementsAttr>(constant.getValue());
    auto iota = dyn_cast<IotaOp>(op);
    // A splat is the same on every shard and an iota along an unsharded dim
    // restarts on every shard alike; a partial value is not.
    auto isPositional = [&](Placement p) {
      if (p.isPartial())
        return true;
      if (!p.isShard() || splat)
        return false;
      return !iota || p.getDim() == int64_t(iota.getDim());
    };
    bool positional =
        layout.placements &&
        llvm::any_of(layout.placements.getPlacements(), isPositional);
    if (positional) {
      FailureOr<Value> local = buildFromReplicated(op, layout);
      if (failed(local))
        return failure();
      mapping.map(op->getResult(0), *local);
      return success();
    }
    if (splat) {
      RankedTensorType type = localTypeOf(layout);
      mapping.map(
          op->getResult(0),
          ConstantOp::create(
              builder, op->getLoc(),
              cast<SplatElementsAttr>(constant.getValue()).resizeSplat(type)));
      return success();
    }
  }
  FailureOr<Value> special = buildSpecialOp(op);
  if (failed(special))
    return failure();
  if (*special) {
    mapping.map(op->getResult(0), *special);
    return success();
  }
  Operation *local = cloneLocal(op);
  // A full slice of a sharded dim covers the local dim.
  if (auto slice = dyn_cast<SliceOp>(local)) {
    SmallVector<int64_t> limit(slice.getLimit());
    for (auto [dim, size] : llvm::enumerate(slice.getType().getShape()))
      if (!layouts.find(op->getOperand(0))->second.axesSharding(dim).empty())
        limit[dim] = size;
    slice.setLimit(limit);
  }
  return success();
}

LogicalResult FunctionSpmdizer::run() {
  if (!llvm::hasSingleElement(function.getBody()))
    return function.emitError(
        "titan-spmdize handles functions of one block only");
  if (failed(collectLayouts()))
    return failure();
  Block &body = function.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [index, operand] : llvm::enumerate(ret.getOperands())) {
    const Layout &value = layouts.find(operand)->second;
    const Layout &declared = resultLayouts[index];
    if (!value.isSameLayout(declared))
      return ret.emitError()
             << "returns a value placed as "
             << (value.placements ? Attribute(value.placements)
                                  : Attribute(builder.getStringAttr("R")))
             << " as result #" << index << ", declared as "
             << (declared.placements ? Attribute(declared.placements)
                                     : Attribute(builder.getStringAttr("R")))
             << "; redistribute it before returning";
  }
  // Ops are rebuilt on the local arguments; the global ops, erased below,
  // are never looked at again.
  for (BlockArgument arg : body.getArguments())
    arg.setType(localTypeOf(layouts.find(arg)->second));
  SmallVector<Operation *> globalOps;
  for (Operation &op : body.without_terminator()) {
    if (failed(rewriteOp(&op)))
      return failure();
    globalOps.push_back(&op);
  }
  for (OpOperand &operand : ret->getOpOperands())
    operand.set(mapping.lookupOrDefault(operand.get()));
  for (Operation *op : llvm::reverse(globalOps))
    op->erase();
  function.setType(FunctionType::get(
      function.getContext(), body.getArgumentTypes(), ret.getOperandTypes()));
  return success();
}

namespace {
class SpmdizePass : public titan::impl::SpmdizePassBase<SpmdizePass> {
public:
  using SpmdizePassBase::SpmdizePassBase;

  void runOnOperation() override {
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (function.isExternal() || !hasPlacements(function))
        continue;
      if (failed(FunctionSpmdizer(function).run()))
        return signalPassFailure();
    }
  }

private:
  /// Whether `function` is a global program: one of its arguments, results
  /// or ops carries placements.
  static bool hasPlacements(func::FuncOp function) {
    StringRef name = TitanDialect::kPlacementsAttrName;
    for (unsigned i = 0; i < function.getNumArguments(); ++i)
      if (function.getArgAttr(i, name))
        return true;
    for (unsigned i = 0; i < function.getNumResults(); ++i)
      if (function.getResultAttr(i, name))
        return true;
    return function
        .walk([&](Operation *op) {
          return op->hasAttr(name) || isa<RedistributeOp>(op)
                     ? WalkResult::interrupt()
                     : WalkResult::advance();
        })
        .wasInterrupted();
  }
};
} // namespace
