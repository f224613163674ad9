// Copyright 2026 The memtrace Authors.
//
// drainer_stall.h: holds a recorder's drainer still, for tests of full rings.
//
// Recorder::Inspect() runs its callback between drainer rounds with the drainer's state
// lock held, so a callback that waits keeps the drainer from reading any ring. A
// DrainerStall does that on a helper thread from construction until Release() (or
// destruction): records written meanwhile stay in their rings, and once a ring is full the
// recorder's overflow policy (config.h) decides what the producer sees.
//
// Thread safety: construct, Release() and destroy from one thread.
//
// Example:
//   {
//     DrainerStall stall(recorder);
//     ... records fill a 16-slot ring, the 17th fails or waits ...
//   }  // the drainer runs again

#ifndef MEMTRACE_TESTS_DRAINER_STALL_H_
#define MEMTRACE_TESTS_DRAINER_STALL_H_

#include <atomic>
#include <chrono>
#include <thread>

#include "runtime/internal/recorder.h"

namespace memtrace::testing {

class DrainerStall {
 public:
  explicit DrainerStall(Recorder& recorder) {
    thread_ = std::thread([&] {
      recorder.Inspect([&](const AllocationLedger&, const CaptureIntegrity&) {
        stalled_ = true;
        while (!release_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      });
    });
    while (!stalled_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~DrainerStall() { Release(); }

  DrainerStall(const DrainerStall&) = delete;
  DrainerStall& operator=(const DrainerStall&) = delete;

  // Lets the drainer run again. Idempotent.
  void Release() {
    release_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<bool> stalled_{false};
  std::atomic<bool> release_{false};
  std::thread thread_;
};

}  // namespace memtrace::testing

#endif  // MEMTRACE_TESTS_DRAINER_STALL_H_
