// Copyright 2026 The memtrace Authors.

#include "runtime/internal/peak_bounds.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace memtrace {
namespace {

constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;

// A ring's contribution over a run of consecutive pieces: at least L, at most U.
struct Run {
  size_t from;
  size_t to;  // inclusive
  int64_t low;
  int64_t high;
};

// One segment placed on the pieces: its first and last piece, its own bounds, and its
// ring's lower bound at its two end pieces (where a neighbouring segment of the ring may
// share the instant: the looser of the two).
struct Placed {
  size_t a;
  size_t b;
  int64_t own_low;   // C + min_prefix
  int64_t own_high;  // C + max_prefix
  int64_t low_at_a;
  int64_t low_at_b;
};

// BoundPeak's working memory, kept per thread for its room (the drainer calls it for
// every counter of every bounded epoch).
struct Scratch {
  std::vector<OrderSegment> segs;
  std::vector<uint64_t> times;
  std::vector<Run> runs;
  std::vector<Placed> placed;
  std::vector<int64_t> low_sum;
  std::vector<int64_t> high_sum;
  std::vector<int64_t> tree;
};

// Windows that overlap by more than an instant are merged (the header): a ring's windows
// then follow one another, meeting at most at one instant.
void Normalize(absl::Span<const OrderSegment> in, std::vector<OrderSegment>& out) {
  out.clear();
  out.reserve(in.size());
  for (OrderSegment s : in) {
    if (s.hi < s.lo) std::swap(s.lo, s.hi);  // a clock that went backwards: widen
    while (!out.empty() && out.back().ring == s.ring && s.lo < out.back().hi) {
      OrderSegment& p = out.back();
      OrderSegment m = p;
      m.lo = std::min(p.lo, s.lo);
      m.hi = std::max(p.hi, s.hi);
      m.max_prefix = std::max(p.max_prefix, p.net + s.max_prefix);
      m.min_prefix = std::min(p.min_prefix, p.net + s.min_prefix);
      m.net = p.net + s.net;
      out.pop_back();
      s = m;
    }
    out.push_back(s);
  }
}

// Range minima over a fixed array: an iterative segment tree.
class RangeMin {
 public:
  // `tree`: storage to build in, resized here.
  RangeMin(const std::vector<int64_t>& values, std::vector<int64_t>& tree)
      : n_(values.size()), tree_(tree) {
    tree_.resize(2 * n_);
    std::copy(values.begin(), values.end(), tree_.begin() + static_cast<ptrdiff_t>(n_));
    for (size_t i = n_; i-- > 1;) tree_[i] = std::min(tree_[2 * i], tree_[2 * i + 1]);
  }
  // Minimum over [from, to], inclusive; from <= to < n.
  int64_t Min(size_t from, size_t to) const {
    int64_t m = kInf;
    for (size_t l = from + n_, r = to + n_ + 1; l < r; l /= 2, r /= 2) {
      if (l & 1) m = std::min(m, tree_[l++]);
      if (r & 1) m = std::min(m, tree_[--r]);
    }
    return m;
  }

 private:
  size_t n_;
  std::vector<int64_t>& tree_;
};

}  // namespace

PeakInterval BoundPeak(absl::Span<const OrderSegment> input) {
  if (input.empty()) return {};
  // One ring: its own order is the only one, and the peak is its highest prefix.
  if (std::all_of(input.begin(), input.end(),
                  [&](const OrderSegment& s) { return s.ring == input[0].ring; })) {
    int64_t c = 0, peak = 0;
    for (const OrderSegment& s : input) {
      peak = std::max(peak, c + s.max_prefix);
      c += s.net;
    }
    return PeakInterval{peak, peak};
  }
  static thread_local Scratch scratch;
  std::vector<OrderSegment>& segs = scratch.segs;
  Normalize(input, segs);

  // The pieces: instant i is piece 2i + 1, the open interval after it 2i + 2, and the
  // time before every window end piece 0.
  std::vector<uint64_t>& times = scratch.times;
  times.clear();
  for (const OrderSegment& s : segs) {
    times.push_back(s.lo);
    if (s.hi != kOpenWindow) times.push_back(s.hi);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  const size_t pieces = 2 * times.size() + 1;
  auto instant = [&](uint64_t t) {
    return 2 * static_cast<size_t>(std::lower_bound(times.begin(), times.end(), t) -
                                   times.begin()) +
           1;
  };

  // Each ring's runs, in piece order and covering every piece.
  std::vector<Run>& runs = scratch.runs;
  std::vector<Placed>& placed = scratch.placed;
  runs.clear();
  placed.clear();
  for (size_t i = 0; i < segs.size();) {
    int64_t c = 0;  // the ring's change so far, from its ended segments
    size_t next = 0;  // the first piece no run covers yet
    size_t j = i;
    for (; j < segs.size() && segs[j].ring == segs[i].ring; ++j) {
      const OrderSegment& s = segs[j];
      const size_t a = instant(s.lo);
      const size_t b = s.hi == kOpenWindow ? pieces - 1 : instant(s.hi);
      const int64_t low = c + s.min_prefix;
      const int64_t high = c + s.max_prefix;
      int64_t low_at_a = low;
      if (a >= next) {
        if (a > next) runs.push_back(Run{next, a - 1, c, c});
        runs.push_back(Run{a, b, low, high});
      } else {
        // a == next - 1: the instant where the previous window ended and this one begins.
        // The ring may be in either segment there.
        const Run last = runs.back();
        low_at_a = std::min(last.low, low);
        if (last.from < a) {
          runs.back().to = a - 1;
          runs.push_back(Run{a, a, low_at_a, std::max(last.high, high)});
        } else {
          runs.back().low = low_at_a;
          runs.back().high = std::max(last.high, high);
        }
        if (b > a) runs.push_back(Run{a + 1, b, low, high});
        // The previous segment ends at that instant (and may also begin there).
        Placed& prev = placed.back();
        prev.low_at_b = low_at_a;
        if (prev.a == a) prev.low_at_a = low_at_a;
      }
      placed.push_back(Placed{a, b, low, high, low_at_a, b == a ? low_at_a : low});
      c += s.net;
      next = b + 1;
    }
    if (next < pieces) runs.push_back(Run{next, pieces - 1, c, c});
    i = j;
  }

  // Sum every ring's bounds over each piece (difference arrays).
  std::vector<int64_t>& low_sum = scratch.low_sum;
  std::vector<int64_t>& high_sum = scratch.high_sum;
  low_sum.assign(pieces + 1, 0);
  high_sum.assign(pieces + 1, 0);
  for (const Run& r : runs) {
    low_sum[r.from] += r.low;
    low_sum[r.to + 1] -= r.low;
    high_sum[r.from] += r.high;
    high_sum[r.to + 1] -= r.high;
  }
  low_sum.pop_back();
  high_sum.pop_back();
  int64_t low = 0, high = 0;
  for (size_t p = 1; p < pieces; ++p) {
    low_sum[p] += low_sum[p - 1];
    high_sum[p] += high_sum[p - 1];
  }
  for (size_t p = 0; p < pieces; ++p) {
    low = std::max(low, low_sum[p]);
    high = std::max(high, high_sum[p]);
  }

  // Each segment's own peak, with the other rings at their lowest over its window.
  const RangeMin minima(low_sum, scratch.tree);
  for (const Placed& s : placed) {
    int64_t others = kInf;
    if (s.b >= s.a + 2) others = minima.Min(s.a + 1, s.b - 1) - s.own_low;
    others = std::min(others, low_sum[s.a] - s.low_at_a);
    others = std::min(others, low_sum[s.b] - s.low_at_b);
    low = std::max(low, s.own_high + others);
  }
  return PeakInterval{std::min(low, high), high};
}

}  // namespace memtrace
