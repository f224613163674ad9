// Copyright 2026 The memtrace Authors.
//
// Census bounds and errors, census updates as a capture carries them (concurrent updates
// rebuilt from the capture's events by the analyzer), the participation context (disabled
// and enabled), interval sinks, and scopes carried across threads.

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "analysis/analyzer.h"
#include "analysis/capture_reader.h"
#include "runtime/census.h"
#include "runtime/context.h"
#include "runtime/malloc_allocator.h"
#include "runtime/tracer.h"
#include "sinks/jsonl_sink.h"
#include "sinks/summary_table.h"

namespace memtrace {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

// A tracer (not started yet) whose capture a JSONL sink writes to a file.
struct Capture {
  std::unique_ptr<JsonlSink> sink;
  std::unique_ptr<Tracer> tracer;
};

Capture OpenCapture(const std::string& path) {
  Capture c{JsonlSink::Open(path).value(), Tracer::Create(Config{}).value()};
  EXPECT_TRUE(c.tracer->recorder().SetObserver(c.sink.get()).ok());
  return c;
}

// Stops the tracer, writes the trailer and detaches the census; the final snapshot.
Snapshot FinishCapture(Capture& c) {
  EXPECT_TRUE(c.tracer->Stop().ok());
  Snapshot snap = c.tracer->TakeSnapshot();
  EXPECT_TRUE(c.sink->Finish(snap).ok());
  c.tracer->AttachCensus(nullptr);
  return snap;
}

// Each census label's value as the CLI's analyzer rebuilds it from the capture's events.
std::map<uint32_t, int64_t> ReplayedCensus(const std::string& path) {
  Analyzer analyzer;
  const absl::Status s =
      ReadCapture(path, [&](const CaptureRecord& r) { return analyzer.Apply(r); });
  EXPECT_TRUE(s.ok()) << s;
  return analyzer.census();
}

TEST(CensusTest, SetAddSubtractByLabelAndHandle) {
  Census census;
  auto textures = census.Label("gpu/textures");
  ASSERT_TRUE(textures.ok());
  census.Add(*textures, 1000);
  census.Add(*textures, 500);
  census.Subtract(*textures, 300);
  ASSERT_TRUE(census.Set("mapped/files", 4096).ok());
  ASSERT_TRUE(census.Add("mapped/files", 4096).ok());
  EXPECT_EQ(census.Label("gpu/textures")->id, textures->id) << "labels are interned";
  const auto entries = census.Entries();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].label, "gpu/textures");
  EXPECT_EQ(entries[0].bytes, 1200);
  EXPECT_EQ(entries[0].high_water_bytes, 1500);
  EXPECT_EQ(entries[1].label, "mapped/files");
  EXPECT_EQ(entries[1].bytes, 8192);
  EXPECT_TRUE(census.status().ok());
  EXPECT_EQ(census.Label("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CensusTest, FullTableRefusesNewLabelsKeepsOldOnesAndRecordsIt) {
  Census census(CensusLimits{.max_entries = 2, .label_storage_bytes = 1024});
  ASSERT_TRUE(census.Set("a", 1).ok());
  ASSERT_TRUE(census.Set("b", 2).ok());
  const absl::Status refused = census.Set("c", 3);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("'c'"), std::string::npos);
  EXPECT_NE(refused.message().find("max_entries"), std::string::npos);
  ASSERT_TRUE(census.last_capacity_error().has_value());
  EXPECT_EQ(census.last_capacity_error()->label, "c");
  EXPECT_EQ(census.last_capacity_error()->max_entries, 2u);
  // Existing entries keep working.
  ASSERT_TRUE(census.Add("a", 10).ok());
  const CensusStatus status = census.status();
  EXPECT_EQ(status.exhausted, CensusExhaustion::kEntries);
  EXPECT_EQ(status.refused_for_entries, 1u);
  EXPECT_EQ(status.capacity.entries_used, 2u);
  EXPECT_EQ(census.Entries()[0].bytes, 11);
}

TEST(CensusTest, LabelStorageExhaustionIsItsOwnError) {
  Census census(CensusLimits{.max_entries = 100, .label_storage_bytes = 8});
  ASSERT_TRUE(census.Set("12345", 1).ok());
  const absl::Status refused = census.Set("6789", 1);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("label storage"), std::string::npos);
  ASSERT_TRUE(census.last_storage_error().has_value());
  EXPECT_EQ(census.last_storage_error()->needed_bytes, 4u);
  EXPECT_EQ(census.last_storage_error()->available_bytes, 3u);
  EXPECT_EQ(census.status().exhausted, CensusExhaustion::kStorage);
  ASSERT_TRUE(census.Set("678", 1).ok()) << "a label that fits is still accepted";
}

TEST(CensusTest, ConcurrentAddsAreExact) {
  Census census;
  const CensusLabel label = census.Label("shared").value();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100000; ++i) census.Add(label, 3);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(census.Entries()[0].bytes, 4 * 100000 * 3);
}

TEST(CensusTest, AppearsInSnapshotsAndSummariesBesideTheTotals) {
  auto tracer = Tracer::Create(Config{}).value();
  ASSERT_TRUE(tracer->Start().ok());
  Census census(CensusLimits{.max_entries = 1, .label_storage_bytes = 64});
  tracer->AttachCensus(&census);
  ASSERT_TRUE(census.Set("gpu/textures", 64 << 20).ok());
  EXPECT_FALSE(census.Set("overflow", 1).ok());
  const Snapshot snap = tracer->TakeSnapshot();
  ASSERT_TRUE(snap.has_census);
  ASSERT_EQ(snap.census.size(), 1u);
  EXPECT_EQ(snap.census[0].bytes, 64 << 20);
  EXPECT_EQ(snap.integrity.events_recorded, 1u) << "census updates are recorded";
  const std::string summary = FormatSummaryTable(snap);
  EXPECT_NE(summary.find("gpu/textures"), std::string::npos);
  EXPECT_NE(summary.find("64.0 MiB"), std::string::npos);
  EXPECT_NE(summary.find("census status: EXHAUSTED"), std::string::npos);
  tracer->AttachCensus(nullptr);
}

// Threads take turns adding to and subtracting from one label, with no Flush between, so
// that one drainer epoch holds updates from several rings in a known real order. The
// drainer applies an epoch's records ring by ring (or in time-stamp order, a stamp every
// few records), not in that order: the first thread makes the last update, but its last
// records come first in their stamp window. The capture's census events must give the
// census's final value in any order of application. Each label is one such run.
TEST(CensusTest, ConcurrentUpdatesReplayToTheCensusFinalValue) {
  const std::string path = TempPath("census_concurrent.jsonl");
  Capture capture = OpenCapture(path);
  ASSERT_TRUE(capture.tracer->Start().ok());
  Census census;
  capture.tracer->AttachCensus(&census);
  const Context ctx(capture.tracer.get(), layers::kCpuHeap, &census);
  constexpr int kLabels = 8;
  constexpr int kThreads = 4;
  constexpr int kTurns = kThreads * 100 + 1;  // per label; thread 0 takes the last
  std::vector<CensusLabel> labels;
  std::vector<int64_t> expected;
  for (int l = 0; l < kLabels; ++l) {
    labels.push_back(census.Label("shared/" + std::to_string(l)).value());
    census.Set(labels.back(), 1000 * (l + 1));
    expected.push_back(1000 * (l + 1));
    for (int turn = 0; turn < kTurns; ++turn) {
      const int t = turn % kThreads;
      expected.back() += turn % 2 == 0 ? 100 + t : -(90 + t);
    }
    std::atomic<int> turn{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int mine = t; mine < kTurns; mine += kThreads) {
          // Acquire: pairs with the release store below; only a hand-over of turns, the
          // census orders nothing by it.
          while (turn.load(std::memory_order_acquire) != mine) std::this_thread::yield();
          if (mine % 2 == 0) {
            census.Add(labels[l], 100 + t);
          } else if (t % 2 == 0) {
            census.Subtract(labels[l], 90 + t);
          } else {
            ctx.CensusSubtract(labels[l], 90 + t);
          }
          // Release: pairs with the acquire load above, in the next turn's thread.
          turn.store(mine + 1, std::memory_order_release);
        }
      });
    }
    for (auto& th : threads) th.join();
  }
  const Snapshot snap = FinishCapture(capture);

  EXPECT_EQ(snap.integrity.events_recorded, uint64_t{kLabels} * (1 + kTurns))
      << "every update is in the capture";
  const std::vector<CensusEntry> entries = census.Entries();
  const std::map<uint32_t, int64_t> replayed = ReplayedCensus(path);
  int64_t total = 0;
  for (int l = 0; l < kLabels; ++l) {
    total += expected[l];
    ASSERT_EQ(entries[labels[l].id].bytes, expected[l]);
    ASSERT_EQ(replayed.count(labels[l].id), 1u);
    EXPECT_EQ(replayed.at(labels[l].id), expected[l]) << entries[labels[l].id].label;
  }
  const auto summary = Analyzer::Summarize(path);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->coverage.census_bytes, total);
}

// The changes a capture carries add up to the census's values even for what no record
// carried when it happened: values set before the census was attached, updates made
// before the tracer started, and, in a second tracer's capture, the values the census
// had when it moved there. Values parked while the tracer is stopped are no operation it
// missed: the captures are whole (not_recording 0; `memtrace verify` failed them).
TEST(CensusTest, ValuesFromBeforeAttachStartAndAMoveReachTheCapture) {
  Census census;
  const CensusLabel early = census.Label("early").value();
  const CensusLabel before_start = census.Label("before_start").value();
  census.Set(early, 500);
  census.Add(early, 20);
  const std::string first = TempPath("census_first.jsonl");
  {
    Capture capture = OpenCapture(first);
    capture.tracer->AttachCensus(&census);  // not started: nothing is recorded yet
    census.Add(before_start, 64);
    capture.tracer->AttachCensus(&census);  // attached again: no second copy of the values
    ASSERT_TRUE(capture.tracer->Start().ok());
    census.Subtract(early, 1);
    const Snapshot snap = FinishCapture(capture);
    EXPECT_EQ(snap.integrity.not_recording, 0u) << snap.integrity.Counters();
  }
  census.Add(before_start, 36);  // between the captures
  const std::string second = TempPath("census_second.jsonl");
  {
    Capture capture = OpenCapture(second);
    ASSERT_TRUE(capture.tracer->Start().ok());
    capture.tracer->AttachCensus(&census);
    census.Set(early, 1000);
    const Snapshot snap = FinishCapture(capture);
    EXPECT_EQ(snap.integrity.not_recording, 0u) << snap.integrity.Counters();
  }
  const std::map<uint32_t, int64_t> want_first = {{early.id, 519}, {before_start.id, 64}};
  EXPECT_EQ(ReplayedCensus(first), want_first);
  const std::map<uint32_t, int64_t> want_second = {{early.id, 1000}, {before_start.id, 100}};
  EXPECT_EQ(ReplayedCensus(second), want_second);
}

TEST(ContextTest, DisabledContextIsInert) {
  Context ctx;
  EXPECT_FALSE(ctx.enabled());
  MallocAllocator heap;
  void* p = ctx.Alloc(heap, 100, 16, 0);
  ASSERT_NE(p, nullptr);
  p = ctx.Remap(heap, AsMemory(p, 100), 16, 200, 0);
  ASSERT_NE(p, nullptr);
  static const ScopeName kNothing("ctx_nothing");
  {
    auto phase = ctx.Enter(kNothing, 1);
    EXPECT_EQ(Scope::Current().path, 0u) << "a disabled context opens no scope";
  }
  ctx.CensusAdd(CensusLabel{0}, 5);  // no census: nothing happens
  ctx.Free(heap, AsMemory(p, 200), 16, 0);
}

struct Recorded {
  std::vector<std::string> calls;
};

void Begin(void* user, uint8_t category) {
  static_cast<Recorded*>(user)->calls.push_back("begin " + std::to_string(category));
}
void End(void* user, uint8_t category) {
  static_cast<Recorded*>(user)->calls.push_back("end " + std::to_string(category));
}

TEST(ContextTest, EnabledContextTracesScopesCensusAndCallsTheIntervalSink) {
  auto tracer = Tracer::Create(Config{}).value();
  ASSERT_TRUE(tracer->Start().ok());
  Census census;
  const CensusLabel cache = census.Label("cache").value();
  Recorded recorded;
  const IntervalSink sink{&Begin, &End, &recorded};
  const Context ctx(tracer.get(), layers::kCpuHeap, &census, &sink);
  EXPECT_TRUE(ctx.enabled());
  MallocAllocator heap;
  static const ScopeName kDecode("ctx_decode");
  void* p = nullptr;
  uint32_t path = 0;
  {
    auto phase = ctx.Enter(kDecode, 7);
    path = Scope::Current().path;
    EXPECT_EQ(recorded.calls, std::vector<std::string>{"begin 7"})
        << "the sink is called synchronously on enter";
    p = ctx.Alloc(heap, 256, 16, 0);
    ctx.CensusAdd(cache, 4096);
  }
  EXPECT_EQ(recorded.calls, (std::vector<std::string>{"begin 7", "end 7"}));
  EXPECT_EQ(census.Entries()[0].bytes, 4096);
  const Snapshot snap = tracer->TakeSnapshot();
  bool found = false;
  for (const ScopeUsage& s : snap.scopes) {
    if (s.scope == path) {
      found = true;
      EXPECT_EQ(s.path, "ctx_decode");
      EXPECT_EQ(s.usage.live_bytes, 256u);
    }
  }
  EXPECT_TRUE(found);
  ctx.Free(heap, AsMemory(p, 256), 16, 0);
}

TEST(ContextTest, ScopeCarriedToAnotherThreadKeepsAttribution) {
  auto tracer = Tracer::Create(Config{}).value();
  ASSERT_TRUE(tracer->Start().ok());
  const Context ctx(tracer.get(), layers::kCpuHeap);
  MallocAllocator heap;
  static const ScopeName kRequest("ctx_request");
  Scope carried;
  {
    auto phase = ctx.Enter(kRequest);
    carried = Scope::Current();
  }
  void* p = nullptr;
  std::thread pool_thread([&] {
    EXPECT_EQ(Scope::Current().path, 0u);
    auto phase = ctx.Adopt(carried);
    EXPECT_EQ(Scope::Current(), carried);
    p = ctx.Alloc(heap, 512, 16, 0);
  });
  pool_thread.join();
  const Snapshot snap = tracer->TakeSnapshot();
  bool found = false;
  for (const ScopeUsage& s : snap.scopes) {
    if (s.scope == carried.path) {
      found = true;
      EXPECT_EQ(s.usage.live_bytes, 512u);
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(carried.PathString(), "ctx_request");
  ctx.Free(heap, AsMemory(p, 512), 16, 0);
}

TEST(ContextTest, WithLayerRecordsUnderAnotherLayer) {
  auto tracer = Tracer::Create(Config{}).value();
  ASSERT_TRUE(tracer->Start().ok());
  const Context cpu(tracer.get(), layers::kCpuHeap);
  const Context gpu = cpu.WithLayer(layers::kGpuHeap);
  EXPECT_EQ(gpu.layer(), layers::kGpuHeap);
  EXPECT_EQ(gpu.tracer(), tracer.get());
  MallocAllocator heap;
  void* p = gpu.Alloc(heap, 64, 16, 0);
  const Snapshot snap = tracer->TakeSnapshot();
  ASSERT_EQ(snap.layers.size(), 1u);
  EXPECT_EQ(snap.layers[0].name, "gpu");
  gpu.Free(heap, AsMemory(p, 64), 16, 0);
}

}  // namespace
}  // namespace memtrace
