//===- GatherPrefetchTest.cpp - ZeRO-3's prefetch planner -----------------===//

#include "tgc/Dialect/TG/Analysis/GatherPrefetch.h"

#include <gtest/gtest.h>

#include <random>

using namespace mlir::tg;

namespace {

using Leads = llvm::SmallVector<int64_t>;

TEST(GatherPrefetch, ComputeBoundRunsNeedOneAhead) {
  // Each gather fits in the previous run's compute: only the first waits.
  std::vector<GatherRun> runs(4, GatherRun{10, 5});
  GatherPrefetchPlan plan = planGatherPrefetch(0, runs, 2);
  EXPECT_EQ(plan.leads, Leads({1, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(plan.exposedSeconds, 5);
  EXPECT_DOUBLE_EQ(plan.transferSeconds, 20);
  EXPECT_EQ(plan.depth(), 1);
}

TEST(GatherPrefetch, SaturatedLinkGainsNothingFromStartingEarlier) {
  // Transfers longer than the compute: the link is always busy, so an
  // earlier start only keeps more weights alive.
  std::vector<GatherRun> runs(4, GatherRun{10, 15});
  GatherPrefetchPlan plan = planGatherPrefetch(0, runs, 2);
  EXPECT_EQ(plan.leads, Leads({1, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(plan.exposedSeconds, 15 + 3 * 5);
}

TEST(GatherPrefetch, ShortRunBeforeHeavyGatherStartsItTwoAhead) {
  // A final norm (little compute, little weight) before the vocabulary
  // projection (a large weight): one run ahead, the projection's gather
  // overlaps only the norm.
  std::vector<GatherRun> runs{{1, 1}, {20, 2}, {1, 1}, {20, 10}};
  GatherPrefetchPlan plan = planGatherPrefetch(0, runs, 2);
  EXPECT_EQ(plan.leads, Leads({1, 1, 1, 2}));
  EXPECT_DOUBLE_EQ(plan.exposedSeconds, 2);
  GatherPrefetchPlan one = simulateGatherPrefetch(0, runs, {1, 1, 1, 1});
  EXPECT_DOUBLE_EQ(one.exposedSeconds, 11);
  // With at most one run ahead the planner keeps it there.
  EXPECT_EQ(planGatherPrefetch(0, runs, 1).leads, Leads({1, 1, 1, 1}));
}

TEST(GatherPrefetch, ComputeBeforeTheFirstRunHidesItsGather) {
  std::vector<GatherRun> runs{{3, 4}, {3, 1}};
  GatherPrefetchPlan plan = planGatherPrefetch(5, runs, 2);
  EXPECT_DOUBLE_EQ(plan.exposedSeconds, 0);
}

TEST(GatherPrefetch, NoPrefetchWaitsForEveryTransfer) {
  std::vector<GatherRun> runs{{2, 1}, {2, 3}, {2, 0.5}};
  GatherPrefetchPlan plan = simulateGatherPrefetch(0, runs, {0, 0, 0});
  EXPECT_DOUBLE_EQ(plan.exposedSeconds, 4.5);
  EXPECT_DOUBLE_EQ(plan.transferSeconds, 4.5);
  EXPECT_EQ(plan.depth(), 0);
}

TEST(GatherPrefetch, PlansNeverLoseToAFixedDepthAndKeepStartsInOrder) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> seconds(0.0, 10.0);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<GatherRun> runs(1 + trial % 17);
    for (GatherRun &run : runs)
      run = {seconds(rng), seconds(rng)};
    double before = seconds(rng) / 4;
    for (int64_t most : {1, 2, 3}) {
      GatherPrefetchPlan plan = planGatherPrefetch(before, runs, most);
      ASSERT_EQ(plan.leads.size(), runs.size());
      for (size_t k = 0; k < runs.size(); ++k) {
        EXPECT_GE(plan.leads[k], 1);
        EXPECT_LE(plan.leads[k], most);
        if (k > 0)
          EXPECT_LE(plan.leads[k], plan.leads[k - 1] + 1);
      }
      Leads one(runs.size(), 1);
      double fixed = simulateGatherPrefetch(before, runs, one).exposedSeconds;
      // Each choice is within 1% of its transfer of the best it had.
      EXPECT_LE(plan.exposedSeconds, fixed + 0.01 * plan.transferSeconds);
      EXPECT_DOUBLE_EQ(
          simulateGatherPrefetch(before, runs, plan.leads).exposedSeconds,
          plan.exposedSeconds);
    }
  }
}

} // namespace
