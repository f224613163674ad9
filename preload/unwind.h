// Copyright 2026 The memtrace Authors.
//
// unwind.h: the call stack of an allocation, as return addresses, innermost first.
//
// Two methods (preload_config.h, MEMTRACE_UNWIND):
//   - Frame pointers: follow the saved-%rbp chain from the interposed function's own
//     frame. A few loads per frame, but only right for code built with frame pointers;
//     through code without them the chain skips frames or ends early. Every frame
//     pointer is checked against the thread's stack bounds before it is read, so a chain
//     broken by such code ends the walk instead of faulting.
//   - DWARF: the unwind tables every ELF object carries (.eh_frame). Right for
//     distribution binaries built without frame pointers. memtrace reads them itself
//     (UnwindCfi, eh_frame.h), caching a rule per return address, and per thread the
//     last walk from each of 32 stack positions (thread_state.h): a walk from the same
//     place checks the stack words that walk read (independent loads) instead of walking;
//     bench/unwind_benchmark measures both. The few frames whose rules it does not follow
//     (signal trampolines, CFA expressions) send the stack to libunwind's unw_backtrace()
//     (UnwindDwarf), which is several times slower per frame.
// Both return addresses, so a symbolizer looks up pc - 1 (the call instruction).
//
// Thread safety: per thread; may allocate on a thread's first call (stack bounds,
// libunwind's caches), so callers hold the reentrancy guard.

#ifndef MEMTRACE_PRELOAD_UNWIND_H_
#define MEMTRACE_PRELOAD_UNWIND_H_

#include <cstdint>
#include <string>

#include "runtime/internal/thread_state.h"
#include "transport/fibonacci_index.h"

namespace memtrace::preload_internal {

// Fills `frames` from the frame whose frame pointer is `frame` (the interposed function's
// __builtin_frame_address(0)): frames[0] is that function's return address. Returns the
// number of frames written, at most `max`.
uint32_t UnwindFramePointers(const void* frame, uint64_t* frames, uint32_t max) noexcept;

// The DWARF walk, by the unwind tables' rules for each return address (eh_frame.h,
// cached), from the frame whose frame pointer is `frame` (the interposed function's
// __builtin_frame_address(0); memtrace's own code keeps frame pointers): frames[0] is
// that function's return address. Right for code built without frame pointers, at a few
// loads per frame once the rules are cached. Returns the number of frames written, at
// most `max`, and sets *complete to false when it stopped at a frame whose rule it does
// not follow (a CFA expression, a signal frame: eh_frame.h), or that started off the
// thread's own stack (a coroutine's), returning 0 frames in that case: the caller then
// asks libunwind (UnwindDwarf) instead. Every read is checked against the thread's stack.
//
// `derived` (optional): set to a word that belongs to exactly the frames returned, for
// the caller to keep something computed from them (the interposer keeps the stack's
// hash): it is 0 until the caller stores into it, and reads back what was stored on a
// later walk that returns the same frames, until the memo forgets them. nullptr when the
// frames cannot be kept so (more than the memo holds, or not all of them from it).
//
// `result` (optional): set to where the frames are, `frames` or, for a walk the memo
// served whole, the memo's own copy, which stays valid until this thread's next walk and
// saves copying them. Without it the frames are always written to `frames`.
uint32_t UnwindCfi(const void* frame, uint64_t* frames, uint32_t max, bool* complete,
                   uint64_t** derived = nullptr, const uint64_t** result = nullptr) noexcept;

// ---- The walk memo, inline -------------------------------------------------------------

namespace unwind_internal {

// Inlined into the interposer, except under a sanitizer: GCC does not inline a function
// whose sanitizer attributes differ from its caller's, and refuses always_inline then.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MEMTRACE_MEMO_INLINE inline
#else
#define MEMTRACE_MEMO_INLINE __attribute__((always_inline)) inline
#endif

// The word at fp + offset of this thread's stack, in another function's frame.
__attribute__((no_sanitize("address"))) MEMTRACE_MEMO_INLINE uint64_t StackWord(
    uint64_t fp, uint32_t offset) noexcept {
  return *reinterpret_cast<const uint64_t*>(fp + offset);
}

// The set of the memo (thread_state.h) that a walk whose interposed function's frame
// ends at `start` looks in, and the way there that started at `start` (kUnwindWalkWays:
// none).
inline size_t MemoSet(const runtime_internal::StackState& t, uint64_t start,
                      uint32_t* way) noexcept {
  const size_t set = FibonacciIndex(start, runtime_internal::kUnwindWalkSetsLog2);
  uint32_t found = runtime_internal::kUnwindWalkWays;
#pragma GCC unroll 4
  for (uint32_t w = 0; w < runtime_internal::kUnwindWalkWays; ++w) {
    if (t.unwind_walk_start[set][w] == start) found = w;
  }
  *way = found;
  return set;
}

// Whether every stack word the walk in `memo` read still holds what it read, from the
// interposed function's frame `fp`: then a walk from there is that walk (unwind.cc says
// why). Independent loads and compares, unrolled, no branch per frame: a memo of fewer
// frames than it holds repeats frame 0's word in the rest (UnwindCfi() writes them so),
// which costs a few compares of a word in cache where a loop would cost its counter and
// a mispredicted exit whenever the depth changes (sqlite3's stacks have 5 to 16 frames).
// Call only for a memo of at least one frame.
__attribute__((no_sanitize("address"))) MEMTRACE_MEMO_INLINE bool MemoHolds(
    const runtime_internal::UnwindWalk& memo, uint64_t fp) noexcept {
  uint64_t differ = 0;
#pragma GCC unroll 16
  for (uint32_t i = 1; i < runtime_internal::kUnwindWalkFrames; ++i) {
    differ |= StackWord(fp, memo.ret_at[i]) ^ memo.ret[i];
  }
  for (uint32_t k = 0; k < memo.rbp_checks; ++k) {
    differ |= StackWord(fp, memo.rbp_at[k]) ^ memo.rbp_value[k];
  }
  return differ == 0;
}

#undef MEMTRACE_MEMO_INLINE

// What a walk the memo served whole returns besides its frames (`want` of them, all the
// memo's): whether it is complete, and the word kept with exactly these frames.
inline void ServedWhole(runtime_internal::UnwindWalk& memo, uint32_t want, bool* complete,
                        uint64_t** derived) noexcept {
  if (memo.ended) *complete = memo.complete;
  if (memo.derived_frames != want) {
    memo.derived = 0;
    memo.derived_frames = want;
  }
  if (derived != nullptr) *derived = &memo.derived;
}

// The memo a walk from the interposed function's frame `fp` may be served from: the way
// that started there, or nullptr. Only frames inside the thread's known stack (0 until
// UnwindCfi() learned it), aligned, as in UnwindCfi(): the memo holds walks from no other.
__attribute__((always_inline)) inline runtime_internal::UnwindWalk* MemoFrom(
    runtime_internal::ThreadState& t, uint64_t fp) noexcept {
  if (fp < t.stack_low || fp + 16 > t.stack_high || (fp & 7) != 0) return nullptr;
  runtime_internal::StackState* const stacks = t.stacks;  // set by the thread's first walk
  if (stacks == nullptr) return nullptr;
  uint32_t way;
  const size_t set = MemoSet(*stacks, fp + 16, &way);
  if (way == runtime_internal::kUnwindWalkWays) return nullptr;
  return &stacks->unwind_walks[set][way];
}

// Whether `memo` (MemoFrom's) serves a walk of `max` frames from `fp` whole: it holds at
// least one frame and no more than `max` (a memo written under a deeper limit is walked
// anew), all of them or every frame the walk has, and the stack still holds every word it
// read (MemoHolds).
__attribute__((always_inline)) inline bool MemoServesWhole(
    const runtime_internal::UnwindWalk& memo, uint64_t fp, uint32_t max) noexcept {
  const uint32_t want = memo.frames;
  return want != 0 && want <= max && (want == max || memo.ended) &&
         memo.ret[0] == StackWord(fp, 8) && MemoHolds(memo, fp);
}

}  // namespace unwind_internal

// UnwindCfi() for a walk its memo serves whole, inlined into the caller: the same frame
// count, *complete, *derived and *result (the memo's frames) as UnwindCfi() would give, or
// 0 when the memo does not hold the whole walk from `frame` (or anything else is out of
// the ordinary): then call UnwindCfi(), which does everything else. Saves the call and the
// general function's set-up on the walks that repeat (99.7% of sqlite3's).
__attribute__((always_inline)) inline uint32_t UnwindCfiFromMemo(
    const void* frame, uint32_t max, bool* complete, uint64_t** derived,
    const uint64_t** result) noexcept {
#if defined(__x86_64__)
  runtime_internal::ThreadState& t = runtime_internal::Tls();
  const auto fp = reinterpret_cast<uint64_t>(frame);
  runtime_internal::UnwindWalk* const found = unwind_internal::MemoFrom(t, fp);
  if (found == nullptr) return 0;
  runtime_internal::UnwindWalk& memo = *found;
  if (!unwind_internal::MemoServesWhole(memo, fp, max)) return 0;
  const uint32_t want = memo.frames;
  ++t.unwind_memo_hits;
  *complete = true;
  unwind_internal::ServedWhole(memo, want, complete, derived);
  *result = memo.ret;
  return want;
#else
  (void)frame, (void)max, (void)complete, (void)derived, (void)result;
  return 0;
#endif
}

// The word kept with the frames of a walk (UnwindCfi()'s `derived`, once the caller
// stored one), when the memo serves the whole walk from `frame`, complete: all that the
// interposer needs of a repeated walk is that word (the stack's site word), not the
// frames. 0 when the memo does not serve the walk whole, the walk is incomplete, or no
// word is kept for exactly its frames: then call UnwindCfiFromMemo() and UnwindCfi(),
// which give the same answer the long way. Inlined into the caller, with nothing but the
// check between the thread's state and the answer: no frame buffer and no out-parameters,
// whose stores (through a bool* among them) made the compiler spill and recompute the
// memo's address several times a call (callgrind counts the difference; bench/README.md,
// "sqlite3's main thread, piece by piece").
__attribute__((always_inline)) inline uint64_t MemoDerived(const void* frame,
                                                           uint32_t max) noexcept {
#if defined(__x86_64__)
  runtime_internal::ThreadState& t = runtime_internal::Tls();
  const auto fp = reinterpret_cast<uint64_t>(frame);
  const runtime_internal::UnwindWalk* const found = unwind_internal::MemoFrom(t, fp);
  if (found == nullptr) return 0;
  const runtime_internal::UnwindWalk& memo = *found;
  // A word kept for exactly the memo's frames, of a walk that is complete.
  const uint64_t kept = memo.derived;
  if (kept == 0 || memo.derived_frames != memo.frames || (memo.ended && !memo.complete) ||
      !unwind_internal::MemoServesWhole(memo, fp, max)) {
    return 0;
  }
  ++t.unwind_memo_hits;
  return kept;
#else
  (void)frame, (void)max;
  return 0;
#endif
}

// Forgets the site words kept with this thread's walk memo (MemoDerived). A kept word
// means its frames went to the recorder; a forked child that traces on records into a
// new recorder, which has not had them, so its first walks send them again.
void ForgetKeptSites() noexcept;

// Loads libunwind for UnwindDwarf(); false, with the reason, when it is not there. Call
// once, before tracing starts.
bool LoadDwarfUnwinder(std::string* error);

// libunwind's unw_backtrace(), from a private dlopen() (LoadDwarfUnwinder). Written once
// before tracing starts; the tracer's start publishes it (release/acquire on the
// preload's active tracer pointer).
using BacktraceFn = int (*)(void**, int);
inline BacktraceFn unw_backtrace_fn = nullptr;

// The same with libunwind (0 frames until LoadDwarfUnwinder() succeeded). Frames inside
// [skip_begin, skip_end) (the interposer's own code) are left out at the start, so
// frames[0] is the interposed function's caller. Always inlined: every frame of
// memtrace's own between the program and unw_backtrace() is one more step of libunwind's
// walk. (The interposer reaches it through one function of its own, SiteWalked(), and
// only for the rare stack its own walk hands over: a signal frame, a foreign stack.)
__attribute__((always_inline)) inline uint32_t UnwindDwarf(uint64_t skip_begin,
                                                           uint64_t skip_end,
                                                           uint64_t* frames,
                                                           uint32_t max) noexcept {
  constexpr int kSlack = 8;  // our own frames, left out below
  void* buffer[64 + kSlack];
  const int want = static_cast<int>(max) + kSlack;
  if (unw_backtrace_fn == nullptr) return 0;
  const int got = unw_backtrace_fn(buffer, want < 64 + kSlack ? want : 64 + kSlack);
  int first = 0;
  while (first < got) {
    const auto pc = reinterpret_cast<uint64_t>(buffer[first]);
    if (pc < skip_begin || pc >= skip_end) break;
    ++first;
  }
  uint32_t n = 0;
  for (int i = first; i < got && n < max; ++i) frames[n++] = reinterpret_cast<uint64_t>(buffer[i]);
  return n;
}

}  // namespace memtrace::preload_internal

#endif  // MEMTRACE_PRELOAD_UNWIND_H_
