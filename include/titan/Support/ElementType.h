//===- ElementType.h - the element types of titan's tensors -----*- C++ -*-===//
//
// One enum for the element type of a tensor wherever titan holds one: the
// interpreter, .npy files, torch.save blobs and DCP checkpoints, checkpoint
// layouts and the importer's inputs. File formats keep their own codes
// (NumPy descr strings, torch dtype and storage names) as mappings in their
// readers and writers; the MLIR type of each is in
// titan/Dialect/ElementTypes.h. Only LLVMSupport: the runtime links it.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_SUPPORT_ELEMENTTYPE_H
#define TITAN_SUPPORT_ELEMENTTYPE_H

#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <cstdint>
#include <optional>

namespace mlir::titan {

/// The element type of a tensor. U16 and U8 exist only in .npy files (bf16
/// travels there as its raw bits, '<u2'); I1 is bool.
enum class ElementType : uint8_t { F32, F64, F16, BF16, I64, I32, U16, U8, I1 };

/// The MLIR spelling of `type`: "f32", "bf16", "ui16", "i1", ...
llvm::StringRef stringifyElementType(ElementType type);

/// The element type spelled `name` (the inverse of stringifyElementType), or
/// nullopt.
std::optional<ElementType> symbolizeElementType(llvm::StringRef name);

/// The size in bytes of one element of `type` (1 for I1).
size_t getElementTypeSize(ElementType type);

/// True for F32, F64, F16 and BF16.
bool isFloatElementType(ElementType type);

} // namespace mlir::titan

#endif // TITAN_SUPPORT_ELEMENTTYPE_H
