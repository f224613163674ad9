// Copyright 2026 The memtrace Authors.
//
// server_workload: a small multithreaded "server" traced by memtrace, and the README's
// main command.
//
// Worker threads take requests from a queue. Each request runs under a "request" scope
// with "parse", "handle" and "respond" phases, allocating real heap memory through a
// TracingAllocator over malloc. Responses are handed to a writer thread that frees them, so about a
// third of all frees happen on a thread other than the one that allocated. A small
// session cache keeps some blocks alive across requests, and a few of them are never
// freed (they show up as live at the end). At the end the workload prints memtrace's
// per-scope summary with the capture's integrity block.
//
//   bazel run //examples:server_workload -- --requests=20000 --workers=4

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "runtime/malloc_allocator.h"
#include "runtime/tracer.h"
#include "sinks/jsonl_sink.h"
#include "sinks/summary_table.h"

ABSL_FLAG(int, requests, 20000, "requests to serve");
ABSL_FLAG(int, workers, 4, "worker threads");
ABSL_FLAG(std::string, capture, "",
          "also write the JSONL capture here (docs/capture-format.md)");

namespace {

using memtrace::AsMemory;
using memtrace::ScopeName;
using memtrace::Span;

memtrace::Tracer* g_tracer = nullptr;
memtrace::TracingAllocator* g_heap = nullptr;

// Not inlined, so that MEMTRACE_CALL_SITE() names each line that calls it.
__attribute__((noinline)) void* TracedMalloc(size_t size) {
  return g_heap->Alloc(size, 16, MEMTRACE_CALL_SITE());
}

void TracedFree(void* p, size_t size) {
  if (p != nullptr) g_heap->Free(AsMemory(p, size), 16, MEMTRACE_CALL_SITE());
}

// A response body is 256 bytes plus up to kBodySpread - 1 more.
constexpr size_t kBodyMinBytes = 256;
constexpr size_t kBodySpread = 4096;

struct Response {
  char* body;
  size_t size;
};

// The program's own count of response bytes allocated and not yet freed, and its peak: a
// check of memtrace's high-water for request/respond that does not use memtrace. A worker
// adds a body's size after malloc returned it and the writer subtracts it before it frees
// the body, so the count never exceeds what is really live; the true peak is at most one
// body per worker and one for the writer above the counted one.
class LiveResponses {
 public:
  void Add(size_t n) {
    // relaxed: a statistic; the RMW keeps the count exact, no other data is published.
    const size_t now = live_.fetch_add(n, std::memory_order_relaxed) + n;
    size_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak &&
           !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
  void Remove(size_t n) { live_.fetch_sub(n, std::memory_order_relaxed); }
  // Read after every thread that calls Add() or Remove() was joined.
  size_t peak() const { return peak_.load(std::memory_order_relaxed); }

 private:
  std::atomic<size_t> live_{0};
  std::atomic<size_t> peak_{0};
};

LiveResponses g_live_responses;

class Writer {
 public:
  void Push(Response r) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(r);
    cv_.notify_one();
  }
  void Finish() {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_one();
  }
  void Run() {
    static const ScopeName kWrite("writer");
    Span span = g_tracer->Enter(kWrite);
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return done_ || !queue_.empty(); });
      while (!queue_.empty()) {
        Response r = queue_.front();
        queue_.pop_front();
        lock.unlock();
        g_live_responses.Remove(r.size);
        TracedFree(r.body, r.size);  // freed on a thread that did not allocate it
        lock.lock();
      }
      if (done_) return;
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Response> queue_;
  bool done_ = false;
};

struct SessionCache {
  static constexpr size_t kEntryBytes = 1024;
  std::mutex mu;
  std::vector<void*> entries;
};

void Serve(int worker, int requests, Writer& writer, SessionCache& cache) {
  static const ScopeName kRequest("request");
  static const ScopeName kParse("parse");
  static const ScopeName kHandle("handle");
  static const ScopeName kRespond("respond");
  static const ScopeName kCache("session_cache");
  std::mt19937 rng(worker + 1);
  for (int i = 0; i < requests; ++i) {
    Span request = g_tracer->Enter(kRequest);
    char* header;
    const size_t header_size = 64 + rng() % 512;
    {
      Span parse = g_tracer->Enter(kParse);
      header = static_cast<char*>(TracedMalloc(header_size));
      if (header != nullptr) memset(header, 'h', 64);
    }
    {
      Span handle = g_tracer->Enter(kHandle);
      std::vector<std::pair<void*, size_t>> temporaries;
      for (int k = 0; k < 4; ++k) {
        const size_t n = 16 + rng() % 256;
        temporaries.emplace_back(TracedMalloc(n), n);
      }
      if (rng() % 8 == 0) {
        Span cached = g_tracer->Enter(kCache);
        void* entry = TracedMalloc(SessionCache::kEntryBytes);
        std::lock_guard<std::mutex> lock(cache.mu);
        cache.entries.push_back(entry);
        if (cache.entries.size() > 64) {  // evict the oldest: freed under another scope
          TracedFree(cache.entries.front(), SessionCache::kEntryBytes);
          cache.entries.erase(cache.entries.begin());
        }
      }
      for (auto [t, n] : temporaries) TracedFree(t, n);
    }
    {
      Span respond = g_tracer->Enter(kRespond);
      const size_t size = kBodyMinBytes + rng() % kBodySpread;
      char* body = static_cast<char*>(TracedMalloc(size));
      if (body != nullptr) {
        g_live_responses.Add(size);
        memset(body, 'r', size);
        writer.Push(Response{body, size});
      }
    }
    TracedFree(header, header_size);
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Runs a small multithreaded server workload under memtrace and prints its summary.");
  absl::ParseCommandLine(argc, argv);
  const int requests = absl::GetFlag(FLAGS_requests);
  const int workers = absl::GetFlag(FLAGS_workers);
  if (requests < 0 || workers < 1 || workers > 256) {
    fprintf(stderr, "server_workload: --requests must be >= 0 and --workers in 1..256\n");
    return 2;
  }

  auto tracer = memtrace::Tracer::Create(memtrace::Config{});
  if (!tracer.ok()) {
    fprintf(stderr, "server_workload: %s\n", tracer.status().ToString().c_str());
    return 1;
  }
  g_tracer = tracer->get();
  memtrace::MallocAllocator malloc_heap;
  memtrace::TracingAllocator traced_heap(g_tracer, &malloc_heap, memtrace::layers::kCpuHeap);
  g_heap = &traced_heap;
  std::unique_ptr<memtrace::JsonlSink> sink;
  if (const std::string path = absl::GetFlag(FLAGS_capture); !path.empty()) {
    auto opened = memtrace::JsonlSink::Open(path);
    if (!opened.ok()) {
      fprintf(stderr, "server_workload: %s\n", opened.status().ToString().c_str());
      return 1;
    }
    sink = std::move(opened).value();
    if (absl::Status s = g_tracer->recorder().SetObserver(sink.get()); !s.ok()) {
      fprintf(stderr, "server_workload: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  if (absl::Status s = g_tracer->Start(); !s.ok()) {
    fprintf(stderr, "server_workload: %s\n", s.ToString().c_str());
    return 1;
  }

  Writer writer;
  SessionCache cache;
  std::thread writer_thread([&] { writer.Run(); });
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w) {
    const int share = requests / workers + (w < requests % workers ? 1 : 0);
    pool.emplace_back(Serve, w, share, std::ref(writer), std::ref(cache));
  }
  for (auto& t : pool) t.join();
  writer.Finish();
  writer_thread.join();

  const memtrace::Snapshot snapshot = g_tracer->TakeSnapshot();
  printf("server_workload: %d requests on %d workers; %zu session-cache entries still live\n",
         requests, workers, cache.entries.size());
  // The writer's queue is unbounded, so how far it falls behind the workers depends on the
  // scheduler; this is what request/respond's high-water should show.
  printf("server_workload: responses not yet freed peaked at %.1f MiB, %zu bytes (the "
         "program's own count, within %.1f KiB)\n\n",
         static_cast<double>(g_live_responses.peak()) / (1024.0 * 1024.0),
         g_live_responses.peak(),
         static_cast<double>((workers + 1) * (kBodyMinBytes + kBodySpread)) / 1024.0);
  fputs(memtrace::FormatSummaryTable(snapshot).c_str(), stdout);
  for (void* entry : cache.entries) TracedFree(entry, SessionCache::kEntryBytes);
  g_tracer->Stop().IgnoreError();
  if (sink != nullptr) {
    // The capture's trailer holds the final state: everything, after Stop().
    const absl::Status written = sink->Finish(g_tracer->TakeSnapshot());
    const memtrace::JsonlSinkStats stats = sink->stats();
    fprintf(stderr, "server_workload: capture %s: %llu events, %llu bytes%s%s\n",
            absl::GetFlag(FLAGS_capture).c_str(),
            static_cast<unsigned long long>(stats.events_written),
            static_cast<unsigned long long>(stats.bytes_written), written.ok() ? "" : "; ",
            written.ok() ? "" : written.ToString().c_str());
    if (!written.ok()) return 3;
  }
  return snapshot.integrity.complete() ? 0 : 3;
}
