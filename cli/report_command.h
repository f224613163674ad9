// Copyright 2026 The memtrace Authors.
//
// report_command.h: `memtrace report CAPTURE -o REPORT.html`, the CLI side of
// report/html_report.h, kept apart from cli/memtrace.cc so that the command's options are
// parsed in one place.
//
// Thread safety: called once, from main().

#ifndef MEMTRACE_CLI_REPORT_COMMAND_H_
#define MEMTRACE_CLI_REPORT_COMMAND_H_

namespace memtrace {

// The usage text of `memtrace report`.
extern const char* const kReportHelp;

// Runs `memtrace report`; argv[0] is "report". Returns the exit status: 0 written,
// 2 bad usage or unreadable input (the message on stderr says what, where and how to fix).
int ReportCommand(int argc, char** argv);

}  // namespace memtrace

#endif  // MEMTRACE_CLI_REPORT_COMMAND_H_
