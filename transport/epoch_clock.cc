// Copyright 2026 The memtrace Authors.

#include "transport/epoch_clock.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

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

}  // namespace

EpochClock::EpochClock(FenceMode mode) noexcept
    : epoch_(kFirstEpoch),
      membarrier_(mode == FenceMode::kMembarrier && MembarrierWorks()),
      pad_{} {}

void EpochClock::HeavyFence() const noexcept {
  if (membarrier_ && Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return;
  // Producers then run real seq_cst fences, which pair with this one.
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace memtrace
