// Copyright 2026 The memtrace Authors.

#include "preload/unwind.h"

#include <dlfcn.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>

#include "preload/eh_frame.h"
#include "runtime/internal/thread_state.h"
#include "transport/fibonacci_index.h"

namespace memtrace::preload_internal {
namespace {

struct StackBounds {
  uint64_t low;
  uint64_t high;
};

StackBounds Bounds() noexcept {
  runtime_internal::ThreadState& t = runtime_internal::Tls();
  if (t.stack_high != 0) return StackBounds{t.stack_low, t.stack_high};
  // An allocation the program made inside pthread_getattr_np(), which holds the queried
  // thread's lock: asking for this thread's stack now would wait for that lock forever if
  // it is this thread's (a JVM thread's first allocation is one). Unknown for now, not
  // remembered: libunwind walks this one, and a later walk asks.
  if (t.in_stack_query) return StackBounds{1, 1};
  StackBounds b{1, 1};  // unknown: walk no further than the first frame
  pthread_attr_t attr;
  void* base = nullptr;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstack(&attr, &base, &size);
    pthread_attr_destroy(&attr);
  }
  if (base != nullptr && size != 0) {
    b.low = reinterpret_cast<uint64_t>(base);
    b.high = b.low + size;
  }
  t.stack_low = b.low;
  t.stack_high = b.high;
  return b;
}

// rbp at a frame of the walk from `start`: the interposed function's saved rbp (`rbp0`),
// or the word at start + from where an earlier frame saved it. A function of its own,
// because a lambda does not take the no_sanitize attribute of the function it is in.
__attribute__((no_sanitize("address")))  // reads another frame's saved register
uint64_t RbpAt(uint64_t start, uint64_t rbp0, uint32_t from) noexcept {
  return from == runtime_internal::kUnwindInitialRbp
             ? rbp0
             : *reinterpret_cast<const uint64_t*>(start + from);
}

}  // namespace

void ForgetKeptSites() noexcept {
  runtime_internal::StackState* const s = runtime_internal::Tls().stacks;
  if (s == nullptr) return;
  for (auto& set : s->unwind_walks) {
    for (runtime_internal::UnwindWalk& walk : set) walk.derived = 0;
  }
}

bool LoadDwarfUnwinder(std::string* error) {
  // RTLD_LOCAL: libunwind also defines _Unwind_* and backtrace(); loaded privately they
  // never stand in for the program's own (libgcc_s, libc) in the global scope.
  void* handle = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    *error = std::string("cannot load libunwind.so.8 (") + (why != nullptr ? why : "?") +
             "); install Debian's libunwind8";
    return false;
  }
  unw_backtrace_fn = reinterpret_cast<BacktraceFn>(dlsym(handle, "unw_backtrace"));
  if (unw_backtrace_fn == nullptr) {
    *error = "libunwind.so.8 has no unw_backtrace";
    return false;
  }
  return true;
}

__attribute__((no_sanitize("address")))  // reads other frames' saved registers
uint32_t UnwindCfi(const void* frame, uint64_t* frames, uint32_t max, bool* complete,
                   uint64_t** derived, const uint64_t** result) noexcept {
  if (derived != nullptr) *derived = nullptr;
  if (result != nullptr) *result = frames;
#if !defined(__x86_64__)
  // The rules are x86-64's (eh_frame.h): elsewhere libunwind walks every stack.
  (void)frame, (void)frames, (void)max;
  *complete = false;
  return 0;
#endif
  *complete = true;
  const StackBounds bounds = Bounds();
  const auto fp = reinterpret_cast<uint64_t>(frame);
  if (max == 0) return 0;
  // The interposed function's two words, [fp, fp + 16), must lie inside the thread's
  // stack, aligned.
  if (fp < bounds.low || fp + 16 > bounds.high || (fp & 7) != 0) {
    // Not on the thread's own stack (a coroutine's or an alternate signal stack): the
    // walk has no bounds to check its reads against, so it leaves this one to libunwind.
    *complete = false;
    return 0;
  }
  // The interposed function's frame: saved rbp at fp, return address above it, and the
  // caller's stack pointer just above that.
  const uint64_t rbp0 = *reinterpret_cast<const uint64_t*>(fp);
  uint64_t ret = *reinterpret_cast<const uint64_t*>(fp + 8);
  const uint64_t start = fp + 16;
  if (ret == 0) return 0;
  runtime_internal::ThreadState& t = runtime_internal::Tls();
  // The thread's memo and predictor; without them (no memory for them, or the thread is
  // exiting) libunwind walks.
  runtime_internal::StackState* const stacks = runtime_internal::Stacks(t);
  if (stacks == nullptr) {
    *complete = false;
    return 0;
  }
  runtime_internal::StackState& s = *stacks;
  // The memo (thread_state.h): the way that started here, else the set's next way in
  // turn, which this walk takes. Its offsets are 32-bit, from the interposed function's
  // frame: a stack of 4 GiB or more goes without.
  constexpr uint32_t kWays = runtime_internal::kUnwindWalkWays;
  static_assert((kWays & (kWays - 1)) == 0, "the turn wraps with a mask");
  uint32_t way;
  const size_t set = unwind_internal::MemoSet(s, start, &way);
  runtime_internal::UnwindWalk* ways = s.unwind_walks[set];
  if (way == kWays) {
    uint8_t& next = s.unwind_walk_next[set];
    way = next;
    next = static_cast<uint8_t>((way + 1) & (kWays - 1));
  }
  runtime_internal::UnwindWalk& memo = ways[way];
  const bool remembered = bounds.high - fp < runtime_internal::kUnwindInitialRbp;

  // The walk's state at frame n - 1 (frames[0, n) written): the stack pointer on return
  // to it, rbp there and where rbp came from, its return address and its rule.
  uint32_t n = 0;
  uint64_t rsp = start;
  uint64_t rbp = rbp0;
  uint32_t rbp_from = runtime_internal::kUnwindInitialRbp;
  FrameRule rule = FrameRule::End();
  uint64_t& memo_start = s.unwind_walk_start[set][way];
  if (remembered && memo_start == start && memo.frames != 0 && memo.frames <= max &&
      memo.ret[0] == ret) {
    // The last walk from here, checked against the stack. Each step of a walk depends only
    // on the stack words it reads and on the rule of each return address, so if every
    // word that walk read still holds what it read there, this walk is that walk. Those
    // words (thread_state.h): each return address, at its callee's CFA - 8, and each rbp
    // a CFA was computed from (the interposed function's saved rbp, or the slot rbp was
    // last reloaded from). No check waits for another, so the loads overlap; the
    // addresses were on this thread's stack, above `fp`, when the memo was written, and
    // still are. (A memo deeper than `max`, written under another depth, is walked anew.)
    const uint32_t want = memo.frames;
    if (unwind_internal::MemoHolds(memo, fp)) {
      ++t.unwind_memo_hits;
      if (want == max || memo.ended) {
        unwind_internal::ServedWhole(memo, want, complete, derived);
        if (result != nullptr) {
          *result = memo.ret;  // no copy: valid until this thread's next walk
        } else {
          std::copy(memo.ret, memo.ret + want, frames);
        }
        return want;
      }
      // The memo ends short of `max`: walk on from its last frame.
      std::copy(memo.ret, memo.ret + want, frames);
      n = want;
      ret = memo.ret[n - 1];
      rule = RuleEntry::Rule(memo.entries[n - 1]);
      if (n >= 2) rsp = start + memo.cfa[n - 2];
      rbp_from = memo.rbp_from[n - 1];
      rbp = RbpAt(start, rbp0, rbp_from);
    }
  }
  // The memo's frames: [0, recorded) hold this walk's frames, with the CFA of each but the
  // last, and the check's words. Each frame is added while all before it were and it
  // fits; memo.frames is set at the end (a walk has no other way out). `ret_from`: where
  // the newest frame's return address was read; `cfa_rbp_at`: where the rbp that the
  // previous frame's CFA came from was (an offset from fp), or kNoRbp.
  constexpr uint32_t kNoRbp = ~uint32_t{0};
  uint64_t ret_from = fp + 8;
  uint32_t cfa_rbp_at = kNoRbp;
  uint64_t cfa_rbp = 0;
  uint32_t recorded = n;
  auto record = [&] {
    if (recorded + 1 != n || n > runtime_internal::kUnwindWalkFrames || !RuleEntry::Fits(ret)) {
      return;
    }
    memo.entries[n - 1] = RuleEntry::Make(ret, rule);
    memo.rbp_from[n - 1] = rbp_from;
    memo.ret[n - 1] = ret;
    memo.ret_at[n - 1] = static_cast<uint32_t>(ret_from - fp);
    if (cfa_rbp_at != kNoRbp) {
      memo.rbp_at[memo.rbp_checks] = cfa_rbp_at;
      memo.rbp_value[memo.rbp_checks] = cfa_rbp;
      ++memo.rbp_checks;
    }
    recorded = n;
  };
  if (n == 0) {
    // A walk of its own, written into the memo as it goes.
    memo_start = remembered ? start : 0;
    memo.rbp_checks = 0;
    memo.derived = 0;
    memo.derived_frames = 0;
    rule = RuleFor(ret);
    frames[n++] = ret;
    record();
  }
  bool ended = false;
  while (n < max) {
    if (!rule.is_rule()) {
      if (rule.is_unsupported()) *complete = false;
      ended = true;
      break;
    }
    const uint64_t cfa = (rule.cfa_from_rbp() ? rbp : rsp) + rule.cfa_offset();
    if (rule.cfa_from_rbp()) {
      // rbp0 is the word at fp; a reloaded rbp, the word at start + rbp_from.
      cfa_rbp_at = rbp_from == runtime_internal::kUnwindInitialRbp
                       ? 0
                       : static_cast<uint32_t>(start + rbp_from - fp);
      cfa_rbp = rbp;
    } else {
      cfa_rbp_at = kNoRbp;
    }
    // The caller's frame lies above this one and below the stack's top; rsp never drops
    // below the stack's bottom (it starts above it and only grows), so the words read,
    // between rsp and cfa, are on the stack.
    if (cfa <= rsp || cfa > bounds.high) break;
    if (rule.rbp_slot() != 0) {
      const uint64_t slot = cfa - 8 * uint64_t{rule.rbp_slot()};
      if (slot < rsp) break;
      rbp = *reinterpret_cast<const uint64_t*>(slot);
      rbp_from = static_cast<uint32_t>(slot - start);  // < bounds.high - start: fits
    }
    const uint64_t next = *reinterpret_cast<const uint64_t*>(cfa - 8);
    if (next == 0) break;
    if (recorded == n) memo.cfa[n - 1] = static_cast<uint32_t>(cfa - start);
    // The predictor (thread_state.h): its entry's address depends only on `ret`, so it is
    // loaded while the stack word above is, and a hit leaves the next rule in hand. A
    // miss asks the shared cache and teaches the entry.
    runtime_internal::UnwindStep& step =
        s.unwind_steps[FibonacciIndex(ret, runtime_internal::kUnwindStepsLog2)];
    if (step.from == ret && RuleEntry::Address(step.to) == next) {
      rule = RuleEntry::Rule(step.to);
    } else {
      rule = RuleFor(next);
      if (RuleEntry::Fits(next)) {
        step.from = ret;
        step.to = RuleEntry::Make(next, rule);
      }
    }
    ret = next;
    ret_from = cfa - 8;
    rsp = cfa;
    frames[n++] = ret;
    record();
  }
  memo.frames = recorded;
  // The check's slots past the last frame repeat frame 0's (its return address, at fp + 8,
  // which a walk served from the memo has just compared): MemoHolds() then runs the same
  // unrolled check for every memo, with no loop whose trip count changes from one stack
  // position to the next.
  if (recorded != 0) {
    for (uint32_t i = recorded; i < runtime_internal::kUnwindWalkFrames; ++i) {
      memo.ret_at[i] = 8;
      memo.ret[i] = memo.ret[0];
    }
  }
  // Ended by the rule of its last frame, which the memo holds: the next walk that matches
  // the memo ends there too.
  memo.ended = ended && recorded == n;
  memo.complete = *complete;
  if (memo.derived_frames == 0 && recorded == n && remembered) {
    // A walk of its own that the memo holds whole: its derived word starts here.
    memo.derived_frames = n;
    if (derived != nullptr) *derived = &memo.derived;
  }
  return n;
}

uint32_t UnwindFramePointers(const void* frame, uint64_t* frames, uint32_t max) noexcept {
  const StackBounds bounds = Bounds();
  auto fp = reinterpret_cast<uint64_t>(frame);
  uint32_t n = 0;
  // A frame: [fp] = the caller's saved frame pointer, [fp + 8] = the return address.
  while (n < max && fp >= bounds.low && fp + 16 <= bounds.high && (fp & 7) == 0) {
    const auto* words = reinterpret_cast<const uint64_t*>(fp);
    const uint64_t ret = words[1];
    if (ret == 0) break;
    frames[n++] = ret;
    const uint64_t next = words[0];
    if (next <= fp) break;  // the chain must move up the stack
    fp = next;
  }
  return n;
}

}  // namespace memtrace::preload_internal
