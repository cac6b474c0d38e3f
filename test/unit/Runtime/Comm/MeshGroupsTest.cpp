//===- MeshGroupsTest.cpp - groups of ranks of a device mesh --------------===//

#include "comm/MeshGroups.h"

#include "gtest/gtest.h"

using namespace titan::rt;

namespace {

using Ranks = std::vector<int64_t>;

TEST(MeshGroups, RowMajorOverTheNamedAxesFirstOuter) {
  // A 2 x 3 mesh: rank r sits at (r / 3, r % 3).
  MeshShape mesh{{"dp", "tp"}, {2, 3}};
  EXPECT_EQ(getGroupRanks(mesh, {0}, 4), (Ranks{1, 4}));
  EXPECT_EQ(getGroupRanks(mesh, {1}, 4), (Ranks{3, 4, 5}));
  EXPECT_EQ(getGroupRanks(mesh, {0, 1}, 4), (Ranks{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(getGroupRanks(mesh, {1, 0}, 4), (Ranks{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(getGroupRanks(mesh, {}, 4), (Ranks{4}));
}

TEST(MeshGroups, ThreeAxes) {
  // 2 x 2 x 2: rank r sits at (r / 4, r / 2 % 2, r % 2).
  MeshShape mesh{{"a", "b", "c"}, {2, 2, 2}};
  EXPECT_EQ(getGroupRanks(mesh, {0, 2}, 3), (Ranks{2, 3, 6, 7}));
  EXPECT_EQ(getGroupRanks(mesh, {2, 0}, 3), (Ranks{2, 6, 3, 7}));
  EXPECT_EQ(getGroupRanks(mesh, {1}, 5), (Ranks{5, 7}));
  EXPECT_EQ(describeAxes(mesh, {2, 0}), "(c, a)");
}

TEST(MeshGroups, MeshErrors) {
  MeshShape mesh{{"dp", "tp"}, {2, 2}};
  EXPECT_TRUE(checkMesh(mesh, 4, {{0}, {1, 0}}).ok());
  EXPECT_EQ(checkMesh(MeshShape{{"dp"}, {2, 2}}, 4, {}).getMessage(),
            "the mesh has 1 axis names but 2 axis sizes");
  EXPECT_EQ(checkMesh(MeshShape{{"dp", "tp"}, {2, 0}}, 0, {}).getMessage(),
            "mesh axis 'tp' has size 0");
}

} // namespace
