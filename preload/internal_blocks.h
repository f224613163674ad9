// Copyright 2026 The memtrace Authors.
//
// internal_blocks.h: blocks memtrace allocated on a program's thread, whose release the
// interposer must not record.
//
// While the interposer records, it raises the thread's reentrancy flag, and whatever it
// allocates then (binding a ring, libunwind's per-thread TLS block, the thread-exit hook's
// node) goes to the real allocator untraced. Some of those blocks are released later by
// code that is not memtrace's: glibc frees a dlopen()ed library's TLS block when the
// thread's stack is reclaimed, possibly on another thread. Recording that release would
// count an unknown free. So the interposer remembers such blocks here and skips their
// release.
//
// A fixed open-addressing set of addresses (2^16 slots, linear probing, at most
// kMaxProbe slots looked at). Insert takes an empty or deleted slot with a CAS; Erase
// marks the slot deleted. An address is inserted only while its block is live and erased
// when it is released, so it is never in the set twice. When the set is full, or a probe
// runs past kMaxProbe, the block is not remembered and `overflowed()` counts it (its
// release then shows as an unknown free, so the loss is visible).
//
// Cost on the hot path (every free): one relaxed load of the live count; when it is not
// zero, a hash and usually one cache line.
//
// Memory ordering: slots are read and written with relaxed atomics plus CAS. A block's
// insertion happens before its release in program order or through the allocator's own
// synchronization (the block is handed to whoever frees it), so the releasing thread sees
// the slot. The live count only decides whether to look: a stale zero can only miss a
// block inserted concurrently with its own release, which cannot happen (same argument).
//
// Thread safety: every method is for any thread; no locks, no allocation.

#ifndef MEMTRACE_PRELOAD_INTERNAL_BLOCKS_H_
#define MEMTRACE_PRELOAD_INTERNAL_BLOCKS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace memtrace::preload_internal {

class InternalBlocks {
 public:
  static constexpr size_t kSlots = size_t{1} << 16;
  static constexpr size_t kMaxProbe = 128;

  constexpr InternalBlocks() = default;

  void Insert(uint64_t address) noexcept {
    size_t i = Home(address);
    for (size_t probe = 0; probe < kMaxProbe; ++probe, i = (i + 1) & (kSlots - 1)) {
      uint64_t seen = slots_[i].load(std::memory_order_relaxed);
      while (seen == kEmpty || seen == kDeleted) {
        // Relaxed: see the header; the CAS only arbitrates between inserters.
        if (slots_[i].compare_exchange_weak(seen, address, std::memory_order_relaxed)) {
          live_.fetch_add(1, std::memory_order_relaxed);
          return;
        }
      }
    }
    overflowed_.fetch_add(1, std::memory_order_relaxed);
  }

  // Removes `address` if it is here; true when it was (the release must not be recorded).
  bool Erase(uint64_t address) noexcept {
    // Relaxed: a statistic that only says whether to look (see the header).
    if (live_.load(std::memory_order_relaxed) == 0) return false;
    size_t i = Home(address);
    for (size_t probe = 0; probe < kMaxProbe; ++probe, i = (i + 1) & (kSlots - 1)) {
      uint64_t seen = slots_[i].load(std::memory_order_relaxed);
      if (seen == kEmpty) return false;
      if (seen == address &&
          slots_[i].compare_exchange_strong(seen, kDeleted, std::memory_order_relaxed)) {
        live_.fetch_sub(1, std::memory_order_relaxed);
        return true;
      }
    }
    return false;
  }

  int64_t live() const noexcept { return live_.load(std::memory_order_relaxed); }
  uint64_t overflowed() const noexcept { return overflowed_.load(std::memory_order_relaxed); }

 private:
  static constexpr uint64_t kEmpty = 0;
  static constexpr uint64_t kDeleted = 1;  // never a block address (blocks are aligned)

  static size_t Home(uint64_t address) noexcept {
    return static_cast<size_t>((address * 0x9e3779b97f4a7c15ull) >> 48) & (kSlots - 1);
  }

  std::atomic<uint64_t> slots_[kSlots] = {};
  std::atomic<int64_t> live_{0};
  std::atomic<uint64_t> overflowed_{0};
};

}  // namespace memtrace::preload_internal

#endif  // MEMTRACE_PRELOAD_INTERNAL_BLOCKS_H_
