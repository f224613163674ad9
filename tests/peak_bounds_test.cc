// Copyright 2026 The memtrace Authors.
//
// BoundPeak() against brute force: random rings of records with random windows, and many
// random real executions inside those windows; every execution's peak must lie in the
// interval, and with one ring (or rings apart in time) the interval is the peak itself.

#include "runtime/internal/peak_bounds.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace memtrace {
namespace {

// One ring: its stamps and its records' deltas, segment by segment.
struct TestRing {
  std::vector<uint64_t> stamps;                 // segment k's window: [stamps[k], stamps[k+1]]
  std::vector<std::vector<int64_t>> segments;   // deltas, in ring order
  bool last_open = false;                       // the last segment's end stamp is unknown
};

// The summaries BoundPeak() takes; segments without records left out when `skip_empty`
// (as the drainer leaves out segments that did not touch a counter).
std::vector<OrderSegment> Summaries(const std::vector<TestRing>& rings, bool skip_empty) {
  std::vector<OrderSegment> out;
  for (uint32_t r = 0; r < rings.size(); ++r) {
    const TestRing& ring = rings[r];
    for (size_t k = 0; k < ring.segments.size(); ++k) {
      if (skip_empty && ring.segments[k].empty()) continue;
      OrderSegment s;
      s.ring = r;
      s.lo = ring.stamps[k];
      s.hi = (ring.last_open && k + 1 == ring.segments.size()) ? kOpenWindow
                                                                : ring.stamps[k + 1];
      SegmentSum sum;
      for (int64_t d : ring.segments[k]) sum.Add(d);
      s.net = sum.net;
      s.max_prefix = sum.max_prefix;
      s.min_prefix = sum.min_prefix;
      out.push_back(s);
    }
  }
  return out;
}

// One real execution: each record at a random time inside its window, in ring order, and
// the records of all rings merged by time (ties in random order). Returns its peak,
// relative to the start.
int64_t RandomExecutionPeak(const std::vector<TestRing>& rings, uint64_t horizon,
                            std::mt19937_64& rng) {
  struct Timed {
    uint64_t time;
    uint64_t tie;
    int64_t delta;
  };
  std::vector<Timed> all;
  for (const TestRing& ring : rings) {
    std::vector<Timed> mine;
    for (size_t k = 0; k < ring.segments.size(); ++k) {
      const uint64_t lo = ring.stamps[k];
      const uint64_t hi = (ring.last_open && k + 1 == ring.segments.size())
                              ? horizon
                              : ring.stamps[k + 1];
      std::vector<uint64_t> times;
      for (size_t i = 0; i < ring.segments[k].size(); ++i) {
        times.push_back(std::uniform_int_distribution<uint64_t>(lo, hi)(rng));
      }
      std::sort(times.begin(), times.end());
      for (size_t i = 0; i < times.size(); ++i) {
        mine.push_back(Timed{times[i], 0, ring.segments[k][i]});
      }
    }
    // Ties inside one ring keep the ring's order: increasing tie keys.
    std::vector<uint64_t> ties;
    for (size_t i = 0; i < mine.size(); ++i) ties.push_back(rng());
    std::sort(ties.begin(), ties.end());
    for (size_t i = 0; i < mine.size(); ++i) mine[i].tie = ties[i];
    all.insert(all.end(), mine.begin(), mine.end());
  }
  std::stable_sort(all.begin(), all.end(), [](const Timed& a, const Timed& b) {
    return a.time != b.time ? a.time < b.time : a.tie < b.tie;
  });
  int64_t value = 0, peak = 0;
  for (const Timed& t : all) {
    value += t.delta;
    peak = std::max(peak, value);
  }
  return peak;
}

TestRing RandomRing(std::mt19937_64& rng, uint64_t horizon) {
  TestRing ring;
  const int segments = std::uniform_int_distribution<int>(1, 5)(rng);
  for (int k = 0; k <= segments; ++k) {
    ring.stamps.push_back(std::uniform_int_distribution<uint64_t>(1, horizon - 1)(rng));
  }
  std::sort(ring.stamps.begin(), ring.stamps.end());
  for (int k = 0; k < segments; ++k) {
    std::vector<int64_t> deltas;
    const int n = std::uniform_int_distribution<int>(0, 4)(rng);
    for (int i = 0; i < n; ++i) deltas.push_back(std::uniform_int_distribution<int64_t>(-9, 9)(rng));
    ring.segments.push_back(deltas);
  }
  ring.last_open = std::bernoulli_distribution(0.3)(rng);
  return ring;
}

TEST(PeakBoundsTest, EveryExecutionInsideTheWindowsHasItsPeakInTheInterval) {
  std::mt19937_64 rng(20261206);
  const uint64_t horizon = 40;
  for (int instance = 0; instance < 3000; ++instance) {
    std::vector<TestRing> rings;
    const int n = std::uniform_int_distribution<int>(1, 4)(rng);
    for (int r = 0; r < n; ++r) rings.push_back(RandomRing(rng, horizon));
    for (bool skip_empty : {false, true}) {
      const PeakInterval bound = BoundPeak(Summaries(rings, skip_empty));
      ASSERT_LE(bound.low, bound.high);
      for (int run = 0; run < 60; ++run) {
        const int64_t peak = RandomExecutionPeak(rings, horizon, rng);
        ASSERT_GE(peak, bound.low) << "instance " << instance << " run " << run;
        ASSERT_LE(peak, bound.high) << "instance " << instance << " run " << run;
      }
    }
  }
}

TEST(PeakBoundsTest, OneRingIsExact) {
  std::mt19937_64 rng(7);
  for (int instance = 0; instance < 500; ++instance) {
    const std::vector<TestRing> rings{RandomRing(rng, 40)};
    const PeakInterval bound = BoundPeak(Summaries(rings, true));
    const int64_t peak = RandomExecutionPeak(rings, 40, rng);
    EXPECT_EQ(bound.low, peak);
    EXPECT_EQ(bound.high, peak);
  }
}

TEST(PeakBoundsTest, RingsApartInTimeAreExact) {
  // Ring 0 allocates 10 and frees it in [1, 5]; ring 1 allocates 7 in [6, 9]: never both.
  TestRing a{{1, 3, 5}, {{10}, {-10}}, false};
  TestRing b{{6, 9}, {{7}}, false};
  const PeakInterval bound = BoundPeak(Summaries({a, b}, true));
  EXPECT_EQ(bound.low, 10);
  EXPECT_EQ(bound.high, 10);
}

TEST(PeakBoundsTest, OverlappingWindowsGiveTheRangeOfPossiblePeaks) {
  // Both rings hold a block of 10 inside [1, 5]; they may or may not overlap.
  TestRing a{{1, 5}, {{10, -10}}, false};
  TestRing b{{1, 5}, {{10, -10}}, false};
  const PeakInterval bound = BoundPeak(Summaries({a, b}, true));
  EXPECT_EQ(bound.low, 10);
  EXPECT_EQ(bound.high, 20);
}

TEST(PeakBoundsTest, UnknownWindowsStillBound) {
  // No stamps at all: every window is everything.
  std::vector<OrderSegment> segs{{0, 0, kOpenWindow, 5, 8, 0},
                                 {0, 0, kOpenWindow, 1, 1, -2},
                                 {1, 0, kOpenWindow, -3, 0, -3}};
  const PeakInterval bound = BoundPeak(segs);
  // Ring 0 alone reaches 8 at most: 8 with ring 1 before (at -3) gives 5 at least.
  EXPECT_EQ(bound.high, 8);
  EXPECT_EQ(bound.low, 5);
}

TEST(PeakBoundsTest, NothingChangedIsZero) {
  const PeakInterval bound = BoundPeak({});
  EXPECT_EQ(bound.low, 0);
  EXPECT_EQ(bound.high, 0);
}

}  // namespace
}  // namespace memtrace
