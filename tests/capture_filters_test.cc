// Copyright 2026 The memtrace Authors.
//
// The recording filters a capture states (analysis/capture_filters.h), from hand-written
// headers and trailers: every filter in force is named with what it left out, a count and
// bytes where the trailer has them and "filtered" where it has not, and "exact" is always
// qualified beside a filter. The interposer's own counts are checked end to end in
// preload_filters_test.

#include "analysis/capture_filters.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "analysis/analyzer.h"
#include "analysis/trailer.h"

namespace memtrace {
namespace {

// A capture of the interposer's with `interposer` as its header's object and `trailer`
// (without its type and verdict) as its last line.
CaptureSummary Summarize(const std::string& interposer, const std::string& trailer) {
  std::string text = "{\"type\":\"header\",\"schema_version\":1,\"source\":\"preload\","
                     "\"interposer\":" + interposer + "}\n";
  text += "{\"type\":\"alloc\",\"t\":1,\"thread\":1,\"addr\":\"0x10\",\"size\":2000,\"layer\":0,"
          "\"scope\":0,\"site\":0,\"ticket\":1}\n";
  if (!trailer.empty()) {
    text += "{\"type\":\"trailer\",\"complete\":true" + trailer + "}\n";
  }
  const absl::StatusOr<CaptureSummary> s = Analyzer::SummarizeText(text, "filters.jsonl");
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : CaptureSummary{};
}

CaptureFilters FiltersOf(const CaptureSummary& s) {
  if (!s.has_trailer) return CaptureFilters::Of(s, nullptr);
  const absl::StatusOr<TrailerBlocks> t = ParseTrailer(s.trailer);
  EXPECT_TRUE(t.ok()) << t.status();
  return CaptureFilters::Of(s, t.ok() ? &*t : nullptr);
}

// The filters of the capture Summarize() makes of `interposer` and `trailer`.
CaptureFilters FiltersFor(const std::string& interposer, const std::string& trailer) {
  return FiltersOf(Summarize(interposer, trailer));
}

TEST(CaptureFiltersTest, AMinimumSizeIsStatedWithWhatItLeftOut) {
  const CaptureSummary s = Summarize(
      R"({"min_size":1000,"sample_interval_bytes":0,"stack_depth":0})",
      R"(,"filtered":{"min_size":{"allocations":1201336,"bytes":48057344},)"
      R"("sample":{"allocations":0,"bytes":0}})");
  EXPECT_EQ(s.min_size, 1000u);
  const CaptureFilters f = FiltersOf(s);
  ASSERT_EQ(f.in_force().size(), 1u);
  EXPECT_EQ(f.in_force()[0].Flag(), "--min-size=1000");
  EXPECT_EQ(f.ExactFor(), "for blocks of at least 1000 bytes");
  const std::string statement =
      "--min-size=1000 left out 1201336 allocations (45.8 MiB) of blocks smaller than 1000 bytes";
  EXPECT_EQ(f.Statements(), std::vector<std::string>{statement});
  EXPECT_EQ(f.VerdictSuffix(), "; filtered: " + statement);
  EXPECT_EQ(f.Json(),
            R"([{"filter":"min_size","flag":"--min-size=1000","setting":"MEMTRACE_MIN_SIZE",)"
            R"("value":1000,"left_out":{"allocations":1201336,"bytes":48057344},)"
            R"("estimates":false}])");
}

TEST(CaptureFiltersTest, SamplingSaysItsCountsAreEstimates) {
  const CaptureFilters f = FiltersFor(R"({"min_size":0,"sample_interval_bytes":65536})",
                                      R"(,"filtered":{"sample":{"allocations":1,"bytes":24}})");
  ASSERT_EQ(f.in_force().size(), 1u);
  EXPECT_EQ(f.ExactFor(), "for the sampled blocks");
  EXPECT_EQ(f.VerdictSuffix(),
            "; sampled: --sample=65536 left out 1 allocation (24 B) that sampling did not "
            "draw; the capture's counts and bytes are estimates, scaled from the sample");
  EXPECT_NE(f.Json().find(R"("estimates":true)"), std::string::npos) << f.Json();
}

TEST(CaptureFiltersTest, BothFiltersAreStatedInTheOrderTheyApply) {
  const CaptureFilters f = FiltersFor(R"({"min_size":64,"sample_interval_bytes":4096})",
                                      R"(,"filtered":{"min_size":{"allocations":5,"bytes":100},)"
                                      R"("sample":{"allocations":3,"bytes":300}})");
  ASSERT_EQ(f.in_force().size(), 2u);
  EXPECT_EQ(f.ExactFor(), "for the sampled blocks of at least 64 bytes");
  EXPECT_EQ(f.in_force()[0].allocations, 5u);
  EXPECT_EQ(f.in_force()[1].allocations, 3u);
  EXPECT_EQ(f.VerdictSuffix().rfind("; filtered: --min-size=64 left out 5 allocations (100 B)",
                                    0),
            0u)
      << f.VerdictSuffix();
}

// A capture written before the interposer counted (no `filtered` in its trailer), or one
// cut short before its trailer: the filter is still stated, with the word "filtered".
TEST(CaptureFiltersTest, WithoutCountsAFilterIsStillSaidAsFiltered) {
  for (const std::string& trailer : {std::string(R"(,"ended_by":"exit")"), std::string()}) {
    const CaptureSummary s = Summarize(R"({"min_size":1000,"sample_interval_bytes":0})", trailer);
    EXPECT_EQ(s.has_trailer, !trailer.empty());
    const CaptureFilters f = FiltersOf(s);
    ASSERT_EQ(f.in_force().size(), 1u);
    EXPECT_FALSE(f.in_force()[0].counted);
    EXPECT_EQ(f.VerdictSuffix().rfind("; filtered: --min-size=1000 left out the allocations "
                                      "of blocks smaller than 1000 bytes (filtered: ",
                                      0),
              0u)
        << f.VerdictSuffix();
    EXPECT_NE(f.Json().find(R"("left_out":"filtered")"), std::string::npos) << f.Json();
  }
}

TEST(CaptureFiltersTest, NoFilterSaysNothing) {
  const CaptureFilters f = FiltersFor(R"({"min_size":0,"sample_interval_bytes":0})",
                                      R"(,"filtered":{"min_size":{"allocations":0,"bytes":0}})");
  EXPECT_FALSE(f.any());
  EXPECT_EQ(f.ExactFor(), "");
  EXPECT_EQ(f.VerdictSuffix(), "");
  EXPECT_EQ(f.Json(), "[]");
  // A capture of the runtime API has no interposer object, and no filters.
  EXPECT_FALSE(CaptureFilters::Of(CaptureSummary{}, nullptr).any());
}

}  // namespace
}  // namespace memtrace
