// Copyright 2026 The memtrace Authors.
//
// A library the interposer's tests (preload_stacks_and_names_test.cc) load with dlopen()
// and unload with dlclose(): the block it allocates keeps a call site inside it.

#include <stdlib.h>

extern "C" __attribute__((noinline, visibility("default"))) void* memtrace_test_plugin_alloc(
    size_t n) {
  void* p = malloc(n);
  asm volatile("" : : "r"(p) : "memory");  // a call, not a tail call
  return p;
}
