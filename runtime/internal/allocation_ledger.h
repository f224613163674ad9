// Copyright 2026 The memtrace Authors.
//
// allocation_ledger.h: the drainer's exact record of what is live, and the counts derived
// from it.
//
// The ledger is a set of address-keyed tables, one group per layer, each group split into
// 16 shards by address so that no single table grows (and rehashes) in one long pause.
// Per live allocation it keeps size, scope, site and the allocation's ticket in 24 bytes
// (internal/address_table.h); scope and site share one 32-bit "context" id.
//
// Matching releases to allocations. Every free, resize and remap carries the ticket of the
// allocation it acts on (transport/ticket.h). The ledger matches by ticket first, then by
// address:
//   - An allocation at an address that is still live in the ledger means the earlier
//     block's release is still on its way (it was recorded in the same epoch on another
//     thread). The earlier block is set aside ("displaced") until its release arrives.
//   - The drainer applies one thread's records at a time, so a block can also be set aside
//     by an allocation that really came *before* it (the other thread's ring was read
//     later). Tickets keep every release matched to its own block either way.
//   - At the end of each epoch, SettleDisplaced() resolves what is still set aside. All
//     operations of the epoch are in, and at most one block can really be live at an
//     address: a set-aside block is put back when the address has no other block, and
//     otherwise released and counted as a missed free (its release was lost or made
//     outside the tracer).
//   - A release without a ticket (the ticket table lost it, which happens only to
//     allocations from an earlier epoch) takes the oldest block at its address: any other
//     block there was allocated after it in reality.
//   - A release that names no live block is an unknown free, or a double free when the
//     last block released at that address had the same ticket.
//
// Sharing the work. Every record acts on the blocks at one address (a move on two), and
// everything the ledger keeps per address (the tables, the blocks set aside, the last
// releases) is split into kShards shards by address, the same split in every layer. So
// threads that each own whole shards (ShardedApply, sharded_apply.h) can apply one batch
// together, each its own shards' records in the batch's order, while the ledger's shared
// parts stay still: contexts are interned beforehand (ContextOf, Place), tables made
// beforehand (Reserve), and counting is off (set_counting), the counters being kept by
// one thread afterwards in the batch's order.
//
// Thread safety: none, but for the shard-by-shard sharing above. The drainer owns the
// ledger; others read it under the drainer's lock, or copies (Snapshot).

#ifndef MEMTRACE_RUNTIME_INTERNAL_ALLOCATION_LEDGER_H_
#define MEMTRACE_RUNTIME_INTERNAL_ALLOCATION_LEDGER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "runtime/allocation_record.h"
#include "runtime/internal/address_table.h"
#include "runtime/internal/peak_tracker.h"
#include "runtime/internal/site_table.h"
#include "runtime/usage_counters.h"
#include "transport/cache_line.h"
#include "transport/event.h"
#include "transport/fibonacci_index.h"
#include "transport/ticket.h"
#include "transport/zeroed_array.h"

namespace memtrace {

// What a release (or resize, or move) found.
enum class LedgerOutcome : uint8_t {
  kApplied,           // matched the allocation its ticket names
  kMatchedByAddress,  // the ticket named no live block; matched the block at the address
  kAmbiguous,         // as above, but the ticket named a different block (not "unknown")
                      // while other blocks were set aside at the address
  kUnknown,           // no live block at that address
  kDoubleFree,        // that very allocation was already released
};

// `Note`: what each live block carries beside its size, scope, site and ticket, in its
// own slot (address_table.h): nothing for the drainer (AllocationLedger), a BlockNote for
// a capture's replay (ReplayLedger), which so finds a released block's note with the
// block, in one lookup.
template <typename Note>
class BasicLedger {
 public:
  using Outcome = LedgerOutcome;

  static constexpr int kShards = 16;

  explicit BasicLedger(uint32_t site_capacity);
  ~BasicLedger();

  BasicLedger(const BasicLedger&) = delete;
  BasicLedger& operator=(const BasicLedger&) = delete;

  // A block the ledger let go of: where it was, what it was charged to, and the 48 bits
  // of its ticket (CompactTicket) that tell it apart from other blocks at its address,
  // and its note.
  struct Released {
    AllocationRecord block;
    uint64_t ticket48 = 0;
    [[no_unique_address]] Note note{};
  };
  using ReleaseFn = absl::FunctionRef<void(const Released&)>;

  // A new block. Returns true when it displaced a block still live at the same address.
  bool Alloc(LayerId layer, uint64_t address, uint64_t size, uint64_t ticket,
             uint32_t scope, uint64_t site, const Note& note = Note{});

  // ---- Shard by shard (the header, "sharing the work") ----------------------------------
  // The shard of an address, in every layer.
  static int ShardOf(uint64_t address) noexcept { return static_cast<int>(ShardIndex(address)); }
  // A set of shards: bit i is shard i.
  using ShardMask = uint32_t;
  static constexpr ShardMask kAllShards = (ShardMask{1} << kShards) - 1;
  // The context id of (scope, site), interned if new; what Place() takes. Not while
  // threads share the ledger.
  uint32_t ContextOf(uint32_t scope, uint64_t site);
  // Makes `layer`'s tables, which Place() and the releases would otherwise make on first
  // use. Not while threads share the ledger.
  void Reserve(LayerId layer) {
    if (!tables_[layer]) tables_[layer] = std::make_unique<Shards>();
  }
  // The same, with room for about `blocks` blocks live at once in `layer`: its tables
  // start at the capacity they would grow to for that many, spread evenly over the shards
  // (a shard that comes to hold more grows on, as it would have). A replay that knows its
  // capture's peak saves the growing, which moves every block again and again (a miss
  // each, once the tables pass the caches) into memory the kernel zeroes anew each time,
  // and ends with the tables it would have had.
  void Reserve(LayerId layer, uint64_t blocks) {
    Reserve(layer);
    for (Table& table : *tables_[layer]) table.Reserve(blocks / kShards);
  }
  // Alloc() of a block whose context ContextOf() gave, without counting it: the caller
  // counts (the scope is the context's).
  bool Place(LayerId layer, uint64_t address, uint64_t size, uint64_t ticket,
             uint32_t context, const Note& note = Note{});
  // A move's second half whose first half is applied in the same batch, by another
  // thread perhaps, takes the old block's context, or, when there was none, its own
  // (scope, site): interned then, as MoveIn() would, which cannot happen while threads
  // share the ledger. So such a record gets a provisional context of its scope, made
  // beforehand without touching the site table; afterwards, in the batch's order, it is
  // given back unused, or resolved to the record's own (scope, site): the block placed
  // with it, still at `address` with `ticket`, takes that context, and the provisional
  // one is given back; a block gone from there (moved on, resized, released) leaves it
  // standing for that context for good (in LiveByContext() too). Not while threads share
  // the ledger.
  uint32_t ProvisionalContext(uint32_t scope);
  void GiveBackProvisional(uint32_t context);
  void ResolveProvisional(uint32_t context, uint64_t site, LayerId layer, uint64_t address,
                          uint64_t ticket);

  // Releases the block `ticket` names at `address`; with `released`, says which block
  // that was (left untouched when none was: kUnknown, kDoubleFree).
  Outcome Free(LayerId layer, uint64_t address, uint64_t ticket,
               Released* released = nullptr);
  // The same, saying only the released block's scope and size (left untouched when none
  // was): what ShardedApply's accounting needs, without the site's lookup.
  Outcome Free(LayerId layer, uint64_t address, uint64_t ticket, uint32_t* scope,
               uint64_t* size);

  // Changes the size of a block in place; the block answers to `new_ticket` afterwards
  // (the resize record's own ticket, which later releases carry). With `before`, says
  // which block that was, as it was before the resize. The block keeps its note.
  Outcome Resize(LayerId layer, uint64_t address, uint64_t ticket, uint64_t new_size,
                 uint64_t new_ticket, Released* before = nullptr);

  // The note of the block a release or resize of (address, ticket) would act on, or null.
  // Changes no block.
  const Note* PeekNote(LayerId layer, uint64_t address, uint64_t ticket);

  // Brings in what a record of a block at (layer, address) will look up; the drainer
  // calls it a few records ahead of applying one. A hint: it changes nothing.
  void Prefetch(LayerId layer, uint64_t address) const noexcept {
    const std::unique_ptr<Shards>& shards = tables_[layer];
    if (shards) (*shards)[ShardIndex(address)].Prefetch(address);
  }

  // A remap that moved a block happens in two steps, which the drainer may apply in
  // different epochs (transport/event.h). MoveOut releases the old block and returns what
  // MoveIn needs to recreate it at the new address with its scope and site.
  struct Moved {
    bool known = false;  // the old block was found
    uint32_t scope = 0;
    uint32_t context = 0;  // the old block's (scope, site): where MoveIn() puts the new one
    uint64_t site = 0;
    uint64_t size = 0;      // the old block's, its ticket's 48 bits and its note (Released)
    uint64_t ticket48 = 0;
    [[no_unique_address]] Note note{};
  };
  Outcome MoveOut(LayerId layer, uint64_t old_address, uint64_t old_ticket, Moved* moved);
  // If the old block was unknown, the new one is recorded in `scope` at `site`. The new
  // block carries `note`.
  void MoveIn(LayerId layer, const Moved& moved, uint64_t new_address, uint64_t new_size,
              uint64_t new_ticket, uint32_t scope, uint64_t site, const Note& note = Note{});

  // Both steps at once: the moved block keeps its note (an unknown one gets none).
  Outcome Remap(LayerId layer, uint64_t old_address, uint64_t old_ticket,
                uint64_t new_address, uint64_t new_size, uint64_t new_ticket,
                uint32_t scope, uint64_t site);

  // Releases every live block of `layer` (an arena reset). Returns how many; with
  // `on_release`, calls it with each.
  uint64_t ResetLayer(LayerId layer);
  uint64_t ResetLayer(LayerId layer, ReleaseFn on_release);
  // The same for the blocks of the shards in `shards` only.
  uint64_t ResetLayer(LayerId layer, ShardMask shards, ReleaseFn on_release);

  // End of an epoch: resolves displaced blocks (see above). Returns how many were released
  // as missed frees; with `on_release`, calls it with each.
  uint64_t SettleDisplaced();
  uint64_t SettleDisplaced(ReleaseFn on_release);

  // High-water marks (usage_counters.h). `ordered`: the changes applied from now on come
  // in their real order (one ring's records), so every value they reach is a real one
  // and raises the lower end of the peak's interval too. Otherwise the drainer bounds the
  // peak at the epoch's end (BoundHighWater). Ordered from the start.
  void set_ordered(bool ordered) noexcept { ordered_ = ordered; }
  // Whether the ledger keeps counters at all. A ledger that holds part of the addresses
  // for ShardedApply (sharded_apply.h) does not: the counters are kept in the batch's
  // order by the thread that accounts for all of them. Counting from the start.
  void set_counting(bool counting) noexcept { counting_ = counting; }
  // Where every change to a counter is reported (peak_tracker.h); nullptr: nowhere.
  void set_peak_tracker(PeakTracker* tracker) noexcept { tracker_ = tracker; }
  // The counter `key` (PeakTracker's keys) changed by `net` during the epoch just applied,
  // and its peak during the epoch lay in [low, high] relative to its value when the epoch
  // began: its high-water interval takes that in (UsageCounters::BoundHighWater).
  void BoundHighWater(uint64_t key, int64_t low, int64_t high, int64_t net);
  // The counter `key`'s value when the epoch just applied began (its live bytes less
  // `net`, the epoch's change) and the lower end of its high-water interval so far.
  std::pair<int64_t, int64_t> StartAndLowerBound(uint64_t key, int64_t net);

  const UsageCounters& totals() const noexcept { return totals_; }
  // Per-layer and per-scope counters; an id never seen reads as all zeros.
  UsageCounters layer_usage(LayerId layer) const noexcept;
  UsageCounters scope_usage(uint32_t scope) const noexcept;
  const LineAlignedVector<UsageCounters>& scopes() const noexcept {
    SyncSoleContext();
    return scopes_;
  }
  const std::array<UsageCounters, 256>& layers() const noexcept {
    SyncSoleContext();
    return layer_usage_;
  }

  // Calls fn(const AllocationRecord&) for every live block.
  template <typename Fn>
  void ForEachLive(Fn&& fn) const {
    ForEachBlock([&](LayerId layer, const LiveBlock& b) { fn(Expand(layer, b)); });
  }

  // The note of a live block at (layer, address) that pred(const Note&) picks, or null;
  // with `size`, that block's size. The pointer is valid until the next change.
  template <typename Pred>
  const Note* FindNote(LayerId layer, uint64_t address, Pred&& pred,
                       uint64_t* size = nullptr) const {
    auto found = [&](const LiveBlock& b) {
      if (size != nullptr) *size = b.size();
      return &b.note;
    };
    if (const std::unique_ptr<Shards>& shards = tables_[layer]) {
      const LiveBlock* b = (*shards)[ShardIndex(address)].Find(address);
      if (b != nullptr && pred(b->note)) return found(*b);
    }
    const Displaced& displaced = displaced_[ShardIndex(address)];
    if (displaced.empty()) return nullptr;
    auto it = displaced.find(Key{layer, address});
    if (it == displaced.end()) return nullptr;
    for (const LiveBlock& b : it->second) {
      if (pred(b.note)) return found(b);
    }
    return nullptr;
  }

  // What one call site holds live in one scope (its blocks in every layer).
  struct ContextLive {
    uint32_t scope = 0;
    uint64_t site = 0;  // as recorded; SiteTable::kOtherSitesValue for the overflow bucket
    uint64_t live_bytes = 0;
    uint64_t live_count = 0;
  };
  // Every (scope, site) pair that holds a live block, in no particular order: one pass
  // over the live blocks, summed by their context id into an array of one entry per
  // context, so a snapshot's per-site view costs no hashing per block.
  std::vector<ContextLive> LiveByContext() const;

  // Every live block, by layer and then address (not in the tables' order: a new ledger
  // filled in that order would pile its blocks into one probe run, address_table.h).
  std::vector<AllocationRecord> LiveBlocks() const;

  // The longest probe run of any of the tables (AddressTable::LongestRun). For tests.
  size_t LongestRun() const noexcept;

  const SiteTable& sites() const noexcept { return sites_; }

  // Bytes the ledger itself holds: tables, side tables, counters, and the site table
  // (site_table_bytes() of them).
  uint64_t memory_bytes() const noexcept;
  uint64_t site_table_bytes() const noexcept;

 private:
  using LiveBlock = runtime_internal::BasicLiveBlock<Note>;
  using Table = runtime_internal::BasicAddressTable<LiveBlock>;
  using Shards = std::array<Table, kShards>;
  using Key = std::pair<LayerId, uint64_t>;
  using Displaced = absl::flat_hash_map<Key, absl::InlinedVector<LiveBlock, 1>>;

  struct Found {
    LiveBlock block;
    bool found = false;
    bool by_ticket = false;
    bool ambiguous = false;  // a non-zero ticket matched nothing among several candidates
  };

  // A multiplier unrelated to the tables' own hash, so that the addresses of one shard
  // still spread over that shard's whole table.
  static size_t ShardIndex(uint64_t address) noexcept {
    static_assert(kShards == 16, "the top 4 bits pick the shard");
    return static_cast<size_t>((address * 0xD6E8FEB86659FD93ull) >> 60);
  }
  // Calls fn(LayerId, const LiveBlock&) for every live block, the set-aside ones last.
  template <typename Fn>
  void ForEachBlock(Fn&& fn) const {
    for (size_t layer = 0; layer < tables_.size(); ++layer) {
      if (!tables_[layer]) continue;
      for (const auto& shard : *tables_[layer]) {
        shard.ForEach([&](const LiveBlock& b) { fn(static_cast<LayerId>(layer), b); });
      }
    }
    for (const Displaced& displaced : displaced_) {
      for (const auto& [key, blocks] : displaced) {
        for (const auto& b : blocks) fn(key.first, b);
      }
    }
  }
  // ShardedApply counts in a batch's order what its threads applied, with these.
  friend class ShardedApply;
  void CountChange(LayerId layer, uint32_t scope, uint64_t bytes, bool allocate);
  void CountResize(LayerId layer, uint32_t scope, uint64_t from, uint64_t to);

  // The per-event helpers are forced inline, on their declarations: they are small, each
  // event passes through several of them, and GCC does not take the attribute from the
  // definition of a class template's member outside the class.
  ABSL_ATTRIBUTE_ALWAYS_INLINE Table& Shard(LayerId layer, uint64_t address);
  // Place(), inline for Alloc() and MoveIn().
  ABSL_ATTRIBUTE_ALWAYS_INLINE bool Put(LayerId layer, uint64_t address, uint64_t size,
                                        uint64_t ticket, uint32_t context, const Note& note);
  ABSL_ATTRIBUTE_ALWAYS_INLINE uint32_t Context(uint32_t scope, uint64_t site);
  struct ContextCacheEntry;
  uint32_t NewContext(uint32_t scope, uint64_t site, ContextCacheEntry* set);
  // Inline (below): out of line, its record came back through memory that the caller
  // read before the stores had landed, a stall every release.
  ABSL_ATTRIBUTE_ALWAYS_INLINE AllocationRecord Expand(LayerId layer,
                                                       const LiveBlock& b) const noexcept;
  // The block a release or resize of (address, ticket) refers to, and where it is.
  struct Location {
    LiveBlock* block = nullptr;  // null: no live block there
    bool by_ticket = false;
    bool ambiguous = false;
    ptrdiff_t displaced_index = -1;  // index in displaced_[{layer, address}], or -1: main
    Table* shard = nullptr;  // where `block` is, when main
  };
  ABSL_ATTRIBUTE_ALWAYS_INLINE Location Locate(LayerId layer, uint64_t address,
                                               uint64_t ticket);

  ABSL_ATTRIBUTE_ALWAYS_INLINE static Outcome MatchOutcome(const Found& f) noexcept;
  // Removes and returns the block a release of (address, ticket) refers to.
  ABSL_ATTRIBUTE_ALWAYS_INLINE Found Take(LayerId layer, uint64_t address, uint64_t ticket);
  // Free()'s work: the block taken, counted and remembered as released, into *found.
  ABSL_ATTRIBUTE_ALWAYS_INLINE Outcome Release(LayerId layer, uint64_t address,
                                               uint64_t ticket, Found* found);
  ABSL_ATTRIBUTE_ALWAYS_INLINE void Account(LayerId layer, uint32_t scope, uint64_t bytes,
                                            bool allocate);
  void AccountResize(LayerId layer, uint32_t scope, uint64_t from, uint64_t to);
  // Whether a change in (layer, scope) may go to the totals alone (see sole_ below); the
  // first change names the pair, and one in another pair ends the sole mode for good.
  ABSL_ATTRIBUTE_ALWAYS_INLINE bool InSoleContext(LayerId layer, uint32_t scope);
  // Copies the totals into the sole layer's and scope's counters while the mode lasts.
  void SyncSoleContext() const noexcept;
  UsageCounters& ScopeCounters(uint32_t scope);
  // The counters PeakTracker's `key` names, synced first when in the sole mode.
  UsageCounters& CountersOf(uint64_t key);
  // The graveyard's slot for (layer, address): in its shard's part of the table.
  ABSL_ATTRIBUTE_ALWAYS_INLINE static size_t GraveIndex(uint64_t key, uint64_t address) noexcept;
  ABSL_ATTRIBUTE_ALWAYS_INLINE void Bury(LayerId layer, uint64_t address, uint64_t ticket48);
  bool InGraveyard(LayerId layer, uint64_t address, uint64_t ticket48) const;
  bool InGraveyardAt(LayerId layer, uint64_t address) const;

  // Every container below that the drainer reads or writes per record is line-aligned
  // (transport/cache_line.h): the ledger is made on a program thread, so a plain
  // vector's storage would share its first and last lines with the program's blocks.
  LineAlignedVector<std::unique_ptr<Shards>> tables_;  // by layer id, created on first use
  // Blocks set aside, by the shard of their address.
  std::array<Displaced, kShards> displaced_;

  SiteTable sites_;
  // Context id -> (scope, site id), and its inverse, with a small 2-way set-associative
  // cache in front (most allocations come from a few sites in a few scopes).
  LineAlignedVector<std::pair<uint32_t, uint32_t>> contexts_;
  absl::flat_hash_map<uint64_t, uint32_t> context_ids_;
  struct ContextCacheEntry {
    uint64_t site = ~uint64_t{0};
    uint32_t scope = ~0u;
    uint32_t context = 0;
  };
  static constexpr int kContextCacheSetBits = 11;
  static constexpr size_t kContextCacheSets = size_t{1} << kContextCacheSetBits;  // 64 KiB
  LineAlignedVector<ContextCacheEntry> context_cache_;
  // Provisional contexts (ProvisionalContext) free for reuse, and the resolved ones, each
  // with the context it stands for.
  std::vector<uint32_t> provisional_free_;
  absl::flat_hash_map<uint32_t, uint32_t> resolved_;

  // Last ticket released at each (hashed) address, to tell double frees from unknown ones;
  // each shard's addresses in a part of their own (GraveIndex).
  // Key 0 is an empty slot, so the table lives in mapped zero pages, each faulted in when
  // a slot on it is first written: a new ledger writes none of its 256 KiB. A forked
  // child that traces on makes a new ledger and frees few blocks, and its cost is page
  // faults on new memory (bench/README.md, "Where a traced child's 10 ms go").
  struct Grave {
    uint64_t key;
    uint64_t ticket48;
  };
  ZeroedArray<Grave> graveyard_;

  UsageCounters totals_;
  // While every change so far was in one layer and one scope (a program without scopes,
  // the interposer's heap), that layer's and that scope's counters went through exactly
  // the totals' updates: only the totals are kept, and the two are copied from them when
  // read (SyncSoleContext) and when a change in another layer or scope ends the mode. One
  // update a record instead of three. Readers hold the drainer's state lock, so the copy
  // made on a const read races with nothing.
  enum class Sole : uint8_t { kUnnamed, kNamed, kEnded };
  Sole sole_ = Sole::kUnnamed;
  LayerId sole_layer_ = 0;
  uint32_t sole_scope_ = 0;
  mutable std::array<UsageCounters, 256> layer_usage_{};
  mutable LineAlignedVector<UsageCounters> scopes_;

  bool ordered_ = true;             // set_ordered()
  bool counting_ = true;            // set_counting()
  PeakTracker* tracker_ = nullptr;  // set_peak_tracker()
};

// The per-record helpers that ShardedApply's accounting and batching call as well: here,
// so that they inline there too.
template <typename Note>
inline uint32_t BasicLedger<Note>::Context(uint32_t scope, uint64_t site) {
  ContextCacheEntry* set =
      &context_cache_[FibonacciIndex(site ^ (uint64_t{scope} << 40), kContextCacheSetBits) * 2];
  if (__builtin_expect(set[0].site == site && set[0].scope == scope, 1)) return set[0].context;
  if (set[1].site == site && set[1].scope == scope) return set[1].context;
  return NewContext(scope, site, set);
}

template <typename Note>
inline uint32_t BasicLedger<Note>::ContextOf(uint32_t scope, uint64_t site) {
  return Context(scope, site);
}

template <typename Note>
inline bool BasicLedger<Note>::InSoleContext(LayerId layer, uint32_t scope) {
  if (__builtin_expect(sole_ == Sole::kNamed, 1)) {
    if (__builtin_expect(layer == sole_layer_ && scope == sole_scope_, 1)) return true;
    // Another layer or scope: the sole pair's counters are the totals up to here.
    SyncSoleContext();
    sole_ = Sole::kEnded;
    if (tracker_ != nullptr) tracker_->SoleEnded(sole_layer_, sole_scope_);
    return false;
  }
  if (sole_ == Sole::kUnnamed) {
    sole_ = Sole::kNamed;
    sole_layer_ = layer;
    sole_scope_ = scope;
    return true;
  }
  return false;
}

template <typename Note>
inline void BasicLedger<Note>::Account(LayerId layer, uint32_t scope, uint64_t bytes,
                                       bool allocate) {
  if (__builtin_expect(!counting_, 0)) return;
  // Asked first: a change that ends the sole mode must not be in the sole pair's copy.
  const bool sole = InSoleContext(layer, scope);
  if (tracker_ != nullptr) {
    tracker_->Change(layer, scope,
                     allocate ? static_cast<int64_t>(bytes) : -static_cast<int64_t>(bytes),
                     !sole);
  }
  const bool ordered = ordered_;
  auto apply = [&](UsageCounters& c) ABSL_ATTRIBUTE_ALWAYS_INLINE {
    if (allocate) {
      c.Allocate(bytes, ordered);
    } else {
      c.Free(bytes);
    }
  };
  apply(totals_);
  if (sole) return;
  apply(layer_usage_[layer]);
  // Every scope that reaches here has a context, which sized scopes_ (Context()).
  apply(scopes_[scope]);
}

template <typename Note>
inline AllocationRecord BasicLedger<Note>::Expand(LayerId layer,
                                                  const LiveBlock& b) const noexcept {
  const auto& [scope, site_id] = contexts_[b.context()];
  return AllocationRecord{b.address, b.size(), scope, sites_.value(site_id), layer};
}

template <typename Note>
inline void BasicLedger<Note>::CountChange(LayerId layer, uint32_t scope, uint64_t bytes,
                                           bool allocate) {
  Account(layer, scope, bytes, allocate);
}

// The drainer's ledger, and a capture replay's (analysis/analyzer.h).
using AllocationLedger = BasicLedger<runtime_internal::NoNote>;
using ReplayLedger = BasicLedger<runtime_internal::BlockNote>;
extern template class BasicLedger<runtime_internal::NoNote>;
extern template class BasicLedger<runtime_internal::BlockNote>;

// The 48 bits of a ticket the ledger keeps (Ticket::Truncate): enough to tell apart the
// allocations that can be live at one address at once.
inline constexpr uint64_t CompactTicket(uint64_t ticket) noexcept {
  return Ticket::Truncate(ticket);
}

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_INTERNAL_ALLOCATION_LEDGER_H_
