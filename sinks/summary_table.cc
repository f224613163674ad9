// Copyright 2026 The memtrace Authors.

#include "sinks/summary_table.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sinks/json_text.h"

namespace memtrace {
namespace {

constexpr const char* kHeader =
    "%-36s %11s %9s %11s %12s %11s %10s %10s %11s %10s\n";

void AppendRow(std::string& out, const std::string& name, const UsageCounters& u) {
  out += FormatUsageRow(name, u);
}

// ,"sites":[{"addr":"0x..","frames":["0x..",..],"scope":N,"path":"..","live_bytes":N,
// "live_count":N},..],"sites_omitted":{"pairs":N,"live_bytes":N,"live_count":N}
// Addresses are hex strings: a JSON number loses the low bits of a 64-bit one in most
// readers.
std::string JsonSites(const Snapshot& snapshot) {
  std::string out = ",\"sites\":[";
  for (size_t i = 0; i < snapshot.sites.size(); ++i) {
    const SiteUsage& s = snapshot.sites[i];
    std::string frames;
    for (uint64_t f : s.frames) {
      absl::StrAppend(&frames, frames.empty() ? "" : ",", "\"0x", absl::Hex(f), "\"");
    }
    absl::StrAppend(&out, i == 0 ? "" : ",", "{\"addr\":\"0x", absl::Hex(s.site),
                    "\",\"frames\":[", frames, "],\"scope\":", s.scope,
                    ",\"path\":", JsonQuote(s.path), ",\"live_bytes\":", s.live_bytes,
                    ",\"live_count\":", s.live_count, "}");
  }
  absl::StrAppend(&out, "],\"sites_omitted\":{\"pairs\":", snapshot.sites_omitted,
                  ",\"live_bytes\":", snapshot.sites_omitted_bytes,
                  ",\"live_count\":", snapshot.sites_omitted_count, "}");
  return out;
}

}  // namespace

std::string FormatUsageHeader() {
  return absl::StrFormat(kHeader, "scope", "live", "blocks", "high-water", "peak bound",
                         "allocated", "allocs", "calls", "freed", "frees");
}

std::string FormatUsageRow(const std::string& name, const UsageCounters& u, bool sampled) {
  return absl::StrFormat(kHeader, name, FormatBytes(u.live_bytes), absl::StrCat(u.live_count),
                         FormatBytes(u.high_water_bytes), FormatPeakBound(u, sampled),
                         FormatBytes(u.allocated_bytes), absl::StrCat(u.allocated_count),
                         absl::StrCat(u.allocation_calls), FormatBytes(u.freed_bytes),
                         absl::StrCat(u.freed_count));
}

std::string FormatPeakBound(const UsageCounters& u, bool sampled) {
  if (sampled) return "estimate";
  if (!u.high_water_bounded()) return "none";
  if (u.high_water_exact()) return "exact";
  if (u.high_water_bytes == 0) return absl::StrCat("+", FormatBytes(u.high_water_high_bytes));
  const double value = static_cast<double>(u.high_water_bytes);
  // At most 12 characters: one decimal below 10%, none above, and ">999" past that; a
  // side that is not zero never reads as 0.0% ("~0%": below 0.05%).
  auto percent = [&](uint64_t bytes) {
    const double p = 100.0 * static_cast<double>(bytes) / value;
    if (bytes == 0) return std::string("0%");
    if (p < 0.05) return std::string("~0%");
    if (p < 10) return absl::StrFormat("%.1f%%", p);
    if (p < 999.5) return absl::StrFormat("%.0f%%", p);
    return std::string(">999%");
  };
  return absl::StrCat("-", percent(u.high_water_bytes - u.high_water_low_bytes), "/+",
                      percent(u.high_water_high_bytes - u.high_water_bytes));
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", value, units[unit]);
}

std::string FormatSummaryJson(const Snapshot& snapshot) {
  const CaptureIntegrity& in = snapshot.integrity;
  std::string census;
  for (const CensusEntry& c : snapshot.census) {
    absl::StrAppend(&census, census.empty() ? "" : ",", "{\"label\":", JsonQuote(c.label),
                    ",\"bytes\":", c.bytes, ",\"high_water_bytes\":", c.high_water_bytes,
                    "}");
  }
  const CensusStatus& cs = snapshot.census_status;
  return absl::StrCat(
      "{\"verdict\":", JsonQuote(in.Verdict()), ",\"totals\":", JsonUsage(snapshot.totals),
      ",\"scopes\":", JsonScopes(snapshot.scopes), ",\"layers\":", JsonLayers(snapshot.layers),
      snapshot.has_sites ? JsonSites(snapshot) : std::string(),
      ",\"census\":",
      snapshot.has_census
          ? absl::StrCat("{\"entries\":[", census, "],\"ok\":", cs.ok() ? "true" : "false",
                         ",\"entries_used\":", cs.capacity.entries_used,
                         ",\"entries_max\":", cs.capacity.entries_max,
                         ",\"refused_for_entries\":", cs.refused_for_entries,
                         ",\"refused_for_storage\":", cs.refused_for_storage, "}")
          : std::string("null"),
      ",\"integrity\":{\"complete\":", in.complete() ? "true" : "false",
      ",\"exact\":", in.exact() ? "true" : "false",
      ",\"peaks_exact\":", in.peaks_exact() ? "true" : "false",
      ",\"bounded_epochs\":", in.bounded_epochs, ",\"counters\":",
      JsonQuote(in.Counters()), "},\"memtrace_bytes\":", snapshot.memtrace_bytes, "}");
}

std::string FormatSummaryTable(const Snapshot& snapshot, const SummaryOptions& options) {
  const CaptureIntegrity& in = snapshot.integrity;
  std::string out =
      absl::StrCat("memtrace summary: capture ", in.Verdict(), "; ", in.PeakVerdict(), "\n\n");
  out += FormatUsageHeader();
  std::vector<const ScopeUsage*> rows;
  for (const ScopeUsage& s : snapshot.scopes) rows.push_back(&s);
  UsageCounters hidden;
  size_t hidden_rows = 0;
  if (rows.size() > options.max_scopes) {
    // Keep the largest by high-water; sum the rest into one row.
    std::sort(rows.begin(), rows.end(), [](const ScopeUsage* a, const ScopeUsage* b) {
      return a->usage.high_water_bytes > b->usage.high_water_bytes;
    });
    for (size_t i = options.max_scopes; i < rows.size(); ++i) {
      const UsageCounters& u = rows[i]->usage;
      hidden.AddCounts(u);
      // The largest of the rows' peaks, and of their intervals' ends.
      hidden.high_water_bytes = std::max(hidden.high_water_bytes, u.high_water_bytes);
      hidden.high_water_low_bytes = std::max(hidden.high_water_low_bytes, u.high_water_low_bytes);
      hidden.high_water_high_bytes =
          std::max(hidden.high_water_high_bytes, u.high_water_high_bytes);
    }
    hidden_rows = rows.size() - options.max_scopes;
    rows.resize(options.max_scopes);
  }
  std::sort(rows.begin(), rows.end(),
            [](const ScopeUsage* a, const ScopeUsage* b) { return a->path < b->path; });
  for (const ScopeUsage* s : rows) AppendRow(out, s->path, s->usage);
  if (hidden_rows > 0) {
    AppendRow(out, absl::StrCat("(", hidden_rows, " more scopes; max high-water)"), hidden);
  }
  AppendRow(out, "TOTAL", snapshot.totals);
  out += "\n";
  if (options.show_layers) {
    for (const LayerUsage& l : snapshot.layers) {
      AppendRow(out, absl::StrCat("layer ", l.name), l.usage);
    }
  }
  if (snapshot.has_census) {
    const CensusStatus& cs = snapshot.census_status;
    absl::StrAppend(&out, "\ncensus (bytes the program reports by hand, beside the ",
                    FormatBytes(snapshot.totals.live_bytes), " the tracer sees live)\n");
    int64_t census_total = 0;
    std::vector<const CensusEntry*> entries;
    for (const CensusEntry& e : snapshot.census) {
      census_total += e.bytes;
      if (e.bytes != 0 || options.census.include_zero) entries.push_back(&e);
    }
    std::sort(entries.begin(), entries.end(), [](const CensusEntry* a, const CensusEntry* b) {
      return a->bytes != b->bytes ? a->bytes > b->bytes : a->label < b->label;
    });
    auto signed_bytes = [](int64_t v) {
      return v < 0 ? absl::StrCat("-", FormatBytes(static_cast<uint64_t>(-v)))
                   : FormatBytes(static_cast<uint64_t>(v));
    };
    int64_t others = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
      const CensusEntry& e = *entries[i];
      if (i >= options.census.max_rows) {
        others += e.bytes;
        continue;
      }
      absl::StrAppendFormat(&out, "  %-34s %11s   high-water %s\n", e.label,
                            signed_bytes(e.bytes),
                            FormatBytes(static_cast<uint64_t>(std::max<int64_t>(
                                0, e.high_water_bytes))));
    }
    if (entries.size() > options.census.max_rows) {
      absl::StrAppendFormat(&out, "  %-34s %11s\n",
                            absl::StrCat("(", entries.size() - options.census.max_rows,
                                         " others)"),
                            signed_bytes(others));
    }
    absl::StrAppendFormat(&out, "  %-34s %11s\n", "census total", signed_bytes(census_total));
    absl::StrAppendFormat(&out,
                          "  census status: %s; %d/%d entries, %d/%d label bytes, refused "
                          "%d (entries full), %d (label storage full)\n",
                          cs.ok() ? "ok" : "EXHAUSTED", cs.capacity.entries_used,
                          cs.capacity.entries_max, cs.storage.used_bytes,
                          cs.storage.capacity_bytes, cs.refused_for_entries,
                          cs.refused_for_storage);
  }
  if (!options.verbose && in.exact() && in.Findings().empty()) {
    absl::StrAppend(&out, "\nintegrity: ", FormatCleanIntegrityLine(in.events_recorded, in),
                    "\n");
    return out;
  }
  absl::StrAppend(&out, "\n",
                  FormatIntegrityBlock(in, snapshot.memtrace_bytes, in.fence()),
                  FormatOwnCpuLine(snapshot.drainer_cpu_ns, std::nullopt, in.events_applied,
                                   snapshot.applier_cpu_ns));
  return out;
}

std::string FormatCleanIntegrityLine(uint64_t events, const CaptureIntegrity& in) {
  // 410090 -> "410,090".
  const std::string digits = absl::StrCat(events);
  std::string n;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) n += ',';
    n += digits[i];
  }
  return absl::StrCat("complete, exact: ", n, " events, nothing lost",
                      in.peaks_exact()
                          ? ""
                          : absl::StrCat(", ", in.PeakVerdict()));
}

std::string FormatOwnCpuLine(uint64_t drainer_ns, std::optional<uint64_t> writer_ns,
                             uint64_t records, uint64_t applier_ns) {
  auto ms = [](uint64_t ns) { return absl::StrFormat("%.1f ms", static_cast<double>(ns) / 1e6); };
  auto per = [&](uint64_t ns) {
    return absl::StrFormat("%.1f ns", static_cast<double>(ns) / static_cast<double>(records));
  };
  std::string out = absl::StrCat(
      "  memtrace's own CPU: drainer ", ms(drainer_ns),
      applier_ns != 0 ? absl::StrCat(", appliers ", ms(applier_ns)) : std::string(),
      writer_ns ? absl::StrCat(", writer ", ms(*writer_ns)) : std::string(),
      " (not counted: the hot path, on the program's threads)");
  if (records > 0) {
    absl::StrAppend(&out, "; per record: drainer ", per(drainer_ns),
                    applier_ns != 0 ? absl::StrCat(", appliers ", per(applier_ns)) : std::string(),
                    writer_ns ? absl::StrCat(", writer ", per(*writer_ns)) : std::string());
  }
  return out + "\n";
}

std::string FormatIntegrityBlock(const CaptureIntegrity& in, uint64_t memtrace_bytes,
                                 std::string_view fence, std::string_view exact_for,
                                 std::string_view filter_lines) {
  std::string out = absl::StrCat("integrity: ", in.complete() ? "complete" : "PARTIAL",
                                 in.exact() ? ", exact" : ", inexact",
                                 exact_for.empty() ? "" : " ", std::string(exact_for),
                                 "; ", in.PeakVerdict(), "\n", std::string(filter_lines));
  absl::StrAppendFormat(&out,
                        "  records    recorded %d, applied %d, dropped %d, failed %d, "
                        "not recording %d, rings unavailable %d\n",
                        in.events_recorded, in.events_applied, in.events_dropped,
                        in.records_failed, in.not_recording, in.rings_unavailable);
  absl::StrAppendFormat(&out,
                        "  releases   unknown frees %d, double frees %d, unknown resizes %d, "
                        "unknown remaps %d, missed frees %d\n",
                        in.unknown_frees, in.double_frees, in.unknown_resizes,
                        in.unknown_remaps, in.missed_frees);
  absl::StrAppendFormat(&out,
                        "  matching   ticket misses %d, ambiguous %d, ticket evictions %d, "
                        "order conflicts %d, late records %d, stalled claims %d, "
                        "foreign span exits %d, nested records %d\n",
                        in.ticket_misses, in.ambiguous_matches, in.ticket_evictions,
                        in.order_conflicts, in.late_records, in.stalled_claims,
                        in.foreign_span_exits, in.nested_records);
  // Counters above, peaks here: a peak reached while threads recorded at once carries the
  // interval that must hold it (the summary's "peak bound" column).
  if (!in.peaks_known()) {
    absl::StrAppend(&out, "  peaks      unknown: the capture lacks operations the program made (",
                    in.PeaksUnknownBecause(),
                    "), so the live bytes of every moment after them are not known\n");
  } else if (in.peaks_bounded) {
    absl::StrAppendFormat(&out,
                          "  peaks      %d of %d epochs had several threads recording: "
                          "their peaks are bounded by time stamps, the others exact\n",
                          in.bounded_epochs, in.epochs);
  } else {
    absl::StrAppend(&out, "  peaks      no bounds: the capture was written before memtrace "
                          "bounded peaks; its high-water marks are those of the order applied\n");
  }
  // The bounded tables: what went past them is attributed, to "other sites" or to the
  // scope around it, and counted here (the trailer had the counts before this line did).
  absl::StrAppendFormat(&out,
                        "  tables     site overflow %d (allocations in \"other sites\"), "
                        "scope overflow %d\n",
                        in.site_overflow, in.scope_overflow);
  absl::StrAppendFormat(&out,
                        "  transport  rings %d x %d slots, max fill %d, overflow waits %d, "
                        "epochs %d (%d fenced), max drainer lag %.2f ms, fence %s\n",
                        in.rings, in.ring_capacity, in.max_ring_fill, in.overflow_waits,
                        in.epochs, in.fenced_epochs,
                        static_cast<double>(in.max_drainer_lag_ns) / 1e6, fence);
  absl::StrAppend(&out, "  memtrace's own memory: ", FormatBytes(memtrace_bytes), "\n");
  return out;
}

}  // namespace memtrace
