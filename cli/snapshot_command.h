// Copyright 2026 The memtrace Authors.
//
// snapshot_command.h: `memtrace snapshot PID|SOCKET -o FILE` writes a capture of one
// moment of a running process that serves its ledger (Config::live, `memtrace run
// --live`, MEMTRACE_LIVE=1): the blocks live then, one allocation record each, and a
// trailer with the process's counters up to then (sinks/snapshot_capture.h). Every
// command reads it: summary, top, diff (two snapshots: what changed between them),
// report, verify.
//
//   memtrace snapshot 4242 -o before.mtb
//   ... the program runs on ...
//   memtrace snapshot 4242 -o after.mtb
//   memtrace diff before.mtb after.mtb
//
// The capture is the binary encoding whatever FILE is named. It is received into
// FILE.partial and renamed to FILE only once whole (it ends with its trailer), so FILE is
// never a capture cut short.
//
// Exit status: 0; 1 when the process or its socket cannot be reached (none, not
// serving, another user's), refuses (more live blocks than a capture copies), or stops
// sending; 2 bad usage or FILE cannot be written.
//
// Thread safety: called from main() only.

#ifndef MEMTRACE_CLI_SNAPSHOT_COMMAND_H_
#define MEMTRACE_CLI_SNAPSHOT_COMMAND_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "cli/command_line.h"

namespace memtrace {

extern const CommandSpec kSnapshotSpec;

int SnapshotCommand(int argc, char** argv);

// What was received: the capture's size in bytes, its events (one per live block), and
// the pid of the process that sent it (0 when unknown).
struct SnapshotReceived {
  uint64_t bytes = 0;
  uint64_t blocks = 0;
  pid_t pid = 0;
};

// Asks the process serving `socket_path` for a capture of this moment and writes it to
// `path` (through `path`.partial, renamed once whole). Errors say what failed and what to
// do; nothing is left at `path` then.
absl::StatusOr<SnapshotReceived> FetchSnapshotCapture(const std::string& socket_path,
                                                      const std::string& path);

}  // namespace memtrace

#endif  // MEMTRACE_CLI_SNAPSHOT_COMMAND_H_
