// Copyright 2026 The memtrace Authors.
//
// analysis_commands.h: the `memtrace` subcommands that read a capture and answer a question
// about it (summary, verify, top, peak, retention, diff, coverage, export). Each handler
// takes argv starting at its subcommand's name and parses its own flags with
// ParseCommandFlags() (cli/command_line.h); cli/memtrace.cc dispatches to them.
//
// Each lives in a file of its own, cli/<name>_command.cc, with its CommandSpec and the
// flags only it reads. What several share (loading a capture, its verdict, names, --limit)
// is in cli/internal/analysis_common.h; how `top` and `peak` name call sites is in
// cli/internal/site_namer.h; the notes under `summary` are in cli/internal/summary_notes.h.
//
// Every one prints text by default and one JSON object with --json; exit status 0 on
// success, 1 for a finding (verify), 2 for bad usage or unreadable input.
//
// Thread safety: called from main() only.

#ifndef MEMTRACE_CLI_ANALYSIS_COMMANDS_H_
#define MEMTRACE_CLI_ANALYSIS_COMMANDS_H_

#include "cli/command_line.h"

namespace memtrace {

extern const CommandSpec kSummarySpec;
extern const CommandSpec kVerifySpec;
extern const CommandSpec kTopSpec;
extern const CommandSpec kPeakSpec;
extern const CommandSpec kRetentionSpec;
extern const CommandSpec kDiffSpec;
extern const CommandSpec kCoverageSpec;
extern const CommandSpec kExportSpec;

int SummaryCommand(int argc, char** argv);
int VerifyCommand(int argc, char** argv);
int TopCommand(int argc, char** argv);
int PeakCommand(int argc, char** argv);
int RetentionCommand(int argc, char** argv);
int DiffCommand(int argc, char** argv);
int CoverageCommand(int argc, char** argv);
int ExportCommand(int argc, char** argv);

}  // namespace memtrace

#endif  // MEMTRACE_CLI_ANALYSIS_COMMANDS_H_
