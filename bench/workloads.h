// Copyright 2026 The memtrace Authors.
//
// workloads.h: the workloads of the side-by-side comparison and the soak (issue 8).
//
// Each workload is written once, as a template over a heap: PlainHeap is the program as
// written (malloc/free/realloc, std::allocator, no scopes), which is also what the
// preload and heaptrack trace; ApiHeap routes every operation through memtrace's
// wrapped-allocator API (a TracingAllocator, Tracer scopes as Spans, StdAllocator for
// containers). The frame workload has its own pair: FramesPlain (malloc'd blocks freed at
// the end of each frame) and FramesArena (runtime/frame_arena.h, traced or not).
//
// Every workload returns the operations it made: one per call the plain program makes
// into the allocator family (malloc, free, realloc, operator new/delete); a frame block's
// release counts once whether a free or a reset releases it. The count does not depend on
// the heap, so per-operation times compare across variants.
//
// Thread safety: each workload call runs on the threads it starts (OnThreads,
// ServerWorkload); the heaps are as thread-safe as malloc and the Tracer.
//
// Example:
//   memtrace::bench::PlainHeap heap;
//   uint64_t ops = memtrace::bench::RunWorkload("churn", heap, /*threads=*/2, /*scale=*/1);

#ifndef MEMTRACE_BENCH_WORKLOADS_H_
#define MEMTRACE_BENCH_WORKLOADS_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/churn.h"  // XorShift
#include "runtime/frame_arena.h"
#include "runtime/span.h"
#include "runtime/std_allocator.h"
#include "runtime/tracer.h"

namespace memtrace {
namespace bench {

// ---- Heaps: what the workloads allocate through ---------------------------------------

// The program as written: the C allocator and std::allocator. Scopes are no-ops.
struct PlainHeap {
  struct NoScope {};
  template <typename T>
  using ContainerAllocator = std::allocator<T>;

  void* Alloc(size_t n) { return malloc(n); }
  void Free(void* p, size_t) { free(p); }
  void* Realloc(void* p, size_t, size_t n) { return realloc(p, n); }
  NoScope Enter(const ScopeName&) { return {}; }
  template <typename T>
  std::allocator<T> MakeContainerAllocator() {
    return {};
  }
};

// The wrapped-allocator API: every operation through a TracingAllocator, scopes as Spans.
struct ApiHeap {
  template <typename T>
  using ContainerAllocator = StdAllocator<T>;

  Tracer* tracer;
  TracingAllocator* traced;

  __attribute__((noinline)) void* Alloc(size_t n) {
    return traced->Alloc(n, 16, MEMTRACE_CALL_SITE());
  }
  __attribute__((noinline)) void Free(void* p, size_t n) {
    if (p != nullptr) traced->Free(AsMemory(p, n), 16, MEMTRACE_CALL_SITE());
  }
  __attribute__((noinline)) void* Realloc(void* p, size_t old_n, size_t n) {
    if (p == nullptr) return Alloc(n);
    return traced->Remap(AsMemory(p, old_n), 16, n, MEMTRACE_CALL_SITE());
  }
  Span Enter(const ScopeName& name) { return tracer->Enter(name); }
  template <typename T>
  StdAllocator<T> MakeContainerAllocator() {
    return StdAllocator<T>(traced);
  }
};

// ---- (a) churn ----------------------------------------------------------------------

template <typename Heap>
uint64_t Churn(Heap& heap, int thread, int64_t iterations) {
  constexpr int kWindow = 64;
  void* slots[kWindow] = {};
  size_t sizes[kWindow] = {};
  uint32_t seed = 12345 + static_cast<uint32_t>(thread);
  uint64_t ops = 0;
  for (int64_t i = 0; i < iterations; ++i) {
    const uint32_t r = XorShift(seed);
    const int k = static_cast<int>(r & (kWindow - 1));
    if (slots[k] != nullptr) {
      heap.Free(slots[k], sizes[k]);
      ++ops;
    }
    sizes[k] = 16 + (r >> 8) % 256;
    slots[k] = heap.Alloc(sizes[k]);
    ++ops;
    asm volatile("" : : "r"(slots[k]) : "memory");
  }
  for (int k = 0; k < kWindow; ++k) {
    if (slots[k] == nullptr) continue;
    heap.Free(slots[k], sizes[k]);
    ++ops;
  }
  return ops;
}

// ---- (b) server -----------------------------------------------------------------------

struct Response {
  void* body;
  size_t size;
};

// Responses are handed over in batches (as a socket writer would flush them), so the
// queue's lock is not what the workload measures.
class ResponseWriter {
 public:
  void Push(std::vector<Response>&& batch) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(batch));
    cv_.notify_one();
  }
  void Finish() {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_one();
  }
  template <typename Heap>
  uint64_t Run(Heap& heap) {
    static const ScopeName kWrite("writer");
    [[maybe_unused]] auto scope = heap.Enter(kWrite);
    uint64_t ops = 0;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return done_ || !queue_.empty(); });
      while (!queue_.empty()) {
        std::vector<Response> batch = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        for (const Response& r : batch) {
          heap.Free(r.body, r.size);  // freed on a thread that did not allocate it
          ++ops;
        }
        lock.lock();
      }
      if (done_) return ops;
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::vector<Response>> queue_;
  bool done_ = false;
};

struct SessionCache {
  std::mutex mu;
  std::vector<Response> entries;  // reserved up front: the vector itself never grows
};

template <typename Heap>
uint64_t Serve(Heap& heap, int thread, int64_t requests, ResponseWriter& writer,
               SessionCache& cache) {
  static const ScopeName kRequest("request");
  static const ScopeName kParse("parse");
  static const ScopeName kHandle("handle");
  static const ScopeName kRespond("respond");
  static const ScopeName kCache("session_cache");
  constexpr size_t kBatch = 64;
  constexpr size_t kCacheEntries = 256;
  uint32_t seed = 777 + static_cast<uint32_t>(thread) * 7919;
  uint64_t ops = 0;
  std::vector<Response> batch;
  batch.reserve(kBatch);
  for (int64_t i = 0; i < requests; ++i) {
    [[maybe_unused]] auto request = heap.Enter(kRequest);
    const size_t header_size = 64 + XorShift(seed) % 512;
    void* header;
    {
      [[maybe_unused]] auto parse = heap.Enter(kParse);
      header = heap.Alloc(header_size);
      ++ops;
      if (header != nullptr) memset(header, 'h', 64);
    }
    {
      [[maybe_unused]] auto handle = heap.Enter(kHandle);
      void* temporaries[8];
      size_t temporary_sizes[8];
      for (int k = 0; k < 8; ++k) {
        const uint32_t r = XorShift(seed);
        // Mostly small, sometimes a page, rarely 64 KiB.
        temporary_sizes[k] = (r % 64 == 0) ? 65536 : (r % 8 == 0) ? 4096 : 16 + r % 240;
        temporaries[k] = heap.Alloc(temporary_sizes[k]);
        ++ops;
      }
      if (XorShift(seed) % 8 == 0) {
        [[maybe_unused]] auto cached = heap.Enter(kCache);
        const size_t size = 512 + XorShift(seed) % 1024;
        Response entry{heap.Alloc(size), size};
        ++ops;
        Response evicted{nullptr, 0};
        {
          std::lock_guard<std::mutex> lock(cache.mu);
          if (cache.entries.size() == kCacheEntries) {
            // Evict a random entry: often one another thread allocated.
            Response& slot = cache.entries[XorShift(seed) % kCacheEntries];
            evicted = slot;
            slot = entry;
          } else {
            cache.entries.push_back(entry);
          }
        }
        if (evicted.body != nullptr) {
          heap.Free(evicted.body, evicted.size);
          ++ops;
        }
      }
      for (int k = 0; k < 8; ++k) {
        heap.Free(temporaries[k], temporary_sizes[k]);
        ++ops;
      }
    }
    {
      [[maybe_unused]] auto respond = heap.Enter(kRespond);
      const size_t size = 256 + XorShift(seed) % 4096;
      void* body = heap.Alloc(size);
      ++ops;
      if (body != nullptr) memset(body, 'r', 256);
      batch.push_back(Response{body, size});
      if (batch.size() == kBatch) {
        writer.Push(std::move(batch));
        batch = std::vector<Response>();
        batch.reserve(kBatch);
      }
    }
    heap.Free(header, header_size);
    ++ops;
  }
  if (!batch.empty()) writer.Push(std::move(batch));
  return ops;
}

template <typename Heap>
uint64_t ServerWorkload(Heap& heap, int threads, int64_t requests_per_thread) {
  ResponseWriter writer;
  SessionCache cache;
  cache.entries.reserve(256);
  std::atomic<uint64_t> ops{0};
  uint64_t writer_ops = 0;
  std::thread writer_thread([&] { writer_ops = writer.Run(heap); });
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      // Relaxed: summed after join(), which orders it.
      ops.fetch_add(Serve(heap, t, requests_per_thread, writer, cache),
                    std::memory_order_relaxed);
    });
  }
  for (std::thread& t : pool) t.join();
  writer.Finish();
  writer_thread.join();
  uint64_t total = ops.load(std::memory_order_relaxed) + writer_ops;
  for (const Response& r : cache.entries) {
    heap.Free(r.body, r.size);
    ++total;
  }
  return total;
}

// ---- (c) frame ------------------------------------------------------------------------

constexpr int kFrameAllocations = 2000;
constexpr size_t kFrameArenaBytes = size_t{1} << 20;  // 2,000 blocks of <= 272 bytes fit

// Plain: each block malloc'd, all freed at the end of the frame.
inline uint64_t FramesPlain(int thread, int64_t frames) {
  std::vector<void*> blocks;
  blocks.reserve(kFrameAllocations);
  uint32_t seed = 4242 + static_cast<uint32_t>(thread);
  uint64_t ops = 0;
  for (int64_t f = 0; f < frames; ++f) {
    for (int k = 0; k < kFrameAllocations; ++k) {
      const size_t size = 16 + XorShift(seed) % 256;
      void* p = malloc(size);
      if (p != nullptr) memset(p, 0, 16);
      blocks.push_back(p);
    }
    for (void* p : blocks) free(p);
    ops += 2 * blocks.size();
    blocks.clear();
  }
  return ops;
}

// Arena: bump allocations, one reset per frame; traced through `traced` when non-null.
inline uint64_t FramesArena(TracingAllocator* traced, FrameArena& arena, int thread,
                     int64_t frames) {
  Allocator& frame = traced != nullptr ? static_cast<Allocator&>(*traced) : arena;
  uint32_t seed = 4242 + static_cast<uint32_t>(thread);
  uint64_t ops = 0;
  for (int64_t f = 0; f < frames; ++f) {
    for (int k = 0; k < kFrameAllocations; ++k) {
      const size_t size = 16 + XorShift(seed) % 256;
      void* p = frame.Alloc(size, 16, MEMTRACE_CALL_SITE());
      if (p != nullptr) memset(p, 0, 16);
    }
    if (traced != nullptr) {
      arena.ResetTraced(*traced);
    } else {
      arena.Reset();
    }
    ops += 2 * kFrameAllocations;
  }
  return ops;
}

// ---- (d) realloc ------------------------------------------------------------------------

template <typename Heap>
uint64_t Growth(Heap& heap, int thread, int64_t rounds) {
  using Vector = std::vector<uint32_t, typename Heap::template ContainerAllocator<uint32_t>>;
  using String = std::basic_string<char, std::char_traits<char>,
                                   typename Heap::template ContainerAllocator<char>>;
  uint32_t seed = 99 + static_cast<uint32_t>(thread);
  uint64_t ops = 0;
  for (int64_t round = 0; round < rounds; ++round) {
    // A buffer grown by realloc in steps of 16-271 bytes up to 16 KiB.
    size_t size = 16;
    void* buffer = heap.Alloc(size);
    ++ops;
    while (size < 16384) {
      const size_t grown = size + 16 + XorShift(seed) % 256;
      void* moved = heap.Realloc(buffer, size, grown);
      ++ops;
      if (moved == nullptr) break;
      buffer = moved;
      size = grown;
      static_cast<char*>(buffer)[size - 1] = 1;
    }
    heap.Free(buffer, size);
    ++ops;

    // A vector and a string grown from empty; each change of capacity is an allocation
    // and (after the first) the release of the old block.
    Vector v(heap.template MakeContainerAllocator<uint32_t>());
    const int n = 200 + static_cast<int>(XorShift(seed) % 800);
    size_t capacity = v.capacity();
    for (int i = 0; i < n; ++i) {
      v.push_back(static_cast<uint32_t>(i));
      if (v.capacity() != capacity) {
        ops += capacity == 0 ? 1 : 2;
        capacity = v.capacity();
      }
    }
    String s(heap.template MakeContainerAllocator<char>());
    size_t string_capacity = s.capacity();
    bool on_heap = false;  // an empty string lives in its small buffer
    const int chunks = 50 + static_cast<int>(XorShift(seed) % 150);
    for (int i = 0; i < chunks; ++i) {
      s.append(1 + XorShift(seed) % 32, 'x');
      if (s.capacity() != string_capacity) {
        ops += on_heap ? 2 : 1;
        on_heap = true;
        string_capacity = s.capacity();
      }
    }
    ops += (capacity != 0 ? 1 : 0) + (on_heap ? 1 : 0);  // the destructors' releases
  }
  return ops;
}

// ---- Running a workload on T threads ----------------------------------------------------

struct Work {
  // Per thread, at scale 1. Chosen so the plain churn, server, frame and realloc runs
  // take roughly 20-80 ms on one thread of the project's 2-vCPU VM.
  static constexpr int64_t kChurnIterations = 1'000'000;
  static constexpr int64_t kServerRequests = 40'000;
  static constexpr int64_t kFrames = 250;
  static constexpr int64_t kGrowthRounds = 1'000;
};

template <typename Fn>
uint64_t OnThreads(int threads, Fn fn) {
  std::atomic<uint64_t> ops{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    // Relaxed: summed after join(), which orders it.
    pool.emplace_back([&, t] { ops.fetch_add(fn(t), std::memory_order_relaxed); });
  }
  for (std::thread& t : pool) t.join();
  return ops.load(std::memory_order_relaxed);
}

template <typename Heap>
uint64_t RunWorkload(const std::string& workload, Heap& heap, int threads, double scale) {
  auto scaled = [&](int64_t n) {
    return std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(n) * scale));
  };
  if (workload == "churn") {
    return OnThreads(threads,
                     [&](int t) { return Churn(heap, t, scaled(Work::kChurnIterations)); });
  }
  if (workload == "server") return ServerWorkload(heap, threads, scaled(Work::kServerRequests));
  if (workload == "realloc") {
    return OnThreads(threads,
                     [&](int t) { return Growth(heap, t, scaled(Work::kGrowthRounds)); });
  }
  return 0;
}

// A "Name: N kB" line of /proc/self/status (VmHWM, VmRSS), in KiB, or -1.
inline long ProcStatusKb(const char* name) {
  FILE* status = fopen("/proc/self/status", "r");
  if (status == nullptr) return -1;
  const size_t name_len = strlen(name);
  char line[256];
  long kb = -1;
  while (fgets(line, sizeof line, status) != nullptr) {
    if (strncmp(line, name, name_len) == 0 && line[name_len] == ':') {
      kb = strtol(line + name_len + 1, nullptr, 10);
      break;
    }
  }
  fclose(status);
  return kb;
}

// This process's peak resident set. VmHWM, not getrusage's ru_maxrss: Linux carries that
// across exec, so a child started by a large parent would report the parent's peak.
inline long PeakRssKb() { return ProcStatusKb("VmHWM"); }
// This process's resident set now.
inline long CurrentRssKb() { return ProcStatusKb("VmRSS"); }

}  // namespace bench
}  // namespace memtrace

#endif  // MEMTRACE_BENCH_WORKLOADS_H_
