// Copyright 2026 The memtrace Authors.

#include "tests/inline_frames.h"

#include <stdlib.h>

namespace memtrace_inline_test {

__attribute__((noinline)) uint64_t Leaf() {
  uint64_t pc = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  asm volatile("" : "+r"(pc));
  return pc;
}

const int kLeafCallLine = __LINE__ + 3;
__attribute__((always_inline)) inline uint64_t InnerInlined() {
  asm volatile("");
  uint64_t pc = Leaf();
  asm volatile("" : "+r"(pc));  // not a tail call
  return pc;
}

const int kInnerCallLine = __LINE__ + 3;
__attribute__((always_inline)) inline uint64_t Inlined() {
  asm volatile("");
  uint64_t pc = InnerInlined();
  asm volatile("" : "+r"(pc));
  return pc;
}

const int kInlinedCallLine = __LINE__ + 3;
__attribute__((noinline)) uint64_t Outer() {
  asm volatile("");
  uint64_t pc = Inlined();
  asm volatile("" : "+r"(pc));
  return pc;
}

__attribute__((always_inline)) inline void* InlinedAllocate(size_t n) {
  asm volatile("");
  void* p = malloc(n);
  asm volatile("" : : "r"(p) : "memory");  // a call, not a tail call
  return p;
}

__attribute__((noinline)) void* AllocateThroughInlined(size_t n) {
  asm volatile("");
  void* p = InlinedAllocate(n);
  asm volatile("" : : "r"(p) : "memory");
  return p;
}

}  // namespace memtrace_inline_test
