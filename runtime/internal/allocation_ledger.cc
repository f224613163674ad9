// Copyright 2026 The memtrace Authors.

#include "runtime/internal/allocation_ledger.h"

#include <algorithm>

#include "transport/fibonacci_index.h"

namespace memtrace {
namespace {

// 16K entries (256 KiB), direct-mapped by address: recent releases, to tell a double free
// from an unknown one while staying cache-resident for the drainer. A release is
// remembered until a later one takes its slot: after k others, with probability
// (1 - 2^-14)^k (AllocationLedgerTest.ADoubleFreeIsToldWhileItsReleaseIsRemembered).
constexpr int kGraveyardBits = 14;
constexpr size_t kGraveyardSlots = size_t{1} << kGraveyardBits;
// Each shard's part (GraveIndex): the shard picks the top bits of the slot.
constexpr int kGraveyardShardBits = 4;

}  // namespace

template <typename Note>
BasicLedger<Note>::BasicLedger(uint32_t site_capacity)
                               : tables_(256),
                               sites_(site_capacity),
                               context_cache_(kContextCacheSets * 2),
                               graveyard_(kGraveyardSlots) {
  scopes_.resize(1);  // scope 0: (unscoped)
}

template <typename Note>
BasicLedger<Note>::~BasicLedger() = default;

// The per-event helpers below are forced inline (on their declarations: the header says
// why).
template <typename Note>
inline typename BasicLedger<Note>::Table& BasicLedger<Note>::Shard(LayerId layer,
                                                                 uint64_t address) {
  auto& shards = tables_[layer];
  if (!shards) shards = std::make_unique<Shards>();
  return (*shards)[ShardIndex(address)];
}


template <typename Note>
uint32_t BasicLedger<Note>::NewContext(uint32_t scope, uint64_t site, ContextCacheEntry* set) {
  const uint32_t site_id = sites_.Intern(site);
  const uint64_t key = (uint64_t{scope} << 32) | site_id;
  auto it = context_ids_.find(key);
  uint32_t id;
  if (it != context_ids_.end()) {
    id = it->second;
  } else {
    id = static_cast<uint32_t>(contexts_.size());
    contexts_.emplace_back(scope, site_id);
    context_ids_.emplace(key, id);
    ScopeCounters(scope);  // size the per-scope table once, here
  }
  // Sites beyond the site table's capacity all share kOtherSites; cache only real ones so
  // the overflow count keeps counting. The newest entry takes the set's first way.
  if (site_id != SiteTable::kOtherSites) {
    set[1] = set[0];
    set[0] = ContextCacheEntry{site, scope, id};
  }
  return id;
}


template <typename Note>
uint32_t BasicLedger<Note>::ProvisionalContext(uint32_t scope) {
  ScopeCounters(scope);  // sized here, as NewContext() does
  uint32_t id;
  if (!provisional_free_.empty()) {
    id = provisional_free_.back();
    provisional_free_.pop_back();
  } else {
    id = static_cast<uint32_t>(contexts_.size());
    contexts_.emplace_back();
  }
  contexts_[id] = {scope, SiteTable::kOtherSites};  // named by ResolveProvisional()
  return id;
}

template <typename Note>
void BasicLedger<Note>::GiveBackProvisional(uint32_t context) {
  provisional_free_.push_back(context);
}

template <typename Note>
void BasicLedger<Note>::ResolveProvisional(uint32_t context, uint64_t site, LayerId layer,
                                           uint64_t address, uint64_t ticket) {
  const uint32_t real = Context(contexts_[context].first, site);
  const Location loc = Locate(layer, address, ticket);
  if (loc.block != nullptr && loc.by_ticket && loc.block->context() == context) {
    // Only a move takes a context to another block, and a move takes the block away.
    loc.block->set_context(real);
    GiveBackProvisional(context);
    return;
  }
  contexts_[context] = contexts_[real];
  resolved_.emplace(context, real);
}

template <typename Note>
UsageCounters& BasicLedger<Note>::ScopeCounters(uint32_t scope) {
  if (scope >= scopes_.size()) scopes_.resize(size_t{scope} + 1);
  return scopes_[scope];
}


template <typename Note>
void BasicLedger<Note>::SyncSoleContext() const noexcept {
  if (sole_ != Sole::kNamed) return;
  layer_usage_[sole_layer_] = totals_;
  // Every scope that reaches Account() has a context, which sized scopes_ (Context()).
  scopes_[sole_scope_] = totals_;
}


template <typename Note>
void BasicLedger<Note>::AccountResize(LayerId layer, uint32_t scope, uint64_t from,
                                      uint64_t to) {
  if (!counting_) return;
  // Asked first: a change that ends the sole mode must not be in the sole pair's copy.
  const bool sole = InSoleContext(layer, scope);
  if (tracker_ != nullptr) {
    tracker_->Change(layer, scope, static_cast<int64_t>(to) - static_cast<int64_t>(from),
                     !sole);
  }
  totals_.Resize(from, to, ordered_);
  if (sole) return;
  layer_usage_[layer].Resize(from, to, ordered_);
  ScopeCounters(scope).Resize(from, to, ordered_);
}


template <typename Note>
void BasicLedger<Note>::CountResize(LayerId layer, uint32_t scope, uint64_t from,
                                    uint64_t to) {
  AccountResize(layer, scope, from, to);
}

template <typename Note>
UsageCounters& BasicLedger<Note>::CountersOf(uint64_t key) {
  // The sole pair's counters are copies of the totals (SyncSoleContext): bring them up to
  // date first, so that the copy made at the next read carries the totals' interval.
  SyncSoleContext();
  return key == PeakTracker::kTotalsKey ? totals_
         : PeakTracker::IsLayerKey(key) ? layer_usage_[PeakTracker::KeyId(key) & 0xff]
                                        : ScopeCounters(PeakTracker::KeyId(key));
}

template <typename Note>
std::pair<int64_t, int64_t> BasicLedger<Note>::StartAndLowerBound(uint64_t key, int64_t net) {
  const UsageCounters& c = CountersOf(key);
  return {static_cast<int64_t>(c.live_bytes) - net,
          static_cast<int64_t>(c.high_water_low_bytes)};
}

template <typename Note>
void BasicLedger<Note>::BoundHighWater(uint64_t key, int64_t low, int64_t high, int64_t net) {
  UsageCounters& c = CountersOf(key);
  const int64_t start = static_cast<int64_t>(c.live_bytes) - net;
  auto bytes = [](int64_t v) { return v < 0 ? uint64_t{0} : static_cast<uint64_t>(v); };
  c.BoundHighWater(bytes(start + low), bytes(start + high));
}

template <typename Note>
inline size_t BasicLedger<Note>::GraveIndex(uint64_t key, uint64_t address) noexcept {
  static_assert(kShards == 1 << kGraveyardShardBits, "one part per shard");
  return (ShardIndex(address) << (kGraveyardBits - kGraveyardShardBits)) |
         FibonacciIndex(key, kGraveyardBits - kGraveyardShardBits);
}

template <typename Note>
inline void BasicLedger<Note>::Bury(LayerId layer, uint64_t address, uint64_t ticket48) {
  const uint64_t key = address ^ (uint64_t{layer} << 56);
  graveyard_[GraveIndex(key, address)] = Grave{key, ticket48};
}

template <typename Note>
bool BasicLedger<Note>::InGraveyard(LayerId layer, uint64_t address,
                                    uint64_t ticket48) const {
  const uint64_t key = address ^ (uint64_t{layer} << 56);
  const Grave& g = graveyard_[GraveIndex(key, address)];
  return g.key == key && g.ticket48 == ticket48;
}

template <typename Note>
bool BasicLedger<Note>::InGraveyardAt(LayerId layer, uint64_t address) const {
  const uint64_t key = address ^ (uint64_t{layer} << 56);
  return graveyard_[GraveIndex(key, address)].key == key;
}

template <typename Note>
bool BasicLedger<Note>::Place(LayerId layer, uint64_t address, uint64_t size,
                              uint64_t ticket, uint32_t context, const Note& note) {
  return Put(layer, address, size, ticket, context, note);
}

template <typename Note>
inline bool BasicLedger<Note>::Put(LayerId layer, uint64_t address, uint64_t size,
                                   uint64_t ticket, uint32_t context, const Note& note) {
  auto& shard = Shard(layer, address);
  bool added = false;
  LiveBlock* slot = shard.FindOrAdd(address, &added);
  const bool displaced = !added;
  if (displaced) {
    // Another block is live at this address: set it aside (see the header).
    displaced_[ShardIndex(address)][Key{layer, address}].push_back(*slot);
  }
  *slot = LiveBlock::Make(address, size, CompactTicket(ticket), context, note);
  return displaced;
}

template <typename Note>
bool BasicLedger<Note>::Alloc(LayerId layer, uint64_t address, uint64_t size,
                              uint64_t ticket, uint32_t scope, uint64_t site,
                              const Note& note) {
  const bool displaced = Put(layer, address, size, ticket, Context(scope, site), note);
  Account(layer, scope, size, /*allocate=*/true);
  return displaced;
}

template <typename Note>
inline typename BasicLedger<Note>::Location BasicLedger<Note>::Locate(LayerId layer,
                                                                     uint64_t address,
                                                                     uint64_t ticket) {
  const uint64_t t48 = CompactTicket(ticket);
  Location loc;
  Displaced& displaced = displaced_[ShardIndex(address)];
  auto dit = displaced.empty() ? displaced.end() : displaced.find(Key{layer, address});
  if (dit != displaced.end() && ticket != 0) {
    auto& blocks = dit->second;
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (blocks[i].ticket48() == t48) {
        return Location{&blocks[i], true, false, static_cast<ptrdiff_t>(i)};
      }
    }
  }
  Table& shard = Shard(layer, address);
  LiveBlock* main = shard.Find(address);
  if (main == nullptr) {
    // The block that displaced the others is gone already; a release without a usable
    // ticket refers to the oldest one still set aside here.
    if (dit != displaced.end()) return Location{&dit->second.front(), false, ticket != 0, 0};
    return loc;
  }
  if (ticket != 0 && main->ticket48() == t48) return Location{main, true, false, -1, &shard};
  if (dit != displaced.end()) {
    // The ticket matched nothing: the oldest block set aside at this address is the one
    // a release without a usable ticket refers to.
    return Location{&dit->second.front(), false, ticket != 0, 0};
  }
  return Location{main, false, false, -1, &shard};
}

template <typename Note>
inline typename BasicLedger<Note>::Found BasicLedger<Note>::Take(LayerId layer,
                                                                uint64_t address,
                                                                uint64_t ticket) {
  const Location loc = Locate(layer, address, ticket);
  if (loc.block == nullptr) return Found{};
  const Found out{*loc.block, true, loc.by_ticket, loc.ambiguous};
  if (loc.displaced_index < 0) {
    loc.shard->Erase(loc.block);
  } else {
    Displaced& displaced = displaced_[ShardIndex(address)];
    auto dit = displaced.find(Key{layer, address});
    auto& blocks = dit->second;
    blocks.erase(blocks.begin() + loc.displaced_index);
    if (blocks.empty()) displaced.erase(dit);
  }
  return out;
}

template <typename Note>
inline LedgerOutcome BasicLedger<Note>::MatchOutcome(const Found& f) noexcept {
  if (f.by_ticket) return Outcome::kApplied;
  return f.ambiguous ? Outcome::kAmbiguous : Outcome::kMatchedByAddress;
}

template <typename Note>
LedgerOutcome BasicLedger<Note>::Free(LayerId layer, uint64_t address,
                                      uint64_t ticket, Released* released) {
  Found f;
  const Outcome outcome = Release(layer, address, ticket, &f);
  if (released != nullptr && f.found) {
    *released = Released{Expand(layer, f.block), f.block.ticket48(), f.block.note};
  }
  return outcome;
}

template <typename Note>
LedgerOutcome BasicLedger<Note>::Free(LayerId layer, uint64_t address, uint64_t ticket,
                                      uint32_t* scope, uint64_t* size) {
  Found f;
  const Outcome outcome = Release(layer, address, ticket, &f);
  if (f.found) {
    *scope = contexts_[f.block.context()].first;
    *size = f.block.size();
  }
  return outcome;
}

template <typename Note>
inline LedgerOutcome BasicLedger<Note>::Release(LayerId layer, uint64_t address,
                                                uint64_t ticket, Found* found) {
  const Found& f = *found = Take(layer, address, ticket);
  if (!f.found) {
    // A release of a block released before: the same ticket again, or no ticket at an
    // address whose last block was released (the first release took the ticket from the
    // ticket table, so a repeated free(p) carries none).
    const bool again = ticket != 0 ? InGraveyard(layer, address, CompactTicket(ticket))
                                   : InGraveyardAt(layer, address);
    return again ? Outcome::kDoubleFree : Outcome::kUnknown;
  }
  const auto scope = contexts_[f.block.context()].first;
  Account(layer, scope, f.block.size(), /*allocate=*/false);
  Bury(layer, address, f.block.ticket48());
  return MatchOutcome(f);
}

template <typename Note>
const Note* BasicLedger<Note>::PeekNote(LayerId layer, uint64_t address, uint64_t ticket) {
  const Location loc = Locate(layer, address, ticket);
  return loc.block == nullptr ? nullptr : &loc.block->note;
}

template <typename Note>
LedgerOutcome BasicLedger<Note>::Resize(LayerId layer, uint64_t address,
                                        uint64_t ticket, uint64_t new_size,
                                        uint64_t new_ticket, Released* before) {
  const Location loc = Locate(layer, address, ticket);
  if (loc.block == nullptr) return Outcome::kUnknown;
  LiveBlock* target = loc.block;
  if (before != nullptr) {
    *before = Released{Expand(layer, *target), target->ticket48(), target->note};
  }
  const auto scope = contexts_[target->context()].first;
  AccountResize(layer, scope, target->size(), new_size);  // scope has a context already
  target->set_size(new_size);
  target->set_ticket48(CompactTicket(new_ticket));
  return MatchOutcome(Found{*target, true, loc.by_ticket, loc.ambiguous});
}

template <typename Note>
LedgerOutcome BasicLedger<Note>::MoveOut(LayerId layer, uint64_t old_address,
                                         uint64_t old_ticket, Moved* moved) {
  const Found f = Take(layer, old_address, old_ticket);
  if (!f.found) {
    *moved = Moved{};
    return Outcome::kUnknown;
  }
  const auto [scope, site_id] = contexts_[f.block.context()];
  Account(layer, scope, f.block.size(), /*allocate=*/false);
  Bury(layer, old_address, f.block.ticket48());
  *moved = Moved{true, scope, f.block.context(), sites_.value(site_id), f.block.size(),
                 f.block.ticket48(), f.block.note};
  return MatchOutcome(f);
}

template <typename Note>
void BasicLedger<Note>::MoveIn(LayerId layer, const Moved& moved, uint64_t new_address,
                               uint64_t new_size, uint64_t new_ticket, uint32_t scope,
                               uint64_t site, const Note& note) {
  if (moved.known) {
    Put(layer, new_address, new_size, new_ticket, moved.context, note);
    Account(layer, moved.scope, new_size, /*allocate=*/true);
  } else {
    Alloc(layer, new_address, new_size, new_ticket, scope, site, note);
  }
}

template <typename Note>
LedgerOutcome BasicLedger<Note>::Remap(LayerId layer, uint64_t old_address,
                                       uint64_t old_ticket,
                                       uint64_t new_address, uint64_t new_size,
                                       uint64_t new_ticket, uint32_t scope,
                                       uint64_t site) {
  Moved moved;
  const Outcome o = MoveOut(layer, old_address, old_ticket, &moved);
  MoveIn(layer, moved, new_address, new_size, new_ticket, scope, site,
         moved.known ? moved.note : Note{});
  return o;
}

template <typename Note>
uint64_t BasicLedger<Note>::ResetLayer(LayerId layer) {
  return ResetLayer(layer, [](const Released&) {});
}

template <typename Note>
uint64_t BasicLedger<Note>::ResetLayer(LayerId layer, ReleaseFn on_release) {
  return ResetLayer(layer, kAllShards, on_release);
}

template <typename Note>
uint64_t BasicLedger<Note>::ResetLayer(LayerId layer, ShardMask shards, ReleaseFn on_release) {
  uint64_t released = 0;
  auto release = [&](const LiveBlock& b) {
    Account(layer, contexts_[b.context()].first, b.size(), /*allocate=*/false);
    on_release(Released{Expand(layer, b), b.ticket48(), b.note});
    ++released;
  };
  if (tables_[layer]) {
    for (int i = 0; i < kShards; ++i) {
      if ((shards >> i & 1) == 0) continue;
      Table& shard = (*tables_[layer])[i];
      shard.ForEach(release);
      shard.Clear();
    }
  }
  for (int i = 0; i < kShards; ++i) {
    if ((shards >> i & 1) == 0) continue;
    Displaced& displaced = displaced_[i];
    for (auto it = displaced.begin(); it != displaced.end();) {
      if (it->first.first == layer) {
        for (const auto& b : it->second) release(b);
        displaced.erase(it++);
      } else {
        ++it;
      }
    }
  }
  return released;
}

template <typename Note>
uint64_t BasicLedger<Note>::SettleDisplaced() {
  return SettleDisplaced([](const Released&) {});
}

template <typename Note>
uint64_t BasicLedger<Note>::SettleDisplaced(ReleaseFn on_release) {
  // Every operation of the epoch has been applied. Operations on one address are ordered
  // by happens-before, so at most one block can really be live at an address now; the
  // others' releases were lost. If the main slot was released, the block set aside is the
  // live one (it was set aside by an allocation that really came before it, applied after
  // it because the drainer reached that thread's ring later): put it back.
  uint64_t settled = 0;
  for (Displaced& displaced : displaced_) {
    for (auto& [key, blocks] : displaced) {
      const auto& [layer, address] = key;
      size_t keep = blocks.size();  // index to restore, or none
      auto& shard = Shard(layer, address);
      if (shard.Find(address) == nullptr) keep = blocks.size() - 1;
      for (size_t i = 0; i < blocks.size(); ++i) {
        if (i == keep) {
          shard.Insert(blocks[i]);
          continue;
        }
        Account(layer, contexts_[blocks[i].context()].first, blocks[i].size(),
                /*allocate=*/false);
        on_release(Released{Expand(layer, blocks[i]), blocks[i].ticket48(), blocks[i].note});
        ++settled;
      }
    }
    displaced.clear();
  }
  return settled;
}

template <typename Note>
UsageCounters BasicLedger<Note>::layer_usage(LayerId layer) const noexcept {
  SyncSoleContext();
  return layer_usage_[layer];
}

template <typename Note>
UsageCounters BasicLedger<Note>::scope_usage(uint32_t scope) const noexcept {
  SyncSoleContext();
  return scope < scopes_.size() ? scopes_[scope] : UsageCounters{};
}

template <typename Note>
std::vector<AllocationRecord> BasicLedger<Note>::LiveBlocks() const {
  std::vector<AllocationRecord> out;
  out.reserve(totals_.live_count);
  ForEachLive([&](const AllocationRecord& r) { out.push_back(r); });
  // Stable: a block set aside (displaced_) stays after the one at its address that it
  // was set aside for.
  std::stable_sort(out.begin(), out.end(),
                   [](const AllocationRecord& a, const AllocationRecord& b) {
                     return a.layer != b.layer ? a.layer < b.layer : a.address < b.address;
                   });
  return out;
}

template <typename Note>
std::vector<typename BasicLedger<Note>::ContextLive> BasicLedger<Note>::LiveByContext() const {
  std::vector<std::pair<uint64_t, uint64_t>> sums(contexts_.size());  // bytes, blocks
  ForEachBlock([&](LayerId, const LiveBlock& b) {
    auto& [bytes, count] = sums[b.context()];
    bytes += b.size();
    ++count;
  });
  // A resolved provisional context's blocks are its real context's.
  for (const auto& [provisional, real] : resolved_) {
    sums[real].first += sums[provisional].first;
    sums[real].second += sums[provisional].second;
    sums[provisional] = {0, 0};
  }
  std::vector<ContextLive> out;
  for (size_t id = 0; id < sums.size(); ++id) {
    if (sums[id].second == 0) continue;
    const auto& [scope, site_id] = contexts_[id];
    out.push_back(ContextLive{scope, sites_.value(site_id), sums[id].first, sums[id].second});
  }
  return out;
}

template <typename Note>
size_t BasicLedger<Note>::LongestRun() const noexcept {
  size_t longest = 0;
  for (const std::unique_ptr<Shards>& shards : tables_) {
    if (!shards) continue;
    for (const Table& t : *shards) {
      longest = std::max(longest, t.LongestRun());
    }
  }
  return longest;
}

template <typename Note>
uint64_t BasicLedger<Note>::memory_bytes() const noexcept {
  uint64_t bytes = sizeof(*this);
  for (const auto& shards : tables_) {
    if (!shards) continue;
    for (const auto& shard : *shards) bytes += shard.memory_bytes();
  }
  bytes += graveyard_.bytes();
  bytes += contexts_.capacity() * sizeof(contexts_[0]);
  bytes += context_ids_.capacity() * (sizeof(uint64_t) + sizeof(uint32_t) + 1);
  bytes += context_cache_.capacity() * sizeof(ContextCacheEntry);
  bytes += provisional_free_.capacity() * sizeof(uint32_t);
  bytes += resolved_.capacity() * (sizeof(uint32_t) * 2 + 1);
  bytes += scopes_.capacity() * sizeof(UsageCounters);
  for (const Displaced& displaced : displaced_) {
    bytes += displaced.size() * (sizeof(Key) + sizeof(LiveBlock) * 2);
  }
  return bytes + site_table_bytes();
}

template <typename Note>
uint64_t BasicLedger<Note>::site_table_bytes() const noexcept {
  return sites_.size() * (sizeof(uint64_t) * 2 + sizeof(uint32_t) + 1);
}

template class BasicLedger<runtime_internal::NoNote>;
template class BasicLedger<runtime_internal::BlockNote>;

}  // namespace memtrace
