//===- Passes.h - titan passes ----------------------------------*- C++ -*-===//
//
// Declarations of titan's passes (generated from passes/Passes.td) and their
// registration.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PASSES_H
#define TITAN_PASSES_H

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::titan {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace mlir::titan

#endif // TITAN_PASSES_H
