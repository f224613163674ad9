// Copyright 2026 The memtrace Authors.
//
// Faults the tracer must survive, with expected values kept by the test itself:
//   - a backing allocator that fails at random (a seeded PRNG) under several threads
//     allocating, resizing, remapping and freeing: the program sees every failure, and the
//     ledger equals what really succeeded;
//   - a drainer stalled under each overflow policy with a capture being written: the
//     allocating thread's wait ends, every loss is counted, and the capture says partial.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "analysis/capture_reader.h"
#include "runtime/malloc_allocator.h"
#include "runtime/tracer.h"
#include "sinks/jsonl_sink.h"
#include "tests/drainer_stall.h"
#include "tests/every_release_matched.h"

namespace memtrace {
namespace {

using testing::DrainerStall;

#ifdef MEMTRACE_SANITIZER
constexpr int kOpsPerThread = 4000;  // sanitizers run 5-20x slower; same shape
#else
constexpr int kOpsPerThread = 40000;
#endif
constexpr int kThreads = 4;
constexpr uint32_t kFailPercent = 5;

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// MallocAllocator that refuses kFailPercent of its allocs, resizes and remaps, chosen by a
// seeded sequence (the n-th call fails when SplitMix64(seed + n) says so), and counts what
// it answered. Free never fails: the interface has no way to say so.
class FlakyBacking final : public Allocator {
 public:
  explicit FlakyBacking(uint64_t seed) : seed_(seed) {}

  void* Alloc(size_t len, size_t alignment, uintptr_t ret) noexcept override {
    if (Fail()) {
      ++injected_alloc_failures;
      return nullptr;
    }
    void* p = heap_.Alloc(len, alignment, ret);
    if (p == nullptr) ++natural_failures;
    return p;
  }
  bool Resize(Memory m, size_t alignment, size_t new_len, uintptr_t ret) noexcept override {
    if (Fail()) {
      ++injected_resize_failures;
      return false;
    }
    const bool ok = heap_.Resize(m, alignment, new_len, ret);
    if (!ok) ++resizes_refused_in_place;
    return ok;
  }
  void* Remap(Memory m, size_t alignment, size_t new_len, uintptr_t ret) noexcept override {
    if (Fail()) {
      ++injected_remap_failures;
      return nullptr;
    }
    void* p = heap_.Remap(m, alignment, new_len, ret);
    if (p == nullptr) ++natural_failures;
    return p;
  }
  void Free(Memory m, size_t alignment, uintptr_t ret) noexcept override {
    heap_.Free(m, alignment, ret);
  }

  std::atomic<uint64_t> injected_alloc_failures{0};
  std::atomic<uint64_t> injected_resize_failures{0};
  std::atomic<uint64_t> injected_remap_failures{0};
  std::atomic<uint64_t> resizes_refused_in_place{0};  // malloc's usable size was too small
  std::atomic<uint64_t> natural_failures{0};          // malloc itself said no

 private:
  bool Fail() noexcept {
    // Relaxed: a ticket number; which thread gets which failure does not matter.
    const uint64_t n = calls_.fetch_add(1, std::memory_order_relaxed);
    return SplitMix64(seed_ + n) % 100 < kFailPercent;
  }

  const uint64_t seed_;
  std::atomic<uint64_t> calls_{0};
  MallocAllocator heap_;
};

// What the program saw succeed, counted the way the ledger is documented to count
// (usage_counters.h): a remap releases the old block and allocates the new one; an
// in-place grow allocates the difference, a shrink frees it.
struct Expected {
  std::map<uint64_t, uint64_t> live;  // address -> size
  uint64_t allocated_count = 0, allocated_bytes = 0;
  uint64_t freed_count = 0, freed_bytes = 0;
  uint64_t failed_allocs = 0, failed_resizes = 0, failed_remaps = 0;

  void Allocated(uint64_t address, uint64_t size) {
    live[address] = size;
    ++allocated_count;
    allocated_bytes += size;
  }
  void Freed(uint64_t address) {
    ++freed_count;
    freed_bytes += live.at(address);
    live.erase(address);
  }
  void Resized(uint64_t address, uint64_t to) {
    const uint64_t from = live.at(address);
    if (to >= from) {
      allocated_bytes += to - from;
    } else {
      freed_bytes += from - to;
    }
    live[address] = to;
  }
  void Merge(const Expected& o) {
    for (const auto& [a, s] : o.live) live[a] = s;
    allocated_count += o.allocated_count;
    allocated_bytes += o.allocated_bytes;
    freed_count += o.freed_count;
    freed_bytes += o.freed_bytes;
    failed_allocs += o.failed_allocs;
    failed_resizes += o.failed_resizes;
    failed_remaps += o.failed_remaps;
  }
};

uint64_t Addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

TEST(FaultInjectionTest, RandomBackingFailuresAreSeenAndTheLedgerStaysExact) {
  Config config;
  config.overflow_policy = OverflowPolicy::kWaitThenFail;
  config.overflow_wait = absl::Seconds(10);  // no record may be lost: only the backing fails
  auto tracer = Tracer::Create(config).value();
  ASSERT_TRUE(tracer->Start().ok());
  FlakyBacking backing(/*seed=*/20260807);
  TracingAllocator traced(tracer.get(), &backing, layers::kCpuHeap);

  std::vector<Expected> expected(kThreads);
  std::mutex handoff_mu;
  std::vector<std::pair<void*, size_t>> handoff;  // freed by the main thread at the end
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(7 + t);
      Expected& e = expected[t];
      std::vector<std::pair<void*, size_t>> own;
      for (int op = 0; op < kOpsPerThread; ++op) {
        const uint32_t r = static_cast<uint32_t>(rng() % 100);
        if (own.empty() || (own.size() < 256 && r < 40)) {
          const size_t size = 1 + rng() % 2000;
          void* p = traced.Alloc(size, 16, MEMTRACE_CALL_SITE());
          if (p == nullptr) {
            ++e.failed_allocs;
          } else {
            e.Allocated(Addr(p), size);
            own.emplace_back(p, size);
          }
          continue;
        }
        const size_t i = rng() % own.size();
        auto& [p, size] = own[i];
        if (r < 70) {
          e.Freed(Addr(p));
          traced.Free(AsMemory(p, size), 16, 0);
          own[i] = own.back();
          own.pop_back();
        } else if (r < 85) {
          const size_t new_size = 1 + rng() % 2000;
          if (traced.Resize(AsMemory(p, size), 16, new_size, 0)) {
            e.Resized(Addr(p), new_size);
            size = new_size;
          } else {
            ++e.failed_resizes;
          }
        } else {
          const size_t new_size = 1 + rng() % 4000;
          void* moved = traced.Remap(AsMemory(p, size), 16, new_size, 0);
          if (moved == nullptr) {
            ++e.failed_remaps;  // the block stays where it was, as it was
          } else if (moved == p) {
            e.Resized(Addr(p), new_size);  // in place: the same block at a new size
            size = new_size;
          } else {
            e.Freed(Addr(p));
            e.Allocated(Addr(moved), new_size);
            p = moved;
            size = new_size;
          }
        }
      }
      std::lock_guard<std::mutex> lock(handoff_mu);
      handoff.insert(handoff.end(), own.begin(), own.end());
    });
  }
  for (auto& th : threads) th.join();

  Expected want;
  for (const Expected& e : expected) want.Merge(e);
  // Blocks other threads allocated, half of them freed here.
  std::sort(handoff.begin(), handoff.end());
  for (size_t i = 0; i < handoff.size(); i += 2) {
    want.Freed(Addr(handoff[i].first));
    traced.Free(AsMemory(handoff[i].first, handoff[i].second), 16, 0);
  }

  // The program saw exactly the failures the backing produced.
  EXPECT_EQ(backing.natural_failures.load(), 0u);
  EXPECT_EQ(want.failed_allocs, backing.injected_alloc_failures.load());
  EXPECT_EQ(want.failed_resizes, backing.injected_resize_failures.load() +
                                     backing.resizes_refused_in_place.load());
  EXPECT_EQ(want.failed_remaps, backing.injected_remap_failures.load());
  // The workload has the shape the test claims: every kind of failure happened.
  EXPECT_GT(backing.injected_alloc_failures.load(), 0u);
  EXPECT_GT(backing.injected_resize_failures.load(), 0u);
  EXPECT_GT(backing.injected_remap_failures.load(), 0u);

  const Snapshot snap = tracer->TakeSnapshot();
  testing::ExpectEveryReleaseMatched(snap.integrity);
  EXPECT_EQ(snap.integrity.records_failed, 0u) << "a backing failure is not a record failure";
  EXPECT_FALSE(tracer->failure_flag());
  EXPECT_EQ(snap.totals.live_count, want.live.size());
  uint64_t live_bytes = 0;
  for (const auto& [a, s] : want.live) live_bytes += s;
  EXPECT_EQ(snap.totals.live_bytes, live_bytes);
  EXPECT_EQ(snap.totals.allocated_count, want.allocated_count);
  EXPECT_EQ(snap.totals.allocated_bytes, want.allocated_bytes);
  EXPECT_EQ(snap.totals.freed_count, want.freed_count);
  EXPECT_EQ(snap.totals.freed_bytes, want.freed_bytes);
  tracer->recorder().Inspect([&](const AllocationLedger& ledger, const CaptureIntegrity&) {
    std::vector<AllocationRecord> live = ledger.LiveBlocks();
    std::sort(live.begin(), live.end(),
              [](const auto& a, const auto& b) { return a.address < b.address; });
    ASSERT_EQ(live.size(), want.live.size());
    size_t i = 0;
    for (const auto& [address, size] : want.live) {
      ASSERT_EQ(live[i].address, address);
      ASSERT_EQ(live[i].size, size) << "at " << address;
      ++i;
    }
  });

  for (size_t i = 1; i < handoff.size(); i += 2) {
    traced.Free(AsMemory(handoff[i].first, handoff[i].second), 16, 0);
  }
  const Snapshot end = tracer->TakeSnapshot();
  EXPECT_EQ(end.totals.live_count, 0u);
  EXPECT_EQ(end.totals.live_bytes, 0u);
  ASSERT_TRUE(tracer->Stop().ok());
}

std::string TempPath(const std::string& name) {
  const char* dir = getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

// What a capture file holds: memory lines by type, and the trailer's verdict.
struct CaptureCounts {
  uint64_t allocs = 0, frees = 0;
  bool has_trailer = false, complete = false;
};

CaptureCounts ReadCounts(const std::string& path) {
  CaptureCounts c;
  const absl::Status s = ReadCapture(path, [&](const CaptureRecord& r) {
    if (r.type == LineType::kAlloc) ++c.allocs;
    if (r.type == LineType::kFree) ++c.frees;
    if (r.type == LineType::kTrailer) {
      c.has_trailer = true;
      c.complete = r.complete;
    }
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  return c;
}

// A drainer stalled for longer than any wait, under `policy`, while a capture is written.
// One thread allocates, then frees, far more than its 16-slot ring holds. The stall lasts
// until that thread is done, so each operation past the 16th must come back on its own (a
// hang guard of a minute ends the stall if it does not). Then: allocations that answered
// null are records_failed, frees the capture lacks are events_dropped, and the trailer
// says the capture is partial.
void StallUnderPolicy(OverflowPolicy policy, const std::string& capture) {
  constexpr uint32_t kRingLog2 = 4;  // 16 records
  constexpr int kAllocs = 40;
  Config config;
  config.ring_capacity_log2 = kRingLog2;
  config.overflow_policy = policy;
  config.overflow_wait = absl::Milliseconds(5);
  auto sink = JsonlSink::Open(TempPath(capture)).value();
  auto tracer = Tracer::Create(config).value();
  ASSERT_TRUE(tracer->recorder().SetObserver(sink.get()).ok());
  ASSERT_TRUE(tracer->Start().ok());
  MallocAllocator heap;
  TracingAllocator traced(tracer.get(), &heap, layers::kCpuHeap);

  std::vector<void*> kept;
  int null_allocs = 0;
  int frees = 0;
  std::atomic<bool> done{false};
  {
    DrainerStall stall(tracer->recorder());
    std::thread producer([&] {
      for (int i = 0; i < kAllocs; ++i) {
        void* p = traced.Alloc(64, 16, 0);
        if (p == nullptr) {
          ++null_allocs;
        } else {
          kept.push_back(p);
        }
      }
      for (void* p : kept) {
        traced.Free(AsMemory(p, 64), 16, 0);
        ++frees;
      }
      done = true;
    });
    // Hang guard only (no timing is asserted): a wait without a bound would stop here.
    const auto guard = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (!done && std::chrono::steady_clock::now() < guard) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_TRUE(done.load()) << "the allocating thread's wait did not end while stalled";
    stall.Release();
    producer.join();
  }
  // The ring held 16 records: 16 allocations went in, the rest failed, and every free
  // (of those 16 blocks) found the ring still full.
  EXPECT_EQ(kept.size(), 16u);
  EXPECT_EQ(null_allocs, kAllocs - 16);
  EXPECT_TRUE(tracer->failure_flag()) << "lost frees make the capture partial";
  ASSERT_TRUE(tracer->Stop().ok());
  const Snapshot snap = tracer->TakeSnapshot();
  const CaptureIntegrity& in = snap.integrity;
  EXPECT_EQ(in.records_failed, static_cast<uint64_t>(null_allocs)) << in.Counters();
  EXPECT_FALSE(in.complete());
  EXPECT_NE(in.Verdict().find("PARTIAL"), std::string::npos);
  if (policy == OverflowPolicy::kWaitThenFail) {
    // Every record that failed waited first, and only those.
    EXPECT_EQ(in.overflow_waits, in.records_failed + in.events_dropped) << in.Counters();
  } else {
    EXPECT_EQ(in.overflow_waits, 0u) << in.Counters();
  }
  ASSERT_TRUE(sink->Finish(snap).ok()) << sink->status();
  EXPECT_EQ(sink->stats().events_lost, 0u) << "the sink itself lost nothing";

  const CaptureCounts c = ReadCounts(TempPath(capture));
  EXPECT_EQ(c.allocs, kept.size()) << "every allocation the program holds is in the capture";
  // Every free the program made is either in the capture or counted as dropped.
  EXPECT_EQ(c.frees + in.events_dropped, static_cast<uint64_t>(frees)) << in.Counters();
  EXPECT_EQ(in.events_dropped, 16u);
  ASSERT_TRUE(c.has_trailer);
  EXPECT_FALSE(c.complete) << "the trailer must say partial";
  // The frees really happened: the memory went back even though the record was lost.
  EXPECT_EQ(snap.totals.live_count, 16u) << "the ledger never saw the dropped frees";
}

TEST(FaultInjectionTest, StalledDrainerUnderFailPolicyCountsEveryLossAndMarksPartial) {
  StallUnderPolicy(OverflowPolicy::kFail, "stall_fail.jsonl");
}

TEST(FaultInjectionTest, StalledDrainerUnderWaitPolicyEndsEachWaitCountsLossesPartial) {
  StallUnderPolicy(OverflowPolicy::kWaitThenFail, "stall_wait.jsonl");
}

}  // namespace
}  // namespace memtrace
