// Copyright 2026 The memtrace Authors.
//
// memtrace: the command line for captures (docs/capture-format.md).
//
//   memtrace <subcommand> [flags] ARGS...      memtrace <subcommand> --help
//   memtrace --version                         memtrace version
//
// The one dispatch table is kCommands below. A subcommand is a handler
// `int Handler(int argc, char** argv)` that gets argv starting at its own name and parses
// its flags with ParseCommandFlags() (cli/command_line.h), which refuses flags of other
// subcommands. To add one (`run` in cli/run_command.cc, `report` in the report code), give
// it a CommandSpec and a handler in its own file, declare the handler in a header, and add
// a row here.
//
// Exit status: 0 success; 1 a finding (verify failed), or a process live or snapshot
// cannot read (not running, not traced with --live, refused); 2 bad usage or unreadable input
// (the message says what, where, and how to fix it). A usage error is that message and a
// line saying where the help is, never the help itself: the help is for `help` and
// --help, on stdout.

#include <malloc.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "cli/analysis_commands.h"
#include "cli/convert_command.h"
#include "cli/live_command.h"
#include "cli/report_command.h"
#include "cli/run_command.h"
#include "cli/snapshot_command.h"
#include "runtime/version.h"

namespace {

// `memtrace version [--json]`, also `memtrace --version`.
int VersionCommand(int argc, char** argv) {
  const std::string arg = argc > 1 ? argv[1] : "";
  if (arg == "--help" || arg == "-h") {
    printf("usage: memtrace version [--json]\n\n"
           "Prints `memtrace VERSION`; with --json, {\"version\":\"VERSION\"}.\n");
    return 0;
  }
  // `--json` alone may follow; anything else is a mistake to say, not to ignore.
  const bool json = argc == 2 && arg == "--json";
  if (argc > 1 && !json) {
    fprintf(stderr,
            "memtrace %s: unexpected argument '%s' (it takes only --json)\n"
            "run `memtrace version --help` for the options\n",
            argv[0], arg.c_str());
    return 2;
  }
  if (json) {
    printf("{\"version\":\"%s\"}\n", memtrace::kMemtraceVersion);
  } else {
    printf("memtrace %s\n", memtrace::kMemtraceVersion);
  }
  return 0;
}

struct Command {
  const char* name;
  const char* summary;  // one line for `memtrace help`
  int (*handler)(int argc, char** argv);
};

constexpr Command kCommands[] = {
    {"summary", "totals per scope and layer, with the integrity verdict; snapshots (--at-*)",
     memtrace::SummaryCommand},
    {"verify", "exit 0 only for a complete capture with memory events; else say why, exit 1",
     memtrace::VerifyCommand},
    {"top", "call sites (symbolized, with scope and layer) by bytes, count, live, temporaries",
     memtrace::TopCommand},
    {"peak", "what held memory at the global high-water moment and at each scope's own",
     memtrace::PeakCommand},
    {"retention", "what was allocated inside each scope and still live when it exited",
     memtrace::RetentionCommand},
    {"diff", "per-scope changes between two captures, or two points of one capture",
     memtrace::DiffCommand},
    {"coverage", "bytes in named scopes vs unscoped, census vs what the allocator saw",
     memtrace::CoverageCommand},
    {"export", "the capture for other viewers: --format=perfetto, folded or pprof",
     memtrace::ExportCommand},
    {"convert", "rewrite a capture as binary (OUT.mtb) or JSONL: convert IN OUT",
     memtrace::ConvertCommand},
    {"report", "a self-contained HTML report with plots: report CAPTURE -o report.html",
     memtrace::ReportCommand},
    {"run", "trace an unmodified program: memtrace run [flags] -- program args...",
     memtrace::RunCommand},
    {"live", "the ledger of a process traced with --live: live PID [--once --json]",
     memtrace::LiveCommand},
    {"snapshot", "a capture of this moment of a process traced with --live: PID -o FILE",
     memtrace::SnapshotCommand},
    {"version", "print `memtrace VERSION` (also --version; --json: {\"version\":...})",
     VersionCommand},
};

void PrintUsage(FILE* out) {
  fputs("usage: memtrace <command> [flags] ARGS...\n\ncommands:\n", out);
  for (const Command& c : kCommands) fprintf(out, "  %-10s %s\n", c.name, c.summary);
  fputs("  help       this text, or `memtrace help COMMAND` (same as COMMAND --help)\n\n"
        "Every command takes --help. CAPTURE is a capture written by memtrace\n"
        "(docs/capture-format.md): binary (.mtb) or JSONL, plain or zstd-compressed.\n"
        "Exit status: 0 ok, 1 a finding (verify) or a process live or snapshot cannot\n"
        "read, 2 bad usage or an unreadable capture.\n",
        out);
}

const Command* Find(const char* name) {
  for (const Command& c : kCommands) {
    if (strcmp(c.name, name) == 0) return &c;
  }
  return nullptr;
}

// A command line that names no command memtrace has: what is wrong and where the list is.
int NoSuchCommand(const char* said, const std::string& message) {
  fprintf(stderr, "%s: %s\nrun `memtrace help` for the commands\n", said, message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // A replay's tables are large and live for one pass (report makes three). glibc raises
  // its mmap threshold to the size of each mapped block it frees, after which tables come
  // from the heap and stay in the process once freed, so that one pass's pile up under
  // the next's. With the threshold fixed, each large block is mapped on its own and
  // returned when freed. (This process only: a traced program is another, after exec.)
  mallopt(M_MMAP_THRESHOLD, 128 << 10);
  if (argc < 2) {
    return NoSuchCommand("memtrace", "which command? memtrace <command> [flags] ARGS...");
  }
  const std::string command = argv[1];
  if (command == "--version") return VersionCommand(argc - 1, argv + 1);
  if (command == "help" || command == "--help" || command == "-h") {
    if (argc < 3) {
      PrintUsage(stdout);
      return 0;
    }
    const Command* c = Find(argv[2]);
    if (c == nullptr) {
      return NoSuchCommand("memtrace help", std::string("unknown command '") + argv[2] + "'");
    }
    char help[] = "--help";
    char* help_argv[] = {argv[2], help, nullptr};
    return c->handler(2, help_argv);
  }
  const Command* c = Find(argv[1]);
  if (c == nullptr) {
    return NoSuchCommand("memtrace", std::string("unknown command '") + argv[1] + "'");
  }
  return c->handler(argc - 1, argv + 1);
}
