// Copyright 2026 The memtrace Authors.
//
// Ground-truth stress tests for the recording engine.
//
// Expected values come from SerializingHeap::Replay(): the real operations in the real
// order, replayed through a plain map. Nothing here uses memtrace's ledger to compute an
// expected value.

#include <pthread.h>

#include <algorithm>
#include <cstddef>
#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/internal/thread_state.h"
#include "runtime/internal/recorder.h"
#include "runtime/scope_table.h"
#include "tests/every_release_matched.h"
#include "tests/serializing_heap.h"

namespace memtrace {
namespace {

using testing::ExpectEveryReleaseMatched;
using testing::ReplayCounters;
using testing::ReplayResult;
using testing::SerializingHeap;

// A positive integer from the environment variable `name` (at most `max`), else
// `fallback`. An unusable value fails the test that reads it, saying why.
int FromEnvironment(const char* name, int fallback, int max) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 1 || value > max) {
    ADD_FAILURE() << name << "='" << text << "' is not a whole number from 1 to " << max
                  << "; unset it for the default, " << fallback;
    return fallback;
  }
  return static_cast<int>(value);
}

// The default shape runs everywhere the default test run does (2 cores). On a machine with
// more cores, MEMTRACE_STRESS_THREADS raises the thread counts (workers, and threads alive
// at once in the churn test) and MEMTRACE_STRESS_OPS the operations of each worker
// (tools/stress_bundle).
#ifdef MEMTRACE_SANITIZER
constexpr int kDefaultOpsPerThread = 150'000;  // sanitizers run 5-20x slower; same shape
#else
constexpr int kDefaultOpsPerThread = 1'000'000;
#endif
int StressThreads() { return FromEnvironment("MEMTRACE_STRESS_THREADS", 8, 256); }
int StressOpsPerThread() {
  return FromEnvironment("MEMTRACE_STRESS_OPS", kDefaultOpsPerThread, 100'000'000);
}
constexpr LayerId kLayer = layers::kCpuHeap;

// For `workers` threads recording at once.
Config StressConfig(int workers, FenceMode fence = FenceMode::kMembarrier,
                    uint32_t slice_records = Config{}.drain_slice_records,
                    uint32_t appliers = 1) {
  Config config;
  config.fence = fence;
  config.drain_slice_records = slice_records;
  config.tracer_threads = appliers;
  config.ring_capacity_log2 = 12;
  // Above the largest live set here (~300k blocks in the phased test with 8 workers), as
  // config.h advises; twice as large for each doubling of the workers.
  config.ticket_table_log2 = 20;
  for (int w = workers; w > 8; w = (w + 1) / 2) ++config.ticket_table_log2;
  config.overflow_policy = OverflowPolicy::kWaitThenFail;
  config.overflow_wait = absl::Seconds(10);
  return config;
}

std::vector<uint32_t> MakeScopes(const char* prefix, int n) {
  ScopeTable& table = ScopeTable::Global();
  const uint32_t root = table.Child(ScopeTable::kRootPath, table.InternName(prefix));
  std::vector<uint32_t> paths;
  for (int i = 0; i < n; ++i) {
    paths.push_back(table.Child(root, table.InternName("phase" + std::to_string(i))));
  }
  return paths;
}

void SetScope(uint32_t path) { runtime_internal::Tls().scope = path; }

void ExpectCountersEqual(const UsageCounters& got, const ReplayCounters& want,
                         bool check_high_water, const std::string& what) {
  EXPECT_EQ(got.live_bytes, want.live_bytes) << what;
  EXPECT_EQ(got.live_count, want.live_count) << what;
  EXPECT_EQ(got.allocated_bytes, want.allocated_bytes) << what;
  EXPECT_EQ(got.allocated_count, want.allocated_count) << what;
  EXPECT_EQ(got.freed_bytes, want.freed_bytes) << what;
  EXPECT_EQ(got.freed_count, want.freed_count) << what;
  if (check_high_water) {
    EXPECT_EQ(got.high_water_bytes, want.high_water_bytes) << what;
  }
}

void ExpectLedgerMatchesReplay(Recorder& recorder, const ReplayResult& want,
                               bool check_high_water) {
  recorder.Inspect([&](const AllocationLedger& ledger, const CaptureIntegrity& integrity) {
    ExpectEveryReleaseMatched(integrity);

    std::vector<AllocationRecord> live = ledger.LiveBlocks();
    std::sort(live.begin(), live.end(),
              [](const auto& a, const auto& b) { return a.address < b.address; });
    ASSERT_EQ(live.size(), want.live.size());
    size_t i = 0;
    for (const auto& [address, block] : want.live) {
      const AllocationRecord& got = live[i++];
      ASSERT_EQ(got.address, address);
      ASSERT_EQ(got.size, block.size) << "at " << address;
      ASSERT_EQ(got.scope, block.scope) << "at " << address;
      ASSERT_EQ(got.site, block.site) << "at " << address;
      ASSERT_EQ(got.layer, kLayer);
    }
    ExpectCountersEqual(ledger.totals(), want.totals, check_high_water, "totals");
    for (const auto& [scope, counters] : want.scopes) {
      ExpectCountersEqual(ledger.scope_usage(scope), counters, check_high_water,
                          ScopeTable::Global().PathString(scope));
    }
  });
}

struct Inbox {
  std::mutex mu;
  std::vector<uint64_t> blocks;
};

struct DrainerShape {
  FenceMode fence;
  uint32_t slice_records;
  const char* name;
  uint32_t appliers = 1;  // Config::tracer_threads
};

// The watermark's two fences (transport/epoch_clock.h): membarrier() where the kernel
// has it, and seq_cst fences on both sides, which is also what runs where it does not.
// The tests below that depend on the watermark run under each, and once more with epochs
// applied in slices of 64 records (8 a ring; drainer.h), so that an epoch's records are
// applied, handed on and released a few at a time, between its releases' dependencies.
// Then with the records applied by several threads (Config::tracer_threads,
// sharded_apply.h), more of them than this machine may have cores, in whole epochs and in
// slices.
class GroundTruthFenceTest : public ::testing::TestWithParam<DrainerShape> {
 protected:
  std::unique_ptr<Recorder> MakeRecorder(int workers) {
    auto recorder =
        Recorder::Create(StressConfig(workers, GetParam().fence, GetParam().slice_records,
                                      GetParam().appliers))
            .value();
    // kSeqCst is always what it says; kMembarrier falls back to seq_cst fences where the
    // kernel has no membarrier(), so only the first can be checked everywhere.
    if (GetParam().fence == FenceMode::kSeqCst) {
      EXPECT_FALSE(recorder->Integrity().uses_membarrier);
    }
    return recorder;
  }
  // The sliced shape really sliced (and the default one, with rings of 4,096 records and
  // 8,192 a ring in a slice, never does).
  void ExpectSlicesAsConfigured(const Recorder& recorder) {
    if (GetParam().slice_records < Config{}.drain_slice_records) {
      EXPECT_GT(recorder.sliced_epochs(), 0u);
    } else {
      EXPECT_EQ(recorder.sliced_epochs(), 0u);
    }
  }
};

INSTANTIATE_TEST_SUITE_P(
    Fences, GroundTruthFenceTest,
    ::testing::Values(DrainerShape{FenceMode::kMembarrier, 65536, "Membarrier"},
                      DrainerShape{FenceMode::kSeqCst, 65536, "SeqCst"},
                      DrainerShape{FenceMode::kMembarrier, 64, "MembarrierSlices"},
                      DrainerShape{FenceMode::kMembarrier, 65536, "ThreeAppliers", 3},
                      DrainerShape{FenceMode::kMembarrier, 64, "TwoAppliersSlices", 2}),
    [](const ::testing::TestParamInfo<DrainerShape>& info) { return info.param.name; });

// 8 threads (MEMTRACE_STRESS_THREADS), 1M operations each (MEMTRACE_STRESS_OPS):
// allocations of 16-271 bytes, frees (about half of them on a thread other than the
// allocating one), in-place resizes and moving remaps, under four scopes per thread. Addresses are reused LIFO across threads.
TEST_P(GroundTruthFenceTest, FinalStateEqualsSequentialReplay) {
  const int workers = StressThreads();
  const int ops_per_worker = StressOpsPerThread();
  auto recorder = MakeRecorder(workers);
  ASSERT_TRUE(recorder->Start().ok());
  // At most one heap operation per worker operation: the log never grows inside a remap's
  // claim (SerializingHeap's constructor).
  SerializingHeap heap(static_cast<size_t>(workers) * ops_per_worker);
  const std::vector<uint32_t> scopes = MakeScopes("stress", 4);
  std::vector<Inbox> inboxes(workers);
  std::atomic<uint64_t> local_frees{0}, remote_frees{0}, resizes{0}, remaps{0};

  auto worker = [&](int t) {
    std::mt19937_64 rng(1000 + t);
    std::vector<uint64_t> own;
    Inbox& mine = inboxes[t];
    Inbox& next = inboxes[(t + 1) % workers];
    uint64_t local = 0, remote = 0, rs = 0, rm = 0;
    auto release = [&](uint64_t address) {
      ASSERT_NE(recorder->RecordFree(kLayer, address), RecordResult::kFailed);
      heap.Free(address);
    };
    for (int op = 0; op < ops_per_worker; ++op) {
      SetScope(scopes[(op / 1024) % scopes.size()]);
      const uint32_t r = static_cast<uint32_t>(rng() % 100);
      uint64_t received = 0;
      if (r < 35) {
        std::lock_guard<std::mutex> lock(mine.mu);
        if (!mine.blocks.empty()) {
          received = mine.blocks.back();
          mine.blocks.pop_back();
        }
      }
      if (received != 0) {
        release(received);
        ++remote;
        continue;
      }
      if (!own.empty() && (own.size() >= 64 || r < 65)) {
        const size_t i = rng() % own.size();
        const uint64_t address = own[i];
        const uint32_t what = static_cast<uint32_t>(rng() % 10);
        if (what < 4) {  // hand over; the next thread frees it
          own[i] = own.back();
          own.pop_back();
          std::lock_guard<std::mutex> lock(next.mu);
          next.blocks.push_back(address);
        } else if (what < 8) {
          own[i] = own.back();
          own.pop_back();
          release(address);
          ++local;
        } else if (what == 8) {
          const uint64_t new_size = 1 + rng() % 300;
          if (heap.Resize(address, new_size)) {
            ASSERT_NE(recorder->RecordResize(kLayer, address, new_size),
                      RecordResult::kFailed);
            ++rs;
          }
        } else {
          const uint64_t new_size = 16 + rng() % 512;
          const Recorder::RemapClaim claim = recorder->BeginRemap(kLayer, address);
          ASSERT_EQ(claim.result(), RecordResult::kRecorded);
          const uint64_t moved = heap.Remap(address, new_size);
          recorder->CommitRemap(claim, moved, new_size, /*site=*/0);
          own[i] = moved;
          ++rm;
        }
        continue;
      }
      const uint64_t size = 16 + rng() % 256;
      const uint64_t site = 0x400000 + (rng() % 32) * 0x10;
      const uint64_t address = heap.Alloc(size, runtime_internal::Tls().scope, site);
      ASSERT_EQ(recorder->RecordAlloc(kLayer, address, size, site), RecordResult::kRecorded);
      own.push_back(address);
    }
    SetScope(ScopeTable::kRootPath);
    local_frees += local;
    remote_frees += remote;
    resizes += rs;
    remaps += rm;
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < workers; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();
  ASSERT_TRUE(recorder->Flush().ok());

  // The workload has the shape the test claims.
  const uint64_t frees = local_frees + remote_frees;
  // Hand-overs are not heap operations; everything else is.
  EXPECT_GE(heap.operations(), static_cast<size_t>(workers) * ops_per_worker * 3 / 4);
  EXPECT_GE(remote_frees * 100, frees * 40) << "cross-thread frees should be ~half";
  EXPECT_GT(resizes.load(), 0u);
  EXPECT_GT(remaps.load(), 0u);

  ExpectLedgerMatchesReplay(*recorder, heap.Replay(), /*check_high_water=*/false);
  ASSERT_TRUE(recorder->Stop().ok());
  ExpectSlicesAsConfigured(*recorder);
}

// High-water marks in phases separated by barriers and a Flush(): allocation phases and
// release phases (releases mostly on other threads) alternate. Each phase only grows or
// only shrinks, so the real high-water mark of every scope is reached at a phase boundary
// and must be matched exactly.
TEST_P(GroundTruthFenceTest, HighWaterIsExactAcrossBarrierSeparatedPhases) {
  const int workers = StressThreads();
  auto recorder = MakeRecorder(workers);
  ASSERT_TRUE(recorder->Start().ok());
  SerializingHeap heap;
  const std::vector<uint32_t> scopes = MakeScopes("phased", workers);
  constexpr int kRounds = 6;
#ifdef MEMTRACE_SANITIZER
  constexpr int kPerPhase = 2000;
#else
  constexpr int kPerPhase = 20000;
#endif
  std::vector<std::vector<uint64_t>> handed(workers);  // written in alloc phases only
  std::barrier sync(workers + 1);

  auto worker = [&](int t) {
    std::mt19937_64 rng(77 + t);
    SetScope(scopes[t]);
    for (int round = 0; round < kRounds; ++round) {
      // Allocation phase: amounts vary by round so the peak is not always the last round.
      const int n = kPerPhase * (1 + (round * 7 + t) % 4) / 2;
      // EXPECT, not ASSERT, inside the phases: a worker that returned early would leave
      // the others waiting at the barrier for ever, a hang instead of a failure.
      for (int i = 0; i < n; ++i) {
        const uint64_t size = 16 + rng() % 256;
        const uint64_t address = heap.Alloc(size, scopes[t], 0x1000 + t);
        EXPECT_EQ(recorder->RecordAlloc(kLayer, address, size, 0x1000 + t),
                  RecordResult::kRecorded);
        handed[t].push_back(address);
      }
      sync.arrive_and_wait();  // main flushes
      sync.arrive_and_wait();
      // Release phase: free most of the previous thread's blocks.
      auto& victims = handed[(t + workers - 1) % workers];
      const size_t keep = victims.size() / 5;
      for (size_t i = keep; i < victims.size(); ++i) {
        EXPECT_EQ(recorder->RecordFree(kLayer, victims[i]), RecordResult::kRecorded);
        heap.Free(victims[i]);
      }
      sync.arrive_and_wait();
      victims.resize(keep);
      sync.arrive_and_wait();  // main flushes
      sync.arrive_and_wait();
    }
    SetScope(ScopeTable::kRootPath);
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < workers; ++t) threads.emplace_back(worker, t);
  for (int round = 0; round < kRounds; ++round) {
    sync.arrive_and_wait();
    EXPECT_TRUE(recorder->Flush().ok());
    sync.arrive_and_wait();
    sync.arrive_and_wait();
    sync.arrive_and_wait();
    EXPECT_TRUE(recorder->Flush().ok());
    sync.arrive_and_wait();
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(recorder->Flush().ok());
  ExpectLedgerMatchesReplay(*recorder, heap.Replay(), /*check_high_water=*/true);
  ExpectSlicesAsConfigured(*recorder);
}

// 10,000 short-lived threads, each allocating, freeing some of its own blocks and some
// blocks other threads left behind, then exiting. Rings are reused: their number stays
// bounded by the threads alive at once, and the counts stay exact.
// The churn tests' threads: twenty blocks of 16-115 bytes from a seeded generator,
// allocated and recorded at one site; then the last `n` of `blocks` recorded free and freed.
constexpr uint64_t kChurnSite = 0x5000;
std::vector<uint64_t> AllocateTwenty(Recorder& recorder, SerializingHeap& heap, int seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> blocks;
  for (int i = 0; i < 20; ++i) {
    const uint64_t size = 16 + rng() % 100;
    const uint64_t a = heap.Alloc(size, 0, kChurnSite);
    EXPECT_EQ(recorder.RecordAlloc(kLayer, a, size, kChurnSite), RecordResult::kRecorded);
    blocks.push_back(a);
  }
  return blocks;
}
void FreeLast(Recorder& recorder, SerializingHeap& heap, int n, std::vector<uint64_t>* blocks) {
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(recorder.RecordFree(kLayer, blocks->back()), RecordResult::kRecorded);
    heap.Free(blocks->back());
    blocks->pop_back();
  }
}

TEST(GroundTruthStressTest, ThreadChurnKeepsRingsBoundedAndCountsExact) {
  const int concurrent = StressThreads();
  auto recorder = Recorder::Create(StressConfig(concurrent)).value();
  ASSERT_TRUE(recorder->Start().ok());
  SerializingHeap heap;
#ifdef MEMTRACE_SANITIZER
  constexpr int kTotalThreads = 2000;
#else
  constexpr int kTotalThreads = 10000;
#endif
  Inbox leftovers;
  for (int wave = 0; wave < kTotalThreads / concurrent; ++wave) {
    std::vector<std::thread> threads;
    for (int k = 0; k < concurrent; ++k) {
      threads.emplace_back([&, seed = wave * concurrent + k] {
        std::vector<uint64_t> mine = AllocateTwenty(*recorder, heap, seed);
        FreeLast(*recorder, heap, 10, &mine);  // half of our own
        std::vector<uint64_t> others;
        {
          std::lock_guard<std::mutex> lock(leftovers.mu);
          for (int i = 0; i < 6 && !leftovers.blocks.empty(); ++i) {
            others.push_back(leftovers.blocks.back());
            leftovers.blocks.pop_back();
          }
          for (uint64_t a : mine) leftovers.blocks.push_back(a);
        }
        for (uint64_t a : others) {  // blocks another (exited) thread allocated
          ASSERT_EQ(recorder->RecordFree(kLayer, a), RecordResult::kRecorded);
          heap.Free(a);
        }
      });
    }
    for (auto& th : threads) th.join();
  }
  ASSERT_TRUE(recorder->Flush().ok());
  ExpectLedgerMatchesReplay(*recorder, heap.Replay(), /*check_high_water=*/false);
  const CaptureIntegrity integrity = recorder->Integrity();
  // Rings exist for the threads alive at once plus those that exited during one drainer
  // lag, which depends on how loaded the machine is (260 were seen on a busy 2-core
  // machine, ~120 on an idle one). Without reuse there would be one per thread (10,000;
  // 2,000 under sanitizers); a tenth of that (at least 500) still proves reuse without
  // depending on the machine's load.
  const uint64_t ring_bound = std::max<uint64_t>(kTotalThreads / 10, 500);
  EXPECT_LE(integrity.rings, ring_bound) << "rings were not reused";
  // memtrace's own memory follows: the rings, the ticket table, and a ledger bounded by
  // the live blocks (a few thousand here).
  const Config config = StressConfig(concurrent);
  const uint64_t ring_bytes = (uint64_t{1} << config.ring_capacity_log2) * sizeof(Event);
  const uint64_t ticket_bytes = (uint64_t{1} << config.ticket_table_log2) * 16;
  EXPECT_LE(recorder->memory_bytes(), ring_bound * ring_bytes + ticket_bytes + (16u << 20));
}

// The same churn with a Flush() after each wave: every thread of a wave has exited and its
// records are applied before the next wave starts, so each wave finds its predecessors'
// rings free, and the recorder never holds more rings than threads alive at once.
// memtrace's memory is then the rings, the ticket table and a ledger of the live blocks.
TEST(GroundTruthStressTest, RingsOfExitedThreadsAreReusedByTheNextThreads) {
  const int concurrent = StressThreads();
  const Config config = StressConfig(concurrent);
  auto recorder = Recorder::Create(config).value();
  ASSERT_TRUE(recorder->Start().ok());
  SerializingHeap heap;
  constexpr int kWaves = 50;
  std::vector<uint64_t> kept;  // each thread leaves 5 blocks live
  std::mutex kept_mu;
  for (int wave = 0; wave < kWaves; ++wave) {
    std::vector<std::thread> threads;
    for (int k = 0; k < concurrent; ++k) {
      threads.emplace_back([&, seed = wave * concurrent + k] {
        std::vector<uint64_t> mine = AllocateTwenty(*recorder, heap, seed);
        FreeLast(*recorder, heap, 15, &mine);
        std::lock_guard<std::mutex> lock(kept_mu);
        kept.insert(kept.end(), mine.begin(), mine.end());
      });
    }
    for (auto& th : threads) th.join();
    ASSERT_TRUE(recorder->Flush().ok());
  }
  ExpectLedgerMatchesReplay(*recorder, heap.Replay(), /*check_high_water=*/false);
  const CaptureIntegrity integrity = recorder->Integrity();
  EXPECT_LE(integrity.rings, static_cast<uint64_t>(concurrent)) << "rings were not reused";
  // A ring maps its records, a stamp for every 32 of them and its header: an eighth more
  // is plenty. The ledger holds its shards' fixed tables and 2,000 live blocks.
  const MemtraceMemory m = recorder->memory();
  const uint64_t ring_bytes = (uint64_t{1} << config.ring_capacity_log2) * sizeof(Event);
  EXPECT_GE(m.rings, integrity.rings * ring_bytes);
  EXPECT_LE(m.rings, integrity.rings * (ring_bytes + ring_bytes / 8));
  EXPECT_EQ(m.tickets, (uint64_t{1} << config.ticket_table_log2) * 16);
  EXPECT_LE(m.ledger + m.sites, uint64_t{1} << 20);
  EXPECT_EQ(recorder->TakeSnapshot().totals.live_count, kept.size());
}

// Threads that free their blocks after their exit hook (in a pthread key destructor of the
// program's, which runs after memtrace's), many at once and wave after wave: those frees
// go into one more ring per thread, which the drainer retires once the thread is gone
// (RingRegistry::Orphan()), and the counts stay a sequential replay's. Before, each such
// free took a ring of its own.
struct LateFreer {
  Recorder* recorder;
  SerializingHeap* heap;
  std::vector<uint64_t> blocks;
};
void FreeAtKeyDestruction(void* arg) {
  auto* late = static_cast<LateFreer*>(arg);
  FreeLast(*late->recorder, *late->heap, static_cast<int>(late->blocks.size()), &late->blocks);
}

TEST(GroundTruthStressTest, FreesAfterTheExitHookKeepOneRingPerThreadAndStayExact) {
  const int concurrent = StressThreads();
  auto recorder = Recorder::Create(StressConfig(concurrent)).value();
  ASSERT_TRUE(recorder->Start().ok());
  SerializingHeap heap;
  // memtrace's exit key exists once a thread has recorded; ours, made after, runs after it.
  std::thread([&] {
    std::vector<uint64_t> first = AllocateTwenty(*recorder, heap, 1 << 20);
    FreeLast(*recorder, heap, 20, &first);
  }).join();
  pthread_key_t key;
  ASSERT_EQ(pthread_key_create(&key, FreeAtKeyDestruction), 0);
  constexpr int kWaves = 20;
  std::vector<std::unique_ptr<LateFreer>> late;
  for (int wave = 0; wave < kWaves; ++wave) {
    std::vector<std::thread> threads;
    for (int k = 0; k < concurrent; ++k) {
      late.push_back(std::make_unique<LateFreer>(LateFreer{recorder.get(), &heap, {}}));
      threads.emplace_back([&, seed = wave * concurrent + k, mine = late.back().get()] {
        mine->blocks = AllocateTwenty(*recorder, heap, seed);
        FreeLast(*recorder, heap, 5, &mine->blocks);
        pthread_setspecific(key, mine);  // the other 15: freed after the exit hook
      });
    }
    for (auto& th : threads) th.join();
    for (int round = 0; round < 3; ++round) ASSERT_TRUE(recorder->Flush().ok());
  }
  pthread_key_delete(key);
  ExpectLedgerMatchesReplay(*recorder, heap.Replay(), /*check_high_water=*/false);
  EXPECT_EQ(recorder->TakeSnapshot().totals.live_count, 0u);
  // Each thread of a wave: its ring and one for what it freed late; reused by the next
  // wave (the first thread's two as well). Before: 15 more rings per thread.
  const CaptureIntegrity integrity = recorder->Integrity();
  EXPECT_LE(integrity.rings, static_cast<uint64_t>(2 * concurrent + 2)) << integrity.Counters();
}

}  // namespace
}  // namespace memtrace
