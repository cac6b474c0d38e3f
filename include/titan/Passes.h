//===- Passes.h - titan passes ----------------------------------*- C++ -*-===//
//
// Declarations of titan's passes (generated from passes/Passes.td) and their
// registration.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PASSES_H
#define TITAN_PASSES_H

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::titan {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// The names titan-fuse-kernels' `runtime-ops` takes: the ops the runtime
/// can execute with its own kernels.
inline constexpr StringLiteral kRuntimeOpNames[] = {"rms_norm", "cross_entropy",
                                                    "adamw", "squared_norm"};

/// The runtime ops a backend executes unless told otherwise: every one for
/// "cuda" (titan's hand-written kernels pass over the rows fewer times than
/// the compiled ones), none for "cpu" (its compiled kernels fuse the ops
/// with their neighbours, as fast and with less memory).
std::vector<std::string> getDefaultRuntimeOps(StringRef backend);

} // namespace mlir::titan

#endif // TITAN_PASSES_H
