//===- TitanToLinalg.cpp - titan's fusible ops to linalg ------------------===//
//
// The driver: every family's patterns, applied greedily (the rewrites keep
// every value's tensor type, so no type conversion is involved), then a
// check that a kernel holds no titan op any more.
//
//===----------------------------------------------------------------------===//

#include "titan/Codegen/TitanToLinalg.h"

#include "Helpers.h"

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace mlir::titan;

void mlir::titan::populateTitanToLinalgPatterns(RewritePatternSet &patterns) {
  populateElementwiseToLinalgPatterns(patterns);
  populateReductionsToLinalgPatterns(patterns);
  populateNormsToLinalgPatterns(patterns);
  populateShapesToLinalgPatterns(patterns);
  populateEmbeddingToLinalgPatterns(patterns);
  populateRopeToLinalgPatterns(patterns);
  populateCrossEntropyToLinalgPatterns(patterns);
}

LogicalResult mlir::titan::convertTitanToLinalg(func::FuncOp function) {
  MLIRContext *context = function.getContext();
  // Outside a pass (e.g. from bufferizeKernels) nothing has loaded the
  // dialects the patterns create.
  context->loadDialect<arith::ArithDialect, linalg::LinalgDialect,
                       math::MathDialect, tensor::TensorDialect>();
  RewritePatternSet patterns(context);
  populateTitanToLinalgPatterns(patterns);
  GreedyRewriteConfig config;
  config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  // Failing to converge only means that some op has no pattern, which the
  // check below reports where it matters.
  (void)applyPatternsGreedily(function, std::move(patterns), config);

  if (!function->hasAttr(TitanDialect::kKernelAttrName))
    return success();
  WalkResult result = function.walk([](Operation *op) {
    if (!isa<TitanDialect>(op->getDialect()))
      return WalkResult::advance();
    op->emitOpError("cannot be converted to linalg: a kernel ('")
        << TitanDialect::kKernelAttrName
        << "') may only hold elementwise, reduction, normalization, shape, "
           "embedding, RoPE and cross-entropy ops with static shapes";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}
