// Copyright 2026 The memtrace Authors.
//
// sharded_apply.h: one epoch's records applied by K threads, each owning the live blocks
// of the addresses that hash to it, with counters equal to one ledger's.
//
// The drainer's ledger work (finding the block a release names, inserting, erasing) is the
// part of its per-record cost that grows with the live set. It splits by address: every
// record acts on the blocks at one address (a move on two), and the ledger's matching
// rules (tickets, then the address; blocks set aside at a reused address, settled at the
// epoch's end) look at one address only. So K ledgers, each holding the addresses whose
// hash picks it, apply a batch exactly as one ledger would, each in the batch's order:
//
//   - Applier a takes the records whose address it owns, in batch order. Records of other
//     owners it skips. An arena reset is every applier's: each releases its part.
//   - A move's two halves may have two owners. The target's owner needs what the first
//     half found (the old block's scope and site): it waits until the first half's owner
//     marks that record done. Waits only ever point to an earlier record of another
//     applier, so the earliest record not yet applied never waits: no deadlock.
//   - At the end of the batch (an epoch) each applier settles its own set-aside blocks.
//
// Counters are not summed from the K ledgers: a high-water mark is not a sum. Each applier
// writes, per record, what it found (the released block's bytes and scope, the outcome),
// and once all are done the caller's thread replays those changes in the batch's order
// into one set of counters (Account): the values, and every high-water mark, are those of
// one ledger applying the batch in that order (tests/sharded_apply_test.cc).
//
// Threads: the caller is applier 0; K-1 more wait in std::atomic::wait between batches.
// Synchronization: the caller publishes a batch by a release store of `generation_`,
// which each applier's acquire load pairs with; an applier's release increment of
// `finished_` pairs with the caller's acquire load, so every result it wrote is visible to
// the accounting. A move's first half is marked done by a release store of its `ready`
// word, which the target owner's acquire load pairs with.
//
// Thread safety: Apply() and the readers are called from one thread.

#ifndef MEMTRACE_RUNTIME_INTERNAL_SHARDED_APPLY_H_
#define MEMTRACE_RUNTIME_INTERNAL_SHARDED_APPLY_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "runtime/internal/allocation_ledger.h"
#include "runtime/usage_counters.h"
#include "transport/cache_line.h"
#include "transport/event.h"

namespace memtrace {

// One memory record of a batch, as the ledger needs it.
struct ApplyRecord {
  EventKind kind = EventKind::kInvalid;  // kAlloc, kFree, kResize, kRemap, kRemapTarget,
                                         // kArenaReset; others are skipped
  LayerId layer = 0;
  uint32_t scope = 0;
  // A move's two halves name one slot: kRemap and kRemapTarget records number their moves
  // 0, 1, ... in the batch (ShardedApply::Apply() takes the most as `moves`). A target
  // without its first half has kNoPair: a new block in `scope` at `site`.
  uint32_t pair = kNoPair;
  uint64_t address = 0;
  uint64_t size = 0;    // kAlloc, kRemapTarget: the size; kResize: the new size
  uint64_t ticket = 0;  // the record's own
  uint64_t of = 0;      // releases: the ticket of the block acted on (0: none)
  uint64_t site = 0;
  static constexpr uint32_t kNoPair = ~0u;
};

class ShardedApply {
 public:
  // `appliers` >= 1 threads (the caller being one), each with a ledger of `site_capacity`.
  ShardedApply(int appliers, uint32_t site_capacity);
  ~ShardedApply();

  ShardedApply(const ShardedApply&) = delete;
  ShardedApply& operator=(const ShardedApply&) = delete;

  // Applies `records` (one epoch's, in the drainer's order; `moves` of them are first
  // halves of moves, ApplyRecord::pair), settles the blocks set aside, and accounts every
  // change in order. Returns when all of it is done.
  void Apply(const std::vector<ApplyRecord>& records, uint32_t moves);

  const UsageCounters& totals() const noexcept { return totals_; }
  UsageCounters layer_usage(LayerId layer) const noexcept {
    return sole_ && layer == sole_layer_ ? totals_ : layers_[layer];
  }
  UsageCounters scope_usage(uint32_t scope) const noexcept {
    if (sole_ && scope == sole_scope_) return totals_;
    return scope < scopes_.size() ? scopes_[scope] : UsageCounters{};
  }
  // Outcomes summed over every batch: releases that named no live block (unknown and
  // double), matched by address rather than ticket, and blocks settled as missed frees.
  uint64_t unknown_releases() const noexcept { return unknown_; }
  uint64_t missed_frees() const noexcept { return missed_; }
  int appliers() const noexcept { return static_cast<int>(appliers_.size()); }

  // Which applier owns (layer, address). Public for tests. The multiplier is unrelated
  // to those of the ledger's shards and tables (AllocationLedger::ShardIndex(),
  // AddressTable's home slot): with theirs, the addresses one applier owns would all fall
  // in one part of each of its tables, which linear probing turns into runs as long as
  // the table (a replay of 2M live blocks took 100 times as long with two appliers).
  static int Owner(LayerId layer, uint64_t address, int appliers) noexcept {
    const uint64_t h = (address ^ (uint64_t{layer} << 56)) * 0xBF58476D1CE4E5B9ull;
    return static_cast<int>((static_cast<unsigned __int128>(h) * appliers) >> 64);
  }

 private:
  // What applying a release or a resize found, written by its owner into its own list
  // (no line of it is written by two appliers), in batch order.
  struct Result {
    AllocationLedger::Outcome outcome = AllocationLedger::Outcome::kApplied;
    uint32_t scope = 0;   // the scope the bytes were charged to
    uint64_t bytes = 0;   // kFree: released; kResize: the size before
  };
  // What a move's first half found, by its slot (ApplyRecord::pair): read by the second
  // half's owner, which may be another applier.
  struct Move {
    std::atomic<uint64_t> ready{0};  // the batch number once `moved` is written
    AllocationLedger::Moved moved;
  };
  // A block an applier released without a record of its own (an arena reset's, or one
  // settled at the batch's end).
  struct Release {
    uint32_t record;  // the reset's index, or ~0u: settled
    LayerId layer;
    uint32_t scope;
    uint64_t bytes;
  };
  struct alignas(kCacheLineSize) Applier {
    explicit Applier(uint32_t site_capacity) : ledger(site_capacity) {}
    AllocationLedger ledger;
    std::vector<uint32_t> own;      // the indexes of this batch's records it owns (Apply())
    std::vector<Result> results;    // this batch's, for its kFree and kResize records
    std::vector<Release> releases;  // this batch's, in order
    std::thread thread;
  };

  void Run(int index);             // an applier thread's loop
  // Applier `index`'s share of batch number `batch` (generation_'s value for it).
  void ApplyOwn(int index, uint64_t batch);
  void Account();                  // the caller's replay of the batch's changes
  // Whether a change in (layer, scope) goes to the totals alone (see sole_); the first
  // change names the pair, and one in another pair ends the mode for good.
  bool Sole(LayerId layer, uint32_t scope);
  void Change(LayerId layer, uint32_t scope, int64_t delta);
  void ChangeResize(LayerId layer, uint32_t scope, uint64_t from, uint64_t to);
  UsageCounters& ScopeCounters(uint32_t scope);

  std::vector<std::unique_ptr<Applier>> appliers_;
  const std::vector<ApplyRecord>* batch_ = nullptr;
  std::unique_ptr<Move[]> moves_;  // by slot
  size_t moves_size_ = 0;

  // Written by the caller, read by the appliers (see the header comment).
  alignas(kCacheLineSize) std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
  // Written by the appliers, read by the caller.
  alignas(kCacheLineSize) std::atomic<uint32_t> finished_{0};

  // While every change so far was in one (layer, scope), only the totals are kept: that
  // layer's and that scope's counters went through the same updates (as in the ledger).
  bool sole_ = true;
  bool sole_named_ = false;
  LayerId sole_layer_ = 0;
  uint32_t sole_scope_ = 0;
  UsageCounters totals_;
  std::array<UsageCounters, 256> layers_{};
  std::vector<UsageCounters> scopes_;
  uint64_t unknown_ = 0;
  uint64_t missed_ = 0;
  std::vector<size_t> cursor_, result_cursor_;  // Account()'s, per applier
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_INTERNAL_SHARDED_APPLY_H_
