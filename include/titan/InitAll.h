//===- InitAll.h - register everything titan tools need ---------*- C++ -*-===//
//
// The one place that says which dialects and passes titan's tools know.
// titan-opt and titan-compile both call it, so they can never disagree.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_INITALL_H
#define TITAN_INITALL_H

#include "titan/Dialect/TitanDialect.h"
#include "titan/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::titan {

/// Adds the titan dialect and the upstream dialects titan programs use.
inline void registerAllDialects(DialectRegistry &registry) {
  registry.insert<TitanDialect, func::FuncDialect>();
}

/// Registers titan's passes and the generic upstream ones (canonicalize,
/// cse, symbol-dce, ...) with the global pass registry.
inline void registerAllPasses() {
  mlir::registerTransformsPasses();
  registerTitanPasses();
}

} // namespace mlir::titan

#endif // TITAN_INITALL_H
