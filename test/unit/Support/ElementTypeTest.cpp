//===- ElementTypeTest.cpp - the one element-type enum --------------------===//

#include "titan/Support/ElementType.h"
#include "titan/Support/Npy.h"

#include "gtest/gtest.h"

using namespace mlir::titan;

namespace {

constexpr ElementType kAll[] = {
    ElementType::F32,  ElementType::F64, ElementType::F16,
    ElementType::BF16, ElementType::I64, ElementType::I32,
    ElementType::U16,  ElementType::U8,  ElementType::I1};

TEST(ElementTypeTest, NamesAreMLIRSpellingsAndRoundTrip) {
  EXPECT_EQ(stringifyElementType(ElementType::BF16), "bf16");
  EXPECT_EQ(stringifyElementType(ElementType::U16), "ui16");
  EXPECT_EQ(stringifyElementType(ElementType::I1), "i1");
  for (ElementType type : kAll)
    EXPECT_EQ(symbolizeElementType(stringifyElementType(type)), type)
        << stringifyElementType(type).str();
  EXPECT_EQ(symbolizeElementType("float32"), std::nullopt);
  EXPECT_EQ(symbolizeElementType(""), std::nullopt);
}

TEST(ElementTypeTest, SizesAndFloatness) {
  EXPECT_EQ(getElementTypeSize(ElementType::F64), 8u);
  EXPECT_EQ(getElementTypeSize(ElementType::BF16), 2u);
  EXPECT_EQ(getElementTypeSize(ElementType::I32), 4u);
  EXPECT_EQ(getElementTypeSize(ElementType::I1), 1u);
  for (ElementType type : kAll)
    EXPECT_EQ(isFloatElementType(type),
              stringifyElementType(type).starts_with("f") ||
                  type == ElementType::BF16)
        << stringifyElementType(type).str();
}

TEST(ElementTypeTest, NpyStoresBF16AsItsBits) {
  EXPECT_EQ(getNpyStorageType(ElementType::BF16), ElementType::U16);
  EXPECT_EQ(npyDescr(ElementType::BF16), "<u2");
  EXPECT_EQ(npyDescr(ElementType::I1), "|b1");
  for (ElementType type : kAll) {
    if (type != ElementType::BF16) {
      EXPECT_EQ(getNpyStorageType(type), type);
    }
  }
}

} // namespace
