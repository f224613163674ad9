// Copyright 2026 The memtrace Authors.
//
// ShardedApply: K appliers, each owning part of the addresses, end every batch with the
// counters of one ledger applying the batch in order, high-water marks included.
//   - Against the test's own counts: a history applied in its real order, with moves,
//     resizes, arena resets and cross-thread frees, whose counters the test keeps itself.
//   - Against one AllocationLedger: the same history cut into epochs whose records come
//     ring by ring (so allocations arrive before the releases that made room for them),
//     with lost, unknown and repeated releases; the blocks set aside and settled, and the
//     counters, must be the single ledger's.

#include "runtime/internal/sharded_apply.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/internal/address_table.h"
#include "runtime/internal/allocation_ledger.h"
#include "tests/same_usage.h"
#include "transport/ticket.h"

namespace memtrace {
namespace {

constexpr uint32_t kSites = 1024;

// A history of one process: threads (rings) allocating, resizing, moving and freeing
// blocks at addresses from a small pool (so addresses come back), in layers 0 and 1,
// across 4 scopes; layer 1 is an arena that is reset now and then.
struct History {
  struct Op {
    uint32_t thread;
    ApplyRecord record;
    ApplyRecord target;  // a move's second half (record.kind == kRemap)
  };
  std::vector<Op> ops;
  // The test's own counts, in the history's real order: totals, by layer, by scope.
  UsageCounters totals;
  std::map<uint32_t, UsageCounters> layers, scopes;

  void Count(LayerId layer, uint32_t scope, int64_t delta) {
    for (UsageCounters* c : {&totals, &layers[layer], &scopes[scope]}) {
      if (delta >= 0) {
        c->Allocate(static_cast<uint64_t>(delta));
      } else {
        c->Free(static_cast<uint64_t>(-delta));
      }
    }
  }
  void CountResize(LayerId layer, uint32_t scope, uint64_t from, uint64_t to) {
    for (UsageCounters* c : {&totals, &layers[layer], &scopes[scope]}) c->Resize(from, to);
  }
};

History MakeHistory(uint32_t seed, int ops, int threads) {
  std::mt19937_64 rng(seed);
  struct Live {
    LayerId layer;
    uint64_t address, size, ticket;
    uint32_t scope;
  };
  std::vector<Live> live;
  std::map<std::pair<LayerId, uint64_t>, bool> taken;
  std::vector<uint64_t> position(threads, 0);
  History h;
  auto free_address = [&](LayerId layer) {
    for (;;) {
      const uint64_t a = 0x10000 + 64 * (rng() % 512);
      if (!taken[{layer, a}]) return a;
    }
  };
  for (int i = 0; i < ops; ++i) {
    const uint32_t t = static_cast<uint32_t>(rng() % threads);
    auto ticket = [&] { return Ticket::Make(t + 1, position[t]++); };
    const int what = static_cast<int>(rng() % 100);
    History::Op op{t, {}, {}};
    ApplyRecord& r = op.record;
    if (live.empty() || what < 40) {
      const LayerId layer = (rng() % 4 == 0) ? 1 : 0;
      const uint64_t a = free_address(layer);
      const uint32_t scope = static_cast<uint32_t>(rng() % 4);
      const uint64_t size = 1 + rng() % 4096;
      r = ApplyRecord{EventKind::kAlloc, layer, scope, 0, a, size, ticket(), 0, rng() % kSites};
      live.push_back(Live{layer, a, size, r.ticket, scope});
      taken[{layer, a}] = true;
      h.Count(layer, scope, static_cast<int64_t>(size));
    } else if (what < 75) {  // a free, from any thread
      const size_t k = rng() % live.size();
      const Live b = live[k];
      r = ApplyRecord{EventKind::kFree, b.layer, 0, 0, b.address, 0, ticket(), b.ticket, 0};
      live.erase(live.begin() + k);
      taken[{b.layer, b.address}] = false;
      h.Count(b.layer, b.scope, -static_cast<int64_t>(b.size));
    } else if (what < 85) {  // a resize in place
      Live& b = live[rng() % live.size()];
      const uint64_t size = 1 + rng() % 8192;
      r = ApplyRecord{EventKind::kResize, b.layer, 0, 0, b.address, size, ticket(), b.ticket, 0};
      h.CountResize(b.layer, b.scope, b.size, size);
      b.size = size;
      b.ticket = r.ticket;
    } else if (what < 97) {  // a move to another address; it keeps its scope and site
      const size_t k = rng() % live.size();
      Live b = live[k];
      r = ApplyRecord{EventKind::kRemap, b.layer, 0, 0, b.address, 0, ticket(), b.ticket, 0};
      taken[{b.layer, b.address}] = false;
      h.Count(b.layer, b.scope, -static_cast<int64_t>(b.size));
      const uint64_t a = free_address(b.layer);
      const uint64_t size = 1 + rng() % 8192;
      // The target's own scope is not the block's: the ledger keeps the block's.
      op.target = ApplyRecord{EventKind::kRemapTarget, b.layer, 3 - b.scope % 4, 0, a, size,
                              ticket(), 0, rng() % kSites};
      b.address = a;
      b.size = size;
      b.ticket = op.target.ticket;
      live[k] = b;
      taken[{b.layer, a}] = true;
      h.Count(b.layer, b.scope, static_cast<int64_t>(size));
    } else {  // the arena (layer 1) is reset
      r = ApplyRecord{EventKind::kArenaReset, 1, 0, 0, 0, 0, ticket(), 0, 0};
      for (size_t k = 0; k < live.size();) {
        if (live[k].layer == 1) {
          h.Count(1, live[k].scope, -static_cast<int64_t>(live[k].size));
          taken[{1, live[k].address}] = false;
          live.erase(live.begin() + k);
        } else {
          ++k;
        }
      }
    }
    h.ops.push_back(op);
  }
  return h;
}

// A batch of records, with its moves numbered.
struct Batch {
  std::vector<ApplyRecord> records;
  uint32_t moves = 0;
};

// Appends an op's records to a batch, its move's halves under one slot.
void Append(const History::Op& op, Batch* batch) {
  ApplyRecord r = op.record;
  if (r.kind != EventKind::kRemap) {
    batch->records.push_back(r);
    return;
  }
  r.pair = batch->moves++;
  batch->records.push_back(r);
  ApplyRecord target = op.target;
  target.pair = r.pair;
  batch->records.push_back(target);
}

TEST(ShardedApplyTest, AHistoryInItsRealOrderEndsWithTheTestsOwnCounts) {
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    const History h = MakeHistory(seed, 20000, 4);
    for (int k : {1, 2, 3, 4}) {
      ShardedApply apply(k, kSites);
      Batch batch;
      for (size_t i = 0; i < h.ops.size(); ++i) {
        Append(h.ops[i], &batch);
        if (batch.records.size() >= 700 || i + 1 == h.ops.size()) {  // an epoch
          apply.Apply(batch.records, batch.moves);
          batch = Batch{};
        }
      }
      const std::string what = "seed " + std::to_string(seed) + ", " + std::to_string(k) +
                               " appliers";
      ExpectSame(apply.totals(), h.totals, what + ": totals");
      for (const auto& [layer, usage] : h.layers) {
        ExpectSame(apply.layer_usage(static_cast<LayerId>(layer)), usage,
                   what + ": layer " + std::to_string(layer));
      }
      for (const auto& [scope, usage] : h.scopes) {
        ExpectSame(apply.scope_usage(scope), usage, what + ": scope " + std::to_string(scope));
      }
      EXPECT_EQ(apply.unknown_releases(), 0u) << what;
      EXPECT_EQ(apply.missed_frees(), 0u) << what;
    }
  }
}

// Epochs whose records come ring by ring, as the drainer reads them, with some releases
// lost (never recorded), some naming nothing, and some repeated: the sharded appliers must
// end where one ledger ends.
TEST(ShardedApplyTest, EpochsReadRingByRingWithLostAndBadReleasesEndAsOneLedgerEnds) {
  for (uint32_t seed = 11; seed <= 13; ++seed) {
    const History h = MakeHistory(seed, 20000, 4);
    std::mt19937_64 rng(seed);
    // Epochs of ~500 ops; within one, the ops of each thread in order, thread after thread.
    std::vector<Batch> epochs;
    for (size_t start = 0; start < h.ops.size(); start += 500) {
      Batch batch;
      for (uint32_t t = 0; t < 4; ++t) {
        for (size_t i = start; i < std::min(h.ops.size(), start + 500); ++i) {
          const History::Op& op = h.ops[i];
          if (op.thread != t) continue;
          const int fate = static_cast<int>(rng() % 100);
          if (op.record.kind == EventKind::kFree && fate < 3) continue;  // lost
          Append(op, &batch);
          if (op.record.kind == EventKind::kFree && fate < 6) {
            batch.records.push_back(op.record);  // freed twice
          } else if (op.record.kind == EventKind::kFree && fate < 9) {
            ApplyRecord unknown = op.record;  // a release of something never allocated
            unknown.address = 0x900000 + 64 * (rng() % 64);
            unknown.of = 0;
            batch.records.push_back(unknown);
          }
        }
      }
      epochs.push_back(std::move(batch));
    }

    // One ledger, as the drainer applies a batch.
    AllocationLedger ledger(kSites);
    uint64_t unknown = 0, missed = 0;
    using Outcome = AllocationLedger::Outcome;
    for (const Batch& batch : epochs) {
      std::vector<AllocationLedger::Moved> moved(batch.moves);
      for (const ApplyRecord& r : batch.records) {
        auto bad = [&](Outcome o) { unknown += o == Outcome::kUnknown || o == Outcome::kDoubleFree; };
        switch (r.kind) {
          case EventKind::kAlloc:
            ledger.Alloc(r.layer, r.address, r.size, r.ticket, r.scope, r.site);
            break;
          case EventKind::kFree: bad(ledger.Free(r.layer, r.address, r.of)); break;
          case EventKind::kResize:
            bad(ledger.Resize(r.layer, r.address, r.of, r.size, r.ticket));
            break;
          case EventKind::kRemap:
            bad(ledger.MoveOut(r.layer, r.address, r.of, &moved[r.pair]));
            break;
          case EventKind::kRemapTarget:
            ledger.MoveIn(r.layer, moved[r.pair], r.address, r.size, r.ticket, r.scope, r.site);
            break;
          case EventKind::kArenaReset: ledger.ResetLayer(r.layer); break;
          default: break;
        }
      }
      missed += ledger.SettleDisplaced();
    }
    ASSERT_GT(missed, 0u) << "the history must lose releases at reused addresses";

    for (int k : {1, 2, 4}) {
      ShardedApply apply(k, kSites);
      for (const Batch& batch : epochs) apply.Apply(batch.records, batch.moves);
      const std::string what = "seed " + std::to_string(seed) + ", " + std::to_string(k) +
                               " appliers";
      ExpectSame(apply.totals(), ledger.totals(), what + ": totals");
      for (LayerId layer : {0, 1}) {
        ExpectSame(apply.layer_usage(layer), ledger.layer_usage(layer),
                   what + ": layer " + std::to_string(layer));
      }
      for (uint32_t scope = 0; scope < 4; ++scope) {
        ExpectSame(apply.scope_usage(scope), ledger.scope_usage(scope),
                   what + ": scope " + std::to_string(scope));
      }
      EXPECT_EQ(apply.unknown_releases(), unknown) << what;
      EXPECT_EQ(apply.missed_frees(), missed) << what;
    }
  }
}

TEST(ShardedApplyTest, EveryApplierOwnsSomeAddressesAndOwnershipIsStable) {
  std::vector<int> owned(4, 0);
  for (uint64_t a = 0; a < 4096; ++a) {
    const int o = ShardedApply::Owner(0, 0x7f0000000000 + 16 * a, 4);
    ASSERT_GE(o, 0);
    ASSERT_LT(o, 4);
    ASSERT_EQ(o, ShardedApply::Owner(0, 0x7f0000000000 + 16 * a, 4));
    ++owned[o];
  }
  for (int o = 0; o < 4; ++o) EXPECT_GT(owned[o], 4096 / 8) << "applier " << o;
}

// An applier's ledger hashes the addresses it owns into its tables: ownership must not
// pick from the same bits, or its tables fill one part only and every lookup probes a run
// as long as the table. The addresses are a heap's: 16-byte steps from one base.
TEST(ShardedApplyTest, TheAddressesOfOneApplierSpreadOverItsWholeTable) {
  constexpr uint64_t kAddresses = 300'000;
  for (int appliers = 2; appliers <= 4; ++appliers) {
    runtime_internal::AddressTable whole;  // as many addresses, owned by nobody
    for (uint64_t a = 0; a < kAddresses / static_cast<uint64_t>(appliers); ++a) {
      whole.Insert(runtime_internal::LiveBlock::Make(0x55550000000 + 16 * a, 16, a, 0));
    }
    for (int owner = 0; owner < appliers; ++owner) {
      runtime_internal::AddressTable mine;
      for (uint64_t a = 0; a < kAddresses; ++a) {
        const uint64_t address = 0x55550000000 + 16 * a;
        if (ShardedApply::Owner(0, address, appliers) == owner) {
          mine.Insert(runtime_internal::LiveBlock::Make(address, 16, a, 0));
        }
      }
      EXPECT_LE(mine.LongestRun(), 4 * whole.LongestRun() + 64)
          << "applier " << owner << " of " << appliers << ": " << mine.size()
          << " addresses in " << mine.capacity() << " slots";
    }
  }
}

}  // namespace
}  // namespace memtrace
