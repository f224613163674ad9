// Copyright 2026 The memtrace Authors.

#include "runtime/internal/drainer.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "runtime/internal/thread_state.h"
#include "runtime/internal/memtrace_thread.h"

namespace memtrace {
namespace {

int64_t UnixNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Whether this process has no thread of kernel id `tid` (any more). A failed check for
// another reason (a tid of 0) says no: the ring is then kept, not lost.
bool ThreadGone(int32_t tid) {
  return tid > 0 && syscall(SYS_tgkill, getpid(), tid, 0) != 0 && errno == ESRCH;
}

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

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
  thread_starts_.clear();  // the parent's threads: none of them is in this process
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
  if (final_round) NoteLiveThreadNames();  // reads /proc: not under the lock
  AnnounceThreads();
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
    // An orphaned ring's thread is gone once the kernel knows its id no more: it made
    // every record it will (a thread's stores precede its end, which the kernel's
    // bookkeeping of it orders before this system call sees it gone).
    if (c.orphaned && !c.retired && ThreadGone(c.tid)) c.retired = true;
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

void Drainer::AnnounceThreads() {
  if (thread_starts_.empty()) return;
  // At a round's start: every record handed to the observer so far came before these
  // threads' first (a reused ring's last owner's included), and none of theirs. Under
  // observer_mu_, as around OnEpochRecords; not under state_mu_, which a callback may
  // take (Recorder::Inspect()).
  {
    std::lock_guard<std::mutex> lock(observer_mu_);
    for (const RingRegistry::Notice& n : thread_starts_) {
      if (EventObserver* const o = observer()) o->OnThreadStart(n.ring->id(), n.tid, n.name);
    }
  }
  thread_starts_.clear();
}

void Drainer::PollRegistry() {
  registry_->PollControl([this](const RingRegistry::Notice& n) {
    const uint32_t id = n.ring->id();
    if (id >= cursor_of_ring_.size()) cursor_of_ring_.resize(id + 1, -1);
    if (n.change == RingRegistry::Change::kRegistered) {
      ++registrations_seen_;
      if (observer() != nullptr) thread_starts_.push_back(n);  // AnnounceThreads()
      const uint64_t start = n.ring->LoadTail();
      cursor_of_ring_[id] = static_cast<int32_t>(cursors_.size());
      cursors_.push_back(Cursor{n.ring, start, start, false, false});
      cursors_.back().tid = n.tid;
      std::memcpy(cursors_.back().name, n.name, sizeof(n.name));
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
      Cursor& c = cursors_[static_cast<size_t>(cursor_of_ring_[id])];
      if (n.change == RingRegistry::Change::kRetired) {
        c.retired = true;
      } else {
        c.orphaned = true;
      }
      if (n.tid == c.tid) NoteThreadName(c, n.name);  // kRetired: its name at its exit hook
    }
  });
}

void Drainer::NoteThreadName(Cursor& c, const char* name) {
  if (name[0] == '\0' || strncmp(name, c.name, sizeof(c.name)) == 0) return;
  std::memcpy(c.name, name, sizeof(c.name));
  c.name[sizeof(c.name) - 1] = '\0';
  if (observer() == nullptr) return;
  RingRegistry::Notice renamed{c.ring, RingRegistry::Change::kRegistered, c.tid};
  std::memcpy(renamed.name, c.name, sizeof(c.name));
  thread_starts_.push_back(renamed);
}

void Drainer::NoteLiveThreadNames() {
  char path[64];
  char name[sizeof(Cursor::name)];
  for (Cursor& c : cursors_) {
    if (c.retired || c.orphaned || c.tid <= 0) continue;
    // The kernel's name of a thread of this process, with a newline; gone once it exited.
    snprintf(path, sizeof(path), "/proc/self/task/%d/comm", c.tid);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    const ssize_t n = read(fd, name, sizeof(name) - 1);
    close(fd);
    if (n <= 0) continue;
    name[n] = '\0';
    if (char* newline = strchr(name, '\n')) *newline = '\0';
    NoteThreadName(c, name);
  }
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

void Drainer::RemoveCursor(size_t index) {
  cursor_of_ring_[cursors_[index].ring->id()] = -1;
  if (index + 1 != cursors_.size()) {
    cursors_[index] = cursors_.back();
    cursor_of_ring_[cursors_[index].ring->id()] = static_cast<int32_t>(index);
  }
  cursors_.pop_back();
}

}  // namespace memtrace
