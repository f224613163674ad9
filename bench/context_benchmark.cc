// Copyright 2026 The memtrace Authors.
//
// context_benchmark: what a disabled Context costs over calling the backing allocator
// directly (target: about 1 ns per call), and what an enabled one costs, on the same
// alloc+free pair through the Allocator interface.
//
//   BM_Backing_Direct       backing.Alloc / backing.Free (a virtual call each)
//   BM_Context_Disabled     ctx.Alloc / ctx.Free with a default Context
//   BM_Context_Traced       the same with a running tracer (the drainer catches up
//                           between timed bursts, as in overhead_benchmark)

#include <benchmark/benchmark.h>

#include <chrono>

#include "runtime/context.h"
#include "runtime/malloc_allocator.h"
#include "runtime/tracer.h"

namespace memtrace {
namespace {

constexpr int kBurst = 2048;

template <typename Pair>
void TimedBursts(benchmark::State& state, Pair&& pair, Tracer* flush) {
  double seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kBurst; ++i) pair(i);
    const double burst =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    seconds += burst;
    state.SetIterationTime(burst);
    if (flush != nullptr) flush->Flush().IgnoreError();
  }
  state.counters["ns_per_pair"] =
      seconds * 1e9 / static_cast<double>(state.iterations() * kBurst);
}

// Sizes vary so the compiler cannot fold malloc+free away.
size_t SizeOf(int i) { return 16 + static_cast<size_t>(i & 127); }

void BM_Backing_Direct(benchmark::State& state) {
  MallocAllocator heap;
  Allocator& backing = heap;
  TimedBursts(
      state,
      [&](int i) {
        const size_t n = SizeOf(i);
        void* p = backing.Alloc(n, 16, 0);
        benchmark::DoNotOptimize(p);
        backing.Free(AsMemory(p, n), 16, 0);
      },
      nullptr);
}

void BM_Context_Disabled(benchmark::State& state) {
  MallocAllocator heap;
  Allocator& backing = heap;
  const Context ctx;
  benchmark::DoNotOptimize(&ctx);
  TimedBursts(
      state,
      [&](int i) {
        const size_t n = SizeOf(i);
        void* p = ctx.Alloc(backing, n, 16, 0);
        benchmark::DoNotOptimize(p);
        ctx.Free(backing, AsMemory(p, n), 16, 0);
      },
      nullptr);
}

void BM_Context_Traced(benchmark::State& state) {
  auto tracer = Tracer::Create(Config{}).value();
  tracer->Start().IgnoreError();
  MallocAllocator heap;
  Allocator& backing = heap;
  const Context ctx(tracer.get(), layers::kCpuHeap);
  TimedBursts(
      state,
      [&](int i) {
        const size_t n = SizeOf(i);
        void* p = ctx.Alloc(backing, n, 16, 0);
        benchmark::DoNotOptimize(p);
        ctx.Free(backing, AsMemory(p, n), 16, 0);
      },
      tracer.get());
}

BENCHMARK(BM_Backing_Direct)->UseManualTime();
BENCHMARK(BM_Context_Disabled)->UseManualTime();
BENCHMARK(BM_Context_Traced)->UseManualTime();

}  // namespace
}  // namespace memtrace

BENCHMARK_MAIN();
