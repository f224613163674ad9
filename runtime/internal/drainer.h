// Copyright 2026 The memtrace Authors.
//
// drainer.h: the background thread that turns ring records into the ledger.
//
// Each round closes one epoch (transport/epoch_clock.h):
//
//   1. Advance the clock to e + 1 (or close it, in the final round) and run the heavy
//      side of the asymmetric fence: a membarrier() system call, which interrupts every
//      CPU running one of the program's threads. Not while the drainer knows one ring
//      and no thread has acquired another since (RingRegistry::acquisitions(), fenced on
//      both sides). A single ring's records are applied in its own order, so a record
//      stamped e that the round could not see yet is applied in the next round, in its
//      place, and nothing of another ring can be ordered against it: a ring acquired
//      later records only epochs after e. A single-threaded program (sqlite3) then never
//      pays for the fence, a system call each epoch that interrupts the program's CPUs
//      (bench/README.md, "Choosing the fence"). The final round and a round a Flush()
//      asked for always fence, and Flush() waits for a fenced one.
//   2. Poll the ring registry: new rings join, retired rings are marked.
//   3. For each ring, wait out a record that was claimed but not yet published (a producer
//      preempted mid-record); after this every record stamped <= e is readable.
//   4. Apply every record stamped e: with one ring, in its order; with several, merged by
//      their order stamps (ApplyMerged), or, where the clock gives no stamps, ring by ring
//      in each ring's order, the first ring the recorder handed out first (its thread's
//      blocks may have no tickets: Recorder::SoleRing()). A release whose ticket names an
//      allocation not yet applied in another
//      ring makes the drainer apply that ring up to the allocation first ("dependency"),
//      so allocations are applied before their releases wherever the rings were read
//      from. Dependencies follow happens-before, which has no cycles; a cycle could only
//      come from corrupt input and is broken and counted (order_conflicts). The first
//      ring's catch-up (below) is no dependency: it may reach records made after the
//      record that asked for it, and dependencies from there that lead back to a ring on
//      the stack end the catch-up, past every first-ring record made before the asking
//      one (ApplyFrom).
//   5. Release the slots read, reclaim retired rings that are empty, settle blocks whose
//      release never came (ledger), and wake callers of Flush().
//
// An epoch of many rings is applied in slices. With more busy threads than CPUs the
// rings can hold millions of records when an epoch closes, and applying them all before
// releasing any ring kept every producer whose ring was full waiting for the whole round
// (seconds: bench/README.md, "More busy threads than CPUs"), long enough to give up and
// drop its record. Steps 4 and 5 therefore run in slices of about
// Config::drain_slice_records records: each slice applies that many of the epoch's
// records in stamp order (ring by ring, where there are no stamps: up to its share of
// every ring's, the first ring's all at once, in the first slice, so that it still goes
// first), hands them to the observer, and releases the slots. The epoch is not over until every ring's
// records of it are applied: Flush() and ReadState() wait for its end, the ledger's
// displaced blocks are settled at its end only, and the next epoch is closed only after
// it. A program with one ring (one thread) never needs a second slice.
//
// Guarantees, given the producer protocol:
//   - The final live set (address, size, scope, layer, site) and every counter equal a
//     sequential replay of the real operations, including frees on another thread and
//     addresses reused across threads, as long as the capture is exact()
//     (capture_integrity.h).
//   - High-water marks: operations in different epochs are applied in happens-before
//     order. Inside an epoch with one ring the ring's own order is the real one, and
//     every high-water mark is exact. Inside an epoch with several, the rings' records
//     are merged by their order stamps (transport/epoch_clock.h, "order inside an
//     epoch"), and every high-water mark (the totals, each layer, each scope) gets the
//     interval that must contain the peak of every order the stamps allow, the real one
//     among them (peak_tracker.h, peak_bounds.h; UsageCounters::high_water_low_bytes and
//     high_water_high_bytes). The value itself is the peak of the merged order.
//     CaptureIntegrity::bounded_epochs counts such epochs. Just after a second ring
//     appears (kFirstRingFirstEpochs), a release without a ticket, and a new block at an
//     address where the first ring makes one in that window, first bring the first ring
//     up to the end of their own window (or up to a record that needs their ring to go on
//     first), since the first ring's blocks may have no tickets: a release without one
//     needs its block's allocation applied, and the oldest block at its address to be the
//     oldest in fact (allocation_ledger.h).
//
// Thread safety: Start/RequestStop/Join from the recorder's owner; Flush from any thread
// except the drainer; ReadState from any thread.

#ifndef MEMTRACE_RUNTIME_INTERNAL_DRAINER_H_
#define MEMTRACE_RUNTIME_INTERNAL_DRAINER_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "runtime/internal/allocation_ledger.h"
#include "runtime/capture_integrity.h"
#include "runtime/internal/cpu_list.h"
#include "runtime/event_observer.h"
#include "runtime/internal/peak_tracker.h"
#include "runtime/internal/sharded_apply.h"
#include "runtime/internal/stack_frame_table.h"
#include "runtime/internal/thread_cpu_time.h"
#include "transport/cache_line.h"
#include "transport/epoch_clock.h"
#include "transport/ring_registry.h"

namespace memtrace {

class Drainer {
 public:
  // The thread is named "memtrace-drain" and, when `cpus` is not empty, restricted to
  // those CPUs (Config::thread_cpus, checked by Config::Validate()).
  // `slice_records`: Config::drain_slice_records (the header, "slices").
  // `stacks`: where the frames of kStackFrames records are kept
  // (Config::keep_stack_frames), or nullptr to keep none.
  // `appliers`: the threads that apply records to the ledger (Config::tracer_threads,
  // resolved by TracerThreadsFor()): 1, the drainer thread itself; more: the drainer and
  // appliers - 1 threads of its own (sharded_apply.h).
  Drainer(EpochClock* clock, RingRegistry* registry, AllocationLedger* ledger,
          StackFrameTable* stacks, absl::Duration period, absl::Duration idle_period,
          uint32_t slice_records, CpuList cpus = {}, int appliers = 1);
  ~Drainer();

  Drainer(const Drainer&) = delete;
  Drainer& operator=(const Drainer&) = delete;

  // Opens the clock at the next epoch and starts the thread.
  void Start();
  // Runs a final round (closing the clock) and joins the thread. Idempotent.
  void Stop();
  bool running() const noexcept { return running_.load(std::memory_order_acquire); }

  // Returns once every record stamped with an epoch up to the current one is applied.
  // Must not be called on the drainer thread (OnDrainerThread()).
  void Flush();

  bool OnDrainerThread() const noexcept {
    return std::this_thread::get_id() == drainer_id_.load(std::memory_order_acquire);
  }

  // Asks for a round now: a producer whose ring passed a quarter full (spsc_ring.h), or
  // one waiting for space. Any thread; no lock. A hint: a wake that races with the
  // drainer going to sleep may be missed, and the drainer then wakes on its period.
  void Wake() noexcept;

  // A round that finds fewer new records than this, in all rings together, is quiet.
  static constexpr uint64_t kQuietRecords = 64;

  // The sleep before the next round, after a round that found `records` new records:
  // after a quiet round, twice `sleep`, at most max(idle_period, period); after a busy one,
  // `period`.
  static absl::Duration NextSleep(absl::Duration sleep, uint64_t records,
                                  absl::Duration period, absl::Duration idle_period);

  // Hands every applied record to `observer` after each epoch (event_observer.h). Call
  // before Start() or while stopped; null detaches.
  void SetObserver(EventObserver* observer) noexcept;
  // Detaches `observer` if it is the one attached, from any thread, at any time: returns
  // once no callback of it is under way, and none comes after (observer_mu_).
  void DetachObserver(EventObserver* observer) noexcept;
  EventObserver* observer() const noexcept {
    // Relaxed: read by the owner while stopped, or to decide whether to collect records.
    return observer_.load(std::memory_order_relaxed);
  }
  // How often the observer gets a UsageSample (Config::timeline_period; 0: never). Call
  // before Start().
  void set_timeline_period(absl::Duration period) noexcept {
    timeline_period_ns_ = absl::ToInt64Nanoseconds(period);
  }

  // CPU time (user + system) of the drainer's threads, in ns: every thread this drainer
  // has run, the running one up to now. Any thread.
  uint64_t CpuNs() const { return cpu_.TotalNs(); }
  // The same for the threads that applied records beside it (appliers > 1; else 0).
  uint64_t ApplierCpuNs() const {
    uint64_t ns = 0;
    for (int i = 0; i + 1 < appliers_; ++i) ns += applier_cpu_[i].TotalNs();
    return ns;
  }

  // ---- fork() ---------------------------------------------------------------------------
  //
  // A child of fork() has one thread, the one that called fork(). Its copy of this drainer
  // has no thread, and its copies of the rings hold what the parent's threads had
  // published. For a child that traces on (the interposer's MEMTRACE_TRACE_FORKS):
  //   - HoldForFork(), from a pthread_atfork() prepare handler, waits for a round in
  //     progress to finish and keeps the drainer between rounds, so that the ledger the
  //     child copies is whole. Producers go on recording into their rings meanwhile.
  //   - ReleaseAfterFork(), from the parent's handler, lets the drainer go on.
  //   - ApplyPublishedInForkedChild(), from the child's handler, applies every record the
  //     child's copies of the rings hold, whatever its epoch, then releases the hold. The
  //     ledger then holds what was live in the parent at the fork. Returns how many
  //     records the parent's threads were writing at that moment (claimed, never
  //     published: those operations are missing). Detaches the observer first: the
  //     parent's sink has the records already. Call once, on the child's one thread.
  void HoldForFork() { state_mu_.lock(); }
  void ReleaseAfterFork() { state_mu_.unlock(); }
  uint64_t ApplyPublishedInForkedChild();

  // Calls fn(const AllocationLedger&, const CaptureIntegrity&) with the drainer paused
  // between epochs (waiting for the slices of one to end). The integrity passed in has
  // only the drainer's own counters filled. On the drainer thread (an observer) it does
  // not wait, and may see an epoch between two slices.
  template <typename Fn>
  void ReadState(Fn&& fn) const {
    std::unique_lock<std::mutex> lock(state_mu_);
    state_cv_.wait(lock, [this] { return !applying_ || OnDrainerThread(); });
    fn(*ledger_, counters_);
  }

  // The share of each ring (but the first) in one slice of `slice_records`, with `rings`
  // rings: at least one record.
  static uint64_t SliceShare(uint32_t slice_records, size_t rings) noexcept {
    return std::max<uint64_t>(1, slice_records / std::max<size_t>(rings, 1));
  }
  // Epochs that needed more than one slice (tests, bench). Any thread.
  uint64_t sliced_epochs() const noexcept {
    return sliced_epochs_.load(std::memory_order_relaxed);
  }
  // Times a round began waiting for a record being written (AwaitClaims): tests use it to
  // know that a round is waiting. Any thread.
  uint64_t claim_waits() const noexcept { return claim_waits_.load(std::memory_order_relaxed); }
  // Slices applied so far, all epochs: moves while the drainer makes progress, which a
  // producer waiting for room reads (Recorder::WaitForSpace). Any thread.
  uint64_t slices_applied() const noexcept {
    return slices_applied_.load(std::memory_order_relaxed);
  }

 private:
  struct Cursor {
    SpscRing* ring;
    uint64_t pos;    // next record to apply
    uint64_t limit;  // end of what is published this round
    bool retired;
    bool on_stack;
    // Its thread ran its exit hook and still records into it (RingRegistry::Orphan()):
    // retired once the thread (kernel id `tid`, from its registration) is gone.
    bool orphaned = false;
    int32_t tid = 0;
    // The name the observer was last given for the ring's thread (OnThreadStart()).
    char name[16] = {};
    // Between a kRemap and its kRemapTarget (the next record of this ring, perhaps in the
    // next epoch): the moved block's scope and site (`moved`). With appliers (parallel_),
    // also the batch and slot of the kRemap, `moved` being filled once that batch is
    // applied (FlushBatch).
    ShardedApply::PendingMove move;
    // The order-stamp segment being applied, while the epoch is bounded (peak_tracker.h).
    PeakTracker::Open open{};
    // A record being written that a round stopped waiting for (AwaitClaims): the head
    // and claim it saw then. Not waited for again while both stay.
    uint64_t stalled_head = 0;
    uint64_t stalled_claim = 0;
    // The segment `open` will be in once the tracker has done what is asked of it: with
    // appliers, a Begin waits in the batch (ShardedApply::BeginSegment).
    bool segment_open = false;
    uint64_t segment = 0;
  };
  // What the waits of one round found, for counters_ (written under the state lock).
  struct ClaimWaits {
    uint64_t dropped = 0;
    uint64_t stalled = 0;
    uint64_t max_fill = 0;
  };

  void Run();
  // Applies one slice of the epoch being applied, first closing a new one when none is
  // (adding the records it finds to *records). The final round applies every record and
  // closes the clock. Returns true when more work is waiting right away: the epoch has
  // slices left, or a ring is still more than a quarter full.
  // `*flush`: a Flush() asked for this round; cleared once an epoch is closed for it.
  bool Round(bool final_round, bool* flush, uint64_t* records);
  // Steps 1-3 of the header: closes open_epoch_ and finds each ring's records.
  void BeginEpoch(bool final_round, bool flush, uint64_t* records);
  // Steps 4-5 for one slice of the epoch being applied (all of it when `whole`). Returns
  // true when the epoch is over.
  bool ApplySlice(bool whole, uint64_t* backlog);
  // Whether this round may close its epoch without the heavy fence (drainer.h, step 1).
  bool SkipHeavyFence(bool final_round, bool flush) const noexcept;
  void PollRegistry();
  // A ring's thread has the name `name` now: when it is not the name the observer was
  // given, the thread is announced again with it (AnnounceThreads()).
  void NoteThreadName(Cursor& c, const char* name);
  // The final round: each thread that still has its ring, named as the kernel names it
  // now (a thread named after it took its ring, by itself or by another thread).
  void NoteLiveThreadNames();
  // Hands the threads PollRegistry() saw take a ring, or change their name, to the
  // observer (OnThreadStart()).
  void AnnounceThreads();
  // Returns how many records the ring holds for this round, after waiting for records
  // being written to be published. Without the state lock, and bounded: a thread stopped
  // for good in the middle of a record (it called _exit() or siglongjmp() from a signal
  // handler that interrupted it there, or pthread_exit(), or was cancelled) would
  // otherwise hold every round, snapshot and fork handler forever. A round gives up after
  // kClaimWait (counted in stalled_claims; the record is applied late if it ever comes,
  // counted in late_records) and does not wait again for the same claim; the final round
  // waits kFinalClaimWait and counts what never came in events_dropped.
  uint64_t AwaitClaims(Cursor& c, bool final_round, ClaimWaits* waits);
  // Long enough that a thread preempted in the middle of a record on a loaded machine
  // (more busy threads than CPUs) is almost never given up on.
  static constexpr auto kClaimWait = std::chrono::milliseconds(1000);
  static constexpr auto kFinalClaimWait = std::chrono::milliseconds(1000);
  // Epochs, from the one in which a second ring appears, that apply the first ring first
  // (PlanEpoch).
  static constexpr uint32_t kFirstRingFirstEpochs = 3;
  // Applies records stamped `epoch` (or earlier) in dependency order: all of the first
  // ring's, and at most `share` more of each other ring's (dependencies are applied
  // whatever the share). Returns true when no ring has any left.
  bool ApplyEpoch(uint32_t epoch, uint64_t share = ~uint64_t{0});
  // Applies cursor `base`'s records of `epoch` below `target`, and first, as its releases
  // need them, the records of other rings they depend on (ApplyEpoch).
  void ApplyFrom(size_t base, uint64_t target, uint32_t epoch, bool prefetch);
  // ApplyEpoch in time order: repeatedly the ring whose next record is the earliest by
  // its stamps, up to the next record of another ring (the header, step 4), until
  // `budget` records are applied or the epoch is.
  void ApplyMerged(uint32_t epoch, uint64_t budget, bool prefetch);
  // The end of c's run from c.pos: the first position below `end`, past the end of the
  // current segment, whose EstimateTime() passes `time`, or `end`.
  uint64_t RunEnd(const Cursor& c, uint64_t end, uint64_t time) const noexcept;
  // The stamp that ends c's segment k (segment k + 1's), or 0 while it is not published
  // or the clock gives none; and the same as a window end, kOpenWindow for 0.
  uint64_t NextStamp(const Cursor& c, uint64_t k) const noexcept;
  uint64_t WindowEnd(const Cursor& c, uint64_t k) const noexcept;
  // The end of the window of c's segment k: WindowEnd(), or the segment's own stamp when
  // every record has one (its window is that instant).
  uint64_t SegmentEnd(const Cursor& c, uint64_t k) const noexcept;
  // The time, by its ring's stamps, at which the record at `position` of `c` was made:
  // between the stamps around it, in proportion to its place in its segment.
  uint64_t EstimateTime(const Cursor& c, uint64_t position) const noexcept;
  // Steps 1-3 also decide how the epoch is applied: whether more than one ring has
  // records of it (then in time order, with its peaks bounded), and whether the first
  // ring goes first (a second thread has just begun recording).
  void PlanEpoch(uint32_t epoch);
  // Where the first ring must be applied to before c's next record, one that waits for it
  // just after a second ring appeared (ApplyFrom): past every record of the epoch whose
  // segment began by the end of that record's window.
  uint64_t FirstRingBefore(const Cursor& c, uint32_t epoch) const;
  // Whether the first ring, from its cursor up to `target`, holds a record that makes a
  // block at the address `e` (another ring's) makes one (ApplyFrom).
  bool FirstRingMakesBlockAt(const Event& e, uint64_t target) const noexcept;
  // Opens the segment of c's next record in the tracker (a new one: ApplyFrom checks).
  void OpenSegment(Cursor& c);
  // The bounded epoch's end: each counter's peak interval, into the ledger.
  void BoundPeaks();
  // The epoch after `epoch`, skipping kClosed and 0 (never an epoch) when the counter wraps.
  static uint32_t NextEpoch(uint32_t epoch) noexcept {
    const uint32_t next = epoch + 1;
    return next == EpochClock::kClosed || next == 0 ? EpochClock::kFirstEpoch : next;
  }
  bool InSegment(const Cursor& c, uint64_t position, uint32_t epoch) const noexcept;
  // The cursor index and position of the record `e` depends on, or -1. For a release
  // whose (non-zero) ticket names another ring than its own (ApplyEpoch checks that).
  int Dependency(const Event& e, uint32_t epoch, uint64_t* position) const;
  // Applies `e`, the record at c.pos.
  void Apply(Cursor& c, const Event& e);
  // Applies the batch (parallel_), its outcomes into counters_, and the moves it began
  // into their cursors. Under state_mu_; before anything reads the ledger.
  void FlushBatch();
  // The tracker's segment changes: at once, or in the batch at their place.
  void UseSegment(Cursor& c);
  void CloseSegment(Cursor& c);
  void RemoveCursor(size_t index);

  EpochClock* const clock_;
  RingRegistry* const registry_;
  AllocationLedger* const ledger_;
  StackFrameTable* const stacks_;  // guarded as ledger_ is; nullptr: none kept
  const absl::Duration period_;
  const absl::Duration idle_period_;
  const uint32_t slice_records_;
  const CpuList cpus_;  // where the drainer thread runs (empty: anywhere)
  const int appliers_;  // the constructor's `appliers`, at least 1
  // Each applier thread's CPU time, by applier index - 1. Declared before parallel_,
  // whose threads write it until they are joined.
  std::unique_ptr<ThreadCpuTime[]> applier_cpu_;
  // With appliers_ > 1, from Start() on: the memory records of a slice are added to a
  // batch, applied by appliers_ threads together (sharded_apply.h) when it is full and at
  // the slice's end.
  std::unique_ptr<ShardedApply> parallel_;
  // The segment the batch's last UseSegment named (what the tracker will be using).
  PeakTracker::Open* batch_open_ = nullptr;

  // Drainer-thread state. The vectors are line-aligned (transport/cache_line.h): the
  // drainer writes a cursor with every record it applies.
  LineAlignedVector<Cursor> cursors_;
  LineAlignedVector<int32_t> cursor_of_ring_;  // ring id -> index in cursors_, or -1
  // ApplyFrom()'s rings to apply, each up to a target. The first ring's catch-up
  // (FirstRingBefore) goes only as far as it can: it ends, and every ring pushed above
  // it with it, not in a conflict, at a record that needs a ring already on the stack,
  // which shows that it has gone past the record that asked for it (ApplyFrom).
  struct Pending {
    size_t index;
    uint64_t target;
  };
  LineAlignedVector<Pending> stack_;
  struct MergeEntry {
    uint64_t time;  // EstimateTime() of the ring's next record
    size_t index;   // in cursors_
  };
  std::vector<MergeEntry> merge_heap_;  // ApplyMerged()
  uint32_t open_epoch_ = EpochClock::kFirstEpoch;
  int64_t open_epoch_started_ns_ = 0;
  // kRegistered notices polled, against RingRegistry::acquisitions().
  uint64_t registrations_seen_ = 0;
  // Of those, and of the names that changed (NoteThreadName()), the ones not yet announced
  // to the observer (AnnounceThreads()).
  std::vector<RingRegistry::Notice> thread_starts_;
  // The epoch the last round closed without the heavy fence, or 0 (never an epoch) when
  // it fenced.
  uint32_t unfenced_epoch_ = 0;
  // What the round that closed the epoch being applied (applying_) found; open_epoch_
  // is that epoch until it is over.
  bool pending_fenced_ = false;
  bool pending_final_ = false;
  uint32_t pending_next_ = 0;
  int64_t pending_started_ns_ = 0;
  int64_t pending_started_unix_ns_ = 0;
  uint32_t slices_ = 0;  // slices of the pending epoch so far
  std::atomic<uint64_t> sliced_epochs_{0};
  std::atomic<uint64_t> claim_waits_{0};
  std::atomic<uint64_t> slices_applied_{0};

  // Round-trip with Flush()/Stop().
  std::mutex mu_;
  std::condition_variable wake_cv_;
  std::condition_variable done_cv_;
  bool stop_requested_ = false;
  bool flush_requested_ = false;
  // stop_requested_, readable without mu_ by a round waiting for a claim (AwaitClaims).
  std::atomic<bool> stop_pending_{false};
  // The last epoch closed with the heavy fence: every record stamped with it or earlier
  // is applied.
  uint32_t fenced_epoch_ = 0;
  uint64_t rounds_ = 0;
  std::atomic<bool> wake_{false};
  std::atomic<bool> running_{false};
  std::thread thread_;
  std::atomic<std::thread::id> drainer_id_{};
  ThreadCpuTime cpu_;  // the drainer thread's CPU time, for CpuNs()

  // How the epoch being applied goes (PlanEpoch): in time order, and with its peaks
  // bounded, when more than one ring has records of it.
  bool bounded_ = false;
  bool merged_ = false;
  bool first_ring_first_ = false;  // a second ring appeared lately (PlanEpoch)
  // The epoch in which a second ring was first seen: the first ring goes first in it and
  // the two after (PlanEpoch). 0: not yet.
  uint32_t second_ring_epoch_ = 0;
  PeakTracker tracker_;

  // Written while stopped (SetObserver) or under observer_mu_ (DetachObserver); the
  // drainer reads it relaxed to decide whether to collect records, and again under
  // observer_mu_ around the callbacks, which a detach waits out.
  std::atomic<EventObserver*> observer_{nullptr};
  std::mutex observer_mu_;
  ObservedBatch observed_;  // this epoch's records, for the observer
  // Memory over time (usage_sample.h): the period, when the next sample is due (steady
  // ns), and the sample taken at the end of the epoch just applied, for the observer.
  int64_t timeline_period_ns_ = 0;
  int64_t next_sample_ns_ = 0;
  bool sample_taken_ = false;
  UsageSample sample_;
  // Fills sample_ from the ledger and the process's resident set. Under state_mu_.
  void TakeUsageSample();
  int64_t open_epoch_started_unix_ns_ = 0;

  // Guards ledger_ and counters_ against readers, who also wait while `applying_`: an
  // epoch is closed and not yet fully applied (between two of its slices). Written under
  // state_mu_ by the drainer thread only, which also reads it without the lock.
  mutable std::mutex state_mu_;
  mutable std::condition_variable state_cv_;
  bool applying_ = false;
  CaptureIntegrity counters_;
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_INTERNAL_DRAINER_H_
