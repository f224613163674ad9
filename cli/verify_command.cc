// Copyright 2026 The memtrace Authors.
//
// `memtrace verify`: whether a capture is complete, and if not, why (exit 1).

#include "cli/analysis_commands.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/capture_filters.h"
#include "analysis/trailer.h"
#include "cli/internal/analysis_common.h"
#include "sinks/json_text.h"
#include "sinks/summary_table.h"

ABSL_FLAG(bool, expect_preload, false,
          "also fail unless the capture came from the LD_PRELOAD interposer (memtrace run)");

namespace memtrace {

using cli_internal::FiltersOf;
using cli_internal::JsonHead;
using cli_internal::Load;
using cli_internal::OneCapture;

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

namespace {

// One capture's verdict (VerifyCommand): 0 complete, 1 a finding, 2 unreadable.
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
  } else if (!s->has_trailer && !s->cut.empty()) {
    problems.push_back(absl::StrCat(
        "it is truncated: it was cut off while it was written (", s->cut,
        "), by a crash, a kill or a full disk. Everything before that record is read; "
        "`memtrace convert` writes it to a capture of its own"));
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

}  // namespace

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

}  // namespace memtrace
