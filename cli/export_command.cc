// Copyright 2026 The memtrace Authors.
//
// `memtrace export`: the capture as Perfetto trace JSON, folded stacks or a pprof profile.

#include "cli/analysis_commands.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "analysis/analyzer.h"
#include "analysis/exports.h"
#include "analysis/output_file.h"
#include "analysis/symbolizer.h"
#include "cli/internal/analysis_common.h"
#include "cli/internal/site_namer.h"
#include "sinks/summary_table.h"

ABSL_FLAG(std::string, format, "", "export format: perfetto, folded or pprof");
ABSL_FLAG(std::string, weight, "bytes", "folded export: weigh stacks by bytes or count allocated");

namespace memtrace {

using cli_internal::Load;
using cli_internal::OneCapture;
using cli_internal::ParseAllocators;

const CommandSpec kExportSpec = {
    "export", "memtrace export --format=perfetto|folded|pprof [flags] CAPTURE -o OUT",
    "Writes CAPTURE in a format other viewers read (docs/exports.md):\n"
    "  perfetto  Chrome trace-event JSON for ui.perfetto.dev and chrome://tracing: per-scope\n"
    "            live-bytes counters, scope slices per thread, instants for the peak and leaks\n"
    "  folded    collapsed stacks (\"outer;caller;callee WEIGHT\") for flame-graph tools,\n"
    "            weighted by bytes (--weight=bytes) or allocation calls, reallocs\n"
    "            included (--weight=count)\n"
    "  pprof     gzip-compressed profile.proto for `go tool pprof` (alloc_objects,\n"
    "            alloc_space, inuse_objects, inuse_space; inuse = live at the end), each\n"
    "            stack without its innermost allocator frames (malloc, operator new, and\n"
    "            the functions --allocator names)\n"
    "Without -o, perfetto and folded go to stdout; pprof needs -o.",
    {"format", "weight", "output", "allocator"}};

namespace {

// Why `output` is the wrong name for `format`'s bytes, or "" when it is not: an extension
// that names another format's file (".json" holding pprof's gzip). Names these formats
// do not know (".trace", none) are the user's to choose.
std::string OutputNameProblem(const std::string& format, const std::string& output) {
  struct Kind {
    const char* extension;
    const char* what;
    const char* format;  // the format that writes it
  };
  static constexpr Kind kKinds[] = {
      {".json", "JSON", "perfetto"},           {".pb.gz", "a gzip-compressed protobuf", "pprof"},
      {".pprof", "a pprof profile", "pprof"},  {".pb", "a protobuf", "pprof"},
      {".gz", "gzip-compressed data", "pprof"}, {".folded", "folded stacks", "folded"},
      {".html", "a web page", ""},             {".mtb", "a binary capture", ""},
      {".jsonl", "a JSONL capture", ""},       {".zst", "a compressed capture", ""},
  };
  static constexpr const char* kSuggested[][2] = {
      {"perfetto", ".json"}, {"folded", ".folded"}, {"pprof", ".pb.gz"}};
  for (const Kind& k : kKinds) {
    if (!absl::EndsWith(output, k.extension)) continue;
    if (format == k.format) return "";
    const char* suggested = "";
    for (const auto& [f, ext] : kSuggested) {
      if (format == f) suggested = ext;
    }
    std::string stem = output.substr(0, output.size() - strlen(k.extension));
    if (absl::EndsWith(stem, suggested)) stem.resize(stem.size() - strlen(suggested));
    return absl::StrCat("-o ", output, " names ", k.what, ", but --format=", format,
                        " writes ", format == "pprof" ? "a gzip-compressed protobuf"
                        : format == "perfetto"        ? "JSON"
                                                      : "folded stacks",
                        ": name it ", stem, suggested,
                        *k.format != '\0' ? absl::StrCat(", or give --format=", k.format)
                                           : std::string());
  }
  return "";
}

}  // namespace

int ExportCommand(int argc, char** argv) {
  ParsedArgs args;
  if (auto exit = ParseCommandFlags(kExportSpec, argc, argv, &args)) return *exit;
  if (auto exit = OneCapture(kExportSpec, args)) return *exit;
  const std::string format = absl::GetFlag(FLAGS_format);
  const std::string weight = absl::GetFlag(FLAGS_weight);
  const std::string output = absl::GetFlag(FLAGS_output);
  if (format != "perfetto" && format != "folded" && format != "pprof") {
    return UsageError(kExportSpec, format.empty() ? "which format? give --format=perfetto, "
                                                    "folded or pprof"
                                                  : absl::StrCat("--format must be perfetto, "
                                                                 "folded or pprof, not '",
                                                                 format, "'"));
  }
  if (weight != "bytes" && weight != "count") {
    return UsageError(kExportSpec, absl::StrCat("--weight must be bytes or count, not '", weight, "'"));
  }
  if (weight == "count" && format != "folded") {
    return UsageError(kExportSpec,
                      absl::StrCat("--weight is for folded stacks; ", format,
                                   format == "pprof"
                                       ? " carries counts and bytes both (pprof "
                                         "-sample_index=alloc_objects shows counts)"
                                       : " carries bytes, and each event's count"));
  }
  AllocatorFunctions allocators;
  if (auto exit = ParseAllocators(kExportSpec, &allocators)) return *exit;
  if (format == "pprof" && output.empty()) {
    return UsageError(kExportSpec, "pprof output is binary: give -o FILE (e.g. -o heap.pb.gz)");
  }
  if (const std::string problem = OutputNameProblem(format, output); !problem.empty()) {
    return UsageError(kExportSpec, problem);
  }
  // Opened first: an unwritable path is said before the capture is read.
  std::optional<OutputFile> out;
  if (!output.empty()) {
    absl::StatusOr<OutputFile> created = OutputFile::Create(output, {args.positional[0]});
    if (!created.ok()) return InputError(kExportSpec, std::string(created.status().message()));
    out = *std::move(created);
  }
  const std::string& path = args.positional[0];
  const auto s = Load(path);
  if (!s.ok()) return InputError(kExportSpec, std::string(s.status().message()));
  Symbolizer symbolizer;
  symbolizer.set_progress(stderr);
  for (const CaptureRecord& m : s->modules) symbolizer.AddModule(m);
  absl::StatusOr<std::string> data;
  if (format == "perfetto") {
    data = PerfettoTrace(path, *s, symbolizer, allocators);
  } else if (format == "folded") {
    data = FoldedStacks(*s, symbolizer,
                        weight == "count" ? FoldedWeight::kCount : FoldedWeight::kBytes);
  } else {
    data = PprofProfile(*s, symbolizer, allocators);
  }
  if (!data.ok()) return InputError(kExportSpec, std::string(data.status().message()));
  if (out.has_value()) {
    absl::Status w = out->Write(*data);
    if (w.ok()) w = out->Commit();
    if (!w.ok()) return InputError(kExportSpec, std::string(w.message()));
  } else if (fwrite(data->data(), 1, data->size(), stdout) != data->size() || fflush(stdout) != 0) {
    return InputError(kExportSpec, absl::StrCat("writing stdout failed: ", strerror(errno)));
  }
  if (!output.empty()) {
    fprintf(stderr, "memtrace export: wrote %s (%s, %s)%s\n", output.c_str(), format.c_str(),
            FormatBytes(data->size()).c_str(), s->sampled ? " from a sampled capture: estimates" : "");
  }
  // The formats have no place a viewer shows for it (perfetto's otherData holds
  // "complete"): said here, beside the file.
  if (const std::string word = VerdictWord(*s); word != "complete") {
    fprintf(stderr, "memtrace export: note: the capture is %s: the export holds what it recorded "
            "(%s); `memtrace verify` says more\n",
            word.c_str(), cli_internal::Verdict(*s).c_str());
  }
  return 0;
}

}  // namespace memtrace
