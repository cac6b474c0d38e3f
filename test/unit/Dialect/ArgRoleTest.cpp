//===- ArgRoleTest.cpp - titan.role through ArgRole -----------------------===//

#include "titan/Dialect/ArgRole.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::titan;

namespace {

TEST(ArgRoleTest, SpellingsRoundTrip) {
  for (ArgRole role : {ArgRole::Param, ArgRole::State, ArgRole::Buffer,
                       ArgRole::Input, ArgRole::ParamCopy})
    EXPECT_EQ(symbolizeArgRole(stringifyArgRole(role)), role);
  EXPECT_EQ(stringifyArgRole(ArgRole::State), "state");
  EXPECT_EQ(stringifyArgRole(ArgRole::ParamCopy), "param_copy");
  EXPECT_EQ(symbolizeArgRole("grad"), std::nullopt);
}

TEST(ArgRoleTest, ReadsAndWritesTheAttribute) {
  MLIRContext context;
  context.loadDialect<TitanDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      R"(func.func @f(%w: tensor<2xf32> {titan.role = "param"},
                      %t: tensor<2xi64>) {
           return
         })",
      &context);
  ASSERT_TRUE(module);
  auto function = cast<func::FuncOp>(module->getBody()->front());
  EXPECT_EQ(getArgRole(function, 0), ArgRole::Param);
  EXPECT_EQ(getArgRole(function, 1), std::nullopt);
  setEachArgRole(function, [](unsigned i) {
    return i == 0 ? ArgRole::Buffer : ArgRole::Input;
  });
  EXPECT_EQ(getArgRole(function, 0), ArgRole::Buffer);
  EXPECT_EQ(
      function.getArgAttrOfType<StringAttr>(1, TitanDialect::kRoleAttrName)
          .getValue(),
      "input");
}

TEST(ArgRoleTest, ParamSlotNamesRoundTrip) {
  EXPECT_EQ(getParamSlotName(ParamSlot::ExpAvgSq, "layers.0.w"),
            "exp_avg_sq.layers.0.w");
  EXPECT_EQ(getParamSlotName(ParamSlot::Param, "w"), "w");
  for (ParamSlot slot : kPrefixedParamSlots) {
    // The parsed FQN is a view into the name, which must outlive it.
    std::string name = getParamSlotName(slot, "a.b");
    auto parsed = parsePrefixedParamSlot(name);
    ASSERT_TRUE(parsed);
    EXPECT_EQ(parsed->first, slot);
    EXPECT_EQ(parsed->second, "a.b");
  }
  EXPECT_EQ(parsePrefixedParamSlot("layers.0.w"), std::nullopt);
  EXPECT_EQ(parsePrefixedParamSlot("exp_avgx.w"), std::nullopt);
}

} // namespace
