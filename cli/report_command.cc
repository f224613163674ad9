// Copyright 2026 The memtrace Authors.

#include "cli/report_command.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "report/html_report.h"

namespace memtrace {

const char* const kReportHelp =
    "usage: memtrace report CAPTURE -o REPORT.html [--max-points=N] [--top=N] [--allocator=NAMES]\n"
    "\n"
    "Writes one self-contained HTML page about CAPTURE (it works offline: no scripts,\n"
    "styles or fonts from elsewhere): the integrity verdict, live bytes over time stacked\n"
    "by scope with one line per layer and census entry, the composition at the global\n"
    "high-water moment, a flame graph of allocation call stacks, top sites and scopes,\n"
    "retention and leaks. See docs/report.md.\n"
    "  -o, --output=PATH  where to write the page (required)\n"
    "  --max-points=N     points kept per time series, peaks preserved (default 2000)\n"
    "  --top=N            rows per table (default 50)\n"
    "  --allocator=NAMES  the program's own allocator functions, comma-separated\n"
    "                     (pool_alloc,Engine::Alloc*): call sites are named after the\n"
    "                     caller of the outermost one, as of malloc or operator new\n";

namespace {

int Fail(const std::string& message) {
  fprintf(stderr, "memtrace report: %s\n", message.c_str());
  return 2;
}

// A positive count from `text`, or 0 when it is not one.
uint64_t Count(const std::string& text) {
  char* end = nullptr;
  const unsigned long long n = strtoull(text.c_str(), &end, 10);
  if (text.empty() || text[0] == '-' || end == text.c_str() || *end != '\0') return 0;
  return n;
}

}  // namespace

int ReportCommand(int argc, char** argv) {
  std::string capture, output;
  ReportOptions options;
  options.progress = stderr;  // a wait for a debuginfod server is explained
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      fputs(kReportHelp, stdout);
      return 0;
    } else if (a == "-o" || a == "--output") {
      if (i + 1 >= argc) return Fail(absl::StrCat(a, " needs a path: -o REPORT.html"));
      output = argv[++i];
    } else if (a.rfind("--output=", 0) == 0) {
      output = a.substr(9);
    } else if (a.rfind("--max-points=", 0) == 0) {
      options.max_points = Count(a.substr(13));
      if (options.max_points < 3) {
        return Fail(absl::StrCat("--max-points must be a number of at least 3, not '",
                                 a.substr(13), "'"));
      }
    } else if (a.rfind("--top=", 0) == 0) {
      options.top = Count(a.substr(6));
      if (options.top == 0) {
        return Fail(absl::StrCat("--top must be a positive number, not '", a.substr(6), "'"));
      }
    } else if (a.rfind("--allocator=", 0) == 0) {
      absl::StatusOr<AllocatorFunctions> allocators = AllocatorFunctions::Parse(a.substr(12));
      if (!allocators.ok()) return Fail(std::string(allocators.status().message()));
      options.allocators = *std::move(allocators);
    } else if (!a.empty() && a[0] == '-') {
      return Fail(absl::StrCat("unknown option '", a, "' (see memtrace help report)"));
    } else if (capture.empty()) {
      capture = a;
    } else {
      return Fail(absl::StrCat("give one CAPTURE file (got '", capture, "' and '", a, "')"));
    }
  }
  if (capture.empty()) return Fail("which capture? usage: memtrace report CAPTURE -o REPORT.html");
  if (output.empty()) {
    return Fail("where to? give the output page: memtrace report CAPTURE -o REPORT.html");
  }
  if (absl::Status s = WriteHtmlReport(capture, output, options); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  fprintf(stderr, "memtrace report: wrote %s\n", output.c_str());
  return 0;
}

}  // namespace memtrace
