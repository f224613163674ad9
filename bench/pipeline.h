// Copyright 2026 The memtrace Authors.
//
// pipeline.h: the producer/consumer workload whose true peak the caller counts itself,
// shared by bench/pipeline_workload and tests/peak_stress_test.
//
// Producers allocate blocks of random sizes and queue them; consumers take them off the
// queue and free them. Each allocation and each release is made together with the
// caller's `change(producer, delta)` under one mutex, so the mutex's order is the real
// order of the traced operations, and a count kept in `change` has the true peaks.
//
//   RunPipeline(shape, tracer,
//               [&](int p) -> TracingAllocator& { return traced; },    // p's allocator
//               [&](int who) -> const ScopeName* { return nullptr; },  // who: p, or -1
//               [&](int p, int64_t delta) { live += delta; peak = max(peak, live); });
//
// Thread safety: runs its threads and joins them before it returns.

#ifndef MEMTRACE_BENCH_PIPELINE_H_
#define MEMTRACE_BENCH_PIPELINE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "runtime/scope_table.h"
#include "runtime/span.h"
#include "runtime/tracer.h"

namespace memtrace {

struct PipelineShape {
  int producers = 4;
  int consumers = 2;
  int blocks = 6000;  // per producer
  size_t min_size = 64;
  size_t max_size = 16384;
  uint64_t seed = 0;  // producer p draws its sizes from seed + p
};

// `traced(p)`: the TracingAllocator producer p's blocks go through (and are freed by).
// `scope_of(who)`: the scope producer `who` (or a consumer, -1) runs in, or nullptr.
// `change(p, delta)`: called under the mutex with each traced operation on p's blocks.
template <typename Traced, typename ScopeOf, typename Change>
void RunPipeline(const PipelineShape& shape, Tracer& tracer, Traced&& traced,
                 ScopeOf&& scope_of, Change&& change) {
  struct Block {
    void* p;
    size_t size;
    int producer;
  };
  std::mutex truth_mu;  // the traced operation and the caller's count change together
  std::mutex queue_mu;
  std::deque<Block> queue;
  int producing = shape.producers;
  auto enter = [&](int who, std::optional<Span>* span) {
    if (const ScopeName* name = scope_of(who)) span->emplace(&tracer.recorder(), *name);
  };

  std::vector<std::thread> threads;
  for (int p = 0; p < shape.producers; ++p) {
    threads.emplace_back([&, p] {
      std::optional<Span> span;
      enter(p, &span);
      std::mt19937_64 rng(shape.seed + static_cast<uint64_t>(p));
      for (int i = 0; i < shape.blocks; ++i) {
        const size_t size =
            std::uniform_int_distribution<size_t>(shape.min_size, shape.max_size)(rng);
        Block b{nullptr, size, p};
        {
          std::lock_guard<std::mutex> lock(truth_mu);
          b.p = traced(p).Alloc(size, 16, 0);
          change(p, static_cast<int64_t>(size));
        }
        std::lock_guard<std::mutex> lock(queue_mu);
        queue.push_back(b);
      }
      std::lock_guard<std::mutex> lock(queue_mu);
      --producing;
    });
  }
  for (int c = 0; c < shape.consumers; ++c) {
    threads.emplace_back([&] {
      std::optional<Span> span;
      enter(-1, &span);
      for (;;) {
        Block b{nullptr, 0, 0};
        bool done = false;
        {
          std::lock_guard<std::mutex> lock(queue_mu);
          if (!queue.empty()) {
            b = queue.front();
            queue.pop_front();
          } else {
            done = producing == 0;
          }
        }
        if (b.p == nullptr) {
          if (done) return;
          std::this_thread::yield();
          continue;
        }
        std::lock_guard<std::mutex> lock(truth_mu);
        change(b.producer, -static_cast<int64_t>(b.size));
        traced(b.producer).Free(AsMemory(b.p, b.size), 16, 0);
      }
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace memtrace

#endif  // MEMTRACE_BENCH_PIPELINE_H_
