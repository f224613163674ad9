// Copyright 2026 The memtrace Authors.
//
// sampling_target: a program whose allocations sampling_test estimates from a sampled
// capture. It knows its own truth, and the variance of the estimator for it, and prints
// both.
//
//   sampling_target sizes PERIOD    blocks of sizes from 8 B to 1 MiB, a quarter kept live
//   sampling_target realloc PERIOD  buffers grown by realloc (moved or in place), shrunk
//                                   to fit, freed or kept
//
// PERIOD is the capture's sampling interval N: it sets how many blocks each size class
// needs (about 200 recorded) and the variances. Each group of allocations comes from its
// own function, all in the section "memtrace_sampling_workload", so the test can tell the
// groups apart by call site and leave out everything else the process allocates. Output:
//
//   section <start> <stop>
//   group <name> <function address> allocated_count=.. allocated_bytes=.. live_count=..
//     live_bytes=.. var_allocated_count=.. var_allocated_bytes=.. var_live_count=..
//     var_live_bytes=..                          (one line per group)
//
// Truth has the unsampled capture's meaning: an allocation is a malloc or a realloc that
// moved the block; a realloc in place adds its growth to the allocated bytes. The
// variances follow preload/byte_sampler.h: a block's draw, at its malloc or move, decides
// it until its next move or release ("segment"), with p = 1 - exp(-max(s, 1)/N) for its
// size s then, and the segment adds (1 - p)/p to the count's variance and
// A^2 (1 - p)/p to the bytes' (A: the bytes it added to the allocated total).

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

// noipa: no clone of a workload function (a constprop copy) may sit at another address.
#define MEMTRACE_WORKLOAD __attribute__((noipa, section("memtrace_sampling_workload")))

// The section's bounds, defined by the linker.
extern "C" char __start_memtrace_sampling_workload[];
extern "C" char __stop_memtrace_sampling_workload[];

namespace {

double period = 0;

double Probability(uint64_t size) {
  return -std::expm1(-static_cast<double>(size == 0 ? 1 : size) / period);
}

// Keeps the compiler from removing a malloc whose block is never used.
void Use(void* p) { asm volatile("" : : "r"(p) : "memory"); }

void* Checked(void* p) {
  if (p == nullptr) {
    fprintf(stderr, "sampling_target: allocation failed\n");
    exit(3);
  }
  Use(p);
  return p;
}

struct Truth {
  double allocated_count = 0, allocated_bytes = 0, live_count = 0, live_bytes = 0;
  double var_allocated_count = 0, var_allocated_bytes = 0, var_live_count = 0,
         var_live_bytes = 0;

  // A segment (above) that ends, drawn at `drawn` bytes, having added `added`.
  void EndSegment(uint64_t drawn, uint64_t added) {
    const double p = Probability(drawn), a = static_cast<double>(added);
    var_allocated_count += (1 - p) / p;
    var_allocated_bytes += a * a * (1 - p) / p;
  }
  // A block live at the end, of `size` bytes, in a segment drawn at `drawn` bytes.
  void Live(uint64_t drawn, uint64_t size) {
    const double p = Probability(drawn), l = static_cast<double>(size);
    live_count += 1;
    live_bytes += l;
    var_live_count += (1 - p) / p;
    var_live_bytes += l * l * (1 - p) / p;
  }
  void Print(const char* name, const void* function) const {
    printf("group %s %p allocated_count=%.0f allocated_bytes=%.0f live_count=%.0f "
           "live_bytes=%.0f var_allocated_count=%.17g var_allocated_bytes=%.17g "
           "var_live_count=%.17g var_live_bytes=%.17g\n",
           name, function, allocated_count, allocated_bytes, live_count, live_bytes,
           var_allocated_count, var_allocated_bytes, var_live_count, var_live_bytes);
  }
};

// `n` blocks of `size` bytes; every fourth stays live (into `kept`, room for n/4).
// Inlined into one function per size class (ChurnN below), whose call sites are that
// class's own.
__attribute__((always_inline)) inline void Churn(uint64_t size, uint64_t n, void** kept,
                                                 Truth* t) {
  for (uint64_t i = 0; i < n; ++i) {
    void* p = Checked(malloc(size));
    t->allocated_count += 1;
    t->allocated_bytes += static_cast<double>(size);
    t->EndSegment(size, size);
    if (i % 4 == 3) {
      kept[i / 4] = p;
      t->Live(size, size);
    } else {
      free(p);
    }
  }
}

// Not templates: a template's instances go to sections of their own (COMDAT groups),
// whatever section the attribute names.
#define MEMTRACE_CHURN(k)                                                          \
  MEMTRACE_WORKLOAD void Churn##k(uint64_t size, uint64_t n, void** kept, Truth* t) { \
    Churn(size, n, kept, t);                                                       \
  }
MEMTRACE_CHURN(0)
MEMTRACE_CHURN(1)
MEMTRACE_CHURN(2)
MEMTRACE_CHURN(3)
MEMTRACE_CHURN(4)
MEMTRACE_CHURN(5)
MEMTRACE_CHURN(6)
MEMTRACE_CHURN(7)
MEMTRACE_CHURN(8)
MEMTRACE_CHURN(9)
MEMTRACE_CHURN(10)
MEMTRACE_CHURN(11)
MEMTRACE_CHURN(12)
#undef MEMTRACE_CHURN

void RunClass(void (*churn)(uint64_t, uint64_t, void**, Truth*), uint64_t size) {
  // About 200 recorded blocks expected (50 of the live ones), at least 1024 blocks.
  const double wanted = std::ceil(200 / Probability(size));
  const uint64_t n = wanted < 1024 ? 1024 : wanted > 4e6 ? 4000000 : static_cast<uint64_t>(wanted);
  void** kept = static_cast<void**>(calloc(n / 4 + 1, sizeof(void*)));
  Truth t;
  churn(size, n, kept, &t);
  const std::string name = "size" + std::to_string(size);
  t.Print(name.c_str(), reinterpret_cast<const void*>(churn));
}

void Sizes() {
  // Powers of two and sizes between them, around the periods the test uses (4 KiB,
  // 64 KiB), where a weight lies between 1 and 2.
  RunClass(Churn0, 8);
  RunClass(Churn1, 24);
  RunClass(Churn2, 72);
  RunClass(Churn3, 200);
  RunClass(Churn4, 1000);
  RunClass(Churn5, 4096);
  RunClass(Churn6, 6000);
  RunClass(Churn7, 16384);
  RunClass(Churn8, 50000);
  RunClass(Churn9, 65536);
  RunClass(Churn10, 100000);
  RunClass(Churn11, 262144);
  RunClass(Churn12, 1 << 20);
}

uint64_t lcg = 0x2545f4914f6cdd1d;
uint64_t Random(uint64_t below) {
  lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
  return (lcg >> 33) % below;
}

struct Buffer {
  void* p = nullptr;
  uint64_t size = 0;
  uint64_t target = 0;
  uint64_t drawn = 0;  // its segment's size at the draw
  uint64_t added = 0;  // bytes its segment added to the allocated total
};

// Buffers grown one step at a time, round robin among kSlots at once, so that most
// reallocs move and some grow in place; when one reaches its length it is shrunk to fit
// (in place, mostly), then freed or, one in eight, kept.
MEMTRACE_WORKLOAD void Builders(uint64_t steps, Truth* t) {
  constexpr int kSlots = 64;
  Buffer slots[kSlots];
  for (uint64_t step = 0; step < steps; ++step) {
    Buffer& b = slots[Random(kSlots)];
    if (b.p == nullptr) {
      const uint64_t size = 1 + Random(64);
      b.p = Checked(Random(2) == 0 ? malloc(size) : realloc(nullptr, size));
      b.size = b.drawn = b.added = size;
      const uint64_t kind = Random(20);
      b.target = kind < 14 ? 64 + Random(512) : kind < 19 ? 1024 + Random(8192)
                                                          : 65536 + Random(262144);
      t->allocated_count += 1;
      t->allocated_bytes += static_cast<double>(size);
      continue;
    }
    uint64_t size;
    if (b.size < b.target) {
      const uint64_t grown = Random(2) == 0 ? b.size + 1 + Random(96) : b.size + b.size / 2;
      size = grown < b.target ? grown : b.target;
    } else {
      size = b.target - Random(b.target / 4 + 1);  // shrink to fit, then done
    }
    void* q = Checked(realloc(b.p, size));
    if (q != b.p) {  // moved: a release and a new allocation, drawn anew
      t->EndSegment(b.drawn, b.added);
      b.drawn = b.added = size;
      t->allocated_count += 1;
      t->allocated_bytes += static_cast<double>(size);
    } else if (size > b.size) {  // grown in place: the same allocation, larger
      b.added += size - b.size;
      t->allocated_bytes += static_cast<double>(size - b.size);
    }
    b.p = q;
    const bool done = b.size >= b.target;
    b.size = size;
    if (!done) continue;
    if (Random(8) == 0) {
      t->EndSegment(b.drawn, b.added);
      t->Live(b.drawn, b.size);
    } else {
      t->EndSegment(b.drawn, b.added);
      free(b.p);
    }
    b = Buffer{};
  }
  for (Buffer& b : slots) {  // unfinished ones are freed
    if (b.p == nullptr) continue;
    t->EndSegment(b.drawn, b.added);
    free(b.p);
  }
}

void Reallocs() {
  Truth t;
  Builders(400000, &t);
  t.Print("realloc", reinterpret_cast<const void*>(&Builders));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (strcmp(argv[1], "sizes") != 0 && strcmp(argv[1], "realloc") != 0) ||
      (period = strtod(argv[2], nullptr)) < 1) {
    fprintf(stderr, "usage: sampling_target sizes|realloc PERIOD\n");
    return 2;
  }
  printf("section %p %p\n", static_cast<void*>(__start_memtrace_sampling_workload),
         static_cast<void*>(__stop_memtrace_sampling_workload));
  if (strcmp(argv[1], "sizes") == 0) {
    Sizes();
  } else {
    Reallocs();
  }
  return 0;
}
