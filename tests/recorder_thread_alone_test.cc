// Copyright 2026 The memtrace Authors.
//
// A thread recording alone records without tickets; the moment a second thread starts,
// what the first made alone stays exact: its blocks freed by the second thread, the
// first ring's catch-up ahead of a release without a ticket, and a block another thread
// makes at the same address. Threads are stepped (StepThread) to interleave their records
// in a chosen order.

#include "runtime/internal/recorder.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/event_observer.h"
#include "tests/recorder_test_support.h"

namespace memtrace {
namespace {

// Collects the tickets (`of`) the drainer hands on for releases, by address.
class ReleaseTickets : public EventObserver {
 public:
  void OnEpoch(uint32_t, int64_t, std::span<const ObservedEvent> events) noexcept override {
    for (const ObservedEvent& o : events) {
      const EventKind k = o.event.kind();
      if (k == EventKind::kFree || k == EventKind::kResize || k == EventKind::kRemap) {
        of.push_back(o.event.word2);
      }
    }
  }
  std::vector<uint64_t> of;  // drainer thread until Stop()
};

// One thread alone records without tickets (Recorder::SoleRing()): its releases are
// paired by address, exactly, are not ticket misses, and reach the capture with `of` 0.
TEST(RecorderTest, OneThreadAloneRecordsWithoutTickets) {
  ReleaseTickets observed;  // outlives the recorder, which hands it the final round
  auto recorder = Make();
  ASSERT_TRUE(recorder->SetObserver(&observed).ok());
  ASSERT_TRUE(recorder->Start().ok());
  // Blocks reused at the same addresses, resized in place, moved and freed.
  for (uint64_t round = 0; round < 50; ++round) {
    for (uint64_t i = 0; i < 100; ++i) {
      ASSERT_EQ(recorder->RecordAlloc(kHeap, 0x10000 + 64 * i, 16, 1), RecordResult::kRecorded);
    }
    for (uint64_t i = 0; i < 100; i += 2) {
      ASSERT_EQ(recorder->RecordResize(kHeap, 0x10000 + 64 * i, 32), RecordResult::kRecorded);
    }
    for (uint64_t i = 1; i < 100; i += 2) {
      ASSERT_EQ(recorder->RecordRemap(kHeap, 0x10000 + 64 * i, 0x90000 + 64 * i, 48, 1),
                RecordResult::kRecorded);
    }
    for (uint64_t i = 0; i < 100; ++i) {
      const uint64_t addr = (i % 2 == 0 ? 0x10000 : 0x90000) + 64 * i;
      ASSERT_EQ(recorder->RecordFree(kHeap, addr), RecordResult::kRecorded);
    }
  }
  ASSERT_TRUE(recorder->Stop().ok());
  const Snapshot snap = recorder->TakeSnapshot();
  EXPECT_EQ(snap.totals.live_count, 0u);
  EXPECT_EQ(snap.totals.allocated_count, 50u * 100 + 50u * 50);  // allocs and move targets
  EXPECT_EQ(snap.totals.live_bytes, 0u);
  EXPECT_EQ(snap.integrity.ticket_misses, 0u) << snap.integrity.Counters();
  EXPECT_TRUE(snap.integrity.clean()) << snap.integrity.Counters();
  ASSERT_EQ(observed.of.size(), 50u * (50 + 50 + 100));
  for (const uint64_t of : observed.of) EXPECT_EQ(of, 0u);
  // A double free is still one.
  ASSERT_TRUE(recorder->Start().ok());
  ASSERT_EQ(recorder->RecordAlloc(kHeap, 0x5000, 8, 1), RecordResult::kRecorded);
  ASSERT_EQ(recorder->RecordFree(kHeap, 0x5000), RecordResult::kRecorded);
  ASSERT_EQ(recorder->RecordFree(kHeap, 0x5000), RecordResult::kRecorded);
  ASSERT_TRUE(recorder->Flush().ok());
  EXPECT_EQ(recorder->Integrity().double_frees, 1u);
}

// The moment a second thread starts: the first thread's blocks, allocated without
// tickets, handed one at a time to the second, which frees each at once (often in the
// same epoch as its allocation). Each round is a new recorder, so each has that moment;
// the expected counts are the test's own. The first ring is applied first in every
// epoch (drainer.cc, PollRegistry), which is what orders these frees after their
// allocations.
TEST(RecorderTest, BlocksOfTheThreadAloneFreedByASecondThreadStayExact) {
  for (int round = 0; round < 20; ++round) {
    Config config;
    config.ticket_table_log2 = 12;
    auto recorder = Make(config);
    ASSERT_TRUE(recorder->Start().ok());
    constexpr uint64_t kBlocks = 2000;
    std::atomic<uint64_t> handed{0};  // blocks A allocated and handed to B so far
    std::atomic<uint64_t> freed{0};   // blocks B freed so far
    std::thread b([&] {
      for (uint64_t i = 0; i < kBlocks; ++i) {
        // Acquire: pairs with A's release store; B's free happens after A's allocation.
        while (handed.load(std::memory_order_acquire) <= i) std::this_thread::yield();
        EXPECT_EQ(recorder->RecordFree(kHeap, 0x100000 + 32 * (i % 64)),
                  RecordResult::kRecorded);
        freed.store(i + 1, std::memory_order_release);
      }
    });
    // A is this thread, recording alone until B's first free acquires B's ring. Block i
    // takes slot i % 64, once B has freed the block that had it (as an allocator would
    // hand the address out again only after its release).
    for (uint64_t i = 0; i < kBlocks; ++i) {
      // Acquire: pairs with B's release store; the reuse happens after B's free.
      while (i >= 64 && freed.load(std::memory_order_acquire) < i - 63) {
        std::this_thread::yield();
      }
      ASSERT_EQ(recorder->RecordAlloc(kHeap, 0x100000 + 32 * (i % 64), 8, 1),
                RecordResult::kRecorded);
      handed.store(i + 1, std::memory_order_release);
    }
    b.join();
    ASSERT_TRUE(recorder->Stop().ok());
    const Snapshot snap = recorder->TakeSnapshot();
    EXPECT_EQ(snap.totals.allocated_count, kBlocks);
    EXPECT_EQ(snap.totals.freed_count, kBlocks);
    EXPECT_EQ(snap.totals.live_count, 0u);
    EXPECT_EQ(snap.integrity.unknown_frees, 0u) << snap.integrity.Counters();
    EXPECT_EQ(snap.integrity.double_frees, 0u) << snap.integrity.Counters();
    EXPECT_EQ(snap.integrity.late_records, 0u) << snap.integrity.Counters();
    EXPECT_EQ(snap.integrity.order_conflicts, 0u) << snap.integrity.Counters();
  }
}

// A thread that keeps its ring and runs each step given to Run() to its end before Run()
// returns, so that a test can interleave several threads' records in an order of its
// choosing, each thread recording into its own ring throughout.
class StepThread {
 public:
  StepThread() : thread_([this] { Loop(); }) {}
  ~StepThread() {
    Run(nullptr);
    thread_.join();
  }
  StepThread(const StepThread&) = delete;
  StepThread& operator=(const StepThread&) = delete;

  // Runs `step` on this thread and waits for it; nullptr ends the thread.
  void Run(std::function<void()> step) {
    std::unique_lock<std::mutex> lock(mu_);
    step_ = std::move(step);
    stop_ = step_ == nullptr;
    pending_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return !pending_; });
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return pending_; });
      if (stop_) break;
      step_();
      pending_ = false;
      cv_.notify_all();
    }
    pending_ = false;
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> step_;
  bool pending_ = false;
  bool stop_ = false;
  std::thread thread_;
};

// Order stamps every 2^kSteppedStampLog2 records, for RecordInOneEpoch().
constexpr uint32_t kSteppedStampLog2 = 5;

constexpr uint64_t kSteppedSegment = uint64_t{1} << kSteppedStampLog2;

// Runs `steps` against a new, started recorder whose drainer sleeps a second, then
// Flush()es, until every record of the steps fell in the one epoch the Flush() closed
// (a round can come between the steps on a slow machine: ten tries). Returns that
// recorder, still started, or nullptr after adding a failure.
std::unique_ptr<Recorder> RecordInOneEpoch(const std::function<void(Recorder&)>& steps) {
  for (int attempt = 0; attempt < 10; ++attempt) {
    Config config;
    config.order_stamp_log2 = kSteppedStampLog2;
    config.drain_period = absl::Seconds(1);
    config.idle_drain_period = absl::Seconds(1);
    auto recorder = Make(config);
    if (!recorder->Start().ok()) break;
    steps(*recorder);
    if (!recorder->Flush().ok()) break;
    if (recorder->Integrity().epochs == 1) return recorder;
  }
  ADD_FAILURE() << "the steps never fell in one epoch";
  return nullptr;
}

// Just after a second thread appears, a release made without a ticket has the first ring
// applied ahead of it up to the end of its window (drainer.h), which can reach records the
// first thread made after the release. Here the first thread, A, recording alone at first
// (so without tickets), allocates P and fills its first stamp segment; B frees P (no
// ticket) and allocates Y; then, `through_third_ring`, C frees Y and allocates Z and A
// frees Z, else A frees Y itself. A's last free starts a segment stamped after B's
// records, so the merge applies A's first segment, then B's; the catch-up B's free of P
// asks for (its window still open) reaches A's last free, whose dependency leads back to
// B's allocation of Y, made after the release. Real dependencies never form such a chain;
// the catch-up must end there, past P's allocation, and the release go ahead, instead of
// applying C's free of Y before its allocation (an order conflict, an unknown free, Y left
// live) or asking for the catch-up again for ever (the direct case: Flush() never
// returned). The steps run one after another, so their real order is the one written
// here, and in one epoch (RecordInOneEpoch). Where the clock gives no stamps (clocksource
// not the TSC) the epoch is applied ring by ring instead, with no catch-up, and the same
// counts hold.
void ExpectACatchUpPastItsReleaseToStayExact(bool through_third_ring) {
  constexpr uint64_t kP = 0x200000, kY = 0x300000, kZ = 0x400000, kFiller = 0x500000;
  auto recorder = RecordInOneEpoch([&](Recorder& r) {
    StepThread a, b, c;  // a records first: the first ring
    a.Run([&] {
      EXPECT_EQ(r.RecordAlloc(kHeap, kP, 16, 1), RecordResult::kRecorded);
      for (uint64_t i = 1; i < kSteppedSegment; ++i) {
        EXPECT_EQ(r.RecordAlloc(kHeap, kFiller + 64 * i, 8, 1), RecordResult::kRecorded);
      }
    });
    b.Run([&] {
      EXPECT_EQ(r.RecordFree(kHeap, kP), RecordResult::kRecorded);
      EXPECT_EQ(r.RecordAlloc(kHeap, kY, 32, 2), RecordResult::kRecorded);
    });
    if (through_third_ring) {
      c.Run([&] {
        EXPECT_EQ(r.RecordFree(kHeap, kY), RecordResult::kRecorded);
        EXPECT_EQ(r.RecordAlloc(kHeap, kZ, 64, 3), RecordResult::kRecorded);
      });
      a.Run([&] { EXPECT_EQ(r.RecordFree(kHeap, kZ), RecordResult::kRecorded); });
    } else {
      a.Run([&] { EXPECT_EQ(r.RecordFree(kHeap, kY), RecordResult::kRecorded); });
    }
  });
  ASSERT_NE(recorder, nullptr);
  const CaptureIntegrity integrity = recorder->Integrity();
  EXPECT_EQ(integrity.order_conflicts, 0u) << integrity.Counters();
  EXPECT_EQ(integrity.unknown_frees, 0u) << integrity.Counters();
  EXPECT_TRUE(integrity.exact()) << integrity.Counters();
  const Snapshot snap = recorder->TakeSnapshot();
  const uint64_t blocks = through_third_ring ? 3 : 2;  // P, Y (, Z)
  EXPECT_EQ(snap.totals.allocated_count, kSteppedSegment - 1 + blocks);
  EXPECT_EQ(snap.totals.freed_count, blocks);
  EXPECT_EQ(snap.totals.live_count, kSteppedSegment - 1);  // the fillers
  EXPECT_EQ(snap.totals.live_bytes, (kSteppedSegment - 1) * 8);
  ASSERT_TRUE(recorder->Stop().ok());
}

TEST(RecorderTest, AFirstRingCatchUpEndsAtARecordThatNeedsTheReleasesRing) {
  ExpectACatchUpPastItsReleaseToStayExact(/*through_third_ring=*/false);
}

TEST(RecorderTest, AFirstRingCatchUpEndsWhereItsDependenciesLeadBackToTheReleasesRing) {
  ExpectACatchUpPastItsReleaseToStayExact(/*through_third_ring=*/true);
}

// Just after a second thread appears, a block another thread makes at an address waits
// for the first ring too, not only a release without a ticket. A, recording alone (so
// without tickets), fills its first stamp segment and allocates X at the end of its
// second; D starts; B frees X (no ticket); D allocates X again (a ticket); A, much later,
// records once more, which stamps the end of its second segment. By the stamps, A's X
// lies late in that long segment, after D's records, so the merge took D's segment,
// both of its records, before A's X: the ledger set D's block aside behind A's, and B's
// free, taking the oldest block at X as a release without a ticket does, took D's. X was
// left live with A's size and site, and no counter said so. The drainer must bring the
// first ring up to D's allocation first. (Without stamps: as in
// ExpectACatchUpPastItsReleaseToStayExact.)
TEST(RecorderTest, ABlockAnotherThreadMakesAtAnAddressIsAppliedAfterTheFirstThreadsOne) {
  constexpr uint64_t kX = 0x200000, kFiller = 0x500000;
  auto recorder = RecordInOneEpoch([&](Recorder& r) {
    StepThread a, b, d;  // a records first: the first ring
    a.Run([&] {
      for (uint64_t i = 0; i + 1 < 2 * kSteppedSegment; ++i) {
        EXPECT_EQ(r.RecordAlloc(kHeap, kFiller + 64 * i, 8, 1), RecordResult::kRecorded);
      }
      EXPECT_EQ(r.RecordAlloc(kHeap, kX, 16, 1), RecordResult::kRecorded);
    });
    d.Run([&] {
      EXPECT_EQ(r.RecordAlloc(kHeap, kFiller + 0x10000, 8, 4), RecordResult::kRecorded);
    });
    b.Run([&] { EXPECT_EQ(r.RecordFree(kHeap, kX), RecordResult::kRecorded); });
    d.Run([&] { EXPECT_EQ(r.RecordAlloc(kHeap, kX, 48, 5), RecordResult::kRecorded); });
    // Long against the steps before: A's second segment ends long after D's records.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    a.Run([&] {
      EXPECT_EQ(r.RecordAlloc(kHeap, kFiller + 0x20000, 8, 1), RecordResult::kRecorded);
    });
  });
  ASSERT_NE(recorder, nullptr);
  const CaptureIntegrity integrity = recorder->Integrity();
  EXPECT_TRUE(integrity.exact()) << integrity.Counters();
  recorder->Inspect([&](const AllocationLedger& ledger, const CaptureIntegrity&) {
    const std::vector<AllocationRecord> live = ledger.LiveBlocks();
    // A's fillers (2 * kSteppedSegment - 1) and last record, D's filler and X.
    EXPECT_EQ(live.size(), 2 * kSteppedSegment + 2);
    const auto x = std::find_if(live.begin(), live.end(),
                                [&](const AllocationRecord& b) { return b.address == kX; });
    ASSERT_NE(x, live.end());
    EXPECT_EQ(x->size, 48u);
    EXPECT_EQ(x->site, 5u);
  });
  ASSERT_TRUE(recorder->Stop().ok());
}

}  // namespace
}  // namespace memtrace
