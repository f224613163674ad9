// Copyright 2026 The memtrace Authors.

#include "runtime/peak_bounds.h"

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

// One segment placed on the pieces: its first and last piece and its own bounds.
struct Placed {
  size_t a;
  size_t b;
  int64_t own_low;   // C + min_prefix
  int64_t own_high;  // C + max_prefix
  size_t ring_runs;  // index of its ring's first run in the runs vector
  size_t ring_runs_end;
};

// Windows that overlap by more than an instant are merged (the header): a ring's windows
// then follow one another, meeting at most at one instant.
std::vector<OrderSegment> Normalize(absl::Span<const OrderSegment> in) {
  std::vector<OrderSegment> out;
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
  return out;
}

// Range minima over a fixed array: an iterative segment tree.
class RangeMin {
 public:
  explicit RangeMin(const std::vector<int64_t>& values) : n_(values.size()), tree_(2 * n_) {
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
  std::vector<int64_t> tree_;
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
  const std::vector<OrderSegment> segs = Normalize(input);

  // The pieces: instant i is piece 2i + 1, the open interval after it 2i + 2, and the
  // time before every window end piece 0.
  std::vector<uint64_t> times;
  times.reserve(2 * segs.size());
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
  std::vector<Run> runs;
  std::vector<Placed> placed;
  runs.reserve(3 * segs.size() + 2);
  placed.reserve(segs.size());
  for (size_t i = 0; i < segs.size();) {
    const size_t ring_first_run = runs.size();
    const size_t ring_first_seg = placed.size();
    int64_t c = 0;  // the ring's change so far, from its ended segments
    size_t next = 0;  // the first piece no run covers yet
    size_t j = i;
    for (; j < segs.size() && segs[j].ring == segs[i].ring; ++j) {
      const OrderSegment& s = segs[j];
      const size_t a = instant(s.lo);
      const size_t b = s.hi == kOpenWindow ? pieces - 1 : instant(s.hi);
      const int64_t low = c + s.min_prefix;
      const int64_t high = c + s.max_prefix;
      if (a >= next) {
        if (a > next) runs.push_back(Run{next, a - 1, c, c});
        runs.push_back(Run{a, b, low, high});
      } else {
        // a == next - 1: the instant where the previous window ended and this one begins.
        // The ring may be in either segment there.
        const Run last = runs.back();
        if (last.from < a) {
          runs.back().to = a - 1;
          runs.push_back(Run{a, a, std::min(last.low, low), std::max(last.high, high)});
        } else {
          runs.back().low = std::min(last.low, low);
          runs.back().high = std::max(last.high, high);
        }
        if (b > a) runs.push_back(Run{a + 1, b, low, high});
      }
      placed.push_back(Placed{a, b, low, high, 0, 0});
      c += s.net;
      next = b + 1;
    }
    if (next < pieces) runs.push_back(Run{next, pieces - 1, c, c});
    for (size_t k = ring_first_seg; k < placed.size(); ++k) {
      placed[k].ring_runs = ring_first_run;
      placed[k].ring_runs_end = runs.size();
    }
    i = j;
  }

  // Sum every ring's bounds over each piece (difference arrays).
  std::vector<int64_t> low_sum(pieces + 1, 0), high_sum(pieces + 1, 0);
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
  const RangeMin minima(low_sum);
  auto ring_low_at = [&](const Placed& s, size_t piece) {
    const auto first = runs.begin() + static_cast<ptrdiff_t>(s.ring_runs);
    const auto last = runs.begin() + static_cast<ptrdiff_t>(s.ring_runs_end);
    const auto it = std::upper_bound(first, last, piece,
                                     [](size_t p, const Run& r) { return p < r.from; });
    return std::prev(it)->low;
  };
  for (const Placed& s : placed) {
    int64_t others = kInf;
    if (s.b >= s.a + 2) others = minima.Min(s.a + 1, s.b - 1) - s.own_low;
    others = std::min(others, low_sum[s.a] - ring_low_at(s, s.a));
    others = std::min(others, low_sum[s.b] - ring_low_at(s, s.b));
    low = std::max(low, s.own_high + others);
  }
  return PeakInterval{std::min(low, high), high};
}

}  // namespace memtrace
