// Copyright 2026 The memtrace Authors.

#include "preload/unwind.h"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>

#include "preload/eh_frame.h"
#include "runtime/internal/thread_state.h"

namespace memtrace::preload_internal {
namespace {

struct StackBounds {
  uint64_t low;
  uint64_t high;
};

StackBounds Bounds() noexcept {
  runtime_internal::ThreadState& t = runtime_internal::Tls();
  if (t.stack_high != 0) return StackBounds{t.stack_low, t.stack_high};
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

}  // namespace

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
uint32_t UnwindCfi(const void* frame, uint64_t* frames, uint32_t max, bool* complete) noexcept {
#if !defined(__x86_64__)
  // The rules are x86-64's (eh_frame.h): elsewhere libunwind walks every stack.
  (void)frame, (void)frames, (void)max;
  *complete = false;
  return 0;
#endif
  *complete = true;
  const StackBounds bounds = Bounds();
  // In bounds: [address, address + 8) lies inside the thread's stack.
  auto in_stack = [&](uint64_t address) {
    return address >= bounds.low && address + 8 <= bounds.high && (address & 7) == 0;
  };
  const auto fp = reinterpret_cast<uint64_t>(frame);
  if (max == 0) return 0;
  if (!in_stack(fp) || !in_stack(fp + 8)) {
    // Not on the thread's own stack (a coroutine's or an alternate signal stack): the
    // walk has no bounds to check its reads against, so it leaves this one to libunwind.
    *complete = false;
    return 0;
  }
  // The interposed function's frame: saved rbp at fp, return address above it, and the
  // caller's stack pointer just above that.
  uint64_t rbp = *reinterpret_cast<const uint64_t*>(fp);
  uint64_t ret = *reinterpret_cast<const uint64_t*>(fp + 8);
  uint64_t rsp = fp + 16;
  runtime_internal::ThreadState& t = runtime_internal::Tls();
  // The memo of the last walk from this position (thread_state.h). Following it, the next
  // frame's rule is known before the stack word that names the frame is loaded, so the
  // CFAs follow one another at the cost of an add, and the loads overlap; each loaded
  // return address is then checked against the memo's, and from the first that differs
  // on, the walk looks rules up (the predictor, the shared cache) and rewrites the memo.
  // Either way every rule used is the rule of the return address read from the stack.
  const size_t set =
      (rsp * 0x9E3779B97F4A7C15ull) >> (64 - runtime_internal::kUnwindWalkSetsLog2);
  runtime_internal::UnwindWalk* ways = t.unwind_walks[set];
  uint8_t& recent = t.unwind_walk_recent[set];
  // The way that started here, else the one used less recently, which this walk takes.
  const uint32_t way = ways[0].start == rsp ? 0 : ways[1].start == rsp ? 1 : recent ^ 1u;
  ways[way].start = rsp;
  recent = static_cast<uint8_t>(way);
  uint64_t* memo = ways[way].frames;
  bool following = ret != 0 && RuleEntry::Address(memo[0]) == ret;
  FrameRule rule = following ? RuleEntry::Rule(memo[0])
                   : ret != 0 ? RuleFor(ret)
                              : FrameRule::End();
  uint32_t n = 0;
  while (ret != 0) {
    if (!following && n < runtime_internal::kUnwindWalkFrames) {
      // 0 matches no return address: an entry that cannot hold this one is left empty.
      memo[n] = RuleEntry::Fits(ret) ? RuleEntry::Make(ret, rule) : 0;
    }
    frames[n++] = ret;
    if (n == max) break;
    if (!rule.is_rule()) {
      if (rule.is_unsupported()) *complete = false;
      break;
    }
    const uint64_t cfa = (rule.cfa_from_rbp() ? rbp : rsp) + rule.cfa_offset();
    // The caller's frame lies above this one and below the stack's top; rsp never drops
    // below the stack's bottom (it starts above it and only grows), so the words read,
    // between rsp and cfa, are on the stack.
    if (cfa <= rsp || cfa > bounds.high) break;
    if (rule.rbp_slot() != 0) {
      const uint64_t slot = cfa - 8 * uint64_t{rule.rbp_slot()};
      if (slot < rsp) break;
      rbp = *reinterpret_cast<const uint64_t*>(slot);
    }
    const uint64_t next = *reinterpret_cast<const uint64_t*>(cfa - 8);
    if (following && n < runtime_internal::kUnwindWalkFrames &&
        RuleEntry::Address(memo[n]) == next && next != 0) {
      rule = RuleEntry::Rule(memo[n]);
    } else if (next != 0) {
      following = false;
      // The predictor (thread_state.h): its entry's address depends only on `ret`, so it
      // is loaded while the stack word above is, and a hit leaves the next rule in hand. A
      // miss asks the shared cache and teaches the entry.
      runtime_internal::UnwindStep& step =
          t.unwind_steps[(ret * 0x9E3779B97F4A7C15ull) >>
                         (64 - runtime_internal::kUnwindStepsLog2)];
      if (step.from == ret && RuleEntry::Address(step.to) == next) {
        rule = RuleEntry::Rule(step.to);
      } else {
        rule = RuleFor(next);
        if (RuleEntry::Fits(next)) {
          step.from = ret;
          step.to = RuleEntry::Make(next, rule);
        }
      }
    }
    ret = next;
    rsp = cfa;
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
