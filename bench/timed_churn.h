// Copyright 2026 The memtrace Authors.
//
// timed_churn.h: the churn loop (churn.h) as a Google Benchmark body, in timed bursts, for
// the benchmarks that compare a traced variant with its baseline (overhead_benchmark.cc,
// live_benchmark.cc), so every variant runs the same loop.
//
// Each iteration is a burst of kChurnBurst malloc+free pairs, timed alone (manual time:
// register with ->UseManualTime()). With `flush_between_bursts`, the drainer catches up
// between bursts (Flush, untimed), so the figure is the cost on the allocating thread
// while the drainer keeps up; without, the loop runs at the drainer's pace once the rings
// fill. Counters: thread_ns_per_pair (one pair on one thread, averaged over threads) and
// failed (records that failed).
//
// Thread safety: each benchmark thread has its own slots; the recorder is for any thread.

#ifndef MEMTRACE_BENCH_TIMED_CHURN_H_
#define MEMTRACE_BENCH_TIMED_CHURN_H_

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>

#include "bench/churn.h"
#include "runtime/internal/recorder.h"

namespace memtrace {
namespace bench {

inline constexpr int kChurnBurst = 2048;  // 4096 records: a quarter of the default ring

// `recorder`: null untraced (kTraced false).
template <bool kTraced>
void TimedChurn(benchmark::State& state, Recorder* recorder, bool flush_between_bursts) {
  void* slots[kChurnWindow] = {};
  uint32_t seed = 12345 + static_cast<uint32_t>(state.thread_index());
  uint64_t failed = 0;
  double seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kChurnBurst; ++i) ChurnStep<kTraced>(recorder, slots, seed, failed);
    const auto stop = std::chrono::steady_clock::now();
    const double burst = std::chrono::duration<double>(stop - start).count();
    seconds += burst;
    state.SetIterationTime(burst);
    if (kTraced && flush_between_bursts) recorder->Flush().IgnoreError();
  }
  for (void* p : slots) {
    if (p == nullptr) continue;
    if constexpr (kTraced) recorder->RecordFree(layers::kCpuHeap, reinterpret_cast<uint64_t>(p));
    free(p);
  }
  state.SetItemsProcessed(state.iterations() * kChurnBurst);
  state.counters["thread_ns_per_pair"] = benchmark::Counter(
      seconds * 1e9 / static_cast<double>(state.iterations() * kChurnBurst),
      benchmark::Counter::kAvgThreads);
  state.counters["failed"] = static_cast<double>(failed);
}

}  // namespace bench
}  // namespace memtrace

#endif  // MEMTRACE_BENCH_TIMED_CHURN_H_
