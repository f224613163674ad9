// Copyright 2026 The memtrace Authors.
//
// Census bounds and errors, the participation context (disabled and enabled), interval
// sinks, and scopes carried across threads.

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/census.h"
#include "runtime/context.h"
#include "runtime/malloc_allocator.h"
#include "runtime/tracer.h"
#include "sinks/summary_table.h"

namespace memtrace {
namespace {

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
