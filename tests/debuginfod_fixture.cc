// Copyright 2026 The memtrace Authors.
//
// debuginfod_fixture.cc: a shared library whose functions are named only by its debug
// information once stripped (debuginfod_test, and preload_stacks_and_names_test through
// preload_target's `plugin` mode): Inner() and Allocate() are hidden, so no dynamic symbol
// names them.

#include <stdlib.h>

namespace memtrace_fixture {

// Built twice (tests/BUILD.bazel): MEMTRACE_FIXTURE_VARIANT makes the dwz copy another
// build, with a build id of its own.
#ifndef MEMTRACE_FIXTURE_VARIANT
#define MEMTRACE_FIXTURE_VARIANT 1
#endif

__attribute__((visibility("hidden"), noinline)) int Inner(int x) {
  asm volatile("");
  return x * 3 + MEMTRACE_FIXTURE_VARIANT;
}

__attribute__((visibility("hidden"), noinline)) void* Allocate(size_t n) {
  void* p = malloc(n);
  asm volatile("" : : "r"(p) : "memory");  // a call, not a tail call
  return p;
}

}  // namespace memtrace_fixture

// Where Inner() was loaded.
extern "C" __attribute__((visibility("default"))) const void* DebuginfodFixtureInner() {
  return reinterpret_cast<const void*>(&memtrace_fixture::Inner);
}

// The entry point preload_target's `plugin` mode calls: a block allocated in Allocate().
extern "C" __attribute__((noinline, visibility("default"))) void* memtrace_test_plugin_alloc(
    size_t n) {
  void* p = memtrace_fixture::Allocate(n);
  asm volatile("" : : "r"(p) : "memory");
  return p;
}
