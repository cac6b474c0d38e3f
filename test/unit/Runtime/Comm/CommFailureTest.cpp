//===- CommFailureTest.cpp - missing peers, dead peers, bad arguments -----===//

#include "ThreadJob.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <atomic>
#include <thread>

using namespace titan::rt;
using namespace titan::rt::test;
using testing::HasSubstr;

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

/// A generous bound on how long a failure may take to surface.
constexpr seconds kFailureBound(30);

MeshShape makeLine(int64_t ranks) { return MeshShape{{"a0"}, {ranks}}; }

/// Connects a two-rank line with collectives that time out after
/// `collectiveTimeout`, runs `first` on rank 0 and `second` on rank 1, and
/// returns their Statuses.
std::vector<Status>
runPair(milliseconds collectiveTimeout,
        const std::function<Status(Communicator &)> &first,
        const std::function<Status(std::unique_ptr<Communicator> &)> &second) {
  ThreadJob job(2);
  return job.run([&](int64_t rank) -> Status {
    LaunchEnvironment env = job.getEnvironment(rank);
    env.collectiveTimeout = collectiveTimeout;
    std::vector<std::unique_ptr<Communicator>> communicators;
    TITANRT_RETURN_IF_ERROR(connectCommunicators(env, makeLine(2), {{0}},
                                                 seconds(60), communicators));
    return rank == 0 ? first(*communicators[0]) : second(communicators[0]);
  });
}

TEST(CommFailures, APeerThatNeverArrivesIsNamed) {
  ThreadJob job(2);
  Clock::time_point start = Clock::now();
  std::vector<Status> statuses = job.run(
      [&](int64_t rank) {
        std::vector<std::unique_ptr<Communicator>> communicators;
        return connectCommunicators(job.getEnvironment(rank), makeLine(2),
                                    {{0}}, seconds(1), communicators);
      },
      {0});
  EXPECT_LT(secondsSince(start), kFailureBound.count());
  EXPECT_EQ(statuses[0].getCode(), TITANRT_ERROR_COMMUNICATION);
  EXPECT_THAT(statuses[0].getMessage(),
              HasSubstr("rank 0 of 2: rank 1 of 2 did not reach the "
                        "rendezvous store at 127.0.0.1:" +
                        std::to_string(job.getStore()->getPort()) +
                        " within 1 s"));
}

TEST(CommFailures, NoStoreWhenRankZeroNeverComes) {
  ThreadJob job(2, /*standalone=*/true);
  LaunchEnvironment env = job.getEnvironment(1);
  Clock::time_point start = Clock::now();
  std::vector<std::unique_ptr<Communicator>> communicators;
  Status status = connectCommunicators(env, makeLine(2), {{0}},
                                       milliseconds(500), communicators);
  EXPECT_LT(secondsSince(start), kFailureBound.count());
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_COMMUNICATION);
  EXPECT_EQ(status.getMessage(),
            "rank 1 of 2: cannot reach the rendezvous store at 127.0.0.1:" +
                std::to_string(env.masterPort) +
                " after 0.5 s: connection refused");
}

TEST(CommFailures, APeerThatDiesMidCollectiveIsAnErrorNotAHang) {
  std::atomic<bool> firstDone{false};
  Clock::time_point start = Clock::now();
  std::vector<Status> statuses = runPair(
      /*collectiveTimeout=*/seconds(300),
      [&](Communicator &communicator) {
        std::vector<float> data(1000, 1.0f);
        Status failed = communicator.allReduce(TITANRT_F32, TITANRT_SUM,
                                               data.data(), data.data(), 1000);
        Status after = communicator.barrier();
        firstDone = true;
        EXPECT_EQ(after.getCode(), TITANRT_ERROR_COMMUNICATION);
        EXPECT_THAT(after.getMessage(),
                    HasSubstr("barrier over mesh axes (a0) [ranks 0, 1]: the "
                              "communicator is unusable after an earlier "
                              "failure"));
        return failed;
      },
      [&](std::unique_ptr<Communicator> &communicator) {
        // Rank 1 "dies": its connections close while rank 0 waits for it.
        std::this_thread::sleep_for(milliseconds(200));
        communicator.reset();
        return Status::success();
      });
  EXPECT_LT(secondsSince(start), kFailureBound.count());
  EXPECT_TRUE(firstDone);
  EXPECT_EQ(statuses[0].getCode(), TITANRT_ERROR_COMMUNICATION);
  EXPECT_THAT(statuses[0].getMessage(),
              HasSubstr("all_reduce over mesh axes (a0) [ranks 0, 1]: "));
  EXPECT_TRUE(statuses[1].ok()) << statuses[1].getMessage();
}

TEST(CommFailures, ACollectiveTimesOut) {
  std::atomic<bool> firstDone{false};
  Clock::time_point start = Clock::now();
  std::vector<Status> statuses = runPair(
      milliseconds(300),
      [&](Communicator &communicator) {
        std::vector<double> data(10, 1.0);
        Status status = communicator.allReduce(TITANRT_F64, TITANRT_MAX,
                                               data.data(), data.data(), 10);
        firstDone = true;
        return status;
      },
      [&](std::unique_ptr<Communicator> &) {
        // Alive but never joining.
        while (!firstDone)
          std::this_thread::sleep_for(milliseconds(10));
        return Status::success();
      });
  EXPECT_LT(secondsSince(start), kFailureBound.count());
  EXPECT_EQ(statuses[0].getCode(), TITANRT_ERROR_COMMUNICATION);
  EXPECT_THAT(statuses[0].getMessage(),
              HasSubstr("all_reduce over mesh axes (a0) [ranks 0, 1]: "));
  EXPECT_THAT(statuses[0].getMessage(), HasSubstr("300ms"));
}

TEST(CommFailures, ARecvThatTimesOutNamesThePeer) {
  std::atomic<bool> firstDone{false};
  std::vector<Status> statuses = runPair(
      milliseconds(300),
      [&](Communicator &communicator) {
        std::vector<uint8_t> data(16);
        Status status = communicator.recv(1, 7, data.data(), 16);
        firstDone = true;
        return status;
      },
      [&](std::unique_ptr<Communicator> &) {
        while (!firstDone)
          std::this_thread::sleep_for(milliseconds(10));
        return Status::success();
      });
  EXPECT_EQ(statuses[0].getCode(), TITANRT_ERROR_COMMUNICATION);
  EXPECT_THAT(statuses[0].getMessage(),
              HasSubstr("recv over mesh axes (a0) [ranks 0, 1]: receiving "
                        "from group rank 1 (world rank 1): Timed out "
                        "waiting 300ms for recv operation to complete"));
}

TEST(CommFailures, BadArgumentsFailOnEveryRankAndBreakNothing) {
  ThreadJob job(2);
  std::vector<Status> statuses = job.run([&](int64_t rank) -> Status {
    std::vector<std::unique_ptr<Communicator>> communicators;
    TITANRT_RETURN_IF_ERROR(connectCommunicators(
        job.getEnvironment(rank), MeshShape{{"a", "b"}, {2, 1}}, {{0}, {1}},
        seconds(60), communicators));
    Communicator &pair = *communicators[0];
    Communicator &alone = *communicators[1];
    float data[4] = {1, 2, 3, 4};
    struct Case {
      Status status;
      titanrt_status code;
      std::string message;
    };
    std::vector<Case> cases = {
        {pair.broadcast(2, data, data, 4), TITANRT_ERROR_INVALID_ARGUMENT,
         "broadcast over mesh axes (a) [ranks 0, 1]: root 2 is not a group "
         "index (the group has 2 ranks)"},
        {pair.allGather(data, data, -1), TITANRT_ERROR_INVALID_ARGUMENT,
         "all_gather over mesh axes (a) [ranks 0, 1]: bytes is -1"},
        {pair.allReduce(TITANRT_BOOL, TITANRT_SUM, data, data, 4),
         TITANRT_ERROR_UNSUPPORTED,
         "all_reduce over mesh axes (a) [ranks 0, 1]: reductions of i1 are "
         "not supported (reduce them as i32)"},
        {pair.reduceScatter(TITANRT_F32, titanrt_reduce(9), data, data, 2),
         TITANRT_ERROR_INVALID_ARGUMENT,
         "reduce_scatter over mesh axes (a) [ranks 0, 1]: unknown reduction 9 "
         "(expected sum, avg, max or min)"},
        {pair.send(rank, 0, data, 4), TITANRT_ERROR_INVALID_ARGUMENT,
         "send over mesh axes (a) [ranks 0, 1]: peer " + std::to_string(rank) +
             " is this rank itself"},
        {pair.recv(1 - rank, int64_t(1) << 32, data, 4),
         TITANRT_ERROR_INVALID_ARGUMENT,
         "recv over mesh axes (a) [ranks 0, 1]: tag 4294967296 is outside "
         "[0, 2^32)"},
        {alone.send(0, 0, data, 4), TITANRT_ERROR_INVALID_ARGUMENT,
         "send over mesh axes (b) [rank " + std::to_string(rank) +
             "]: peer 0 is this rank itself"},
    };
    for (const Case &expected : cases) {
      EXPECT_EQ(expected.status.getCode(), expected.code);
      EXPECT_EQ(expected.status.getMessage(), expected.message);
    }
    // The communicator still works.
    TITANRT_RETURN_IF_ERROR(
        pair.allReduce(TITANRT_F32, TITANRT_SUM, data, data, 4));
    if (data[3] != 8)
      return Status::internal("all_reduce after the errors is wrong");
    return Status::success();
  });
  for (const Status &status : statuses)
    EXPECT_TRUE(status.ok()) << status.getMessage();
}

TEST(CommFailures, TheMeshMustMatchTheJob) {
  ThreadJob job(2);
  std::vector<std::unique_ptr<Communicator>> communicators;
  Status status = connectCommunicators(job.getEnvironment(1),
                                       MeshShape{{"dp", "tp"}, {2, 2}}, {{0}},
                                       seconds(1), communicators);
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(status.getMessage(),
            "rank 1 of 2: the program's mesh (dp=2, tp=2) has 4 ranks but the "
            "job has WORLD_SIZE 2 (launch 4 ranks)");

  status = connectCommunicators(job.getEnvironment(1), makeLine(2), {{0, 1}},
                                seconds(1), communicators);
  EXPECT_EQ(status.getMessage(),
            "rank 1 of 2: communicator 0 names mesh axis 1 but the mesh "
            "(a0=2) has 1 axes");
  status = connectCommunicators(job.getEnvironment(1), makeLine(2), {{0, 0}},
                                seconds(1), communicators);
  EXPECT_EQ(status.getMessage(),
            "rank 1 of 2: communicator 0 names mesh axis 'a0' twice");
}

} // namespace
