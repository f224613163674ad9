// Copyright 2026 The memtrace Authors.

#include "analysis/timeline.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "analysis/trailer.h"

namespace memtrace {
namespace {

// A bucket's moments (min, max, last: tags 0, 1, 2) in event order, one per event.
void AppendInOrder(std::vector<std::pair<TimelinePoint, int>> pts,
                   std::vector<std::pair<TimelinePoint, int>>* out) {
  std::stable_sort(pts.begin(), pts.end(),
                   [](const auto& a, const auto& b) { return a.first.event < b.first.event; });
  for (const auto& p : pts) {
    // One series has one value per event, so the same event is the same point.
    if (!out->empty() && out->back().first.event == p.first.event) continue;
    out->push_back(p);
  }
}

}  // namespace

// The series of one set of blocks and their buckets: what a timeline of one replay
// draws. The builder's replay tells it each event's changes.
class TimelineBuilder::Chart {
 public:
  // `first_pass`: the summary of the blocks this chart draws, which chooses its scopes.
  Chart(const TimelineOptions& options, const CaptureSummary& first_pass);

  // An event is applied: its number and time (ns since the Unix epoch), before the
  // changes it makes are recorded.
  void BeginEvent(uint64_t event, int64_t t);
  // The event counted a block in or out of `scope` and `layer`.
  void Changed(uint32_t scope, uint32_t layer) {
    dirty_scopes_.push_back(scope);
    dirty_layers_.push_back(layer);
  }
  // The event set the census entry `label` to `value`.
  void Census(uint32_t label, int64_t value);
  // Records the values of the scopes and layers the event changed, as `state` (the
  // counters of this chart's blocks) has them now, and the total.
  void RecordChanges(const CaptureSummary& state);
  Timeline Finish(const std::vector<Sample>& samples,
                  const std::vector<std::pair<int64_t, uint64_t>>& epoch_ends,
                  bool cut_by_limit);

 private:
  // The extremes and the last value of one series within one bucket.
  struct Bucket {
    bool used = false;
    TimelinePoint min, max, last;
  };
  // The scope values at the total's minimum, maximum and last moment in one bucket.
  struct StackBucket {
    std::vector<int64_t> at_min, at_max, at_last;
  };

  void Record(size_t series, int64_t value);
  void MergeBuckets();

  TimelineOptions options_;
  Timeline out_;
  absl::flat_hash_map<uint32_t, size_t> layer_series_;   // layer id -> series index
  absl::flat_hash_map<uint32_t, size_t> scope_series_;   // scope id -> series index
  absl::flat_hash_map<uint32_t, size_t> census_series_;  // label -> series index
  size_t other_series_ = 0;  // "other scopes"; == series count when every scope is drawn
  std::vector<int64_t> current_;               // per series
  std::vector<std::vector<Bucket>> buckets_;   // per series, per bucket
  std::vector<StackBucket> stack_buckets_;
  std::vector<uint32_t> dirty_scopes_, dirty_layers_;
  uint64_t bucket_count_ = 0;  // buckets available per series
  uint64_t event_ = 0;         // the event being applied
  int64_t t_ = 0;              // its time, ns since the Unix epoch
};

TimelineBuilder::TimelineBuilder(const TimelineOptions& options,
                                 const CaptureSummary& first_pass,
                                 const std::vector<CaptureSummary>& view_first_passes)
    : options_(options) {
  options_.max_points = std::max<uint64_t>(options_.max_points, 3);
  analyzer_.SetThreadFilter(options_.threads);
  analyzer_.SetThreadViews(options_.views);
  if (first_pass.has_trailer) {
    if (absl::StatusOr<TrailerBlocks> t = ParseTrailer(first_pass.trailer); t.ok()) {
      const int at = t->timeline.Column("t"), rss = t->timeline.Column("rss_bytes"),
                live = t->timeline.Column("live_bytes");
      if (at >= 0 && rss >= 0 && live >= 0) {
        for (const auto& row : t->timeline.rows) samples_.push_back({row[at], row[rss], row[live]});
      }
      cut_by_limit_ = t->events_past_limit != 0;
    }
  }
  charts_.push_back(std::make_unique<Chart>(options_, first_pass));
  const CaptureSummary none;
  for (size_t i = 0; i < options_.views.count; ++i) {
    charts_.push_back(std::make_unique<Chart>(
        options_, i < view_first_passes.size() ? view_first_passes[i] : none));
  }
}

TimelineBuilder::~TimelineBuilder() = default;

TimelineBuilder::Chart::Chart(const TimelineOptions& options, const CaptureSummary& first_pass)
    : options_(options) {
  bucket_count_ = options_.max_points / 3;

  auto add = [&](TimelineSeries::Kind kind, uint32_t id, std::string name) {
    TimelineSeries s;
    s.kind = kind;
    s.id = id;
    s.name = std::move(name);
    out_.series.push_back(std::move(s));
    return out_.series.size() - 1;
  };
  add(TimelineSeries::Kind::kTotal, 0, "total");
  for (const auto& [layer, usage] : first_pass.layers) {
    auto name = first_pass.layer_names.find(layer);
    layer_series_[layer] = add(TimelineSeries::Kind::kLayer, layer,
                               name != first_pass.layer_names.end()
                                   ? name->second
                                   : absl::StrCat("layer ", layer));
  }
  std::vector<std::pair<uint64_t, uint32_t>> scopes;  // (high-water, scope)
  for (const auto& [scope, usage] : first_pass.scopes) {
    scopes.emplace_back(usage.high_water_bytes, scope);
  }
  std::sort(scopes.begin(), scopes.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  out_.scopes_total = scopes.size();
  for (size_t i = 0; i < scopes.size() && i < options_.scope_series; ++i) {
    const uint32_t scope = scopes[i].second;
    auto path = first_pass.scope_paths.find(scope);
    const size_t index = add(TimelineSeries::Kind::kScope, scope,
                             path != first_pass.scope_paths.end()
                                 ? path->second
                                 : absl::StrCat("scope ", scope));
    scope_series_[scope] = index;
    out_.stack_series.push_back(index);
  }
  out_.scopes_drawn = out_.stack_series.size();
  if (scopes.size() > options_.scope_series) {
    other_series_ = add(TimelineSeries::Kind::kOtherScopes, 0, "other scopes");
    out_.stack_series.push_back(other_series_);
  } else {
    other_series_ = ~size_t{0};
  }
  // Census series are added as their labels first change (the first pass does not know
  // their high-water marks; the capture's trailer may be missing).
  current_.assign(out_.series.size(), 0);
  buckets_.assign(out_.series.size(), {});
}

void TimelineBuilder::Chart::MergeBuckets() {
  auto merge = [](const Bucket& a, const Bucket& b) {
    if (!a.used) return b;
    if (!b.used) return a;
    Bucket m = a;  // ties keep the earlier moment
    if (b.min.value < m.min.value) m.min = b.min;
    if (b.max.value > m.max.value) m.max = b.max;
    m.last = b.last;
    return m;
  };
  const std::vector<Bucket> empty;
  const std::vector<Bucket>& total = buckets_.empty() ? empty : buckets_[0];
  std::vector<StackBucket> stack((bucket_count_ + 1) / 2);
  for (uint64_t i = 0; i < bucket_count_; i += 2) {
    const bool has_a = i < total.size() && total[i].used;
    const bool has_b = i + 1 < total.size() && total[i + 1].used;
    if (!has_a && !has_b) continue;
    StackBucket& m = stack[i / 2];
    if (!has_b) {
      m = std::move(stack_buckets_[i]);
      continue;
    }
    if (!has_a) {
      m = std::move(stack_buckets_[i + 1]);
      continue;
    }
    const Bucket& a = total[i];
    const Bucket& b = total[i + 1];
    m.at_min = std::move(b.min.value < a.min.value ? stack_buckets_[i + 1].at_min
                                                   : stack_buckets_[i].at_min);
    m.at_max = std::move(b.max.value > a.max.value ? stack_buckets_[i + 1].at_max
                                                   : stack_buckets_[i].at_max);
    m.at_last = std::move(stack_buckets_[i + 1].at_last);
  }
  stack_buckets_ = std::move(stack);
  for (auto& series : buckets_) {
    std::vector<Bucket> merged((bucket_count_ + 1) / 2);
    for (uint64_t i = 0; i < series.size(); i += 2) {
      merged[i / 2] = merge(series[i], i + 1 < series.size() ? series[i + 1] : Bucket{});
    }
    merged.resize(std::min<size_t>(merged.size(), (series.size() + 1) / 2));
    series = std::move(merged);
  }
  out_.events_per_bucket *= 2;
}

void TimelineBuilder::Chart::Record(size_t series, int64_t value) {
  const uint64_t event = event_;
  const TimelinePoint p{event, t_ - out_.first_t, value};
  current_[series] = value;
  TimelineSeries& s = out_.series[series];
  if (value > s.high_water.value) s.high_water = p;

  uint64_t b = (event - 1) / out_.events_per_bucket;
  while (b >= bucket_count_) {
    MergeBuckets();
    b = (event - 1) / out_.events_per_bucket;
  }
  std::vector<Bucket>& buckets = buckets_[series];
  if (buckets.size() <= b) buckets.resize(b + 1);
  Bucket& k = buckets[b];
  bool new_min = false, new_max = false;
  if (!k.used) {
    k = Bucket{true, p, p, p};
    new_min = new_max = true;
  } else {
    if (value < k.min.value) k.min = p, new_min = true;
    if (value > k.max.value) k.max = p, new_max = true;
    k.last = p;
  }
  if (series != 0) return;
  // The total: take the scope series' values at this moment for the stacked view.
  if (stack_buckets_.size() <= b) stack_buckets_.resize(b + 1);
  StackBucket& sb = stack_buckets_[b];
  std::vector<int64_t>& last = sb.at_last;
  last.resize(out_.stack_series.size());
  for (size_t i = 0; i < out_.stack_series.size(); ++i) last[i] = current_[out_.stack_series[i]];
  if (new_min) sb.at_min = last;
  if (new_max) sb.at_max = last;
}

void TimelineBuilder::Chart::BeginEvent(uint64_t event, int64_t t) {
  if (event == 1) out_.first_t = t;
  out_.last_t = t;
  out_.events = event;
  event_ = event;
  t_ = t;
}

void TimelineBuilder::Chart::Census(uint32_t label, int64_t value) {
  auto it = census_series_.find(label);
  if (it == census_series_.end()) {
    ++out_.census_total;
    if (out_.census_drawn < options_.census_series) {
      ++out_.census_drawn;
      TimelineSeries c;
      c.kind = TimelineSeries::Kind::kCensus;
      c.id = label;
      c.name = absl::StrCat("census #", label);
      out_.series.push_back(std::move(c));
      current_.push_back(0);
      buckets_.emplace_back();
      it = census_series_.emplace(label, out_.series.size() - 1).first;
    }
  }
  if (it != census_series_.end() && current_[it->second] != value) {
    Record(it->second, value);
  }
}

void TimelineBuilder::Chart::RecordChanges(const CaptureSummary& state) {
  if (dirty_scopes_.empty()) return;
  // Each scope or layer this event changed, once, that has a series of its own.
  auto record_changed = [&](std::vector<uint32_t>& dirty,
                            const absl::flat_hash_map<uint32_t, size_t>& series_of,
                            const std::map<uint32_t, UsageCounters>& usage_of) {
    std::sort(dirty.begin(), dirty.end());
    dirty.erase(std::unique(dirty.begin(), dirty.end()), dirty.end());
    for (uint32_t id : dirty) {
      auto series = series_of.find(id);
      auto usage = usage_of.find(id);
      if (series == series_of.end() || usage == usage_of.end()) continue;
      const auto value = static_cast<int64_t>(usage->second.live_bytes);
      if (value != current_[series->second]) Record(series->second, value);
    }
  };
  record_changed(dirty_layers_, layer_series_, state.layers);
  record_changed(dirty_scopes_, scope_series_, state.scopes);
  dirty_scopes_.clear();
  dirty_layers_.clear();
  const auto total = static_cast<int64_t>(state.totals.live_bytes);
  if (other_series_ < out_.series.size()) {
    int64_t drawn = 0;
    for (const auto& [scope, index] : scope_series_) drawn += current_[index];
    if (total - drawn != current_[other_series_]) Record(other_series_, total - drawn);
  }
  if (total != current_[0]) Record(0, total);
}

void TimelineBuilder::Start() {
  if (started_) return;
  started_ = true;
  analyzer_.SetLiveChangeHook(
      [this](uint32_t scope, uint32_t layer) { charts_[0]->Changed(scope, layer); });
  analyzer_.SetViewLiveChangeHook([this](size_t view, uint32_t scope, uint32_t layer) {
    charts_[1 + view]->Changed(scope, layer);
  });
}

absl::Status TimelineBuilder::Apply(const CaptureRecord& rec) {
  Start();
  absl::Status s = analyzer_.Apply(rec);
  if (!s.ok()) return s;
  RecordApplied(rec);
  return absl::OkStatus();
}

absl::Status TimelineBuilder::ApplyFile(const std::string& path,
                                        const Analyzer::AfterRecord& after) {
  Start();
  CaptureReadStats stats;
  analyzer_.SkipFileChecksum();  // a later pass: its summary is the caller's
  return analyzer_.ApplyFile(path, &stats, Analyzer::Progress(),
                             [&](const CaptureRecord& rec) {
                               RecordApplied(rec);
                               return after ? after(rec) : absl::OkStatus();
                             });
}

void TimelineBuilder::RecordApplied(const CaptureRecord& rec) {
  // A line that is not an event changes no counter; one past a snapshot point neither.
  // (The last epoch's settling, in Analyzer::Finish(), is after the last event: not drawn.)
  const uint64_t event = analyzer_.events_seen();
  if (event == events_recorded_) return;
  events_recorded_ = event;
  if (!samples_.empty()) {
    if (epoch_ends_.empty() || epoch_ends_.back().first != rec.t) {
      epoch_ends_.emplace_back(rec.t, event);
    } else {
      epoch_ends_.back().second = event;
    }
  }
  for (auto& chart : charts_) chart->BeginEvent(event, rec.t);
  if (rec.type == LineType::kCensus) {
    // The analyzer's value, which sums the changes (or takes an older capture's value).
    const int64_t value = analyzer_.census().at(rec.label);
    for (auto& chart : charts_) chart->Census(rec.label, value);
  }
  charts_[0]->RecordChanges(analyzer_.state());
  for (size_t i = 1; i < charts_.size(); ++i) {
    charts_[i]->RecordChanges(analyzer_.view_state(i - 1));
  }
}

Timeline TimelineBuilder::Finish(std::vector<Timeline>* views) {
  if (views != nullptr) {
    for (size_t i = 1; i < charts_.size(); ++i) {
      views->push_back(charts_[i]->Finish(samples_, epoch_ends_, cut_by_limit_));
    }
  }
  return charts_[0]->Finish(samples_, epoch_ends_, cut_by_limit_);
}

Timeline TimelineBuilder::Chart::Finish(const std::vector<Sample>& samples,
                                        const std::vector<std::pair<int64_t, uint64_t>>& epoch_ends,
                                        bool cut_by_limit) {
  for (size_t i = 0; i < out_.series.size(); ++i) {
    std::vector<std::pair<TimelinePoint, int>> points;
    for (const Bucket& k : buckets_[i]) {
      if (k.used) AppendInOrder({{k.min, 0}, {k.max, 1}, {k.last, 2}}, &points);
    }
    out_.series[i].points.clear();
    for (const auto& p : points) out_.series[i].points.push_back(p.first);
  }
  out_.stack_values.assign(out_.stack_series.size(), {});
  const std::vector<Bucket> none;
  const std::vector<Bucket>& total = buckets_.empty() ? none : buckets_[0];
  for (size_t b = 0; b < total.size(); ++b) {
    if (!total[b].used) continue;
    const StackBucket& sb = stack_buckets_[b];
    std::vector<std::pair<TimelinePoint, int>> moments;
    AppendInOrder({{total[b].min, 0}, {total[b].max, 1}, {total[b].last, 2}}, &moments);
    for (const auto& [moment, tag] : moments) {
      const std::vector<int64_t>& values = tag == 0 ? sb.at_min : tag == 1 ? sb.at_max : sb.at_last;
      out_.stack_moments.push_back(moment);
      for (size_t i = 0; i < out_.stack_series.size(); ++i) {
        out_.stack_values[i].push_back(i < values.size() ? values[i] : 0);
      }
    }
  }
  if (!samples.empty() && out_.events > 0) {
    TimelineSeries resident, live;
    resident.kind = TimelineSeries::Kind::kResident;
    resident.name = "resident set (RSS)";
    live.kind = TimelineSeries::Kind::kSampledLive;
    live.name = "live bytes (sampled)";
    auto add = [](TimelineSeries* s, const TimelinePoint& p) {
      if (s->points.empty() || p.value > s->high_water.value) s->high_water = p;
      s->points.push_back(p);
    };
    for (const Sample& sample : samples) {
      // The sample was taken when the epoch that began at its time was applied: after its
      // last event, the last one whose time is not later.
      auto after = std::upper_bound(
          epoch_ends.begin(), epoch_ends.end(), sample.t,
          [](int64_t t, const std::pair<int64_t, uint64_t>& e) { return t < e.first; });
      const uint64_t event = after == epoch_ends.begin() ? 0 : std::prev(after)->second;
      const int64_t t = std::max<int64_t>(0, sample.t - out_.first_t);
      if (sample.resident > 0) add(&resident, {event, t, sample.resident});
      add(&live, {event, t, sample.live});
    }
    if (!resident.points.empty()) out_.series.push_back(std::move(resident));
    if (cut_by_limit) out_.series.push_back(std::move(live));
  }
  return std::move(out_);
}

}  // namespace memtrace
