// Copyright 2026 The memtrace Authors.
//
// markers_benchmark: what include/memtrace/markers.h costs a program that is not traced
// (no interposer: the weak functions are null, each call is a test of a null pointer),
// against the same loop without the calls, in one run. Under `memtrace run` the
// interposer defines them and the same binary measures the traced cost:
//   bazel-bin/cli/memtrace run --quiet -- bazel-bin/bench/markers_benchmark

#include <benchmark/benchmark.h>

#include "memtrace/markers.h"

namespace {

void BM_Baseline(benchmark::State& state) {
  int x = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(++x);
  }
}
BENCHMARK(BM_Baseline);

void BM_ScopeEnterExit(benchmark::State& state) {
  int x = 0;
  for (auto _ : state) {
    memtrace_scope_enter("work");
    benchmark::DoNotOptimize(++x);
    memtrace_scope_exit();
  }
}
BENCHMARK(BM_ScopeEnterExit);

void BM_PoolAllocFree(benchmark::State& state) {
  static char pool[64];
  const int layer = memtrace_layer("bench_pool");
  for (auto _ : state) {
    memtrace_alloc(layer, pool, sizeof(pool));
    benchmark::ClobberMemory();
    memtrace_free(layer, pool);
  }
}
BENCHMARK(BM_PoolAllocFree);

}  // namespace

BENCHMARK_MAIN();
