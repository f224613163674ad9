// Copyright 2026 The memtrace Authors.
//
// owned_observation.h: an epoch's records that outlive the observer's callback.
//
// EventObserver::OnEpochRecords() lends the drainer's vector for the length of the call.
// An OwnedObservation is what an observer that keeps the records holds afterwards: the
// epoch, when it began, and the records, taken from the drainer by swapping vectors, so
// never copied. ObservationQueue is such an observer: it keeps every epoch's records, up
// to a bound, for another thread to Take(), and counts what the bound turned away.
//
//   drainer thread                              any thread
//   OnEpochRecords(epoch, t, batch) --swap-->   Take(): the OwnedObservations so far
//   (gets a recycled, reserved vector back)     Recycle(o): o's vector for a later swap
//
// Thread safety: OnEpochRecords(), OnEpoch() and OnStop() on the drainer thread (as any
// observer's); Take(), Recycle() and the counters from any thread. A mutex guards the
// queue: held for a swap and a push on the drainer's side, never on a program thread.

#ifndef MEMTRACE_RUNTIME_OWNED_OBSERVATION_H_
#define MEMTRACE_RUNTIME_OWNED_OBSERVATION_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "runtime/event_observer.h"

namespace memtrace {

struct OwnedObservation {
  uint32_t epoch = 0;
  int64_t epoch_start_unix_ns = 0;
  ObservedBatch events;  // in the drainer's order (event_observer.h)
};

class ObservationQueue final : public EventObserver {
 public:
  // Keeps at most `max_records` records not yet taken; an epoch (or slice) that would
  // pass the bound is dropped whole and counted (dropped_records()).
  explicit ObservationQueue(size_t max_records = size_t{1} << 22) : max_records_(max_records) {}
  // Detached first, while whole: its recorder may still be recording.
  ~ObservationQueue() override { DetachFromRecorder(); }

  void OnEpochRecords(uint32_t epoch, int64_t epoch_start_unix_ns,
                      ObservedBatch& events) noexcept override;
  void OnEpoch(uint32_t epoch, int64_t epoch_start_unix_ns,
               std::span<const ObservedEvent> events) noexcept override;
  void OnStop() noexcept override;

  // The observations queued so far, oldest first; the queue is then empty.
  std::vector<OwnedObservation> Take();
  // Gives an observation's vector back, to be swapped for a later epoch's records.
  void Recycle(OwnedObservation&& observation);

  uint64_t dropped_records() const;
  uint64_t stops() const;

 private:
  // Under mu_: queues `events` (swapped out) unless the bound forbids it.
  void Keep(uint32_t epoch, int64_t epoch_start_unix_ns, ObservedBatch& events);

  const size_t max_records_;
  mutable std::mutex mu_;
  std::vector<OwnedObservation> queued_;  // guarded by mu_
  size_t queued_records_ = 0;             // guarded by mu_
  std::vector<ObservedBatch> spare_;      // guarded by mu_: vectors given back
  uint64_t dropped_records_ = 0;          // guarded by mu_
  uint64_t stops_ = 0;                    // guarded by mu_
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_OWNED_OBSERVATION_H_
