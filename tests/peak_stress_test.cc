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
//   - One thread alone, then others joining it: while the recorder has one ring it reads
//     no clock (Recorder::OrderStamp()), so the first thread's records around the moment
//     the others arrive have no stamps, and the others free its blocks; linearized by a
//     mutex as in the pipeline.

#include <algorithm>
#include <barrier>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
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
        << u.high_water_high_bytes << "] misses the true peak " << peak << ", run " << run
        << "; " << snap.integrity.Counters();
    EXPECT_GE(u.high_water_high_bytes, peak)
        << name << ": the interval [" << u.high_water_low_bytes << ", "
        << u.high_water_high_bytes << "] misses the true peak " << peak << ", run " << run
        << "; " << snap.integrity.Counters();
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

// The first thread records alone (its stamps are "none"), then three others join while it
// goes on; they free its blocks, made without tickets, as well as their own. Every
// traced operation and the test's counters change together under one mutex, whose order
// is therefore the real one.
// One run of it: the true peaks and the snapshot taken at the end.
void RunAloneThenJoining(const Config& config, int run, Peaks* truth, Snapshot* snapshot) {
  constexpr int kJoining = 3;
  constexpr int kAlone = 3000;
  constexpr int kTogether = 4000;
  TracedRun t(config);
  ASSERT_TRUE(t.started);
  struct Block {
    void* p;
    size_t size;
    int layer;
  };
  std::mutex mu;
  Peaks live, peak;
  std::deque<Block> handed;  // the first thread's blocks, for the others to free
  auto change = [&](int layer, int64_t delta) {
    for (const std::string& n : {std::string("total"), "layer:" + std::to_string(kLayers[layer])}) {
      live[n] += static_cast<uint64_t>(delta);
      peak[n] = std::max(peak[n], live[n]);
    }
  };
  auto allocate = [&](int layer, size_t size) {
    std::lock_guard<std::mutex> lock(mu);
    void* p = t.traced[layer].Alloc(size, 16, 0);
    change(layer, static_cast<int64_t>(size));
    return Block{p, size, layer};
  };
  auto release = [&](const Block& b) {
    std::lock_guard<std::mutex> lock(mu);
    t.traced[b.layer].Free(AsMemory(b.p, b.size), 16, 0);
    change(b.layer, -static_cast<int64_t>(b.size));
  };
  auto hand = [&](const Block& b) {
    std::lock_guard<std::mutex> lock(mu);
    handed.push_back(b);
  };
  auto take = [&](Block* b) {
    std::lock_guard<std::mutex> lock(mu);
    if (handed.empty()) return false;
    *b = handed.front();
    handed.pop_front();
    return true;
  };
  std::mt19937_64 rng(7000 + run);
  auto size_of = [](std::mt19937_64& r) { return 16 + r() % 4096; };
  // The first thread: allocates, hands every `hand_every`-th block over, and keeps up to
  // 500 of its own.
  std::vector<Block> mine;
  auto first_thread = [&](int operations, int hand_every) {
    for (int i = 0; i < operations; ++i) {
      const Block b = allocate(i % 2, size_of(rng));
      if (i % hand_every == 0) {
        hand(b);
      } else {
        mine.push_back(b);
      }
      if (mine.size() > 500) {
        release(mine.front());
        mine.erase(mine.begin());
      }
    }
  };
  first_thread(kAlone, 3);
  std::vector<std::thread> others;
  for (int w = 0; w < kJoining; ++w) {
    others.emplace_back([&, w] {
      std::mt19937_64 r(run * 10 + w);
      std::vector<Block> own;
      for (int i = 0; i < kTogether; ++i) {
        own.push_back(allocate(w % 2, size_of(r)));
        Block b;
        if (i % 2 == 0 && take(&b)) release(b);
        if (own.size() > 200) {
          release(own.front());
          own.erase(own.begin());
        }
      }
      for (const Block& b : own) release(b);
    });
  }
  first_thread(kTogether, 2);
  for (std::thread& o : others) o.join();
  for (const Block& b : mine) release(b);
  Block b;
  while (take(&b)) release(b);
  *snapshot = t.tracer->TakeSnapshot();
  *truth = peak;
  EXPECT_EQ(snapshot->totals.live_bytes, 0u);
  ASSERT_TRUE(t.tracer->Stop().ok());
}

TEST(PeakStressTest, OneThreadAloneThenOthersJoining) {
  // Runs whose threads recorded in one epoch at once: a loaded machine may run them one at
  // a time in some runs, but not in all (the test must reach the interleaved case).
  int overlapped = 0;
  for (int run = 0; run < kRuns; ++run) {
    Peaks truth;
    Snapshot snap;
    RunAloneThenJoining(Config{}, run, &truth, &snap);
    ExpectPeaksInside(snap, truth, run);
    if (snap.integrity.bounded_epochs > 0) ++overlapped;
  }
  EXPECT_GT(overlapped, 0) << "the threads never recorded at once in " << kRuns << " runs";
}

// With a stamp on every record (`memtrace run --exact-order`), the first thread's records
// made while it was alone are stamped too, so the peaks stay exact when the others join
// it in the same epoch (before, those records had no stamp, and their windows reached
// back to the epoch's start: `--exact-order` gave intervals).
TEST(PeakStressTest, AStampOnEveryRecordKeepsPeaksExactWhenOthersJoinAThreadAlone) {
  if (!EpochClock().HasStamps()) {
    GTEST_SKIP() << "this machine's clocksource is not the TSC: stamps would not compare";
  }
  Config config;
  config.order_stamp_log2 = 0;
  int overlapped = 0;
  for (int run = 0; run < kRuns / 4; ++run) {
    Peaks truth;
    Snapshot snap;
    RunAloneThenJoining(config, run, &truth, &snap);
    ExpectPeaksInside(snap, truth, run);
    if (snap.integrity.bounded_epochs > 0) ++overlapped;
    for (const auto& [name, usage] :
         {std::pair{std::string("total"), snap.totals}}) {
      EXPECT_TRUE(usage.high_water_exact())
          << name << ": [" << usage.high_water_low_bytes << ", " << usage.high_water_high_bytes
          << "], run " << run;
    }
    for (const LayerUsage& l : snap.layers) {
      EXPECT_TRUE(l.usage.high_water_exact())
          << "layer " << int{l.layer} << ": [" << l.usage.high_water_low_bytes << ", "
          << l.usage.high_water_high_bytes << "], run " << run;
    }
    EXPECT_EQ(snap.totals.high_water_bytes, truth["total"]) << "run " << run;
  }
  EXPECT_GT(overlapped, 0) << "the threads never recorded at once in " << kRuns / 4 << " runs";
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

// The same with the records applied by three threads (Config::tracer_threads): the peak
// tracker's segments ride in their batches (sharded_apply.h).
TEST(PeakStressTest, ProducerConsumerPipelineWithThreeAppliers) {
  Config config;
  config.tracer_threads = 3;
  int overlapped = 0;
  for (int run = 0; run < kRuns / 2; ++run) {
    Peaks truth;
    Snapshot snap;
    RunPipeline(config, run, &truth, &snap);
    ExpectPeaksInside(snap, truth, run);
    if (snap.integrity.bounded_epochs > 0) ++overlapped;
  }
  EXPECT_GT(overlapped, 0) << "the threads never recorded at once in " << kRuns / 2 << " runs";
}

// With a stamp on every record (`memtrace run --exact-order`), each record has its own
// time: records made one after another under the test's mutex are applied in that order,
// and every peak is exact and equal to the truth, with one applier or three.
TEST(PeakStressTest, AStampOnEveryRecordMakesThePeaksExact) {
  if (!EpochClock().HasStamps()) {
    GTEST_SKIP() << "this machine's clocksource is not the TSC: stamps would not compare";
  }
  Config config;
  config.order_stamp_log2 = 0;
  int overlapped = 0;  // as in OneThreadAloneThenOthersJoining
  for (int run = 0; run < kRuns / 4; ++run) {
    config.tracer_threads = run % 2 == 0 ? 1 : 3;
    Peaks truth;
    Snapshot snap;
    RunPipeline(config, run, &truth, &snap);
    ExpectPeaksInside(snap, truth, run);
    if (snap.integrity.bounded_epochs > 0) ++overlapped;
    EXPECT_TRUE(snap.totals.high_water_exact())
        << "[" << snap.totals.high_water_low_bytes << ", " << snap.totals.high_water_high_bytes
        << "]";
    EXPECT_EQ(snap.totals.high_water_bytes, truth["total"]);
  }
  EXPECT_GT(overlapped, 0) << "the threads never recorded at once in " << kRuns / 4 << " runs";
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
