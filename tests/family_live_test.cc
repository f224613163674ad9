// Copyright 2026 The memtrace Authors.
//
// HighestSum(): the most a process family held at once. The expected sums are worked out
// by hand from the step functions each test writes down.

#include "analysis/family_live.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace memtrace {
namespace {

// Steps whose events all rise or all fall: each step's lowest and highest are its ends.
ProcessLiveSteps Steps(std::vector<std::pair<int64_t, uint64_t>> steps, int64_t ended) {
  ProcessLiveSteps p;
  uint64_t before = 0;
  for (const auto& [t, live] : steps) {
    p.steps.push_back({t, live, std::min(before, live), std::max(before, live)});
    before = live;
  }
  p.ended_unix_ns = ended;
  return p;
}

// The header comment's picture: A holds 100 from t=0, 50 from t=10, ends at t=30; B holds
// 70 from t=5 and ends at t=20. Both live at t=5: 170.
TEST(FamilyLiveTest, TheHighestSumIsWhenTheProcessesOverlap) {
  const FamilyHighWater h =
      HighestSum({Steps({{0, 100}, {10, 50}}, 30), Steps({{5, 70}}, 20)});
  EXPECT_EQ(h.bytes, 170u);
  EXPECT_TRUE(h.exact()) << h.bytes_high;
  EXPECT_EQ(h.t, 5);
  EXPECT_EQ(h.processes, 2u);
}

// Each process's own peak is higher than what any two held at once: the sum's peak is
// neither the sum of the peaks (400) nor the largest one (300).
TEST(FamilyLiveTest, PeaksAtDifferentTimesDoNotAddUp) {
  const FamilyHighWater h = HighestSum({Steps({{0, 300}, {10, 20}}, 100),
                                        Steps({{20, 100}, {30, 250}, {40, 0}}, 100)});
  // t=0: 300; t=10: 20; t=20: 120; t=30: 270; t=40: 20.
  EXPECT_EQ(h.bytes, 300u);
  EXPECT_EQ(h.t, 0);
  EXPECT_EQ(h.processes, 1u);
  const FamilyHighWater later = HighestSum({Steps({{0, 200}, {10, 20}}, 100),
                                            Steps({{20, 100}, {30, 250}, {40, 0}}, 100)});
  EXPECT_EQ(later.bytes, 270u);  // t=30: 20 + 250
  EXPECT_EQ(later.t, 30);
  EXPECT_EQ(later.processes, 2u);
}

// An image's memory goes at its end: an exec'd image that starts as the old one ends is
// not added to it, and changes stamped with one time are applied together.
TEST(FamilyLiveTest, AnEndedImageHoldsNothingAndOneTimeIsAppliedWhole) {
  // Old image: 500 until it ends at t=10; the new one (same pid) holds 400 from t=10.
  EXPECT_EQ(HighestSum({Steps({{0, 500}}, 10), Steps({{10, 400}}, 50)}).bytes, 500u);
  // Two processes both change at t=5: 100 -> 10 and 0 -> 150, in an order no capture
  // says. At least one of them was at its highest while the other was at no less than its
  // lowest: 150 + 10; at most both at their highest: 100 + 150.
  const FamilyHighWater h =
      HighestSum({Steps({{0, 100}, {5, 10}}, 50), Steps({{5, 150}}, 50)});
  EXPECT_EQ(h.bytes, 160u);
  EXPECT_EQ(h.bytes_high, 250u);
  EXPECT_EQ(h.t, 5);
}

// A process's highest moment inside one step (its events stamped one time, in its own
// order) counts: the family never held less than its largest process's own peak.
// A: one step at t=0 that rises to 900 and ends at 100; B: 300 from t=-5 to the end.
TEST(FamilyLiveTest, APeakInsideOneStepCountsAndTheFamilyIsNeverBelowItsLargestProcess) {
  ProcessLiveSteps a;
  a.steps = {{0, 100, 0, 900}};
  a.ended_unix_ns = 50;
  const FamilyHighWater h = HighestSum({a, Steps({{-5, 300}}, 50)});
  EXPECT_EQ(h.bytes, 1200u);  // A at 900 while B holds 300
  EXPECT_TRUE(h.exact());     // B did not change then
  EXPECT_EQ(h.t, 0);
  EXPECT_EQ(h.processes, 2u);
  // Alone, A's family peak is its own.
  EXPECT_EQ(HighestSum({a}).bytes, 900u);
}

TEST(FamilyLiveTest, NothingLiveIsZero) {
  EXPECT_EQ(HighestSum({}).bytes, 0u);
  EXPECT_EQ(HighestSum({Steps({}, 0), Steps({{3, 0}}, 9)}).bytes, 0u);
}

}  // namespace
}  // namespace memtrace
