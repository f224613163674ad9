// Copyright 2026 The memtrace Authors.

#include "runtime/capture_integrity.h"

namespace memtrace {

std::string CaptureIntegrity::Verdict() const {
  if (!complete()) return "PARTIAL (records were lost)";
  if (!exact()) return "complete, inexact (some releases matched by address)";
  if (!clean()) return "complete (the program released unknown blocks)";
  return "complete";
}

std::string CaptureIntegrity::PeakVerdict() const {
  if (!peaks_known()) return std::string("peaks unknown (") + PeaksUnknownBecause() + ")";
  if (!peaks_bounded) return "peaks without bounds (written before memtrace bounded them)";
  if (bounded_epochs == 0) return "peaks exact";
  return "peaks within their bounds";
}

std::vector<std::string> CaptureIntegrity::Findings() const {
  std::vector<std::string> out;
  auto add = [&](const char* what, uint64_t n) {
    if (n != 0) out.push_back(std::string(what) + " " + std::to_string(n));
  };
  add("records dropped", events_dropped);
  add("records failed", records_failed);
  add("rings unavailable", rings_unavailable);
  add("not recording", not_recording);
  add("unknown frees", unknown_frees);
  add("double frees", double_frees);
  add("unknown resizes", unknown_resizes);
  add("unknown remaps", unknown_remaps);
  add("missed frees", missed_frees);
  add("ambiguous matches", ambiguous_matches);
  add("ticket evictions", ticket_evictions);
  add("order conflicts", order_conflicts);
  add("late records", late_records);
  add("stalled claims", stalled_claims);
  add("foreign span exits", foreign_span_exits);
  add("nested records", nested_records);
  add("blocks untracked before start", untracked_before_start);
  add("site overflow", site_overflow);
  add("scope overflow", scope_overflow);
  return out;
}

std::string CaptureIntegrity::Counters() const {
  std::string out;
  auto add = [&](const char* name, uint64_t v) {
    out += name;
    out += '=';
    out += std::to_string(v);
    out += ' ';
  };
  add("recorded", events_recorded);
  add("applied", events_applied);
  add("dropped", events_dropped);
  add("failed", records_failed);
  add("rings_unavailable", rings_unavailable);
  add("not_recording", not_recording);
  add("unknown_frees", unknown_frees);
  add("double_frees", double_frees);
  add("unknown_resizes", unknown_resizes);
  add("unknown_remaps", unknown_remaps);
  add("missed_frees", missed_frees);
  add("ticket_misses", ticket_misses);
  add("ambiguous_matches", ambiguous_matches);
  add("ticket_evictions", ticket_evictions);
  add("order_conflicts", order_conflicts);
  add("late_records", late_records);
  add("bounded_epochs", bounded_epochs);
  add("foreign_span_exits", foreign_span_exits);
  add("nested_records", nested_records);
  add("stalled_claims", stalled_claims);
  if (!out.empty()) out.pop_back();
  return out;
}

}  // namespace memtrace
