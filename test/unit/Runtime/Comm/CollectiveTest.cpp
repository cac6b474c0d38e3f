//===- CollectiveTest.cpp - every collective on meshes of thread ranks ----===//

#include "CollectiveChecks.h"
#include "ThreadJob.h"
#include "comm/MeshGroups.h"
#include "comm/SelfCommunicator.h"

#include "gtest/gtest.h"

#include <map>

using namespace titan::rt;
using namespace titan::rt::test;

namespace {

constexpr std::chrono::seconds kConnectTimeout(60);

/// The groups each rank must get: groups[rank][set] in group order.
using ExpectedGroups = std::vector<std::vector<std::vector<int64_t>>>;

/// A mesh whose axes are named a0, a1, ...
MeshShape makeMesh(std::vector<int64_t> sizes) {
  MeshShape mesh;
  for (size_t axis = 0; axis < sizes.size(); ++axis)
    mesh.axisNames.push_back("a" + std::to_string(axis));
  mesh.axisSizes = std::move(sizes);
  return mesh;
}

/// Connects `axisSets` of `mesh` on every rank of `job` and checks every
/// collective of every communicator; `groups` are the groups to expect
/// (getGroupRanks' when empty).
void checkMesh(const ThreadJob &job, const MeshShape &mesh,
               const std::vector<std::vector<int>> &axisSets,
               const ExpectedGroups &groups = {}) {
  std::vector<Status> statuses = job.run([&](int64_t rank) -> Status {
    std::vector<std::unique_ptr<Communicator>> communicators;
    TITANRT_RETURN_IF_ERROR(connectCommunicators(job.getEnvironment(rank), mesh,
                                                 axisSets, kConnectTimeout,
                                                 communicators));
    if (communicators.size() != axisSets.size())
      return Status::internal("expected one communicator per axis set");
    int64_t checks = 0;
    for (size_t set = 0; set < axisSets.size(); ++set) {
      std::vector<int64_t> group =
          groups.empty() ? getGroupRanks(mesh, axisSets[set], rank)
                         : groups[rank][set];
      TITANRT_RETURN_IF_ERROR(
          checkCollectives(*communicators[set], group, rank, checks));
    }
    return Status::success();
  });
  for (size_t rank = 0; rank < statuses.size(); ++rank)
    EXPECT_TRUE(statuses[rank].ok())
        << "rank " << rank << ": " << statuses[rank].getMessage();
}

TEST(Collectives, TwoByTwoMeshGroupsInRowMajorOrder) {
  // Rank r sits at (r / 2, r % 2). Over (a1, a0) the group is ordered with
  // a1 outer.
  ExpectedGroups groups = {
      {{0, 2}, {0, 1}, {0, 1, 2, 3}, {0, 2, 1, 3}},
      {{1, 3}, {0, 1}, {0, 1, 2, 3}, {0, 2, 1, 3}},
      {{0, 2}, {2, 3}, {0, 1, 2, 3}, {0, 2, 1, 3}},
      {{1, 3}, {2, 3}, {0, 1, 2, 3}, {0, 2, 1, 3}},
  };
  ThreadJob job(4);
  checkMesh(job, makeMesh({2, 2}), {{0}, {1}, {0, 1}, {1, 0}}, groups);
}

TEST(Collectives, OneByFourAndFourByOne) {
  ExpectedGroups groups = {{{0}, {0, 1, 2, 3}, {0, 1, 2, 3}},
                           {{1}, {0, 1, 2, 3}, {0, 1, 2, 3}},
                           {{2}, {0, 1, 2, 3}, {0, 1, 2, 3}},
                           {{3}, {0, 1, 2, 3}, {0, 1, 2, 3}}};
  ThreadJob oneByFour(4);
  checkMesh(oneByFour, makeMesh({1, 4}), {{0}, {1}, {0, 1}}, groups);

  ExpectedGroups transposed = {{{0, 1, 2, 3}, {0}, {0, 1, 2, 3}},
                               {{0, 1, 2, 3}, {1}, {0, 1, 2, 3}},
                               {{0, 1, 2, 3}, {2}, {0, 1, 2, 3}},
                               {{0, 1, 2, 3}, {3}, {0, 1, 2, 3}}};
  ThreadJob fourByOne(4);
  checkMesh(fourByOne, makeMesh({4, 1}), {{0}, {1}, {0, 1}}, transposed);
}

TEST(Collectives, EightRanksOnThreeAxes) {
  ThreadJob job(8);
  checkMesh(job, makeMesh({2, 2, 2}), {{0}, {2}, {0, 2}, {1, 2}, {0, 1, 2}});
}

TEST(Collectives, RankZeroHostsTheStoreWithoutALauncher) {
  ThreadJob job(4, /*standalone=*/true);
  checkMesh(job, makeMesh({2, 2}), {{1}, {0, 1}});
}

TEST(Collectives, ARestartedJobDoesNotReadStaleKeys) {
  // The same store serves both attempts; the second one's prefix differs.
  ThreadJob job(2);
  checkMesh(job, makeMesh({2}), {{0}});
  std::vector<Status> statuses = job.run([&](int64_t rank) -> Status {
    LaunchEnvironment env = job.getEnvironment(rank);
    env.restartCount = 1;
    std::vector<std::unique_ptr<Communicator>> communicators;
    TITANRT_RETURN_IF_ERROR(connectCommunicators(
        env, makeMesh({2}), {{0}}, kConnectTimeout, communicators));
    int64_t checks = 0;
    return checkCollectives(*communicators[0], {0, 1}, rank, checks);
  });
  for (const Status &status : statuses)
    EXPECT_TRUE(status.ok()) << status.getMessage();
}

TEST(Collectives, AJobOfOneRankNeedsNoStore) {
  // No store listens: a job of one rank never looks for one.
  LaunchEnvironment env;
  env.masterPort = findFreePort();
  std::vector<std::unique_ptr<Communicator>> communicators;
  Status status = connectCommunicators(env, makeMesh({1, 1}), {{0}, {0, 1}},
                                       std::chrono::seconds(1), communicators);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  int64_t checks = 0;
  for (auto &communicator : communicators) {
    Status checked = checkCollectives(*communicator, {0}, 0, checks);
    EXPECT_TRUE(checked.ok()) << checked.getMessage();
  }
  EXPECT_GT(checks, 0);
}

/// A connector standing for another library: records what it was asked
/// and makes one SelfCommunicator per axis set.
struct RecordingConnector {
  bool hadStore = false;
  std::vector<std::vector<int>> axisSets;
  std::vector<const Communicator *> made;

  CommunicatorConnector get() {
    return [this](StoreClient *store, const LaunchEnvironment &,
                  const MeshShape &, const std::vector<std::vector<int>> &sets,
                  std::chrono::milliseconds, const std::shared_ptr<Watchdog> &,
                  std::vector<std::unique_ptr<Communicator>> &communicators) {
      hadStore = store != nullptr;
      axisSets = sets;
      for (size_t set = 0; set < sets.size(); ++set) {
        communicators.push_back(std::make_unique<SelfCommunicator>("external"));
        made.push_back(communicators.back().get());
      }
      return Status::success();
    };
  }
};

TEST(Collectives, AnotherLibraryConnectsTheFirstAxisSets) {
  // The first two sets are the connector's (the CUDA backend's NCCL), in
  // order and at their indices; Gloo connects the last, which works.
  ThreadJob job(4);
  MeshShape mesh = makeMesh({2, 2});
  std::vector<RecordingConnector> connectors(4);
  std::vector<Status> statuses = job.run([&](int64_t rank) -> Status {
    std::vector<std::unique_ptr<Communicator>> communicators;
    std::shared_ptr<Watchdog> watchdog;
    TITANRT_RETURN_IF_ERROR(connectCommunicators(
        job.getEnvironment(rank), mesh, {{0}, {1}, {0, 1}}, kConnectTimeout,
        communicators, watchdog, {2, connectors[rank].get()}));
    if (communicators.size() != 3 ||
        communicators[0].get() != connectors[rank].made.at(0) ||
        communicators[1].get() != connectors[rank].made.at(1))
      return Status::internal("the connector's communicators are not first");
    int64_t checks = 0;
    return checkCollectives(*communicators[2], {0, 1, 2, 3}, rank, checks);
  });
  for (size_t rank = 0; rank < statuses.size(); ++rank) {
    EXPECT_TRUE(statuses[rank].ok())
        << "rank " << rank << ": " << statuses[rank].getMessage();
    EXPECT_TRUE(connectors[rank].hadStore);
    EXPECT_EQ(connectors[rank].axisSets,
              (std::vector<std::vector<int>>{{0}, {1}}));
  }
}

TEST(Collectives, AnotherLibraryConnectsAJobOfOneRankWithoutAStore) {
  LaunchEnvironment env;
  env.masterPort = findFreePort();
  RecordingConnector connector;
  std::vector<std::unique_ptr<Communicator>> communicators;
  std::shared_ptr<Watchdog> watchdog;
  Status status = connectCommunicators(env, makeMesh({1}), {{0}, {0}},
                                       std::chrono::seconds(1), communicators,
                                       watchdog, {1, connector.get()});
  ASSERT_TRUE(status.ok()) << status.getMessage();
  ASSERT_EQ(communicators.size(), 2u);
  EXPECT_EQ(communicators[0].get(), connector.made.at(0));
  EXPECT_FALSE(connector.hadStore);

  status =
      connectCommunicators(env, makeMesh({1}), {{0}}, std::chrono::seconds(1),
                           communicators, watchdog, {2, connector.get()});
  EXPECT_EQ(status.getMessage(),
            "rank 0 of 1: cannot leave 2 of 1 communicators to another "
            "library");
  status =
      connectCommunicators(env, makeMesh({1}), {{0}}, std::chrono::seconds(1),
                           communicators, watchdog, {1, nullptr});
  EXPECT_EQ(status.getMessage(),
            "rank 0 of 1: cannot leave 1 of 1 communicators to another "
            "library without its connector");
}

} // namespace
