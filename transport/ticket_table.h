// Copyright 2026 The memtrace Authors.
//
// ticket_table.h: how a thread that releases a block learns the ticket of its allocation.
//
// A set-associative table indexed by a hash of the block address: buckets of eight
// {address, ticket} slots, two cache lines each. The allocating thread stores the new
// allocation's ticket (ticket.h) in the block's bucket after publishing the record; a
// thread that frees, resizes or remaps the block looks it up and puts the ticket in its own
// record. It never blocks and never allocates.
//
//   bucket = hash(address) >> shift                 two 64-byte lines (four slots shown)
//   +----------------+----------------+----------------+----------------+
//   | address|ticket | address|ticket | address|ticket | address|ticket |
//   +----------------+----------------+----------------+----------------+
//   Record(): the slot already holding this address, else an empty one, else the one
//   written in the oldest epoch. A ticket only matters while its allocation's epoch is
//   still open in the drainer (older allocations are matched by address, exactly), so an
//   entry is lost only when nine blocks of one bucket are allocated within one epoch
//   (counted: fresh_evictions()).
//
// Releases write nothing. A released block's entry stays until the next block at its
// address records over it (malloc hands freed addresses out again soon, so that is the
// usual way) or a claim evicts it by age.
//
// Claims. Every write into a slot begins with a compare-exchange of its address word
// from what the writer saw to the new address with kClaimed set, and ends with the
// address word stored back (release). Two threads that pick the same slot at the same
// moment, for blocks of one bucket, cannot both write it: one claim wins and the other
// looks again.
// Without claims the two would write the slot together and lose one entry, or leave its
// address beside the other's ticket; a release of that block could then be applied
// before its own allocation, in another ring, within one epoch, and the ledger would set
// the wrong block aside (tests/ticket_table_test.cc races this).
//
// A slot is two words, 16 bytes:
//
//   address  63 | 62          48 | 47                                         0
//            cl | epoch 16..30  | block address (48)
//   packed   63       44 | 43          28 | 27                                0
//            ring id    | epoch 0..15    | position (low 28)
//
// The ticket keeps 48 bits (ring id and the low 28 bits of the position, see ticket.h:
// the ledger and the drainer use exactly that form, so neither part can give up a bit).
// The epoch the entry was written in keeps 31 bits, split over the two words: the 16
// bits beside the ticket, and 15 above the address. Addresses keep 48 bits, every
// user-space address of x86-64 and of AArch64 with 48-bit virtual addresses; a block at
// or above 2^48 (only where a program asks a 5-level page table or a 52-bit address space
// for such an address) is not recorded, and its lost ticket is counted like an eviction.
// "cl" is kClaimed (below).
//
// Why 31 bits of epoch and not 16: the table asks of an entry how old it is, to evict the
// oldest, and whether it was written in the current epoch, to count an eviction that may
// lose a needed ticket. With 16 bits an entry written 2^16 epochs ago (about two minutes
// of 2 ms epochs) had the current epoch's low bits: it looked current, its eviction was
// counted as a lost ticket (the capture then no longer exact, for nothing), and its age
// looked 0, so a younger entry was evicted in its place. Epochs themselves compare only
// within 2^31 of each other (EpochBefore(), epoch_clock.h), and 31 bits reach as far: an
// entry younger than that looks current only when its epoch is the current one, and its
// age is its age. (Both words are written by one claim, so a reader after the claim's
// compare-exchange gets the two halves of one entry's epoch: Claim().)
//
// Why the ticket read back is right, or missing:
//   - The allocation's stores happen before the allocator returns the block, which happens
//     before any other thread can release it (the program must pass the pointer over), so
//     the releasing thread's loads see them or later stores to the same slot.
//   - A later store for the same address is never a later allocation of the same block:
//     the block cannot be handed out again until this release reaches the allocator.
//   - Only a claim for another address writes the slot in between: an eviction, counted
//     when the evicted ticket's epoch may still be open. A reader that sees that claim's
//     ticket also sees the claim (ReadTicket()) and takes no ticket.
//   - The release then falls back to matching by address, which the ledger counts
//     (ticket_misses) and which is exact unless the same address was handed between
//     threads inside one epoch; CaptureIntegrity says when that could have mattered. The
//     drainer still checks every ticket against the record it names.
//
// Why eight ways: a busy epoch records tens of thousands of blocks, and with four ways
// five of them in one bucket is common enough that several threads allocating through
// the API with the default table lost tickets in their own epoch every run, each making
// the capture inexact; eight ways over the same slots make nine in one bucket rare
// (default_config_test). The second line costs one more prefetch, issued with the first.
//
// Cost: a multiply-shift, a scan of one bucket, and on allocation a compare of the
// address with 2^48, a compare-exchange and two stores (the compare-exchange, a locked
// instruction, is most of it; bench/README.md has the cost per pair). The line is shared
// only by threads that pass blocks of that bucket to each other, the way the allocator's
// own chunk headers are.
//
// Memory ordering: the ticket is stored with release and read with acquire, and the
// address is loaded again after it; the address is stored with release after the ticket
// and loaded with acquire before it. So a reader that matches the address reads the
// ticket stored with it, or sees that a claim took the slot since. The happens-before edge
// between allocation and release comes from the program itself, as argued above.
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
  static constexpr uint32_t kWaysLog2 = 3;
  static constexpr uint32_t kWays = 1u << kWaysLog2;
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

  // Starts loading a bucket for a Record() or Lookup() a few instructions later (a read
  // prefetch: the line arrives exclusive, ready for the store, when no other core has it).
  static void Prefetch(Bucket bucket) noexcept {
    PrefetchForRead(bucket);
    PrefetchForRead(bucket + kWays / 2);  // a bucket is two lines
  }

  // Remembers the ticket of a new allocation at `address`, whose bucket is `bucket`: the
  // allocation record at `position` in ring `ring_id`, made in `epoch`. An address of 0
  // or at or above 2^48 is not kept (the header); its ticket is counted as lost.
  void Record(Bucket bucket, uint64_t address, uint32_t ring_id, uint64_t position,
              uint32_t epoch) noexcept {
    if (__builtin_expect(address - 1 >= kAddressMask, 0)) {
      // Relaxed: a statistic. The release's lookup finds nothing and falls back to the
      // address, as after an eviction within the epoch.
      fresh_evictions_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    Slot* const target = Claim(bucket, address, epoch);
    if (__builtin_expect(target == nullptr, 0)) return;  // counted in Claim()
    // Release: the slot is this thread's alone until the address is stored back below;
    // pairs with the acquire load in ReadTicket(), so that a reader that sees this ticket
    // also sees the claim that took the slot from the block it was looking for.
    target->packed.store(Pack(ring_id, position, epoch), std::memory_order_release);
    // Release: pairs with the acquire load in Find(); ends the claim, and the ticket
    // travels with the address. The epoch's high bits ride above the address.
    target->address.store(address | EpochHigh(epoch), std::memory_order_release);
  }

  // Tickets given up while their epoch may still be open: evictions of a ticket written in
  // the same epoch as its replacement (see above), claims that found their bucket
  // changing under them kMaxClaimTries times, and records of an address a slot cannot
  // keep. While this is 0, every missing ticket belongs to an allocation from an earlier
  // epoch.
  uint64_t fresh_evictions() const noexcept {
    return fresh_evictions_.load(std::memory_order_relaxed);
  }

  // The ticket of the allocation at `address`, whose bucket is `bucket`, or 0: for a
  // release, resize or remap of the block. A release writes nothing, so it never races a
  // claim (above): the entry stays until the next block at the address records over it or
  // a claim evicts it by age, and a second release of the block reads the same ticket
  // (which lets the ledger tell a double free exactly).
  uint64_t Lookup(Bucket bucket, uint64_t address) const noexcept {
    const Slot* slot = Find(bucket, address);
    return slot == nullptr ? 0 : ReadTicket(slot, address);
  }
  uint64_t Lookup(uint64_t address) const noexcept { return Lookup(BucketOf(address), address); }

 private:
  // The packed word: the 48-bit ticket (ticket.h, Truncate) with the epoch's low 16 bits
  // in the position bits Truncate drops, so that the ring id and the position sit where
  // Ticket::Make puts them and unpacking is one mask (the header's diagram).
  static constexpr int kEpochShift = Ticket::kTruncatedPositionBits;
  static constexpr uint64_t kPackedEpochBits = uint64_t{0xffff} << kEpochShift;
  static_assert(Ticket::kPositionBits == kEpochShift + 16, "the epoch fills the gap exactly");
  static uint64_t Pack(uint32_t ring_id, uint64_t position, uint32_t epoch) noexcept {
    return (uint64_t{ring_id} << Ticket::kPositionBits) |
           (uint64_t{epoch & 0xffff} << kEpochShift) |
           (position & Ticket::kTruncatedPositionMask);
  }
  // Back to the ticket format of ticket.h, position truncated to 28 bits.
  static uint64_t Unpack(uint64_t packed) noexcept { return packed & ~kPackedEpochBits; }

  // The address word: the block address in its low 48 bits, the epoch's bits 16..30
  // above it, kClaimed on top (the header's diagram).
  static constexpr int kAddressBits = 48;
  static constexpr uint64_t kAddressMask = (uint64_t{1} << kAddressBits) - 1;
  // Marks a slot claimed by a thread that is writing it (Claim()). No kept address has
  // this bit, and Find() never matches a claimed slot.
  static constexpr uint64_t kClaimed = uint64_t{1} << 63;
  // What names the block a slot holds: the address and kClaimed, not the epoch bits.
  static constexpr uint64_t kMatchMask = kAddressMask | kClaimed;
  static bool Holds(uint64_t address_word, uint64_t address) noexcept {
    return (address_word & kMatchMask) == address;
  }

  // The epoch bits a slot keeps: 16 in the packed word, 15 in the address word.
  static constexpr int kEpochBits = 31;
  static constexpr uint32_t kEpochMask = (uint32_t{1} << kEpochBits) - 1;
  static_assert(kAddressBits + (kEpochBits - 16) + 1 == 64, "the address word is full");
  static uint64_t EpochHigh(uint32_t epoch) noexcept {
    return uint64_t{(epoch & kEpochMask) >> 16} << kAddressBits;
  }
  // The epoch an entry was written in, modulo 2^31, from its two words.
  static uint32_t EpochOf(uint64_t address_word, uint64_t packed) noexcept {
    return static_cast<uint32_t>(((address_word & ~kMatchMask) >> (kAddressBits - 16)) |
                                 ((packed & kPackedEpochBits) >> kEpochShift));
  }
  static constexpr int kMaxClaimTries = 4;

  // Takes a slot of `bucket` for `address`, marked kClaimed: the slot already holding the
  // address, else an empty one, else the one written in the oldest epoch. Every way into
  // a slot is a compare-exchange, so two threads never write one slot at once: each
  // claim either takes the slot whole or sees what changed and looks again. Returns
  // nullptr (counted) when the bucket changed under it kMaxClaimTries times.
  Slot* Claim(Slot* bucket, uint64_t address, uint32_t epoch) noexcept {
    for (int tries = 0; tries < kMaxClaimTries; ++tries) {
      Slot* target = nullptr;
      uint64_t seen = 0;
      for (uint32_t i = 0; i < kWays; ++i) {
        // Relaxed: choosing a slot needs no ordering; the compare-exchange below checks
        // the choice.
        const uint64_t a = bucket[i].address.load(std::memory_order_relaxed);
        const bool own = Holds(a, address);  // this block's slot, from an earlier Record()
        if (own || (a == 0 && target == nullptr)) {
          target = &bucket[i];
          seen = a;
          if (own) break;
        }
      }
      const bool evicting = target == nullptr;
      if (evicting) target = Oldest(bucket, epoch, &seen);
      if (target == nullptr) continue;  // every slot is being written: look again
      // Acquire on success: pairs with the release stores of the slot's last writer, so
      // the evicted entry's epoch is read below as that writer left it. Relaxed on
      // failure: nothing was taken.
      if (target->address.compare_exchange_strong(seen, address | kClaimed,
                                                  std::memory_order_acquire,
                                                  std::memory_order_relaxed)) {
        // Read after the claim, not in Oldest(): the entry's owner may have recorded it
        // again in between, which the compare-exchange cannot tell when the epoch's high
        // bits stayed the same (same address word). `seen` is the word taken, so its
        // high bits and the packed word's low bits are one record's epoch: a record
        // in between with other high bits would have made the compare-exchange fail.
        // Relaxed: ordered by the acquire above; no one else writes the slot now.
        if (evicting && seen != 0 &&
            EpochOf(seen, target->packed.load(std::memory_order_relaxed)) ==
                (epoch & kEpochMask)) {
          // The evicted ticket may still be needed. Rare (nine blocks of one bucket
          // recorded within one epoch), so a shared counter is fine here. Relaxed: a
          // statistic.
          fresh_evictions_.fetch_add(1, std::memory_order_relaxed);
        }
        return target;
      }
    }
    // Relaxed: a statistic.
    fresh_evictions_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }

  // A full bucket: the slot written in the oldest epoch that no thread is writing now,
  // and its address in *seen (an empty slot at once, should one have appeared). Null when
  // every slot is being written.
  Slot* Oldest(Slot* bucket, uint32_t epoch, uint64_t* seen) noexcept {
    Slot* target = nullptr;
    uint32_t oldest_age = 0;
    for (uint32_t i = 0; i < kWays; ++i) {
      // Relaxed: see Claim().
      const uint64_t a = bucket[i].address.load(std::memory_order_relaxed);
      if ((a & kClaimed) != 0) continue;
      if (a == 0) {
        *seen = 0;
        return &bucket[i];
      }
      // Modulo 2^31, as kept. Relaxed: see Claim(); a stale pair of words only makes a
      // worse choice of victim, and the compare-exchange still checks the address word.
      const uint32_t age =
          (epoch - EpochOf(a, bucket[i].packed.load(std::memory_order_relaxed))) &
          kEpochMask;
      if (target == nullptr || age > oldest_age) {
        target = &bucket[i];
        oldest_age = age;
        *seen = a;
      }
    }
    return target;
  }

  // The ticket in `slot`, which Find() matched to `address`, or 0 when a claim evicting
  // that entry has taken the slot since: its ticket belongs to another block.
  static uint64_t ReadTicket(const Slot* slot, uint64_t address) noexcept {
    // Acquire: pairs with the release store in Record(). The loads of this function come
    // after the acquire load of the address in Find(), so the ticket read is the one
    // stored with the address or a newer one, and a newer one means a claim took the slot:
    // the acquire orders that claim's compare-exchange before the address load below.
    const uint64_t packed = slot->packed.load(std::memory_order_acquire);
    // Relaxed: ordered after the ticket by the acquire above.
    if (!Holds(slot->address.load(std::memory_order_relaxed), address)) return 0;
    return Unpack(packed);
  }

  static Slot* Find(Bucket bucket, uint64_t address) noexcept {
    for (uint32_t i = 0; i < kWays; ++i) {
      // Acquire: pairs with the release store in Record().
      if (Holds(bucket[i].address.load(std::memory_order_acquire), address)) {
        return &bucket[i];
      }
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
