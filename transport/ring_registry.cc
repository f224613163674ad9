// Copyright 2026 The memtrace Authors.

#include "transport/ring_registry.h"

#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <concurrentqueue/concurrentqueue.h>

#include "transport/ticket.h"

namespace memtrace {
namespace transport_internal {

struct ControlQueues {
  // Threads → drainer: registrations and retirements.
  moodycamel::ConcurrentQueue<RingRegistry::Notice> notices;
  // Drainer → threads: rings whose final drain is done, ready for reuse.
  moodycamel::ConcurrentQueue<SpscRing*> free_rings;
};

}  // namespace transport_internal

namespace {

// A notice of `change` to `ring` by the calling thread, with its kernel id and name.
RingRegistry::Notice NoticeOf(SpscRing* ring, RingRegistry::Change change) noexcept {
  RingRegistry::Notice n{ring, change};
  n.tid = static_cast<int32_t>(syscall(SYS_gettid));
  if (prctl(PR_GET_NAME, n.name) != 0) n.name[0] = '\0';
  n.name[sizeof(n.name) - 1] = '\0';
  return n;
}

}  // namespace

RingRegistry::RingRegistry(uint32_t capacity_log2, uint32_t stamp_log2)
    : capacity_log2_(capacity_log2),
      stamp_log2_(stamp_log2),
      queues_(std::make_unique<transport_internal::ControlQueues>()) {
  by_id_.push_back(nullptr);  // id 0 is "unknown"
}

RingRegistry::~RingRegistry() {
  // Every ring ever created is in by_id_ once the drainer has seen its registration; the
  // owner drains the control queue (PollControl) before destroying the registry, so any
  // ring still only in the queue is registered here first.
  PollControl([](const Notice&) {});
  for (SpscRing* ring : by_id_) SpscRing::Destroy(ring);
}

SpscRing* RingRegistry::AcquireRing() noexcept {
  SpscRing* ring = nullptr;
  if (!queues_->free_rings.try_dequeue(ring)) {
    const uint32_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
    // Relaxed: ids only need to be distinct; the ring itself is published to the drainer
    // through the notice queue below.
    if (id > Ticket::kMaxRingId) {
      next_id_.fetch_sub(1, std::memory_order_relaxed);
      return nullptr;
    }
    ring = SpscRing::Create(id, capacity_log2_, stamp_log2_);
    if (ring == nullptr) return nullptr;
    CountAcquisition(ring);  // before the notice: see first_ring_id()
    if (!queues_->notices.enqueue(NoticeOf(ring, Change::kRegistered))) {
      SpscRing::Destroy(ring);
      return nullptr;
    }
    return ring;
  }
  // A reused ring: already in by_id_; its positions continue from its last drain.
  CountAcquisition(ring);
  if (!queues_->notices.enqueue(NoticeOf(ring, Change::kRegistered))) {
    queues_->free_rings.enqueue(ring);
    return nullptr;
  }
  return ring;
}

void RingRegistry::CountAcquisition(const SpscRing* ring) noexcept {
  // Relaxed add, then the seq_cst fence that pairs with the drainer's fence between its
  // epoch advance and its load of acquisitions() (see the header): the caller's first
  // epoch load comes after this fence. A count whose notice then cannot be sent stays
  // counted: the drainer then always fences, and no thread records without tickets.
  if (acquisitions_.fetch_add(1, std::memory_order_relaxed) == 0) {
    // Relaxed: the drainer reads it after dequeuing this ring's notice, which the queue
    // orders after this store (release on enqueue, acquire on dequeue).
    first_ring_id_.store(ring->id(), std::memory_order_relaxed);
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void RingRegistry::Retire(SpscRing* ring) noexcept {
  if (ring == nullptr) return;
  // If the queue cannot grow (out of memory), spin until it can: a retirement must not be
  // lost, or the ring would never be reclaimed. enqueue only fails when malloc fails.
  const Notice notice = NoticeOf(ring, Change::kRetired);
  while (!queues_->notices.enqueue(notice)) {
  }
}

void RingRegistry::Orphan(SpscRing* ring) noexcept {
  if (ring == nullptr) return;
  // As Retire(): the notice must not be lost, or the ring would never be reclaimed. No
  // name: the thread took this ring just now, and its registration carries the name.
  while (!queues_->notices.enqueue(Notice{ring, Change::kOrphaned})) {
  }
}

void RingRegistry::Reclaim(SpscRing* ring) noexcept {
  if (ring == nullptr) return;
  while (!queues_->free_rings.enqueue(ring)) {
  }
}

size_t RingRegistry::DequeueNotices(Notice* out, size_t max) noexcept {
  const size_t n = queues_->notices.try_dequeue_bulk(out, max);
  for (size_t i = 0; i < n; ++i) {
    SpscRing* ring = out[i].ring;
    if (out[i].change == Change::kRegistered && ring->id() >= by_id_.size()) {
      by_id_.resize(ring->id() + 1, nullptr);
    }
    if (out[i].change == Change::kRegistered) by_id_[ring->id()] = ring;
  }
  return n;
}

uint64_t RingRegistry::mapped_bytes() const noexcept {
  const uint64_t capacity = uint64_t{1} << capacity_log2_;
  uint64_t stamps = 1;
  while (stamps < (capacity >> stamp_log2_) + 2) stamps *= 2;
  return uint64_t{ring_count()} *
         (sizeof(SpscRing) + capacity * sizeof(Event) + stamps * sizeof(uint64_t));
}

}  // namespace memtrace
