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
// The loops to count are the functions ChurnBurst and (for drain) Drainer::Round; the
// script restricts callgrind to them (--toggle-collect), so setup and teardown are not
// counted.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/recorder.h"

namespace memtrace {
namespace {

uint32_t XorShift(uint32_t& s) {
  s ^= s << 13;
  s ^= s >> 17;
  s ^= s << 5;
  return s;
}

constexpr int kBurst = 2048;

// One burst of the churn loop of overhead_benchmark.cc: a random slot of a 64-slot
// window is freed and refilled with 16-271 bytes; traced when `recorder` is set.
extern "C" __attribute__((noinline)) void ChurnBurst(Recorder* recorder, void** slots,
                                                     uint32_t* seed) {
  for (int i = 0; i < kBurst; ++i) {
    const uint32_t r = XorShift(*seed);
    void*& slot = slots[r & 63];
    if (slot != nullptr) {
      if (recorder != nullptr) {
        recorder->RecordFree(layers::kCpuHeap, reinterpret_cast<uint64_t>(slot));
      }
      free(slot);
    }
    const uint64_t size = 16 + (r >> 8) % 256;
    slot = malloc(size);
    if (recorder != nullptr) {
      recorder->RecordAlloc(layers::kCpuHeap, reinterpret_cast<uint64_t>(slot), size,
                            0x401000);
    }
    asm volatile("" : : "r"(slot) : "memory");
  }
}

int Pairs(bool traced, int64_t n) {
  Recorder* recorder = nullptr;
  std::unique_ptr<Recorder> owner;
  if (traced) {
    owner = Recorder::Create(Config{}).value();
    recorder = owner.get();
    recorder->Start().IgnoreError();
  }
  void* slots[64] = {};
  uint32_t seed = 12345;
  for (int64_t done = 0; done < n; done += kBurst) {
    ChurnBurst(recorder, slots, &seed);
    if (recorder != nullptr) recorder->Flush().IgnoreError();  // the drainer keeps up
  }
  for (void* p : slots) {
    if (recorder != nullptr && p != nullptr) {
      recorder->RecordFree(layers::kCpuHeap, reinterpret_cast<uint64_t>(p));
    }
    free(p);
  }
  printf("pairs %lld\n", static_cast<long long>((n + kBurst - 1) / kBurst * kBurst));
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
