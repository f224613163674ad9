// Copyright 2026 The memtrace Authors.
//
// prestart.h: what the program allocates and releases before tracing starts.
// Allocations and releases made before tracing started (in other libraries'
// constructors, which the loader runs before this one's), logged in order and recorded
// in that order when it starts: each allocation at the stack it was made from, each
// release after it. So the capture has every call of those constructors, and its replay
// (and the ledger) their high-water mark too. Stacks are walked by the unwind tables
// whatever MEMTRACE_UNWIND says (the settings are read when tracing starts),
// kPrestartDepth frames at most, cut to MEMTRACE_STACK_DEPTH then; each distinct stack is
// kept once (past 6,144 of them or kPrestartFrameCapacity frames in all, a block gets no
// stack: "no call site"). Bounds: kPrestartLive blocks live at once (past that a block
// is not remembered, and its release counts as an unknown free: prestart_untracked), and
// kPrestartOps operations in the log; when it fills, the blocks it holds that were
// released again are dropped from it and only counted (prestart_freed), and the log
// goes on.
//
// Thread safety: every function here takes the prestart lock (a spin lock taken only
// before tracing starts, and once by the start itself, PrestartLock).

#ifndef MEMTRACE_PRELOAD_PRESTART_H_
#define MEMTRACE_PRELOAD_PRESTART_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <sched.h>

#include "preload/own_libraries.h"
#include "runtime/internal/recorder.h"

// Hidden: shared by the interposer's files, never exported (exports.lds).
#pragma GCC visibility push(hidden)

namespace memtrace::preload_internal {

// The log's totals for the trailer (prestart.inc has the log itself).
extern uint64_t prestart_overflow;  // blocks not remembered: prestart_untracked
// Allocations released again before tracing started that the log had to drop: counted
// in the trailer, never in the capture.
extern uint64_t prestart_freed;
extern uint64_t prestart_freed_bytes;

// A spin lock: taken only before tracing starts (and once by the constructor).
extern std::atomic_flag prestart_lock;

class PrestartLock {
 public:
  PrestartLock() noexcept {
    // Acquire: pairs with the release in the destructor of the previous holder.
    while (prestart_lock.test_and_set(std::memory_order_acquire)) sched_yield();
  }
  ~PrestartLock() { prestart_lock.clear(std::memory_order_release); }
};

// Before start: logs the program's new block `p` with the stack of the interposed call
// whose frame and return address are `frame` and `ret`, the return address alone where
// the unwind tables give no stack (and while dlsym() runs: the thread's stack bounds
// cannot be asked for yet). False when tracing has started meanwhile. Not inlined: the
// interposed functions keep only a call.
bool PrestartAddWithStack(void* p, size_t n, const void* frame, uint64_t ret) noexcept;

// OnFree() while no tracer records: before tracing starts, the release goes to the log;
// if tracing began meanwhile, to the tracer (as OnAlloc() does with an allocation);
// after it ends, nowhere. Not inlined: OnFree() keeps only a call.
void OnFreeUntraced(void* p) noexcept;

// Records the log of what the program allocated and released before tracing started,
// in its order (the log above), with the settings just read: an allocation
// below the minimum size, or not drawn by sampling, is left out with its release, as it
// would have been once traced. Under the prestart lock, before tracing is on.
//
// A block allocated from the constructor of a library loaded only for memtrace (`ours`,
// own_libraries.h: libstdc++'s emergency pool under a C program) is memtrace's: left out,
// and one still live is marked memtrace's own, so its release is never recorded either.
void RecordPrestartLog(Recorder& r, const std::vector<preload_internal::CodeRange>& ours);

}  // namespace memtrace::preload_internal

#pragma GCC visibility pop

#endif  // MEMTRACE_PRELOAD_PRESTART_H_
