// Copyright 2026 The memtrace Authors.
//
// live_benchmark: what the live endpoint (Config::live, runtime/internal/live_server.h)
// costs, each figure beside its baseline in the same binary (bench/README.md, "Start-up,
// idle and live cost").
//
//   BM_MallocFree_LiveOff / BM_MallocFree_LiveOn
//       The churn loop of overhead_benchmark (churn.h) recorded through a Tracer's
//       recorder, without and with the live endpoint and no client connected, paced as
//       BM_MallocFree_Traced is (the drainer catches up between timed bursts). The
//       counter thread_ns_per_pair is the cost of one malloc+free pair on one thread.
//       The two should be equal: the endpoint adds a thread asleep in poll() and nothing
//       on the recording path. ->Threads(1) and ->Threads(2).
//   BM_Snapshot/live_blocks/top_sites
//       What one request costs: Recorder::TakeSnapshot() with `live_blocks` blocks live
//       over 1,000 call sites, without the per-site view (0) and with the top 50 (what a
//       reply carries). The difference is the pass over the live blocks, made under the
//       drainer's state lock: the counter ns_per_live_block is the snapshot's time over
//       the live blocks, so the two rows' difference is what the pass costs a block.

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "bench/timed_churn.h"
#include "runtime/internal/recorder.h"
#include "runtime/tracer.h"

namespace memtrace {
namespace {

// One tracer per setting, shared by the benchmark's threads, started when first asked
// for. With `live`, its socket is open for the whole run and no client ever connects.
Tracer& SharedTracer(bool live) {
  auto make = [](bool with_live) {
    Config config;
    config.live = with_live;
    Tracer* t = Tracer::Create(config).value().release();
    if (absl::Status s = t->Start(); !s.ok()) {
      fprintf(stderr, "live_benchmark: %s\n", s.ToString().c_str());
      abort();
    }
    return t;
  };
  if (live) {
    static Tracer* with_live = make(true);
    return *with_live;
  }
  static Tracer* without = make(false);
  return *without;
}

void Churn(benchmark::State& state, bool live) {
  bench::TimedChurn<true>(state, &SharedTracer(live).recorder(), /*flush_between_bursts=*/true);
}

void BM_MallocFree_LiveOff(benchmark::State& state) { Churn(state, false); }
void BM_MallocFree_LiveOn(benchmark::State& state) { Churn(state, true); }
BENCHMARK(BM_MallocFree_LiveOff)->UseManualTime()->Threads(1)->Threads(2);
BENCHMARK(BM_MallocFree_LiveOn)->UseManualTime()->Threads(1)->Threads(2);

void BM_Snapshot(benchmark::State& state) {
  const auto live_blocks = static_cast<uint64_t>(state.range(0));
  const auto top_sites = static_cast<uint32_t>(state.range(1));
  std::unique_ptr<Recorder> recorder = Recorder::Create(Config{}).value();
  recorder->Start().IgnoreError();
  uint64_t failed = 0;
  for (uint64_t i = 0; i < live_blocks; ++i) {
    // Made-up addresses and sites: the ledger never reads the memory.
    if (recorder->RecordAlloc(layers::kCpuHeap, 0x10000000 + 64 * i, 48,
                              0x401000 + 16 * (i % 1000)) != RecordResult::kRecorded) {
      ++failed;
    }
    if (i % 4096 == 0) recorder->Flush().IgnoreError();
  }
  recorder->Flush().IgnoreError();
  uint64_t sites = 0;
  double seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const Snapshot snap = recorder->TakeSnapshot(top_sites);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    sites = snap.sites.size();
    benchmark::DoNotOptimize(snap);
  }
  state.counters["sites"] = static_cast<double>(sites);
  state.counters["ns_per_live_block"] =
      seconds * 1e9 / static_cast<double>(state.iterations() * live_blocks);
  state.counters["failed"] = static_cast<double>(failed);
  recorder->Stop().IgnoreError();
}
BENCHMARK(BM_Snapshot)
    ->ArgsProduct({{10'000, 1'000'000}, {0, 50}})
    ->ArgNames({"live_blocks", "top_sites"})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace memtrace

BENCHMARK_MAIN();
