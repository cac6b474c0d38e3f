//===- WatchdogTest.cpp - progress, heartbeats and timed out collectives --===//

#include "ThreadJob.h"

#include "comm/Progress.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <atomic>
#include <thread>

using namespace titan::rt;
using namespace titan::rt::test;
using testing::ContainsRegex;
using testing::HasSubstr;

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

/// The mesh axes of communicators 0 and 1 in the messages below.
const std::vector<std::string> kAxes = {"(tp)", "(pp)"};

/// A heartbeat taken at 100 s past the epoch by a rank beating every 0.5 s,
/// at `step` in `phase`.
Heartbeat makeBeat(int64_t step, RankPhase phase,
                   std::vector<CommunicatorState> communicators = {}) {
  Heartbeat beat;
  beat.unixMilliseconds = 100000;
  beat.intervalMilliseconds = 500;
  beat.step = step;
  beat.phase = phase;
  beat.communicators = std::move(communicators);
  return beat;
}

TEST(Progress, NumbersTheCollectivesOfEachCommunicator) {
  RankProgress progress(2);
  EXPECT_EQ(progress.enter(0, CollectiveKind::AllGather), 1u);
  Heartbeat beat = progress.snapshot(1234, 250);
  EXPECT_EQ(beat.unixMilliseconds, 1234);
  EXPECT_EQ(beat.intervalMilliseconds, 250);
  ASSERT_EQ(beat.communicators.size(), 2u);
  EXPECT_EQ(beat.communicators[0].sequence, 1u);
  EXPECT_EQ(beat.communicators[0].kind, CollectiveKind::AllGather);
  EXPECT_TRUE(beat.communicators[0].inside);
  EXPECT_EQ(beat.communicators[1].sequence, 0u);
  EXPECT_FALSE(beat.communicators[1].inside);

  progress.leave(0);
  EXPECT_FALSE(progress.snapshot(0, 0).communicators[0].inside);
  // Send and recv are not numbered: only two members take part.
  EXPECT_EQ(progress.enter(0, CollectiveKind::Recv), 1u);
  beat = progress.snapshot(0, 0);
  EXPECT_EQ(beat.communicators[0].kind, CollectiveKind::Recv);
  EXPECT_TRUE(beat.communicators[0].inside);
  progress.leave(0);
  EXPECT_EQ(progress.enter(0, CollectiveKind::ReduceScatter), 2u);
  EXPECT_EQ(progress.enter(1, CollectiveKind::Barrier), 1u);
  beat = progress.snapshot(0, 0);
  EXPECT_EQ(beat.communicators[0].sequence, 2u);
  EXPECT_EQ(beat.communicators[0].kind, CollectiveKind::ReduceScatter);
  EXPECT_EQ(beat.communicators[1].kind, CollectiveKind::Barrier);
  EXPECT_TRUE(beat.communicators[1].inside);

  EXPECT_EQ(beat.step, 0);
  EXPECT_EQ(beat.phase, RankPhase::Starting);
  progress.setStep(7, RankPhase::ReadingBatch);
  progress.setPhase(RankPhase::Computing);
  beat = progress.snapshot(0, 0);
  EXPECT_EQ(beat.step, 7);
  EXPECT_EQ(beat.phase, RankPhase::Computing);
}

TEST(Progress, HeartbeatsRoundTripThroughTheirText) {
  Heartbeat beat = makeBeat(12, RankPhase::Checkpointing,
                            {{57, CollectiveKind::AllReduce, true},
                             {3, CollectiveKind::Send, false}});
  std::string text = encodeHeartbeat(beat);
  EXPECT_EQ(text, "titan-heartbeat 1 100000 500 12 4 2 57 2 1 3 6 0");
  Heartbeat decoded;
  ASSERT_TRUE(decodeHeartbeat(text, decoded));
  EXPECT_EQ(encodeHeartbeat(decoded), text);

  for (const char *bad :
       {"", "titan-heartbeat", "titan-heartbeat 2 100000 500 12 4 0",
        "heartbeat 1 100000 500 12 4 0", "titan-heartbeat 1 100000 500 12 9 0",
        "titan-heartbeat 1 100000 500 12 4 1 57 8 1",
        "titan-heartbeat 1 100000 500 12 4 1 57 2 2",
        "titan-heartbeat 1 100000 500 12 4 2 57 2 1",
        "titan-heartbeat 1 100000 500 12 4 0 extra"})
    EXPECT_FALSE(decodeHeartbeat(bad, decoded)) << bad;
}

TEST(Progress, DescribesWhatAHeartbeatSays) {
  EXPECT_EQ(describeHeartbeat(makeBeat(7, RankPhase::Computing), 100400, kAxes),
            "last seen 0.4 s ago at step 7, computing");
  EXPECT_EQ(describeHeartbeat(makeBeat(7, RankPhase::Computing,
                                       {{12, CollectiveKind::AllGather, true},
                                        {4, CollectiveKind::Recv, true}}),
                              100200, kAxes),
            "last seen 0.2 s ago at step 7, inside all_gather #12 over mesh "
            "axes (tp) and recv over mesh axes (pp)");
  EXPECT_EQ(describeHeartbeat(makeBeat(0, RankPhase::Starting), 100100, kAxes),
            "last seen 0.1 s ago, before its first step");
  // Three intervals without a heartbeat: the rank is not running.
  EXPECT_EQ(
      describeHeartbeat(makeBeat(7, RankPhase::ReadingBatch), 109000, kAxes),
      "no heartbeat for 9.0 s (stopped, hung or dead), the last at step "
      "7, reading the batch");
  EXPECT_EQ(describeHeartbeat(makeBeat(0, RankPhase::Starting,
                                       {{1, CollectiveKind::Barrier, true}}),
                              102000, kAxes),
            "no heartbeat for 2.0 s (stopped, hung or dead), the last inside "
            "barrier #1 over mesh axes (tp)");
  EXPECT_EQ(describeHeartbeat(makeBeat(7, RankPhase::Failed), 101200, kAxes),
            "it left the job 1.2 s ago at step 7, after an error");
  EXPECT_EQ(describeHeartbeat(makeBeat(9, RankPhase::Finished), 100000, kAxes),
            "it left the job 0.0 s ago at step 9");
  // A clock a little behind the publisher's is not a negative age.
  EXPECT_EQ(
      describeHeartbeat(makeBeat(7, RankPhase::BetweenSteps), 99900, kAxes),
      "last seen 0.0 s ago at step 7, between steps");
}

TEST(Progress, ATimeoutNamesTheMembersThatDidNotArrive) {
  std::vector<MemberHeartbeat> members = {
      // Still at collective 56, and silent for 3.2 s.
      {1, makeBeat(12, RankPhase::Computing,
                   {{56, CollectiveKind::AllReduce, false}})},
      // Waiting inside collective 57 like this rank.
      {2, makeBeat(12, RankPhase::Computing,
                   {{57, CollectiveKind::AllReduce, true}})},
      {3, std::nullopt},
      // Arrived, then stopped.
      {4, makeBeat(12, RankPhase::Computing,
                   {{57, CollectiveKind::AllReduce, true}})},
  };
  members[1].beat->unixMilliseconds = 103100;
  EXPECT_EQ(
      describeTimeout(CollectiveKind::AllReduce, 0, 57, members, 103200, kAxes),
      "at all_reduce #57 of the group, rank 1 did not arrive: no "
      "heartbeat for 3.2 s (stopped, hung or dead), the last at step 12, "
      "computing; rank 3 did not arrive: it never sent a heartbeat; "
      "rank 4 arrived but did not finish: no heartbeat for 3.2 s "
      "(stopped, hung or dead), the last at step 12, inside all_reduce "
      "#57 over mesh axes (tp)");

  EXPECT_EQ(describeTimeout(CollectiveKind::AllReduce, 0, 57, {members[1]},
                            103200, kAxes),
            "at all_reduce #57 of the group, every other member had arrived by "
            "its last heartbeat");

  // A heartbeat from a rank with fewer communicators did not arrive.
  EXPECT_EQ(describeTimeout(CollectiveKind::Barrier, 1, 3, {members[0]}, 100300,
                            kAxes),
            "at barrier #3 of the group, rank 1 did not arrive: last seen 0.3 "
            "s ago at step 12, computing");

  EXPECT_EQ(
      describeTimeout(CollectiveKind::Recv, 1, 0, {members[1]}, 103200, kAxes),
      "peer rank 2: last seen 0.1 s ago at step 12, inside all_reduce "
      "#57 over mesh axes (tp)");
  EXPECT_EQ(
      describeTimeout(CollectiveKind::Send, 1, 0, {members[2]}, 103200, kAxes),
      "peer rank 3: it never sent a heartbeat");

  std::vector<MemberHeartbeat> many;
  for (int64_t rank = 0; rank < 11; ++rank)
    many.push_back({rank, std::nullopt});
  std::string text =
      describeTimeout(CollectiveKind::AllGather, 0, 1, many, 0, kAxes);
  EXPECT_THAT(text, HasSubstr("rank 7 did not arrive: it never sent a "
                              "heartbeat; and 3 more"));
  EXPECT_THAT(text, testing::Not(HasSubstr("rank 8 ")));
}

/// Connects `rank` of `job` with two communicators over the same axis and
/// collectives that time out after `collectiveTimeout`.
Status connectTwice(const ThreadJob &job, int64_t rank,
                    milliseconds collectiveTimeout,
                    std::vector<std::unique_ptr<Communicator>> &communicators) {
  LaunchEnvironment env = job.getEnvironment(rank);
  env.collectiveTimeout = collectiveTimeout;
  return connectCommunicators(env, MeshShape{{"a0"}, {2}}, {{0}, {0}},
                              seconds(60), communicators);
}

TEST(Watchdog, ATimedOutCollectiveNamesWhatThePeerDoesInstead) {
  // Rank 0 all-reduces on communicator 0 while rank 1 waits in a barrier on
  // communicator 1: each times out naming the other. Rank 1 waits longer,
  // so rank 0 sees it inside its barrier, and it sees rank 0 out of its
  // all-reduce (rank 0 keeps its communicators until then: closing them
  // would end rank 1's barrier at once).
  ThreadJob job(2);
  std::atomic<bool> secondDone{false};
  std::vector<Status> statuses = job.run([&](int64_t rank) -> Status {
    std::vector<std::unique_ptr<Communicator>> communicators;
    TITANRT_RETURN_IF_ERROR(connectTwice(
        job, rank, rank == 0 ? seconds(2) : seconds(4), communicators));
    if (rank == 1) {
      Status status = communicators[1]->barrier();
      secondDone = true;
      return status;
    }
    float data[2] = {1, 2};
    Status status =
        communicators[0]->allReduce(TITANRT_F32, TITANRT_SUM, data, data, 2);
    while (!secondDone)
      std::this_thread::sleep_for(milliseconds(10));
    return status;
  });
  EXPECT_EQ(statuses[0].getCode(), TITANRT_ERROR_COMMUNICATION);
  EXPECT_THAT(statuses[0].getMessage(),
              ContainsRegex("^all_reduce over mesh axes \\(a0\\) \\[ranks 0, "
                            "1\\]: .*2000ms.*; at all_reduce #1 of the group, "
                            "rank 1 did not arrive: (last seen [0-9.]+ s "
                            "ago,|no heartbeat for .*, the last) inside "
                            "barrier #1 over mesh axes \\(a0\\)$"));
  EXPECT_EQ(statuses[1].getCode(), TITANRT_ERROR_COMMUNICATION);
  EXPECT_THAT(statuses[1].getMessage(),
              ContainsRegex("^barrier over mesh axes \\(a0\\) \\[ranks 0, "
                            "1\\]: .*4000ms.*; at barrier #1 of the group, "
                            "rank 0 did not arrive: (last seen [0-9.]+ s "
                            "ago,|no heartbeat for .*, the last) before its "
                            "first step$"));
}

TEST(Watchdog, RankZeroHostsTheStoreUntilEveryRankIsDone) {
  // No launcher: rank 0 hosts the store, and keeps it after connecting, so
  // rank 1's timeout still reads rank 0's heartbeat.
  ThreadJob job(2, /*standalone=*/true);
  std::atomic<bool> timedOut{false};
  std::vector<Status> statuses = job.run([&](int64_t rank) -> Status {
    std::vector<std::unique_ptr<Communicator>> communicators;
    TITANRT_RETURN_IF_ERROR(
        connectTwice(job, rank, milliseconds(2000), communicators));
    if (rank == 0) {
      while (!timedOut)
        std::this_thread::sleep_for(milliseconds(10));
      return Status::success();
    }
    uint8_t data[4] = {};
    Status status = communicators[0]->recv(0, 5, data, sizeof(data));
    timedOut = true;
    return status;
  });
  EXPECT_TRUE(statuses[0].ok()) << statuses[0].getMessage();
  EXPECT_THAT(statuses[1].getMessage(),
              ContainsRegex("^recv over mesh axes \\(a0\\) \\[ranks 0, 1\\]: "
                            "receiving from group rank 0 \\(world rank 0\\): "
                            ".*; peer rank 0: (last seen [0-9.]+ s ago,|no "
                            "heartbeat for .*, the last) before its first "
                            "step$"));
}

} // namespace
