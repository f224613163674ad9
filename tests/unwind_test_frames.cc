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

int PathStep(const unsigned char* path, int length, Probe probe, void* arg);

__attribute__((noinline)) int PathPlain(const unsigned char* path, int length, Probe probe,
                                        void* arg) {
  volatile int local = length;
  return PathStep(path + 1, length - 1, probe, arg) + local;
}

__attribute__((noinline)) int PathOtherPlain(const unsigned char* path, int length,
                                             Probe probe, void* arg) {
  volatile int local = length;
  return PathStep(path + 1, length - 1, probe, arg) - local;
}

__attribute__((noinline)) int PathAlloca(const unsigned char* path, int length, Probe probe,
                                         void* arg) {
  auto* buffer = static_cast<volatile char*>(alloca(16 * (1 + (path[0] >> 2))));
  buffer[0] = static_cast<char>(length);
  return PathStep(path + 1, length - 1, probe, arg) + buffer[0];
}

__attribute__((noinline)) int PathBigFrame(const unsigned char* path, int length,
                                           Probe probe, void* arg) {
  volatile char buffer[3000];
  buffer[length] = 1;
  return PathStep(path + 1, length - 1, probe, arg) + buffer[length];
}

__attribute__((noinline)) int PathStep(const unsigned char* path, int length, Probe probe,
                                       void* arg) {
  if (length <= 0) {
    probe(arg);
    return 1;
  }
  switch (path[0] & 3) {
    case 0:
      return PathPlain(path, length, probe, arg) + 1;
    case 1:
      return PathOtherPlain(path, length, probe, arg) + 1;
    case 2:
      return PathAlloca(path, length, probe, arg) + 1;
    default:
      return PathBigFrame(path, length, probe, arg) + 1;
  }
}

__attribute__((noinline)) int InnerAlloca(unsigned bytes, Probe probe, void* arg) {
  auto* buffer = static_cast<volatile char*>(alloca(bytes));
  buffer[0] = 1;
  probe(arg);
  return buffer[0];
}

__attribute__((noinline)) int MiddleAlloca(unsigned bytes, unsigned inner, Probe probe,
                                           void* arg) {
  auto* buffer = static_cast<volatile char*>(alloca(bytes));
  buffer[0] = 1;  // the lowest byte: the rest keeps what was there
  if (inner == 0) {
    probe(arg);
    return buffer[0];
  }
  return InnerAlloca(inner, probe, arg) + buffer[0];
}

__attribute__((noinline)) int OuterAllocaA(unsigned bytes, unsigned middle, unsigned inner,
                                           Probe probe, void* arg) {
  auto* buffer = static_cast<volatile char*>(alloca(bytes));
  buffer[0] = 1;
  return MiddleAlloca(middle, inner, probe, arg) + buffer[0];
}

__attribute__((noinline)) int OuterAllocaB(unsigned bytes, unsigned middle, unsigned inner,
                                           Probe probe, void* arg) {
  auto* buffer = static_cast<volatile char*>(alloca(bytes));
  buffer[0] = 2;
  return MiddleAlloca(middle, inner, probe, arg) - buffer[0];
}

__attribute__((noinline)) int PlainLevels(int levels, Probe probe, void* arg) {
  volatile int local = levels;
  if (levels <= 0) {
    probe(arg);
    return local;
  }
  return PlainLevels(levels - 1, probe, arg) + local;
}

}  // namespace

__attribute__((noinline)) int PaddedChain(unsigned pad, int levels, Probe probe, void* arg) {
  auto* buffer = static_cast<volatile char*>(alloca(pad));
  buffer[0] = 1;
  return PlainLevels(levels, probe, arg) + buffer[0];
}

int Path(const unsigned char* path, int length, Probe probe, void* arg) {
  return PathStep(path, length, probe, arg);
}

int AllocaFrames(int which, unsigned outer, unsigned middle, unsigned inner, Probe probe,
                 void* arg) {
  return which == 0 ? OuterAllocaA(outer, middle, inner, probe, arg)
                    : OuterAllocaB(outer, middle, inner, probe, arg);
}

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
