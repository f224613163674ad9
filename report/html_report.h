// Copyright 2026 The memtrace Authors.
//
// html_report.h: `memtrace report`, one self-contained HTML page about a capture.
//
// WriteHtmlReport() reads a capture twice (analysis/analyzer.h for the totals, tables and
// the global high-water moment; analysis/timeline.h for the downsampled series and the
// composition at that moment), with thread views once more between the two (each view's
// counters, which choose its series' scopes; the second reading then draws every view's
// series too), and writes a page that works offline: its script and style sheet
// (report/assets/, embedded into the binary at build time) and its data (one JSON object)
// are inlined, and it refers to nothing outside itself. The page shows
//
//   - the capture's integrity verdict as a banner (warning colours unless complete), which
//     unfolds to the trailer's counters and memtrace's own threads' CPU time;
//   - live bytes over time: the scopes stacked, the total, one line per layer and census
//     entry, each series' high-water mark annotated;
//   - the composition at the global high-water moment, by scope and by call site;
//   - a flame graph of allocation call stacks, by bytes live at the peak or allocated;
//   - top sites and scopes, retention (per-phase leaks) and leaks (live at the end); a
//     row that adds up several call stacks unfolds to them;
//   - a thread selector, where more than one thread allocated: the chart by scope and the
//     call sites of one thread's blocks;
//   - with a baseline capture, the growth since it by scope and by call site
//     (analysis/difference.h).
//
// Size is bounded whatever the capture: every series keeps at most `max_points` points
// (peaks kept), tables keep `top` rows and the flame graph `flame_sites` stacks, and the
// page says what was cut ("showing 50 of 1234"). docs/report.md describes the page and its
// data; the data's `</` never appears raw (every `<` is written as \u003c).
//
// Thread safety: WriteHtmlReport is reentrant; `describe_frame` is called from the
// calling thread only.
//
// Example:
//
//   ReportOptions options;
//   options.describe_frame = [&](uint64_t pc) { return symbolizer.Describe(pc); };
//   absl::Status s = WriteHtmlReport("capture.jsonl", "report.html", options);

#ifndef MEMTRACE_REPORT_HTML_REPORT_H_
#define MEMTRACE_REPORT_HTML_REPORT_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "analysis/allocator_frames.h"

namespace memtrace {

struct ReportOptions {
  uint64_t max_points = 2000;  // points per time series (at least 3)
  uint64_t top = 5000;         // rows kept per table (the page shows them 50 at a time)
  uint64_t peak_bars = 50;     // bars of the peak composition, by scope and by site
  uint64_t scope_series = 10;  // scopes stacked on their own; the rest as "other scopes"
  uint64_t flame_sites = 2000; // call stacks in the flame graph; the rest as one "other"
  // A call-site row that adds up several stacks lists at most `row_stacks` of them, and a
  // page at most `listed_stacks` in all; the rest are counted ("12 more stacks").
  uint64_t row_stacks = 20;
  uint64_t listed_stacks = 2000;
  // The threads (an event's `thread`) with their own view, those that allocated the most
  // bytes; the rest are one "other threads" view. 0: no views. The views add one more
  // replay of the capture, for all of them together (Analyzer::SetThreadViews()).
  uint64_t thread_views = 4;
  uint64_t thread_top = 1000;  // rows of each view's call-site table
  // A capture to compare this one with ("Compared with"); empty: none.
  std::string baseline;
  // A name for a code address (a call stack frame). When empty, the page shows
  // "module+0xoffset" for addresses inside a module the capture lists, else "0x<hex>".
  std::function<std::string(uint64_t pc)> describe_frame;
  // Without describe_frame: name frames with the symbolizer (function (file:line)) from
  // the capture's module lines, or, when false, as "module+0xoffset".
  bool symbolize = true;
  // With the symbolizer: where a request to a debuginfod server is announced
  // (Symbolizer::set_progress()); null: nowhere.
  std::FILE* progress = nullptr;
  // With the symbolizer: the program's own allocator functions, besides the built-in
  // ones, that call sites are named past (analysis/allocator_frames.h).
  AllocatorFunctions allocators;
  // The page's title; when empty, "memtrace report: <capture file name>".
  std::string title;
};

// Reads `capture_path` (and options.baseline) and writes the page to `out_path`. Errors
// name the capture's line (unreadable input) or the output path (cannot write).
absl::Status WriteHtmlReport(const std::string& capture_path, const std::string& out_path,
                             const ReportOptions& options);

// The page as a string (what WriteHtmlReport writes).
absl::StatusOr<std::string> RenderHtmlReport(const std::string& capture_path,
                                             const ReportOptions& options);

}  // namespace memtrace

#endif  // MEMTRACE_REPORT_HTML_REPORT_H_
