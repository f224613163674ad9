// The runtime API from a make build (Makefile beside it, through pkg-config): a traced
// heap, a block allocated in a scope, and a census entry the program keeps by hand, read
// back from a snapshot.

#include <cstdio>
#include <cstring>

#include "runtime/census.h"
#include "runtime/malloc_allocator.h"
#include "runtime/tracer.h"

int main() {
  auto tracer = memtrace::Tracer::Create(memtrace::Config{}).value();
  memtrace::Census census;
  tracer->AttachCensus(&census);
  if (!tracer->Start().ok()) return 1;
  memtrace::MallocAllocator heap;
  memtrace::TracingAllocator traced(tracer.get(), &heap, memtrace::layers::kCpuHeap);
  static const memtrace::ScopeName kLoad("load");
  void* block = nullptr;
  {
    memtrace::Span span = tracer->Enter(kLoad);  // the block is the scope's
    block = traced.Alloc(4096, 16, MEMTRACE_HERE());
  }
  if (!census.Set("textures", 1 << 20).ok()) return 1;
  if (!tracer->Flush().ok()) return 1;
  const memtrace::Snapshot snapshot = tracer->TakeSnapshot();
  long long textures = -1;
  for (const memtrace::CensusEntry& e : snapshot.census) {
    if (e.label == "textures") textures = static_cast<long long>(e.bytes);
  }
  unsigned long long in_load = 0;
  for (const memtrace::ScopeUsage& s : snapshot.scopes) {
    if (s.path == "load") in_load = s.usage.live_bytes;
  }
  // One thread: every peak is exact.
  std::printf("live_bytes=%llu load=%llu textures=%lld peaks %s\n",
              static_cast<unsigned long long>(snapshot.totals.live_bytes), in_load, textures,
              snapshot.integrity.peaks_exact() ? "exact" : "inexact");
  traced.Free(memtrace::AsMemory(block, 4096), 16, MEMTRACE_HERE());
  tracer->AttachCensus(nullptr);
  return tracer->Stop().ok() ? 0 : 1;
}
