//===- ParseInput.h - reading MLIR files given to the tools -----*- C++ -*-===//
//
// The one way titan's tools read an MLIR file: opened (`-` is stdin),
// checked against the nesting limit (include/titan/Support/NestingLimit.h)
// and parsed, errors reported through the context's diagnostics.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TOOLS_PARSEINPUT_H
#define TITAN_TOOLS_PARSEINPUT_H

#include "titan/Support/NestingLimit.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/SourceMgr.h"

namespace mlir::titan {

/// The contents of file `path` (`-`: stdin), checked against the nesting
/// limit.
inline llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
openCheckedInput(llvm::StringRef path) {
  std::string message;
  std::unique_ptr<llvm::MemoryBuffer> buffer = openInputFile(path, &message);
  if (!buffer)
    return llvm::createStringError(message);
  if (llvm::Error error = checkMlirNestingDepth(*buffer))
    return std::move(error);
  return std::move(buffer);
}

/// Parses the module in file `path` into `sourceMgr`; null after reporting
/// an error (a file that cannot be read, nesting past the limit, a parse
/// error).
inline OwningOpRef<ModuleOp> parseInputFile(llvm::StringRef path,
                                            llvm::SourceMgr &sourceMgr,
                                            MLIRContext *context) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      openCheckedInput(path);
  if (!buffer) {
    emitError(UnknownLoc::get(context)) << llvm::toString(buffer.takeError());
    return nullptr;
  }
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  return parseSourceFile<ModuleOp>(sourceMgr, context);
}

} // namespace mlir::titan

#endif // TITAN_TOOLS_PARSEINPUT_H
