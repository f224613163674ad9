// Copyright 2026 The memtrace Authors.
//
// `memtrace verify`: whether a capture is complete, and if not, why (exit 1).

#include "cli/analysis_commands.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/capture_conversion.h"
#include "analysis/capture_filters.h"
#include "analysis/capture_matcher.h"
#include "analysis/capture_name.h"
#include "analysis/output_file.h"
#include "analysis/trailer.h"
#include "cli/internal/analysis_common.h"
#include "cli/progress_bar.h"
#include "sinks/json_text.h"
#include "sinks/summary_table.h"

ABSL_FLAG(bool, expect_preload, false,
          "also fail unless the capture came from the LD_PRELOAD interposer (memtrace run)");
ABSL_FLAG(std::string, salvage, "",
          "a capture cut short: write the records before its end to this file (.mtb or "
          ".jsonl, .zst after either), marked salvaged (partial)");

namespace memtrace {

using cli_internal::CaptureProblems;
using cli_internal::CleanIntegrity;
using cli_internal::FiltersOf;
using cli_internal::IntegrityFindings;
using cli_internal::JsonHead;
using cli_internal::OneCapture;

const CommandSpec kVerifySpec = {
    "verify", "memtrace verify [flags] CAPTURE...",
    "Checks that CAPTURE has at least one memory event, ends with a trailer (it was not cut\n"
    "off), that the trailer says nothing was lost, that the file holds every event record\n"
    "the trailer says was written (none removed or added since), that they replay to the\n"
    "counters in its trailer (none changed since), and that its integrity\n"
    "block reports\n"
    "nothing more (no release matched inexactly or to no block, no refused misuse, no full\n"
    "table): the capture is clean, and passes with the one line `memtrace summary` prints\n"
    "for it. Exit 0 when all hold; otherwise print which failed and exit 1. A capture\n"
    "from the interposer (header source \"preload\") with no memory events means the\n"
    "interposer was loaded but recorded no allocations.\n"
    "With several captures (a process family: memtrace verify NAME.mtb NAME.*), each in\n"
    "turn (--json: one object per line); exit 0 only when every one passes, 2 when one\n"
    "cannot be read.\n"
    "--salvage=OUT, for one capture without a trailer (cut off while it was written, or\n"
    "ended without its exit handlers): also writes the records before its end to OUT, with\n"
    "a trailer that says they were salvaged, so every command reads OUT as partial and\n"
    "says why; the exit status stays 1. Every command reads what precedes a cut anyway;\n"
    "OUT keeps it as a capture of its own (as `memtrace convert` does).",
    {"json", "expect_preload", "salvage"}};

namespace {

// Where the counters replayed from a complete capture's records (MatchCapture(): the
// drainer's ledger over them, in their order) differ from its trailer's, which the
// recording process's ledger counted over the same records: the first difference, or
// nothing. A snapshot's records are one moment's live blocks, so it is not compared.
std::optional<std::string> ReplayDisagreement(const CaptureSummary& s) {
  if (!s.has_trailer || !s.trailer_complete || s.snapshot_of.taken) return std::nullopt;
  const absl::StatusOr<TrailerBlocks> t = ParseTrailer(s.trailer);
  if (!t.ok() || !t->has_totals) return std::nullopt;
  const auto differ = [](const std::string& what, const UsageCounters& replayed,
                         const UsageCounters& trailer) -> std::optional<std::string> {
    const std::pair<const char*, uint64_t UsageCounters::*> fields[] = {
        {"bytes allocated", &UsageCounters::allocated_bytes},
        {"allocations", &UsageCounters::allocated_count},
        {"allocation calls", &UsageCounters::allocation_calls},
        {"bytes freed", &UsageCounters::freed_bytes},
        {"frees", &UsageCounters::freed_count},
        {"bytes live", &UsageCounters::live_bytes},
        {"blocks live", &UsageCounters::live_count},
        {"high-water bytes", &UsageCounters::high_water_bytes}};
    for (const auto& [name, field] : fields) {
      if (replayed.*field != trailer.*field) {
        return absl::StrCat(what, " ", name, ": replaying its records gives ", replayed.*field,
                            ", its trailer says ", trailer.*field);
      }
    }
    return std::nullopt;
  };
  std::optional<std::string> d = differ("the totals'", s.totals, t->totals);
  const UsageCounters none;
  for (const auto& [id, usage] : t->layer_usage) {
    if (d) break;
    const auto it = s.layers.find(id);
    d = differ(absl::StrCat("layer ", id, "'s"), it != s.layers.end() ? it->second : none, usage);
  }
  for (const auto& [id, usage] : t->scope_usage) {
    if (d) break;
    const auto it = s.scopes.find(id);
    d = differ(absl::StrCat("scope ", id, "'s"), it != s.scopes.end() ? it->second : none, usage);
  }
  if (!d) return std::nullopt;
  return absl::StrCat("it is damaged: ", *d, ". Records were changed after it was written "
                      "(an edited or spliced file); record it again");
}

// One capture's verdict (VerifyCommand): 0 complete, 1 a finding, 2 unreadable.
int VerifyCapture(const std::string& path) {
  // A verdict needs the releases matched, not a summary's counters (capture_matcher.h).
  ProgressBar bar(path, "reading");
  const auto s = MatchCapture(path, [&bar](uint64_t bytes) { bar.Update(bytes); });
  if (!s.ok()) return InputError(kVerifySpec, std::string(s.status().message()));
  std::vector<std::string> problems;
  const bool preload = s->source == "preload";
  if (absl::GetFlag(FLAGS_expect_preload) && !preload) {
    problems.push_back(absl::StrCat(
        "the interposer was not loaded (header source is \"", s->source,
        "\", not \"preload\": was libmemtrace_preload.so in LD_PRELOAD of the program?)"));
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
  for (std::string& p : CaptureProblems(*s)) problems.push_back(std::move(p));
  if (problems.empty()) {
    if (std::optional<std::string> d = ReplayDisagreement(*s)) problems.push_back(*std::move(d));
  }
  const std::optional<std::string> clean = CleanIntegrity(*s);
  if (problems.empty() && !clean) {
    problems.push_back(absl::StrCat(
        "its integrity block reports ", absl::StrJoin(IntegrityFindings(*s), ", "),
        " (`memtrace summary` prints the whole block)"));
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
    // The words `memtrace summary` prints for the same capture (CleanIntegrity()).
    printf("memtrace verify: %s: integrity: %s%s\n", path.c_str(), clean->c_str(),
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
    if (!absl::GetFlag(FLAGS_salvage).empty()) {
      return UsageError(kVerifySpec, "--salvage takes one capture: give it one CAPTURE");
    }
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
  const std::string& path = args.positional[0];
  const std::string salvage = absl::GetFlag(FLAGS_salvage);
  if (salvage.empty()) return VerifyCapture(path);
  if (const std::string ext = SplitCaptureName(salvage).extension; ext != "mtb" && ext != "jsonl") {
    return UsageError(kVerifySpec, absl::StrCat("--salvage=", salvage, " must name a capture: "
                                                "end it in .mtb or .jsonl (.zst after either "
                                                "compresses)"));
  }
  if (SameFile(path, salvage)) {
    return UsageError(kVerifySpec, absl::StrCat("--salvage=", salvage, " is the capture "
                                                "itself; give the salvaged copy a new name"));
  }
  const int exit = VerifyCapture(path);
  fflush(stdout);
  if (exit == 0) {
    fprintf(stderr, "memtrace verify: nothing to salvage: %s is whole; no %s was written\n",
            path.c_str(), salvage.c_str());
  }
  if (exit != 1) return exit;  // clean, or unreadable: nothing to salvage
  // Written beside OUT under a name of its own, with OUT's extensions (they choose the
  // encoding), and put in place only when it was salvaged: a capture that needs no
  // salvage leaves a file already at OUT as it was.
  const size_t slash = salvage.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : salvage.substr(0, slash + 1);
  const std::string scratch = absl::StrCat(dir, ".memtrace-salvage.", getpid(), ".",
                                           salvage.substr(dir.size()));
  const absl::StatusOr<ConversionResult> r = ConvertCapture(path, scratch);
  if (!r.ok()) return InputError(kVerifySpec, std::string(r.status().message()));
  if (!r->salvaged) {
    // It has a trailer: its records were whole, and the verdict above says what failed.
    unlink(scratch.c_str());
    fprintf(stderr, "memtrace verify: nothing to salvage: %s is not cut short (it has its "
                    "trailer); no %s was written\n", path.c_str(), salvage.c_str());
    return exit;
  }
  if (rename(scratch.c_str(), salvage.c_str()) != 0) {
    const int err = errno;
    unlink(scratch.c_str());
    return InputError(kVerifySpec, absl::StrCat("cannot put the salvaged capture at ",
                                                salvage, ": ", strerror(err)));
  }
  fprintf(stderr, "memtrace verify: salvaged %llu events of %s into %s, marked salvaged "
                  "(partial)\n", static_cast<unsigned long long>(r->events), path.c_str(),
          salvage.c_str());
  return exit;
}

}  // namespace memtrace
