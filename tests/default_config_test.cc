// Copyright 2026 The memtrace Authors.
//
// The default Config delivers the verdict a user expects on an ordinary multithreaded
// load: eight threads allocating through the public API, half of their frees made by
// another thread, and the capture complete and exact (no ticket lost in its own epoch).

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <cstdint>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/malloc_allocator.h"
#include "runtime/tracer.h"
#include "sinks/jsonl_sink.h"

namespace memtrace {
namespace {

#ifdef MEMTRACE_SANITIZER
constexpr int kOpsPerThread = 40'000;
#else
constexpr int kOpsPerThread = 400'000;
#endif

TEST(DefaultConfigTest, EightThreadsWithCrossThreadFreesGiveAnExactVerdict) {
  constexpr int kThreads = 8;
  auto tracer = Tracer::Create(Config{}).value();
  ASSERT_TRUE(tracer->Start().ok());
  MallocAllocator heap;
  TracingAllocator traced(tracer.get(), &heap, layers::kCpuHeap);
  struct Block {
    void* p;
    size_t size;
  };
  // Thread t hands every other block it allocates to thread (t + 1) % kThreads.
  struct Inbox {
    std::mutex mu;
    std::deque<Block> blocks;
  };
  std::vector<Inbox> inboxes(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      std::vector<Block> mine;
      for (int i = 0; i < kOpsPerThread; ++i) {
        const size_t size = 16 + rng() % 240;
        void* p = traced.Alloc(size, 16, 0);
        ASSERT_NE(p, nullptr);
        if (i % 2 == 0) {
          std::lock_guard<std::mutex> lock(inboxes[(t + 1) % kThreads].mu);
          inboxes[(t + 1) % kThreads].blocks.push_back(Block{p, size});
        } else {
          mine.push_back(Block{p, size});
        }
        if (mine.size() > 64) {  // free own blocks, oldest first
          traced.Free(AsMemory(mine.front().p, mine.front().size), 16, 0);
          mine.erase(mine.begin());
        }
        std::deque<Block> got;
        {
          std::lock_guard<std::mutex> lock(inboxes[t].mu);
          got.swap(inboxes[t].blocks);
        }
        for (const Block& b : got) traced.Free(AsMemory(b.p, b.size), 16, 0);
      }
      for (const Block& b : mine) traced.Free(AsMemory(b.p, b.size), 16, 0);
    });
  }
  for (auto& th : threads) th.join();
  for (Inbox& inbox : inboxes) {
    for (const Block& b : inbox.blocks) traced.Free(AsMemory(b.p, b.size), 16, 0);
  }
  const Snapshot snap = tracer->TakeSnapshot();
  const CaptureIntegrity& in = snap.integrity;
  EXPECT_TRUE(in.complete()) << in.Counters();
  EXPECT_EQ(in.ticket_evictions, 0u) << in.Counters();
  EXPECT_TRUE(in.exact()) << in.Counters();
  EXPECT_EQ(snap.totals.live_count, 0u);
  ASSERT_TRUE(tracer->Stop().ok());
}

// A JSONL capture while other work keeps both CPUs busy (four spinning threads per CPU,
// one under a sanitizer): the drainer and the capture's writer get little CPU, producers
// find their rings full and wait, and with the default wait (config.h) none gives up.
TEST(DefaultConfigTest, AJsonlCaptureOnALoadedMachineLosesNothing) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(tmp != nullptr ? tmp : "/tmp") + "/loaded.jsonl";
  auto sink = JsonlSink::Open(path).value();
  auto tracer = Tracer::Create(Config{}).value();
  ASSERT_TRUE(tracer->recorder().SetObserver(sink.get()).ok());
  ASSERT_TRUE(tracer->Start().ok());
  std::atomic<bool> done{false};
  std::vector<std::thread> load;
#ifdef MEMTRACE_SANITIZER
  // A sanitizer slows memtrace's own threads five to twenty times, the spinners not at
  // all: one spinner per CPU loads the machine as much, relative to them.
  constexpr unsigned kSpinnersPerCpu = 1;
#else
  constexpr unsigned kSpinnersPerCpu = 4;
#endif
  const unsigned cpus = kSpinnersPerCpu * std::max(2u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < cpus; ++i) {
    load.emplace_back([&] {
      // Relaxed: a stop flag, nothing published with it.
      while (!done.load(std::memory_order_relaxed)) {
      }
    });
  }
  MallocAllocator heap;
  TracingAllocator traced(tracer.get(), &heap, layers::kCpuHeap);
  std::atomic<uint64_t> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kOpsPerThread / 2; ++i) {
        void* p = traced.Alloc(64, 16, 0);
        if (p == nullptr) {
          ++refused;
          continue;
        }
        traced.Free(AsMemory(p, 64), 16, 0);
      }
    });
  }
  for (auto& th : threads) th.join();
  done = true;
  for (auto& th : load) th.join();
  ASSERT_TRUE(tracer->Stop().ok());
  const Snapshot snap = tracer->TakeSnapshot();
  EXPECT_EQ(refused.load(), 0u);
  EXPECT_TRUE(snap.integrity.complete()) << snap.integrity.Counters();
  ASSERT_TRUE(sink->Finish(snap).ok()) << sink->status();
  EXPECT_EQ(sink->stats().events_lost, 0u);
}

}  // namespace
}  // namespace memtrace
