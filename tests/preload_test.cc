// Copyright 2026 The memtrace Authors.
//
// The interposer (preload/) on a real program: tests/preload_target.cc, run through
// `memtrace run` or with LD_PRELOAD directly. The program counts its own operations (odd
// "marker" sizes that glibc never uses) and prints them; each test replays the capture
// independently (by address, in capture order) and compares. Process events get their
// documented outcomes: exit() from a thread, fork, exec, a crash; bad settings warn and
// fall back; a static program and the CLI itself are never traced.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "analysis/capture_reader.h"
#include "runtime/internal/cpu_list.h"
#include "tests/fake_debuginfod.h"
#include "tests/run_program.h"
#include "tests/std_container_frames.h"
#include "tests/test_paths.h"

namespace memtrace {
namespace {

const std::string& Cli() {
  static const std::string path = Runfile("cli/memtrace");
  return path;
}
const std::string& Preload() {
  static const std::string path = Runfile("preload/libmemtrace_preload.so");
  return path;
}
const std::string& Target() {
  static const std::string path = Runfile("tests/preload_target");
  return path;
}
const std::string& EarlyAllocations() {
  static const std::string path = Runfile("tests/early_allocations");
  return path;
}
const std::string& OwnEnvironment() {
  static const std::string path = Runfile("tests/own_environment");
  return path;
}
const std::string& Plugin() {
  static const std::string path = Runfile("tests/libplugin.so");
  return path;
}
const std::string& OtherMalloc() {
  static const std::string path = Runfile("tests/libother_malloc.so");
  return path;
}

// The files in `dir`, sorted.
std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> files;
  const Result ls = RunProgram({"/bin/ls", dir}, {});
  for (absl::string_view name : absl::StrSplit(ls.out, '\n', absl::SkipEmpty())) {
    files.emplace_back(name);
  }
  return files;
}

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

Counts ParseCounts(const std::string& out) {
  Counts c;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (line.substr(0, 7) != "allocs=" || c.allocs >= 0) continue;  // the first line
    for (absl::string_view field : absl::StrSplit(line, ' ')) {
      const std::pair<std::string, std::string> kv = absl::StrSplit(field, '=');
      int64_t v = 0;
      if (!absl::SimpleAtoi(kv.second, &v)) continue;
      if (kv.first == "allocs") c.allocs = v;
      if (kv.first == "frees") c.frees = v;
      if (kv.first == "live_count") c.live_count = v;
      if (kv.first == "live_bytes") c.live_bytes = v;
      if (kv.first == "in_place") c.in_place = v;
      if (kv.first == "moved") c.moved = v;
      if (kv.first == "calls") c.calls = v;
    }
  }
  return c;
}

bool IsMarker(uint64_t size) { return size >= 50001 && size <= 59999 && size % 2 == 1; }

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

Replay ReplayCapture(const std::string& path, absl::Status* status) {
  Replay r;
  struct LiveBlock {
    uint64_t addr;
    uint64_t size;
  };
  std::map<uint64_t, LiveBlock> live;                    // ticket -> block
  std::map<uint64_t, std::vector<uint64_t>> by_address;  // address -> tickets, oldest first
  auto add = [&](uint64_t ticket, uint64_t addr, uint64_t size) {
    live[ticket] = LiveBlock{addr, size};
    by_address[addr].push_back(ticket);
    r.live_bytes += static_cast<int64_t>(size);
    r.high_water_bytes = std::max(r.high_water_bytes, r.live_bytes);
  };
  // Removes the block `of` names (or the oldest at `addr`); its size, or -1 if none.
  auto take = [&](uint64_t of, uint64_t addr) -> int64_t {
    auto it = live.find(of);
    if (it == live.end() || it->second.addr != addr) {
      auto at = by_address.find(addr);
      if (at == by_address.end() || at->second.empty()) return -1;
      it = live.find(at->second.front());
    }
    const LiveBlock block = it->second;
    const uint64_t ticket = it->first;
    live.erase(it);
    std::vector<uint64_t>& tickets = by_address[block.addr];
    tickets.erase(std::find(tickets.begin(), tickets.end(), ticket));
    if (tickets.empty()) by_address.erase(block.addr);
    r.live_bytes -= static_cast<int64_t>(block.size);
    return static_cast<int64_t>(block.size);
  };
  auto adjust = [&](int64_t size, int sign) {
    if (size < 0 || !IsMarker(static_cast<uint64_t>(size))) return;
    r.markers.live_bytes += sign * size;
  };
  // Per thread: the size of the block its last remap released. A move's two halves may
  // be applied in different epochs, with other threads' records between them.
  std::map<uint32_t, int64_t> moving;
  *status = ReadCapture(path, [&](const CaptureRecord& rec) {
    switch (rec.type) {
      case LineType::kHeader:
        r.source = rec.source;
        r.header = rec.raw;
        break;
      case LineType::kSite: r.sites[rec.id] = rec; break;
      case LineType::kAlloc:
        add(rec.ticket, rec.addr, rec.size);
        if (IsMarker(rec.size)) {
          ++r.markers.allocs;
          ++r.markers.live_count;
          r.markers.live_bytes += static_cast<int64_t>(rec.size);
          r.marker_allocs.push_back(rec);
        }
        break;
      case LineType::kFree: {
        const int64_t size = take(rec.of, rec.addr);
        if (size < 0) {
          ++r.unknown_releases;
        } else if (IsMarker(static_cast<uint64_t>(size))) {
          ++r.markers.frees;
          --r.markers.live_count;
          r.markers.live_bytes -= size;
        }
        break;
      }
      case LineType::kResize: {
        // The block keeps its identity; a marker resized to a marker changes bytes only.
        const int64_t size = take(rec.of, rec.addr);
        if (size < 0) {
          ++r.unknown_releases;
          break;
        }
        if (IsMarker(static_cast<uint64_t>(size))) ++r.markers.in_place;
        adjust(size, -1);
        adjust(static_cast<int64_t>(rec.size), +1);
        add(rec.ticket, rec.addr, rec.size);
        break;
      }
      case LineType::kRemap:
        moving[rec.thread] = take(rec.of, rec.addr);
        if (moving[rec.thread] < 0) ++r.unknown_releases;
        if (moving[rec.thread] > 0 && IsMarker(static_cast<uint64_t>(moving[rec.thread]))) {
          ++r.markers.moved;
        }
        break;
      case LineType::kRemapTarget:
        add(rec.ticket, rec.addr, rec.size);
        adjust(moving[rec.thread], -1);
        adjust(static_cast<int64_t>(rec.size), +1);
        break;
      case LineType::kTrailer:
        r.has_trailer = true;
        r.trailer = rec.raw;
        break;
      default: break;
    }
    return absl::OkStatus();
  });
  return r;
}

// The line of `out` (a table `memtrace top` printed) that contains `label`, or "".
std::string RowOf(const std::string& out, const std::string& label) {
  const size_t at = out.find(label);
  if (at == std::string::npos) return "";
  const size_t begin = out.rfind('\n', at) + 1;  // npos + 1 is 0: the first line
  return out.substr(begin, out.find('\n', at) - begin);
}

std::string Field(const std::string& json, const std::string& name) {
  const std::string key = "\"" + name + "\":";
  const size_t at = json.find(key);
  if (at == std::string::npos) return "";
  size_t end = at + key.size();
  if (json[end] == '"') return json.substr(end + 1, json.find('"', end + 1) - end - 1);
  while (end < json.size() && json[end] != ',' && json[end] != '}') ++end;
  return json.substr(at + key.size(), end - at - key.size());
}

void ExpectMarkersMatch(const Replay& r, const Counts& program) {
  ASSERT_GE(program.allocs, 0) << "the program printed no counts";
  EXPECT_EQ(r.markers.allocs, program.allocs);
  EXPECT_EQ(r.markers.frees, program.frees);
  EXPECT_EQ(r.markers.live_count, program.live_count);
  EXPECT_EQ(r.markers.live_bytes, program.live_bytes);
  // Every realloc of a marker, as the program saw it: in place or moved.
  if (program.in_place >= 0) {
    EXPECT_EQ(r.markers.in_place, program.in_place);
  }
  if (program.moved >= 0) {
    EXPECT_EQ(r.markers.moved, program.moved);
  }
}

// Replays `capture` and expects it whole (a trailer saying complete) with the program's
// markers as its `program_out` counts them.
void ExpectCompleteAndMatching(const std::string& capture, const std::string& program_out) {
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.trailer, "complete"), "true") << r.trailer;
  ExpectMarkersMatch(r, ParseCounts(program_out));
}

// Starts argv under the interposer (LD_PRELOAD, MEMTRACE_OUTPUT=`capture`) without
// waiting for it; its stdout goes to `out`. Returns its pid, or -1.
pid_t SpawnTraced(const std::vector<std::string>& argv, const std::string& capture,
                  const std::string& out) {
  return Spawn(argv, {"LD_PRELOAD=" + Preload(), "MEMTRACE_OUTPUT=" + capture}, out, "");
}

// Waits (at most 30 s) until the file `out` holds `text`.
bool WaitForOutput(const std::string& out, const std::string& text) {
  for (int i = 0; i < 30000 && ReadFile(out).find(text) == std::string::npos; ++i) usleep(1000);
  return ReadFile(out).find(text) != std::string::npos;
}

// The interposer, the CLI and the programs the interposer is preloaded into are built
// with UBSan in place of ASan or TSan under those configurations (preload_test_programs in
// tests/BUILD.bazel; bazel/preloadable.bzl says why no other sanitizer can share a process
// with the interposer). This test itself keeps the configuration's sanitizer.
class PreloadTest : public ::testing::Test {};

// In both encodings: binary (.mtb, the default) and JSONL.
TEST_F(PreloadTest, EveryEntryPointAcrossThreadsMatchesTheProgramsOwnCounts) {
  for (const char* extension : {".mtb", ".jsonl"}) {
    SCOPED_TRACE(extension);
    const std::string capture = TempDir() + "/basic" + extension;
    const Result run =
        RunProgram({Cli(), "run", "--output=" + capture, "--", Target(), "basic"}, {});
    ASSERT_EQ(run.status, 0) << run.err;
    EXPECT_NE(run.err.find("capture complete"), std::string::npos) << run.err;
    // After the summary, where to look next.
    EXPECT_NE(run.err.find("next: memtrace top " + capture + " "), std::string::npos) << run.err;
    EXPECT_EQ(ReadFile(capture).substr(0, 8) == "MTRACEB3", extension == std::string(".mtb"));
    absl::Status s;
    const Replay r = ReplayCapture(capture, &s);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(r.source, "preload");
    ASSERT_TRUE(r.has_trailer);
    ExpectMarkersMatch(r, ParseCounts(run.out));
    EXPECT_EQ(Field(r.trailer, "complete"), "true") << r.trailer;
    EXPECT_EQ(Field(r.trailer, "unknown_frees"), "0") << r.trailer;
    EXPECT_EQ(Field(r.trailer, "ended_by"), "exit");
    EXPECT_EQ(r.unknown_releases, 0);
    // Stacks were captured (depth 16 by default): marker sites carry frames.
    ASSERT_FALSE(r.marker_allocs.empty());
    const auto site = r.sites.find(r.marker_allocs.front().site);
    ASSERT_NE(site, r.sites.end());
    EXPECT_GE(site->second.frames.size(), 2u);
  }
}

// heaptrack's "calls to allocation functions": the summary's calls column and its JSON
// allocation_calls are the program's own count of its malloc-family calls (a realloc is
// one, in place or moved), beside allocs, which counts blocks. --min-size keeps the
// capture to the program's blocks (all of 80001 bytes or more), so nothing of libc's,
// libstdc++'s or the runtime's is in it.
TEST_F(PreloadTest, AllocationCallsAreTheProgramsOwnCountOfItsCalls) {
  const std::string capture = TempDir() + "/calls.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--min-size=80000", "--output=" + capture, "--", Target(), "calls"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  const Counts program = ParseCounts(run.out);
  ASSERT_GT(program.calls, 0) << run.out;
  ASSERT_GT(program.in_place, 0) << "the program resized nothing in place: " << run.out;
  ASSERT_GT(program.moved, 0) << "the program moved no block: " << run.out;
  const Result json = RunProgram({Cli(), "summary", "--json", capture}, {});
  ASSERT_EQ(json.status, 0) << json.err;
  const std::string totals = json.out.substr(json.out.find("\"totals\":"));
  EXPECT_EQ(Field(totals, "allocation_calls"), absl::StrCat(program.calls)) << json.out;
  // A block per allocation and per move.
  EXPECT_EQ(Field(totals, "allocated_count"), absl::StrCat(program.allocs + program.moved))
      << json.out;
  const Result table = RunProgram({Cli(), "summary", capture}, {});
  ASSERT_EQ(table.status, 0) << table.err;
  const std::vector<std::string> header =
      absl::StrSplit(RowOf(table.out, "peak bound"), ' ', absl::SkipEmpty());
  const std::vector<std::string> total =
      absl::StrSplit(RowOf(table.out, "TOTAL"), ' ', absl::SkipEmpty());
  // "peak bound" is two words in the header, and each byte count two in a row.
  ASSERT_EQ(header.size(), 11u) << table.out;
  ASSERT_EQ(header[8], "calls") << table.out;
  ASSERT_EQ(total.size(), 14u) << table.out;
  EXPECT_EQ(total[10], absl::StrCat(program.calls)) << table.out;
}

// `memtrace run --exact-order` (MEMTRACE_EXACT_ORDER): the header says so, the
// many-threaded program's counts match its own, and the summary shows every peak with
// its bound (exact, or the interval the stamps allow).
TEST_F(PreloadTest, ExactOrderStampsEveryRecordAndSaysSo) {
  const std::string capture = TempDir() + "/exact_order.jsonl";
  const Result run = RunProgram(
      {Cli(), "run", "--exact-order", "--output=" + capture, "--", Target(), "threads"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.header, "exact_order"), "true") << r.header;
  EXPECT_EQ(Field(r.trailer, "complete"), "true") << r.trailer;
  EXPECT_EQ(r.unknown_releases, 0);
  const Result summary = RunProgram({Cli(), "summary", "--verbose", capture}, {});
  ASSERT_EQ(summary.status, 0) << summary.err;
  EXPECT_NE(summary.out.find("peak bound"), std::string::npos) << summary.out;
  EXPECT_NE(summary.out.find("  peaks      "), std::string::npos) << summary.out;

  const Result plain = RunProgram(
      {Cli(), "run", "--output=" + capture, "--", Target(), "threads"}, {});
  ASSERT_EQ(plain.status, 0) << plain.err;
  const Replay p = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Field(p.header, "exact_order"), "false") << p.header;
}

// `memtrace run --fence=seq_cst` (MEMTRACE_FENCE): epochs close with a fence on each
// recording thread instead of membarrier(), and the many-threaded program's counts still
// match its own. A value that is neither is a usage error.
TEST_F(PreloadTest, SeqCstFenceTracesThreadsExactlyWithoutMembarrier) {
  const std::string capture = TempDir() + "/fence_seq_cst.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--fence=seq_cst", "--output=" + capture, "--", Target(), "basic"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  const Result block = RunProgram({Cli(), "summary", "--verbose", capture}, {});
  EXPECT_NE(block.out.find("fence seq_cst"), std::string::npos) << block.out;
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  ExpectMarkersMatch(r, ParseCounts(run.out));
  EXPECT_EQ(Field(r.trailer, "complete"), "true") << r.trailer;
  EXPECT_EQ(Field(r.trailer, "uses_membarrier"), "false") << r.trailer;
  EXPECT_EQ(r.unknown_releases, 0);

  const Result usage = RunProgram({Cli(), "run", "--fence=mfence", "--", Target()}, {});
  EXPECT_EQ(usage.status, 2);
  EXPECT_NE(usage.err.find("--fence=mfence is not \"membarrier\" or \"seq_cst\""),
            std::string::npos)
      << usage.err;
}

// A setting in the environment that would not be used is named, never ignored without a
// word: through `memtrace run`, one its flags set (the flag wins); and, however the
// interposer is loaded, a MEMTRACE_ name that is no setting. A setting run has no flag for
// (MEMTRACE_RING_LOG2) reaches the program.
TEST_F(PreloadTest, SettingsThatWouldNotBeUsedAreNamed) {
  const std::string capture = TempDir() + "/unused_settings.jsonl";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "basic"},
      {"MEMTRACE_STACK_DEPTH=3", "MEMTRACE_OUPUT=" + TempDir() + "/elsewhere.mtb",
       "MEMTRACE_RING_LOG2=12"});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("memtrace run: MEMTRACE_STACK_DEPTH=3 in the environment is not "
                         "used: memtrace run sets MEMTRACE_STACK_DEPTH from --depth"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("memtrace: MEMTRACE_OUPUT is not a memtrace setting and is ignored "
                         "(did you mean MEMTRACE_OUTPUT?)"),
            std::string::npos)
      << run.err;
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.trailer, "ring_capacity"), "4096") << r.trailer;

  const std::string direct = TempDir() + "/unused_settings_direct.mtb";
  const Result preloaded = RunProgram({Target(), "basic"},
                                      {"LD_PRELOAD=" + Preload(), "MEMTRACE_OUTPUT=" + direct,
                                       "MEMTRACE_STACK_DEPT=4"});
  ASSERT_EQ(preloaded.status, 0) << preloaded.err;
  EXPECT_NE(preloaded.err.find("memtrace: MEMTRACE_STACK_DEPT is not a memtrace setting and "
                               "is ignored (did you mean MEMTRACE_STACK_DEPTH?)"),
            std::string::npos)
      << preloaded.err;
}

// Without --output (or MEMTRACE_OUTPUT), the capture is memtrace-<pid>.mtb in the working
// directory, in the binary encoding.
TEST_F(PreloadTest, DefaultCaptureIsBinary) {
  for (const bool through_cli : {true, false}) {
    const std::string dir = TempDir() + (through_cli ? "/default_cli" : "/default_env");
    mkdir(dir.c_str(), 0755);
    const std::string command =
        through_cli ? absl::StrCat("cd '", dir, "' && exec '", Cli(), "' run --quiet -- '",
                                   Target(), "' stack")
                    : absl::StrCat("cd '", dir, "' && LD_PRELOAD='", Preload(), "' exec '",
                                   Target(), "' stack");
    const Result run = RunProgram({"/bin/sh", "-c", command}, {});
    ASSERT_EQ(run.status, 0) << run.err;
    const std::vector<std::string> files = FilesIn(dir);
    ASSERT_EQ(files.size(), 1u) << absl::StrJoin(files, " ");
    EXPECT_TRUE(absl::StartsWith(files[0], "memtrace-")) << files[0];
    EXPECT_TRUE(absl::EndsWith(files[0], ".mtb")) << files[0];
    const std::string capture = dir + "/" + files[0];
    EXPECT_EQ(ReadFile(capture).substr(0, 8), "MTRACEB3");
    absl::Status s;
    const Replay r = ReplayCapture(capture, &s);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(r.markers.allocs, 1);
    EXPECT_TRUE(r.has_trailer);
  }
}

TEST_F(PreloadTest, ExitFromAnotherThreadWritesTheTrailer) {
  const std::string capture = TempDir() + "/exit_thread.mtb";
  const Result run =
      RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "exit-thread"}, {});
  EXPECT_EQ(run.status, 5) << "the program's exit status passes through; " << run.err;
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.trailer, "ended_by"), "exit");
  ExpectMarkersMatch(r, ParseCounts(run.out));
}

// A thread's stack holds the static TLS of every object loaded, and the creator of a
// thread with a small stack sized it for the program alone. pthread_create() refuses a
// 32 KiB stack (Node.js's inspector thread) when static TLS takes too much of it, so
// memtrace keeps about 2 KiB there and maps its call-stack state on a thread's first walk.
TEST_F(PreloadTest, AThreadWithA32KiBStackStarts) {
  const std::string capture = TempDir() + "/small_stack.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "small-stack"}, {});
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  ExpectCompleteAndMatching(capture, run.out);
}

// An allocator ahead of the interposer in the lookup order (a library preloaded before
// it; Chromium's built into the executable) takes the program's malloc and free calls:
// the interposer says so on stderr and in the header, and `verify` fails the capture,
// whose frees may be missing, instead of calling it complete. Preloaded after the
// interposer, the same library is only the allocator it forwards to.
TEST_F(PreloadTest, AnAllocatorAheadOfTheInterposerIsNamedAndTheCaptureFailsVerify) {
  const std::string capture = TempDir() + "/shadowed.mtb";
  const Result run = RunProgram(
      {Target(), "basic"},
      {"LD_PRELOAD=" + OtherMalloc() + ":" + Preload(), "MEMTRACE_OUTPUT=" + capture});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("calls to malloc and free reach the allocator of " + OtherMalloc()),
            std::string::npos)
      << run.err;
  const Result verify = RunProgram({Cli(), "verify", capture}, {});
  EXPECT_EQ(verify.status, 1) << verify.out;
  EXPECT_NE(verify.out.find("reached the allocator of " + OtherMalloc()), std::string::npos)
      << verify.out;

  // An executable that takes malloc's address makes its own PLT entry malloc's address
  // for everyone, and its calls still reach the interposer: nothing to say, and every
  // block is there.
  const std::string plt = TempDir() + "/plt.mtb";
  const Result takes = RunProgram(
      {Cli(), "run", "--output=" + plt, "--", Runfile("tests/takes_malloc_address")}, {});
  ASSERT_EQ(takes.status, 0) << takes.err;
  EXPECT_EQ(takes.err.find("reach the allocator of"), std::string::npos) << takes.err;
  const Result plt_verify = RunProgram({Cli(), "verify", plt}, {});
  EXPECT_EQ(plt_verify.status, 0) << plt_verify.out;
  absl::Status plt_status;
  EXPECT_EQ(ReplayCapture(plt, &plt_status).markers.allocs, 100);

  // The same program with an allocator preloaded ahead of the interposer: the allocator
  // is named, not the program whose PLT entry is malloc's address.
  const std::string both = TempDir() + "/plt_shadowed.mtb";
  const Result shadowed_plt =
      RunProgram({Runfile("tests/takes_malloc_address")},
                 {"LD_PRELOAD=" + OtherMalloc() + ":" + Preload(), "MEMTRACE_OUTPUT=" + both});
  ASSERT_EQ(shadowed_plt.status, 0) << shadowed_plt.err;
  EXPECT_NE(shadowed_plt.err.find("calls to malloc and free reach the allocator of " +
                                  OtherMalloc() + ","),
            std::string::npos)
      << shadowed_plt.err;
  const Result both_verify = RunProgram({Cli(), "verify", both}, {});
  EXPECT_EQ(both_verify.status, 1) << both_verify.out;
  EXPECT_NE(both_verify.out.find("reached the allocator of " + OtherMalloc() + ","),
            std::string::npos)
      << both_verify.out;

  const std::string after = TempDir() + "/after.mtb";
  const Result ok = RunProgram(
      {Target(), "basic"},
      {"LD_PRELOAD=" + Preload() + ":" + OtherMalloc(), "MEMTRACE_OUTPUT=" + after});
  ASSERT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.err.find("reach the allocator of"), std::string::npos) << ok.err;
  ExpectCompleteAndMatching(after, ok.out);
}

// unshare(CLONE_NEWUSER) needs a process with one thread, and memtrace's would be the
// others: the interposer finishes the capture and stops them first, and the program goes
// on untraced. Before, the call failed with EINVAL (`memtrace run -- unshare -U true`).
TEST_F(PreloadTest, UnshareOfAUserNamespaceFinishesTheCaptureAndSucceeds) {
  const Result untraced = RunProgram({Target(), "unshare"}, {});
  if (untraced.status != 0) {
    GTEST_SKIP() << "no user namespaces here, even untraced: " << untraced.out;
  }
  const std::string capture = TempDir() + "/unshare.mtb";
  const Result run =
      RunProgram({Cli(), "run", "--output=" + capture, "--", Target(), "unshare"}, {});
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("unshared"), std::string::npos) << run.out;
  ExpectCompleteAndMatching(capture, run.out);  // the markers allocated before
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  EXPECT_EQ(Field(r.trailer, "ended_by"), "unshare(CLONE_NEWUSER)") << r.trailer;
  EXPECT_NE(run.err.find("note: the capture ends where the program called "
                         "unshare(CLONE_NEWUSER)"),
            std::string::npos)
      << run.err;
}

// With a thread of the program's own running, unshare(CLONE_NEWUSER) fails whatever
// memtrace does: it fails as it would untraced, and tracing goes on.
TEST_F(PreloadTest, UnshareInAProgramWithThreadsFailsAsUntracedAndTracingGoesOn) {
  const Result untraced = RunProgram({Target(), "unshare"}, {});
  if (untraced.status != 0) {
    GTEST_SKIP() << "no user namespaces here, even untraced: " << untraced.out;
  }
  const std::string capture = TempDir() + "/unshare_threaded.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "unshare-threaded"}, {});
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("unshare failed: Invalid argument"), std::string::npos) << run.out;
  ExpectCompleteAndMatching(capture, run.out);  // all 60 markers: tracing went on
  absl::Status s;
  EXPECT_EQ(Field(ReplayCapture(capture, &s).trailer, "ended_by"), "exit");
}

// A thread whose first allocation is glibc's own, inside pthread_getattr_np() for that
// thread, which holds the thread's lock: the walk must not ask glibc for the thread's
// stack then (it would wait for that lock forever, as every JVM thread would).
TEST_F(PreloadTest, AllocationInsidePthreadGetattrOfItsOwnThreadDoesNotDeadlock) {
  const std::string capture = TempDir() + "/getattr.mtb";
  const Result run =
      RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "getattr"}, {});
  ASSERT_EQ(run.status, 0) << "128 + 14 is SIGALRM: a deadlock; " << run.err;
  EXPECT_NE(run.out.find("stack of "), std::string::npos) << run.out;
  ExpectCompleteAndMatching(capture, run.out);
}

// exit() runs the main thread's TLS destructors before its atexit handlers; the frees
// made there are recorded in the main thread's ring like any other, and every one is
// matched. (With the exit hook a thread_local destructor, each took a fresh 2 MiB ring.)
TEST_F(PreloadTest, FreesInAtexitHandlersAreRecordedInTheMainThreadsRing) {
  const std::string capture = TempDir() + "/atexit.mtb";
  const Result run =
      RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "atexit"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.trailer, "complete"), "true") << r.trailer;
  EXPECT_EQ(Field(r.trailer, "ended_by"), "exit");
  const Counts program = ParseCounts(run.out);
  EXPECT_EQ(program.frees, 400) << run.out;
  EXPECT_EQ(program.live_count, 0) << run.out;
  ExpectMarkersMatch(r, program);
  // The main thread's ring; the interposer's own start-up may add one more.
  EXPECT_LE(std::stoi(Field(r.trailer, "rings")), 2) << r.trailer;
}

// _Fork() (glibc 2.34) runs no fork handlers, so the child keeps a copy of the tracer that
// says it is tracing, with no drainer in the child to empty its ring. Once the ring is
// full its records fail at once (the recorder sees it is not in the drainer's process)
// instead of each waiting a second for room: before, the child's 100,000 allocations
// took about that many seconds.
TEST_F(PreloadTest, AChildForkedWithoutForkHandlersIsNotStalled) {
  const std::string capture = TempDir() + "/raw_fork.mtb";
  const Result run =
      RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "raw-fork"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("child finished"), std::string::npos) << run.out;
  ExpectCompleteAndMatching(capture, run.out);  // the parent's markers alone
}

// A plugin loaded, used and unloaded: the capture's module map still lists it (the
// interposer notes the modules before each dlclose()), so the block it allocated is
// attributed to its function, not to "??".
TEST_F(PreloadTest, CallSitesInAnUnloadedPluginStillSymbolize) {
  const std::string capture = TempDir() + "/plugin.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "plugin", Plugin()}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  ExpectCompleteAndMatching(capture, run.out);
  EXPECT_NE(ReadFile(capture).find("libplugin.so"), std::string::npos)
      << "the module map lists the plugin";
  const Result top = RunProgram({Cli(), "top", capture}, {});
  ASSERT_EQ(top.status, 0) << top.err;
  EXPECT_NE(top.out.find("memtrace_test_plugin_alloc"), std::string::npos) << top.out;
}

// A stripped program (Debian's ls: no .symtab, no debug information installed) has call
// sites that read "??"; `top` says under its table which file lacks symbols and where its
// debug information would be found, and the test program's own frames (built with -g) are
// not in that list.
TEST_F(PreloadTest, TopSaysWhereTheSymbolsOfUnnamedFramesWouldBe) {
  const std::string capture = TempDir() + "/stripped_ls.mtb";
  const Result run =
      RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", "/bin/ls", "/"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  const Result top = RunProgram({Cli(), "top", capture}, {});
  ASSERT_EQ(top.status, 0) << top.err;
  const size_t note = top.out.find("frames without a name (\"??\")");
  if (note == std::string::npos && access("/usr/lib/debug/.build-id", F_OK) == 0 &&
      top.out.find("?? (/usr/bin/ls") == std::string::npos) {
    GTEST_SKIP() << "this machine has debug information installed that names ls's frames";
  }
  ASSERT_NE(note, std::string::npos) << top.out;
  const std::string listed = top.out.substr(note);
  EXPECT_NE(listed.find("/usr/bin/ls ("), std::string::npos) << listed;
  EXPECT_NE(listed.find("/usr/lib/debug/.build-id/"), std::string::npos) << listed;
  // The same for scripts: top --json and peak --json carry the list.
  for (const char* command : {"top", "peak"}) {
    const Result json = RunProgram({Cli(), command, "--json", capture}, {});
    ASSERT_EQ(json.status, 0) << json.err;
    const size_t unresolved = json.out.find("\"unresolved\":[{");
    ASSERT_NE(unresolved, std::string::npos) << command << ": " << json.out;
    EXPECT_NE(json.out.find("{\"path\":\"/usr/bin/ls\",\"why\":\"no_symbols\"", unresolved),
              std::string::npos)
        << command << ": " << json.out;
  }

  const std::string own = TempDir() + "/stack_symbols.mtb";
  ASSERT_EQ(RunProgram({Cli(), "run", "--quiet", "--output=" + own, "--", Target(), "stack"}, {})
                .status,
            0);
  const Result own_top = RunProgram({Cli(), "top", own}, {});
  ASSERT_EQ(own_top.status, 0) << own_top.err;
  const size_t own_note = own_top.out.find("frames without a name");
  if (own_note != std::string::npos) {
    EXPECT_EQ(own_top.out.find(Target(), own_note), std::string::npos) << own_top.out;
  }
}

// A call site in a library stripped of every symbol reads "??" until a debuginfod server
// gives its debug information: `top` says where it would come from, asks the server
// DEBUGINFOD_URLS names (announcing that on stderr), and names the function.
TEST_F(PreloadTest, TopNamesFramesWithDebugInformationFromDebuginfod) {
  const std::string library = Runfile("tests/debuginfod_fixture/stripped.so");
  const std::string capture = TempDir() + "/debuginfod.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "plugin", library}, {});
  ASSERT_EQ(run.status, 0) << run.err;

  const Result unnamed = RunProgram({Cli(), "top", capture}, {});
  ASSERT_EQ(unnamed.status, 0) << unnamed.err;
  EXPECT_EQ(unnamed.out.find("memtrace_fixture::Allocate"), std::string::npos) << unnamed.out;
  const size_t note = unnamed.out.find("debuginfod_fixture/stripped.so (");
  ASSERT_NE(note, std::string::npos) << unnamed.out;
  EXPECT_NE(unnamed.out.find("or set DEBUGINFOD_URLS to fetch its debug information", note),
            std::string::npos)
      << unnamed.out;

  FakeDebuginfod server;
  ASSERT_FALSE(server.url().empty());
  const std::vector<std::string> env = {"DEBUGINFOD_URLS=" + server.url(),
                                        "DEBUGINFOD_CACHE_PATH=" + TempDir() + "/debuginfod",
                                        "no_proxy=127.0.0.1"};
  // A server without it: the note says so.
  const Result missing = RunProgram({Cli(), "top", capture}, env);
  ASSERT_EQ(missing.status, 0) << missing.err;
  EXPECT_NE(missing.out.find("debuginfod: no server in DEBUGINFOD_URLS (" + server.url() +
                             ") has the debug information"),
            std::string::npos)
      << missing.out;
  EXPECT_NE(missing.err.find("memtrace: asking debuginfod for the debug information of "),
            std::string::npos)
      << missing.err;

  // The libdebuginfod client keeps a "not found" for a while: another cache for the rest.
  std::vector<std::string> served = env;
  served[1] += "-served";
  const std::string build_id = BuildIdOf(library);
  ASSERT_FALSE(build_id.empty());
  server.Serve(build_id, "debuginfo", Runfile("tests/debuginfod_fixture/debug"));
  const Result named = RunProgram({Cli(), "top", capture}, served);
  ASSERT_EQ(named.status, 0) << named.err;
  EXPECT_NE(named.out.find("memtrace_fixture::Allocate(unsigned long) ("), std::string::npos)
      << named.out;
  EXPECT_NE(named.out.find("debuginfod_fixture.cc:"), std::string::npos) << named.out;
  EXPECT_EQ(named.out.find("debuginfod_fixture/stripped.so ("), std::string::npos)
      << named.out;
}

// _exit() runs no destructors, the interposer's included: it finishes the capture first,
// on a thread of its own, and the program exits with its status.
TEST_F(PreloadTest, UnderscoreExitWritesTheTrailer) {
  const std::string capture = TempDir() + "/quick_exit.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "quick-exit"}, {});
  EXPECT_EQ(run.status, 7) << run.err;
  ExpectCompleteAndMatching(capture, run.out);
  EXPECT_NE(ReadFile(capture).find("\"ended_by\":\"_exit\""), std::string::npos);
}

// SIGTERM arriving while _exit()'s capture is being finished (a process pool's worker,
// terminated by its parent as it exits): the signal waits for the trailer, then ends the
// process. Ending it at once would leave the capture without a trailer, which happens to
// many of a process pool's workers under `--forks`.
TEST_F(PreloadTest, ASignalDuringTheExitFinishWaitsForTheTrailer) {
  // Delays from the _exit() call to the signal that span the few milliseconds the finish
  // takes here: at least one lands inside it.
  for (const int delay_us : {0, 200, 500, 1000, 2000, 3000, 5000}) {
    const std::string capture = absl::StrCat(TempDir(), "/quick_exit_sigterm", delay_us, ".mtb");
    const Result run = RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--",
                                   Target(), "quick-exit-under-sigterm",
                                   std::to_string(delay_us)},
                                  {});
    // Ended by the signal, or by _exit(7) when it got there first.
    EXPECT_TRUE(run.status == 128 + SIGTERM || run.status == 7) << run.status << run.err;
    ExpectCompleteAndMatching(capture, run.out);
    // Whichever began the finish names it: _exit(), or the signal when it landed before
    // _exit() handed the capture over.
    const std::string text = ReadFile(capture);
    EXPECT_TRUE(text.find("\"ended_by\":\"_exit\"") != std::string::npos ||
                text.find("\"ended_by\":\"signal 15\"") != std::string::npos)
        << delay_us;
  }
}

// The same from a SIGTERM handler that interrupted the program inside malloc() or free()
// (malloc's own locks and memtrace's record may be held there): the capture is finished by
// memtrace's thread, and the process ends with the handler's status. The handler says
// whether the signal found the program inside the allocator (status 0) or between its
// calls (10); a run of the latter kind is tried again.
TEST_F(PreloadTest, UnderscoreExitFromASignalHandlerWritesTheTrailer) {
  const std::string capture = TempDir() + "/exit_in_handler.mtb";
  const std::string out = TempDir() + "/exit_in_handler.out";
  int status = 0;
  for (int attempt = 0; attempt < 10; ++attempt) {
    const pid_t pid = SpawnTraced({Target(), "exit-in-handler"}, capture, out);
    ASSERT_GT(pid, 0);
    ASSERT_TRUE(WaitForOutput(out, "ready")) << "the program did not start";
    usleep(100000);  // well into its allocations
    ASSERT_EQ(kill(pid, SIGTERM), 0);
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status);
    if (WEXITSTATUS(status) != 10) break;  // 10: between two calls
  }
  ASSERT_EQ(WEXITSTATUS(status), 0) << "the signal never came inside malloc() or free()";
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.trailer, "ended_by"), "_exit") << r.trailer;
  EXPECT_EQ(r.unknown_releases, 0);
  EXPECT_EQ(r.markers.allocs, 10);
}

// Two call stacks that reach malloc through one function read the same in a listing:
// `top`, `peak` and the report add them up as one row marked [2 stacks], so the function
// ranks by all it allocated, and `top --stacks` shows each stack with its own counts
// (analysis/site_groups.h).
TEST_F(PreloadTest, StacksThatShareASiteNameAreOneRow) {
  const std::string capture = TempDir() + "/two_callers.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "two-callers"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  ExpectCompleteAndMatching(capture, run.out);
  auto rows_naming = [](const std::string& out, const std::string& name) {
    std::vector<std::string> rows;
    for (absl::string_view line : absl::StrSplit(out, '\n')) {
      if (!absl::StartsWith(line, "    #") && !absl::StartsWith(line, "  stack ") &&
          line.find(name) != absl::string_view::npos) {
        rows.emplace_back(line);
      }
    }
    return rows;
  };
  const Result top = RunProgram({Cli(), "top", "--stacks", capture}, {});
  ASSERT_EQ(top.status, 0) << top.err;
  const std::vector<std::string> rows = rows_naming(top.out, "::Inner(");
  ASSERT_EQ(rows.size(), 1u) << top.out;
  // allocated, allocs, calls, live, blocks: the five blocks of 50,023 bytes, each one
  // malloc, all still live.
  const std::vector<std::string> cells = absl::StrSplit(rows[0], ' ', absl::SkipEmpty());
  ASSERT_GE(cells.size(), 7u) << rows[0];
  EXPECT_EQ(cells[0] + " " + cells[1], "244.3 KiB") << rows[0];
  EXPECT_EQ(cells[2], "5") << rows[0];
  EXPECT_EQ(cells[3], "5") << rows[0];
  EXPECT_EQ(cells[6], "5") << rows[0];
  EXPECT_TRUE(absl::EndsWith(rows[0], " [2 stacks]")) << rows[0];
  // Each stack with its own counts, the larger first, and its own caller.
  const size_t left = top.out.find("  stack 1 of 2: 146.6 KiB in 3 allocations");
  const size_t right = top.out.find("  stack 2 of 2: 97.7 KiB in 2 allocations");
  ASSERT_NE(left, std::string::npos) << top.out;
  ASSERT_NE(right, std::string::npos) << top.out;
  const size_t from_left = top.out.find("::FromLeft(", left);
  const size_t from_right = top.out.find("::FromRight(", left);
  EXPECT_LT(from_left, right) << top.out;
  EXPECT_GT(from_right, right) << top.out;

  // --json: one row with both stacks' site ids and counts.
  const Result json = RunProgram({Cli(), "top", "--json", capture}, {});
  ASSERT_EQ(json.status, 0) << json.err;
  const size_t row = json.out.find("::Inner(");
  ASSERT_NE(row, std::string::npos) << json.out;
  const std::string from_row = json.out.substr(row);
  EXPECT_EQ(Field(from_row, "allocated_count"), "5") << from_row;
  const size_t stacks = from_row.find("\"stacks\":[");
  ASSERT_NE(stacks, std::string::npos) << from_row;
  EXPECT_EQ(Field(from_row.substr(stacks), "allocated_count"), "3") << from_row;
  const size_t second = from_row.find("},{\"site\":", stacks);
  ASSERT_NE(second, std::string::npos) << from_row;
  EXPECT_EQ(Field(from_row.substr(second), "allocated_count"), "2") << from_row;

  // peak: what held the high-water moment, by site, one row.
  const Result peak = RunProgram({Cli(), "peak", capture}, {});
  ASSERT_EQ(peak.status, 0) << peak.err;
  const std::vector<std::string> peak_rows = rows_naming(peak.out, "::Inner(");
  ASSERT_EQ(peak_rows.size(), 2u) << peak.out;  // the global list and the one scope's
  for (const std::string& r : peak_rows) {
    EXPECT_TRUE(absl::StartsWith(absl::StripLeadingAsciiWhitespace(r), "244.3 KiB")) << r;
    EXPECT_TRUE(absl::EndsWith(r, " [2 stacks]")) << r;
  }

  // The report's tables name it once, the same way.
  const std::string page = TempDir() + "/two_callers.html";
  const Result report = RunProgram({Cli(), "report", capture, "-o", page}, {});
  ASSERT_EQ(report.status, 0) << report.err;
  const std::string html = ReadFile(page);
  const std::string label = rows[0].substr(rows[0].find("(anonymous namespace)::Inner("));
  size_t named = 0;
  for (size_t at = html.find(label); at != std::string::npos; at = html.find(label, at + 1)) {
    ++named;
  }
  EXPECT_EQ(named, 3u) << "top sites, leaks and the peak's sites: " << label;
}

// A block allocated in code the compiler inlined: the inlined function, which called
// malloc, names the site at its own line, and `top --stacks` lists it above the function
// it was inlined into, that one at the line that called it, as gdb's backtrace does.
TEST_F(PreloadTest, InlinedFunctionsAreListedInStacks) {
  const std::string capture = TempDir() + "/inlined.mtb";
  const Result run =
      RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "inlined"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  const Result top = RunProgram({Cli(), "top", "--stacks", "--by=live", capture}, {});
  ASSERT_EQ(top.status, 0) << top.err;
  const size_t row = top.out.find(
      "interposer memtrace_inline_test::InlinedAllocate(unsigned long) (tests/inline_frames.cc:");
  ASSERT_NE(row, std::string::npos) << top.out;
  const size_t inlined =
      top.out.find("#0  memtrace_inline_test::InlinedAllocate(unsigned long) (", row);
  ASSERT_NE(inlined, std::string::npos) << top.out;
  const std::string inlined_line = top.out.substr(inlined, top.out.find('\n', inlined) - inlined);
  EXPECT_NE(inlined_line.find("inline_frames.cc:"), std::string::npos) << inlined_line;
  EXPECT_NE(inlined_line.find(") [inlined]"), std::string::npos) << inlined_line;
  const size_t own = top.out.find("#0  memtrace_inline_test::AllocateThroughInlined(", inlined);
  EXPECT_NE(own, std::string::npos) << top.out;

  // Named as an allocator function, the inlined function is passed over like any other:
  // the function it was inlined into names the site, at the line that called it.
  const Result wrapped = RunProgram(
      {Cli(), "top", "--allocator=memtrace_inline_test::InlinedAllocate*", capture}, {});
  ASSERT_EQ(wrapped.status, 0) << wrapped.err;
  EXPECT_NE(wrapped.out.find("memtrace_inline_test::AllocateThroughInlined(unsigned long) "
                             "(tests/inline_frames.cc:"),
            std::string::npos)
      << wrapped.out;
  EXPECT_NE(wrapped.out.find(") via memtrace_inline_test::InlinedAllocate(unsigned long)"),
            std::string::npos)
      << wrapped.out;

  const Result json = RunProgram({Cli(), "top", "--stacks", "--json", capture}, {});
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_NE(json.out.find("\"inlined\":[{\"function\":\"memtrace_inline_test::InlinedAllocate("
                          "unsigned long)\",\"file\":\""),
            std::string::npos)
      << json.out;

  // The folded export and the report's flame graph have it as a frame of its own, called
  // by the function it was inlined into.
  const Result folded = RunProgram({Cli(), "export", "--format=folded", capture}, {});
  ASSERT_EQ(folded.status, 0) << folded.err;
  EXPECT_NE(folded.out.find(";memtrace_inline_test::AllocateThroughInlined(unsigned long);"
                            "memtrace_inline_test::InlinedAllocate(unsigned long) 50039\n"),
            std::string::npos)
      << folded.out;
  const std::string page = TempDir() + "/inlined.html";
  const Result report = RunProgram({Cli(), "report", "-o", page, capture}, {});
  ASSERT_EQ(report.status, 0) << report.err;
  EXPECT_NE(ReadFile(page).find("\"memtrace_inline_test::InlinedAllocate(unsigned long) ("),
            std::string::npos);
}

// A C++ program allocates mostly through container libraries. Its sites are named after
// the program's functions that called the library, by the library function they called
// (its short name), not after std::_Vector_base::_M_allocate or std::allocator_traits.
// The fixture is built at -O2 with -g2, so push_back and make_shared are inlined frames.
TEST_F(PreloadTest, StandardLibraryFramesArePassedOverInSiteNames) {
  const std::string capture = TempDir() + "/std_containers.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "std-containers"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  ASSERT_NE(run.out.find("particles=1000 shared=1 map=100 hash_map=1000"), std::string::npos)
      << run.out;
  const Result top = RunProgram({Cli(), "top", "--limit=50", capture}, {});
  ASSERT_EQ(top.status, 0) << top.err;
  // The site's row: every allocation of that function, and nothing of std's own name.
  const auto row_of = [&](const std::string& label) { return RowOf(top.out, label); };
  const std::string vector_row = row_of(
      absl::StrCat("memtrace_std_test::GrowParticles(unsigned long) (tests/std_container_frames.cc:",
                   memtrace_std_test::kPushBackLine, ") via std::vector::push_back"));
  ASSERT_FALSE(vector_row.empty()) << top.out;
  // 1,000 pushed one at a time: capacities 1, 2, 4, ... 1024, eleven blocks.
  EXPECT_TRUE(absl::StrContains(vector_row, " 11 ")) << vector_row;
  EXPECT_FALSE(row_of(absl::StrCat("memtrace_std_test::MakeParticle() (tests/std_container_",
                                   "frames.cc:", memtrace_std_test::kMakeSharedLine,
                                   ") via std::make_shared"))
                   .empty())
      << top.out;
  const std::string map_row = row_of(
      absl::StrCat("memtrace_std_test::FillMap(int) (tests/std_container_frames.cc:",
                   memtrace_std_test::kMapInsertLine, ") via std::map::operator[]"));
  ASSERT_FALSE(map_row.empty()) << top.out;
  EXPECT_TRUE(absl::StrContains(map_row, " 100 ")) << map_row;
  // abseil's containers are passed over the same way.
  EXPECT_FALSE(RowOf(top.out, absl::StrCat("memtrace_std_test::FillHashMap(int) (tests/std_",
                                           "container_frames.cc:",
                                           memtrace_std_test::kHashMapInsertLine, ") via absl::"))
                   .empty())
      << top.out;
  EXPECT_FALSE(absl::StrContains(top.out, "_M_allocate")) << top.out;
  EXPECT_FALSE(absl::StrContains(top.out, "allocator_traits")) << top.out;

  // `top --stacks` keeps every frame, the library's too.
  const Result stacks = RunProgram({Cli(), "top", "--stacks", "--limit=50", capture}, {});
  ASSERT_EQ(stacks.status, 0) << stacks.err;
  EXPECT_TRUE(absl::StrContains(stacks.out, "_M_realloc_insert")) << stacks.out;
}

// How many allocations of `size` bytes a capture records, and how many releases.
struct SizeCounts {
  int64_t allocs = 0;
  int64_t frees = 0;
};
SizeCounts CountAllocsOfSize(const std::string& capture, uint64_t size) {
  SizeCounts c;
  std::set<uint64_t> live;  // addresses of live blocks of `size`
  const absl::Status s = ReadCapture(capture, [&](const CaptureRecord& r) {
    if (r.type == LineType::kAlloc && r.size == size) {
      ++c.allocs;
      live.insert(r.addr);
    } else if (r.type == LineType::kFree && live.erase(r.addr) != 0) {
      ++c.frees;
    }
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  return c;
}

// A library's constructor runs before the interposer's (the loader runs a library's
// constructors before those of the objects that need it, and LD_PRELOAD's comes first).
// What it allocates and releases is logged in order and recorded when tracing starts:
// each allocation at the stack that made it, not as "no call site", and each release
// after it, so the capture has every call. The library's churn is counted by the test
// from its own loop.
TEST_F(PreloadTest, AllocationsMadeBeforeTracingStartedAreRecordedInOrderWithTheirStacks) {
  const std::string capture = TempDir() + "/early.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", EarlyAllocations()}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  ASSERT_NE(run.out.find("table=yes kept=20"), std::string::npos) << run.out;
  const Result verify = RunProgram({Cli(), "verify", capture}, {});
  EXPECT_EQ(verify.status, 0) << verify.out << verify.err;

  const Result top = RunProgram({Cli(), "top", "--by=live", capture}, {});
  ASSERT_EQ(top.status, 0) << top.err;
  const std::string table =
      RowOf(top.out, "memtrace_early_test::BuildEarlyTable() (tests/early_allocator.cc:");
  ASSERT_FALSE(table.empty()) << top.out;
  EXPECT_TRUE(absl::StartsWith(absl::StripLeadingAsciiWhitespace(table), "48.9 KiB          1"))
      << table;
  // The newer blocks' row: 20,000 allocated (3.8 MiB) in as many calls, 20 live (3.9 KiB).
  const std::string kept =
      RowOf(top.out, "memtrace_early_test::ChurnBeforeStart() (tests/early_allocator.cc:");
  ASSERT_FALSE(kept.empty()) << top.out;
  EXPECT_TRUE(absl::StartsWith(absl::StripLeadingAsciiWhitespace(kept),
                               "3.8 MiB      20000      20000     3.9 KiB        20"))
      << kept;
  // The whole stack, through the constructor that called them.
  const Result stacks = RunProgram({Cli(), "top", "--stacks", "--by=live", capture}, {});
  ASSERT_EQ(stacks.status, 0) << stacks.err;
  EXPECT_TRUE(absl::StrContains(stacks.out, "memtrace_early_test::EarlyAllocatorInit()"))
      << stacks.out;

  // Every one of the churn's calls: 20,000 blocks of 100 bytes, all released; 20,000 of
  // 200, all but 20 released.
  const SizeCounts older = CountAllocsOfSize(capture, 100);
  const SizeCounts newer = CountAllocsOfSize(capture, 200);
  EXPECT_EQ(older.allocs, 20000);
  EXPECT_EQ(older.frees, 20000);
  EXPECT_EQ(newer.allocs, 20000);
  EXPECT_EQ(newer.frees, 19980);
  // In their order: the high-water is the table, libstdc++'s pool, the 20 kept blocks
  // and at most one round's pair, never the churn's sum.
  const Result json = RunProgram({Cli(), "summary", "--json", capture}, {});
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_TRUE(absl::StrContains(
      json.out, "\"before_start\":{\"freed_blocks\":0,\"freed_bytes\":0,\"untracked_blocks\":0}"))
      << json.out;
  const Result summary = RunProgram({Cli(), "summary", capture}, {});
  ASSERT_EQ(summary.status, 0) << summary.err;
  EXPECT_FALSE(absl::StrContains(summary.out, "were allocated and released")) << summary.out;
  EXPECT_TRUE(absl::StrContains(summary.out, "0 releases with no allocation")) << summary.out;
  const std::string total = RowOf(summary.out, "TOTAL");
  const std::vector<std::string> cells = absl::StrSplit(total, ' ', absl::SkipEmpty());
  ASSERT_GE(cells.size(), 7u) << total;
  // TOTAL live (2 cells), blocks, high-water (2 cells): under 200 KiB.
  EXPECT_EQ(cells[5], "KiB") << "high-water " << cells[4] << " " << cells[5] << ": " << total;
  // The high-water to the byte: the test's own replay of the capture's records (one
  // thread, so their order is the program's), and at least what the program itself had
  // live at once: the table, 20 kept blocks and the pair of the round after the last keep.
  absl::Status replayed;
  const Replay replay = ReplayCapture(capture, &replayed);
  ASSERT_TRUE(replayed.ok()) << replayed;
  EXPECT_EQ(replay.unknown_releases, 0);
  EXPECT_GE(replay.high_water_bytes, 50043 + 20 * 200 + 100 + 200);
  EXPECT_EQ(Field(json.out, "high_water_bytes"), absl::StrCat(replay.high_water_bytes))
      << json.out;
  EXPECT_EQ(Field(json.out, "high_water_low_bytes"), absl::StrCat(replay.high_water_bytes));
  EXPECT_EQ(Field(json.out, "high_water_high_bytes"), absl::StrCat(replay.high_water_bytes));
  EXPECT_EQ(Field(json.out, "live_bytes"), absl::StrCat(replay.live_bytes));

  // At depth 0 the site is the return address alone, as for any block.
  const std::string shallow = TempDir() + "/early_depth0.mtb";
  const Result run0 = RunProgram(
      {Cli(), "run", "--quiet", "--depth=0", "--output=" + shallow, "--", EarlyAllocations()},
      {});
  ASSERT_EQ(run0.status, 0) << run0.err;
  const Result top0 = RunProgram({Cli(), "top", "--by=live", shallow}, {});
  ASSERT_EQ(top0.status, 0) << top0.err;
  EXPECT_FALSE(
      RowOf(top0.out, "memtrace_early_test::BuildEarlyTable() (tests/early_allocator.cc:").empty())
      << top0.out;
}

// More operations before start than the log holds (70,000 rounds: 280,000 calls, past
// its 131,072): the blocks already released when it fills are dropped from it and
// counted, and every other call is recorded. Each of the churn's blocks is either in the
// capture or in the count, and the capture pairs every release it has.
TEST_F(PreloadTest, ALogOfOperationsBeforeStartThatFillsCountsWhatItDrops) {
  const std::string capture = TempDir() + "/early_many.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", EarlyAllocations()},
      {"EARLY_ALLOCATIONS_ROUNDS=70000"});
  ASSERT_EQ(run.status, 0) << run.err;
  ASSERT_NE(run.out.find("table=yes kept=20"), std::string::npos) << run.out;
  const Result verify = RunProgram({Cli(), "verify", capture}, {});
  EXPECT_EQ(verify.status, 0) << verify.out << verify.err;
  const SizeCounts older = CountAllocsOfSize(capture, 100);
  const SizeCounts newer = CountAllocsOfSize(capture, 200);
  EXPECT_EQ(older.allocs, older.frees);
  EXPECT_EQ(newer.allocs - newer.frees, 20) << "the kept blocks";
  EXPECT_GT(older.allocs, 0);
  const Result json = RunProgram({Cli(), "summary", "--json", capture}, {});
  ASSERT_EQ(json.status, 0) << json.err;
  const size_t at = json.out.find("\"before_start\":{\"freed_blocks\":");
  ASSERT_NE(at, std::string::npos) << json.out;
  int64_t dropped = 0;
  ASSERT_TRUE(absl::SimpleAtoi(Field(json.out.substr(at + 16), "freed_blocks"), &dropped))
      << json.out;
  EXPECT_GT(dropped, 0);
  EXPECT_EQ(older.allocs + newer.allocs + dropped, 2 * 70000)
      << "recorded " << older.allocs << " + " << newer.allocs << ", dropped " << dropped;
  EXPECT_TRUE(absl::StrContains(json.out, "\"untracked_blocks\":0")) << json.out;
  const Result summary = RunProgram({Cli(), "summary", capture}, {});
  EXPECT_TRUE(absl::StrContains(summary.out, "0 releases with no allocation")) << summary.out;
}

// The minimum size and sampling apply to what was logged before start as to any block:
// an allocation left out is left out with its release (recording every block live at
// start and dropping the releases of those below the minimum size or not sampled would
// make them look live to the end).
TEST_F(PreloadTest, BlocksFromBeforeStartFollowTheMinimumSizeAndSampling) {
  const std::string sized = TempDir() + "/early_min_size.mtb";
  const Result run = RunProgram({Cli(), "run", "--quiet", "--min-size=150",
                                 "--output=" + sized, "--", EarlyAllocations()},
                                {});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(CountAllocsOfSize(sized, 100).allocs, 0);
  const SizeCounts newer = CountAllocsOfSize(sized, 200);
  EXPECT_EQ(newer.allocs, 20000);
  EXPECT_EQ(newer.frees, 19980);
  const Result summary = RunProgram({Cli(), "summary", sized}, {});
  EXPECT_TRUE(absl::StrContains(summary.out, "0 releases with no allocation")) << summary.out;

  // Sampled, 16 bytes on average between samples: 99.8% of the 100-byte blocks are drawn
  // (1 - e^-6.25) and nearly all of the 200-byte ones; the few that are not must leave
  // no release behind. The live blocks at the end are those the program keeps, at most.
  const std::string sampled = TempDir() + "/early_sampled.mtb";
  const Result run2 = RunProgram({Cli(), "run", "--quiet", "--sample=16",
                                  "--output=" + sampled, "--", EarlyAllocations()},
                                 {});
  ASSERT_EQ(run2.status, 0) << run2.err;
  const SizeCounts older = CountAllocsOfSize(sampled, 100);
  const SizeCounts kept = CountAllocsOfSize(sampled, 200);
  EXPECT_EQ(older.allocs, older.frees);
  EXPECT_GT(older.allocs, 19800);
  EXPECT_LE(kept.allocs - kept.frees, 20);
  EXPECT_GT(kept.allocs, 19800);
  const Result summary2 = RunProgram({Cli(), "summary", sampled}, {});
  EXPECT_TRUE(absl::StrContains(summary2.out, "0 releases with no allocation")) << summary2.out;
}

// Libraries loaded only because the interposer needs them (libstdc++ and abseil's under
// a C program) are memtrace's: what their constructors allocated before tracing started
// (libstdc++'s 72,704-byte emergency pool) is not charged to the program. Under a C++
// program libstdc++ is the program's own, and so is its pool.
TEST_F(PreloadTest, AProgramIsNotChargedForLibrariesOnlyMemtraceLoaded) {
  const std::string c_capture = TempDir() + "/c_program.mtb";
  const Result c_run =
      RunProgram({Cli(), "run", "--quiet", "--output=" + c_capture, "--", "/bin/ls", "/"}, {});
  ASSERT_EQ(c_run.status, 0) << c_run.err;
  const Result c_top = RunProgram({Cli(), "top", "--stacks", "--by=live", c_capture}, {});
  ASSERT_EQ(c_top.status, 0) << c_top.err;
  EXPECT_FALSE(absl::StrContains(c_top.out, "libstdc++")) << c_top.out;
  EXPECT_FALSE(absl::StrContains(c_top.out, "libabsl")) << c_top.out;
  const SizeCounts pool = CountAllocsOfSize(c_capture, 72704);
  EXPECT_EQ(pool.allocs, 0);

  const std::string cc_capture = TempDir() + "/cc_program.mtb";
  const Result cc_run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + cc_capture, "--", Target(), "new"}, {});
  ASSERT_EQ(cc_run.status, 0) << cc_run.err;
  const Result cc_top = RunProgram({Cli(), "top", "--by=live", cc_capture}, {});
  ASSERT_EQ(cc_top.status, 0) << cc_top.err;
  EXPECT_TRUE(absl::StrContains(cc_top.out, "libstdc++")) << cc_top.out;
  EXPECT_EQ(CountAllocsOfSize(cc_capture, 72704).allocs, 1);
}

// glibc keeps exit handlers in a list that starts with room for 32 and takes a 1,040-byte
// block from malloc (__new_exitfn) for each 32 more, live to the end. memtrace's own
// objects register about as many before main() (libstdc++'s and abseil's, loaded for it
// alone under a C program, and the interposer's C++ globals), so a program that registers
// one handler or none showed a block that only memtrace needed. That block is memtrace's;
// the blocks glibc takes while the program itself registers handlers are still the
// program's.
TEST_F(PreloadTest, TheExitHandlerBlockMemtraceNeedsIsNotChargedToTheProgram) {
  const std::string input = TempDir() + "/sort_input.txt";
  {
    FILE* f = fopen(input.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs("pear\napple\nfig\n", f);
    fclose(f);
  }
  const std::vector<std::vector<std::string>> programs = {{"/bin/true"},
                                                          {"/usr/bin/sort", input}};
  for (const std::vector<std::string>& program : programs) {
    const std::string capture = TempDir() + "/exit_list.mtb";
    std::vector<std::string> argv = {Cli(), "run", "--quiet", "--output=" + capture, "--"};
    argv.insert(argv.end(), program.begin(), program.end());
    const Result run = RunProgram(argv, {});
    ASSERT_EQ(run.status, 0) << run.err;
    EXPECT_EQ(CountAllocsOfSize(capture, 1040).allocs, 0) << program[0];
    const Result top = RunProgram({Cli(), "top", "--stacks", "--by=live", capture}, {});
    ASSERT_EQ(top.status, 0) << top.err;
    EXPECT_FALSE(absl::StrContains(top.out, "__new_exitfn")) << program[0] << "\n" << top.out;
  }

  // 100 handlers of the program's own: without memtrace glibc takes 3 blocks for them
  // (the 33rd, 65th and 97th registration, with the loader's own handler and libstdc++'s
  // counted before them); memtrace's handlers before them shift which registrations
  // those are, but the program's own still take at least 3.
  const std::string capture = TempDir() + "/exit_handlers.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "exit-handlers", "100"},
      {});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_GE(CountAllocsOfSize(capture, 1040).allocs, 3);
  const Result top = RunProgram({Cli(), "top", "--stacks", "--by=count", capture}, {});
  ASSERT_EQ(top.status, 0) << top.err;
  EXPECT_TRUE(absl::StrContains(top.out, "RegisterExitHandlers")) << top.out;
}

// `memtrace diff` of captures of two different programs says so (by the headers'
// command lines); of two runs of one program it does not.
TEST_F(PreloadTest, ADiffOfTwoProgramsSaysSo) {
  const std::string early = TempDir() + "/diff_early.mtb";
  const std::string early2 = TempDir() + "/diff_early2.mtb";
  const std::string other = TempDir() + "/diff_other.mtb";
  for (const std::string& capture : {early, early2}) {
    const Result run = RunProgram(
        {Cli(), "run", "--quiet", "--output=" + capture, "--", EarlyAllocations()}, {});
    ASSERT_EQ(run.status, 0) << run.err;
  }
  const Result run =
      RunProgram({Cli(), "run", "--quiet", "--output=" + other, "--", Target(), "new"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string target_name = Target().substr(Target().rfind('/') + 1);
  const Result two = RunProgram({Cli(), "diff", early, other}, {});
  ASSERT_EQ(two.status, 0) << two.err;
  EXPECT_TRUE(absl::StrContains(two.out, "note: these are captures of two programs, "
                                         "'early_allocations' before and '" +
                                             target_name + "' after"))
      << two.out;
  const Result one = RunProgram({Cli(), "diff", early, early2}, {});
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_FALSE(absl::StrContains(one.out, "two programs")) << one.out;
  EXPECT_TRUE(absl::StrContains(one.out, "TOTAL")) << one.out;
}

// A block allocated with new[] is named after the function that called it, not after
// operator new (analysis/allocator_frames.h).
TEST_F(PreloadTest, SitesAreNamedAfterTheCallerOfOperatorNew) {
  const std::string capture = TempDir() + "/new.mtb";
  const Result run =
      RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "new"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  ExpectCompleteAndMatching(capture, run.out);
  const Result top = RunProgram({Cli(), "top", "--by=live", capture}, {});
  ASSERT_EQ(top.status, 0) << top.err;
  const size_t row = top.out.find("MakeMarkerWithNew");
  ASSERT_NE(row, std::string::npos) << top.out;
  const std::string line = top.out.substr(row, top.out.find('\n', row) - row);
  EXPECT_NE(line.find(" via operator new"), std::string::npos) << line;  // new[] tail-calls new

  // The program's own allocator function, named with --allocator: the site is named after
  // its caller.
  const Result own = RunProgram(
      {Cli(), "top", "--by=live", "--allocator=(anonymous namespace)::MakeMarkerWith*", capture},
      {});
  ASSERT_EQ(own.status, 0) << own.err;
  const size_t own_row = own.out.find(" via (anonymous namespace)::MakeMarkerWithNew(");
  ASSERT_NE(own_row, std::string::npos) << own.out;
  const size_t own_start = own.out.rfind('\n', own_row) + 1;
  const std::string own_line = own.out.substr(own_start, own_row - own_start);
  EXPECT_NE(own_line.find(" (anonymous namespace)::NewMarker() ("), std::string::npos)
      << own_line;
  const Result bad = RunProgram({Cli(), "top", "--allocator=Make*Marker", capture}, {});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("'Make*Marker' is not a function name"), std::string::npos) << bad.err;

  // The report names sites the same way.
  const std::string page = TempDir() + "/new.html";
  const Result report = RunProgram({Cli(), "report", capture, "-o", page,
                                    "--allocator=(anonymous namespace)::MakeMarkerWith*"},
                                   {});
  ASSERT_EQ(report.status, 0) << report.err;
  const std::string html = ReadFile(page);
  // The whole label: the flame graph has the caller's frame either way.
  const size_t label_start = own.out.find("(anonymous namespace)::NewMarker()", own_start);
  const std::string label =
      own.out.substr(label_start, own.out.find('\n', own_row) - label_start);
  EXPECT_NE(html.find(label), std::string::npos) << label;
  const Result bad_report =
      RunProgram({Cli(), "report", capture, "-o", page, "--allocator=,"}, {});
  EXPECT_EQ(bad_report.status, 2);
  EXPECT_NE(bad_report.err.find("--allocator: '' is not a function name"), std::string::npos)
      << bad_report.err;
}

TEST_F(PreloadTest, ForkedChildRunsUntracedAndLeavesTheParentsCaptureIntact) {
  const std::string dir = TempDir() + "/fork";
  mkdir(dir.c_str(), 0755);
  const std::string capture = dir + "/cap-%p.mtb";
  const Result run =
      RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "fork"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  // One capture: the parent's (the child neither writes its own nor touches the parent's).
  const std::vector<std::string> files = FilesIn(dir);
  ASSERT_EQ(files.size(), 1u) << absl::StrJoin(files, " ");
  absl::Status s;
  const Replay r = ReplayCapture(dir + "/" + files[0], &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.trailer, "complete"), "true") << r.trailer;
  ExpectMarkersMatch(r, ParseCounts(run.out));  // the child's 500 markers are not in it
  // The trailer counts the fork, and the summary says the child went untraced and how to
  // trace it (a daemon's whole life is in such a child).
  EXPECT_EQ(Field(r.trailer, "forks"), "1") << r.trailer;
  const Result summary = RunProgram({Cli(), "summary", dir + "/" + files[0]}, {});
  ASSERT_EQ(summary.status, 0) << summary.err;
  EXPECT_NE(summary.out.find("note: the program forked 1 child process, which memtrace did "
                             "not follow"),
            std::string::npos)
      << summary.out;
  EXPECT_NE(summary.out.find("`memtrace run --forks`"), std::string::npos) << summary.out;
}

// With --forks (MEMTRACE_TRACE_FORKS=1) a forked child traces on into a capture of its
// own that starts with the blocks it inherited: every free of one of them matches (none is
// unknown, including those of a thread that ended just before the fork, whose records the
// drainer had most likely not applied yet), and its marker counts are the child's own.
// The parent's capture is the same as without --forks.
TEST_F(PreloadTest, WithForksAForkedChildTracesOnFromTheBlocksItInherited) {
  const std::string dir = TempDir() + "/forks";
  mkdir(dir.c_str(), 0755);
  const Result run = RunProgram({Cli(), "run", "--quiet", "--forks", "--output=" + dir +
                                 "/cap.mtb", "--", Target(), "fork-traced"},
                                {});
  ASSERT_EQ(run.status, 0) << run.err;
  const std::vector<std::string> files = FilesIn(dir);
  ASSERT_EQ(files.size(), 2u) << absl::StrJoin(files, " ");
  ASSERT_EQ(files[1], "cap.mtb");
  const std::string child_capture = dir + "/" + files[0];
  EXPECT_TRUE(absl::StartsWith(files[0], "cap.")) << files[0];

  ExpectCompleteAndMatching(dir + "/cap.mtb", run.out);
  absl::Status s;
  const Replay parent = ReplayCapture(dir + "/cap.mtb", &s);
  ASSERT_TRUE(s.ok()) << s;

  const Replay child = ReplayCapture(child_capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(child.has_trailer);
  EXPECT_EQ(Field(child.trailer, "complete"), "true") << child.trailer;
  EXPECT_EQ(child.unknown_releases, 0) << "a free of an inherited block went unmatched";
  const size_t line = run.out.find("child allocs=");
  ASSERT_NE(line, std::string::npos) << run.out;
  const Counts counts = ParseCounts(run.out.substr(line + strlen("child ")));
  EXPECT_EQ(counts.allocs, 300 + 30);
  EXPECT_EQ(counts.frees, 290 + 10);
  ExpectMarkersMatch(child, counts);
  EXPECT_EQ(Field(child.header, "parent_pid"), Field(parent.header, "pid")) << child.header;
  EXPECT_NE(child.header.find("\"trace_forks\":true"), std::string::npos) << child.header;
  // Every inherited block is at the stack the parent allocated it at, not at site 0 ("no
  // call site").
  EXPECT_EQ(Field(child.header, "inherited_without_stack"), "0") << child.header;

  // The CLI says where the capture began, and verify passes it.
  const Result summary = RunProgram({Cli(), "summary", child_capture}, {});
  EXPECT_EQ(summary.status, 0) << summary.err;
  EXPECT_NE(summary.out.find("(inherited at fork)"), std::string::npos) << summary.out;
  EXPECT_NE(summary.out.find("this process was forked from pid " + Field(parent.header, "pid")),
            std::string::npos)
      << summary.out;
  const Result verify = RunProgram({Cli(), "verify", child_capture}, {});
  EXPECT_EQ(verify.status, 0) << verify.out;

  // `top` over the two names the child's sites as it names the parent's (the captures
  // list the same modules, and share one symbolizer): the child's 30 allocations made
  // after the fork come from a line of the target's own.
  const Result top =
      RunProgram({Cli(), "top", "--limit=1000", dir + "/cap.mtb", child_capture}, {});
  ASSERT_EQ(top.status, 0) << top.err;
  EXPECT_NE(top.out.find("preload_target.cc:"), std::string::npos) << top.out;
  EXPECT_EQ(top.out.find("?? (" + Target()), std::string::npos) << top.out;
  const Result child_top = RunProgram({Cli(), "top", "--limit=1000", child_capture}, {});
  ASSERT_EQ(child_top.status, 0) << child_top.err;
  EXPECT_EQ(child_top.out.find("no call site"), std::string::npos) << child_top.out;
  EXPECT_NE(summary.out.find("Their sites are the call stacks the parent\n  allocated them at."),
            std::string::npos)
      << summary.out;
  // The markers the parent's threads allocated, inherited, are at the sites the parent's
  // own capture has them at, the target's lines; the family's top leaves the inherited
  // blocks out (the parent's capture counts them).
  const Result parent_top = RunProgram({Cli(), "top", "--limit=1000", dir + "/cap.mtb"}, {});
  ASSERT_EQ(parent_top.status, 0) << parent_top.err;
  int inherited_at_target = 0;
  for (absl::string_view line : absl::StrSplit(child_top.out, '\n')) {
    if (!absl::StrContains(line, "preload_target.cc:")) continue;
    const size_t at = line.find("interposer ");
    ASSERT_NE(at, absl::string_view::npos) << line;
    absl::string_view site = line.substr(at + strlen("interposer "));
    if (const size_t group = site.find(" ["); group != absl::string_view::npos) {
      site = site.substr(0, group);  // " [2 stacks]": this capture's grouping
    }
    if (absl::StrContains(line, "(inherited at fork)")) {
      ++inherited_at_target;
      EXPECT_TRUE(absl::StrContains(parent_top.out, site))
          << "the inherited site " << line << " is not in the parent's top:\n"
          << parent_top.out;
    } else {
      EXPECT_TRUE(absl::StrContains(top.out, site))
          << "the child's site " << line << " is not in the family's top:\n" << top.out;
    }
  }
  EXPECT_GT(inherited_at_target, 0) << child_top.out;

  // Without --quiet, `memtrace run` lists the child's capture after the summary, in the
  // table of the process family.
  const Result loud = RunProgram({Cli(), "run", "--forks", "--output=" + dir + "/again.mtb",
                                  "--", Target(), "fork-traced"},
                                 {});
  ASSERT_EQ(loud.status, 0) << loud.err;
  EXPECT_NE(loud.err.find("1 more capture, of the processes it forked; all 2:"),
            std::string::npos)
      << loud.err;
  EXPECT_NE(loud.err.find("memtrace summary of 2 captures, one per process image: 2 complete"),
            std::string::npos)
      << loud.err;
}

// The same with a site capacity smaller than the parent's stacks: the child's header
// counts the inherited blocks whose stacks the parent did not keep, and its summary says
// where they are. Every free in the child still matches.
TEST_F(PreloadTest, InheritedBlocksWithoutAKeptStackAreCountedAndNamed) {
  const std::string dir = TempDir() + "/forks_sites";
  mkdir(dir.c_str(), 0755);
  const Result run = RunProgram({Cli(), "run", "--quiet", "--forks", "--site-capacity=2",
                                 "--output=" + dir + "/cap.mtb", "--", Target(), "fork-traced"},
                                {});
  ASSERT_EQ(run.status, 0) << run.err;
  const std::vector<std::string> files = FilesIn(dir);
  ASSERT_EQ(files.size(), 2u) << absl::StrJoin(files, " ");
  const std::string child_capture = dir + "/" + files[0];
  absl::Status s;
  const Replay child = ReplayCapture(child_capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(child.unknown_releases, 0);
  const std::string without = Field(child.header, "inherited_without_stack");
  ASSERT_FALSE(without.empty()) << child.header;
  EXPECT_GT(std::stoull(without), 0u) << child.header;
  EXPECT_LE(std::stoull(without), std::stoull(Field(child.header, "inherited_blocks")));
  const Result summary = RunProgram({Cli(), "summary", child_capture}, {});
  ASSERT_EQ(summary.status, 0) << summary.err;
  EXPECT_NE(summary.out.find("but for " + without + " blocks whose stack the parent had not kept"),
            std::string::npos)
      << summary.out;
}

// A program whose path is not UTF-8 (a Latin-1 directory name): its module line and
// command line hold U+FFFD where the byte was (the byte itself would make every command
// refuse the capture: "not valid UTF-8").
TEST_F(PreloadTest, AProgramAtAPathThatIsNotUtf8GivesAReadableCapture) {
  const std::string dir = TempDir() + "/latin\xE9";
  mkdir(dir.c_str(), 0755);
  const std::string program = dir + "/target";
  ASSERT_EQ(RunProgram({"/bin/cp", Target(), program}, {}).status, 0);
  const std::string capture = TempDir() + "/latin.mtb";
  const Result run = RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", program,
                                 "stack"},
                                {});
  ASSERT_EQ(run.status, 0) << run.err;
  const Result verify = RunProgram({Cli(), "verify", capture}, {});
  EXPECT_EQ(verify.status, 0) << verify.out << verify.err;
  absl::Status st;
  const Replay r = ReplayCapture(capture, &st);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_NE(r.header.find("/latin\xEF\xBF\xBD/target"), std::string::npos) << r.header;
}

// The captures of a shell under --children --forks, summarized together: each image once,
// with who made it. bash forks a child for the first command (a traced fork), which
// execs the target; it execs the last command itself. (dash would vfork, which no fork
// handler sees: its children would be "started".) What the shell did is read from the
// captures' own names and headers (a fork object, the pid), not from the table under test.
TEST_F(PreloadTest, TheCapturesOfAProcessFamilyAreSummarizedAsATree) {
  const std::string dir = TempDir() + "/family";
  mkdir(dir.c_str(), 0755);
  const std::string script = Target() + " stack; " + Target() + " stack";
  const Result run = RunProgram({Cli(), "run", "--children", "--forks",
                                 "--output=" + dir + "/fam.mtb", "--", "/bin/bash", "-c", script},
                                {});
  ASSERT_EQ(run.status, 0) << run.err;
  std::vector<std::string> paths;
  for (const std::string& f : FilesIn(dir)) paths.push_back(dir + "/" + f);
  ASSERT_GE(paths.size(), 3u) << absl::StrJoin(paths, " ");
  EXPECT_NE(run.err.find(absl::StrCat("memtrace summary of ", paths.size(),
                                      " captures, one per process image: ", paths.size(),
                                      " complete")),
            std::string::npos)
      << run.err;

  // Each capture's pid, parent and first argument, from its own header.
  struct Expected {
    std::string pid;
    std::string how;
    std::string parent;  // a capture path, or "null"
    std::string argv0;
  };
  std::map<std::string, Expected> expected;
  absl::Status st;
  const std::string root_pid = Field(ReplayCapture(dir + "/fam.mtb", &st).header, "pid");
  ASSERT_TRUE(st.ok()) << st;
  for (const std::string& path : paths) {
    const Replay r = ReplayCapture(path, &st);
    ASSERT_TRUE(st.ok()) << st;
    Expected e;
    e.pid = Field(r.header, "pid");
    const size_t argv = r.header.find("\"argv\":[\"");
    ASSERT_NE(argv, std::string::npos) << r.header;
    e.argv0 = r.header.substr(argv + 9, r.header.find('"', argv + 9) - argv - 9);
    EXPECT_NE(Field(r.header, "ppid"), "") << r.header;
    if (path == dir + "/fam.mtb") {
      e.how = "root", e.parent = "null";
    } else if (absl::EndsWith(path, ".exec1")) {
      e.how = "exec", e.parent = path.substr(0, path.size() - strlen(".exec1"));
      EXPECT_EQ(e.argv0, Target()) << path;
    } else if (r.header.find("\"fork\":{") != std::string::npos) {
      e.how = "forked", e.parent = dir + "/fam.mtb";
      EXPECT_EQ(Field(r.header, "parent_pid"), root_pid) << path;
    } else {
      e.how = "started", e.parent = dir + "/fam.mtb";
      EXPECT_EQ(Field(r.header, "ppid"), root_pid) << path;
    }
    expected[path] = e;
  }
  EXPECT_EQ(expected[dir + "/fam.mtb"].argv0, "/bin/bash");
  // At least one traced fork, and every exec'd image the target.
  size_t forks = 0;
  for (const auto& [path, e] : expected) forks += e.how == "forked";
  EXPECT_GE(forks, 1u);

  std::vector<std::string> args = {Cli(), "summary", "--json"};
  args.insert(args.end(), paths.begin(), paths.end());
  const Result summary = RunProgram(args, {});
  ASSERT_EQ(summary.status, 0) << summary.out << summary.err;
  std::vector<std::string> rows = absl::StrSplit(summary.out, "{\"capture\":");
  ASSERT_EQ(rows.size(), paths.size() + 1) << summary.out;
  std::set<std::string> seen;
  for (size_t i = 1; i < rows.size(); ++i) {
    const std::string capture = rows[i].substr(1, rows[i].find('"', 1) - 1);
    ASSERT_TRUE(expected.count(capture)) << capture;
    EXPECT_TRUE(seen.insert(capture).second) << capture << " twice";
    const Expected& e = expected[capture];
    EXPECT_EQ(Field(rows[i], "pid"), e.pid) << capture;
    EXPECT_EQ(Field(rows[i], "how"), e.how) << capture;
    EXPECT_EQ(Field(rows[i], "parent"), e.parent) << capture;
    EXPECT_EQ(Field(rows[i], "verdict"), "complete") << capture;
    // Tree order: a row's parent came before it.
    if (e.parent != "null") {
      EXPECT_TRUE(seen.count(e.parent)) << capture << " before its parent";
    }
  }
  EXPECT_EQ(rows[1].substr(1, rows[1].find('"', 1) - 1), dir + "/fam.mtb");
  // The family's high-water, all processes together (analysis/family_live.h, whose sums
  // family_live_test checks): some memory, held by at least one process, at a moment
  // inside the run.
  const std::string together = summary.out.substr(summary.out.find("\"together_high_water\":"));
  EXPECT_GT(std::stoull(Field(together, "bytes")), 0u) << together;
  EXPECT_GE(std::stoull(Field(together, "processes")), 1u) << together;
  const Replay root = ReplayCapture(dir + "/fam.mtb", &st);
  EXPECT_GE(std::stoll(Field(together, "unix_ns")),
            std::stoll(Field(root.header, "started_unix_ns")));

  // `top` over the family adds up rows by site name: the target's one 50,021-byte marker,
  // allocated once by each of its two images, is one row from 2 processes.
  size_t targets = 0;
  for (const auto& [path, e] : expected) targets += e.argv0 == Target();
  ASSERT_EQ(targets, 2u);
  args = {Cli(), "top", "--json", "--limit=1000"};
  args.insert(args.end(), paths.begin(), paths.end());
  const Result top = RunProgram(args, {});
  ASSERT_EQ(top.status, 0) << top.out << top.err;
  const size_t marker = top.out.find("\"allocated_bytes\":100042,\"allocated_count\":2,");
  ASSERT_NE(marker, std::string::npos) << top.out;
  const size_t row = top.out.rfind("{\"name\":", marker);
  EXPECT_EQ(Field(top.out.substr(row), "processes"), "2") << top.out.substr(row, 400);

  // `verify` over the family: one verdict line per capture, exit 0 when all pass, and 2
  // when one cannot be read.
  args = {Cli(), "verify"};
  args.insert(args.end(), paths.begin(), paths.end());
  const Result verify_all = RunProgram(args, {});
  EXPECT_EQ(verify_all.status, 0) << verify_all.out << verify_all.err;
  for (const std::string& path : paths) {
    EXPECT_NE(verify_all.out.find("memtrace verify: " + path + ": integrity: complete, exact: "),
              std::string::npos)
        << verify_all.out;
  }
  EXPECT_EQ(RunProgram({Cli(), "verify", paths[0], "/etc/hostname"}, {}).status, 2);

  // The text form says the same, and an unreadable file among them is named, exit 2.
  args = {Cli(), "summary", paths[0], "/etc/hostname"};
  const Result bad = RunProgram(args, {});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.out.find("1 complete, 1 unreadable"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("memtrace summary: /etc/hostname"), std::string::npos) << bad.out;
}

// A forked child given a pid that an earlier capture's name already has (pids wrap: at
// 32768 by default, and every thread takes one) writes beside it, never over it (a program
// forking 200 children while threads come and go reuses pids that fast).
TEST_F(PreloadTest, AForkedChildNeverOverwritesACaptureWithItsPidInTheName) {
  const std::string dir = TempDir() + "/pid_reuse";
  mkdir(dir.c_str(), 0755);
  const Result run = RunProgram({Cli(), "run", "--quiet", "--forks", "--output=" + dir +
                                 "/cap.mtb", "--", Target(), "fork-over-captures", dir},
                                {});
  ASSERT_EQ(run.status, 0) << run.err;
  const size_t at = run.out.find("child=");
  ASSERT_NE(at, std::string::npos) << run.out;
  const std::string pid = run.out.substr(at + 6, run.out.find('\n', at) - at - 6);
  const std::string taken = dir + "/cap." + pid + ".mtb";
  if (ReadFile(taken) != "placeholder\n" && access((dir + "/cap." + pid + ".2.mtb").c_str(),
                                                   F_OK) != 0 &&
      ReadFile(taken).substr(0, 8) != "MTRACEB3") {
    GTEST_SKIP() << "the child's pid " << pid << " was past the 64 files made for it";
  }
  EXPECT_EQ(ReadFile(taken), "placeholder\n") << "the other capture was overwritten";
  const std::string own = dir + "/cap." + pid + ".2.mtb";
  const Result verify = RunProgram({Cli(), "verify", own}, {});
  EXPECT_EQ(verify.status, 0) << verify.out << verify.err;
}

// A traced shell `run` that ran the target's "basic" mode, writing its capture to
// DIR/shell.mtb: the commands ran, and only the shell was traced (one capture, no
// warning, none of the target's markers in it), its capture whole.
void ExpectOnlyTheShellTraced(const Result& run, const std::string& dir) {
  ASSERT_EQ(run.status, 0) << run.err;
  ASSERT_GE(ParseCounts(run.out).allocs, 1) << "the commands ran: " << run.out;
  EXPECT_EQ(FilesIn(dir), std::vector<std::string>{"shell.mtb"});
  EXPECT_EQ(run.err.find("memtrace:"), std::string::npos) << run.err;
  absl::Status s;
  const Replay r = ReplayCapture(dir + "/shell.mtb", &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.trailer, "complete"), "true") << r.trailer;
  EXPECT_EQ(Field(r.trailer, "ended_by"), "exit") << r.trailer;
  EXPECT_EQ(r.markers.allocs, 0) << "the shell itself allocates no markers";
}

// bash defines its own setenv() and unsetenv(), and exports what main() was given: the
// interposer takes itself out of that array directly, so the commands a traced shell
// runs are not traced. (They were, each into the shell's capture file, which came out
// as several captures overwriting each other.)
TEST_F(PreloadTest, CommandsRunByATracedShellAreNotTraced) {
  if (access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "no /bin/bash";
  const std::string dir = TempDir() + "/shell";
  mkdir(dir.c_str(), 0755);
  const std::string capture = dir + "/shell.mtb";
  const std::string t = Target();
  const Result run = RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", "/bin/bash",
                                 "-c", t + " basic | " + t + " basic > /dev/null; " + t +
                                           " basic; " + t + " basic & wait"},
                                {});
  ExpectOnlyTheShellTraced(run, dir);
}

// The same with a copy of the interposer under another name, preloaded by hand: the
// commands the shell runs are still not traced (left in LD_PRELOAD, the copy would make
// each command write a capture of its own beside the shell's).
TEST_F(PreloadTest, ACopyOfTheInterposerUnderAnotherNameIsNotPassedToChildren) {
  if (access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "no /bin/bash";
  const std::string dir = TempDir() + "/renamed";
  mkdir(dir.c_str(), 0755);
  const std::string copy = TempDir() + "/mt.so";
  ASSERT_EQ(RunProgram({"/bin/cp", Preload(), copy}, {}).status, 0);
  const std::string capture = dir + "/shell.mtb";
  const std::string t = Target();
  // Not the last command alone: bash would exec it instead of forking first.
  const Result run = RunProgram({"/bin/bash", "-c", t + " basic; " + t + " basic & wait"},
                                {"LD_PRELOAD=" + copy, "MEMTRACE_OUTPUT=" + capture});
  ExpectOnlyTheShellTraced(run, dir);
}

// The same with a program of our own whose setenv() and unsetenv() do nothing at all,
// and which execs its argument with main()'s environment: the exec'd target runs
// untraced, and the capture is the first image's, ended by the exec.
TEST_F(PreloadTest, AProgramsOwnUnsetenvDoesNotKeepTheInterposerInItsChildren) {
  const std::string dir = TempDir() + "/own_env";
  mkdir(dir.c_str(), 0755);
  const std::string capture = dir + "/own.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", OwnEnvironment(), Target(), "basic"},
      {});
  ASSERT_EQ(run.status, 0) << run.err;
  ASSERT_GE(ParseCounts(run.out).allocs, 1) << run.out;
  EXPECT_EQ(FilesIn(dir), std::vector<std::string>{"own.mtb"});
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.trailer, "ended_by"), "exec")
      << "the target, traced, would have rewritten the file: " << r.trailer;
  EXPECT_EQ(r.markers.allocs, 0);
}

// A service that blocks SIGTERM and reads it from a signalfd: a SIGTERM sent to it is
// its own to read (memtrace's threads start with signals blocked), so it shuts down as it
// means to and the capture is whole. Before, the drainer or the writer took the signal
// and its default action ended the process: no shutdown, no trailer.
TEST_F(PreloadTest, AServiceReadingSigtermFromASignalfdStillGetsIt) {
  const std::string capture = TempDir() + "/signalfd.mtb";
  const std::string out = TempDir() + "/signalfd.out";
  const pid_t pid = SpawnTraced({Target(), "signalfd"}, capture, out);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitForOutput(out, "ready")) << "the service did not start";
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const std::string printed = ReadFile(out);
  EXPECT_NE(printed.find("graceful shutdown on signal 15"), std::string::npos) << printed;
  ExpectCompleteAndMatching(capture, printed);
}

// A process killed outright runs nothing of memtrace's: its capture has no trailer, and
// no module map at the end. The modules loaded at the start are listed right after the
// header, so what was written is still symbolized, and `verify` names the likely causes.
TEST_F(PreloadTest, AKilledProcesssCaptureIsStillSymbolized) {
  const std::string dir = TempDir() + "/killed";
  mkdir(dir.c_str(), 0755);
  const std::string capture = dir + "/killed.mtb";
  const std::string out = dir + "/killed.out";
  const pid_t pid = SpawnTraced({Target(), "hold", dir + "/never"}, capture, out);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitForOutput(out, "allocs=")) << "the program did not start";
  // The markers' epoch is written within milliseconds (drainer.h); wait for its records.
  for (int i = 0; i < 3000; ++i) {
    absl::Status s;
    if (ReplayCapture(capture, &s).markers.allocs >= 40) break;
    usleep(1000);
  }
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));

  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  EXPECT_FALSE(r.has_trailer);
  EXPECT_EQ(r.markers.allocs, 40);
  const Result top = RunProgram({Cli(), "top", "--by=count", "--stacks", capture}, {});
  ASSERT_EQ(top.status, 0) << top.err;
  EXPECT_NE(top.out.find("AllocateMarkers("), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("capture TRUNCATED (no trailer: the process ended without its exit "
                         "handlers"),
            std::string::npos)
      << top.out;
  const Result verify = RunProgram({Cli(), "verify", capture}, {});
  EXPECT_EQ(verify.status, 1);
  EXPECT_NE(verify.out.find("it was killed (SIGKILL, the OOM killer)"), std::string::npos)
      << verify.out;
}

// Two traced processes given one MEMTRACE_OUTPUT: the capture file is locked while it is
// written, so the second writes beside it (".<pid>" before the extension) and says
// where, and both captures are whole. `memtrace run --output` naming that file refuses.
TEST_F(PreloadTest, ASecondProcessGivenTheSameCapturePathWritesBesideIt) {
  const std::string dir = TempDir() + "/same_path";
  mkdir(dir.c_str(), 0755);
  const std::string capture = dir + "/same.mtb";
  const std::string release = dir + "/release";
  const std::string first_out = dir + "/first.out";
  // The first holds its capture open until `release` exists.
  const pid_t first = SpawnTraced({Target(), "hold", release}, capture, first_out);
  ASSERT_GT(first, 0);
  // Its counts line comes after the interposer's constructor opened the capture.
  WaitForOutput(first_out, "allocs=");
  ASSERT_GE(ParseCounts(ReadFile(first_out)).allocs, 0) << "the first process did not start";

  const Result second = RunProgram({Target(), "basic"},
                                   {"LD_PRELOAD=" + Preload(), "MEMTRACE_OUTPUT=" + capture});
  ASSERT_EQ(second.status, 0) << second.err;
  const size_t at = second.err.find("writes its capture to '");
  ASSERT_NE(at, std::string::npos) << second.err;
  const size_t begin = at + strlen("writes its capture to '");
  const std::string second_capture = second.err.substr(begin, second.err.find('\'', begin) - begin);
  EXPECT_EQ(second_capture.rfind(dir + "/same.", 0), 0u) << second_capture;
  EXPECT_EQ(second_capture.substr(second_capture.size() - 4), ".mtb") << second_capture;
  EXPECT_NE(second.err.find("'" + capture + "' is being written by another process"),
            std::string::npos)
      << second.err;

  // `memtrace run` with that path refuses before it runs anything (it would remove the
  // file another process is writing).
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "basic"}, {});
  EXPECT_EQ(run.status, 125) << run.err;
  EXPECT_NE(run.err.find("'" + capture + "' is being written by another traced process"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(run.out, "") << "the program did not run";

  const int made = open(release.c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(made, 0);
  close(made);
  int status = 0;
  ASSERT_EQ(waitpid(first, &status, 0), first);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  ExpectCompleteAndMatching(capture, ReadFile(first_out));
  ExpectCompleteAndMatching(second_capture, second.out);
}

// A program that closes every descriptor it did not open, then opens a file of its own
// and copies it into the next thousand numbers (the capture's among them): the sink sees
// its descriptor is no longer the capture before it writes, opens the capture again by
// its path, and loses nothing; the program's file holds only what the program wrote.
TEST_F(PreloadTest, AProgramClosingTheCapturesDescriptorLosesNothingAndGetsNoCaptureBytes) {
  const std::string capture = TempDir() + "/closed_fd.mtb";
  const std::string own = TempDir() + "/closed_fd.own";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "close-fds", own}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(ReadFile(own), "USER\n") << "capture bytes went into the program's file";
  ExpectCompleteAndMatching(capture, run.out);
}

// The mmap layer (MEMTRACE_MMAP=1, `memtrace run --mmap`): what the program leaves mapped,
// by its own count, is what the capture's "mmap" layer holds live; without the setting
// there is no such layer.
TEST_F(PreloadTest, MappingsAreALayerOfTheirOwnWhenAsked) {
  const std::string capture = TempDir() + "/mmap.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--mmap", "--output=" + capture, "--", Target(), "mmap"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  // The program's own "name=N" words.
  auto word = [&](const std::string& name) {
    const size_t at = run.out.find(name + "=");
    if (at == std::string::npos) return std::string();
    const size_t start = at + name.size() + 1;
    return run.out.substr(start, run.out.find_first_not_of("0123456789", start) - start);
  };
  const std::string pages = word("mmap_live_pages");
  const std::string mappings = word("mmap_live_mappings");
  ASSERT_FALSE(pages.empty()) << run.out;
  const uint64_t page = static_cast<uint64_t>(getpagesize());
  const Result summary = RunProgram({Cli(), "summary", "--json", capture}, {});
  ASSERT_EQ(summary.status, 0) << summary.err;
  const size_t layer = summary.out.find("\"name\":\"mmap\"");
  ASSERT_NE(layer, std::string::npos) << summary.out;
  const std::string usage = summary.out.substr(layer, summary.out.find('}', layer) - layer + 1);
  EXPECT_EQ(Field(usage, "live_bytes"), std::to_string(std::stoull(pages) * page)) << usage;
  EXPECT_EQ(Field(usage, "live_count"), mappings) << usage;
  // Mapped 10 + 8 (the move) + 4 + 2 (MAP_FIXED) + 2 + 6 + 6 + 2 + 2 (the fixed move)
  // pages, the pieces cut off counted again as new blocks: 5 (after the hole), 1 (after
  // the MAP_FIXED part) and 2 (after the fixed move's target).
  EXPECT_EQ(Field(usage, "allocated_count"), "12") << usage;
  const Result verify = RunProgram({Cli(), "verify", capture}, {});
  EXPECT_EQ(verify.status, 0) << verify.out << verify.err;
  EXPECT_NE(verify.out.find("nothing lost"), std::string::npos) << verify.out;
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Field(r.header, "mmap"), "true") << r.header;
  EXPECT_EQ(r.unknown_releases, 0);

  const std::string plain = TempDir() + "/no_mmap.mtb";
  ASSERT_EQ(RunProgram({Cli(), "run", "--quiet", "--output=" + plain, "--", Target(), "mmap"},
                       {})
                .status,
            0);
  const Result no_layer = RunProgram({Cli(), "summary", "--json", plain}, {});
  EXPECT_EQ(no_layer.out.find("\"name\":\"mmap\""), std::string::npos) << no_layer.out;

  // With sampling, mappings (recorded whole) would be weighted as samples: refused.
  const std::string sampled = TempDir() + "/mmap_sampled.mtb";
  const Result both = RunProgram({Cli(), "run", "--quiet", "--mmap", "--sample=65536",
                                  "--output=" + sampled, "--", Target(), "mmap"},
                                 {});
  ASSERT_EQ(both.status, 0) << both.err;
  EXPECT_NE(both.err.find("MEMTRACE_MMAP=1 and MEMTRACE_SAMPLE_BYTES do not go together"),
            std::string::npos)
      << both.err;
  const Result sampled_summary = RunProgram({Cli(), "summary", "--json", sampled}, {});
  EXPECT_EQ(sampled_summary.out.find("\"name\":\"mmap\""), std::string::npos);
}

// An allocator other than glibc's may call mmap while holding its own locks, where
// recording the mapping (which may allocate) could deadlock it: the layer stays off, and
// says why. (Debian's redis-server, on jemalloc, did deadlock before this check.)
TEST_F(PreloadTest, MappingsAreNotRecordedUnderAnotherAllocator) {
  const std::string capture = TempDir() + "/mmap_other.mtb";
  const Result run = RunProgram(
      {Target(), "mmap"},
      {"LD_PRELOAD=" + Preload() + " " + OtherMalloc(), "MEMTRACE_MMAP=1",
       "MEMTRACE_OUTPUT=" + capture});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("the program's malloc comes from " + OtherMalloc()),
            std::string::npos)
      << run.err;
  const Result summary = RunProgram({Cli(), "summary", "--json", capture}, {});
  ASSERT_EQ(summary.status, 0) << summary.err;
  EXPECT_EQ(summary.out.find("\"name\":\"mmap\""), std::string::npos) << summary.out;
  EXPECT_NE(summary.out.find("\"name\":\"interposer\""), std::string::npos)
      << "malloc is still traced: " << summary.out;
}

TEST_F(PreloadTest, ExecEndsTheCaptureAndChildrenAreTracedOnlyWhenAsked) {
  const std::string capture = TempDir() + "/exec.mtb";
  // Not traced children: the exec'd program (the target again, in stack mode) is not
  // traced, so the capture is the first image's alone.
  Result run = RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "exec",
                    Target(), "stack"},
                   {});
  ASSERT_EQ(run.status, 0) << run.err;
  absl::Status s;
  Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.trailer, "ended_by"), "exec");
  EXPECT_EQ(Field(r.trailer, "exec"), Target()) << "the trailer names the program exec'd";
  EXPECT_EQ(Field(r.trailer, "complete"), "true") << r.trailer;
  ExpectMarkersMatch(r, ParseCounts(run.out));  // the first counts line is the first image's
  EXPECT_NE(access((capture + ".exec1").c_str(), F_OK), 0) << "the child was not traced";
  // The summary says where the program went, for wrapper scripts (a pyenv shim).
  const Result summary = RunProgram({Cli(), "summary", capture}, {});
  ASSERT_EQ(summary.status, 0) << summary.err;
  EXPECT_NE(summary.out.find(absl::StrCat("replaced itself with '", Target(), "' (exec)")),
            std::string::npos)
      << summary.out;
  EXPECT_NE(summary.out.find("memtrace run --children"), std::string::npos) << summary.out;

  // --children: the new image writes its own capture beside the first.
  const std::string traced = TempDir() + "/exec_children.mtb";
  run = RunProgram({Cli(), "run", "--quiet", "--children", "--output=" + traced, "--", Target(),
             "exec", Target(), "stack"},
            {});
  ASSERT_EQ(run.status, 0) << run.err;
  const Replay child = ReplayCapture(traced + ".exec1", &s);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(ReadFile(traced + ".exec1").substr(0, 8), "MTRACEB3")
      << "the new image's capture keeps the encoding the path named";
  EXPECT_EQ(child.source, "preload");
  EXPECT_EQ(Field(child.trailer, "ended_by"), "exit");
  EXPECT_EQ(child.markers.allocs, 1);  // the stack mode's one marker
}

// With --children, a program the traced one runs is traced even when it is handed an
// environment of its own: none at all (`env -i`, subprocess.run(env={})), or its own
// LD_PRELOAD: it is traced, not silently left out. Each way
// of starting it: execve, fexecve, posix_spawn, and vfork + execve; and an environment
// too large for the copy's room on the stack (execve-large: the copy goes to mapped pages).
TEST_F(PreloadTest, AChildGivenAnEnvironmentOfItsOwnIsStillTracedWithChildren) {
  char real_target[PATH_MAX];
  ASSERT_NE(realpath(Target().c_str(), real_target), nullptr);
  for (const std::string how :
       {"execve-empty", "execve-preload", "execve-large", "fexecve-empty", "spawn-empty",
        "vfork-empty"}) {
    SCOPED_TRACE(how);
    const std::string dir = TempDir() + "/own_env_" + how;
    ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
    const std::string capture = dir + "/c.mtb";
    const Result run = RunProgram({Cli(), "run", "--quiet", "--children", "--output=" + capture,
                                   "--", Target(), "run-with-env", how, Target(), "stack"},
                                  {});
    ASSERT_EQ(run.status, 0) << run.err;
    absl::Status s;
    const Replay parent = ReplayCapture(capture, &s);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(Field(parent.trailer, "complete"), "true") << parent.trailer;
    EXPECT_EQ(parent.markers.allocs, 10) << "the first program's own markers";
    // The child's capture: the exec'd image's beside the first (.exec1), or a new
    // process's named by its pid.
    const bool exec = how.find("exec") != std::string::npos && how != "vfork-empty";
    std::string child_capture;
    for (const std::string& f : FilesIn(dir)) {
      if (f != "c.mtb") child_capture = dir + "/" + f;
    }
    ASSERT_FALSE(child_capture.empty()) << "the child left no capture: " << run.err;
    if (exec) {
      EXPECT_EQ(child_capture, capture + ".exec1");
      EXPECT_EQ(Field(parent.trailer, "ended_by"), "exec");
      EXPECT_EQ(Field(parent.trailer, "exec"), how == "fexecve-empty" ? real_target : Target())
          << "fexecve: the file the descriptor is open on";
    } else {
      EXPECT_TRUE(absl::StartsWith(child_capture, dir + "/c.")) << child_capture;
      EXPECT_EQ(Field(parent.trailer, "ended_by"), "exit");
    }
    const Replay child = ReplayCapture(child_capture, &s);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(Field(child.trailer, "complete"), "true") << child.trailer;
    EXPECT_EQ(child.markers.allocs, 1) << "the stack mode's one marker";
    const Result verify = RunProgram({Cli(), "verify", child_capture}, {});
    EXPECT_EQ(verify.status, 0) << verify.out << verify.err;
  }
}

// The target's "basic" mode under `memtrace run --quiet FLAG`, into `capture`, and that
// capture replayed (has_trailer false when the run or the capture failed, said as a
// test failure).
Replay TracedBasicRun(const std::string& flag, const std::string& capture, Result* run) {
  *run = RunProgram({Cli(), "run", "--quiet", flag, "--output=" + capture, "--", Target(),
                     "basic"},
                    {});
  EXPECT_EQ(run->status, 0) << run->err;
  absl::Status s;
  Replay r = ReplayCapture(capture, &s);
  EXPECT_TRUE(s.ok()) << s;
  if (!s.ok()) r.has_trailer = false;
  return r;
}

// `memtrace run --max-size`: the capture stops taking events at the limit, the program
// runs on unaffected, and every record the drainer applied is either written or counted
// past the limit (the trailer's integrity counts them independently of the sink). verify
// says partial and why; the summary says where the events stop and prints the whole
// run's totals from the trailer. A size it cannot read is a usage error.
TEST_F(PreloadTest, ASizeLimitStopsTheEventsCountsTheRestAndTheTrailerKeepsTheTotals) {
  const std::string capture = TempDir() + "/limited.mtb";
  Result run;
  const Replay r = TracedBasicRun("--max-size=64K", capture, &run);
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.trailer, "complete"), "false");
  EXPECT_EQ(Field(r.trailer, "max_bytes"), "65536");
  const uint64_t written = std::stoull(Field(r.trailer, "events_written"));
  const uint64_t past = std::stoull(Field(r.trailer, "events_past_limit"));
  const uint64_t applied = std::stoull(Field(r.trailer, "events_applied"));
  EXPECT_GT(past, 0u) << "the basic mode writes about 190 KiB";
  EXPECT_EQ(written + past, applied) << r.trailer;
  EXPECT_EQ(Field(r.trailer, "events_lost"), "0");
  struct stat st {};
  ASSERT_EQ(stat(capture.c_str(), &st), 0);
  EXPECT_LT(st.st_size, 64 * 1024 + 16 * 1024) << "the limit, and the closing lines";
  const Result verify = RunProgram({Cli(), "verify", capture}, {});
  EXPECT_EQ(verify.status, 1);
  EXPECT_NE(verify.out.find("it is partial, as its size limit asked: the capture reached "
                            "64.0 KiB"),
            std::string::npos)
      << verify.out;
  const Result summary = RunProgram({Cli(), "summary", capture}, {});
  ASSERT_EQ(summary.status, 0) << summary.err;
  EXPECT_NE(summary.out.find("capture PARTIAL (its size limit, 64.0 KiB, was reached"),
            std::string::npos)
      << summary.out;
  EXPECT_NE(summary.out.find(absl::StrCat(past, " later events were not written")),
            std::string::npos)
      << summary.out;
  EXPECT_NE(summary.out.find("from the trailer: live "), std::string::npos) << summary.out;
  const Result bad = RunProgram({Cli(), "run", "--max-size=2 GB", "--", Target(), "basic"}, {});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--max-size=2 GB is not a size in bytes"), std::string::npos)
      << bad.err;
}

// `memtrace run --site-capacity=N` (MEMTRACE_SITE_CAPACITY): past N distinct call sites
// the rest share the "other sites" row, by that name, and every allocation is still
// there (the markers match the program's counts); the summary shows the overflow in the
// integrity block, as the trailer counts it, and says how to keep more. A value out of
// range is a usage error.
TEST_F(PreloadTest, ASmallSiteCapacitySharesTheRestInOtherSitesAndSaysSo) {
  const std::string capture = TempDir() + "/sites.mtb";
  Result run;
  const Replay r = TracedBasicRun("--site-capacity=3", capture, &run);
  ASSERT_TRUE(r.has_trailer);
  ExpectMarkersMatch(r, ParseCounts(run.out));
  EXPECT_EQ(Field(r.header, "site_capacity"), "3") << r.header;
  const std::string overflow = Field(r.trailer, "site_overflow");
  ASSERT_FALSE(overflow.empty()) << r.trailer;
  EXPECT_GT(std::stoull(overflow), 0u) << r.trailer;

  const Result top = RunProgram({Cli(), "top", "--limit=1000", capture}, {});
  ASSERT_EQ(top.status, 0) << top.err;
  EXPECT_NE(top.out.find("(other sites: more distinct call sites than the capture keeps)"),
            std::string::npos)
      << top.out;
  EXPECT_EQ(top.out.find("0xffffffffffffffff"), std::string::npos) << top.out;
  const Result summary = RunProgram({Cli(), "summary", capture}, {});
  ASSERT_EQ(summary.status, 0) << summary.err;
  EXPECT_NE(summary.out.find("tables     site overflow " + overflow + " "), std::string::npos)
      << summary.out;
  EXPECT_NE(summary.out.find("came from call sites beyond the 3 distinct call sites the "
                             "capture\n  kept"),
            std::string::npos)
      << summary.out;
  EXPECT_NE(summary.out.find("`memtrace run --site-capacity=N`"), std::string::npos)
      << summary.out;

  const Result bad = RunProgram({Cli(), "run", "--site-capacity=0", "--", Target(), "basic"}, {});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--site-capacity=0 is not a whole number from 1 to 16777216"),
            std::string::npos)
      << bad.err;
}

TEST_F(PreloadTest, CrashKeepsEverythingRecordedAndIsPartial) {
  const std::string capture = TempDir() + "/crash.mtb";
  const Result run =
      RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "crash"}, {});
  EXPECT_EQ(run.status, 128 + SIGSEGV) << run.err;
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.trailer, "complete"), "false");
  EXPECT_EQ(Field(r.trailer, "ended_by"), "signal 11");
  ExpectMarkersMatch(r, ParseCounts(run.out));
  const Result verify = RunProgram({Cli(), "verify", capture}, {});
  EXPECT_EQ(verify.status, 1) << verify.out << verify.err;
  EXPECT_NE(verify.out.find("the program ended by signal 11"), std::string::npos)
      << verify.out << verify.err;
}

// Both unwinders find the program's own call chain Outer -> Middle -> Inner -> malloc.
// A signal sent to stop the program (Ctrl-C, kill, a process pool's terminate(), a
// closed pipe) that it leaves to the default action still ends it, by that signal, and
// the capture is finished first: complete, ended by the signal, every marker in it.
TEST_F(PreloadTest, ASignalThatStopsTheProgramFinishesTheCaptureFirst) {
  for (const int sig : {SIGTERM, SIGINT, SIGPIPE}) {
    SCOPED_TRACE(strsignal(sig));
    const std::string capture = absl::StrCat(TempDir(), "/signal", sig, ".mtb");
    const Result run = RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--",
                                   Target(), "raise", std::to_string(sig)},
                                  {});
    EXPECT_EQ(run.status, 128 + sig) << "the signal still ends it: " << run.err;
    ExpectCompleteAndMatching(capture, run.out);
    absl::Status s;
    const Replay r = ReplayCapture(capture, &s);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(Field(r.trailer, "ended_by"), absl::StrCat("signal ", sig)) << r.trailer;
    const Result verify = RunProgram({Cli(), "verify", capture}, {});
    EXPECT_EQ(verify.status, 0) << verify.out;
    const Result summary = RunProgram({Cli(), "summary", capture}, {});
    EXPECT_NE(summary.out.find(absl::StrCat("the program was ended by signal ", sig)),
              std::string::npos)
        << summary.out;
  }
}

void CheckStack(const std::string& unwind) {
  const std::string capture = TempDir() + "/stack_" + unwind + ".mtb";
  const Result run = RunProgram({Cli(), "run", "--quiet", "--unwind=" + unwind, "--depth=8",
                          "--output=" + capture, "--", Target(), "stack"},
                         {});
  ASSERT_EQ(run.status, 0) << run.err;
  uint64_t inner = 0, middle = 0, outer = 0;
  ASSERT_EQ(sscanf(run.out.c_str(), "inner=%lx middle=%lx outer=%lx", &inner, &middle, &outer),
            3)
      << run.out;
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(r.marker_allocs.size(), 1u);
  const auto site = r.sites.find(r.marker_allocs[0].site);
  ASSERT_NE(site, r.sites.end());
  const std::vector<uint64_t>& frames = site->second.frames;
  ASSERT_GE(frames.size(), 3u) << unwind;
  // Return addresses lie inside the calling functions, a little past their starts.
  auto inside = [](uint64_t pc, uint64_t fn) { return pc > fn && pc < fn + 256; };
  EXPECT_TRUE(inside(frames[0], inner)) << unwind;
  EXPECT_TRUE(inside(frames[1], middle)) << unwind;
  EXPECT_TRUE(inside(frames[2], outer)) << unwind;
}

TEST_F(PreloadTest, FramePointerStacksFindTheCallChain) { CheckStack("fp"); }
TEST_F(PreloadTest, DwarfStacksFindTheCallChain) { CheckStack("dwarf"); }

// Byte sampling: a marker of s bytes is kept with probability 1 - exp(-s/N); every kept
// allocation carries that weight, releases are recorded for kept blocks only, and the
// weighted count estimates the program's own. The bounds below are over 10 standard
// deviations wide (about 12,000 markers sampled at p ~ 0.53), so the test does not flake.
TEST_F(PreloadTest, ByteSamplingKeepsAWeightedSampleAndPairsItsReleases) {
  const std::string capture = TempDir() + "/sampled.mtb";
  constexpr double kInterval = 65536;
  const Result run = RunProgram({Cli(), "run", "--quiet", "--sample=65536",
                                 "--output=" + capture, "--", Target(), "basic"},
                                {});
  ASSERT_EQ(run.status, 0) << run.err;
  const Counts program = ParseCounts(run.out);
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(r.unknown_releases, 0);
  EXPECT_EQ(Field(r.trailer, "unknown_frees"), "0") << r.trailer;
  const std::string header = ReadFile(capture).substr(0, 2048);
  EXPECT_NE(header.find("\"sample_interval_bytes\":65536"), std::string::npos) << header;
  double estimate = 0;
  for (const CaptureRecord& a : r.marker_allocs) {
    const double p = -std::expm1(-static_cast<double>(a.size) / kInterval);
    EXPECT_NEAR(a.weight, 1 / p, 1e-4 / p) << a.size;
    estimate += a.weight;
  }
  const double kept = static_cast<double>(r.markers.allocs) / program.allocs;
  EXPECT_GT(kept, 0.3);
  EXPECT_LT(kept, 0.8);
  EXPECT_NEAR(estimate / program.allocs, 1.0, 0.1);
  // Only sampled blocks are live in the capture, and every one of them is still live in
  // the program.
  EXPECT_LE(r.markers.live_count, program.live_count);
  EXPECT_GE(r.markers.live_count, 0);
}

TEST_F(PreloadTest, BadSettingsWarnAndFallBack) {
  const std::string capture = TempDir() + "/bad_env.mtb.zst";
  const Result run = RunProgram({Target(), "stack"},
                         {"LD_PRELOAD=" + Preload(), "MEMTRACE_OUTPUT=" + capture,
                          "MEMTRACE_STACK_DEPTH=lots", "MEMTRACE_UNWIND=magic"});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("MEMTRACE_STACK_DEPTH=\"lots\" is not a whole number from 0 to 64; "
                         "using 16"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("MEMTRACE_UNWIND=\"magic\""), std::string::npos) << run.err;
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(r.markers.allocs, 1);
}

// `memtrace run --tracer-cpus=LIST` (MEMTRACE_TRACER_CPUS): the drainer and the writer,
// named, run only there (read back from /proc in the program), and the header says so.
// A list this process cannot use warns, pins nothing and traces anyway.
TEST_F(PreloadTest, TracerThreadsRunOnTheCpusAsked) {
  const CpuList allowed = AllowedCpus();
  const std::string last = std::to_string(allowed.cpus.back());
  const std::string capture = TempDir() + "/tracer_cpus.mtb";
  const Result run = RunProgram({Cli(), "run", "--quiet", "--tracer-cpus=" + last,
                                 "--output=" + capture, "--", Target(), "threads"},
                                {});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "memtrace-drain=" + last + "\nmemtrace-exit=" + last +
                         "\nmemtrace-write=" + last + "\n")
      << run.err;
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(Field(r.header, "tracer_cpus"), last) << r.header;

  const std::string unpinned = TempDir() + "/tracer_cpus_bad.mtb";
  const Result bad = RunProgram({Target(), "threads"},
                                {"LD_PRELOAD=" + Preload(), "MEMTRACE_OUTPUT=" + unpinned,
                                 "MEMTRACE_TRACER_CPUS=1024"});
  ASSERT_EQ(bad.status, 0) << bad.err;
  EXPECT_NE(bad.err.find("MEMTRACE_TRACER_CPUS=\"1024\": CPU list \"1024\": the CPU number "
                         "at position 1 is above 1023"),
            std::string::npos)
      << bad.err;
  const std::string all = allowed.ToString();
  EXPECT_EQ(bad.out, "memtrace-drain=" + all + "\nmemtrace-exit=" + all +
                         "\nmemtrace-write=" + all + "\n");
  const Replay unpinned_replay = ReplayCapture(unpinned, &s);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_NE(unpinned_replay.header.find("\"tracer_cpus\":\"\""), std::string::npos)
      << unpinned_replay.header;

  const Result usage = RunProgram({Cli(), "run", "--tracer-cpus=2-x", "--", Target()}, {});
  EXPECT_EQ(usage.status, 2);
  EXPECT_NE(usage.err.find("--tracer-cpus: CPU list \"2-x\": expected a CPU number at "
                           "position 3"),
            std::string::npos)
      << usage.err;
}

TEST_F(PreloadTest, TheCliNeverTracesItself) {
  const std::string capture = TempDir() + "/cli_self.mtb";
  const Result run = RunProgram({Cli(), "help"}, {"LD_PRELOAD=" + Preload(), "MEMTRACE_OUTPUT=" + capture});
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_NE(access(capture.c_str(), F_OK), 0) << "the CLI wrote a capture of itself";
}

TEST_F(PreloadTest, UnloadableInterposerIsAClearError) {
  const Result run = RunProgram({Cli(), "run", "--preload=/nonexistent/libmemtrace_preload.so", "--",
                          Target(), "stack"},
                         {});
  EXPECT_EQ(run.status, 125);
  EXPECT_NE(run.err.find("/nonexistent/libmemtrace_preload.so"), std::string::npos) << run.err;
}

// An interposer that cannot create its capture traces nothing, so a run into a directory
// that is missing (or is a file) is refused before the program starts: it must not run.
TEST_F(PreloadTest, CaptureDirectoryThatCannotHoldItIsRefusedBeforeTheProgramRuns) {
  const std::string ran = TempDir() + "/refused_program_ran";
  const std::string file = TempDir() + "/refused_plain_file";
  ASSERT_EQ(RunProgram({"/bin/sh", "-c", "echo > " + file}, {}).status, 0);
  struct Case {
    std::string output;
    std::string reason;
  };
  for (const Case& c : {Case{TempDir() + "/no_such_dir/x.mtb", "does not exist"},
                        Case{file + "/x.mtb", "is not a directory"}}) {
    const Result run = RunProgram({Cli(), "run", "--output=" + c.output, "--", "/bin/sh", "-c",
                                   "echo > " + ran},
                                  {});
    EXPECT_EQ(run.status, 125) << run.err;
    EXPECT_NE(run.err.find("cannot write the capture '" + c.output + "'"), std::string::npos)
        << run.err;
    EXPECT_NE(run.err.find(c.reason), std::string::npos) << run.err;
    EXPECT_NE(access(ran.c_str(), F_OK), 0) << "the program ran: " << c.output;
  }
}

// A set-user-ID program of another owner runs in the loader's secure mode, which ignores
// LD_PRELOAD: refused with the reason before it runs, like a static one. Making such a file
// takes root (chown); elsewhere the test has nothing to check.
TEST_F(PreloadTest, SetUserIdProgramOfAnotherOwnerIsRefusedWithTheReason) {
  if (geteuid() != 0) GTEST_SKIP() << "making a set-user-ID file of another owner takes root";
  const std::string program = TempDir() + "/setuid_true";
  ASSERT_EQ(RunProgram({"/bin/cp", "/bin/true", program}, {}).status, 0);
  ASSERT_EQ(chown(program.c_str(), 65534, static_cast<gid_t>(-1)), 0) << strerror(errno);
  ASSERT_EQ(chmod(program.c_str(), 04755), 0);
  struct statvfs fs;
  ASSERT_EQ(statvfs(program.c_str(), &fs), 0);
  if ((fs.f_flag & ST_NOSUID) != 0) GTEST_SKIP() << "the test's directory is mounted nosuid";
  const Result run = RunProgram({Cli(), "run", "--", program}, {});
  EXPECT_EQ(run.status, 125) << run.err;
  EXPECT_NE(run.err.find("set-user-ID (owner uid 65534"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("ignores LD_PRELOAD"), std::string::npos) << run.err;

  // Run by a traced program with children traced: it runs, untraced, and the interposer
  // says so: by path (the shell searches $PATH itself and calls execve), and by name
  // (env calls execvp, which the interposer resolves in $PATH as the loader would).
  for (const std::string& how : {program, std::string("env setuid_true")}) {
    const std::string capture = TempDir() + "/setuid_parent.mtb";
    const Result child = RunProgram(
        {Cli(), "run", "--quiet", "--children", "--output=" + capture, "--", "/bin/sh", "-c",
         "PATH=" + TempDir() + ":$PATH; " + how + " && echo ran"},
        {});
    EXPECT_EQ(child.status, 0) << child.err;
    EXPECT_NE(child.out.find("ran"), std::string::npos) << child.out;
    EXPECT_NE(child.err.find("'" + program + "' is set-user-ID"), std::string::npos)
        << how << ": " << child.err;
    EXPECT_NE(child.err.find("runs untraced"), std::string::npos) << child.err;
  }
}

// Debian's ldconfig (essential package libc-bin) is a static-pie executable: no program
// interpreter, so LD_PRELOAD cannot reach it. (A static test program of our own cannot
// be linked in the sanitizer configurations.) `-p` only prints the cache, were it run.
TEST_F(PreloadTest, StaticProgramIsRefusedWithTheReason) {
  const Result run = RunProgram({Cli(), "run", "--", "/sbin/ldconfig", "-p"}, {});
  EXPECT_EQ(run.status, 125);
  EXPECT_NE(run.err.find("statically linked"), std::string::npos) << run.err;
}

// A program that cannot be run is reported as such, with the reason and the usual shell
// status (127 not found, 126 not runnable), not as an interposer that failed to load:
// the child reports execve()'s errno to the CLI through a close-on-exec pipe.
TEST_F(PreloadTest, AProgramThatCannotBeRunIsReportedWithTheReason) {
  const std::string dir = TempDir() + "/not_runnable";
  mkdir(dir.c_str(), 0755);
  auto write_file = [](const std::string& path, const std::string& text, mode_t mode) {
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr) << path;
    fputs(text.c_str(), f);
    fclose(f);
    ASSERT_EQ(chmod(path.c_str(), mode), 0) << path;
  };
  write_file(dir + "/no_interpreter", "#!/nonexistent/bin/python9 -u\nprint(1)\n", 0755);
  write_file(dir + "/not_executable", "#!/bin/sh\ntrue\n", 0644);
  write_file(dir + "/not_a_program", "just some text\n", 0755);
  struct Case {
    std::string program;
    int status;
    std::string says;
  };
  const std::vector<Case> cases = {
      {dir + "/missing", 127, "No such file or directory"},
      {dir + "/no_interpreter", 127, "its interpreter '/nonexistent/bin/python9'"},
      {dir + "/not_executable", 126, "chmod +x"},
      {dir + "/not_a_program", 126, "Exec format error"},
      {dir, 126, "it is a directory"},
  };
  for (const Case& c : cases) {
    const std::string capture = dir + "/capture.mtb";
    const Result run = RunProgram({Cli(), "run", "--output=" + capture, "--", c.program}, {});
    EXPECT_EQ(run.status, c.status) << c.program << ": " << run.err;
    EXPECT_NE(run.err.find("memtrace run: cannot run '" + c.program + "': "), std::string::npos)
        << run.err;
    EXPECT_NE(run.err.find(c.says), std::string::npos) << run.err;
    // Nothing about the interposer or a missing capture: the program never started.
    EXPECT_EQ(run.err.find("interposer"), std::string::npos) << run.err;
    EXPECT_EQ(run.err.find("no capture"), std::string::npos) << run.err;
    EXPECT_NE(access(capture.c_str(), F_OK), 0) << c.program;
  }
}

}  // namespace
}  // namespace memtrace
