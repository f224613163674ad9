// Copyright 2026 The memtrace Authors.
//
// spsc_ring.h: the per-thread, bounded, lock-free ring of Events.
//
// One allocating thread (the producer) writes records; the drainer (the consumer) reads
// them in bulk. Capacity is a power of two. Positions are 64-bit counters that never wrap
// in practice; a slot is `slots_[position & mask_]`.
//
//                  tail_ (consumer)            head_ (producer)   claim_ (producer)
//                       |                            |                 |
//   slots: ... [ consumed | published, unread ...... | being written ] | free ... ]
//
//   - [tail_, head_)   published: the consumer may read these.
//   - [head_, claim_)  claimed: the producer is writing them (claim_ == head_ when idle).
//   - everything else  free for the producer, up to tail_ + capacity.
//
// The producer never locks, allocates, makes a system call or writes a cache line the
// consumer writes: head_ and claim_ sit on the producer's line, tail_ on the consumer's,
// and each side keeps a private cached copy of the other's index (the producer keeps it
// as the position where it next looks) so that it reads the other's line only when its
// copy says the ring looks a quarter full or full (producer) or empty (consumer).
//
// Waking a sleeping consumer: the consumer sleeps between rounds, and longer while the
// program is quiet (runtime/internal/drainer.h). A producer whose ring passes a quarter full since
// it last looked at tail_ raises a wake request (TakeWakeRequest()) once, which its caller
// passes on, so that a burst after a quiet spell does not fill the ring while the consumer
// sleeps. The check costs the hot path nothing: the producer's cached limit stops at the
// quarter mark, and the slow path that reloads tail_ there decides.
//
// Waiting for room: a producer that finds its ring full and may wait (the recorder's
// overflow policy) sleeps in AwaitSpace(), on a futex the consumer's Release() bumps and
// wakes while a producer waits. It does not poll: with more busy threads than CPUs,
// producers that woke every 200 us to look took the CPU the consumer needed to make room
// (256 threads of 20,000 allocations each: 212 s traced against 0.24 s untraced, records
// dropped).
//
// Order stamps: every 2^stamp_log2 positions the producer stores a reading of the stamp
// clock (EpochClock::StampNow(), epoch_clock.h) in a side array only it writes: stamp k is
// read as the claim that covers position k * 2^stamp_log2 is made, after its epoch load.
// Every record at a position in [k * 2^stamp_log2, (k + 1) * 2^stamp_log2), a segment, was
// therefore made between stamp k and stamp k + 1. The drainer orders the rings' records
// inside an epoch by these stamps and bounds every high-water mark with them
// (runtime/internal/peak_bounds.h). The array holds a stamp for every segment the unread records
// can span and the next one, so a stamp the consumer may still read is never overwritten:
// a producer can claim at most a capacity past the consumer's tail. Stamps are plain
// words: written before the Publish() that covers their position, read only below a
// position LoadHead() returned.
//
// Thread safety: exactly one producer thread calls the producer methods (Claim, TryClaim,
// Unclaim, slot, Publish, TakeWakeRequest, AwaitSpace) and exactly one consumer thread
// calls the consumer methods (LoadHead, LoadClaim, Read, Release). Ownership of the
// producer side may pass to another thread only through a happens-before edge (the ring
// registry's queue does this).
//
// Memory ordering:
//   - Publish() stores head_ with release; LoadHead() loads it with acquire. Every record
//     written before Publish() is visible to the consumer once it sees the new head.
//   - Release() stores tail_ with release; Claim() loads it with acquire before reusing
//     slots, so the consumer's reads of a slot happen before the producer overwrites it.
//   - claim_ is relaxed on both sides. It is read only by the epoch watermark protocol,
//     which orders it with an asymmetric fence (epoch_clock.h).
//   - AwaitSpace() and Release() are a store-buffering pair with a seq_cst fence on each
//     side: the producer stores its mark (space_waiter_), fences, and then reads
//     space_seq_ and tail_; the consumer stores tail_, fences, and then reads the mark.
//     Each fence pairs with the other: of two seq_cst fences one comes first, and the
//     side whose fence comes second sees the other's store. So either the producer sees
//     the room, or the consumer sees the mark and bumps space_seq_ (release; the
//     producer's wait reads it with acquire) and wakes it; a bump before the producer
//     read space_seq_ also carried the new tail_ to it, so no wake-up is lost. Without
//     the producer's fence a seq_cst store of the mark would not be enough: C++ does not
//     order it before the later acquire load of tail_, and both sides could miss.
//
// Example (producer):
//   uint64_t pos;
//   if (SpscRing::Claimed(ring.Claim(1, &pos))) {  // (kStampDue: WriteStamps first)
//     ring.slot(pos) = event;
//     ring.Publish(pos + 1);
//   }

#ifndef MEMTRACE_TRANSPORT_SPSC_RING_H_
#define MEMTRACE_TRANSPORT_SPSC_RING_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "transport/cache_line.h"
#include "transport/event.h"
#include "transport/prefetch.h"

namespace memtrace {

class SpscRing {
 public:
  static constexpr uint32_t kMinCapacityLog2 = 1;
  static constexpr uint32_t kMaxCapacityLog2 = 26;

  static constexpr uint32_t kMaxStampLog2 = 16;
  static constexpr uint32_t kDefaultStampLog2 = 5;

  // Maps a ring of 2^capacity_log2 slots with the given ring id (see ticket.h), stamped
  // every 2^stamp_log2 positions (the header, "order stamps"). Returns nullptr if
  // capacity_log2 or stamp_log2 is out of range or the kernel refuses the memory.
  // Not for the hot path: it makes system calls.
  static SpscRing* Create(uint32_t id, uint32_t capacity_log2,
                          uint32_t stamp_log2 = kDefaultStampLog2) noexcept;

  // Unmaps a ring from Create(). Neither side may use it afterwards. Null is a no-op.
  static void Destroy(SpscRing* ring) noexcept;

  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;

  uint32_t id() const noexcept { return id_; }
  uint64_t capacity() const noexcept { return mask_ + 1; }

  // ---- Producer side -------------------------------------------------------------------

  // What a claim found. kClaimed and kStampDue claimed the slots; kStampDue also says the
  // claim covers a stamp point, whose stamp the producer must write (WriteStamps) before
  // it publishes. kFull: fewer than `n` slots are free. kNested: a claim of this thread is
  // still open (a signal handler, or a traced call inside Recorder::BeginRemap's claim);
  // a second one would take the same slots. Neither of the last two changes anything.
  enum class ClaimStatus : uint8_t { kClaimed, kStampDue, kFull, kNested };
  static bool Claimed(ClaimStatus s) noexcept {
    return s == ClaimStatus::kClaimed || s == ClaimStatus::kStampDue;
  }

  // Claims `n` consecutive free slots, starting at *position, and marks them as being
  // written (claim_). Producer only. Never blocks, never allocates. Passing a quarter of
  // the ring full raises a wake request (above).
  //
  // One compare decides the common case: producer_check_ is the least of where the
  // producer next looks at tail_ and the next stamp point, and while a claim is open the
  // producer's head carries kOpenBit, which takes every claim past it. The rest (room,
  // stamps, nesting) is the slow half, ClaimSlow(), once every stamp interval.
  ClaimStatus Claim(uint32_t n, uint64_t* position) noexcept {
    const uint64_t pos = producer_head_;
    if (__builtin_expect(pos + n > producer_check_, 0)) {
      const SlowClaim slow = ClaimSlow(n);  // by value: the caller's position stays in a
      *position = slow.position;            // register on the fast path
      return slow.status;
    }
    Open(pos, n, position);
    return ClaimStatus::kClaimed;
  }

  // Claim() for a producer without a stamp clock: a stamp point it covers gets 0, "no
  // stamp" (the drainer then knows nothing of those records' time, epoch_clock.h). True
  // if the slots were claimed.
  [[nodiscard]] bool TryClaim(uint32_t n, uint64_t* position) noexcept {
    const ClaimStatus s = Claim(n, position);
    if (s == ClaimStatus::kStampDue) WriteStamps(*position, n, 0);
    return Claimed(s);
  }

  // The ring was full: waits until the consumer frees room for `n` slots and claims them
  // (as Claim()), or until `timeout_ns` has passed (kFull). Sleeps in the kernel (futex)
  // meanwhile. Producer only; for the overflow policy's bounded wait, never the hot path.
  [[nodiscard]] ClaimStatus AwaitSpace(uint32_t n, uint64_t* position,
                                       int64_t timeout_ns) noexcept;

  // Whether a claim is open: Claim() claimed and neither Publish() nor Unclaim() has
  // closed it. Producer only.
  bool ClaimOpen() const noexcept { return (producer_head_ & kOpenBit) != 0; }

  // Gives back what the open claim has not published. Producer only.
  void Unclaim() noexcept {
    producer_head_ &= ~kOpenBit;
    // Relaxed: see Open(). The consumer treats claim_ == head_ as idle.
    claim_.store(producer_head_, std::memory_order_relaxed);
    // A stamp point of the claim given back is looked at again by the next claim.
    CheckFrom(producer_head_);
  }

  // The slot for a claimed position. Producer only, between Claim() and Publish().
  Event& slot(uint64_t position) noexcept { return slots_[position & mask_]; }

  // Publishes every claimed record below `end` (the claim's end). Producer only.
  void Publish(uint64_t end) noexcept {
    producer_head_ = end;
    // Release: publishes the slot contents. Pairs with the acquire load of head_ in
    // LoadHead().
    head_.store(end, std::memory_order_release);
  }

  // True once after a claim took the ring past a quarter full since the producer last
  // looked at tail_ (the consumer may be asleep: wake it). Producer only.
  bool TakeWakeRequest() noexcept {
    if (__builtin_expect(!wake_request_, 1)) return false;
    wake_request_ = false;
    return true;
  }

  // Stores `time` as the stamp of every stamp point in [position, position + n). Producer
  // only, after a claim that returned kStampDue and before its Publish().
  void WriteStamps(uint64_t position, uint32_t n, uint64_t time) noexcept {
    for (uint64_t p = (position + stamp_interval_mask_) & ~stamp_interval_mask_;
         p < position + n; p += stamp_interval_mask_ + 1) {
      stamps_[(p >> stamp_log2_) & stamp_index_mask_] = time;
    }
  }

  // How many records this producer has published (its next position). Producer only.
  uint64_t producer_position() const noexcept { return producer_head_ & ~kOpenBit; }

  // Loss accounting, per ring and so per thread. Producer only; readable by anyone.
  //   failed:  allocation records that could not be written (the allocation was refused)
  //   dropped: other records that could not be written (the operation went ahead)
  //   waited:  times the producer found the ring full and waited for the drainer
  void CountFailed() noexcept { Bump(failed_); }
  void CountDropped() noexcept { Bump(dropped_); }
  void CountWaited() noexcept { Bump(waited_); }
  uint64_t failed() const noexcept { return failed_.load(std::memory_order_relaxed); }
  uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }
  uint64_t waited() const noexcept { return waited_.load(std::memory_order_relaxed); }

  // ---- Consumer side -------------------------------------------------------------------

  // The end of the published records. Consumer only (any thread that acts as consumer).
  uint64_t LoadHead() const noexcept {
    // Acquire: pairs with the release store in Publish(); records below the returned
    // position are fully written.
    return head_.load(std::memory_order_acquire);
  }

  // The end of the claimed records (== LoadHead() when the producer is idle).
  uint64_t LoadClaim() const noexcept {
    // Relaxed: ordered by the heavy side of the asymmetric fence (epoch_clock.h).
    return claim_.load(std::memory_order_relaxed);
  }

  // A published record. Consumer only, for tail <= position < LoadHead().
  const Event& Read(uint64_t position) const noexcept { return slots_[position & mask_]; }

  // The stamp interval's log2, and the stamp of segment k (positions from
  // k << stamp_log2()). Consumer only, for a segment that starts below a head LoadHead()
  // returned and ends above the tail; 0 when the clock gives no stamps
  // (EpochClock::StampNow()).
  uint32_t stamp_log2() const noexcept { return stamp_log2_; }
  uint64_t ReadStamp(uint64_t k) const noexcept { return stamps_[k & stamp_index_mask_]; }

  // Frees every slot below `new_tail` for reuse. Consumer only; never moves backwards.
  void Release(uint64_t new_tail) noexcept {
    // Release: our reads of the slots below new_tail happen before the producer reuses
    // them. Pairs with the acquire load of tail_ in Refresh().
    tail_.store(new_tail, std::memory_order_release);
    // Seq_cst fence: the store above, then the read of the producer's mark. Pairs with
    // the seq_cst fence after the store of space_waiter_ in AwaitSpace() (the header).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // Relaxed: ordered by the fence above.
    if (space_waiter_.load(std::memory_order_relaxed) != 0) WakeProducer();
  }

  // Maps in the slots a producer at `head` will write next, on the ring's first lap: as
  // far ahead as it has come, in one system call (MADV_POPULATE_WRITE) now and then, so
  // that the producer does not take a page fault per 4 KiB of fresh ring (11 us each on
  // the VMs of bench/README.md; mapping in costs the consumer about half that a page),
  // while a thread that records little keeps little resident. After the first lap, or on
  // a kernel without MADV_POPULATE_WRITE (before 5.14), it does nothing. Consumer only;
  // the pages' contents are not touched, so it may run while the producer writes.
  void PopulateAhead(uint64_t head) noexcept;

  // The consumer's position. Consumer only (also safe to read relaxed for statistics).
  uint64_t LoadTail() const noexcept { return tail_.load(std::memory_order_relaxed); }

  // Sets all positions to `position` for a ring that no thread is using (reuse after the
  // final drain, or tests). Neither side may run concurrently; the registry hands the ring
  // to its next producer through a queue, which supplies the happens-before edge.
  void ResetPositions(uint64_t position) noexcept;

 private:
  SpscRing(uint32_t id, uint64_t mask, Event* slots, uint64_t* stamps, uint32_t stamp_log2,
           uint64_t stamp_count, size_t mapped_bytes) noexcept;

  // Set in the producer's head while a claim is open. Positions stay far below it (2^63
  // records), so an open claim's head plus any `n` passes every producer_check_.
  static constexpr uint64_t kOpenBit = uint64_t{1} << 63;

  // The claim of [pos, pos + n): claim_ and the open mark.
  __attribute__((always_inline)) void Open(uint64_t pos, uint32_t n,
                                           uint64_t* position) noexcept {
    // Relaxed: claim_ is ordered against the epoch by the caller's asymmetric fence
    // (epoch_clock.h); it carries no data of its own.
    claim_.store(pos + n, std::memory_order_relaxed);
    producer_head_ = pos | kOpenBit;
    *position = pos;
    PrefetchForWrite(&slots_[(pos + kWriteAhead) & mask_]);
  }

  // The first stamp point at or after `position`.
  uint64_t StampPointFrom(uint64_t position) const noexcept {
    return (position + stamp_interval_mask_) & ~stamp_interval_mask_;
  }

  // Sets producer_check_ for a next claim that starts at `position`.
  void CheckFrom(uint64_t position) noexcept {
    producer_check_ = std::min(space_check_, StampPointFrom(position));
  }

  // The slow half of Claim(), when a claim ending at `end` passes producer_check_: an open
  // claim (kNested), the room (Refresh()), and a stamp point the claim covers. Sets
  // producer_check_ for the next claim.
  struct SlowClaim {
    uint64_t position;
    ClaimStatus status;
  };
  SlowClaim ClaimSlow(uint32_t n) noexcept;

  // The room: reloads tail_, answers whether a claim ending at `end` fits, and sets the
  // next space check: the quarter mark, or the limit (tail_ plus the capacity) once the
  // ring is past the quarter mark for this view of tail_ (the wake request is then
  // raised, once).
  bool Refresh(uint64_t end) noexcept {
    // Acquire: pairs with the release store of tail_ in Release(), so the consumer has
    // finished reading every slot below the tail we observe before we overwrite it.
    const uint64_t tail = tail_.load(std::memory_order_acquire);
    const uint64_t limit = tail + mask_ + 1;
    if (end > limit) {
      space_check_ = limit;
      return false;
    }
    const uint64_t quarter = tail + QuarterCapacity();
    if (end > quarter) {
      wake_request_ = true;
      space_check_ = limit;
    } else {
      space_check_ = quarter;
    }
    return true;
  }

  uint64_t QuarterCapacity() const noexcept {
    return (mask_ + 1) / 4 == 0 ? 1 : (mask_ + 1) / 4;
  }

  // Records ahead of the claim whose line Claim() asks for, to be written: 1 KiB, 16
  // lines. The line a record goes to was last read by the consumer, one lap of the ring
  // ago, so it sits in the consumer's core's cache or has left the producer's, and the
  // store must first take it back. The store buffer hides that only until the program's
  // next atomic instruction (sqlite3 takes a mutex around every malloc and free), which
  // waits for it. Asked for 32 records ahead, the line is there, exclusive, when it is
  // written. sqlite3 with memtrace's threads on the other CPU (bench/preload_ab.sh --cpu=0
  // --tracer-cpus=1, 11 rounds, three runs): the main thread's added CPU time fell from
  // 157-223 ms to 121-137 ms at depth 16 and from 111-133 ms to 72-79 ms at depth 0. The
  // line asked for was released by the consumer long ago in any ring of more than 32
  // records; if the ring is nearly full, or smaller, the prefetch only moves a line the
  // consumer is about to read: a hint, never a change to what anyone reads.
  static constexpr uint64_t kWriteAhead = 32;

  // Bumps space_seq_ and wakes the producer sleeping on it (AwaitSpace).
  void WakeProducer() noexcept;

  static void Bump(std::atomic<uint64_t>& counter) noexcept {
    // Relaxed: a statistic with a single writer; readers want a recent value, not an order.
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // Producer's line: written only by the producer.
  alignas(kCacheLineSize) std::atomic<uint64_t> head_{0};
  std::atomic<uint64_t> claim_{0};
  // The producer's own copy of head_, with kOpenBit while a claim is open.
  uint64_t producer_head_ = 0;
  // Where Claim() leaves its fast path: the least of space_check_ and the next stamp point
  // (a claim ending past it covers it).
  uint64_t producer_check_ = 0;
  // Where Claim() next looks at tail_: its last view of tail_ plus a quarter of the
  // capacity, or plus the whole capacity (the most it may fill up to).
  uint64_t space_check_;
  bool wake_request_ = false;   // see TakeWakeRequest()
  std::atomic<uint32_t> space_waiter_{0};  // 1 while the producer waits in AwaitSpace()

  // The producer's statistics: written only by the producer, on its slow paths.
  alignas(kCacheLineSize) std::atomic<uint64_t> failed_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> waited_{0};

  // Consumer's line: written only by the consumer.
  alignas(kCacheLineSize) std::atomic<uint64_t> tail_{0};
  uint64_t populated_ = 0;  // slots below this are mapped in (PopulateAhead)
  // The futex word AwaitSpace() sleeps on: bumped by Release() while a producer waits.
  std::atomic<uint32_t> space_seq_{0};

  // Read-only after construction.
  alignas(kCacheLineSize) const uint32_t id_;
  const uint64_t mask_;
  Event* const slots_;
  const size_t mapped_bytes_;
  uint64_t* const stamps_;               // the order stamps (the header)
  const uint64_t stamp_interval_mask_;   // 2^stamp_log2_ - 1
  const uint64_t stamp_index_mask_;      // stamps_ holds stamp_index_mask_ + 1 stamps
  const uint32_t stamp_log2_;
};

static_assert(alignof(SpscRing) == kCacheLineSize);
static_assert(sizeof(SpscRing) == 4 * kCacheLineSize,
              "producer fields, producer statistics, consumer fields and constants each own "
              "one cache line");

}  // namespace memtrace

#endif  // MEMTRACE_TRANSPORT_SPSC_RING_H_
