//===- PlanCacheTest.cpp - Tests of the device state kept per table -------===//

#include "cuda/PlanCache.h"

#include <gtest/gtest.h>

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

/// A plan of one table, named by `key`.
struct FakePlan {
  int key;
};

/// The plans a step's calls get from `cache` for tables `keys`, in order,
/// counting the plans built in `built`.
std::vector<const FakePlan *>
runStep(PlanCache<FakePlan> &cache, const std::vector<int> &keys, int &built) {
  std::vector<const FakePlan *> plans;
  for (int key : keys) {
    const FakePlan *plan = nullptr;
    Status status =
        cache.get([&](const FakePlan &known) { return known.key == key; },
                  [&](std::unique_ptr<FakePlan> &created) {
                    ++built;
                    created = std::make_unique<FakePlan>(FakePlan{key});
                    return Status::success();
                  },
                  plan);
    EXPECT_TRUE(status.ok()) << status.getMessage();
    plans.push_back(plan);
  }
  return plans;
}

TEST(PlanCacheTest, KeepsEveryTableOfAProgramWithAStepPerParameter) {
  // AdamW stepped in the backward: one table per parameter (146 on the ~1B
  // proxy), in the same order every step; each is built once.
  std::vector<int> keys;
  for (int key = 0; key < 300; ++key)
    keys.push_back(key);
  PlanCache<FakePlan> cache;
  int built = 0;
  std::vector<const FakePlan *> first = runStep(cache, keys, built);
  for (int step = 0; step < 3; ++step)
    EXPECT_EQ(runStep(cache, keys, built), first);
  EXPECT_EQ(built, 300);
  EXPECT_EQ(cache.size(), 300u);
  for (size_t i = 0; i < keys.size(); ++i)
    EXPECT_EQ(first[i]->key, keys[i]);
  // Another order finds the same plans.
  std::vector<int> reversed(keys.rbegin(), keys.rend());
  std::vector<const FakePlan *> again = runStep(cache, reversed, built);
  EXPECT_EQ(built, 300);
  EXPECT_EQ(again.front(), first.back());
}

TEST(PlanCacheTest, EvictsTheOldestBeyondItsLimitAndKeepsNothingFailed) {
  PlanCache<FakePlan> cache;
  int built = 0;
  std::vector<int> keys;
  for (int key = 0; key <= int(PlanCache<FakePlan>::kMaxPlans); ++key)
    keys.push_back(key);
  runStep(cache, keys, built);
  EXPECT_EQ(cache.size(), PlanCache<FakePlan>::kMaxPlans);
  // The newest is kept, the oldest (key 0) is built again.
  runStep(cache, {int(PlanCache<FakePlan>::kMaxPlans)}, built);
  EXPECT_EQ(built, int(keys.size()));
  runStep(cache, {0}, built);
  EXPECT_EQ(built, int(keys.size()) + 1);

  PlanCache<FakePlan> failing;
  const FakePlan *plan = nullptr;
  Status status = failing.get([](const FakePlan &) { return false; },
                              [](std::unique_ptr<FakePlan> &) {
                                return Status::internal("no device memory");
                              },
                              plan);
  EXPECT_EQ(status.getMessage(), "no device memory");
  EXPECT_EQ(failing.size(), 0u);
  EXPECT_EQ(plan, nullptr);
}

} // namespace
