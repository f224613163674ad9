// Copyright 2026 The memtrace Authors.
//
// The interposer's recording filters (--min-size, --sample) on a real program: every
// verdict (`summary`, `verify`, their --json) states each filter in force and exactly
// what it left out (analysis/capture_filters.h, preload/filter_counts.h).
//
// The truth is computed here, not by the code under test: tests/preload_target's "sizes"
// mode makes the same allocations on every run (four threads of small blocks and
// markers, malloc and free only), so an unfiltered capture of it holds every allocation,
// and a filtered run must record some and count the rest: recorded + left out = all,
// for the allocations and for their bytes.

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "analysis/analyzer.h"
#include "analysis/capture_reader.h"
#include "tests/run_program.h"
#include "tests/test_paths.h"

namespace memtrace {
namespace {

const std::string& Cli() {
  static const std::string path = Runfile("cli/memtrace");
  return path;
}
const std::string& Target() {
  static const std::string path = Runfile("tests/preload_target");
  return path;
}

// What a capture records: allocations and their bytes (as the program asked for them),
// by whether the block's size is below `below`, and the moves and resizes (none expected:
// the target never calls realloc).
struct Recorded {
  uint64_t allocations = 0;
  uint64_t bytes = 0;
  uint64_t small_allocations = 0;  // of size < `below`
  uint64_t remaps_and_resizes = 0;
};
Recorded CountRecorded(const std::string& capture, uint64_t below) {
  Recorded r;
  const absl::Status s = ReadCapture(capture, [&](const CaptureRecord& rec) {
    if (rec.type == LineType::kAlloc) {
      ++r.allocations;
      r.bytes += rec.size;
      if (rec.size < below) ++r.small_allocations;
    } else if (rec.type == LineType::kRemap || rec.type == LineType::kResize) {
      ++r.remaps_and_resizes;
    }
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  return r;
}

// Traces the "sizes" mode into `capture` with `flags`; what it recorded.
Recorded TraceSizes(const std::vector<std::string>& flags, const std::string& capture,
                    uint64_t below) {
  std::vector<std::string> argv = {Cli(), "run", "--quiet", "--output=" + capture};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"--", Target(), "sizes"});
  const Result run = RunProgram(argv, {});
  EXPECT_EQ(run.status, 0) << run.err;
  // The program's own count of what it made: 8,000 small blocks and 100 markers.
  EXPECT_TRUE(absl::StrContains(run.out, "allocs=100 frees=100")) << run.out;
  EXPECT_TRUE(absl::StrContains(run.out, "small=8000 small_bytes=1696000")) << run.out;
  return CountRecorded(capture, below);
}

// Every allocation the program makes, from a capture without filters.
Recorded Everything() {
  const Recorded all = TraceSizes({}, TempDir() + "/sizes_all.jsonl", 50000);
  EXPECT_EQ(all.remaps_and_resizes, 0u) << "the target calls malloc and free only";
  EXPECT_GE(all.small_allocations, 8000u);
  return all;
}

// What `argv` printed to stdout; it must succeed.
std::string Output(const std::vector<std::string>& argv) {
  const Result r = RunProgram(argv, {});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  return r.out;
}

class PreloadFiltersTest : public ::testing::Test {
 protected:
  void SetUp() override { MEMTRACE_SKIP_UNDER_SANITIZERS(); }
};

TEST_F(PreloadFiltersTest, EveryVerdictStatesWhatTheMinimumSizeLeftOut) {
  const Recorded all = Everything();
  const std::string capture = TempDir() + "/sizes_min.mtb";
  const Recorded kept = TraceSizes({"--min-size=50000"}, capture, 50000);
  EXPECT_EQ(kept.small_allocations, 0u);
  EXPECT_GE(kept.allocations, 100u) << "the markers";
  const uint64_t left_out = all.allocations - kept.allocations;
  const uint64_t left_out_bytes = all.bytes - kept.bytes;
  EXPECT_EQ(left_out, all.small_allocations);
  const std::string counts = absl::StrCat(R"("left_out":{"allocations":)", left_out,
                                          R"(,"bytes":)", left_out_bytes, "}");
  const std::string said =
      absl::StrCat("--min-size=50000 left out ", left_out, " allocations (");

  const std::string summary = Output({Cli(), "summary", capture});
  EXPECT_TRUE(absl::StrContains(summary, "capture complete; filtered: " + said)) << summary;
  EXPECT_TRUE(absl::StrContains(summary, "of blocks smaller than 50000 bytes")) << summary;
  EXPECT_TRUE(absl::StrContains(
      summary, "integrity: complete, exact for blocks of at least 50000 bytes;"))
      << summary;
  EXPECT_TRUE(absl::StrContains(summary, "  filters    " + said)) << summary;
  EXPECT_FALSE(absl::StrContains(summary, "exact;")) << "never unqualified: " << summary;

  const std::string verify = Output({Cli(), "verify", capture});
  EXPECT_TRUE(absl::StrContains(verify, "nothing lost")) << verify;
  // "exact" never stands alone beside a filter.
  EXPECT_TRUE(absl::StrContains(verify, "complete, exact for blocks of at least 50000 bytes: "))
      << verify;
  EXPECT_TRUE(absl::StrContains(verify, "; filtered: " + said)) << verify;

  for (const char* command : {"summary", "verify"}) {
    const std::string json = Output({Cli(), command, "--json", capture});
    EXPECT_TRUE(absl::StrContains(json, R"("filters":[{"filter":"min_size",)"
                                        R"("flag":"--min-size=50000",)"))
        << json;
    EXPECT_TRUE(absl::StrContains(json, counts)) << json;
  }
}

// Sampling leaves out the blocks it did not draw, and with a minimum size as well each
// allocation is counted under the one filter that left it out: the two counts and the
// recorded allocations add up to every allocation.
// A recorded block that shrinks in place below the minimum size leaves the capture then:
// its free is not recorded (the filter looks at the block's size when it is released), so
// before, it stayed live forever, and the blocks later at its address were missed frees.
// The program frees every block it shrinks: what is live at the end is what the same
// program leaves when it reallocates them to their own size instead (its stdio buffers).
TEST_F(PreloadFiltersTest, ABlockShrunkBelowTheMinimumSizeLeavesTheCapture) {
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--min-size=1024"},
        std::vector<std::string>{"--min-size=1024", "--sample=512"}}) {
    auto trace = [&](const std::string& capture, const std::vector<std::string>& mode) {
      std::vector<std::string> argv = {Cli(), "run", "--quiet", "--output=" + capture};
      argv.insert(argv.end(), flags.begin(), flags.end());
      argv.insert(argv.end(), {"--", Target(), "shrink-below", "1024"});
      argv.insert(argv.end(), mode.begin(), mode.end());
      const std::string out = Output(argv);
      EXPECT_TRUE(absl::StrContains(out, "in_place=")) << out;
      EXPECT_FALSE(absl::StrContains(out, "in_place=0\n")) << "none stayed in place";
      const absl::StatusOr<CaptureSummary> s = Analyzer::Summarize(capture);
      EXPECT_TRUE(s.ok()) << s.status();
      return s.value_or(CaptureSummary{});
    };
    const CaptureSummary shrunk = trace(TempDir() + "/shrunk.mtb", {});
    const CaptureSummary same = trace(TempDir() + "/same.mtb", {"same"});
    EXPECT_EQ(shrunk.missed_frees, 0u) << flags.back();
    if (flags.size() == 1) {  // sampled, the two runs draw apart
      EXPECT_EQ(shrunk.totals.live_count, same.totals.live_count);
      EXPECT_EQ(shrunk.totals.live_bytes, same.totals.live_bytes);
    }
    const Result verify = RunProgram({Cli(), "verify", TempDir() + "/shrunk.mtb"}, {});
    EXPECT_EQ(verify.status, 0) << verify.out;
  }
}

TEST_F(PreloadFiltersTest, SamplingStatesWhatItLeftOutAndThatCountsAreEstimates) {
  const Recorded all = Everything();
  const std::string sampled = TempDir() + "/sizes_sampled.jsonl";
  const Recorded drawn = TraceSizes({"--sample=4096"}, sampled, 50000);
  ASSERT_LT(drawn.allocations, all.allocations) << "some blocks were not drawn";
  const std::string json = Output({Cli(), "summary", "--json", sampled});
  EXPECT_TRUE(absl::StrContains(
      json, absl::StrCat(R"("filter":"sample","flag":"--sample=4096",)"
                         R"("setting":"MEMTRACE_SAMPLE_BYTES","value":4096,)"
                         R"("left_out":{"allocations":)",
                         all.allocations - drawn.allocations, R"(,"bytes":)",
                         all.bytes - drawn.bytes, R"(},"estimates":true})")))
      << json;
  const std::string verify = Output({Cli(), "verify", sampled});
  EXPECT_TRUE(absl::StrContains(verify, "nothing lost")) << verify;
  EXPECT_TRUE(absl::StrContains(verify, "complete, exact for the sampled blocks: ")) << verify;
  EXPECT_TRUE(absl::StrContains(
      verify, absl::StrCat("; sampled: --sample=4096 left out ",
                           all.allocations - drawn.allocations, " allocations (")))
      << verify;
  EXPECT_TRUE(absl::StrContains(verify, "counts and bytes are estimates")) << verify;
  // Its high-water marks are scaled from the sample: estimates, which no interval bounds.
  const std::string table = Output({Cli(), "summary", sampled});
  const size_t total = table.find("\nTOTAL ");
  ASSERT_NE(total, std::string::npos) << table;
  const std::string total_row = table.substr(total + 1, table.find('\n', total + 1) - total - 1);
  EXPECT_TRUE(absl::StrContains(total_row, " estimate ")) << total_row;
  EXPECT_FALSE(absl::StrContains(total_row, " exact ")) << total_row;

  // Blocks of 16 to 56 bytes have a usable size below 64 (glibc's is the request rounded
  // up to 16n + 8, at least 24): left out by the minimum size, never sampled.
  const std::string both = TempDir() + "/sizes_both.jsonl";
  const Recorded kept = TraceSizes({"--min-size=64", "--sample=4096"}, both, 50000);
  const std::string both_json = Output({Cli(), "verify", "--json", both});
  const size_t min_at = both_json.find(R"("filter":"min_size")");
  const size_t sample_at = both_json.find(R"("filter":"sample")");
  ASSERT_NE(min_at, std::string::npos) << both_json;
  ASSERT_NE(sample_at, std::string::npos) << both_json;
  auto number_after = [&](size_t from, const std::string& key) -> uint64_t {
    const size_t at = both_json.find(key, from);
    return at == std::string::npos ? 0 : std::stoull(both_json.substr(at + key.size()));
  };
  const uint64_t by_size = number_after(min_at, R"("allocations":)");
  const uint64_t by_sampling = number_after(sample_at, R"("allocations":)");
  EXPECT_GE(by_size, 4 * 2000 * 6 / 50u) << "sizes 16 to 56: 6 of every 50 small blocks";
  EXPECT_EQ(kept.allocations + by_size + by_sampling, all.allocations) << both_json;
  EXPECT_EQ(kept.bytes + number_after(min_at, R"("bytes":)") +
                number_after(sample_at, R"("bytes":)"),
            all.bytes)
      << both_json;
}

}  // namespace
}  // namespace memtrace
