// Copyright 2026 The memtrace Authors.
//
// The recorder's life cycle: its configuration's errors, Start() and Stop() (twice, before
// and after records, again to continue the same capture, on destruction), the drainer's
// sleep and its wake by a quarter-full ring, Flush() from any thread but the drainer's,
// stacks each sent about once, resizes, the memory parts, sizes past 48 bits, and rings
// that exiting threads retire or keep (frees in thread_local destructors); a large heap
// stays exact while the drainer prefetches.

#include "runtime/internal/recorder.h"

#include <pthread.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "runtime/event_observer.h"
#include "runtime/internal/memtrace_thread.h"
#include "tests/recorder_test_support.h"

namespace memtrace {
namespace {

TEST(RecorderTest, ConfigErrorsSayWhatAndHowToFix) {
  Config config;
  config.ring_capacity_log2 = 40;
  const auto r = Recorder::Create(config);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("ring_capacity_log2 is 40"), std::string::npos);
  EXPECT_NE(r.status().message().find("default is 14"), std::string::npos);
  config = Config{};
  config.ticket_table_log2 = 40;
  const auto tickets = Recorder::Create(config);
  ASSERT_FALSE(tickets.ok());
  // The default named is the real one.
  EXPECT_NE(tickets.status().message().find(
                absl::StrCat("the default is ", Config{}.ticket_table_log2)),
            std::string::npos)
      << tickets.status();

  config = Config{};
  config.drain_period = absl::Nanoseconds(1);
  EXPECT_FALSE(Recorder::Create(config).ok());
  config = Config{};
  config.idle_drain_period = absl::Seconds(2);
  const auto idle = Recorder::Create(config);
  ASSERT_FALSE(idle.ok());
  EXPECT_NE(idle.status().message().find("idle_drain_period is 2s"), std::string::npos);
  config = Config{};
  config.request_site_capacity_max = 0;
  EXPECT_FALSE(Recorder::Create(config).ok());
  config = Config{};
  config.drain_slice_records = 0;
  const auto slice = Recorder::Create(config);
  ASSERT_FALSE(slice.ok());
  EXPECT_NE(slice.status().message().find("drain_slice_records is 0"), std::string::npos);
}

TEST(RecorderTest, TheDrainerSleepsLongerOnlyWhileQuiet) {
  const absl::Duration period = absl::Milliseconds(1);
  const absl::Duration idle = absl::Milliseconds(16);
  absl::Duration sleep = period;
  // Quiet rounds: 2, 4, 8, 16 ms, then it stays at 16.
  const absl::Duration doubling[] = {absl::Milliseconds(2), absl::Milliseconds(4),
                                     absl::Milliseconds(8), absl::Milliseconds(16),
                                     absl::Milliseconds(16)};
  for (const absl::Duration want : doubling) {
    sleep = Drainer::NextSleep(sleep, Drainer::kQuietRecords - 1, period, idle);
    EXPECT_EQ(sleep, want);
  }
  // One busy round brings it straight back.
  EXPECT_EQ(Drainer::NextSleep(sleep, Drainer::kQuietRecords, period, idle), period);
  // Never below the period, whatever the idle bound says (a fixed period: idle <= period).
  EXPECT_EQ(Drainer::NextSleep(period, 0, period, absl::ZeroDuration()), period);
  const absl::Duration slow = absl::Seconds(1);
  EXPECT_EQ(Drainer::NextSleep(slow, 0, slow, idle), slow);
}

// A burst while the drainer sleeps: the thread whose ring passes a quarter full wakes it,
// so the records up to the crossing are applied long before the drainer's own period
// (1 s) is up. Records published after that round started wait for the next wake or
// period (the next quarter is counted from the new tail), so only the first 257 are
// sure to be applied by the wake; Flush() then applies the rest.
TEST(RecorderTest, AQuarterFullRingWakesASleepingDrainer) {
  Config config;
  config.ring_capacity_log2 = 10;  // 1,024 records; the wake comes past 256
  config.drain_period = absl::Seconds(1);
  config.idle_drain_period = absl::Seconds(1);
  auto recorder = Make(config);
  const auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(recorder->Start().ok());
  // Let the drainer go to sleep: its first round is due a second after Start().
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  constexpr uint64_t kRecords = 300;
  for (uint64_t i = 0; i < kRecords; ++i) {
    ASSERT_EQ(recorder->RecordAlloc(kHeap, 0x10000 + 64 * i, 64, 0x401000),
              RecordResult::kRecorded);
  }
  constexpr uint64_t kUpToTheCrossing = 1024 / 4 + 1;  // the record that raised it
  const auto due = started + std::chrono::milliseconds(1000);
  while (recorder->Integrity().events_applied < kUpToTheCrossing &&
         std::chrono::steady_clock::now() < due) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const auto applied_at = std::chrono::steady_clock::now();
  EXPECT_GE(recorder->Integrity().events_applied, kUpToTheCrossing);
  EXPECT_LT(applied_at, due) << "applied only when the drainer's period was up";
  ASSERT_TRUE(recorder->Flush().ok());
  EXPECT_EQ(recorder->Integrity().events_applied, kRecords);
  EXPECT_TRUE(recorder->Stop().ok());
}

TEST(RecorderTest, RecordsBeforeStartAreNotRecordingAndCounted) {
  auto recorder = Make();
  EXPECT_EQ(recorder->RecordAlloc(kHeap, 0x1000, 8, 0), RecordResult::kNotRecording);
  EXPECT_EQ(recorder->RecordFree(kHeap, 0x1000), RecordResult::kNotRecording);
  EXPECT_EQ(recorder->Integrity().not_recording, 2u);
  EXPECT_EQ(recorder->Integrity().events_recorded, 0u);
}

TEST(RecorderTest, StopTwiceAndStartTwiceAreClearErrors) {
  auto recorder = Make();
  EXPECT_EQ(recorder->Stop().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(recorder->Start().ok());
  const absl::Status again = recorder->Start();
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(again.message().find("already running"), std::string::npos);
  ASSERT_TRUE(recorder->Stop().ok());
  const absl::Status twice = recorder->Stop();
  EXPECT_EQ(twice.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(twice.message().find("stopped twice"), std::string::npos);
}

TEST(RecorderTest, StopAppliesEverythingRecordedBeforeIt) {
  auto recorder = Make();
  ASSERT_TRUE(recorder->Start().ok());
  for (uint64_t i = 1; i <= 1000; ++i) {
    ASSERT_EQ(recorder->RecordAlloc(kHeap, i * 16, 10, 7), RecordResult::kRecorded);
  }
  ASSERT_TRUE(recorder->Stop().ok());
  // After Stop, records are refused and counted, and the ledger holds everything.
  EXPECT_EQ(recorder->RecordAlloc(kHeap, 0x99990, 10, 7), RecordResult::kNotRecording);
  recorder->Inspect([](const AllocationLedger& ledger, const CaptureIntegrity& integrity) {
    EXPECT_EQ(ledger.totals().live_count, 1000u);
    EXPECT_EQ(ledger.totals().live_bytes, 10000u);
    EXPECT_EQ(integrity.events_applied, 1000u);
    EXPECT_EQ(integrity.events_recorded, 1000u);
    EXPECT_EQ(integrity.not_recording, 1u);
  });
}

// A thread that cycles through many call stacks sends each stack's frames about once,
// not once per use: 384 stacks (six times what a 64-entry cache held) of 8 frames, 4
// records each, used 10 times round. Each use must return the stack's hash, the same
// every time.
TEST(RecorderTest, ManyStacksInTurnAreEachSentAboutOnce) {
  auto recorder = Make();
  ASSERT_TRUE(recorder->Start().ok());
  constexpr uint64_t kStacks = 384;
  constexpr uint32_t kDepth = 8;
  constexpr uint64_t kRounds = 10;
  std::vector<uint64_t> site_of(kStacks, 0);
  uint64_t block = 0;
  for (uint64_t round = 0; round < kRounds; ++round) {
    for (uint64_t s = 0; s < kStacks; ++s) {
      uint64_t frames[kDepth];
      for (uint32_t f = 0; f < kDepth; ++f) frames[f] = 0x400000 + s * 0x1000 + f * 16;
      const uint64_t site = recorder->StackSite(frames, kDepth);
      EXPECT_NE(site & kStackHashBit, 0u) << "stack " << s << " fell back to its caller";
      if (round == 0) site_of[s] = site;
      EXPECT_EQ(site, site_of[s]) << "stack " << s << ", round " << round;
      const uint64_t address = 0x10000000 + 16 * ++block;
      ASSERT_EQ(recorder->RecordAlloc(kHeap, address, 8, site), RecordResult::kRecorded);
      ASSERT_EQ(recorder->RecordFree(kHeap, address), RecordResult::kRecorded);
    }
  }
  ASSERT_TRUE(recorder->Flush().ok());
  recorder->Inspect([&](const AllocationLedger&, const CaptureIntegrity& integrity) {
    const uint64_t memory_records = 2 * kStacks * kRounds;
    ASSERT_GE(integrity.events_recorded, memory_records);
    const uint64_t stack_records = integrity.events_recorded - memory_records;
    // Once each: kStacks * 4. A cache set that more stacks share than it holds sends
    // those again each round; allow as many again, far below a send per use (15,360).
    EXPECT_GE(stack_records, kStacks * (kDepth / 2));
    EXPECT_LE(stack_records, 2 * kStacks * (kDepth / 2));
  });
}

// A remap claimed before the call that did not move the block (realloc in place) is
// recorded as a resize in the claim's first slot; the second goes back, so the thread's
// next record follows it directly, and the resize is the block's ticket for a release on
// another thread.
TEST(RecorderTest, CommitResizeRecordsTheResizeInTheClaim) {
  auto recorder = Make();
  ASSERT_TRUE(recorder->Start().ok());
  // Another thread records first, so this one is not alone and keeps tickets
  // (Recorder::SoleRing()).
  std::thread([&] {
    EXPECT_EQ(recorder->RecordAlloc(kHeap, 0x9000, 1, 7), RecordResult::kRecorded);
  }).join();
  ASSERT_EQ(recorder->RecordAlloc(kHeap, 0x1000, 10, 7), RecordResult::kRecorded);
  const Recorder::RemapClaim claim = recorder->BeginRemap(kHeap, 0x1000);
  ASSERT_EQ(claim.result(), RecordResult::kRecorded);
  recorder->CommitResize(claim, 30);
  // The drainer waits for a claim beyond the head: this returns only if it went back.
  ASSERT_TRUE(recorder->Flush().ok());
  ASSERT_EQ(recorder->RecordAlloc(kHeap, 0x2000, 5, 7), RecordResult::kRecorded);
  ASSERT_TRUE(recorder->Flush().ok());
  recorder->Inspect([](const AllocationLedger& ledger, const CaptureIntegrity& integrity) {
    EXPECT_EQ(ledger.totals().live_count, 3u);
    EXPECT_EQ(ledger.totals().live_bytes, 36u);
    EXPECT_EQ(integrity.events_recorded, 4u);
    EXPECT_EQ(integrity.events_applied, 4u);
  });
  std::thread([&] {
    EXPECT_EQ(recorder->RecordFree(kHeap, 0x1000), RecordResult::kRecorded);
  }).join();
  ASSERT_TRUE(recorder->Stop().ok());
  recorder->Inspect([](const AllocationLedger& ledger, const CaptureIntegrity& integrity) {
    EXPECT_EQ(ledger.totals().live_count, 2u);
    EXPECT_EQ(ledger.totals().live_bytes, 6u);
    EXPECT_EQ(integrity.ticket_misses, 0u) << "the free carried the resize's ticket";
    EXPECT_EQ(integrity.unknown_frees, 0u);
    EXPECT_TRUE(integrity.complete());
  });
  // Stopped: nothing is recorded, and the block keeps its ticket in the table.
  const Recorder::RemapClaim late = recorder->BeginRemap(kHeap, 0x2000);
  EXPECT_EQ(late.result(), RecordResult::kNotRecording);
  recorder->CommitResize(late, 50);
}

TEST(RecorderTest, MemoryPartsSumToTheTotalAndGrowWhereTheyShould) {
  Config config;
  config.ring_capacity_log2 = 12;
  config.ticket_table_log2 = 10;
  auto recorder = Make(config);
  ASSERT_TRUE(recorder->Start().ok());
  // 10 distinct sites, then 100 more, each with 50 live blocks.
  uint64_t address = 0x100000;
  auto record_sites = [&](uint64_t first, uint64_t last) {
    for (uint64_t site = first; site <= last; ++site) {
      for (int i = 0; i < 50; ++i, address += 64) {
        ASSERT_EQ(recorder->RecordAlloc(kHeap, address, 48, site), RecordResult::kRecorded);
      }
    }
    ASSERT_TRUE(recorder->Flush().ok());
  };
  record_sites(1, 10);
  const MemtraceMemory before = recorder->memory();
  record_sites(11, 110);
  const MemtraceMemory after = recorder->memory();
  ASSERT_TRUE(recorder->Stop().ok());

  EXPECT_EQ(after.total(), recorder->memory_bytes());
  // One thread recorded: one ring of 2^12 slots of 32 bytes, at least.
  EXPECT_GE(after.rings, (uint64_t{1} << 12) * sizeof(Event));
  EXPECT_EQ(after.rings, before.rings) << "no new thread, no new ring";
  // The ticket table is mapped once, 16 bytes a slot.
  EXPECT_EQ(after.tickets, (uint64_t{1} << 10) * 16);
  EXPECT_EQ(after.tickets, before.tickets);
  // The site table grows by the same amount for each new site; the ledger with the
  // live set (5,500 blocks now against 500).
  EXPECT_GT(before.sites, 0u);
  EXPECT_EQ(after.sites, before.sites * 11) << "110 sites against 10";
  EXPECT_GT(after.ledger, before.ledger);
  const Snapshot snap = recorder->TakeSnapshot();
  EXPECT_EQ(snap.memtrace_bytes, snap.memtrace_memory.total());
  EXPECT_EQ(snap.memtrace_memory.sites, after.sites);
}

TEST(RecorderTest, RestartContinuesTheSameCapture) {
  auto recorder = Make();
  ASSERT_TRUE(recorder->Start().ok());
  ASSERT_EQ(recorder->RecordAlloc(kHeap, 0x1000, 10, 7), RecordResult::kRecorded);
  ASSERT_TRUE(recorder->Stop().ok());
  ASSERT_TRUE(recorder->Start().ok());
  ASSERT_EQ(recorder->RecordFree(kHeap, 0x1000), RecordResult::kRecorded);
  ASSERT_TRUE(recorder->Flush().ok());
  const Snapshot snap = recorder->TakeSnapshot();
  EXPECT_EQ(snap.totals.live_count, 0u);
  EXPECT_EQ(snap.totals.freed_count, 1u);
  EXPECT_TRUE(snap.integrity.clean()) << snap.integrity.Counters();
}

// With three threads applying records (Config::tracer_threads), a stop ends the appliers
// with the drainer, a start starts them again, and the counts are exact across it: enough
// records that batches are shared (ShardedApply::kSoloRecords), moves among them.
TEST(RecorderTest, RestartWithAppliersEndsAndStartsThemAndCountsStayExact) {
  Config config;
  config.tracer_threads = 3;
  auto recorder = Make(config);
  const int before = RunningMemtraceThreads();
  ASSERT_TRUE(recorder->Start().ok());
  EXPECT_EQ(RunningMemtraceThreads(), before + 3) << "the drainer and two appliers";
  constexpr uint64_t kBlocks = 20000;
  for (int round = 0; round < 2; ++round) {
    for (uint64_t i = 0; i < kBlocks; ++i) {
      ASSERT_EQ(recorder->RecordAlloc(kHeap, 0x100000 + 64 * i, 10, 7), RecordResult::kRecorded);
    }
    for (uint64_t i = 0; i < kBlocks; i += 2) {  // half of them moved
      ASSERT_EQ(recorder->RecordRemap(kHeap, 0x100000 + 64 * i, 0x10000000 + 64 * i, 30, 8),
                RecordResult::kRecorded);
    }
    ASSERT_TRUE(recorder->Stop().ok());
    EXPECT_EQ(RunningMemtraceThreads(), before) << "a stopped recorder runs no thread";
    ASSERT_TRUE(recorder->Start().ok());
    for (uint64_t i = 0; i < kBlocks; ++i) {
      const uint64_t at = i % 2 == 0 ? 0x10000000 + 64 * i : 0x100000 + 64 * i;
      ASSERT_EQ(recorder->RecordFree(kHeap, at), RecordResult::kRecorded);
    }
  }
  ASSERT_TRUE(recorder->Flush().ok());
  const Snapshot snap = recorder->TakeSnapshot();
  EXPECT_EQ(snap.totals.live_count, 0u);
  EXPECT_EQ(snap.totals.allocated_count, 2 * (kBlocks + kBlocks / 2));
  EXPECT_EQ(snap.totals.allocated_bytes, 2 * (kBlocks * 10 + kBlocks / 2 * 30));
  EXPECT_EQ(snap.totals.freed_count, 2 * (kBlocks + kBlocks / 2));
  EXPECT_TRUE(snap.integrity.clean()) << snap.integrity.Counters();
  // The appliers' CPU time, apart from the drainer's: they shared batches of 20,000.
  EXPECT_GT(snap.applier_cpu_ns, 0u);
  EXPECT_GT(snap.drainer_cpu_ns, 0u);
}

TEST(RecorderTest, FlushSeesRecordsOfOtherThreads) {
  auto recorder = Make();
  ASSERT_TRUE(recorder->Start().ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < 5000; ++i) {
        recorder->RecordAlloc(kHeap, (uint64_t(t) << 32) + 16 * (i + 1), 1, 0);
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(recorder->Flush().ok());
  recorder->Inspect([](const AllocationLedger& ledger, const CaptureIntegrity&) {
    EXPECT_EQ(ledger.totals().live_count, 20000u);
  });
}

// Destroying a recorder that was never stopped stops it: the destructor's final round
// applies every record still in the rings (the observer sees each one, and its OnStop()),
// and returns. The producer's records are made while the drainer runs, and most are
// still unapplied when the destructor runs (no Flush()).
class CountingObserver final : public EventObserver {
 public:
  void OnEpoch(uint32_t, int64_t, std::span<const ObservedEvent> events) noexcept override {
    records += events.size();
  }
  void OnStop() noexcept override { ++stops; }
  uint64_t records = 0;  // drainer thread until the recorder is gone
  int stops = 0;
};

TEST(RecorderTest, DestroyingARunningRecorderAppliesEveryRecordAndStops) {
  CountingObserver observer;
  auto recorder = Make();
  ASSERT_TRUE(recorder->SetObserver(&observer).ok());
  ASSERT_TRUE(recorder->Start().ok());
  constexpr uint64_t kRecords = 100'000;
  uint64_t recorded = 0;
  std::thread producer([&] {
    for (uint64_t i = 1; i <= kRecords; ++i) {
      if (recorder->RecordAlloc(kHeap, 16 * i, 1, 0) == RecordResult::kRecorded) ++recorded;
    }
  });
  producer.join();
  recorder.reset();  // running: the destructor stops and joins the drainer
  EXPECT_EQ(recorded, kRecords);
  EXPECT_EQ(observer.records, kRecords);
  EXPECT_EQ(observer.stops, 1);
}

// An observer that detaches itself from inside a callback (here its OnStop()): the drainer
// holds the callbacks' lock then, and the detach must not wait for it.
class SelfDetachingObserver final : public EventObserver {
 public:
  void OnEpoch(uint32_t, int64_t, std::span<const ObservedEvent> events) noexcept override {
    records += events.size();
  }
  void OnStop() noexcept override { DetachFromRecorder(); }
  uint64_t records = 0;
};

TEST(RecorderTest, AnObserverDetachingItselfInACallbackIsNoDeadlock) {
  SelfDetachingObserver observer;
  auto recorder = Make();
  ASSERT_TRUE(recorder->SetObserver(&observer).ok());
  ASSERT_TRUE(recorder->Start().ok());
  for (uint64_t i = 1; i <= 1000; ++i) recorder->RecordAlloc(kHeap, 16 * i, 1, 0);
  auto stopped = std::async(std::launch::async, [&] { return recorder->Stop(); });
  ASSERT_EQ(stopped.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "Stop() waits for a detach made inside OnStop()";
  EXPECT_TRUE(stopped.get().ok());
  EXPECT_FALSE(observer.attached());
  EXPECT_EQ(observer.records, 1000u);
}

// An observer destroyed after Stop() while still attached detaches itself (its base's
// destructor): the recorder, destroyed or given another observer later, never writes into
// it (ASan caught that write).
TEST(RecorderTest, AnObserverDestroyedAfterStopIsNeverReachedAgain) {
  auto recorder = Make();
  {
    CountingObserver first;
    ASSERT_TRUE(recorder->SetObserver(&first).ok());
    ASSERT_TRUE(recorder->Start().ok());
    ASSERT_TRUE(recorder->Stop().ok());
  }  // destroyed attached
  CountingObserver second;
  ASSERT_TRUE(recorder->SetObserver(&second).ok());
  EXPECT_TRUE(second.attached());
  {
    CountingObserver third;
    ASSERT_TRUE(recorder->SetObserver(&third).ok());
    EXPECT_FALSE(second.attached());  // replaced
  }
  recorder.reset();
  EXPECT_FALSE(second.attached());
}

// An observer runs on the drainer thread; a Flush() from there would wait for itself.
class FlushingObserver final : public EventObserver {
 public:
  explicit FlushingObserver(Recorder* recorder) : recorder_(recorder) {}
  void OnEpoch(uint32_t, int64_t, std::span<const ObservedEvent> events) noexcept override {
    if (!events.empty() && !called_) {
      called_ = true;
      status_ = recorder_->Flush();
    }
  }
  bool called_ = false;
  absl::Status status_;

 private:
  Recorder* recorder_;
};

TEST(RecorderTest, FlushFromTheDrainerThreadIsRefusedNotADeadlock) {
  auto recorder = Make();
  FlushingObserver observer(recorder.get());
  ASSERT_TRUE(recorder->SetObserver(&observer).ok());
  ASSERT_TRUE(recorder->Start().ok());
  EXPECT_EQ(recorder->SetObserver(nullptr).code(), absl::StatusCode::kFailedPrecondition);
  recorder->RecordAlloc(kHeap, 0x1000, 8, 0);
  ASSERT_TRUE(recorder->Flush().ok());
  ASSERT_TRUE(recorder->Stop().ok());
  ASSERT_TRUE(observer.called_);
  EXPECT_EQ(observer.status_.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(observer.status_.message().find("drainer thread"), std::string::npos);
  ASSERT_TRUE(recorder->SetObserver(nullptr).ok());
}

TEST(RecorderTest, SizesBeyond48BitsAreRefusedNotTruncated) {
  auto recorder = Make();
  ASSERT_TRUE(recorder->Start().ok());
  EXPECT_EQ(recorder->RecordAlloc(kHeap, 0x1000, uint64_t{1} << 50, 0),
            RecordResult::kFailed);
  EXPECT_EQ(recorder->Integrity().records_failed, 1u);
}

TEST(RecorderTest, ThreadsExitingRetireTheirRingsForReuse) {
  auto recorder = Make();
  ASSERT_TRUE(recorder->Start().ok());
  for (int i = 0; i < 50; ++i) {
    std::thread([&] { recorder->RecordAlloc(kHeap, 0x1000 + 16 * uint64_t(i), 1, 0); })
        .join();
    ASSERT_TRUE(recorder->Flush().ok());
  }
  // One thread at a time, each drained before the next starts: at most two rings (a
  // retired ring is reclaimed in the round after its final records are applied).
  EXPECT_LE(recorder->Integrity().rings, 2u);
}

// A thread_local made before the thread's first record is destroyed after everything
// made later, in the thread's exit; what its destructor frees goes into the thread's own
// ring (the exit hook runs after every thread_local destructor), not into a fresh ring
// per record. The expected counts are the test's own.
struct FreesAtThreadExit {
  Recorder* recorder = nullptr;
  uint64_t base = 0;
  int count = 0;
  ~FreesAtThreadExit() {
    for (int i = 0; i < count; ++i) recorder->RecordFree(kHeap, base + 16 * uint64_t(i));
  }
};

thread_local FreesAtThreadExit frees_at_thread_exit;

TEST(RecorderTest, FreesInThreadLocalDestructorsStayInTheThreadsRing) {
  auto recorder = Make();
  ASSERT_TRUE(recorder->Start().ok());
  constexpr int kBlocks = 300;
  constexpr uint64_t kBase = 1ull << 40;
  std::thread([&] {
    FreesAtThreadExit& f = frees_at_thread_exit;  // constructed before the first record
    f.recorder = recorder.get();
    f.base = kBase;
    f.count = kBlocks;
    for (int i = 0; i < kBlocks; ++i) {
      EXPECT_EQ(recorder->RecordAlloc(kHeap, kBase + 16 * uint64_t(i), 8, 0),
                RecordResult::kRecorded);
    }
  }).join();
  ASSERT_TRUE(recorder->Flush().ok());
  const CaptureIntegrity integrity = recorder->Integrity();
  EXPECT_LE(integrity.rings, 2u) << integrity.Counters();
  EXPECT_EQ(integrity.unknown_frees, 0u) << integrity.Counters();
  recorder->Inspect([&](const AllocationLedger& ledger, const CaptureIntegrity&) {
    EXPECT_EQ(ledger.totals().allocated_count, uint64_t{kBlocks});
    EXPECT_EQ(ledger.totals().freed_count, uint64_t{kBlocks});
    EXPECT_EQ(ledger.totals().live_count, 0u);
  });
}

// Frees after the thread's exit hook (a pthread key destructor of the program's, run
// after memtrace's) go into one ring the thread keeps to its end, which the drainer
// retires and reclaims once the thread is gone: threads that do so one after another
// reuse it. Each such free took a fresh ring before (a thousand frees, a thousand rings
// mapped). The counts are the test's own.
struct LateFrees {
  Recorder* recorder;
  uint64_t base;
  int count;
};
void FreeLate(void* arg) {
  const LateFrees* f = static_cast<const LateFrees*>(arg);
  for (int i = 0; i < f->count; ++i) f->recorder->RecordFree(kHeap, f->base + 16 * uint64_t(i));
}

TEST(RecorderTest, FreesAfterTheExitHookShareOneRingThatIsReclaimed) {
  auto recorder = Make();
  ASSERT_TRUE(recorder->Start().ok());
  // memtrace's exit key is made by a thread's first record; the test's key after it runs
  // after it in a thread's exit (keys run in the order of their indices).
  std::thread([&] { recorder->RecordAlloc(kHeap, 0x10, 8, 0); }).join();
  pthread_key_t late_key;
  ASSERT_EQ(pthread_key_create(&late_key, FreeLate), 0);
  constexpr int kThreads = 4;
  constexpr int kBlocks = 1000;
  std::vector<LateFrees> late(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    late[t] = LateFrees{recorder.get(), (uint64_t{1} << 40) + (uint64_t(t) << 32), kBlocks};
    std::thread([&, t] {
      for (int i = 0; i < kBlocks; ++i) {
        EXPECT_EQ(recorder->RecordAlloc(kHeap, late[t].base + 16 * uint64_t(i), 8, 0),
                  RecordResult::kRecorded);
      }
      pthread_setspecific(late_key, &late[t]);
    }).join();
    // Two rounds: the first retires the rings of the thread that is gone, the second,
    // having applied everything, reclaims them for the next thread.
    for (int round = 0; round < 3; ++round) ASSERT_TRUE(recorder->Flush().ok());
  }
  pthread_key_delete(late_key);
  const CaptureIntegrity integrity = recorder->Integrity();
  // Each thread: its own ring, and one for its late frees; reused by the next thread.
  EXPECT_LE(integrity.rings, 3u) << integrity.Counters();
  EXPECT_EQ(integrity.unknown_frees, 0u) << integrity.Counters();
  recorder->Inspect([&](const AllocationLedger& ledger, const CaptureIntegrity&) {
    EXPECT_EQ(ledger.totals().allocated_count, uint64_t{kThreads * kBlocks + 1});
    EXPECT_EQ(ledger.totals().freed_count, uint64_t{kThreads * kBlocks});
    EXPECT_EQ(ledger.totals().live_count, 1u);
  });
}

TEST(RecorderTest, ALargeHeapStaysExactWhileTheDrainerPrefetches) {
  // Past 65,536 live blocks the drainer prefetches the ledger's slots of the records ahead
  // (drainer.cc). A hint must change nothing: totals computed here, from the loops alone.
  Config config;
  // Rings that hold every record a thread makes here, so that a drainer slowed down by a
  // sanitizer never makes a producer wait past the overflow bound.
  config.ring_capacity_log2 = 18;
  auto recorder = Make(config);
  ASSERT_TRUE(recorder->Start().ok());
  constexpr uint64_t kLive = 100000;    // allocated first, on this thread
  constexpr uint64_t kPairs = 50000;    // alloc+free pairs on each of two threads
  constexpr uint64_t kSize = 48;
  auto live_address = [](uint64_t i) { return 0x10000000 + 64 * i; };
  for (uint64_t i = 0; i < kLive; ++i) {
    ASSERT_EQ(recorder->RecordAlloc(kHeap, live_address(i), kSize, 1), RecordResult::kRecorded);
  }
  ASSERT_TRUE(recorder->Flush().ok());
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < kPairs; ++i) {
        // Scattered over a window of 2^16 addresses per thread, so the lookups spread.
        const uint64_t a = 0x800000000 * (t + 1) + 16 * ((i * 0x9E3779B1u) & 0xffff);
        EXPECT_EQ(recorder->RecordAlloc(kHeap, a, 2 * kSize, 2), RecordResult::kRecorded);
        EXPECT_EQ(recorder->RecordFree(kHeap, a), RecordResult::kRecorded);
        // Thread 1 also frees every other block this thread allocated at the start.
        if (t == 1) {
          EXPECT_EQ(recorder->RecordFree(kHeap, live_address(2 * i)), RecordResult::kRecorded);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(recorder->Stop().ok());
  const Snapshot snap = recorder->TakeSnapshot();
  EXPECT_EQ(snap.totals.allocated_count, kLive + 2 * kPairs);
  EXPECT_EQ(snap.totals.freed_count, 2 * kPairs + kLive / 2);
  EXPECT_EQ(snap.totals.live_count, kLive / 2);
  EXPECT_EQ(snap.totals.live_bytes, kLive / 2 * kSize);
  EXPECT_EQ(snap.integrity.unknown_frees, 0u) << snap.integrity.Counters();
  EXPECT_EQ(snap.integrity.double_frees, 0u) << snap.integrity.Counters();
  EXPECT_EQ(snap.integrity.order_conflicts, 0u) << snap.integrity.Counters();
  EXPECT_TRUE(snap.integrity.complete()) << snap.integrity.Counters();
}

}  // namespace
}  // namespace memtrace
