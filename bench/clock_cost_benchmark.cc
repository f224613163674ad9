// Copyright 2026 The memtrace Authors.
//
// clock_cost_benchmark: what ordering information costs on the hot path, measured on the
// churn loop (64-slot window, 16-271 bytes) with two 32-byte records written into a
// thread-local ring per malloc+free pair. This is the measurement behind the choice of a
// shared epoch plus tickets over per-event timestamps (transport/epoch_clock.h).
//
//   BM_Churn<kNone>          glibc only: the baseline
//   BM_Churn<kRing>          + two records, no ordering information
//   BM_Churn<kRdtsc>         + an rdtsc per record
//   BM_Churn<kRdtscp>        + an rdtscp per record
//   BM_Churn<kSharedEpoch>   + a relaxed load of a shared epoch per record

#include <benchmark/benchmark.h>
#include <x86intrin.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

namespace {

enum Mode { kNone, kRing, kRdtsc, kRdtscp, kSharedEpoch };

struct Record {
  uint64_t a, b, c, d;
};

thread_local Record ring[4096];
thread_local uint32_t ring_head;
std::atomic<uint64_t> shared_epoch{1};

uint32_t XorShift(uint32_t& s) {
  s ^= s << 13;
  s ^= s >> 17;
  s ^= s << 5;
  return s;
}

template <Mode kMode>
inline void Emit(uint64_t address, uint64_t size) {
  if constexpr (kMode == kNone) return;
  uint64_t stamp = 0;
  if constexpr (kMode == kRdtsc) stamp = __rdtsc();
  if constexpr (kMode == kRdtscp) {
    unsigned aux;
    stamp = __rdtscp(&aux);
  }
  if constexpr (kMode == kSharedEpoch) {
    // Relaxed: the load being measured.
    stamp = shared_epoch.load(std::memory_order_relaxed);
  }
  Record& r = ring[ring_head++ & 4095];
  r = Record{address, stamp, size, 0};
  std::atomic_signal_fence(std::memory_order_release);
}

template <Mode kMode>
void BM_Churn(benchmark::State& state) {
  void* slots[64] = {};
  uint32_t seed = 12345 + static_cast<uint32_t>(state.thread_index());
  for (auto _ : state) {
    const uint32_t r = XorShift(seed);
    void*& slot = slots[r & 63];
    if (slot != nullptr) {
      Emit<kMode>(reinterpret_cast<uint64_t>(slot), 0);
      free(slot);
    }
    const uint64_t size = 16 + (r >> 8) % 256;
    slot = malloc(size);
    Emit<kMode>(reinterpret_cast<uint64_t>(slot), size);
    benchmark::DoNotOptimize(slot);
  }
  for (void* p : slots) free(p);
}

BENCHMARK_TEMPLATE(BM_Churn, kNone);
BENCHMARK_TEMPLATE(BM_Churn, kRing);
BENCHMARK_TEMPLATE(BM_Churn, kRdtsc);
BENCHMARK_TEMPLATE(BM_Churn, kRdtscp);
BENCHMARK_TEMPLATE(BM_Churn, kSharedEpoch);

}  // namespace

BENCHMARK_MAIN();
