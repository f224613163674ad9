// Copyright 2026 The memtrace Authors.
//
// memtrace: the command line for captures (docs/capture-format.md).
//
//   memtrace summary [--json] CAPTURE   totals per scope and layer, with the integrity verdict
//   memtrace verify CAPTURE             exit 0 only for a complete capture with memory events
//   memtrace top [--by=bytes|count|live] [--limit=N] CAPTURE   call sites, largest first
//   memtrace peak CAPTURE               what held memory at the global high-water moment
//   memtrace retention CAPTURE          what outlived each scope (per-phase leaks)
//   memtrace diff BEFORE AFTER          per-scope changes between two captures
//   memtrace coverage CAPTURE           how much memory is explained by scopes and census
//   memtrace help [COMMAND]
//
// Exit status: 0 success; 1 the capture failed verification; 2 bad usage or unreadable
// input (the message says what, where, and how to fix it).

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/analyzer.h"
#include "cli/report_command.h"
#include "sinks/json_text.h"
#include "sinks/summary_table.h"

namespace {

using memtrace::CaptureSummary;

constexpr const char* kUsage =
    "usage: memtrace <command> [options] CAPTURE\n"
    "\n"
    "commands:\n"
    "  summary   totals per scope and per layer, replayed from the capture, with its\n"
    "            integrity verdict (--json for machine-readable output)\n"
    "  verify    exit 0 only if the capture has memory events, a trailer, and lost\n"
    "            nothing; otherwise say which and exit 1\n"
    "  top       call sites (with scope and layer) by bytes allocated, count, or live\n"
    "  peak      what held memory at the global high-water moment, by scope and site\n"
    "  retention what was allocated inside each scope and still live when it exited\n"
    "  diff      per-scope changes between two captures: diff BEFORE AFTER\n"
    "  coverage  bytes in named scopes vs unscoped, census vs what the allocator saw\n"
    "  help      this text, or `memtrace help COMMAND`\n"
    "\n"
    "CAPTURE is a JSONL file written by memtrace (docs/capture-format.md).\n";

constexpr const char* kSummaryHelp =
    "usage: memtrace summary [--json] CAPTURE\n"
    "\n"
    "Replays CAPTURE and prints live bytes, blocks, high-water, allocated and freed per\n"
    "scope and per layer, then the capture's integrity verdict from its trailer.\n"
    "  --json          print one JSON object instead of the table\n"
    "  --at-event=N    the state right after the first N events (a snapshot there)\n";

constexpr const char* kTopHelp =
    "usage: memtrace top [--by=bytes|count|live|temporaries] [--limit=N] CAPTURE\n"
    "\n"
    "Lists call sites, each with the scope and layer it allocated in, largest first:\n"
    "  --by=bytes   bytes allocated (default)\n"
    "  --by=count   allocations made\n"
    "  --by=live    bytes still live at the end (leaks at exit)\n"
    "  --by=temporaries  blocks freed almost at once by the thread that allocated them\n"
    "  --limit=N    rows to print (default 20)\n";

constexpr const char* kPeakHelp =
    "usage: memtrace peak CAPTURE\n"
    "\n"
    "Finds the moment total live memory was highest and lists what held it, by scope and\n"
    "by call site. Reads the capture twice.\n";

constexpr const char* kRetentionHelp =
    "usage: memtrace retention CAPTURE\n"
    "\n"
    "For every scope whose instances exited, how many exits left memory allocated inside\n"
    "them still live, and how much (summed over exits): per-frame or per-request leaks.\n";

constexpr const char* kDiffHelp =
    "usage: memtrace diff BEFORE AFTER\n"
    "\n"
    "Compares two captures scope by scope (matched by path): live bytes at the end,\n"
    "high-water and bytes allocated, largest change in live bytes first.\n";

constexpr const char* kVerifyHelp =
    "usage: memtrace verify CAPTURE\n"
    "\n"
    "Checks that CAPTURE is a memtrace capture with at least one memory event, that it\n"
    "ends with a trailer (it was not cut off), and that the trailer says nothing was lost.\n"
    "Exit 0 when all hold; otherwise print which one failed and exit 1.\n";

std::string Verdict(const CaptureSummary& s) {
  if (!s.has_trailer) return "TRUNCATED (no trailer: the program or the sink stopped early)";
  if (!s.trailer_complete) return "PARTIAL (the trailer reports lost records)";
  return "complete";
}

void PrintTable(const CaptureSummary& s, const std::string& path) {
  printf("memtrace summary of %s: capture %s\n\n", path.c_str(), Verdict(s).c_str());
  const char* row = "%-36s %11s %9s %11s %11s %10s %11s %10s\n";
  printf(row, "scope", "live", "blocks", "high-water", "allocated", "allocs", "freed", "frees");
  auto line = [&](const std::string& name, const memtrace::UsageCounters& u) {
    printf(row, name.c_str(), memtrace::FormatBytes(u.live_bytes).c_str(),
           absl::StrCat(u.live_count).c_str(), memtrace::FormatBytes(u.high_water_bytes).c_str(),
           memtrace::FormatBytes(u.allocated_bytes).c_str(),
           absl::StrCat(u.allocated_count).c_str(), memtrace::FormatBytes(u.freed_bytes).c_str(),
           absl::StrCat(u.freed_count).c_str());
  };
  for (const auto& [id, usage] : s.scopes) {
    auto it = s.scope_paths.find(id);
    line(it != s.scope_paths.end() ? it->second : absl::StrCat("scope ", id), usage);
  }
  line("TOTAL", s.totals);
  printf("\n");
  for (const auto& [id, usage] : s.layers) {
    auto it = s.layer_names.find(id);
    line(absl::StrCat("layer ", it != s.layer_names.end() ? it->second : absl::StrCat(id)),
         usage);
  }
  printf("\n%llu events; %llu blocks live at the end; %llu releases with no allocation in "
         "the capture\n",
         static_cast<unsigned long long>(s.events),
         static_cast<unsigned long long>(s.live_blocks),
         static_cast<unsigned long long>(s.unmatched_releases));
}

void PrintJson(const CaptureSummary& s) {
  std::string scopes, layers;
  for (const auto& [id, usage] : s.scopes) {
    auto it = s.scope_paths.find(id);
    const std::string path = it != s.scope_paths.end() ? it->second : "";
    absl::StrAppend(&scopes, scopes.empty() ? "" : ",", "{\"id\":", id,
                    ",\"path\":", memtrace::JsonQuote(path),
                    ",\"usage\":", memtrace::JsonUsage(usage), "}");
  }
  for (const auto& [id, usage] : s.layers) {
    auto it = s.layer_names.find(id);
    absl::StrAppend(&layers, layers.empty() ? "" : ",", "{\"id\":", id, ",\"name\":",
                    memtrace::JsonQuote(it != s.layer_names.end() ? it->second : ""),
                    ",\"usage\":", memtrace::JsonUsage(usage), "}");
  }
  printf("{\"verdict\":\"%s\",\"has_trailer\":%s,\"complete\":%s,\"events\":%llu,"
         "\"unmatched_releases\":%llu,\"totals\":%s,\"scopes\":[%s],\"layers\":[%s]}\n",
         !s.has_trailer ? "truncated" : (s.trailer_complete ? "complete" : "partial"),
         s.has_trailer ? "true" : "false",
         s.has_trailer && s.trailer_complete ? "true" : "false",
         static_cast<unsigned long long>(s.events),
         static_cast<unsigned long long>(s.unmatched_releases),
         memtrace::JsonUsage(s.totals).c_str(),
         scopes.c_str(), layers.c_str());
}

int Fail(const std::string& message) {
  fprintf(stderr, "memtrace: %s\n", message.c_str());
  return 2;
}

int Summary(const std::vector<std::string>& args) {
  bool json = false;
  std::string path;
  uint64_t at_event = ~uint64_t{0};
  for (const std::string& a : args) {
    if (a == "--json") {
      json = true;
    } else if (a.rfind("--at-event=", 0) == 0) {
      char* end = nullptr;
      at_event = strtoull(a.c_str() + 11, &end, 10);
      if (end == a.c_str() + 11 || *end != '\0') {
        return Fail(absl::StrCat("summary: --at-event must be an event count, not '",
                                 a.substr(11), "'"));
      }
    } else if (a == "--help" || a == "-h") {
      fputs(kSummaryHelp, stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return Fail(absl::StrCat("summary: unknown option '", a, "' (see memtrace help summary)"));
    } else if (path.empty()) {
      path = a;
    } else {
      return Fail("summary: give one CAPTURE file");
    }
  }
  if (path.empty()) return Fail("summary: which capture? usage: memtrace summary [--json] CAPTURE");
  const auto summary = memtrace::Analyzer::Summarize(path, at_event);
  if (!summary.ok()) return Fail(std::string(summary.status().message()));
  if (at_event != ~uint64_t{0} && !json) {
    printf("(state after event %llu of %llu)\n",
           static_cast<unsigned long long>(std::min(at_event, summary->events)),
           static_cast<unsigned long long>(summary->events));
  }
  if (json) {
    PrintJson(*summary);
  } else {
    PrintTable(*summary, path);
  }
  return 0;
}

int Verify(const std::vector<std::string>& args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    fputs(kVerifyHelp, stdout);
    return 0;
  }
  if (args.size() != 1 || args[0].empty() || args[0][0] == '-') {
    return Fail("verify: usage: memtrace verify CAPTURE");
  }
  const auto summary = memtrace::Analyzer::Summarize(args[0]);
  if (!summary.ok()) return Fail(std::string(summary.status().message()));
  std::vector<std::string> problems;
  if (summary->events == 0) {
    problems.push_back("it has no memory events (was the tracer started, and the sink "
                       "attached before Start()?)");
  }
  if (!summary->has_trailer) {
    problems.push_back("it is truncated: there is no trailer (the program or the sink stopped "
                       "before Finish())");
  } else if (!summary->trailer_complete) {
    problems.push_back("it is partial: the trailer reports lost records (see its integrity "
                       "and sink blocks)");
  }
  if (problems.empty()) {
    printf("memtrace verify: %s is complete: %llu memory events, nothing lost\n",
           args[0].c_str(), static_cast<unsigned long long>(summary->events));
    return 0;
  }
  for (const std::string& p : problems) {
    printf("memtrace verify: %s FAILED: %s\n", args[0].c_str(), p.c_str());
  }
  return 1;
}

std::string ScopeName(const CaptureSummary& s, uint32_t id) {
  auto it = s.scope_paths.find(id);
  return it != s.scope_paths.end() ? it->second : absl::StrCat("scope ", id);
}

std::string SiteName(const CaptureSummary& s, uint32_t id) {
  auto it = s.site_addrs.find(id);
  return it != s.site_addrs.end() ? absl::StrCat("0x", absl::Hex(it->second))
                                  : absl::StrCat("site ", id);
}

int Top(const std::vector<std::string>& args) {
  std::string by = "bytes", path;
  size_t limit = 20;
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      fputs(kTopHelp, stdout);
      return 0;
    } else if (a.rfind("--by=", 0) == 0) {
      by = a.substr(5);
      if (by != "bytes" && by != "count" && by != "live" && by != "temporaries") {
        return Fail(absl::StrCat("top: --by must be bytes, count, live or temporaries, not '",
                                 by, "'"));
      }
    } else if (a.rfind("--limit=", 0) == 0) {
      char* end = nullptr;
      const unsigned long long n = strtoull(a.c_str() + 8, &end, 10);
      if (end == a.c_str() + 8 || *end != '\0' || n == 0) {
        return Fail(absl::StrCat("top: --limit must be a positive number, not '",
                                 a.substr(8), "'"));
      }
      limit = static_cast<size_t>(n);
    } else if (!a.empty() && a[0] == '-') {
      return Fail(absl::StrCat("top: unknown option '", a, "' (see memtrace help top)"));
    } else if (path.empty()) {
      path = a;
    } else {
      return Fail("top: give one CAPTURE file");
    }
  }
  if (path.empty()) return Fail("top: which capture? usage: memtrace top [--by=...] CAPTURE");
  auto summary = memtrace::Analyzer::Summarize(path);
  if (!summary.ok()) return Fail(std::string(summary.status().message()));
  auto& rows = summary->attribution;
  auto key = [&](const memtrace::AllocationAttribution& a) {
    if (by == "count") return a.usage.allocated_count;
    if (by == "live") return a.usage.live_bytes;
    if (by == "temporaries") return a.temporaries;
    return a.usage.allocated_bytes;
  };
  std::sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    return key(a) != key(b) ? key(a) > key(b) : a.site < b.site;
  });
  printf("memtrace top of %s by %s: capture %s\n\n", path.c_str(), by.c_str(),
         Verdict(*summary).c_str());
  const char* row = "%-18s %-34s %-10s %11s %10s %11s %9s %11s\n";
  printf(row, "site", "scope", "layer", "allocated", "allocs", "live", "blocks", "temporaries");
  for (size_t i = 0; i < rows.size() && i < limit; ++i) {
    const auto& a = rows[i];
    auto layer = summary->layer_names.find(a.layer);
    printf(row, SiteName(*summary, a.site).c_str(), ScopeName(*summary, a.scope).c_str(),
           layer != summary->layer_names.end() ? layer->second.c_str() : "?",
           memtrace::FormatBytes(a.usage.allocated_bytes).c_str(),
           absl::StrCat(a.usage.allocated_count).c_str(),
           memtrace::FormatBytes(a.usage.live_bytes).c_str(),
           absl::StrCat(a.usage.live_count).c_str(), absl::StrCat(a.temporaries).c_str());
  }
  if (rows.size() > limit) printf("(%zu more rows; --limit=N shows more)\n", rows.size() - limit);
  return 0;
}

int Peak(const std::vector<std::string>& args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    fputs(kPeakHelp, stdout);
    return 0;
  }
  if (args.size() != 1 || args[0].empty() || args[0][0] == '-') {
    return Fail("peak: usage: memtrace peak CAPTURE");
  }
  const auto summary = memtrace::Analyzer::Summarize(args[0]);
  if (!summary.ok()) return Fail(std::string(summary.status().message()));
  const auto peak = memtrace::Analyzer::Peak(args[0]);
  if (!peak.ok()) return Fail(std::string(peak.status().message()));
  printf("memtrace peak of %s: capture %s\n", args[0].c_str(), Verdict(*summary).c_str());
  printf("global high-water: %s live after event %llu of %llu\n\n",
         memtrace::FormatBytes(peak->live_bytes).c_str(),
         static_cast<unsigned long long>(peak->event_index),
         static_cast<unsigned long long>(summary->events));
  printf("%-40s %11s %7s\n", "by scope", "live", "share");
  for (const auto& [scope, bytes] : peak->by_scope) {
    printf("%-40s %11s %6.1f%%\n", ScopeName(*summary, scope).c_str(),
           memtrace::FormatBytes(bytes).c_str(),
           100.0 * static_cast<double>(bytes) / static_cast<double>(peak->live_bytes));
  }
  printf("\n%-40s %11s %7s\n", "by call site", "live", "share");
  for (size_t i = 0; i < peak->by_site.size() && i < 20; ++i) {
    const auto& [site, bytes] = peak->by_site[i];
    printf("%-40s %11s %6.1f%%\n", SiteName(*summary, site).c_str(),
           memtrace::FormatBytes(bytes).c_str(),
           100.0 * static_cast<double>(bytes) / static_cast<double>(peak->live_bytes));
  }
  return 0;
}

std::string Signed(int64_t v) {
  return v < 0 ? absl::StrCat("-", memtrace::FormatBytes(static_cast<uint64_t>(-v)))
               : absl::StrCat("+", memtrace::FormatBytes(static_cast<uint64_t>(v)));
}

int Retention(const std::vector<std::string>& args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    fputs(kRetentionHelp, stdout);
    return 0;
  }
  if (args.size() != 1 || args[0].empty() || args[0][0] == '-') {
    return Fail("retention: usage: memtrace retention CAPTURE");
  }
  auto summary = memtrace::Analyzer::Summarize(args[0]);
  if (!summary.ok()) return Fail(std::string(summary.status().message()));
  auto rows = summary->retention;
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.retained_bytes != b.retained_bytes ? a.retained_bytes > b.retained_bytes
                                                : a.scope < b.scope;
  });
  printf("memtrace retention of %s: capture %s\n\n", args[0].c_str(),
         Verdict(*summary).c_str());
  const char* row = "%-40s %10s %16s %14s %12s\n";
  printf(row, "scope", "exits", "exits retaining", "blocks kept", "bytes kept");
  for (const auto& r : rows) {
    printf(row, ScopeName(*summary, r.scope).c_str(), absl::StrCat(r.exits).c_str(),
           absl::StrCat(r.exits_retaining).c_str(), absl::StrCat(r.retained_blocks).c_str(),
           memtrace::FormatBytes(r.retained_bytes).c_str());
  }
  return 0;
}

int CoverageCommand(const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0].empty() || args[0][0] == '-') {
    if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
      puts("usage: memtrace coverage CAPTURE\n\nHow much of the memory is explained: bytes "
           "allocated (and live at the end) in named scopes versus unscoped, and the census "
           "total beside the live bytes the allocator observed.");
      return 0;
    }
    return Fail("coverage: usage: memtrace coverage CAPTURE");
  }
  auto summary = memtrace::Analyzer::Summarize(args[0]);
  if (!summary.ok()) return Fail(std::string(summary.status().message()));
  const memtrace::Coverage& c = summary->coverage;
  auto share = [](uint64_t part, uint64_t whole) {
    return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
  };
  printf("memtrace coverage of %s: capture %s\n\n", args[0].c_str(), Verdict(*summary).c_str());
  printf("allocated in named scopes  %11s  %5.1f%%\n",
         memtrace::FormatBytes(c.allocated_scoped).c_str(),
         share(c.allocated_scoped, c.allocated_scoped + c.allocated_unscoped));
  printf("allocated unscoped         %11s  %5.1f%%\n",
         memtrace::FormatBytes(c.allocated_unscoped).c_str(),
         share(c.allocated_unscoped, c.allocated_scoped + c.allocated_unscoped));
  printf("live at the end, scoped    %11s  %5.1f%%\n", memtrace::FormatBytes(c.live_scoped).c_str(),
         share(c.live_scoped, c.live_scoped + c.live_unscoped));
  printf("live at the end, unscoped  %11s  %5.1f%%\n",
         memtrace::FormatBytes(c.live_unscoped).c_str(),
         share(c.live_unscoped, c.live_scoped + c.live_unscoped));
  printf("census (%llu entries)       %11s  beside %s the allocator saw live\n",
         static_cast<unsigned long long>(c.census_entries),
         (c.census_bytes < 0 ? absl::StrCat("-", memtrace::FormatBytes(static_cast<uint64_t>(-c.census_bytes)))
                             : memtrace::FormatBytes(static_cast<uint64_t>(c.census_bytes))).c_str(),
         memtrace::FormatBytes(summary->totals.live_bytes).c_str());
  printf("temporaries                %11llu  blocks (%s) freed almost at once\n",
         static_cast<unsigned long long>(summary->temporaries),
         memtrace::FormatBytes(summary->temporary_bytes).c_str());
  return 0;
}

int Diff(const std::vector<std::string>& args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    fputs(kDiffHelp, stdout);
    return 0;
  }
  if (args.size() != 2) return Fail("diff: usage: memtrace diff BEFORE AFTER");
  auto before = memtrace::Analyzer::Summarize(args[0]);
  if (!before.ok()) return Fail(std::string(before.status().message()));
  auto after = memtrace::Analyzer::Summarize(args[1]);
  if (!after.ok()) return Fail(std::string(after.status().message()));
  printf("memtrace diff: %s (%s) -> %s (%s)\n\n", args[0].c_str(), Verdict(*before).c_str(),
         args[1].c_str(), Verdict(*after).c_str());
  const char* row = "%-40s %12s %12s %12s %12s\n";
  printf(row, "scope", "live before", "live after", "live change", "high-water +/-");
  for (const memtrace::Difference& d : memtrace::Compare(*before, *after)) {
    printf(row, d.path.c_str(), memtrace::FormatBytes(d.before.live_bytes).c_str(),
           memtrace::FormatBytes(d.after.live_bytes).c_str(), Signed(d.live_delta()).c_str(),
           Signed(d.high_water_delta()).c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fputs(kUsage, stderr);
    return 2;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "summary") return Summary(args);
  if (command == "verify") return Verify(args);
  if (command == "top") return Top(args);
  if (command == "peak") return Peak(args);
  if (command == "retention") return Retention(args);
  if (command == "diff") return Diff(args);
  if (command == "coverage") return CoverageCommand(args);
  if (command == "report") return memtrace::ReportCommand(argc - 1, argv + 1);
  if (command == "help" || command == "--help" || command == "-h") {
    if (!args.empty() && args[0] == "summary") {
      fputs(kSummaryHelp, stdout);
    } else if (!args.empty() && args[0] == "verify") {
      fputs(kVerifyHelp, stdout);
    } else if (!args.empty() && args[0] == "top") {
      fputs(kTopHelp, stdout);
    } else if (!args.empty() && args[0] == "peak") {
      fputs(kPeakHelp, stdout);
    } else if (!args.empty() && args[0] == "retention") {
      fputs(kRetentionHelp, stdout);
    } else if (!args.empty() && args[0] == "diff") {
      fputs(kDiffHelp, stdout);
    } else {
      fputs(kUsage, stdout);
    }
    return 0;
  }
  fprintf(stderr, "memtrace: unknown command '%s'\n\n%s", command.c_str(), kUsage);
  return 2;
}
