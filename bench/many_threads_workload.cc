// Copyright 2026 The memtrace Authors.
//
// many_threads_workload: more busy threads than CPUs, each allocating and freeing as fast
// as it can, the way a server's thread pool does under load: what memtrace costs when its
// drainer is one runnable thread among hundreds. N threads each make 20,000 malloc()s of
// 16-215 bytes, keeping the last 64 and freeing the rest, then free those and end.
//
//   memtrace run --quiet --output=/tmp/mt.mtb -- bazel-bin/bench/many_threads_workload 256
//   memtrace summary /tmp/mt.mtb

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2 || std::atoi(argv[1]) <= 0) {
    std::fprintf(stderr, "usage: many_threads_workload N (threads)\n");
    return 2;
  }
  const int n = std::atoi(argv[1]);
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) {
    threads.emplace_back([t] {
      std::deque<void*> kept;
      for (int i = 0; i < 20000; ++i) {
        kept.push_back(std::malloc(16 + static_cast<size_t>((i + t) % 200)));
        if (kept.size() > 64) {
          std::free(kept.front());
          kept.pop_front();
        }
      }
      for (void* p : kept) std::free(p);
    });
  }
  for (std::thread& t : threads) t.join();
  std::printf("ok %d\n", n);
  return 0;
}
