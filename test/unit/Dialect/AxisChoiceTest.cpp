//===- AxisChoiceTest.cpp - placements explained by sharding rules --------===//
//
// explainPlacements against hand-built rules: the choice it recovers per
// mesh axis, and the value and reason it names when no choice explains the
// placements.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/AxisChoice.h"

#include "gtest/gtest.h"

using namespace mlir::titan;

namespace {

/// [m, k] x [k, n] -> [m, n]: k a reduction, linear in either operand.
OpShardingRule matmulRule() {
  OpShardingRule rule;
  int64_t m = rule.addFactor(8, FactorKind::Parallel);
  int64_t k = rule.addFactor(16, FactorKind::Reduction);
  int64_t n = rule.addFactor(4, FactorKind::Parallel);
  rule.operandDims = {{{m}, {k}}, {{k}, {n}}};
  rule.resultDims = {{{m}, {n}}};
  rule.linearOperandGroups = {{0}, {1}};
  return rule;
}

/// softmax over dim 1 of [4, 6].
OpShardingRule softmaxRule() {
  OpShardingRule rule;
  int64_t rows = rule.addFactor(4, FactorKind::Parallel);
  int64_t cols = rule.addFactor(6, FactorKind::NeedReplication);
  rule.operandDims = {{{rows}, {cols}}};
  rule.resultDims = {{{rows}, {cols}}};
  return rule;
}

using Layouts = llvm::SmallVector<llvm::SmallVector<Placement>>;

/// The explained choices, or the error text.
std::string explain(const OpShardingRule &rule, const Layouts &operands,
                    const Layouts &results,
                    llvm::ArrayRef<int64_t> meshSizes = {2, 2}) {
  llvm::SmallVector<std::string> names = {"dp", "tp"};
  names.resize(meshSizes.size());
  auto choices = explainPlacements(rule, operands, results, meshSizes, names);
  if (!choices)
    return "error: " + llvm::toString(choices.takeError());
  std::string text;
  for (const AxisChoice &choice : *choices)
    text += (text.empty() ? "" : "; ") + describeChoice(rule, choice);
  return text;
}

Placement S(int64_t dim) { return Placement::shard(dim); }
const Placement R = Placement::replicate();
const Placement Psum = Placement::partial(ReduceKind::Sum);

TEST(AxisChoiceTest, ExplainsShardedFactorsPerAxis) {
  // dp shards m (rows of lhs and result), tp shards k (result partial).
  EXPECT_EQ(explain(matmulRule(), {{S(0), S(1)}, {R, S(0)}}, {{S(0), Psum}}),
            "shard operand #0 dim 0 (parallel); shard operand #0 dim 1 "
            "(reduction)");
}

TEST(AxisChoiceTest, ExplainsPartialLinearGroups) {
  EXPECT_EQ(explain(matmulRule(), {{Psum, R}, {R, R}}, {{Psum, R}}),
            "keep operands {0} partial; replicate");
  EXPECT_EQ(explain(matmulRule(), {{Psum, R}, {Psum, R}}, {{Psum, R}}),
            "error: operands {0, 1} are P(sum) on mesh axis \"dp\", but the "
            "op is not linear in them as a sum or mean (its linear operand "
            "groups: {0}, {1}); reduce them first");
}

TEST(AxisChoiceTest, NamesTheValueThatDisagrees) {
  // k is sharded, so the result must be partial.
  EXPECT_EQ(explain(matmulRule(), {{S(1), R}, {S(0), R}}, {{R, R}}),
            "error: result #0 is R on mesh axis \"dp\", but the op's "
            "sharding rule (shard operand #0 dim 1 (reduction) there) makes "
            "it P(sum)");
  // The rhs must be sharded along k like the lhs.
  EXPECT_EQ(explain(matmulRule(), {{S(1), R}, {R, R}}, {{Psum, R}}),
            "error: operand #1 is R on mesh axis \"dp\", but the op's "
            "sharding rule (shard operand #0 dim 1 (reduction) there) makes "
            "it S(0)");
}

TEST(AxisChoiceTest, RefusesNeedReplicationFactors) {
  EXPECT_EQ(explain(softmaxRule(), {{R, S(1)}}, {{R, S(1)}}),
            "error: operand #0 has dim 1 sharded over mesh axis \"tp\", but "
            "the op needs that dim whole on every rank (a need_replication "
            "factor of its sharding rule); redistribute it to replicate that "
            "dim first");
}

TEST(AxisChoiceTest, ShardsIndivisibleFactorsUnevenlyWhereTheyAreWholeDims) {
  // m = 8 over 2 x 8 ranks: torch.chunk gives the ranks 1 or 0 rows.
  EXPECT_EQ(
      explain(matmulRule(), {{S(0), S(0)}, {R, R}}, {{S(0), S(0)}}, {2, 8}),
      "shard operand #0 dim 0 (parallel); shard operand #0 dim 0 (parallel)");
  // k = 16 over 3 ranks: uneven chunks of a reduction, the result P(sum).
  EXPECT_EQ(explain(matmulRule(), {{S(1)}, {S(0)}}, {{Psum}}, {3}),
            "shard operand #0 dim 1 (reduction)");
  // [3, 4] -> [12]: chunking the 3 over 2 ranks (2 and 1 rows, 8 and 4
  // elements) is not torch.chunk of the 12 (6 and 6).
  OpShardingRule reshape;
  int64_t outer = reshape.addFactor(3, FactorKind::Parallel);
  int64_t inner = reshape.addFactor(4, FactorKind::Parallel);
  reshape.operandDims = {{{outer}, {inner}}};
  reshape.resultDims = {{{outer, inner}}};
  EXPECT_EQ(explain(reshape, {{S(0)}}, {{S(0)}}, {2}),
            "error: operand #0 has dim 0 sharded over mesh axis \"dp\", but "
            "its factor of size 3 does not divide over 2 ranks and shares a "
            "dim with other factors, whose uneven chunks would not be the "
            "dim's; redistribute it to replicate that dim first");
  // A mean read as an average of unequal shards.
  OpShardingRule mean = matmulRule();
  mean.partialKind = ReduceKind::Avg;
  EXPECT_EQ(explain(mean, {{S(1)}, {S(0)}},
                    {{Placement::partial(ReduceKind::Avg)}}, {3}),
            "error: operand #0 has dim 1 sharded over mesh axis \"dp\", but "
            "its factor of size 16 does not divide over 3 ranks, and the "
            "average of unequal shards is not the average of the whole; "
            "redistribute it to replicate that dim first");
}

TEST(AxisChoiceTest, ChoicesGivePlacementsBack) {
  OpShardingRule rule = matmulRule();
  llvm::SmallVector<AxisChoice> sums = {
      AxisChoice::shard(1), AxisChoice::partial(1, ReduceKind::Sum)};
  EXPECT_TRUE(areChoicesValid(rule, sums, {2, 2}));
  EXPECT_EQ(getResultPlacements(rule, sums, 0),
            (llvm::SmallVector<Placement>{Psum, Psum}));
  EXPECT_EQ(getOperandPlacements(rule, sums, 1),
            (llvm::SmallVector<Placement>{S(0), Psum}));
  // A result partial with two reductions is not a valid combination.
  llvm::SmallVector<AxisChoice> mixed = {
      AxisChoice::shard(1), AxisChoice::partial(1, ReduceKind::Avg)};
  EXPECT_FALSE(areChoicesValid(rule, mixed, {2, 2}));
}

} // namespace
