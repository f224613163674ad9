// Copyright 2026 The memtrace Authors.

#include "cli/report_command.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "analysis/capture_name.h"
#include "cli/command_line.h"
#include "report/html_report.h"

namespace memtrace {

const char* const kReportHelp =
    "usage: memtrace report CAPTURE -o REPORT.html [--baseline=OLD] [--max-points=N] [--top=N]\n"
    "                       [--threads=N] [--allocator=NAMES]\n"
    "\n"
    "Writes one self-contained HTML page about CAPTURE (it works offline: no scripts,\n"
    "styles or fonts from elsewhere): the integrity verdict, live bytes over time stacked\n"
    "by scope with one line per layer and census entry, the composition at the global\n"
    "high-water moment, a flame graph of allocation call stacks, top sites and scopes,\n"
    "retention and leaks, and a thread selector where several threads allocated. See\n"
    "docs/report.md. A value goes as --name=VALUE or --name VALUE.\n"
    "  -o PATH, --output=PATH\n"
    "                     where to write the page (required)\n"
    "  --max-points=N     points kept per time series, peaks preserved (default 2000)\n"
    "  --baseline=OLD     add \"Compared with OLD\": the growth since the capture OLD by\n"
    "                     scope and by call site, as `memtrace diff` and `diff --sites`\n"
    "  --top=N            rows kept per table, shown 50 a page with a filter (default 5000)\n"
    "  --threads=N        threads with a view of their own, those that allocated the most\n"
    "                     bytes; the rest as one (default 4; 0: no thread selector)\n"
    "  --allocator=NAMES  the program's own allocator functions, comma-separated\n"
    "                     (pool_alloc,Engine::Alloc*): call sites are named after the\n"
    "                     caller of the outermost one, as of malloc or operator new\n";

namespace {

// A capture the report cannot be made of (not a usage error: no hint about the flags).
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
    }
    const std::optional<FlagArgument> flag = ReadFlagArgument(a);
    if (!flag) {
      if (!capture.empty()) {
        return UsageError("report", absl::StrCat("give one CAPTURE file (got '", capture,
                                                 "' and '", a, "')"));
      }
      capture = a;
      continue;
    }
    if (flag->name != "output" && flag->name != "max_points" && flag->name != "top" &&
        flag->name != "allocator" && flag->name != "baseline" && flag->name != "threads") {
      return UsageError("report", absl::StrCat("unknown option '", a, "'"));
    }
    std::string value, error;
    if (!TakeFlagValue(*flag, argc, argv, &i, &value, &error)) return UsageError("report", error);
    if (flag->name == "output") {
      output = value;
    } else if (flag->name == "baseline") {
      options.baseline = value;
    } else if (flag->name == "threads") {
      options.thread_views = Count(value);
      if (options.thread_views == 0 && value != "0") {
        return UsageError("report", absl::StrCat("--threads must be a number, not '", value, "'"));
      }
    } else if (flag->name == "max_points") {
      options.max_points = Count(value);
      if (options.max_points < 3) {
        return UsageError("report", absl::StrCat("--max-points must be a number of at least 3, "
                                                 "not '", value, "'"));
      }
    } else if (flag->name == "top") {
      options.top = Count(value);
      if (options.top == 0) {
        return UsageError("report",
                          absl::StrCat("--top must be a positive number, not '", value, "'"));
      }
    } else {
      absl::StatusOr<AllocatorFunctions> allocators = AllocatorFunctions::Parse(value);
      if (!allocators.ok()) return UsageError("report", std::string(allocators.status().message()));
      options.allocators = *std::move(allocators);
    }
  }
  if (capture.empty()) {
    return UsageError("report", "which capture? memtrace report CAPTURE -o REPORT.html");
  }
  if (output.empty()) {
    return UsageError("report",
                      "where to? give the output page: memtrace report CAPTURE -o REPORT.html");
  }
  // The page is HTML: a name that promises other bytes (".pdf", ".json") is refused.
  if (const size_t dot = ExtensionDot(output); dot != std::string::npos) {
    const std::string ext = absl::AsciiStrToLower(output.substr(dot + 1));
    if (ext != "html" && ext != "htm") {
      return UsageError("report", absl::StrCat("the report is an HTML page, not '.", ext,
                                               "': name it .html (-o ",
                                               output.substr(0, dot), ".html)"));
    }
  }
  if (absl::Status s = WriteHtmlReport(capture, output, options); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  fprintf(stderr, "memtrace report: wrote %s\n", output.c_str());
  return 0;
}

}  // namespace memtrace
