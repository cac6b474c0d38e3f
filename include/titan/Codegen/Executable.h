//===- Executable.h - object files and executables of programs -*- C++ -*-===//
//
// The last steps of titan-compile: the LLVM dialect module that
// titan-lower-to-runtime leaves is translated to LLVM IR, optimized,
// compiled to an object file for an explicitly chosen CPU, and linked with
// libtitanrt into the rank program's executable.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CODEGEN_EXECUTABLE_H
#define TITAN_CODEGEN_EXECUTABLE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::titan {

/// What to generate code for.
struct CodegenTarget {
  /// The LLVM target triple; empty: this host's.
  std::string triple;
  /// The CPU the code may assume (LLVM's names: "x86-64-v3" is AVX2 + FMA,
  /// what titan assumes by default; "native" is this host's CPU).
  std::string cpu = "x86-64-v3";
};

/// Checks that code can be generated for `target` (a known triple and CPU),
/// so that a typo fails before compiling.
llvm::Error checkCodegenTarget(const CodegenTarget &target);

/// Translates `module` (LLVM dialect only) to LLVM IR and writes two object
/// files: `kernelsPath`, everything but the functions marked optnone,
/// optimized at O3; `hostPath`, the optnone functions (the step function,
/// straight-line code of thousands of calls) compiled without optimization
/// (fast instruction selection and register allocation), so that compile
/// time stays linear in the size of the program.
llvm::Error emitObjectFiles(ModuleOp module, llvm::StringRef kernelsPath,
                            llvm::StringRef hostPath,
                            const CodegenTarget &target);

/// Links the object files `objects` with the runtime of `backend` into the
/// executable `output` with the system's C++ compiler driver
/// (`$TITAN_LINKER`, else `c++`, with lld where ld.lld is installed):
/// libtitanrt.so for "cpu",
/// libtitanrt_cuda.so for "cuda" (built where CMake found the CUDA
/// toolkit), found in `$TITAN_RUNTIME_DIR`, else where this build of titan
/// put it.
llvm::Error linkExecutable(llvm::ArrayRef<std::string> objects,
                           llvm::StringRef output,
                           llvm::StringRef backend = "cpu");

} // namespace mlir::titan

#endif // TITAN_CODEGEN_EXECUTABLE_H
