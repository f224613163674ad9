// Copyright 2026 The memtrace Authors.

#include "runtime/internal/drainer.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "runtime/internal/thread_state.h"
#include "runtime/internal/memtrace_thread.h"
#include "transport/prefetch.h"
#include "transport/ticket.h"

namespace memtrace {
namespace {

int64_t UnixNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool IsRelease(EventKind kind) {
  return kind == EventKind::kFree || kind == EventKind::kResize || kind == EventKind::kRemap;
}

// The records that make a block at their address.
bool MakesBlock(EventKind kind) {
  return kind == EventKind::kAlloc || kind == EventKind::kRemapTarget;
}

// The records that look up a block by address in the ledger (word 0 is an address).
bool LooksUpBlock(EventKind kind) {
  return kind == EventKind::kAlloc || kind == EventKind::kFree || kind == EventKind::kResize ||
         kind == EventKind::kRemap || kind == EventKind::kRemapTarget;
}

// How many records ahead ApplyEpoch prefetches: far enough for a miss to memory (a
// record takes tens of nanoseconds to apply), near enough to stay in the cache.
constexpr uint64_t kPrefetchAhead = 8;

// Whether a record of `kind` changes the ledger (with appliers: goes to the batch).
bool ChangesLedger(EventKind kind) {
  switch (kind) {
    case EventKind::kAlloc:
    case EventKind::kResize:
    case EventKind::kRemap:
    case EventKind::kRemapTarget:
    case EventKind::kFree:
    case EventKind::kArenaReset:
      return true;
    default:
      return false;
  }
}

// Below this many live blocks the ledger's tables stay in the caches and reading ahead is
// only extra work; above it, a lookup misses the caches and the prefetch hides the miss
// (BM_DrainerThroughput, bench/README.md).
#ifndef MEMTRACE_PREFETCH_LIVE_BLOCKS
#define MEMTRACE_PREFETCH_LIVE_BLOCKS 65536
#endif
constexpr uint64_t kPrefetchLiveBlocks = MEMTRACE_PREFETCH_LIVE_BLOCKS;

// How many records ahead Apply() asks for the observer's batch lines: 24 records of 40
// bytes, 15 lines.
constexpr size_t kObservedPrefetchAhead = 24;

}  // namespace

Drainer::Drainer(EpochClock* clock, RingRegistry* registry, AllocationLedger* ledger,
                 StackFrameTable* stacks, absl::Duration period, absl::Duration idle_period,
                 uint32_t slice_records, CpuList cpus, int appliers)
    : clock_(clock),
      registry_(registry),
      ledger_(ledger),
      stacks_(stacks),
      period_(period),
      idle_period_(idle_period),
      slice_records_(slice_records),
      cpus_(std::move(cpus)),
      appliers_(std::clamp(appliers, 1, AllocationLedger::kShards)),
      applier_cpu_(std::make_unique<ThreadCpuTime[]>(static_cast<size_t>(appliers_ - 1))) {
  counters_.ring_capacity = uint64_t{1} << registry->capacity_log2();
  counters_.uses_membarrier = clock_->UsesMembarrier();
  ledger_->set_peak_tracker(&tracker_);
  // Nothing records until Start() opens the clock.
  clock_->Close();
}

Drainer::~Drainer() { Stop(); }

void Drainer::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_.load(std::memory_order_relaxed)) return;
  stop_requested_ = false;
  stop_pending_.store(false, std::memory_order_relaxed);  // no round runs yet
  open_epoch_started_ns_ = SteadyNowNs();
  open_epoch_started_unix_ns_ = UnixNowNs();
  clock_->Reopen(open_epoch_);
  if (appliers_ > 1 && parallel_ == nullptr) {
    parallel_ = std::make_unique<ShardedApply>(ledger_, appliers_, cpus_, applier_cpu_.get());
  } else if (parallel_ != nullptr) {
    parallel_->StartThreads();
  }
  // Release: pairs with the acquire load in running(); the thread below sees the state.
  running_.store(true, std::memory_order_release);
  thread_ = StartMemtraceThread([this] { Run(); });  // signals blocked: memtrace_thread.h
}

void Drainer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_.load(std::memory_order_relaxed)) return;
    stop_requested_ = true;
    // Relaxed: a hint for a round already waiting in AwaitClaims(); the final round
    // itself reads stop_requested_ under mu_.
    stop_pending_.store(true, std::memory_order_relaxed);
  }
  wake_cv_.notify_all();
  thread_.join();
  // The final round applied its last batch: the appliers end too, so that a stopped
  // recorder leaves no thread of memtrace's running (Start() starts them again).
  if (parallel_ != nullptr) parallel_->StopThreads();
  std::lock_guard<std::mutex> lock(mu_);
  // Release: pairs with the acquire load in running().
  running_.store(false, std::memory_order_release);
  done_cv_.notify_all();
}

void Drainer::DetachObserver(EventObserver* observer) noexcept {
  // From inside a callback (an observer that detaches in OnStop(), a fatal signal's
  // handler finishing the capture) this thread holds observer_mu_ already, and reads the
  // observer again before each later callback; from any other thread, the lock waits
  // out the callbacks under way.
  std::unique_lock<std::mutex> lock(observer_mu_, std::defer_lock);
  if (!OnDrainerThread()) lock.lock();
  EventObserver* expected = observer;
  // Relaxed: the mutex (or this thread's own order) orders it against the callbacks.
  observer_.compare_exchange_strong(expected, nullptr, std::memory_order_relaxed);
}

void Drainer::SetObserver(EventObserver* observer) noexcept {
  // Relaxed: set while the drainer is stopped; its start orders this before its reads.
  observer_.store(observer, std::memory_order_relaxed);
  // Room for the first epoch's records now, as a sink gives back its vectors with room
  // (JsonlSink::OnEpochRecords): grown by doubling, the vector of a traced sqlite3 run's
  // first epoch took the drainer about 240 page faults and as many copies of it.
  if (observer != nullptr && observed_.capacity() < kObservedBatchReserve) {
    try {
      observed_.reserve(kObservedBatchReserve);
    } catch (const std::bad_alloc&) {
      // The vector grows as records come instead.
    }
  }
}

void Drainer::Wake() noexcept {
  // Relaxed: a hint; the drainer also wakes on its period.
  if (!wake_.exchange(true, std::memory_order_relaxed)) wake_cv_.notify_one();
}

void Drainer::Flush() {
  // Every record made before this call read an epoch no later than the one read here
  // (read-read coherence along happens-before), so once that epoch is closed they are all
  // applied.
  const uint32_t target = clock_->Load();
  std::unique_lock<std::mutex> lock(mu_);
  if (target == EpochClock::kClosed) {
    // Stopped, or stopping: Stop() drains everything before it returns.
    while (running_.load(std::memory_order_relaxed) && stop_requested_) done_cv_.wait(lock);
    return;
  }
  // Waits for an epoch closed with the heavy fence: after one that was not, a record
  // stamped with it may still be on its way (Drainer::SkipHeavyFence), and the round this
  // asks for fences.
  while (running_.load(std::memory_order_relaxed) && EpochBefore(fenced_epoch_, target)) {
    flush_requested_ = true;
    wake_cv_.notify_all();
    done_cv_.wait(lock);
  }
}

uint64_t Drainer::ApplyPublishedInForkedChild() {
  // The hold (HoldForFork) is this thread's: the child's copy of the mutex is locked by
  // the thread that forked, which is this one. No other thread exists to race with.
  observer_.store(nullptr, std::memory_order_relaxed);  // the only thread now
  // The parent's drainer may have been inside an observer callback, holding the lock
  // the child's copy now holds for no thread: a fresh one.
  new (&observer_mu_) std::mutex;
  observed_.clear();
  // The appliers are the parent's: this thread applies alone. The batch is empty: the
  // parent's drainer applies one under the hold.
  if (parallel_ != nullptr) {
    parallel_->AbandonAfterFork();
    parallel_.reset();
  }
  // The parent's drainer may have been between two slices of an epoch: its rest is
  // applied below with the epochs after it.
  applying_ = false;
  // Applied ring by ring: no bounds are computed, and only one ring's order is real.
  bounded_ = merged_ = false;
  tracker_.Use(nullptr);
  PollRegistry();
  ledger_->set_ordered(cursors_.size() <= 1);
  uint64_t unpublished = 0;
  for (Cursor& c : cursors_) {
    const uint64_t head = c.ring->LoadHead();
    const uint64_t claim = c.ring->LoadClaim();
    // A claim beyond the head belongs to a thread that does not exist here; nothing will
    // ever publish it.
    if (claim > head) unpublished += claim - head;
    c.limit = head;
  }
  // Records carry epochs from the open one (or the one before it, closed without the
  // fence) up to the clock's: the clock may be one ahead when the fork came while a round
  // waited for the hold. Apply them epoch by epoch, in the order rounds would have.
  uint32_t last = clock_->Load();
  if (last == EpochClock::kClosed) last = open_epoch_;
  uint32_t epoch = open_epoch_;
  while (EpochBefore(epoch, last)) {
    ApplyEpoch(epoch);
    epoch = NextEpoch(epoch);
  }
  ApplyEpoch(epoch);
  ledger_->SettleDisplaced();
  state_mu_.unlock();
  return unpublished;
}

absl::Duration Drainer::NextSleep(absl::Duration sleep, uint64_t records,
                                  absl::Duration period, absl::Duration idle_period) {
  if (records >= kQuietRecords) return period;
  return std::max(period, std::min(sleep * 2, idle_period));
}

void Drainer::Run() {
  runtime_internal::MarkInternalThread();
  PlaceMemtraceThread("memtrace-drain", cpus_);
  cpu_.Attach();
  // Release: pairs with the acquire load in OnDrainerThread().
  drainer_id_.store(std::this_thread::get_id(), std::memory_order_release);
  std::unique_lock<std::mutex> lock(mu_);
  absl::Duration sleep = period_;
  for (;;) {
    wake_cv_.wait_for(lock, absl::ToChronoNanoseconds(sleep), [&] {
      return stop_requested_ || flush_requested_ || wake_.load(std::memory_order_relaxed);
    });
    const bool final_round = stop_requested_;
    // A round that began after a Flush() asked for it runs the heavy fence (Flush()).
    bool flush = flush_requested_;
    flush_requested_ = false;
    // Relaxed: a hint, see Wake().
    wake_.store(false, std::memory_order_relaxed);
    lock.unlock();
    // Keep going without sleeping while an epoch has slices left or some ring is more
    // than a quarter full.
    uint64_t records = 0;
    while (Round(final_round, &flush, &records) && !final_round) {
    }
    sleep = NextSleep(sleep, records, period_, idle_period_);
    lock.lock();
    ++rounds_;
    done_cv_.notify_all();
    if (final_round) {
      cpu_.Detach();
      return;
    }
  }
}

bool Drainer::SkipHeavyFence(bool final_round, bool flush) const noexcept {
  // One ring (drainer.h, step 1): its records are applied in its own order whatever their
  // stamps, so an epoch needs no watermark unless another ring can hold records stamped
  // with it. The final round always fences (after it no producer may touch a ring), so
  // does a round a Flush() asked for (what it applies, Flush() promises), and so does
  // every round where producers run real fences instead (nothing to save).
  if (final_round || flush || !clock_->UsesMembarrier() || cursors_.size() > 1) return false;
  // Pairs with the fence after RingRegistry::CountAcquisition(): store buffering, a
  // seq_cst fence on each side. Either a thread that acquired a ring is counted below (so
  // this round fences), or its first epoch load, after its fence, reads the epoch just
  // advanced, and none of its records carries the epoch being closed.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return registry_->acquisitions() == registrations_seen_;
}

bool Drainer::Round(bool final_round, bool* flush, uint64_t* records) {
  uint64_t backlog = 0;
  if (applying_) {  // this thread's own write: no lock
    // The epoch an earlier round closed has slices left. The final round applies them all
    // and then closes the clock; a Flush() waits for an epoch closed after its call, so
    // *flush stays set for that one.
    const bool over = ApplySlice(final_round, &backlog);
    if (!final_round) return !over || backlog * 4 > counters_.ring_capacity;
  }
  BeginEpoch(final_round, *flush, records);
  *flush = false;
  const bool over = ApplySlice(final_round, &backlog);
  return !over || backlog * 4 > counters_.ring_capacity;
}

void Drainer::BeginEpoch(bool final_round, bool flush, uint64_t* records) {
  const uint32_t epoch = open_epoch_;
  pending_next_ = NextEpoch(epoch);
  pending_started_ns_ = open_epoch_started_ns_;
  pending_started_unix_ns_ = open_epoch_started_unix_ns_;
  if (final_round) {
    clock_->Close();
  } else {
    clock_->Advance(pending_next_);
  }
  open_epoch_started_ns_ = SteadyNowNs();
  open_epoch_started_unix_ns_ = UnixNowNs();
  // The heavy side of the watermark (epoch_clock.h, step (6)), unless one ring is all
  // there is (SkipHeavyFence).
  pending_final_ = final_round;
  pending_fenced_ = !SkipHeavyFence(final_round, flush);
  if (pending_fenced_) clock_->HeavyFence();
  // Readers (Inspect, Integrity) see the registry and the ledger between epochs only.
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    PollRegistry();
  }
  // Records being written are waited for without the lock: a thread that stopped in the
  // middle of one holds up this round for a bounded time, and no reader, snapshot or
  // fork handler at all.
  ClaimWaits waits;
  for (Cursor& c : cursors_) *records += AwaitClaims(c, final_round, &waits);
  std::lock_guard<std::mutex> lock(state_mu_);
  counters_.events_dropped += waits.dropped;
  counters_.stalled_claims += waits.stalled;
  counters_.max_ring_fill = std::max(counters_.max_ring_fill, waits.max_fill);
  PlanEpoch(epoch);
  applying_ = true;
  slices_ = 0;
}

void Drainer::PlanEpoch(uint32_t epoch) {
  size_t rings = 0;
  for (const Cursor& c : cursors_) {
    if (c.pos < c.limit && !EpochBefore(epoch, c.ring->Read(c.pos).epoch())) ++rings;
  }
  if (cursors_.size() > 1 && second_ring_epoch_ == 0) second_ring_epoch_ = epoch;
  // The first thread may have recorded without tickets until it saw the second ring
  // (Recorder::SoleRing()); another ring's release of such a block needs the block's
  // allocation applied first, which the first ring's going first gives (PollRegistry). A
  // thread sees another's store of the ring count within microseconds (cache coherence),
  // so three epochs (6 ms at the default period) cover it with a wide margin.
  first_ring_first_ =
      second_ring_epoch_ != 0 && epoch - second_ring_epoch_ < kFirstRingFirstEpochs;
  // With one ring the records are applied in their real order: exact peaks. With more,
  // in the order of their stamps (where the first ring goes first only as far as
  // another ring's releases need it: ApplyFrom), and every peak gets the interval they
  // allow.
  bounded_ = rings > 1;
  merged_ = bounded_ && clock_->HasStamps();
  ledger_->set_ordered(!bounded_);
}

uint64_t Drainer::NextStamp(const Cursor& c, uint64_t k) const noexcept {
  // Readable only once its position is published.
  return ((k + 1) << c.ring->stamp_log2()) < c.limit ? c.ring->ReadStamp(k + 1) : 0;
}

uint64_t Drainer::WindowEnd(const Cursor& c, uint64_t k) const noexcept {
  const uint64_t next = NextStamp(c, k);
  return next != 0 ? next : kOpenWindow;
}

bool Drainer::FirstRingMakesBlockAt(const Event& e, uint64_t target) const noexcept {
  const Cursor& first = cursors_[0];
  for (uint64_t p = first.pos; p < target; ++p) {
    const Event& f = first.ring->Read(p);
    if (MakesBlock(f.kind()) && f.address() == e.address() && f.layer() == e.layer()) {
      return true;
    }
  }
  return false;
}

uint64_t Drainer::SegmentEnd(const Cursor& c, uint64_t k) const noexcept {
  // A stamp on every record (Config::order_stamp_log2 = 0) is the record's own time: its
  // window is that instant. Stamp 0 is "no stamp": the window ends at the next one.
  if (c.ring->stamp_log2() == 0) {
    const uint64_t lo = c.ring->ReadStamp(k);
    if (lo != 0) return lo;
  }
  return WindowEnd(c, k);
}

uint64_t Drainer::FirstRingBefore(const Cursor& c, uint32_t epoch) const {
  // The record's window ends where its segment's does. Not past it: the first ring's
  // records made after that window are applied in their own place, or the order applied
  // would not be one the peak's interval (OpenSegment) describes.
  const uint64_t end = SegmentEnd(c, c.pos >> c.ring->stamp_log2());
  const Cursor& first = cursors_[0];
  const uint32_t first_shift = first.ring->stamp_log2();
  uint64_t p = first.pos;
  while (p < first.limit && !EpochBefore(epoch, first.ring->Read(p).epoch()) &&
         first.ring->ReadStamp(p >> first_shift) <= end) {
    ++p;
  }
  return p;
}

uint64_t Drainer::EstimateTime(const Cursor& c, uint64_t position) const noexcept {
  const uint32_t shift = c.ring->stamp_log2();
  const uint64_t k = position >> shift;
  const uint64_t lo = c.ring->ReadStamp(k);
  const uint64_t hi = NextStamp(c, k);  // 0 (not yet published, or none): lo
  if (hi <= lo) return lo;
  return lo + (((hi - lo) * (position - (k << shift))) >> shift);
}

void Drainer::OpenSegment(Cursor& c) {
  const uint32_t shift = c.ring->stamp_log2();
  const uint64_t k = c.pos >> shift;
  // Stamp 0 is "no stamp" (EpochClock::StampNow()): as a start, earlier than any; as an
  // end, an open window (WindowEnd). So is the end of a segment whose last stamp is not
  // published yet (its records may go on in a later epoch).
  const uint64_t lo = c.ring->ReadStamp(k);
  const uint64_t hi = SegmentEnd(c, k);
  if (parallel_ != nullptr) {
    parallel_->BeginSegment(&c.open, c.ring->id(), k, lo, hi);
    // Beginning a segment closes the one before, which stops the tracker using it
    // (PeakTracker::Close): the next UseSegment must be added.
    if (batch_open_ == &c.open) batch_open_ = nullptr;
  } else {
    tracker_.Begin(&c.open, c.ring->id(), k, lo, hi);
  }
  c.segment_open = true;
  c.segment = k;
}

void Drainer::UseSegment(Cursor& c) {
  if (parallel_ == nullptr) {
    tracker_.Use(&c.open);
  } else if (batch_open_ != &c.open) {
    parallel_->UseSegment(&c.open);
    batch_open_ = &c.open;
  }
}

void Drainer::CloseSegment(Cursor& c) {
  tracker_.Close(&c.open);
  c.segment_open = false;
}

void Drainer::FlushBatch() {
  ShardedApply& p = *parallel_;
  p.Apply();
  const ApplyOutcomes o = p.TakeOutcomes();
  counters_.unknown_frees += o.unknown_frees;
  counters_.unknown_resizes += o.unknown_resizes;
  counters_.unknown_remaps += o.unknown_remaps;
  counters_.double_frees += o.double_frees;
  counters_.ticket_misses += o.ticket_misses;
  counters_.ambiguous_matches += o.ambiguous_matches;
  // A move whose first half was in this batch and whose second is not yet added: what
  // the first found goes with its ring.
  for (Cursor& c : cursors_) p.Collect(&c.move);
}

void Drainer::BoundPeaks() {
  for (Cursor& c : cursors_) CloseSegment(c);
  tracker_.EndEpoch(
      [this](uint64_t key, int64_t net) { return ledger_->StartAndLowerBound(key, net); },
      [this](uint64_t key, int64_t low, int64_t high, int64_t net) {
        ledger_->BoundHighWater(key, low, high, net);
      });
  ++counters_.bounded_epochs;
}

namespace {

// The process's resident set in bytes (/proc/self/statm's second field, in pages), or 0.
uint64_t ResidentBytes() {
  const int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[128];
  const ssize_t n = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  const char* resident = strchr(text, ' ');
  if (resident == nullptr) return 0;
  return strtoull(resident + 1, nullptr, 10) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

void Drainer::TakeUsageSample() {
  UsageSample& s = sample_;
  s.unix_ns = pending_started_unix_ns_;
  s.rss_bytes = ResidentBytes();
  const UsageCounters& totals = ledger_->totals();
  s.live_bytes = totals.live_bytes;
  s.live_count = totals.live_count;
  s.layers.clear();
  const auto& layers = ledger_->layers();
  for (size_t id = 0; id < layers.size(); ++id) {
    if (layers[id].allocated_count != 0) {
      s.layers.emplace_back(static_cast<uint32_t>(id), layers[id].live_bytes);
    }
  }
  s.scopes.clear();
  const auto& scopes = ledger_->scopes();
  for (size_t id = 0; id < scopes.size(); ++id) {
    if (scopes[id].live_bytes != 0) {
      s.scopes.emplace_back(static_cast<uint32_t>(id), scopes[id].live_bytes);
    }
  }
  if (s.scopes.size() > UsageSample::kTopScopes) {
    std::partial_sort(s.scopes.begin(), s.scopes.begin() + UsageSample::kTopScopes,
                      s.scopes.end(), [](const auto& a, const auto& b) {
                        return a.second != b.second ? a.second > b.second : a.first < b.first;
                      });
    s.scopes.resize(UsageSample::kTopScopes);
  }
}

bool Drainer::ApplySlice(bool whole, uint64_t* backlog) {
  const uint32_t epoch = open_epoch_;
  bool over;
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    over = ApplyEpoch(epoch, whole ? ~uint64_t{0} : SliceShare(slice_records_, cursors_.size()));
    if (parallel_ != nullptr) FlushBatch();
    tracker_.Use(nullptr);  // cursors may move before the next slice
    batch_open_ = nullptr;
    if (over) {
      // Before SettleDisplaced: its releases come after every record of the epoch.
      if (bounded_) BoundPeaks();
      // Records of this epoch that the unfenced round could not see yet are applied with
      // the next one, in their ring's order (ApplyEpoch counts them as on time then).
      unfenced_epoch_ = pending_fenced_ ? 0 : epoch;
      // With appliers too: the batch is applied (FlushBatch), and they are asleep.
      counters_.missed_frees += ledger_->SettleDisplaced();
      ++counters_.epochs;
      if (pending_fenced_) ++counters_.fenced_epochs;
      counters_.max_drainer_lag_ns =
          std::max<uint64_t>(counters_.max_drainer_lag_ns,
                             static_cast<uint64_t>(SteadyNowNs() - pending_started_ns_));
      counters_.site_overflow = ledger_->sites().overflowed();
      // Memory over time: every period, and at the last epoch.
      if (observer() != nullptr && timeline_period_ns_ > 0) {
        const int64_t now = SteadyNowNs();
        if (now >= next_sample_ns_ || pending_final_) {
          next_sample_ns_ = now + timeline_period_ns_;
          TakeUsageSample();
          sample_taken_ = true;
        }
      }
      applying_ = false;
    }
  }
  if (over) state_cv_.notify_all();
  ++slices_;
  // Relaxed: statistics, and a sign of progress for waiting producers, who look at their
  // ring's room itself (its tail, with its own ordering) before they give up.
  if (over && slices_ > 1) sliced_epochs_.fetch_add(1, std::memory_order_relaxed);
  slices_applied_.fetch_add(1, std::memory_order_relaxed);
  if (observer() != nullptr) {
    // Under observer_mu_, which a detach from another thread takes (DetachObserver): the
    // observer read here is whole until the callbacks return. Read again before each, as
    // a callback may detach it (on this thread, without the lock).
    std::lock_guard<std::mutex> lock(observer_mu_);
    if (EventObserver* const o = observer()) {
      o->OnEpochRecords(epoch, pending_started_unix_ns_, observed_);
    }
    if (EventObserver* const o = observer(); o != nullptr && sample_taken_) {
      o->OnUsageSample(sample_);
    }
    if (EventObserver* const o = observer(); o != nullptr && over && pending_final_) {
      o->OnStop();
    }
  }
  observed_.clear();
  sample_taken_ = false;

  for (size_t i = 0; i < cursors_.size();) {
    Cursor& c = cursors_[i];
    c.ring->Release(c.pos);
    *backlog = std::max(*backlog, c.limit - c.pos);
    if (c.retired && c.pos == c.ring->LoadHead()) {
      // The thread is gone and every record it published is applied: reuse the ring. A
      // claim it left open (it stopped for good inside a record: pthread_exit or
      // siglongjmp out of a signal handler) will never be published: its records are
      // lost, and the ring's next thread starts past them, with no claim open.
      const uint64_t abandoned = c.ring->LoadClaim() - c.pos;
      if (abandoned > 0) {
        c.ring->ResetPositions(c.pos + abandoned);
        std::lock_guard<std::mutex> lock(state_mu_);
        counters_.events_dropped += abandoned;
      }
      CloseSegment(c);
      registry_->Reclaim(c.ring);
      RemoveCursor(i);
      continue;
    }
    ++i;
  }

  if (over) {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_fenced_) fenced_epoch_ = epoch;
    open_epoch_ = pending_next_;
  }
  done_cv_.notify_all();
  // Each ring's next pages, mapped in off its producer's thread, and after the slice so
  // that neither the epoch nor a Flush() waits for the system calls.
  for (Cursor& c : cursors_) c.ring->PopulateAhead(c.limit);
  return over;
}

void Drainer::PollRegistry() {
  registry_->PollControl([this](const RingRegistry::Notice& n) {
    const uint32_t id = n.ring->id();
    if (id >= cursor_of_ring_.size()) cursor_of_ring_.resize(id + 1, -1);
    if (n.change == RingRegistry::Change::kRegistered) {
      ++registrations_seen_;
      const uint64_t start = n.ring->LoadTail();
      cursor_of_ring_[id] = static_cast<int32_t>(cursors_.size());
      cursors_.push_back(Cursor{n.ring, start, start, false, false, {}, {}, 0, 0});
      // The first ring the recorder handed out is always the first cursor, applied first
      // in every epoch: its thread records without tickets while it is alone
      // (Recorder::SoleRing()), and another ring's release of its blocks relies on this
      // order instead. Notices of several threads may arrive in any order.
      if (id == registry_->first_ring_id() && cursors_.size() > 1) {
        std::swap(cursors_.front(), cursors_.back());
        cursor_of_ring_[cursors_.front().ring->id()] = 0;
        cursor_of_ring_[cursors_.back().ring->id()] =
            static_cast<int32_t>(cursors_.size() - 1);
      }
    } else if (cursor_of_ring_[id] >= 0) {
      cursors_[static_cast<size_t>(cursor_of_ring_[id])].retired = true;
    }
  });
}

uint64_t Drainer::AwaitClaims(Cursor& c, bool final_round, ClaimWaits* waits) {
  const uint64_t claim = c.ring->LoadClaim();
  uint64_t head = c.ring->LoadHead();
  // A claim beyond the head is a record being written right now, possibly stamped with the
  // epoch we are closing. Wait for it to be published, or given back; a bounded time (the
  // header), and not again for a claim a round already gave up on that has not moved.
  const bool waited_before = !final_round && head < claim && c.stalled_head == head &&
                            c.stalled_claim == claim;
  const auto deadline =
      std::chrono::steady_clock::now() + (final_round ? kFinalClaimWait : kClaimWait);
  // Relaxed: a statistic; the round's wait is what it counts, and nothing pairs with it.
  if (head < claim && !waited_before) claim_waits_.fetch_add(1, std::memory_order_relaxed);
  while (head < claim && !waited_before) {
    if (c.ring->LoadClaim() <= head) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      if (final_round) {
        // Never published: the operation went ahead without its record (the header).
        waits->dropped += c.ring->LoadClaim() - head;
      } else {
        // Still being written, or never to be: applied late if it comes.
        ++waits->stalled;
        c.stalled_head = head;
        c.stalled_claim = c.ring->LoadClaim();
      }
      break;
    }
    // A round that began before Stop() was asked for stops waiting too: the thread may be
    // the one that will never publish (it called _exit() from a signal handler that
    // interrupted its record, and waits for the capture to be finished), and the final
    // round, next, waits for it with a bound and counts what is lost. What this round
    // leaves is applied by the final round, in its ring's order.
    if (!final_round && stop_pending_.load(std::memory_order_relaxed)) break;
    sched_yield();
    head = c.ring->LoadHead();
  }
  c.limit = head;
  waits->max_fill = std::max(waits->max_fill, head - c.pos);
  return head - c.pos;
}

bool Drainer::InSegment(const Cursor& c, uint64_t position, uint32_t epoch) const noexcept {
  return position < c.limit && !EpochBefore(epoch, c.ring->Read(position).epoch());
}

int Drainer::Dependency(const Event& e, uint32_t epoch, uint64_t* position) const {
  const uint64_t ticket = e.word2;
  const uint32_t ring_id = Ticket::RingId(ticket);
  if (ring_id >= cursor_of_ring_.size()) return -1;
  const int32_t index = cursor_of_ring_[ring_id];
  if (index < 0) return -1;
  const Cursor& other = cursors_[static_cast<size_t>(index)];
  // The ticket keeps the low 28 bits of the position (ticket.h). An unapplied record lies
  // in [other.pos, other.limit), a window shorter than 2^28, so the distance from
  // other.pos recovers the full position.
  const uint64_t distance =
      (Ticket::Position(ticket) - other.pos) & Ticket::kTruncatedPositionMask;
  if (distance >= other.limit - other.pos) return -1;  // applied already, or not ours
  const uint64_t pos = other.pos + distance;
  if (!InSegment(other, pos, epoch)) return -1;
  // Verify: the ticket must name the latest record that gave the block its ticket (an
  // allocation, a move's target, or a resize) at the same address, else it came from a
  // ticket-table collision and says nothing about order.
  const Event& target = other.ring->Read(pos);
  const EventKind kind = target.kind();
  if ((kind != EventKind::kAlloc && kind != EventKind::kRemapTarget &&
       kind != EventKind::kResize) ||
      target.address() != e.address() || target.layer() != e.layer()) {
    return -1;
  }
  *position = pos;
  return index;
}

// Inline: called once per record, from ApplyEpoch only.
__attribute__((always_inline)) inline void Drainer::Apply(Cursor& c, const Event& e) {
  const uint64_t ticket = Ticket::Make(c.ring->id(), c.pos);
  // A release made while the recorder had one ring carries no ticket (Recorder::
  // SoleRing()): paired by address, exact in one ring's order, so not a ticket miss; the
  // ledger and the capture see ticket 0 ("none").
  const bool sole = e.word2 == kSoleRingTicket && IsRelease(e.kind());
  const uint64_t of = sole ? 0 : e.word2;
  if (observer() != nullptr) {
    // The batch's memory was the writer thread's last (the sink gives vectors back for
    // reuse), so each line the drainer writes is taken from another core: ask for it
    // ahead, exclusive (bench/README.md, "The observer's batch").
    if (observed_.size() + kObservedPrefetchAhead < observed_.capacity()) {
      PrefetchForWrite(observed_.data() + observed_.size() + kObservedPrefetchAhead);
    }
    ObservedEvent& o = observed_.emplace_back(ObservedEvent{e, ticket});
    if (sole) o.event.word2 = 0;
  }
  if (parallel_ != nullptr && ChangesLedger(e.kind())) {
    if (!parallel_->AddEvent(e.kind(), e.layer(), e.scope(), e.address(), e.size(), ticket,
                             of, e.word2, sole, &c.move)) {
      ++counters_.order_conflicts;  // a target always follows its kRemap in the same ring
    }
    if (parallel_->full()) FlushBatch();
    ++counters_.events_applied;
    return;
  }
  switch (e.kind()) {
    case EventKind::kAlloc:
      ledger_->Alloc(e.layer(), e.address(), e.size(), ticket, e.scope(), e.word2);
      break;
    case EventKind::kFree:
      CountOutcome(ledger_->Free(e.layer(), e.address(), of), sole, &counters_.unknown_frees,
                   &counters_);
      break;
    case EventKind::kResize:
      CountOutcome(ledger_->Resize(e.layer(), e.address(), of, e.size(), ticket), sole,
                   &counters_.unknown_resizes, &counters_);
      break;
    case EventKind::kRemap:
      CountOutcome(ledger_->MoveOut(e.layer(), e.address(), of, &c.move.moved), sole,
                   &counters_.unknown_remaps, &counters_);
      c.move.moving = true;
      break;
    case EventKind::kRemapTarget:
      if (!c.move.moving) {  // a target always follows its kRemap in the same ring
        ++counters_.order_conflicts;
        c.move.moved = AllocationLedger::Moved{};
      }
      ledger_->MoveIn(e.layer(), c.move.moved, e.address(), e.size(), ticket, e.scope(),
                      e.word2);
      c.move.moving = false;
      break;
    case EventKind::kArenaReset:
      ledger_->ResetLayer(e.layer());
      break;
    case EventKind::kInvalid:
      ++counters_.order_conflicts;
      break;
    case EventKind::kScopeEnter:
    case EventKind::kScopeExit:
    case EventKind::kCensusUpdate:
    case EventKind::kIntervalBegin:
    case EventKind::kIntervalEnd:
      break;  // carried to sinks; the ledger has nothing to do
    case EventKind::kStackFrames:
      if (stacks_ != nullptr) stacks_->Add(c.ring->id(), e);
      break;
  }
  ++counters_.events_applied;
}

bool Drainer::ApplyEpoch(uint32_t epoch, uint64_t share) {
  const bool prefetch =
      parallel_ == nullptr && ledger_->totals().live_count >= kPrefetchLiveBlocks;
  if (merged_) {
    const uint64_t rings = cursors_.size();
    ApplyMerged(epoch, share > ~uint64_t{0} / rings ? ~uint64_t{0} : share * rings, prefetch);
  } else {
    for (size_t base = 0; base < cursors_.size(); ++base) {
      // The first ring (the recorder's first) goes first and whole (PollRegistry()); the
      // others up to their share. A ring's records applied earlier as another's
      // dependency count against nothing.
      const uint64_t pos = cursors_[base].pos;
      ApplyFrom(base,
                base == 0 || share > ~uint64_t{0} - pos ? ~uint64_t{0} : pos + share, epoch,
                prefetch);
    }
  }
  // Over when every ring is at its limit or at a record of a later epoch.
  for (const Cursor& c : cursors_) {
    if (c.pos < c.limit && !EpochBefore(epoch, c.ring->Read(c.pos).epoch())) return false;
  }
  return true;
}

void Drainer::ApplyMerged(uint32_t epoch, uint64_t budget, bool prefetch) {
  const uint64_t applied_before = counters_.events_applied;
  auto has_records = [&](const Cursor& c) {
    return c.pos < c.limit && !EpochBefore(epoch, c.ring->Read(c.pos).epoch());
  };
  // The rings with records of the epoch left, by the time of their next record: a
  // min-heap. A ring applied meanwhile as another's dependency keeps its old, earlier key
  // until it comes up, when the key is corrected (times only grow along a ring).
  auto later = [](const MergeEntry& a, const MergeEntry& b) { return a.time > b.time; };
  merge_heap_.clear();
  for (size_t i = 0; i < cursors_.size(); ++i) {
    if (has_records(cursors_[i])) {
      merge_heap_.push_back(MergeEntry{EstimateTime(cursors_[i], cursors_[i].pos), i});
    }
  }
  std::make_heap(merge_heap_.begin(), merge_heap_.end(), later);
  while (!merge_heap_.empty()) {
    std::pop_heap(merge_heap_.begin(), merge_heap_.end(), later);
    const MergeEntry top = merge_heap_.back();
    merge_heap_.pop_back();
    Cursor& c = cursors_[top.index];
    if (!has_records(c)) continue;
    const uint64_t time = EstimateTime(c, c.pos);
    if (time != top.time) {  // moved on as a dependency: back in at its place
      merge_heap_.push_back(MergeEntry{time, top.index});
      std::push_heap(merge_heap_.begin(), merge_heap_.end(), later);
      continue;
    }
    const uint64_t applied = counters_.events_applied - applied_before;
    if (applied >= budget) return;
    // This ring runs until its records pass the next ring's next record, and at most to
    // the slice's budget (dependencies may add a few records more).
    const uint64_t next_time = merge_heap_.empty() ? ~uint64_t{0} : merge_heap_.front().time;
    const uint64_t left = budget - applied;  // >= 1; ~0 when the budget is unbounded
    const uint64_t end = left >= c.limit - c.pos ? c.limit : c.pos + left;
    ApplyFrom(top.index, RunEnd(c, end, next_time), epoch, prefetch);
    if (has_records(c)) {
      merge_heap_.push_back(MergeEntry{EstimateTime(c, c.pos), top.index});
      std::push_heap(merge_heap_.begin(), merge_heap_.end(), later);
    }
  }
}

uint64_t Drainer::RunEnd(const Cursor& c, uint64_t end, uint64_t time) const noexcept {
  // Segment by segment, with EstimateTime()'s formula solved for the position.
  const uint32_t shift = c.ring->stamp_log2();
  // The rest of the current segment runs in any case: its records lie in one window, so
  // applying them together stays inside the bounds, and a run costs a heap operation.
  uint64_t p = std::min(end, std::max(c.pos + 1, ((c.pos >> shift) + 1) << shift));
  while (p < end) {
    const uint64_t k = p >> shift;
    const uint64_t lo = c.ring->ReadStamp(k);
    if (lo > time) break;
    const uint64_t segment_end = std::min(end, (k + 1) << shift);
    // No next stamp (every estimate is lo), or a segment wholly before `time`: all of it.
    const uint64_t hi = NextStamp(c, k);
    if (hi <= lo || time >= hi) {
      p = segment_end;
      continue;
    }
    // EstimateTime(p) <= time exactly for offsets up to this one.
    const uint64_t last = (k << shift) + (((time - lo) << shift) / (hi - lo));
    if (last + 1 < segment_end) return std::max(p, last + 1);
    p = segment_end;
  }
  return std::min(p, end);
}

void Drainer::ApplyFrom(size_t base, uint64_t base_target, uint32_t epoch, bool prefetch) {
  stack_.clear();
  stack_.push_back(Pending{base, base_target});
  cursors_[base].on_stack = true;
  // The first ring's catch-up (below), while it is on the stack: its place in stack_. At
  // most one at a time, since one is pushed only while the first ring is not on the stack.
  constexpr size_t kNone = ~size_t{0};
  size_t catch_up_at = kNone;
  // The record whose catch-up ended early (below), as its cursor and position: it goes
  // ahead without asking for another, which would end where this one did, for ever.
  size_t caught_up_index = kNone;
  uint64_t caught_up_pos = 0;
  // Why a ring's run below stopped: its records are applied up to its target (or the
  // epoch's end), it waits for a ring pushed on the stack, or the catch-up is over.
  enum class Stop : uint8_t { kDone, kBlocked, kCatchUpOver };
  while (!stack_.empty()) {
    const auto [index, target] = stack_.back();
    Cursor& c = cursors_[index];
    // Apply this ring's records of the epoch up to `target`, until one depends on a
    // record of another ring not yet applied; that ring goes on the stack first.
    const uint64_t end = std::min(target, c.limit);
    Stop stop = Stop::kDone;
    for (; c.pos < end; ++c.pos) {
      // The ledger's lookups miss the caches once its tables outgrow them: ask for the
      // slot of the record kPrefetchAhead on while this one is applied. That record is
      // published (below c.limit); if it belongs to the next epoch the hint is wasted.
      if (prefetch && c.pos + kPrefetchAhead < end) {
        const Event& ahead = c.ring->Read(c.pos + kPrefetchAhead);
        if (LooksUpBlock(ahead.kind())) ledger_->Prefetch(ahead.layer(), ahead.address());
      }
      const Event& e = c.ring->Read(c.pos);
      const uint32_t record_epoch = e.epoch();
      if (EpochBefore(epoch, record_epoch)) break;  // the next epoch's records
      // A record of the epoch before, closed without the fence, is on time here.
      if (record_epoch != epoch && record_epoch != unfenced_epoch_) {
        ++counters_.late_records;
      }
      // A release whose ticket names another ring may have to wait for that ring (a
      // ticket of this ring names a record already applied, or none).
      // (kSoleRingTicket names no ring: such a release has no other ring to wait for.)
      if (IsRelease(e.kind()) && e.word2 > kSoleRingTicket &&
          Ticket::RingId(e.word2) != c.ring->id()) {
        uint64_t dep_pos = 0;
        const int dep = Dependency(e, epoch, &dep_pos);
        if (dep >= 0) {
          Cursor& d = cursors_[static_cast<size_t>(dep)];
          if (!d.on_stack) {
            d.on_stack = true;
            stack_.push_back(Pending{static_cast<size_t>(dep), dep_pos + 1});
            stop = Stop::kBlocked;
            break;
          }
          // A ring on the stack waits for a record of this one: with a catch-up on the
          // stack, a sign that it went past the record that asked for it (below).
          if (catch_up_at != kNone) {
            stop = Stop::kCatchUpOver;
            break;
          }
          ++counters_.order_conflicts;  // impossible for real input: see the header
        }
      }
      // Just after a second ring appeared, the first ring's blocks may have no tickets
      // (PlanEpoch): a release another ring made without a ticket waits for the first
      // ring's records up to the end of its own window, which its block's allocation, made
      // before it, is among. So does a block another ring makes where the first ring
      // makes one at the same address in that window: a release without a ticket takes
      // the oldest block at its address (allocation_ledger.h), so the first ring's block,
      // made before it, must not be applied after it, set aside behind it. (In
      // ring-by-ring order the first ring went first anyway.)
      // (A release whose ticket names the first ring waits as one without.)
      const bool untracked_release =
          IsRelease(e.kind()) &&
          (e.word2 == 0 || Ticket::RingId(e.word2) == cursors_[0].ring->id());
      if (merged_ && first_ring_first_ && index != 0 &&
          (untracked_release || MakesBlock(e.kind())) && !cursors_[0].on_stack &&
          !(index == caught_up_index && c.pos == caught_up_pos)) {
        const uint64_t first_target = FirstRingBefore(c, epoch);
        if (first_target > cursors_[0].pos &&
            (untracked_release || FirstRingMakesBlockAt(e, first_target))) {
          cursors_[0].on_stack = true;
          catch_up_at = stack_.size();
          stack_.push_back(Pending{0, first_target});
          stop = Stop::kBlocked;
          break;
        }
      }
      if (bounded_) {
        // The tracker follows the record's segment (peak_tracker.h).
        if (!c.segment_open || c.segment != (c.pos >> c.ring->stamp_log2())) {
          OpenSegment(c);
        }
        UseSegment(c);
      }
      Apply(c, e);
    }
    switch (stop) {
      case Stop::kBlocked:
        break;
      case Stop::kDone:
        c.on_stack = false;
        stack_.pop_back();
        if (stack_.size() == catch_up_at) catch_up_at = kNone;  // it reached its target
        break;
      case Stop::kCatchUpOver:
        // The catch-up's target is only where the window of the record that asked for it
        // (a) ends, so it may reach records the first thread made after a. Above it every
        // entry waits for a real dependency, so the record that stopped here is r, the
        // first ring's record where the catch-up stands, or happens before r. It needs a
        // ring on the stack at or past where that ring stands: not the first ring or one
        // above it (a cycle of happens-before), so the ring that asked for the catch-up,
        // standing at a, or one below it, standing at a record a happens before. So a
        // happens before r, and every record of the first ring that happens before a (a
        // released block's allocation, or an earlier block at a new block's address) lies
        // before r: applied. The catch-up is over. The rings above it stay where they
        // stand (what they applied had its dependencies), and a goes ahead.
        while (stack_.size() > catch_up_at) {
          cursors_[stack_.back().index].on_stack = false;
          stack_.pop_back();
        }
        catch_up_at = kNone;
        caught_up_index = stack_.back().index;
        caught_up_pos = cursors_[caught_up_index].pos;
        break;
    }
  }
}

void Drainer::RemoveCursor(size_t index) {
  cursor_of_ring_[cursors_[index].ring->id()] = -1;
  if (index + 1 != cursors_.size()) {
    cursors_[index] = cursors_.back();
    cursor_of_ring_[cursors_[index].ring->id()] = static_cast<int32_t>(index);
  }
  cursors_.pop_back();
}

}  // namespace memtrace
