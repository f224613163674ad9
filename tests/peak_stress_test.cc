// Copyright 2026 The memtrace Authors.
//
// Peaks under concurrency, through the public API only: in every run the true peak, which
// the test computes itself, lies inside the interval memtrace reports, for the totals, for
// each layer and for each scope.
//
//   - Barrier phases, with no Flush(): every thread allocates, all meet at a barrier,
//     every thread frees, all meet again. Everything allocated in a round is live at once
//     at the barrier and nothing else is, so the true peak is the largest round's bytes.
//   - A producer/consumer pipeline: producers allocate and queue blocks, consumers free
//     them. Each allocation and release is made together with an update of the test's
//     own counters under one mutex, so the mutex's order is the real order of the traced
//     operations, and the counters' peaks are the true peaks.

#include <algorithm>
#include <barrier>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "bench/pipeline.h"
#include "runtime/malloc_allocator.h"
#include "runtime/scope_table.h"
#include "runtime/tracer.h"
#include "transport/epoch_clock.h"

namespace memtrace {
namespace {

#ifdef MEMTRACE_SANITIZER
constexpr int kRuns = 4;
#else
constexpr int kRuns = 20;
#endif

constexpr LayerId kLayers[2] = {layers::kCpuHeap, layers::kFrameArena};

// True peaks, by counter name: "total", "layer:<id>", "scope:<path>".
using Peaks = std::map<std::string, uint64_t>;

// Checks every true peak against the snapshot's interval for the same counter.
void ExpectPeaksInside(const Snapshot& snap, const Peaks& truth, int run) {
  std::map<std::string, UsageCounters> reported;
  reported["total"] = snap.totals;
  for (const LayerUsage& l : snap.layers) reported["layer:" + std::to_string(l.layer)] = l.usage;
  for (const ScopeUsage& s : snap.scopes) reported["scope:" + s.path] = s.usage;
  for (const auto& [name, peak] : truth) {
    ASSERT_TRUE(reported.count(name)) << name << " missing from the snapshot, run " << run;
    const UsageCounters& u = reported[name];
    EXPECT_LE(u.high_water_low_bytes, peak)
        << name << ": the interval [" << u.high_water_low_bytes << ", "
        << u.high_water_high_bytes << "] misses the true peak " << peak << ", run " << run;
    EXPECT_GE(u.high_water_high_bytes, peak)
        << name << ": the interval [" << u.high_water_low_bytes << ", "
        << u.high_water_high_bytes << "] misses the true peak " << peak << ", run " << run;
    EXPECT_LE(u.high_water_low_bytes, u.high_water_bytes) << name;
    EXPECT_GE(u.high_water_high_bytes, u.high_water_bytes) << name;
  }
  // Counters may be inexact under load (a ticket evicted in its own epoch); the peaks
  // still hold what the records say.
  EXPECT_TRUE(snap.integrity.complete()) << snap.integrity.Counters();
}

// A started tracer with `config`, and a traced heap on each of kLayers.
struct TracedRun {
  explicit TracedRun(const Config& config = Config{}) : tracer(Tracer::Create(config).value()) {}
  std::unique_ptr<Tracer> tracer;
  bool started = tracer->Start().ok();
  MallocAllocator heap;
  TracingAllocator traced[2] = {{tracer.get(), &heap, kLayers[0]},
                                {tracer.get(), &heap, kLayers[1]}};
};

TEST(PeakStressTest, BarrierPhasesWithoutFlush) {
  constexpr int kThreads = 6;
  constexpr int kRounds = 30;
  static const ScopeName kEven("phases_even");
  static const ScopeName kOdd("phases_odd");
  for (int run = 0; run < kRuns; ++run) {
    TracedRun t;
    ASSERT_TRUE(t.started);
    Tracer* const tracer = t.tracer.get();
    TracingAllocator* const traced = t.traced;
    // bytes[round][thread], drawn up front so the truth does not depend on the threads.
    std::mt19937_64 rng(1000 + run);
    std::vector<std::vector<std::vector<size_t>>> sizes(
        kRounds, std::vector<std::vector<size_t>>(kThreads));
    for (auto& round : sizes) {
      for (auto& mine : round) {
        const int blocks = std::uniform_int_distribution<int>(10, 200)(rng);
        for (int b = 0; b < blocks; ++b) {
          mine.push_back(std::uniform_int_distribution<size_t>(16, 8192)(rng));
        }
      }
    }
    std::barrier sync(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        Span span = tracer->Enter(t % 2 == 0 ? kEven : kOdd);
        TracingAllocator& a = traced[(t / 2) % 2];
        std::vector<void*> blocks;
        for (int r = 0; r < kRounds; ++r) {
          for (size_t n : sizes[r][t]) blocks.push_back(a.Alloc(n, 16, 0));
          sync.arrive_and_wait();
          for (size_t i = 0; i < blocks.size(); ++i) {
            a.Free(Memory{static_cast<std::byte*>(blocks[i]), sizes[r][t][i]}, 16, 0);
          }
          blocks.clear();
          sync.arrive_and_wait();
        }
      });
    }
    for (auto& th : threads) th.join();
    const Snapshot snap = tracer->TakeSnapshot();

    Peaks truth;
    for (int r = 0; r < kRounds; ++r) {
      Peaks round;
      for (int t = 0; t < kThreads; ++t) {
        uint64_t bytes = 0;
        for (size_t n : sizes[r][t]) bytes += n;
        round["total"] += bytes;
        round["layer:" + std::to_string(kLayers[(t / 2) % 2])] += bytes;
        round[std::string("scope:") + (t % 2 == 0 ? "phases_even" : "phases_odd")] += bytes;
      }
      for (const auto& [name, bytes] : round) truth[name] = std::max(truth[name], bytes);
    }
    ExpectPeaksInside(snap, truth, run);
    ASSERT_TRUE(tracer->Stop().ok());
  }
}

// The pipeline: returns the true peaks and the snapshot taken at the end.
void RunPipeline(const Config& config, int run, Peaks* truth, Snapshot* snapshot);

TEST(PeakStressTest, ProducerConsumerPipelineWithALinearizedTruth) {
  for (int run = 0; run < kRuns; ++run) {
    Peaks truth;
    Snapshot snap;
    RunPipeline(Config{}, run, &truth, &snap);
    ExpectPeaksInside(snap, truth, run);
  }
}

// With a stamp on every record (`memtrace run --exact-order`), each record has its own
// time: records made one after another under the test's mutex are applied in that order,
// and every peak is exact and equal to the truth.
TEST(PeakStressTest, AStampOnEveryRecordMakesThePeaksExact) {
  if (!EpochClock().HasStamps()) {
    GTEST_SKIP() << "this machine's clocksource is not the TSC: stamps would not compare";
  }
  Config config;
  config.order_stamp_log2 = 0;
  for (int run = 0; run < kRuns / 4; ++run) {
    Peaks truth;
    Snapshot snap;
    RunPipeline(config, run, &truth, &snap);
    ExpectPeaksInside(snap, truth, run);
    ASSERT_GT(snap.integrity.bounded_epochs, 0u) << "the threads never recorded at once";
    EXPECT_TRUE(snap.totals.high_water_exact())
        << "[" << snap.totals.high_water_low_bytes << ", " << snap.totals.high_water_high_bytes
        << "]";
    EXPECT_EQ(snap.totals.high_water_bytes, truth["total"]);
  }
}

void RunPipeline(const Config& config, int run, Peaks* truth, Snapshot* snapshot) {
  constexpr int kProducers = 4;
  constexpr int kConsumers = 2;
  constexpr int kBlocksPerProducer = 6000;
  static const ScopeName kScopes[2] = {ScopeName("pipeline_a"), ScopeName("pipeline_b")};
  static const ScopeName kConsume("pipeline_consume");
  {
    TracedRun t(config);
    ASSERT_TRUE(t.started);
    Tracer* const tracer = t.tracer.get();
    // The truth: counters changed in the same critical section as the traced operation.
    Peaks live, peak;
    PipelineShape shape;
    shape.producers = kProducers;
    shape.consumers = kConsumers;
    shape.blocks = kBlocksPerProducer;
    shape.seed = static_cast<uint64_t>(run) * 100;
    RunPipeline(
        shape, *tracer, [&](int p) -> TracingAllocator& { return t.traced[p % 2]; },
        [&](int who) { return who < 0 ? &kConsume : &kScopes[who < 2 ? 0 : 1]; },
        [&](int producer, int64_t delta) {
          const std::string names[3] = {
              "total", "layer:" + std::to_string(kLayers[producer % 2]),
              "scope:" + std::string(producer < 2 ? "pipeline_a" : "pipeline_b")};
          for (const std::string& n : names) {
            live[n] += static_cast<uint64_t>(delta);
            peak[n] = std::max(peak[n], live[n]);
          }
        });
    *snapshot = tracer->TakeSnapshot();
    *truth = peak;
    ASSERT_TRUE(tracer->Stop().ok());
  }
}

}  // namespace
}  // namespace memtrace
