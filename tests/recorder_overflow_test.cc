// Copyright 2026 The memtrace Authors.
//
// The recorder's overflow policies, with a deliberately stalled drainer
// (tests/drainer_stall.h), and the integrity counters they must produce: kFail fails
// allocations and drops releases; kWaitThenFail rides out a short stall, waits for a
// drainer that is behind but working, fails after its bound, and holds off thread
// cancellation while it waits; an epoch of many full rings is applied in slices.

#include "runtime/internal/recorder.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <latch>
#include <map>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/event_observer.h"
#include "tests/drainer_stall.h"
#include "tests/recorder_test_support.h"
#include "transport/ticket.h"

namespace memtrace {
namespace {

using testing::DrainerStall;

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

}  // namespace
}  // namespace memtrace
