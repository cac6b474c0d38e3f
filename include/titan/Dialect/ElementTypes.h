//===- ElementTypes.h - ElementType to and from MLIR types ------*- C++ -*-===//
//
// The one mapping between titan's ElementType (titan/Support/ElementType.h,
// without MLIR) and MLIR's builtin element types: floats, signless integers
// for I64, I32 and I1, unsigned integers for U16 and U8.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_ELEMENTTYPES_H
#define TITAN_DIALECT_ELEMENTTYPES_H

#include "titan/Support/ElementType.h"

#include "mlir/IR/BuiltinTypes.h"

#include <optional>

namespace mlir::titan {

/// The ElementType of the MLIR element type `type`, or nullopt for a type
/// titan has no ElementType for.
inline std::optional<ElementType> getElementTypeOf(Type type) {
  if (type.isF32())
    return ElementType::F32;
  if (type.isF64())
    return ElementType::F64;
  if (type.isF16())
    return ElementType::F16;
  if (type.isBF16())
    return ElementType::BF16;
  if (type.isSignlessInteger(64))
    return ElementType::I64;
  if (type.isSignlessInteger(32))
    return ElementType::I32;
  if (type.isSignlessInteger(1))
    return ElementType::I1;
  if (type.isUnsignedInteger(16))
    return ElementType::U16;
  if (type.isUnsignedInteger(8))
    return ElementType::U8;
  return std::nullopt;
}

/// The MLIR element type of `type`.
inline Type getMLIRType(MLIRContext *context, ElementType type) {
  switch (type) {
  case ElementType::F32:
    return Float32Type::get(context);
  case ElementType::F64:
    return Float64Type::get(context);
  case ElementType::F16:
    return Float16Type::get(context);
  case ElementType::BF16:
    return BFloat16Type::get(context);
  case ElementType::I64:
    return IntegerType::get(context, 64);
  case ElementType::I32:
    return IntegerType::get(context, 32);
  case ElementType::I1:
    return IntegerType::get(context, 1);
  case ElementType::U16:
    return IntegerType::get(context, 16, IntegerType::Unsigned);
  case ElementType::U8:
    return IntegerType::get(context, 8, IntegerType::Unsigned);
  }
  llvm_unreachable("unknown element type");
}

} // namespace mlir::titan

#endif // TITAN_DIALECT_ELEMENTTYPES_H
