// Copyright 2026 The memtrace Authors.
//
// bootstrap.h: the requests the interposer serves before the real functions are known.
// dlsym() may allocate while ResolveOnce() looks them up; those requests are served from
// a static buffer, never freed, never passed on (interposer_state.h, "The corners").
//
// Thread safety: any thread; the buffer's offset is a relaxed atomic (only the offset is
// shared, and each block is handed to one caller).

#ifndef MEMTRACE_PRELOAD_BOOTSTRAP_H_
#define MEMTRACE_PRELOAD_BOOTSTRAP_H_

#include <cstddef>
#include <cstdint>

#include "preload/interposer_state.h"

// Hidden: shared by the interposer's files, never exported (exports.lds).
#pragma GCC visibility push(hidden)

namespace memtrace::preload_internal {

constexpr size_t kBootstrapBytes = size_t{1} << 20;
extern char bootstrap[kBootstrapBytes];

inline bool IsBootstrap(const void* p) noexcept {
  const auto a = reinterpret_cast<uintptr_t>(p);
  const auto b = reinterpret_cast<uintptr_t>(bootstrap);
  return a >= b && a < b + kBootstrapBytes;
}

// Zeroed memory (the buffer is never reused), with its size in the 16 bytes before it.
void* BootstrapAlloc(size_t n, size_t alignment) noexcept;

inline size_t BootstrapSize(const void* p) noexcept { return static_cast<const size_t*>(p)[-1]; }

// Bootstrap blocks (served while dlsym runs) are remembered like any block allocated
// before tracing starts, so the capture counts every call the program made.
void* BootstrapCall(size_t n, size_t alignment, Caller caller) noexcept;

}  // namespace memtrace::preload_internal

#pragma GCC visibility pop

#endif  // MEMTRACE_PRELOAD_BOOTSTRAP_H_
