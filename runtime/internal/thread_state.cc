// Copyright 2026 The memtrace Authors.

#include "runtime/internal/thread_state.h"

#include <mutex>
#include <new>

namespace memtrace::runtime_internal {
namespace {

struct SlotTable {
  std::mutex mu;
  uint64_t next_generation = 1;
  uint64_t generation[kMaxRecorders] = {};  // 0 = free
  RingRegistry* registry[kMaxRecorders] = {};
};

SlotTable& Slots() {
  // Never destroyed: threads exit (and retire rings) during static destruction too.
  alignas(SlotTable) static unsigned char storage[sizeof(SlotTable)];
  static SlotTable* table = new (storage) SlotTable();
  return *table;
}

void RetireThreadRings() noexcept {
  ThreadState& t = Tls();
  ReentrancyGuard guard;
  SlotTable& slots = Slots();
  std::lock_guard<std::mutex> lock(slots.mu);
  for (int i = 0; i < kMaxRecorders; ++i) {
    RingBinding& b = t.rings[i];
    if (b.ring != nullptr && b.generation != 0 && slots.generation[i] == b.generation) {
      slots.registry[i]->Retire(b.ring);
    }
    b = RingBinding{0, nullptr};
  }
  t.exited = true;
}

struct ExitHook {
  ~ExitHook() { RetireThreadRings(); }
};

thread_local ExitHook exit_hook;

}  // namespace

void ArmExitHook() noexcept {
  ThreadState& t = Tls();
  if (t.exit_hook_armed) return;
  t.exit_hook_armed = true;
  // Odr-using the hook constructs it and registers its destructor for this thread.
  static_cast<void>(&exit_hook);
}

SlotLease AcquireRecorderSlot(RingRegistry* registry) noexcept {
  SlotTable& slots = Slots();
  std::lock_guard<std::mutex> lock(slots.mu);
  for (int i = 0; i < kMaxRecorders; ++i) {
    if (slots.generation[i] == 0) {
      slots.generation[i] = slots.next_generation++;
      slots.registry[i] = registry;
      return SlotLease{i, slots.generation[i]};
    }
  }
  return SlotLease{-1, 0};
}

void ReleaseRecorderSlot(int index) noexcept {
  if (index < 0 || index >= kMaxRecorders) return;
  SlotTable& slots = Slots();
  std::lock_guard<std::mutex> lock(slots.mu);
  slots.generation[index] = 0;
  slots.registry[index] = nullptr;
}

}  // namespace memtrace::runtime_internal
