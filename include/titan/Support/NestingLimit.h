//===- NestingLimit.h - how deeply MLIR text may nest -----------*- C++ -*-===//
//
// MLIR's parser, verifier, printer and passes recurse once per level of
// nesting (regions, and the brackets of types and attributes), so a deep
// enough input overflows the stack: 5000 nested modules or 10000 nested
// arrays crash mlir-opt's parser with 8 MiB of stack. The tools that read
// MLIR text (titan-opt, titan-eval, titan-compile) refuse text nested deeper
// than kMaxMlirNestingDepth before parsing it; titan's own programs nest a
// handful of levels.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_SUPPORT_NESTINGLIMIT_H
#define TITAN_SUPPORT_NESTINGLIMIT_H

#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBufferRef.h"

namespace mlir::titan {

/// The deepest nesting of brackets ('{', '(', '[', '<') the tools accept in
/// MLIR text.
inline constexpr unsigned kMaxMlirNestingDepth = 512;

/// Fails, naming the buffer, line and column where the limit is passed, when
/// `buffer` (MLIR's textual form) nests brackets deeper than `limit`. String
/// literals, comments and the arrow "->" are skipped; the text need not be
/// valid (the parser reports what else is wrong). MLIR bytecode passes.
llvm::Error checkMlirNestingDepth(llvm::MemoryBufferRef buffer,
                                  unsigned limit = kMaxMlirNestingDepth);

} // namespace mlir::titan

#endif // TITAN_SUPPORT_NESTINGLIMIT_H
