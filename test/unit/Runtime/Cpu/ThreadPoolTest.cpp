//===- ThreadPoolTest.cpp - Tests of the CPU kernels' thread pool ---------===//

#include "TestUtil.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

using namespace titan::rt;
using namespace titan::rt::cpu::test;

namespace {

/// The ranges parallelFor(n, grain) calls, sorted.
std::vector<std::pair<int64_t, int64_t>> rangesOf(ThreadPool &threads,
                                                  int64_t n, int64_t grain) {
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  threads.parallelFor(n, grain, [&](int64_t begin, int64_t end) {
    std::lock_guard<std::mutex> lock(mutex);
    ranges.emplace_back(begin, end);
  });
  std::sort(ranges.begin(), ranges.end());
  return ranges;
}

TEST(ThreadPoolTest, RangesCoverTheLoopOnceAndRespectTheGrain) {
  for (int numThreads : {1, 2, 3, 5})
    for (int64_t n : {1, 2, 7, 64, 1000})
      for (int64_t grain : {1, 3, 100}) {
        SCOPED_TRACE(std::to_string(numThreads) + " threads, n " +
                     std::to_string(n) + ", grain " + std::to_string(grain));
        auto ranges = rangesOf(pool(numThreads), n, grain);
        ASSERT_FALSE(ranges.empty());
        EXPECT_EQ(ranges.front().first, 0);
        EXPECT_EQ(ranges.back().second, n);
        for (size_t i = 0; i < ranges.size(); ++i) {
          if (i + 1 < ranges.size()) {
            EXPECT_EQ(ranges[i].second, ranges[i + 1].first);
            EXPECT_GE(ranges[i].second - ranges[i].first, grain);
          }
          EXPECT_LT(ranges[i].first, ranges[i].second);
        }
      }
}

TEST(ThreadPoolTest, SplitDependsOnlyOnTheSizesAndThreadCount) {
  for (int numThreads : {2, 3})
    for (int trial = 0; trial < 20; ++trial)
      EXPECT_EQ(rangesOf(pool(numThreads), 1000, 7),
                rangesOf(pool(numThreads), 1000, 7));
}

TEST(ThreadPoolTest, EmptyLoopCallsNothing) {
  bool called = false;
  pool(2).parallelFor(0, 1, [&](int64_t, int64_t) { called = true; });
  EXPECT_FALSE(called);
}

TEST(ThreadPoolTest, AtLeastOneThread) {
  EXPECT_EQ(ThreadPool(0).getNumThreads(), 1);
  EXPECT_EQ(ThreadPool(-3).getNumThreads(), 1);
  EXPECT_EQ(pool(3).getNumThreads(), 3);
}

TEST(ThreadPoolTest, WorkersTakePart) {
  std::mutex mutex;
  std::set<std::thread::id> ids;
  // Chunks that take long enough for the worker to wake up.
  pool(2).parallelFor(8, 1, [&](int64_t, int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::lock_guard<std::mutex> lock(mutex);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(ids.size(), 2u);
}

TEST(ThreadPoolTest, NestedLoopRunsInline) {
  std::atomic<int64_t> sum{0};
  pool(3).parallelFor(6, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      pool(3).parallelFor(10, 1, [&](int64_t innerBegin, int64_t innerEnd) {
        for (int64_t j = innerBegin; j < innerEnd; ++j)
          sum += i * 10 + j;
      });
  });
  EXPECT_EQ(sum.load(), 60 * 59 / 2);
}

TEST(ThreadPoolTest, CallersOnSeveralThreadsAreSerialized) {
  ThreadPool threads(3);
  std::atomic<int64_t> sum{0};
  auto caller = [&] {
    for (int call = 0; call < 200; ++call)
      threads.parallelFor(100, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          sum += i;
      });
  };
  std::thread first(caller), second(caller);
  first.join();
  second.join();
  EXPECT_EQ(sum.load(), 2 * 200 * (99 * 100 / 2));
}

} // namespace
