// Copyright 2026 The memtrace Authors.

#include "cli/analysis_commands.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/allocator_frames.h"
#include "analysis/analyzer.h"
#include "analysis/capture_filters.h"
#include "analysis/debuginfod.h"
#include "analysis/exports.h"
#include "analysis/family_live.h"
#include "analysis/output_file.h"
#include "analysis/process_tree.h"
#include "analysis/site_groups.h"
#include "analysis/symbolizer.h"
#include "analysis/trailer.h"
#include "cli/progress_bar.h"
#include "runtime/site_table.h"
#include "sinks/json_text.h"
#include "sinks/summary_table.h"

ABSL_FLAG(std::string, at_event, "", "snapshot: the state right after the first N events");
ABSL_FLAG(std::string, at_time, "",
          "snapshot: the state at a time, in ns since the capture started or in unix ns");
ABSL_FLAG(std::string, at_scope_exit, "",
          "snapshot: the state right after a scope's first exit (PATH) or its N-th (PATH#N)");
ABSL_FLAG(std::string, by, "bytes", "order by: bytes, count, live or temporaries");
ABSL_FLAG(int32_t, limit, 20, "rows to print");
ABSL_FLAG(bool, stacks, false, "print each site's whole call stack, symbolized");
ABSL_FLAG(std::string, scope, "",
          "only this scope's own high-water moment (a path like frame/render)");
ABSL_FLAG(bool, expect_preload, false,
          "also fail unless the capture came from the LD_PRELOAD interposer (memtrace run)");
ABSL_FLAG(std::string, from, "end",
          "diff: the first snapshot point: end, event=N, time=NS, scope-exit=PATH[#N]");
ABSL_FLAG(std::string, to, "end", "diff: the second snapshot point (same forms as --from)");
ABSL_FLAG(std::string, allocator, "",
          "the program's own allocator (or container library) functions, comma-separated "
          "(pool_alloc,Engine::Alloc*,folly::*): a site is named after the caller of the "
          "outermost one, as of malloc or operator new");
ABSL_FLAG(std::string, format, "", "export format: perfetto, folded or pprof");
ABSL_FLAG(std::string, weight, "bytes", "folded export: weigh stacks by bytes or count allocated");

namespace memtrace {

const CommandSpec kSummarySpec = {
    "summary", "memtrace summary [flags] CAPTURE | memtrace summary [flags] CAPTURE CAPTURE...",
    "Replays CAPTURE and prints live bytes, blocks, high-water, allocated and freed per\n"
    "scope and per layer, then the integrity block from its trailer: what was lost, how\n"
    "releases were matched, the transport, memtrace's own memory and its threads' CPU\n"
    "time. With one of the --at-* flags, the state at that point of the capture (a\n"
    "snapshot).\n"
    "With several captures (the processes of one program traced with `memtrace run\n"
    "--children` or `--forks`: memtrace summary NAME.mtb NAME.*), one row per process\n"
    "image, as a tree of who forked, exec'd or started whom, with its totals, how it\n"
    "ended and its verdict; --limit rows (the largest by bytes allocated when there are\n"
    "more; 0: all).",
    {"json", "at_event", "at_time", "at_scope_exit", "limit"}};

const CommandSpec kVerifySpec = {
    "verify", "memtrace verify [flags] CAPTURE...",
    "Checks that CAPTURE has at least one memory event, ends with a trailer (it was not cut\n"
    "off), and that the trailer says nothing was lost. Exit 0 when all hold; otherwise print\n"
    "which failed and exit 1. A capture from the interposer (header source \"preload\") with\n"
    "no memory events means the interposer was loaded but recorded no allocations.\n"
    "With several captures (a process family: memtrace verify NAME.mtb NAME.*), each in\n"
    "turn (--json: one object per line); exit 0 only when every one passes, 2 when one\n"
    "cannot be read.",
    {"json", "expect_preload"}};

const CommandSpec kTopSpec = {
    "top", "memtrace top [flags] CAPTURE | memtrace top [flags] CAPTURE CAPTURE...",
    "Lists call sites, each with the scope and layer it allocated in, largest first, with\n"
    "the site symbolized from the capture's module lines (function (file:line)).\n"
    "--by=bytes: bytes allocated; count: allocations; live: bytes live at the end (leaks at\n"
    "exit); temporaries: blocks freed almost at once by the thread that allocated them.\n"
    "A site is named after the code that called the allocator (malloc, operator new, and\n"
    "the wrappers of common libraries; --allocator adds the program's own). Call stacks\n"
    "that share that name, scope and layer (one function reached from several callers)\n"
    "are one row, marked [N stacks]; --stacks prints the largest five of them, each with\n"
    "its own counts (--json lists them all).\n"
    "With several captures (the processes of one program: memtrace top NAME.mtb NAME.*),\n"
    "rows with the same site name, scope and layer are added up over the processes, and\n"
    "each says in how many it appeared. The blocks a forked child inherited are counted in\n"
    "the process that allocated them, not again in the child.",
    {"json", "by", "limit", "stacks", "allocator"}};

const CommandSpec kPeakSpec = {
    "peak", "memtrace peak [flags] CAPTURE",
    "Finds the moment total live memory was highest and lists what held it, by scope and\n"
    "by call site; then, for each scope (largest first, --limit of them) or for --scope, its\n"
    "own high-water moment and what of it was live then, by site. Sites are named as in\n"
    "`memtrace top`, and stacks that share a name are one row, marked [N stacks]. Reads\n"
    "the capture three times.",
    {"json", "limit", "scope", "allocator"}};

const CommandSpec kRetentionSpec = {
    "retention", "memtrace retention [flags] CAPTURE",
    "For every scope whose instances exited, how many exits left memory allocated inside\n"
    "them still live, and how much (summed over exits): per-frame or per-request leaks.",
    {"json"}};

const CommandSpec kDiffSpec = {
    "diff", "memtrace diff [flags] BEFORE AFTER | memtrace diff --from=P --to=P CAPTURE",
    "Compares two snapshots scope by scope (matched by path): live bytes, high-water and\n"
    "bytes allocated, largest change in live bytes first. With two captures, --from applies\n"
    "to BEFORE and --to to AFTER (both default to the end); with one capture, --from and\n"
    "--to pick two points of it. Points: end, event=N, time=NS (since the start, or unix\n"
    "ns), scope-exit=PATH or scope-exit=PATH#N.",
    {"json", "from", "to"}};

const CommandSpec kCoverageSpec = {
    "coverage", "memtrace coverage [flags] CAPTURE",
    "How much of the memory is explained: bytes allocated (and live at the end) in named\n"
    "scopes versus unscoped, the census total beside the live bytes the allocator observed,\n"
    "and the temporaries.",
    {"json"}};

const CommandSpec kExportSpec = {
    "export", "memtrace export --format=perfetto|folded|pprof [flags] CAPTURE -o OUT",
    "Writes CAPTURE in a format other viewers read (docs/exports.md):\n"
    "  perfetto  Chrome trace-event JSON for ui.perfetto.dev and chrome://tracing: per-scope\n"
    "            live-bytes counters, scope slices per thread, instants for the peak and leaks\n"
    "  folded    collapsed stacks (\"outer;caller;callee WEIGHT\") for flame-graph tools,\n"
    "            weighted by bytes (--weight=bytes) or allocations (--weight=count)\n"
    "  pprof     gzip-compressed profile.proto for `go tool pprof` (alloc_objects,\n"
    "            alloc_space, inuse_objects, inuse_space; inuse = live at the end)\n"
    "Without -o, perfetto and folded go to stdout; pprof needs -o.",
    {"format", "weight", "output"}};

namespace {

// The recording filters of `s` (analysis/capture_filters.h), with the counts its trailer
// has (none when it has no trailer, or one that cannot be read).
CaptureFilters FiltersOf(const CaptureSummary& s) {
  if (!s.has_trailer) return CaptureFilters::Of(s, nullptr);
  const absl::StatusOr<TrailerBlocks> t = ParseTrailer(s.trailer);
  return CaptureFilters::Of(s, t.ok() ? &*t : nullptr);
}

// What was lost, or that nothing was (Verdict() adds the filters).
std::string VerdictAlone(const CaptureSummary& s) {
  if (s.being_written) {
    return "INCOMPLETE (still being written: the process writing it is running, and its "
           "trailer comes when that process exits)";
  }
  if (!s.has_trailer) {
    return s.source == "preload"
               ? "TRUNCATED (no trailer: the process ended without its exit handlers, killed "
                 "or by its own exit_group as Go programs end; `memtrace verify` says more)"
               : "TRUNCATED (no trailer: the program or the sink stopped early)";
  }
  if (!s.trailer_complete) {
    const absl::StatusOr<TrailerBlocks> t = ParseTrailer(s.trailer);
    if (t.ok() && t->LostOnlyPastTheSizeLimit()) {
      return absl::StrCat("PARTIAL (its size limit, ", FormatBytes(t->max_bytes),
                          ", was reached: the events stop there; the totals at the end are "
                          "below the integrity block)");
    }
    return "PARTIAL (the trailer reports lost records)";
  }
  return "complete";
}

// The verdict of `s`, and after it every recording filter in force with what it left out.
std::string Verdict(const CaptureSummary& s) {
  return VerdictAlone(s) + FiltersOf(s).VerdictSuffix();
}

std::string VerdictWord(const CaptureSummary& s) {
  if (!s.has_trailer) return s.being_written ? "running" : "truncated";
  return s.trailer_complete ? "complete" : "partial";
}

// Under a family's first line (its verdicts counted): each capture that recording filters
// thinned, and what they left out.
void PrintFamilyFiltersNote(const std::vector<std::pair<std::string, CaptureFilters>>& filtered) {
  for (const auto& [path, filters] : filtered) {
    printf("filtered: %s: %s\n", path.c_str(), absl::StrJoin(filters.Statements(), "; ").c_str());
  }
}

// The line under every text header of a sampled capture.
void PrintSampledNote(const CaptureSummary& s) {
  if (!s.sampled) return;
  printf("sampled estimate: the interposer kept a sample (one per %llu bytes on average); "
         "counts and bytes are scaled by each sample's weight\n",
         static_cast<unsigned long long>(s.sample_interval_bytes));
}

// The JSON fields every analysis output starts with.
std::string JsonHead(const std::string& command, const std::string& path,
                     const CaptureSummary& s) {
  return absl::StrCat("\"command\":", JsonQuote(command), ",\"capture\":", JsonQuote(path),
                      ",\"verdict\":\"", VerdictWord(s), "\",\"filters\":", FiltersOf(s).Json(),
                      ",\"sampled\":", s.sampled ? "true" : "false", ",\"events\":", s.events);
}

std::string ScopeName(const CaptureSummary& s, uint32_t id) {
  auto it = s.scope_paths.find(id);
  return it != s.scope_paths.end() ? it->second : absl::StrCat("scope ", id);
}

std::string LayerName(const CaptureSummary& s, uint32_t id) {
  auto it = s.layer_names.find(id);
  return it != s.layer_names.end() ? it->second : absl::StrCat(id);
}

std::string Hex(uint64_t v) { return absl::StrCat("0x", absl::Hex(v)); }

std::string Signed(int64_t v) {
  return v < 0 ? absl::StrCat("-", FormatBytes(static_cast<uint64_t>(-v)))
               : absl::StrCat("+", FormatBytes(static_cast<uint64_t>(v)));
}

double Share(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

// Reads `path` up to `point`, with a progress bar when stderr is a terminal.
absl::StatusOr<CaptureSummary> Load(const std::string& path, const SnapshotPoint& point) {
  ProgressBar bar(path, "reading");
  AnalysisSummaryOptions options;
  options.point = point;
  options.progress = [&bar](uint64_t bytes) { bar.Update(bytes); };
  return Analyzer::Summarize(path, options);
}

absl::StatusOr<CaptureSummary> Load(const std::string& path) { return Load(path, SnapshotPoint{}); }

// Exactly one CAPTURE argument, or a usage error.
std::optional<int> OneCapture(const CommandSpec& spec, const ParsedArgs& args) {
  if (args.positional.empty()) return UsageError(spec, "which capture? give a CAPTURE file");
  if (args.positional.size() > 1 || args.dashdash) {
    return UsageError(spec, "give exactly one CAPTURE file");
  }
  return std::nullopt;
}

// A Symbolizer given the capture's module lines.
std::unique_ptr<Symbolizer> ModuleSymbolizer(const CaptureSummary& s) {
  auto symbolizer = std::make_unique<Symbolizer>();
  symbolizer->set_progress(stderr);  // a wait for a debuginfod server is explained
  for (const CaptureRecord& m : s.modules) symbolizer->AddModule(m);
  return symbolizer;
}

// Names call sites: symbolized through the capture's module lines when it has any, else
// the bare return address (captures of the wrapped-allocator API list no modules).
// `shared`: a Symbolizer given this capture's module lines already (SharedSymbolizers),
// used instead of a new one.
class SiteNamer {
 public:
  SiteNamer(const CaptureSummary& s, AllocatorFunctions allocators,
            Symbolizer* shared = nullptr)
      : summary_(s), allocators_(std::move(allocators)) {
    if (shared == nullptr) own_ = ModuleSymbolizer(s);
    symbolizer_ = shared != nullptr ? shared : own_.get();
  }
  uint64_t Addr(uint32_t site) const {
    auto it = summary_.site_addrs.find(site);
    return it != summary_.site_addrs.end() ? it->second : 0;
  }
  std::vector<uint64_t> Frames(uint32_t site) const {
    auto it = summary_.site_frames.find(site);
    if (it != summary_.site_frames.end()) return it->second;
    return {Addr(site)};
  }
  std::string Describe(uint64_t pc) {
    return summary_.modules.empty() && pc != 0 ? Hex(pc) : symbolizer_->Describe(pc);
  }
  // Named after its first frame outside the allocator (analysis/allocator_frames.h).
  std::string Name(uint32_t site) {
    if (summary_.site_addrs.count(site) == 0) return absl::StrCat("site ", site);
    if (summary_.modules.empty()) return Describe(Addr(site));
    return SiteLabel(*symbolizer_, Frames(site), allocators_);
  }
  // The modules whose frames were named "??" so far (Symbolizer::Unresolved()).
  std::vector<UnresolvedModule> Unresolved() const {
    if (summary_.modules.empty()) return {};
    return symbolizer_->Unresolved();
  }
  std::string JsonFrame(uint64_t pc) {
    const SymbolizedFrame& f = symbolizer_->Resolve(pc);
    std::string inlined;
    for (const InlinedFrame& in : Inlined(pc)) {
      absl::StrAppend(&inlined, inlined.empty() ? "" : ",", "{\"function\":",
                      JsonQuote(in.function), ",\"file\":", JsonQuote(in.file),
                      ",\"line\":", in.line, "}");
    }
    return absl::StrCat("{\"pc\":\"", Hex(pc), "\",\"function\":", JsonQuote(f.function),
                        ",\"file\":", JsonQuote(f.file), ",\"line\":", f.line,
                        ",\"module\":", JsonQuote(f.module), ",\"module_offset\":\"",
                        Hex(f.module_offset), "\",\"text\":", JsonQuote(Describe(pc)),
                        ",\"inlined\":[", inlined, "]}");
  }
  // The functions inlined into the function at pc, innermost first (none for a capture
  // without module lines).
  const std::vector<InlinedFrame>& Inlined(uint64_t pc) {
    static const std::vector<InlinedFrame> kNone;
    return summary_.modules.empty() || pc == 0 ? kNone : symbolizer_->Resolve(pc).inlined;
  }

 private:
  const CaptureSummary& summary_;
  const AllocatorFunctions allocators_;
  std::unique_ptr<Symbolizer> own_;
  Symbolizer* symbolizer_;
};

// One Symbolizer for every capture of a family whose module lines are the same (a forked
// child's are its parent's): each opens and indexes every ELF file it resolves in, which
// took `memtrace top` over postgres's 123 captures 24 s, 0.1 s a capture.
class SharedSymbolizers {
 public:
  Symbolizer* For(const CaptureSummary& s) {
    std::string key;
    for (const CaptureRecord& m : s.modules) {
      absl::StrAppend(&key, m.path, "|", m.start, "|", m.end, "|", m.offset, "|", m.build_id,
                      "\n");
    }
    std::unique_ptr<Symbolizer>& symbolizer = by_modules_[key];
    if (symbolizer == nullptr) symbolizer = ModuleSymbolizer(s);
    return symbolizer.get();
  }
  // Every Symbolizer's unresolved modules, one entry per path.
  std::vector<UnresolvedModule> Unresolved() const {
    std::vector<UnresolvedModule> out;
    for (const auto& [key, symbolizer] : by_modules_) {
      for (const UnresolvedModule& u : symbolizer->Unresolved()) AddUnresolved(&out, u);
    }
    return out;
  }

 private:
  std::map<std::string, std::unique_ptr<Symbolizer>> by_modules_;
};

// The --allocator flag's functions, or the usage error that says what is wrong with it.
std::optional<int> ParseAllocators(const CommandSpec& spec, AllocatorFunctions* out) {
  absl::StatusOr<AllocatorFunctions> parsed =
      AllocatorFunctions::Parse(absl::GetFlag(FLAGS_allocator));
  if (!parsed.ok()) return UsageError(spec, std::string(parsed.status().message()));
  *out = *std::move(parsed);
  return std::nullopt;
}

// Under a table of call sites: for each module whose frames read "??", why, and what would
// name them. Symbolization happens here, at analysis time, so the capture itself needs no
// new run once the symbols are there.
void PrintUnresolvedNote(const std::vector<UnresolvedModule>& modules) {
  if (modules.empty()) return;
  constexpr size_t kListed = 5;
  const bool no_servers = !Debuginfod::HasServers();
  printf("\nnote: %zu module%s frames without a name (\"??\"). Symbols are read now, not "
         "when the\ncapture was made: once they are there, run this again.\n",
         modules.size(), modules.size() == 1 ? " has" : "s have");
  for (size_t i = 0; i < modules.size() && i < kListed; ++i) {
    const UnresolvedModule& u = modules[i];
    printf("  %s (%llu address%s): ", u.path.c_str(), static_cast<unsigned long long>(u.frames),
           u.frames == 1 ? "" : "es");
    switch (u.why) {
      case MissingSymbols::kNoFile:
        printf("the file is not here (missing, unreadable or not ELF);\n      run this where "
               "it is, or put the file that ran at that path\n");
        break;
      case MissingSymbols::kOtherBuild:
        printf("the file at that path is not the build that ran\n      (the capture's build "
               "id is %s); put that build back at that path\n",
               u.build_id.c_str());
        break;
      case MissingSymbols::kNoSymbols: {
        const std::string debug_file = DebugFileForBuildId(u.build_id);
        if (debug_file.empty()) {
          printf("the file has no symbols for them;\n      build it with -g, or keep its "
                 "symbols\n");
        } else {
          printf("the file has no symbols for them;\n      install its debug information at "
                 "%s\n      (Debian: the package's -dbgsym, from the debian-debug archive)\n",
                 debug_file.c_str());
        }
        break;
      }
    }
    // debuginfod: what the servers said, or that they could be asked.
    if (!u.debuginfod.empty()) {
      printf("      debuginfod: %s\n", u.debuginfod.c_str());
    } else if (!u.build_id.empty() && no_servers) {
      printf("      or set DEBUGINFOD_URLS to fetch %s by its build id\n",
             u.why == MissingSymbols::kNoSymbols ? "its debug information" : "the file");
    }
  }
  if (no_servers && std::any_of(modules.begin(), modules.end(), [](const UnresolvedModule& u) {
        return !u.build_id.empty();
      })) {
    printf("  (DEBUGINFOD_URLS names debuginfod servers, as for gdb; Debian's: "
           "https://debuginfod.debian.net)\n");
  }
  if (modules.size() > kListed) printf("  (%zu more modules)\n", modules.size() - kListed);
}

// ---- summary ----------------------------------------------------------------------------

void PrintTable(const CaptureSummary& s, const std::string& path) {
  printf("memtrace summary of %s: capture %s\n", path.c_str(), Verdict(s).c_str());
  PrintSampledNote(s);
  printf("\n");
  const char* row = "%-36s %11s %9s %11s %12s %11s %10s %11s %10s\n";
  printf(row, "scope", "live", "blocks", "high-water", "peak bound", "allocated", "allocs",
         "freed", "frees");
  auto line = [&](const std::string& name, const UsageCounters& u) {
    printf(row, name.c_str(), FormatBytes(u.live_bytes).c_str(),
           absl::StrCat(u.live_count).c_str(), FormatBytes(u.high_water_bytes).c_str(),
           FormatPeakBound(u).c_str(), FormatBytes(u.allocated_bytes).c_str(),
           absl::StrCat(u.allocated_count).c_str(),
           FormatBytes(u.freed_bytes).c_str(), absl::StrCat(u.freed_count).c_str());
  };
  for (const auto& [id, usage] : s.scopes) line(ScopeName(s, id), usage);
  line("TOTAL", s.totals);
  printf("\n");
  for (const auto& [id, usage] : s.layers) line("layer " + LayerName(s, id), usage);
  printf("\n%llu events; %llu blocks live at the end; %llu releases with no allocation in "
         "the capture\n",
         static_cast<unsigned long long>(s.events), static_cast<unsigned long long>(s.live_blocks),
         static_cast<unsigned long long>(s.unmatched_releases));
}

std::string JsonScopeUsages(const CaptureSummary& s) {
  std::string scopes;
  for (const auto& [id, usage] : s.scopes) {
    absl::StrAppend(&scopes, scopes.empty() ? "" : ",", "{\"id\":", id,
                    ",\"path\":", JsonQuote(s.scope_paths.count(id) ? s.scope_paths.at(id) : ""),
                    ",\"usage\":", JsonUsage(usage), "}");
  }
  return scopes;
}

std::optional<SnapshotPoint> SummaryPoint(int* exit) {
  std::vector<std::string> given;
  if (!absl::GetFlag(FLAGS_at_event).empty()) given.push_back("event=" + absl::GetFlag(FLAGS_at_event));
  if (!absl::GetFlag(FLAGS_at_time).empty()) given.push_back("time=" + absl::GetFlag(FLAGS_at_time));
  if (!absl::GetFlag(FLAGS_at_scope_exit).empty()) {
    given.push_back("scope-exit=" + absl::GetFlag(FLAGS_at_scope_exit));
  }
  if (given.size() > 1) {
    *exit = UsageError(kSummarySpec, "give at most one of --at-event, --at-time, --at-scope-exit");
    return std::nullopt;
  }
  if (given.empty()) return SnapshotPoint{};
  auto point = ParseSnapshotPoint(given[0]);
  if (!point.ok()) {
    *exit = UsageError(kSummarySpec, std::string(point.status().message()));
    return std::nullopt;
  }
  return *point;
}

std::string PointDescription(const SnapshotPoint& p) {
  switch (p.kind) {
    case SnapshotPoint::Kind::kEnd: return "the end";
    case SnapshotPoint::Kind::kEvent: return absl::StrCat("event ", p.event);
    case SnapshotPoint::Kind::kTime: return absl::StrCat("time ", p.time_ns, " ns");
    case SnapshotPoint::Kind::kScopeExit: return absl::StrCat("exit ", p.nth, " of ", p.scope);
  }
  return p.text;
}

// Fails when a scope-exit point was never reached.
std::optional<int> CheckReached(const CommandSpec& spec, const CaptureSummary& s,
                                const SnapshotPoint& p) {
  if (s.snapshot_reached) return std::nullopt;
  return InputError(spec, absl::StrCat("the capture never reaches ", PointDescription(p),
                                       " (the scope exits fewer times, or never: check the "
                                       "path with memtrace retention)"));
}

// The trailer's integrity block, as the runtime's own summary prints it, and the sink's
// counts; a capture cut short has none, and says so.
void PrintIntegrity(const std::optional<TrailerBlocks>& blocks, const CaptureFilters& filters) {
  printf("\n");
  if (!blocks) {
    printf("integrity: unknown: the capture has no trailer (it was cut short; `memtrace "
           "verify` says more)\n");
    return;
  }
  std::string filter_lines;
  for (const std::string& f : filters.Statements()) {
    absl::StrAppend(&filter_lines, "  filters    ", f, "\n");
  }
  if (blocks->has_integrity) {
    printf("%s", FormatIntegrityBlock(blocks->integrity, blocks->memtrace_bytes,
                                      blocks->fence, filters.ExactFor(), filter_lines)
                     .c_str());
  } else {
    printf("integrity: not in the trailer\n%s", filter_lines.c_str());
  }
  if (blocks->has_sink) {
    printf("  sink       events written %llu, lost %llu, write errors %llu, stack collisions "
           "%llu\n",
           static_cast<unsigned long long>(blocks->events_written),
           static_cast<unsigned long long>(blocks->events_lost),
           static_cast<unsigned long long>(blocks->write_errors),
           static_cast<unsigned long long>(blocks->stack_collisions));
    if (blocks->events_past_limit != 0) {
      printf("  size limit the capture reached its size limit (%s): %llu later events were "
             "not written.\n"
             "             The table above covers the run up to there; the totals at the "
             "end,\n"
             "             from the trailer: %s\n",
             FormatBytes(blocks->max_bytes).c_str(),
             static_cast<unsigned long long>(blocks->events_past_limit),
             blocks->has_totals
                 ? absl::StrCat("live ", FormatBytes(blocks->totals.live_bytes), " in ",
                                blocks->totals.live_count, " blocks, high-water ",
                                FormatBytes(blocks->totals.high_water_bytes), ", allocated ",
                                FormatBytes(blocks->totals.allocated_bytes), " in ",
                                blocks->totals.allocated_count, " allocations")
                       .c_str()
                 : "not recorded");
    }
  }
  if (blocks->has_memtrace_cpu) {
    printf("%s", FormatOwnCpuLine(blocks->drainer_cpu_ns, blocks->writer_cpu_ns).c_str());
  }
}

// A capture the interposer ended at an exec holds the first program image only. When the
// program is a wrapper (a pyenv shim, a launcher script), the program the user meant ran
// after it: say where it went and how to trace it.
void PrintShadowNote(const CaptureSummary& s) {
  if (s.malloc_from.empty()) return;
  printf("\nnote: the program's calls to malloc and free reached the allocator of %s,\n"
         "  which came before the interposer: these figures hold only what reached memtrace\n"
         "  by other calls, and frees may be missing (`memtrace verify` fails it).\n",
         s.malloc_from.c_str());
}

// A forked child's capture (memtrace run --forks) starts with what it inherited.
void PrintForkNote(const CaptureSummary& s) {
  const ForkOrigin& f = s.fork;
  if (!f.forked) return;
  printf("\nnote: this process was forked from pid %llu. Its capture starts with the %llu "
         "blocks\n  (%s) live in the parent at the fork, in the scope \"(inherited at "
         "fork)\":\n  their frees here match them.",
         static_cast<unsigned long long>(f.parent_pid),
         static_cast<unsigned long long>(f.inherited_blocks), FormatBytes(f.inherited_bytes).c_str());
  if (!f.stacks_known) {
    // Written before 2026-12-05: every inherited block at site 0.
    printf(" Where they were allocated is in the parent's capture.\n");
  } else if (f.inherited_without_stack == 0) {
    printf(" Their sites are the call stacks the parent\n  allocated them at.\n");
  } else {
    printf(" Their sites are the call stacks the parent\n  allocated them at, but for %llu "
           "blocks whose stack the parent had not kept (it\n  had more distinct call stacks "
           "than it keeps): those are at \"no call site\".\n",
           static_cast<unsigned long long>(f.inherited_without_stack));
  }
  if (f.unpublished_records != 0) {
    printf("  %llu records the parent's other threads were writing at that moment are "
           "missing\n  from those blocks (the parent's capture has them).\n",
           static_cast<unsigned long long>(f.unpublished_records));
  }
}

// What the program's libraries allocated and released in their constructors, before
// the interposer's ran (the loader runs them first): not in the capture.
void PrintBeforeStartNote(const std::optional<TrailerBlocks>& blocks) {
  if (!blocks || (blocks->prestart_freed == 0 && blocks->prestart_untracked == 0)) return;
  if (blocks->prestart_freed != 0) {
    printf("\nnote: before memtrace started (the constructors of the program's libraries run\n"
           "  before its own), %llu block%s (%s) were allocated and released again without\n"
           "  being recorded (its log of those calls holds 131072; captures made before\n"
           "  2026-12-05 kept none); they are not in these figures. The blocks still live\n"
           "  when it started are, each at the stack that allocated it.\n",
           static_cast<unsigned long long>(blocks->prestart_freed),
           blocks->prestart_freed == 1 ? "" : "s", FormatBytes(blocks->prestart_freed_bytes).c_str());
  }
  if (blocks->prestart_untracked != 0) {
    printf("%s%llu block%s allocated before memtrace started did not fit its table of them:\n"
           "  their frees count as unknown frees.\n",
           blocks->prestart_freed != 0 ? "  " : "\nnote: ",
           static_cast<unsigned long long>(blocks->prestart_untracked),
           blocks->prestart_untracked == 1 ? "" : "s");
  }
}

// Allocations past the bound on distinct call sites went to one "other sites" row: how to
// keep them apart next time.
void PrintSiteOverflowNote(const std::optional<TrailerBlocks>& blocks, const CaptureSummary& s) {
  if (!blocks || !blocks->has_integrity || blocks->integrity.site_overflow == 0) return;
  const std::string kept =
      s.site_capacity != 0 ? absl::StrCat("the ", s.site_capacity, " distinct call sites")
                           : std::string("the distinct call sites");
  printf("\nnote: %llu allocation%s came from call sites beyond %s the capture\n  kept; "
         "they share one \"other sites\" row. To keep more, %s\n",
         static_cast<unsigned long long>(blocks->integrity.site_overflow),
         blocks->integrity.site_overflow == 1 ? "" : "s", kept.c_str(),
         s.source == "preload"
             ? absl::StrCat("trace it again with\n  `memtrace run --site-capacity=N` "
                            "(MEMTRACE_SITE_CAPACITY; ", kDefaultSiteCapacity,
                            " by default), or with a\n  smaller --depth.")
                   .c_str()
             : "raise\n  Config::request_site_capacity_max.");
}

// A capture finished as a signal ended the program: a crash (partial), or a signal sent
// to stop it that it left to the default action (complete).
void PrintSignalNote(const std::optional<TrailerBlocks>& blocks) {
  if (!blocks || blocks->ended_by.rfind("signal ", 0) != 0) return;
  const int sig = atoi(blocks->ended_by.c_str() + strlen("signal "));
  printf("\nnote: the program was ended by signal %d (%s). memtrace finished the capture\n"
         "  first: the blocks live then were in use when it stopped, not leaks.\n",
         sig, sig > 0 ? strsignal(sig) : "unknown");
}

void PrintExecNote(const std::optional<TrailerBlocks>& blocks, const std::string& path,
                   bool trace_children) {
  if (blocks && blocks->ended_by == "unshare(CLONE_NEWUSER)") {
    printf("\nnote: the capture ends where the program called unshare(CLONE_NEWUSER), which\n"
           "  needs a process with one thread: memtrace finished the capture and stopped its\n"
           "  own threads there, and the program went on untraced. A program it then runs\n"
           "  (exec) is traced with `memtrace run --children`, into %s.exec1.\n",
           path.c_str());
    return;
  }
  if (!blocks || blocks->ended_by != "exec") return;
  const std::string target =
      blocks->exec.empty() ? "another program" : absl::StrCat("'", blocks->exec, "'");
  if (trace_children) {
    // The interposer names an exec'd image's capture after the first image's, with the
    // first free ".execN" (preload/start.inc, StartTracing).
    std::string base = path;
    int n = 1;
    if (const size_t at = path.rfind(".exec"); at != std::string::npos) {
      int number = 0;
      if (absl::SimpleAtoi(absl::string_view(path).substr(at + 5), &number) && number > 0) {
        base = path.substr(0, at);
        n = number + 1;
      }
    }
    const std::string next = absl::StrCat(base, ".exec", n);
    if (access(next.c_str(), F_OK) == 0) {
      printf("\nnote: the capture ends where the program replaced itself with %s (exec);\n"
             "  the new image traced on into %s.\n",
             target.c_str(), next.c_str());
    } else {
      printf("\nnote: the capture ends where the program replaced itself with %s (exec).\n"
             "  Exec'd images were traced (--children), but %s, where the new one would\n"
             "  have written, is not there: a static or setuid program, which LD_PRELOAD\n"
             "  does not reach, or one whose capture was moved away.\n",
             target.c_str(), next.c_str());
    }
    return;
  }
  printf("\nnote: the capture ends where the program replaced itself with %s (exec).\n"
         "  What ran after that is traced only with `memtrace run --children`\n"
         "  (MEMTRACE_TRACE_CHILDREN=1), into %s.exec1, .exec2 and so on.\n"
         "  A wrapper script (a pyenv shim, a launcher) starts the real program that way.\n",
         target.c_str(), path.c_str());
}

// A process that forked children memtrace did not follow (no --forks): a daemon's real
// work, a server's workers, ran in them.
void PrintUntracedForksNote(const std::optional<TrailerBlocks>& blocks, bool trace_children,
                            bool trace_forks) {
  if (!blocks || blocks->forks == 0 || trace_forks) return;
  const unsigned long long n = blocks->forks;
  if (trace_children) {
    printf("\nnote: the program forked %llu child process%s. Those that ran another program\n"
           "  (exec) were traced (--children); any that went on running this one (a worker,\n"
           "  a daemon) were not: `memtrace run --forks` traces them, each into a capture of\n"
           "  its own.\n",
           n, n == 1 ? "" : "es");
    return;
  }
  printf("\nnote: the program forked %llu child process%s, which memtrace did not follow. A\n"
         "  child that went on running this program (a worker, or a daemon that keeps\n"
         "  running after this process exited) is traced with `memtrace run --forks`; one\n"
         "  that ran another program (exec) with `--children`. Each gets a capture of its own.\n",
         n, n == 1 ? "" : "es");
}

// The command line a row of the process table shows: the arguments joined by spaces,
// cut to `width` characters.
std::string CommandText(const ProcessOrigin& p, size_t width) {
  if (!p.known) return "(not recorded)";
  std::string text = absl::StrJoin(p.argv, " ");
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';  // a newline in a `bash -c` script
  }
  if (p.argv_truncated) text += " ...";
  if (text.size() > width) text = text.substr(0, width - 3) + "...";
  return text;
}

const char* RelationWord(ProcessRelation r) {
  switch (r) {
    case ProcessRelation::kRoot: return "root";
    case ProcessRelation::kForked: return "forked";
    case ProcessRelation::kExeced: return "exec";
    case ProcessRelation::kStarted: return "started";
  }
  return "root";
}

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// What a process allocated itself: a forked child's capture records the blocks it
// inherited first, as allocations (the header's fork object counts them).
UsageCounters OwnAllocated(const CaptureSummary& s) {
  UsageCounters u = s.totals;
  if (s.fork.forked) {
    u.allocated_bytes -= std::min(u.allocated_bytes, s.fork.inherited_bytes);
    u.allocated_count -= std::min(u.allocated_count, s.fork.inherited_blocks);
  }
  return u;
}

// `memtrace summary A B ...`: one row per capture (process image), as a process tree
// (analysis/process_tree.h). Exit 2 when a capture cannot be read (its row says so, and
// the reason follows the table); the others are still shown.
int FamilySummary(const std::vector<std::string>& paths) {
  if (!absl::GetFlag(FLAGS_at_event).empty() || !absl::GetFlag(FLAGS_at_time).empty() ||
      !absl::GetFlag(FLAGS_at_scope_exit).empty()) {
    return UsageError(kSummarySpec, "the --at-* snapshot flags take one CAPTURE, not "
                                    "several; summarize the one you want at that point");
  }
  const int limit = absl::GetFlag(FLAGS_limit);
  if (limit < 0) return UsageError(kSummarySpec, "--limit must be 0 (all rows) or more");
  struct Loaded {
    std::string path;
    std::optional<CaptureSummary> s;
    std::string error;  // when s is empty
    std::optional<TrailerBlocks> blocks;
  };
  std::vector<Loaded> captures;
  std::vector<ProcessImage> images;
  std::vector<ProcessLiveSteps> live;  // of the captures read, for the family's high-water
  for (const std::string& path : paths) {
    Loaded l;
    l.path = path;
    ProcessLiveSteps steps;
    absl::StatusOr<CaptureSummary> s;
    {
      ProgressBar bar(path, "reading");
      s = SummarizeWithSteps(path, [&bar](uint64_t bytes) { bar.Update(bytes); }, &steps);
    }
    if (s.ok()) live.push_back(std::move(steps));
    ProcessImage image;
    if (s.ok()) {
      l.s = *std::move(s);
      if (l.s->has_trailer) {
        absl::StatusOr<TrailerBlocks> t = ParseTrailer(l.s->trailer);
        if (t.ok()) l.blocks = *std::move(t);
      }
      image.pid = l.s->pid;
      image.ppid = l.s->process.ppid;
      image.forked = l.s->fork.forked;
      image.fork_parent = l.s->fork.parent_pid;
      image.started_unix_ns = l.s->started_unix_ns;
      image.ended_by_exec = l.blocks && l.blocks->ended_by == "exec";
    } else {
      l.error = std::string(s.status().message());
    }
    captures.push_back(std::move(l));
    images.push_back(image);
  }
  std::vector<ProcessTreeRow> rows = ProcessTree(images);
  // Unreadable captures have no place in the tree: they go last.
  std::stable_partition(rows.begin(), rows.end(),
                        [&](const ProcessTreeRow& r) { return captures[r.image].s.has_value(); });
  UsageCounters sum;
  uint64_t largest_high_water = 0;
  size_t largest = 0;
  uint64_t events = 0;
  std::map<std::string, size_t> verdicts;  // by word, for the first line
  for (const Loaded& l : captures) {
    if (!l.s) {
      ++verdicts["unreadable"];
      continue;
    }
    ++verdicts[VerdictWord(*l.s)];
    const UsageCounters own = OwnAllocated(*l.s);
    sum.allocated_bytes += own.allocated_bytes;
    sum.allocated_count += own.allocated_count;
    if (l.s->totals.high_water_bytes >= largest_high_water) {
      largest_high_water = l.s->totals.high_water_bytes;
      largest = static_cast<size_t>(&l - captures.data());
    }
    events += l.s->events;
  }
  const bool any_unreadable = verdicts.count("unreadable") != 0;
  const FamilyHighWater together = HighestSum(live);
  int64_t first_start = 0;
  for (const Loaded& l : captures) {
    if (l.s && l.s->started_unix_ns != 0 &&
        (first_start == 0 || l.s->started_unix_ns < first_start)) {
      first_start = l.s->started_unix_ns;
    }
  }

  if (absl::GetFlag(FLAGS_json)) {
    std::string out;
    for (const ProcessTreeRow& r : rows) {
      const Loaded& l = captures[r.image];
      if (!l.s) {
        absl::StrAppend(&out, out.empty() ? "" : ",", "{\"capture\":", JsonQuote(l.path),
                        ",\"verdict\":\"unreadable\",\"error\":", JsonQuote(l.error), "}");
        continue;
      }
      std::vector<std::string> argv;
      for (const std::string& a : l.s->process.argv) argv.push_back(JsonQuote(a));
      absl::StrAppend(
          &out, out.empty() ? "" : ",", "{\"capture\":", JsonQuote(l.path), ",\"verdict\":\"",
          VerdictWord(*l.s), "\",\"filters\":",
          CaptureFilters::Of(*l.s, l.blocks ? &*l.blocks : nullptr).Json(), ",\"pid\":", l.s->pid, ",\"ppid\":",
          l.s->process.known ? absl::StrCat(l.s->process.ppid) : "null", ",\"how\":\"",
          RelationWord(r.relation), "\",\"parent\":",
          r.relation == ProcessRelation::kRoot ? "null" : JsonQuote(captures[r.parent].path),
          ",\"depth\":", r.depth, ",\"argv\":",
          l.s->process.known ? absl::StrCat("[", absl::StrJoin(argv, ","), "]") : "null",
          ",\"ended_by\":",
          l.blocks && !l.blocks->ended_by.empty() ? JsonQuote(l.blocks->ended_by) : "null",
          ",\"sampled\":", l.s->sampled ? "true" : "false", ",\"events\":", l.s->events,
          ",\"totals\":", JsonUsage(l.s->totals), ",\"own_allocated_bytes\":",
          OwnAllocated(*l.s).allocated_bytes, ",\"own_allocated_count\":",
          OwnAllocated(*l.s).allocated_count, "}");
    }
    printf("{\"command\":\"summary\",\"captures\":[%s],\"processes\":%zu,"
           "\"allocated_bytes\":%llu,\"allocated_count\":%llu,"
           "\"together_high_water\":{\"bytes\":%llu,\"unix_ns\":%lld,\"processes\":%zu},"
           "\"largest_high_water_bytes\":%llu,\"events\":%llu}\n",
           out.c_str(), captures.size(),
           static_cast<unsigned long long>(sum.allocated_bytes),
           static_cast<unsigned long long>(sum.allocated_count),
           static_cast<unsigned long long>(together.bytes), static_cast<long long>(together.t),
           together.processes,
           static_cast<unsigned long long>(largest_high_water),
           static_cast<unsigned long long>(events));
    return any_unreadable ? 2 : 0;
  }

  std::vector<std::string> counts;
  for (const auto& [word, n] : verdicts) counts.push_back(absl::StrCat(n, " ", word));
  printf("memtrace summary of %zu captures, one per process image: %s\n", captures.size(),
         absl::StrJoin(counts, ", ").c_str());
  std::vector<std::pair<std::string, CaptureFilters>> filtered;
  for (const Loaded& l : captures) {
    if (!l.s) continue;
    CaptureFilters f = CaptureFilters::Of(*l.s, l.blocks ? &*l.blocks : nullptr);
    if (f.any()) filtered.emplace_back(l.path, std::move(f));
  }
  PrintFamilyFiltersNote(filtered);
  // Past --limit, the largest rows by bytes allocated, flat: a tree cut anywhere would
  // hide where the rest hang.
  const bool cut = limit != 0 && rows.size() > static_cast<size_t>(limit);
  if (cut) {
    auto bytes = [&](const ProcessTreeRow& r) {
      return captures[r.image].s ? OwnAllocated(*captures[r.image].s).allocated_bytes : 0;
    };
    std::stable_sort(rows.begin(), rows.end(),
                     [&](const ProcessTreeRow& a, const ProcessTreeRow& b) {
                       return bytes(a) > bytes(b);
                     });
    rows.resize(static_cast<size_t>(limit));
  }
  int depth_max = 0;
  size_t capture_width = strlen("capture");
  for (const ProcessTreeRow& r : rows) {
    depth_max = std::max(depth_max, cut ? 0 : std::min(r.depth, 8));
    capture_width = std::max(capture_width, Basename(captures[r.image].path).size());
  }
  const int pid_width = 8 + 2 * depth_max;
  printf("\n%-*s %-7s %-8s %11s %11s %11s %10s %-9s %-10s %-*s %s\n", pid_width, "pid", "how",
         "parent", "allocated", "high-water", "live at end", "events", "ended by", "verdict",
         static_cast<int>(capture_width), "capture", "command");
  for (const ProcessTreeRow& r : rows) {
    const Loaded& l = captures[r.image];
    const std::string file = Basename(l.path);
    if (!l.s) {
      printf("%-*s %-7s %-8s %11s %11s %11s %10s %-9s %-10s %-*s\n", pid_width, "?", "", "", "",
             "", "", "", "", "unreadable", static_cast<int>(capture_width), file.c_str());
      continue;
    }
    const std::string pid =
        std::string(cut ? 0 : 2 * std::min(r.depth, 8), ' ') + absl::StrCat(l.s->pid);
    const std::string ended =
        l.blocks && !l.blocks->ended_by.empty() ? l.blocks->ended_by : "-";
    // An exec'd image's parent is the image before it, with the same pid.
    const std::string parent =
        r.relation == ProcessRelation::kForked || r.relation == ProcessRelation::kStarted
            ? absl::StrCat(captures[r.parent].s->pid)
            : "-";
    printf("%-*s %-7s %-8s %11s %11s %11s %10llu %-9s %-10s %-*s %s\n", pid_width, pid.c_str(),
           RelationWord(r.relation), parent.c_str(),
           FormatBytes(OwnAllocated(*l.s).allocated_bytes).c_str(),
           FormatBytes(l.s->totals.high_water_bytes).c_str(),
           FormatBytes(l.s->totals.live_bytes).c_str(),
           static_cast<unsigned long long>(l.s->events), ended.c_str(),
           VerdictWord(*l.s).c_str(), static_cast<int>(capture_width), file.c_str(),
           CommandText(l.s->process, 60).c_str());
  }
  printf("%-*s %-7s %-8s %11s %11s %11s %10llu\n", pid_width, "TOTAL", "", "",
         FormatBytes(sum.allocated_bytes).c_str(), FormatBytes(largest_high_water).c_str(), "",
         static_cast<unsigned long long>(events));
  if (cut) {
    printf("(the %d largest of %zu by bytes allocated; --limit=0 lists all, as a tree)\n",
           limit, captures.size());
  }
  printf("\nall processes together: %s live at their highest moment, %.1f ms after the "
         "first\n  capture began, in %zu process%s (summed at 1 ms resolution; a forked child "
         "counts the\n  blocks it inherited, as its parent does)\n",
         FormatBytes(together.bytes).c_str(),
         together.t > first_start && first_start != 0 ? (together.t - first_start) / 1e6 : 0.0,
         together.processes, together.processes == 1 ? "" : "es");
  printf("\nhow: root: no parent among these captures; forked: a traced fork of its parent\n"
         "  (--forks); exec: the image that replaced the one above it at its level, same pid\n"
         "  (--children); started: a program its parent ran (fork, then exec).\n"
         "allocated: what the process allocated itself (a forked child's capture begins\n"
         "  with the blocks it inherited, recorded as allocations: left out here).\n"
         "TOTAL: bytes allocated and events summed over the processes; high-water is the\n"
         "  largest of one process (%s, pid %llu): processes peak at different times.\n",
         Basename(captures[largest].path).c_str(),
         static_cast<unsigned long long>(captures[largest].s ? captures[largest].s->pid : 0));
  bool sampled = false;
  for (const Loaded& l : captures) sampled = sampled || (l.s && l.s->sampled);
  if (sampled) {
    printf("sampled estimate: some captures kept a sample; their bytes and counts are "
           "scaled\n");
  }
  for (const Loaded& l : captures) {
    if (!l.s) printf("memtrace summary: %s\n", l.error.c_str());
  }
  return any_unreadable ? 2 : 0;
}

}  // namespace

int SummaryCommand(int argc, char** argv) {
  ParsedArgs args;
  if (auto exit = ParseCommandFlags(kSummarySpec, argc, argv, &args)) return *exit;
  if (args.positional.size() > 1 && !args.dashdash) return FamilySummary(args.positional);
  if (auto exit = OneCapture(kSummarySpec, args)) return *exit;
  int exit = 0;
  const std::optional<SnapshotPoint> point = SummaryPoint(&exit);
  if (!point) return exit;
  const std::string& path = args.positional[0];
  auto s = Load(path, *point);
  if (!s.ok()) return InputError(kSummarySpec, std::string(s.status().message()));
  if (auto e = CheckReached(kSummarySpec, *s, *point)) return *e;
  const bool at_point = point->kind != SnapshotPoint::Kind::kEnd;
  // The trailer's blocks (analysis/trailer.h): what only the recording process knew.
  std::optional<TrailerBlocks> blocks;
  if (s->has_trailer) {
    absl::StatusOr<TrailerBlocks> t = ParseTrailer(s->trailer);
    if (!t.ok()) return InputError(kSummarySpec, absl::StrCat(path, ": ", t.status().message()));
    blocks = *std::move(t);
  }
  if (absl::GetFlag(FLAGS_json)) {
    auto raw = [](const std::string& json) { return json.empty() ? std::string("null") : json; };
    const std::string trailer_fields =
        blocks ? absl::StrCat(",\"integrity\":", raw(blocks->integrity_json),
                              ",\"sink\":", raw(blocks->sink_json),
                              ",\"memtrace_bytes\":", blocks->memtrace_bytes,
                              ",\"memtrace_memory\":", raw(blocks->memtrace_memory_json),
                              ",\"memtrace_cpu_ns\":", raw(blocks->memtrace_cpu_json),
                              ",\"forks\":", blocks->forks, ",\"before_start\":{\"freed_blocks\":",
                              blocks->prestart_freed, ",\"freed_bytes\":",
                              blocks->prestart_freed_bytes, ",\"untracked_blocks\":",
                              blocks->prestart_untracked, "}")
               : std::string(",\"integrity\":null,\"sink\":null,\"memtrace_bytes\":null,"
                             "\"memtrace_memory\":null,\"memtrace_cpu_ns\":null,\"forks\":null,"
                             "\"before_start\":null");
    std::string layers;
    for (const auto& [id, usage] : s->layers) {
      absl::StrAppend(&layers, layers.empty() ? "" : ",", "{\"id\":", id,
                      ",\"name\":", JsonQuote(LayerName(*s, id)), ",\"usage\":", JsonUsage(usage),
                      "}");
    }
    const ForkOrigin& f = s->fork;
    const std::string fork =
        f.forked ? absl::StrCat("{\"parent_pid\":", f.parent_pid, ",\"inherited_blocks\":",
                                f.inherited_blocks, ",\"inherited_bytes\":", f.inherited_bytes,
                                f.stacks_known
                                    ? absl::StrCat(",\"inherited_without_stack\":",
                                                   f.inherited_without_stack)
                                    : "",
                                ",\"unpublished_records\":", f.unpublished_records, "}")
                 : "null";
    printf("{%s,\"has_trailer\":%s,\"complete\":%s,\"source\":%s,\"fork\":%s,"
           "\"unmatched_releases\":%llu,"
           "\"live_blocks\":%llu,\"snapshot\":%s,\"totals\":%s,\"scopes\":[%s],\"layers\":[%s]%s}\n",
           JsonHead("summary", path, *s).c_str(), s->has_trailer ? "true" : "false",
           s->has_trailer && s->trailer_complete ? "true" : "false",
           JsonQuote(s->source).c_str(), fork.c_str(),
           static_cast<unsigned long long>(s->unmatched_releases),
           static_cast<unsigned long long>(s->live_blocks),
           at_point ? absl::StrCat("{\"point\":", JsonQuote(point->text), ",\"events_applied\":",
                                   s->events_applied, ",\"t\":", s->snapshot_t, "}")
                          .c_str()
                    : "null",
           JsonUsage(s->totals).c_str(), JsonScopeUsages(*s).c_str(), layers.c_str(),
           trailer_fields.c_str());
    return 0;
  }
  if (at_point) {
    printf("(state at %s: after event %llu of %llu)\n", PointDescription(*point).c_str(),
           static_cast<unsigned long long>(s->events_applied),
           static_cast<unsigned long long>(s->events));
  }
  PrintTable(*s, path);
  PrintIntegrity(blocks, CaptureFilters::Of(*s, blocks ? &*blocks : nullptr));
  PrintExecNote(blocks, path, s->trace_children);
  PrintSignalNote(blocks);
  PrintShadowNote(*s);
  PrintForkNote(*s);
  PrintUntracedForksNote(blocks, s->trace_children, s->trace_forks);
  PrintBeforeStartNote(blocks);
  PrintSiteOverflowNote(blocks, *s);
  return 0;
}

// ---- verify -----------------------------------------------------------------------------

// One capture's verdict (VerifyCommand): 0 complete, 1 a finding, 2 unreadable.
int VerifyCapture(const std::string& path);

int VerifyCommand(int argc, char** argv) {
  ParsedArgs args;
  if (auto exit = ParseCommandFlags(kVerifySpec, argc, argv, &args)) return *exit;
  if (args.positional.size() > 1 && !args.dashdash) {
    // Each capture in turn (with --json, one object per line); the worst verdict wins.
    int worst = 0;
    for (const std::string& path : args.positional) {
      const int exit = VerifyCapture(path);
      worst = std::max(worst, exit);
      fflush(stdout);
    }
    return worst;
  }
  if (auto exit = OneCapture(kVerifySpec, args)) return *exit;
  return VerifyCapture(args.positional[0]);
}

int VerifyCapture(const std::string& path) {
  const auto s = Load(path);
  if (!s.ok()) return InputError(kVerifySpec, std::string(s.status().message()));
  std::vector<std::string> problems;
  const bool preload = s->source == "preload";
  if (absl::GetFlag(FLAGS_expect_preload) && !preload) {
    problems.push_back(absl::StrCat(
        "the interposer was not loaded (header source is \"", s->source,
        "\", not \"preload\": was libmemtrace_preload.so in LD_PRELOAD of the program?)"));
  }
  if (preload && !s->malloc_from.empty()) {
    problems.push_back(absl::StrCat(
        "the program's calls to malloc and free reached the allocator of ", s->malloc_from,
        ", which came before the interposer: the capture holds only what reached the "
        "interposer by other calls, and the frees of those blocks may be missing. Preload "
        "libmemtrace_preload.so first, or trace a build of the program that uses the C "
        "library's malloc"));
  } else if (s->events == 0) {
    problems.push_back(
        preload ? "the interposer was loaded but recorded no allocations (did the program "
                  "allocate above the interposer's min_size, in a process it traces?)"
                : "it has no memory events (was the tracer started, and the sink attached "
                  "before Start()?)");
  }
  // Not a loss of this capture's own records: said, not failed.
  std::vector<std::string> notes;
  if (s->fork.unpublished_records != 0) {
    notes.push_back(absl::StrCat(
        "the process was forked from pid ", s->fork.parent_pid, " while ",
        s->fork.unpublished_records, " records of the parent's other threads were being "
        "written; the blocks it inherited lack those operations (those threads are not in "
        "this process, and the parent's capture has them)"));
  }
  if (s->being_written) {
    problems.push_back(
        "it is still being written: a running process holds its capture lock, and the "
        "trailer comes when that process exits. Run verify again after it has ended (a "
        "server traced with --forks: stop it, or the worker that writes this capture)");
  } else if (!s->has_trailer) {
    problems.push_back(
        preload ? "it is truncated: there is no trailer. The process ended without running "
                  "its exit handlers: it was killed (SIGKILL, the OOM killer), or it ended "
                  "with the exit_group system call itself, as Go programs do. The capture "
                  "holds what was written until then; the records of the last few "
                  "milliseconds are lost"
                : "it is truncated: there is no trailer (the program or the sink stopped "
                  "before Finish())");
  } else if (!s->trailer_complete) {
    // The interposer names what ended the capture; a fatal signal means the program
    // crashed, and everything before the crash is in the capture. (A trailer whose
    // counters cannot be read names nothing: the capture is partial all the same.)
    const TrailerBlocks t = ParseTrailer(s->trailer).value_or(TrailerBlocks{});
    if (t.ended_by.rfind("signal ", 0) == 0) {
      problems.push_back(absl::StrCat(
          "it is partial: the program ended by ", t.ended_by,
          "; the capture holds everything recorded up to it, but blocks live then are not "
          "leaks"));
    } else if (t.LostOnlyPastTheSizeLimit()) {
      problems.push_back(absl::StrCat(
          "it is partial, as its size limit asked: the capture reached ",
          FormatBytes(t.max_bytes), " (--max-size, MEMTRACE_MAX_BYTES) and the ",
          t.events_past_limit, " events after that were not written. The events before it "
          "are whole, and the trailer's totals and integrity cover the whole run "
          "(`memtrace summary` prints both); raise the limit to keep more"));
    } else {
      const std::vector<std::string> losses = t.Losses();
      problems.push_back(absl::StrCat(
          "it is partial: the trailer reports lost records",
          losses.empty() ? "" : absl::StrCat(" (", absl::StrJoin(losses, ", "), ")"),
          "; `memtrace summary` prints the whole integrity block"));
    }
  }
  // What the recording filters left out: asked for, so never a finding, but always said
  // (the JSON head carries them as "filters" too).
  const CaptureFilters filters = FiltersOf(*s);
  if (absl::GetFlag(FLAGS_json)) {
    std::vector<std::string> quoted;
    for (const std::string& p : problems) quoted.push_back(JsonQuote(p));
    std::vector<std::string> quoted_notes;
    for (const std::string& n : notes) quoted_notes.push_back(JsonQuote(n));
    for (const std::string& f : filters.Statements()) {
      quoted_notes.push_back(JsonQuote(absl::StrCat("filtered: ", f)));
    }
    printf("{%s,\"ok\":%s,\"source\":%s,\"problems\":[%s],\"notes\":[%s]}\n",
           JsonHead("verify", path, *s).c_str(), problems.empty() ? "true" : "false",
           JsonQuote(s->source).c_str(), absl::StrJoin(quoted, ",").c_str(),
           absl::StrJoin(quoted_notes, ",").c_str());
    return problems.empty() ? 0 : 1;
  }
  if (problems.empty()) {
    printf("memtrace verify: %s is complete: %llu memory events, nothing lost%s\n",
           path.c_str(), static_cast<unsigned long long>(s->events),
           filters.VerdictSuffix().c_str());
    for (const std::string& n : notes) printf("memtrace verify: note: %s\n", n.c_str());
    return 0;
  }
  for (const std::string& p : problems) {
    printf("memtrace verify: %s FAILED: %s\n", path.c_str(), p.c_str());
  }
  for (const std::string& f : filters.Statements()) {
    printf("memtrace verify: note: filtered: %s\n", f.c_str());
  }
  return 1;
}

// ---- top --------------------------------------------------------------------------------

// `memtrace top A B ...`: the rows of every capture added up by site name, scope and
// layer (addresses differ between programs, and between runs of one under ASLR; names do
// not). The scope "(inherited at fork)" is left out: those blocks were allocated by the
// parent, whose capture counts them.
int FamilyTop(const std::vector<std::string>& paths, const std::string& by, size_t limit,
              const AllocatorFunctions& allocators) {
  struct Row {
    std::string name;
    std::string scope;
    std::string layer;
    UsageCounters usage;
    uint64_t temporaries = 0;
    size_t processes = 0;
    size_t last_capture = SIZE_MAX;  // the capture that last added to it
    std::vector<std::string> stack;  // symbolized, from the first capture that had it
  };
  const bool stacks = absl::GetFlag(FLAGS_stacks);
  std::map<std::tuple<std::string, std::string, std::string>, Row> rows;
  std::vector<std::string> errors;
  std::map<std::string, size_t> verdicts;
  std::vector<std::pair<std::string, CaptureFilters>> filtered;
  bool sampled = false;
  SharedSymbolizers symbolizers;
  for (size_t c = 0; c < paths.size(); ++c) {
    absl::StatusOr<CaptureSummary> s = Load(paths[c]);
    if (!s.ok()) {
      errors.push_back(std::string(s.status().message()));
      ++verdicts["unreadable"];
      continue;
    }
    ++verdicts[VerdictWord(*s)];
    if (CaptureFilters f = FiltersOf(*s); f.any()) filtered.emplace_back(paths[c], std::move(f));
    sampled = sampled || s->sampled;
    SiteNamer names(*s, allocators, symbolizers.For(*s));
    for (const AllocationAttribution& a : s->attribution) {
      const std::string scope = ScopeName(*s, a.scope);
      if (s->fork.forked && scope == "(inherited at fork)") continue;
      Row& row = rows[{names.Name(a.site), scope, LayerName(*s, a.layer)}];
      if (row.processes == 0) {
        row.name = names.Name(a.site);
        row.scope = scope;
        row.layer = LayerName(*s, a.layer);
      }
      if (row.last_capture != c) ++row.processes, row.last_capture = c;
      row.usage.AddCounts(a.usage);  // high-water unused: `top` shows none
      row.temporaries += a.temporaries;
      if (stacks && row.stack.empty()) {
        for (uint64_t pc : names.Frames(a.site)) row.stack.push_back(names.Describe(pc));
      }
    }
  }
  std::vector<const Row*> order;
  for (const auto& [key, row] : rows) order.push_back(&row);
  auto key = [&](const Row* r) {
    if (by == "count") return r->usage.allocated_count;
    if (by == "live") return r->usage.live_bytes;
    if (by == "temporaries") return r->temporaries;
    return r->usage.allocated_bytes;
  };
  // Ties in the map's (name, scope, layer) order: stable.
  std::stable_sort(order.begin(), order.end(),
                   [&](const Row* a, const Row* b) { return key(a) > key(b); });
  const size_t shown = std::min(limit, order.size());
  std::vector<std::string> counts;
  for (const auto& [word, n] : verdicts) counts.push_back(absl::StrCat(n, " ", word));
  if (absl::GetFlag(FLAGS_json)) {
    std::string out;
    for (size_t i = 0; i < shown; ++i) {
      const Row& r = *order[i];
      std::vector<std::string> frames;
      for (const std::string& f : r.stack) frames.push_back(JsonQuote(f));
      absl::StrAppend(&out, i == 0 ? "" : ",", "{\"name\":", JsonQuote(r.name),
                      stacks ? absl::StrCat(",\"frames\":[", absl::StrJoin(frames, ","), "]")
                             : "",
                      ",\"scope\":", JsonQuote(r.scope), ",\"layer\":", JsonQuote(r.layer),
                      ",\"processes\":", r.processes, ",\"usage\":", JsonUsage(r.usage),
                      ",\"temporaries\":", r.temporaries, "}");
    }
    std::vector<std::string> quoted;
    for (const std::string& p : paths) quoted.push_back(JsonQuote(p));
    std::vector<std::string> quoted_errors;
    for (const std::string& e : errors) quoted_errors.push_back(JsonQuote(e));
    printf("{\"command\":\"top\",\"captures\":[%s],\"sampled\":%s,\"by\":%s,"
           "\"rows\":[%s],\"more_rows\":%zu,\"errors\":[%s]}\n",
           absl::StrJoin(quoted, ",").c_str(), sampled ? "true" : "false",
           JsonQuote(by).c_str(), out.c_str(), order.size() - shown,
           absl::StrJoin(quoted_errors, ",").c_str());
    return errors.empty() ? 0 : 2;
  }
  printf("memtrace top of %zu captures by %s, added up over the processes: %s\n", paths.size(),
         by.c_str(), absl::StrJoin(counts, ", ").c_str());
  PrintFamilyFiltersNote(filtered);
  if (sampled) {
    printf("sampled estimate: some captures kept a sample; their bytes and counts are "
           "scaled\n");
  }
  printf("\n");
  const char* row = "%11s %10s %11s %9s %11s %9s  %-28s %-10s %s\n";
  printf(row, "allocated", "allocs", "live", "blocks", "temporaries", "processes", "scope",
         "layer", "site");
  for (size_t i = 0; i < shown; ++i) {
    const Row& r = *order[i];
    printf(row, FormatBytes(r.usage.allocated_bytes).c_str(),
           absl::StrCat(r.usage.allocated_count).c_str(), FormatBytes(r.usage.live_bytes).c_str(),
           absl::StrCat(r.usage.live_count).c_str(), absl::StrCat(r.temporaries).c_str(),
           absl::StrCat(r.processes).c_str(), r.scope.c_str(), r.layer.c_str(), r.name.c_str());
    for (size_t f = 0; f < r.stack.size(); ++f) printf("    #%-2zu %s\n", f, r.stack[f].c_str());
  }
  if (order.size() > shown) printf("(%zu more rows; --limit=N shows more)\n", order.size() - shown);
  PrintUnresolvedNote(symbolizers.Unresolved());
  for (const std::string& e : errors) printf("memtrace top: %s\n", e.c_str());
  return errors.empty() ? 0 : 2;
}

int TopCommand(int argc, char** argv) {
  ParsedArgs args;
  if (auto exit = ParseCommandFlags(kTopSpec, argc, argv, &args)) return *exit;
  if (args.positional.size() <= 1 || args.dashdash) {
    if (auto exit = OneCapture(kTopSpec, args)) return *exit;
  }
  const std::string by = absl::GetFlag(FLAGS_by);
  if (by != "bytes" && by != "count" && by != "live" && by != "temporaries") {
    return UsageError(kTopSpec, absl::StrCat("--by must be bytes, count, live or temporaries, "
                                             "not '", by, "'"));
  }
  if (absl::GetFlag(FLAGS_limit) < 1) return UsageError(kTopSpec, "--limit must be at least 1");
  const size_t limit = static_cast<size_t>(absl::GetFlag(FLAGS_limit));
  AllocatorFunctions allocators;
  if (auto exit = ParseAllocators(kTopSpec, &allocators)) return *exit;
  if (args.positional.size() > 1) return FamilyTop(args.positional, by, limit, allocators);
  const std::string& path = args.positional[0];
  auto s = Load(path);
  if (!s.ok()) return InputError(kTopSpec, std::string(s.status().message()));
  auto key = [&](const UsageCounters& usage, uint64_t temporaries) {
    if (by == "count") return usage.allocated_count;
    if (by == "live") return usage.live_bytes;
    if (by == "temporaries") return temporaries;
    return usage.allocated_bytes;
  };
  SiteNamer names(*s, std::move(allocators));
  constexpr size_t kStacksPerRow = 5;  // --stacks: the largest of a row's stacks
  // Stacks that read the same (one function, reached from several callers) are one row
  // (analysis/site_groups.h), its stacks largest first.
  const std::vector<SiteGroup> groups = GroupSitesByName(
      s->attribution, [&](uint32_t site) { return names.Name(site); }, key);
  const bool stacks = absl::GetFlag(FLAGS_stacks);
  const size_t shown = std::min(limit, groups.size());
  if (absl::GetFlag(FLAGS_json)) {
    auto frames = [&](uint32_t site) {
      std::string out;
      for (uint64_t pc : names.Frames(site)) {
        absl::StrAppend(&out, out.empty() ? "" : ",", names.JsonFrame(pc));
      }
      return absl::StrCat("[", out, "]");
    };
    std::string out;
    for (size_t i = 0; i < shown; ++i) {
      const SiteGroup& g = groups[i];
      const AllocationAttribution& first = g.stacks.front();
      std::string members;
      std::string first_frames;  // --stacks: the largest stack's, kept for the row itself
      for (const AllocationAttribution& a : g.stacks) {
        std::string f;
        if (stacks) {
          f = absl::StrCat(",\"frames\":", frames(a.site));
          if (first_frames.empty()) first_frames = f;
        }
        absl::StrAppend(&members, members.empty() ? "" : ",", "{\"site\":", a.site,
                        ",\"addr\":\"", Hex(a.site_addr), "\"", f,
                        ",\"usage\":", JsonUsage(a.usage), ",\"temporaries\":", a.temporaries,
                        "}");
      }
      // "site", "addr" and "frames": the group's largest stack, as before groups.
      absl::StrAppend(&out, i == 0 ? "" : ",", "{\"site\":", first.site, ",\"addr\":\"",
                      Hex(first.site_addr), "\",\"name\":", JsonQuote(g.name), first_frames,
                      ",\"scope\":", JsonQuote(ScopeName(*s, g.scope)),
                      ",\"layer\":", JsonQuote(LayerName(*s, g.layer)),
                      ",\"usage\":", JsonUsage(g.usage), ",\"temporaries\":", g.temporaries,
                      ",\"stacks\":[", members, "]}");
    }
    printf("{%s,\"by\":%s,\"rows\":[%s],\"more_rows\":%zu,\"unresolved\":%s}\n",
           JsonHead("top", path, *s).c_str(), JsonQuote(by).c_str(), out.c_str(),
           groups.size() - shown, UnresolvedJson(names.Unresolved()).c_str());
    return 0;
  }
  printf("memtrace top of %s by %s: capture %s\n", path.c_str(), by.c_str(), Verdict(*s).c_str());
  PrintSampledNote(*s);
  printf("\n");
  const char* row = "%11s %10s %11s %9s %11s  %-28s %-10s %s\n";
  printf(row, "allocated", "allocs", "live", "blocks", "temporaries", "scope", "layer", "site");
  auto print_frames = [&](uint32_t site) {
    const std::vector<uint64_t> frames = names.Frames(site);
    for (size_t f = 0; f < frames.size(); ++f) {
      // The functions inlined into this frame's, innermost first, as gdb lists them.
      for (const InlinedFrame& in : names.Inlined(frames[f])) {
        printf("    #%-2zu %s [inlined]\n", f, DescribeInlined(in).c_str());
      }
      printf("    #%-2zu %s\n", f, names.Describe(frames[f]).c_str());
    }
  };
  for (size_t i = 0; i < shown; ++i) {
    const SiteGroup& g = groups[i];
    printf(row, FormatBytes(g.usage.allocated_bytes).c_str(),
           absl::StrCat(g.usage.allocated_count).c_str(), FormatBytes(g.usage.live_bytes).c_str(),
           absl::StrCat(g.usage.live_count).c_str(), absl::StrCat(g.temporaries).c_str(),
           ScopeName(*s, g.scope).c_str(), LayerName(*s, g.layer).c_str(),
           (g.name + StacksNote(g.stacks.size())).c_str());
    if (!stacks) continue;
    if (g.stacks.size() == 1) {
      print_frames(g.stacks[0].site);
      continue;
    }
    const size_t listed = std::min(g.stacks.size(), kStacksPerRow);
    for (size_t k = 0; k < listed; ++k) {
      const AllocationAttribution& a = g.stacks[k];
      printf("  stack %zu of %zu: %s in %llu allocations, %s in %llu blocks live, "
             "%llu temporaries\n",
             k + 1, g.stacks.size(), FormatBytes(a.usage.allocated_bytes).c_str(),
             static_cast<unsigned long long>(a.usage.allocated_count),
             FormatBytes(a.usage.live_bytes).c_str(),
             static_cast<unsigned long long>(a.usage.live_count),
             static_cast<unsigned long long>(a.temporaries));
      print_frames(a.site);
    }
    if (listed < g.stacks.size()) {
      UsageCounters rest;
      for (size_t k = listed; k < g.stacks.size(); ++k) rest.AddCounts(g.stacks[k].usage);
      printf("  (%zu more stacks, %s in %llu allocations: --json lists them all, memtrace "
             "export --format=folded gives every stack's bytes)\n",
             g.stacks.size() - listed, FormatBytes(rest.allocated_bytes).c_str(),
             static_cast<unsigned long long>(rest.allocated_count));
    }
  }
  if (groups.size() > shown) {
    printf("(%zu more rows; --limit=N shows more)\n", groups.size() - shown);
  }
  PrintUnresolvedNote(names.Unresolved());
  return 0;
}

// ---- peak -------------------------------------------------------------------------------

int PeakCommand(int argc, char** argv) {
  ParsedArgs args;
  if (auto exit = ParseCommandFlags(kPeakSpec, argc, argv, &args)) return *exit;
  if (auto exit = OneCapture(kPeakSpec, args)) return *exit;
  if (absl::GetFlag(FLAGS_limit) < 1) return UsageError(kPeakSpec, "--limit must be at least 1");
  const size_t limit = static_cast<size_t>(absl::GetFlag(FLAGS_limit));
  AllocatorFunctions allocators;
  if (auto exit = ParseAllocators(kPeakSpec, &allocators)) return *exit;
  const std::string& path = args.positional[0];
  const auto s = Load(path);
  if (!s.ok()) return InputError(kPeakSpec, std::string(s.status().message()));
  std::vector<uint32_t> only;
  const std::string scope = absl::GetFlag(FLAGS_scope);
  if (!scope.empty()) {
    for (const auto& [id, p] : s->scope_paths) {
      if (p == scope) only.push_back(id);
    }
    if (only.empty()) {
      std::vector<std::string> known;
      for (const auto& [id, usage] : s->scopes) known.push_back(ScopeName(*s, id));
      return InputError(kPeakSpec, absl::StrCat("no scope '", scope, "' in ", path,
                                                " (its scopes: ", absl::StrJoin(known, ", "), ")"));
    }
  }
  // One more reading finds the global moment's composition and each scope's.
  absl::StatusOr<Analyzer::Peaks> peaks;
  {
    ProgressBar bar(path, "finding the peaks");
    peaks = Analyzer::PeaksOf(path, *s, only, [&bar](uint64_t bytes) { bar.Update(bytes); });
  }
  if (!peaks.ok()) return InputError(kPeakSpec, std::string(peaks.status().message()));
  const PeakComposition* const peak = &peaks->global;
  const std::vector<ScopePeak>* const scope_peaks = &peaks->scopes;
  // The peaks' intervals (the Analyzer gives the replayed counters the trailer's). The
  // moment shown is the replayed peak's: the capture's order is the one the recorder
  // applied, so its high-water is that moment's live bytes.
  const UsageCounters& totals = s->totals;
  const std::map<uint32_t, UsageCounters>& scope_usage = s->scopes;
  auto bound_json = [](const UsageCounters& u) {
    return absl::StrCat(",\"high_water_low_bytes\":", u.high_water_low_bytes,
                        ",\"high_water_high_bytes\":",
                        u.high_water_bounded() ? absl::StrCat(u.high_water_high_bytes)
                                               : std::string("null"));
  };
  auto bound_text = [](const UsageCounters& u) {
    if (!u.high_water_bounded()) return std::string("no bound (the capture has none)");
    if (u.high_water_exact()) return std::string("exact");
    return absl::StrCat("the true peak lies in [", FormatBytes(u.high_water_low_bytes), ", ",
                        FormatBytes(u.high_water_high_bytes), "]");
  };
  auto scope_counters = [&](uint32_t id) {
    const auto it = scope_usage.find(id);
    return it == scope_usage.end() ? UsageCounters{} : it->second;
  };
  const size_t scopes_shown = std::min(limit, scope_peaks->size());
  const size_t kSitesPerScope = 5;
  SiteNamer names(*s, std::move(allocators));
  const auto name = [&](uint32_t site) { return names.Name(site); };
  const std::vector<NamedSiteBytes> peak_sites = GroupSiteBytesByName(peak->by_site, name);
  if (absl::GetFlag(FLAGS_json)) {
    auto scopes = [&](const std::vector<std::pair<uint32_t, uint64_t>>& v) {
      std::string out;
      for (const auto& [id, bytes] : v) {
        absl::StrAppend(&out, out.empty() ? "" : ",", "{\"scope\":",
                        JsonQuote(ScopeName(*s, id)), ",\"live_bytes\":", bytes, "}");
      }
      return out;
    };
    // "site": the group's largest stack; "sites": all of them.
    auto sites = [&](const std::vector<NamedSiteBytes>& v, size_t cap) {
      std::string out;
      for (size_t i = 0; i < v.size() && i < cap; ++i) {
        absl::StrAppend(&out, i == 0 ? "" : ",", "{\"site\":", v[i].sites.front(),
                        ",\"sites\":[", absl::StrJoin(v[i].sites, ","),
                        "],\"name\":", JsonQuote(v[i].name), ",\"live_bytes\":", v[i].bytes,
                        "}");
      }
      return out;
    };
    std::string per_scope;
    for (size_t i = 0; i < scopes_shown; ++i) {
      const ScopePeak& p = (*scope_peaks)[i];
      const std::vector<NamedSiteBytes> scope_sites = GroupSiteBytesByName(p.composition.by_site, name);
      absl::StrAppend(&per_scope, i == 0 ? "" : ",", "{\"scope\":", JsonQuote(ScopeName(*s, p.scope)),
                      ",\"event_index\":", p.event_index, ",\"t\":", p.t,
                      ",\"live_bytes\":", p.composition.live_bytes,
                      bound_json(scope_counters(p.scope)),
                      ",\"total_live_bytes\":", p.total_live_bytes, ",\"by_site\":[",
                      sites(scope_sites, kSitesPerScope), "],\"more_sites\":",
                      scope_sites.size() - std::min(kSitesPerScope, scope_sites.size()), "}");
    }
    printf("{%s,\"event_index\":%llu,\"t\":%lld,\"live_bytes\":%llu%s,\"by_scope\":[%s],"
           "\"by_site\":[%s],\"more_sites\":%zu,\"scope_peaks\":[%s],\"more_scopes\":%zu,"
           "\"unresolved\":%s}\n",
           JsonHead("peak", path, *s).c_str(), static_cast<unsigned long long>(peak->event_index),
           static_cast<long long>(peak->t), static_cast<unsigned long long>(peak->live_bytes),
           bound_json(totals).c_str(),
           scopes(peak->by_scope).c_str(), sites(peak_sites, limit).c_str(),
           peak_sites.size() - std::min(limit, peak_sites.size()), per_scope.c_str(),
           scope_peaks->size() - scopes_shown, UnresolvedJson(names.Unresolved()).c_str());
    return 0;
  }
  printf("memtrace peak of %s: capture %s\n", path.c_str(), Verdict(*s).c_str());
  PrintSampledNote(*s);
  printf("global high-water: %s live after event %llu of %llu; %s\n\n",
         FormatBytes(peak->live_bytes).c_str(), static_cast<unsigned long long>(peak->event_index),
         static_cast<unsigned long long>(s->events), bound_text(totals).c_str());
  printf("%-40s %11s %7s\n", "by scope", "live", "share");
  for (const auto& [id, bytes] : peak->by_scope) {
    printf("%-40s %11s %6.1f%%\n", ScopeName(*s, id).c_str(), FormatBytes(bytes).c_str(),
           Share(bytes, peak->live_bytes));
  }
  printf("\n%11s %7s  %s\n", "live", "share", "by call site");
  for (size_t i = 0; i < peak_sites.size() && i < limit; ++i) {
    const NamedSiteBytes& g = peak_sites[i];
    printf("%11s %6.1f%%  %s%s\n", FormatBytes(g.bytes).c_str(), Share(g.bytes, peak->live_bytes),
           g.name.c_str(), StacksNote(g.sites.size()).c_str());
  }
  if (peak_sites.size() > limit) {
    printf("(%zu more sites; --limit=N shows more)\n", peak_sites.size() - limit);
  }
  printf("\neach scope at its own high-water moment (scope's live bytes, by site)\n");
  for (size_t i = 0; i < scopes_shown; ++i) {
    const ScopePeak& p = (*scope_peaks)[i];
    printf("\n%s: %s live after event %llu (all scopes: %s); %s\n",
           ScopeName(*s, p.scope).c_str(), FormatBytes(p.composition.live_bytes).c_str(),
           static_cast<unsigned long long>(p.event_index), FormatBytes(p.total_live_bytes).c_str(),
           bound_text(scope_counters(p.scope)).c_str());
    const std::vector<NamedSiteBytes> sites = GroupSiteBytesByName(p.composition.by_site, name);
    for (size_t k = 0; k < sites.size() && k < kSitesPerScope; ++k) {
      printf("  %11s %6.1f%%  %s%s\n", FormatBytes(sites[k].bytes).c_str(),
             Share(sites[k].bytes, p.composition.live_bytes), sites[k].name.c_str(),
             StacksNote(sites[k].sites.size()).c_str());
    }
    if (sites.size() > kSitesPerScope) {
      printf("  (%zu more sites)\n", sites.size() - kSitesPerScope);
    }
  }
  if (scope_peaks->size() > scopes_shown) {
    printf("\n(%zu more scopes; --limit=N or --scope=PATH shows them)\n",
           scope_peaks->size() - scopes_shown);
  }
  PrintUnresolvedNote(names.Unresolved());
  return 0;
}

// ---- retention --------------------------------------------------------------------------

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
  return 0;
}

// ---- diff -------------------------------------------------------------------------------

// Two captures of different programs (by the interposer's headers): a diff of them is
// rarely what was meant, as when one capture of a process family is another program's.
void PrintDifferentProgramsNote(const CaptureSummary& before, const CaptureSummary& after) {
  if (!before.process.known || !after.process.known || before.process.argv.empty() ||
      after.process.argv.empty()) {
    return;
  }
  const std::string a = Basename(before.process.argv[0]);
  const std::string b = Basename(after.process.argv[0]);
  if (a == b) return;
  printf("note: these are captures of two programs, '%s' before and '%s' after; the rows\n"
         "  compare their scopes by name. Was another capture meant (`memtrace summary` of\n"
         "  each names its command)?\n",
         a.c_str(), b.c_str());
}

int DiffCommand(int argc, char** argv) {
  ParsedArgs args;
  if (auto exit = ParseCommandFlags(kDiffSpec, argc, argv, &args)) return *exit;
  if (args.positional.empty() || args.positional.size() > 2 || args.dashdash) {
    return UsageError(kDiffSpec, "give two captures (BEFORE AFTER), or one capture with "
                                 "--from and --to");
  }
  const std::string before_path = args.positional[0];
  const std::string after_path = args.positional.size() == 2 ? args.positional[1] : before_path;
  if (args.positional.size() == 1 && absl::GetFlag(FLAGS_from) == absl::GetFlag(FLAGS_to)) {
    return UsageError(kDiffSpec, "with one capture, --from and --to must name two different "
                                 "points (e.g. --from=scope-exit=frame#1 --to=end)");
  }
  auto from = ParseSnapshotPoint(absl::GetFlag(FLAGS_from));
  if (!from.ok()) return UsageError(kDiffSpec, absl::StrCat("--from: ", from.status().message()));
  auto to = ParseSnapshotPoint(absl::GetFlag(FLAGS_to));
  if (!to.ok()) return UsageError(kDiffSpec, absl::StrCat("--to: ", to.status().message()));
  const auto before = Load(before_path, *from);
  if (!before.ok()) return InputError(kDiffSpec, std::string(before.status().message()));
  if (auto e = CheckReached(kDiffSpec, *before, *from)) return *e;
  const auto after = Load(after_path, *to);
  if (!after.ok()) return InputError(kDiffSpec, std::string(after.status().message()));
  if (auto e = CheckReached(kDiffSpec, *after, *to)) return *e;
  const std::vector<Difference> rows = Compare(*before, *after);
  auto label = [](const std::string& path, const SnapshotPoint& p) {
    return p.kind == SnapshotPoint::Kind::kEnd ? path
                                               : absl::StrCat(path, " at ", PointDescription(p));
  };
  if (absl::GetFlag(FLAGS_json)) {
    std::string out;
    for (const Difference& d : rows) {
      absl::StrAppend(&out, out.empty() ? "" : ",", "{\"path\":", JsonQuote(d.path),
                      ",\"before\":", JsonUsage(d.before), ",\"after\":", JsonUsage(d.after),
                      ",\"live_delta\":", d.live_delta(),
                      ",\"high_water_delta\":", d.high_water_delta(),
                      ",\"allocated_delta\":", d.allocated_delta(), "}");
    }
    printf("{\"command\":\"diff\",\"before\":%s,\"before_verdict\":\"%s\","
           "\"before_filters\":%s,\"after\":%s,\"after_verdict\":\"%s\",\"after_filters\":%s,"
           "\"sampled\":%s,\"rows\":[%s]}\n",
           JsonQuote(label(before_path, *from)).c_str(), VerdictWord(*before).c_str(),
           FiltersOf(*before).Json().c_str(), JsonQuote(label(after_path, *to)).c_str(),
           VerdictWord(*after).c_str(), FiltersOf(*after).Json().c_str(),
           before->sampled || after->sampled ? "true" : "false", out.c_str());
    return 0;
  }
  printf("memtrace diff: %s (%s) -> %s (%s)\n", label(before_path, *from).c_str(),
         Verdict(*before).c_str(), label(after_path, *to).c_str(), Verdict(*after).c_str());
  PrintDifferentProgramsNote(*before, *after);
  PrintSampledNote(before->sampled ? *before : *after);
  printf("\n");
  const char* row = "%-40s %12s %12s %12s %14s %12s\n";
  printf(row, "scope", "live before", "live after", "live change", "high-water +/-",
         "allocated +/-");
  for (const Difference& d : rows) {
    printf(row, d.path.c_str(), FormatBytes(d.before.live_bytes).c_str(),
           FormatBytes(d.after.live_bytes).c_str(), Signed(d.live_delta()).c_str(),
           Signed(d.high_water_delta()).c_str(), Signed(d.allocated_delta()).c_str());
  }
  return 0;
}

// ---- coverage ---------------------------------------------------------------------------

int CoverageCommand(int argc, char** argv) {
  ParsedArgs args;
  if (auto exit = ParseCommandFlags(kCoverageSpec, argc, argv, &args)) return *exit;
  if (auto exit = OneCapture(kCoverageSpec, args)) return *exit;
  const std::string& path = args.positional[0];
  const auto s = Load(path);
  if (!s.ok()) return InputError(kCoverageSpec, std::string(s.status().message()));
  const Coverage& c = s->coverage;
  if (absl::GetFlag(FLAGS_json)) {
    printf("{%s,\"allocated_scoped\":%llu,\"allocated_unscoped\":%llu,\"live_scoped\":%llu,"
           "\"live_unscoped\":%llu,\"census_bytes\":%lld,\"census_entries\":%llu,"
           "\"live_bytes\":%llu,\"temporaries\":%llu,\"temporary_bytes\":%llu}\n",
           JsonHead("coverage", path, *s).c_str(),
           static_cast<unsigned long long>(c.allocated_scoped),
           static_cast<unsigned long long>(c.allocated_unscoped),
           static_cast<unsigned long long>(c.live_scoped),
           static_cast<unsigned long long>(c.live_unscoped), static_cast<long long>(c.census_bytes),
           static_cast<unsigned long long>(c.census_entries),
           static_cast<unsigned long long>(s->totals.live_bytes),
           static_cast<unsigned long long>(s->temporaries),
           static_cast<unsigned long long>(s->temporary_bytes));
    return 0;
  }
  printf("memtrace coverage of %s: capture %s\n", path.c_str(), Verdict(*s).c_str());
  PrintSampledNote(*s);
  printf("\n");
  const uint64_t allocated = c.allocated_scoped + c.allocated_unscoped;
  const uint64_t live = c.live_scoped + c.live_unscoped;
  printf("allocated in named scopes  %11s  %5.1f%%\n", FormatBytes(c.allocated_scoped).c_str(),
         Share(c.allocated_scoped, allocated));
  printf("allocated unscoped         %11s  %5.1f%%\n", FormatBytes(c.allocated_unscoped).c_str(),
         Share(c.allocated_unscoped, allocated));
  printf("live at the end, scoped    %11s  %5.1f%%\n", FormatBytes(c.live_scoped).c_str(),
         Share(c.live_scoped, live));
  printf("live at the end, unscoped  %11s  %5.1f%%\n", FormatBytes(c.live_unscoped).c_str(),
         Share(c.live_unscoped, live));
  printf("census (%llu entries)       %11s  beside %s the allocator saw live\n",
         static_cast<unsigned long long>(c.census_entries),
         (c.census_bytes < 0 ? "-" + FormatBytes(static_cast<uint64_t>(-c.census_bytes))
                             : FormatBytes(static_cast<uint64_t>(c.census_bytes)))
             .c_str(),
         FormatBytes(s->totals.live_bytes).c_str());
  printf("temporaries                %11llu  blocks (%s) freed almost at once\n",
         static_cast<unsigned long long>(s->temporaries), FormatBytes(s->temporary_bytes).c_str());
  return 0;
}

// ---- export -----------------------------------------------------------------------------

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
  if (format == "pprof" && output.empty()) {
    return UsageError(kExportSpec, "pprof output is binary: give -o FILE (e.g. -o heap.pb.gz)");
  }
  // Opened first: an unwritable path is said before the capture is read.
  std::optional<OutputFile> out;
  if (!output.empty()) {
    absl::StatusOr<OutputFile> created = OutputFile::Create(output);
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
    data = PerfettoTrace(path, *s);
  } else if (format == "folded") {
    data = FoldedStacks(*s, symbolizer,
                        weight == "count" ? FoldedWeight::kCount : FoldedWeight::kBytes);
  } else {
    data = PprofProfile(*s, symbolizer);
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
  return 0;
}

}  // namespace memtrace
