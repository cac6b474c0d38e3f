//===- Embedding.cpp - titan.embedding to linalg --------------------------===//
//
// An embedding lookup is a gather: one all-parallel `linalg.generic` over
// the result [ids..., dim] that reads the id through the projection onto
// the ids' loops and extracts `table[id, d]` (`tensor.extract` on the table,
// which is not an operand of the generic). i32 and i64 ids are both
// sign-extended to `index`; ids outside [0, vocab) are undefined behavior,
// as the op says.
//
//===----------------------------------------------------------------------===//

#include "Helpers.h"

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::titan;

namespace {

LogicalResult convertEmbedding(EmbeddingOp op, PatternRewriter &rewriter) {
  Value table = op.getTable();
  int64_t last = op.getType().getRank() - 1;
  AffineMap idsMap = getProjectionWithout(op.getContext(), last + 1, last);
  rewriter.replaceOp(
      op, buildMap(rewriter, op.getLoc(), op.getType(), op.getIds(), idsMap,
                   [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
                     Value row = arith::IndexCastOp::create(
                         b, loc, b.getIndexType(), args[0]);
                     Value column = linalg::IndexOp::create(b, loc, last);
                     return tensor::ExtractOp::create(b, loc, table,
                                                      ValueRange{row, column});
                   }));
  return success();
}

} // namespace

void mlir::titan::populateEmbeddingToLinalgPatterns(
    RewritePatternSet &patterns) {
  addConversion(patterns, convertEmbedding);
}
