// Copyright 2026 The memtrace Authors.
//
// live_target: a program that serves its ledger (Config::live) for live_test.cc.
//
// kThreads threads each open the scope "worker/t<i>" and allocate blocks through a
// TracingAllocator, freeing every third one. Block i is allocated at the call site
// kSiteBase + kSiteStep * (i % kSites), a return address made up for the test, so every
// site holds blocks in every thread's scope. At the quiescent point (all joined) it
// prints what it holds by its own count, two lines:
//   ready <pid> <live_bytes> <live_count> <t0_bytes> <t0_count> ... <t3_bytes> <t3_count>
//   sites <t0 site0 bytes> <count> <t0 site1 bytes> <count> ... <t3 site3 bytes> <count>
// then waits for a line on stdin: "grow" allocates kGrowBlocks more blocks of kGrowBytes
// in worker/t0 at the first site, prints "grown" and waits again; "stop" stops the tracer
// (which closes the socket), frees what it holds and exits 0; "exit" calls exit(0) with
// the tracer still running, so that only the exit handler can remove the socket.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/malloc_allocator.h"
#include "runtime/span.h"
#include "runtime/tracer.h"
#include "tests/live_target_shape.h"

namespace {

using memtrace::live_testing::kBlocks;
using memtrace::live_testing::kGrowBlocks;
using memtrace::live_testing::kGrowBytes;
using memtrace::live_testing::kSiteBase;
using memtrace::live_testing::kSiteStep;
using memtrace::live_testing::kSites;
using memtrace::live_testing::kThreads;

struct Held {
  std::vector<std::pair<void*, size_t>> blocks;
  uint64_t bytes = 0;
  uint64_t site_bytes[kSites] = {};
  uint64_t site_count[kSites] = {};
};

// Reachable from globals on the exit path, so LeakSanitizer counts none of it; `held` is
// never destroyed, since exit() runs static destructors before the leak check.
memtrace::Tracer* running_tracer = nullptr;
std::vector<Held>& held = *new std::vector<Held>(kThreads);

}  // namespace

int main() {
  memtrace::Config config;
  config.live = true;
  auto created = memtrace::Tracer::Create(config);
  if (!created.ok()) {
    fprintf(stderr, "live_target: %s\n", created.status().ToString().c_str());
    return 2;
  }
  std::unique_ptr<memtrace::Tracer> tracer = std::move(created).value();
  if (absl::Status s = tracer->Start(); !s.ok()) {
    fprintf(stderr, "live_target: %s\n", s.ToString().c_str());
    return 2;
  }
  memtrace::MallocAllocator heap;
  memtrace::TracingAllocator traced(tracer.get(), &heap, memtrace::layers::kCpuHeap);
  static const memtrace::ScopeName kWorker("worker");
  static const memtrace::ScopeName kNames[kThreads] = {memtrace::ScopeName("t0"),
                                                       memtrace::ScopeName("t1"),
                                                       memtrace::ScopeName("t2"),
                                                       memtrace::ScopeName("t3")};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      memtrace::Span outer = tracer->Enter(kWorker);
      memtrace::Span inner = tracer->Enter(kNames[t]);
      for (int i = 0; i < kBlocks; ++i) {
        const size_t len = 16 + static_cast<size_t>((i * 37 + t * 101) % 2000);
        const int site = i % kSites;
        void* p = traced.Alloc(len, 16, kSiteBase + kSiteStep * site);
        if (p == nullptr) std::abort();
        if (i % 3 == 0) {
          traced.Free(memtrace::AsMemory(p, len), 16, 0);
        } else {
          held[t].blocks.emplace_back(p, len);
          held[t].bytes += len;
          held[t].site_bytes[site] += len;
          ++held[t].site_count[site];
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();

  uint64_t bytes = 0, count = 0;
  for (const Held& h : held) bytes += h.bytes, count += h.blocks.size();
  std::string line = "ready " + std::to_string(getpid()) + " " + std::to_string(bytes) + " " +
                     std::to_string(count);
  for (const Held& h : held) {
    line += " " + std::to_string(h.bytes) + " " + std::to_string(h.blocks.size());
  }
  line += "\nsites";
  for (const Held& h : held) {
    for (int k = 0; k < kSites; ++k) {
      line += " " + std::to_string(h.site_bytes[k]) + " " + std::to_string(h.site_count[k]);
    }
  }
  printf("%s\n", line.c_str());
  fflush(stdout);

  std::string command;
  while (std::getline(std::cin, command) && command == "grow") {
    memtrace::Span outer = tracer->Enter(kWorker);
    memtrace::Span inner = tracer->Enter(kNames[0]);
    for (int i = 0; i < kGrowBlocks; ++i) {
      void* p = traced.Alloc(kGrowBytes, 16, kSiteBase);
      if (p == nullptr) std::abort();
      held[0].blocks.emplace_back(p, kGrowBytes);
    }
    printf("grown\n");
    fflush(stdout);
  }
  if (command == "exit") {
    running_tracer = tracer.release();
    exit(0);
  }
  if (absl::Status s = tracer->Stop(); !s.ok()) return 3;
  for (Held& h : held) {
    for (auto [p, len] : h.blocks) traced.Free(memtrace::AsMemory(p, len), 16, 0);
  }
  return 0;
}
