// Copyright 2026 The memtrace Authors.
//
// The settings of `memtrace run` (and their MEMTRACE_* variables) as the interposer
// (preload/) applies them to a real program, tests/preload_target.cc: the capture's
// encoding, --exact-order, --fence, byte sampling, --max-size, the site table's capacity,
// --tracer-cpus, --tracer-threads; settings that would not be used are named, and bad ones warn and fall
// back. Each test replays the capture independently and compares it with the program's
// own counts.

#include <sys/stat.h>

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/capture_reader.h"
#include "runtime/config.h"
#include "runtime/internal/cpu_list.h"
#include "tests/preload_test_support.h"
#include "tests/run_program.h"
#include "tests/test_paths.h"

namespace memtrace {
namespace {

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

// The target's "basic" mode under `memtrace run --quiet FLAG` (no FLAG when empty), into
// `capture`, and that capture replayed (has_trailer false when the run or the capture
// failed, said as a test failure).
Replay TracedBasicRun(const std::string& flag, const std::string& capture, Result* run) {
  std::vector<std::string> argv = {Cli(), "run", "--quiet", "--output=" + capture, "--",
                                   Target(), "basic"};
  if (!flag.empty()) argv.insert(argv.begin() + 3, flag);
  *run = RunProgram(argv, {});
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

// `memtrace run --tracer-threads=K` (MEMTRACE_TRACER_THREADS): the setting reaches the
// interposer, whose header records the threads that applied records, and the program's
// counts still match its own; a run without the flag records the count chosen for the
// CPUs this test (and so the program) may use. A value out of range is a usage error that
// names the flag, the value and the range.
TEST_F(PreloadTest, TracerThreadsAreTakenRecordedAndRangeChecked) {
  const std::string capture = TempDir() + "/tracer_threads.mtb";
  const std::string chosen = std::to_string(TracerThreadsFor(0, TracerCpuCount(CpuList{})));
  for (const auto& [flag, recorded] :
       {std::pair<std::string, std::string>{"--tracer-threads=2", "2"}, {"", chosen}}) {
    Result run;
    const Replay r = TracedBasicRun(flag, capture, &run);
    ASSERT_TRUE(r.has_trailer) << flag;
    ExpectMarkersMatch(r, ParseCounts(run.out));
    EXPECT_EQ(Field(r.header, "tracer_threads"), recorded) << r.header;
  }

  for (const std::string value : {"17", "-1", "two"}) {
    const Result bad =
        RunProgram({Cli(), "run", "--tracer-threads=" + value, "--", Target(), "basic"}, {});
    EXPECT_EQ(bad.status, 2) << value;
    EXPECT_NE(bad.err.find("--tracer-threads=" + value +
                           " is not a whole number from 0 to 16 (0: chosen from the CPU "
                           "count)"),
              std::string::npos)
        << bad.err;
  }
}

}  // namespace
}  // namespace memtrace
