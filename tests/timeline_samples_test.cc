// Copyright 2026 The memtrace Authors.
//
// Memory over time (runtime/usage_sample.h): a program that allocates in steps and waits
// between them gets samples in its capture's trailer whose live bytes, in total, in its
// layer and in its scope, are the program's own at each plateau; the resident set is read.

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "analysis/trailer.h"
#include "analysis/analyzer.h"
#include "runtime/malloc_allocator.h"
#include "runtime/tracer.h"
#include "sinks/jsonl_sink.h"
#include "sinks/summary_table.h"
#include "tests/captured_run.h"
#include "tests/run_program.h"
#include "tests/test_paths.h"

namespace memtrace {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

TEST(TimelineSamplesTest, EachPlateauOfTheProgramsOwnLiveBytesIsSampled) {
  const std::string path = TempPath("timeline.jsonl");
  Config config;
  config.timeline_period = absl::Milliseconds(10);
  CapturedRun run(path, config);
  ASSERT_TRUE(run.started);
  Tracer* tracer = run.tracer.get();
  TracingAllocator& traced = run.traced;
  static const ScopeName kStep("step");
  constexpr size_t kBlock = 4096;
  constexpr int kSteps = 4, kBlocksPerStep = 50;
  std::vector<void*> kept;
  std::vector<uint64_t> plateaus;  // the program's own live bytes after each step
  for (int step = 0; step < kSteps; ++step) {
    {
      Span span = tracer->Enter(kStep);
      for (int i = 0; i < kBlocksPerStep; ++i) kept.push_back(traced.Alloc(kBlock, 16, 0x1000));
    }
    plateaus.push_back(kept.size() * kBlock);
    // Long enough for several samples on a loaded machine: the drainer's rounds come
    // every few ms, and a sample every 10 ms.
    ASSERT_TRUE(tracer->Flush().ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  ASSERT_TRUE(run.Finish());
  for (void* p : kept) traced.Free(AsMemory(p, kBlock), 16, 0);  // stopped: not recorded

  const auto summary = Analyzer::Summarize(path);
  ASSERT_TRUE(summary.ok()) << summary.status();
  const auto blocks = ParseTrailer(summary->trailer);
  ASSERT_TRUE(blocks.ok()) << blocks.status();
  const TrailerBlocks::Timeline& t = blocks->timeline;
  ASSERT_GE(t.rows.size(), static_cast<size_t>(kSteps)) << summary->trailer;
  uint32_t step_scope = 0;
  for (const auto& [id, path_text] : summary->scope_paths) {
    if (path_text == "step") step_scope = id;
  }
  ASSERT_NE(step_scope, 0u);
  const int t_col = t.Column("t"), rss = t.Column("rss_bytes"), live = t.Column("live_bytes"),
            layer = t.Column("layer:" + std::to_string(layers::kCpuHeap)),
            scope = t.Column("scope:" + std::to_string(step_scope));
  ASSERT_GE(t_col, 0);
  ASSERT_GE(rss, 0);
  ASSERT_GE(live, 0);
  ASSERT_GE(layer, 0);
  ASSERT_GE(scope, 0);
  int64_t previous_t = 0;
  std::vector<bool> seen(plateaus.size(), false);
  for (const std::vector<int64_t>& row : t.rows) {
    EXPECT_GE(row[t_col], previous_t);
    previous_t = row[t_col];
    EXPECT_GT(row[rss], 0);
    // Every sample is a moment of the program's: between steps, one of its plateaus (or
    // the start); the layer and the scope hold all of it.
    EXPECT_EQ(row[layer], row[live]);
    EXPECT_EQ(row[scope], row[live]);
    for (size_t i = 0; i < plateaus.size(); ++i) {
      if (static_cast<uint64_t>(row[live]) == plateaus[i]) seen[i] = true;
    }
  }
  for (size_t i = 0; i < plateaus.size(); ++i) {
    EXPECT_TRUE(seen[i]) << "no sample at the plateau of step " << i << " (" << plateaus[i]
                         << " bytes)";
  }

  // `memtrace summary` says how live bytes went: from the first sample's (nothing, or the
  // first step's if it came before the drainer's first round) to the last plateau, whose
  // bytes were also the most sampled.
  const Result r = RunProgram({Runfile("cli/memtrace"), "summary", path}, {});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const std::string line = "memory over time (" + std::to_string(t.rows.size()) + " samples";
  const size_t at_line = r.out.find(line);
  ASSERT_NE(at_line, std::string::npos) << r.out;
  const std::string rest = r.out.substr(at_line, r.out.find('\n', at_line) - at_line);
  const std::string last = FormatBytes(plateaus.back());
  const uint64_t first_live = static_cast<uint64_t>(t.rows.front()[live]);
  EXPECT_TRUE(first_live == 0 || first_live == plateaus.front()) << first_live;
  EXPECT_NE(rest.find("live " + FormatBytes(first_live) + " -> " + last + ", highest sampled " +
                      last),
            std::string::npos)
      << rest;
  EXPECT_NE(rest.find("; resident "), std::string::npos) << rest;
}

// A capture whose size limit cut its events early: the samples go on, and a summary at a
// time past the cut says what the recorder sampled then, and that the table stops at the
// cut.
TEST(TimelineSamplesTest, ASummaryAtATimePastASizeLimitSaysWhatWasSampledThen) {
  const std::string path = TempPath("limited.jsonl");
  JsonlSinkOptions options;
  options.max_bytes = 32 << 10;
  Config config;
  config.timeline_period = absl::Milliseconds(10);
  CapturedRun run(path, config, options);
  ASSERT_TRUE(run.started);
  Tracer* tracer = run.tracer.get();
  TracingAllocator& traced = run.traced;
  constexpr size_t kBlock = 1024;
  std::vector<void*> kept;
  for (int step = 0; step < 3; ++step) {
    for (int i = 0; i < 400; ++i) kept.push_back(traced.Alloc(kBlock, 16, 0x1000));
    ASSERT_TRUE(tracer->Flush().ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
  }
  const uint64_t last_plateau = kept.size() * kBlock;
  ASSERT_TRUE(run.Finish());
  for (void* p : kept) traced.Free(AsMemory(p, kBlock), 16, 0);

  const auto summary = Analyzer::Summarize(path);
  ASSERT_TRUE(summary.ok()) << summary.status();
  const auto blocks = ParseTrailer(summary->trailer);
  ASSERT_TRUE(blocks.ok()) << blocks.status();
  ASSERT_GT(blocks->events_past_limit, 0u) << "the size limit must cut the events";
  ASSERT_LT(summary->totals.live_bytes, last_plateau);
  const TrailerBlocks::Timeline& t = blocks->timeline;
  const int at = t.Column("t"), live = t.Column("live_bytes");
  const std::vector<int64_t>* last = nullptr;
  for (const auto& row : t.rows) {
    if (static_cast<uint64_t>(row[live]) == last_plateau && last == nullptr) last = &row;
  }
  ASSERT_NE(last, nullptr) << "no sample at the last plateau";
  const int64_t since_start = (*last)[at] - summary->started_unix_ns;
  const Result r = RunProgram(
      {Runfile("cli/memtrace"), "summary", "--at-time=" + std::to_string(since_start), path}, {});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("(the recorder's last sample at or before the point): live " +
                       FormatBytes(last_plateau) + ", resident "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  the capture's events stop at "), std::string::npos) << r.out;
}

// A long run: the sink keeps at most kMaxTimelineSamples, evenly spread (every other one
// each time the table fills), always with the last; and its columns name the scopes with
// the most live bytes at any sample, at most UsageSample::kTopScopes of them.
TEST(TimelineSamplesTest, ALongRunKeepsABoundedEvenlySpreadTimelineWithItsLastSample) {
  const std::string path = TempPath("long_timeline.jsonl");
  auto sink = JsonlSink::Open(path);
  ASSERT_TRUE(sink.ok()) << sink.status();
  constexpr int kSamples = 5000;
  for (int i = 0; i < kSamples; ++i) {
    UsageSample s;
    s.unix_ns = 1'000'000'000LL * (i + 1);
    s.rss_bytes = 4096 * (i + 1);
    s.live_bytes = 100 * i;
    s.live_count = i;
    s.layers = {{0, 100u * i}};
    // 20 scopes take turns at the top: scope k's bytes peak at sample k.
    for (uint32_t k = 1; k <= 20; ++k) s.scopes.emplace_back(k, i == static_cast<int>(k) ? 1'000'000 : k);
    (*sink)->OnUsageSample(s);
  }
  ASSERT_TRUE((*sink)->Finish(Snapshot{}).ok());
  const auto summary = Analyzer::Summarize(path);
  ASSERT_TRUE(summary.ok()) << summary.status();
  const auto blocks = ParseTrailer(summary->trailer);
  ASSERT_TRUE(blocks.ok()) << blocks.status();
  const TrailerBlocks::Timeline& t = blocks->timeline;
  // 5000 samples: kept every 1st until 2048, then every 2nd until 2048 again, then every
  // 4th: the test's own arithmetic says which.
  uint64_t stride = 1;
  std::vector<int64_t> kept;
  for (int i = 0, seen = 0; i < kSamples; ++i, ++seen) {
    if (seen % stride != 0) continue;
    kept.push_back(1'000'000'000LL * (i + 1));
    if (kept.size() == JsonlSink::kMaxTimelineSamples) {
      std::vector<int64_t> half;
      for (size_t j = 0; j < kept.size(); j += 2) half.push_back(kept[j]);
      kept = half;
      stride *= 2;
    }
  }
  if (kept.back() != 1'000'000'000LL * kSamples) kept.push_back(1'000'000'000LL * kSamples);
  EXPECT_EQ(t.every, stride);
  ASSERT_EQ(t.rows.size(), kept.size());
  const int at = t.Column("t");
  for (size_t r = 0; r < kept.size(); ++r) EXPECT_EQ(t.rows[r][at], kept[r]) << "row " << r;
  int scopes = 0;
  for (const std::string& c : t.columns) scopes += c.rfind("scope:", 0) == 0;
  EXPECT_EQ(scopes, static_cast<int>(UsageSample::kTopScopes));
}

}  // namespace
}  // namespace memtrace
