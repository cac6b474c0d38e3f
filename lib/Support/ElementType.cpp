//===- ElementType.cpp - the element types of titan's tensors -------------===//

#include "titan/Support/ElementType.h"

#include "llvm/Support/ErrorHandling.h"

using namespace mlir::titan;

namespace {
/// The spelling and size of one element type.
struct ElementTypeInfo {
  ElementType type;
  llvm::StringRef name;
  size_t size;
};
} // namespace

static constexpr ElementTypeInfo kElementTypes[] = {
    {ElementType::F32, "f32", 4},  {ElementType::F64, "f64", 8},
    {ElementType::F16, "f16", 2},  {ElementType::BF16, "bf16", 2},
    {ElementType::I64, "i64", 8},  {ElementType::I32, "i32", 4},
    {ElementType::U16, "ui16", 2}, {ElementType::U8, "ui8", 1},
    {ElementType::I1, "i1", 1},
};

static const ElementTypeInfo &info(ElementType type) {
  for (const ElementTypeInfo &entry : kElementTypes)
    if (entry.type == type)
      return entry;
  llvm_unreachable("every ElementType has an entry");
}

llvm::StringRef mlir::titan::stringifyElementType(ElementType type) {
  return info(type).name;
}

std::optional<ElementType>
mlir::titan::symbolizeElementType(llvm::StringRef name) {
  for (const ElementTypeInfo &entry : kElementTypes)
    if (entry.name == name)
      return entry.type;
  return std::nullopt;
}

size_t mlir::titan::getElementTypeSize(ElementType type) {
  return info(type).size;
}

bool mlir::titan::isFloatElementType(ElementType type) {
  return type == ElementType::F32 || type == ElementType::F64 ||
         type == ElementType::F16 || type == ElementType::BF16;
}
