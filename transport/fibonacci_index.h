// Copyright 2026 The memtrace Authors.
//
// fibonacci_index.h: the index every direct-mapped cache and table of memtrace's uses for a
// 64-bit key (an address, a return address, a stack hash).
//
// The top `bits` bits of the key times 2^64 / phi. They depend on every bit of the key.
// The low bits of a product depend only on the key's low bits, so keys that differ only
// above them, such as nearby call sites or 16-byte-aligned blocks, would share one slot.
//
// Thread safety: a pure function.

#ifndef MEMTRACE_TRANSPORT_FIBONACCI_INDEX_H_
#define MEMTRACE_TRANSPORT_FIBONACCI_INDEX_H_

#include <cstdint>

namespace memtrace {

// An index in [0, 2^bits) for `key`; 1 <= bits <= 63.
constexpr uint64_t FibonacciIndex(uint64_t key, int bits) noexcept {
  return (key * 0x9E3779B97F4A7C15ull) >> (64 - bits);
}

}  // namespace memtrace

#endif  // MEMTRACE_TRANSPORT_FIBONACCI_INDEX_H_
