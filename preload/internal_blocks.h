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
// The interposer's sampling (MEMTRACE_SAMPLE_BYTES) uses the same set for the blocks it
// sampled: only their releases are recorded.
//
// A fixed open-addressing set of addresses (2^kSlotsLog2 slots, linear probing, at most
// kMaxProbe slots looked at). Insert takes an empty or deleted slot with a CAS; Erase
// marks the slot deleted. An address is inserted only while its block is live and erased
// when it is released, so it is never in the set twice. When the set is full, or a probe
// runs past kMaxProbe, the block is not remembered and `overflowed()` counts it (its
// release then shows as an unknown free, so the loss is visible).
//
// Cost on the hot path (every free): one relaxed load of the live count; when it is not
// zero, a hash and one byte of a small counting filter (2^kFilterLog2 one-byte counters,
// one per hash bucket, 4 KiB for the internal blocks: it stays in cache), and only when
// that counter is not zero, the slot's cache line in the 512 KiB table. Internal blocks
// stay live for a thread's lifetime (the exit hook's node), so without the filter every
// free of a program with threads paid a likely cache miss. A counter that reaches 255
// stays there (the filter then only answers "look" more often). kFilterLog2 = 0 means no
// filter (the sampled set, which holds most live blocks).
//
// Memory ordering: slots are read and written with relaxed atomics plus CAS. A block's
// insertion happens before its release in program order or through the allocator's own
// synchronization (the block is handed to whoever frees it), so the releasing thread sees
// the slot. The live count and the filter only decide whether to look: a stale zero can
// only miss a block inserted concurrently with its own release, which cannot happen (same
// argument; Insert counts the block before it returns).
//
// Thread safety: every method is for any thread; no locks, no allocation.

#ifndef MEMTRACE_PRELOAD_INTERNAL_BLOCKS_H_
#define MEMTRACE_PRELOAD_INTERNAL_BLOCKS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "transport/fibonacci_index.h"

namespace memtrace::preload_internal {

// Where an address's probe starts. kScattered: a Fibonacci hash, which spreads any
// pattern of addresses over the whole table. kNearby: blocks allocated next to each other
// take slots next to each other. The interposer's own start-up allocates a hundred-odd
// blocks close together, and scattered over a fresh 512 KiB table they faulted in about
// 100 of its pages, a page fault each (a traced /bin/true: bench/README.md, "Start-up").
// So each 8 KiB window of addresses has a 4 KiB page of slots, one slot per 16-byte
// granule (no two blocks of one window share a home), and the windows are scattered over
// the pages by the hash: neighbouring blocks share pages, and blocks at the same offset
// of many windows (malloc's thread heaps are 64 MiB-aligned) do not pile onto one run of
// slots, as a plain address modulo the table size would make them.
enum class AddressHome : uint8_t { kScattered, kNearby };

template <int kSlotsLog2, int kFilterLog2 = 0, AddressHome kHome = AddressHome::kScattered>
class AddressSet {
 public:
  static constexpr size_t kSlots = size_t{1} << kSlotsLog2;
  static constexpr size_t kMaxProbe = 128;

  constexpr AddressSet() = default;

  void Insert(uint64_t address) noexcept {
    size_t i = Home(address);
    for (size_t probe = 0; probe < kMaxProbe; ++probe, i = (i + 1) & (kSlots - 1)) {
      uint64_t seen = slots_[i].load(std::memory_order_relaxed);
      while (seen == kEmpty || seen == kDeleted) {
        // Relaxed: see the header; the CAS only arbitrates between inserters.
        if (slots_[i].compare_exchange_weak(seen, address, std::memory_order_relaxed)) {
          live_.fetch_add(1, std::memory_order_relaxed);
          Count(address, +1);
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
    if constexpr (kFilterLog2 > 0) {
      // Relaxed: as the live count.
      if (filter_[FilterSlot(address)].load(std::memory_order_relaxed) == 0) return false;
    }
    size_t i = Home(address);
    for (size_t probe = 0; probe < kMaxProbe; ++probe, i = (i + 1) & (kSlots - 1)) {
      uint64_t seen = slots_[i].load(std::memory_order_relaxed);
      if (seen == kEmpty) return false;
      if (seen == address &&
          slots_[i].compare_exchange_strong(seen, kDeleted, std::memory_order_relaxed)) {
        live_.fetch_sub(1, std::memory_order_relaxed);
        Count(address, -1);
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

  static constexpr int kWindowBits = 9;  // 512 slots: 4 KiB of slots, 8 KiB of addresses
  static_assert(kHome != AddressHome::kNearby || kSlotsLog2 > kWindowBits);

  static size_t Home(uint64_t address) noexcept {
    if constexpr (kHome == AddressHome::kNearby) {
      const uint64_t granule = address >> 4;
      const uint64_t page = FibonacciIndex(granule >> kWindowBits, kSlotsLog2 - kWindowBits);
      return static_cast<size_t>((page << kWindowBits) |
                                 (granule & ((uint64_t{1} << kWindowBits) - 1)));
    } else {
      return static_cast<size_t>(FibonacciIndex(address, kSlotsLog2));
    }
  }

  static constexpr size_t kFilterSlots = kFilterLog2 > 0 ? size_t{1} << kFilterLog2 : 1;
  static size_t FilterSlot(uint64_t address) noexcept {
    // A multiplier unrelated to Home()'s, so that one filter counter spans many homes.
    return static_cast<size_t>((address * 0xd6e8feb86659fd93ull) >> (64 - kFilterLog2));
  }
  // Adds `delta` to the address's filter counter, unless the counter is stuck at 255.
  static constexpr uint8_t kStuck = 255;
  void Count(uint64_t address, int delta) noexcept {
    if constexpr (kFilterLog2 > 0) {
      std::atomic<uint8_t>& counter = filter_[FilterSlot(address)];
      // Relaxed: see the header; the CAS only arbitrates between writers.
      uint8_t seen = counter.load(std::memory_order_relaxed);
      while (seen != kStuck && !counter.compare_exchange_weak(
                                   seen, static_cast<uint8_t>(seen + delta),
                                   std::memory_order_relaxed)) {
      }
    }
  }

  std::atomic<uint64_t> slots_[kSlots] = {};
  std::atomic<uint8_t> filter_[kFilterSlots] = {};
  std::atomic<int64_t> live_{0};
  std::atomic<uint64_t> overflowed_{0};
};

// memtrace's own blocks on program threads: a few per thread, and the start-up's.
using InternalBlocks = AddressSet<16, 12, AddressHome::kNearby>;
// Sampled live blocks: about live heap / sample interval of them.
using SampledBlocks = AddressSet<20>;

}  // namespace memtrace::preload_internal

#endif  // MEMTRACE_PRELOAD_INTERNAL_BLOCKS_H_
