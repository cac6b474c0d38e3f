//===- InterpreterTest.cpp - unit tests of the reference interpreter ------===//

#include "titan/Interpreter/Interpreter.h"
#include "titan/InitAll.h"

#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace mlir;
using namespace mlir::titan;

namespace {

TEST(TensorValueTest, RoundsToBFloat16TiesToEven) {
  // The bf16 ulp at 1 is 2^-7: 1 + 2^-8 ties to 1, 1 + 3 * 2^-8 to 1 + 2^-6.
  EXPECT_EQ(roundToFloatType(1.0 + std::ldexp(1.0, -8), ElementType::BF16),
            1.0f);
  EXPECT_EQ(roundToFloatType(1.0 + 3 * std::ldexp(1.0, -8), ElementType::BF16),
            1.0f + std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isnan(roundToFloatType(std::nan(""), ElementType::BF16)));
}

TEST(TensorValueTest, RoundsToHalf) {
  EXPECT_EQ(roundToFloatType(65504.0, ElementType::F16), 65504.0f);
  EXPECT_TRUE(std::isinf(roundToFloatType(65520.0, ElementType::F16)));
  EXPECT_EQ(roundToFloatType(1.0 + std::ldexp(1.0, -11), ElementType::F16),
            1.0f);
}

TEST(TensorValueTest, NpyRoundTripOfEveryKind) {
  for (ElementType kind :
       {ElementType::F32, ElementType::F64, ElementType::BF16, ElementType::F16,
        ElementType::I64, ElementType::I32, ElementType::I1}) {
    TensorValue tensor(kind, {2, 3});
    std::visit(
        [](auto &values) {
          for (size_t i = 0; i < values.size(); ++i)
            values[i] = i % 2 ? 1 : 0;
        },
        tensor.getStorage());
    if (isFloatElementType(kind))
      std::visit(
          [](auto &values) {
            using T = typename std::decay_t<decltype(values)>::value_type;
            if constexpr (std::is_floating_point_v<T>)
              values[2] = T(-2.5);
          },
          tensor.getStorage());
    NpyArray array = tensorToNpy(tensor);
    EXPECT_EQ(array.dtype, getNpyStorageType(kind));
    llvm::Expected<TensorValue> back = tensorFromNpy(array, kind, "t");
    ASSERT_TRUE(static_cast<bool>(back)) << llvm::toString(back.takeError());
    EXPECT_TRUE(*back == tensor) << stringifyElementType(kind).str();
  }
}

TEST(TensorValueTest, NpyElementTypeMismatchNamesBoth) {
  NpyArray array = tensorToNpy(TensorValue(ElementType::I32, {4}));
  llvm::Expected<TensorValue> tensor =
      tensorFromNpy(array, ElementType::I64, "tokens");
  ASSERT_FALSE(static_cast<bool>(tensor));
  std::string message = llvm::toString(tensor.takeError());
  EXPECT_NE(message.find("tokens"), std::string::npos) << message;
  EXPECT_NE(message.find("'<i4'"), std::string::npos) << message;
  EXPECT_NE(message.find("'<i8'"), std::string::npos) << message;
}

/// Parses `source` with the titan and func dialects.
OwningOpRef<ModuleOp> parse(MLIRContext &context, llvm::StringRef source) {
  DialectRegistry registry;
  registerAllDialects(registry);
  context.appendDialectRegistry(registry);
  return parseSourceString<ModuleOp>(source, &context);
}

/// A [1]-shaped f32 tensor holding `value`.
TensorValue scalar(float value) {
  TensorValue tensor(ElementType::F32, {1});
  tensor.getMutable<float>()[0] = value;
  return tensor;
}

// On a 2x2 mesh, a collective over ["b", "a"] groups all four ranks with "b"
// as the outer axis: rank order 0, 2, 1, 3.
TEST(InterpreterTest, GroupOrderFollowsNamedAxes) {
  MLIRContext context;
  OwningOpRef<ModuleOp> module = parse(context, R"mlir(
    titan.mesh @m ["a"=2, "b"=2]
    func.func @f(%x: tensor<1xf32>) -> (tensor<4xf32>, tensor<1xf32>) {
      %g = titan.all_gather %x on @m ["b", "a"] dim 0 : tensor<1xf32> -> tensor<4xf32>
      %s = titan.reduce_scatter %g on @m ["a"] dim 0 avg : tensor<4xf32> -> tensor<2xf32>
      %t = titan.reduce_scatter %s on @m ["b"] dim 0 max : tensor<2xf32> -> tensor<1xf32>
      return %g, %t : tensor<4xf32>, tensor<1xf32>
    }
  )mlir");
  ASSERT_TRUE(module);
  FailureOr<Interpreter> interpreter = Interpreter::create(*module, "f", 4);
  ASSERT_TRUE(succeeded(interpreter));
  std::vector<std::vector<TensorValue>> arguments;
  for (int rank = 0; rank < 4; ++rank)
    arguments.push_back({scalar(10.0f * rank)});
  FailureOr<std::vector<std::vector<TensorValue>>> results =
      interpreter->runRanks(std::move(arguments));
  ASSERT_TRUE(succeeded(results));
  for (int rank = 0; rank < 4; ++rank) {
    llvm::ArrayRef<float> gathered = (*results)[rank][0].get<float>();
    EXPECT_EQ(std::vector<float>(gathered.begin(), gathered.end()),
              (std::vector<float>{0, 20, 10, 30}));
  }
  // Every rank gathered the same vector, so the avg over "a" is that vector;
  // rank (a, b) keeps element 2a + b of it.
  std::vector<float> expected = {0, 20, 10, 30};
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_EQ((*results)[rank][1].get<float>()[0], expected[rank]);
}

TEST(InterpreterTest, RejectsUnknownEntry) {
  MLIRContext context;
  OwningOpRef<ModuleOp> module = parse(context, R"mlir(
    func.func @f(%x: tensor<1xf32>) -> tensor<1xf32> {
      return %x : tensor<1xf32>
    }
  )mlir");
  ASSERT_TRUE(module);
  ScopedDiagnosticHandler silence(&context,
                                  [](Diagnostic &) { return success(); });
  EXPECT_TRUE(failed(Interpreter::create(*module, "g", 1)));
  EXPECT_TRUE(failed(Interpreter::create(*module, "f", 0)));
}

} // namespace
