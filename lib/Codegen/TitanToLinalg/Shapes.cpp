//===- Shapes.cpp - titan's shape ops to linalg and tensor ----------------===//
//
// Shape ops move data without computing:
//   - broadcast_in_dim and transpose are a copy `linalg.generic` whose input
//     indexing map is the broadcast (a projection; a broadcast size-1 dim
//     reads index 0) or the inverse permutation: elementwise fusion folds
//     them into their consumers, so they cost nothing inside a kernel;
//   - slice is a strided `tensor.extract_slice` (a view after
//     bufferization);
//   - pad is a strided `tensor.insert_slice` into a zero-filled tensor (the
//     inverse of slice);
//   - concat is one `tensor.insert_slice` per operand into a
//     `tensor.empty` that they cover;
//   - reshape (in a kernel only where titan-fuse-kernels fused it: one
//     group reads it) is a `tensor.expand_shape` or `tensor.collapse_shape`
//     where one shape refines the other (elementwise fusion then folds it
//     into its producer or consumer), else a collapse to one dim and an
//     expand.
//
//===----------------------------------------------------------------------===//

#include "Helpers.h"

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

using namespace mlir;
using namespace mlir::titan;

namespace {

/// `values` as static index attributes of a slice op.
SmallVector<OpFoldResult> getIndexAttrs(OpBuilder &b,
                                        ArrayRef<int64_t> values) {
  return llvm::map_to_vector(values, [&](int64_t value) -> OpFoldResult {
    return b.getIndexAttr(value);
  });
}

/// Replaces `op` by a copy of `input` read through `inputMap` into a tensor
/// of its result type.
LogicalResult rewriteAsCopy(Operation *op, PatternRewriter &rewriter,
                            Value input, AffineMap inputMap) {
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  rewriter.replaceOp(op, buildMap(rewriter, op->getLoc(), type, input, inputMap,
                                  [](OpBuilder &, Location, ValueRange args) {
                                    return args[0];
                                  }));
  return success();
}

LogicalResult convertBroadcastInDim(BroadcastInDimOp op,
                                    PatternRewriter &rewriter) {
  AffineMap map = getBroadcastMap(op.getContext(), op.getType().getShape(),
                                  op.getInput().getType(), op.getDims());
  return rewriteAsCopy(op, rewriter, op.getInput(), map);
}

LogicalResult convertTranspose(TransposeOp op, PatternRewriter &rewriter) {
  // Result dim d is input dim permutation[d]: input dim permutation[d] is
  // indexed by loop d.
  ArrayRef<int64_t> permutation = op.getPermutation();
  SmallVector<int64_t> loops(permutation.size());
  for (auto [d, inputDim] : llvm::enumerate(permutation))
    loops[inputDim] = d;
  AffineMap map = getProjection(op.getContext(), permutation.size(), loops);
  return rewriteAsCopy(op, rewriter, op.getInput(), map);
}

LogicalResult convertSlice(SliceOp op, PatternRewriter &rewriter) {
  rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
      op, op.getType(), op.getInput(), getIndexAttrs(rewriter, op.getStart()),
      getIndexAttrs(rewriter, op.getType().getShape()),
      getIndexAttrs(rewriter, op.getStep()));
  return success();
}

LogicalResult convertPad(PadOp op, PatternRewriter &rewriter) {
  Location loc = op.getLoc();
  Type elementType = op.getType().getElementType();
  Value zero = arith::ConstantOp::create(
      rewriter, loc, cast<TypedAttr>(rewriter.getZeroAttr(elementType)));
  Value zeros = createFilled(rewriter, loc, op.getType().getShape(), zero);
  rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(
      op, op.getInput(), zeros, getIndexAttrs(rewriter, op.getStart()),
      getIndexAttrs(rewriter, op.getInput().getType().getShape()),
      getIndexAttrs(rewriter, op.getStep()));
  return success();
}

LogicalResult convertConcat(ConcatOp op, PatternRewriter &rewriter) {
  Location loc = op.getLoc();
  RankedTensorType type = op.getType();
  Value result =
      createEmpty(rewriter, loc, type.getShape(), type.getElementType());
  SmallVector<int64_t> offsets(type.getRank(), 0);
  SmallVector<int64_t> strides(type.getRank(), 1);
  for (Value input : op.getInputs()) {
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(input.getType()).getShape();
    result = tensor::InsertSliceOp::create(
        rewriter, loc, input, result, getIndexAttrs(rewriter, offsets),
        getIndexAttrs(rewriter, shape), getIndexAttrs(rewriter, strides));
    offsets[op.getDim()] += shape[op.getDim()];
  }
  rewriter.replaceOp(op, result);
  return success();
}

LogicalResult convertReshape(ReshapeOp op, PatternRewriter &rewriter) {
  Location loc = op.getLoc();
  RankedTensorType source = op.getInput().getType();
  RankedTensorType result = op.getType();
  if (!source.hasStaticShape() || !result.hasStaticShape())
    return rewriter.notifyMatchFailure(op, "needs static shapes");
  std::optional<SmallVector<ReassociationIndices>> groups =
      getReassociationIndicesForReshape(source, result);
  if (groups && source.getRank() > result.getRank()) {
    rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
        op, result, op.getInput(), *groups);
    return success();
  }
  if (groups && source.getRank() < result.getRank()) {
    rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(op, result,
                                                       op.getInput(), *groups);
    return success();
  }
  // Neither refines the other ([6, 4] -> [4, 6]): through one dim.
  auto all = [](int64_t rank) {
    ReassociationIndices dims;
    for (int64_t dim = 0; dim < rank; ++dim)
      dims.push_back(dim);
    return SmallVector<ReassociationIndices>{dims};
  };
  auto flat =
      RankedTensorType::get({source.getNumElements()}, source.getElementType());
  Value collapsed = tensor::CollapseShapeOp::create(
      rewriter, loc, flat, op.getInput(), all(source.getRank()));
  rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(op, result, collapsed,
                                                     all(result.getRank()));
  return success();
}

} // namespace

void mlir::titan::populateShapesToLinalgPatterns(RewritePatternSet &patterns) {
  addConversion(patterns, convertBroadcastInDim);
  addConversion(patterns, convertTranspose);
  addConversion(patterns, convertSlice);
  addConversion(patterns, convertPad);
  addConversion(patterns, convertConcat);
  addConversion(patterns, convertReshape);
}
