//===- StepTimeReportTest.cpp - the plan report's predicted step time -----===//
//
// writeStepTimeReport on a program small enough to predict by hand: one
// matmul, one all_gather over an axis that spans nodes and one all_reduce
// over an axis within a node, on a device of round figures.
//
//===----------------------------------------------------------------------===//

#include "titan/Report/PlanReport.h"

#include "../CostModel/RoundDevice.h"

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::titan;
using testing::HasSubstr;

namespace {

/// A rank of a [dp=2, tp=4] mesh: the forward gathers w over dp and
/// multiplies; the backward all-reduces the product over tp.
const char *kProgram = R"mlir(
titan.mesh @mesh ["dp"=2, "tp"=4]
func.func @train_step(%x: tensor<64x128xf32>, %w: tensor<64x256xf32>)
    -> tensor<64x256xf32> {
  %g = titan.all_gather %w on @mesh ["dp"] dim 0
      : tensor<64x256xf32> -> tensor<128x256xf32>
      loc(fused<"titan.phase.forward">[unknown])
  %y = titan.matmul %x, %g : tensor<64x128xf32>, tensor<128x256xf32>
      -> tensor<64x256xf32> loc(fused<"titan.phase.forward">[unknown])
  %r = titan.all_reduce %y on @mesh ["tp"] sum : tensor<64x256xf32>
      loc(fused<"titan.phase.backward">[unknown])
  return %r : tensor<64x256xf32>
}
)mlir";

TEST(StepTimeReport, PredictsEachOpOnItsLink) {
  MLIRContext context;
  context.loadDialect<TitanDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kProgram, &context);
  ASSERT_TRUE(module);
  ModelFlops model;
  model.parameters = 1e6;
  model.seqLen = 64;
  model.tokensPerStep = 512;
  std::string text;
  llvm::raw_string_ostream os(text);
  ASSERT_TRUE(succeeded(writeStepTimeReport(*module, test::makeRoundDevice(),
                                            /*ranksPerNode=*/4, model, os)));
  // The matmul: 2 x 64 x 128 x 256 = 4194304 FLOPs at efficiency 0.1 +
  // 0.4 x log(4.19)/log(100) = 0.2245 of 10 TFLOP/s: 1.87 us (its 229376
  // bytes take 0.46 us), plus 1 us. The all_gather (dp spans the nodes of
  // 4 ranks): 1 step of 10 us + 65536 B / 10 GB/s = 16.55 us. The
  // all_reduce (tp within a node): 6 steps of 2 us + 2 x 3/4 x 65536 B /
  // 100 GB/s = 12.98 us.
  EXPECT_THAT(text, HasSubstr("device round: round figures, 4 ranks per "
                              "node"));
  EXPECT_THAT(text, HasSubstr("  forward          2.9 us        16.6 us"
                              "      19.4 us\n"));
  EXPECT_THAT(text, HasSubstr("  backward         0.0 us        13.0 us"
                              "      13.0 us\n"));
  EXPECT_THAT(text, HasSubstr("  step             2.9 us        29.5 us"
                              "      32.4 us\n"));
  EXPECT_THAT(text, HasSubstr("    [dp]             inter-node    1 "
                              "collectives      16.6 us  (10.0 GB/s, 10.0 "
                              "us per ring step)\n"));
  EXPECT_THAT(text, HasSubstr("    [tp]             intra-node    1 "
                              "collectives      13.0 us  (100.0 GB/s, 2.0 "
                              "us per ring step)\n"));
  // 512 tokens over 8 ranks in 32.40 us: 1.98 M tokens/s per rank, at
  // 6 x 1e6 FLOPs per token: 11.85 TFLOP/s > the 10 TFLOP/s peak (this
  // program does less than the model claims: MFU over 100%).
  EXPECT_THAT(text, HasSubstr("tokens per rank     64.00 per step (512.00 "
                              "over 8 ranks); 1.98 M tokens/s\n"));
  EXPECT_THAT(text, HasSubstr("model FLOPs         6.00 M per token"));
  EXPECT_THAT(text, HasSubstr("MFU                 118.5% (11.85 TFLOP/s "
                              "per rank of the f32 matmul peak, 10.00 "
                              "TFLOP/s)\n"));
  EXPECT_THAT(text, HasSubstr("hardware FLOPs      4.19 M per step per rank"));
}

} // namespace
