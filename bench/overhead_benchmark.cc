// Copyright 2026 The memtrace Authors.
//
// overhead_benchmark: what tracing costs an allocating thread, and what the drainer can
// absorb. Every traced figure sits beside its untraced baseline in the same binary, so
// results are read as ratios from one run (bench/README.md).
//
//   BM_MallocFree_Untraced / BM_MallocFree_Traced / BM_MallocFree_TracedUnpaced
//       The churn workload: pick a random slot in a 64-slot window, free what is there,
//       malloc 16-271 bytes into it. The counter thread_ns_per_pair is the cost of one
//       malloc+free pair on one thread (averaged over threads). The traced variants record both through the
//       Recorder's hot path, in the order TracingAllocator uses (record a free before
//       releasing, an allocation after obtaining it). Traced lets the drainer catch up
//       between timed bursts; TracedUnpaced never does, so it runs at the drainer's
//       speed once rings fill. ->Threads(1) and ->Threads(2).
//   BM_MallocFree_TracedSeqCst
//       BM_MallocFree_Traced with Config::fence = FenceMode::kSeqCst: what a fence per
//       record costs the allocating thread, against the membarrier() default.
//   BM_DrainerThroughput/pairs/live
//       Events per second the drainer applies into the ledger (alloc/free pairs with
//       address reuse, one producer), timed from Flush() alone, with `live` other blocks
//       live throughout (1M: tables of tens of megabytes, a cache miss per lookup).
//   BM_DrainerRings/rings/observer
//       The same rate with 1-64 rings, each filled by its own thread before the timed
//       Flush(), with and without an observer (bench/README.md, "Scaling to 16 cores").
//   BM_LedgerBytesPerLiveAllocation
//       Memory the ledger holds per live allocation, at several live-set sizes.
//   BM_SustainedRate
//       Threads allocating at a paced total rate (5M allocations/s by default) for a
//       fixed time; reports events dropped and records failed (target: zero). With
//       MEMTRACE_BENCH_MAX_THREADS above 2, also that many threads at 5M to 40M/s.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "bench/churn.h"
#include "bench/timed_churn.h"
#include "runtime/event_observer.h"
#include "runtime/internal/recorder.h"

namespace memtrace {
namespace {

using bench::kChurnWindow;
using bench::XorShift;

uint64_t Addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

// One recorder per fence mode (Config::fence), shared by every benchmark thread, started
// once, when a benchmark first asks for it.
Recorder& SharedRecorder(FenceMode fence) {
  auto make = [](FenceMode mode) {
    Config config;
    config.fence = mode;
    Recorder* r = Recorder::Create(config).value().release();
    r->Start().IgnoreError();
    return r;
  };
  if (fence == FenceMode::kSeqCst) {
    static Recorder* seq_cst = make(FenceMode::kSeqCst);
    return *seq_cst;
  }
  static Recorder* membarrier = make(FenceMode::kMembarrier);
  return *membarrier;
}

// The churn loop in timed bursts (timed_churn.h). Between bursts the traced variant waits
// for the drainer (Flush), so the figure is the cost on the allocating thread while the
// drainer keeps up, which it does for any program allocating below the drainer's
// throughput (BM_DrainerThroughput, BM_SustainedRate). BM_MallocFree_TracedUnpaced shows
// what happens above it.
template <bool kTraced>
void Churn(benchmark::State& state, bool flush_between_bursts,
           FenceMode fence = FenceMode::kMembarrier) {
  bench::TimedChurn<kTraced>(state, kTraced ? &SharedRecorder(fence) : nullptr,
                             flush_between_bursts);
}

void BM_MallocFree_Untraced(benchmark::State& state) { Churn<false>(state, false); }
void BM_MallocFree_Traced(benchmark::State& state) { Churn<true>(state, true); }
void BM_MallocFree_TracedUnpaced(benchmark::State& state) { Churn<true>(state, false); }
// The same as BM_MallocFree_Traced with Config::fence = kSeqCst: a fence per record on the
// allocating thread instead of the drainer's membarrier() (which interrupts it).
void BM_MallocFree_TracedSeqCst(benchmark::State& state) {
  Churn<true>(state, true, FenceMode::kSeqCst);
}

// Registered in main(): ->Threads(1) and ->Threads(2), and up to MEMTRACE_BENCH_MAX_THREADS
// (powers of two) when that is set, for the scaling table on larger machines.
void RegisterChurn(int max_threads) {
  struct Variant {
    const char* name;
    void (*fn)(benchmark::State&);
  };
  const Variant variants[] = {{"BM_MallocFree_Untraced", BM_MallocFree_Untraced},
                              {"BM_MallocFree_Traced", BM_MallocFree_Traced},
                              {"BM_MallocFree_TracedUnpaced", BM_MallocFree_TracedUnpaced},
                              {"BM_MallocFree_TracedSeqCst", BM_MallocFree_TracedSeqCst}};
  for (const Variant& v : variants) {
    auto* b = benchmark::RegisterBenchmark(v.name, v.fn)->UseManualTime();
    for (int t = 1; t <= max_threads; t *= 2) b->Threads(t);
  }
}

// Times the drainer alone: each iteration flushes, lets `fill` record (untimed), and times
// the Flush() that applies what it recorded. Reports the records applied per second.
template <typename Fill>
void TimeFlushes(benchmark::State& state, Recorder& recorder, Fill fill) {
  uint64_t applied = 0;
  for (auto _ : state) {
    state.PauseTiming();
    recorder.Flush().IgnoreError();
    const uint64_t before = recorder.Integrity().events_applied;
    fill();
    state.ResumeTiming();
    recorder.Flush().IgnoreError();
    state.PauseTiming();
    applied += recorder.Integrity().events_applied - before;
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(applied));
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(applied), benchmark::Counter::kIsRate);
}

void BM_DrainerThroughput(benchmark::State& state) {
  Config config;
  config.ring_capacity_log2 = 22;  // 4M records: one batch fits
  config.drain_period = absl::Seconds(1);
  auto recorder = Recorder::Create(config).value();
  recorder->Start().IgnoreError();
  const int pairs = static_cast<int>(state.range(0));
  // Blocks live throughout (range(1)): with many, the ledger's tables outgrow the caches
  // and each event's lookup is a miss, as in a program with a large heap.
  for (int64_t i = 0; i < state.range(1); ++i) {
    recorder->RecordAlloc(layers::kCpuHeap, 0x1000000000 + 48 * static_cast<uint64_t>(i), 48,
                          0x400000 + (i & 255));
    if (i % 1000000 == 999999) recorder->Flush().IgnoreError();
  }
  // Address reuse like a real heap: a window of range(2) addresses at 16-byte spacing,
  // visited in a scattered order (an odd multiplier permutes the window when its size is
  // a power of two). With a small window the lookups stay in the caches; with a large one
  // beside many live blocks, each is a miss, as in a program that frees what it
  // allocated long ago.
  const uint64_t window = static_cast<uint64_t>(state.range(2));
  TimeFlushes(state, *recorder, [&] {
    for (int i = 0; i < pairs; ++i) {
      const uint64_t slot = (static_cast<uint64_t>(i) * 0x9E3779B1u) & (window - 1);
      const uint64_t a = 0x100000 + 16 * slot;
      recorder->RecordAlloc(layers::kCpuHeap, a, 64, 0x400000 + (i & 255));
      recorder->RecordFree(layers::kCpuHeap, a);
    }
  });
}

BENCHMARK(BM_DrainerThroughput)
    ->ArgNames({"pairs", "live", "window"})
    ->Args({1 << 20, 0, 4096})
    ->Args({1 << 20, 1 << 20, 4096})
    ->Args({1 << 20, 1 << 20, 1 << 18})
    ->Args({1 << 20, 1 << 15, 1 << 15})
    ->Args({1 << 20, 1 << 17, 1 << 17})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// An observer that keeps nothing: what handing every record on costs the drainer itself.
class NullObserver : public EventObserver {
 public:
  void OnEpoch(uint32_t, int64_t, std::span<const ObservedEvent> events) noexcept override {
    benchmark::DoNotOptimize(events.size());
  }
};

// The drainer's rate with `rings` rings, each filled by its own thread before the timed
// Flush(): 2^20 alloc/free pairs in all, each thread's in its own address window of 4096
// (as churn's threads, which free what they allocated). Against BM_DrainerThroughput's
// one ring: what reading many rings costs the drainer when no producer writes meanwhile.
// observer:1 hands every record to an observer that keeps nothing (the drainer's side of
// a sink: ObservedEvent copies and one call per slice).
void BM_DrainerRings(benchmark::State& state) {
  const int rings = static_cast<int>(state.range(0));
  const int pairs = (1 << 20) / rings;
  Config config;
  // Room for four times a thread's records: a ring never passes a quarter full, so no
  // producer wakes the drainer before the timed Flush().
  config.ring_capacity_log2 = 2;
  while ((uint64_t{1} << config.ring_capacity_log2) < 8 * static_cast<uint64_t>(pairs)) {
    ++config.ring_capacity_log2;
  }
  config.drain_period = absl::Seconds(1);
  NullObserver observer;  // before the recorder, so that it outlives the drainer
  auto recorder = Recorder::Create(config).value();
  if (state.range(1) != 0) recorder->SetObserver(&observer).IgnoreError();
  recorder->Start().IgnoreError();
  auto fill = [&] {
    std::vector<std::thread> pool;
    for (int t = 0; t < rings; ++t) {
      pool.emplace_back([&, t] {
        const uint64_t base = 0x100000 + (static_cast<uint64_t>(t) << 24);
        for (int i = 0; i < pairs; ++i) {
          const uint64_t a = base + 16 * ((static_cast<uint64_t>(i) * 0x9E3779B1u) & 4095);
          recorder->RecordAlloc(layers::kCpuHeap, a, 64, 0x400000 + (i & 255));
          recorder->RecordFree(layers::kCpuHeap, a);
        }
      });
    }
    for (auto& th : pool) th.join();
  };
  // Untimed rounds first: the drainer maps each ring's pages in as producers reach them
  // (SpscRing::PopulateAhead), once per ring; the timed rounds reuse the same rings.
  for (int warm = 0; warm < 3; ++warm) {
    fill();
    recorder->Flush().IgnoreError();
  }
  TimeFlushes(state, *recorder, fill);
}

BENCHMARK(BM_DrainerRings)
    ->ArgNames({"rings", "observer"})
    ->ArgsProduct({{1, 2, 4, 16, 64}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_LedgerBytesPerLiveAllocation(benchmark::State& state) {
  const int64_t live = state.range(0);
  double bytes_per = 0;
  for (auto _ : state) {
    AllocationLedger ledger(kDefaultSiteCapacity);
    for (int64_t i = 0; i < live; ++i) {
      ledger.Alloc(layers::kCpuHeap, 0x10000 + 16 * static_cast<uint64_t>(i), 32,
                   Ticket::Make(1, static_cast<uint64_t>(i)), 1,
                   0x400000 + static_cast<uint64_t>(i % 512));
    }
    // The tables only (the per-ledger fixed cost is reported separately).
    const AllocationLedger empty(kDefaultSiteCapacity);
    bytes_per = static_cast<double>(ledger.memory_bytes() - empty.memory_bytes()) /
                static_cast<double>(live);
    benchmark::DoNotOptimize(bytes_per);
  }
  state.counters["bytes_per_live"] = bytes_per;
}

BENCHMARK(BM_LedgerBytesPerLiveAllocation)
    ->Arg(10'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Arg(1'500'000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// Paced producers: each thread allocates and frees at rate / threads per second for the
// given duration, sleeping between batches of 1000, so the drainer gets its share of the
// machine. Reports what was lost.
void BM_SustainedRate(benchmark::State& state) {
  const double rate = static_cast<double>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  const auto duration = std::chrono::milliseconds(state.range(2));
  for (auto _ : state) {
    auto recorder = Recorder::Create(Config{}).value();
    recorder->Start().IgnoreError();
    std::atomic<uint64_t> allocations{0};
    auto worker = [&](int t) {
      const double per_thread = rate / threads;
      const auto batch_period = std::chrono::nanoseconds(
          static_cast<int64_t>(1000.0 / per_thread * 1e9));
      void* slots[kChurnWindow] = {};
      uint32_t seed = 99 + static_cast<uint32_t>(t);
      auto next = std::chrono::steady_clock::now();
      const auto end = next + duration;
      uint64_t n = 0;
      while (std::chrono::steady_clock::now() < end) {
        for (int i = 0; i < 1000; ++i) {
          const uint32_t r = XorShift(seed);
          void*& slot = slots[r & (kChurnWindow - 1)];
          if (slot != nullptr) {
            recorder->RecordFree(layers::kCpuHeap, Addr(slot));
            free(slot);
          }
          const uint64_t size = 16 + (r >> 8) % 256;
          slot = malloc(size);
          if (recorder->RecordAlloc(layers::kCpuHeap, Addr(slot), size, 1) ==
              RecordResult::kFailed) {
            free(slot);
            slot = nullptr;
          }
        }
        n += 1000;
        next += batch_period;
        std::this_thread::sleep_until(next);
      }
      for (void* p : slots) {
        if (p == nullptr) continue;
        recorder->RecordFree(layers::kCpuHeap, Addr(p));
        free(p);
      }
      allocations += n;
    };
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
    for (auto& th : pool) th.join();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    recorder->Flush().IgnoreError();
    const CaptureIntegrity integrity = recorder->Integrity();
    state.counters["allocs_per_s"] = static_cast<double>(allocations.load()) / seconds;
    state.counters["dropped"] = static_cast<double>(integrity.events_dropped);
    state.counters["failed"] = static_cast<double>(integrity.records_failed);
    state.counters["waits"] = static_cast<double>(integrity.overflow_waits);
    state.counters["max_fill"] = static_cast<double>(integrity.max_ring_fill);
  }
}

BENCHMARK(BM_SustainedRate)
    ->Args({5'000'000, 2, 2000})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace
}  // namespace memtrace

int main(int argc, char** argv) {
  int max_threads = 2;
  if (const char* env = std::getenv("MEMTRACE_BENCH_MAX_THREADS")) {
    max_threads = std::max(1, std::atoi(env));
  }
  memtrace::RegisterChurn(max_threads);
  if (max_threads > 2) {
    // The scaling run's question for the one drainer: does it keep up with max_threads
    // producers at 5, 10, 20 and 40 million allocations a second in all (twice that in
    // records)?
    for (int64_t rate : {5'000'000, 10'000'000, 20'000'000, 40'000'000}) {
      benchmark::RegisterBenchmark("BM_SustainedRate", memtrace::BM_SustainedRate)
          ->Args({rate, max_threads, 2000})
          ->Unit(benchmark::kMillisecond)
          ->Iterations(1)
          ->UseRealTime();
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
