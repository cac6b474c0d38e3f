//===- FoldMatmulBatch.cpp - one product for a batch-summed matmul --------===//
//
// Implements titan-fold-matmul-batch (see passes/Passes.td).
//
//===----------------------------------------------------------------------===//

#include "titan/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::titan {
#define GEN_PASS_DEF_FOLDMATMULBATCHPASS
#include "passes/Passes.h.inc"
} // namespace mlir::titan

using namespace mlir;
using namespace mlir::titan;

namespace {

/// `reduce_sum(matmul(a, b, transpose_lhs), batch dims)` with a [batch...,
/// rows, N] and b [batch..., rows, K] -> `matmul(a', b', transpose_lhs)`
/// with a' [batch x rows, N] and b' [batch x rows, K] (views), reshaped to
/// the sum's type when it keeps the batch dims.
struct FoldMatmulBatch : OpRewritePattern<ReduceSumOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceSumOp op,
                                PatternRewriter &rewriter) const override {
    auto matmul = op.getInput().getDefiningOp<MatmulOp>();
    if (!matmul || !matmul->hasOneUse() || !matmul.getTransposeLhs() ||
        matmul.getTransposeRhs() || matmul.getAddend())
      return failure();
    RankedTensorType lhsType = matmul.getLhs().getType();
    RankedTensorType rhsType = matmul.getRhs().getType();
    RankedTensorType productType = matmul.getType();
    int64_t rank = lhsType.getRank();
    if (rank < 3 || rhsType.getRank() != rank || !lhsType.hasStaticShape() ||
        !rhsType.hasStaticShape() ||
        op.getType().getElementType() != productType.getElementType())
      return failure();
    SmallVector<int64_t> batchDims =
        llvm::to_vector(llvm::seq<int64_t>(0, rank - 2));
    if (op.getDims() != ArrayRef(batchDims) ||
        lhsType.getShape().drop_back() != rhsType.getShape().drop_back())
      return failure();

    // Rows of every batch entry, one after another: a view of each operand.
    auto foldRows = [&](Value operand, RankedTensorType type) -> Value {
      ArrayRef<int64_t> shape = type.getShape();
      int64_t rows = 1;
      for (int64_t size : shape.drop_back())
        rows *= size;
      return ReshapeOp::create(rewriter, op.getLoc(),
                               type.clone({rows, shape.back()}), operand);
    };
    // Where the batched product was computed: the sum may have moved down
    // to its reader (titan-sink-to-first-use), and the product there would
    // keep both operands alive until then.
    rewriter.setInsertionPoint(matmul);
    Location loc = op.getLoc();
    Value lhs = foldRows(matmul.getLhs(), lhsType);
    Value rhs = foldRows(matmul.getRhs(), rhsType);
    auto foldedType = productType.clone(productType.getShape().take_back(2));
    auto folded = MatmulOp::create(rewriter, loc, foldedType, lhs, rhs,
                                   /*addend=*/Value(), /*transposeLhs=*/true,
                                   /*transposeRhs=*/false);
    folded->setDiscardableAttrs(matmul->getDiscardableAttrDictionary());
    Value product = folded;
    if (product.getType() != op.getType())
      product = ReshapeOp::create(rewriter, loc, op.getType(), product);
    rewriter.replaceOp(op, product);
    return success();
  }
};

class FoldMatmulBatchPass
    : public titan::impl::FoldMatmulBatchPassBase<FoldMatmulBatchPass> {
public:
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldMatmulBatch>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
