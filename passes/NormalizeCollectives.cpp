//===- NormalizeCollectives.cpp - collectives on contiguous chunks --------===//
//
// Implements titan-normalize-collectives (see passes/Passes.td).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/TensorBuilder.h"
#include "titan/Passes.h"

namespace mlir::titan {
#define GEN_PASS_DEF_NORMALIZECOLLECTIVESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

/// Whether the chunks of `shape` along `dim` are contiguous: every dim
/// before it has size 1.
static bool chunksAreContiguous(ArrayRef<int64_t> shape, int64_t dim) {
  return llvm::all_of(shape.take_front(dim), [](int64_t d) { return d == 1; });
}

/// `shape` with dim `dim` split into [parts, shape[dim] / parts].
static SmallVector<int64_t> splitDim(ArrayRef<int64_t> shape, int64_t dim,
                                     int64_t parts) {
  SmallVector<int64_t> result(shape.take_front(dim));
  result.append({parts, shape[dim] / parts});
  result.append(shape.begin() + dim + 1, shape.end());
  return result;
}

/// The permutation of `rank` dims that moves dim `from` to position `to`,
/// keeping the others in order.
static SmallVector<int64_t> moveDim(int64_t rank, int64_t from, int64_t to) {
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
  Value gathered = AllGatherOp::create(
      builder, op.getLoc(), type.clone(gatheredShape), input, op.getMeshAttr(),
      op.getAxesAttr(), builder.getI64IntegerAttr(0));
  Value moved = permute(b, gathered, moveDim(type.getRank() + 1, 0, dim));
  op.replaceAllUsesWith(b.reshape(moved, op.getType().getShape()));
  op.erase();
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
      b.reshape(op.getInput(), splitDim(type.getShape(), dim, groupSize));
  Value front = permute(b, split, moveDim(type.getRank() + 1, dim, 0));
  SmallVector<int64_t> scatteredShape(tensorTypeOf(front).getShape());
  scatteredShape[0] = 1;
  Value scattered = ReduceScatterOp::create(
      builder, op.getLoc(), type.clone(scatteredShape), front, op.getMeshAttr(),
      op.getAxesAttr(), builder.getI64IntegerAttr(0), op.getReduceAttr());
  op.replaceAllUsesWith(b.reshape(scattered, op.getType().getShape()));
  op.erase();
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
  Value chunks =
      b.reshape(op.getInput(), splitDim(type.getShape(), split, groupSize));
  Value front = permute(b, chunks, moveDim(rank + 1, split, 0));
  Value exchanged = AllToAllOp::create(
      builder, op.getLoc(), front.getType(), front, op.getMeshAttr(),
      op.getAxesAttr(), builder.getI64IntegerAttr(0),
      builder.getI64IntegerAttr(0));
  Value placed = permute(b, exchanged, moveDim(rank + 1, 0, concat));
  op.replaceAllUsesWith(b.reshape(placed, op.getType().getShape()));
  op.erase();
}

namespace {

struct NormalizeCollectivesPass
    : public mlir::titan::impl::NormalizeCollectivesPassBase<
          NormalizeCollectivesPass> {
  void runOnOperation() override {
    getOperation().walk([](Operation *op) {
      if (auto gather = dyn_cast<AllGatherOp>(op))
        normalize(gather);
      else if (auto scatter = dyn_cast<ReduceScatterOp>(op))
        normalize(scatter);
      else if (auto exchange = dyn_cast<AllToAllOp>(op))
        normalize(exchange);
    });
  }
};

} // namespace
