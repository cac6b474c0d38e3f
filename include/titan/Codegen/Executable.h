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

/// Translates `module` (LLVM dialect only) to LLVM IR, optimizes it at O3
/// (functions marked optnone, the step function, are left as they are) and
/// writes the object file `path`.
llvm::Error emitObjectFile(ModuleOp module, llvm::StringRef path,
                           const CodegenTarget &target);

/// Links the object file `object` with libtitanrt into the executable
/// `output` with the system's C++ compiler driver (`$TITAN_LINKER`, else
/// `c++`). libtitanrt is found in `$TITAN_RUNTIME_DIR`, else where this
/// build of titan put it.
llvm::Error linkExecutable(llvm::StringRef object, llvm::StringRef output);

} // namespace mlir::titan

#endif // TITAN_CODEGEN_EXECUTABLE_H
