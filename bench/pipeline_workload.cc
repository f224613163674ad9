// Copyright 2026 The memtrace Authors.
//
// pipeline_workload: producers allocate blocks and queue them, consumers free them, all
// through one TracingAllocator (bench/pipeline.h), and the program keeps its own count of
// the live bytes under the same mutex as each traced operation, so that the mutex's order
// is the real order and the count's peak is the true peak. Prints that peak beside memtrace's
// high-water and its interval (bench/peak_bounds.sh reads the last line):
//
//   pipeline: true_peak=14631424 high_water=14630912 low=14620160 high=14702080 exact=0
//
//   bazel build //bench:pipeline_workload
//   bazel-bin/bench/pipeline_workload --producers=4 --consumers=2 --blocks=50000

#include <cstdint>
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/pipeline.h"
#include "runtime/malloc_allocator.h"
#include "runtime/tracer.h"

ABSL_FLAG(int, producers, 4, "threads that allocate");
ABSL_FLAG(int, consumers, 2, "threads that free");
ABSL_FLAG(int, blocks, 50000, "blocks each producer allocates");
ABSL_FLAG(int, order_stamp_log2, -1, "Config::order_stamp_log2 (-1: the default)");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int producers = absl::GetFlag(FLAGS_producers);
  const int consumers = absl::GetFlag(FLAGS_consumers);
  const int blocks = absl::GetFlag(FLAGS_blocks);
  if (producers < 1 || consumers < 1 || blocks < 1) {
    fprintf(stderr, "pipeline_workload: --producers, --consumers and --blocks must be >= 1\n");
    return 2;
  }
  memtrace::Config config;
  if (absl::GetFlag(FLAGS_order_stamp_log2) >= 0) {
    config.order_stamp_log2 = static_cast<uint32_t>(absl::GetFlag(FLAGS_order_stamp_log2));
  }
  auto tracer = memtrace::Tracer::Create(config);
  if (!tracer.ok()) {
    fprintf(stderr, "pipeline_workload: %s\n", tracer.status().ToString().c_str());
    return 2;
  }
  if (!(*tracer)->Start().ok()) return 2;
  memtrace::MallocAllocator heap;
  memtrace::TracingAllocator traced(tracer->get(), &heap, memtrace::layers::kCpuHeap);
  memtrace::PipelineShape shape;
  shape.producers = producers;
  shape.consumers = consumers;
  shape.blocks = blocks;
  shape.max_size = 8192;
  uint64_t live = 0, peak = 0;  // changed under the pipeline's mutex only
  memtrace::RunPipeline(
      shape, **tracer, [&](int) -> memtrace::TracingAllocator& { return traced; },
      [](int) -> const memtrace::ScopeName* { return nullptr; },
      [&](int, int64_t delta) {
        live += static_cast<uint64_t>(delta);
        if (live > peak) peak = live;
      });
  const memtrace::Snapshot snap = (*tracer)->TakeSnapshot();
  (*tracer)->Stop().IgnoreError();
  const memtrace::UsageCounters& u = snap.totals;
  printf("pipeline: true_peak=%llu high_water=%llu low=%llu high=%llu exact=%d\n",
         static_cast<unsigned long long>(peak), static_cast<unsigned long long>(u.high_water_bytes),
         static_cast<unsigned long long>(u.high_water_low_bytes),
         static_cast<unsigned long long>(u.high_water_high_bytes),
         u.high_water_exact() ? 1 : 0);
  return snap.integrity.complete() ? 0 : 3;
}
