//===- NormalizeCollectives.cpp - collectives on contiguous chunks --------===//
//
// Implements titan-normalize-collectives (see passes/Passes.td).
//
//===----------------------------------------------------------------------===//

#include "NormalizeCollectives.h"

#include "titan/Dialect/TensorBuilder.h"
#include "titan/Passes.h"

namespace mlir::titan {
#define GEN_PASS_DEF_NORMALIZECOLLECTIVESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

bool mlir::titan::chunksAreContiguous(ArrayRef<int64_t> shape, int64_t dim) {
  return llvm::all_of(shape.take_front(dim), [](int64_t d) { return d == 1; });
}

SmallVector<int64_t> mlir::titan::getSplitShape(ArrayRef<int64_t> shape,
                                                int64_t dim, int64_t parts) {
  SmallVector<int64_t> result(shape.take_front(dim));
  result.append({parts, shape[dim] / parts});
  result.append(shape.begin() + dim + 1, shape.end());
  return result;
}

SmallVector<int64_t>
mlir::titan::getMoveDimPermutation(int64_t rank, int64_t from, int64_t to) {
  SmallVector<int64_t> others;
  for (int64_t d = 0; d < rank; ++d)
    if (d != from)
      others.push_back(d);
  others.insert(others.begin() + to, from);
  return others;
}

/// `value` with its dims permuted; a permutation that only moves dims of
/// size 1 keeps the elements in place and is a reshape.
static Value permute(TensorBuilder &b, Value value,
                     ArrayRef<int64_t> permutation) {
  ArrayRef<int64_t> shape = tensorTypeOf(value).getShape();
  SmallVector<int64_t> nonUnit, permutedShape;
  for (int64_t d : permutation) {
    permutedShape.push_back(shape[d]);
    if (shape[d] != 1)
      nonUnit.push_back(d);
  }
  if (llvm::is_sorted(nonUnit))
    return b.reshape(value, permutedShape);
  return b.transpose(value, permutation);
}

/// Replaces collective `op` by `created`, whose result `restore` turns
/// into `op`'s: right after it or, when `op` is asynchronous, after its wait
/// (`created` becomes the asynchronous collective its new wait reads).
static void
replaceCollective(Operation *op, Operation *created,
                  function_ref<Value(TensorBuilder &, Value)> restore) {
  Value result = created->getResult(0);
  Operation *replaced = op;
  OpBuilder builder(op);
  if (op->hasAttr(TitanDialect::kAsyncAttrName)) {
    created->setAttr(TitanDialect::kAsyncAttrName, builder.getUnitAttr());
    replaced = *op->getUsers().begin();
    builder.setInsertionPoint(replaced);
    result = WaitOp::create(builder, replaced->getLoc(), result);
  }
  TensorBuilder b(builder, replaced->getLoc());
  replaced->getResult(0).replaceAllUsesWith(restore(b, result));
  if (replaced != op)
    replaced->erase();
  op->erase();
}

/// all_gather along `dim` of [.., S_dim, ..]: gather whole buffers into
/// [g, ..], then move the group dim next to `dim` and merge.
static void normalize(AllGatherOp op) {
  auto type = tensorTypeOf(op.getInput());
  int64_t dim = op.getGatherDim(), groupSize = op.getGroupSize();
  if (chunksAreContiguous(type.getShape(), dim))
    return;
  OpBuilder builder(op);
  TensorBuilder b(builder, op.getLoc());
  SmallVector<int64_t> unit{1};
  unit.append(type.getShape().begin(), type.getShape().end());
  Value input = b.reshape(op.getInput(), unit);
  SmallVector<int64_t> gatheredShape(unit);
  gatheredShape[0] = groupSize;
  auto gathered = AllGatherOp::create(
      builder, op.getLoc(), type.clone(gatheredShape), input, op.getMeshAttr(),
      op.getAxesAttr(), builder.getI64IntegerAttr(0));
  ArrayRef<int64_t> shape = op.getType().getShape();
  replaceCollective(op, gathered, [&](TensorBuilder &after, Value result) {
    Value moved = permute(after, result,
                          getMoveDimPermutation(type.getRank() + 1, 0, dim));
    return after.reshape(moved, shape);
  });
}

/// reduce_scatter along `dim`: move the group's chunks of `dim` to the
/// front, reduce-scatter whole buffers, and drop the unit dim.
static void normalize(ReduceScatterOp op) {
  auto type = tensorTypeOf(op.getInput());
  int64_t dim = op.getScatterDim(), groupSize = op.getGroupSize();
  if (chunksAreContiguous(type.getShape(), dim))
    return;
  OpBuilder builder(op);
  TensorBuilder b(builder, op.getLoc());
  Value split =
      b.reshape(op.getInput(), getSplitShape(type.getShape(), dim, groupSize));
  Value front =
      permute(b, split, getMoveDimPermutation(type.getRank() + 1, dim, 0));
  SmallVector<int64_t> scatteredShape(tensorTypeOf(front).getShape());
  scatteredShape[0] = 1;
  auto scattered = ReduceScatterOp::create(
      builder, op.getLoc(), type.clone(scatteredShape), front, op.getMeshAttr(),
      op.getAxesAttr(), builder.getI64IntegerAttr(0), op.getReduceAttr());
  ArrayRef<int64_t> shape = op.getType().getShape();
  replaceCollective(op, scattered, [&](TensorBuilder &after, Value result) {
    return after.reshape(result, shape);
  });
}

/// all_to_all splitting `split` and concatenating `concat`: move the chunks
/// of `split` to the front, exchange whole chunks (split 0, concat 0), and
/// move the received chunks into `concat`.
static void normalize(AllToAllOp op) {
  auto type = tensorTypeOf(op.getInput());
  int64_t split = op.getSplitDim(), concat = op.getConcatDim();
  int64_t groupSize = op.getGroupSize(), rank = type.getRank();
  if (split == 0 && concat == 0)
    return;
  OpBuilder builder(op);
  TensorBuilder b(builder, op.getLoc());
  Value chunks = b.reshape(op.getInput(),
                           getSplitShape(type.getShape(), split, groupSize));
  Value front = permute(b, chunks, getMoveDimPermutation(rank + 1, split, 0));
  auto exchanged = AllToAllOp::create(builder, op.getLoc(), front.getType(),
                                      front, op.getMeshAttr(), op.getAxesAttr(),
                                      builder.getI64IntegerAttr(0),
                                      builder.getI64IntegerAttr(0));
  ArrayRef<int64_t> shape = op.getType().getShape();
  replaceCollective(op, exchanged, [&](TensorBuilder &after, Value result) {
    Value placed =
        permute(after, result, getMoveDimPermutation(rank + 1, 0, concat));
    return after.reshape(placed, shape);
  });
}

void mlir::titan::normalizeCollective(Operation *op) {
  if (auto gather = dyn_cast<AllGatherOp>(op))
    normalize(gather);
  else if (auto scatter = dyn_cast<ReduceScatterOp>(op))
    normalize(scatter);
  else if (auto exchange = dyn_cast<AllToAllOp>(op))
    normalize(exchange);
}

/// The single user of `value`, if it has exactly one and it is an `OpTy`.
template <typename OpTy> static OpTy getOnlyUser(Value value) {
  return value.hasOneUse() ? dyn_cast<OpTy>(*value.getUsers().begin()) : OpTy();
}

SmallVector<int64_t> mlir::titan::getShapeWithDim(ArrayRef<int64_t> shape,
                                                  int64_t dim, int64_t size) {
  SmallVector<int64_t> result(shape);
  result[dim] = size;
  return result;
}

std::optional<LogicalCollective>
mlir::titan::getLogicalCollective(AllGatherOp gather) {
  LogicalCollective logical{gather, gather.getInput(), gather.getResult(),
                            int64_t(gather.getGatherDim())};
  auto unit = gather.getInput().getDefiningOp<ReshapeOp>();
  auto moved = getOnlyUser<TransposeOp>(gather.getResult());
  if (gather.getGatherDim() != 0 || !unit || !moved)
    return logical;
  // normalize(AllGatherOp)'s form: reshape [1, s...] -> all_gather dim 0 ->
  // transpose moving dim 0 to position d -> reshape merging it with the
  // shard's dim d.
  ArrayRef<int64_t> unitShape = tensorTypeOf(unit).getShape();
  ArrayRef<int64_t> permutation = moved.getPermutation();
  int64_t rank = unitShape.size() - 1;
  auto reshaped = getOnlyUser<ReshapeOp>(moved.getResult());
  if (unitShape.front() != 1 || !reshaped)
    return std::nullopt;
  SmallVector<int64_t> shardShape(unitShape.drop_front());
  int64_t dim = llvm::find(permutation, 0) - permutation.begin();
  if (dim >= rank ||
      permutation != ArrayRef(getMoveDimPermutation(rank + 1, 0, dim)) ||
      tensorTypeOf(reshaped).getShape() !=
          ArrayRef(getShapeWithDim(shardShape, dim,
                                   shardShape[dim] * gather.getGroupSize())) ||
      tensorTypeOf(unit.getInput()).getShape() != ArrayRef(shardShape))
    return std::nullopt;
  logical.input = unit.getInput();
  logical.output = reshaped.getResult();
  logical.dim = dim;
  return logical;
}

std::optional<LogicalCollective>
mlir::titan::getLogicalCollective(ReduceScatterOp scatter) {
  LogicalCollective logical{scatter, scatter.getInput(), scatter.getResult(),
                            int64_t(scatter.getScatterDim())};
  auto front = scatter.getInput().getDefiningOp<TransposeOp>();
  if (scatter.getScatterDim() != 0 || !front)
    return logical;
  // normalize(ReduceScatterOp)'s form: reshape splitting dim d into [n, s]
  // -> transpose moving n to the front -> reduce_scatter dim 0 -> reshape
  // dropping the unit dim.
  auto split = front.getInput().getDefiningOp<ReshapeOp>();
  auto dropped = getOnlyUser<ReshapeOp>(scatter.getResult());
  if (!split || !dropped)
    return std::nullopt;
  ArrayRef<int64_t> permutation = front.getPermutation();
  int64_t rank = permutation.size() - 1, dim = permutation.front();
  ArrayRef<int64_t> fullShape = tensorTypeOf(split.getInput()).getShape();
  int64_t n = scatter.getGroupSize();
  if (permutation != ArrayRef(getMoveDimPermutation(rank + 1, dim, 0)) ||
      int64_t(fullShape.size()) != rank || fullShape[dim] % n != 0 ||
      tensorTypeOf(split).getShape() !=
          ArrayRef(getSplitShape(fullShape, dim, n)) ||
      tensorTypeOf(dropped).getShape() !=
          ArrayRef(getShapeWithDim(fullShape, dim, fullShape[dim] / n)))
    return std::nullopt;
  logical.input = split.getInput();
  logical.output = dropped.getResult();
  logical.dim = dim;
  return logical;
}

namespace {

struct NormalizeCollectivesPass
    : public mlir::titan::impl::NormalizeCollectivesPassBase<
          NormalizeCollectivesPass> {
  void runOnOperation() override {
    SmallVector<Operation *> collectives;
    getOperation().walk([&](CollectiveOpInterface collective) {
      collectives.push_back(collective);
    });
    for (Operation *op : collectives)
      normalizeCollective(op);
  }
};

} // namespace
