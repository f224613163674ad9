// Copyright 2026 The memtrace Authors.
//
// Recorder life cycle, overflow policies with a deliberately stalled drainer, and the
// integrity counters they must produce.

#include "runtime/internal/recorder.h"

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <latch>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/event_observer.h"
#include "runtime/internal/thread_state.h"
#include "runtime/span.h"
#include "tests/drainer_stall.h"
#include "transport/ticket.h"

namespace memtrace {
namespace {

constexpr LayerId kHeap = layers::kCpuHeap;

std::unique_ptr<Recorder> Make(Config config = Config{}) {
  auto r = Recorder::Create(config);
  EXPECT_TRUE(r.ok()) << r.status();
  return std::move(r).value();
}

using testing::DrainerStall;

TEST(RecorderTest, ConfigErrorsSayWhatAndHowToFix) {
  Config config;
  config.ring_capacity_log2 = 40;
  const auto r = Recorder::Create(config);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("ring_capacity_log2 is 40"), std::string::npos);
  EXPECT_NE(r.status().message().find("default is 14"), std::string::npos);

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

TEST(RecorderTest, ScopesAttributeAllocationsAndFreesChargeBack) {
  auto recorder = Make();
  ASSERT_TRUE(recorder->Start().ok());
  static const ScopeName kFrame("rt_frame");
  static const ScopeName kPhysics("rt_physics");
  uint32_t frame_path = 0, physics_path = 0;
  {
    Span frame(recorder.get(), kFrame);
    frame_path = frame.path();
    recorder->RecordAlloc(kHeap, 0x100, 100, 0);
    {
      Span physics(recorder.get(), kPhysics);
      physics_path = physics.path();
      EXPECT_EQ(CurrentScopePath(), physics_path);
      recorder->RecordAlloc(kHeap, 0x200, 200, 0);
    }
    EXPECT_EQ(CurrentScopePath(), frame_path);
  }
  EXPECT_EQ(CurrentScopePath(), 0u);
  recorder->RecordFree(kHeap, 0x200);  // freed unscoped: charged back to physics
  const Snapshot snap = recorder->TakeSnapshot();
  EXPECT_EQ(ScopeTable::Global().PathString(physics_path), "rt_frame/rt_physics");
  bool saw_physics = false;
  for (const ScopeUsage& s : snap.scopes) {
    if (s.scope == physics_path) {
      saw_physics = true;
      EXPECT_EQ(s.usage.live_bytes, 0u);
      EXPECT_EQ(s.usage.freed_bytes, 200u);
      EXPECT_EQ(s.usage.high_water_bytes, 200u);
    }
    if (s.scope == frame_path) {
      EXPECT_EQ(s.usage.live_bytes, 100u);
    }
    EXPECT_NE(s.scope, 0u) << "nothing was allocated unscoped";
  }
  EXPECT_TRUE(saw_physics);
}

TEST(RecorderTest, OutOfOrderSpanExitClosesInnerScopes) {
  static const ScopeName kOuter("rt_outer");
  static const ScopeName kInner("rt_inner");
  auto outer = std::make_unique<Span>(nullptr, kOuter);
  Span inner(nullptr, kInner);
  outer->Exit();  // closes inner too
  EXPECT_EQ(CurrentScopePath(), 0u);
  inner.Exit();   // already closed: no effect
  EXPECT_EQ(CurrentScopePath(), 0u);
}

TEST(RecorderTest, SpanExitedOnAnotherThreadIsRefusedAndCounted) {
  auto recorder = Make();
  ASSERT_TRUE(recorder->Start().ok());
  static const ScopeName kOwned("rt_owned");
  auto span = std::make_unique<Span>(recorder.get(), kOwned);
  const uint32_t path = span->path();
  std::thread([&] {
    span->Exit();  // not this thread's span
    EXPECT_EQ(CurrentScopePath(), 0u) << "the other thread's stack is untouched";
  }).join();
  EXPECT_EQ(CurrentScopePath(), path) << "the scope stays open on its own thread";
  EXPECT_EQ(recorder->Integrity().foreign_span_exits, 1u);
  span.reset();  // already exited: nothing more happens
  EXPECT_EQ(recorder->Integrity().foreign_span_exits, 1u);
  // Leave this (gtest's) thread unscoped for the tests that follow: the refused span's
  // scope is still open here, and no enclosing span exists to close it.
  runtime_internal::Tls().depth = 0;
  runtime_internal::Tls().scope = 0;
}

// OverflowPolicy::kFail with the drainer stalled: once the ring is full, allocations fail
// (the caller must undo them) and other records are dropped; both are counted and the
// capture is partial.
TEST(RecorderTest, FailPolicyFailsAllocationsAndDropsReleasesWhenFull) {
  Config config;
  config.ring_capacity_log2 = 4;  // 16 records
  config.overflow_policy = OverflowPolicy::kFail;
  auto recorder = Make(config);
  ASSERT_TRUE(recorder->Start().ok());
  int recorded = 0, failed_allocs = 0, dropped = 0;
  {
    DrainerStall stall(*recorder);
    std::thread producer([&] {
      for (uint64_t i = 1; i <= 40; ++i) {
        if (recorder->RecordAlloc(kHeap, i * 16, 8, 0) == RecordResult::kRecorded) {
          ++recorded;
        } else {
          ++failed_allocs;
        }
      }
      for (uint64_t i = 1; i <= 5; ++i) {
        if (recorder->RecordFree(kHeap, i * 16) == RecordResult::kFailed) ++dropped;
      }
    });
    producer.join();
  }
  EXPECT_EQ(recorded, 16);
  EXPECT_EQ(failed_allocs, 24);
  EXPECT_EQ(dropped, 5);
  ASSERT_TRUE(recorder->Flush().ok());
  const CaptureIntegrity integrity = recorder->Integrity();
  EXPECT_EQ(integrity.records_failed, 24u);
  EXPECT_EQ(integrity.events_dropped, 5u);
  EXPECT_FALSE(integrity.complete());
  EXPECT_TRUE(integrity.failure_flag());
  EXPECT_EQ(integrity.max_ring_fill, 16u);
  EXPECT_NE(integrity.Verdict().find("PARTIAL"), std::string::npos);
}

// A started recorder whose rings hold 16 records and whose full rings make a producer
// wait up to `wait` (kWaitThenFail).
std::unique_ptr<Recorder> StartWaiting(absl::Duration wait) {
  Config config;
  config.ring_capacity_log2 = 4;
  config.overflow_policy = OverflowPolicy::kWaitThenFail;
  config.overflow_wait = wait;
  auto recorder = Make(config);
  EXPECT_TRUE(recorder->Start().ok());
  return recorder;
}

// kWaitThenFail: a stall shorter than the wait costs time, not records.
TEST(RecorderTest, WaitPolicyRidesOutAShortStall) {
  auto recorder = StartWaiting(absl::Seconds(5));
  auto stall = std::make_unique<DrainerStall>(*recorder);
  std::atomic<int> recorded{0};
  std::thread producer([&] {
    for (uint64_t i = 1; i <= 40; ++i) {
      if (recorder->RecordAlloc(kHeap, i * 16, 8, 0) == RecordResult::kRecorded) ++recorded;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(recorded.load(), 16) << "the producer should be waiting on a full ring";
  stall.reset();  // let the drainer run
  producer.join();
  EXPECT_EQ(recorded.load(), 40);
  ASSERT_TRUE(recorder->Flush().ok());
  const CaptureIntegrity integrity = recorder->Integrity();
  EXPECT_TRUE(integrity.complete()) << integrity.Counters();
  EXPECT_GE(integrity.overflow_waits, 1u);
  EXPECT_EQ(integrity.events_applied, 40u);
}

// Collects, per call, the epoch and the records handed on, with each record's ticket.
class SliceLog final : public EventObserver {
 public:
  void OnEpoch(uint32_t epoch, int64_t, std::span<const ObservedEvent> events) noexcept override {
    calls.emplace_back(epoch, events.size());
    for (const ObservedEvent& o : events) tickets.push_back(o.ticket);
  }
  std::vector<std::pair<uint32_t, size_t>> calls;  // drainer thread until Stop()
  std::vector<uint64_t> tickets;
};

// A started recorder that waits for room (kWaitThenFail, `wait`), with rings of
// 2^`ring_log2` records, epochs applied in slices of `slice` records, and `observer`.
std::unique_ptr<Recorder> StartSliced(uint32_t ring_log2, uint32_t slice, absl::Duration wait,
                                      EventObserver* observer) {
  Config config;
  config.ring_capacity_log2 = ring_log2;
  config.drain_slice_records = slice;
  config.overflow_policy = OverflowPolicy::kWaitThenFail;
  config.overflow_wait = wait;
  auto recorder = Make(config);
  EXPECT_TRUE(recorder->SetObserver(observer).ok());
  EXPECT_TRUE(recorder->Start().ok());
  return recorder;
}

// Thread t's i-th block: the threads' addresses never meet.
uint64_t BlockOf(int t, uint64_t i) { return (uint64_t{1} << 32) * (t + 1) + i * 16; }

// An epoch holding many rings' records is applied in slices (drainer.h): four rings of
// 1,000 records recorded while the drainer is held, slices of 512 records (128 a ring, the
// first ring all at once), reach the observer in several calls of one epoch, each record
// once, every ring's records in their order.
TEST(RecorderTest, AnEpochOfManyFullRingsIsAppliedInSlices) {
  SliceLog log;
  auto recorder = StartSliced(10, 512, absl::Seconds(10), &log);
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 1000;
  {
    DrainerStall stall(*recorder);
    // No thread exits before all have recorded: a thread that ended would hand its ring
    // to the next one to start (on a loaded machine the threads may run one after
    // another), and one ring would hold every record.
    std::latch recorded(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (uint64_t i = 0; i < kPerThread; ++i) {
          // EXPECT: a thread that returned early would leave the others waiting.
          EXPECT_EQ(recorder->RecordAlloc(kHeap, BlockOf(t, i), 16, 0), RecordResult::kRecorded);
        }
        recorded.arrive_and_wait();
      });
    }
    for (auto& th : threads) th.join();
  }  // the drainer runs again, and finds every ring holding 1,000 records of one epoch
  ASSERT_TRUE(recorder->Stop().ok());

  std::map<uint32_t, size_t> records_of_epoch, calls_of_epoch;
  for (const auto& [epoch, n] : log.calls) {
    records_of_epoch[epoch] += n;
    ++calls_of_epoch[epoch];
    // The first ring's records all at once, at most 128 of each other ring's.
    EXPECT_LE(n, kPerThread + (kThreads - 1) * 128);
  }
  // The stalled drainer closes at most one epoch meanwhile (it advances the clock, then
  // waits for the stall), so one epoch holds at least half of the records, more than one
  // slice can apply.
  const auto biggest = std::max_element(
      records_of_epoch.begin(), records_of_epoch.end(),
      [](const auto& a, const auto& b) { return a.second < b.second; });
  ASSERT_NE(biggest, records_of_epoch.end());
  EXPECT_GE(biggest->second, kThreads * kPerThread / 2);
  EXPECT_GE(calls_of_epoch[biggest->first], 2u);
  EXPECT_GE(recorder->sliced_epochs(), 1u);

  ASSERT_EQ(log.tickets.size(), kThreads * kPerThread);
  std::map<uint32_t, uint64_t> next_position;
  for (const uint64_t ticket : log.tickets) {
    const uint32_t ring = Ticket::RingId(ticket);
    if (next_position.count(ring) != 0) {
      EXPECT_EQ(Ticket::Position(ticket), next_position[ring]) << "ring " << ring;
    }
    next_position[ring] = Ticket::Position(ticket) + 1;
  }
  EXPECT_EQ(next_position.size(), static_cast<size_t>(kThreads));
  const CaptureIntegrity integrity = recorder->Integrity();
  EXPECT_TRUE(integrity.complete()) << integrity.Counters();
  EXPECT_EQ(integrity.late_records, 0u);
}

// An observer as slow as a drainer that has too many threads to keep up with: every slice
// takes it 10 ms.
class SlowObserver final : public EventObserver {
 public:
  void OnEpoch(uint32_t, int64_t, std::span<const ObservedEvent> events) noexcept override {
    applied += events.size();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  uint64_t applied = 0;  // drainer thread until Stop()
};

// kWaitThenFail bounds a wait in which the drainer applies nothing, not one in which it is
// working but behind. Four threads keep their 256-record rings full; the drainer applies
// 64 records a slice (16 a ring) at 10 ms a slice, so a thread whose ring holds the next
// epoch's records waits for every slice of the current epoch, longer than the 100 ms
// bound. No record is failed: each wait goes on while slices are applied.
TEST(RecorderTest, WaitPolicyWaitsForADrainerThatIsBehindButWorking) {
  SlowObserver observer;
  auto recorder = StartSliced(8, 64, absl::Milliseconds(100), &observer);
  constexpr int kThreads = 4;
  constexpr uint64_t kPairs = 1024;
  std::atomic<uint64_t> failed{0};
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < kPairs; ++i) {
        if (recorder->RecordAlloc(kHeap, BlockOf(t, i), 16, 0) != RecordResult::kRecorded) {
          ++failed;
        }
        if (recorder->RecordFree(kHeap, BlockOf(t, i)) != RecordResult::kRecorded) ++failed;
      }
    });
  }
  for (auto& th : threads) th.join();
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(recorder->Stop().ok());
  const CaptureIntegrity integrity = recorder->Integrity();
  EXPECT_EQ(failed.load(), 0u);
  EXPECT_TRUE(integrity.complete()) << integrity.Counters();
  EXPECT_EQ(integrity.events_applied, kThreads * kPairs * 2);
  EXPECT_EQ(observer.applied, kThreads * kPairs * 2);
  EXPECT_GT(integrity.overflow_waits, 0u);
  EXPECT_GT(recorder->sliced_epochs(), 0u);
  // The shape the test claims: the threads were held up for far longer than one bound
  // (8,192 records at 64 a slice and 10 ms a slice: over a second).
  EXPECT_GT(took, std::chrono::milliseconds(500));
}

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
// the whole end of its capture (preload_test's UnderscoreExitFromASignalHandler...).
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

// A producer for the cancellation test: records `count` allocations, then reaches a
// cancellation point of its own.
struct CancelledProducer {
  Recorder* recorder;
  std::atomic<int> recorded{0};
  std::atomic<bool> loop_done{false};

  static void* Run(void* arg) {
    auto* self = static_cast<CancelledProducer*>(arg);
    for (uint64_t i = 1; i <= 40; ++i) {
      if (self->recorder->RecordAlloc(kHeap, i * 16, 8, 0) == RecordResult::kRecorded) {
        ++self->recorded;
      }
    }
    self->loop_done = true;
    pthread_testcancel();  // the program's own cancellation point
    return nullptr;
  }
};

// Waiting for room sleeps (nanosleep, a cancellation point), but no recorded call is a
// cancellation point: a thread cancelled meanwhile is not ended inside the record (inside
// the program's malloc, under the interposer); it is cancelled at its own next
// cancellation point, with every record made.
TEST(RecorderTest, CancellationIsHeldOffWhileAThreadWaitsForRoom) {
  auto recorder = StartWaiting(absl::Seconds(5));
  auto stall = std::make_unique<DrainerStall>(*recorder);
  CancelledProducer producer{recorder.get()};
  pthread_t thread;
  ASSERT_EQ(pthread_create(&thread, nullptr, &CancelledProducer::Run, &producer), 0);
  for (int i = 0; i < 5000 && producer.recorded.load() < 16; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(producer.recorded.load(), 16) << "the producer should be waiting on a full ring";
  ASSERT_EQ(pthread_cancel(thread), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a few sleeps of its wait
  stall.reset();  // room again
  void* result = nullptr;
  ASSERT_EQ(pthread_join(thread, &result), 0);
  EXPECT_EQ(result, PTHREAD_CANCELED);
  EXPECT_TRUE(producer.loop_done.load()) << "cancelled inside a record";
  EXPECT_EQ(producer.recorded.load(), 40);
  ASSERT_TRUE(recorder->Flush().ok());
  EXPECT_EQ(recorder->Integrity().events_applied, 40u);
}

// kWaitThenFail: a stall longer than the wait fails like kFail, after waiting.
TEST(RecorderTest, WaitPolicyFailsAfterItsBound) {
  auto recorder = StartWaiting(absl::Milliseconds(20));
  int failed = 0;
  std::chrono::steady_clock::duration waited{};
  {
    DrainerStall stall(*recorder);
    std::thread producer([&] {
      const auto start = std::chrono::steady_clock::now();
      for (uint64_t i = 1; i <= 18; ++i) {
        if (recorder->RecordAlloc(kHeap, i * 16, 8, 0) == RecordResult::kFailed) ++failed;
      }
      waited = std::chrono::steady_clock::now() - start;
    });
    producer.join();
  }
  EXPECT_EQ(failed, 2);
  // Each of the two failures waited out its bound first (no upper bound asserted: the
  // machine may be slow).
  EXPECT_GE(waited, std::chrono::milliseconds(40));
  ASSERT_TRUE(recorder->Flush().ok());
  const CaptureIntegrity integrity = recorder->Integrity();
  EXPECT_EQ(integrity.records_failed, 2u);
  EXPECT_GE(integrity.overflow_waits, 2u);
  EXPECT_FALSE(integrity.complete());
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

// Waits for the forked child `child`, which reports by its exit status: 0 or one of
// `codes` (what each nonzero status means).
void ExpectChildExitsZero(pid_t child, const char* codes) {
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << codes;
}

// A forked child gets what was live in the parent at the fork (Recorder::HoldForFork):
// the blocks the drainer had applied and those whose records still waited in the rings,
// from every thread, one of them gone already, a release on another thread than its
// allocation's among them. The expected set is the test's own map of what it recorded.
TEST(RecorderTest, AForkedChildGetsEveryBlockLiveInTheParentAtTheFork) {
  Config config;
  config.drain_period = absl::Seconds(1);  // asleep: what comes after Flush() waits
  config.idle_drain_period = absl::Seconds(1);
  auto recorder = Make(config);
  ASSERT_TRUE(recorder->Start().ok());
  std::map<uint64_t, uint64_t> live;  // address -> size
  std::mutex mu;
  auto work = [&](uint64_t base, int n) {
    for (int i = 0; i < n; ++i) {
      const uint64_t address = base + 64 * static_cast<uint64_t>(i);
      const uint64_t size = 16 + static_cast<uint64_t>(i % 40);
      ASSERT_EQ(recorder->RecordAlloc(kHeap, address, size, 0x401000), RecordResult::kRecorded);
      std::lock_guard<std::mutex> lock(mu);
      live[address] = size;
      if (i % 3 == 0) {
        ASSERT_EQ(recorder->RecordFree(kHeap, address), RecordResult::kRecorded);
        live.erase(address);
      }
    }
  };
  work(0x100000, 600);
  ASSERT_TRUE(recorder->Flush().ok());  // applied before the fork
  std::thread(work, 0x200000, 600).join();  // a thread gone before the fork
  std::thread(work, 0x300000, 600).join();
  work(0x400000, 600);
  ASSERT_EQ(recorder->RecordFree(kHeap, 0x200040), RecordResult::kRecorded);  // another ring's
  live.erase(0x200040);
  const CaptureIntegrity before = recorder->Integrity();
  EXPECT_LT(before.events_applied, before.events_recorded) << "the test wants records waiting";
  const std::vector<std::pair<uint64_t, uint64_t>> want(live.begin(), live.end());

  recorder->HoldForFork();
  const pid_t child = fork();
  if (child == 0) {
    uint64_t unpublished = 1;
    const std::vector<AllocationRecord> got = recorder->LiveBlocksInForkedChild(&unpublished);
    std::vector<std::pair<uint64_t, uint64_t>> have;
    for (const AllocationRecord& b : got) have.emplace_back(b.address, b.size);
    std::sort(have.begin(), have.end());
    _exit(unpublished != 0 ? 1 : have.size() != want.size() ? 2 : have != want ? 3 : 0);
  }
  recorder->ReleaseAfterFork();
  ExpectChildExitsZero(
      child, "1: records counted unpublished, 2: another number of live blocks, 3: other blocks");

  // The parent goes on as before.
  ASSERT_TRUE(recorder->Flush().ok());
  recorder->Inspect([&](const AllocationLedger& ledger, const CaptureIntegrity& integrity) {
    std::vector<std::pair<uint64_t, uint64_t>> have;
    for (const AllocationRecord& b : ledger.LiveBlocks()) have.emplace_back(b.address, b.size);
    std::sort(have.begin(), have.end());
    EXPECT_EQ(have, want);
    EXPECT_TRUE(integrity.clean()) << integrity.Counters();
  });
  ASSERT_TRUE(recorder->Stop().ok());
}

// One thread alone records without tickets (Recorder::SoleRing()): its releases are
// paired by address, exactly, are not ticket misses, and reach the capture with `of` 0.
// With Config::keep_stack_frames the forked child also gets the frames of each inherited
// block's stack: sent by threads still running and by one gone before the fork, some of
// them still waiting in the rings at the fork, some stacks sent again by a second thread.
// The frames expected for each block are the ones the test gave it.
TEST(RecorderTest, AForkedChildGetsTheFramesOfTheStacksItInherited) {
  Config config;
  config.keep_stack_frames = true;
  config.drain_period = absl::Seconds(1);  // asleep: what comes after Flush() waits
  config.idle_drain_period = absl::Seconds(1);
  auto recorder = Make(config);
  ASSERT_TRUE(recorder->Start().ok());
  // Stack k: 1 to 16 frames, distinct per stack.
  auto stack = [](uint64_t k) {
    std::vector<uint64_t> frames;
    for (uint64_t f = 0; f <= k % 16; ++f) frames.push_back(0x400000 + k * 0x1000 + f * 8);
    return frames;
  };
  std::map<uint64_t, std::vector<uint64_t>> frames_of;  // live address -> its frames
  std::mutex mu;
  auto work = [&](uint64_t base, int n, uint64_t first_stack) {
    for (int i = 0; i < n; ++i) {
      const uint64_t address = base + 64 * static_cast<uint64_t>(i);
      const std::vector<uint64_t> frames = stack(first_stack + static_cast<uint64_t>(i % 50));
      const uint64_t site =
          recorder->StackSite(frames.data(), static_cast<uint32_t>(frames.size()));
      ASSERT_EQ(recorder->RecordAlloc(kHeap, address, 32, site), RecordResult::kRecorded);
      std::lock_guard<std::mutex> lock(mu);
      frames_of[address] = frames;
      if (i % 4 == 0) {
        ASSERT_EQ(recorder->RecordFree(kHeap, address), RecordResult::kRecorded);
        frames_of.erase(address);
      }
    }
  };
  work(0x100000, 300, 0);
  ASSERT_TRUE(recorder->Flush().ok());           // applied before the fork
  std::thread(work, 0x200000, 300, 25).join();  // a thread gone; stacks 25-49 sent again
  work(0x300000, 300, 100);                      // waiting in the ring at the fork
  const std::map<uint64_t, std::vector<uint64_t>> want = frames_of;

  recorder->HoldForFork();
  const pid_t child = fork();
  if (child == 0) {
    uint64_t unpublished = 1;
    const std::vector<AllocationRecord> got = recorder->LiveBlocksInForkedChild(&unpublished);
    if (got.size() != want.size()) _exit(1);
    for (const AllocationRecord& b : got) {
      auto it = want.find(b.address);
      if (it == want.end()) _exit(2);
      const absl::Span<const uint64_t> frames = recorder->InheritedStackFrames(b.site);
      if (std::vector<uint64_t>(frames.begin(), frames.end()) != it->second) _exit(3);
    }
    _exit(0);
  }
  recorder->ReleaseAfterFork();
  ExpectChildExitsZero(child,
                       "1: another number of live blocks, 2: another block, 3: other frames");
  ASSERT_TRUE(recorder->Stop().ok());
  // The frames count in the memory of the site table's part.
  EXPECT_GE(recorder->memory().sites, 150 * 8 * sizeof(uint64_t));
}

// Without keep_stack_frames the drainer keeps no frames: none is found for any site.
TEST(RecorderTest, WithoutKeepStackFramesNoFramesAreKept) {
  auto recorder = Make(Config{});
  ASSERT_TRUE(recorder->Start().ok());
  const uint64_t frames[] = {0x401000, 0x402000};
  const uint64_t site = recorder->StackSite(frames, 2);
  ASSERT_NE(site & kStackHashBit, 0u);
  ASSERT_EQ(recorder->RecordAlloc(kHeap, 0x1000, 32, site), RecordResult::kRecorded);
  ASSERT_TRUE(recorder->Stop().ok());
  EXPECT_TRUE(recorder->InheritedStackFrames(site).empty());
}

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
