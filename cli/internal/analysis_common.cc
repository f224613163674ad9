// Copyright 2026 The memtrace Authors.

#include "cli/internal/analysis_common.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "analysis/trailer.h"
#include "cli/progress_bar.h"
#include "sinks/json_text.h"
#include "sinks/capture_ends.h"
#include "sinks/summary_table.h"

ABSL_FLAG(int32_t, limit, 20, "rows to print");

namespace memtrace::cli_internal {
namespace {

// What was lost, or that nothing was (Verdict() adds the filters).
std::string VerdictAlone(const CaptureSummary& s) {
  if (s.checksum_differs) {
    return "DAMAGED (its bytes differ from those its trailer's checksum was computed over: "
           "it was changed after it was written; `memtrace verify` says more)";
  }
  if (s.being_written) {
    return "INCOMPLETE (still being written: the process writing it is running, and its "
           "trailer comes when that process exits)";
  }
  if (!s.has_trailer && !s.cut.empty()) {
    return absl::StrCat("TRUNCATED (cut off while it was written: ", s.cut,
                        "; everything before it is read)");
  }
  if (!s.has_trailer) {
    return s.source == "preload"
               ? "TRUNCATED (no trailer: the process ended without its exit handlers, killed "
                 "or by its own exit_group as Go programs end; `memtrace verify` says more)"
               : "TRUNCATED (no trailer: the program or the sink stopped early)";
  }
  if (!s.trailer_complete) {
    const absl::StatusOr<TrailerBlocks> t = ParseTrailer(s.trailer);
    if (t.ok() && t->salvaged) {
      return absl::StrCat("PARTIAL (salvaged from ", t->salvaged_from, ", which ",
                          t->salvaged_cut.empty()
                              ? "ended without a trailer"
                              : absl::StrCat("was cut off while it was written: ",
                                             t->salvaged_cut),
                          "; the records before its end are here)");
    }
    if (t.ok() && t->LostOnlyPastTheSizeLimit()) {
      return absl::StrCat("PARTIAL (its size limit, ", FormatBytes(t->max_bytes),
                          ", was reached: the events stop there; the totals at the end are "
                          "below the integrity block)");
    }
    if (t.ok() && t->ended_by.rfind("signal ", 0) == 0) {
      return absl::StrCat("PARTIAL (the program ended by ", t->ended_by,
                          "; everything recorded up to it is here)");
    }
    if (t.ok() && t->ended_by == kEndedWhileRecording) {
      return "PARTIAL (finished while its tracer still recorded; `memtrace verify` says more)";
    }
    const std::vector<std::string> losses =
        t.ok() ? t->Losses() : std::vector<std::string>{};
    return losses.empty() ? "PARTIAL (the trailer reports lost records)"
                          : absl::StrCat("PARTIAL (the trailer reports lost records: ",
                                         absl::StrJoin(losses, ", "), ")");
  }
  return "complete";
}

}  // namespace


// The recording filters of `s` (analysis/capture_filters.h), with the counts its trailer
// has (none when it has no trailer, or one that cannot be read).
CaptureFilters FiltersOf(const CaptureSummary& s) {
  if (!s.has_trailer) return CaptureFilters::Of(s, nullptr);
  const absl::StatusOr<TrailerBlocks> t = ParseTrailer(s.trailer);
  return CaptureFilters::Of(s, t.ok() ? &*t : nullptr);
}

// The verdict of `s`, and after it every recording filter in force with what it left out.
std::string Verdict(const CaptureSummary& s) {
  return VerdictAlone(s) + FiltersOf(s).VerdictSuffix();
}

std::optional<std::string> NoEventsProblem(const CaptureSummary& s) {
  const bool preload = s.source == "preload";
  // (An interposer's capture cut short says why in CaptureProblems(): the events may
  // never have been written.)
  if (s.events != 0 || (!s.has_trailer && preload) || (preload && !s.malloc_from.empty())) {
    return std::nullopt;
  }
  if (!preload) {
    return "it has no memory events (was the tracer started, and the sink attached before "
           "Start()?)";
  }
  return s.min_size > 0
             ? absl::StrCat("the interposer was loaded but recorded no allocations (did the "
                            "program allocate blocks of at least ", s.min_size, " bytes, the "
                            "--min-size, in a process it traces?)")
             : std::string("the interposer was loaded but recorded no allocations (did the "
                           "program allocate, in a process it traces? A program that execs "
                           "another is traced only with --children)");
}

namespace {

// The sink counted the event records it wrote: a file that holds another number was
// changed afterwards. Nullopt when it holds that number, or the trailer does not say.
std::optional<std::string> EventCountProblem(const CaptureSummary& s) {
  if (!s.has_trailer) return std::nullopt;
  const absl::StatusOr<TrailerBlocks> t = ParseTrailer(s.trailer);
  if (!t.ok() || !t->has_event_lines || t->event_lines == s.events) return std::nullopt;
  return absl::StrCat(
      "it is damaged: the file holds ", s.events, " event records, and its trailer says ",
      t->event_lines, " were written. Records were removed or added after it was written "
      "(an edited or spliced file); record it again");
}

}  // namespace

std::vector<std::string> CaptureProblems(const CaptureSummary& s) {
  // A damaged file's other symptoms (cut off, no events, lost records) are the damage's:
  // only the damage is said.
  if (s.checksum_differs) {
    std::vector<std::string> problems;
    if (std::optional<std::string> count = EventCountProblem(s)) {
      problems.push_back(*std::move(count));
    }
    problems.push_back(
        "it is damaged: its bytes before the trailer differ from those the trailer's "
        "checksum (crc32) was computed over: it was changed after it was written (a byte "
        "flipped on disk, a record edited). Its records may still be read, but no number "
        "from it can be trusted; record it again");
    return problems;
  }
  std::vector<std::string> problems;
  const bool preload = s.source == "preload";
  if (preload && !s.malloc_from.empty()) {
    problems.push_back(absl::StrCat(
        "the program's calls to malloc and free reached the allocator of ", s.malloc_from,
        ", which came before the interposer: the capture holds only what reached the "
        "interposer by other calls, and the frees of those blocks may be missing. Preload "
        "libmemtrace_preload.so first, or trace a build of the program that uses the C "
        "library's malloc"));
  } else if (std::optional<std::string> none = NoEventsProblem(s)) {
    problems.push_back(*std::move(none));
  }
  if (s.being_written) {
    problems.push_back(
        "it is still being written: a running process holds its capture lock, and the "
        "trailer comes when that process exits. Run verify again after it has ended (a "
        "server traced with --forks: stop it, or the worker that writes this capture)");
  } else if (!s.has_trailer && !s.cut.empty()) {
    problems.push_back(absl::StrCat(
        "it is truncated: it was cut off while it was written (", s.cut,
        "), by a crash, a kill or a full disk. Everything before that record is read; "
        "`memtrace verify --salvage=OUT` keeps it as a capture of its own, marked salvaged"));
  } else if (!s.has_trailer) {
    problems.push_back(
        preload ? "it is truncated: there is no trailer. The process ended without running "
                  "its exit handlers: it was killed (SIGKILL, the OOM killer), or it ended "
                  "with the exit_group system call itself, as Go programs do. The capture "
                  "holds what was written until then; the records of the last few "
                  "milliseconds are lost"
                : "it is truncated: there is no trailer (the program or the sink stopped "
                  "before Finish())");
  } else if (!s.trailer_complete) {
    // The interposer names what ended the capture; a fatal signal means the program
    // crashed, and everything before the crash is in the capture. (A trailer whose
    // counters cannot be read names nothing: the capture is partial all the same.)
    const absl::StatusOr<TrailerBlocks> parsed = ParseTrailer(s.trailer);
    const TrailerBlocks t = parsed.value_or(TrailerBlocks{});
    if (!parsed.ok()) {
      problems.push_back(absl::StrCat("it is partial, and its trailer cannot be read: ",
                                      parsed.status().message()));
    } else if (t.salvaged) {
      problems.push_back(absl::StrCat(
          "it is partial: it was salvaged (memtrace convert, verify --salvage) from ",
          t.salvaged_from, ", which ",
          t.salvaged_cut.empty() ? "ended without a trailer"
                                 : absl::StrCat("was cut off while it was written (",
                                                t.salvaged_cut, ")"),
          ". It holds the records written before that; what the program did after them, "
          "and what its recorder counted as lost, is not known"));
    } else if (t.ended_by.rfind("signal ", 0) == 0) {
      problems.push_back(absl::StrCat(
          "it is partial: the program ended by ", t.ended_by,
          "; the capture holds everything recorded up to it, but blocks live then are not "
          "leaks"));
    } else if (t.ended_by == kEndedWhileRecording) {
      problems.push_back(
          "it is partial: the program finished the capture (JsonlSink::Finish()) while its "
          "tracer still recorded, so what the tracer recorded after that is not in it; "
          "stop the tracer before Finish()");
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
  if (std::optional<std::string> count = EventCountProblem(s)) {
    problems.push_back(*std::move(count));
  }
  return problems;
}

std::vector<std::string> IntegrityFindings(const CaptureSummary& s) {
  if (!s.has_trailer) return {"no trailer"};
  const absl::StatusOr<TrailerBlocks> t = ParseTrailer(s.trailer);
  if (!t.ok()) return {"a trailer that cannot be read"};
  std::vector<std::string> out;
  if (t->has_integrity) out = t->integrity.Findings();
  auto add = [&](const char* what, uint64_t n) {
    if (n != 0) out.push_back(absl::StrCat(what, " ", n));
  };
  add("events the sink lost", t->events_lost);
  add("events past the size limit", t->events_past_limit);
  add("write errors", t->write_errors);
  add("stack collisions", t->stack_collisions);
  add("releases with no allocation in the capture", s.unmatched_releases);
  return out;
}

std::optional<std::string> CleanIntegrity(const CaptureSummary& s) {
  // A capture with no events can still be whole: the line says "0 events", and the
  // caller says what that means (NoEventsProblem()).
  const size_t no_events = NoEventsProblem(s) ? 1 : 0;
  if (CaptureProblems(s).size() != no_events || !IntegrityFindings(s).empty()) {
    return std::nullopt;
  }
  const TrailerBlocks t = *ParseTrailer(s.trailer);
  // The capture's memory events, as the summary's table and `verify` count them. "exact"
  // says what it holds for where a recording filter left blocks out.
  std::string line = FormatCleanIntegrityLine(s.events, t.integrity);
  if (const std::string exact_for = FiltersOf(s).ExactFor(); !exact_for.empty()) {
    line = absl::StrCat("complete, exact ", exact_for, line.substr(line.find(':')));
  }
  if (t.has_integrity) return line;
  // An older trailer: no counters to call the capture exact by.
  return absl::StrCat("complete (the trailer has no integrity counters: an older capture)",
                      line.substr(line.find(':')));
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

void PrintSnapshotNote(const CaptureSummary& s) {
  if (!s.snapshot_of.taken) return;
  printf("snapshot of pid %llu at %s: its %llu events are the blocks live then, one "
         "allocation each; %s\n",
         static_cast<unsigned long long>(s.pid), UtcTime(s.snapshot_of.taken_unix_ns).c_str(),
         static_cast<unsigned long long>(s.snapshot_of.blocks),
         s.sampled ? "a sampled process's counts before then are not estimated, so allocated "
                     "and high-water are the live blocks' here"
                   : "allocated, freed and high-water are the process's own counts up to then, "
                     "by scope and layer (a call site's are its live blocks alone)");
}

std::string UtcTime(int64_t unix_ns) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::FromUnixNanos(unix_ns),
                          absl::UTCTimeZone());
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
  if (args.positional[0] == "-") {
    return UsageError(spec, "'-' is not standard input here: name the CAPTURE file, or "
                            "/dev/stdin to read one from a pipe");
  }
  return std::nullopt;
}

std::optional<int> RowLimit(const CommandSpec& spec, size_t* rows) {
  const int32_t limit = absl::GetFlag(FLAGS_limit);
  if (limit < 0) return UsageError(spec, "--limit must be 0 (all rows) or more");
  *rows = limit == 0 ? ~size_t{0} : static_cast<size_t>(limit);
  return std::nullopt;
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

std::string PastTheEnd(const SnapshotPoint& p, const CaptureSummary& s) {
  if (s.events_applied != s.events) return "";
  if (p.kind == SnapshotPoint::Kind::kEvent && p.event > s.events) {
    return "the capture ends before that event, so this is its end";
  }
  if (p.kind == SnapshotPoint::Kind::kTime) {
    return "its last event is at or before that time, so this is its end";
  }
  return "";
}

// Fails when a scope-exit point was never reached.
std::optional<int> CheckReached(const CommandSpec& spec, const CaptureSummary& s,
                                const SnapshotPoint& p) {
  if (s.snapshot_reached) return std::nullopt;
  return InputError(spec, absl::StrCat("the capture never reaches ", PointDescription(p),
                                       " (the scope exits fewer times, or never: check the "
                                       "path with memtrace retention)"));
}

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace memtrace::cli_internal
