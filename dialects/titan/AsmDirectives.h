//===- AsmDirectives.h - custom<...> directives of titan ops ----*- C++ -*-===//
//
// Parsers and printers named by `custom<Name>(...)` in the ops' declarative
// assembly formats. Declared here so the generated op definitions in
// TitanOps.cpp see them; each is defined beside the ops that use it.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECTS_TITAN_ASMDIRECTIVES_H
#define TITAN_DIALECTS_TITAN_ASMDIRECTIVES_H

#include "titan/Dialect/TitanDialect.h"

namespace mlir::titan {

/// `custom<ReduceKind>($reduce)`: a bare keyword sum, avg, max or min.
ParseResult parseReduceKind(OpAsmParser &parser, ReduceKindAttr &reduce);
void printReduceKind(OpAsmPrinter &printer, Operation *op,
                     ReduceKindAttr reduce);

/// `custom<BareKeyword>($attr)`: a string attribute written as a bare
/// keyword, e.g. `tanh` for "tanh". Which keywords are valid is checked by the
/// op's verifier.
ParseResult parseBareKeyword(OpAsmParser &parser, StringAttr &keyword);
void printBareKeyword(OpAsmPrinter &printer, Operation *op, StringAttr keyword);

/// `custom<UpdatedTypes>(type($params), type($new_params), ...)`: the
/// parameters' types, which the updated values (the other lists) have too
/// (titan.fused_adamw).
ParseResult parseUpdatedTypes(OpAsmParser &parser,
                              SmallVectorImpl<Type> &params,
                              SmallVectorImpl<Type> &newParams,
                              SmallVectorImpl<Type> &newExpAvgs,
                              SmallVectorImpl<Type> &newExpAvgSqs);
void printUpdatedTypes(OpAsmPrinter &printer, Operation *op, TypeRange params,
                       TypeRange newParams, TypeRange newExpAvgs,
                       TypeRange newExpAvgSqs);

} // namespace mlir::titan

#endif // TITAN_DIALECTS_TITAN_ASMDIRECTIVES_H
