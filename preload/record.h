// Copyright 2026 The memtrace Authors.
//
// record.h: how the interposed malloc family records a call: the hot path.
//
// Each interposed function (exports.inc) calls the real one, then OnAlloc() or OnFree():
// a call memtrace makes itself is remembered as memtrace's own block (internal_blocks.h),
// one made before tracing starts goes to the prestart log (prestart.h), and one made
// while tracing is recorded into the active Tracer, unless the minimum size or sampling
// leaves it out (counted, filter_counts.h). The functions here are inline (most
// always_inline) so that the exported function keeps one frame of memtrace's for the
// unwinder to step through; what is out of line (record.inc) is marked so.
//
// Thread safety: any thread, any time; no lock, no allocation of memtrace's on the
// program's behalf outside the recorder's own (runtime/internal/recorder.h).

#ifndef MEMTRACE_PRELOAD_RECORD_H_
#define MEMTRACE_PRELOAD_RECORD_H_

#include <cstddef>
#include <cstdint>

#include "preload/bootstrap.h"
#include "preload/filter_counts.h"
#include "preload/interposer_state.h"
#include "preload/prestart.h"
#include "preload/unwind.h"
#include "runtime/internal/thread_state.h"
#include "runtime/tracer.h"

// Hidden: shared by the interposer's files, never exported (exports.lds).
#pragma GCC visibility push(hidden)

namespace memtrace::preload_internal {

// Counts an allocation of `n` bytes that `filter` left out of the capture.
void CountFiltered(Filter filter, size_t n) noexcept;

// Byte sampling (MEMTRACE_SAMPLE_BYTES = N): whether this thread records a new block of
// n bytes, with probability 1 - exp(-n/N) whatever came before it (byte_sampler.h, which
// also derives the estimates and their variance); the sink writes 1/probability as its
// weight.
bool TakeSample(size_t n) noexcept;

// True when this call is memtrace's own, made on a program thread while memtrace is
// active: its block is remembered so that a later release by other code is not recorded.
inline bool OwnCallOnProgramThread(const runtime_internal::ThreadState& state) noexcept {
  if (!state.in_tracer || state.internal_thread) return false;
  const int p = phase.load(std::memory_order_relaxed);
  return p == kBeforeStart || p == kTracing;
}

inline bool Tracked(void* p) noexcept {
  if (config.min_size == 0) return true;
  const size_t usable = IsBootstrap(p) ? BootstrapSize(p) : real.malloc_usable_size(p);
  return usable >= config.min_size;
}

// Site() for a stack the walk memo does not answer on its own: walks (or checks the memo
// for the frames) and finds or sends the stack's site word. Not inlined: its frame
// buffer and out-parameters would cost every interposed call registers and stack. The
// walks start at `frame`, the interposed function's, whatever frames lie below it.
uint64_t SiteWalked(Tracer* t, const void* frame, uint64_t ret) noexcept;

// The call site of an interposed call whose own frame is `frame` and return address
// `ret`: the return address alone at depth 0, else the stack's site word
// (Recorder::StackSite). A repeated DWARF walk whose word is kept with the memo (99% of
// sqlite3's and redis-server's) is answered inline (MemoDerived); the rest SiteWalked().
__attribute__((always_inline)) inline uint64_t Site(Tracer* t, const void* frame,
                                                    uint64_t ret) noexcept {
  if (config.stack_depth == 0) return ret;
  if (config.unwind == UnwindMethod::kDwarf) {
    const uint64_t kept = preload_internal::MemoDerived(frame, config.stack_depth);
    if (__builtin_expect(kept != 0, 1)) return kept;
  }
  return SiteWalked(t, frame, ret);
}

// The tracer to record into, with this thread's reentrancy flag raised; null when this
// call must not be recorded (not tracing, or memtrace's own allocation).
class RecordScope {
 public:
  RecordScope() noexcept {
    runtime_internal::ThreadState& t = runtime_internal::Tls();
    if (t.in_tracer) return;
    tracer_ = active_tracer.load(std::memory_order_acquire);
    if (tracer_ != nullptr) t.in_tracer = true;
  }
  ~RecordScope() {
    if (tracer_ != nullptr) runtime_internal::Tls().in_tracer = false;
  }
  RecordScope(const RecordScope&) = delete;
  RecordScope& operator=(const RecordScope&) = delete;

  Tracer* tracer() const noexcept { return tracer_; }

 private:
  Tracer* tracer_ = nullptr;
};

inline bool BeforeStart() noexcept {
  return phase.load(std::memory_order_relaxed) == kBeforeStart &&
         !runtime_internal::Tls().in_tracer;
}

// Records a new block of the program's, unless the minimum size or sampling leaves it
// out (counted, filter_counts.h). The stack is unwound only for a block that is recorded.
// A block the program got whose record was lost (RecordResult::kFailed: its ring was
// full, or the thread had none): it is not in the capture, so its release is not recorded
// either. Recorded, that release would find no block, and at an address malloc reused
// from a block released before it would read as a double free the program never made.
// The block joins memtrace's own (internal_blocks.h), whose releases are skipped and
// whose reallocation is a new block.
__attribute__((noinline, cold)) inline void LeaveOut(void* p) noexcept {
  if (config.sample_bytes != 0) sampled_blocks.Erase(Addr(p));
  internal_blocks.Insert(Addr(p));
  // Relaxed: a count for the trailer, read after every thread's last record.
  left_out_blocks.fetch_add(1, std::memory_order_relaxed);
}

__attribute__((always_inline)) inline void RecordNewBlock(Tracer* t, void* p, size_t n,
                                                       Caller caller) noexcept {
  if (!Tracked(p)) {
    CountFiltered(Filter::kMinSize, n);
    return;
  }
  if (config.sample_bytes != 0) {
    if (!TakeSample(n)) {
      CountFiltered(Filter::kSample, n);
      return;
    }
    sampled_blocks.Insert(Addr(p));  // before any thread can free it
  }
  // A failed record leaves the block allocated (the program never sees memtrace fail);
  // the loss is counted in integrity and the capture is partial.
  if (t->recorder().RecordAlloc(kLayer, Addr(p), n, Site(t, caller.frame, caller.ret)) ==
      RecordResult::kFailed) {
    LeaveOut(p);
  }
}

// Inlined into each interposed function, with the unwinder call: fewer frames of our own
// for the DWARF walk to step through (unwind.h).
__attribute__((always_inline)) inline void OnAlloc(void* p, size_t n, Caller caller) noexcept {
  if (p == nullptr) return;
  if (OwnCallOnProgramThread(runtime_internal::Tls())) {
    internal_blocks.Insert(Addr(p));
    return;
  }
  RecordScope scope;
  if (__builtin_expect(scope.tracer() != nullptr, 1)) {
    RecordNewBlock(scope.tracer(), p, n, caller);
    return;
  }
  if (BeforeStart() && PrestartAddWithStack(p, n, caller.frame, caller.ret)) return;
  RecordScope retry;  // tracing began meanwhile
  if (retry.tracer() != nullptr) RecordNewBlock(retry.tracer(), p, n, caller);
}

// Records the release of a block of the program's, unless the minimum size or sampling
// left its allocation out.
__attribute__((always_inline)) inline void RecordRelease(Tracer* t, void* p) noexcept {
  if (!Tracked(p)) return;
  if (config.sample_bytes != 0 && !sampled_blocks.Erase(Addr(p))) return;  // not sampled
  t->recorder().RecordFree(kLayer, Addr(p));
}

// Before the block goes back to the allocator, so no other thread can get the address
// again before this release has its place in the order (transport/epoch_clock.h).
void OnFree(void* p) noexcept;

// realloc() and reallocarray(), traced (record.inc).
void* Realloc(void* p, size_t n, Caller caller) noexcept;

}  // namespace memtrace::preload_internal

#pragma GCC visibility pop

#endif  // MEMTRACE_PRELOAD_RECORD_H_
