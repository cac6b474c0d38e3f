//===- KernelLowering.h - compiling kernel functions ------------*- C++ -*-===//
//
// The two halves of compiling the kernels titan-fuse-kernels outlines, on a
// module that holds only kernels: from titan ops on tensors to loops on
// memrefs in destination-passing style (titan-lower-kernels), and from
// there to the LLVM dialect (titan-lower-to-runtime; GpuKernelLowering.h is
// the CUDA form of the second half).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CODEGEN_KERNELLOWERING_H
#define TITAN_CODEGEN_KERNELLOWERING_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir::titan {

/// Compiles every function of `kernels` (titan ops on tensors, one or more
/// results) into a function on memrefs with identity layouts that takes its
/// inputs, then one buffer per result, then one buffer per temporary it
/// needs (its scratch, in the order the kernel first uses them) and returns
/// nothing: titan-convert-to-linalg, elementwise fusion, one-shot
/// bufferization, results as out-parameters, allocations as parameters.
/// Each function gets `titan.in_place` (TitanDialect::kInPlaceAttrName).
/// Errors are emitted on the offending op.
LogicalResult bufferizeKernels(ModuleOp kernels);

/// Lowers the bufferized kernels of `kernels` (linalg, memref, arith, math)
/// to the LLVM dialect: loops, polynomial approximations of transcendental
/// functions (they vectorize; libm calls would not), and the bare-pointer
/// calling convention (one pointer per buffer). Every kernel is marked
/// `noinline` so that the optimizer keeps it a function of its own.
LogicalResult lowerKernelsToLLVM(ModuleOp kernels);

// The steps lowerKernelsToLLVM shares with lowerKernelsToNvvm
// (GpuKernelLowering.h).

/// Rewrites every memref.copy of `kernels` into linalg.copy, which becomes
/// a loop nest (the LLVM lowering of a strided memref.copy calls a library
/// function titan does not link, and on a GPU the copy must be a kernel).
LogicalResult convertCopiesToLinalg(ModuleOp kernels);

/// Lets the floating-point arithmetic of kernels be reassociated and
/// contracted (reductions vectorize, a * b + c becomes an FMA); NaN and
/// infinity keep their meaning (masks are -inf).
void allowReassociation(ModuleOp kernels);

/// Marks every buffer parameter of the kernels `llvm.noalias`, but the pairs
/// that titan.in_place lets share memory.
void markNoAlias(ModuleOp kernels);

} // namespace mlir::titan

#endif // TITAN_CODEGEN_KERNELLOWERING_H
