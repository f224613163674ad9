// Copyright 2026 The memtrace Authors.

#include "runtime/owned_observation.h"

#include <utility>

namespace memtrace {

void ObservationQueue::OnEpochRecords(uint32_t epoch, int64_t epoch_start_unix_ns,
                                      ObservedBatch& events) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  Keep(epoch, epoch_start_unix_ns, events);
}

void ObservationQueue::OnEpoch(uint32_t epoch, int64_t epoch_start_unix_ns,
                               std::span<const ObservedEvent> events) noexcept {
  // Called only by someone other than the drainer (which calls OnEpochRecords): a copy.
  ObservedBatch copy(events.begin(), events.end());
  std::lock_guard<std::mutex> lock(mu_);
  Keep(epoch, epoch_start_unix_ns, copy);
}

void ObservationQueue::OnStop() noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  ++stops_;
}

void ObservationQueue::Keep(uint32_t epoch, int64_t epoch_start_unix_ns,
                            ObservedBatch& events) {
  if (events.empty()) return;
  if (queued_records_ + events.size() > max_records_) {
    dropped_records_ += events.size();
    return;
  }
  OwnedObservation o{epoch, epoch_start_unix_ns, {}};
  if (!spare_.empty()) {
    o.events = std::move(spare_.back());
    spare_.pop_back();
    o.events.clear();
  }
  // The drainer keeps the vector it gets back (the spare's capacity, or none).
  o.events.swap(events);
  queued_records_ += o.events.size();
  queued_.push_back(std::move(o));
}

std::vector<OwnedObservation> ObservationQueue::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  queued_records_ = 0;
  return std::exchange(queued_, {});
}

void ObservationQueue::Recycle(OwnedObservation&& observation) {
  observation.events.clear();
  std::lock_guard<std::mutex> lock(mu_);
  spare_.push_back(std::move(observation.events));
}

uint64_t ObservationQueue::dropped_records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_records_;
}

uint64_t ObservationQueue::stops() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stops_;
}

}  // namespace memtrace
