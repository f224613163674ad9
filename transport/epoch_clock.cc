// Copyright 2026 The memtrace Authors.

#include "transport/epoch_clock.h"

#include <fcntl.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace memtrace {
namespace {

long Membarrier(int cmd) noexcept { return syscall(__NR_membarrier, cmd, 0, 0); }

// Registers for the private expedited command once per process. A process that forks
// keeps the registration in the child (the kernel copies it with the mm).
bool RegisterMembarrier() noexcept {
  const long supported = Membarrier(MEMBARRIER_CMD_QUERY);
  if (supported < 0 || (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
  if (Membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) return false;
  // One real call proves the command works here (some sandboxes accept the registration
  // and then refuse the command).
  return Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0;
}

// Registers once per process, the first time a clock is made (whatever the order of
// static initialisation).
bool MembarrierWorks() noexcept {
  static const bool works = RegisterMembarrier();
  return works;
}

// Whether stamps of two CPUs compare (epoch_clock.h): on x86-64, while the kernel's
// clocksource is the TSC, which it keeps only while the counters are synchronised and
// invariant. Read with plain system calls: a clock may be made before malloc works
// (the interposer).
bool ReadStampsCompare() noexcept {
#if defined(__x86_64__)
  const int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                      O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char name[16] = {};
  const ssize_t n = read(fd, name, sizeof(name) - 1);
  close(fd);
  return n >= 3 && std::strncmp(name, "tsc", 3) == 0 && (n == 3 || name[3] == '\n');
#elif defined(__aarch64__)
  return true;
#else
  return false;
#endif
}

bool StampsCompare() noexcept {
  static const bool compare = ReadStampsCompare();
  return compare;
}

}  // namespace

EpochClock::EpochClock(FenceMode mode) noexcept
    : epoch_(kFirstEpoch),
      membarrier_(mode == FenceMode::kMembarrier && MembarrierWorks()),
      stamps_(StampsCompare()),
      pad_{} {}

void EpochClock::HeavyFence() const noexcept {
  if (membarrier_ && Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return;
  // Producers then run real seq_cst fences, which pair with this one.
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace memtrace
