// Copyright 2026 The memtrace Authors.

#include "sinks/capture_ends.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "sinks/json_text.h"

namespace memtrace {

int64_t CaptureNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string JsonHeaderLine(pid_t pid, int64_t started_unix_ns, const std::string& source,
                           std::string_view extra_fields) {
  return absl::StrCat(
      "{\"type\":\"header\",\"format\":\"memtrace-jsonl\",\"schema_version\":",
      kCaptureSchemaVersion, ",\"pid\":", pid,
      ",\"clock\":\"unix_ns\",\"started_unix_ns\":", started_unix_ns,
      ",\"source\":", JsonQuote(source), ",\"time_resolution\":\"epoch\"",
      extra_fields.empty() ? "" : ",", std::string(extra_fields), "}");
}

std::string JsonIntegrity(const CaptureIntegrity& in) {
  return absl::StrCat(
      "{\"complete\":", in.complete() ? "true" : "false",
      ",\"exact\":", in.exact() ? "true" : "false",
      ",\"events_recorded\":", in.events_recorded, ",\"events_applied\":", in.events_applied,
      ",\"events_dropped\":", in.events_dropped, ",\"records_failed\":", in.records_failed,
      ",\"rings_unavailable\":", in.rings_unavailable, ",\"not_recording\":", in.not_recording,
      ",\"overflow_waits\":", in.overflow_waits, ",\"unknown_frees\":", in.unknown_frees,
      ",\"double_frees\":", in.double_frees, ",\"unknown_resizes\":", in.unknown_resizes,
      ",\"unknown_remaps\":", in.unknown_remaps, ",\"missed_frees\":", in.missed_frees,
      ",\"ticket_misses\":", in.ticket_misses,
      ",\"ambiguous_matches\":", in.ambiguous_matches,
      ",\"ticket_evictions\":", in.ticket_evictions,
      ",\"order_conflicts\":", in.order_conflicts, ",\"late_records\":", in.late_records,
      ",\"bounded_epochs\":", in.bounded_epochs,
      ",\"foreign_span_exits\":", in.foreign_span_exits,
      ",\"nested_records\":", in.nested_records, ",\"stalled_claims\":", in.stalled_claims,
      ",\"site_overflow\":", in.site_overflow, ",\"scope_overflow\":", in.scope_overflow,
      ",\"max_ring_fill\":", in.max_ring_fill,
      ",\"ring_capacity\":", in.ring_capacity,
      ",\"max_drainer_lag_ns\":", in.max_drainer_lag_ns, ",\"epochs\":", in.epochs,
      ",\"fenced_epochs\":", in.fenced_epochs,
      ",\"rings\":", in.rings,
      ",\"uses_membarrier\":", in.uses_membarrier ? "true" : "false", "}");
}

std::string TrailerWithCrc32(std::string_view trailer, uint32_t crc) {
  std::string out(trailer);
  // An earlier one is the last member, `,"crc32":DIGITS}`, as this function writes it.
  constexpr std::string_view kKey = ",\"crc32\":";
  if (!out.empty() && out.back() == '}') {
    size_t digits = out.size() - 1;
    while (digits > 0 && out[digits - 1] >= '0' && out[digits - 1] <= '9') --digits;
    if (digits < out.size() - 1 && digits >= kKey.size() &&
        std::string_view(out).substr(digits - kKey.size(), kKey.size()) == kKey) {
      out.erase(digits - kKey.size(), out.size() - 1 - (digits - kKey.size()));
    }
  }
  if (out.empty() || out.back() != '}') return out;
  out.insert(out.size() - 1, absl::StrCat(std::string(kKey), crc));
  return out;
}

std::string JsonTrailerLine(const Snapshot& snap, bool complete, const CaptureSinkCounts& s,
                            std::string_view timeline, std::string_view extra_fields) {
  std::string census;
  for (size_t i = 0; i < snap.census.size(); ++i) {
    const CensusEntry& c = snap.census[i];
    absl::StrAppend(&census, census.empty() ? "" : ",", "{\"label\":", i,
                    ",\"name\":", JsonQuote(c.label), ",\"bytes\":", c.bytes,
                    ",\"high_water_bytes\":", c.high_water_bytes, "}");
  }
  return absl::StrCat(
      "{\"type\":\"trailer\",\"complete\":", complete ? "true" : "false",
      ",\"finished_unix_ns\":", CaptureNowNs(), ",\"sink\":{\"events_written\":",
      s.events_written, ",\"event_lines\":", s.event_lines, ",\"events_lost\":", s.events_lost,
      ",\"events_past_limit\":", s.events_past_limit,
      s.max_bytes != 0 ? absl::StrCat(",\"max_bytes\":", s.max_bytes) : "",
      ",\"write_errors\":", s.write_errors, ",\"stack_collisions\":", s.stack_collisions,
      "},\"integrity\":", JsonIntegrity(snap.integrity),
      ",\"totals\":", JsonUsage(snap.totals), ",\"layers\":", JsonLayers(snap.layers),
      ",\"scopes\":", JsonScopes(snap.scopes), std::string(timeline), ",\"census\":[", census,
      "],\"memtrace_bytes\":", snap.memtrace_bytes, ",\"memtrace_memory\":{\"rings\":",
      snap.memtrace_memory.rings, ",\"tickets\":", snap.memtrace_memory.tickets,
      ",\"ledger\":", snap.memtrace_memory.ledger, ",\"sites\":", snap.memtrace_memory.sites,
      "},\"memtrace_cpu_ns\":{\"drainer\":", snap.drainer_cpu_ns,
      snap.applier_cpu_ns != 0 ? absl::StrCat(",\"appliers\":", snap.applier_cpu_ns) : "",
      ",\"writer\":", s.writer_cpu_ns, "}", extra_fields.empty() ? "" : ",",
      std::string(extra_fields), "}");
}

}  // namespace memtrace
