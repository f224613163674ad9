// Copyright 2026 The memtrace Authors.

#include "sinks/summary_table.h"

#include <string>

#include <gtest/gtest.h>

namespace memtrace {
namespace {

Snapshot MakeSnapshot() {
  Snapshot snap;
  for (uint32_t i = 1; i <= 5; ++i) {
    UsageCounters u;
    u.allocated_bytes = 1000 * i;
    u.allocated_count = i;
    u.live_bytes = 1000 * i;
    u.live_count = i;
    u.high_water_bytes = 1000 * i;
    snap.scopes.push_back(ScopeUsage{i, "scope" + std::to_string(i), u});
  }
  snap.totals.live_bytes = 15000;
  snap.has_census = true;
  snap.census = {CensusEntry{"a", 300, 300}, CensusEntry{"b", 0, 10},
                 CensusEntry{"c", 200, 250}, CensusEntry{"d", 100, 100}};
  return snap;
}

TEST(SummaryTableTest, PartialCaptureSaysSoOnTheFirstLine) {
  Snapshot snap = MakeSnapshot();
  snap.integrity.events_dropped = 3;
  const std::string text = FormatSummaryTable(snap);
  EXPECT_EQ(text.rfind("memtrace summary: capture PARTIAL", 0), 0u) << text;
  EXPECT_NE(text.find("dropped 3"), std::string::npos);
}

// Integrity with nothing to report is one line; a loss, an inexact match or --verbose
// (SummaryOptions::verbose) bring the whole block back.
TEST(SummaryTableTest, ACleanCaptureHasOneIntegrityLineAndAnythingElseTheBlock) {
  auto integrity_lines = [](const std::string& text) {
    size_t n = 0;
    for (size_t at = text.find("\nintegrity"); at != std::string::npos;
         at = text.find("\n  ", at + 1)) {
      ++n;
    }
    return n;
  };
  Snapshot snap = MakeSnapshot();
  snap.integrity.events_recorded = snap.integrity.events_applied = 410090;
  snap.integrity.bounded_epochs = 3;
  const std::string clean = FormatSummaryTable(snap);
  EXPECT_NE(clean.find("\nintegrity: complete, exact: 410,090 events, nothing lost, peaks "
                       "within their bounds\n"),
            std::string::npos)
      << clean;
  // The census block's lines are indented too: count from the integrity line on.
  EXPECT_EQ(integrity_lines(clean.substr(clean.find("\nintegrity"))), 1u) << clean;

  SummaryOptions verbose;
  verbose.verbose = true;
  const std::string block = FormatSummaryTable(snap, verbose);
  EXPECT_NE(block.find("  records    recorded 410090"), std::string::npos) << block;
  EXPECT_GT(integrity_lines(block.substr(block.find("\nintegrity"))), 5u) << block;

  snap.integrity.ticket_evictions = 1;
  const std::string inexact = FormatSummaryTable(snap);
  EXPECT_NE(inexact.find("integrity: complete, inexact"), std::string::npos) << inexact;
  EXPECT_NE(inexact.find("ticket evictions 1,"), std::string::npos) << inexact;
  snap.integrity.ticket_evictions = 0;
  snap.integrity.unknown_frees = 2;
  const std::string unknown = FormatSummaryTable(snap);
  EXPECT_NE(unknown.find("unknown frees 2,"), std::string::npos) << unknown;
}

TEST(SummaryTableTest, RowsBeyondTheLimitAreSummedNotDropped) {
  SummaryOptions options;
  options.max_scopes = 2;
  options.census.max_rows = 1;
  const std::string text = FormatSummaryTable(MakeSnapshot(), options);
  EXPECT_NE(text.find("scope5"), std::string::npos);
  EXPECT_NE(text.find("scope4"), std::string::npos);
  EXPECT_EQ(text.find("scope1 "), std::string::npos);
  EXPECT_NE(text.find("(3 more scopes; max high-water)"), std::string::npos);
  EXPECT_NE(text.find("(2 others)"), std::string::npos) << text;
  EXPECT_EQ(text.find("  b "), std::string::npos) << "zero entries hidden by default";
}

TEST(SummaryTableTest, JsonHasTheSameContent) {
  Snapshot snap = MakeSnapshot();
  snap.integrity.events_dropped = 1;
  const std::string json = FormatSummaryJson(snap);
  EXPECT_EQ(json.front(), '{');
  EXPECT_EQ(json.back(), '}');
  EXPECT_NE(json.find("\"path\":\"scope5\""), std::string::npos);
  EXPECT_NE(json.find("\"complete\":false"), std::string::npos);
  EXPECT_NE(json.find("\"label\":\"a\",\"bytes\":300"), std::string::npos);
  EXPECT_NE(json.find("\"verdict\":\"PARTIAL"), std::string::npos);
}

TEST(SummaryTableTest, FormatsBytesWithBinaryUnits) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(uint64_t{3} << 30), "3.0 GiB");
}

// A peak bound's sides in percent of the high-water: a side that is not zero never reads
// as 0.0% (a 16-byte interval on a large peak printed "-0.0%/+0.0%"), and the whole fits
// the summary's 12-character column.
// A sampled capture's high-water is scaled from its sample: an estimate, whatever interval
// its recorded blocks' order gives.
TEST(SummaryTableTest, ASampledPeakIsAnEstimate) {
  UsageCounters u;
  u.Allocate(100);
  ASSERT_EQ(FormatPeakBound(u), "exact");
  EXPECT_EQ(FormatPeakBound(u, /*sampled=*/true), "estimate");
  EXPECT_NE(FormatUsageRow("TOTAL", u, /*sampled=*/true).find(" estimate "), std::string::npos);
}

TEST(SummaryTableTest, APeakBoundsSidesAreNeverZeroUnlessTheyAre) {
  UsageCounters u;
  u.high_water_bytes = 1000000;
  u.high_water_low_bytes = 1000000 - 16;
  u.high_water_high_bytes = 1000000;
  EXPECT_EQ(FormatPeakBound(u), "-~0%/+0%");
  u.high_water_high_bytes = 1000000 + 2000;
  EXPECT_EQ(FormatPeakBound(u), "-~0%/+0.2%");
  u.high_water_high_bytes = 1000000 + 16;
  EXPECT_EQ(FormatPeakBound(u), "-~0%/+~0%");
  u.high_water_high_bytes = 1000000 + 20000000;
  EXPECT_LE(FormatPeakBound(u).size(), 12u) << FormatPeakBound(u);  // the column's width
  u.high_water_low_bytes = 500000;
  u.high_water_high_bytes = 1000000 + 20000000;
  EXPECT_EQ(FormatPeakBound(u), "-50%/+>999%");
  u.high_water_low_bytes = u.high_water_high_bytes = 1000000;
  EXPECT_EQ(FormatPeakBound(u), "exact");
}

}  // namespace
}  // namespace memtrace
