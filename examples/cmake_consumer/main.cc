// A program that traces its own allocator through memtrace's API, built with CMake
// (CMakeLists.txt beside it). It prints the counts memtrace kept and, with an argument,
// writes a capture there that `memtrace summary` reads.

#include <cstdio>
#include <memory>

#include "runtime/malloc_allocator.h"
#include "runtime/tracer.h"
#include "sinks/jsonl_sink.h"

int main(int argc, char** argv) {
  auto tracer = memtrace::Tracer::Create(memtrace::Config{}).value();
  std::unique_ptr<memtrace::JsonlSink> sink;
  if (argc > 1) {
    sink = memtrace::JsonlSink::Open(argv[1]).value();
    if (!tracer->recorder().SetObserver(sink.get()).ok()) return 1;
  }
  if (!tracer->Start().ok()) return 1;
  memtrace::MallocAllocator heap;
  memtrace::TracingAllocator traced(tracer.get(), &heap, memtrace::layers::kCpuHeap);
  static const memtrace::ScopeName kLoad("load");
  void* kept[10];
  {
    memtrace::Span span = tracer->Enter(kLoad);
    for (void*& p : kept) p = traced.Alloc(1000, 16, MEMTRACE_HERE());
    for (int i = 0; i < 5; ++i) traced.Free(memtrace::AsMemory(kept[i], 1000), 16, MEMTRACE_HERE());
  }
  if (!tracer->Flush().ok()) return 1;
  const memtrace::Snapshot snapshot = tracer->TakeSnapshot();
  std::printf("live_count=%llu live_bytes=%llu\n",
              static_cast<unsigned long long>(snapshot.totals.live_count),
              static_cast<unsigned long long>(snapshot.totals.live_bytes));
  for (int i = 5; i < 10; ++i) traced.Free(memtrace::AsMemory(kept[i], 1000), 16, MEMTRACE_HERE());
  if (!tracer->Stop().ok()) return 1;
  if (sink != nullptr && !sink->Finish(tracer->TakeSnapshot()).ok()) return 1;
  return 0;
}
