//===- DecomposeCollectiveMatmul.cpp - async tensor parallelism -----------===//
//
// Implements titan-decompose-collective-matmul (see passes/Passes.td for the
// contract): an all-gather feeding matmuls, and matmuls feeding a
// reduce-scatter, become chunks whose collectives run on the communication
// thread while the neighbouring chunks' matmuls compute.
//
// Chunk j of a collective over n ranks along dim d, whose per-rank block
// has s rows there, holds rows [j s/k, (j+1) s/k) of every rank's block: an
// all-gather of chunk j of each rank's shard yields exactly those rows of
// the gathered tensor, and a reduce-scatter of those rows of the full
// operand yields chunk j of the rank's result. Matmuls map rows of their
// left operand to rows of their result, so each chunk's rows are computed
// from the same rows of the left operand.
//
//===----------------------------------------------------------------------===//

#include "titan/CostModel/CollectiveTime.h"
#include "titan/CostModel/OpTime.h"
#include "titan/Dialect/TensorBuilder.h"
#include "titan/Dialect/TitanDialect.h"
#include "titan/Passes.h"

#include "Computation.h"
#include "NormalizeCollectives.h"
#include "PassDevice.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::titan {
#define GEN_PASS_DEF_DECOMPOSECOLLECTIVEMATMULPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// How one collective is cut: along `dim`, over a group of `groupSize`
/// ranks, into `chunks` chunks of every rank's block of `blockRows` rows.
struct Chunking {
  int64_t dim = 0;
  int64_t groupSize = 1;
  int64_t blockRows = 0;
  int64_t chunks = 1;
};

/// Rows [chunk x rows, (chunk + 1) x rows) of every one of the n blocks of
/// `value` along dim `dim`, in block order, rows = blockRows / chunks.
Value selectChunk(TensorBuilder &b, Value value, const Chunking &chunking,
                  int64_t chunk) {
  ArrayRef<int64_t> shape = tensorTypeOf(value).getShape();
  int64_t n = chunking.groupSize, dim = chunking.dim;
  int64_t rows = chunking.blockRows / chunking.chunks;
  if (n == 1)
    return b.slice(value, dim, chunk * rows, (chunk + 1) * rows, /*step=*/1);
  // [..., n x blockRows, ...] viewed as [..., n, blockRows, ...].
  Value blocks = b.reshape(value, getSplitShape(shape, dim, n));
  Value slice =
      b.slice(blocks, dim + 1, chunk * rows, (chunk + 1) * rows, /*step=*/1);
  return b.reshape(slice, getShapeWithDim(shape, dim, n * rows));
}

/// The inverse of selectChunk: the tensor whose chunks are `parts`.
Value joinChunks(TensorBuilder &b, ArrayRef<Value> parts,
                 const Chunking &chunking) {
  ArrayRef<int64_t> partShape = tensorTypeOf(parts.front()).getShape();
  int64_t n = chunking.groupSize, dim = chunking.dim;
  if (n == 1)
    return b.concat(parts, dim);
  SmallVector<Value> blocks;
  for (Value part : parts)
    blocks.push_back(b.reshape(part, getSplitShape(partShape, dim, n)));
  return b.reshape(b.concat(blocks, dim + 1),
                   getShapeWithDim(partShape, dim, n * chunking.blockRows));
}

/// Erases `value`'s op and the ops computing its operands that nothing
/// else reads, down to (not including) `stop`.
void eraseChain(Value value, Value stop) {
  SmallVector<Operation *> worklist = {value.getDefiningOp()};
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (!op || !op->use_empty())
      continue;
    SmallVector<Value> operands(op->getOperands());
    op->erase();
    for (Value operand : operands)
      if (operand != stop)
        worklist.push_back(operand.getDefiningOp());
  }
}

/// Whether `matmul` computes row i of its result along `dim` from row i of
/// its left operand only (and reads its right operand whole).
bool isRowwiseMatmul(MatmulOp matmul, int64_t dim) {
  auto lhs = cast<RankedTensorType>(matmul.getLhs().getType());
  auto rhs = cast<RankedTensorType>(matmul.getRhs().getType());
  int64_t rank = lhs.getRank();
  if (matmul.getTransposeLhs() || matmul.getAddend() || rank < 2 ||
      dim >= rank - 1)
    return false;
  // A batch dim of a batched right operand would have to be cut too.
  return dim == rank - 2 || rhs.getRank() == 2;
}

/// Whether `op` computes its result elementwise from operands of the
/// result's shape.
bool isRowwiseElementwise(Operation *op) {
  if (!op->hasTrait<OpTrait::Elementwise>() || op->getNumResults() != 1 ||
      op->getNumRegions() != 0 || !isPure(op))
    return false;
  auto shape = cast<ShapedType>(op->getResult(0).getType()).getShape();
  return llvm::all_of(op->getOperandTypes(), [&](Type type) {
    auto shaped = dyn_cast<RankedTensorType>(type);
    return shaped && shaped.getShape() == shape;
  });
}

/// Whether every reader of `value` computes rows along `dim` from its rows
/// (elementwise ops, matmuls reading it as their left operand): a
/// decomposed reduce-scatter whose operand they compute reads its chunks,
/// never the joined tensor.
bool isReadRowwise(Value value, int64_t dim) {
  return llvm::all_of(value.getUsers(), [&](Operation *user) {
    auto matmul = dyn_cast<MatmulOp>(user);
    if (matmul)
      return matmul.getLhs() == value && matmul.getRhs() != value &&
             isRowwiseMatmul(matmul, dim);
    return isRowwiseElementwise(user);
  });
}

/// A decomposition of one collective, before it is applied.
struct Candidate {
  LogicalCollective collective;
  Chunking chunking;
  /// all_gather: the matmuls that read the gathered tensor as their left
  /// operand and are computed chunk by chunk. reduce_scatter: the ops
  /// computing its operand (the cone), in program order.
  SmallVector<Operation *> computed;
  /// reduce_scatter: the values the cone reads that are cut into chunks.
  llvm::SetVector<Value> leaves;
  /// all_gather: whether some reader needs the whole gathered tensor.
  bool needsWhole = false;
};

/// The first op of the block that reads `value`.
Operation *getFirstUser(Value value) {
  Operation *first = nullptr;
  for (Operation *user : value.getUsers())
    if (!first || user->isBeforeInBlock(first))
      first = user;
  return first;
}

class DecomposeCollectiveMatmulPass
    : public titan::impl::DecomposeCollectiveMatmulPassBase<
          DecomposeCollectiveMatmulPass> {
public:
  using Base::Base;

  void runOnOperation() override;

private:
  /// The decomposition of `gather`, if it feeds some matmul row by row.
  std::optional<Candidate> matchAllGather(const LogicalCollective &gather,
                                          DominanceInfo &dominance);
  /// The decomposition of `scatter`, if its operand is computed row by row
  /// by ops that include a matmul.
  std::optional<Candidate> matchReduceScatter(const LogicalCollective &scatter);
  /// The number of chunks for `candidate` (1: leave it whole): the `chunks`
  /// option, or the count the cost model predicts fastest.
  int64_t chooseChunks(const Candidate &candidate, MeshOp mesh,
                       const DeviceDescription *device);
  /// Replaces the all-gather of `candidate` by its chunks' asynchronous
  /// all-gathers and computes its matmuls chunk by chunk.
  void applyAllGather(const Candidate &candidate);
  /// Computes the cone of `candidate` chunk by chunk, each chunk
  /// reduce-scattered asynchronously as soon as it is computed.
  void applyReduceScatter(const Candidate &candidate);
  /// The chunks `value` was joined from under `chunking`, if this pass
  /// joined it so (a matmul of a decomposed all-gather).
  ArrayRef<Value> getJoinedChunks(Value value, const Chunking &chunking) const;

  /// The values applyAllGather joined from chunks, with their chunks: a
  /// reduce-scatter cut the same way computes from the chunks themselves.
  DenseMap<Value, std::pair<Chunking, SmallVector<Value>>> joined;
};

ArrayRef<Value>
DecomposeCollectiveMatmulPass::getJoinedChunks(Value value,
                                               const Chunking &chunking) const {
  auto it = joined.find(value);
  if (it == joined.end())
    return {};
  const Chunking &other = it->second.first;
  if (other.dim != chunking.dim || other.groupSize != chunking.groupSize ||
      other.blockRows != chunking.blockRows || other.chunks != chunking.chunks)
    return {};
  return it->second.second;
}

std::optional<Candidate>
DecomposeCollectiveMatmulPass::matchAllGather(const LogicalCollective &gather,
                                              DominanceInfo &dominance) {
  Candidate candidate;
  candidate.collective = gather;
  candidate.chunking.dim = gather.dim;
  // Something computing between the gather and its first reader already
  // hides it (titan-schedule-overlap).
  Operation *first = getFirstUser(gather.output);
  if (!first || computesBetween(gather.collective, first))
    return std::nullopt;
  for (Operation *user : gather.output.getUsers()) {
    auto matmul = dyn_cast<MatmulOp>(user);
    // Computed where the first reader stands: its right operand must be
    // there by then.
    if (matmul && matmul.getLhs() == gather.output &&
        matmul.getRhs() != gather.output &&
        isRowwiseMatmul(matmul, gather.dim) &&
        dominance.properlyDominates(matmul.getRhs(), first))
      candidate.computed.push_back(matmul);
    else
      candidate.needsWhole = true;
  }
  if (candidate.computed.empty())
    return std::nullopt;
  llvm::sort(candidate.computed,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return candidate;
}

std::optional<Candidate> DecomposeCollectiveMatmulPass::matchReduceScatter(
    const LogicalCollective &scatter) {
  Candidate candidate;
  candidate.collective = scatter;
  candidate.chunking.dim = scatter.dim;
  // The cone: ops read only by the cone (or the reduce-scatter), in the
  // same block, computing rows from rows.
  Block *block = scatter.collective->getBlock();
  llvm::SetVector<Operation *> cone;
  SmallVector<Value> worklist = {scatter.input};
  bool hasMatmul = false;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    Operation *op = value.getDefiningOp();
    bool inCone = op && op->getBlock() == block && value.hasOneUse() &&
                  op->getNumResults() == 1;
    auto matmul = dyn_cast_or_null<MatmulOp>(op);
    if (inCone && matmul && isRowwiseMatmul(matmul, scatter.dim)) {
      cone.insert(op);
      hasMatmul = true;
      worklist.push_back(matmul.getLhs());
    } else if (inCone && isRowwiseElementwise(op)) {
      cone.insert(op);
      llvm::append_range(worklist, op->getOperands());
    } else {
      candidate.leaves.insert(value);
    }
  }
  if (!hasMatmul)
    return std::nullopt;
  candidate.computed.assign(cone.begin(), cone.end());
  llvm::sort(candidate.computed,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  // Something computing between the cone and the first reader of the
  // result already hides it (titan-schedule-overlap).
  if (computesBetween(candidate.computed.back(), getFirstUser(scatter.output)))
    return std::nullopt;
  return candidate;
}

int64_t DecomposeCollectiveMatmulPass::chooseChunks(
    const Candidate &candidate, MeshOp mesh, const DeviceDescription *device) {
  const Chunking &chunking = candidate.chunking;
  auto divides = [&](int64_t k) { return chunking.blockRows % k == 0; };
  if (chunks > 0)
    return divides(chunks) ? int64_t(chunks) : 1;
  // A pipeline of k chunks: the first collective (all-gather) or the last
  // (reduce-scatter) is exposed, the rest run behind the other chunks'
  // matmuls; cutting and joining costs copies (not a matmul result read
  // row by row: a decomposed reduce-scatter reads its chunks).
  auto collective =
      cast<CollectiveOpInterface>(candidate.collective.collective);
  CollectiveTime whole = predictCollectiveTime(
      collective, mesh, *device,
      ranksPerNode ? int64_t(ranksPerNode) : device->ranksPerNode);
  double compute = 0;
  for (Operation *op : candidate.computed)
    compute += predictOpSeconds(*device, op).value_or(0);
  // The bytes cutting and joining copies with k chunks; a leaf joined
  // from k chunks by a decomposed all-gather is not cut again.
  auto copiedBytes = [&](int64_t k) {
    const LogicalCollective &logical = candidate.collective;
    if (isa<AllGatherOp>(collective)) {
      int64_t bytes = getStaticByteSize(logical.input.getType());
      for (Operation *matmul : candidate.computed)
        if (!isReadRowwise(matmul->getResult(0), chunking.dim))
          bytes += getStaticByteSize(matmul->getResult(0).getType());
      if (candidate.needsWhole)
        bytes += getStaticByteSize(logical.output.getType());
      return bytes;
    }
    Chunking cut = chunking;
    cut.chunks = k;
    int64_t bytes = getStaticByteSize(logical.output.getType());
    for (Value leaf : candidate.leaves)
      if (getJoinedChunks(leaf, cut).empty())
        bytes += getStaticByteSize(leaf.getType());
    return bytes;
  };
  double best = whole.seconds + compute;
  int64_t bestChunks = 1;
  for (int64_t k = 2; k <= maxChunks; ++k) {
    if (!divides(k))
      continue;
    double chunkCompute = 0;
    for (Operation *computed : candidate.computed)
      chunkCompute += predictOpSeconds(*device, computed, 1.0 / k).value_or(0);
    double chunkCollective = predictCollectiveSeconds(
        *whole.link, collective.getCollectiveKind(), collective.getGroupSize(),
        collective.getBytesSentPerRank() / k);
    double seconds = chunkCollective + chunkCompute +
                     (k - 1) * std::max(chunkCollective, chunkCompute) +
                     predictCopySeconds(*device, double(copiedBytes(k)));
    if (seconds < best) {
      best = seconds;
      bestChunks = k;
    }
  }
  return bestChunks;
}

/// A copy of `collective` (an all_gather or reduce_scatter on dim `dim`,
/// normalized or not) on `input` along `dim`, asynchronous, with result
/// type `type`.
Operation *createChunkCollective(OpBuilder &builder, Operation *collective,
                                 Value input, int64_t dim,
                                 RankedTensorType type) {
  Location loc = collective->getLoc();
  Operation *chunk;
  if (auto gather = dyn_cast<AllGatherOp>(collective))
    chunk = AllGatherOp::create(builder, loc, type, input, gather.getMeshAttr(),
                                gather.getAxesAttr(),
                                builder.getI64IntegerAttr(dim));
  else {
    auto scatter = cast<ReduceScatterOp>(collective);
    chunk = ReduceScatterOp::create(
        builder, loc, type, input, scatter.getMeshAttr(), scatter.getAxesAttr(),
        builder.getI64IntegerAttr(dim), scatter.getReduceAttr());
  }
  chunk->setAttr(TitanDialect::kAsyncAttrName, builder.getUnitAttr());
  return chunk;
}

void DecomposeCollectiveMatmulPass::applyAllGather(const Candidate &candidate) {
  const LogicalCollective &gather = candidate.collective;
  const Chunking &chunking = candidate.chunking;
  Location loc = gather.collective->getLoc();
  ArrayRef<int64_t> gatheredShape = tensorTypeOf(gather.output).getShape();
  int64_t chunkRows = chunking.groupSize * chunking.blockRows / chunking.chunks;
  auto chunkType =
      tensorTypeOf(gather.output)
          .clone(getShapeWithDim(gatheredShape, chunking.dim, chunkRows));
  // Every chunk's all-gather, issued where the whole one was.
  OpBuilder builder(gather.collective);
  TensorBuilder b(builder, loc);
  Chunking shard = chunking;
  shard.groupSize = 1;
  SmallVector<Operation *> started;
  for (int64_t j = 0; j < chunking.chunks; ++j)
    started.push_back(createChunkCollective(
        builder, gather.collective, selectChunk(b, gather.input, shard, j),
        chunking.dim, chunkType));
  // Where the gathered tensor is first read: wait for each chunk, then
  // compute its rows of every matmul.
  builder.setInsertionPoint(getFirstUser(gather.output));
  SmallVector<Value> arrived;
  DenseMap<Operation *, SmallVector<Value>> rowsOf;
  for (Operation *chunk : started) {
    Value waited = WaitOp::create(builder, loc, chunk->getResult(0));
    arrived.push_back(waited);
    for (Operation *op : candidate.computed) {
      IRMapping mapping;
      mapping.map(gather.output, waited);
      Operation *part = builder.clone(*op, mapping);
      auto type = tensorTypeOf(op->getResult(0));
      part->getResult(0).setType(type.clone(
          getShapeWithDim(type.getShape(), chunking.dim, chunkRows)));
      rowsOf[op].push_back(part->getResult(0));
    }
  }
  if (candidate.needsWhole) {
    Value whole = joinChunks(b, arrived, chunking);
    Value(gather.output).replaceAllUsesWith(whole);
    joined[whole] = {chunking, arrived};
  }
  for (Operation *op : candidate.computed) {
    builder.setInsertionPoint(op);
    TensorBuilder at(builder, op->getLoc());
    Value whole = joinChunks(at, rowsOf[op], chunking);
    op->getResult(0).replaceAllUsesWith(whole);
    joined[whole] = {chunking, rowsOf[op]};
    op->erase();
  }
  eraseChain(gather.output, gather.input);
  // Onto contiguous chunks, as the runtime's collectives move them.
  for (Operation *chunk : started)
    normalizeCollective(chunk);
}

void DecomposeCollectiveMatmulPass::applyReduceScatter(
    const Candidate &candidate) {
  const LogicalCollective &scatter = candidate.collective;
  const Chunking &chunking = candidate.chunking;
  Location loc = scatter.collective->getLoc();
  Operation *root = candidate.computed.back();
  int64_t rows = chunking.groupSize * chunking.blockRows / chunking.chunks;
  ArrayRef<int64_t> scatteredShape = tensorTypeOf(scatter.output).getShape();
  auto chunkType =
      tensorTypeOf(scatter.output)
          .clone(getShapeWithDim(scatteredShape, chunking.dim,
                                 chunking.blockRows / chunking.chunks));
  // Each chunk's rows of the cone, then its reduce-scatter, where the
  // cone's last op stands.
  OpBuilder builder(root);
  TensorBuilder b(builder, loc);
  SmallVector<Operation *> started;
  for (int64_t j = 0; j < chunking.chunks; ++j) {
    IRMapping mapping;
    for (Value leaf : candidate.leaves) {
      ArrayRef<Value> parts = getJoinedChunks(leaf, chunking);
      mapping.map(leaf,
                  parts.empty() ? selectChunk(b, leaf, chunking, j) : parts[j]);
    }
    for (Operation *op : candidate.computed) {
      Operation *part = builder.clone(*op, mapping);
      auto type = tensorTypeOf(op->getResult(0));
      part->getResult(0).setType(
          type.clone(getShapeWithDim(type.getShape(), chunking.dim, rows)));
    }
    started.push_back(createChunkCollective(builder, scatter.collective,
                                            mapping.lookup(root->getResult(0)),
                                            chunking.dim, chunkType));
  }
  // Waited for where the whole result is first read.
  builder.setInsertionPoint(getFirstUser(scatter.output));
  SmallVector<Value> arrived;
  for (Operation *chunk : started)
    arrived.push_back(WaitOp::create(builder, loc, chunk->getResult(0)));
  Chunking local = chunking;
  local.groupSize = 1;
  Value(scatter.output).replaceAllUsesWith(joinChunks(b, arrived, local));
  eraseChain(scatter.output, scatter.input);
  for (Operation *op : llvm::reverse(candidate.computed))
    op->erase();
  // Joins nothing reads any more (the cone read their chunks).
  for (Value leaf : candidate.leaves)
    if (joined.erase(leaf) && leaf.use_empty())
      eraseChain(leaf, Value());
  for (Operation *chunk : started)
    normalizeCollective(chunk);
}

void DecomposeCollectiveMatmulPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!step || step.isExternal())
    return;
  if (maxChunks < 1) {
    emitError(step.getLoc())
        << "titan-decompose-collective-matmul: max-chunks = "
        << int64_t(maxChunks) << " must be at least 1";
    return signalPassFailure();
  }
  for (MeshOp mesh : module.getOps<MeshOp>()) {
    if (llvm::is_contained(mesh.getAxisNames(),
                           StringAttr::get(&getContext(), axis)))
      continue;
    std::string names;
    for (StringAttr name : mesh.getAxisNames().getAsRange<StringAttr>())
      names += (names.empty() ? "" : ", ") + name.getValue().str();
    mesh.emitError() << "titan-decompose-collective-matmul: axis '" << axis
                     << "' is not an axis of mesh @" << mesh.getSymName()
                     << " (" << names << ")";
    return signalPassFailure();
  }
  std::optional<DeviceDescription> device;
  if (chunks <= 0) {
    FailureOr<DeviceDescription> loaded = loadPassDevice(
        step.getLoc(), "titan-decompose-collective-matmul", deviceName);
    if (failed(loaded))
      return signalPassFailure();
    device = std::move(*loaded);
  }
  // Each decomposition replaces its collective and the ops it computes
  // (never another collective), so the collectives found first stay valid.
  SmallVector<CollectiveOpInterface> collectives;
  step.walk([&](CollectiveOpInterface collective) {
    ArrayAttr axes = collective.getAxes();
    if (!collective->hasAttr(TitanDialect::kAsyncAttrName) &&
        axes.size() == 1 && cast<StringAttr>(axes[0]).getValue() == axis &&
        collective.getGroupSize() > 1)
      collectives.push_back(collective);
  });
  DominanceInfo dominance(step);
  for (CollectiveOpInterface collective : collectives) {
    Operation *op = collective.getOperation();
    std::optional<LogicalCollective> logical;
    if (auto gather = dyn_cast<AllGatherOp>(op))
      logical = getLogicalCollective(gather);
    else if (auto scatter = dyn_cast<ReduceScatterOp>(op))
      logical = getLogicalCollective(scatter);
    if (!logical || logical->output.use_empty())
      continue;
    std::optional<Candidate> candidate =
        isa<AllGatherOp>(op) ? matchAllGather(*logical, dominance)
                             : matchReduceScatter(*logical);
    if (!candidate)
      continue;
    Chunking &chunking = candidate->chunking;
    chunking.groupSize = collective.getGroupSize();
    chunking.blockRows =
        tensorTypeOf(isa<AllGatherOp>(op) ? logical->input : logical->output)
            .getDimSize(chunking.dim);
    if (ShapedType::isDynamic(chunking.blockRows))
      continue;
    auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
        op, cast<FlatSymbolRefAttr>(op->getAttr("mesh")));
    chunking.chunks =
        chooseChunks(*candidate, mesh, device ? &*device : nullptr);
    if (chunking.chunks < 2)
      continue;
    if (isa<AllGatherOp>(op))
      applyAllGather(*candidate);
    else
      applyReduceScatter(*candidate);
  }
}

} // namespace
