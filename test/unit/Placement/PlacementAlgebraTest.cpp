//===- PlacementAlgebraTest.cpp - Tests of the placement algebra ----------===//
//
// Unit tests of the mesh, local shapes, padding, planning and cost, and the
// property sweep: for every pair of placements lists over small meshes, the
// planned steps run by the reference simulator turn every rank's shard under
// `from` into its shard under `to`.
//
//===----------------------------------------------------------------------===//

#include "CollectiveSimulator.h"

#include "titan/CostModel/CostModel.h"
#include "titan/Placement/PlacementAlgebra.h"

#include "gtest/gtest.h"

#include <iostream>

using namespace mlir::titan;
using llvm::ArrayRef;
using llvm::SmallVector;

namespace {

Placement R() { return Placement::replicate(); }
Placement S(int64_t dim) { return Placement::shard(dim); }
Placement P(ReduceKind kind = ReduceKind::Sum) {
  return Placement::partial(kind);
}

/// Prints a placements list as "[S(0), R]".
std::string format(ArrayRef<Placement> placements) {
  std::string text = "[";
  for (auto [i, p] : llvm::enumerate(placements))
    text += (i ? ", " : "") + p.str();
  return text + "]";
}

/// Prints a shape as "[4, 6]".
std::string format(ArrayRef<int64_t> values) {
  std::string text = "[";
  for (auto [i, v] : llvm::enumerate(values))
    text += (i ? ", " : "") + std::to_string(v);
  return text + "]";
}

/// The message of an error that must have happened.
std::string errorMessage(llvm::Error err) {
  EXPECT_TRUE(static_cast<bool>(err)) << "expected an error";
  return llvm::toString(std::move(err));
}

/// A mesh with axes named a0, a1, ...
DeviceMesh makeMesh(ArrayRef<int64_t> sizes) {
  SmallVector<std::string> names;
  for (size_t i = 0; i < sizes.size(); ++i)
    names.push_back("a" + std::to_string(i));
  return llvm::cantFail(DeviceMesh::get(names, sizes));
}

/// A tensor of `shape` with distinct integer values (exact in doubles).
HostTensor iotaTensor(ArrayRef<int64_t> shape) {
  HostTensor tensor{SmallVector<int64_t>(shape), {}};
  tensor.data.resize(tensor.getNumElements());
  for (auto [i, v] : llvm::enumerate(tensor.data))
    v = 3.0 * i + 1;
  return tensor;
}

/// The steps of a plan as strings, for readable expectations.
std::vector<std::string> describe(ArrayRef<RedistributeStep> steps) {
  std::vector<std::string> lines;
  for (const RedistributeStep &step : steps)
    lines.push_back(step.str());
  return lines;
}

std::vector<RedistributeStep> plan(ArrayRef<int64_t> shape,
                                   ArrayRef<int64_t> mesh,
                                   ArrayRef<Placement> from,
                                   ArrayRef<Placement> to) {
  return llvm::cantFail(planRedistribution(shape, mesh, from, to));
}

//===----------------------------------------------------------------------===//
// Mesh
//===----------------------------------------------------------------------===//

TEST(DeviceMeshTest, RowMajorRanks) {
  DeviceMesh mesh = makeMesh({2, 3, 4});
  EXPECT_EQ(mesh.getNumRanks(), 24);
  EXPECT_EQ(mesh.getCoordinate(0), (SmallVector<int64_t>{0, 0, 0}));
  EXPECT_EQ(mesh.getCoordinate(5), (SmallVector<int64_t>{0, 1, 1}));
  EXPECT_EQ(mesh.getCoordinate(23), (SmallVector<int64_t>{1, 2, 3}));
  for (int64_t rank = 0; rank < mesh.getNumRanks(); ++rank)
    EXPECT_EQ(mesh.getRank(mesh.getCoordinate(rank)), rank);
  EXPECT_EQ(mesh.getAxisGroup(5, 0), (SmallVector<int64_t>{5, 17}));
  EXPECT_EQ(mesh.getAxisGroup(5, 1), (SmallVector<int64_t>{1, 5, 9}));
  EXPECT_EQ(mesh.getAxisGroup(5, 2), (SmallVector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(mesh.findAxis("a1"), 1u);
  EXPECT_EQ(mesh.findAxis("tp"), std::nullopt);
  EXPECT_EQ(mesh.getAxisName(2), "a2");
}

TEST(DeviceMeshTest, RejectsBadAxes) {
  EXPECT_EQ(errorMessage(DeviceMesh::get({"dp", "tp"}, {2, 0}).takeError()),
            "device mesh axis 'tp' has size 0; every axis needs at least 1 "
            "rank");
  EXPECT_EQ(errorMessage(DeviceMesh::get({"dp", "dp"}, {2, 2}).takeError()),
            "device mesh axis name 'dp' is used twice; axis names must be "
            "distinct");
  EXPECT_EQ(errorMessage(DeviceMesh::get({"dp"}, {2, 2}).takeError()),
            "device mesh has 1 axis names but 2 axis sizes; give one name per "
            "axis");
}

//===----------------------------------------------------------------------===//
// Local shapes and padding
//===----------------------------------------------------------------------===//

TEST(LocalShapeTest, TorchChunkSizes) {
  auto sizes = [](int64_t n, int64_t k) {
    SmallVector<int64_t> result;
    for (int64_t i = 0; i < k; ++i)
      result.push_back(getChunkExtent(n, k, i).size);
    return result;
  };
  EXPECT_EQ(sizes(10, 4), (SmallVector<int64_t>{3, 3, 3, 1}));
  EXPECT_EQ(sizes(5, 4), (SmallVector<int64_t>{2, 2, 1, 0}));
  EXPECT_EQ(sizes(8, 4), (SmallVector<int64_t>{2, 2, 2, 2}));
  EXPECT_EQ(sizes(0, 3), (SmallVector<int64_t>{0, 0, 0}));
  EXPECT_EQ(getChunkExtent(10, 4, 3).offset, 9);
  // An empty chunk sits at the end of the dim, as in DTensor.
  EXPECT_EQ(getChunkExtent(5, 4, 3).offset, 5);
}

TEST(LocalShapeTest, NestedShardsSplitTheOuterShard) {
  // Mesh [2, 2], 10 rows on both axes: the outer axis splits 5/5, the inner
  // one splits each half 3/2.
  SmallVector<Placement> placements = {S(0), S(0)};
  int64_t expectedSize[2][2] = {{3, 2}, {3, 2}};
  int64_t expectedOffset[2][2] = {{0, 3}, {5, 8}};
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j) {
      LocalShard shard = llvm::cantFail(computeLocalShapeAndGlobalOffset(
          {10, 7}, {2, 2}, placements, {i, j}));
      EXPECT_EQ(shard.shape, (SmallVector<int64_t>{expectedSize[i][j], 7}));
      EXPECT_EQ(shard.offset, (SmallVector<int64_t>{expectedOffset[i][j], 0}));
    }
  // Mixed dims, replicate and partial leave dims whole.
  LocalShard shard = llvm::cantFail(computeLocalShapeAndGlobalOffset(
      {10, 7, 3}, {4, 2, 2}, {S(0), P(), S(1)}, {3, 1, 1}));
  EXPECT_EQ(shard.shape, (SmallVector<int64_t>{1, 3, 3}));
  EXPECT_EQ(shard.offset, (SmallVector<int64_t>{9, 4, 0}));
}

TEST(LocalShapeTest, ShardsTileTheTensor) {
  // For every layout, the ranks at coordinate 0 on the R and P axes hold
  // boxes that cover every element exactly once.
  SmallVector<int64_t> meshSizes = {2, 3, 2};
  SmallVector<int64_t> shape = {5, 7};
  SmallVector<Placement> alphabet = {R(), S(0), S(1), P()};
  DeviceMesh mesh = makeMesh(meshSizes);
  int layouts = 0;
  for (Placement a : alphabet)
    for (Placement b : alphabet)
      for (Placement c : alphabet) {
        SmallVector<Placement> placements = {a, b, c};
        std::vector<int> covered(35, 0);
        for (int64_t rank = 0; rank < mesh.getNumRanks(); ++rank) {
          SmallVector<int64_t> coordinate = mesh.getCoordinate(rank);
          if (llvm::any_of(llvm::enumerate(placements), [&](auto item) {
                return !item.value().isShard() && coordinate[item.index()];
              }))
            continue;
          LocalShard shard = llvm::cantFail(computeLocalShapeAndGlobalOffset(
              shape, meshSizes, placements, coordinate));
          for (int64_t i = 0; i < shard.shape[0]; ++i)
            for (int64_t j = 0; j < shard.shape[1]; ++j)
              ++covered[(shard.offset[0] + i) * 7 + shard.offset[1] + j];
        }
        EXPECT_TRUE(llvm::all_of(covered, [](int n) { return n == 1; }))
            << format(placements);
        ++layouts;
      }
  EXPECT_EQ(layouts, 64);
}

TEST(LocalShapeTest, RejectsBadLayouts) {
  EXPECT_EQ(errorMessage(computeLocalShapeAndGlobalOffset({4, 6}, {2, 2},
                                                          {R(), S(2)}, {0, 0})
                             .takeError()),
            "placement S(2) on mesh axis 1 shards dim 2 of a rank-2 tensor; "
            "shard a dim in [0, 2)");
  EXPECT_EQ(errorMessage(
                computeLocalShapeAndGlobalOffset({4, 6}, {2, 2}, {S(0)}, {0, 0})
                    .takeError()),
            "placements [S(0)] name 1 mesh axes but the mesh [2, 2] has 2; "
            "give one placement per mesh axis");
  EXPECT_EQ(errorMessage(computeLocalShapeAndGlobalOffset({4, 6}, {2, 2},
                                                          {R(), R()}, {0, 2})
                             .takeError()),
            "coordinate [0, 2] is 2 on mesh axis 1 of size 2; use [0, 2)");
  EXPECT_EQ(
      errorMessage(verifyPlacements({4, 6}, {2, 2}, {P(), P(ReduceKind::Max)})),
      "placements [P(sum), P(max)] mix partial reductions sum and max; "
      "the value would depend on the reduction order, use one reduce "
      "kind");
}

TEST(PaddingTest, EvenAndPaddedShapes) {
  PaddingInfo uneven = llvm::cantFail(computePadding({10, 3}, {4}, {S(0)}));
  EXPECT_FALSE(uneven.isEven);
  EXPECT_EQ(uneven.paddedLocalShape, (SmallVector<int64_t>{3, 3}));

  PaddingInfo nested =
      llvm::cantFail(computePadding({10, 3}, {2, 2}, {S(0), S(0)}));
  EXPECT_FALSE(nested.isEven);
  EXPECT_EQ(nested.paddedLocalShape, (SmallVector<int64_t>{3, 3}));

  // 6 rows split 2 ways is even, but 3 rows split 2 ways again is not.
  EXPECT_FALSE(
      llvm::cantFail(computePadding({6, 4}, {2, 2}, {S(0), S(0)})).isEven);
  PaddingInfo even =
      llvm::cantFail(computePadding({8, 6}, {2, 2, 3}, {S(0), S(0), S(1)}));
  EXPECT_TRUE(even.isEven);
  EXPECT_EQ(even.paddedLocalShape, (SmallVector<int64_t>{2, 2}));
}

//===----------------------------------------------------------------------===//
// Planning
//===----------------------------------------------------------------------===//

TEST(PlanTest, SingleAxisTable) {
  using Lines = std::vector<std::string>;
  EXPECT_EQ(describe(plan({8, 4}, {4}, {S(0)}, {R()})),
            Lines{"all_gather(axis 0, dim 0): [S(0)] -> [R]"});
  EXPECT_EQ(describe(plan({8, 4}, {4}, {P()}, {R()})),
            Lines{"all_reduce(axis 0, sum): [P(sum)] -> [R]"});
  EXPECT_EQ(describe(plan({8, 4}, {4}, {P()}, {S(1)})),
            Lines{"reduce_scatter(axis 0, dim 1, sum): [P(sum)] -> [S(1)]"});
  EXPECT_EQ(describe(plan({8, 4}, {4}, {R()}, {S(0)})),
            Lines{"local_chunk(axis 0, dim 0): [R] -> [S(0)]"});
  EXPECT_EQ(describe(plan({8, 4}, {4}, {S(0)}, {S(1)})),
            Lines{"all_to_all(axis 0, dim 0 -> dim 1): [S(0)] -> [S(1)]"});
  EXPECT_EQ(describe(plan({8, 4}, {4}, {R()}, {P()})),
            Lines{"partition(axis 0, sum): [R] -> [P(sum)]"});
  EXPECT_EQ(describe(plan({10, 4}, {4}, {S(0)}, {P()})),
            (Lines{"all_gather(axis 0, dim 0, padded): [S(0)] -> [R]",
                   "partition(axis 0, sum): [R] -> [P(sum)]"}));
  EXPECT_EQ(describe(plan({8, 4}, {4}, {P()}, {P(ReduceKind::Max)})),
            (Lines{"all_reduce(axis 0, sum): [P(sum)] -> [R]",
                   "partition(axis 0, max): [R] -> [P(max)]"}));
  EXPECT_TRUE(plan({8, 4}, {4}, {S(1)}, {S(1)}).empty());
}

TEST(PlanTest, MultiAxisOrder) {
  using Lines = std::vector<std::string>;
  EXPECT_EQ(describe(plan({4, 6}, {2, 2}, {S(0), P()}, {R(), S(1)})),
            (Lines{"reduce_scatter(axis 1, dim 1, sum): [S(0), P(sum)] -> "
                   "[S(0), S(1)]",
                   "all_gather(axis 0, dim 0): [S(0), S(1)] -> [R, S(1)]"}));
  // The inner shard of dim 0 is gathered before the outer one.
  EXPECT_EQ(describe(plan({4, 6}, {2, 2}, {S(0), S(0)}, {R(), R()})),
            (Lines{"all_gather(axis 1, dim 0): [S(0), S(0)] -> [S(0), R]",
                   "all_gather(axis 0, dim 0): [S(0), R] -> [R, R]"}));
  EXPECT_EQ(describe(plan({4, 6}, {2, 2}, {S(0), S(0)}, {S(1), S(0)})),
            (Lines{"all_gather(axis 1, dim 0): [S(0), S(0)] -> [S(0), R]",
                   "all_to_all(axis 0, dim 0 -> dim 1): [S(0), R] -> [S(1), R]",
                   "local_chunk(axis 1, dim 0): [S(1), R] -> [S(1), S(0)]"}));
  // Without source shards, DTensor goes outer to inner only.
  EXPECT_EQ(describe(plan({4, 6}, {2, 2}, {P(), R()}, {S(0), S(0)})),
            (Lines{"reduce_scatter(axis 0, dim 0, sum): [P(sum), R] -> "
                   "[S(0), R]",
                   "local_chunk(axis 1, dim 0): [S(0), R] -> [S(0), S(0)]"}));
  // Moving a shard of dim 0 from the inner axis to the outer one.
  EXPECT_EQ(describe(plan({4, 6}, {2, 2}, {R(), S(0)}, {S(0), R()})),
            (Lines{"all_gather(axis 1, dim 0): [R, S(0)] -> [R, R]",
                   "local_chunk(axis 0, dim 0): [R, R] -> [S(0), R]"}));
  // A change of partial kind reduces every P(sum) before any P(max) exists.
  EXPECT_EQ(describe(plan({4, 6}, {2, 2}, {P(), P()},
                          {P(ReduceKind::Max), P(ReduceKind::Max)})),
            (Lines{"all_reduce(axis 1, sum): [P(sum), P(sum)] -> [P(sum), R]",
                   "all_reduce(axis 0, sum): [P(sum), R] -> [R, R]",
                   "partition(axis 0, max): [R, R] -> [P(max), R]",
                   "partition(axis 1, max): [P(max), R] -> [P(max), P(max)]"}));
}

TEST(PlanTest, RejectsBadPlacements) {
  EXPECT_EQ(
      errorMessage(planRedistribution({4, 6}, {2, 2}, {S(0), R()}, {S(3), R()})
                       .takeError()),
      "placement S(3) on mesh axis 0 shards dim 3 of a rank-2 tensor; "
      "shard a dim in [0, 2)");
}

//===----------------------------------------------------------------------===//
// Cost
//===----------------------------------------------------------------------===//

TEST(CostTest, RingFormulas) {
  // An [8, 4] f32 tensor is 128 bytes; each rank of 4 holds 32.
  auto bytesOf = [](ArrayRef<int64_t> shape, ArrayRef<Placement> from,
                    ArrayRef<Placement> to) {
    return llvm::cantFail(
               estimateRedistributeCost(plan(shape, {4}, from, to), {4}, 4))
        .totalBytes;
  };
  EXPECT_DOUBLE_EQ(bytesOf({8, 4}, {S(0)}, {R()}), 0.75 * 128);
  EXPECT_DOUBLE_EQ(bytesOf({8, 4}, {P()}, {S(0)}), 0.75 * 128);
  EXPECT_DOUBLE_EQ(bytesOf({8, 4}, {P()}, {R()}), 1.5 * 128);
  EXPECT_DOUBLE_EQ(bytesOf({8, 4}, {S(0)}, {S(1)}), 0.75 * 32);
  EXPECT_DOUBLE_EQ(bytesOf({8, 4}, {R()}, {S(1)}), 0);
  EXPECT_DOUBLE_EQ(bytesOf({8, 4}, {R()}, {P()}), 0);
  // 10 rows on 4 ranks travel as 4 padded shards of 3 rows.
  EXPECT_DOUBLE_EQ(bytesOf({10, 4}, {S(0)}, {R()}), 0.75 * 12 * 4 * 4);
  // all_to_all of a [10, 6] tensor: local [3, 6] padded, split 4 ways in
  // blocks of 2 columns: 3 blocks of 3x2 leave.
  EXPECT_DOUBLE_EQ(bytesOf({10, 6}, {S(0)}, {S(1)}), 3 * 3 * 2 * 4);
}

TEST(CostTest, PerAxisBandwidth) {
  std::vector<RedistributeStep> steps =
      plan({4, 6}, {2, 3}, {S(0), P()}, {R(), R()});
  RedistributeCost cost = llvm::cantFail(
      estimateRedistributeCost(steps, {2, 3}, 2, {100.0, 1000.0}));
  ASSERT_EQ(cost.stepBytes.size(), 2u);
  // all_reduce on axis 1 of a [2, 6] bf16 shard: 2 * 2/3 * 24 bytes.
  EXPECT_DOUBLE_EQ(cost.stepBytes[0], 32);
  EXPECT_DOUBLE_EQ(cost.stepSeconds[0], 32 / 1000.0);
  // all_gather on axis 0 of [2, 6] shards: 1/2 of 48 bytes.
  EXPECT_DOUBLE_EQ(cost.stepBytes[1], 24);
  EXPECT_DOUBLE_EQ(cost.stepSeconds[1], 24 / 100.0);
  EXPECT_DOUBLE_EQ(cost.totalBytes, 56);
  EXPECT_DOUBLE_EQ(cost.totalSeconds, 0.032 + 0.24);
  EXPECT_EQ(errorMessage(
                estimateRedistributeCost(steps, {2, 3}, 2, {1.0}).takeError()),
            "got 1 axis bandwidths for a mesh of 2 axes; give one per axis or "
            "none");
}

//===----------------------------------------------------------------------===//
// Simulator
//===----------------------------------------------------------------------===//

TEST(SimulatorTest, PaddedAllGatherOfUnevenShards) {
  DeviceMesh mesh = makeMesh({4});
  HostTensor global = iotaTensor({10, 2});
  std::vector<HostTensor> locals =
      llvm::cantFail(shardTensor(mesh, global, {S(0)}));
  EXPECT_EQ(locals[3].shape, (SmallVector<int64_t>{1, 2}));
  std::vector<RedistributeStep> steps = plan({10, 2}, {4}, {S(0)}, {R()});
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_TRUE(steps[0].needsPadding);
  EXPECT_EQ(steps[0].paddedBefore, (SmallVector<int64_t>{3, 2}));
  llvm::cantFail(applyRedistributeStep(mesh, global.shape, steps[0], locals));
  for (const HostTensor &local : locals)
    EXPECT_EQ(local, global);
}

TEST(SimulatorTest, PartialSplitsReduceToTheValue) {
  DeviceMesh mesh = makeMesh({2, 3});
  HostTensor global = iotaTensor({4, 5});
  for (ReduceKind kind :
       {ReduceKind::Sum, ReduceKind::Avg, ReduceKind::Max, ReduceKind::Min}) {
    SmallVector<Placement> placements = {P(kind), P(kind)};
    std::vector<HostTensor> locals =
        llvm::cantFail(shardTensor(mesh, global, placements));
    // The split is not trivial: ranks hold different values.
    EXPECT_NE(locals[1], locals[4]) << stringifyReduce(kind).str();
    EXPECT_EQ(
        llvm::cantFail(assembleTensor(mesh, global.shape, locals, placements)),
        global)
        << stringifyReduce(kind).str();
  }
}

TEST(SimulatorTest, DetectsWrongShapesAndDivergentReplicas) {
  DeviceMesh mesh = makeMesh({2});
  HostTensor global = iotaTensor({4, 2});
  std::vector<HostTensor> locals =
      llvm::cantFail(shardTensor(mesh, global, {R()}));
  locals[1].data[0] += 1;
  EXPECT_EQ(errorMessage(
                assembleTensor(mesh, global.shape, locals, {R()}).takeError()),
            "rank 1 and rank 0 are replicas under [R] but hold different "
            "values");
  std::vector<RedistributeStep> steps = plan({4, 2}, {2}, {S(0)}, {R()});
  EXPECT_EQ(
      errorMessage(applyRedistributeStep(mesh, global.shape, steps[0], locals)),
      "rank 0 holds a local tensor of shape [4, 2] with 8 values; under "
      "[S(0)] it must have shape [2, 2]");
}

//===----------------------------------------------------------------------===//
// Property sweep
//===----------------------------------------------------------------------===//

/// One family of the sweep: every pair of placements lists over `alphabet`
/// (lists mixing partial kinds are not layouts and are left out).
struct SweepConfig {
  SmallVector<int64_t> meshSizes;
  SmallVector<int64_t> shape;
  SmallVector<Placement> alphabet;
};

std::ostream &operator<<(std::ostream &os, const SweepConfig &config) {
  return os << "mesh " << format(config.meshSizes) << " shape "
            << format(config.shape) << " alphabet " << format(config.alphabet);
}

/// Every placements list over `alphabet` that is a layout.
std::vector<SmallVector<Placement>> allLayouts(const SweepConfig &config) {
  std::vector<SmallVector<Placement>> layouts = {{}};
  for (size_t axis = 0; axis < config.meshSizes.size(); ++axis) {
    std::vector<SmallVector<Placement>> longer;
    for (const SmallVector<Placement> &prefix : layouts)
      for (Placement p : config.alphabet) {
        longer.push_back(prefix);
        longer.back().push_back(p);
      }
    layouts = std::move(longer);
  }
  llvm::erase_if(layouts, [&](const SmallVector<Placement> &placements) {
    llvm::Error err =
        verifyPlacements(config.shape, config.meshSizes, placements);
    bool invalid = static_cast<bool>(err);
    llvm::consumeError(std::move(err));
    return invalid;
  });
  return layouts;
}

/// Plans and simulates from -> to; returns a description of the first
/// failure, or an empty string.
std::string checkRedistribution(const DeviceMesh &mesh,
                                const HostTensor &global,
                                ArrayRef<Placement> from,
                                ArrayRef<Placement> to) {
  llvm::Expected<std::vector<RedistributeStep>> steps =
      planRedistribution(global.shape, mesh.getSizes(), from, to);
  if (!steps)
    return "planning failed: " + llvm::toString(steps.takeError());
  std::vector<HostTensor> locals =
      llvm::cantFail(shardTensor(mesh, global, from));
  SmallVector<Placement> current(from);
  for (const RedistributeStep &step : *steps) {
    if (step.before != current)
      return "step " + step.str() + " does not start where the last ended";
    for (const Placement &p :
         ArrayRef(step.before).drop_front(step.meshAxis + 1))
      if ((step.unshardDim && p.isShard(*step.unshardDim)) ||
          (step.shardDim && p.isShard(*step.shardDim)))
        return "step " + step.str() + " touches a dim an inner axis shards";
    if (llvm::Error err =
            applyRedistributeStep(mesh, global.shape, step, locals))
      return "step " + step.str() + ": " + llvm::toString(std::move(err));
    // Every intermediate layout still holds the tensor.
    llvm::Expected<HostTensor> assembled =
        assembleTensor(mesh, global.shape, locals, step.after);
    if (!assembled)
      return "after " + step.str() + ": " +
             llvm::toString(assembled.takeError());
    if (*assembled != global)
      return "after " + step.str() + ": the tensor changed";
    current = step.after;
  }
  if (current != SmallVector<Placement>(to))
    return "the plan ends at " + format(current);
  llvm::Expected<HostTensor> assembled =
      assembleTensor(mesh, global.shape, locals, to);
  if (!assembled)
    return "at the end: " + llvm::toString(assembled.takeError());
  if (*assembled != global)
    return "at the end: the tensor changed";
  // Partial parts may legitimately differ from shardTensor's split; the
  // assembly checked their shapes, replicas and reduced value.
  if (llvm::any_of(to, [](const Placement &p) { return p.isPartial(); }))
    return "";
  std::vector<HostTensor> expected =
      llvm::cantFail(shardTensor(mesh, global, to));
  for (auto [rank, local] : llvm::enumerate(locals))
    if (local != expected[rank])
      return "rank " + std::to_string(rank) +
             " does not hold its shard under " + format(to);
  return "";
}

class RedistributionSweep : public ::testing::TestWithParam<SweepConfig> {};

TEST_P(RedistributionSweep, EveryRankEndsWithItsShard) {
  const SweepConfig &config = GetParam();
  DeviceMesh mesh = makeMesh(config.meshSizes);
  HostTensor global = iotaTensor(config.shape);
  std::vector<SmallVector<Placement>> layouts = allLayouts(config);
  int64_t cases = 0, failures = 0;
  for (const SmallVector<Placement> &from : layouts)
    for (const SmallVector<Placement> &to : layouts) {
      std::string failure = checkRedistribution(mesh, global, from, to);
      ++cases;
      if (failure.empty())
        continue;
      if (++failures <= 10)
        ADD_FAILURE() << format(from) << " -> " << format(to) << ": "
                      << failure;
    }
  EXPECT_EQ(failures, 0) << "of " << cases << " cases";
  RecordProperty("cases", cases);
  std::cout << "[ sweep    ] " << config << ": " << cases - failures << "/"
            << cases << " passed\n";
}

SmallVector<Placement> shardsAndPartial(int64_t rank, ReduceKind kind) {
  SmallVector<Placement> alphabet = {R(), P(kind)};
  for (int64_t d = 0; d < rank; ++d)
    alphabet.push_back(S(d));
  return alphabet;
}

INSTANTIATE_TEST_SUITE_P(
    Sum, RedistributionSweep,
    ::testing::Values(
        SweepConfig{{4}, {10, 3}, shardsAndPartial(2, ReduceKind::Sum)},
        SweepConfig{{4}, {5, 3}, shardsAndPartial(2, ReduceKind::Sum)},
        SweepConfig{{2, 2}, {4, 6}, shardsAndPartial(2, ReduceKind::Sum)},
        SweepConfig{{2, 2}, {5, 7}, shardsAndPartial(2, ReduceKind::Sum)},
        SweepConfig{{2, 3}, {4, 6}, shardsAndPartial(2, ReduceKind::Sum)},
        SweepConfig{{2, 3}, {5, 7}, shardsAndPartial(2, ReduceKind::Sum)},
        SweepConfig{{3, 2}, {10, 1}, shardsAndPartial(2, ReduceKind::Sum)},
        SweepConfig{{4, 2}, {10, 3}, shardsAndPartial(2, ReduceKind::Sum)},
        SweepConfig{{2, 3}, {3, 4, 5}, shardsAndPartial(3, ReduceKind::Sum)},
        SweepConfig{{2, 2, 2}, {4, 6}, shardsAndPartial(2, ReduceKind::Sum)},
        SweepConfig{{2, 2, 2}, {5, 7}, shardsAndPartial(2, ReduceKind::Sum)},
        SweepConfig{{2, 1, 3}, {3, 4, 5}, shardsAndPartial(3, ReduceKind::Sum)},
        SweepConfig{{2, 2, 2}, {0, 3}, shardsAndPartial(2, ReduceKind::Sum)}));

INSTANTIATE_TEST_SUITE_P(
    OtherReductions, RedistributionSweep,
    ::testing::Values(
        SweepConfig{{2, 3}, {5, 7}, shardsAndPartial(2, ReduceKind::Avg)},
        SweepConfig{{2, 3}, {5, 7}, shardsAndPartial(2, ReduceKind::Max)},
        SweepConfig{{2, 2}, {5, 3}, shardsAndPartial(2, ReduceKind::Min)},
        // Pairs that change the partial kind.
        SweepConfig{{2, 2},
                    {5, 3},
                    {R(), S(0), S(1), P(ReduceKind::Sum), P(ReduceKind::Max)}},
        SweepConfig{{2, 3},
                    {4, 5},
                    {R(), S(0), P(ReduceKind::Avg), P(ReduceKind::Min)}}));

} // namespace
