// Copyright 2026 The memtrace Authors.
//
// Built with -fomit-frame-pointer (tests/BUILD.bazel): these frames can only be walked
// with the unwind tables.

#include "tests/unwind_test_frames.h"

#include <alloca.h>

namespace memtrace::unwind_test {
namespace {

__attribute__((noinline)) int Plain(int depth, Probe probe, void* arg) {
  volatile int local = depth;
  return Chain(depth - 1, probe, arg) + local;
}

__attribute__((noinline)) int WithAlloca(int depth, Probe probe, void* arg) {
  auto* buffer = static_cast<volatile char*>(alloca(64 + 16 * static_cast<unsigned>(depth)));
  buffer[0] = static_cast<char>(depth);
  return Chain(depth - 1, probe, arg) + buffer[0];
}

__attribute__((noinline)) int WithBigFrame(int depth, Probe probe, void* arg) {
  volatile char buffer[20000];
  buffer[depth] = 1;
  return Chain(depth - 1, probe, arg) + buffer[depth];
}

}  // namespace

__attribute__((noinline)) int Chain(int depth, Probe probe, void* arg) {
  if (depth <= 0) {
    probe(arg);
    return 1;
  }
  switch (depth % 3) {
    case 0:
      return Plain(depth, probe, arg) + 1;
    case 1:
      return WithAlloca(depth, probe, arg) + 1;
    default:
      return WithBigFrame(depth, probe, arg) + 1;
  }
}

__attribute__((noinline)) int ChainWithHugeFrame(int depth, Probe probe, void* arg) {
  volatile char buffer[40000];
  buffer[depth] = 1;
  return Chain(depth, probe, arg) + buffer[depth];
}

}  // namespace memtrace::unwind_test
