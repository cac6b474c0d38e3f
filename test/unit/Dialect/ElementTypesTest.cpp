//===- ElementTypesTest.cpp - ElementType to and from MLIR types ----------===//

#include "titan/Dialect/ElementTypes.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::titan;

namespace {

TEST(ElementTypesTest, EveryElementTypeRoundTripsThroughItsMLIRType) {
  MLIRContext context;
  for (ElementType type :
       {ElementType::F32, ElementType::F64, ElementType::F16, ElementType::BF16,
        ElementType::I64, ElementType::I32, ElementType::U16, ElementType::U8,
        ElementType::I1}) {
    Type mlirType = getMLIRType(&context, type);
    EXPECT_EQ(getElementTypeOf(mlirType), type);
    // The spelling is MLIR's.
    std::string printed;
    llvm::raw_string_ostream(printed) << mlirType;
    EXPECT_EQ(printed, stringifyElementType(type));
  }
  EXPECT_EQ(getElementTypeOf(IntegerType::get(&context, 8)), std::nullopt);
  EXPECT_EQ(
      getElementTypeOf(IntegerType::get(&context, 64, IntegerType::Signed)),
      std::nullopt);
}

} // namespace
