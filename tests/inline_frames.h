// Copyright 2026 The memtrace Authors.
//
// inline_frames.h: functions with another inlined into them, built with full debug
// information (-g2; the build's -g1 describes inlining only in part), for symbolizer_test,
// exports_test and preload_target.

#ifndef MEMTRACE_TESTS_INLINE_FRAMES_H_
#define MEMTRACE_TESTS_INLINE_FRAMES_H_

#include <cstddef>
#include <cstdint>

namespace memtrace_inline_test {

// A return address inside Outer(), in the code of InnerInlined(), inlined into
// Inlined(), inlined into Outer(): the return from InnerInlined()'s call of a function
// that is not inlined.
uint64_t Outer();

extern const int kLeafCallLine;     // the line in InnerInlined() that makes that call
extern const int kInnerCallLine;    // the line in Inlined() that calls InnerInlined()
extern const int kInlinedCallLine;  // the line in Outer() that calls Inlined()

// malloc(n), called from InlinedAllocate(), which the compiler inlined into this function
// (for preload_target's `inlined` mode).
void* AllocateThroughInlined(size_t n);

}  // namespace memtrace_inline_test

#endif  // MEMTRACE_TESTS_INLINE_FRAMES_H_
