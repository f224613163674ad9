// Copyright 2026 The memtrace Authors.
//
// HugePageAllocator: large allocations mapped on their own at a 2 MiB boundary, small ones
// from operator new, contents kept across growth, and rebinding for node-based and hashed
// containers.

#include "transport/huge_page_allocator.h"

#include <cstdint>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/container/flat_hash_map.h"

namespace memtrace {
namespace {

constexpr size_t kFrom = size_t{1} << 20;
using Allocator = HugePageAllocator<uint64_t, kFrom>;

uintptr_t Offset2M(const void* p) {
  return reinterpret_cast<uintptr_t>(p) & (Allocator::kHugePage - 1);
}

TEST(HugePageAllocatorTest, LargeAllocationsStartAtAHugePageBoundary) {
  Allocator allocator;
  // Sizes at, above and well above the threshold, and not multiples of 2 MiB.
  for (const size_t bytes : {kFrom, kFrom + 8, size_t{3} << 20, (size_t{5} << 20) + 40}) {
    const size_t n = bytes / sizeof(uint64_t);
    uint64_t* p = allocator.allocate(n);
    EXPECT_EQ(Offset2M(p), 0u) << bytes << " bytes";
    // Every byte asked for is writable (the trimmed tail must not cut into it).
    for (size_t i = 0; i < n; i += 512) p[i] = i;
    p[n - 1] = 7;
    EXPECT_EQ(p[n - 1], 7u);
    allocator.deallocate(p, n);
  }
}

TEST(HugePageAllocatorTest, SmallAllocationsComeFromOperatorNew) {
  Allocator allocator;
  const size_t n = (kFrom - 64) / sizeof(uint64_t);
  uint64_t* p = allocator.allocate(n);
  p[0] = 1;
  p[n - 1] = 2;
  EXPECT_EQ(p[0] + p[n - 1], 3u);
  allocator.deallocate(p, n);
}

TEST(HugePageAllocatorTest, AVectorKeepsItsContentsAcrossTheThreshold) {
  std::vector<uint64_t, Allocator> v;
  const size_t n = 3 * kFrom / sizeof(uint64_t);
  for (size_t i = 0; i < n; ++i) v.push_back(i * 3);
  EXPECT_EQ(Offset2M(v.data()), 0u);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], i * 3) << i;
  std::vector<uint64_t, Allocator> moved = std::move(v);
  EXPECT_EQ(moved.size(), n);
  moved.clear();
  moved.shrink_to_fit();
}

TEST(HugePageAllocatorTest, RebindsForAHashMap) {
  absl::flat_hash_map<uint64_t, uint64_t, absl::Hash<uint64_t>, std::equal_to<uint64_t>,
                      HugePageAllocator<std::pair<const uint64_t, uint64_t>, kFrom>>
      map;
  for (uint64_t i = 0; i < 200'000; ++i) map[i * 16] = i;  // past 1 MiB of slots
  EXPECT_EQ(map.size(), 200'000u);
  for (uint64_t i = 0; i < 200'000; i += 997) ASSERT_EQ(map.at(i * 16), i);
}

}  // namespace
}  // namespace memtrace
