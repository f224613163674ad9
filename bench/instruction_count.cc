// Copyright 2026 The memtrace Authors.
//
// instruction_count: fixed amounts of the two hot loops, for counting instructions under
// callgrind (bench/count_instructions runs it). On a shared, noisy VM wall-clock ratios
// move by 30% between runs; instruction counts do not, so they show what a change to the
// hot path or the drainer did, next to the Google Benchmark ratios (bench/README.md).
//
//   instruction_count pairs-untraced N   N churn pairs (overhead_benchmark's workload),
//   instruction_count pairs-traced N     ... and the same recorded through the Recorder
//   instruction_count drain N            N alloc/free pairs recorded, then one Flush
//
// The loops to count are the functions ChurnBurst<...> (overhead_benchmark's churn step,
// bench/churn.h) and (for drain) Drainer::Round; the script restricts callgrind to them
// (--toggle-collect), so setup and teardown are not counted.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bench/churn.h"
#include "runtime/internal/recorder.h"

namespace memtrace {
namespace {

constexpr int kBurst = 2048;

// One burst of overhead_benchmark's churn loop (churn.h), traced or not.
template <bool kTraced>
__attribute__((noinline)) void ChurnBurst(Recorder* recorder, void* (&slots)[bench::kChurnWindow],
                                          uint32_t& seed, uint64_t& failed) {
  for (int i = 0; i < kBurst; ++i) bench::ChurnStep<kTraced>(recorder, slots, seed, failed);
}

int Pairs(bool traced, int64_t n) {
  Recorder* recorder = nullptr;
  std::unique_ptr<Recorder> owner;
  if (traced) {
    owner = Recorder::Create(Config{}).value();
    recorder = owner.get();
    recorder->Start().IgnoreError();
  }
  void* slots[bench::kChurnWindow] = {};
  uint32_t seed = 12345;
  uint64_t failed = 0;
  for (int64_t done = 0; done < n; done += kBurst) {
    if (recorder != nullptr) {
      ChurnBurst<true>(recorder, slots, seed, failed);
    } else {
      ChurnBurst<false>(nullptr, slots, seed, failed);
    }
    if (recorder != nullptr) recorder->Flush().IgnoreError();  // the drainer keeps up
  }
  for (void* p : slots) {
    if (recorder != nullptr && p != nullptr) {
      recorder->RecordFree(layers::kCpuHeap, reinterpret_cast<uint64_t>(p));
    }
    free(p);
  }
  printf("pairs %lld failed %llu\n", static_cast<long long>((n + kBurst - 1) / kBurst * kBurst),
         static_cast<unsigned long long>(failed));
  return 0;
}

// BM_DrainerThroughput's load: pairs at 4096 reused addresses and 256 sites.
int Drain(int64_t n) {
  Config config;
  config.ring_capacity_log2 = 22;
  config.drain_period = absl::Seconds(1);  // the Flush below drains, the period hardly
  auto recorder = Recorder::Create(config).value();
  recorder->Start().IgnoreError();
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t a = 0x100000 + 16 * static_cast<uint64_t>(i % 4096);
    recorder->RecordAlloc(layers::kCpuHeap, a, 64, 0x400000 + (i & 255));
    recorder->RecordFree(layers::kCpuHeap, a);
  }
  recorder->Flush().IgnoreError();
  printf("events %llu\n",
         static_cast<unsigned long long>(recorder->Integrity().events_applied));
  return 0;
}

}  // namespace
}  // namespace memtrace

int main(int argc, char** argv) {
  const int64_t n = argc > 2 ? atoll(argv[2]) : 0;
  if (argc != 3 || n <= 0 || (strcmp(argv[1], "pairs-untraced") != 0 &&
                              strcmp(argv[1], "pairs-traced") != 0 &&
                              strcmp(argv[1], "drain") != 0)) {
    fprintf(stderr, "usage: instruction_count pairs-untraced|pairs-traced|drain N\n");
    return 2;
  }
  if (strcmp(argv[1], "drain") == 0) return memtrace::Drain(n);
  return memtrace::Pairs(strcmp(argv[1], "pairs-traced") == 0, n);
}
