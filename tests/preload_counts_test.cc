// Copyright 2026 The memtrace Authors.
//
// The interposer (preload/) on a real program: tests/preload_target.cc, run through
// `memtrace run` or with LD_PRELOAD directly. The program counts its own operations (odd
// "marker" sizes that glibc never uses) and prints them; each test replays the capture
// independently (by address, in capture order) and compares. Here: every entry point on
// many threads, the program's calls, the mmap layer, threads with small stacks or that
// allocate inside glibc, a program that closes the capture's descriptor, an allocator
// ahead of the interposer, and what memtrace allocates for itself, which is never
// charged to the program. (The settings of `memtrace run` are in
// preload_settings_test.cc.)

#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/preload_test_support.h"
#include "tests/run_program.h"
#include "tests/test_paths.h"

namespace memtrace {
namespace {

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

// A run whose capture holds no events says what that may mean, and suggests no commands
// to look further (there is nothing to look at).
TEST_F(PreloadTest, ARunThatRecordsNoAllocationSaysSoAndSuggestsNothingNext) {
  const std::string capture = TempDir() + "/none.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--min-size=1G", "--output=" + capture, "--", Target(), "basic"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("\n0 events;"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("note: the interposer was loaded but recorded no allocations"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(run.err.find("next:"), std::string::npos) << run.err;
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

const std::string& OtherMalloc() {
  static const std::string path = Runfile("tests/libother_malloc.so");
  return path;
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

// A program that closes every descriptor it did not open, then opens a file of its own
// and copies it into the next thousand numbers (the capture's among them): the sink sees
// its descriptor is no longer the capture before it writes, opens the capture again by
// its path, and loses nothing; the program's file holds only what the program wrote.
// With --live too: the live server's socket and eventfd numbers are the program's file
// then; the server stops serving, writes no wake-up into it, and the program ends (it
// waited forever at exit: the server's poll() was not woken by the close).
TEST_F(PreloadTest, AProgramClosingTheCapturesDescriptorLosesNothingAndGetsNoCaptureBytes) {
  for (const bool live : {false, true}) {
    SCOPED_TRACE(live ? "--live" : "");
    const std::string capture = TempDir() + (live ? "/closed_fd_live.mtb" : "/closed_fd.mtb");
    const std::string own = TempDir() + (live ? "/closed_fd_live.own" : "/closed_fd.own");
    std::vector<std::string> argv = {"/usr/bin/timeout", "60", Cli(), "run", "--quiet",
                                     "--output=" + capture};
    if (live) argv.push_back("--live");
    for (const std::string& a : {std::string("--"), Target(), std::string("close-fds"), own}) {
      argv.push_back(a);
    }
    const Result run = RunProgram(argv, {});
    ASSERT_EQ(run.status, 0) << run.err;
    EXPECT_EQ(ReadFile(own), "USER\n") << "memtrace's bytes went into the program's file";
    ExpectCompleteAndMatching(capture, run.out);
  }
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

}  // namespace
}  // namespace memtrace
