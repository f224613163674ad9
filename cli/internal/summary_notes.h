// Copyright 2026 The memtrace Authors.
//
// summary_notes.h: the notes `memtrace summary` prints under its table and integrity block,
// each only when the capture calls for it: the allocator that came before the interposer,
// a forked child's inherited blocks, what the libraries' constructors allocated before
// memtrace started, call sites past the bound, the signal that ended the program, the
// exec (or unshare) that ended the capture, and the children memtrace did not follow.
// Each says what the figures above leave out and how to trace it next time.
//
// Private to cli/: only cli/summary_command.cc includes it.
//
// Thread safety: main() only (they print to stdout).
//
// Example:
//
//   PrintExecNote(blocks, path, s->trace_children);
//   PrintSignalNote(blocks);

#ifndef MEMTRACE_CLI_INTERNAL_SUMMARY_NOTES_H_
#define MEMTRACE_CLI_INTERNAL_SUMMARY_NOTES_H_

#include <optional>
#include <string>

#include "analysis/analyzer.h"
#include "analysis/trailer.h"

namespace memtrace::cli_internal {

// The program's calls to malloc and free reached another allocator, loaded before the
// interposer (CaptureSummary::malloc_from): what that leaves out of the figures.
void PrintShadowNote(const CaptureSummary& s);

// A forked child's capture (memtrace run --forks) starts with what it inherited.
void PrintForkNote(const CaptureSummary& s);

// What the program's libraries allocated and released in their constructors, before
// the interposer's ran (the loader runs them first): not in the capture.
void PrintBeforeStartNote(const std::optional<TrailerBlocks>& blocks);
// Memory over time, from the trailer's samples (runtime/usage_sample.h): live bytes and
// the resident set at the first and last sample, and their highest, with when; for a run
// sampled at least three times (beyond its start and end).
void PrintTimelineNote(const std::optional<TrailerBlocks>& blocks);
// For a summary at a time (--at-time): the recorder's last sample at or before `at_unix_ns`
// (live bytes in total, per layer and for the scopes it names, and the resident set),
// and, where the capture's events stop before that time (a size limit), that the table
// is the state where they stop.
void PrintSampledAtNote(const std::optional<TrailerBlocks>& blocks, const CaptureSummary& s,
                        int64_t at_unix_ns);

// Allocations past the bound on distinct call sites went to one "other sites" row: how to
// keep them apart next time.
void PrintSiteOverflowNote(const std::optional<TrailerBlocks>& blocks, const CaptureSummary& s);

// A capture finished as a signal ended the program: a crash (partial), or a signal sent
// to stop it that it left to the default action (complete).
void PrintSignalNote(const std::optional<TrailerBlocks>& blocks);

// A capture the interposer ended at an exec holds the first program image only. When the
// program is a wrapper (a pyenv shim, a launcher script), the program the user meant ran
// after it: say where it went and how to trace it.
void PrintExecNote(const std::optional<TrailerBlocks>& blocks, const std::string& path,
                   bool trace_children);

// A process that forked children memtrace did not follow (no --forks): a daemon's real
// work, a server's workers, ran in them.
void PrintUntracedForksNote(const std::optional<TrailerBlocks>& blocks, bool trace_children,
                            bool trace_forks);

}  // namespace memtrace::cli_internal

#endif  // MEMTRACE_CLI_INTERNAL_SUMMARY_NOTES_H_
