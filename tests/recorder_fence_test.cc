// Copyright 2026 The memtrace Authors.
//
// How the recorder's epochs are fenced: one ring alone skips the heavy fence
// (membarrier) until a second thread records, FenceMode::kSeqCst never uses membarrier
// and fences every epoch, and a fence mode out of range is a configuration error.

#include "runtime/internal/recorder.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include <gtest/gtest.h>

#include "tests/recorder_test_support.h"

namespace memtrace {
namespace {

// While one thread records, epochs close without the membarrier (drainer.h, step 1);
// once a second thread records, every epoch fences again. What is applied is exact
// throughout: the expected counts come from the test's own tally of what it recorded,
// and Flush() from the recording thread sees all of its records even when the epochs
// around it were not fenced.
TEST(RecorderTest, OneRingSkipsTheHeavyFenceUntilASecondThreadRecords) {
  auto recorder = Make();
  ASSERT_TRUE(recorder->Start().ok());
  if (!recorder->Integrity().uses_membarrier) GTEST_SKIP() << "no membarrier() here";
  constexpr uint64_t kKept = 1000;             // allocated by A, freed later by B
  constexpr uint64_t kKeptBase = 1ull << 40;   // their addresses
  constexpr uint64_t kChurnBase = 2ull << 40;  // A's own alloc/free pairs
  std::atomic<int> phase{0};                   // 0: A alone, 1: B frees, 2: stop
  std::atomic<uint64_t> churn_pairs{0};
  std::atomic<bool> a_failed{false};
  std::thread a([&] {
    for (uint64_t k = 0; k < kKept; ++k) {
      if (recorder->RecordAlloc(kHeap, kKeptBase + 16 * k, 8, 1) != RecordResult::kRecorded) {
        a_failed = true;
      }
    }
    uint64_t i = 0;
    while (phase.load() != 2) {
      const uint64_t addr = kChurnBase + 16 * (i % 4096);
      if (recorder->RecordAlloc(kHeap, addr, 4, 2) != RecordResult::kRecorded ||
          recorder->RecordFree(kHeap, addr) != RecordResult::kRecorded) {
        a_failed = true;
      }
      ++i;
      churn_pairs.store(i);
      // Flush() from the only producer: everything it recorded is applied on return.
      if (i % 20000 == 0 && phase.load() == 0) {
        EXPECT_TRUE(recorder->Flush().ok());
        uint64_t live = 0, freed = 0;
        recorder->Inspect([&](const AllocationLedger& ledger, const CaptureIntegrity&) {
          live = ledger.totals().live_count;
          freed = ledger.totals().freed_count;
        });
        // Only if B had not started yet when the ledger was read: phase is still 0 after
        // the read, so B (started after phase = 1) had recorded nothing the drainer could
        // have applied before it. (Checked before the read alone, B's first frees could
        // land in between, which TSan's timing made happen.)
        if (phase.load() == 0) {
          EXPECT_EQ(live, kKept);
          EXPECT_EQ(freed, i);
        }
      }
    }
  });
  // A alone: epochs go by, most of them unfenced. (A progress condition, not a timing
  // one: the deadline only keeps a broken build from hanging.)
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  CaptureIntegrity alone;
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    alone = recorder->Integrity();
  } while (alone.epochs - alone.fenced_epochs < 20 &&
           std::chrono::steady_clock::now() < deadline);
  EXPECT_GE(alone.epochs - alone.fenced_epochs, 20u) << alone.Counters();
  // B frees A's kept blocks: releases whose tickets name A's ring.
  phase = 1;
  std::thread b([&] {
    for (uint64_t k = 0; k < kKept; ++k) {
      EXPECT_EQ(recorder->RecordFree(kHeap, kKeptBase + 16 * k), RecordResult::kRecorded);
    }
  });
  b.join();
  // While B's ring is known (until it is retired and drained) every epoch fences; the
  // Flush()'s own round fences in any case.
  ASSERT_TRUE(recorder->Flush().ok());
  const CaptureIntegrity two = recorder->Integrity();
  // Once B's ring is reclaimed the drainer knows one ring again and every thread that
  // acquired one is registered, so epochs go unfenced again while A records (A keeps
  // tickets from now on: Recorder::SoleRing() counts acquisitions, not live rings).
  CaptureIntegrity again;
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    again = recorder->Integrity();
  } while (again.epochs - again.fenced_epochs < two.epochs - two.fenced_epochs + 20 &&
           std::chrono::steady_clock::now() < deadline);
  EXPECT_GE(again.epochs - again.fenced_epochs, two.epochs - two.fenced_epochs + 20)
      << again.Counters();
  phase = 2;
  a.join();
  ASSERT_TRUE(recorder->Flush().ok());
  EXPECT_FALSE(a_failed.load());
  const Snapshot snap = recorder->TakeSnapshot();
  const uint64_t pairs = churn_pairs.load();
  EXPECT_EQ(snap.totals.live_count, 0u);
  EXPECT_EQ(snap.totals.allocated_count, kKept + pairs);
  EXPECT_EQ(snap.totals.freed_count, kKept + pairs);
  EXPECT_GT(two.fenced_epochs, alone.fenced_epochs);  // B's rounds fenced
  EXPECT_TRUE(snap.integrity.clean()) << snap.integrity.Counters();
  EXPECT_EQ(snap.integrity.late_records, 0u);
}

// Config::fence = kSeqCst: no membarrier() whatever the kernel has, so every epoch is
// closed with the fences on both sides, even while one thread records (the one-ring
// shortcut above is for membarrier() only). Counts stay exact; the expected values are
// the test's own tally.
TEST(RecorderTest, SeqCstFenceNeverUsesMembarrierAndFencesEveryEpoch) {
  Config config;
  config.fence = FenceMode::kSeqCst;
  auto recorder = Make(config);
  ASSERT_TRUE(recorder->Start().ok());
  EXPECT_FALSE(recorder->Integrity().uses_membarrier);
  constexpr uint64_t kBase = 3ull << 40;
  uint64_t pairs = 0;
  // A progress condition, not a timing one: the deadline only keeps a broken build from
  // hanging.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (recorder->Integrity().epochs < 20 && std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < 1000; ++i, ++pairs) {
      const uint64_t addr = kBase + 16 * (pairs % 512);
      ASSERT_EQ(recorder->RecordAlloc(kHeap, addr, 8, 1), RecordResult::kRecorded);
      ASSERT_EQ(recorder->RecordFree(kHeap, addr), RecordResult::kRecorded);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(recorder->Flush().ok());
  const Snapshot snap = recorder->TakeSnapshot();
  EXPECT_GE(snap.integrity.epochs, 20u) << snap.integrity.Counters();
  EXPECT_EQ(snap.integrity.fenced_epochs, snap.integrity.epochs) << snap.integrity.Counters();
  EXPECT_FALSE(snap.integrity.uses_membarrier);
  EXPECT_EQ(snap.integrity.fence(), std::string("seq_cst"));
  EXPECT_EQ(snap.totals.allocated_count, pairs);
  EXPECT_EQ(snap.totals.freed_count, pairs);
  EXPECT_EQ(snap.totals.live_count, 0u);
  EXPECT_TRUE(snap.integrity.clean()) << snap.integrity.Counters();
}

TEST(RecorderTest, AFenceModeOutOfRangeIsAConfigError) {
  Config config;
  config.fence = static_cast<FenceMode>(7);
  const auto r = Recorder::Create(config);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("Config.fence is 7"), std::string::npos)
      << r.status();
}

}  // namespace
}  // namespace memtrace
