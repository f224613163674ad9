// Copyright 2026 The memtrace Authors.

#include "analysis/family_live.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string_view>
#include <tuple>

#include "analysis/capture_reader.h"

namespace memtrace {
namespace {

// The number after "finished_unix_ns" in a trailer line; 0 when absent.
int64_t FinishedAt(const std::string& trailer) {
  static constexpr std::string_view kKey = "\"finished_unix_ns\":";
  const size_t at = trailer.find(kKey);
  if (at == std::string::npos) return 0;
  return strtoll(trailer.c_str() + at + kKey.size(), nullptr, 10);
}

}  // namespace

absl::StatusOr<CaptureSummary> SummarizeWithSteps(const std::string& path,
                                                  const Analyzer::Progress& progress,
                                                  ProcessLiveSteps* steps) {
  Analyzer analyzer;
  CaptureReadStats stats;
  steps->steps.clear();
  steps->ended_unix_ns = 0;
  int64_t last_t = 0;
  // After each record is applied: the live bytes after the last event at each time, and
  // the lowest and highest from before the first.
  auto step = [&](const CaptureRecord& rec) {
    if (rec.type == LineType::kTrailer) {
      steps->ended_unix_ns = FinishedAt(rec.raw);
    } else if (IsEvent(rec.type)) {
      const uint64_t live = analyzer.state().totals.live_bytes;
      std::vector<ProcessLiveSteps::Step>& all = steps->steps;
      if (all.empty() || all.back().t != rec.t) {
        const uint64_t before = all.empty() ? 0 : all.back().end;
        all.push_back({rec.t, before, before, before});
      }
      ProcessLiveSteps::Step& s = all.back();
      s.end = live;
      s.lowest = std::min(s.lowest, live);
      s.highest = std::max(s.highest, live);
      last_t = std::max(last_t, rec.t);
    }
    return absl::OkStatus();
  };
  absl::Status s = analyzer.ApplyFile(path, &stats, progress, step);
  if (!s.ok()) return s;
  steps->end_known = steps->ended_unix_ns != 0;
  if (steps->ended_unix_ns == 0) steps->ended_unix_ns = last_t;
  return analyzer.FinishFile(path, stats);
}

namespace {

// One process image's steps with the time each covers: the events stamped t happened
// between t and the next step's t (the drainer's epochs in between had none), the last
// step's until the image ended. Windows are taken closed, so that two that touch count
// as overlapping: the bounds below only widen.
struct Windows {
  std::vector<int64_t> start, stop;  // window i is [start[i], stop[i]]
  // Until when the image may have held its last step's memory: stop.back(), or for an
  // image whose end is not known, every later moment.
  int64_t maybe_until = 0;
  std::vector<uint64_t> lowest, highest;
  // A segment tree over `lowest` (leaves at [size, 2 size)): the least in a range of steps.
  size_t size = 0;
  std::vector<uint64_t> tree;

  explicit Windows(const ProcessLiveSteps& p) {
    const size_t n = p.steps.size();
    for (size_t i = 0; i < n; ++i) {
      start.push_back(p.steps[i].t);
      stop.push_back(i + 1 < n ? p.steps[i + 1].t : std::max(p.ended_unix_ns, p.steps[i].t));
      lowest.push_back(p.steps[i].lowest);
      highest.push_back(p.steps[i].highest);
    }
    maybe_until = p.end_known || n == 0 ? (n == 0 ? 0 : stop.back())
                                        : std::numeric_limits<int64_t>::max();
    size = 1;
    while (size < n) size *= 2;
    tree.assign(2 * size, ~uint64_t{0});
    for (size_t i = 0; i < n; ++i) tree[size + i] = lowest[i];
    for (size_t i = size - 1; i > 0; --i) tree[i] = std::min(tree[2 * i], tree[2 * i + 1]);
  }

  // The least this image surely held at every moment of [a, b]: the lowest of its steps
  // whose windows meet [a, b]; 0 when the range reaches outside its life.
  uint64_t LeastIn(int64_t a, int64_t b) const {
    if (start.empty() || a < start.front() || b > stop.back()) return 0;
    // The step whose window holds a, through the last that starts by b.
    size_t lo = static_cast<size_t>(std::upper_bound(start.begin(), start.end(), a) -
                                    start.begin()) - 1;
    const size_t hi = static_cast<size_t>(std::upper_bound(start.begin(), start.end(), b) -
                                          start.begin()) - 1;
    // The window before also meets a when it ends at a (closed windows).
    if (lo > 0 && stop[lo - 1] >= a) --lo;
    uint64_t least = ~uint64_t{0};
    for (size_t l = lo + size, r = hi + size + 1; l < r; l /= 2, r /= 2) {
      if (l & 1) least = std::min(least, tree[l++]);
      if (r & 1) least = std::min(least, tree[--r]);
    }
    return least;
  }
};

}  // namespace

FamilyHighWater HighestSum(const std::vector<ProcessLiveSteps>& processes) {
  std::vector<Windows> windows;
  windows.reserve(processes.size());
  for (const ProcessLiveSteps& p : processes) windows.emplace_back(p);
  FamilyHighWater best;

  // At least: one image at its highest in a step while every other held no less than the
  // least it surely held during that step's window.
  for (size_t p = 0; p < windows.size(); ++p) {
    const Windows& w = windows[p];
    for (size_t i = 0; i < w.start.size(); ++i) {
      if (w.highest[i] == 0) continue;
      uint64_t sum = w.highest[i];
      size_t holding = 1;
      for (size_t q = 0; q < windows.size(); ++q) {
        if (q == p) continue;
        const uint64_t least = windows[q].LeastIn(w.start[i], w.stop[i]);
        sum += least;
        holding += least != 0;
      }
      if (sum > best.bytes) best = FamilyHighWater{sum, 0, w.start[i], holding};
    }
  }

  // At most: every image at the highest of the steps whose windows hold a moment, at the
  // moment that sum is largest. Each image's highest over time changes at the starts of
  // its windows and falls to 0 after its end; at a boundary, both windows count.
  struct Change {
    int64_t t;
    size_t process;
    uint64_t highest;
    bool after;  // the change comes just after t (an image's end), not at it
  };
  std::vector<Change> changes;
  for (size_t p = 0; p < windows.size(); ++p) {
    const Windows& w = windows[p];
    for (size_t i = 0; i < w.start.size(); ++i) changes.push_back({w.start[i], p, w.highest[i], false});
    if (!w.start.empty()) changes.push_back({w.maybe_until, p, 0, true});
  }
  std::stable_sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
    return std::tie(a.t, a.after) < std::tie(b.t, b.after);
  });
  std::vector<uint64_t> now(windows.size(), 0);
  uint64_t sum = 0;
  for (size_t i = 0; i < changes.size();) {
    const int64_t t = changes[i].t;
    const bool after = changes[i].after;
    // At the instant itself the old step and the new one both hold.
    uint64_t during = sum;
    size_t j = i;
    for (; j < changes.size() && changes[j].t == t && changes[j].after == after; ++j) {
      during += changes[j].highest > now[changes[j].process]
                    ? changes[j].highest - now[changes[j].process]
                    : 0;
    }
    best.bytes_high = std::max(best.bytes_high, during);
    for (; i < j; ++i) {
      sum = sum - now[changes[i].process] + changes[i].highest;
      now[changes[i].process] = changes[i].highest;
    }
  }
  best.bytes_high = std::max(best.bytes_high, best.bytes);
  return best;
}

}  // namespace memtrace
