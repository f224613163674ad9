// Copyright 2026 The memtrace Authors.
//
// address_table.h: the compact open-addressing table behind AllocationLedger.
//
// Keys are block addresses (never 0, which marks an empty slot). Each slot is a 24-byte
// LiveBlock, so the ledger's cost per live allocation is 24 / load factor bytes (a
// replay's blocks carry a 16-byte BlockNote more in the same slot). Linear
// probing with backward-shift deletion (no tombstones); the table grows by 1.4x when it
// passes 75% full, so the load factor stays in [0.54, 0.75] once it has grown, and the
// cost per live allocation stays between 32 and 45 bytes. (Linear probing's expected run
// for an insertion is 2.7 times as long at 85% as at 75%, and the drainer's events a
// second with 1M blocks live follow it: bench/README.md.) Capacities need not
// be powers of two: a hash is mapped to a slot with a multiply-high ("fastrange").
//
// Every table hashes alike, and a table's slots hold its blocks in the order of their
// hashes. So blocks copied into a new table in the order ForEach() gives them arrive
// sorted by home slot, and each lands at the end of one run that holds all the others:
// quadratic (a redis BGSAVE child under --forks, whose ledger was filled that way from
// its parent's, spent 6 seconds in it). Copy in another order (AllocationLedger::
// LiveBlocks() sorts by address). A seed per table would also break the order, but it
// puts a load in front of every lookup's multiply: 5% of the drainer's ledger time.
//
// Thread safety: none. The drainer (or a replay) owns every table.

#ifndef MEMTRACE_RUNTIME_INTERNAL_ADDRESS_TABLE_H_
#define MEMTRACE_RUNTIME_INTERNAL_ADDRESS_TABLE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "transport/cache_line.h"
#include "transport/prefetch.h"

namespace memtrace::runtime_internal {

// What a block carries beside the ledger's 24 bytes: nothing, for the drainer's ledger.
struct NoNote {};

// What a capture's replay keeps of each live block beside its size, scope, site and ticket
// (analysis/analyzer.h): kept in the block's slot, so that finding the block finds it too.
struct BlockNote {
  uint64_t id = 0;            // the block's number in the replay
  uint32_t thread_event = 0;  // the low 32 bits of its thread's event count at allocation
  uint32_t thread = 0;        // the thread that allocated it
};

// One live allocation as the ledger keeps it.
//   word0: address
//   word1: size (48) | ticket bits 0..15 (16)
//   word2: ticket bits 16..47 (32) | context id (32: interned scope + site)
//   then `note`: empty (NoNote) for the drainer's ledger
template <typename Note>
struct BasicLiveBlock {
  uint64_t address;
  uint64_t size_ticket;
  uint64_t ticket_context;
  [[no_unique_address]] Note note;

  static constexpr uint64_t kSizeMask = (uint64_t{1} << 48) - 1;

  static BasicLiveBlock Make(uint64_t address, uint64_t size, uint64_t ticket48,
                             uint32_t context, const Note& note = Note{}) noexcept {
    return BasicLiveBlock{address, (size & kSizeMask) | ((ticket48 & 0xffff) << 48),
                          ((ticket48 >> 16) & 0xffffffffull) | (uint64_t{context} << 32),
                          note};
  }
  uint64_t size() const noexcept { return size_ticket & kSizeMask; }
  uint64_t ticket48() const noexcept {
    return (size_ticket >> 48) | ((ticket_context & 0xffffffffull) << 16);
  }
  uint32_t context() const noexcept { return static_cast<uint32_t>(ticket_context >> 32); }
  void set_ticket48(uint64_t ticket48) noexcept {
    size_ticket = (size_ticket & kSizeMask) | ((ticket48 & 0xffff) << 48);
    ticket_context = (ticket_context & ~0xffffffffull) | ((ticket48 >> 16) & 0xffffffffull);
  }
  void set_context(uint32_t context) noexcept {
    ticket_context = (ticket_context & 0xffffffffull) | (uint64_t{context} << 32);
  }
  void set_size(uint64_t size) noexcept {
    size_ticket = (size_ticket & ~kSizeMask) | (size & kSizeMask);
  }
};

using LiveBlock = BasicLiveBlock<NoNote>;
static_assert(sizeof(LiveBlock) == 24, "24 bytes per live allocation before load factor");
static_assert(std::is_trivially_copyable_v<LiveBlock>);
static_assert(sizeof(BasicLiveBlock<BlockNote>) == 40);

namespace address_table_internal {
// Asks for transparent huge pages for the whole 2 MiB pages inside [memory, memory +
// bytes), before they are first written. A hint: failure changes nothing.
void AdviseHugePages(void* memory, size_t bytes) noexcept;
// Tables from this size on ask for transparent huge pages (two whole ones at least).
inline constexpr size_t kHugePagesFrom = size_t{4} << 20;
inline constexpr size_t kInitialCapacity = 16;
}  // namespace address_table_internal

// A table owns its cache line: the ledger keeps 16 of them side by side, and the drainer
// updates a table's size with every record it applies.
template <typename Block>
class alignas(kCacheLineSize) BasicAddressTable {
 public:
  BasicAddressTable() = default;

  size_t size() const noexcept { return size_; }
  size_t capacity() const noexcept { return capacity_; }
  size_t memory_bytes() const noexcept { return slots_.capacity() * sizeof(Block); }

  // The block at `address`, or nullptr. The pointer is valid until the next Insert/Erase.
  // Find, FindOrInsert and Erase are the drainer's per-event work: defined here, inline.
  Block* Find(uint64_t address) noexcept {
    if (size_ == 0) return nullptr;
    for (size_t i = Home(address);; i = Next(i)) {
      Block& b = slots_[i];
      if (b.address == address) return &b;
      if (b.address == 0) return nullptr;
    }
  }
  const Block* Find(uint64_t address) const noexcept {
    return const_cast<BasicAddressTable*>(this)->Find(address);
  }

  // Asks the CPU for the slots where a lookup of `address` starts, so that a Find() or
  // FindOrAdd() a few records later does not wait for memory once the table has outgrown
  // the caches. A hint: it changes nothing, and a Grow() in between only wastes it. The
  // home slot and the next: a lookup reads two slots or more at the loads the table
  // keeps, and slots do not divide cache lines, so those two often span two lines.
  void Prefetch(uint64_t address) const noexcept {
    if (capacity_ == 0) return;
    const size_t home = Home(address);
    PrefetchForWrite(slots_.data() + home);
    if (home + 1 < capacity_) {
      PrefetchForWrite(reinterpret_cast<const char*>(slots_.data() + home + 2) - 1);
    }
  }

  // Inserts a block whose address is not present. Returns the stored block.
  Block* Insert(const Block& block);

  // The slot of the block at `address` if there is one (*added = false, nothing changed),
  // else a new slot for it (*added = true): its address is set, the rest is zero, and the
  // caller fills it in place. One probe instead of Find() then Insert(), and the block is
  // written once, where it lives.
  Block* FindOrAdd(uint64_t address, bool* added) {
    if (__builtin_expect(Full(), 0)) Grow();
    size_t i = Home(address);
    for (;; i = Next(i)) {
      Block& b = slots_[i];
      if (b.address == address) {
        *added = false;
        return &b;
      }
      if (b.address == 0) break;
    }
    slots_[i].address = address;
    ++size_;
    *added = true;
    return &slots_[i];
  }

  // Removes `block` (a pointer from Find()).
  void Erase(Block* block) noexcept {
    // Backward-shift deletion: pull later members of the probe run into the hole so that
    // lookups never need tombstones.
    size_t hole = static_cast<size_t>(block - slots_.data());
    size_t i = hole;
    for (;;) {
      i = Next(i);
      Block& b = slots_[i];
      if (b.address == 0) break;
      const size_t home = Home(b.address);
      // b may move into the hole if its home is not in the cyclic range (hole, i].
      const bool home_in_range = hole <= i ? (home > hole && home <= i)
                                           : (home > hole || home <= i);
      if (!home_in_range) {
        slots_[hole] = b;
        hole = i;
      }
    }
    slots_[hole] = Block{};
    --size_;
  }

  // Calls fn(const Block&) for every block, in no particular order.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const Block& b : slots_) {
      if (b.address != 0) fn(b);
    }
  }

  // Makes room for `blocks` blocks in all, so that the table does not grow until it
  // holds more (a replay that knows its capture's peak). The capacity is the step of
  // Grow()'s ladder that holds them: a table reserved for fewer blocks than it comes to
  // hold grows on to the capacity a table that was never reserved would end at, no more.
  void Reserve(size_t blocks) {
    // More than memory could ever hold would overflow the capacity's arithmetic.
    blocks = std::min(blocks, ~size_t{0} / 64);
    size_t capacity = std::max(capacity_, address_table_internal::kInitialCapacity);
    while (!Holds(capacity, blocks)) capacity = NextCapacity(capacity);
    if (capacity > capacity_) Rehash(capacity);
  }

  // Removes every block and releases the memory.
  void Clear() noexcept;

  // The longest run of occupied slots: how far a lookup can probe. For tests.
  size_t LongestRun() const noexcept;

 private:
  size_t Home(uint64_t address) const noexcept {
    const uint64_t h = address * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>((static_cast<unsigned __int128>(h ^ (h >> 29)) *
                                capacity_) >> 64);
  }
  size_t Next(size_t i) const noexcept { return i + 1 == capacity_ ? 0 : i + 1; }
  // Whether `blocks` blocks fit in `capacity` slots: at most 75% of them full.
  static bool Holds(size_t capacity, size_t blocks) noexcept {
    return blocks * 20 <= capacity * 15;
  }
  // One more block would pass 75% of capacity.
  bool Full() const noexcept { return !Holds(capacity_, size_ + 1); }
  // The ladder every table's capacity climbs: 16, then 1.4x the step before.
  static size_t NextCapacity(size_t capacity) noexcept { return capacity + capacity * 2 / 5; }
  void Grow();
  // Moves every block into a table of `capacity` slots.
  void Rehash(size_t capacity);

  // Line-aligned (transport/cache_line.h): the drainer writes slots for every record.
  LineAlignedVector<Block> slots_;
  // slots_.size(), kept apart: the vector's size is (end - begin) / 24, a multiply on
  // the path of every lookup.
  size_t capacity_ = 0;
  size_t size_ = 0;
};

template <typename Block>
Block* BasicAddressTable<Block>::Insert(const Block& block) {
  if (Full()) Grow();
  size_t i = Home(block.address);
  while (slots_[i].address != 0) i = Next(i);
  slots_[i] = block;
  ++size_;
  return &slots_[i];
}

template <typename Block>
void BasicAddressTable<Block>::Grow() {
  Rehash(capacity_ == 0 ? address_table_internal::kInitialCapacity : NextCapacity(capacity_));
}

template <typename Block>
void BasicAddressTable<Block>::Rehash(size_t capacity) {
  LineAlignedVector<Block> old;
  old.swap(slots_);
  // A large table in huge pages: zero-filling it faults each 2 MiB once, not 512 times
  // (each fault 3-11 us on these VMs), and its random lookups miss the TLB less.
  slots_.reserve(capacity);
  if (capacity * sizeof(Block) >= address_table_internal::kHugePagesFrom) {
    address_table_internal::AdviseHugePages(slots_.data(), capacity * sizeof(Block));
  }
  slots_.assign(capacity, Block{});
  capacity_ = capacity;
  size_ = 0;
  for (const Block& b : old) {
    if (b.address == 0) continue;
    size_t i = Home(b.address);
    while (slots_[i].address != 0) i = Next(i);
    slots_[i] = b;
    ++size_;
  }
}

template <typename Block>
void BasicAddressTable<Block>::Clear() noexcept {
  LineAlignedVector<Block>().swap(slots_);
  capacity_ = 0;
  size_ = 0;
}

template <typename Block>
size_t BasicAddressTable<Block>::LongestRun() const noexcept {
  size_t longest = 0;
  size_t run = 0;
  // Twice around, so that a run that wraps past the last slot is counted whole.
  for (size_t k = 0; k < 2 * capacity_; ++k) {
    run = slots_[k % capacity_].address != 0 ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return std::min(longest, capacity_);
}

using AddressTable = BasicAddressTable<LiveBlock>;

}  // namespace memtrace::runtime_internal

#endif  // MEMTRACE_RUNTIME_INTERNAL_ADDRESS_TABLE_H_
