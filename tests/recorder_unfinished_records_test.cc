// Copyright 2026 The memtrace Authors.
//
// Records whose claim is still open: a record begun inside a remap's open claim is
// refused rather than written over it, and a record its thread never finishes (the thread
// stopped for good inside it) holds up no Flush() and no snapshot, is counted lost when
// its ring goes to the next thread, and cannot make Stop() wait for ever.

#include "runtime/internal/recorder.h"

#include <chrono>
#include <cstdint>
#include <future>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/recorder_test_support.h"

namespace memtrace {
namespace {

// One record at a time per thread: a record begun while a remap's claim is open (a traced
// backing allocator, a census update, a signal handler) is refused and counted, and the
// remap's own records are applied whole. Before, the nested record took the remap's slots
// and one of the two was lost without a word.
TEST(RecorderTest, ARecordInsideAnOpenRemapIsRefusedNotWrittenOverIt) {
  auto recorder = Make();
  ASSERT_TRUE(recorder->Start().ok());
  ASSERT_EQ(recorder->RecordAlloc(kHeap, 0x1000, 8, 0), RecordResult::kRecorded);
  const Recorder::RemapClaim rc = recorder->BeginRemap(kHeap, 0x1000);
  ASSERT_EQ(rc.result(), RecordResult::kRecorded);
  EXPECT_EQ(recorder->RecordAlloc(kHeap, 0x5000, 16, 0), RecordResult::kFailed);
  EXPECT_EQ(recorder->RecordFree(kHeap, 0x6000), RecordResult::kFailed);
  recorder->CommitRemap(rc, 0x2000, 32, 0);
  ASSERT_TRUE(recorder->Flush().ok());
  recorder->Inspect([](const AllocationLedger& ledger, const CaptureIntegrity& integrity) {
    const std::vector<AllocationRecord> live = ledger.LiveBlocks();
    ASSERT_EQ(live.size(), 1u);
    EXPECT_EQ(live[0].address, 0x2000u);
    EXPECT_EQ(live[0].size, 32u);
    EXPECT_EQ(integrity.nested_records, 2u);
    EXPECT_EQ(integrity.records_failed, 1u);
    EXPECT_EQ(integrity.events_dropped, 1u);
    EXPECT_EQ(integrity.events_applied, 3u);
    EXPECT_FALSE(integrity.complete());
  });
  ASSERT_TRUE(recorder->Stop().ok());
}

// A thread that stops for good in the middle of a record (siglongjmp or pthread_exit out
// of a signal handler that interrupted it) holds up no Flush() and no snapshot: a round
// waits a bounded time for the record, without the state lock, counts the stall, and
// goes on. Before, the round spun holding the lock, and every Flush(), snapshot and fork
// handler waited for ever.
TEST(RecorderTest, ARecordNeverFinishedHoldsUpNoFlushAndNoSnapshot) {
  auto recorder = Make();
  ASSERT_TRUE(recorder->Start().ok());
  ASSERT_EQ(recorder->RecordAlloc(kHeap, 0x1000, 8, 0), RecordResult::kRecorded);
  // A second thread records too, so that rounds fence and wait for claims.
  std::thread([&] {
    EXPECT_EQ(recorder->RecordAlloc(kHeap, 0x7000, 8, 0), RecordResult::kRecorded);
  }).join();
  const Recorder::RemapClaim unfinished = recorder->BeginRemap(kHeap, 0x1000);
  bool hung = false;
  for (int i = 0; i < 3 && !hung; ++i) {
    auto flushed = std::async(std::launch::async, [&] { return recorder->Flush(); });
    auto inspected = std::async(std::launch::async, [&] {
      uint64_t live = 0;
      recorder->Inspect([&](const AllocationLedger& ledger, const CaptureIntegrity&) {
        live = ledger.totals().live_count;
      });
      return live;
    });
    if (flushed.wait_for(std::chrono::seconds(20)) != std::future_status::ready ||
        inspected.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
      ADD_FAILURE() << "a round waits for ever for the unfinished record";
      hung = true;
      recorder->AbortRemap(unfinished);  // lets the round go on
    }
  }
  if (!hung) recorder->AbortRemap(unfinished);
  ASSERT_TRUE(recorder->Stop().ok());
  const CaptureIntegrity integrity = recorder->Integrity();
  EXPECT_GE(integrity.stalled_claims, 1u) << integrity.Counters();
  EXPECT_EQ(integrity.events_applied, 2u);
  EXPECT_TRUE(integrity.complete()) << "the claim was given back: nothing was lost";
}

// A thread that ends inside a record (here: returns with a remap's claim open, as a
// pthread_exit out of a signal handler would) leaves its ring with a claim nobody will
// publish. When the ring goes to the next thread, those records are counted lost and the
// next thread records as any other: none of its records is refused as nested in the
// dead thread's claim.
TEST(RecorderTest, ARingLeftInsideARecordIsReusedAndItsUnfinishedRecordsCounted) {
  Config config;
  config.ring_capacity_log2 = 6;
  auto recorder = Make(config);
  ASSERT_TRUE(recorder->Start().ok());
  // A second thread alive throughout, so that rings are not in the one-ring mode.
  ASSERT_EQ(recorder->RecordAlloc(kHeap, 0x1000, 8, 0), RecordResult::kRecorded);
  std::thread([&] {
    ASSERT_EQ(recorder->RecordAlloc(kHeap, 0x2000, 16, 0), RecordResult::kRecorded);
    const Recorder::RemapClaim unfinished = recorder->BeginRemap(kHeap, 0x2000);
    static_cast<void>(unfinished);  // never committed: the thread is gone
  }).join();
  const uint64_t rings_before = recorder->Integrity().rings;
  // Until the drainer has taken the ring back (it waits for the claim a bounded time).
  ASSERT_TRUE(recorder->Flush().ok());
  ASSERT_TRUE(recorder->Flush().ok());
  std::thread([&] {
    for (uint64_t i = 0; i < 200; ++i) {  // three laps of the 64-slot ring
      ASSERT_EQ(recorder->RecordAlloc(kHeap, 0x10000 + 64 * i, 32, 0), RecordResult::kRecorded)
          << i;
      ASSERT_EQ(recorder->RecordFree(kHeap, 0x10000 + 64 * i), RecordResult::kRecorded) << i;
    }
  }).join();
  ASSERT_TRUE(recorder->Flush().ok());
  const CaptureIntegrity integrity = recorder->Integrity();
  EXPECT_EQ(integrity.rings, rings_before) << "the ring was reused";
  EXPECT_EQ(integrity.nested_records, 0u) << integrity.Counters();
  EXPECT_EQ(integrity.events_dropped, 2u) << integrity.Counters();
  EXPECT_EQ(integrity.events_applied, 2u + 400u) << integrity.Counters();
  EXPECT_EQ(recorder->TakeSnapshot().totals.live_count, 2u);
  ASSERT_TRUE(recorder->Stop().ok());
}

// Stop() drains everything published, but a record claimed and never published (its
// thread stopped for good in the middle of it: _exit() from a signal handler) cannot hold
// the stop forever. The final round waits a bounded time, then counts it dropped.
TEST(RecorderTest, StopDoesNotWaitForeverForARecordNeverFinished) {
  auto recorder = Make();
  ASSERT_TRUE(recorder->Start().ok());
  ASSERT_EQ(recorder->RecordAlloc(kHeap, 0x1000, 8, 0), RecordResult::kRecorded);
  // Two records claimed (a move's two halves), never committed.
  const Recorder::RemapClaim unfinished = recorder->BeginRemap(kHeap, 0x1000);
  static_cast<void>(unfinished);
  ASSERT_TRUE(recorder->Stop().ok());
  const CaptureIntegrity integrity = recorder->Integrity();
  EXPECT_EQ(integrity.events_applied, 1u);
  EXPECT_EQ(integrity.events_dropped, 2u);
  EXPECT_FALSE(integrity.complete());
}

// The same when a round that began before Stop() is already waiting for that record: it
// stops waiting at once, without waiting out its bound (stalled_claims stays 0), and the
// final round waits its bounded time. A round that waited for ever here once cost a
// program that called _exit() from a SIGTERM handler, which had interrupted its record,
// the whole end of its capture (preload_exit_and_signals_test's
// UnderscoreExitFromASignalHandler...).
TEST(RecorderTest, StopDoesNotWaitForeverWhileARoundWaitsForARecordNeverFinished) {
  auto recorder = Make();  // rounds every drain_period (2 ms)
  ASSERT_TRUE(recorder->Start().ok());
  ASSERT_EQ(recorder->RecordAlloc(kHeap, 0x1000, 8, 0), RecordResult::kRecorded);
  const uint64_t waits_before = recorder->claim_waits();
  const Recorder::RemapClaim unfinished = recorder->BeginRemap(kHeap, 0x1000);
  // Until a round waits for the two claimed records (hang guard only).
  for (int i = 0; i < 20000 && recorder->claim_waits() == waits_before; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  ASSERT_GT(recorder->claim_waits(), waits_before) << "no round waited for the record";
  auto stopped = std::async(std::launch::async, [&] { return recorder->Stop(); });
  if (stopped.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "Stop() waits for a round that waits for the unfinished record";
    recorder->AbortRemap(unfinished);  // lets the round, and then Stop(), finish
  }
  ASSERT_TRUE(stopped.get().ok());
  const CaptureIntegrity integrity = recorder->Integrity();
  EXPECT_EQ(integrity.events_applied, 1u);
  EXPECT_EQ(integrity.events_dropped, 2u);
  EXPECT_EQ(integrity.stalled_claims, 0u) << "the waiting round ran out its bound";
}

}  // namespace
}  // namespace memtrace
