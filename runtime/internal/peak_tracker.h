// Copyright 2026 The memtrace Authors.
//
// peak_tracker.h: what each ring's time-stamped segments did to each counter during one
// epoch, for the interval that bounds every high-water mark (peak_bounds.h).
//
// While the drainer applies an epoch whose records come from more than one ring, it tells
// the tracker which ring's segment (transport/spsc_ring.h, "order stamps") the next record
// belongs to (Begin, Use), and the ledger reports every change it makes to a counter
// (Change): the totals, the block's layer and its scope. At the epoch's end EndEpoch()
// hands each counter's interval to a callback, which the drainer passes to the ledger.
//
// A counter is named by a 64-bit key: kTotalsKey, LayerKey(layer) or ScopeKey(scope).
//
// Thread safety: none; the drainer thread owns it.

#ifndef MEMTRACE_RUNTIME_INTERNAL_PEAK_TRACKER_H_
#define MEMTRACE_RUNTIME_INTERNAL_PEAK_TRACKER_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "runtime/internal/peak_bounds.h"
#include "transport/event.h"

namespace memtrace {

class PeakTracker {
 public:
  static constexpr uint64_t kTotalsKey = 0;
  static constexpr uint64_t LayerKey(LayerId layer) noexcept {
    return (uint64_t{1} << 32) | layer;
  }
  static constexpr uint64_t ScopeKey(uint32_t scope) noexcept {
    return (uint64_t{2} << 32) | scope;
  }
  static constexpr bool IsLayerKey(uint64_t key) noexcept { return (key >> 32) == 1; }
  static constexpr bool IsScopeKey(uint64_t key) noexcept { return (key >> 32) == 2; }
  static constexpr uint32_t KeyId(uint64_t key) noexcept {
    return static_cast<uint32_t>(key);
  }

  // One ring's segment being applied: its window, and what its records applied so far
  // did to each counter they touched.
  struct Open {
    bool active = false;
    uint32_t ring = 0;
    uint64_t segment = 0;
    uint64_t lo = 0;
    uint64_t hi = kOpenWindow;
    // The tracker's split count (SoleEnded) when this segment's layer and scope sums were
    // last brought up to date: while it is behind, the sole layer's and scope's sums of
    // this segment are its totals' (every change it tracked since was in the sole pair).
    uint32_t splits_seen = 0;
    SegmentSum totals;
    absl::InlinedVector<std::pair<uint64_t, SegmentSum>, 8> others;  // layers and scopes
  };

  // Closes `open` if it is active, and opens segment `segment` of `ring` in it, with the
  // window [lo, hi].
  void Begin(Open* open, uint32_t ring, uint64_t segment, uint64_t lo, uint64_t hi);
  // The segment the next changes belong to; nullptr: none (changes are not tracked).
  void Use(Open* open) noexcept { current_ = open; }
  // Ends `open` (if active): its sums join the epoch's.
  void Close(Open* open);

  // A counter change, from the ledger: `delta` bytes in `layer` and `scope`. `split`:
  // false while every change so far was in one layer and one scope, whose counters are
  // then the totals' (AllocationLedger's sole mode): only the totals are tracked.
  __attribute__((always_inline)) void Change(LayerId layer, uint32_t scope, int64_t delta,
                                             bool split) {
    Open* const o = current_;
    if (o == nullptr) return;
    if (split) ChangeSplit(o, layer, scope, delta);
    o->totals.Add(delta);
  }
  // The ledger's sole mode ended: the change about to be reported is the first in
  // another layer or scope than `sole_layer` and `sole_scope`, whose changes until now
  // were tracked as the totals' only. Every one of them was in that pair, so the pair's
  // sums are the totals' sums: the segments of this epoch already closed are copied to
  // the pair's keys here, and each open one's when it next changes or closes
  // (Open::splits_seen). So every counter's segments cover the whole epoch, and the
  // interval EndEpoch() gives the pair holds its peak however the epoch's records were
  // interleaved before the split.
  void SoleEnded(LayerId sole_layer, uint32_t sole_scope);

  // The epoch is over (every Open closed). For each counter the epoch changed, the
  // totals first: `start_low(key, net)` gives the counter's value when the epoch began
  // (its live bytes now, less `net`, the epoch's change) and the lower end of its
  // interval so far; then, unless the epoch cannot have raised that interval (below),
  // `bound(key, low, high, net)` gets the epoch's peak interval relative to the value at
  // the epoch's start. Then forgets the epoch.
  //
  // The skip. The epoch's peak is at most the start value plus each ring's own highest
  // prefix (every ring at its highest at once), which one pass finds. When that is no
  // more than the interval's lower end so far, the epoch's interval, below it, changes
  // neither end of the run's interval (the run's peak is the largest of its epochs'), and
  // BoundPeak() is not run. In steady state only the epochs that come near a peak pay for
  // it.
  template <typename StartLow, typename Bound>
  void EndEpoch(StartLow&& start_low, Bound&& bound) {
    current_ = nullptr;
    for (const uint32_t index : used_) {
      Bucket& b = buckets_[index];
      int64_t net = 0;
      for (const OrderSegment& seg : b.segments) net += seg.net;
      const auto [start, low_so_far] = start_low(b.key, net);
      if (start + HighestPrefixSum(b.segments) > low_so_far) {
        GroupByRing(&b.segments);
        const PeakInterval interval = BoundPeak(b.segments);
        bound(b.key, interval.low, interval.high, net);
      }
      b.segments.clear();
    }
    used_.clear();
  }

 private:
  // One counter's segments this epoch, in the order they closed (each ring's in its own
  // order, the rings interleaved).
  struct Bucket {
    uint64_t key = 0;
    std::vector<OrderSegment> segments;
  };
  // Per ring, for HighestPrefixSum(): its change so far and highest prefix.
  struct RingSum {
    uint64_t epoch = 0;  // ring_sums_epoch_ when this entry was last reset
    int64_t c = 0;
    int64_t highest = 0;
  };

  // The sum of `key` in `o`: most changes of a segment fall in the layer and scope of the
  // one before, so those are looked at first.
  static SegmentSum& Find(Open* o, uint64_t key) {
    const size_t n = o->others.size();
    for (size_t i = n >= 2 ? n - 2 : 0; i < n; ++i) {
      if (o->others[i].first == key) return o->others[i].second;
    }
    for (size_t i = 0; i + 2 < n; ++i) {
      if (o->others[i].first == key) return o->others[i].second;
    }
    return o->others.emplace_back(key, SegmentSum{}).second;
  }
  void Push(const Open& o, uint64_t key, const SegmentSum& sum);
  // The index in buckets_ of `key`'s bucket, made if missing.
  uint32_t BucketIndex(uint64_t key);
  // Brings `o`'s sums of the sole pair up to date after a split (SoleEnded).
  void CatchUpSplit(Open* o);
  void ChangeSplit(Open* o, LayerId layer, uint32_t scope, int64_t delta);
  // The sum over rings of each ring's highest prefix (>= 0) in `segments`.
  int64_t HighestPrefixSum(const std::vector<OrderSegment>& segments);
  // Puts each ring's segments together, keeping their order (BoundPeak's input).
  static void GroupByRing(std::vector<OrderSegment>* segments);

  Open* current_ = nullptr;
  // Buckets by counter key, kept across epochs for their room; used_ lists the ones that
  // have segments this epoch.
  std::vector<Bucket> buckets_;
  absl::flat_hash_map<uint64_t, uint32_t> bucket_of_;
  std::vector<uint32_t> used_;
  std::vector<RingSum> ring_sums_;  // by ring id
  uint64_t ring_sums_epoch_ = 0;
  // SoleEnded() calls so far, and the pair the last one named.
  uint32_t splits_ = 0;
  uint64_t sole_layer_key_ = 0;
  uint64_t sole_scope_key_ = 0;
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_INTERNAL_PEAK_TRACKER_H_
