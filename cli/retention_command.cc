// Copyright 2026 The memtrace Authors.
//
// `memtrace retention`: per scope, how many exits left memory allocated inside still live.

#include "cli/analysis_commands.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "analysis/analyzer.h"
#include "cli/internal/analysis_common.h"
#include "sinks/json_text.h"
#include "sinks/summary_table.h"

namespace memtrace {

using cli_internal::JsonHead;
using cli_internal::Load;
using cli_internal::OneCapture;
using cli_internal::PrintSampledNote;
using cli_internal::ScopeName;
using cli_internal::Verdict;

const CommandSpec kRetentionSpec = {
    "retention", "memtrace retention [flags] CAPTURE",
    "For every scope whose instances exited, how many exits left memory allocated inside\n"
    "them still live, and how much (summed over exits): per-frame or per-request leaks.",
    {"json"}};

int RetentionCommand(int argc, char** argv) {
  ParsedArgs args;
  if (auto exit = ParseCommandFlags(kRetentionSpec, argc, argv, &args)) return *exit;
  if (auto exit = OneCapture(kRetentionSpec, args)) return *exit;
  const std::string& path = args.positional[0];
  const auto s = Load(path);
  if (!s.ok()) return InputError(kRetentionSpec, std::string(s.status().message()));
  auto rows = s->retention;
  std::sort(rows.begin(), rows.end(), [](const Retention& a, const Retention& b) {
    return a.retained_bytes != b.retained_bytes ? a.retained_bytes > b.retained_bytes
                                                : a.scope < b.scope;
  });
  if (absl::GetFlag(FLAGS_json)) {
    std::string out;
    for (const Retention& r : rows) {
      absl::StrAppend(&out, out.empty() ? "" : ",", "{\"scope\":", JsonQuote(ScopeName(*s, r.scope)),
                      ",\"exits\":", r.exits, ",\"exits_retaining\":", r.exits_retaining,
                      ",\"retained_blocks\":", r.retained_blocks,
                      ",\"retained_bytes\":", r.retained_bytes, "}");
    }
    printf("{%s,\"rows\":[%s]}\n", JsonHead("retention", path, *s).c_str(), out.c_str());
    return 0;
  }
  printf("memtrace retention of %s: capture %s\n", path.c_str(), Verdict(*s).c_str());
  PrintSampledNote(*s);
  printf("\n");
  const char* row = "%-40s %10s %16s %14s %12s\n";
  printf(row, "scope", "exits", "exits retaining", "blocks kept", "bytes kept");
  for (const Retention& r : rows) {
    printf(row, ScopeName(*s, r.scope).c_str(), absl::StrCat(r.exits).c_str(),
           absl::StrCat(r.exits_retaining).c_str(), absl::StrCat(r.retained_blocks).c_str(),
           FormatBytes(r.retained_bytes).c_str());
  }
  if (rows.empty()) {
    printf("(no scope exited in this capture: retention is what a scope's instances left "
           "live when they\n exited. Scopes come from the API's Span or, under memtrace run, "
           "include/memtrace/markers.h)\n");
  }
  return 0;
}

}  // namespace memtrace
