// Copyright 2026 The memtrace Authors.
//
// cache_line.h: the unit of sharing between cores, and memory that owns whole lines.
//
// Two threads that write the same 64-byte line on different cores take it from each
// other on every write, even when they write different bytes ("false sharing"). memtrace
// keeps what its own threads write apart from what the program writes:
//   - objects that both sides touch put each side's fields on lines of their own
//     (alignas(kCacheLineSize) members: the ring's indices, the epoch clock);
//   - containers that the drainer or the sink's writer write for every record are
//     allocated by LineAlignedAllocator, so that no byte of their storage shares a line
//     with anything else in the process.
//
// Why the second rule matters: containers created on a program thread (the tracer starts
// on one) come from the program's malloc arena, in between the program's own blocks.
// glibc aligns blocks to 16 bytes, so a small vector's first and last lines usually hold
// a neighbouring block too. In a traced sqlite3 run, the ledger's one-element vector of
// per-scope counters, written by the drainer for every record, shared a line with data
// sqlite3 wrote as often; whether it did depended on the heap's layout (one more library
// preloaded after the interposer was enough), and when it did, both cores paid for every
// record (bench/README.md, "Lines and pages").
//
// Thread safety: the allocator is stateless; allocate/deallocate are as thread-safe as
// operator new/delete.

#ifndef MEMTRACE_TRANSPORT_CACHE_LINE_H_
#define MEMTRACE_TRANSPORT_CACHE_LINE_H_

#include <cstddef>
#include <new>
#include <vector>

namespace memtrace {

inline constexpr size_t kCacheLineSize = 64;

// Bytes rounded up to whole cache lines.
inline constexpr size_t RoundUpToCacheLines(size_t bytes) noexcept {
  return (bytes + kCacheLineSize - 1) & ~(kCacheLineSize - 1);
}

// A std::allocator-compatible allocator whose blocks start on a cache line and end on
// one: `n` objects take RoundUpToCacheLines(n * sizeof(T)) bytes, aligned to the line.
// With glibc's malloc, a block's header and its neighbours lie outside those lines.
template <typename T>
class LineAlignedAllocator {
 public:
  using value_type = T;

  LineAlignedAllocator() noexcept = default;
  template <typename U>
  LineAlignedAllocator(const LineAlignedAllocator<U>&) noexcept {}  // NOLINT: rebinding

  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / 2 / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(::operator new(RoundUpToCacheLines(n * sizeof(T)),
                                          std::align_val_t{kCacheLineSize}));
  }
  void deallocate(T* p, size_t) noexcept {
    // Unsized: clang (14) declares the sized aligned form only with -fsized-deallocation,
    // and this header is compiled into the programs that use memtrace's API.
    ::operator delete(p, std::align_val_t{kCacheLineSize});
  }

  template <typename U>
  bool operator==(const LineAlignedAllocator<U>&) const noexcept {
    return true;
  }
};

template <typename T>
using LineAlignedVector = std::vector<T, LineAlignedAllocator<T>>;

}  // namespace memtrace

#endif  // MEMTRACE_TRANSPORT_CACHE_LINE_H_
