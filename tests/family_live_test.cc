// Copyright 2026 The memtrace Authors.
//
// HighestSum(): the most a process family held at once, as an interval. The expected
// bounds are worked out by hand from the step functions each test writes down: each step
// happened somewhere in its window, from its time to the process's next step's (its
// end's, for the last).

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

// The header comment's picture. A's first step (0 to 100) happened somewhere in [0, 10],
// its second (100 to 50) in [10, 30]; B's (0 to 70) in [5, 20]. A held 100 and B 70 at
// once if B's rise came before A's fall: at most 170. Surely: 100 (A at its highest).
TEST(FamilyLiveTest, TheSumIsBoundedByWhatEachStepsWindowAllows) {
  const FamilyHighWater h =
      HighestSum({Steps({{0, 100}, {10, 50}}, 30), Steps({{5, 70}}, 20)});
  EXPECT_EQ(h.bytes, 100u);
  EXPECT_EQ(h.bytes_high, 170u);
  EXPECT_EQ(h.t, 0);
  EXPECT_EQ(h.processes, 1u);
  // Where B's rise is known to come while A holds 100 (A's 100 is steady from 10 to 30,
  // B rises in [12, 20]), the sum is exact.
  const FamilyHighWater known =
      HighestSum({Steps({{0, 100}, {10, 100}, {30, 0}}, 40), Steps({{12, 70}}, 20)});
  EXPECT_EQ(known.bytes, 170u);
  EXPECT_TRUE(known.exact()) << known.bytes_high;
  EXPECT_EQ(known.t, 12);
  EXPECT_EQ(known.processes, 2u);
}

// Each process's own peak is higher than what the two surely held at once. A falls from
// 300 to 20 somewhere in [10, 100] (its next events: none until it ends), so B's 250
// may have come while A still held 300: at most 550; surely 300. With A's fall known to
// come before B's rise (A has events at 12), the sum is 270, exactly.
TEST(FamilyLiveTest, PeaksAtDifferentTimesAddUpOnlyWhereTheirWindowsMeet) {
  const FamilyHighWater h = HighestSum({Steps({{0, 300}, {10, 20}}, 100),
                                        Steps({{20, 100}, {30, 250}, {40, 0}}, 100)});
  EXPECT_EQ(h.bytes, 300u);
  EXPECT_EQ(h.bytes_high, 550u);
  EXPECT_EQ(h.t, 0);
  EXPECT_EQ(h.processes, 1u);
  const FamilyHighWater later =
      HighestSum({Steps({{0, 200}, {10, 20}, {12, 20}}, 100),
                  Steps({{20, 100}, {30, 250}, {40, 0}}, 100)});
  EXPECT_EQ(later.bytes, 270u);  // B at 250 while A surely holds 20
  EXPECT_TRUE(later.exact()) << later.bytes_high;  // A's 200 was gone by 12, B rose from 20
  EXPECT_EQ(later.t, 30);
  EXPECT_EQ(later.processes, 2u);
}

// An image's memory goes at its end: an exec'd image that starts after the old one ended
// is not added to it. Two processes that change at once may have done so in any order.
TEST(FamilyLiveTest, AnEndedImageHoldsNothingAndChangesAtOnceAreAnInterval) {
  // Old image: 500 until it ends at t=10; the new one (same pid) holds 400 from t=11.
  const FamilyHighWater exec = HighestSum({Steps({{0, 500}}, 10), Steps({{11, 400}}, 50)});
  EXPECT_EQ(exec.bytes, 500u);
  EXPECT_TRUE(exec.exact()) << exec.bytes_high;
  // A falls 100 -> 10 and B rises 0 -> 150, both in [5, 50]: surely B's 150 (A may have
  // fallen to 10 first... or not: A's lowest there is 10, and its window touches [0, 5],
  // where it rose from 0); at most both at their highest, 250.
  const FamilyHighWater h =
      HighestSum({Steps({{0, 100}, {5, 10}}, 50), Steps({{5, 150}}, 50)});
  EXPECT_EQ(h.bytes, 150u);
  EXPECT_EQ(h.bytes_high, 250u);
  EXPECT_EQ(h.t, 5);
}

// A killed process (its capture has no trailer) surely lived to its last event, and may
// have held its memory any time after: a worker killed while it held 500, which last
// changed at t=10, and a parent that rose to 300 at t=20 (both held at once, if the worker
// was still alive): surely 500, at most 800. Before, the worker was taken to end at its
// last event, and the upper end (500) was below the truth.
TEST(FamilyLiveTest, AKilledProcessMayHoldItsMemoryUntilTheFamilyEnds) {
  ProcessLiveSteps worker = Steps({{0, 200}, {10, 500}}, 10);
  worker.end_known = false;
  const FamilyHighWater h = HighestSum({worker, Steps({{20, 300}, {30, 0}}, 40)});
  EXPECT_EQ(h.bytes, 500u);
  EXPECT_EQ(h.bytes_high, 800u);
  // Its end known (a trailer at t=10), the two never met.
  const FamilyHighWater ended =
      HighestSum({Steps({{0, 200}, {10, 500}}, 10), Steps({{20, 300}, {30, 0}}, 40)});
  EXPECT_EQ(ended.bytes, 500u);
  EXPECT_TRUE(ended.exact()) << ended.bytes_high;
}

// A process's highest moment inside one step (its events stamped one time, in its own
// order) counts: the family never held less than its largest process's own peak.
// A: one step at t=0 that rises to 900 and ends at 100; B: 300 from before A's first
// window to after its end.
TEST(FamilyLiveTest, APeakInsideOneStepCountsAndTheFamilyIsNeverBelowItsLargestProcess) {
  ProcessLiveSteps a;
  a.steps = {{0, 100, 0, 900}};
  a.ended_unix_ns = 50;
  const FamilyHighWater h = HighestSum({a, Steps({{-10, 300}, {-5, 300}}, 60)});
  EXPECT_EQ(h.bytes, 1200u);  // A at 900 while B holds 300
  EXPECT_TRUE(h.exact()) << h.bytes_high;
  EXPECT_EQ(h.t, 0);
  EXPECT_EQ(h.processes, 2u);
  // Alone, A's family peak is its own.
  EXPECT_EQ(HighestSum({a}).bytes, 900u);
  EXPECT_TRUE(HighestSum({a}).exact());
}

TEST(FamilyLiveTest, NothingLiveIsZero) {
  EXPECT_EQ(HighestSum({}).bytes, 0u);
  EXPECT_EQ(HighestSum({Steps({}, 0), Steps({{3, 0}}, 9)}).bytes, 0u);
}

}  // namespace
}  // namespace memtrace
