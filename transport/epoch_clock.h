// Copyright 2026 The memtrace Authors.
//
// epoch_clock.h: the coarse shared clock that orders events across threads, and the
// watermark protocol that tells the drainer when an epoch is complete.
//
// Why not a timestamp per event: on the machines memtrace targets a glibc malloc+free pair
// costs about 15 ns, and two rdtsc reads add 12-30 ns (bench/README.md has the figures).
// A per-event clock alone would cost more than the allocator. A shared atomic counter
// bumped by every event would write a shared cache line on the hot path. So:
//
//   - The drainer owns a 32-bit epoch counter. Producers only *read* it (a relaxed load of
//     a line that changes a few thousand times a second at most), and stamp every record
//     with the value they read.
//   - Epochs respect happens-before: if operation a happens before operation b (through a
//     lock, a queue, or malloc's own synchronisation), b's load of the counter reads the
//     same or a later value than a's load (C++ read-read coherence), so epoch(a) <=
//     epoch(b). The drainer applies epoch e entirely before epoch e + 1.
//   - Inside one epoch, the order of two operations on the same block is recovered from
//     tickets (ticket.h): a free names the allocation it releases.
//
// The watermark. The drainer may apply epoch e only once every record stamped e has been
// published, including one whose producer read the clock and was then preempted before it
// published (the third ordering hazard). Each producer runs, per record batch:
//
//     claim_.store(pos + n)            (1)  SpscRing::Claim(), relaxed
//     LightFence()                     (2)  a compiler barrier, see below
//     epoch = epoch_.load()            (3)  relaxed
//     ... write records stamped with epoch ...
//     head_.store(pos + n, release)    (4)  Publish()
//
// To close epoch e the drainer runs:
//
//     epoch_.store(e + 1)              (5)
//     HeavyFence()                     (6)  membarrier(): a full fence on every thread
//     for each ring: c = claim_, h = head_;  wait until head_ >= c if c > h     (7)
//
// (1)-(3) against (5)-(7) is the store-buffering pattern with a full fence on each side,
// so at least one side sees the other's store: either the drainer sees the claim at (7)
// and waits for its publication, or the producer's load (3) reads e + 1 or later. Hence
// after (7) every record stamped <= e is published. The producer side pays only a
// compiler barrier; the drainer pays one membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)
// system call per epoch, which interrupts each CPU running one of our threads and executes
// a full barrier there (none while it knows only one ring: drainer.h, step 1). Where the
// kernel lacks membarrier (older kernels, some sandboxes) LightFence() becomes a real
// seq_cst fence; UsesMembarrier() says which is in force. A clock can also be asked for
// seq_cst fences where membarrier() works (FenceMode::kSeqCst): each producer then pays a
// fence per record batch, and no thread of the process is interrupted when an epoch
// closes (what a server whose threads own their cores may prefer).
// Each clock decides once, when it is constructed, and both fences follow that decision.
//
// Order inside an epoch: the stamp clock. Epochs order what happens-before orders, and no
// more: two threads' records of one epoch (2 ms) could be applied in any interleaving,
// and a high-water mark is the peak of the interleaving applied. So each producer also
// reads a fine clock every 2^stamp_log2 records (spsc_ring.h, "order stamps"): on the
// claim that covers a stamp point, after its epoch load, StampNow() here. The drainer
// merges the rings' records of an epoch by these stamps (interpolated between two stamps
// of a ring), and computes for every high-water mark an interval that must contain the
// peak of every order the stamps allow (runtime/internal/peak_bounds.h).
//
//   - Why every N records and not every record: a serialised counter read costs about as
//     much as a glibc malloc+free pair (bench/README.md: `clock_cost_benchmark`, and
//     "Peaks under concurrency"); one every 32 records spreads it, and the check for a
//     stamp point costs nothing on the fast path: the claim's one compare already stops
//     at the next stamp point (SpscRing::Claim(), kStampDue). A finer tick
//     inside the epoch word would need a thread that writes it every few microseconds.
//     Config::order_stamp_log2 = 0 stamps every record, for users who want exact order.
//     While the recorder has one ring, the stamp is 0 and no clock is read
//     (Recorder::OrderStamp()): one thread's own order is the real one.
//   - The clock: x86-64's time-stamp counter after an lfence (so that the reading is not
//     taken before the epoch load and the operations before it), or AArch64's virtual
//     counter after an isb. Stamps of two CPUs compare only if their counters agree:
//     StampNow() returns 0 ("no stamp": the window is unknown, the interval only wider)
//     unless the kernel's clocksource is "tsc", which Linux keeps only while it finds the
//     counters synchronised across CPUs and invariant, or on AArch64, whose counter is
//     architecturally one for the system. Decided once per clock, at construction.
//   - What the interval then holds: the peak of any order of the operations that keeps
//     each thread's order, puts epoch e before epoch e + 1, and puts each record between
//     the stamps around it. A program that orders two operations by a lock or a queue
//     orders their records so (happens-before orders the epochs and the stamps), so the
//     order it observes, the one its own counter behind a mutex would see, is one of them.
//
// Closing: the value kClosed (all ones) tells producers the recorder has stopped. A
// producer that reads it gives back its claim and fails the record instead of publishing,
// which lets Stop() know that after one more watermark round no producer can touch a ring.
//
// Thread safety: Load() and LightFence() are for any thread, on the hot path (no system
// call, no allocation, no shared write). Advance(), Close() and HeavyFence() are for the
// drainer (or whoever currently owns the recorder's life cycle) only.

#ifndef MEMTRACE_TRANSPORT_EPOCH_CLOCK_H_
#define MEMTRACE_TRANSPORT_EPOCH_CLOCK_H_

#include <atomic>
#include <cstdint>

#include "transport/spsc_ring.h"

namespace memtrace {

// How the watermark's two sides fence (above). kMembarrier: membarrier() on the drainer
// and a compiler barrier on producers where the kernel has it, seq_cst fences on both
// sides where it does not. kSeqCst: seq_cst fences on both sides, always.
enum class FenceMode : uint8_t { kMembarrier, kSeqCst };

class EpochClock {
 public:
  static constexpr uint32_t kClosed = 0xffffffffu;
  static constexpr uint32_t kFirstEpoch = 1;

  explicit EpochClock(FenceMode mode = FenceMode::kMembarrier) noexcept;

  // The current epoch, or kClosed. Any thread; hot path.
  uint32_t Load() const noexcept {
    // Relaxed: coherence alone makes epochs non-decreasing along happens-before; the
    // watermark orders this load with claim_ through LightFence()/HeavyFence().
    return epoch_.load(std::memory_order_relaxed);
  }

  // Starts epoch `next` (> the current one, < kClosed). Drainer only.
  void Advance(uint32_t next) noexcept {
    // Relaxed store: HeavyFence(), which the caller runs next, orders it before the
    // drainer's loads of every ring's claim_ (step (6) above).
    epoch_.store(next, std::memory_order_relaxed);
  }

  // Makes every later Load() return kClosed. Drainer / life-cycle owner only.
  void Close() noexcept { epoch_.store(kClosed, std::memory_order_relaxed); }

  // Reopens a closed clock at `epoch` (a recorder started again). Life-cycle owner only.
  void Reopen(uint32_t epoch) noexcept { epoch_.store(epoch, std::memory_order_relaxed); }

  // Producer side of the asymmetric fence: a compiler barrier when membarrier() works,
  // else a seq_cst fence. Reads this clock's own copy of the choice, on the line the
  // epoch load reads next.
  void LightFence() const noexcept {
    if (__builtin_expect(membarrier_, 1)) {
      std::atomic_signal_fence(std::memory_order_seq_cst);
    } else {
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
  }

  // Drainer side: a full memory barrier on every running thread of this process.
  void HeavyFence() const noexcept;

  // A reading of the stamp clock (the header, "order inside an epoch"), or 0 where stamps
  // of two CPUs would not compare. Any thread; called once every few records, so it may
  // cost what a serialised counter read costs (about 12 ns), and no more: no system call.
  uint64_t StampNow() const noexcept {
    if (!stamps_) return 0;
#if defined(__x86_64__)
    __builtin_ia32_lfence();
    return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    asm volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
    return v;
#else
    return 0;
#endif
  }
  // Whether StampNow() gives stamps (decided at construction).
  bool HasStamps() const noexcept { return stamps_; }

  // Whether the asymmetric fence uses membarrier() (true) or seq_cst fences (false).
  // Decided once per clock, at construction, so both sides always agree.
  bool UsesMembarrier() const noexcept { return membarrier_; }

 private:
  alignas(kCacheLineSize) std::atomic<uint32_t> epoch_;
  const bool membarrier_;
  const bool stamps_;
  char pad_[kCacheLineSize - sizeof(std::atomic<uint32_t>) - 2 * sizeof(bool)];
};

static_assert(sizeof(EpochClock) == kCacheLineSize, "the clock owns its cache line");

// Returns true when epoch `a` comes before epoch `b`, allowing the 32-bit counter to wrap
// (after ~2^31 epochs: weeks at the drainer's fastest rate).
inline constexpr bool EpochBefore(uint32_t a, uint32_t b) noexcept {
  return static_cast<int32_t>(a - b) < 0;
}

}  // namespace memtrace

#endif  // MEMTRACE_TRANSPORT_EPOCH_CLOCK_H_
