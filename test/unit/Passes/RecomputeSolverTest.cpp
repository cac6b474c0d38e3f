//===- RecomputeSolverTest.cpp - keep or recompute, solved by CBC ---------===//

#include "RecomputeSolver.h"

#include "gtest/gtest.h"

using namespace mlir::titan;

namespace {

/// A chain x -> a -> b -> c inside one block (x from outside): op i
/// computes value i and reads value i-1; `seconds` per op, `bytes` per
/// value, the backward reading the values marked in `read`.
RecomputeBlock chain(std::vector<double> seconds, std::vector<double> bytes,
                     std::vector<bool> read) {
  RecomputeBlock block;
  for (unsigned i = 0; i < seconds.size(); ++i) {
    RecomputeBlock::Op &op = block.ops.emplace_back();
    op.seconds = seconds[i];
    if (i > 0)
      op.operands.push_back(i - 1);
    block.values.push_back({bytes[i], read[i], i});
  }
  return block;
}

TEST(RecomputeSolver, RecomputesWhatTheBackwardReadsThroughUnkeptOperands) {
  RecomputeBlock block = chain({1, 2, 4}, {10, 10, 10}, {true, false, true});
  EXPECT_EQ(getRecomputedOps(block, {false, false, false}),
            (llvm::SmallVector<bool>{true, true, true}));
  // b kept: c is computed again from it, a on its own.
  EXPECT_EQ(getRecomputedOps(block, {false, true, false}),
            (llvm::SmallVector<bool>{true, false, true}));
  EXPECT_EQ(getRecomputedOps(block, {true, false, true}),
            (llvm::SmallVector<bool>{false, false, false}));
}

TEST(RecomputeSolver, NoBudgetMeansFullRecomputation) {
  RecomputeSolution solution = solveRecompute(
      {chain({1, 2, 4}, {10, 10, 10}, {true, false, true})}, 0, 10);
  EXPECT_EQ(solution.status, RecomputeSolveStatus::Optimal);
  EXPECT_EQ(solution.kept[0], (llvm::SmallVector<bool>{false, false, false}));
  EXPECT_DOUBLE_EQ(solution.keptBytes, 0);
  EXPECT_DOUBLE_EQ(solution.recomputeSeconds, 7);
}

TEST(RecomputeSolver, KeepsWhatSparesTheMostSecondsPerByte) {
  // Room for one value: keeping c leaves a to recompute (1 s); keeping b,
  // a and c (5 s); keeping a, c and b on its path (6 s).
  RecomputeSolution solution = solveRecompute(
      {chain({1, 2, 4}, {10, 10, 10}, {true, false, true})}, 10, 10);
  EXPECT_EQ(solution.status, RecomputeSolveStatus::Optimal);
  EXPECT_EQ(solution.kept[0], (llvm::SmallVector<bool>{false, false, true}));
  EXPECT_DOUBLE_EQ(solution.recomputeSeconds, 1);
  // Everything the backward reads fits: nothing recomputed, and nothing
  // the backward does not read is kept.
  RecomputeSolution all = solveRecompute(
      {chain({1, 2, 4}, {10, 10, 10}, {true, false, true})}, 1000, 10);
  EXPECT_EQ(all.kept[0], (llvm::SmallVector<bool>{true, false, true}));
  EXPECT_DOUBLE_EQ(all.keptBytes, 20);
  EXPECT_DOUBLE_EQ(all.recomputeSeconds, 0);
}

TEST(RecomputeSolver, SharesOneBudgetOverBlocks) {
  // Two one-op blocks; the budget holds one of their values: the slower
  // op's is kept, whichever block it is in.
  std::vector<RecomputeBlock> blocks = {chain({3}, {8}, {true}),
                                        chain({5}, {8}, {true})};
  RecomputeSolution solution = solveRecompute(blocks, 8, 10);
  EXPECT_EQ(solution.kept[0], (llvm::SmallVector<bool>{false}));
  EXPECT_EQ(solution.kept[1], (llvm::SmallVector<bool>{true}));
  EXPECT_DOUBLE_EQ(solution.recomputeSeconds, 3);
  // A larger value that spares more can lose to a smaller one when only
  // the smaller fits.
  std::vector<RecomputeBlock> sized = {chain({3}, {4}, {true}),
                                       chain({5}, {16}, {true})};
  EXPECT_EQ(solveRecompute(sized, 8, 10).kept[0],
            (llvm::SmallVector<bool>{true}));
}

TEST(RecomputeSolver, IdenticalBlocksFormOneClassAndSplitTheBudget) {
  // Three identical blocks, room for two of their values: one class, two
  // blocks keep theirs (in block order) and the third recomputes.
  std::vector<RecomputeBlock> blocks(3, chain({2}, {8}, {true}));
  RecomputeSolution solution = solveRecompute(blocks, 16, 10);
  EXPECT_EQ(solution.status, RecomputeSolveStatus::Optimal);
  EXPECT_EQ(solution.blockClasses, 1);
  EXPECT_EQ(solution.kept[0], (llvm::SmallVector<bool>{true}));
  EXPECT_EQ(solution.kept[1], (llvm::SmallVector<bool>{true}));
  EXPECT_EQ(solution.kept[2], (llvm::SmallVector<bool>{false}));
  EXPECT_DOUBLE_EQ(solution.keptBytes, 16);
  EXPECT_DOUBLE_EQ(solution.recomputeSeconds, 2);
}

TEST(RecomputeSolver, AnEmptyProgramIsSolved) {
  RecomputeSolution solution = solveRecompute({}, 0, 10);
  EXPECT_EQ(solution.status, RecomputeSolveStatus::Optimal);
  EXPECT_TRUE(solution.kept.empty());
  EXPECT_EQ(stringifyRecomputeSolveStatus(RecomputeSolveStatus::TimeLimit),
            "time limit (best found)");
}

} // namespace
