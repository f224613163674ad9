// Copyright 2026 The memtrace Authors.

#include "transport/spsc_ring.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <new>

#include "transport/internal/mapped_memory.h"

namespace memtrace {

SpscRing::SpscRing(uint32_t id, uint64_t mask, Event* slots, uint64_t* stamps,
                   uint32_t stamp_log2, uint64_t stamp_count, size_t mapped_bytes) noexcept
    : space_check_((mask + 1) / 4 == 0 ? 1 : (mask + 1) / 4),
      id_(id), mask_(mask), slots_(slots),
      mapped_bytes_(mapped_bytes),
      stamps_(stamps),
      stamp_interval_mask_((uint64_t{1} << stamp_log2) - 1),
      stamp_index_mask_(stamp_count - 1),
      stamp_log2_(stamp_log2) {}

SpscRing* SpscRing::Create(uint32_t id, uint32_t capacity_log2, uint32_t stamp_log2) noexcept {
  if (capacity_log2 < kMinCapacityLog2 || capacity_log2 > kMaxCapacityLog2) return nullptr;
  if (stamp_log2 > kMaxStampLog2) return nullptr;
  const uint64_t capacity = uint64_t{1} << capacity_log2;
  // Unread records span at most capacity / interval + 1 segments, and the drainer also
  // reads the stamp after the last (the header): a power of two above that many.
  uint64_t stamp_count = 1;
  while (stamp_count < (capacity >> stamp_log2) + 2) stamp_count *= 2;
  // One mapping holds the ring object, its slots, then its stamps.
  const size_t bytes =
      sizeof(SpscRing) + capacity * sizeof(Event) + stamp_count * sizeof(uint64_t);
  void* memory = transport_internal::MapZeroed(bytes);
  if (memory == nullptr) return nullptr;
  auto* slots = reinterpret_cast<Event*>(static_cast<char*>(memory) + sizeof(SpscRing));
  auto* stamps = reinterpret_cast<uint64_t*>(slots + capacity);
  return new (memory)
      SpscRing(id, capacity - 1, slots, stamps, stamp_log2, stamp_count, bytes);
}

void SpscRing::Destroy(SpscRing* ring) noexcept {
  if (ring == nullptr) return;
  const size_t bytes = ring->mapped_bytes_;
  ring->~SpscRing();
  transport_internal::Unmap(ring, bytes);
}

SpscRing::SlowClaim SpscRing::ClaimSlow(uint32_t n) noexcept {
  const uint64_t pos = producer_head_;
  if (pos & kOpenBit) return {0, ClaimStatus::kNested};
  const uint64_t end = pos + n;
  if (end > space_check_ && !Refresh(end)) {
    CheckFrom(pos);
    return {0, ClaimStatus::kFull};
  }
  // Whether [pos, end) holds a multiple of the stamp interval.
  const bool stamp_due = ((end - 1) & stamp_interval_mask_) < n;
  CheckFrom(end);
  uint64_t position;
  Open(pos, n, &position);
  return {position, stamp_due ? ClaimStatus::kStampDue : ClaimStatus::kClaimed};
}

SpscRing::ClaimStatus SpscRing::AwaitSpace(uint32_t n, uint64_t* position,
                                           int64_t timeout_ns) noexcept {
  // Relaxed: the fence below orders the mark before the loads that follow it.
  space_waiter_.store(1, std::memory_order_relaxed);
  // Seq_cst fence: the mark, then the loads of space_seq_ and of tail_ (in Claim()).
  // Pairs with the seq_cst fence in Release(), between its store of tail_ and its load of
  // the mark (the header). A seq_cst store alone would not do: it is not ordered before a
  // later load of another object that is not seq_cst (store buffering), and both sides
  // could miss each other's store.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // Acquire: pairs with the release bump in WakeProducer(); a bump read here comes with
  // the tail_ stored before it.
  const uint32_t seq = space_seq_.load(std::memory_order_acquire);
  ClaimStatus claimed = Claim(n, position);
  if (claimed == ClaimStatus::kFull) {
    const timespec timeout{static_cast<time_t>(timeout_ns / 1'000'000'000),
                           static_cast<long>(timeout_ns % 1'000'000'000)};
    // Returns at a wake-up, at once when space_seq_ has moved on from `seq`, or at the
    // timeout; a signal interrupts it too. Each way the caller looks again.
    syscall(SYS_futex, &space_seq_, FUTEX_WAIT_PRIVATE, seq, &timeout, nullptr, 0);
    claimed = Claim(n, position);
  }
  // Relaxed: a wake-up the consumer sends after this point finds no sleeper and costs
  // only the system call.
  space_waiter_.store(0, std::memory_order_relaxed);
  return claimed;
}

void SpscRing::WakeProducer() noexcept {
  // Release: pairs with the acquire load in AwaitSpace(); the tail_ stored before this
  // bump is visible to a producer that reads the bumped value.
  space_seq_.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, &space_seq_, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

void SpscRing::PopulateAhead(uint64_t head) noexcept {
  const uint64_t capacity = mask_ + 1;
  if (populated_ >= capacity) return;
  // As far ahead as the producer has come (and 16 KiB), so that a thread that records
  // little keeps little resident; in steps of at least a quarter of the new end, so the
  // calls are few.
  constexpr uint64_t kMinAhead = 16384 / sizeof(Event);
  const uint64_t end = std::min(capacity, 2 * head + kMinAhead);
  if (end <= populated_ || (end - populated_ < end / 4 && end < capacity)) return;
  if (!transport_internal::Populate(slots_ + populated_, (end - populated_) * sizeof(Event))) {
    populated_ = capacity;  // the kernel cannot: the producer faults pages in itself
    return;
  }
  populated_ = end;
}

void SpscRing::ResetPositions(uint64_t position) noexcept {
  // Relaxed throughout: no other thread uses the ring now (see the header); the queue that
  // hands it over publishes these stores.
  head_.store(position, std::memory_order_relaxed);
  claim_.store(position, std::memory_order_relaxed);
  tail_.store(position, std::memory_order_relaxed);
  producer_head_ = position;
  space_check_ = position + QuarterCapacity();
  CheckFrom(position);
  wake_request_ = false;
  space_waiter_.store(0, std::memory_order_relaxed);
}

}  // namespace memtrace
