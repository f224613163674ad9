// Copyright 2026 The memtrace Authors.
//
// ring_registry.h: where rings come from, how the drainer learns about them, and how they
// are reused.
//
// Life cycle of a ring (one per recording thread per recorder):
//
//     thread records for        thread exits           drainer has read every
//     the first time            (ThreadState dtor)      record of a retired ring
//   ─────────────────► ACTIVE ───────────────► RETIRED ─────────────────────► FREE
//     AcquireRing():            Retire():               Reclaim():            │
//     a FREE ring, or a new     kRetired message        back on the free      │
//     one with a new id;        to the drainer          queue, positions kept │
//     kRegistered message                                                     │
//         ▲───────────────────────────────────────────────────────────────────┘
//                              reused by the next AcquireRing()
//
// Control traffic (registration, retirement, reuse) travels through moodycamel
// ConcurrentQueues; the records themselves never do. A reused ring keeps its id and keeps
// counting positions from where it stopped, so tickets (ticket.h) stay unique. The number
// of rings is bounded by the peak number of threads recording at once plus those retired
// but not yet drained, however many threads come and go.
//
// Thread safety:
//   - AcquireRing() and Retire(): any thread (slow path: they may allocate inside the
//     queue and make a system call when a new ring is mapped).
//   - acquisitions(): any thread (the recorder's hot path reads it, Recorder::SoleRing()).
//   - PollControl(), Reclaim(), RingById(), ring_count(): the drainer only.
//   - The destructor: once, after the drainer has stopped and no thread can record.

#ifndef MEMTRACE_TRANSPORT_RING_REGISTRY_H_
#define MEMTRACE_TRANSPORT_RING_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "transport/spsc_ring.h"

namespace memtrace {

namespace transport_internal {
struct ControlQueues;  // the moodycamel queues; kept out of this header
}  // namespace transport_internal

class RingRegistry {
 public:
  // kOrphaned: the ring's thread has run its exit hook (it will never retire the ring) but
  // still records into it, from later exit code; the drainer retires it once the thread
  // is gone (runtime/internal/thread_state.h, step 3).
  enum class Change : uint8_t { kRegistered, kRetired, kOrphaned };
  struct Notice {
    SpscRing* ring;
    Change change;
    // The calling thread's kernel id (gettid()) and its name then (prctl(PR_GET_NAME),
    // NUL-terminated). kRegistered: the drainer hands them to the observers
    // (EventObserver::OnThreadStart()); kRetired: the name at the thread's exit hook,
    // handed on again when it differs (a thread renamed after it took the ring).
    // kOrphaned: none (0 and empty), as the thread took that ring at its exit.
    int32_t tid = 0;
    char name[16] = {};
  };

  // Every ring this registry creates has 2^capacity_log2 slots and an order stamp every
  // 2^stamp_log2 of them (spsc_ring.h).
  explicit RingRegistry(uint32_t capacity_log2,
                        uint32_t stamp_log2 = SpscRing::kDefaultStampLog2);
  ~RingRegistry();

  RingRegistry(const RingRegistry&) = delete;
  RingRegistry& operator=(const RingRegistry&) = delete;

  // Gives the calling thread a ring to produce into and tells the drainer, with the
  // thread's kernel id and name (two system calls, once per ring a thread takes). Returns
  // nullptr if no memory could be mapped or every ring id is taken; the caller counts the
  // loss.
  SpscRing* AcquireRing() noexcept;

  // The calling thread will never produce into `ring` again. The drainer reads what is
  // left, then reclaims it. Two system calls (the thread's id and name, see Notice).
  void Retire(SpscRing* ring) noexcept;
  // The calling thread is exiting past its exit hook and keeps `ring` for what it still
  // records; the drainer retires it once the thread is gone (Change::kOrphaned).
  void Orphan(SpscRing* ring) noexcept;

  // Drainer: hands each pending notice to `fn(const Notice&)`, in the order each thread
  // sent them. Returns how many there were.
  template <typename Fn>
  size_t PollControl(Fn&& fn) {
    Notice batch[64];
    size_t total = 0;
    for (;;) {
      const size_t n = DequeueNotices(batch, 64);
      for (size_t i = 0; i < n; ++i) fn(batch[i]);
      total += n;
      if (n < 64) return total;
    }
  }

  // How many kRegistered notices AcquireRing() has sent, counted before the caller's first
  // record. Recorder::SoleRing() reads it on the hot path. With the fence it runs after
  // counting, this lets the drainer tell that no thread can have started recording into
  // a ring it does not know yet (drainer.cc, "one ring"): the drainer advances the epoch,
  // runs a seq_cst fence, then loads this; a new producer counts here, runs a seq_cst
  // fence, then loads the epoch. Store buffering with a fence on each side: the drainer
  // sees the count, or the producer's records carry the new epoch.
  uint64_t acquisitions() const noexcept {
    // Relaxed: ordered by the seq_cst fences on both sides (see above).
    return acquisitions_.load(std::memory_order_relaxed);
  }

  // The id of the first ring handed out (0 until then): the one whose thread records
  // without tickets while it is alone (Recorder::SoleRing()). Drainer: read after
  // dequeuing that ring's notice.
  uint32_t first_ring_id() const noexcept {
    return first_ring_id_.load(std::memory_order_relaxed);
  }

  // Drainer: `ring` is retired and fully read; make it available to AcquireRing().
  void Reclaim(SpscRing* ring) noexcept;

  // Drainer: the ring with this id, or nullptr if no such id was ever handed out.
  SpscRing* RingById(uint32_t id) const noexcept {
    return id < by_id_.size() ? by_id_[id] : nullptr;
  }

  // Rings created so far (active, retired and free).
  uint32_t ring_count() const noexcept {
    return next_id_.load(std::memory_order_relaxed) - 1;
  }
  uint32_t capacity_log2() const noexcept { return capacity_log2_; }

  // Bytes mapped for rings so far.
  uint64_t mapped_bytes() const noexcept;

 private:
  size_t DequeueNotices(Notice* out, size_t max) noexcept;
  void CountAcquisition(const SpscRing* ring) noexcept;

  const uint32_t capacity_log2_;
  const uint32_t stamp_log2_;
  std::unique_ptr<transport_internal::ControlQueues> queues_;
  // Ids are handed out once; 0 is never a ring id (ticket 0 means unknown).
  std::atomic<uint32_t> next_id_{1};
  // Drainer-owned: filled in as kRegistered notices arrive.
  std::vector<SpscRing*> by_id_;
  // Notices of registration sent (acquisitions()), and the first ring's id. Every record
  // reads the count (Recorder::SoleRing()), so it has a line of its own: the recorder's
  // next member is the ledger, which the drainer writes with every record it applies.
  alignas(kCacheLineSize) std::atomic<uint64_t> acquisitions_{0};
  std::atomic<uint32_t> first_ring_id_{0};
  char pad_[kCacheLineSize - sizeof(std::atomic<uint64_t>) - sizeof(std::atomic<uint32_t>)];
};

}  // namespace memtrace

#endif  // MEMTRACE_TRANSPORT_RING_REGISTRY_H_
