// Copyright 2026 The memtrace Authors.
//
// preload_test_support.h: what the interposer's tests (tests/preload_*_test.cc) share. They
// run tests/preload_target.cc and other programs under the interposer (preload/); the
// target counts its own operations (odd "marker" sizes that glibc never uses) and prints
// them, and a test replays the capture independently (by address, in capture order) and
// compares.

#ifndef MEMTRACE_TESTS_PRELOAD_TEST_SUPPORT_H_
#define MEMTRACE_TESTS_PRELOAD_TEST_SUPPORT_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "analysis/capture_reader.h"

namespace memtrace {

// The paths of the CLI, the interposer and the programs the tests run (the tests' data,
// preload_test_programs in tests/BUILD.bazel).
const std::string& Cli();
const std::string& Preload();
const std::string& Target();
const std::string& EarlyAllocations();

// The files in `dir`, sorted.
std::vector<std::string> FilesIn(const std::string& dir);

// The program's own counts, from its "allocs=A frees=F live_count=C live_bytes=B
// in_place=I moved=M" line (-1: not on it).
struct Counts {
  int64_t allocs = -1;
  int64_t frees = -1;
  int64_t live_count = -1;
  int64_t live_bytes = -1;
  int64_t in_place = -1;  // reallocs that kept the block where it was
  int64_t moved = -1;     // reallocs that moved it
  int64_t calls = -1;     // malloc-family calls that allocated (mode `calls` only)
};

// The counts of the first such line of `out` (the program's stdout).
Counts ParseCounts(const std::string& out);

// A replay of a capture, independent of the analyzer: releases pair with the allocation
// their `of` ticket names (docs/capture-format.md), or with the oldest live block at the
// address when the ticket is unknown. (Inside one drainer epoch a capture may list a
// reuse of an address before the release that freed it, so address order alone is not
// enough.)
struct Replay {
  std::string source;
  std::string header;
  bool has_trailer = false;
  std::string trailer;
  Counts markers{0, 0, 0, 0, 0, 0, -1};
  int64_t unknown_releases = 0;  // releases the replay could not pair
  // Every block's bytes, in the capture's order: live at the end, and the most live at once
  // (the high-water of that order, which is the program's own for a single-threaded one).
  int64_t live_bytes = 0;
  int64_t high_water_bytes = 0;
  std::map<uint32_t, CaptureRecord> sites;
  std::vector<CaptureRecord> marker_allocs;
};

// Replays the capture at `path`; `status` says whether it could be read.
Replay ReplayCapture(const std::string& path, absl::Status* status);

// The line of `out` (a table `memtrace top` printed) that contains `label`, or "".
std::string RowOf(const std::string& out, const std::string& label);

// The value of `name` in the one-line JSON object `json` (a header or trailer), without
// its quotes; "" when it is not there.
std::string Field(const std::string& json, const std::string& name);

// Expects the replay's markers to be the program's own counts.
void ExpectMarkersMatch(const Replay& r, const Counts& program);

// Replays `capture` and expects it whole (a trailer saying complete) with the program's
// markers as its `program_out` counts them.
void ExpectCompleteAndMatching(const std::string& capture, const std::string& program_out);

// Starts argv under the interposer (LD_PRELOAD, MEMTRACE_OUTPUT=`capture`, and `env`'s
// NAME=VALUE settings) without waiting for it; its stdout goes to `out`. Returns its pid,
// or -1.
pid_t SpawnTraced(const std::vector<std::string>& argv, const std::string& capture,
                  const std::string& out, const std::vector<std::string>& env = {});

// Waits (at most 30 s) until the file `out` holds `text`.
bool WaitForOutput(const std::string& out, const std::string& text);

// How many allocations of `size` bytes a capture records, and how many releases.
struct SizeCounts {
  int64_t allocs = 0;
  int64_t frees = 0;
};
SizeCounts CountAllocsOfSize(const std::string& capture, uint64_t size);

// The interposer, the CLI and the programs the interposer is preloaded into are built
// with UBSan in place of ASan or TSan under those configurations (preload_test_programs in
// tests/BUILD.bazel; bazel/preloadable.bzl says why no other sanitizer can share a process
// with the interposer). The tests themselves keep the configuration's sanitizer.
class PreloadTest : public ::testing::Test {};

}  // namespace memtrace

#endif  // MEMTRACE_TESTS_PRELOAD_TEST_SUPPORT_H_
