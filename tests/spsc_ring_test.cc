// Copyright 2026 The memtrace Authors.

#include "transport/spsc_ring.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace memtrace {
namespace {

Event MakeEvent(uint64_t n) {
  return Event{n, Event::PackKindSize(EventKind::kAlloc, 0, n & 0xffff), ~n, n * 3};
}

struct RingDeleter {
  void operator()(SpscRing* r) const { SpscRing::Destroy(r); }
};
using RingPtr = std::unique_ptr<SpscRing, RingDeleter>;

RingPtr MakeRing(uint32_t log2) { return RingPtr(SpscRing::Create(7, log2)); }

// The consumer of the concurrent tests: reads `records` records in bulk, checks each
// against MakeEvent(its position) (the producer's counter, independent of the ring), and
// calls before_release(next) before it frees what it read.
template <typename Fn>
void ConsumeInOrder(SpscRing& ring, uint64_t records, std::atomic<bool>* failed,
                    Fn before_release) {
  uint64_t next = 0;
  while (next < records) {
    const uint64_t head = ring.LoadHead();
    if (head == next) {
      // Nothing new: let the producer run. Spinning here, with both threads on one CPU
      // (a loaded machine, TSan), held the producer off until the next preemption, once
      // per lap of a 64-slot ring: 2.5 s to over 60 s for the same test.
      std::this_thread::yield();
      continue;
    }
    for (; next < head; ++next) {
      const Event& e = ring.Read(next);
      if (e.word0 != next || e.word2 != ~next || e.word3 != next * 3) *failed = true;
    }
    before_release(next);
    ring.Release(next);
  }
}

TEST(SpscRingTest, CreateRejectsCapacityOutOfRange) {
  EXPECT_EQ(SpscRing::Create(1, 0), nullptr);
  EXPECT_EQ(SpscRing::Create(1, SpscRing::kMaxCapacityLog2 + 1), nullptr);
  RingPtr ring = MakeRing(3);
  ASSERT_NE(ring, nullptr);
  EXPECT_EQ(ring->capacity(), 8u);
  EXPECT_EQ(ring->id(), 7u);
}

TEST(SpscRingTest, EmptyRingHasNothingPublished) {
  RingPtr ring = MakeRing(4);
  EXPECT_EQ(ring->LoadHead(), 0u);
  EXPECT_EQ(ring->LoadTail(), 0u);
  EXPECT_EQ(ring->LoadClaim(), 0u);
}

TEST(SpscRingTest, TryClaimFailsWhenFull) {
  RingPtr ring = MakeRing(2);  // 4 slots
  uint64_t pos = 0;
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(ring->TryClaim(1, &pos));
    EXPECT_EQ(pos, i);
    ring->slot(pos) = MakeEvent(i);
    ring->Publish(pos + 1);
  }
  EXPECT_FALSE(ring->TryClaim(1, &pos));
  // A failed claim changes nothing.
  EXPECT_EQ(ring->LoadClaim(), 4u);
  EXPECT_EQ(ring->LoadHead(), 4u);
  // Releasing one slot makes exactly one claim possible.
  ring->Release(1);
  EXPECT_TRUE(ring->TryClaim(1, &pos));
  EXPECT_EQ(pos, 4u);
  ring->Publish(5);
  EXPECT_FALSE(ring->TryClaim(1, &pos));
}

// The wake request: raised once when a claim takes the ring past a quarter full of the
// tail the producer last saw, again only after the consumer moved the tail and the ring
// passed the new quarter mark. Expected values from the arithmetic: 64 slots, quarter 16.
TEST(SpscRingTest, WakeRequestOncePerQuarterCrossing) {
  RingPtr ring = MakeRing(6);  // 64 slots
  uint64_t pos = 0;
  auto claim = [&](uint32_t n) {
    EXPECT_TRUE(ring->TryClaim(n, &pos));
    ring->Publish(pos + n);
  };
  for (int i = 0; i < 16; ++i) claim(1);  // 16 records: exactly a quarter, not past it
  EXPECT_FALSE(ring->TakeWakeRequest());
  claim(1);  // 17: past the quarter mark
  EXPECT_TRUE(ring->TakeWakeRequest());
  EXPECT_FALSE(ring->TakeWakeRequest()) << "taken once";
  for (int i = 0; i < 40; ++i) claim(1);  // 57 records, up to the full ring: no new request
  EXPECT_FALSE(ring->TakeWakeRequest());
  // The consumer frees 50 (tail 50); the producer looks again only at the full mark (64).
  ring->Release(50);
  for (int i = 0; i < 7; ++i) claim(1);  // 64 records written: fill 14 of the new tail
  EXPECT_FALSE(ring->TakeWakeRequest());
  claim(2);  // 66: fill 16, not past the new quarter mark (50 + 16)
  EXPECT_FALSE(ring->TakeWakeRequest());
  claim(1);  // 67: fill 17
  EXPECT_TRUE(ring->TakeWakeRequest());
  // A full ring is still refused, and a refusal raises nothing.
  for (int i = 0; i < 47; ++i) claim(1);  // 114 = 50 + 64
  uint64_t ignored = 0;
  EXPECT_FALSE(ring->TryClaim(1, &ignored));
  EXPECT_FALSE(ring->TakeWakeRequest());
}

TEST(SpscRingTest, MultiSlotClaimNeedsAllSlotsFree) {
  RingPtr ring = MakeRing(2);
  uint64_t pos = 0;
  ASSERT_TRUE(ring->TryClaim(3, &pos));
  ring->Publish(3);
  EXPECT_FALSE(ring->TryClaim(2, &pos));
  EXPECT_TRUE(ring->TryClaim(1, &pos));
  ring->Unclaim();
  EXPECT_EQ(ring->LoadClaim(), ring->LoadHead());
}

TEST(SpscRingTest, WrapsAroundKeepingOrder) {
  RingPtr ring = MakeRing(3);  // 8 slots
  uint64_t next_read = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    uint64_t pos = 0;
    ASSERT_TRUE(ring->TryClaim(1, &pos));
    ASSERT_EQ(pos, i);
    ring->slot(pos) = MakeEvent(i);
    ring->Publish(pos + 1);
    if (i % 5 == 4) {  // read in small bulks, leaving the ring partly full
      const uint64_t head = ring->LoadHead();
      for (; next_read < head; ++next_read) {
        ASSERT_EQ(ring->Read(next_read).word0, next_read);
        ASSERT_EQ(ring->Read(next_read).word3, next_read * 3);
      }
      ring->Release(next_read);
    }
  }
}

TEST(SpscRingTest, ClaimIsVisibleUntilPublished) {
  RingPtr ring = MakeRing(4);
  uint64_t pos = 0;
  ASSERT_TRUE(ring->TryClaim(2, &pos));
  EXPECT_EQ(ring->LoadClaim(), 2u);
  EXPECT_EQ(ring->LoadHead(), 0u);
  ring->Publish(2);
  EXPECT_EQ(ring->LoadClaim(), ring->LoadHead());
}

TEST(SpscRingTest, ResetPositionsContinuesCounting) {
  RingPtr ring = MakeRing(2);
  ring->ResetPositions(1000);
  uint64_t pos = 0;
  ASSERT_TRUE(ring->TryClaim(1, &pos));
  EXPECT_EQ(pos, 1000u);
}

// Whether the page holding `p` is mapped in (mincore).
bool Resident(const void* p) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  unsigned char state = 0;
  void* start = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) & ~(page - 1));
  return mincore(start, page, &state) == 0 && (state & 1) != 0;
}

// On the first lap the consumer maps in as far ahead of the producer as it has come, and
// what the producer wrote stays as written.
TEST(SpscRingTest, PopulateAheadMapsTheProducersNextPagesAndKeepsItsRecords) {
  RingPtr ring = MakeRing(16);  // 2 MiB of slots
  const uint64_t capacity = ring->capacity();
  for (uint64_t i = 0; i < 100; ++i) {
    uint64_t pos;
    ASSERT_TRUE(ring->TryClaim(1, &pos));
    ring->slot(pos) = MakeEvent(i);
    ring->Publish(pos + 1);
  }
  const Event* near = &ring->Read(150);              // ahead of the producer at 100
  const Event* far = &ring->Read(capacity / 4);      // far beyond where it has come
  ASSERT_FALSE(Resident(near)) << "mapped lazily until now";
  // Whether this kernel can (Linux 5.14), asked of a page of the test's own.
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* scratch = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(scratch, MAP_FAILED);
  const bool can = madvise(scratch, page, MADV_POPULATE_WRITE) == 0;
  munmap(scratch, page);
  if (!can) GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE";
  ring->PopulateAhead(ring->LoadHead());
  EXPECT_TRUE(Resident(near));
  EXPECT_FALSE(Resident(far)) << "no further ahead than the producer has come";
  for (uint64_t i = 0; i < 100; ++i) {
    EXPECT_EQ(ring->Read(i).word0, i);
    EXPECT_EQ(ring->Read(i).word2, ~i);
    EXPECT_EQ(ring->Read(i).word3, i * 3);
  }
  // With the producer half a ring on, the rest of the lap.
  ring->PopulateAhead(capacity / 2);
  EXPECT_TRUE(Resident(far));
  EXPECT_TRUE(Resident(&ring->Read(capacity - 1)));
}

TEST(SpscRingTest, CountersStartAtZeroAndCount) {
  RingPtr ring = MakeRing(2);
  ring->CountFailed();
  ring->CountDropped();
  ring->CountDropped();
  ring->CountWaited();
  EXPECT_EQ(ring->failed(), 1u);
  EXPECT_EQ(ring->dropped(), 2u);
  EXPECT_EQ(ring->waited(), 1u);
}

// One producer, one consumer, bulk reads: every record arrives once, in order, intact.
// The expected sequence is the producer's counter, independent of the ring.
TEST(SpscRingTest, ConcurrentProducerConsumerDeliversInOrder) {
  constexpr uint64_t kRecords = 2'000'000;
  RingPtr ring = MakeRing(6);  // 64 slots: many wraparounds and full rings
  std::atomic<bool> failed{false};
  std::thread consumer([&] { ConsumeInOrder(*ring, kRecords, &failed, [](uint64_t) {}); });
  uint64_t full = 0;
  for (uint64_t i = 0; i < kRecords;) {
    uint64_t pos = 0;
    const uint32_t n = (i % 7 == 0 && i + 2 <= kRecords) ? 2 : 1;
    if (!ring->TryClaim(n, &pos)) {
      ++full;
      std::this_thread::yield();
      continue;
    }
    for (uint32_t k = 0; k < n; ++k) ring->slot(pos + k) = MakeEvent(i + k);
    ring->Publish(pos + n);
    i += n;
  }
  consumer.join();
  EXPECT_FALSE(failed.load());
  EXPECT_EQ(ring->LoadHead(), kRecords);
  EXPECT_EQ(ring->LoadTail(), kRecords);
}

// A producer that waits for room in AwaitSpace() sleeps until Release() wakes it: it gets
// every record through, in order, with a consumer that makes room only in bursts and
// sleeps between them. The producer never gives up (its timeout is long); a lost wake-up
// would leave it asleep until the timeout, and the consumer's bounded wait for it fails.
TEST(SpscRingTest, AwaitSpaceSleepsUntilTheConsumerMakesRoom) {
  constexpr uint64_t kRecords = 20'000;
  RingPtr ring = MakeRing(4);  // 16 slots: the producer waits at every lap
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> produced{0};
  std::thread consumer([&] {
    ConsumeInOrder(*ring, kRecords, &failed, [](uint64_t next) {
      if (next % 4096 < 16) {
        // Now and then the room comes late: the producer is asleep in AwaitSpace() by then.
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
  });
  uint64_t waits = 0;
  std::thread producer([&] {
    for (uint64_t i = 0; i < kRecords; ++i) {
      uint64_t pos = 0;
      if (!ring->TryClaim(1, &pos)) {
        ++waits;
        while (!SpscRing::Claimed(ring->AwaitSpace(1, &pos, 60'000'000'000))) {
        }
      }
      ring->slot(pos) = MakeEvent(i);
      ring->Publish(pos + 1);
      produced = i + 1;
    }
  });
  // The consumer finishes only if every wake-up arrived; a lost one stalls the producer
  // for its minute-long timeout.
  for (int i = 0; i < 600 && produced.load() < kRecords; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(produced.load(), kRecords) << "the producer slept through a wake-up";
  if (produced.load() < kRecords) {
    ring->Release(ring->LoadHead());  // the test failed; let the threads end
  }
  producer.join();
  consumer.join();
  EXPECT_FALSE(failed.load());
  EXPECT_GT(waits, 0u);
  EXPECT_EQ(ring->LoadTail(), kRecords);
}

// Spins for `n` rounds of a load and a store the compiler must keep: a delay of a few
// nanoseconds a round, with no system call.
void Spin(uint32_t n) {
  std::atomic<uint32_t> left{n};
  // Relaxed: an atomic only so that the compiler keeps the loop.
  while (left.load(std::memory_order_relaxed) != 0) {
    left.store(left.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  }
}

// Round after round, the producer fills a two-slot ring and waits in AwaitSpace() for the
// consumer, which watches for the ring to fill and frees it at once. The producer first
// spins for a delay that sweeps a range of some microseconds from round to round, so that
// its wait begins at every point around the Release(): before it, between the producer's
// mark and its look at tail_, and after it. Every wait must end with the room that
// Release() made: seen by the look, or brought by the wake-up. A lost wake-up (each side
// missing the other's store, which the store-buffering pair in the header rules out)
// shows as a call that lasted its whole timeout, 5 s against the microseconds a wake-up
// takes; the test stops at the first.
//
// On x86-64 the hardware never lets both sides miss (a seq_cst store is a locked
// instruction, itself a full fence), so a missing fence in the code cannot fail this test
// here; with the producer's mark moved after its look at tail_ (the reordering such a
// fence forbids), it fails in most runs.
TEST(SpscRingTest, AWaitThatRacesAReleaseEndsByTheReleaseNotItsTimeout) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  constexpr uint64_t kRounds = 10'000;
#else
  constexpr uint64_t kRounds = 100'000;
#endif
  constexpr int64_t kTimeoutNs = 5'000'000'000;
  RingPtr ring = MakeRing(1);  // 2 slots: full after every round
  std::atomic<bool> done{false};
  std::thread consumer([&] {
    std::mt19937 rng(1);
    uint64_t tail = 0;
    uint32_t idle = 0;
    // Relaxed: `done` only ends the loop; the ring orders everything else.
    while (!done.load(std::memory_order_relaxed)) {
      const uint64_t head = ring->LoadHead();
      if (head - tail < ring->capacity()) {
        // Rarely: on one CPU (a loaded machine, TSan) spinning holds the producer off, but
        // a yield costs more than the window this test aims at.
        if (++idle % 4096 == 0) std::this_thread::yield();
        continue;
      }
      idle = 0;
      Spin(rng() % 64);
      ring->Release(head);
      tail = head;
    }
  });
  uint64_t timed_out = 0;
  uint64_t waits = 0;
  for (uint64_t round = 0; round < kRounds && timed_out == 0; ++round) {
    uint64_t pos = 0;
    while (ring->TryClaim(1, &pos)) ring->Publish(pos + 1);
    Spin(static_cast<uint32_t>((round * 613) % 8192));
    ++waits;
    // AwaitSpace() may also return early with no room (a bump left from the previous
    // round's Release(), or a signal): the caller looks again, as the recorder does.
    bool claimed = false;
    while (!claimed && timed_out == 0) {
      const auto start = std::chrono::steady_clock::now();
      claimed = SpscRing::Claimed(ring->AwaitSpace(1, &pos, kTimeoutNs));
      if (std::chrono::steady_clock::now() - start >= std::chrono::nanoseconds(kTimeoutNs)) {
        ++timed_out;
      }
    }
    if (claimed) ring->Publish(pos + 1);
  }
  done.store(true, std::memory_order_relaxed);
  consumer.join();
  EXPECT_EQ(timed_out, 0u) << "a wait slept through its wake-up, after " << waits << " waits";
  EXPECT_EQ(waits, kRounds);
}

// Without a consumer, AwaitSpace() gives up at its timeout and claims nothing.
TEST(SpscRingTest, AwaitSpaceGivesUpAtItsTimeout) {
  RingPtr ring = MakeRing(2);
  uint64_t pos = 0;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(ring->TryClaim(1, &pos));
    ring->Publish(pos + 1);
  }
  EXPECT_EQ(ring->AwaitSpace(1, &pos, 5'000'000), SpscRing::ClaimStatus::kFull);
  EXPECT_EQ(ring->LoadClaim(), 4u);
  ring->Release(2);
  EXPECT_TRUE(SpscRing::Claimed(ring->AwaitSpace(2, &pos, 5'000'000)));
  EXPECT_EQ(pos, 4u);
}

// Claim() says kStampDue for exactly the claims that hold a multiple of the stamp
// interval, whatever their sizes, wherever the ring's room runs out, and after claims
// given back: the truth is the test's own arithmetic on the positions.
TEST(SpscRingTest, ClaimSaysStampDueForExactlyTheClaimsHoldingAStampPoint) {
  for (const uint32_t stamp_log2 : {0u, 2u, 5u}) {
    RingPtr ring(SpscRing::Create(3, /*capacity_log2=*/6, stamp_log2));
    ASSERT_NE(ring, nullptr);
    const uint64_t interval = uint64_t{1} << stamp_log2;
    std::mt19937 rng(stamp_log2);
    uint64_t expected_pos = 0, tail = 0, due = 0;
    for (int i = 0; i < 20000; ++i) {
      const uint32_t n = 1 + rng() % 9;
      uint64_t pos = ~uint64_t{0};
      const SpscRing::ClaimStatus status = ring->Claim(n, &pos);
      const bool room = expected_pos + n <= tail + ring->capacity();
      if (!room) {
        ASSERT_EQ(status, SpscRing::ClaimStatus::kFull) << i;
        tail = expected_pos - rng() % (expected_pos - tail + 1);  // the consumer reads
        ring->Release(tail);
        continue;
      }
      ASSERT_TRUE(SpscRing::Claimed(status)) << i;
      ASSERT_EQ(pos, expected_pos);
      const bool covers = (pos + interval - 1) / interval * interval < pos + n;
      ASSERT_EQ(status == SpscRing::ClaimStatus::kStampDue, covers)
          << "claim " << i << " of [" << pos << ", " << pos + n << ")";
      due += covers;
      if (rng() % 8 == 0) {
        ring->Unclaim();  // given back: the same positions are claimed next
      } else {
        ring->Publish(pos + n);
        expected_pos = pos + n;
      }
    }
    EXPECT_GT(due, 100u);
  }
}

// A claim made while this thread's claim is open (a signal handler, a traced call inside
// a remap's claim) is refused, by Claim() and AwaitSpace() alike, and takes nothing: the
// open claim's slots are published as written.
TEST(SpscRingTest, AClaimInsideAnOpenClaimIsRefusedAndTakesNothing) {
  RingPtr ring = MakeRing(4);
  uint64_t outer = 0, inner = 0;
  ASSERT_TRUE(SpscRing::Claimed(ring->Claim(2, &outer)));
  EXPECT_TRUE(ring->ClaimOpen());
  EXPECT_EQ(ring->Claim(1, &inner), SpscRing::ClaimStatus::kNested);
  EXPECT_EQ(ring->AwaitSpace(1, &inner, 1'000'000), SpscRing::ClaimStatus::kNested);
  EXPECT_FALSE(ring->TryClaim(1, &inner));
  EXPECT_EQ(ring->LoadClaim(), 2u);
  EXPECT_EQ(ring->producer_position(), 0u);
  ring->slot(outer) = MakeEvent(0);
  ring->slot(outer + 1) = MakeEvent(1);
  ring->Publish(outer + 2);
  EXPECT_FALSE(ring->ClaimOpen());
  ASSERT_TRUE(SpscRing::Claimed(ring->Claim(1, &inner)));
  EXPECT_EQ(inner, 2u);
  ring->Unclaim();
  EXPECT_FALSE(ring->ClaimOpen());
  EXPECT_EQ(ring->LoadClaim(), 2u);
  EXPECT_EQ(ring->Read(0).word0, 0u);
  EXPECT_EQ(ring->Read(1).word0, 1u);
}

// TryClaim(), for producers without a stamp clock, writes "no stamp" (0) at the stamp
// points it covers, over whatever the last lap left there.
TEST(SpscRingTest, TryClaimWritesNoStampAtTheStampPointsItCovers) {
  RingPtr ring(SpscRing::Create(3, /*capacity_log2=*/3, /*stamp_log2=*/1));
  ASSERT_NE(ring, nullptr);
  uint64_t pos = 0;
  for (uint64_t i = 0; i < 8; ++i) {  // the first lap, stamped by a clock
    const SpscRing::ClaimStatus status = ring->Claim(1, &pos);
    if (status == SpscRing::ClaimStatus::kStampDue) ring->WriteStamps(pos, 1, 1000 + i);
    ring->Publish(pos + 1);
  }
  EXPECT_EQ(ring->ReadStamp(0), 1000u);
  EXPECT_EQ(ring->ReadStamp(3), 1006u);
  ring->Release(8);
  for (uint64_t i = 0; i < 8; ++i) {
    ASSERT_TRUE(ring->TryClaim(1, &pos));
    ring->Publish(pos + 1);
  }
  for (uint64_t k = 4; k < 8; ++k) EXPECT_EQ(ring->ReadStamp(k), 0u) << k;
}

}  // namespace
}  // namespace memtrace
