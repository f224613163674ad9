// Copyright 2026 The memtrace Authors.

#include "analysis/analyzer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "analysis/trailer.h"
#include "sinks/capture_lock.h"
#include "simdjson.h"

namespace memtrace {
namespace {

uint64_t AddressKey(uint32_t layer, uint64_t addr) {
  return addr ^ (uint64_t{layer} << 56);
}

// Estimated bytes for a recorded size under a sample weight.
uint64_t Scaled(uint64_t size, double weight) {
  return weight == 1.0 ? size : static_cast<uint64_t>(std::llround(static_cast<double>(size) * weight));
}

// The number after `key` ("\"name\":") in a header line (or an object of one), 0 when
// absent.
uint64_t HeaderNumber(const std::string& header, std::string_view key) {
  const size_t at = header.find(key);
  if (at == std::string::npos) return 0;
  return strtoull(header.c_str() + at + key.size(), nullptr, 10);
}

// A forked child's capture (the interposer's MEMTRACE_TRACE_FORKS): the header's "fork"
// object; forked stays false when the header has none.
ForkOrigin ForkOf(const std::string& header) {
  ForkOrigin f;
  static constexpr std::string_view kObject = "\"fork\":{";
  const size_t at = header.find(kObject);
  if (at == std::string::npos) return f;
  const size_t end = header.find('}', at);
  const std::string object = header.substr(at, end == std::string::npos ? end : end - at);
  auto number = [&](std::string_view key) {
    return HeaderNumber(object,
                        absl::StrCat("\"", absl::string_view(key.data(), key.size()), "\":"));
  };
  f.forked = true;
  f.parent_pid = number("parent_pid");
  f.inherited_blocks = number("inherited_blocks");
  f.inherited_bytes = number("inherited_bytes");
  f.unpublished_records = number("unpublished_records");
  f.stacks_known = object.find("\"inherited_without_stack\":") != std::string::npos;
  f.inherited_without_stack = number("inherited_without_stack");
  return f;
}

// The header's "process" object (the interposer's); known stays false
// when there is none, or it is not what the interposer writes.
ProcessOrigin ProcessOf(const std::string& header) {
  ProcessOrigin p;
  simdjson::dom::parser parser;
  simdjson::dom::object process;
  if (parser.parse(simdjson::padded_string(header))["process"].get_object().get(process) !=
      simdjson::SUCCESS) {
    return p;
  }
  if (process["ppid"].get_uint64().get(p.ppid) != simdjson::SUCCESS) return p;
  simdjson::dom::array argv;
  if (process["argv"].get_array().get(argv) == simdjson::SUCCESS) {
    for (simdjson::dom::element arg : argv) {
      std::string_view text;
      if (arg.get_string().get(text) == simdjson::SUCCESS) p.argv.emplace_back(text);
    }
  }
  bool truncated = false;
  if (process["argv_truncated"].get_bool().get(truncated) == simdjson::SUCCESS) {
    p.argv_truncated = truncated;
  }
  p.known = true;
  return p;
}

constexpr const char* kPointForms =
    "use end, event=N (or N), time=T (since the capture started, or unix ns; T is a "
    "duration such as 1.5s, 250ms, 40us, 100ns, or a bare number of ns), "
    "scope-exit=PATH or scope-exit=PATH#N";

}  // namespace

absl::StatusOr<SnapshotPoint> ParseSnapshotPoint(std::string_view text) {
  SnapshotPoint p;
  p.text = std::string(text);
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad snapshot point '", p.text, "': ", why, " (", kPointForms, ")"));
  };
  const std::string_view kEvent = "event=", kTime = "time=", kScope = "scope-exit=";
  if (text == "end") return p;
  if (text.substr(0, kScope.size()) == kScope) {
    std::string_view rest = text.substr(kScope.size());
    p.kind = SnapshotPoint::Kind::kScopeExit;
    // "#N" at the end numbers the exit; a '#' followed by anything else is part of the path.
    const size_t hash = rest.rfind('#');
    if (hash != std::string_view::npos && hash + 1 < rest.size() &&
        rest.find_first_not_of("0123456789", hash + 1) == std::string_view::npos) {
      if (!absl::SimpleAtoi(absl::string_view(rest.data() + hash + 1, rest.size() - hash - 1),
                            &p.nth) ||
          p.nth == 0) {
        return bad("the exit number after '#' must be a positive integer");
      }
      rest = rest.substr(0, hash);
    }
    if (rest.empty()) return bad("the scope path is empty");
    p.scope = std::string(rest);
    return p;
  }
  std::string_view number = text;
  p.kind = SnapshotPoint::Kind::kEvent;
  if (text.substr(0, kTime.size()) == kTime) {
    p.kind = SnapshotPoint::Kind::kTime;
    number = text.substr(kTime.size());
  } else if (text.substr(0, kEvent.size()) == kEvent) {
    number = text.substr(kEvent.size());
  }
  uint64_t value = 0;
  const absl::string_view digits(number.data(), number.size());
  if (p.kind == SnapshotPoint::Kind::kTime) {
    // A bare number is nanoseconds, as time=NS always was; with a unit it is a duration.
    absl::Duration d;
    if (absl::SimpleAtoi(digits, &value)) {
      if (value > static_cast<uint64_t>(INT64_MAX)) return bad("the time is out of range");
      p.time_ns = static_cast<int64_t>(value);
    } else if (!absl::ParseDuration(digits, &d) || d < absl::ZeroDuration()) {
      return bad("expected a duration with a unit (ns, us, ms, s, m, h: 1.5s, 250ms) or a "
                 "non-negative integer of ns");
    } else if (d > absl::Nanoseconds(INT64_MAX)) {
      return bad("the time is out of range");
    } else {
      p.time_ns = absl::ToInt64Nanoseconds(d);
    }
    return p;
  }
  if (!absl::SimpleAtoi(digits, &value)) return bad("expected a non-negative integer");
  p.event = value;
  return p;
}

std::vector<Difference> Compare(const CaptureSummary& before, const CaptureSummary& after) {
  std::map<std::string, Difference> by_path;
  auto path_of = [](const CaptureSummary& s, uint32_t id) {
    auto it = s.scope_paths.find(id);
    return it != s.scope_paths.end() ? it->second : std::string("(scope ") +
                                                        std::to_string(id) + ")";
  };
  for (const auto& [id, usage] : before.scopes) {
    Difference& d = by_path[path_of(before, id)];
    d.path = path_of(before, id);
    d.before = usage;
  }
  for (const auto& [id, usage] : after.scopes) {
    Difference& d = by_path[path_of(after, id)];
    d.path = path_of(after, id);
    d.after = usage;
  }
  std::vector<Difference> out;
  out.push_back(Difference{"TOTAL", before.totals, after.totals});
  std::vector<Difference> rows;
  for (auto& [path, d] : by_path) rows.push_back(d);
  std::sort(rows.begin(), rows.end(), [](const Difference& a, const Difference& b) {
    const int64_t la = a.live_delta() < 0 ? -a.live_delta() : a.live_delta();
    const int64_t lb = b.live_delta() < 0 ? -b.live_delta() : b.live_delta();
    if (la != lb) return la > lb;
    const int64_t ha = a.high_water_delta() < 0 ? -a.high_water_delta() : a.high_water_delta();
    const int64_t hb = b.high_water_delta() < 0 ? -b.high_water_delta() : b.high_water_delta();
    if (ha != hb) return ha > hb;
    return a.path < b.path;
  });
  out.insert(out.end(), rows.begin(), rows.end());
  return out;
}

absl::StatusOr<CaptureSummary> Analyzer::Summarize(const std::string& path,
                                                   uint64_t stop_after) {
  Analyzer analyzer;
  analyzer.StopAfter(stop_after);
  CaptureReadStats stats;
  absl::Status s = ReadCapture(
      path, [&](const CaptureRecord& rec) { return analyzer.Apply(rec); }, &stats);
  if (!s.ok()) return s;
  return analyzer.FinishFile(path, stats);
}

absl::StatusOr<CaptureSummary> Analyzer::Summarize(const std::string& path,
                                                   const SnapshotPoint& point) {
  AnalysisSummaryOptions options;
  options.point = point;
  return Summarize(path, options);
}

absl::StatusOr<CaptureSummary> Analyzer::Summarize(const std::string& path,
                                                   const AnalysisSummaryOptions& options) {
  Analyzer analyzer;
  analyzer.StopAt(options.point);
  CaptureReadStats stats;
  absl::Status s = ReadCapture(
      path,
      [&](const CaptureRecord& rec) {
        if (options.progress) options.progress(stats.bytes);
        return analyzer.Apply(rec);
      },
      &stats);
  if (!s.ok()) return s;
  return analyzer.FinishFile(path, stats);
}

CaptureSummary Analyzer::FinishFile(const std::string& path, const CaptureReadStats& stats) {
  CaptureSummary summary = Finish(stats);
  summary.being_written = !summary.has_trailer && CaptureBeingWritten(path);
  return summary;
}

absl::StatusOr<CaptureSummary> Analyzer::SummarizeText(std::string_view text,
                                                       const std::string& name) {
  Analyzer analyzer;
  CaptureReadStats stats;
  absl::Status s = ReadCaptureText(
      text, name, [&](const CaptureRecord& rec) { return analyzer.Apply(rec); }, &stats);
  if (!s.ok()) return s;
  return analyzer.Finish(stats);
}

void Analyzer::Account(const Block& b, bool allocate) {
  UsageCounters& scope = summary_.scopes[b.scope];
  const uint64_t scope_high_water = scope.high_water_bytes;
  UsageCounters* all[] = {&summary_.totals, &summary_.layers[b.layer], &scope,
                          &attribution_[AttributionKey{b.site, b.scope, b.layer}]};
  // A sampled block stands for `count` allocations: the counters' own step is one.
  const uint64_t extra = b.count - 1;
  for (UsageCounters* c : all) {
    if (allocate) {
      c->Allocate(b.size);
      c->allocated_count += extra;
      c->allocation_calls += extra;
      c->live_count += extra;
    } else {
      c->Free(b.size);
      c->freed_count += extra;
      c->live_count -= extra;
    }
  }
  if (scope.high_water_bytes > scope_high_water) {
    summary_.scope_peak_event[b.scope] = events_seen_;
  }
  if (live_change_hook_) live_change_hook_(b.scope, b.layer);
}

uint64_t Analyzer::SampledCount(const AttributionKey& key, double weight) {
  if (weight == 1.0) return 1;  // adds exactly one to any sum: the sum is left as it is
  double& sum = weight_sums_[key];
  const int64_t before = std::llround(sum);
  sum += weight;
  // At least 1: weights are >= 1, and llround(x + 1) == llround(x) + 1 for x >= 0.
  return static_cast<uint64_t>(std::llround(sum) - before);
}

void Analyzer::Allocate(uint64_t ticket, const Block& b) {
  live_[ticket] = b;
  by_address_[AddressKey(b.layer, b.addr)].push_back(ticket);
  Account(b, /*allocate=*/true);
}

bool Analyzer::Take(uint64_t of, uint32_t layer, uint64_t addr, Block* out, uint64_t* key) {
  uint64_t ticket = of;
  auto it = live_.find(of);
  if (it == live_.end() && !aliases_.empty()) {
    // Named by the ticket of its last resize or move.
    if (auto alias = aliases_.find(of); alias != aliases_.end()) {
      ticket = alias->second;
      it = live_.find(ticket);
    }
  }
  if (it == live_.end() || it->second.addr != addr || it->second.layer != layer) {
    auto at = by_address_.find(AddressKey(layer, addr));
    if (at == by_address_.end() || at->second.empty()) return false;
    ticket = at->second.front();  // the oldest block at the address
    it = live_.find(ticket);
    if (it == live_.end()) return false;
  }
  *out = it->second;
  if (out->alias != 0) aliases_.erase(out->alias);
  if (key != nullptr) *key = ticket;
  live_.erase(it);
  auto at = by_address_.find(AddressKey(layer, addr));
  if (at != by_address_.end()) {
    auto& tickets = at->second;
    tickets.erase(std::find(tickets.begin(), tickets.end(), ticket));
    if (tickets.empty()) by_address_.erase(at);
  }
  return true;
}

bool Analyzer::BeyondPoint(const CaptureRecord& rec) {
  if (stopped_ || events_seen_ >= stop_after_) return true;
  switch (point_.kind) {
    case SnapshotPoint::Kind::kEnd:
    case SnapshotPoint::Kind::kScopeExit:  // checked after the event is applied
      return false;
    case SnapshotPoint::Kind::kEvent:
      stopped_ = events_seen_ >= point_.event;
      return stopped_;
    case SnapshotPoint::Kind::kTime: {
      const int64_t started = summary_.started_unix_ns;
      const int64_t at = point_.time_ns < started ? started + point_.time_ns : point_.time_ns;
      stopped_ = rec.t > at;
      return stopped_;
    }
  }
  return false;
}

absl::Status Analyzer::Apply(const CaptureRecord& rec) {
  const bool is_event = rec.type >= LineType::kAlloc && rec.type <= LineType::kIntervalEnd;
  if (is_event) {
    if (BeyondPoint(rec)) return absl::OkStatus();
    ++events_seen_;
    last_t_ = rec.t;
    ++thread_events_[rec.thread];
  }
  const uint64_t high_water_before = summary_.totals.high_water_bytes;
  absl::Status s = ApplyLine(rec);
  if (summary_.totals.high_water_bytes > high_water_before) {
    summary_.peak_event_index = events_seen_;
    summary_.peak_t = last_t_;
  }
  if (rec.type == LineType::kScopeExit && point_.kind == SnapshotPoint::Kind::kScopeExit) {
    auto path = summary_.scope_paths.find(rec.scope);
    if (path != summary_.scope_paths.end() && path->second == point_.scope &&
        ++scope_exits_seen_ == point_.nth) {
      stopped_ = true;
    }
  }
  return s;
}

absl::Status Analyzer::ApplyLine(const CaptureRecord& rec) {
  switch (rec.type) {
    case LineType::kHeader:
      summary_.pid = rec.pid;
      summary_.source = rec.source;
      summary_.malloc_from = rec.malloc_from;
      summary_.started_unix_ns = rec.t;
      summary_.sample_interval_bytes = HeaderNumber(rec.raw, "\"sample_interval_bytes\":");
      summary_.site_capacity = HeaderNumber(rec.raw, "\"site_capacity\":");
      summary_.stack_depth = HeaderNumber(rec.raw, "\"stack_depth\":");
      summary_.min_size = HeaderNumber(rec.raw, "\"min_size\":");
      summary_.fork = ForkOf(rec.raw);
      summary_.process = ProcessOf(rec.raw);
      summary_.trace_children = rec.raw.find("\"trace_children\":true") != std::string::npos;
      summary_.trace_forks = rec.raw.find("\"trace_forks\":true") != std::string::npos;
      summary_.sampled = summary_.sample_interval_bytes > 0;
      break;
    case LineType::kLayer:
      summary_.layer_names[rec.id] = rec.name;
      break;
    case LineType::kScope:
      summary_.scope_paths[rec.id] = rec.path;
      break;
    case LineType::kSite:
      summary_.site_addrs[rec.id] = rec.addr;
      if (!rec.frames.empty()) summary_.site_frames[rec.id] = rec.frames;
      break;
    case LineType::kModule:
      summary_.modules.push_back(rec);
      break;
    case LineType::kAlloc:
      if (rec.weight != 1.0) summary_.sampled = true;
      Allocate(rec.ticket, Block{rec.addr, Scaled(rec.size, rec.weight), rec.scope, rec.site,
                                 rec.layer, rec.thread, thread_events_[rec.thread],
                                 SampledCount({rec.site, rec.scope, rec.layer}, rec.weight),
                                 rec.weight});
      NoteAllocation(rec.thread, rec.ticket);
      last_allocation_[rec.thread] = rec.ticket;
      break;
    case LineType::kFree: {
      Block b;
      uint64_t key = 0;
      if (Take(rec.of, rec.layer, rec.addr, &b, &key)) {
        Account(b, /*allocate=*/false);
        NoteFreed(rec.thread, key, b);
      } else {
        ++summary_.unmatched_releases;
      }
      break;
    }
    case LineType::kResize: {
      Block b;
      uint64_t key = 0;
      if (!Take(rec.of, rec.layer, rec.addr, &b, &key)) {
        ++summary_.unmatched_releases;
        break;
      }
      const uint64_t new_size = Scaled(rec.size, b.weight);
      UsageCounters& scope = summary_.scopes[b.scope];
      const uint64_t scope_high_water = scope.high_water_bytes;
      UsageCounters* all[] = {&summary_.totals, &summary_.layers[b.layer], &scope,
                              &attribution_[AttributionKey{b.site, b.scope, b.layer}]};
      // One call, as Resize() counts it; a sampled block's resize stands for `count`.
      for (UsageCounters* c : all) {
        c->Resize(b.size, new_size);
        c->allocation_calls += b.count - 1;
      }
      if (scope.high_water_bytes > scope_high_water) {
        summary_.scope_peak_event[b.scope] = events_seen_;
      }
      if (live_change_hook_) live_change_hook_(b.scope, b.layer);
      b.size = new_size;
      // The block answers to the resize's ticket now, and stays under its first one.
      b.alias = rec.ticket;
      aliases_[rec.ticket] = key;
      live_[key] = b;
      by_address_[AddressKey(b.layer, b.addr)].push_back(key);
      last_allocation_[rec.thread] = key;
      break;
    }
    case LineType::kRemap: {
      Block b;
      Moving& m = moving_[rec.thread];
      m = Moving{};
      uint64_t key = 0;
      if (Take(rec.of, rec.layer, rec.addr, &b, &key)) {
        Account(b, /*allocate=*/false);
        m = Moving{true, b.scope, b.site, key};
      } else {
        ++summary_.unmatched_releases;
      }
      break;
    }
    case LineType::kRemapTarget: {
      Moving& m = moving_[rec.thread];
      // The moved block keeps the site and scope of the block it came from, and carries
      // its own weight: in a sampled capture the interposer draws a moved block anew, on
      // its new size (preload/byte_sampler.h).
      const double weight = rec.weight;
      if (weight != 1.0) summary_.sampled = true;
      Block b{rec.addr, Scaled(rec.size, weight), rec.scope, rec.site, rec.layer, 0, 0, 1,
              weight};
      if (m.active) {
        b.scope = m.scope;
        b.site = m.site;
      }
      b.count = SampledCount({b.site, b.scope, b.layer}, weight);
      if (m.active) {
        // The moved block: the same allocation, under its first ticket, named by this one.
        b.alias = rec.ticket;
        aliases_[rec.ticket] = m.key;
        Allocate(m.key, b);
      } else {
        Allocate(rec.ticket, b);
      }
      last_allocation_[rec.thread] = m.active ? m.key : rec.ticket;
      m = Moving{};
      break;
    }
    case LineType::kArenaReset: {
      std::vector<uint64_t> released;
      for (const auto& [ticket, b] : live_) {
        if (b.layer == rec.layer) released.push_back(ticket);
      }
      for (uint64_t ticket : released) {
        const Block b = live_[ticket];
        Block taken;
        Take(ticket, b.layer, b.addr, &taken);
        Account(b, /*allocate=*/false);
      }
      break;
    }
    case LineType::kScopeEnter:
      open_scopes_[rec.thread].push_back(OpenScope{rec.scope, {}});
      break;
    case LineType::kScopeExit:
      CloseScope(rec.thread, rec.scope);
      break;
    case LineType::kCensus:
      // A change adds up in any order (runtime/census.h); a value, from a capture written
      // before census changes were deltas, replaces. Unsigned: the sum wraps as the
      // runtime's differences do (Census::Set()).
      if (rec.has_delta) {
        int64_t& value = census_[rec.label];
        value = static_cast<int64_t>(static_cast<uint64_t>(value) +
                                     static_cast<uint64_t>(rec.delta));
      } else {
        census_[rec.label] = rec.bytes;
      }
      break;
    case LineType::kIntervalBegin:
    case LineType::kIntervalEnd:
      break;
    case LineType::kTrailer:
      summary_.has_trailer = true;
      summary_.trailer_complete = rec.complete;
      summary_.trailer = rec.raw;
      break;
  }
  return absl::OkStatus();
}

void Analyzer::NoteFreed(uint32_t thread, uint64_t key, const Block& b) {
  FreedAtOnce& at = freed_at_once_[AttributionKey{b.site, b.scope, b.layer}];
  // The thread's last allocation call was on this block: no other allocation between.
  auto last = last_allocation_.find(thread);
  if (last != last_allocation_.end() && last->second == key) {
    summary_.temporaries += b.count;
    summary_.temporary_bytes += b.size;
    at.temporaries += b.count;
  }
  if (b.thread == thread && thread_events_[thread] - b.thread_event <= kShortLivedEvents) {
    summary_.short_lived += b.count;
    summary_.short_lived_bytes += b.size;
    at.short_lived += b.count;
  }
}

void Analyzer::NoteAllocation(uint32_t thread, uint64_t ticket) {
  auto it = open_scopes_.find(thread);
  if (it != open_scopes_.end() && !it->second.empty()) {
    it->second.back().tickets.push_back(ticket);
  }
}

void Analyzer::CloseScope(uint32_t thread, uint32_t scope) {
  auto it = open_scopes_.find(thread);
  if (it == open_scopes_.end()) return;
  auto& stack = it->second;
  // Exits are recorded innermost first; close up to and including `scope`.
  while (!stack.empty()) {
    OpenScope open = std::move(stack.back());
    stack.pop_back();
    Retention& r = retention_[open.scope];
    r.scope = open.scope;
    ++r.exits;
    uint64_t blocks = 0, bytes = 0;
    std::vector<uint64_t> survivors;
    for (uint64_t ticket : open.tickets) {
      auto live = live_.find(ticket);
      if (live != live_.end()) {
        blocks += live->second.count;
        bytes += live->second.size;
        survivors.push_back(ticket);
      }
    }
    // What outlived this scope was also allocated inside the enclosing one.
    if (!stack.empty()) {
      auto& parent = stack.back().tickets;
      parent.insert(parent.end(), survivors.begin(), survivors.end());
    }
    if (blocks > 0) ++r.exits_retaining;
    r.retained_blocks += blocks;
    r.retained_bytes += bytes;
    if (open.scope == scope) break;
  }
}

CaptureSummary Analyzer::Finish(const CaptureReadStats& stats) {
  for (const auto& [scope, r] : retention_) summary_.retention.push_back(r);
  summary_.events = stats.events;
  summary_.cut = stats.cut;
  summary_.events_applied = events_seen_;
  summary_.snapshot_t = last_t_;
  summary_.snapshot_reached =
      point_.kind != SnapshotPoint::Kind::kScopeExit || scope_exits_seen_ >= point_.nth;
  summary_.live_blocks = 0;
  for (const auto& [ticket, b] : live_) summary_.live_blocks += b.count;
  for (const auto& [key, usage] : attribution_) {
    auto it = summary_.site_addrs.find(key.site);
    auto at_once = freed_at_once_.find(key);
    const FreedAtOnce freed = at_once != freed_at_once_.end() ? at_once->second : FreedAtOnce{};
    summary_.attribution.push_back(AllocationAttribution{
        key.site, it != summary_.site_addrs.end() ? it->second : 0, key.scope, key.layer,
        usage, freed.temporaries, freed.short_lived});
  }
  // The hash map's order changes from process to process (abseil seeds its hash), and
  // exports follow this vector: sort it so that the same capture always gives the same
  // output.
  std::sort(summary_.attribution.begin(), summary_.attribution.end(),
            [](const AllocationAttribution& a, const AllocationAttribution& b) {
              return std::tie(a.site, a.scope, a.layer) < std::tie(b.site, b.scope, b.layer);
            });
  Coverage& c = summary_.coverage;
  for (const auto& [scope, usage] : summary_.scopes) {
    (scope == 0 ? c.allocated_unscoped : c.allocated_scoped) += usage.allocated_bytes;
    (scope == 0 ? c.live_unscoped : c.live_scoped) += usage.live_bytes;
  }
  for (const auto& [label, bytes] : census_) c.census_bytes += bytes;
  c.census_entries = census_.size();
  // The replay's peaks are the recorder's (the capture's order is the one it applied);
  // their intervals come from the trailer, at the end only (trailer.h).
  std::optional<TrailerBlocks> blocks;
  if (summary_.has_trailer) {
    if (absl::StatusOr<TrailerBlocks> t = ParseTrailer(summary_.trailer); t.ok()) {
      blocks = *std::move(t);
    }
  }
  BoundReplayedPeaks(blocks ? &*blocks : nullptr, point_.kind == SnapshotPoint::Kind::kEnd,
                     &summary_.totals, &summary_.layers, &summary_.scopes);
  return std::move(summary_);
}

PeakComposition Analyzer::Composition() const {
  return CompositionOf([](const Block&) { return true; });
}

PeakComposition Analyzer::Composition(uint32_t only_scope) const {
  return CompositionOf([only_scope](const Block& b) { return b.scope == only_scope; });
}

PeakComposition Analyzer::CompositionOf(const std::function<bool(const Block&)>& keep) const {
  PeakComposition out;
  out.event_index = events_seen_;
  out.t = last_t_;
  absl::flat_hash_map<uint32_t, uint64_t> scopes, sites;
  for (const auto& [ticket, b] : live_) {
    if (!keep(b)) continue;
    scopes[b.scope] += b.size;
    sites[b.site] += b.size;
    out.live_bytes += b.size;
  }
  out.by_scope.assign(scopes.begin(), scopes.end());
  out.by_site.assign(sites.begin(), sites.end());
  auto larger = [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  };
  std::sort(out.by_scope.begin(), out.by_scope.end(), larger);
  std::sort(out.by_site.begin(), out.by_site.end(), larger);
  return out;
}

absl::StatusOr<PeakComposition> Analyzer::Peak(const std::string& path) {
  auto summary = Summarize(path);
  if (!summary.ok()) return summary.status();
  auto peaks = PeaksOf(path, *summary, {});
  if (!peaks.ok()) return peaks.status();
  return std::move(peaks->global);
}

absl::StatusOr<std::vector<ScopePeak>> Analyzer::ScopePeaks(const std::string& path,
                                                           const std::vector<uint32_t>& scopes) {
  auto summary = Summarize(path);
  if (!summary.ok()) return summary.status();
  auto peaks = PeaksOf(path, *summary, scopes);
  if (!peaks.ok()) return peaks.status();
  return std::move(peaks->scopes);
}

absl::StatusOr<Analyzer::Peaks> Analyzer::PeaksOf(const std::string& path,
                                                  const CaptureSummary& summary,
                                                  const std::vector<uint32_t>& scopes,
                                                  const Progress& progress) {
  // The moments to stop at, in replay order: event index -> scopes peaking there.
  std::map<uint64_t, std::vector<uint32_t>> moments;
  for (const auto& [scope, event] : summary.scope_peak_event) {
    if (scopes.empty() || std::find(scopes.begin(), scopes.end(), scope) != scopes.end()) {
      moments[event].push_back(scope);
    }
  }
  const uint64_t global = summary.peak_event_index;
  uint64_t last = global;
  if (!moments.empty()) last = std::max(last, moments.rbegin()->first);
  Peaks out;
  Analyzer replay;
  // Nothing after the last moment matters (the rest of the file is still read and
  // checked).
  replay.StopAfter(last);
  bool global_taken = false;
  if (global == 0) {  // no event raised the high-water mark: the empty start
    out.global = replay.Composition();
    global_taken = true;
  }
  auto next = moments.begin();
  CaptureReadStats stats;
  absl::Status s = ReadCapture(
      path,
      [&](const CaptureRecord& rec) {
        if (progress) progress(stats.bytes);
        absl::Status applied = replay.Apply(rec);
        const uint64_t at = replay.events_applied();
        if (!global_taken && at == global) {
          out.global = replay.Composition();
          global_taken = true;
        }
        while (next != moments.end() && at == next->first) {
          const uint64_t total = replay.Composition().live_bytes;
          for (uint32_t scope : next->second) {
            out.scopes.push_back(
                ScopePeak{scope, next->first, replay.last_t_, total, replay.Composition(scope)});
          }
          ++next;
        }
        return applied;
      },
      &stats);
  if (!s.ok()) return s;
  // A moment the replay never reached (the file changed since `summary` was made) is
  // left out rather than reported from the wrong state.
  if (!global_taken) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " has fewer events (", replay.events_applied(),
        ") than when it was summarized (high-water after event ", global,
        "); was it rewritten meanwhile? Run the command again"));
  }
  std::sort(out.scopes.begin(), out.scopes.end(), [](const ScopePeak& a, const ScopePeak& b) {
    return a.composition.live_bytes != b.composition.live_bytes
               ? a.composition.live_bytes > b.composition.live_bytes
               : a.scope < b.scope;
  });
  return out;
}

}  // namespace memtrace
