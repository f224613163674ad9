// Copyright 2026 The memtrace Authors.
//
// ticket_table.h: how a thread that releases a block learns the ticket of its allocation.
//
// A set-associative table indexed by a hash of the block address: buckets of four
// {address, ticket} slots, one cache line each. The allocating thread stores the new
// allocation's ticket (ticket.h) in the block's bucket after publishing the record; a
// thread that frees, resizes or remaps the block looks it up and puts the ticket in its own
// record, and a free or remap also clears the slot so that the table holds (nearly) only
// live blocks. It never blocks and never allocates.
//
//   bucket = hash(address) >> shift                 one 64-byte line
//   +----------------+----------------+----------------+----------------+
//   | address|ticket | address|ticket | address|ticket | address|ticket |
//   +----------------+----------------+----------------+----------------+
//   Record(): the slot already holding this address, else an empty one, else the one
//   written in the oldest epoch. A ticket only matters while its allocation's epoch is
//   still open in the drainer (older allocations are matched by address, exactly), so an
//   entry is lost only when five blocks of one bucket are allocated within one epoch.
//
// A slot keeps the ticket in 48 bits (ring id and the low 28 bits of the position, see
// ticket.h) beside the 16 low bits of the epoch it was written in.
//
// Why the ticket read back is right, or detectably wrong:
//   - The allocation's stores happen before the allocator returns the block, which happens
//     before any other thread can release it (the program must pass the pointer over), so
//     the releasing thread's loads see them or later stores to the same slot.
//   - A later store for the same address is never a later allocation of the same block:
//     the block cannot be handed out again until this release reaches the allocator.
//   - So a wrong ticket can only come from a slot another address took over (a bucket
//     with more than four live blocks, or two threads writing one slot at once). Then the
//     lookup usually finds nothing (ticket 0); if it finds a torn pair, the drainer checks
//     every ticket against the record it names and ignores one that does not fit.
//   - Either way the release falls back to matching by address, which the ledger counts
//     (ticket_misses) and which is exact unless the same address was handed between
//     threads inside one epoch; CaptureIntegrity says when that could have mattered.
//
// Cost: a multiply-shift, a scan of one cache line, and one or two stores. The line is
// shared only by threads that pass blocks of that bucket to each other, the way the
// allocator's own chunk headers are.
//
// Memory ordering: the address is stored with release after the ticket, and loaded with
// acquire before the ticket, so a reader that matches the address reads the ticket stored
// with it (or a newer one). The happens-before edge between allocation and release comes
// from the program itself, as argued above.
//
// Thread safety: every method is for any thread.

#ifndef MEMTRACE_TRANSPORT_TICKET_TABLE_H_
#define MEMTRACE_TRANSPORT_TICKET_TABLE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "transport/prefetch.h"
#include "transport/ticket.h"

namespace memtrace {

class TicketTable {
 public:
  static constexpr uint32_t kWays = 4;
  static constexpr uint32_t kMinSlotsLog2 = 4;
  static constexpr uint32_t kMaxSlotsLog2 = 28;

  // Maps 2^slots_log2 slots (16 bytes each, touched lazily, in transparent huge pages
  // where the kernel grants them: 2 MiB at a time). Check ok() afterwards.
  explicit TicketTable(uint32_t slots_log2) noexcept;
  ~TicketTable();

  TicketTable(const TicketTable&) = delete;
  TicketTable& operator=(const TicketTable&) = delete;

  // False when slots_log2 was out of range or the memory could not be mapped. Every
  // other method requires ok() (the recorder refuses to start without it), so the hot
  // path carries no check.
  bool ok() const noexcept { return buckets_ != nullptr; }
  size_t mapped_bytes() const noexcept { return (size_t{1} << slots_log2_) * sizeof(Slot); }

 private:
  struct Slot {
    std::atomic<uint64_t> address;
    std::atomic<uint64_t> packed;  // Pack(): ring id (20) | epoch (16) | position (low 28)
  };
  static_assert(sizeof(Slot) == 16);

 public:
  // The bucket of an address: found once per operation, then prefetched and used.
  using Bucket = Slot*;
  Bucket BucketOf(uint64_t address) const noexcept {
    // Fibonacci hashing: the top bits of a multiply spread nearby and aligned addresses.
    return buckets_ + ((address * 0x9E3779B97F4A7C15ull) >> shift_) * kWays;
  }

  // Starts loading a bucket for a Record() or Take() a few instructions later (a read
  // prefetch: the line arrives exclusive, ready for the store, when no other core has it).
  static void Prefetch(Bucket bucket) noexcept { PrefetchForRead(bucket); }

  // Remembers the ticket of a new allocation at `address`, whose bucket is `bucket`: the
  // allocation record at `position` in ring `ring_id`, made in `epoch`.
  void Record(Bucket bucket, uint64_t address, uint32_t ring_id, uint64_t position,
              uint32_t epoch) noexcept {
    Slot* target = nullptr;
    for (uint32_t i = 0; i < kWays; ++i) {
      // Relaxed: choosing a slot needs no ordering; a stale view only picks a worse slot.
      const uint64_t a = bucket[i].address.load(std::memory_order_relaxed);
      if (a == address || a == 0) {
        target = &bucket[i];
        break;
      }
    }
    if (__builtin_expect(target == nullptr, 0)) target = Evict(bucket, epoch);
    // Relaxed: published by the release store of the address below.
    target->packed.store(Pack(ring_id, position, epoch), std::memory_order_relaxed);
    // Release: pairs with the acquire load in Find(); the ticket travels with the address.
    target->address.store(address, std::memory_order_release);
  }

  // The same for a ticket already in hand (a move that was given back).
  void Record(uint64_t address, uint64_t ticket, uint32_t epoch) noexcept {
    Record(BucketOf(address), address, Ticket::RingId(ticket), Ticket::Position(ticket),
           epoch);
  }

  // Evictions of a ticket written in the same epoch as its replacement (see above). While
  // this is 0, every missing ticket belongs to an allocation from an earlier epoch.
  uint64_t fresh_evictions() const noexcept {
    return fresh_evictions_.load(std::memory_order_relaxed);
  }

  // The ticket of the live allocation at `address`, whose bucket is `bucket`, or 0. For
  // resizes.
  uint64_t Lookup(Bucket bucket, uint64_t address) const noexcept {
    const Slot* slot = Find(bucket, address);
    // Relaxed: ordered by the acquire load of the address in Find().
    return slot == nullptr ? 0 : Unpack(slot->packed.load(std::memory_order_relaxed));
  }

  // The ticket of the allocation at `address`, whose bucket is `bucket`, forgetting it.
  // For frees and remaps.
  uint64_t Take(Bucket bucket, uint64_t address) noexcept {
    Slot* slot = Find(bucket, address);
    if (slot == nullptr) return 0;
    // Relaxed: ordered by the acquire load of the address in Find().
    const uint64_t ticket = Unpack(slot->packed.load(std::memory_order_relaxed));
    // Relaxed: only frees the slot for reuse; a racing Record() may lose its entry, which
    // shows up as a ticket miss, never as a wrong match.
    slot->address.store(0, std::memory_order_relaxed);
    return ticket;
  }
  uint64_t Take(uint64_t address) noexcept { return Take(BucketOf(address), address); }

 private:
  // The 48-bit ticket (ticket.h, Truncate) with the epoch's low 16 bits in the position
  // bits Truncate drops, so that the ring id and the position sit where Ticket::Make puts
  // them and unpacking is one mask:
  //   63        44 43          28 27                   0
  //   | ring id   | epoch (16)   | position (low 28)    |
  static constexpr int kEpochShift = Ticket::kTruncatedPositionBits;
  static constexpr uint64_t kEpochBits = uint64_t{0xffff} << kEpochShift;
  static_assert(Ticket::kPositionBits == kEpochShift + 16, "the epoch fills the gap exactly");
  static uint64_t Pack(uint32_t ring_id, uint64_t position, uint32_t epoch) noexcept {
    return (uint64_t{ring_id} << Ticket::kPositionBits) |
           (uint64_t{epoch & 0xffff} << kEpochShift) |
           (position & Ticket::kTruncatedPositionMask);
  }
  // Back to the ticket format of ticket.h, position truncated to 28 bits.
  static uint64_t Unpack(uint64_t packed) noexcept { return packed & ~kEpochBits; }
  static uint16_t EpochOf(uint64_t packed) noexcept {
    return static_cast<uint16_t>(packed >> kEpochShift);
  }
  // A full bucket: the slot written in the oldest epoch. Not the hot path.
  Slot* Evict(Slot* bucket, uint32_t epoch) noexcept {
    Slot* target = bucket;
    uint16_t oldest_age = 0;
    for (uint32_t i = 0; i < kWays; ++i) {
      // Relaxed: see Record().
      const auto age = static_cast<uint16_t>(
          epoch - EpochOf(bucket[i].packed.load(std::memory_order_relaxed)));
      if (i == 0 || age > oldest_age) {
        target = &bucket[i];
        oldest_age = age;
      }
    }
    if (oldest_age == 0) {
      // Every slot was written in this epoch: the evicted ticket may still be needed.
      // Rare (five allocations in one bucket within one epoch), so a shared counter is
      // fine here. Relaxed: a statistic.
      fresh_evictions_.fetch_add(1, std::memory_order_relaxed);
    }
    return target;
  }

  static Slot* Find(Bucket bucket, uint64_t address) noexcept {
    for (uint32_t i = 0; i < kWays; ++i) {
      // Acquire: pairs with the release store in Record().
      if (bucket[i].address.load(std::memory_order_acquire) == address) return &bucket[i];
    }
    return nullptr;
  }

  const uint32_t slots_log2_;
  const uint32_t shift_;  // 64 - log2(number of buckets)
  Slot* buckets_ = nullptr;
  std::atomic<uint64_t> fresh_evictions_{0};
};

}  // namespace memtrace

#endif  // MEMTRACE_TRANSPORT_TICKET_TABLE_H_
