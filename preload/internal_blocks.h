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
// kMaxProbe slots looked at). An address is inserted only while its block is live and
// erased when it is released, so it is never in the set twice. When the set is full, or a
// probe runs past kMaxProbe, the block is not remembered and `overflowed()` counts it (its
// release then shows as an unknown free, so the loss is visible).
//
// Erasing without tombstones. Each slot is one word: the address (0: empty) and, in the
// top byte, how many addresses pass the slot: addresses in the set (or being inserted)
// whose probe went through this slot, taken, to one further on.
//
//   63           56 55                                                   0
//   +--------------+------------------------------------------------------+
//   | passing (8)  | address (56 bits: user space; 0 = empty)             |
//   +--------------+------------------------------------------------------+
//
//   Insert: from the address's home, each taken slot gets passing + 1, until a CAS puts
//           the address into an empty slot (keeping that slot's count). A probe that
//           runs out of room takes its counts back.
//   Erase:  the CAS that finds the address empties its slot (keeping the count), then
//           each slot between its home and it gets passing - 1.
//   Lookup: from the home, stop at the address, or at a slot whose count is 0: no
//           address in the set went past it, so none whose probe reaches it lies beyond.
//
// Why counts and not "deleted" marks: a mark must be read past until an insert lands on
// it, and with millions of distinct addresses coming and going (sampled blocks over a
// long run) marks cover the table, so that each free of an unsampled block (most frees)
// reads all kMaxProbe slots before it knows. A count falls back to 0 as the addresses
// that passed are erased, so a lookup of an absent address reads about as many slots as
// the addresses now in the set call for: one, mostly.
//
// A count that reaches 255 stays there, as the filter's counters do (it then only says
// "look further" more often); no real count comes near it: at most kMaxProbe - 1 set
// addresses can pass a slot, plus one per insert under way.
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
// Memory ordering: slots are read and written with relaxed atomics, every change a CAS,
// so no change to a slot's address or count is ever lost to another's. A block's insertion
// happens before its release in program order or through the allocator's own
// synchronization (the block is handed to whoever frees it), so the releasing thread sees
// the slot and the counts the insertion added, or later values of those slots; a later
// value still holds the insertion's + 1, since each - 1 follows the + 1 of the same
// address (its own insertion happened before its erase). So a lookup never stops short of
// an address in the set. The live count and the filter only decide whether to look: a
// stale zero can only miss a block inserted concurrently with its own release, which
// cannot happen (same argument; Insert counts the block before it returns).
//
// Thread safety: every method is for any thread; no locks, no allocation, no system call.
// Insert and Erase are lock-free: they never wait for another thread, and a CAS of theirs
// fails only when another thread changed the slot (or spuriously, and is retried).

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

  // Remembers `address`, a live block's. An address of 0 or at or above 2^56 cannot be
  // kept and is counted in overflowed(), as is one that finds no room.
  void Insert(uint64_t address) noexcept {
    if (address - 1 >= kAddressMask) {
      // Relaxed: a statistic.
      overflowed_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    const size_t home = Home(address);
    size_t i = home;
    for (size_t probe = 0; probe < kWindow; ++probe, i = Next(i)) {
      uint64_t seen = slots_[i].load(std::memory_order_relaxed);
      while ((seen & kAddressMask) == 0) {
        // Relaxed: see the header; the CAS only arbitrates between writers of the slot.
        // It fails when another took the slot or changed its count: look again.
        if (slots_[i].compare_exchange_weak(seen, seen | address,
                                            std::memory_order_relaxed)) {
          // Relaxed: the live count only says whether to look (the header).
          live_.fetch_add(1, std::memory_order_relaxed);
          Count(address, +1);
          return;
        }
      }
      Pass(i, +1);  // taken: the address will lie beyond this slot
    }
    // No room within the window: take back what this probe added.
    i = home;
    for (size_t probe = 0; probe < kWindow; ++probe, i = Next(i)) Pass(i, -1);
    // Relaxed: a statistic.
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
    if (address - 1 >= kAddressMask) return false;  // never inserted (Insert())
    const size_t home = Home(address);
    size_t i = home;
    for (size_t probe = 0; probe < kWindow; ++probe, i = Next(i)) {
      uint64_t seen = slots_[i].load(std::memory_order_relaxed);
      while ((seen & kAddressMask) == address) {
        // Relaxed: see Insert(). Empties the slot and keeps its count; fails when its
        // count changed (look again) or a racing erase of the same address, a double
        // free, took it.
        if (slots_[i].compare_exchange_weak(seen, seen & ~kAddressMask,
                                            std::memory_order_relaxed)) {
          size_t j = home;
          for (size_t back = 0; back < probe; ++back, j = Next(j)) Pass(j, -1);
          // Relaxed: as in Insert().
          live_.fetch_sub(1, std::memory_order_relaxed);
          Count(address, -1);
          return true;
        }
      }
      if ((seen >> kAddressBits) == 0) return false;  // nothing in the set went past here
    }
    return false;
  }

  // How many slots a lookup of `address` reads now, past the live count and the filter:
  // up to the address, or to the slot where the search stops. For tests.
  size_t SlotsLookedAt(uint64_t address) const noexcept {
    size_t i = Home(address);
    for (size_t probe = 0; probe < kWindow; ++probe, i = Next(i)) {
      // Relaxed: as in Erase().
      const uint64_t seen = slots_[i].load(std::memory_order_relaxed);
      if ((seen & kAddressMask) == address || (seen >> kAddressBits) == 0) return probe + 1;
    }
    return kWindow;
  }

  int64_t live() const noexcept { return live_.load(std::memory_order_relaxed); }
  uint64_t overflowed() const noexcept { return overflowed_.load(std::memory_order_relaxed); }

 private:
  // The slot word (the header's diagram).
  static constexpr int kAddressBits = 56;
  static constexpr uint64_t kAddressMask = (uint64_t{1} << kAddressBits) - 1;
  static constexpr uint64_t kPassOne = uint64_t{1} << kAddressBits;
  static constexpr uint64_t kPassStuck = 255;
  // The slots a probe may read: kMaxProbe, or the whole table when it is smaller (a probe
  // never reads a slot twice, so its counts are added and taken back once a slot).
  static constexpr size_t kWindow = kMaxProbe < kSlots ? kMaxProbe : kSlots;
  static_assert(kWindow - 1 < kPassStuck, "set addresses alone never make a count stick");

  static size_t Next(size_t i) noexcept { return (i + 1) & (kSlots - 1); }

  // Adds `delta` (+1 or -1) to slot i's passing count, unless the count is stuck at 255.
  void Pass(size_t i, int delta) noexcept {
    // Relaxed: see the header; the CAS only arbitrates between writers of the slot.
    uint64_t seen = slots_[i].load(std::memory_order_relaxed);
    while ((seen >> kAddressBits) != kPassStuck) {
      const uint64_t next = delta > 0 ? seen + kPassOne : seen - kPassOne;
      if (slots_[i].compare_exchange_weak(seen, next, std::memory_order_relaxed)) return;
    }
  }

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
// Blocks of the program's own allocators (the markers' layers) whose allocation record
// was lost, keyed by layer and address (MarkedBlockKey()): only while a ring stays full,
// so few. One that finds no room is counted in overflowed(); its release is then
// recorded and shows as an unknown free.
using LeftOutMarkedBlocks = AddressSet<12>;
// A marked block's key: its layer above its address, so one layer's block is never
// another's at the same address; 0 (no key) for an address at or above 2^48 (5-level
// paging, a tagged pointer), which such a key could not tell apart: that block is not
// left out, and its release shows as an unknown free.
inline uint64_t MarkedBlockKey(uint8_t layer, uint64_t address) noexcept {
  return address >> 48 != 0 ? 0 : (uint64_t{layer} << 48) | address;
}

}  // namespace memtrace::preload_internal

#endif  // MEMTRACE_PRELOAD_INTERNAL_BLOCKS_H_
