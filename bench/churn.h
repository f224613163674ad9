// Copyright 2026 The memtrace Authors.
//
// churn.h: the engine issue's churn loop, one step at a time, shared by the Google
// Benchmark that times it (overhead_benchmark.cc) and the fixed loop that counts its
// instructions (instruction_count.cc), so both measure the same code.
//
// A step picks a random slot of a window of kChurnWindow, frees what is there and
// mallocs 16-271 bytes into it. Traced, it records the release before releasing and the
// allocation after obtaining it, in the order TracingAllocator uses (tracer.h), and an
// allocation whose record fails is freed and left out (the seed's semantics).
//
// Thread safety: a step touches only its caller's slots and seed; the recorder is for
// any thread.

#ifndef MEMTRACE_BENCH_CHURN_H_
#define MEMTRACE_BENCH_CHURN_H_

#include <cstdint>
#include <cstdlib>

#include "runtime/internal/recorder.h"

namespace memtrace {
namespace bench {

inline uint32_t XorShift(uint32_t& s) {
  s ^= s << 13;
  s ^= s >> 17;
  s ^= s << 5;
  return s;
}

inline constexpr int kChurnWindow = 64;

// One malloc+free pair of the churn loop; `failed` counts records that failed.
template <bool kTraced>
__attribute__((always_inline)) inline void ChurnStep(Recorder* recorder,
                                                     void* (&slots)[kChurnWindow],
                                                     uint32_t& seed, uint64_t& failed) {
  const uint32_t r = XorShift(seed);
  void*& slot = slots[r & (kChurnWindow - 1)];
  if (slot != nullptr) {
    if constexpr (kTraced) {
      if (recorder->RecordFree(layers::kCpuHeap, reinterpret_cast<uint64_t>(slot)) ==
          RecordResult::kFailed) {
        ++failed;
      }
    }
    free(slot);
  }
  const uint64_t size = 16 + (r >> 8) % 256;
  slot = malloc(size);
  if constexpr (kTraced) {
    if (recorder->RecordAlloc(layers::kCpuHeap, reinterpret_cast<uint64_t>(slot), size,
                              0x401000) == RecordResult::kFailed) {
      free(slot);
      slot = nullptr;
      ++failed;
    }
  }
  asm volatile("" : : "r"(slot) : "memory");  // the pointer is used
}

}  // namespace bench
}  // namespace memtrace

#endif  // MEMTRACE_BENCH_CHURN_H_
