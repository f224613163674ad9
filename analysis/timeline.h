// Copyright 2026 The memtrace Authors.
//
// timeline.h: live bytes over the course of a capture, downsampled so that peaks survive.
//
// A Timeline holds one series per quantity worth plotting: the total live bytes, the live
// bytes of each layer (cpu, frame_arena, gpu, ...), of the scopes that reached the highest
// high-water marks (the rest summed as one "other scopes" series) and the census entries.
// TimelineBuilder follows an Analyzer's replay event by event (through its live-change
// hook) and keeps, per series, at most `max_points` points however long the capture:
//
//   events:   1 ........ W | W+1 ..... 2W | 2W+1 ...                 (buckets of W events)
//   kept:     min, max and last value of each bucket, with the event index and time of
//             each, in event order: a step line through them shows every bucket's extremes
//
// When the buckets run out, neighbours are merged pairwise and W doubles, so memory is
// bounded by the output (series x max_points), never by the capture. Each series' exact
// high-water mark (value, event, time) is kept beside its points, and the stacked view of
// the scope series takes all of them at the same moments (the bucket's minimum, maximum
// and last total), so a stack of the scope series reaches the total's true peak.
//
// Thread views (TimelineOptions::views): one replay draws, beside the timeline of every
// thread, one timeline per view of the blocks its threads allocated (Analyzer's thread
// views), each with the scopes its own first pass chose, as builders of one view each
// would: the replay's matching is shared, each view keeps its own series and buckets.
//
// Times are the events' `t` (ns since the Unix epoch, epoch resolution; see
// docs/capture-format.md) minus the first event's `t`.
//
// Thread safety: a TimelineBuilder is used by one thread. Timeline is a plain value.
//
// Example:
//
//   absl::StatusOr<CaptureSummary> first = Analyzer::Summarize(path);
//   TimelineBuilder builder(TimelineOptions{}, *first);
//   ReadCapture(path, [&](const CaptureRecord& r) { return builder.Apply(r); });
//   Timeline timeline = builder.Finish();
//
// With thread views, the first pass has them too, and chooses each view's scopes:
//
//   TimelineOptions options;
//   options.views = views;  // Analyzer::ThreadViews
//   Analyzer first;
//   first.SetThreadViews(options.views);
//   ... apply the capture ...
//   std::vector<CaptureSummary> view_summaries;
//   CaptureSummary summary = first.Finish(stats, &view_summaries);
//   TimelineBuilder builder(options, summary, view_summaries);
//   ... apply the capture ...
//   std::vector<Timeline> view_timelines;
//   Timeline timeline = builder.Finish(&view_timelines);

#ifndef MEMTRACE_ANALYSIS_TIMELINE_H_
#define MEMTRACE_ANALYSIS_TIMELINE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "analysis/analyzer.h"
#include "analysis/capture_reader.h"

namespace memtrace {

struct TimelineOptions {
  // Points kept per series (at least 3: one bucket's min, max and last).
  uint64_t max_points = 2000;
  // Scopes drawn as their own series (largest high-water first); the rest are summed.
  uint64_t scope_series = 10;
  // Census entries drawn (largest high-water first); the rest are not drawn.
  uint64_t census_series = 8;
  // The blocks of which threads the series count (Analyzer::SetThreadFilter(); empty:
  // every thread). Give the first pass the same filter, so that it picks the scopes these
  // threads filled. Census entries and the recorder's samples belong to the whole process
  // and are not filtered.
  Analyzer::ThreadFilter threads;
  // Thread views (Analyzer::SetThreadViews()): a timeline more for each, made in the same
  // replay, equal to the one a builder whose `threads` keeps that view's threads makes.
  Analyzer::ThreadViews views;
};

struct TimelinePoint {
  uint64_t event = 0;  // 1-based index of the event after which the value held
  int64_t t = 0;       // ns since the first event
  int64_t value = 0;
};

struct TimelineSeries {
  // kResident: the process's resident set, at the samples the recorder took (the trailer's
  // timeline, runtime/usage_sample.h), each at the last event of the epoch sampled.
  // kSampledLive: the live bytes those samples hold, drawn only where a size limit cut
  // the events (they go on past the cut, the total stops there).
  enum class Kind { kTotal, kLayer, kScope, kOtherScopes, kCensus, kResident, kSampledLive };
  Kind kind = Kind::kTotal;
  uint32_t id = 0;    // layer id, scope id or census label; 0 for the total and "other"
  std::string name;   // "total", a layer name, a scope path, "other scopes", "census #N"
  std::vector<TimelinePoint> points;  // in event order; the value holds until the next
  TimelinePoint high_water;           // the first moment of the series' maximum
};

struct Timeline {
  std::vector<TimelineSeries> series;  // total, layers, scopes, other scopes, census,
                                       // resident set
  // The stacked view: the moments (shared by all scope series) and, per scope series in
  // the order of `stack_series`, its value at each of them.
  std::vector<TimelinePoint> stack_moments;  // value: the total at that moment
  std::vector<size_t> stack_series;          // indices into `series`
  std::vector<std::vector<int64_t>> stack_values;
  uint64_t events = 0;
  uint64_t events_per_bucket = 1;
  int64_t first_t = 0;  // the first event's t (ns since the Unix epoch)
  int64_t last_t = 0;   // the last event's t, absolute
  uint64_t scopes_total = 0;    // scopes that allocated
  uint64_t scopes_drawn = 0;    // of those, drawn as their own series
  uint64_t census_total = 0;    // census entries that changed
  uint64_t census_drawn = 0;
};

class TimelineBuilder {
 public:
  // `first_pass` is the summary of the same capture (Analyzer::Summarize): it chooses
  // which scopes and census entries get their own series. `view_first_passes`, one per
  // thread view of `options.views` in their order (Analyzer::Finish(stats, &views) of the
  // same capture), chooses the scopes of each view's timeline.
  TimelineBuilder(const TimelineOptions& options, const CaptureSummary& first_pass,
                  const std::vector<CaptureSummary>& view_first_passes = {});
  ~TimelineBuilder();
  TimelineBuilder(const TimelineBuilder&) = delete;
  TimelineBuilder& operator=(const TimelineBuilder&) = delete;

  // Replays one line (in file order) and records the values it changed.
  absl::Status Apply(const CaptureRecord& rec);
  // Apply() of every line of the capture at `path`, in the Analyzer's file replay
  // (Analyzer::ApplyFile(): read on a second thread, tables sized from the trailer, ledger
  // slots asked for ahead); `after` (if any) sees the state right after each line.
  absl::Status ApplyFile(const std::string& path,
                         const Analyzer::AfterRecord& after = Analyzer::AfterRecord());
  // The replay's state right now, e.g. for Analyzer::Composition() at the peak.
  const Analyzer& analyzer() const noexcept { return analyzer_; }

  // The timeline; with `views`, also each thread view's, in their order.
  Timeline Finish(std::vector<Timeline>* views = nullptr);

 private:
  // The series of one set of blocks (all those options.threads keeps, or a thread view's)
  // and their buckets: timeline.cc.
  class Chart;

  // Before the first line: the analyzer's hooks into the charts.
  void Start();
  // The values `rec`, just applied, changed.
  void RecordApplied(const CaptureRecord& rec);

  TimelineOptions options_;
  Analyzer analyzer_;
  std::vector<std::unique_ptr<Chart>> charts_;  // the main one, then one per thread view
  // The recorder's samples from the trailer: (unix ns, resident bytes, live bytes); and
  // whether a size limit cut the events (then the live bytes are drawn too).
  struct Sample {
    int64_t t, resident, live;
  };
  std::vector<Sample> samples_;
  bool cut_by_limit_ = false;
  // Per distinct event time (an epoch), the last event at it: where a sample falls.
  std::vector<std::pair<int64_t, uint64_t>> epoch_ends_;
  bool started_ = false;
  uint64_t events_recorded_ = 0;  // the analyzer's events_seen() at the last RecordApplied()
};

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_TIMELINE_H_
