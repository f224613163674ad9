// Copyright 2026 The memtrace Authors.
//
// Allocations a program makes before the interposer (preload/) starts tracing, in a
// library whose constructor runs first (tests/early_allocator.cc): they are logged in
// order and recorded when tracing starts, each at the stack that made it; a log that
// fills counts what it drops; and the blocks follow the minimum size and sampling.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/preload_test_support.h"
#include "tests/run_program.h"
#include "tests/test_paths.h"

namespace memtrace {
namespace {

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

// The high-water mark of what was done before start survives the log's filling: a
// 3,000,017-byte block allocated and freed at once in round 40,000 of 70,000 (after the
// log first filled, before it fills again), while the table, the round's two blocks and
// the 200-byte blocks kept so far are live. The log keeps the blocks live at its highest
// moment, so the capture has that block and the peak, and counts the others it drops.
TEST_F(PreloadTest, TheHighWaterMarkBeforeStartSurvivesTheLogFilling) {
  const std::string capture = TempDir() + "/early_peak.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", EarlyAllocations()},
      {"EARLY_ALLOCATIONS_ROUNDS=70000", "EARLY_ALLOCATIONS_PEAK_AT=40000"});
  ASSERT_EQ(run.status, 0) << run.err;
  const SizeCounts peak = CountAllocsOfSize(capture, 3000017);
  EXPECT_EQ(peak.allocs, 1);
  EXPECT_EQ(peak.frees, 1);
  // Live then, at least: the table, 20 kept 200-byte blocks (rounds 0 to 19,000), the
  // round's 100 and 200 bytes, and the block itself.
  const int64_t live_then = 50043 + 20 * 200 + 100 + 200 + 3000017;
  const Result json = RunProgram({Cli(), "summary", "--json", capture}, {});
  ASSERT_EQ(json.status, 0) << json.err;
  const size_t totals = json.out.find("\"totals\":");
  ASSERT_NE(totals, std::string::npos) << json.out;
  int64_t high_water = 0;
  ASSERT_TRUE(absl::SimpleAtoi(Field(json.out.substr(totals), "high_water_bytes"), &high_water))
      << json.out;
  EXPECT_GE(high_water, live_then) << json.out;
  const Result verify = RunProgram({Cli(), "verify", capture}, {});
  EXPECT_EQ(verify.status, 0) << verify.out << verify.err;
  // Each of the churn's blocks is in the capture or in the count of those dropped.
  const SizeCounts older = CountAllocsOfSize(capture, 100);
  const SizeCounts newer = CountAllocsOfSize(capture, 200);
  const size_t at = json.out.find("\"before_start\":{\"freed_blocks\":");
  ASSERT_NE(at, std::string::npos) << json.out;
  int64_t dropped = 0;
  ASSERT_TRUE(absl::SimpleAtoi(Field(json.out.substr(at + 16), "freed_blocks"), &dropped));
  EXPECT_EQ(older.allocs + newer.allocs + dropped, 2 * 70000);
  EXPECT_EQ(older.allocs, older.frees);
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

}  // namespace
}  // namespace memtrace
