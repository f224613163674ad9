// Copyright 2026 The memtrace Authors.
//
// event_observer.h: how sinks see the event stream.
//
// The drainer applies records one epoch at a time (drainer.h). An EventObserver attached
// to a recorder receives, after each epoch, every record applied in that epoch, in the
// order the ledger applied it (an epoch of many threads' records may come in several
// calls with the same epoch, one per slice: drainer.h), with the ring (thread) it came from, its ticket, and the
// wall-clock time at which the epoch began. Records of one thread keep their order; two
// threads' records inside one epoch are in the drainer's order, which respects every
// allocation-before-release dependency.
//
// Thread safety: OnEpoch and OnStop are called on the drainer thread, one at a time. They
// must not block: a sink copies what it needs and writes on its own thread (the JSONL
// sink does), counting anything it cannot keep.

#ifndef MEMTRACE_RUNTIME_EVENT_OBSERVER_H_
#define MEMTRACE_RUNTIME_EVENT_OBSERVER_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/usage_sample.h"
#include "transport/event.h"
#include "transport/huge_page_allocator.h"

namespace memtrace {

struct ObservedEvent {
  Event event;
  uint64_t ticket;  // this record's own ticket (transport/ticket.h): ring id and position
};

// The drainer's vector of records for the observer, which a sink may keep and give back.
// Such a vector grows to an epoch's worth (a sink reserves 65,536 records, 2.6 MiB) and
// passes between the drainer and the sink's writer; from 1 MiB on it lives in huge pages
// (transport/huge_page_allocator.h), so that filling it faults once per 2 MiB instead of
// once per 4 KiB page.
using ObservedBatch =
    std::vector<ObservedEvent, HugePageAllocator<ObservedEvent, size_t{1} << 20>>;
// The room made in such a vector before records fill it, in records: an ordinary epoch's
// (65,536 records, 2.6 MiB, in huge pages). A vector grown by doubling instead is new
// memory at each step, every page of it a fault, and its records copied at each step.
inline constexpr size_t kObservedBatchReserve = size_t{1} << 16;

class EventObserver {
 public:
  // Detaches from its recorder, if still attached, so that the recorder never reaches a
  // destroyed observer. Only a stopped recorder's: while it records, the drainer may be
  // inside a callback of the derived object, already destroyed by then, so an observer
  // that may be destroyed while its recorder records detaches first in its own
  // destructor (DetachFromRecorder(); JsonlSink and ObservationQueue do).
  virtual ~EventObserver() { DetachFromRecorder(); }

  // Whether this observer is attached to a recorder (Recorder::SetObserver()), and
  // whether that recorder is recording now. An observer is attached to one recorder at a
  // time: a capture holds one tracer's records.
  bool attached() const noexcept { return attachment_.recorder != nullptr; }
  bool recorder_running() const noexcept {
    return attached() && attachment_.running(attachment_.recorder);
  }

  // Records applied in `epoch`, which began at `epoch_start_unix_ns` (all of them, or one
  // slice of them).
  virtual void OnEpoch(uint32_t epoch, int64_t epoch_start_unix_ns,
                       std::span<const ObservedEvent> events) noexcept = 0;

  // What the drainer calls: the same records in its own vector. An observer that keeps
  // the records may take them without a copy by swapping `events` with another vector
  // (empty, ideally with capacity); the drainer clears and reuses whatever `events` holds
  // afterwards. The default hands them to OnEpoch().
  virtual void OnEpochRecords(uint32_t epoch, int64_t epoch_start_unix_ns,
                              ObservedBatch& events) noexcept {
    OnEpoch(epoch, epoch_start_unix_ns, events);
  }

  // A thread took ring `thread` (the records' ring id, Ticket::RingId(): a capture's
  // "thread"): the ring's records from now on are that thread's, kernel thread id `tid`,
  // named `name` when it took the ring. Called before any of them, and after every
  // record of the thread that had the ring before (a ring is reused once its thread has
  // exited and its records are applied). Called again with the same `tid` when the
  // thread's name changed (seen at its exit hook, or at the final epoch while it runs),
  // possibly after its last record.
  virtual void OnThreadStart(uint32_t thread, int32_t tid, const char* name) noexcept {
    (void)thread;
    (void)tid;
    (void)name;
  }
  // Memory at the end of an epoch, every Config::timeline_period and at the last epoch
  // (usage_sample.h); after that epoch's OnEpochRecords.
  virtual void OnUsageSample(const UsageSample& sample) noexcept { (void)sample; }

  // The recorder stopped; no more epochs will come until it starts again.
  virtual void OnStop() noexcept {}

 protected:
  // Detaches this observer from its recorder, if any, also while the recorder runs:
  // returns once the drainer is not inside one of its callbacks (or at once, from inside
  // one), and the drainer calls it no more (what it applies meanwhile is not observed).
  // An observer whose owner may destroy it before stopping the tracer calls this first in
  // its destructor, while the object is whole (JsonlSink does). Not concurrently with the
  // recorder's own destruction or SetObserver() on another thread.
  void DetachFromRecorder() noexcept {
    if (attached()) attachment_.detach(attachment_.recorder, this);
  }

 private:
  friend class Recorder;
  // Set and cleared by the recorder (under its lifecycle lock, and by the detach).
  struct Attachment {
    void* recorder = nullptr;
    void (*detach)(void* recorder, EventObserver* observer) noexcept = nullptr;
    bool (*running)(const void* recorder) noexcept = nullptr;
  };
  Attachment attachment_;
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_EVENT_OBSERVER_H_
