// Copyright 2026 The memtrace Authors.
//
// Sampled captures (`memtrace run --sample=N`) estimate without bias: the interposer's
// draw (preload/byte_sampler.h), the sink's weights and the analyzer's scaled counts,
// end to end. tests/sampling_target.cc allocates groups of blocks (size classes from
// 8 B to 1 MiB; buffers grown by realloc, moved or in place) and prints, for each group,
// its true allocated and live counts and bytes and the variance of their estimates. The
// analyzer's per-site rows of the sampled capture, added up per group (each group has its
// own functions, so nothing else the process allocates is counted), must lie within six
// standard deviations of the truth, plus the analyzer's rounding (below). A correct
// estimator fails one check with a probability of the order of 1e-9 (the groups expect
// 200 or more recorded blocks, so their estimates are close to normal); a biased one
// (a realloc counted as an allocation, a weight rounded to a whole count) fails by many.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "analysis/analyzer.h"
#include "tests/run_program.h"
#include "tests/test_paths.h"

namespace memtrace {
namespace {

// What one group holds: truth and variances, as sampling_target prints them.
struct Group {
  std::string name;
  uint64_t function = 0;  // its function's address: call sites from there on are its own
  double allocated_count = 0, allocated_bytes = 0, live_count = 0, live_bytes = 0;
  double var_allocated_count = 0, var_allocated_bytes = 0, var_live_count = 0,
         var_live_bytes = 0;
};

struct Target {
  uint64_t section_start = 0, section_stop = 0;
  std::vector<Group> groups;  // by function address
};

uint64_t Hex(absl::string_view text) {
  uint64_t v = 0;
  EXPECT_TRUE(absl::SimpleHexAtoi(text, &v)) << text;
  return v;
}

Target ParseTarget(const std::string& out) {
  Target t;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    const std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
    if (f[0] == "section" && f.size() == 3) {
      t.section_start = Hex(f[1]);
      t.section_stop = Hex(f[2]);
      continue;
    }
    EXPECT_EQ(f[0], "group") << line;
    EXPECT_EQ(f.size(), 11u) << line;
    if (f[0] != "group" || f.size() != 11) continue;
    Group g;
    g.name = std::string(f[1]);
    g.function = Hex(f[2]);
    double* fields[] = {&g.allocated_count,     &g.allocated_bytes,     &g.live_count,
                        &g.live_bytes,          &g.var_allocated_count, &g.var_allocated_bytes,
                        &g.var_live_count,      &g.var_live_bytes};
    for (int i = 0; i < 8; ++i) {
      const std::vector<absl::string_view> kv = absl::StrSplit(f[3 + i], '=');
      EXPECT_TRUE(kv.size() == 2 && absl::SimpleAtod(kv[1], fields[i])) << f[3 + i];
    }
    t.groups.push_back(g);
  }
  std::sort(t.groups.begin(), t.groups.end(),
            [](const Group& a, const Group& b) { return a.function < b.function; });
  return t;
}

// The analyzer's estimates for one group: its rows added up.
struct Estimate {
  double allocated_count = 0, allocated_bytes = 0, live_count = 0, live_bytes = 0;
  int rows = 0;
};

// `estimate` of `truth`: within six standard deviations, plus `rounding` (a bound on what
// the analyzer's rounding can add, not a tolerance for the estimator).
void ExpectWithin(const std::string& what, double estimate, double truth, double variance,
                  double rounding) {
  const double sd = std::sqrt(variance);
  EXPECT_LE(std::fabs(estimate - truth), 6 * sd + rounding)
      << what << ": estimate " << estimate << ", truth " << truth << " (" << std::showpos
      << (estimate - truth) / truth * 100 << std::noshowpos << "%), sd " << sd
      << ", rounding " << rounding;
}

// Traces `mode` of sampling_target at sampling interval `period` and checks every group.
// Unsampled (`sampled` false: the program still sizes its work for `period`), every count
// must be exact: each malloc, each realloc that moved its block and each in-place growth
// as the program itself counted them.
void CheckEstimates(const std::string& mode, uint64_t period, bool sampled = true) {
  SCOPED_TRACE(absl::StrCat(mode, sampled ? " --sample=" : " unsampled, sized for ", period));
  const std::string capture =
      absl::StrCat(TempDir(), "/sampling_", mode, "_", period, sampled ? "" : "_all", ".mtb");
  std::vector<std::string> argv = {Runfile("cli/memtrace"), "run", "--quiet", "--depth=0"};
  if (sampled) argv.push_back(absl::StrCat("--sample=", period));
  for (std::string arg : {"--output=" + capture, std::string("--"),
                          Runfile("tests/sampling_target"), mode, absl::StrCat(period)}) {
    argv.push_back(arg);
  }
  const Result run = RunProgram(argv, {});
  ASSERT_EQ(run.status, 0) << run.err;
  const Target target = ParseTarget(run.out);
  ASSERT_FALSE(target.groups.empty()) << run.out;
  absl::StatusOr<CaptureSummary> s = Analyzer::Summarize(capture);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->sampled, sampled);
  EXPECT_EQ(s->sample_interval_bytes, sampled ? period : 0);
  EXPECT_EQ(s->unmatched_releases, 0u);

  std::vector<Estimate> estimates(target.groups.size());
  for (const AllocationAttribution& a : s->attribution) {
    if (a.site_addr < target.section_start || a.site_addr >= target.section_stop) continue;
    // The group whose function starts last at or before the call site.
    auto after = std::upper_bound(
        target.groups.begin(), target.groups.end(), a.site_addr,
        [](uint64_t addr, const Group& g) { return addr < g.function; });
    ASSERT_NE(after, target.groups.begin()) << std::hex << a.site_addr;
    Estimate& e = estimates[after - target.groups.begin() - 1];
    e.allocated_count += static_cast<double>(a.usage.allocated_count);
    e.allocated_bytes += static_cast<double>(a.usage.allocated_bytes);
    e.live_count += static_cast<double>(a.usage.live_count);
    e.live_bytes += static_cast<double>(a.usage.live_bytes);
    ++e.rows;
  }
  for (size_t i = 0; i < target.groups.size(); ++i) {
    const Group& g = target.groups[i];
    const Estimate& e = estimates[i];
    EXPECT_GT(e.rows, 0) << g.name;
    if (!sampled) {
      EXPECT_EQ(e.allocated_count, g.allocated_count) << g.name;
      EXPECT_EQ(e.allocated_bytes, g.allocated_bytes) << g.name;
      EXPECT_EQ(e.live_count, g.live_count) << g.name;
      EXPECT_EQ(e.live_bytes, g.live_bytes) << g.name;
      continue;
    }
    // The analyzer's rounding: each row's count is within half an allocation of its sum
    // of weights; each recorded block's bytes within half a byte (at most one recorded
    // block per estimated allocation); a live block's count within one of its weight,
    // which adds at most 1/4 per recorded live block to the variance; and weights carry
    // six significant digits (RoundedWeight).
    const double digits = 1e-5;
    ExpectWithin(g.name + " allocated_count", e.allocated_count, g.allocated_count,
                 g.var_allocated_count, 0.5 * e.rows + digits * e.allocated_count);
    ExpectWithin(g.name + " allocated_bytes", e.allocated_bytes, g.allocated_bytes,
                 g.var_allocated_bytes, 0.5 * e.allocated_count + digits * e.allocated_bytes);
    ExpectWithin(g.name + " live_count", e.live_count, g.live_count,
                 g.var_live_count + 0.25 * e.live_count, digits * e.live_count);
    ExpectWithin(g.name + " live_bytes", e.live_bytes, g.live_bytes, g.var_live_bytes,
                 0.5 * e.live_count + digits * e.live_bytes);
  }
}

// The interposer is built with the test's configuration here (the preload_*_test targets
// alone build their programs with UBSan under the other sanitizers: bazel/preloadable.bzl).
class SamplingTest : public ::testing::Test {
 protected:
  void SetUp() override { MEMTRACE_SKIP_UNDER_SANITIZERS(); }
};

TEST_F(SamplingTest, SizeClassesFrom8BytesTo1MiBAreEstimatedWithoutBias) {
  CheckEstimates("sizes", 4096);
  CheckEstimates("sizes", 65536);
}

// Most reallocs move the block (a release and a new allocation), some grow it in place
// (the same allocation, larger); shrinks to fit stay in place.
// The same programs traced without sampling: the truth exactly, group by group, reallocs
// in place and moved counted apart (an allocation is a malloc or a move).
TEST_F(SamplingTest, WithoutSamplingEveryCountIsExact) {
  CheckEstimates("sizes", 65536, /*sampled=*/false);
  CheckEstimates("realloc", 8192, /*sampled=*/false);
}

TEST_F(SamplingTest, ReallocHeavyProgramsAreEstimatedWithoutBias) {
  CheckEstimates("realloc", 256);
  CheckEstimates("realloc", 8192);
}

}  // namespace
}  // namespace memtrace
