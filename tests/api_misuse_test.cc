// Copyright 2026 The memtrace Authors.
//
// Misuse of the public API, each with its documented outcome: a clear error, or a counted
// integrity entry, and never a crash or a silent loss. (Cases tested elsewhere: a Span
// exited on another thread, RecorderTest.SpanExitedOnAnotherThreadIsRefusedAndCounted; a
// census over capacity, CensusTest.FullTableRefusesNewLabelsKeepsOldOnesAndRecordsIt and
// CensusTest.LabelStorageExhaustionIsItsOwnError; Start twice,
// RecorderTest.StopTwiceAndStartTwiceAreClearErrors.)

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/malloc_allocator.h"
#include "runtime/span.h"
#include "runtime/tracer.h"

namespace memtrace {
namespace {

constexpr LayerId kHeap = layers::kCpuHeap;

std::unique_ptr<Tracer> Started() {
  auto tracer = Tracer::Create(Config{}).value();
  EXPECT_TRUE(tracer->Start().ok());
  return tracer;
}

// A backing that survives the program's mistakes so the tracer's answer to them can be
// tested: memory is given back only when the backing is destroyed, a second Free of a
// block is counted instead of corrupting malloc, and a Resize or Remap of a released block
// is accepted as a real (forgiving) allocator might.
class ForgivingBacking final : public Allocator {
 public:
  ~ForgivingBacking() override {
    for (void* p : owned_) free(p);
  }
  void* Alloc(size_t len, size_t, uintptr_t) noexcept override {
    void* p = malloc(len);
    owned_.insert(p);
    return p;
  }
  bool Resize(Memory, size_t, size_t, uintptr_t) noexcept override { return true; }
  void* Remap(Memory, size_t alignment, size_t new_len, uintptr_t ret) noexcept override {
    return Alloc(new_len, alignment, ret);  // always moves; the old block stays owned
  }
  void Free(Memory m, size_t, uintptr_t) noexcept override {
    if (!released_.insert(m.data()).second) ++repeated_frees;
  }
  int repeated_frees = 0;

 private:
  std::set<void*> owned_;
  std::set<void*> released_;
};

TEST(ApiMisuseTest, FreeOfAPointerTheTracerNeverSawIsCountedAndForwarded) {
  auto tracer = Started();
  MallocAllocator heap;
  TracingAllocator traced(tracer.get(), &heap, kHeap);
  void* untraced = heap.Alloc(48, 16, 0);  // allocated around the tracer
  void* p = traced.Alloc(32, 16, 0);
  traced.Free(AsMemory(untraced, 48), 16, 0);  // the backing still gets it back
  const Snapshot snap = tracer->TakeSnapshot();
  EXPECT_EQ(snap.integrity.unknown_frees, 1u) << snap.integrity.Counters();
  EXPECT_TRUE(snap.integrity.complete()) << "nothing was lost: the program erred";
  EXPECT_FALSE(snap.integrity.clean());
  EXPECT_NE(snap.integrity.Verdict().find("unknown blocks"), std::string::npos);
  EXPECT_EQ(snap.totals.freed_count, 0u) << "an unknown release frees nothing known";
  EXPECT_EQ(snap.totals.live_bytes, 32u);
  traced.Free(AsMemory(p, 32), 16, 0);
}

TEST(ApiMisuseTest, DoubleFreeIsCountedAsAnUnknownFreeAndChangesNoTotals) {
  auto tracer = Started();
  ForgivingBacking backing;
  TracingAllocator traced(tracer.get(), &backing, kHeap);
  void* p = traced.Alloc(64, 16, 0);
  ASSERT_NE(p, nullptr);
  traced.Free(AsMemory(p, 64), 16, 0);
  traced.Free(AsMemory(p, 64), 16, 0);  // the mistake
  EXPECT_EQ(backing.repeated_frees, 1) << "the tracer forwards the mistake, as documented";
  const Snapshot snap = tracer->TakeSnapshot();
  const CaptureIntegrity& in = snap.integrity;
  // The first free consumed the block's ticket, so the second carries none and finds
  // nothing live at the address: it is counted as an unknown free (double_frees counts a
  // second release that carries the very same ticket, which the runtime never sends).
  EXPECT_EQ(in.unknown_frees, 1u) << in.Counters();
  EXPECT_EQ(in.double_frees, 0u) << in.Counters();
  EXPECT_TRUE(in.complete());
  EXPECT_FALSE(in.clean());
  EXPECT_EQ(snap.totals.freed_count, 1u);
  EXPECT_EQ(snap.totals.live_count, 0u);
  EXPECT_EQ(snap.totals.live_bytes, 0u);
}

TEST(ApiMisuseTest, ResizeOrRemapOfAFreedBlockIsCountedAndResurrectsNothing) {
  auto tracer = Started();
  ForgivingBacking backing;
  TracingAllocator traced(tracer.get(), &backing, kHeap);
  void* p = traced.Alloc(64, 16, 0);
  void* q = traced.Alloc(64, 16, 0);
  traced.Free(AsMemory(p, 64), 16, 0);
  traced.Free(AsMemory(q, 64), 16, 0);
  EXPECT_TRUE(traced.Resize(AsMemory(p, 64), 16, 128, 0));  // the backing allowed it
  void* moved = traced.Remap(AsMemory(q, 64), 16, 256, 0);
  ASSERT_NE(moved, nullptr);
  const Snapshot snap = tracer->TakeSnapshot();
  const CaptureIntegrity& in = snap.integrity;
  EXPECT_EQ(in.unknown_resizes, 1u) << in.Counters();
  EXPECT_EQ(in.unknown_remaps, 1u) << in.Counters();
  EXPECT_TRUE(in.complete());
  EXPECT_FALSE(in.clean());
  // The resize changes nothing; the remap's new block is real memory the program now
  // holds, so it is live (allocation_ledger.h: a remap of an unknown block records the
  // new one).
  EXPECT_EQ(snap.totals.live_count, 1u);
  EXPECT_EQ(snap.totals.live_bytes, 256u);
  EXPECT_EQ(snap.totals.freed_count, 2u);
  traced.Free(AsMemory(moved, 256), 16, 0);
}

TEST(ApiMisuseTest, OuterSpanExitedFirstClosesAndRecordsTheInnerScopes) {
  auto tracer = Started();
  static const ScopeName kOuter("misuse_outer");
  static const ScopeName kInner("misuse_inner");
  auto outer = std::make_unique<Span>(&tracer->recorder(), kOuter);
  auto inner = std::make_unique<Span>(&tracer->recorder(), kInner);
  outer->Exit();  // out of order: inner is still open
  EXPECT_EQ(CurrentScopePath(), 0u);
  inner.reset();  // already closed by the outer exit: records nothing more
  outer.reset();
  const Snapshot snap = tracer->TakeSnapshot();
  // Two enters and two exits: the inner scope's exit is recorded once, by the outer exit.
  EXPECT_EQ(snap.integrity.events_recorded, 4u) << snap.integrity.Counters();
  EXPECT_EQ(snap.integrity.foreign_span_exits, 0u);
  EXPECT_TRUE(snap.integrity.clean());
}

TEST(ApiMisuseTest, TracerStoppedTwiceIsAClearErrorAndChangesNothing) {
  auto tracer = Started();
  MallocAllocator heap;
  TracingAllocator traced(tracer.get(), &heap, kHeap);
  void* p = traced.Alloc(10, 8, 0);
  ASSERT_TRUE(tracer->Stop().ok());
  const absl::Status twice = tracer->Stop();
  EXPECT_EQ(twice.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(twice.message().find("stopped twice"), std::string::npos) << twice;
  EXPECT_FALSE(tracer->running());
  traced.Free(AsMemory(p, 10), 8, 0);  // forwarded, not traced, counted
  const Snapshot snap = tracer->TakeSnapshot();
  EXPECT_EQ(snap.integrity.not_recording, 1u);
  EXPECT_EQ(snap.totals.live_bytes, 10u) << "the capture ended before the free";
  // Start() after a double Stop() still works.
  ASSERT_TRUE(tracer->Start().ok());
  ASSERT_TRUE(tracer->Stop().ok());
}

// Destroying a tracer while another thread is inside one of its calls is undefined, like
// destroying any object in use (tracer.h says so). The supported shutdown is Stop() while
// threads still run: their operations are forwarded untraced and counted as not_recording,
// so nothing is lost silently, and once they no longer call the tracer it is destroyed.
TEST(ApiMisuseTest, StopWhileThreadsRecordAccountsForEveryOperation) {
  auto tracer = Started();
  MallocAllocator heap;
  TracingAllocator traced(tracer.get(), &heap, kHeap);
  constexpr int kThreads = 4;
#ifdef MEMTRACE_SANITIZER
  constexpr int kOpsAfterStop = 200;
#else
  constexpr int kOpsAfterStop = 2000;
#endif
  std::atomic<bool> stopped{false};
  std::atomic<uint64_t> operations{0};  // record attempts: one per Alloc and per Free
  std::atomic<int> started{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      uint64_t ops = 0;
      auto one = [&] {
        void* p = traced.Alloc(24, 8, 0);
        ASSERT_NE(p, nullptr);
        traced.Free(AsMemory(p, 24), 8, 0);
        ops += 2;
      };
      one();
      ++started;
      while (!stopped) one();
      for (int i = 0; i < kOpsAfterStop; ++i) one();  // surely after Stop() returned
      operations += ops;
    });
  }
  while (started < kThreads) std::this_thread::yield();
  ASSERT_TRUE(tracer->Stop().ok());  // while every thread is recording
  stopped = true;
  for (auto& th : threads) th.join();
  const Snapshot snap = tracer->TakeSnapshot();
  const CaptureIntegrity& in = snap.integrity;
  EXPECT_EQ(in.events_recorded + in.not_recording, operations.load()) << in.Counters();
  EXPECT_GE(in.not_recording, uint64_t{2} * kThreads * kOpsAfterStop);
  EXPECT_EQ(in.events_applied, in.events_recorded) << "Stop() applies all it accepted";
  EXPECT_TRUE(in.complete()) << in.Counters();
  tracer.reset();  // no thread calls it any more: safe
}

// A thread that recorded may outlive its tracer: its ring binding dies with the tracer
// (runtime/internal/thread_state.h, generations), so a later tracer, even one that
// reuses the slot, gets a fresh ring, and the thread's exit touches neither.
TEST(ApiMisuseTest, ThreadsThatRecordedMayOutliveTheTracer) {
  auto first = Started();
  MallocAllocator heap;
  std::atomic<int> phase{0};
  std::unique_ptr<Tracer> second;
  void* kept = nullptr;
  std::thread worker([&] {
    TracingAllocator a(first.get(), &heap, kHeap);
    void* p = a.Alloc(16, 8, 0);
    a.Free(AsMemory(p, 16), 8, 0);
    phase = 1;
    while (phase != 2) std::this_thread::yield();
    TracingAllocator b(second.get(), &heap, kHeap);  // the first tracer is gone
    kept = b.Alloc(40, 8, 0);
    phase = 3;
  });
  while (phase != 1) std::this_thread::yield();
  ASSERT_TRUE(first->Stop().ok());
  first.reset();
  second = Started();
  phase = 2;
  worker.join();  // exits with a ring bound to the second tracer
  const Snapshot snap = second->TakeSnapshot();
  EXPECT_EQ(snap.totals.allocated_count, 1u);
  EXPECT_EQ(snap.totals.live_bytes, 40u);
  EXPECT_TRUE(snap.integrity.clean()) << snap.integrity.Counters();
  heap.Free(AsMemory(kept, 40), 8, 0);
}

}  // namespace
}  // namespace memtrace
