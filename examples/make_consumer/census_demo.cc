// The runtime API from a make build (Makefile beside it, through pkg-config): a traced
// heap, and a census entry the program keeps by hand, read back from a snapshot.

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
  void* block = traced.Alloc(4096, 16, MEMTRACE_HERE());
  if (!census.Set("textures", 1 << 20).ok()) return 1;
  if (!tracer->Flush().ok()) return 1;
  const memtrace::Snapshot snapshot = tracer->TakeSnapshot();
  long long textures = -1;
  for (const memtrace::CensusEntry& e : snapshot.census) {
    if (e.label == "textures") textures = static_cast<long long>(e.bytes);
  }
  std::printf("live_bytes=%llu textures=%lld\n",
              static_cast<unsigned long long>(snapshot.totals.live_bytes), textures);
  traced.Free(memtrace::AsMemory(block, 4096), 16, MEMTRACE_HERE());
  tracer->AttachCensus(nullptr);
  return tracer->Stop().ok() ? 0 : 1;
}
