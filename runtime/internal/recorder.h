// Copyright 2026 The memtrace Authors.
//
// recorder.h: the recording engine. Producers write records; a drainer applies them.
//
// A Recorder owns one ring per recording thread (transport/spsc_ring.h), the ticket table
// that pairs releases with allocations (transport/ticket_table.h), the epoch clock that
// orders threads (transport/epoch_clock.h), the drainer thread (drainer.h) and the ledger
// it fills (allocation_ledger.h). Tracer and TracingAllocator (tracer.h) are the public
// face; this class is what they forward to.
//
// The hot path (Record*): one thread-local load to find the thread's ring, a claim, a
// compiler barrier, one relaxed load of the epoch, a check for an order stamp (a time
// stamp every Config::order_stamp_log2 records), a 32-byte write, a release store, and
// for allocations one store into the ticket table (none while only one thread records:
// SoleRing()). No lock, no allocation, no system call, no write to a cache line another
// thread writes. The first record of a thread takes a slow path that binds a ring (it may
// allocate and map memory); so does a ring found full under
// OverflowPolicy::kWaitThenFail, which waits a bounded time (config.h).
//
// Nesting: one record at a time per thread. A record begun while the thread's ring has a
// claim open (between BeginRemap and its commit, or in a signal handler that interrupted
// a record) is refused (kFailed) and counted in nested_records, never written over the
// open claim's slots.
//
// Results of a record:
//   kRecorded      the record is in the ring and will be applied.
//   kNotRecording  the recorder is stopped; the operation is not traced (counted).
//   kFailed        the record could not be written (ring full, no ring). For an allocation
//                  the caller must undo it and report failure; for anything else the
//                  operation stands and the loss is counted (the failure flag).
//
// Life cycle: Create() → Start() → records → Flush() / Stop(). Stop() drains everything
// recorded before it, then stops; records made after it report kNotRecording. Start()
// may be called again. Destroying a running recorder stops it first.
//
// Thread safety: Record* from any thread, concurrently. Start, Stop and the destructor
// from one owner thread at a time. Flush and Inspect from any thread but the drainer.
// Record* may race with Stop() (the record is either applied or kNotRecording), but not
// with the destructor: no thread may be inside a Record* call once destruction begins.
//
// Example:
//   auto recorder = memtrace::Recorder::Create(memtrace::Config{}).value();
//   recorder->Start().IgnoreError();
//   void* p = malloc(64);
//   if (recorder->RecordAlloc(layers::kCpuHeap, Addr(p), 64, site) == RecordResult::kFailed)
//     free(p), p = nullptr;
//   recorder->Flush();

#ifndef MEMTRACE_RUNTIME_INTERNAL_RECORDER_H_
#define MEMTRACE_RUNTIME_INTERNAL_RECORDER_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/internal/allocation_ledger.h"
#include "runtime/capture_integrity.h"
#include "runtime/config.h"
#include "runtime/internal/drainer.h"
#include "runtime/live_capture.h"
#include "runtime/snapshot.h"
#include "runtime/internal/stack_frame_table.h"
#include "runtime/internal/thread_state.h"
#include "transport/epoch_clock.h"
#include "transport/event.h"
#include "transport/ring_registry.h"
#include "transport/ticket.h"
#include "transport/ticket_table.h"

namespace memtrace {

enum class RecordResult : uint8_t { kRecorded, kNotRecording, kFailed };

class Recorder {
 private:
  // Ring space claimed by Begin(), filled and published by End().
  struct Claim {
    SpscRing* ring;
    uint64_t pos;
    uint32_t ring_id;
    uint32_t epoch;
    uint32_t scope;
  };

 public:
  static absl::StatusOr<std::unique_ptr<Recorder>> Create(const Config& config);
  ~Recorder();

  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Life cycle (see the header comment).
  absl::Status Start();
  absl::Status Stop();
  bool running() const noexcept { return drainer_.running(); }

  // Returns once every record made before the call is applied. OK when stopped.
  absl::Status Flush();

  // Sends every applied record to `observer` (runtime/event_observer.h), from the drainer
  // thread. Only while stopped (before Start or after Stop): kFailedPrecondition otherwise,
  // and for an observer attached to another recorder (a capture holds one tracer's
  // records). nullptr detaches the one attached.
  absl::Status SetObserver(EventObserver* observer);
  // Detaches `observer` (EventObserver::DetachFromRecorder()), also while recording.
  void DetachObserver(EventObserver* observer) noexcept;

  // ---- Producer side: any thread, hot path ---------------------------------------------

  __attribute__((always_inline)) RecordResult RecordAlloc(LayerId layer, uint64_t address,
                                                         uint64_t size,
                                                         uint64_t site) noexcept {
    if (__builtin_expect(!Event::Fits(size), 0)) return Refuse(/*allocation=*/true);
    // Written below, after the record. While one ring records, no bucket is computed at
    // all (SoleRing(); a hint here, read again after Begin()).
    TicketTable::Bucket bucket = nullptr;
    if (!SoleRing()) TicketTable::Prefetch(bucket = tickets_.BucketOf(address));
    Claim c{};
    const RecordResult r = Begin(1, /*allocation=*/true, &c);
    if (r != RecordResult::kRecorded) return r;
    c.ring->slot(c.pos) = Event{address, Event::PackKindSize(EventKind::kAlloc, layer, size),
                                site, Event::PackScopeEpoch(c.scope, c.epoch)};
    End(c, 1);
    StoreTicket(bucket, address, c.ring_id, c.pos, c.epoch);
    return RecordResult::kRecorded;
  }

  __attribute__((always_inline)) RecordResult RecordFree(LayerId layer,
                                                        uint64_t address) noexcept {
    // Read below, after the claim; as in RecordAlloc(), not computed while one ring
    // records.
    TicketTable::Bucket bucket = nullptr;
    if (!SoleRing()) TicketTable::Prefetch(bucket = tickets_.BucketOf(address));
    Claim c{};
    const RecordResult r = Begin(1, /*allocation=*/false, &c);
    if (r != RecordResult::kRecorded) return r;
    const uint64_t ticket = ReleaseTicket(bucket, address);
    c.ring->slot(c.pos) = Event{address, Event::PackKindSize(EventKind::kFree, layer, 0),
                                ticket, Event::PackScopeEpoch(c.scope, c.epoch)};
    End(c, 1);
    return RecordResult::kRecorded;
  }

  // A block grew or shrank in place. The resize becomes the block's latest ticket, so a
  // release on another thread is applied after it (drainer.h, dependencies).
  RecordResult RecordResize(LayerId layer, uint64_t address, uint64_t new_size) noexcept {
    if (__builtin_expect(!Event::Fits(new_size), 0)) return Refuse(/*allocation=*/false);
    const TicketTable::Bucket bucket = tickets_.BucketOf(address);
    Claim c{};
    const RecordResult r = Begin(1, /*allocation=*/false, &c);
    if (r != RecordResult::kRecorded) return r;
    const uint64_t ticket = SoleRing() ? kSoleRingTicket : tickets_.Lookup(bucket, address);
    c.ring->slot(c.pos) =
        Event{address, Event::PackKindSize(EventKind::kResize, layer, new_size), ticket,
              Event::PackScopeEpoch(c.scope, c.epoch)};
    End(c, 1);
    StoreTicket(bucket, address, c.ring_id, c.pos, c.epoch);
    return RecordResult::kRecorded;
  }

  // A remap that may move is recorded in two steps around the backing allocator's call:
  //
  //   RemapClaim claim = recorder.BeginRemap(layer, old_address);   // before the call
  //   void* moved = backing.remap(...);
  //   if (moved) recorder.CommitRemap(claim, new_address, new_size, site);
  //   else       recorder.AbortRemap(claim);
  //
  // BeginRemap claims ring space and reads the epoch *before* the backing allocator can
  // hand the old address to another thread, so a reuse of that address is never stamped
  // with an earlier epoch than the move that released it. The claim keeps the drainer's
  // watermark open until Commit or Abort, so call the backing allocator and nothing else
  // in between. Commit/Abort must be called exactly once, on the same thread, when
  // result() is kRecorded; otherwise they do nothing.
  class RemapClaim {
   public:
    RecordResult result() const noexcept { return result_; }

   private:
    friend class Recorder;
    Claim claim_{};
    uint64_t old_address_ = 0;
    uint64_t old_ticket_ = 0;
    LayerId layer_ = 0;
    RecordResult result_ = RecordResult::kFailed;
  };

  RemapClaim BeginRemap(LayerId layer, uint64_t old_address) noexcept {
    RemapClaim rc;
    rc.old_address_ = old_address;
    rc.layer_ = layer;
    rc.result_ = Begin(2, /*allocation=*/false, &rc.claim_);
    rc.old_ticket_ =
        rc.result_ == RecordResult::kRecorded ? ReleaseTicket(nullptr, old_address) : 0;
    return rc;
  }

  // A size no record holds (2^48 bytes and more; Event::Fits()), refused by a caller
  // before its backing allocator is asked: counted as an allocation refused
  // (records_failed). Returns kFailed.
  RecordResult RefuseSize() noexcept { return Refuse(/*allocation=*/true); }

  // `new_size` must fit a record (Event::Fits(): a caller refuses larger sizes first,
  // RefuseSize()); a size that does not is recorded as the release of the old block
  // alone, and refused.
  void CommitRemap(const RemapClaim& rc, uint64_t new_address, uint64_t new_size,
                   uint64_t site) noexcept {
    if (rc.result_ != RecordResult::kRecorded) return;
    if (__builtin_expect(!Event::Fits(new_size), 0)) {
      CommitRelease(rc);
      Refuse(/*allocation=*/true);
      return;
    }
    const Claim& c = rc.claim_;
    // The release half keeps the epoch read before the move; the new block is stamped with
    // an epoch read after it, since the allocator may have handed out the new address only
    // after another thread's release (stamped later than our first read). The claim taken
    // in BeginRemap still covers this load for the watermark.
    uint32_t target_epoch = clock_.Load();
    if (target_epoch == EpochClock::kClosed) target_epoch = c.epoch;
    c.ring->slot(c.pos) =
        Event{rc.old_address_, Event::PackKindSize(EventKind::kRemap, rc.layer_, 0),
              rc.old_ticket_, Event::PackScopeEpoch(c.scope, c.epoch)};
    c.ring->slot(c.pos + 1) =
        Event{new_address,
              Event::PackKindSize(EventKind::kRemapTarget, rc.layer_, new_size),
              site, Event::PackScopeEpoch(c.scope, target_epoch)};
    End(c, 2);
    StoreTicket(nullptr, new_address, c.ring_id, c.pos + 1, target_epoch);
  }

  // The remap did not move the block: it grew or shrank in place. Records the resize in
  // the claim's first slot (the second goes back), as RecordResize() would after the call,
  // without a claim and two ticket-table visits of its own. Instead of CommitRemap or
  // AbortRemap, under the same rules.
  void CommitResize(const RemapClaim& rc, uint64_t new_size) noexcept {
    if (rc.result_ != RecordResult::kRecorded || !Event::Fits(new_size)) {
      if (rc.result_ == RecordResult::kRecorded) Refuse(/*allocation=*/false);
      AbortRemap(rc);
      return;
    }
    const Claim& c = rc.claim_;
    // Read after the call, as RecordResize() reads it: the block may have grown over a
    // neighbour another thread released after BeginRemap (the claim still covers the
    // load for the watermark).
    uint32_t epoch = clock_.Load();
    if (epoch == EpochClock::kClosed) epoch = c.epoch;
    c.ring->slot(c.pos) =
        Event{rc.old_address_, Event::PackKindSize(EventKind::kResize, rc.layer_, new_size),
              rc.old_ticket_, Event::PackScopeEpoch(c.scope, epoch)};
    c.ring->Publish(c.pos + 1);
    // After the publish: the drainer waits while the claim is beyond the head, and sees
    // it back at the head now.
    c.ring->Unclaim();
    AfterPublish(c);
    StoreTicket(nullptr, rc.old_address_, c.ring_id, c.pos, epoch);
  }

  // The remap moved the block, and only its release is recorded (the interposer's
  // sampling left the new block out). Records a free of the old block in the claim's first
  // slot (the second goes back), stamped with the epoch read in BeginRemap, as
  // CommitRemap's release half is. Instead of CommitRemap or AbortRemap, under the same
  // rules.
  void CommitRelease(const RemapClaim& rc) noexcept {
    if (rc.result_ != RecordResult::kRecorded) return;
    const Claim& c = rc.claim_;
    c.ring->slot(c.pos) =
        Event{rc.old_address_, Event::PackKindSize(EventKind::kFree, rc.layer_, 0),
              rc.old_ticket_, Event::PackScopeEpoch(c.scope, c.epoch)};
    c.ring->Publish(c.pos + 1);
    // After the publish, as in CommitResize().
    c.ring->Unclaim();
    AfterPublish(c);
  }

  void AbortRemap(const RemapClaim& rc) noexcept {
    // The block stays where it was, and so does its ticket (a lookup leaves the entry).
    if (rc.result_ == RecordResult::kRecorded) rc.claim_.ring->Unclaim();
  }

  // A remap recorded after the fact, for callers whose backing allocator cannot hand the
  // old address to anyone else before this returns (single-threaded arenas, tests).
  RecordResult RecordRemap(LayerId layer, uint64_t old_address, uint64_t new_address,
                           uint64_t new_size, uint64_t site) noexcept {
    const RemapClaim rc = BeginRemap(layer, old_address);
    CommitRemap(rc, new_address, new_size, site);
    return rc.result();
  }

  // The site word for an allocation made at the call stack `frames` (return addresses,
  // innermost first; `depth` <= kMaxStackDepth). The first time this thread uses a stack
  // it sends the frames ahead (kStackFrames records, event.h) and the result is the
  // stack's hash; after that only the hash. If the frames cannot be sent (ring full,
  // recorder stopped) the result is frames[0], the return address, so the allocation is
  // still attributed to its caller; nothing is lost. Pass the result to RecordAlloc or
  // CommitRemap. Hot path: a hash of the frames and one thread-local cache probe.
  static constexpr uint32_t kMaxStackDepth = 64;
  uint64_t StackSite(const uint64_t* frames, uint32_t depth) noexcept {
    if (depth == 0) return 0;
    return StackSiteOfHash(StackHash(frames, depth), frames, depth);  // each caps depth
  }

  // The stack's hash, as StackSite() computes it (a chain of dependent multiplies: about
  // 5 cycles a frame). For callers that can keep it for a stack they will see again.
  static uint64_t StackHash(const uint64_t* frames, uint32_t depth) noexcept {
    if (depth > kMaxStackDepth) depth = kMaxStackDepth;
    uint64_t h = 0x9e3779b97f4a7c15ull * (depth + 1);
    for (uint32_t i = 0; i < depth; ++i) {
      h = (h ^ frames[i]) * 0xff51afd7ed558ccdull;
      h ^= h >> 32;
    }
    return h | kStackHashBit;
  }

  // StackSite() with the hash given: `hash` must be StackHash(frames, depth), depth >= 1.
  uint64_t StackSiteOfHash(uint64_t hash, const uint64_t* frames, uint32_t depth) noexcept {
    if (depth > kMaxStackDepth) depth = kMaxStackDepth;
    const runtime_internal::StackState* const s = runtime_internal::Tls().stacks;
    if (__builtin_expect(s != nullptr && s->stack_cache_generation == generation_ &&
                             StackCacheWays(*s, hash)[0] == hash,
                         1)) {
      return hash;
    }
    return StackSiteSlow(hash, frames, depth);
  }

  // Every live block of `layer` is released at once (an arena reset).
  RecordResult RecordArenaReset(LayerId layer) noexcept {
    return RecordPlain(EventKind::kArenaReset, layer, 0, 0, 0);
  }

  // A scope opened or closed on this thread: `path` and the path in force around it.
  RecordResult RecordScope(EventKind enter_or_exit, uint32_t path, uint32_t outer,
                           uint64_t time_ns) noexcept {
    return RecordPlain(enter_or_exit, 0, path, time_ns, outer);
  }

  // A census entry changed by `delta` bytes (signed). A change, not the new value: the
  // drainer applies one epoch's records ring by ring or in stamp order, not in the order
  // they were made, and a sum of changes is the same in every order (census.h).
  RecordResult RecordCensus(uint32_t label, int64_t delta) noexcept {
    return RecordPlain(EventKind::kCensusUpdate, layers::kCensus, label,
                       static_cast<uint64_t>(delta), 0);
  }

  // An interval sink phase began or ended.
  RecordResult RecordInterval(EventKind begin_or_end, uint8_t category,
                              uint64_t time_ns) noexcept {
    return RecordPlain(begin_or_end, 0, category, time_ns, 0);
  }

  // ---- Results ---------------------------------------------------------------------------

  // A Span was exited on a thread other than the one that opened it (span.h).
  void CountForeignSpanExit() noexcept {
    // Relaxed: a statistic on a misuse path.
    foreign_span_exits_.fetch_add(1, std::memory_order_relaxed);
  }

  // Flushes, then copies totals, per-scope and per-layer counters and integrity. With
  // `top_sites` > 0, also the (site, scope) pairs holding the most live bytes, at most
  // that many (Snapshot::sites): one pass over the live blocks under the drainer's state
  // lock, so the drainer waits for it (a few ns a live block); the recording threads do
  // not.
  Snapshot TakeSnapshot(uint32_t top_sites = 0);

  // Flushes, then copies the counters TakeSnapshot() copies and every live block, from
  // one cut (live_capture.h), with the frames of their sites' stacks where kept. The
  // drainer waits for the copy (a few ns a block, into memory made and touched before the
  // lock is taken); the recording threads do not. kResourceExhausted, copying nothing, when more
  // than `max_blocks` blocks are live.
  absl::StatusOr<LiveCapture> CaptureLive(uint64_t max_blocks);

  // Capture integrity: the drainer's counters plus every ring's loss counters.
  CaptureIntegrity Integrity() const;

  // fork() (Drainer::HoldForFork): for a pthread_atfork() handler set that lets a forked
  // child trace on. HoldForFork() in the prepare handler, ReleaseAfterFork() in the
  // parent's; in the child's, LiveBlocksInForkedChild() returns what was live in the
  // parent at the fork (every record the parent's threads had published applied), and in
  // *unpublished how many records they were writing at that moment. The child's copy of
  // this recorder is of no further use: record into a new one.
  void HoldForFork() { drainer_.HoldForFork(); }
  void ReleaseAfterFork() { drainer_.ReleaseAfterFork(); }
  std::vector<AllocationRecord> LiveBlocksInForkedChild(uint64_t* unpublished) {
    *unpublished = drainer_.ApplyPublishedInForkedChild();
    return ledger_.LiveBlocks();
  }
  // In the forked child, after LiveBlocksInForkedChild(): the frames of the stack whose
  // hash is an inherited block's `site` (innermost first), when Config::keep_stack_frames
  // kept them; empty otherwise (not a hash, not kept, or the table was full).
  absl::Span<const uint64_t> InheritedStackFrames(uint64_t site) const {
    if (stacks_ == nullptr || (site & kStackHashBit) == 0) return {};
    return stacks_->Find(site);
  }

  // Calls fn(const AllocationLedger&, const CaptureIntegrity&) between drainer rounds.
  // Call Flush() first for a cut that includes everything recorded so far.
  template <typename Fn>
  void Inspect(Fn&& fn) const {
    const CaptureIntegrity integrity = Integrity();
    drainer_.ReadState([&](const AllocationLedger& ledger, const CaptureIntegrity&) {
      fn(ledger, integrity);
    });
  }

  const Config& config() const noexcept { return config_; }
  // Epochs the drainer applied in more than one slice (drainer.h). Any thread.
  uint64_t sliced_epochs() const noexcept { return drainer_.sliced_epochs(); }
  // Times a drain round began waiting for a record being written (drainer.h). Any thread.
  uint64_t claim_waits() const noexcept { return drainer_.claim_waits(); }

  // Bytes memtrace holds for this recorder: rings, ticket table, ledger; memory() by part.
  uint64_t memory_bytes() const { return memory().total(); }
  MemtraceMemory memory() const;

 private:
  explicit Recorder(const Config& config);
  // The parts of a snapshot: what is read outside the drainer's lock (time, integrity,
  // memtrace's memory and CPU), the ledger's counters (under it), and the scopes' paths
  // (after it: the scope table has its own lock).
  void BeginSnapshot(Snapshot* snap) const;
  static void CopyCounters(const AllocationLedger& ledger, Snapshot* snap);
  static void NameScopes(Snapshot* snap);
  // TakeSnapshot(top_sites)'s sites, from the ledger; under the drainer's state lock.
  void TopSites(const AllocationLedger& ledger, uint32_t top, Snapshot* snap) const;

  __attribute__((always_inline)) RecordResult Begin(uint32_t n, bool allocation,
                                                    Claim* c) noexcept {
    runtime_internal::ThreadState& t = runtime_internal::Tls();
    runtime_internal::RingBinding& b = t.rings[slot_];
    SpscRing* ring = b.ring;
    if (__builtin_expect(b.generation != generation_, 0)) {
      ring = Bind();
      if (ring == nullptr) return NoRing(allocation);
    }
    uint64_t pos;
    // Anything but a plain claim (a stamp point, a full ring, a record begun inside another
    // on this thread) takes the slow path: one compare decides (SpscRing::Claim()).
    const SpscRing::ClaimStatus status = ring->Claim(n, &pos);
    uint32_t epoch;
    if (__builtin_expect(status != SpscRing::ClaimStatus::kClaimed, 0)) {
      const SlowBegin slow = BeginSlow(ring, n, allocation, status, pos);
      if (slow.result != RecordResult::kRecorded) return slow.result;
      pos = slow.position;
      epoch = slow.epoch;
    } else {
      // Watermark step (2): orders the claim above before the epoch load below.
      clock_.LightFence();
      epoch = clock_.Load();
      if (__builtin_expect(epoch == EpochClock::kClosed, 0)) {
        ring->Unclaim();
        return NotRecording();
      }
    }
    *c = Claim{ring, pos, ring->id(), epoch, t.scope};
    return RecordResult::kRecorded;
  }

  __attribute__((always_inline)) void End(const Claim& c, uint32_t n) noexcept {
    c.ring->Publish(c.pos + n);
    AfterPublish(c);
  }

  __attribute__((always_inline)) void AfterPublish(const Claim& c) noexcept {
    // The ring passed a quarter full since this thread last looked (spsc_ring.h): the
    // drainer may be in a long sleep after a quiet spell. Once per quarter of a ring, and
    // only while the drainer lags; a wake to a drainer already awake makes no system call.
    if (__builtin_expect(c.ring->TakeWakeRequest(), 0)) drainer_.Wake();
    if (__builtin_expect(runtime_internal::Tls().exited, 0)) RetireAfterExit();
  }

  RecordResult RecordPlain(EventKind kind, LayerId layer, uint64_t word0, uint64_t word2,
                           uint32_t scope_override) noexcept {
    Claim c{};
    const RecordResult r = Begin(1, /*allocation=*/false, &c);
    if (r != RecordResult::kRecorded) return r;
    const uint32_t scope =
        (kind == EventKind::kScopeEnter || kind == EventKind::kScopeExit) ? scope_override
                                                                          : c.scope;
    c.ring->slot(c.pos) = Event{word0, Event::PackKindSize(kind, layer, 0), word2,
                                Event::PackScopeEpoch(scope, c.epoch)};
    End(c, 1);
    return RecordResult::kRecorded;
  }

  // One ring: while this recorder has handed out a single ring, releases take no ticket
  // and allocations store none. A ticket orders a release after its allocation when the
  // two are in different rings and the same epoch; with one ring, its own order does that,
  // and the drainer pairs the release by address (kSoleRingTicket). Once a second thread
  // acquires a ring (RingRegistry::acquisitions(), counted before its first record), every
  // record made after that takes and stores tickets again. Why the records the first
  // thread made without tickets around that moment stay exact: the first ring is the
  // drainer's first cursor, applied first in every epoch (drainer.h), and whatever another
  // thread releases of that thread's blocks was allocated in the same epoch or an earlier
  // one (happens-before). A release whose allocation was made without a ticket and that
  // comes after the change is matched by address (ticket_misses counts it, for
  // information). Call only after Begin(): a thread's first Begin() acquires its ring
  // (the ticket-table prefetches before Begin() read it as a hint only, and the ticket
  // itself is read or stored after).
  // The count is written a few times in a run, so its line stays in every core's cache.
  bool SoleRing() const noexcept { return registry_.acquisitions() <= 1; }

  // The order stamp of a stamp point, after Begin()'s epoch load: none (0, "no stamp",
  // epoch_clock.h) while one ring, whose own order is the real one, so a clock read would
  // order nothing and costs about as much as an allocation. The first ring's segments
  // stamped so before a second ring appeared start "earlier than any" in the drainer,
  // which is where their records lie (the drainer applies the first ring first for a few
  // epochs then, drainer.h); their windows are only wider. Except with a stamp on every
  // record (Config::order_stamp_log2 = 0, which asks for exact peaks): a window that
  // reached back to the epoch's start would let other threads' records of that epoch come
  // before the first thread's, and the peak would be an interval again.
  __attribute__((always_inline)) uint64_t OrderStamp() const noexcept {
    return SoleRing() && config_.order_stamp_log2 != 0 ? 0 : clock_.StampNow();
  }

  // The ticket table under that rule, after Begin(): a release's ticket (kSoleRingTicket
  // while one ring), and the store of a record's ticket (none while one ring). `bucket`:
  // the address's bucket, or nullptr when the caller has not computed it (it is then
  // computed here, only when the table is used).
  __attribute__((always_inline)) uint64_t ReleaseTicket(TicketTable::Bucket bucket,
                                                        uint64_t address) const noexcept {
    if (SoleRing()) return kSoleRingTicket;
    return tickets_.Lookup(BucketFor(bucket, address), address);
  }
  __attribute__((always_inline)) void StoreTicket(TicketTable::Bucket bucket, uint64_t address,
                                                  uint32_t ring_id, uint64_t position,
                                                  uint32_t epoch) noexcept {
    if (SoleRing()) return;
    tickets_.Record(BucketFor(bucket, address), address, ring_id, position, epoch);
  }
  // `bucket`, or the address's bucket when the caller has not computed it (nullptr).
  __attribute__((always_inline)) TicketTable::Bucket BucketFor(TicketTable::Bucket bucket,
                                                               uint64_t address) const noexcept {
    return bucket != nullptr ? bucket : tickets_.BucketOf(address);
  }

  // The thread's cache of sent stacks (thread_state.h): the two ways a hash may be in,
  // the way used last first.
  static uint64_t* StackCacheWays(runtime_internal::StackState& s, uint64_t hash) noexcept {
    return s.stack_cache[hash & (runtime_internal::kStackCacheSets - 1)];
  }
  static const uint64_t* StackCacheWays(const runtime_internal::StackState& s,
                                        uint64_t hash) noexcept {
    return s.stack_cache[hash & (runtime_internal::kStackCacheSets - 1)];
  }
  static void UseFirst(uint64_t* ways, uint64_t hash) noexcept {
    ways[1] = ways[0];
    ways[0] = hash;
  }

  // Slow paths.
  uint64_t StackSiteSlow(uint64_t hash, const uint64_t* frames, uint32_t depth) noexcept;
  uint64_t SendStack(uint64_t hash, const uint64_t* frames, uint32_t depth) noexcept;
  SpscRing* Bind() noexcept;
  // Begin() past its one compare: `status` is what SpscRing::Claim() returned (anything
  // but kClaimed), `pos` the position it claimed, if it did. Returns the claim's position
  // and epoch when `result` is kRecorded (by value, so that Begin()'s locals stay in
  // registers on the fast path).
  struct SlowBegin {
    uint64_t position;
    uint32_t epoch;
    RecordResult result;
  };
  SlowBegin BeginSlow(SpscRing* ring, uint32_t n, bool allocation,
                      SpscRing::ClaimStatus status, uint64_t pos) noexcept;
  // Waits for room (the overflow policy) and claims it: kClaimed, kStampDue, or kFull
  // when the wait ran out.
  SpscRing::ClaimStatus WaitForSpace(SpscRing* ring, uint32_t n, uint64_t* pos) noexcept;
  RecordResult Overflowed(SpscRing* ring, bool allocation) noexcept;
  // A record begun while this thread's ring has a claim open (SpscRing::kNested): a
  // call made between BeginRemap() and its commit (a traced backing allocator, a census
  // update, a scope), or a signal handler that interrupted a record. Refused and counted
  // (as failed or dropped, and in nested_records), never written over the open claim.
  RecordResult Nested(SpscRing* ring, bool allocation) noexcept;
  RecordResult NoRing(bool allocation) noexcept;
  RecordResult NotRecording() noexcept;
  RecordResult Refuse(bool allocation) noexcept;
  // After the thread's exit hook: hands its ring to the drainer to retire once the thread
  // is gone (thread_state.h, step 3), once.
  void RetireAfterExit() noexcept;

  const Config config_;
  // This recorder's slot and generation (internal/thread_state.h); -1 if none was free.
  // Set once in the constructor.
  int slot_ = -1;
  uint64_t generation_ = 0;

  EpochClock clock_;
  TicketTable tickets_;
  RingRegistry registry_;
  AllocationLedger ledger_;
  // Config::keep_stack_frames: the drainer's copy of every stack's frames; else nullptr.
  const std::unique_ptr<StackFrameTable> stacks_;
  Drainer drainer_;

  std::mutex lifecycle_mu_;
  // The process the drainer runs in (Start()), and whether a full ring was found in
  // another one: a child made by a fork that ran no fork handler (_Fork(), a raw clone),
  // whose copy of the recorder has no drainer. Its threads then never wait for room
  // (WaitForSpace). Relaxed atomics: each process reads its own copy; a stale read only
  // costs one more getpid().
  std::atomic<pid_t> drainer_pid_{0};
  std::atomic<bool> forked_away_{false};
  // Slow-path counters (no ring to count in, or the recorder is stopped).
  std::atomic<uint64_t> rings_unavailable_{0};
  std::atomic<uint64_t> not_recording_{0};
  std::atomic<uint64_t> refused_allocs_{0};
  std::atomic<uint64_t> refused_other_{0};
  std::atomic<uint64_t> foreign_span_exits_{0};
  std::atomic<uint64_t> nested_records_{0};
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_INTERNAL_RECORDER_H_
