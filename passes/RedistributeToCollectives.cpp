//===- RedistributeToCollectives.cpp - titan-redistribute-to-collectives --===//
//
// Replaces every titan.local_redistribute with the steps of the placement
// algebra's plan (see passes/Passes.td for the contract): one collective per
// mesh axis that moves data, static slices and selects on the rank's
// coordinate for the steps that stay local. Uneven shards (torch.chunk)
// travel padded: every rank's chunk is cut into or joined from equal padded
// pieces around the collective, so collectives always move equal buffers.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Partition.h"
#include "titan/Dialect/TensorBuilder.h"
#include "titan/Passes.h"

namespace mlir::titan {
#define GEN_PASS_DEF_REDISTRIBUTETOCOLLECTIVESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// How a step on one mesh axis cuts one dim: the chunk the outer axes leave
/// a rank (the parent) is cut into one piece per rank of the axis
/// (torch.chunk). When some parent chunk is short, its pieces may start
/// closer together than the padded piece size, so the pieces' offsets
/// depend on the outer coordinate: one pattern per distinct layout.
struct DimSplit {
  /// The axes that shard the dim outside the step's axis.
  SmallVector<unsigned> outerAxes;
  /// The local size of the parent and of a piece (both padded).
  int64_t parentSize = 0, pieceSize = 0;
  /// The distinct layouts of the pieces in the parent, and by outer
  /// coordinate (row-major over `outerAxes`) which one a rank has.
  SmallVector<SmallVector<ChunkExtent>> patterns;
  SmallVector<int64_t> patternOf;

  /// Whether every non-empty piece starts at its index times `pieceSize`,
  /// so that the pieces are the parent cut into equal padded parts.
  bool isStrided() const {
    return llvm::all_of(patterns, [&](ArrayRef<ChunkExtent> pieces) {
      return llvm::all_of(llvm::enumerate(pieces), [&](auto entry) {
        return entry.value().size == 0 ||
               entry.value().offset == int64_t(entry.index()) * pieceSize;
      });
    });
  }
};

/// Emits the steps of one local redistribute before it.
class StepEmitter {
public:
  StepEmitter(LocalRedistributeOp op, const DeviceMesh &mesh)
      : op(op), mesh(mesh), global(cast<RankedTensorType>(op.getGlobal())),
        builder(op), b(builder, op.getLoc()) {}

  /// The local value after the plan's steps, or failure with an error.
  FailureOr<Value> emit();

private:
  /// The rank's coordinate on mesh axis `axis` as a 0-d i64 tensor.
  Value axisIndex(unsigned axis) {
    return AxisIndexOp::create(
        builder, op.getLoc(), RankedTensorType::get({}, builder.getI64Type()),
        op.getTo().getMesh(),
        builder.getStrArrayAttr({mesh.getAxisName(axis)}));
  }
  /// How mesh axis `axis` cuts dim `dim` under `sharded` (which has `axis`
  /// shard `dim`, inside every other axis that does).
  DimSplit getSplit(ArrayRef<Placement> sharded, unsigned axis, int64_t dim);
  /// `build(pattern)` for the rank's pattern of `split`: a chain of selects
  /// on the outer coordinate when there are several.
  Value selectPattern(const DimSplit &split, ArrayRef<int64_t> shape,
                      function_ref<Value(ArrayRef<ChunkExtent>)> build);
  /// The parent chunk (padded) from the concatenated padded pieces `pieces`
  /// along `dim` (after an all_gather or all_to_all).
  Value joinPieces(Value pieces, const DimSplit &split, int64_t dim);
  /// The parent chunk `parent` laid out as equal padded pieces along `dim`
  /// (before a reduce_scatter or all_to_all).
  Value spreadPieces(Value parent, const DimSplit &split, int64_t dim);
  /// The rank's piece of `parent` along `dim` on `axis`.
  Value takePiece(Value parent, const DimSplit &split, unsigned axis,
                  int64_t dim);

  LocalRedistributeOp op;
  const DeviceMesh &mesh;
  RankedTensorType global;
  OpBuilder builder;
  TensorBuilder b;
};

} // namespace

DimSplit StepEmitter::getSplit(ArrayRef<Placement> sharded, unsigned axis,
                               int64_t dim) {
  SmallVector<Placement> parent(sharded);
  parent[axis] = Placement::replicate();
  ArrayRef<int64_t> shape = global.getShape();
  DimChunks outer = getDimChunks(shape, mesh, parent, dim);
  DimSplit split;
  split.outerAxes = outer.axes;
  split.parentSize = outer.padded;
  split.pieceSize = getDimChunks(shape, mesh, sharded, dim).padded;
  int64_t ways = mesh.getSize(axis);
  for (int64_t size : outer.sizes) {
    SmallVector<ChunkExtent> pieces;
    for (int64_t k = 0; k < ways; ++k)
      pieces.push_back(getChunkExtent(size, ways, k));
    auto same = [&](ArrayRef<ChunkExtent> other) {
      return llvm::equal(other, pieces, [](ChunkExtent x, ChunkExtent y) {
        return x.offset == y.offset && x.size == y.size;
      });
    };
    auto it = llvm::find_if(split.patterns, same);
    split.patternOf.push_back(it - split.patterns.begin());
    if (it == split.patterns.end())
      split.patterns.push_back(std::move(pieces));
  }
  return split;
}

Value StepEmitter::selectPattern(
    const DimSplit &split, ArrayRef<int64_t> shape,
    function_ref<Value(ArrayRef<ChunkExtent>)> build) {
  Value result = build(split.patterns.back());
  if (split.patterns.size() == 1)
    return result;
  Value pattern =
      buildRankTableLookup(builder, op.getLoc(), op.getTo().getMesh(), mesh,
                           split.outerAxes, split.patternOf);
  for (int64_t p = int64_t(split.patterns.size()) - 2; p >= 0; --p)
    result = b.select(b.indexEquals(pattern, p, shape),
                      build(split.patterns[p]), result);
  return result;
}

Value StepEmitter::joinPieces(Value pieces, const DimSplit &split,
                              int64_t dim) {
  if (split.isStrided())
    return tensorTypeOf(pieces).getDimSize(dim) == split.parentSize
               ? pieces
               : b.slice(pieces, dim, 0, split.parentSize, 1);
  SmallVector<int64_t> shape(tensorTypeOf(pieces).getShape());
  shape[dim] = split.parentSize;
  return selectPattern(split, shape, [&](ArrayRef<ChunkExtent> layout) {
    SmallVector<Value> parts;
    for (auto [k, piece] : llvm::enumerate(layout))
      if (piece.size > 0)
        parts.push_back(b.slice(pieces, dim, k * split.pieceSize,
                                k * split.pieceSize + piece.size, 1));
    if (parts.empty())
      return b.splat(tensorTypeOf(pieces).clone(shape), 0.0);
    return b.padTo(b.concat(parts, dim), dim, split.parentSize);
  });
}

Value StepEmitter::spreadPieces(Value parent, const DimSplit &split,
                                int64_t dim) {
  int64_t total = split.pieceSize * int64_t(split.patterns.front().size());
  if (split.isStrided())
    return b.padTo(parent, dim, total);
  SmallVector<int64_t> shape(tensorTypeOf(parent).getShape());
  shape[dim] = total;
  return selectPattern(split, shape, [&](ArrayRef<ChunkExtent> layout) {
    SmallVector<Value> parts;
    for (ChunkExtent piece : layout) {
      SmallVector<int64_t> pieceShape(shape);
      pieceShape[dim] = split.pieceSize;
      parts.push_back(piece.size == 0
                          ? b.splat(tensorTypeOf(parent).clone(pieceShape), 0.0)
                          : b.padTo(b.slice(parent, dim, piece.offset,
                                            piece.offset + piece.size, 1),
                                    dim, split.pieceSize));
    }
    return b.concat(parts, dim);
  });
}

Value StepEmitter::takePiece(Value parent, const DimSplit &split, unsigned axis,
                             int64_t dim) {
  // Every piece is read as `pieceSize` elements from its offset (the rest
  // is padding), so the parent is first padded to hold the last of them.
  int64_t reach = split.parentSize;
  for (ArrayRef<ChunkExtent> layout : split.patterns)
    for (ChunkExtent piece : layout)
      reach = std::max(reach, piece.offset + split.pieceSize);
  Value padded = b.padTo(parent, dim, reach);
  SmallVector<int64_t> shape(tensorTypeOf(parent).getShape());
  shape[dim] = split.pieceSize;
  Value index = axisIndex(axis);
  // Piece k of the rank's pattern, chosen by the coordinate on `axis`: a
  // chain of selects, exact for every element type.
  return selectPattern(split, shape, [&](ArrayRef<ChunkExtent> layout) {
    auto pieceAt = [&](int64_t k) {
      int64_t offset = std::min(layout[k].offset, reach - split.pieceSize);
      return b.slice(padded, dim, offset, offset + split.pieceSize, 1);
    };
    int64_t last = int64_t(layout.size()) - 1;
    Value piece = pieceAt(last);
    for (int64_t k = last - 1; k >= 0; --k)
      piece = b.select(b.indexEquals(index, k, shape), pieceAt(k), piece);
    return piece;
  });
}

FailureOr<Value> StepEmitter::emit() {
  llvm::Expected<std::vector<RedistributeStep>> steps = planRedistribution(
      getStaticShape(global.getShape()), mesh.getSizes(),
      op.getFrom().getPlacements(), op.getTo().getPlacements());
  if (!steps)
    return op.emitError() << llvm::toString(steps.takeError());
  MLIRContext *context = builder.getContext();
  Location loc = op.getLoc();
  StringRef meshName = op.getTo().getMesh().getValue();
  Value local = op.getInput();
  for (const RedistributeStep &step : *steps) {
    RankedTensorType type = getLocalType(global, mesh, step.after);
    unsigned axis = step.meshAxis;
    int64_t ways = mesh.getSize(axis);
    ArrayAttr axes = builder.getStrArrayAttr({mesh.getAxisName(axis)});
    auto reduce = [&] { return ReduceKindAttr::get(context, *step.reduce); };
    // The type of `like` with dim `dim` of size `size`.
    auto withDim = [](RankedTensorType like, int64_t dim, int64_t size) {
      SmallVector<int64_t> shape(like.getShape());
      shape[dim] = size;
      return like.clone(shape);
    };
    // Uneven chunks travel as equal padded pieces: the senders spread
    // their parent chunk into them, the receivers join them back.
    switch (step.kind) {
    case StepKind::AllGather: {
      int64_t dim = *step.unshardDim;
      DimSplit split = getSplit(step.before, axis, dim);
      Value pieces = AllGatherOp::create(
          builder, loc,
          withDim(tensorTypeOf(local), dim, ways * split.pieceSize), local,
          meshName, axes, dim);
      local = joinPieces(pieces, split, dim);
      break;
    }
    case StepKind::AllReduce:
      local = AllReduceOp::create(builder, loc, type, local, meshName, axes,
                                  reduce());
      break;
    case StepKind::ReduceScatter: {
      if (!isa<FloatType>(type.getElementType()))
        return op.emitError()
               << "cannot reduce-scatter a partial " << global
               << ": titan.reduce_scatter takes floating-point tensors";
      int64_t dim = *step.shardDim;
      Value spread = spreadPieces(local, getSplit(step.after, axis, dim), dim);
      local = ReduceScatterOp::create(builder, loc, type, spread, meshName,
                                      axes, dim, reduce());
      break;
    }
    case StepKind::AllToAll: {
      int64_t splitDim = *step.shardDim, concatDim = *step.unshardDim;
      Value spread =
          spreadPieces(local, getSplit(step.after, axis, splitDim), splitDim);
      DimSplit joined = getSplit(step.before, axis, concatDim);
      RankedTensorType spreadType = tensorTypeOf(spread);
      RankedTensorType exchanged = withDim(
          withDim(spreadType, splitDim, spreadType.getDimSize(splitDim) / ways),
          concatDim, ways * joined.pieceSize);
      Value pieces = AllToAllOp::create(builder, loc, exchanged, spread,
                                        meshName, axes, splitDim, concatDim);
      local = joinPieces(pieces, joined, concatDim);
      break;
    }
    case StepKind::LocalChunk: {
      int64_t dim = *step.shardDim;
      local = takePiece(local, getSplit(step.after, axis, dim), axis, dim);
      break;
    }
    case StepKind::Partition:
      // Sum: coordinate 0 keeps the value, the others hold zero; the other
      // reductions keep it on every rank.
      if (*step.reduce == ReduceKind::Sum) {
        Value isFirst = b.indexEquals(axisIndex(axis), 0, type.getShape());
        Value zeros = b.splat(type, 0.0);
        local = b.select(isFirst, local, zeros);
      }
      break;
    }
    if (tensorTypeOf(local) != type)
      return op.emitError() << "internal error: a step of the redistribution "
                               "of "
                            << global << " gives " << local.getType()
                            << " where " << type << " is expected";
  }
  return local;
}

namespace {
class RedistributeToCollectivesPass
    : public titan::impl::RedistributeToCollectivesPassBase<
          RedistributeToCollectivesPass> {
public:
  using RedistributeToCollectivesPassBase::RedistributeToCollectivesPassBase;

  void runOnOperation() override {
    llvm::StringMap<DeviceMesh> meshes;
    WalkResult result =
        getOperation().walk([&](LocalRedistributeOp op) -> WalkResult {
          FlatSymbolRefAttr symbol = op.getTo().getMesh();
          auto it = meshes.find(symbol.getValue());
          if (it == meshes.end()) {
            // The verifier found the mesh.
            FailureOr<DeviceMesh> mesh =
                MeshOp::lookup(op, symbol).getDeviceMesh();
            if (failed(mesh))
              return WalkResult::interrupt();
            it = meshes.try_emplace(symbol.getValue(), std::move(*mesh)).first;
          }
          Operation *before = op->getPrevNode();
          FailureOr<Value> local = StepEmitter(op, it->second).emit();
          if (failed(local))
            return WalkResult::interrupt();
          // A microbatch's copy stays apart from the other microbatches'.
          if (Attribute microbatch =
                  op->getAttr(TitanDialect::kMicrobatchAttrName))
            for (Operation *emitted = before ? before->getNextNode()
                                             : &op->getBlock()->front();
                 emitted != op; emitted = emitted->getNextNode())
              if (isa<CollectiveOpInterface>(emitted))
                emitted->setAttr(TitanDialect::kMicrobatchAttrName, microbatch);
          op.replaceAllUsesWith(*local);
          op.erase();
          return WalkResult::advance();
        });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
