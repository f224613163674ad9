// Copyright 2026 The memtrace Authors.
//
// include/memtrace/markers.h from a C program that links no memtrace library
// (markers_target.c): without memtrace the calls do nothing and the program runs; under
// `memtrace run` its scopes, its pool's blocks and its census value are in the capture,
// with the bytes the program itself allocated (its header comment lists them).

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "analysis/analyzer.h"
#include "tests/run_program.h"
#include "tests/test_paths.h"

namespace memtrace {
namespace {

// The counters of the scope or layer called `name` in `names` (id -> name), or null.
const UsageCounters* Named(const std::map<uint32_t, std::string>& names,
                           const std::map<uint32_t, UsageCounters>& counters,
                           const std::string& name) {
  for (const auto& [id, n] : names) {
    if (n != name) continue;
    auto it = counters.find(id);
    return it == counters.end() ? nullptr : &it->second;
  }
  return nullptr;
}
const UsageCounters* ScopeNamed(const CaptureSummary& s, const std::string& path) {
  return Named(s.scope_paths, s.scopes, path);
}
const UsageCounters* LayerNamed(const CaptureSummary& s, const std::string& name) {
  return Named(s.layer_names, s.layers, name);
}

TEST(MarkersTest, WithoutMemtraceTheMarkersDoNothing) {
  const Result run = RunProgram({Runfile("tests/markers_target")}, {});
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(absl::StartsWith(run.out, "pool=no ")) << run.out;
}

TEST(MarkersTest, UnderMemtraceRunScopesLayersAndCensusAreInTheCapture) {
  MEMTRACE_SKIP_UNDER_SANITIZERS();
  const std::string capture = TempDir() + "/markers.mtb";
  const Result run = RunProgram({Runfile("cli/memtrace"), "run", "--quiet", "--output=" + capture,
                                 "--", Runfile("tests/markers_target")},
                                {});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(absl::StartsWith(run.out, "pool=yes own=-1 ")) << run.out;
  // A layer name of memtrace's own is refused, and said: the program may not look at -1.
  EXPECT_TRUE(absl::StrContains(run.err, "memtrace: memtrace_layer(\"interposer\") is refused: "
                                         "that name is the layer of memtrace's own"))
      << run.err;

  absl::StatusOr<CaptureSummary> s = Analyzer::Summarize(capture);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->trailer_complete) << s->trailer;
  EXPECT_EQ(s->unmatched_releases, 0u);

  const UsageCounters* load = ScopeNamed(*s, "load");
  ASSERT_NE(load, nullptr);
  EXPECT_EQ(load->live_bytes, 3 * 70001u);
  EXPECT_EQ(load->live_count, 3u);
  EXPECT_EQ(load->allocated_count, 3u);
  const UsageCounters* tokens = ScopeNamed(*s, "load/parse/tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->allocated_bytes, 70003u);
  EXPECT_EQ(tokens->freed_bytes, 70003u);
  EXPECT_EQ(tokens->live_bytes, 0u);
  // The buffer that held "tokens" then held "words": another scope.
  const UsageCounters* words = ScopeNamed(*s, "load/parse/words");
  ASSERT_NE(words, nullptr);
  EXPECT_EQ(words->live_bytes, 70005u);
  EXPECT_EQ(words->allocated_count, 1u);
  // After the last exit (and one more with nothing open) the thread is unscoped again.
  const UsageCounters* unscoped = ScopeNamed(*s, "(unscoped)");
  ASSERT_NE(unscoped, nullptr);
  EXPECT_GE(unscoped->live_bytes, 70007u);

  const UsageCounters* pool = LayerNamed(*s, "pool");
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->allocated_count, 2u);
  EXPECT_EQ(pool->allocated_bytes, 3000u);
  EXPECT_EQ(pool->live_count, 1u);
  EXPECT_EQ(pool->live_bytes, 2000u);
  EXPECT_EQ(pool->high_water_bytes, 3000u);

  EXPECT_TRUE(absl::StrContains(s->trailer, R"("name":"cache","bytes":12345)")) << s->trailer;

  // Retention sees the scope instances: "load" exited keeping its three blocks and the
  // block of "load/parse/words" inside it.
  bool found = false;
  for (const Retention& r : s->retention) {
    if (s->scope_paths.at(r.scope) != "load") continue;
    found = true;
    EXPECT_EQ(r.exits, 1u);
    EXPECT_EQ(r.retained_blocks, 4u);
    EXPECT_EQ(r.retained_bytes, 3 * 70001u + 70005u);
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace memtrace
