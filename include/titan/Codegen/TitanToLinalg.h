//===- TitanToLinalg.h - titan's fusible ops to linalg ----------*- C++ -*-===//
//
// The conversion of the ops titan-fuse-kernels puts into kernels
// (elementwise, reductions, normalizations, shape ops, embedding, RoPE,
// cross-entropy) to linalg, tensor, arith and math ops on tensors, one
// populate function per op family (lib/Codegen/TitanToLinalg/<Family>.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CODEGEN_TITANTOLINALG_H
#define TITAN_CODEGEN_TITANTOLINALG_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::titan {

/// Adds the conversion patterns of every family.
void populateTitanToLinalgPatterns(RewritePatternSet &patterns);

/// Converts every titan op of `function` that has a pattern. Fails, with an
/// error naming the op, when a titan op is left in a function marked
/// `titan.kernel`.
LogicalResult convertTitanToLinalg(func::FuncOp function);

} // namespace mlir::titan

#endif // TITAN_CODEGEN_TITANTOLINALG_H
