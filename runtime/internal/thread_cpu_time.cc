// Copyright 2026 The memtrace Authors.

#include "runtime/internal/thread_cpu_time.h"

#include <pthread.h>

namespace memtrace {
namespace {

// 0 when the clock cannot be read (it never fails for a live thread's clock).
uint64_t ReadNs(clockid_t clock) {
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

void ThreadCpuTime::Attach() {
  clockid_t clock{};
  const bool ok = pthread_getcpuclockid(pthread_self(), &clock) == 0;
  std::lock_guard<std::mutex> lock(mu_);
  if (live_) finished_ns_ += ReadNs(clock_);
  clock_ = clock;
  live_ = ok;
}

void ThreadCpuTime::Detach() {
  // The calling thread's own clock: the same figure as clock_, without the lookup.
  const uint64_t ns = ReadNs(CLOCK_THREAD_CPUTIME_ID);
  std::lock_guard<std::mutex> lock(mu_);
  if (!live_) return;
  finished_ns_ += ns;
  live_ = false;
}

uint64_t ThreadCpuTime::TotalNs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return finished_ns_ + (live_ ? ReadNs(clock_) : 0);
}

}  // namespace memtrace
