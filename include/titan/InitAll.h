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
#include "titan/Pipeline.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::titan {

/// Adds the titan dialect and the upstream dialects titan programs use:
/// func for the program, and what kernels and the executable are lowered
/// through (linalg, tensor, bufferization, memref, scf, arith, math, LLVM),
/// with their bufferization models and LLVM IR translations.
inline void registerAllDialects(DialectRegistry &registry) {
  registry.insert<TitanDialect, func::FuncDialect, affine::AffineDialect,
                  arith::ArithDialect, bufferization::BufferizationDialect,
                  cf::ControlFlowDialect, linalg::LinalgDialect,
                  LLVM::LLVMDialect, math::MathDialect, memref::MemRefDialect,
                  scf::SCFDialect, tensor::TensorDialect>();
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  // Lets bufferization hoist a kernel's result allocation into its output
  // parameter instead of copying into it.
  memref::registerAllocationOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

/// Registers titan's passes, its named pipelines and the generic upstream
/// passes (canonicalize, cse, symbol-dce, ...) with the global pass registry.
inline void registerAllPasses() {
  mlir::registerTransformsPasses();
  registerTitanPasses();
  registerTitanPipelines();
}

} // namespace mlir::titan

#endif // TITAN_INITALL_H
