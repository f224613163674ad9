// Copyright 2026 The memtrace Authors.
//
// zeroed_array.h: a fixed-size table whose empty slots are all-zero bytes, in memory
// mapped zero-filled (internal/mapped_memory.h).
//
// A vector of n value-initialised slots writes every byte when it is made: each of its
// pages faults then, used or not, and a forked child that traces on (the interposer's
// MEMTRACE_TRACE_FORKS) makes a new ledger each time. Here a page faults when a slot on
// it is first written. Made on a program thread like the rest of the ledger, the table
// still shares no cache line with the program's blocks: it starts on a page of its own.
//
// T must be trivially copyable, and a slot of zero bytes must read as empty.
//
// Thread safety: none; like a plain array.
//
// Example:
//   struct Grave { uint64_t key; uint64_t ticket; };  // key 0: empty
//   ZeroedArray<Grave> graveyard(1 << 14);
//   graveyard[i] = Grave{key, ticket};

#ifndef MEMTRACE_TRANSPORT_ZEROED_ARRAY_H_
#define MEMTRACE_TRANSPORT_ZEROED_ARRAY_H_

#include <cstddef>
#include <new>
#include <type_traits>

#include "transport/internal/mapped_memory.h"

namespace memtrace {

template <typename T>
class ZeroedArray {
  static_assert(std::is_trivially_copyable_v<T>, "slots are zero bytes until written");

 public:
  // Throws std::bad_alloc when the memory cannot be mapped, as a vector would.
  explicit ZeroedArray(size_t size)
      : size_(size), data_(static_cast<T*>(transport_internal::MapZeroed(size * sizeof(T)))) {
    if (data_ == nullptr) throw std::bad_alloc();
  }
  ~ZeroedArray() { transport_internal::Unmap(data_, size_ * sizeof(T)); }

  ZeroedArray(const ZeroedArray&) = delete;
  ZeroedArray& operator=(const ZeroedArray&) = delete;

  T& operator[](size_t i) noexcept { return data_[i]; }
  const T& operator[](size_t i) const noexcept { return data_[i]; }
  size_t size() const noexcept { return size_; }
  size_t bytes() const noexcept { return size_ * sizeof(T); }

 private:
  const size_t size_;
  T* const data_;
};

}  // namespace memtrace

#endif  // MEMTRACE_TRANSPORT_ZEROED_ARRAY_H_
