// Copyright 2026 The memtrace Authors.
//
// ThreadCpuTime (runtime/internal/thread_cpu_time.h) against figures taken independently of it:
// the measured thread's own CPU clock read by the thread itself, and the whole process's
// CPU time (getrusage), which bounds the sum of its threads'.

#include "runtime/internal/thread_cpu_time.h"

#include <sys/resource.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include <gtest/gtest.h>

namespace memtrace {
namespace {

uint64_t OwnThreadNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t ProcessNs() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto ns = [](const timeval& tv) {
    return static_cast<uint64_t>(tv.tv_sec) * 1'000'000'000u +
           static_cast<uint64_t>(tv.tv_usec) * 1000u;
  };
  return ns(ru.ru_utime) + ns(ru.ru_stime);
}

// Spins until the calling thread has used `ns` more CPU time; returns its clock then.
uint64_t Burn(uint64_t ns) {
  const uint64_t until = OwnThreadNs() + ns;
  volatile uint64_t sink = 0;
  uint64_t now;
  while ((now = OwnThreadNs()) < until) {
    for (int i = 0; i < 1000; ++i) sink = sink + static_cast<uint64_t>(i);
  }
  return now;
}

constexpr uint64_t kBurnNs = 20'000'000;  // 20 ms

TEST(ThreadCpuTimeTest, NothingFollowedIsZero) {
  ThreadCpuTime cpu;
  EXPECT_EQ(cpu.TotalNs(), 0u);
}

TEST(ThreadCpuTimeTest, CountsTheFollowedThreadAliveAndAfterItDetached) {
  ThreadCpuTime cpu;
  const uint64_t process_before = ProcessNs();
  uint64_t seen_by_thread = 0;  // its own clock when it detached
  uint64_t read_while_live = 0;
  std::atomic<bool> burned{false}, read{false};
  std::thread worker([&] {
    cpu.Attach();
    Burn(kBurnNs);
    burned.store(true, std::memory_order_release);  // pairs with the acquire load below
    while (!read.load(std::memory_order_acquire)) std::this_thread::yield();
    cpu.Detach();
    seen_by_thread = OwnThreadNs();  // read after Detach(): an upper bound
  });
  while (!burned.load(std::memory_order_acquire)) std::this_thread::yield();
  read_while_live = cpu.TotalNs();  // another thread reads the live one's clock
  read.store(true, std::memory_order_release);  // pairs with the worker's acquire load
  worker.join();
  const uint64_t process_used = ProcessNs() - process_before;
  const uint64_t total = cpu.TotalNs();

  EXPECT_GE(read_while_live, kBurnNs);
  EXPECT_GE(total, read_while_live);
  EXPECT_LE(total, seen_by_thread);
  // getrusage has microsecond resolution (its figure may trail the thread clocks by a tick).
  EXPECT_LE(total, process_used + 10'000'000) << "process used " << process_used;
  EXPECT_EQ(cpu.TotalNs(), total) << "a detached thread's figure no longer moves";
}

// Runs a thread in `cpu`'s role: it attaches, burns kBurnNs and detaches. Returns the
// thread's own clock read after it detached (an upper bound of what it added).
uint64_t RunThreadInRole(ThreadCpuTime& cpu) {
  uint64_t own = 0;
  std::thread t([&] {
    cpu.Attach();
    Burn(kBurnNs);
    cpu.Detach();
    own = OwnThreadNs();
  });
  t.join();
  return own;
}

TEST(ThreadCpuTimeTest, AddsEveryThreadThatHeldTheRole) {
  // A recorder stopped and started again runs a second drainer thread: both count.
  ThreadCpuTime cpu;
  const uint64_t first = RunThreadInRole(cpu);
  const uint64_t after_first = cpu.TotalNs();
  const uint64_t second = RunThreadInRole(cpu);
  EXPECT_GE(after_first, kBurnNs);
  EXPECT_LE(after_first, first);
  EXPECT_GE(cpu.TotalNs(), after_first + kBurnNs);
  EXPECT_LE(cpu.TotalNs(), first + second);
}

TEST(ThreadCpuTimeTest, DetachWithoutAttachChangesNothing) {
  ThreadCpuTime cpu;
  cpu.Detach();
  EXPECT_EQ(cpu.TotalNs(), 0u);
}

}  // namespace
}  // namespace memtrace
