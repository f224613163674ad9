// Copyright 2026 The memtrace Authors.
//
// Tracer and TracingAllocator: forwarding, the seed's failure semantics (with a backing
// allocator that fails on demand and a ring forced full), arenas, device memory, layers.

#include "runtime/tracer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/device_heap.h"
#include "runtime/frame_arena.h"
#include "runtime/layer_table.h"
#include "runtime/malloc_allocator.h"
#include "tests/drainer_stall.h"

namespace memtrace {
namespace {

// A malloc backing that counts calls and fails the operations it is told to.
class ScriptedBacking final : public Allocator {
 public:
  void* Alloc(size_t len, size_t alignment, uintptr_t ret) noexcept override {
    ++allocs;
    if (fail_allocs > 0) {
      --fail_allocs;
      return nullptr;
    }
    return heap.Alloc(len, alignment, ret);
  }
  bool Resize(Memory m, size_t alignment, size_t new_len, uintptr_t ret) noexcept override {
    ++resizes;
    if (fail_resizes > 0) {
      --fail_resizes;
      return false;
    }
    return heap.Resize(m, alignment, new_len, ret);
  }
  void* Remap(Memory m, size_t alignment, size_t new_len, uintptr_t ret) noexcept override {
    ++remaps;
    if (remap_in_place_when_shrinking && new_len <= m.size()) return m.data();
    if (remap_moves) {  // always to a new block, as realloc may or may not
      void* q = heap.Alloc(new_len, alignment, ret);
      if (q == nullptr) return nullptr;
      memcpy(q, m.data(), std::min(m.size(), new_len));
      heap.Free(m, alignment, ret);
      return q;
    }
    return heap.Remap(m, alignment, new_len, ret);
  }
  void Free(Memory m, size_t alignment, uintptr_t ret) noexcept override {
    ++frees;
    heap.Free(m, alignment, ret);
  }

  MallocAllocator heap;
  int allocs = 0, resizes = 0, remaps = 0, frees = 0;
  int fail_allocs = 0, fail_resizes = 0;
  bool remap_moves = false, remap_in_place_when_shrinking = false;
};

std::unique_ptr<Tracer> MakeTracer(Config config = Config{}) {
  auto tracer = Tracer::Create(config);
  EXPECT_TRUE(tracer.ok()) << tracer.status();
  EXPECT_TRUE((*tracer)->Start().ok());
  return std::move(tracer).value();
}

using testing::DrainerStall;

TEST(TracerTest, ForwardsEveryOperationAndRecordsIt) {
  auto tracer = MakeTracer();
  ScriptedBacking backing;
  backing.remap_moves = true;
  TracingAllocator traced(tracer.get(), &backing, layers::kCpuHeap);
  void* p = traced.Alloc(100, 16, MEMTRACE_CALL_SITE());
  ASSERT_NE(p, nullptr);
  memset(p, 1, 100);
  EXPECT_TRUE(traced.Resize(AsMemory(p, 100), 16, 90, 0));  // shrink in place
  void* q = traced.Remap(AsMemory(p, 90), 16, 5000, 0);
  ASSERT_NE(q, nullptr);
  traced.Free(AsMemory(q, 5000), 16, 0);
  EXPECT_EQ(backing.allocs, 1);
  EXPECT_EQ(backing.resizes, 1);
  EXPECT_EQ(backing.remaps, 1);
  EXPECT_EQ(backing.frees, 1);
  const Snapshot snap = tracer->TakeSnapshot();
  EXPECT_EQ(snap.totals.live_count, 0u);
  EXPECT_EQ(snap.totals.allocated_count, 2u);  // the allocation and the moved block
  EXPECT_EQ(snap.totals.high_water_bytes, 5000u);
  EXPECT_TRUE(snap.integrity.clean()) << snap.integrity.Counters();
  EXPECT_FALSE(tracer->failure_flag());
}

// A remap that stays in place is the same allocation at a new size, as the interposer
// records a realloc that did not move: one allocation call more, no release, no new block.
TEST(TracerTest, ARemapInPlaceIsAResize) {
  auto tracer = MakeTracer();
  ScriptedBacking backing;
  backing.remap_in_place_when_shrinking = true;
  TracingAllocator traced(tracer.get(), &backing, layers::kCpuHeap);
  void* p = traced.Alloc(100000, 16, 0);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(traced.Remap(AsMemory(p, 100000), 16, 50000, 0), p);
  const Snapshot snap = tracer->TakeSnapshot();
  EXPECT_EQ(snap.totals.allocated_count, 1u);
  EXPECT_EQ(snap.totals.allocation_calls, 2u);
  EXPECT_EQ(snap.totals.freed_count, 0u);
  EXPECT_EQ(snap.totals.allocated_bytes, 100000u);
  EXPECT_EQ(snap.totals.freed_bytes, 50000u);
  EXPECT_EQ(snap.totals.live_bytes, 50000u);
  EXPECT_EQ(snap.totals.live_count, 1u);
  EXPECT_EQ(snap.totals.high_water_bytes, 100000u);
  EXPECT_TRUE(snap.integrity.clean()) << snap.integrity.Counters();
  traced.Free(AsMemory(p, 50000), 16, 0);
}

// free(NULL) names no block: nothing is recorded (it was counted a double free), and the
// backing is still told.
TEST(TracerTest, AFreeOfNullRecordsNothing) {
  auto tracer = MakeTracer();
  ScriptedBacking backing;
  TracingAllocator traced(tracer.get(), &backing, layers::kCpuHeap);
  traced.Free(AsMemory(nullptr, 0), 16, 0);
  void* p = traced.Alloc(64, 16, 0);
  traced.Free(AsMemory(p, 64), 16, 0);
  traced.Free(AsMemory(nullptr, 0), 16, 0);
  EXPECT_EQ(backing.frees, 3);
  const Snapshot snap = tracer->TakeSnapshot();
  EXPECT_EQ(snap.totals.freed_count, 1u);
  EXPECT_TRUE(snap.integrity.clean()) << snap.integrity.Counters();
}

// A remap to a size no record holds (2^48 bytes and more) is refused and counted before
// the backing is asked, as an allocation of that size is, never cut to what fits.
TEST(TracerTest, ARemapToASizeNoRecordHoldsIsRefusedNotTruncated) {
  auto tracer = MakeTracer();
  ScriptedBacking backing;
  TracingAllocator traced(tracer.get(), &backing, layers::kCpuHeap);
  void* p = traced.Alloc(64, 16, 0);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(traced.Remap(AsMemory(p, 64), 16, size_t{1} << 48, 0), nullptr);
  EXPECT_EQ(backing.remaps, 0);
  const Snapshot snap = tracer->TakeSnapshot();
  EXPECT_EQ(snap.integrity.records_failed, 1u);
  // Refused, the remap happened in no order: the peaks stay known.
  EXPECT_TRUE(snap.integrity.peaks_known());
  EXPECT_EQ(snap.integrity.PeakVerdict(), "peaks exact");
  EXPECT_EQ(snap.totals.live_bytes, 64u);  // the block is as it was
  EXPECT_EQ(snap.totals.allocated_count, 1u);
  traced.Free(AsMemory(p, 64), 16, 0);
}

TEST(TracerTest, BackingFailureIsSeenAndNothingIsRecorded) {
  auto tracer = MakeTracer();
  ScriptedBacking backing;
  backing.fail_allocs = 1;
  backing.fail_resizes = 1;
  TracingAllocator traced(tracer.get(), &backing, layers::kCpuHeap);
  EXPECT_EQ(traced.Alloc(64, 16, 0), nullptr);
  void* p = traced.Alloc(64, 16, 0);
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(traced.Resize(AsMemory(p, 64), 16, 32, 0));
  const Snapshot snap = tracer->TakeSnapshot();
  EXPECT_EQ(snap.totals.allocated_count, 1u);
  EXPECT_EQ(snap.totals.live_bytes, 64u);  // the failed resize changed nothing
  traced.Free(AsMemory(p, 64), 16, 0);
}

TEST(TracerTest, AllocWhoseRecordFailsFreesTheMemoryAndAnswersNull) {
  Config config;
  config.ring_capacity_log2 = 4;
  config.overflow_policy = OverflowPolicy::kFail;
  auto tracer = MakeTracer(config);
  ScriptedBacking backing;
  TracingAllocator traced(tracer.get(), &backing, layers::kCpuHeap);
  std::vector<void*> kept;
  int nulls = 0;
  {
    DrainerStall stall(tracer->recorder());
    std::thread t([&] {
      for (int i = 0; i < 20; ++i) {
        void* p = traced.Alloc(32, 16, 0);
        if (p == nullptr) {
          ++nulls;
        } else {
          kept.push_back(p);
        }
      }
    });
    t.join();
  }
  EXPECT_EQ(kept.size(), 16u);
  EXPECT_EQ(nulls, 4);
  EXPECT_EQ(backing.allocs, 20);
  EXPECT_EQ(backing.frees, 4) << "each unrecorded allocation must be given back";
  EXPECT_FALSE(tracer->failure_flag()) << "a failed allocation is not a partial capture";
  for (void* p : kept) traced.Free(AsMemory(p, 32), 16, 0);
  const Snapshot snap = tracer->TakeSnapshot();
  EXPECT_EQ(snap.integrity.records_failed, 4u);
  EXPECT_EQ(snap.totals.live_count, 0u);
}

TEST(TracerTest, ReleaseWhoseRecordFailsStandsAndRaisesTheFailureFlag) {
  Config config;
  config.ring_capacity_log2 = 4;
  config.overflow_policy = OverflowPolicy::kFail;
  auto tracer = MakeTracer(config);
  ScriptedBacking backing;
  TracingAllocator traced(tracer.get(), &backing, layers::kCpuHeap);
  std::vector<void*> blocks;
  for (int i = 0; i < 12; ++i) blocks.push_back(traced.Alloc(48, 16, 0));
  ASSERT_TRUE(tracer->Flush().ok());
  void* moved = nullptr;
  {
    DrainerStall stall(tracer->recorder());
    std::thread t([&] {
      // 16 slots: fill the ring with frees, then a resize, a remap and a free that fail.
      for (int i = 0; i < 9; ++i) traced.Free(AsMemory(blocks[i], 48), 16, 0);
      EXPECT_TRUE(traced.Resize(AsMemory(blocks[9], 48), 16, 40, 0));  // records: 10
      moved = traced.Remap(AsMemory(blocks[10], 48), 16, 4096, 0);     // records: 12
      traced.Free(AsMemory(blocks[11], 48), 16, 0);                    // 13
      for (int i = 0; i < 3; ++i) traced.Free(AsMemory(traced.backing()->Alloc(8, 8, 0), 8), 8, 0);
      EXPECT_TRUE(traced.Resize(AsMemory(blocks[9], 40), 16, 24, 0));  // ring full: fails
      void* again = traced.Remap(AsMemory(moved, 4096), 16, 8192, 0);  // ring full: fails
      EXPECT_NE(again, nullptr) << "the remap itself must still happen";
      moved = again;
    });
    t.join();
  }
  EXPECT_EQ(backing.frees, 9 + 1 + 3);
  EXPECT_TRUE(tracer->failure_flag());
  traced.Free(AsMemory(blocks[9], 24), 16, 0);
  traced.Free(AsMemory(moved, 8192), 16, 0);
  const Snapshot snap = tracer->TakeSnapshot();
  EXPECT_FALSE(snap.integrity.complete());
  EXPECT_GE(snap.integrity.events_dropped, 2u);
}

TEST(TracerTest, NotRunningForwardsAndCounts) {
  auto tracer = Tracer::Create(Config{}).value();
  ScriptedBacking backing;
  TracingAllocator traced(tracer.get(), &backing, layers::kCpuHeap);
  void* p = traced.Alloc(10, 8, 0);
  ASSERT_NE(p, nullptr);
  traced.Free(AsMemory(p, 10), 8, 0);
  EXPECT_EQ(backing.frees, 1);
  EXPECT_EQ(tracer->Integrity().not_recording, 2u);
  EXPECT_FALSE(tracer->failure_flag());
}

TEST(TracerTest, FrameArenaResetIsOneEventReleasingEverySubAllocation) {
  auto tracer = MakeTracer();
  FrameArena arena(1 << 16);
  TracingAllocator frame(tracer.get(), &arena, layers::kFrameArena);
  static const ScopeName kFrameScope("arena_frame");
  for (int f = 0; f < 3; ++f) {
    Span span = tracer->Enter(kFrameScope);
    for (int i = 0; i < 100; ++i) ASSERT_NE(frame.Alloc(64, 16, 0), nullptr);
    arena.ResetTraced(frame);
  }
  EXPECT_EQ(arena.used(), 0u);
  const Snapshot snap = tracer->TakeSnapshot();
  bool found = false;
  for (const LayerUsage& l : snap.layers) {
    if (l.layer != layers::kFrameArena) continue;
    found = true;
    EXPECT_EQ(l.name, "frame_arena");
    EXPECT_EQ(l.usage.live_bytes, 0u);
    EXPECT_EQ(l.usage.allocated_count, 300u);
    EXPECT_EQ(l.usage.freed_count, 300u);
    EXPECT_EQ(l.usage.high_water_bytes, 6400u);
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(snap.integrity.events_recorded, 300u + 3u + 6u);  // allocs, resets, enter/exit
}

TEST(TracerTest, DeviceMemorySitsBesideCpuMemoryOnItsOwnLayer) {
  auto tracer = MakeTracer();
  MallocAllocator heap;
  SimulatedDeviceHeap device(uint64_t{1} << 30);
  TracingAllocator cpu(tracer.get(), &heap, layers::kCpuHeap);
  TracingAllocator gpu(tracer.get(), &device, layers::kGpuHeap);
  void* host = cpu.Alloc(1000, 16, 0);
  void* texture = gpu.Alloc(4 << 20, 256, 0);
  ASSERT_NE(texture, nullptr);
  EXPECT_GE(reinterpret_cast<uint64_t>(texture), SimulatedDeviceHeap::kBase);
  EXPECT_EQ(device.used(), uint64_t{4} << 20);
  const Snapshot snap = tracer->TakeSnapshot();
  ASSERT_EQ(snap.layers.size(), 2u);
  EXPECT_EQ(snap.layers[0].name, "cpu");
  EXPECT_EQ(snap.layers[0].usage.live_bytes, 1000u);
  EXPECT_EQ(snap.layers[1].name, "gpu");
  EXPECT_EQ(snap.layers[1].usage.live_bytes, uint64_t{4} << 20);
  gpu.Free(AsMemory(texture, 4 << 20), 256, 0);
  cpu.Free(AsMemory(host, 1000), 16, 0);
  EXPECT_EQ(device.used(), 0u);
}

TEST(TracerTest, SeveralTracersAndNamedLayersCoexist) {
  auto a = MakeTracer();
  auto b = MakeTracer();
  const LayerId textures = LayerTable::Global().Register("textures").value();
  EXPECT_EQ(LayerTable::Global().Register("textures").value(), textures);
  EXPECT_GE(textures, layers::kFirstUserLayer);
  MallocAllocator heap;
  TracingAllocator in_a(a.get(), &heap, layers::kCpuHeap);
  TracingAllocator in_b(b.get(), &heap, textures);
  void* pa = in_a.Alloc(10, 8, 0);
  void* pb = in_b.Alloc(20, 8, 0);
  const Snapshot sa = a->TakeSnapshot();
  const Snapshot sb = b->TakeSnapshot();
  EXPECT_EQ(sa.totals.live_bytes, 10u);
  EXPECT_EQ(sb.totals.live_bytes, 20u);
  ASSERT_EQ(sb.layers.size(), 1u);
  EXPECT_EQ(sb.layers[0].name, "textures");
  in_a.Free(AsMemory(pa, 10), 8, 0);
  in_b.Free(AsMemory(pb, 20), 8, 0);
  EXPECT_FALSE(LayerTable::Global().Register("").ok());
}

// Scopes opened by name at run time (the C markers' way): the same path a Span of that
// name opens, found again by the name's address only while the text there is the same.
TEST(NamedScopeTest, NamesOpenTheSamePathsAsSpansAndAReusedBufferIsAnotherName) {
  static const ScopeName kOuter("named_outer");
  static const ScopeName kInner("named_inner");
  uint32_t outer_path = 0, inner_path = 0;
  {
    Span outer(nullptr, kOuter);
    Span inner(nullptr, kInner);
    outer_path = outer.path();
    inner_path = inner.path();
  }
  ASSERT_EQ(CurrentScopePath(), 0u);
  EXPECT_FALSE(ExitInnermostScope(nullptr)) << "nothing is open";
  char name[32];
  for (int round = 0; round < 3; ++round) {  // the second and third rounds hit the cache
    strcpy(name, "named_outer");
    EnterNamedScope(nullptr, name);
    EXPECT_EQ(CurrentScopePath(), outer_path);
    strcpy(name, "named_inner");
    EnterNamedScope(nullptr, name);
    EXPECT_EQ(CurrentScopePath(), inner_path);
    EXPECT_TRUE(ExitInnermostScope(nullptr));
    strcpy(name, "named_other");  // the same address, another name
    EnterNamedScope(nullptr, name);
    EXPECT_NE(CurrentScopePath(), inner_path);
    EXPECT_EQ(ScopeTable::Global().PathString(CurrentScopePath()), "named_outer/named_other");
    EXPECT_TRUE(ExitInnermostScope(nullptr));
    EXPECT_TRUE(ExitInnermostScope(nullptr));
    EXPECT_EQ(CurrentScopePath(), 0u);
  }
  // A name the table changes ('/' is kept out of names) is still the same scope each time.
  EnterNamedScope(nullptr, "a/b");
  const uint32_t slashed = CurrentScopePath();
  EXPECT_EQ(ScopeTable::Global().PathString(slashed), "a_b");
  EXPECT_TRUE(ExitInnermostScope(nullptr));
  EnterNamedScope(nullptr, "a/b");
  EXPECT_EQ(CurrentScopePath(), slashed);
  EXPECT_TRUE(ExitInnermostScope(nullptr));
  EXPECT_FALSE(ExitInnermostScope(nullptr));
}

TEST(DeviceHeapTest, FirstFitCoalescesAndRefusesWhenFull) {
  SimulatedDeviceHeap heap(1024);
  void* a = heap.Alloc(512, 1, 0);
  void* b = heap.Alloc(512, 1, 0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(heap.Alloc(1, 1, 0), nullptr);
  heap.Free(AsMemory(a, 512), 1, 0);
  heap.Free(AsMemory(b, 512), 1, 0);
  EXPECT_NE(heap.Alloc(1024, 1, 0), nullptr) << "freed neighbours must coalesce";
}

TEST(FrameArenaTest, BumpsAlignsAndResizesOnlyTheLastBlock) {
  FrameArena arena(256);
  void* a = arena.Alloc(10, 1, 0);
  void* b = arena.Alloc(10, 64, 0);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 64, 0u);
  EXPECT_FALSE(arena.Resize(AsMemory(a, 10), 1, 20, 0));  // not the last block
  EXPECT_TRUE(arena.Resize(AsMemory(b, 10), 64, 30, 0));
  EXPECT_EQ(arena.Alloc(1000, 1, 0), nullptr);
  arena.Reset();
  EXPECT_EQ(arena.used(), 0u);
}

}  // namespace
}  // namespace memtrace
