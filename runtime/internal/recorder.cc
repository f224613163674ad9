// Copyright 2026 The memtrace Authors.

#include "runtime/internal/recorder.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "runtime/scope_table.h"

namespace memtrace {

using runtime_internal::ReentrancyGuard;
using runtime_internal::Tls;

absl::StatusOr<std::unique_ptr<Recorder>> Recorder::Create(const Config& config) {
  if (absl::Status s = config.Validate(); !s.ok()) return s;
  std::unique_ptr<Recorder> recorder(new Recorder(config));
  if (recorder->slot_ < 0) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "memtrace: at most ", runtime_internal::kMaxRecorders,
        " recorders (tracers) can be alive at once; destroy one before creating another"));
  }
  if (!recorder->tickets_.ok()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "memtrace: could not map the ticket table (", recorder->tickets_.mapped_bytes(),
        " bytes of address space); lower Config.ticket_table_log2"));
  }
  return recorder;
}

Recorder::Recorder(const Config& config)
    : config_(config),
      clock_(config.fence),
      tickets_(config.ticket_table_log2),
      registry_(config.ring_capacity_log2, config.order_stamp_log2),
      ledger_(config.request_site_capacity_max),
      // Config::live: a snapshot's sites name their stacks' frames (TopSites).
      stacks_(config.keep_stack_frames || config.live
                  ? std::make_unique<StackFrameTable>(config.request_site_capacity_max)
                  : nullptr),
      drainer_(&clock_, &registry_, &ledger_, stacks_.get(), config.drain_period,
               config.idle_drain_period, config.drain_slice_records, config.thread_cpus,
               static_cast<int>(TracerThreadsFor(config.tracer_threads,
                                                 TracerCpuCount(config.thread_cpus)))) {
  drainer_.set_timeline_period(config.timeline_period);
  const runtime_internal::SlotLease lease =
      runtime_internal::AcquireRecorderSlot(&registry_);
  slot_ = lease.index;
  generation_ = lease.generation;
}

Recorder::~Recorder() {
  Stop().IgnoreError();
  // An observer outliving the recorder must not reach back into it.
  if (EventObserver* o = drainer_.observer()) o->attachment_ = EventObserver::Attachment{};
  // From here no thread can bind to or retire into this recorder's rings.
  if (slot_ >= 0) runtime_internal::ReleaseRecorderSlot(slot_);
}

absl::Status Recorder::Start() {
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  if (drainer_.running()) {
    return absl::FailedPreconditionError(
        "memtrace: Start() called on a recorder that is already running; call Stop() "
        "first");
  }
  // Relaxed: read by WaitForSpace() in this process's threads after they found a ring
  // full, which they only can once records flow, well after this store; a stale 0 there
  // means a getpid() mismatch and no wait, never a wrong wait.
  drainer_pid_.store(getpid(), std::memory_order_relaxed);
  drainer_.Start();
  return absl::OkStatus();
}

absl::Status Recorder::Stop() {
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  if (!drainer_.running()) {
    return absl::FailedPreconditionError(
        "memtrace: Stop() called on a recorder that is not running (stopped twice, or "
        "never started); nothing was changed");
  }
  drainer_.Stop();
  return absl::OkStatus();
}

absl::Status Recorder::SetObserver(EventObserver* observer) {
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  if (drainer_.running()) {
    return absl::FailedPreconditionError(
        "memtrace: attach or detach an event observer (sink) before Start() or after "
        "Stop(), not while the recorder runs");
  }
  if (observer != nullptr && observer->attached() && observer->attachment_.recorder != this) {
    return absl::FailedPreconditionError(
        "memtrace: this event observer (sink) is attached to another tracer already; a "
        "capture holds one tracer's records: give each tracer its own sink, or detach it "
        "from the other first (SetObserver(nullptr) there)");
  }
  if (EventObserver* old = drainer_.observer(); old != nullptr && old != observer) {
    old->attachment_ = EventObserver::Attachment{};
  }
  drainer_.SetObserver(observer);
  if (observer != nullptr) {
    observer->attachment_ = EventObserver::Attachment{
        this,
        [](void* recorder, EventObserver* o) noexcept {
          static_cast<Recorder*>(recorder)->DetachObserver(o);
        },
        [](const void* recorder) noexcept {
          return static_cast<const Recorder*>(recorder)->running();
        }};
  }
  return absl::OkStatus();
}

void Recorder::DetachObserver(EventObserver* observer) noexcept {
  drainer_.DetachObserver(observer);
  observer->attachment_ = EventObserver::Attachment{};
}

absl::Status Recorder::Flush() {
  if (drainer_.OnDrainerThread()) {
    return absl::FailedPreconditionError(
        "memtrace: Flush() called from the drainer thread (inside an event observer); "
        "it would wait for itself. Flush from any other thread");
  }
  drainer_.Flush();
  return absl::OkStatus();
}

uint64_t Recorder::StackSiteSlow(uint64_t hash, const uint64_t* frames,
                                 uint32_t depth) noexcept {
  runtime_internal::StackState* s = runtime_internal::Stacks(Tls());
  if (s != nullptr && s->stack_cache_generation == generation_) {
    uint64_t* ways = StackCacheWays(*s, hash);
    if (ways[1] == hash) {
      UseFirst(ways, hash);
      return hash;
    }
  }
  return SendStack(hash, frames, depth);
}

uint64_t Recorder::SendStack(uint64_t hash, const uint64_t* frames, uint32_t depth) noexcept {
  // A frame travels in a 48-bit field; stop at one that does not fit (none does on
  // x86-64 or AArch64 user space, but a corrupt frame chain could produce one).
  uint32_t n = 0;
  while (n < depth && Event::Fits(frames[n])) ++n;
  runtime_internal::ThreadState& t = runtime_internal::Tls();
  // After the thread's exit hook a record may land in a fresh ring, which the drainer
  // could apply before this one; keep such late allocations on their return address.
  if (n == 0 || t.exited) return frames[0];
  runtime_internal::RingBinding& b = t.rings[slot_];
  SpscRing* ring = b.ring;
  if (b.generation != generation_) {
    ring = Bind();
    if (ring == nullptr) return frames[0];
  }
  const uint32_t records = (n + 1) / 2;
  uint64_t pos;
  // No waiting and no loss counted: without its frames the allocation keeps its caller
  // (so also inside another record of this thread, SpscRing::kNested).
  const SpscRing::ClaimStatus status = ring->Claim(records, &pos);
  if (!SpscRing::Claimed(status)) return frames[0];
  // Watermark step (2), as in Begin().
  clock_.LightFence();
  const uint32_t epoch = clock_.Load();
  if (epoch == EpochClock::kClosed) {
    ring->Unclaim();
    return frames[0];
  }
  if (status == SpscRing::ClaimStatus::kStampDue) {
    ring->WriteStamps(pos, records, OrderStamp());
  }
  for (uint32_t r = 0; r < records; ++r) {
    const uint32_t first = 2 * r;
    const uint32_t count = (first + 1 < n) ? 2 : 1;
    const uint8_t flags = static_cast<uint8_t>(count | (r + 1 == records ? kStackLastRecord : 0));
    ring->slot(pos + r) =
        Event{hash, Event::PackKindSize(EventKind::kStackFrames, flags, frames[first]),
              count == 2 ? frames[first + 1] : 0, Event::PackScopeEpoch(t.scope, epoch)};
  }
  End(Claim{ring, pos, ring->id(), epoch, t.scope}, records);
  // Without a cache (no memory for it) the frames go again with the stack's next use.
  if (runtime_internal::StackState* s = runtime_internal::Stacks(t); s != nullptr) {
    if (s->stack_cache_generation != generation_) {
      for (auto& set : s->stack_cache) set[0] = set[1] = 0;
      s->stack_cache_generation = generation_;
    }
    UseFirst(StackCacheWays(*s, hash), hash);  // the way used less recently is forgotten
  }
  return hash;
}

SpscRing* Recorder::Bind() noexcept {
  ReentrancyGuard guard;  // the registry may allocate
  runtime_internal::ThreadState& t = Tls();
  SpscRing* ring = registry_.AcquireRing();
  if (ring == nullptr) return nullptr;
  t.rings[slot_] = runtime_internal::RingBinding{generation_, ring};
  if (!t.exited) runtime_internal::ArmExitHook();
  return ring;
}

void Recorder::RetireAfterExit() noexcept {
  // The thread's exit hook already ran: later exit code records into this ring, and no
  // hook will run after it to retire the ring. The drainer does once the thread is gone
  // (told once per ring). Retiring it after each record instead took a fresh ring per
  // record, faster than the drainer could reclaim them: a thousand frees in a pthread key
  // destructor mapped a thousand rings.
  runtime_internal::ThreadState& t = Tls();
  const uint64_t bit = uint64_t{1} << slot_;
  if ((t.orphaned_rings & bit) != 0) return;
  t.orphaned_rings |= bit;
  ReentrancyGuard guard;
  registry_.Orphan(t.rings[slot_].ring);
}

Recorder::SlowBegin Recorder::BeginSlow(SpscRing* ring, uint32_t n, bool allocation,
                                        SpscRing::ClaimStatus status, uint64_t pos) noexcept {
  using ClaimStatus = SpscRing::ClaimStatus;
  if (status == ClaimStatus::kFull) {
    status = WaitForSpace(ring, n, &pos);
    if (status == ClaimStatus::kFull) return {0, 0, Overflowed(ring, allocation)};
  }
  if (status == ClaimStatus::kNested) return {0, 0, Nested(ring, allocation)};
  // Watermark step (2), as in Begin().
  clock_.LightFence();
  const uint32_t epoch = clock_.Load();
  if (epoch == EpochClock::kClosed) {
    ring->Unclaim();
    return {0, 0, NotRecording()};
  }
  // The order stamp, read after the epoch load (spsc_ring.h, "order stamps").
  if (status == ClaimStatus::kStampDue) ring->WriteStamps(pos, n, OrderStamp());
  return {pos, epoch, RecordResult::kRecorded};
}

SpscRing::ClaimStatus Recorder::WaitForSpace(SpscRing* ring, uint32_t n,
                                             uint64_t* pos) noexcept {
  using ClaimStatus = SpscRing::ClaimStatus;
  if (config_.overflow_policy != OverflowPolicy::kWaitThenFail ||
      config_.overflow_wait <= absl::ZeroDuration() || !drainer_.running() ||
      forked_away_.load(std::memory_order_relaxed)) {
    return ClaimStatus::kFull;
  }
  // A copy of the recorder in a child forked without fork handlers says the drainer runs,
  // but no drainer runs there: waiting would stall every record for overflow_wait. Asked
  // here only, when a ring is full, so the hot path never makes the system call.
  if (getpid() != drainer_pid_.load(std::memory_order_relaxed)) {
    forked_away_.store(true, std::memory_order_relaxed);
    return ClaimStatus::kFull;
  }
  ring->CountWaited();
  // nanosleep() below is a cancellation point, and neither malloc() nor any other
  // recorded call is one: a thread cancelled (deferred) while it waits for room must not
  // be ended inside the program's allocation. Cancellation is held off for the wait.
  int cancel_state = PTHREAD_CANCEL_ENABLE;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
  struct RestoreCancelState {
    int state;
    ~RestoreCancelState() { pthread_setcancelstate(state, nullptr); }
  } restore{cancel_state};
  drainer_.Wake();
  // The bound is on waiting without progress: each time it passes while the drainer has
  // applied a slice since it was set (drainer.h: other rings got their room, and this one
  // gets its turn when the epoch is over), it is set again. A drainer that applies
  // nothing (stalled, or held by a callback) still fails the record after overflow_wait.
  const auto wait = absl::ToChronoNanoseconds(config_.overflow_wait);
  auto deadline = std::chrono::steady_clock::now() + wait;
  uint64_t progress = drainer_.slices_applied();
  // A few yields, then sleep until the drainer frees room (SpscRing::AwaitSpace), a
  // millisecond at a time so that the deadline and the drainer's wake-up are looked at
  // again. Not polling: on a machine with fewer cores than busy threads the drainer needs
  // this thread's CPU to make room (spsc_ring.h, "Waiting for room").
  for (int attempt = 0;; ++attempt) {
    if (attempt < 4) {
      sched_yield();
      const ClaimStatus status = ring->Claim(n, pos);
      if (status != ClaimStatus::kFull) return status;
    } else {
      const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(
          deadline - std::chrono::steady_clock::now());
      const int64_t wait_ns = std::clamp<int64_t>(left.count(), 1'000, 1'000'000);
      const ClaimStatus status = ring->AwaitSpace(n, pos, wait_ns);
      if (status != ClaimStatus::kFull) return status;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      const uint64_t applied = drainer_.slices_applied();
      if (applied == progress) return ClaimStatus::kFull;
      progress = applied;
      deadline = now + wait;
    }
    drainer_.Wake();
  }
}

RecordResult Recorder::Overflowed(SpscRing* ring, bool allocation) noexcept {
  if (allocation) {
    ring->CountFailed();
  } else {
    ring->CountDropped();
  }
  return RecordResult::kFailed;
}

RecordResult Recorder::Nested(SpscRing* ring, bool allocation) noexcept {
  // Relaxed: a statistic, on a path real programs take rarely.
  nested_records_.fetch_add(1, std::memory_order_relaxed);
  return Overflowed(ring, allocation);  // counted as failed or dropped, like a full ring
}

RecordResult Recorder::NoRing(bool allocation) noexcept {
  // Relaxed: a statistic.
  static_cast<void>(allocation);  // either way the record is lost and counted here
  rings_unavailable_.fetch_add(1, std::memory_order_relaxed);
  return RecordResult::kFailed;
}

RecordResult Recorder::NotRecording() noexcept {
  // Relaxed: a statistic; only reached while the recorder is stopped (not the hot path).
  not_recording_.fetch_add(1, std::memory_order_relaxed);
  return RecordResult::kNotRecording;
}

RecordResult Recorder::Refuse(bool allocation) noexcept {
  // A size beyond 2^48 bytes cannot be a real block; refuse it rather than truncate it.
  // Relaxed: a statistic.
  (allocation ? refused_allocs_ : refused_other_).fetch_add(1, std::memory_order_relaxed);
  return RecordResult::kFailed;
}

CaptureIntegrity Recorder::Integrity() const {
  CaptureIntegrity out;
  drainer_.ReadState([&](const AllocationLedger&, const CaptureIntegrity& counters) {
    out = counters;
  });
  // Ring counters are monotonic and single-writer; relaxed reads give a recent total.
  // The registry's ring table is the drainer's, so read it between rounds as well.
  drainer_.ReadState([&](const AllocationLedger&, const CaptureIntegrity&) {
    const uint32_t rings = registry_.ring_count();
    for (uint32_t id = 1; id <= rings; ++id) {
      const SpscRing* ring = registry_.RingById(id);
      if (ring == nullptr) continue;
      out.events_recorded += ring->LoadHead();
      out.records_failed += ring->failed();
      out.events_dropped += ring->dropped();
      out.overflow_waits += ring->waited();
    }
    out.rings = rings;
  });
  out.rings_unavailable = rings_unavailable_.load(std::memory_order_relaxed);
  out.not_recording = not_recording_.load(std::memory_order_relaxed);
  out.records_failed += refused_allocs_.load(std::memory_order_relaxed);
  out.events_dropped += refused_other_.load(std::memory_order_relaxed);
  out.ticket_evictions = tickets_.fresh_evictions();
  out.foreign_span_exits = foreign_span_exits_.load(std::memory_order_relaxed);
  out.nested_records = nested_records_.load(std::memory_order_relaxed);
  return out;
}

void Recorder::BeginSnapshot(Snapshot* snap) const {
  snap->taken_unix_ns = absl::GetCurrentTimeNanos();
  snap->integrity = Integrity();
  snap->memtrace_memory = memory();
  snap->memtrace_bytes = snap->memtrace_memory.total();
  snap->drainer_cpu_ns = drainer_.CpuNs();
  snap->applier_cpu_ns = drainer_.ApplierCpuNs();
}

void Recorder::CopyCounters(const AllocationLedger& ledger, Snapshot* snap) {
  snap->totals = ledger.totals();
  const auto& scopes = ledger.scopes();
  for (uint32_t id = 0; id < scopes.size(); ++id) {
    if (scopes[id].allocated_count == 0) continue;
    snap->scopes.push_back(ScopeUsage{id, {}, scopes[id]});
  }
  for (int layer = 0; layer < 256; ++layer) {
    const UsageCounters& u = ledger.layers()[layer];
    if (u.allocated_count == 0) continue;
    const auto id = static_cast<LayerId>(layer);
    snap->layers.push_back(LayerUsage{id, DefaultLayerName(id), u});
  }
}

void Recorder::NameScopes(Snapshot* snap) {
  // Names are looked up outside the drainer's lock: the scope table has its own.
  for (ScopeUsage& s : snap->scopes) s.path = ScopeTable::Global().PathString(s.scope);
  for (SiteUsage& s : snap->sites) s.path = ScopeTable::Global().PathString(s.scope);
}

Snapshot Recorder::TakeSnapshot(uint32_t top_sites) {
  Flush().IgnoreError();
  Snapshot snap;
  BeginSnapshot(&snap);
  drainer_.ReadState([&](const AllocationLedger& ledger, const CaptureIntegrity&) {
    CopyCounters(ledger, &snap);
    if (top_sites > 0) TopSites(ledger, top_sites, &snap);
  });
  NameScopes(&snap);
  return snap;
}

absl::StatusOr<LiveCapture> Recorder::CaptureLive(uint64_t max_blocks) {
  Flush().IgnoreError();
  auto too_many = [max_blocks](uint64_t live) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the process holds ", live, " live blocks, more than a capture of one moment copies (",
        max_blocks, "); use `memtrace live` for its counters and top sites"));
  };
  // The room is made and touched before the lock is taken, for the blocks live now and
  // some more: the drainer waits for the copy, not for the page faults of its memory.
  uint64_t live = 0;
  drainer_.ReadState([&](const AllocationLedger& ledger, const CaptureIntegrity&) {
    live = ledger.totals().live_count;
  });
  if (live > max_blocks) return too_many(live);
  LiveCapture out;
  out.blocks.resize(std::min(max_blocks, live + live / 8 + 1024));
  BeginSnapshot(&out.snapshot);
  // One cut: the counters and the blocks from the same hold of the lock.
  size_t copied = 0;
  drainer_.ReadState([&](const AllocationLedger& ledger, const CaptureIntegrity&) {
    live = ledger.totals().live_count;
    if (live > max_blocks) return;
    CopyCounters(ledger, &out.snapshot);
    ledger.ForEachLive([&](const AllocationRecord& r) {
      if (copied < out.blocks.size()) {
        out.blocks[copied] = r;
      } else {
        out.blocks.push_back(r);  // more than the room: the program allocated meanwhile
      }
      ++copied;
    });
  });
  if (live > max_blocks) return too_many(live);
  out.blocks.resize(copied);
  NameScopes(&out.snapshot);
  // Stable: a block set aside at an address (allocation_ledger.h) stays after the one it
  // was set aside for, as AllocationLedger::LiveBlocks() orders them.
  std::stable_sort(out.blocks.begin(), out.blocks.end(),
                   [](const AllocationRecord& a, const AllocationRecord& b) {
                     return a.layer != b.layer ? a.layer < b.layer : a.address < b.address;
                   });
  if (stacks_ != nullptr) {
    for (const AllocationRecord& b : out.blocks) {
      if ((b.site & kStackHashBit) != 0) out.frames.try_emplace(b.site);
    }
    // A stack's frames never change once kept, and every stack a block names was kept
    // before the block was applied: a second hold of the lock finds them as the first
    // would have.
    drainer_.ReadState([&](const AllocationLedger&, const CaptureIntegrity&) {
      for (auto& [site, frames] : out.frames) {
        const absl::Span<const uint64_t> found = stacks_->Find(site);
        frames.assign(found.begin(), found.end());
      }
    });
  }
  return out;
}

void Recorder::TopSites(const AllocationLedger& ledger, uint32_t top, Snapshot* snap) const {
  std::vector<AllocationLedger::ContextLive> pairs = ledger.LiveByContext();
  // The largest first; ties by site and scope, so that equal pairs keep one order.
  auto larger = [](const AllocationLedger::ContextLive& a,
                   const AllocationLedger::ContextLive& b) {
    if (a.live_bytes != b.live_bytes) return a.live_bytes > b.live_bytes;
    return a.site != b.site ? a.site < b.site : a.scope < b.scope;
  };
  const size_t shown = std::min<size_t>(top, pairs.size());
  std::partial_sort(pairs.begin(), pairs.begin() + static_cast<ptrdiff_t>(shown), pairs.end(),
                    larger);
  snap->has_sites = true;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const AllocationLedger::ContextLive& p = pairs[i];
    if (i >= shown) {
      ++snap->sites_omitted;
      snap->sites_omitted_bytes += p.live_bytes;
      snap->sites_omitted_count += p.live_count;
      continue;
    }
    SiteUsage s;
    s.site = p.site;
    s.scope = p.scope;
    s.live_bytes = p.live_bytes;
    s.live_count = p.live_count;
    if (stacks_ != nullptr && (p.site & kStackHashBit) != 0) {
      const absl::Span<const uint64_t> frames = stacks_->Find(p.site);
      s.frames.assign(frames.begin(), frames.end());
    }
    snap->sites.push_back(std::move(s));
  }
}

MemtraceMemory Recorder::memory() const {
  MemtraceMemory m;
  m.rings = registry_.mapped_bytes();
  m.tickets = tickets_.mapped_bytes();
  drainer_.ReadState([&](const AllocationLedger& ledger, const CaptureIntegrity&) {
    m.sites = ledger.site_table_bytes() + (stacks_ != nullptr ? stacks_->memory_bytes() : 0);
    // The recorder itself too.
    m.ledger = ledger.memory_bytes() - ledger.site_table_bytes() + sizeof(*this);
  });
  return m;
}

}  // namespace memtrace
