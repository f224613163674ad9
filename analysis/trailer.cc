// Copyright 2026 The memtrace Authors.

#include "analysis/trailer.h"

#include <algorithm>
#include <initializer_list>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "simdjson.h"

namespace memtrace {
namespace {

// The counters of the integrity object, by their trailer names (jsonl_sink.cc writes
// them), and where each goes.
struct Field {
  const char* name;
  uint64_t CaptureIntegrity::*member;
};
constexpr Field kIntegrityFields[] = {
    {"events_recorded", &CaptureIntegrity::events_recorded},
    {"events_applied", &CaptureIntegrity::events_applied},
    {"events_dropped", &CaptureIntegrity::events_dropped},
    {"records_failed", &CaptureIntegrity::records_failed},
    {"rings_unavailable", &CaptureIntegrity::rings_unavailable},
    {"not_recording", &CaptureIntegrity::not_recording},
    {"overflow_waits", &CaptureIntegrity::overflow_waits},
    {"unknown_frees", &CaptureIntegrity::unknown_frees},
    {"double_frees", &CaptureIntegrity::double_frees},
    {"unknown_resizes", &CaptureIntegrity::unknown_resizes},
    {"unknown_remaps", &CaptureIntegrity::unknown_remaps},
    {"missed_frees", &CaptureIntegrity::missed_frees},
    {"ticket_misses", &CaptureIntegrity::ticket_misses},
    {"ambiguous_matches", &CaptureIntegrity::ambiguous_matches},
    {"ticket_evictions", &CaptureIntegrity::ticket_evictions},
    {"order_conflicts", &CaptureIntegrity::order_conflicts},
    {"late_records", &CaptureIntegrity::late_records},
    {"foreign_span_exits", &CaptureIntegrity::foreign_span_exits},
    {"nested_records", &CaptureIntegrity::nested_records},
    {"stalled_claims", &CaptureIntegrity::stalled_claims},
    {"site_overflow", &CaptureIntegrity::site_overflow},
    {"scope_overflow", &CaptureIntegrity::scope_overflow},
    {"ring_capacity", &CaptureIntegrity::ring_capacity},
    {"max_ring_fill", &CaptureIntegrity::max_ring_fill},
    {"max_drainer_lag_ns", &CaptureIntegrity::max_drainer_lag_ns},
    {"epochs", &CaptureIntegrity::epochs},
    {"fenced_epochs", &CaptureIntegrity::fenced_epochs},
    {"rings", &CaptureIntegrity::rings},
    {"bounded_epochs", &CaptureIntegrity::bounded_epochs},
};

// A count: absent reads as 0 (older captures), anything but a non-negative integer is
// an error naming the field. `block`: the object it is in ("" for the trailer itself).
absl::Status ReadCount(simdjson::dom::object object, std::string_view block, const char* name,
                       uint64_t* out) {
  simdjson::dom::element value;
  if (object[name].get(value) != simdjson::SUCCESS) return absl::OkStatus();
  if (value.get_uint64().get(*out) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the trailer's field '", std::string(block), block.empty() ? "" : ".", name,
        "' is not a non-negative integer (the capture's last line was edited or damaged; "
        "record the capture again)"));
  }
  return absl::OkStatus();
}

// A block of counts in the trailer (`sink`, `memtrace_cpu_ns`), if the trailer has it:
// sets *has, keeps the object's text in *json, and reads each of `fields` (ReadCount())
// into the member of *t it names.
absl::Status ReadCountBlock(
    simdjson::dom::object trailer, const char* block,
    std::initializer_list<std::pair<const char*, uint64_t TrailerBlocks::*>> fields,
    bool* has, std::string* json, TrailerBlocks* t) {
  simdjson::dom::object object;
  if (trailer[block].get_object().get(object) != simdjson::SUCCESS) return absl::OkStatus();
  *has = true;
  *json = simdjson::minify(object);
  for (const auto& [name, member] : fields) {
    if (absl::Status s = ReadCount(object, block, name, &(t->*member)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// Sets the value of the boolean member `key` of the minified object `json` (where it has
// one) to `value`.
void SetBoolean(std::string* json, const std::string& key, bool value) {
  const std::string member = "\"" + key + "\":";
  const size_t at = json->find(member);
  if (at == std::string::npos) return;
  const size_t from = at + member.size();
  for (const std::string old : {"true", "false"}) {
    if (json->compare(from, old.size(), old) == 0) {
      json->replace(from, old.size(), value ? "true" : "false");
      return;
    }
  }
}

}  // namespace

int TrailerBlocks::Timeline::Column(std::string_view name) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] == name) return static_cast<int>(i);
  }
  return -1;
}

std::vector<std::string> TrailerBlocks::Losses() const {
  std::vector<std::string> out;
  auto add = [&](const char* what, uint64_t n) {
    if (n != 0) out.push_back(absl::StrCat(what, " ", n));
  };
  add("records dropped", integrity.events_dropped);
  add("records failed", integrity.records_failed);
  add("rings unavailable", integrity.rings_unavailable);
  add("events the sink lost", events_lost);
  add("events past the size limit", events_past_limit);
  add("write errors", write_errors);
  return out;
}

namespace {

// Whether a usage object carries a high-water interval (written since memtrace bounds
// peaks), and the interval; a null upper end is no bound.
bool HasPeakBound(simdjson::dom::object usage) {
  uint64_t v = 0;
  return usage["high_water_low_bytes"].get_uint64().get(v) == simdjson::SUCCESS;
}
TrailerBlocks::PeakBound ReadPeak(simdjson::dom::object usage) {
  TrailerBlocks::PeakBound b;
  if (usage["high_water_low_bytes"].get_uint64().get(b.low) != simdjson::SUCCESS) b.low = 0;
  uint64_t high = 0;
  if (usage["high_water_high_bytes"].get_uint64().get(high) == simdjson::SUCCESS) b.high = high;
  return b;
}

}  // namespace

void BoundReplayedPeaks(const TrailerBlocks* trailer, bool at_end, UsageCounters* totals,
                        std::map<uint32_t, UsageCounters>* layers,
                        std::map<uint32_t, UsageCounters>* scopes) {
  const bool known = trailer != nullptr && trailer->has_integrity &&
                     trailer->integrity.peaks_bounded && trailer->PeaksKnown();
  // Every epoch applied one ring: the capture's order is the real one, and the replay's
  // peaks (ordered: their intervals are their values) are exact at every point.
  if (known && trailer->integrity.bounded_epochs == 0) return;
  auto bound = [&](UsageCounters* u, const std::optional<TrailerBlocks::PeakBound>& b) {
    if (!known || !at_end || !b) {
      u->UnboundHighWater();
      return;
    }
    u->high_water_low_bytes = std::min(b->low, u->high_water_bytes);
    u->high_water_high_bytes = std::max(b->high, u->high_water_bytes);
  };
  auto find = [](const std::map<uint32_t, TrailerBlocks::PeakBound>& m, uint32_t id) {
    const auto it = m.find(id);
    return it == m.end() ? std::nullopt : std::optional<TrailerBlocks::PeakBound>(it->second);
  };
  bound(totals, known ? trailer->totals_peak : std::nullopt);
  for (auto& [id, u] : *layers) bound(&u, known ? find(trailer->layer_peaks, id) : std::nullopt);
  for (auto& [id, u] : *scopes) bound(&u, known ? find(trailer->scope_peaks, id) : std::nullopt);
}

absl::StatusOr<TrailerBlocks> ParseTrailer(std::string_view line) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (const auto err = parser.parse(simdjson::padded_string(line)).get(doc); err) {
    return absl::InvalidArgumentError(
        absl::StrCat("the trailer is not JSON (", simdjson::error_message(err),
                     "); the capture's last line was edited or damaged: record it again"));
  }
  simdjson::dom::object trailer;
  if (doc.get_object().get(trailer) != simdjson::SUCCESS) {
    return absl::InvalidArgumentError("the trailer is not a JSON object");
  }
  TrailerBlocks t;
  simdjson::dom::object integrity;
  if (trailer["integrity"].get_object().get(integrity) == simdjson::SUCCESS) {
    t.has_integrity = true;
    t.integrity_json = simdjson::minify(integrity);
    for (const Field& f : kIntegrityFields) {
      if (absl::Status s = ReadCount(integrity, "integrity", f.name, &(t.integrity.*f.member));
          !s.ok()) {
        return s;
      }
    }
    // A trailer without the field was written before peaks had bounds.
    uint64_t bounded = 0;
    t.integrity.peaks_bounded =
        integrity["bounded_epochs"].get_uint64().get(bounded) == simdjson::SUCCESS;
    bool membarrier = false;
    if (integrity["uses_membarrier"].get_bool().get(membarrier) == simdjson::SUCCESS) {
      t.integrity.uses_membarrier = membarrier;
      t.fence = t.integrity.fence();
    }
  }
  simdjson::dom::array census;
  if (trailer["census"].get_array().get(census) == simdjson::SUCCESS) {
    for (simdjson::dom::element entry : census) {
      TrailerBlocks::CensusValue v;
      std::string_view name;
      if (entry["name"].get_string().get(name) != simdjson::SUCCESS ||
          entry["bytes"].get_int64().get(v.bytes) != simdjson::SUCCESS) {
        return absl::InvalidArgumentError(
            "the trailer's census has an entry without a name or a byte count (the "
            "capture's last line was edited or damaged; record the capture again)");
      }
      v.name = std::string(name);
      if (entry["high_water_bytes"].get_int64().get(v.high_water_bytes) != simdjson::SUCCESS) {
        v.high_water_bytes = v.bytes;
      }
      t.census.push_back(std::move(v));
    }
  }
  if (absl::Status s = ReadCountBlock(trailer, "sink",
                                      {{"events_written", &TrailerBlocks::events_written},
                                       {"events_lost", &TrailerBlocks::events_lost},
                                       {"events_past_limit",
                                        &TrailerBlocks::events_past_limit},
                                       {"max_bytes", &TrailerBlocks::max_bytes},
                                       {"write_errors", &TrailerBlocks::write_errors},
                                       {"stack_collisions", &TrailerBlocks::stack_collisions}},
                                      &t.has_sink, &t.sink_json, &t);
      !s.ok()) {
    return s;
  }
  if (uint64_t lines = 0;
      trailer["sink"]["event_lines"].get_uint64().get(lines) == simdjson::SUCCESS) {
    t.has_event_lines = true;
    t.event_lines = lines;
  }
  if (uint64_t crc = 0; trailer["crc32"].get_uint64().get(crc) == simdjson::SUCCESS) {
    if (crc > 0xffffffffu) {
      return absl::InvalidArgumentError(
          absl::StrCat("the trailer's field 'crc32' is ", crc, ", more than a CRC-32 can be"));
    }
    t.crc32 = static_cast<uint32_t>(crc);
  }
  // A usage object's counters, and its interval where it has one.
  auto read_usage = [](simdjson::dom::object usage, const char* block,
                       UsageCounters* out) -> absl::Status {
    for (const auto& [name, member] :
         std::initializer_list<std::pair<const char*, uint64_t UsageCounters::*>>{
             {"live_bytes", &UsageCounters::live_bytes},
             {"live_count", &UsageCounters::live_count},
             {"high_water_bytes", &UsageCounters::high_water_bytes},
             {"allocated_bytes", &UsageCounters::allocated_bytes},
             {"allocated_count", &UsageCounters::allocated_count},
             {"allocation_calls", &UsageCounters::allocation_calls},
             {"freed_bytes", &UsageCounters::freed_bytes},
             {"freed_count", &UsageCounters::freed_count}}) {
      if (absl::Status s = ReadCount(usage, block, name, &(out->*member)); !s.ok()) return s;
    }
    if (HasPeakBound(usage)) {
      const TrailerBlocks::PeakBound b = ReadPeak(usage);
      out->high_water_low_bytes = b.low;
      out->high_water_high_bytes = b.high;
    }
    return absl::OkStatus();
  };
  simdjson::dom::object totals;
  if (trailer["totals"].get_object().get(totals) == simdjson::SUCCESS) {
    t.has_totals = true;
    if (absl::Status s = read_usage(totals, "totals", &t.totals); !s.ok()) return s;
    if (HasPeakBound(totals)) t.totals_peak = ReadPeak(totals);
  }
  for (const auto& [name, peaks, usages, names, label] :
       {std::tuple{"layers", &t.layer_peaks, &t.layer_usage, &t.layer_names, "name"},
        std::tuple{"scopes", &t.scope_peaks, &t.scope_usage, &t.scope_paths, "path"}}) {
    simdjson::dom::array rows;
    if (trailer[name].get_array().get(rows) != simdjson::SUCCESS) continue;
    for (simdjson::dom::element row : rows) {
      uint64_t id = 0;
      simdjson::dom::object usage;
      if (row["id"].get_uint64().get(id) != simdjson::SUCCESS ||
          row["usage"].get_object().get(usage) != simdjson::SUCCESS) {
        continue;
      }
      const auto key = static_cast<uint32_t>(id);
      if (absl::Status s = read_usage(usage, name, &(*usages)[key]); !s.ok()) return s;
      if (std::string_view text; row[label].get_string().get(text) == simdjson::SUCCESS) {
        (*names)[key] = std::string(text);
      }
      if (HasPeakBound(usage)) (*peaks)[key] = ReadPeak(usage);
    }
  }
  if (simdjson::dom::object timeline;
      trailer["timeline"].get_object().get(timeline) == simdjson::SUCCESS) {
    auto bad = [](const char* what) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the trailer's timeline ", what, " (the capture's last line was edited or damaged; "
          "record the capture again)"));
    };
    t.timeline_json = simdjson::minify(timeline);
    simdjson::dom::array columns, rows;
    if (timeline["columns"].get_array().get(columns) != simdjson::SUCCESS ||
        timeline["rows"].get_array().get(rows) != simdjson::SUCCESS) {
      return bad("lacks its columns or rows");
    }
    for (simdjson::dom::element c : columns) {
      std::string_view name;
      if (c.get_string().get(name) != simdjson::SUCCESS) return bad("has a column that is not a name");
      t.timeline.columns.emplace_back(name);
    }
    if (timeline["every"].get_uint64().get(t.timeline.every) != simdjson::SUCCESS) {
      t.timeline.every = 1;
    }
    for (simdjson::dom::element r : rows) {
      simdjson::dom::array cells;
      if (r.get_array().get(cells) != simdjson::SUCCESS) return bad("has a row that is not an array");
      std::vector<int64_t>& row = t.timeline.rows.emplace_back();
      for (simdjson::dom::element v : cells) {
        int64_t value = 0;
        if (v.get_int64().get(value) != simdjson::SUCCESS) return bad("has a cell that is not an integer");
        row.push_back(value);
      }
      if (row.size() != t.timeline.columns.size()) return bad("has a row of the wrong width");
    }
  }
  if (absl::Status s = ReadCount(trailer, "", "memtrace_bytes", &t.memtrace_bytes);
      !s.ok()) {
    return s;
  }
  simdjson::dom::object memory;
  if (trailer["memtrace_memory"].get_object().get(memory) == simdjson::SUCCESS) {
    t.memtrace_memory_json = simdjson::minify(memory);
  }
  if (absl::Status s = ReadCountBlock(trailer, "memtrace_cpu_ns",
                                      {{"drainer", &TrailerBlocks::drainer_cpu_ns},
                                       {"appliers", &TrailerBlocks::applier_cpu_ns},
                                       {"writer", &TrailerBlocks::writer_cpu_ns}},
                                      &t.has_memtrace_cpu, &t.memtrace_cpu_json, &t);
      !s.ok()) {
    return s;
  }
  for (const auto& [name, member] :
       {std::pair{"forks", &TrailerBlocks::forks},
        std::pair{"prestart_freed", &TrailerBlocks::prestart_freed},
        std::pair{"prestart_freed_bytes", &TrailerBlocks::prestart_freed_bytes},
        std::pair{"prestart_untracked", &TrailerBlocks::prestart_untracked},
        std::pair{"left_out_blocks", &TrailerBlocks::left_out_blocks}}) {
    if (absl::Status s = ReadCount(trailer, "", name, &(t.*member)); !s.ok()) return s;
  }
  t.integrity.untracked_before_start = t.prestart_untracked;
  t.integrity.left_out_blocks = t.left_out_blocks;
  t.integrity.events_not_written = t.events_lost;
  if (!t.integrity_json.empty()) {
    SetBoolean(&t.integrity_json, "complete", t.integrity.complete());
    SetBoolean(&t.integrity_json, "exact", t.integrity.exact());
  }
  // `filtered`: an object of filters, each an object of counts; a filter missing from it
  // left nothing out.
  simdjson::dom::object filtered;
  if (trailer["filtered"].get_object().get(filtered) == simdjson::SUCCESS) {
    t.has_filtered = true;
    for (const auto& [name, allocations, bytes] :
         {std::tuple{"min_size", &TrailerBlocks::min_size_allocations,
                     &TrailerBlocks::min_size_bytes},
          std::tuple{"sample", &TrailerBlocks::unsampled_allocations,
                     &TrailerBlocks::unsampled_bytes}}) {
      simdjson::dom::object filter;
      if (filtered[name].get_object().get(filter) != simdjson::SUCCESS) continue;
      const std::string block = absl::StrCat("filtered.", name);
      for (const auto& [count, member] : {std::pair{"allocations", allocations},
                                          std::pair{"bytes", bytes}}) {
        if (absl::Status s = ReadCount(filter, block, count, &(t.*member)); !s.ok()) return s;
      }
    }
  }
  for (const auto& [name, member] :
       {std::pair{"ended_by", &TrailerBlocks::ended_by}, std::pair{"exec", &TrailerBlocks::exec}}) {
    std::string_view text;
    if (trailer[name].get_string().get(text) == simdjson::SUCCESS) t.*member = std::string(text);
  }
  if (simdjson::dom::object salvaged;
      trailer["salvaged"].get_object().get(salvaged) == simdjson::SUCCESS) {
    t.salvaged = true;
    for (const auto& [name, member] : {std::pair{"from", &TrailerBlocks::salvaged_from},
                                       std::pair{"cut", &TrailerBlocks::salvaged_cut}}) {
      std::string_view text;
      if (salvaged[name].get_string().get(text) == simdjson::SUCCESS) {
        t.*member = std::string(text);
      }
    }
  }
  return t;
}

}  // namespace memtrace
