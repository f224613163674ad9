// Copyright 2026 The memtrace Authors.

#include "runtime/peak_tracker.h"

#include <algorithm>

namespace memtrace {

void PeakTracker::Begin(Open* open, uint32_t ring, uint64_t segment, uint64_t lo,
                        uint64_t hi) {
  Close(open);
  open->active = true;
  open->ring = ring;
  open->segment = segment;
  open->lo = lo;
  open->hi = hi;
  open->totals = SegmentSum{};
  open->others.clear();
}

void PeakTracker::ChangeSplit(Open* o, LayerId layer, uint32_t scope, int64_t delta) {
  Find(o, LayerKey(layer)).Add(delta);
  Find(o, ScopeKey(scope)).Add(delta);
}

void PeakTracker::Push(const Open& o, uint64_t key, const SegmentSum& sum) {
  OrderSegment s;
  s.ring = o.ring;
  s.lo = o.lo;
  s.hi = o.hi;
  s.net = sum.net;
  s.max_prefix = sum.max_prefix;
  s.min_prefix = sum.min_prefix;
  closed_.push_back(Closed{key, seq_++, s});
}

void PeakTracker::Close(Open* open) {
  if (!open->active) return;
  open->active = false;
  if (current_ == open) current_ = nullptr;
  // A segment whose records changed nothing (scope records, stack frames, unknown
  // releases) bounds nothing.
  if (open->others.empty()) return;
  Push(*open, kTotalsKey, open->totals);
  for (const auto& [key, sum] : open->others) Push(*open, key, sum);
}

void PeakTracker::SortClosed() {
  std::sort(closed_.begin(), closed_.end(), [](const Closed& a, const Closed& b) {
    if (a.key != b.key) return a.key < b.key;
    if (a.segment.ring != b.segment.ring) return a.segment.ring < b.segment.ring;
    return a.seq < b.seq;
  });
}

}  // namespace memtrace
