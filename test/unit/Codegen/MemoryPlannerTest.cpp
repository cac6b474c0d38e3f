//===- MemoryPlannerTest.cpp - what the arena holds over a step -----------===//
//
// MemoryPlanner::getTimeline on a step small enough to follow by hand: a
// parameter gathered in the forward, an activation the backward reads, a
// gradient the optimizer reads and the optimizer's result.
//
//===----------------------------------------------------------------------===//

#include "titan/Codegen/MemoryPlanner.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::titan;

namespace {

const char *kInPlaceProgram = R"mlir(
titan.mesh @mesh ["fsdp"=2]
func.func private @ew(memref<64xf32>, memref<64xf32>, memref<64xf32>)
    attributes {titan.kernel, titan.in_place = array<i64>}
func.func @train_step(
    %w: tensor<32xf32> {titan.name = "w", titan.role = "param"},
    %x: tensor<64xf32> {titan.name = "x", titan.role = "input"})
    -> tensor<64xf32> {
  %g = titan.all_gather %w on @mesh ["fsdp"] dim 0
      : tensor<32xf32> -> tensor<64xf32>
      loc(fused<"titan.phase.forward">[unknown])
  %h = titan.launch @ew(%x, %g) : (tensor<64xf32>, tensor<64xf32>)
      -> tensor<64xf32> loc(fused<"titan.phase.forward">[unknown])
  %d = titan.launch @ew(%h, %g) : (tensor<64xf32>, tensor<64xf32>)
      -> tensor<64xf32> loc(fused<"titan.phase.backward">[unknown])
  %u = titan.launch @ew(%d, %x) : (tensor<64xf32>, tensor<64xf32>)
      -> tensor<64xf32> loc(fused<"titan.phase.optimizer">[unknown])
  return %u : tensor<64xf32>
}
)mlir";

TEST(MemoryPlanner, TimelineSaysWhatEachBufferHolds) {
  MLIRContext context;
  context.loadDialect<TitanDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kInPlaceProgram, &context);
  ASSERT_TRUE(module);
  SymbolTable symbols(*module);
  MemoryPlanner planner(module->lookupSymbol<func::FuncOp>("train_step"),
                        symbols, /*alignment=*/64);
  planner.analyze();
  MemoryTimeline timeline = planner.getTimeline();
  ASSERT_EQ(timeline.liveBytes.size(), 5u); // Four ops and the return.
  auto at = [&](int64_t position, BufferKind kind) {
    return timeline.liveBytes[position][static_cast<unsigned>(kind)];
  };
  // Op 0 gathers w (256 bytes), read until the backward (op 2).
  for (int64_t position : {0, 1, 2})
    EXPECT_EQ(at(position, BufferKind::GatheredParameter), 256) << position;
  EXPECT_EQ(at(3, BufferKind::GatheredParameter), 0);
  // Op 1's result is read by the backward: saved from 1 to 2.
  EXPECT_EQ(at(0, BufferKind::SavedActivation), 0);
  EXPECT_EQ(at(1, BufferKind::SavedActivation), 256);
  EXPECT_EQ(at(2, BufferKind::SavedActivation), 256);
  EXPECT_EQ(at(3, BufferKind::SavedActivation), 0);
  // Op 2's result is read by the optimizer: a gradient from 2 to 3.
  EXPECT_EQ(at(2, BufferKind::Gradient), 256);
  EXPECT_EQ(at(3, BufferKind::Gradient), 256);
  EXPECT_EQ(at(4, BufferKind::Gradient), 0);
  // The optimizer's result lives to the end.
  EXPECT_EQ(at(3, BufferKind::Transient), 256);
  EXPECT_EQ(at(4, BufferKind::Transient), 256);
  EXPECT_EQ(timeline.getPeakPosition(), 2);
  EXPECT_EQ(timeline.getTotal(2), 768);
  EXPECT_EQ(timeline.backwardStart, 2);
  EXPECT_EQ(timeline.optimizerStart, 3);
}

} // namespace
