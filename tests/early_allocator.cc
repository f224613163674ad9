// Copyright 2026 The memtrace Authors.
//
// early_allocator.cc: a shared library that allocates in its constructor, which the
// loader runs before the interposer's (a library's constructors run before those of the
// objects that need it, and LD_PRELOAD's library comes first in that list). Linked into
// early_allocations; preload_before_start_test checks that these blocks are recorded at the
// stacks that allocated them.
//
//   BuildEarlyTable()   allocates a 50,043-byte table, kept live to the end
//   ChurnBeforeStart()  20,000 rounds (EARLY_ALLOCATIONS_ROUNDS sets another number)
//                       of two blocks, a 100-byte one and a 200-byte one, the older freed
//                       first; the newer is kept in every 1,000th of the first 20,000
//                       rounds (20 blocks of 200 bytes live at the end) and freed
//                       otherwise. Enough rounds overflow the interposer's log of these
//                       operations while blocks are live. EARLY_ALLOCATIONS_PEAK_AT=N:
//                       in round N, with both of its blocks live, a block of
//                       kEarlyPeakBytes too, freed at once: the high-water mark of
//                       everything done before start.

#include <stdlib.h>

extern "C" {
void* memtrace_early_table = nullptr;
void* memtrace_early_kept[20] = {};
}

namespace memtrace_early_test {

constexpr size_t kEarlyPeakBytes = 3000017;

__attribute__((noinline)) void BuildEarlyTable() {
  memtrace_early_table = malloc(50043);
  asm volatile("" : : "r"(memtrace_early_table) : "memory");
}

__attribute__((noinline)) void ChurnBeforeStart() {
  const char* rounds_text = getenv("EARLY_ALLOCATIONS_ROUNDS");
  const int rounds = rounds_text != nullptr ? atoi(rounds_text) : 20000;
  const char* peak_text = getenv("EARLY_ALLOCATIONS_PEAK_AT");
  const int peak_at = peak_text != nullptr ? atoi(peak_text) : -1;
  int kept = 0;
  for (int i = 0; i < rounds; ++i) {
    void* older = malloc(100);
    void* newer = malloc(200);
    asm volatile("" : : "r"(older), "r"(newer) : "memory");
    if (i == peak_at) {
      void* peak = malloc(kEarlyPeakBytes);
      asm volatile("" : : "r"(peak) : "memory");
      free(peak);
    }
    free(older);
    if (i % 1000 == 0 && kept < 20) {
      memtrace_early_kept[kept++] = newer;
    } else {
      free(newer);
    }
  }
}

__attribute__((constructor)) void EarlyAllocatorInit() {
  BuildEarlyTable();
  ChurnBeforeStart();
}

}  // namespace memtrace_early_test
