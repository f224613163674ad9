// Copyright 2026 The memtrace Authors.
//
// ObservationQueue keeps every epoch's records as OwnedObservations: all the records
// applied, each once, in every thread's order, with the epoch they were applied in; a
// bound turns whole epochs away and counts them; vectors given back are reused.

#include "runtime/owned_observation.h"

#include <map>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/internal/recorder.h"

namespace memtrace {
namespace {

constexpr LayerId kHeap = layers::kCpuHeap;

std::unique_ptr<Recorder> Started(ObservationQueue* queue) {
  auto recorder = Recorder::Create(Config{}).value();
  EXPECT_TRUE(recorder->SetObserver(queue).ok());
  EXPECT_TRUE(recorder->Start().ok());
  return recorder;
}

TEST(OwnedObservationTest, TheQueueKeepsEveryRecordOnceInEachThreadsOrder) {
  ObservationQueue queue;
  auto recorder = Started(&queue);
  constexpr int kThreads = 3;
  constexpr uint64_t kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) {
        // Thread t's i-th block: the address says who and in which order.
        const uint64_t address = (static_cast<uint64_t>(t + 1) << 32) + 16 * (i + 1);
        ASSERT_EQ(recorder->RecordAlloc(kHeap, address, 8, 0), RecordResult::kRecorded);
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(recorder->Stop().ok());
  std::map<uint64_t, uint64_t> next;  // thread -> the next index expected
  uint32_t last_epoch = 0;
  uint64_t records = 0;
  for (const OwnedObservation& o : queue.Take()) {
    EXPECT_GE(o.epoch, last_epoch) << "epochs come in order";
    last_epoch = o.epoch;
    EXPECT_GT(o.epoch_start_unix_ns, 0);
    for (const ObservedEvent& e : o.events) {
      EXPECT_EQ(e.event.epoch(), o.epoch);
      const uint64_t thread = e.event.address() >> 32;
      EXPECT_EQ(e.event.address(), (thread << 32) + 16 * (next[thread] + 1));
      ++next[thread];
      ++records;
    }
  }
  EXPECT_EQ(records, kThreads * kPerThread);
  EXPECT_EQ(records, recorder->Integrity().events_applied);
  for (int t = 1; t <= kThreads; ++t) EXPECT_EQ(next[t], kPerThread);
  EXPECT_EQ(queue.dropped_records(), 0u);
  EXPECT_EQ(queue.stops(), 1u);
  EXPECT_TRUE(queue.Take().empty()) << "taken once";
}

TEST(OwnedObservationTest, ABoundDropsWholeEpochsAndCountsThem) {
  ObservationQueue queue(/*max_records=*/100);
  auto recorder = Started(&queue);
  for (int round = 0; round < 5; ++round) {
    for (uint64_t i = 0; i < 60; ++i) {
      ASSERT_EQ(recorder->RecordAlloc(kHeap, 0x10000 + 16 * (static_cast<uint64_t>(round) * 60 + i), 8, 0),
                RecordResult::kRecorded);
    }
    ASSERT_TRUE(recorder->Flush().ok());  // an epoch of 60 records
  }
  ASSERT_TRUE(recorder->Stop().ok());
  uint64_t kept = 0;
  for (const OwnedObservation& o : queue.Take()) kept += o.events.size();
  EXPECT_EQ(kept, 60u) << "the second epoch of 60 would pass 100";
  EXPECT_EQ(kept + queue.dropped_records(), recorder->Integrity().events_applied);
}

TEST(OwnedObservationTest, AVectorGivenBackIsReused) {
  ObservationQueue queue;
  auto recorder = Started(&queue);
  ASSERT_EQ(recorder->RecordAlloc(kHeap, 0x1000, 8, 0), RecordResult::kRecorded);
  ASSERT_TRUE(recorder->Flush().ok());
  std::vector<OwnedObservation> first = queue.Take();
  ASSERT_EQ(first.size(), 1u);
  first[0].events.reserve(4096);
  const ObservedEvent* storage = first[0].events.data();
  queue.Recycle(std::move(first[0]));
  // The next epoch's records go to the drainer's vector, which the queue takes; the
  // drainer gets the recycled one, and hands it over with the epoch after.
  for (int round = 0; round < 2; ++round) {
    ASSERT_EQ(recorder->RecordAlloc(kHeap, 0x2000 + 16 * static_cast<uint64_t>(round), 8, 0), RecordResult::kRecorded);
    ASSERT_TRUE(recorder->Flush().ok());
  }
  ASSERT_TRUE(recorder->Stop().ok());
  const std::vector<OwnedObservation> later = queue.Take();
  ASSERT_EQ(later.size(), 2u);
  EXPECT_EQ(later[1].events.data(), storage) << "the given-back vector came round again";
}

}  // namespace
}  // namespace memtrace
