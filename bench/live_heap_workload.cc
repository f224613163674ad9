// Copyright 2026 The memtrace Authors.
//
// live_heap_workload: a program that ends with millions of blocks live, for what a large
// live set costs memtrace's drainer (its ledger's tables) and the analyzer's replay of
// the capture (its tables of live blocks). Allocates N blocks of 16-64 bytes with malloc,
// frees every other one, prints how many it kept, and exits without freeing them.
//
//   memtrace run --quiet --output=/tmp/big.mtb -- bazel-bin/bench/live_heap_workload 8000000
//   memtrace summary /tmp/big.mtb

#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2 || std::atol(argv[1]) <= 0) {
    std::fprintf(stderr, "usage: live_heap_workload N (blocks to allocate; half are kept)\n");
    return 2;
  }
  const long n = std::atol(argv[1]);
  std::vector<void*> blocks(static_cast<size_t>(n));
  for (long i = 0; i < n; ++i) blocks[static_cast<size_t>(i)] = std::malloc(16 + (i % 7) * 8);
  for (long i = 0; i < n; i += 2) std::free(blocks[static_cast<size_t>(i)]);
  std::printf("kept %ld\n", n / 2);
  return 0;
}
