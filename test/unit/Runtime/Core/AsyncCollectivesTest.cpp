//===- AsyncCollectivesTest.cpp - titanrt_start and titanrt_wait ----------===//
//
// Asynchronous collectives through the C entry points, on contexts of ranks
// that run as threads of the test and talk over Gloo on loopback
// (ThreadJob), or on a context of one rank.
//
//===----------------------------------------------------------------------===//

#include "ThreadJob.h"
#include "core/Context.h"
#include "cpu/CpuBackend.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <atomic>
#include <cstring>
#include <filesystem>
#include <thread>

#include <unistd.h>

using namespace titan::rt;
using namespace titan::rt::test;
using testing::HasSubstr;

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

/// How long a peer delays its part of a collective.
constexpr milliseconds kDelay(200);
/// Well under kDelay: "at once".
constexpr milliseconds kAtOnce(100);

/// Milliseconds since `start`.
double millisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

/// The Status of a runtime call on `ctx` that returned `code`.
Status check(titanrt_context &ctx, titanrt_status code) {
  return code == TITANRT_OK ? Status::success() : Status(code, ctx.lastError);
}

/// Returns from the rank's body when a runtime call fails.
#define RETURN_IF_FAILS(ctx, call) TITANRT_RETURN_IF_ERROR(check(ctx, call))

/// Connects rank `rank` of `job`, a line of `ranks` ranks (mesh axis a0),
/// with one communicator per entry of `axisSets`, into `ctx`.
Status connect(const ThreadJob &job, int64_t rank, int64_t ranks,
               const std::vector<std::vector<int>> &axisSets,
               titanrt_context &ctx,
               milliseconds collectiveTimeout = seconds(60)) {
  LaunchEnvironment env = job.getEnvironment(rank);
  env.collectiveTimeout = collectiveTimeout;
  TITANRT_RETURN_IF_ERROR(connectCommunicators(env, MeshShape{{"a0"}, {ranks}},
                                               axisSets, seconds(60),
                                               ctx.communicators));
  ctx.compute = std::make_unique<cpu::CpuBackend>(2);
  return Status::success();
}

/// Connects a context of one rank (its communicator needs no peer).
void connectAlone(titanrt_context &ctx) {
  LaunchEnvironment env;
  env.masterPort = findFreePort();
  Status status = connectCommunicators(env, MeshShape{{"a0"}, {1}}, {{0}},
                                       seconds(1), ctx.communicators);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  ctx.compute = std::make_unique<cpu::CpuBackend>(1);
}

/// Runs `body` on both ranks of a two-rank job and expects both to succeed.
void runPair(const std::function<Status(int64_t rank)> &body) {
  ThreadJob job(2);
  std::vector<Status> statuses = job.run(body);
  for (size_t rank = 0; rank < statuses.size(); ++rank)
    EXPECT_TRUE(statuses[rank].ok())
        << "rank " << rank << ": " << statuses[rank].getMessage();
}

/// `count` floats that differ per rank and per element.
std::vector<float> rankData(int64_t rank, size_t count) {
  std::vector<float> data(count);
  for (size_t i = 0; i < count; ++i)
    data[i] = float(rank * 1000) + 0.5f * float(i);
  return data;
}

/// Whether two buffers hold the same bytes.
bool sameBytes(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(AsyncCollectives, GiveTheBytesOfTheSynchronousCollectives) {
  ThreadJob job(2);
  runPair([&](int64_t rank) -> Status {
    titanrt_context ctx;
    TITANRT_RETURN_IF_ERROR(connect(job, rank, 2, {{0}}, ctx));
    std::vector<float> in = rankData(rank, 64);
    const int64_t bytes = int64_t(in.size() * sizeof(float));
    // Each collective twice: inline, then under handle 0 (reused once
    // waited for); the results must not differ in a bit.
    using Collective = std::function<titanrt_status(std::vector<float> &)>;
    std::vector<std::pair<const char *, Collective>> collectives = {
        {"all_gather",
         [&](std::vector<float> &out) {
           out.resize(2 * in.size());
           return titanrt_all_gather(&ctx, 0, in.data(), out.data(), bytes);
         }},
        {"all_reduce sum",
         [&](std::vector<float> &out) {
           out.resize(in.size());
           return titanrt_all_reduce(&ctx, 0, TITANRT_F32, TITANRT_SUM,
                                     in.data(), out.data(), int64_t(in.size()));
         }},
        {"all_reduce avg",
         [&](std::vector<float> &out) {
           out.resize(in.size());
           return titanrt_all_reduce(&ctx, 0, TITANRT_F32, TITANRT_AVG,
                                     in.data(), out.data(), int64_t(in.size()));
         }},
        {"reduce_scatter",
         [&](std::vector<float> &out) {
           out.resize(in.size() / 2);
           return titanrt_reduce_scatter(&ctx, 0, TITANRT_F32, TITANRT_MAX,
                                         in.data(), out.data(),
                                         int64_t(in.size() / 2));
         }},
        {"all_to_all",
         [&](std::vector<float> &out) {
           out.resize(in.size());
           return titanrt_all_to_all(&ctx, 0, in.data(), out.data(), bytes / 2);
         }},
        {"broadcast",
         [&](std::vector<float> &out) {
           out.resize(in.size());
           return titanrt_broadcast(&ctx, 0, 1, in.data(), out.data(), bytes);
         }},
    };
    for (auto &[name, collective] : collectives) {
      std::vector<float> inline_, async;
      RETURN_IF_FAILS(ctx, collective(inline_));
      RETURN_IF_FAILS(ctx, titanrt_start(&ctx, 0));
      RETURN_IF_FAILS(ctx, collective(async));
      RETURN_IF_FAILS(ctx, titanrt_wait(&ctx, 0));
      EXPECT_TRUE(sameBytes(inline_, async)) << name << " on rank " << rank;
    }
    // Spot checks that the collectives did collect.
    std::vector<float> gathered;
    RETURN_IF_FAILS(ctx, titanrt_start(&ctx, 1));
    RETURN_IF_FAILS(ctx, collectives[0].second(gathered));
    RETURN_IF_FAILS(ctx, titanrt_wait(&ctx, 1));
    EXPECT_EQ(gathered[64 + 3], 1000.0f + 1.5f);
    EXPECT_EQ(ctx.async.getNumQueues(), 1u);
    return Status::success();
  });
}

TEST(AsyncCollectives, TheCallerComputesWhileTheCollectiveIsInFlight) {
  ThreadJob job(2);
  runPair([&](int64_t rank) -> Status {
    titanrt_context ctx;
    TITANRT_RETURN_IF_ERROR(connect(job, rank, 2, {{0}}, ctx));
    std::vector<float> data(1000, float(rank + 1));
    if (rank == 1) {
      // The peer arrives late, synchronously.
      std::this_thread::sleep_for(kDelay);
      return check(ctx, titanrt_all_reduce(&ctx, 0, TITANRT_F32, TITANRT_SUM,
                                           data.data(), data.data(), 1000));
    }
    Clock::time_point start = Clock::now();
    RETURN_IF_FAILS(ctx, titanrt_start(&ctx, 7));
    RETURN_IF_FAILS(ctx, titanrt_all_reduce(&ctx, 0, TITANRT_F32, TITANRT_SUM,
                                            data.data(), data.data(), 1000));
    EXPECT_LT(millisecondsSince(start), kAtOnce.count());
    EXPECT_TRUE(ctx.async.isBusy());
    // The main thread keeps running kernels meanwhile.
    std::vector<float> a(16 * 16, 1.0f), b(16 * 16, 2.0f), c(16 * 16);
    RETURN_IF_FAILS(ctx,
                    titanrt_matmul(&ctx, TITANRT_F32, a.data(), b.data(),
                                   nullptr, c.data(), 1, 16, 16, 16, 0, 0, 0));
    EXPECT_EQ(c[0], 32.0f);
    EXPECT_LT(millisecondsSince(start), kAtOnce.count());
    Clock::time_point waiting = Clock::now();
    RETURN_IF_FAILS(ctx, titanrt_wait(&ctx, 7));
    EXPECT_GE(millisecondsSince(waiting), (kDelay - kAtOnce).count());
    EXPECT_FALSE(ctx.async.isBusy());
    EXPECT_EQ(data[999], 3.0f);
    return Status::success();
  });
}

TEST(AsyncCollectives, ACommunicatorRunsItsOperationsInIssueOrder) {
  // Rank 0 issues A and C asynchronously and B, D synchronously; rank 1
  // issues all four synchronously, late. Sizes differ, so that a rank that
  // ran them in another order would fail or compute garbage.
  ThreadJob job(2);
  runPair([&](int64_t rank) -> Status {
    titanrt_context ctx;
    TITANRT_RETURN_IF_ERROR(connect(job, rank, 2, {{0}}, ctx));
    std::vector<float> a(1000, float(rank + 1)), b(10, float(10 * (rank + 1)));
    std::vector<float> c = rankData(rank, 3), gathered(6);
    std::vector<float> d(5, float(rank));
    bool async = rank == 0;
    if (!async)
      std::this_thread::sleep_for(kDelay);
    if (async)
      RETURN_IF_FAILS(ctx, titanrt_start(&ctx, 0));
    RETURN_IF_FAILS(ctx, titanrt_all_reduce(&ctx, 0, TITANRT_F32, TITANRT_SUM,
                                            a.data(), a.data(), 1000));
    RETURN_IF_FAILS(ctx, titanrt_all_reduce(&ctx, 0, TITANRT_F32, TITANRT_SUM,
                                            b.data(), b.data(), 10));
    if (async) {
      // B waited for A.
      EXPECT_FALSE(ctx.async.isBusy());
      EXPECT_EQ(a[0], 3.0f);
      RETURN_IF_FAILS(ctx, titanrt_start(&ctx, 1));
    }
    RETURN_IF_FAILS(ctx, titanrt_all_gather(&ctx, 0, c.data(), gathered.data(),
                                            3 * sizeof(float)));
    RETURN_IF_FAILS(ctx, titanrt_broadcast(&ctx, 0, 1, d.data(), d.data(),
                                           5 * sizeof(float)));
    if (async) {
      RETURN_IF_FAILS(ctx, titanrt_wait(&ctx, 0));
      RETURN_IF_FAILS(ctx, titanrt_wait(&ctx, 1));
    }
    EXPECT_EQ(a[999], 3.0f);
    EXPECT_EQ(b[9], 30.0f);
    EXPECT_EQ(gathered[0], 0.0f);
    EXPECT_EQ(gathered[5], 1001.0f);
    EXPECT_EQ(d[4], 1.0f);
    return Status::success();
  });
}

TEST(AsyncCollectives, SendRecvAndAxisIndexWaitForTheQueue) {
  ThreadJob job(2);
  runPair([&](int64_t rank) -> Status {
    titanrt_context ctx;
    TITANRT_RETURN_IF_ERROR(connect(job, rank, 2, {{0}}, ctx));
    std::vector<float> data(100, float(rank + 1)), message(4, 5.0f);
    if (rank == 1)
      std::this_thread::sleep_for(kDelay);
    RETURN_IF_FAILS(ctx, titanrt_start(&ctx, 0));
    RETURN_IF_FAILS(ctx, titanrt_all_reduce(&ctx, 0, TITANRT_F32, TITANRT_MAX,
                                            data.data(), data.data(), 100));
    int64_t index = -1;
    RETURN_IF_FAILS(ctx, titanrt_axis_index(&ctx, 0, TITANRT_I64, &index));
    EXPECT_EQ(index, rank);
    EXPECT_FALSE(ctx.async.isBusy());
    if (rank == 0) {
      RETURN_IF_FAILS(
          ctx, titanrt_send(&ctx, 0, 1, 9, message.data(), 4 * sizeof(float)));
    } else {
      std::vector<float> received(4);
      RETURN_IF_FAILS(
          ctx, titanrt_recv(&ctx, 0, 0, 9, received.data(), 4 * sizeof(float)));
      EXPECT_EQ(received[3], 5.0f);
    }
    RETURN_IF_FAILS(ctx, titanrt_wait(&ctx, 0));
    EXPECT_EQ(data[0], 2.0f);
    // What the trainer does after a step.
    TITANRT_RETURN_IF_ERROR(ctx.async.drain());
    return ctx.communicators[0]->completeSends();
  });
}

TEST(AsyncCollectives, CommunicatorsProgressIndependently) {
  // Two communicators over the same ranks. Rank 1 runs communicator 1's
  // collective, and communicator 0's only after rank 0 saw its
  // communicator 1 collective complete: one queue for both would deadlock
  // (until rank 1 gives up waiting).
  ThreadJob job(2);
  std::atomic<bool> secondDone{false};
  std::atomic<bool> sawSecondDone{false};
  runPair([&](int64_t rank) -> Status {
    titanrt_context ctx;
    TITANRT_RETURN_IF_ERROR(connect(job, rank, 2, {{0}, {0}},
                                    ctx, /*collectiveTimeout=*/
                                    seconds(30)));
    std::vector<float> first(10, 1.0f), second(20, 2.0f);
    if (rank == 1) {
      RETURN_IF_FAILS(ctx,
                      titanrt_all_reduce(&ctx, 1, TITANRT_F32, TITANRT_SUM,
                                         second.data(), second.data(), 20));
      Clock::time_point start = Clock::now();
      while (!secondDone && millisecondsSince(start) < 10000)
        std::this_thread::sleep_for(milliseconds(5));
      sawSecondDone = secondDone.load();
      return check(ctx, titanrt_all_reduce(&ctx, 0, TITANRT_F32, TITANRT_SUM,
                                           first.data(), first.data(), 10));
    }
    RETURN_IF_FAILS(ctx, titanrt_start(&ctx, 0));
    RETURN_IF_FAILS(ctx, titanrt_all_reduce(&ctx, 0, TITANRT_F32, TITANRT_SUM,
                                            first.data(), first.data(), 10));
    RETURN_IF_FAILS(ctx, titanrt_start(&ctx, 1));
    RETURN_IF_FAILS(ctx, titanrt_all_reduce(&ctx, 1, TITANRT_F32, TITANRT_SUM,
                                            second.data(), second.data(), 20));
    RETURN_IF_FAILS(ctx, titanrt_wait(&ctx, 1));
    secondDone = true;
    EXPECT_EQ(second[19], 4.0f);
    RETURN_IF_FAILS(ctx, titanrt_wait(&ctx, 0));
    EXPECT_EQ(first[9], 2.0f);
    EXPECT_EQ(ctx.async.getNumQueues(), 2u);
    return Status::success();
  });
  EXPECT_TRUE(sawSecondDone);
}

/// Expects the runtime call that returned `code` on `ctx` to have failed
/// with an invalid argument whose message is `message`.
void expectInvalid(titanrt_context &ctx, titanrt_status code,
                   const std::string &message) {
  EXPECT_EQ(code, TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(ctx.lastError, message);
}

TEST(AsyncCollectives, StartAndWaitErrorsNameTheHandle) {
  titanrt_context ctx;
  connectAlone(ctx);
  std::vector<float> data(4, 1.0f);
  auto allReduce = [&](int32_t comm = 0, int32_t reduce = TITANRT_SUM) {
    return titanrt_all_reduce(&ctx, comm, TITANRT_F32, reduce, data.data(),
                              data.data(), 4);
  };
  const std::string notFollowed =
      ") was not followed by a collective (all_gather, reduce_scatter, "
      "all_reduce, all_to_all or broadcast)";

  expectInvalid(ctx, titanrt_start(&ctx, -1),
                "titanrt_start: handle -1 is negative (handles are >= 0)");

  // A handle in flight cannot be started again; once waited for it can.
  ASSERT_EQ(titanrt_start(&ctx, 3), TITANRT_OK);
  ASSERT_EQ(allReduce(), TITANRT_OK);
  expectInvalid(ctx, titanrt_start(&ctx, 3),
                "titanrt_start: handle 3 is still in flight: its all_reduce "
                "on communicator 0 was not waited for (titanrt_wait)");
  ASSERT_EQ(titanrt_wait(&ctx, 3), TITANRT_OK);
  expectInvalid(ctx, titanrt_wait(&ctx, 3),
                "titanrt_wait: handle 3 was already waited for");
  ASSERT_EQ(titanrt_start(&ctx, 3), TITANRT_OK);
  ASSERT_EQ(allReduce(), TITANRT_OK);
  ASSERT_EQ(titanrt_wait(&ctx, 3), TITANRT_OK);

  expectInvalid(ctx, titanrt_wait(&ctx, 9),
                "titanrt_wait: handle 9 was never started");

  // A titanrt_start that no collective follows fails the call that comes
  // instead; that failure consumes it.
  std::vector<float> a(4, 1.0f), c(4);
  ASSERT_EQ(titanrt_start(&ctx, 4), TITANRT_OK);
  expectInvalid(ctx,
                titanrt_matmul(&ctx, TITANRT_F32, a.data(), a.data(), nullptr,
                               c.data(), 1, 2, 2, 2, 0, 0, 0),
                "titanrt_matmul: titanrt_start(handle 4" + notFollowed);
  EXPECT_EQ(titanrt_matmul(&ctx, TITANRT_F32, a.data(), a.data(), nullptr,
                           c.data(), 1, 2, 2, 2, 0, 0, 0),
            TITANRT_OK);
  ASSERT_EQ(titanrt_start(&ctx, 5), TITANRT_OK);
  expectInvalid(ctx, titanrt_start(&ctx, 6),
                "titanrt_start: titanrt_start(handle 5" + notFollowed);
  expectInvalid(ctx, titanrt_wait(&ctx, 6),
                "titanrt_wait: handle 6 was never started");
  ASSERT_EQ(titanrt_start(&ctx, 7), TITANRT_OK);
  expectInvalid(ctx, titanrt_wait(&ctx, 7),
                "titanrt_wait: titanrt_start(handle 7" + notFollowed);
  ASSERT_EQ(titanrt_start(&ctx, 8), TITANRT_OK);
  expectInvalid(ctx, titanrt_send(&ctx, 0, 0, 0, data.data(), 4),
                "titanrt_send: titanrt_start(handle 8" + notFollowed);
  ASSERT_EQ(titanrt_start(&ctx, 8), TITANRT_OK);
  expectInvalid(ctx, titanrt_recv(&ctx, 0, 0, 0, data.data(), 4),
                "titanrt_recv: titanrt_start(handle 8" + notFollowed);
  int64_t index = -1;
  ASSERT_EQ(titanrt_start(&ctx, 8), TITANRT_OK);
  expectInvalid(ctx, titanrt_axis_index(&ctx, 0, TITANRT_I64, &index),
                "titanrt_axis_index: titanrt_start(handle 8" + notFollowed);

  // A collective that cannot be issued consumes the start too.
  ASSERT_EQ(titanrt_start(&ctx, 10), TITANRT_OK);
  expectInvalid(ctx, allReduce(/*comm=*/99),
                "all_reduce: communicator 99 does not exist (the program has "
                "1) (the collective of titanrt_start handle 10)");
  expectInvalid(ctx, titanrt_wait(&ctx, 10),
                "titanrt_wait: handle 10 was never started");

  // An asynchronous collective's own error comes from titanrt_wait.
  ASSERT_EQ(titanrt_start(&ctx, 11), TITANRT_OK);
  ASSERT_EQ(allReduce(0, /*reduce=*/99), TITANRT_OK);
  expectInvalid(ctx, titanrt_wait(&ctx, 11),
                "all_reduce over mesh axes (a0) [rank 0]: unknown reduction 99 "
                "(expected sum, avg, max or min) (the asynchronous all_reduce "
                "of handle 11, at its titanrt_wait)");
  EXPECT_TRUE(ctx.async.drain().ok());
}

TEST(AsyncCollectives, DrainReportsWhatNoWaitTook) {
  titanrt_context ctx;
  connectAlone(ctx);
  std::vector<float> data(4, 1.0f);
  // A failed collective no titanrt_wait took, then one that succeeded: the
  // first error is the drain's.
  ASSERT_EQ(titanrt_start(&ctx, 0), TITANRT_OK);
  ASSERT_EQ(
      titanrt_all_reduce(&ctx, 0, TITANRT_F32, 99, data.data(), data.data(), 4),
      TITANRT_OK);
  ASSERT_EQ(titanrt_start(&ctx, 1), TITANRT_OK);
  ASSERT_EQ(titanrt_all_gather(&ctx, 0, data.data(), data.data(), 16),
            TITANRT_OK);
  Status drained = ctx.async.drain();
  EXPECT_EQ(drained.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(drained.getMessage(),
            "all_reduce over mesh axes (a0) [rank 0]: unknown reduction 99 "
            "(expected sum, avg, max or min) (the asynchronous all_reduce of "
            "handle 0, never waited for)");
  EXPECT_FALSE(ctx.async.isBusy());
  // The drain forgot every handle.
  expectInvalid(ctx, titanrt_wait(&ctx, 1),
                "titanrt_wait: handle 1 was never started");
  // A step that returns right after a titanrt_start.
  ASSERT_EQ(titanrt_start(&ctx, 2), TITANRT_OK);
  drained = ctx.async.drain();
  EXPECT_EQ(drained.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(drained.getMessage(), "titanrt_start(handle 2) was not followed "
                                  "by a collective before the step returned");
  EXPECT_TRUE(ctx.async.drain().ok());
  ASSERT_EQ(titanrt_start(&ctx, 2), TITANRT_OK);
  ASSERT_EQ(titanrt_all_gather(&ctx, 0, data.data(), data.data(), 16),
            TITANRT_OK);
  ASSERT_EQ(titanrt_wait(&ctx, 2), TITANRT_OK);
}

/// Runs `rank0` on rank 0 of a job of 2 whose rank 1 "dies" (its
/// connections close while rank 0 waits for it), with 1000 floats.
void runWithRank1Dying(
    llvm::function_ref<void(titanrt_context &, std::vector<float> &)> rank0) {
  ThreadJob job(2);
  std::vector<Status> statuses = job.run([&](int64_t rank) -> Status {
    titanrt_context ctx;
    TITANRT_RETURN_IF_ERROR(connect(job, rank, 2, {{0}}, ctx,
                                    /*collectiveTimeout=*/seconds(30)));
    if (rank == 1) {
      std::this_thread::sleep_for(kDelay);
      ctx.communicators[0].reset();
      return Status::success();
    }
    std::vector<float> data(1000, 1.0f);
    rank0(ctx, data);
    return Status::success();
  });
  for (const Status &status : statuses)
    EXPECT_TRUE(status.ok()) << status.getMessage();
}

TEST(AsyncCollectives, AFailedCollectiveFailsItsWait) {
  runWithRank1Dying([](titanrt_context &ctx, std::vector<float> &data) {
    ASSERT_EQ(titanrt_start(&ctx, 2), TITANRT_OK) << ctx.lastError;
    ASSERT_EQ(titanrt_all_reduce(&ctx, 0, TITANRT_F32, TITANRT_SUM, data.data(),
                                 data.data(), 1000),
              TITANRT_OK)
        << ctx.lastError;
    EXPECT_EQ(titanrt_wait(&ctx, 2), TITANRT_ERROR_COMMUNICATION);
    EXPECT_THAT(
        ctx.lastError,
        testing::StartsWith("all_reduce over mesh axes (a0) [ranks 0, 1]: "));
    EXPECT_THAT(ctx.lastError,
                testing::EndsWith(" (the asynchronous all_reduce of handle 2, "
                                  "at its titanrt_wait)"));
    // The communicator stays unusable, inline too.
    EXPECT_EQ(titanrt_all_reduce(&ctx, 0, TITANRT_F32, TITANRT_SUM, data.data(),
                                 data.data(), 1000),
              TITANRT_ERROR_COMMUNICATION);
    EXPECT_THAT(ctx.lastError, HasSubstr("unusable after an earlier failure"));
  });
}

TEST(AsyncCollectives, ASynchronousCollectiveAfterAFailedOneNamesIt) {
  runWithRank1Dying([](titanrt_context &ctx, std::vector<float> &data) {
    ASSERT_EQ(titanrt_start(&ctx, 4), TITANRT_OK) << ctx.lastError;
    ASSERT_EQ(titanrt_all_gather(&ctx, 0, data.data(), data.data() + 500, 400),
              TITANRT_OK)
        << ctx.lastError;
    // Before its wait, a synchronous collective on the same communicator
    // waits for the queue and reports the queued one's failure, the cause,
    // rather than the communicator it left unusable.
    EXPECT_EQ(titanrt_all_reduce(&ctx, 0, TITANRT_F32, TITANRT_SUM, data.data(),
                                 data.data(), 10),
              TITANRT_ERROR_COMMUNICATION);
    EXPECT_THAT(
        ctx.lastError,
        testing::StartsWith("all_gather over mesh axes (a0) [ranks 0, 1]: "));
    EXPECT_THAT(ctx.lastError,
                testing::EndsWith(" (the asynchronous all_gather of handle 4, "
                                  "found failed by the synchronous all_reduce "
                                  "after it)"));
    EXPECT_THAT(ctx.lastError, testing::Not(HasSubstr("unusable")));
  });
}

TEST(AsyncCollectives, DrainAfterAnEarlyReturnLeavesNothingRunning) {
  ThreadJob job(2);
  runPair([&](int64_t rank) -> Status {
    titanrt_context ctx;
    TITANRT_RETURN_IF_ERROR(connect(job, rank, 2, {{0}}, ctx));
    std::vector<float> data(1000, float(rank + 1)), gathered(2);
    float mine = float(rank);
    if (rank == 1) {
      std::this_thread::sleep_for(kDelay);
      RETURN_IF_FAILS(ctx, titanrt_all_reduce(&ctx, 0, TITANRT_F32, TITANRT_SUM,
                                              data.data(), data.data(), 1000));
      RETURN_IF_FAILS(ctx, titanrt_all_gather(&ctx, 0, &mine, gathered.data(),
                                              sizeof(float)));
    } else {
      // A step that fails before its waits.
      RETURN_IF_FAILS(ctx, titanrt_start(&ctx, 0));
      RETURN_IF_FAILS(ctx, titanrt_all_reduce(&ctx, 0, TITANRT_F32, TITANRT_SUM,
                                              data.data(), data.data(), 1000));
      RETURN_IF_FAILS(ctx, titanrt_start(&ctx, 1));
      RETURN_IF_FAILS(ctx, titanrt_all_gather(&ctx, 0, &mine, gathered.data(),
                                              sizeof(float)));
      EXPECT_EQ(titanrt_wait(&ctx, 42), TITANRT_ERROR_INVALID_ARGUMENT);
      EXPECT_TRUE(ctx.async.isBusy());
      TITANRT_RETURN_IF_ERROR(ctx.async.drain());
      EXPECT_FALSE(ctx.async.isBusy());
    }
    EXPECT_EQ(data[0], 3.0f);
    EXPECT_EQ(gathered[1], 1.0f);
    return Status::success();
  });
}

TEST(AsyncCollectives, DestroyingTheContextWaitsForItsQueue) {
  ThreadJob job(2);
  runPair([&](int64_t rank) -> Status {
    std::vector<float> data(1000, float(rank + 1));
    {
      titanrt_context ctx;
      TITANRT_RETURN_IF_ERROR(connect(job, rank, 2, {{0}}, ctx));
      if (rank == 1)
        std::this_thread::sleep_for(kDelay);
      RETURN_IF_FAILS(ctx, titanrt_start(&ctx, 0));
      RETURN_IF_FAILS(ctx, titanrt_all_reduce(&ctx, 0, TITANRT_F32, TITANRT_SUM,
                                              data.data(), data.data(), 1000));
    }
    EXPECT_EQ(data[0], 3.0f);
    return Status::success();
  });
}

TEST(AsyncCollectives, ASynchronousProgramMakesNoThread) {
  ThreadJob job(2);
  runPair([&](int64_t rank) -> Status {
    titanrt_context ctx;
    TITANRT_RETURN_IF_ERROR(connect(job, rank, 2, {{0}, {0}}, ctx));
    std::vector<float> data(10, 1.0f), gathered(20);
    for (int32_t comm : {0, 1}) {
      RETURN_IF_FAILS(ctx,
                      titanrt_all_reduce(&ctx, comm, TITANRT_F32, TITANRT_SUM,
                                         data.data(), data.data(), 10));
      RETURN_IF_FAILS(ctx, titanrt_all_gather(&ctx, comm, data.data(),
                                              gathered.data(), 40));
    }
    EXPECT_EQ(gathered[19], 4.0f);
    EXPECT_EQ(ctx.async.getNumQueues(), 0u);
    TITANRT_RETURN_IF_ERROR(ctx.async.drain());
    EXPECT_EQ(ctx.async.getNumQueues(), 0u);
    return Status::success();
  });
}

TEST(AsyncCollectives, TracesRecordTheCommunicationThreadAndTheWait) {
  std::filesystem::path folder =
      std::filesystem::temp_directory_path() /
      ("titan-async-trace-" + std::to_string(::getpid()));
  ThreadJob job(2);
  runPair([&](int64_t rank) -> Status {
    titanrt_context ctx;
    TITANRT_RETURN_IF_ERROR(connect(job, rank, 2, {{0}}, ctx));
    std::vector<float> data(1000, 1.0f);
    if (rank == 1) {
      std::this_thread::sleep_for(kDelay);
      return check(ctx, titanrt_all_reduce(&ctx, 0, TITANRT_F32, TITANRT_SUM,
                                           data.data(), data.data(), 1000));
    }
    Tracer tracer({"a0"});
    tracer.begin(1);
    ctx.tracer = &tracer;
    std::vector<float> a(4, 1.0f), c(4);
    RETURN_IF_FAILS(ctx, titanrt_start(&ctx, 5));
    RETURN_IF_FAILS(ctx, titanrt_all_reduce(&ctx, 0, TITANRT_F32, TITANRT_SUM,
                                            data.data(), data.data(), 1000));
    RETURN_IF_FAILS(ctx,
                    titanrt_matmul(&ctx, TITANRT_F32, a.data(), a.data(),
                                   nullptr, c.data(), 1, 2, 2, 2, 0, 0, 0));
    RETURN_IF_FAILS(ctx, titanrt_wait(&ctx, 5));
    TITANRT_RETURN_IF_ERROR(ctx.async.drain());
    ctx.tracer = nullptr;
    return tracer.finish(folder.string(), 0);
  });
  std::filesystem::path path = folder / "iteration_1" / "rank0_trace.json";
  auto buffer = llvm::MemoryBuffer::getFile(path.string());
  ASSERT_TRUE(bool(buffer)) << path;
  llvm::Expected<llvm::json::Value> trace =
      llvm::json::parse((*buffer)->getBuffer());
  ASSERT_TRUE(bool(trace)) << llvm::toString(trace.takeError());
  std::filesystem::remove_all(folder);
  const llvm::json::Array *events =
      trace->getAsObject()->getArray("traceEvents");
  ASSERT_NE(events, nullptr);
  bool namedThread = false, collective = false, wait = false, matmul = false;
  for (const llvm::json::Value &value : *events) {
    const llvm::json::Object &event = *value.getAsObject();
    std::string name = event.getString("name").value_or("").str();
    int64_t tid = event.getInteger("tid").value_or(-1);
    const llvm::json::Object *args = event.getObject("args");
    if (name == "thread_name" && tid == 2)
      namedThread = args->getString("name") == "communication (a0)";
    if (name == "all_reduce [a0]") {
      collective = tid == 2 && args->getInteger("handle") == 5 &&
                   args->getInteger("bytes") == 4000;
      // It ran while rank 1 was late.
      EXPECT_GE(*event.getNumber("dur"), 1000.0 * (kDelay - kAtOnce).count());
    }
    if (name == "wait") {
      wait = tid == 0 && args->getInteger("handle") == 5;
      EXPECT_GE(*event.getNumber("dur"), 1000.0 * (kDelay - kAtOnce).count());
    }
    if (name == "matmul")
      matmul = tid == 0;
  }
  EXPECT_TRUE(namedThread);
  EXPECT_TRUE(collective);
  EXPECT_TRUE(wait);
  EXPECT_TRUE(matmul);
}

} // namespace
