// Copyright 2026 The memtrace Authors.
//
// fork_benchmark: what a fork() costs a traced program, the interposer's fork handlers
// included. Run untraced, under the interposer, and under it with MEMTRACE_TRACE_FORKS=1
// (each forked child then writes a capture of its own); bench/fork_cost.sh runs the three
// alternately and prints the ratios.
//
//   BM_ForkAndWait   the program holds 2,000 blocks; each iteration forks a child that
//                    frees one of them and calls _exit(0), and waits for it. The time is
//                    the parent's, from fork() to the end of waitpid(): the child's whole
//                    life, its capture's set-up and finish included.

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include <benchmark/benchmark.h>

namespace {

void BM_ForkAndWait(benchmark::State& state) {
  std::vector<void*> blocks;
  for (int i = 0; i < 2000; ++i) blocks.push_back(malloc(100 + static_cast<size_t>(i)));
  size_t next = 0;
  for (auto _ : state) {
    const pid_t child = fork();
    if (child == 0) {
      free(blocks[next]);
      _exit(0);
    }
    if (child < 0) {
      state.SkipWithError("fork failed");
      break;
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      state.SkipWithError("the child failed");
      break;
    }
    next = (next + 1) % blocks.size();
  }
  for (void* p : blocks) free(p);
}
BENCHMARK(BM_ForkAndWait)->Unit(benchmark::kMicrosecond)->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
