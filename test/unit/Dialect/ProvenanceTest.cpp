//===- ProvenanceTest.cpp - phase and module stamps in locations ----------===//

#include "titan/Dialect/Provenance.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::titan;

namespace {

TEST(ProvenanceTest, TransformerBlockIsThePathUpToTheFirstIndex) {
  EXPECT_EQ(getTransformerBlock("layers.3.attention.wq"), "layers.3");
  EXPECT_EQ(getTransformerBlock("layers.3"), "layers.3");
  EXPECT_EQ(getTransformerBlock("layers.12.feed_forward.w1.weight"),
            "layers.12");
  EXPECT_EQ(getTransformerBlock("transformer.h.0.attn.c_attn"),
            "transformer.h.0");
  EXPECT_EQ(getTransformerBlock("tok_embeddings"), "");
  EXPECT_EQ(getTransformerBlock("norm.weight"), "");
  EXPECT_EQ(getTransformerBlock(""), "");
  EXPECT_EQ(getTransformerBlock("layers.x1.w"), "");
}

TEST(ProvenanceTest, StampsNestAndTheOutermostWins) {
  MLIRContext context;
  OpBuilder builder(&context);
  Location file = FileLineColLoc::get(&context, "model.py", 3, 5);
  Location loc = addModulePath(file, "layers.0.attention");
  EXPECT_EQ(getModulePath(loc), StringRef("layers.0.attention"));
  EXPECT_EQ(getModulePath(file), std::nullopt);
  // Re-stamping with the same path changes nothing; another path wraps it.
  EXPECT_EQ(addModulePath(loc, "layers.0.attention"), loc);
  EXPECT_EQ(getModulePath(addModulePath(loc, "norm")), StringRef("norm"));

  OwningOpRef<ModuleOp> op = ModuleOp::create(loc);
  EXPECT_EQ(getPhase(*op), std::nullopt);
  setPhase(*op, Phase::Backward);
  EXPECT_EQ(getPhase(*op), Phase::Backward);
  EXPECT_EQ(getModulePath(op->getLoc()), StringRef("layers.0.attention"));

  OwningOpRef<ModuleOp> other = ModuleOp::create(file);
  copyPhase(*op, *other);
  copyModulePath(*op, *other);
  EXPECT_EQ(getPhase(*other), Phase::Backward);
  EXPECT_EQ(getModulePath(other->getLoc()), StringRef("layers.0.attention"));
}

} // namespace
