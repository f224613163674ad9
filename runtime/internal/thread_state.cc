// Copyright 2026 The memtrace Authors.

#include "runtime/internal/thread_state.h"

#include <pthread.h>
#include <sys/mman.h>

#include <mutex>
#include <new>

namespace memtrace::runtime_internal {

thread_local constinit ThreadState tls_state MEMTRACE_TLS_MODEL{};

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
  if (t.stacks != nullptr) {
    munmap(t.stacks, sizeof(StackState));
    t.stacks = nullptr;
  }
}

// The exit hook is a pthread key's destructor. glibc runs key destructors when a thread
// ends by returning from its start function or by pthread_exit(), after every C++
// thread_local destructor of that thread (__call_tls_dtors comes first), so what those
// destructors free lands in the thread's own ring. A thread that calls exit() runs no key
// destructors: its ring stays bound through atexit handlers and static destructors, where
// a server's shutdown frees much of its heap (redis-server: ~400 records after the
// thread_local hook), and the final drain reads it. (A thread_local destructor, the hook
// before this one, ran inside exit() before all that, and each later record took a fresh
// ring: 2 MiB mapped apiece.)
pthread_key_t exit_key;
bool exit_key_created = false;
pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

void CreateExitKey() {
  exit_key_created =
      pthread_key_create(&exit_key, [](void*) { RetireThreadRings(); }) == 0;
}

// If no key can be had (every one of PTHREAD_KEYS_MAX taken), a thread_local destructor,
// which runs earlier: records after it take a fresh ring each (thread_state.h).
struct ExitHook {
  ~ExitHook() { RetireThreadRings(); }
};

thread_local ExitHook exit_hook;

}  // namespace

void ArmExitHook() noexcept {
  ThreadState& t = Tls();
  if (t.exit_hook_armed) return;
  t.exit_hook_armed = true;
  pthread_once(&exit_key_once, CreateExitKey);
  // The value only has to be non-null for the destructor to run; pthread_setspecific may
  // allocate (keys past the first 32), which the caller's reentrancy guard keeps untraced.
  if (exit_key_created && pthread_setspecific(exit_key, &t) == 0) return;
  // Odr-using the hook constructs it and registers its destructor for this thread.
  static_cast<void>(&exit_hook);
}

StackState* Stacks(ThreadState& t) noexcept {
  if (t.stacks != nullptr || t.exited) return t.stacks;
  // mmap, not malloc: the interposer's malloc asks for this. Zeroed, as the state needs.
  void* p = mmap(nullptr, sizeof(StackState), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  t.stacks = static_cast<StackState*>(p);
  ArmExitHook();  // which unmaps it
  return t.stacks;
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

void LockRecorderSlotsForFork() noexcept { Slots().mu.lock(); }

// In the child the forking thread is the only one, and the lock is a plain (not
// error-checking) mutex: it unlocks what its parent thread locked.
void UnlockRecorderSlotsAfterFork() noexcept { Slots().mu.unlock(); }

}  // namespace memtrace::runtime_internal
