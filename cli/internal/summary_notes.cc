// Copyright 2026 The memtrace Authors.

#include "cli/internal/summary_notes.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/internal/site_table.h"
#include "sinks/summary_table.h"

namespace memtrace::cli_internal {

// The program's calls to malloc and free reached another allocator, loaded before the
// interposer (CaptureSummary::malloc_from): what that leaves out of the figures.
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
    // Written by an older interposer: every inherited block at site 0.
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

void PrintTimelineNote(const std::optional<TrailerBlocks>& blocks) {
  if (!blocks) return;
  const TrailerBlocks::Timeline& t = blocks->timeline;
  const int at = t.Column("t"), live = t.Column("live_bytes"), rss = t.Column("rss_bytes");
  // Two samples are the start and the end: a run that short says nothing over time.
  if (t.rows.size() < 3 || at < 0 || live < 0 || rss < 0) return;
  const int64_t start = t.rows.front()[at];
  auto seconds = [&](int64_t ns) { return static_cast<double>(ns - start) / 1e9; };
  // "first -> last, highest H at S s" for a column.
  auto course = [&](int column) {
    const std::vector<int64_t>* top = &t.rows.front();
    for (const auto& row : t.rows) {
      if (row[column] > (*top)[column]) top = &row;
    }
    auto bytes = [](int64_t v) { return FormatBytes(static_cast<uint64_t>(v < 0 ? 0 : v)); };
    return absl::StrCat(bytes(t.rows.front()[column]), " -> ", bytes(t.rows.back()[column]),
                        ", highest sampled ", bytes((*top)[column]), " at ",
                        absl::StrFormat("%.1f", seconds((*top)[at])), " s");
  };
  printf("\nmemory over time (%zu samples over %.1f s): live %s; resident %s\n", t.rows.size(),
         seconds(t.rows.back()[at]), course(live).c_str(), course(rss).c_str());
}

void PrintSampledAtNote(const std::optional<TrailerBlocks>& blocks, const CaptureSummary& s,
                        int64_t at_unix_ns) {
  if (!blocks) return;
  const TrailerBlocks::Timeline& t = blocks->timeline;
  const int at = t.Column("t"), live = t.Column("live_bytes"), rss = t.Column("rss_bytes");
  if (at < 0 || live < 0 || rss < 0) return;
  const std::vector<int64_t>* sample = nullptr;
  for (const auto& row : t.rows) {
    if (row[at] <= at_unix_ns) sample = &row;
  }
  if (sample == nullptr) return;
  auto since_start = [&](int64_t ns) {
    return absl::StrFormat("%.3f s", static_cast<double>(ns - s.started_unix_ns) / 1e9);
  };
  auto bytes = [](int64_t v) { return FormatBytes(static_cast<uint64_t>(v < 0 ? 0 : v)); };
  std::string parts;
  for (size_t c = 0; c < t.columns.size(); ++c) {
    const std::string& name = t.columns[c];
    uint32_t id = 0;
    if (name.rfind("layer:", 0) == 0 && absl::SimpleAtoi(name.substr(6), &id)) {
      const auto it = s.layer_names.find(id);
      absl::StrAppend(&parts, "; layer ", it != s.layer_names.end() ? it->second : name.substr(6),
                      " ", bytes((*sample)[c]));
    } else if (name.rfind("scope:", 0) == 0 && absl::SimpleAtoi(name.substr(6), &id) &&
               (*sample)[c] != 0) {
      const auto it = s.scope_paths.find(id);
      absl::StrAppend(&parts, "; scope ", it != s.scope_paths.end() ? it->second : name,
                      " ", bytes((*sample)[c]));
    }
  }
  printf("\nsampled at %s (the recorder's last sample at or before the point): live %s, "
         "resident %s%s\n",
         since_start((*sample)[at]).c_str(), bytes((*sample)[live]).c_str(),
         bytes((*sample)[rss]).c_str(), parts.c_str());
  if (blocks->events_past_limit != 0 && s.snapshot_t < at_unix_ns) {
    printf("  the capture's events stop at %s (its size limit kept the %llu after out): the "
           "table above is the state there, the sample the state at the point\n",
           since_start(s.snapshot_t).c_str(),
           static_cast<unsigned long long>(blocks->events_past_limit));
  }
}

// What the program's libraries allocated and released in their constructors, before
// the interposer's ran (the loader runs them first): not in the capture.
void PrintBeforeStartNote(const std::optional<TrailerBlocks>& blocks) {
  if (!blocks || (blocks->prestart_freed == 0 && blocks->prestart_untracked == 0)) return;
  if (blocks->prestart_freed != 0) {
    printf("\nnote: before memtrace started (the constructors of the program's libraries run\n"
           "  before its own), %llu block%s (%s) were allocated and released again without\n"
           "  being recorded (its log of those calls holds 131072; older interposers kept\n"
           "  none); they are not in these figures. The blocks still live when it started\n"
           "  are, each at the stack that allocated it.\n",
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

// A capture the interposer ended at an exec holds the first program image only. When the
// program is a wrapper (a pyenv shim, a launcher script), the program the user meant ran
// after it: say where it went and how to trace it.
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

}  // namespace memtrace::cli_internal
