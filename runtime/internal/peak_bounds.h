// Copyright 2026 The memtrace Authors.
//
// peak_bounds.h: the interval that must contain the true peak of one counter over one
// epoch, from what the records say about time.
//
// Inside an epoch the records of different threads carry no order of their own
// (transport/epoch_clock.h). Each ring's records come in *segments*: the records between
// two of its time stamps (transport/spsc_ring.h, "order stamps"). Every record of a
// segment was made at a time inside the segment's window [lo, hi], and a ring's records
// are in its own order. For one counter (the totals, a layer, a scope) a segment is
// summed up by what its records did to that counter, in order:
//
//   net         the change over the whole segment
//   max_prefix  the highest the counter went above its value at the segment's start
//               (>= 0: the empty prefix counts)
//   min_prefix  the lowest it went below it (<= 0)
//
// BoundPeak() returns [low, high] relative to the counter's value when the epoch began,
// such that the highest value the counter took in *any* order of the records that keeps
// each ring's order and puts every record inside its window lies in [low, high]. The
// real execution is one such order, so its peak is inside.
//
// The argument. Cut time into pieces: the distinct window ends t_0 < t_1 < ..., each an
// instant of its own, and the open intervals between them. During one piece, ring r is
// inside at most one segment (its windows meet only at their ends; at a shared end it may
// be in either, so the piece takes the looser of the two), or between two, where its
// records so far are exactly known (C: the nets of its segments that ended). So at any
// moment of the piece the counter is
//
//   S + sum over rings of (C_r + prefix_r),   min_prefix <= prefix_r <= max_prefix,
//
// which gives pointwise bounds L(piece) <= value <= U(piece), and high = max U. A max of
// L alone misses peaks made inside one segment (a thread that allocates and frees a
// buffer between two stamps), so low also takes, for each segment k of each ring r,
// the moment r's counter is at C + max_prefix: some moment inside k's window, when every
// other ring s is at least at L_s of the piece it is in, so
//
//   low >= C_rk + max_prefix_rk + min over the pieces of k's window of sum_{s != r} L_s.
//
// With one ring, or rings that never overlap in time, low == high == the peak.
//
// Windows that overlap by more than an instant (stamps that are missing, or read from a
// clock that went backwards) are first merged into one segment: a wider window, so the
// interval only widens.
//
// Cost: O(P log P) for P segments (a sort and a sparse table for range minima).
//
// Thread safety: pure functions.

#ifndef MEMTRACE_RUNTIME_INTERNAL_PEAK_BOUNDS_H_
#define MEMTRACE_RUNTIME_INTERNAL_PEAK_BOUNDS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace memtrace {

// A window end that is not known yet (the ring's next stamp is not published): later than
// every stamp.
inline constexpr uint64_t kOpenWindow = ~uint64_t{0};

struct OrderSegment {
  uint32_t ring = 0;  // which ring (any id; segments of one ring must be adjacent)
  uint64_t lo = 0;    // window start (stamp clock); 0: unknown, earlier than every stamp
  uint64_t hi = kOpenWindow;
  int64_t net = 0;
  int64_t max_prefix = 0;  // >= max(0, net)
  int64_t min_prefix = 0;  // <= min(0, net)
};

struct PeakInterval {
  int64_t low = 0;   // relative to the counter's value at the epoch's start
  int64_t high = 0;
};

// The interval above. `segments`: every segment of the epoch that changed the counter,
// each ring's together and in its own order. An empty span gives [0, 0].
PeakInterval BoundPeak(absl::Span<const OrderSegment> segments);

// A running summary of one segment's changes to one counter (max_prefix and min_prefix
// as above).
struct SegmentSum {
  int64_t net = 0;
  int64_t max_prefix = 0;
  int64_t min_prefix = 0;

  void Add(int64_t delta) noexcept {
    net += delta;
    if (net > max_prefix) max_prefix = net;
    if (net < min_prefix) min_prefix = net;
  }
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_INTERNAL_PEAK_BOUNDS_H_
