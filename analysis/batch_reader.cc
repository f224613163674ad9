// Copyright 2026 The memtrace Authors.

#include "analysis/batch_reader.h"

#include <sched.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace memtrace {
namespace {

// The batches the two threads share (batch_reader.h, "Threads"): each is at any time free
// (the reader's to fill), full (the caller's to consume, in order) or held by one side.
class BatchQueue {
 public:
  BatchQueue() {
    for (size_t i = 0; i < kCaptureBatches; ++i) {
      storage_.push_back(std::make_unique<CaptureBatch>(kCaptureBatchRecords));
      free_.push_back(storage_.back().get());
    }
  }

  // Reader: a free batch, emptied; null once the caller has stopped.
  CaptureBatch* TakeFree() {
    std::unique_lock lock(mu_);
    if (free_.empty() && !stopped_) {
      reader_waiting_ = true;
      reader_cv_.wait(lock, [&] { return free_.size() >= kRefill || stopped_; });
      reader_waiting_ = false;
    }
    if (stopped_) return nullptr;
    CaptureBatch* b = free_.front();
    free_.pop_front();
    b->size = 0;
    return b;
  }
  // Reader: a filled batch, for the caller.
  void Publish(CaptureBatch* b) {
    std::lock_guard lock(mu_);
    full_.push_back(b);
    if (caller_waiting_) caller_cv_.notify_one();
  }
  // Reader: nothing more comes; `status` and `stats` are ReadCapture()'s.
  void Finish(absl::Status status, const CaptureReadStats& stats) {
    std::lock_guard lock(mu_);
    finished_ = true;
    status_ = std::move(status);
    stats_ = stats;
    if (caller_waiting_) caller_cv_.notify_one();
  }

  // Caller: the next full batch, or null once the reader has finished and all are taken.
  CaptureBatch* TakeFull() {
    std::unique_lock lock(mu_);
    if (full_.empty() && !finished_) {
      caller_waiting_ = true;
      caller_cv_.wait(lock, [&] { return !full_.empty() || finished_; });
      caller_waiting_ = false;
    }
    if (full_.empty()) return nullptr;
    CaptureBatch* b = full_.front();
    full_.pop_front();
    return b;
  }
  // Caller: a batch consumed.
  void Recycle(CaptureBatch* b) {
    std::lock_guard lock(mu_);
    free_.push_back(b);
    if (reader_waiting_ && free_.size() >= kRefill) reader_cv_.notify_one();
  }
  // Caller: wants no more; the reader stops at its next batch.
  void Stop() {
    std::lock_guard lock(mu_);
    stopped_ = true;
    if (reader_waiting_) reader_cv_.notify_one();
  }

  // After the reader has finished (joined).
  const absl::Status& status() const { return status_; }
  const CaptureReadStats& stats() const { return stats_; }

 private:
  static constexpr size_t kRefill = kCaptureBatches / 2;

  std::vector<std::unique_ptr<CaptureBatch>> storage_;
  std::mutex mu_;
  std::condition_variable reader_cv_;
  std::condition_variable caller_cv_;
  std::deque<CaptureBatch*> free_;  // guarded by mu_
  std::deque<CaptureBatch*> full_;  // guarded by mu_, in the capture's order
  bool reader_waiting_ = false;
  bool caller_waiting_ = false;
  bool stopped_ = false;
  bool finished_ = false;
  absl::Status status_;
  CaptureReadStats stats_;
};

// The reading thread's side: ReadCaptureInBatches() into the queue's batches, each
// published as it fills.
absl::Status ReadInto(const std::string& path, BatchQueue& queue, CaptureReadStats* stats) {
  CaptureBatch* batch = queue.TakeFree();
  if (batch == nullptr) return absl::CancelledError("stopped");
  return ReadCaptureInBatches(
      path, batch,
      [&](CaptureBatch* full, bool last) -> absl::StatusOr<CaptureBatch*> {
        queue.Publish(full);
        if (last) return nullptr;
        CaptureBatch* next = queue.TakeFree();
        if (next == nullptr) return absl::CancelledError("stopped");
        return next;
      },
      stats);
}

// The caller's thread alone: a batch is consumed as soon as it is full.
absl::Status ReadOnOneThread(const std::string& path, const CaptureBatchFn& fn,
                             CaptureReadStats* stats) {
  CaptureBatch batch(kCaptureBatchRecords);
  return ReadCaptureInBatches(
      path, &batch,
      [&](CaptureBatch* full, bool /*last*/) -> absl::StatusOr<CaptureBatch*> {
        absl::Status consumed =
            fn(std::span<const CaptureRecord>(full->records.data(), full->size), full->read);
        if (!consumed.ok()) return consumed;
        return full;
      },
      stats);
}

bool TwoCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  // It fails on machines of more CPUs than a cpu_set_t holds (1,024), which have two.
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return true;
  return CPU_COUNT(&set) >= 2;
}

}  // namespace

absl::Status ReadCaptureBatches(const std::string& path, const CaptureBatchFn& fn,
                                CaptureReadStats* stats, ReadThreads threads) {
  CaptureReadStats local;
  if (stats == nullptr) stats = &local;
  if (threads == ReadThreads::kOne || (threads == ReadThreads::kAuto && !TwoCpus())) {
    return ReadOnOneThread(path, fn, stats);
  }
  BatchQueue queue;
  std::thread reader;
  try {
    reader = std::thread([&path, &queue] {
      CaptureReadStats read;
      absl::Status s = ReadInto(path, queue, &read);
      queue.Finish(std::move(s), read);
    });
  } catch (const std::system_error&) {
    return ReadOnOneThread(path, fn, stats);  // no thread to be had: read here
  }
  // The reader ends and is joined on every way out, an exception from fn's included.
  struct Joiner {
    BatchQueue& queue;
    std::thread& reader;
    ~Joiner() {
      queue.Stop();
      reader.join();
    }
  };
  absl::Status consumed;
  CaptureReadStats last;
  {
    Joiner joiner{queue, reader};
    while (CaptureBatch* b = queue.TakeFull()) {
      consumed = fn(std::span<const CaptureRecord>(b->records.data(), b->size), b->read);
      last = b->read;
      queue.Recycle(b);
      if (!consumed.ok()) break;
    }
  }
  if (!consumed.ok()) {
    *stats = last;
    return consumed;
  }
  *stats = queue.stats();
  return queue.status();
}

}  // namespace memtrace
