// Copyright 2026 The memtrace Authors.

#include "runtime/internal/peak_tracker.h"

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
  open->splits_seen = splits_;
  open->totals = SegmentSum{};
  open->others.clear();
}

void PeakTracker::SoleEnded(LayerId sole_layer, uint32_t sole_scope) {
  ++splits_;
  sole_layer_key_ = LayerKey(sole_layer);
  sole_scope_key_ = ScopeKey(sole_scope);
  const auto it = bucket_of_.find(kTotalsKey);
  // The totals' bucket holds segments only if it is in used_ (EndEpoch() clears the
  // segments of every used bucket): this epoch's.
  if (it == bucket_of_.end() || buckets_[it->second].segments.empty()) return;
  const uint32_t totals = it->second;
  for (const uint64_t key : {sole_layer_key_, sole_scope_key_}) {
    const uint32_t index = BucketIndex(key);  // may grow buckets_: references after it
    const std::vector<OrderSegment>& closed = buckets_[totals].segments;
    Bucket& b = buckets_[index];
    if (b.segments.empty()) used_.push_back(index);
    b.segments.insert(b.segments.end(), closed.begin(), closed.end());
  }
}

void PeakTracker::CatchUpSplit(Open* o) {
  o->splits_seen = splits_;
  // Every change this segment tracked so far was in the sole pair, which had no sums of
  // its own in it (only the totals were tracked).
  if (o->totals.max_prefix == 0 && o->totals.min_prefix == 0) return;
  Find(o, sole_layer_key_) = o->totals;
  Find(o, sole_scope_key_) = o->totals;
}

void PeakTracker::ChangeSplit(Open* o, LayerId layer, uint32_t scope, int64_t delta) {
  if (o->splits_seen != splits_) CatchUpSplit(o);
  Find(o, LayerKey(layer)).Add(delta);
  Find(o, ScopeKey(scope)).Add(delta);
}

void PeakTracker::Push(const Open& o, uint64_t key, const SegmentSum& sum) {
  OrderSegment seg;
  seg.ring = o.ring;
  seg.lo = o.lo;
  seg.hi = o.hi;
  seg.net = sum.net;
  seg.max_prefix = sum.max_prefix;
  seg.min_prefix = sum.min_prefix;
  const uint32_t index = BucketIndex(key);
  Bucket& b = buckets_[index];
  if (b.segments.empty()) used_.push_back(index);
  b.segments.push_back(seg);
}

uint32_t PeakTracker::BucketIndex(uint64_t key) {
  const auto [it, added] = bucket_of_.try_emplace(key, static_cast<uint32_t>(buckets_.size()));
  if (added) buckets_.push_back(Bucket{key, {}});
  return it->second;
}

void PeakTracker::Close(Open* open) {
  if (!open->active) return;
  open->active = false;
  if (current_ == open) current_ = nullptr;
  if (open->splits_seen != splits_) CatchUpSplit(open);
  // A segment whose records changed nothing (scope records, stack frames, unknown
  // releases) bounds nothing.
  if (open->totals.max_prefix == 0 && open->totals.min_prefix == 0 && open->others.empty()) {
    return;
  }
  Push(*open, kTotalsKey, open->totals);
  for (const auto& [key, sum] : open->others) Push(*open, key, sum);
}

int64_t PeakTracker::HighestPrefixSum(const std::vector<OrderSegment>& segments) {
  ++ring_sums_epoch_;
  int64_t total = 0;
  for (const OrderSegment& seg : segments) {
    if (seg.ring >= ring_sums_.size()) ring_sums_.resize(size_t{seg.ring} + 1);
    RingSum& r = ring_sums_[seg.ring];
    if (r.epoch != ring_sums_epoch_) r = RingSum{ring_sums_epoch_, 0, 0};
    const int64_t highest = std::max(r.highest, r.c + seg.max_prefix);
    total += highest - r.highest;  // the sum of the rings' highest, kept as it grows
    r.highest = highest;
    r.c += seg.net;
  }
  return total;
}

void PeakTracker::GroupByRing(std::vector<OrderSegment>* segments) {
  std::stable_sort(segments->begin(), segments->end(),
                   [](const OrderSegment& a, const OrderSegment& b) { return a.ring < b.ring; });
}

}  // namespace memtrace
