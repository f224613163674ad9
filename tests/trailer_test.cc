// Copyright 2026 The memtrace Authors.
//
// Reading a trailer's blocks (analysis/trailer.h) from hand-written trailers: what a
// reader must survive (older captures without the newest fields, damaged values, text
// that is not JSON) and the losses it must name. The round trip from a capture the
// runtime wrote is in analyzer_test.

#include "analysis/trailer.h"

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sinks/summary_table.h"

namespace memtrace {
namespace {

TEST(TrailerTest, FieldsAnOlderCaptureLacksReadAsZeroAndTheFenceAsUnknown) {
  const absl::StatusOr<TrailerBlocks> t = ParseTrailer(
      R"({"type":"trailer","complete":true,"integrity":{"complete":true,"exact":true,)"
      R"("events_recorded":5,"events_applied":5}})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->has_integrity);
  EXPECT_EQ(t->integrity.events_recorded, 5u);
  EXPECT_EQ(t->integrity.scope_overflow, 0u);
  EXPECT_EQ(t->fence, "not recorded");
  EXPECT_FALSE(t->has_sink);
  EXPECT_EQ(t->memtrace_bytes, 0u);
  EXPECT_TRUE(t->memtrace_memory_json.empty());
  EXPECT_FALSE(t->has_memtrace_cpu);
  EXPECT_TRUE(t->memtrace_cpu_json.empty());

  const absl::StatusOr<TrailerBlocks> bare = ParseTrailer(R"({"type":"trailer","complete":true})");
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_FALSE(bare->has_integrity);
  EXPECT_FALSE(bare->has_sink);
  EXPECT_TRUE(bare->ended_by.empty());
  EXPECT_TRUE(bare->exec.empty());
  EXPECT_EQ(bare->prestart_freed, 0u);
  EXPECT_EQ(bare->prestart_untracked, 0u);
}

// Replayed peaks take the recorder's intervals at the end; a point inside a capture with
// bounded epochs, or a capture that predates bounds, gets none; all-exact stays exact.
TEST(TrailerTest, ReplayedPeaksTakeTheTrailersIntervals) {
  const std::string trailer =
      R"({"type":"trailer","complete":true,"integrity":{"complete":true,"exact":true,)"
      R"("bounded_epochs":2},"totals":{"high_water_bytes":100,"high_water_low_bytes":90,)"
      R"("high_water_high_bytes":120},"layers":[{"id":0,"usage":{"high_water_low_bytes":90,)"
      R"("high_water_high_bytes":null}}],"scopes":[{"id":3,"usage":{"high_water_low_bytes":5,)"
      R"("high_water_high_bytes":7}}]})";
  const absl::StatusOr<TrailerBlocks> t = ParseTrailer(trailer);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE(t->integrity.peaks_bounded);
  ASSERT_TRUE(t->totals_peak.has_value());
  EXPECT_EQ(t->totals_peak->low, 90u);
  EXPECT_EQ(t->totals_peak->high, 120u);
  EXPECT_EQ(t->layer_peaks.at(0).high, kNoHighWaterBound);
  EXPECT_EQ(t->scope_peaks.at(3).low, 5u);

  auto replayed = [](uint64_t peak) {
    UsageCounters u;
    u.Allocate(peak);  // an ordered replay: its interval is its value
    return u;
  };
  UsageCounters totals = replayed(100);
  std::map<uint32_t, UsageCounters> layers{{0, replayed(100)}};
  std::map<uint32_t, UsageCounters> scopes{{3, replayed(8)}, {4, replayed(2)}};
  BoundReplayedPeaks(&*t, /*at_end=*/true, &totals, &layers, &scopes);
  EXPECT_EQ(totals.high_water_low_bytes, 90u);
  EXPECT_EQ(totals.high_water_high_bytes, 120u);
  EXPECT_FALSE(layers[0].high_water_bounded());
  EXPECT_EQ(scopes[3].high_water_low_bytes, 5u);
  EXPECT_EQ(scopes[3].high_water_high_bytes, 8u) << "widened to hold the replayed value";
  EXPECT_FALSE(scopes[4].high_water_bounded()) << "a scope the trailer does not bound";

  UsageCounters inside = replayed(100);
  std::map<uint32_t, UsageCounters> none;
  BoundReplayedPeaks(&*t, /*at_end=*/false, &inside, &none, &none);
  EXPECT_FALSE(inside.high_water_bounded());

  const absl::StatusOr<TrailerBlocks> old = ParseTrailer(
      R"({"type":"trailer","complete":true,"integrity":{"complete":true,"exact":true}})");
  ASSERT_TRUE(old.ok());
  EXPECT_FALSE(old->integrity.peaks_bounded);
  UsageCounters from_old = replayed(100);
  BoundReplayedPeaks(&*old, /*at_end=*/true, &from_old, &none, &none);
  EXPECT_FALSE(from_old.high_water_bounded()) << "a capture from before bounds is never exact";

  const absl::StatusOr<TrailerBlocks> exact = ParseTrailer(
      R"({"type":"trailer","complete":true,"integrity":{"bounded_epochs":0}})");
  ASSERT_TRUE(exact.ok());
  UsageCounters all_exact = replayed(100);
  BoundReplayedPeaks(&*exact, /*at_end=*/false, &all_exact, &none, &none);
  EXPECT_TRUE(all_exact.high_water_exact());
  EXPECT_EQ(all_exact.high_water_low_bytes, 100u);
}

// A salvaged capture's trailer (analysis/capture_conversion.h) says where it came from and
// where that one was cut; any other trailer is not salvaged.
TEST(TrailerTest, ASalvagedCapturesOriginIsRead) {
  const auto t = ParseTrailer(
      R"({"type":"trailer","complete":false,"salvaged":{"from":"a.mtb",)"
      R"("cut":"record 3 at byte 40 is cut off"},"crc32":1})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->salvaged);
  EXPECT_EQ(t->salvaged_from, "a.mtb");
  EXPECT_EQ(t->salvaged_cut, "record 3 at byte 40 is cut off");
  const auto whole = ParseTrailer(R"({"type":"trailer","complete":true})");
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_FALSE(whole->salvaged);
}

TEST(TrailerTest, BlocksFromBeforeTracingStartedAreRead) {
  const absl::StatusOr<TrailerBlocks> t = ParseTrailer(
      R"({"type":"trailer","complete":true,"ended_by":"exit","prestart_untracked":3,)"
      R"("prestart_freed":39980,"prestart_freed_bytes":5996000,"forks":0})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->prestart_untracked, 3u);
  EXPECT_EQ(t->prestart_freed, 39980u);
  EXPECT_EQ(t->prestart_freed_bytes, 5996000u);
}

// What the interposer's recording filters left out (`filtered`): each filter's count and
// bytes; a trailer without the object (written before the interposer counted) says so.
TEST(TrailerTest, WhatTheFiltersLeftOutIsReadAndItsAbsenceIsKnown) {
  const absl::StatusOr<TrailerBlocks> t = ParseTrailer(
      R"({"type":"trailer","complete":true,"ended_by":"exit","filtered":{)"
      R"("min_size":{"allocations":1201336,"bytes":48057344},)"
      R"("sample":{"allocations":7,"bytes":700}}})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->has_filtered);
  EXPECT_EQ(t->min_size_allocations, 1201336u);
  EXPECT_EQ(t->min_size_bytes, 48057344u);
  EXPECT_EQ(t->unsampled_allocations, 7u);
  EXPECT_EQ(t->unsampled_bytes, 700u);
  EXPECT_TRUE(t->Losses().empty()) << "a filter is not a loss";

  const absl::StatusOr<TrailerBlocks> older =
      ParseTrailer(R"({"type":"trailer","complete":true,"ended_by":"exit"})");
  ASSERT_TRUE(older.ok()) << older.status();
  EXPECT_FALSE(older->has_filtered);
  EXPECT_EQ(older->min_size_allocations, 0u);

  const absl::StatusOr<TrailerBlocks> one = ParseTrailer(
      R"({"type":"trailer","complete":true,"filtered":{"min_size":{"allocations":2,"bytes":20}}})");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_TRUE(one->has_filtered);
  EXPECT_EQ(one->min_size_allocations, 2u);
  EXPECT_EQ(one->unsampled_allocations, 0u) << "a filter missing from the object left none out";
}

TEST(TrailerTest, MemtraceThreadsCpuTimeIsReadAndDamageIsNamed) {
  const absl::StatusOr<TrailerBlocks> t = ParseTrailer(
      R"({"type":"trailer","complete":true,"memtrace_cpu_ns":{"drainer":62500000,)"
      R"("writer":34900000}})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->has_memtrace_cpu);
  EXPECT_EQ(t->drainer_cpu_ns, 62500000u);
  EXPECT_EQ(t->writer_cpu_ns, 34900000u);
  EXPECT_EQ(t->memtrace_cpu_json, R"({"drainer":62500000,"writer":34900000})");
  EXPECT_EQ(t->applier_cpu_ns, 0u) << "no appliers named: none ran";
  EXPECT_EQ(FormatOwnCpuLine(t->drainer_cpu_ns, t->writer_cpu_ns, 1000000, t->applier_cpu_ns),
            "  memtrace's own CPU: drainer 62.5 ms, writer 34.9 ms (not counted: the hot path, "
            "on the program's threads); per record: drainer 62.5 ns, writer 34.9 ns\n");

  // With threads applying records beside the drainer (Config::tracer_threads > 1).
  const absl::StatusOr<TrailerBlocks> k = ParseTrailer(
      R"({"type":"trailer","complete":true,"memtrace_cpu_ns":{"drainer":62500000,)"
      R"("appliers":20000000,"writer":34900000}})");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->applier_cpu_ns, 20000000u);
  EXPECT_EQ(FormatOwnCpuLine(k->drainer_cpu_ns, k->writer_cpu_ns, 1000000, k->applier_cpu_ns),
            "  memtrace's own CPU: drainer 62.5 ms, appliers 20.0 ms, writer 34.9 ms (not "
            "counted: the hot path, on the program's threads); per record: drainer 62.5 ns, "
            "appliers 20.0 ns, writer 34.9 ns\n");

  const absl::StatusOr<TrailerBlocks> bad = ParseTrailer(
      R"({"type":"trailer","complete":true,"memtrace_cpu_ns":{"drainer":-1,"writer":2}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'memtrace_cpu_ns.drainer' is not a non-negative "
                                        "integer"),
            std::string::npos)
      << bad.status();
}

TEST(TrailerTest, WhatEndedTheCaptureIsReadAsJsonText) {
  // The program exec'd is a path as the exec call named it: JSON escapes are decoded.
  const absl::StatusOr<TrailerBlocks> t = ParseTrailer(
      R"({"type":"trailer","complete":true,"ended_by":"exec","exec":"/opt/my \"app\"/run"})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->ended_by, "exec");
  EXPECT_EQ(t->exec, "/opt/my \"app\"/run");
}

TEST(TrailerTest, LossesNameEveryCounterThatLostSomething) {
  const absl::StatusOr<TrailerBlocks> t = ParseTrailer(
      R"({"type":"trailer","complete":false,"ended_by":"exit","integrity":{"complete":false,)"
      R"("events_dropped":3,"records_failed":0,"rings_unavailable":2,"uses_membarrier":false},)"
      R"("sink":{"events_written":10,"events_lost":7,"write_errors":1}})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->fence, "seq_cst");
  EXPECT_EQ(t->ended_by, "exit");
  EXPECT_FALSE(t->integrity.complete());
  const std::vector<std::string> want = {"records dropped 3", "rings unavailable 2",
                                         "events the sink lost 7", "write errors 1"};
  EXPECT_EQ(t->Losses(), want);
  EXPECT_FALSE(t->LostOnlyPastTheSizeLimit()) << "no size limit was reached";
}

// A capture that reached its size limit: the counts, the limit and the whole run's
// totals are read; the loss is named like the others.
TEST(TrailerTest, ASizeLimitAndTheWholeRunsTotalsAreRead) {
  const absl::StatusOr<TrailerBlocks> t = ParseTrailer(
      R"({"type":"trailer","complete":false,"sink":{"events_written":10,"events_lost":0,)"
      R"("events_past_limit":90,"max_bytes":65536,"write_errors":0},)"
      R"("totals":{"live_bytes":100,"live_count":2,"high_water_bytes":4096,)"
      R"("allocated_bytes":8000,"allocated_count":50,"freed_bytes":7900,"freed_count":48}})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->events_past_limit, 90u);
  EXPECT_EQ(t->max_bytes, 65536u);
  ASSERT_TRUE(t->has_totals);
  EXPECT_EQ(t->totals.live_bytes, 100u);
  EXPECT_EQ(t->totals.high_water_bytes, 4096u);
  EXPECT_EQ(t->totals.allocated_count, 50u);
  EXPECT_EQ(t->totals.freed_count, 48u);
  EXPECT_EQ(t->Losses(), std::vector<std::string>{"events past the size limit 90"});
  EXPECT_TRUE(t->LostOnlyPastTheSizeLimit());
  const absl::StatusOr<TrailerBlocks> damaged =
      ParseTrailer(R"({"totals":{"live_bytes":-5}})");
  ASSERT_FALSE(damaged.ok());
  EXPECT_NE(damaged.status().message().find("'totals.live_bytes'"), std::string::npos)
      << damaged.status();
}

TEST(TrailerTest, DamagedTrailersAreErrorsThatSayWhere) {
  struct Case {
    const char* trailer;
    const char* message;
  };
  const Case cases[] = {
      {"{\"type\":\"trailer\",", "the trailer is not JSON"},
      {"[1,2]", "the trailer is not a JSON object"},
      {R"({"integrity":{"events_dropped":-1}})",
       "the trailer's field 'integrity.events_dropped' is not a non-negative integer"},
      {R"({"sink":{"events_lost":"many"}})",
       "the trailer's field 'sink.events_lost' is not a non-negative integer"},
      {R"({"memtrace_bytes":1.5})",
       "the trailer's field 'memtrace_bytes' is not a non-negative integer"},
      {R"({"prestart_freed":"some"})",
       "the trailer's field 'prestart_freed' is not a non-negative integer"},
      {R"({"filtered":{"min_size":{"allocations":-3,"bytes":0}}})",
       "the trailer's field 'filtered.min_size.allocations' is not a non-negative integer"},
  };
  for (const Case& c : cases) {
    const absl::StatusOr<TrailerBlocks> t = ParseTrailer(c.trailer);
    ASSERT_FALSE(t.ok()) << c.trailer;
    EXPECT_NE(std::string(t.status().message()).find(c.message), std::string::npos)
        << c.trailer << " -> " << t.status().message();
  }
}

}  // namespace
}  // namespace memtrace
