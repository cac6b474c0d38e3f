//===- NcclGroupsTest.cpp - a rank's place in each split of the world -----===//

#include "comm/nccl/NcclGroups.h"
#include "comm/MeshGroups.h"

#include "gtest/gtest.h"

#include <map>
#include <set>

using namespace titan::rt;

namespace {

using Ranks = std::vector<int64_t>;

TEST(NcclGroups, ColorIsTheFirstMemberAndKeyTheIndexInGroupOrder) {
  // 2 x 2 x 2: rank r sits at (r / 4, r / 2 % 2, r % 2).
  MeshShape mesh{{"a", "b", "c"}, {2, 2, 2}};
  NcclSplit split = getNcclSplit(mesh, {0, 2}, 3);
  EXPECT_EQ(split.ranks, (Ranks{2, 3, 6, 7}));
  EXPECT_EQ(split.color, 2);
  EXPECT_EQ(split.key, 1);
  // The set's order is the group order: the first axis is outer.
  split = getNcclSplit(mesh, {2, 0}, 3);
  EXPECT_EQ(split.ranks, (Ranks{2, 6, 3, 7}));
  EXPECT_EQ(split.color, 2);
  EXPECT_EQ(split.key, 2);
  // No axes: a group of one.
  split = getNcclSplit(mesh, {}, 5);
  EXPECT_EQ(split.ranks, (Ranks{5}));
  EXPECT_EQ(split.color, 5);
  EXPECT_EQ(split.key, 0);
}

/// Checks every rank's split of `mesh` over `axes` against MeshGroups:
/// the ranks of one group share a color no other group has, and each
/// member's key is its index in the group order.
void checkSplitAgreesWithMeshGroups(const MeshShape &mesh,
                                    const std::vector<int> &axes) {
  int64_t worldSize = 1;
  for (int64_t size : mesh.axisSizes)
    worldSize *= size;
  std::map<int, Ranks> groupOfColor;
  std::map<int, std::set<int>> keysOfColor;
  for (int64_t rank = 0; rank < worldSize; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank) + " over " +
                 describeAxes(mesh, axes));
    NcclSplit split = getNcclSplit(mesh, axes, rank);
    Ranks group = getGroupRanks(mesh, axes, rank);
    EXPECT_EQ(split.ranks, group);
    EXPECT_GE(split.color, 0);
    ASSERT_GE(split.key, 0);
    ASSERT_LT(split.key, static_cast<int>(group.size()));
    EXPECT_EQ(group[split.key], rank);
    auto [entry, inserted] = groupOfColor.emplace(split.color, group);
    if (!inserted) {
      EXPECT_EQ(entry->second, group)
          << "two groups share color " << split.color;
    }
    EXPECT_TRUE(keysOfColor[split.color].insert(split.key).second)
        << "two members of a group share key " << split.key;
  }
  // Every rank is in exactly one group, and every group has keys
  // 0..size-1.
  std::set<int64_t> covered;
  for (const auto &[color, group] : groupOfColor) {
    for (int64_t member : group)
      EXPECT_TRUE(covered.insert(member).second)
          << "rank " << member << " is in two groups";
    std::set<int> expectedKeys;
    for (int key = 0; key < static_cast<int>(group.size()); ++key)
      expectedKeys.insert(key);
    EXPECT_EQ(keysOfColor[color], expectedKeys);
  }
  EXPECT_EQ(static_cast<int64_t>(covered.size()), worldSize);
}

TEST(NcclGroups, EveryRankOfATwoByTwoByTwoMeshAgreesWithMeshGroups) {
  MeshShape mesh{{"dp", "fsdp", "tp"}, {2, 2, 2}};
  const std::vector<std::vector<int>> axisSets = {
      {},     {0},    {1},       {2},       {0, 1},    {1, 0},   {0, 2},
      {2, 0}, {1, 2}, {0, 1, 2}, {2, 1, 0}, {1, 0, 2}, {2, 0, 1}};
  for (const std::vector<int> &axes : axisSets)
    checkSplitAgreesWithMeshGroups(mesh, axes);
}

TEST(NcclGroups, UnevenMeshesAndAxesOfSizeOne) {
  checkSplitAgreesWithMeshGroups(MeshShape{{"dp", "tp"}, {2, 3}}, {1});
  checkSplitAgreesWithMeshGroups(MeshShape{{"dp", "tp"}, {2, 3}}, {1, 0});
  checkSplitAgreesWithMeshGroups(
      MeshShape{{"pp", "dp", "cp", "tp"}, {3, 1, 2, 2}}, {0, 2});
  checkSplitAgreesWithMeshGroups(
      MeshShape{{"pp", "dp", "cp", "tp"}, {3, 1, 2, 2}}, {1});
}

} // namespace
