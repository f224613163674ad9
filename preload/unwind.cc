// Copyright 2026 The memtrace Authors.

#include "preload/unwind.h"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>

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
