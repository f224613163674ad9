// Copyright 2026 The memtrace Authors.
//
// sharded_apply.h: a batch of records applied to one ledger by K threads, each owning the
// ledger's shards of some addresses, with every counter what one thread would have made.
//
// The drainer's ledger work (finding the block a release names, inserting, erasing) is the
// part of its per-record cost that grows with the live set. It splits by address: every
// record acts on the blocks at one address (a move on two), and the ledger's matching
// rules (tickets, then the address; blocks set aside at a reused address, settled at the
// epoch's end; the last release at an address) look at one address only. The ledger keeps
// all of that in kShards shards by address (allocation_ledger.h, "sharing the work"), so
// K threads that each own whole shards apply a batch exactly as one would, each in the
// batch's order:
//
//   - Applier a takes the records whose address is in its shards, in batch order. An
//     arena reset is every applier's: each releases its shards' part.
//   - A move's two halves may have two owners. The target's owner needs what the first
//     half found (the old block's context and size): it waits until the first half's
//     owner marks that record done. Waits only ever point to an earlier record of another
//     applier, so the earliest record not yet applied never waits: no deadlock.
//   - At an epoch's end, after Apply(), the adding thread settles the blocks set aside
//     itself (AllocationLedger::SettleDisplaced(): they are few, and most epochs have
//     none), the appliers asleep.
//   - A batch of at most kSoloRecords records is applied by the adding thread alone, in
//     order, each record for its owner: waking the others would cost more.
//   - What is shared stays still meanwhile: contexts are interned and tables made by the
//     thread that adds the records (Add), and the ledger counts nothing.
//
// Counters are not summed per applier: a high-water mark is not a sum. Each applier
// writes, per release, what it found (the block's bytes and scope, the outcome), and once
// all are done the adding thread replays the batch's changes in order into the ledger's
// own counters (Account), with the peak tracker's segment changes (BeginSegment,
// UseSegment) at their places among them: the values, every high-water mark and every
// peak interval are those of one thread applying the batch in that order
// (tests/sharded_apply_test.cc, tests/ground_truth_stress_test.cc).
//
// Threads: the adding thread is applier 0; K-1 more (memtrace threads, on `cpus`) wait in
// std::atomic::wait between batches. Synchronization: Apply() publishes a batch by a
// release increment of `generation_`, which each applier's acquire load pairs with; an
// applier's release increment of `finished_` pairs with Apply()'s acquire load, so every
// result it wrote is visible to the accounting, and the ledger's shards it changed are
// the adding thread's again. A move's first half is marked done by a release store of its
// `ready` word, which the target owner's acquire load pairs with.
//
// Thread safety: every member but the constructor and destructor is called from one
// thread, the adding thread.

#ifndef MEMTRACE_RUNTIME_INTERNAL_SHARDED_APPLY_H_
#define MEMTRACE_RUNTIME_INTERNAL_SHARDED_APPLY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "runtime/internal/allocation_ledger.h"
#include "runtime/internal/cpu_list.h"
#include "runtime/internal/peak_tracker.h"
#include "runtime/internal/thread_cpu_time.h"
#include "transport/cache_line.h"
#include "transport/event.h"

namespace memtrace {

// One memory record of a batch, as the ledger needs it.
struct ApplyRecord {
  enum class Op : uint8_t {
    kAlloc,     // a new block at `address`, in `context` (AllocationLedger::ContextOf)
    kFree,      // releases the block `of` names at `address`
    kResize,    // the block `of` names at `address` takes `size` and answers to `ticket`
    kMoveOut,   // a move's first half: releases the block `of` names at `address`
    kMoveIn,    // a move's second half: the block at its new `address`
    kReset,     // releases every block of `layer`
  };
  Op op = Op::kAlloc;
  LayerId layer = 0;
  // A release the recorder's sole ring made without a ticket (Recorder::SoleRing()):
  // matched by address by design, so no ticket miss.
  bool sole = false;
  // kAlloc, kMoveIn: the scope counted, which `context` names. A kMoveIn with a pair
  // takes the old block's scope and context; when its first half finds no block, its
  // own scope, `site` and `context`, a provisional one (AllocationLedger::
  // ProvisionalContext) that the accounting resolves to them.
  uint32_t scope = 0;
  uint32_t context = 0;
  // kMoveOut: its slot, numbered 0, 1, ... in the batch (AddMoveOut). kMoveIn: its first
  // half's slot, or kNoPair when the first half was in an earlier batch or missing (the
  // caller then names the context and scope it found, MovedOf()).
  uint32_t pair = kNoPair;
  uint64_t site = 0;    // kMoveIn with a pair: see `scope`
  uint64_t address = 0;
  uint64_t size = 0;    // kAlloc, kMoveIn: the size; kResize: the new size
  uint64_t ticket = 0;  // the record's own
  uint64_t of = 0;      // releases: the ticket of the block acted on (0: none)
  static constexpr uint32_t kNoPair = ~0u;
};

// What the records of the batches applied so far found, for CaptureIntegrity.
struct ApplyOutcomes {
  uint64_t unknown_frees = 0;
  uint64_t unknown_resizes = 0;
  uint64_t unknown_remaps = 0;
  uint64_t double_frees = 0;
  uint64_t ticket_misses = 0;
  uint64_t ambiguous_matches = 0;
};

// Counts what a release, resize or move found (`outcome`) into `counts`, a CaptureIntegrity
// or an ApplyOutcomes: a record without a live block into *unknown (the counter of its
// kind), a match by address into ticket_misses unless the release is `sole` (the
// recorder's sole ring records without tickets by design).
template <typename Counts>
inline void CountOutcome(LedgerOutcome outcome, bool sole, uint64_t* unknown,
                         Counts* counts) noexcept {
  switch (outcome) {
    case LedgerOutcome::kApplied: break;
    case LedgerOutcome::kMatchedByAddress:
      if (!sole) ++counts->ticket_misses;
      break;
    case LedgerOutcome::kAmbiguous:
      ++counts->ticket_misses;
      ++counts->ambiguous_matches;
      break;
    case LedgerOutcome::kUnknown: ++*unknown; break;
    case LedgerOutcome::kDoubleFree: ++counts->double_frees; break;
  }
}

class ShardedApply {
 public:
  // Records added before Apply() is due (full()): about 3 MiB of records and results.
  static constexpr size_t kBatchRecords = 32768;
  // A batch this small is applied by the adding thread alone, the other appliers left
  // asleep: waking them costs a system call and a wait for each to be scheduled (tens of
  // microseconds, more on a busy machine), more than they would save on a few thousand
  // records. The result is the same (every member below keeps its promises whoever
  // applies), since the others touch nothing while asleep.
  static constexpr size_t kSoloRecords = 4096;

  // `appliers` >= 1 threads (the caller being one, up to AllocationLedger::kShards) that
  // apply to `ledger`. The others are memtrace threads named "memtrace-apply", on `cpus`
  // (empty: anywhere), each followed by cpu[i - 1] (the caller keeps `cpu` alive, with
  // appliers - 1 entries). `solo_records`: kSoloRecords, or another bound (tests). The
  // threads start here (StartThreads).
  ShardedApply(AllocationLedger* ledger, int appliers, const CpuList& cpus = {},
               ThreadCpuTime* cpu = nullptr, size_t solo_records = kSoloRecords);
  ~ShardedApply();

  ShardedApply(const ShardedApply&) = delete;
  ShardedApply& operator=(const ShardedApply&) = delete;

  // A ring's move between its two halves (a kRemap added, its kRemapTarget, the ring's
  // next record, not yet): the first half's slot and batch, and once that batch is
  // applied (Collect), what it found.
  struct PendingMove {
    bool moving = false;
    uint64_t batch = 0;
    uint32_t slot = 0;
    AllocationLedger::Moved moved;
  };
  // Adds a ledger record as a ring holds it (kAlloc, kFree, kResize, kRemap,
  // kRemapTarget, kArenaReset; others are skipped): interns its context, and pairs a
  // move's halves through `move`, the ring's. `sole`: see ApplyRecord. Returns false for
  // a kRemapTarget with no kRemap before it (an order conflict: added as a new block).
  bool AddEvent(EventKind kind, LayerId layer, uint32_t scope, uint64_t address,
                uint64_t size, uint64_t ticket, uint64_t of, uint64_t site, bool sole,
                PendingMove* move);
  // After Apply(): a move whose first half was in the batch just applied takes what it
  // found.
  void Collect(PendingMove* move) const noexcept {
    if (move->moving && move->batch + 1 == batch_number_) move->moved = MovedOf(move->slot);
  }

  // Adds a record to the batch (not a kMoveOut: AddMoveOut). Makes its layer's tables.
  void Add(const ApplyRecord& r) {
    ledger_->Reserve(r.layer);
    records_.push_back(r);
  }
  // Adds a move's first half; returns its slot, for the second half's `pair`.
  uint32_t AddMoveOut(ApplyRecord r) {
    r.op = ApplyRecord::Op::kMoveOut;
    r.pair = moves_added_++;
    Add(r);
    return r.pair;
  }
  // The peak tracker's segment changes (peak_tracker.h), at their place among the
  // records: done in order by the accounting.
  void BeginSegment(PeakTracker::Open* open, uint32_t ring, uint64_t segment, uint64_t lo,
                    uint64_t hi) {
    markers_.push_back(Marker{static_cast<uint32_t>(records_.size()), true, open, ring,
                              segment, lo, hi});
  }
  void UseSegment(PeakTracker::Open* open) {
    markers_.push_back(Marker{static_cast<uint32_t>(records_.size()), false, open, 0, 0, 0, 0});
  }

  bool empty() const noexcept { return records_.empty() && markers_.empty(); }
  bool full() const noexcept { return records_.size() >= kBatchRecords; }
  // The number of the batch being added to; each Apply() moves to the next.
  uint64_t batch() const noexcept { return batch_number_; }

  // Applies the records added, accounts every change in order, and starts a new batch.
  // Returns when all of it is done.
  void Apply();
  // After Apply(): what the first half in `slot` of the batch just applied found (the
  // ledger's MoveOut), until the next Apply().
  const AllocationLedger::Moved& MovedOf(uint32_t slot) const noexcept {
    return moves_[slot].moved;
  }
  // The outcomes since the last call.
  ApplyOutcomes TakeOutcomes() noexcept {
    const ApplyOutcomes out = outcomes_;
    outcomes_ = ApplyOutcomes{};
    return out;
  }
  int appliers() const noexcept { return static_cast<int>(appliers_.size()); }

  // Ends the applier threads, between batches; until StartThreads(), the adding thread
  // applies every batch alone (the result is the same). A recorder stopped has no thread
  // of memtrace's left (preload/finish.inc relies on it before unshare()).
  void StopThreads();
  // Starts them again. If one cannot be made, the ones made are ended, and the adding
  // thread goes on alone.
  void StartThreads();
  bool threads_running() const noexcept { return threads_running_; }

  // In a child of fork(), whose copy of this has no applier threads: the threads' objects
  // are let go of without a join, and the destructor then joins nothing. Nothing else may
  // be called afterwards. On the child's one thread.
  void AbandonAfterFork() noexcept;

  // Which applier owns `address`: the one its ledger shard is given to.
  int Owner(uint64_t address) const noexcept {
    return owner_of_shard_[AllocationLedger::ShardOf(address)];
  }

 private:
  // What applying a release or a resize found, written by its owner into its own list
  // (no line of it is written by two appliers), in batch order.
  struct Result {
    LedgerOutcome outcome = LedgerOutcome::kApplied;
    uint32_t scope = 0;   // the scope the bytes were charged to
    uint64_t bytes = 0;   // kFree: released; kResize: the size before
  };
  // What a move's first half found, by its slot: read by the second half's owner, which
  // may be another applier.
  struct alignas(kCacheLineSize) Move {
    std::atomic<uint64_t> ready{0};  // the batch number once `moved` and `outcome` are
    LedgerOutcome outcome = LedgerOutcome::kApplied;
    AllocationLedger::Moved moved;
  };
  // A block an applier released without a record of its own (an arena reset's).
  struct Release {
    uint32_t record;  // the reset's index
    LayerId layer;
    uint32_t scope;
    uint64_t bytes;
  };
  struct Marker {
    uint32_t before;  // the index of the record it comes before
    bool begin;       // BeginSegment; else UseSegment
    PeakTracker::Open* open;
    uint32_t ring;
    uint64_t segment;
    uint64_t lo;
    uint64_t hi;
  };
  struct alignas(kCacheLineSize) Applier {
    AllocationLedger::ShardMask shards = 0;
    std::vector<uint32_t> own;      // the indexes of this batch's records it owns (RunAll())
    std::vector<Result> results;    // this batch's, for its kFree and kResize records
    std::vector<Release> releases;  // this batch's, in order
    std::thread thread;
  };

  // An applier's loop, from generation `seen` on.
  void Run(int index, uint64_t seen, ThreadCpuTime* cpu);
  // Applier `index`'s share of batch number `batch` (generation_'s value for it).
  void ApplyOwn(int index, uint64_t batch);
  // Record `i` of the batch, applied for applier `me` (its shards, its lists).
  void ApplyOne(Applier& me, uint32_t i, uint64_t batch);
  // The whole batch in its order on the calling thread, each record for its owner.
  void ApplySolo(uint64_t batch);
  // Every applier's share, the caller's as applier 0; returns when all are done.
  void RunAll();
  void Account();  // the caller's replay of the batch's changes

  AllocationLedger* const ledger_;
  const size_t solo_records_;
  const CpuList cpus_;
  ThreadCpuTime* const cpu_;
  bool threads_running_ = false;
  std::vector<std::unique_ptr<Applier>> appliers_;
  int owner_of_shard_[AllocationLedger::kShards] = {};
  std::vector<ApplyRecord> records_;
  std::vector<Marker> markers_;
  uint32_t moves_added_ = 0;
  std::unique_ptr<Move[]> moves_;  // by slot
  size_t moves_size_ = 0;
  uint64_t batch_number_ = 1;  // never 0, which a fresh Move's `ready` reads
  bool abandoned_ = false;

  // Written by the caller, read by the appliers (see the header comment).
  alignas(kCacheLineSize) std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
  // Written by the appliers, read by the caller.
  alignas(kCacheLineSize) std::atomic<uint32_t> finished_{0};

  ApplyOutcomes outcomes_;
  std::vector<size_t> cursor_, result_cursor_;  // Account()'s, per applier
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_INTERNAL_SHARDED_APPLY_H_
