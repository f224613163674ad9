// Copyright 2026 The memtrace Authors.
//
// What the drainer and the sink's writer write for every record owns its cache lines
// (transport/cache_line.h): no block the program allocates afterwards, or had allocated
// before, shares a line with that storage.

#include "transport/cache_line.h"

#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/internal/allocation_ledger.h"
#include "runtime/internal/address_table.h"
#include "sinks/jsonl_sink.h"

namespace memtrace {
namespace {

struct Lines {
  uintptr_t begin;  // first byte of the first line
  uintptr_t end;    // one past the last line
};

Lines LinesOf(const void* p, size_t bytes) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  return Lines{a & ~uintptr_t{kCacheLineSize - 1},
               (a + bytes + kCacheLineSize - 1) & ~uintptr_t{kCacheLineSize - 1}};
}

// A heap with holes and neighbours of every small size, as a program's is: blocks of
// 8-200 bytes, every third freed again.
class ProgramHeap {
 public:
  explicit ProgramHeap(uint64_t seed) : rng_(seed) {}
  ~ProgramHeap() {
    for (Block& b : blocks_) free(b.p);
  }
  void Churn(int n) {
    for (int i = 0; i < n; ++i) {
      const size_t size = 8 + rng_() % 193;
      blocks_.push_back(Block{malloc(size), size});
      if (i % 3 == 2) {
        free(blocks_[blocks_.size() - 2].p);
        blocks_.erase(blocks_.end() - 2);
      }
    }
  }
  // How many of the program's blocks share a line with `lines`.
  int Sharing(Lines lines) const {
    int n = 0;
    for (const Block& b : blocks_) {
      const auto a = reinterpret_cast<uintptr_t>(b.p);
      if (a < lines.end && a + b.size > lines.begin) ++n;
    }
    return n;
  }

 private:
  struct Block {
    void* p;
    size_t size;
  };
  std::mt19937_64 rng_;
  std::vector<Block> blocks_;
};

TEST(LineAlignedAllocatorTest, StorageStartsAndEndsOnALine) {
  EXPECT_EQ(RoundUpToCacheLines(0), 0u);
  EXPECT_EQ(RoundUpToCacheLines(1), 64u);
  EXPECT_EQ(RoundUpToCacheLines(64), 64u);
  EXPECT_EQ(RoundUpToCacheLines(65), 128u);
  for (size_t n : {1, 2, 3, 7, 100, 1000}) {
    LineAlignedVector<UsageCounters> v(n);  // 56-byte objects: never a multiple of a line
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % kCacheLineSize, 0u) << n;
  }
}

TEST(LineAlignedAllocatorTest, NoProgramBlockSharesALineWithTheStorage) {
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    ProgramHeap heap(seed);
    heap.Churn(3000);  // holes before
    LineAlignedVector<UsageCounters> one(1);
    LineAlignedVector<char> odd(seed * 7);
    heap.Churn(3000);  // neighbours after, some in the holes
    EXPECT_EQ(heap.Sharing(LinesOf(one.data(), one.capacity() * sizeof(UsageCounters))), 0)
        << "seed " << seed;
    EXPECT_EQ(heap.Sharing(LinesOf(odd.data(), odd.capacity())), 0) << "seed " << seed;
  }
}

// The ledger is made on a program thread, so its storage comes from the program's heap.
// Its per-scope counters are written for every record applied: with a plain vector, the
// one element of a program without scopes shared its lines with a neighbour three times in
// four (glibc aligns to 16 bytes).
TEST(LineAlignedAllocatorTest, TheLedgersPerRecordStorageSharesNoLineWithTheProgram) {
  static_assert(alignof(runtime_internal::AddressTable) == kCacheLineSize);
  static_assert(sizeof(runtime_internal::AddressTable) % kCacheLineSize == 0);
  static_assert(alignof(JsonlSink) == kCacheLineSize);
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    ProgramHeap heap(seed);
    heap.Churn(3000);
    AllocationLedger ledger(kDefaultSiteCapacity);
    ledger.Alloc(layers::kCpuHeap, 0x1000, 32, Ticket::Make(1, 1), 0, 0x4000);
    heap.Churn(3000);
    const auto& scopes = ledger.scopes();
    EXPECT_EQ(heap.Sharing(LinesOf(scopes.data(), scopes.capacity() * sizeof(UsageCounters))),
              0)
        << "seed " << seed;
    EXPECT_EQ(ledger.totals().live_count, 1u);
  }
}

}  // namespace
}  // namespace memtrace
