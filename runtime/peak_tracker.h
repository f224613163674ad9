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

#ifndef MEMTRACE_RUNTIME_PEAK_TRACKER_H_
#define MEMTRACE_RUNTIME_PEAK_TRACKER_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "runtime/peak_bounds.h"
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
    SegmentSum totals;
    absl::InlinedVector<std::pair<uint64_t, SegmentSum>, 4> others;  // layers and scopes
  };

  // Closes `open` if it is active, and opens segment `segment` of `ring` in it, with the
  // window [lo, hi].
  void Begin(Open* open, uint32_t ring, uint64_t segment, uint64_t lo, uint64_t hi);
  // The segment the next changes belong to; nullptr: none (changes are not tracked).
  void Use(Open* open) noexcept { current_ = open; }
  // Ends `open` (if active): its sums join the epoch's.
  void Close(Open* open);

  // A counter change, from the ledger: `delta` bytes in `layer` and `scope`.
  void Change(LayerId layer, uint32_t scope, int64_t delta) {
    Open* const o = current_;
    if (o == nullptr) return;
    o->totals.Add(delta);
    Find(o, LayerKey(layer)).Add(delta);
    Find(o, ScopeKey(scope)).Add(delta);
  }

  // The epoch is over (every Open closed): calls fn(key, low, high, net) once per counter
  // the epoch changed, with its peak's interval relative to its value at the epoch's
  // start, and its net change over the epoch. Then forgets the epoch.
  template <typename Fn>
  void EndEpoch(Fn&& fn) {
    current_ = nullptr;
    SortClosed();
    std::vector<OrderSegment> group;
    for (size_t i = 0; i < closed_.size();) {
      const uint64_t key = closed_[i].key;
      group.clear();
      int64_t net = 0;
      for (; i < closed_.size() && closed_[i].key == key; ++i) {
        group.push_back(closed_[i].segment);
        net += closed_[i].segment.net;
      }
      const PeakInterval bound = BoundPeak(group);
      fn(key, bound.low, bound.high, net);
    }
    closed_.clear();
  }

 private:
  struct Closed {
    uint64_t key;
    uint64_t seq;  // order of closing: a ring's segments close in its order
    OrderSegment segment;
  };

  static SegmentSum& Find(Open* o, uint64_t key) {
    for (auto& [k, sum] : o->others) {
      if (k == key) return sum;
    }
    return o->others.emplace_back(key, SegmentSum{}).second;
  }
  void Push(const Open& o, uint64_t key, const SegmentSum& sum);
  // Orders closed_ by counter, then ring, then closing order (BoundPeak's input).
  void SortClosed();

  Open* current_ = nullptr;
  std::vector<Closed> closed_;
  uint64_t seq_ = 0;
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_PEAK_TRACKER_H_
