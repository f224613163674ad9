// Copyright 2026 The memtrace Authors.
//
// Allocator adapters users expect: pmr in both directions, a standard allocator for
// containers, malloc as the backing.

#include <memory_resource>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/malloc_allocator.h"
#include "runtime/pmr_adapters.h"
#include "runtime/std_allocator.h"
#include "runtime/tracer.h"

namespace memtrace {
namespace {

std::unique_ptr<Tracer> Started() {
  auto tracer = Tracer::Create(Config{}).value();
  EXPECT_TRUE(tracer->Start().ok());
  return tracer;
}

// Two MEMTRACE_HERE() in one function name two different places inside it; the
// wrapper macro MEMTRACE_CALL_SITE() names the function's caller instead.
__attribute__((noinline)) void TwoCallSites(uintptr_t* first, uintptr_t* second,
                                            uintptr_t* caller) {
  *first = MEMTRACE_HERE();
  asm volatile("" ::: "memory");
  *second = MEMTRACE_HERE();
  *caller = MEMTRACE_CALL_SITE();
}

TEST(CallSiteTest, HereNamesEachLineAndCallSiteNamesTheCaller) {
  uintptr_t first = 0, second = 0, caller = 0;
  TwoCallSites(&first, &second, &caller);
  const auto fn = reinterpret_cast<uintptr_t>(&TwoCallSites);
  EXPECT_NE(first, second);
  EXPECT_GT(first, fn);
  EXPECT_LT(first, fn + 512);
  EXPECT_GT(second, fn);
  EXPECT_LT(second, fn + 512);
  EXPECT_TRUE(caller < fn || caller >= fn + 512) << "the caller is outside TwoCallSites";
}

TEST(AdaptersTest, TracedMemoryResourceTracesPmrContainers) {
  auto tracer = Started();
  TracedMemoryResource traced(tracer.get(), std::pmr::new_delete_resource(),
                              layers::kCpuHeap);
  {
    std::pmr::vector<int> v(&traced);
    for (int i = 0; i < 1000; ++i) v.push_back(i);
    std::pmr::string s(200, 'x', &traced);
    const Snapshot during = tracer->TakeSnapshot();
    EXPECT_EQ(during.totals.live_count, 2u);
    EXPECT_EQ(during.totals.live_bytes, v.capacity() * sizeof(int) + s.capacity() + 1);
  }
  const Snapshot after = tracer->TakeSnapshot();
  EXPECT_EQ(after.totals.live_count, 0u);
  EXPECT_GT(after.totals.allocated_count, 2u) << "the vector grew several times";
  EXPECT_TRUE(after.integrity.clean()) << after.integrity.Counters();
}

TEST(AdaptersTest, AResourceCanBeTheBackingOfATracingAllocator) {
  auto tracer = Started();
  char buffer[4096];
  std::pmr::monotonic_buffer_resource arena(buffer, sizeof(buffer),
                                            std::pmr::null_memory_resource());
  ResourceAllocator backing(&arena);
  TracingAllocator traced(tracer.get(), &backing, layers::kFrameArena);
  void* a = traced.Alloc(1000, 8, 0);
  void* b = traced.Alloc(1000, 8, 0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_GE(static_cast<char*>(a), buffer);
  EXPECT_LT(static_cast<char*>(a), buffer + sizeof(buffer));
  // The upstream is exhausted: the resource throws, the adapter answers null, and nothing
  // is recorded for the failed allocation.
  EXPECT_EQ(traced.Alloc(4000, 8, 0), nullptr);
  EXPECT_FALSE(traced.Resize(AsMemory(a, 1000), 8, 2000, 0)) << "pmr has no resize";
  EXPECT_EQ(traced.Remap(AsMemory(a, 1000), 8, 2000, 0), nullptr);
  const Snapshot snap = tracer->TakeSnapshot();
  EXPECT_EQ(snap.totals.allocated_count, 2u);
  EXPECT_EQ(snap.totals.live_bytes, 2000u);
  traced.Free(AsMemory(a, 1000), 8, 0);
  traced.Free(AsMemory(b, 1000), 8, 0);
}

TEST(AdaptersTest, StdAllocatorTracesStandardContainers) {
  auto tracer = Started();
  MallocAllocator heap;
  TracingAllocator traced(tracer.get(), &heap, layers::kCpuHeap);
  {
    std::vector<double, StdAllocator<double>> v{StdAllocator<double>(&traced)};
    v.reserve(128);
    for (int i = 0; i < 128; ++i) v.push_back(i);
    const Snapshot snap = tracer->TakeSnapshot();
    EXPECT_EQ(snap.totals.live_bytes, 128 * sizeof(double));
    EXPECT_EQ(snap.totals.live_count, 1u);
  }
  EXPECT_EQ(tracer->TakeSnapshot().totals.live_count, 0u);
}

TEST(AdaptersTest, StdAllocatorThrowsBadAllocWhenTheAllocatorFails) {
  auto tracer = Started();
  char buffer[64];
  std::pmr::monotonic_buffer_resource tiny(buffer, sizeof(buffer),
                                           std::pmr::null_memory_resource());
  ResourceAllocator backing(&tiny);
  TracingAllocator traced(tracer.get(), &backing, layers::kCpuHeap);
  std::vector<char, StdAllocator<char>> v{StdAllocator<char>(&traced)};
  EXPECT_THROW(v.reserve(1 << 20), std::bad_alloc);
}

TEST(AdaptersTest, MallocBackingResizesInPlaceWithinItsUsableSize) {
  MallocAllocator heap;
  void* p = heap.Alloc(100, 16, 0);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(heap.Resize(AsMemory(p, 100), 16, 50, 0));
  EXPECT_FALSE(heap.Resize(AsMemory(p, 50), 16, 1 << 20, 0));
  void* q = heap.Alloc(64, 256, 0);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % 256, 0u);
  EXPECT_EQ(heap.Remap(AsMemory(q, 64), 256, 128, 0), nullptr)
      << "over-aligned blocks are not moved with realloc";
  heap.Free(AsMemory(q, 64), 256, 0);
  heap.Free(AsMemory(p, 50), 16, 0);
}

}  // namespace
}  // namespace memtrace
