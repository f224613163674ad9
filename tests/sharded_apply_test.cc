// Copyright 2026 The memtrace Authors.
//
// ShardedApply: K appliers, each owning some of one ledger's shards, leave the ledger as
// one thread applying the batches in order would have: its counters (high-water marks
// included), its live blocks (address, size, scope, site), its per-site view, the
// outcomes the integrity counters count, and the peak tracker's intervals.
//   - Against the test's own counts: a history applied in its real order, with moves,
//     resizes, arena resets and cross-thread frees, whose counters the test keeps itself.
//   - Against one AllocationLedger applying the same records itself: the history cut into
//     epochs whose records come ring by ring (so allocations arrive before the releases
//     that made room for them), with lost, unknown and repeated releases and moves of
//     blocks nobody allocated; the blocks set aside and settled, and the peak tracker's
//     segments, with batches cut anywhere.

#include "runtime/internal/sharded_apply.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/internal/allocation_ledger.h"
#include "runtime/internal/peak_tracker.h"
#include "tests/same_usage.h"
#include "transport/event.h"
#include "transport/ticket.h"

namespace memtrace {
namespace {

constexpr uint32_t kSites = 1024;
// Room for every site of a history (allocations' and moves' targets'): a full table's
// overflow bucket takes the sites interned after it filled, and a move's target whose
// first half found no block is interned at its batch's end with appliers
// (ShardedApply::Account), so its site alone may be the one left out.
constexpr uint32_t kSiteCapacity = 4 * kSites;

// One record as the drainer reads it.
struct Record {
  EventKind kind = EventKind::kInvalid;
  LayerId layer = 0;
  uint32_t scope = 0;
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t ticket = 0;
  uint64_t of = 0;
  uint64_t site = 0;
};

// A history of one process: threads (rings) allocating, resizing, moving and freeing
// blocks at addresses from a small pool (so addresses come back), in layers 0 and 1,
// across 4 scopes; layer 1 is an arena that is reset now and then.
struct History {
  struct Op {
    uint32_t thread;
    Record record;
    Record target;  // a move's second half (record.kind == kRemap)
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
    Record& r = op.record;
    if (live.empty() || what < 40) {
      const LayerId layer = (rng() % 4 == 0) ? 1 : 0;
      const uint64_t a = free_address(layer);
      const uint32_t scope = static_cast<uint32_t>(rng() % 4);
      const uint64_t size = 1 + rng() % 4096;
      r = Record{EventKind::kAlloc, layer, scope, a, size, ticket(), 0, rng() % kSites};
      live.push_back(Live{layer, a, size, r.ticket, scope});
      taken[{layer, a}] = true;
      h.Count(layer, scope, static_cast<int64_t>(size));
    } else if (what < 75) {  // a free, from any thread
      const size_t k = rng() % live.size();
      const Live b = live[k];
      r = Record{EventKind::kFree, b.layer, 0, b.address, 0, ticket(), b.ticket, 0};
      live.erase(live.begin() + k);
      taken[{b.layer, b.address}] = false;
      h.Count(b.layer, b.scope, -static_cast<int64_t>(b.size));
    } else if (what < 85) {  // a resize in place
      Live& b = live[rng() % live.size()];
      const uint64_t size = 1 + rng() % 8192;
      r = Record{EventKind::kResize, b.layer, 0, b.address, size, ticket(), b.ticket, 0};
      h.CountResize(b.layer, b.scope, b.size, size);
      b.size = size;
      b.ticket = r.ticket;
    } else if (what < 97) {  // a move to another address; it keeps its scope and site
      const size_t k = rng() % live.size();
      Live b = live[k];
      r = Record{EventKind::kRemap, b.layer, 0, b.address, 0, ticket(), b.ticket, 0};
      taken[{b.layer, b.address}] = false;
      h.Count(b.layer, b.scope, -static_cast<int64_t>(b.size));
      const uint64_t a = free_address(b.layer);
      const uint64_t size = 1 + rng() % 8192;
      // The target's own scope and site are not the block's: the ledger keeps the block's.
      op.target = Record{EventKind::kRemapTarget, b.layer, 3 - b.scope % 4, a, size,
                         ticket(), 0, kSites + rng() % kSites};
      b.address = a;
      b.size = size;
      b.ticket = op.target.ticket;
      live[k] = b;
      taken[{b.layer, a}] = true;
      h.Count(b.layer, b.scope, static_cast<int64_t>(size));
    } else {  // the arena (layer 1) is reset
      r = Record{EventKind::kArenaReset, 1, 0, 0, 0, ticket(), 0, 0};
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

// What may come between two records of a batch: the peak tracker's segment changes, as
// the drainer makes them (ring by ring, a segment per few records).
struct Step {
  Record record;
  bool begin = false;  // a segment of `ring` begins before the record
  uint32_t ring = 0;
  uint64_t segment = 0;
};

// The integrity outcomes one ledger's own results give (the drainer's way of counting).
struct Outcomes {
  uint64_t unknown = 0, double_frees = 0, ticket_misses = 0, ambiguous = 0, missed = 0;
  bool operator==(const Outcomes& o) const {
    return std::tie(unknown, double_frees, ticket_misses, ambiguous, missed) ==
           std::tie(o.unknown, o.double_frees, o.ticket_misses, o.ambiguous, o.missed);
  }
  void Count(LedgerOutcome o) {
    unknown += o == LedgerOutcome::kUnknown;
    double_frees += o == LedgerOutcome::kDoubleFree;
    ticket_misses += o == LedgerOutcome::kMatchedByAddress || o == LedgerOutcome::kAmbiguous;
    ambiguous += o == LedgerOutcome::kAmbiguous;
  }
};

// Every step, applied by one ledger itself, epoch by epoch.
class OneLedger {
 public:
  OneLedger() : ledger(kSiteCapacity) {}
  void Run(const std::vector<std::vector<Step>>& epochs, bool bounded) {
    if (bounded) {
      ledger.set_peak_tracker(&tracker);
      ledger.set_ordered(false);
    }
    for (const auto& epoch : epochs) {
      for (const Step& s : epoch) {
        if (bounded) Segment(s);
        Apply(s.record);
      }
      if (bounded) EndEpoch(&tracker, &opens, &ledger);
      outcomes.missed += ledger.SettleDisplaced();
    }
  }
  static void EndEpoch(PeakTracker* tracker, std::map<uint32_t, PeakTracker::Open>* opens,
                       AllocationLedger* ledger) {
    for (auto& [ring, open] : *opens) tracker->Close(&open);
    tracker->EndEpoch(
        [&](uint64_t key, int64_t net) { return ledger->StartAndLowerBound(key, net); },
        [&](uint64_t key, int64_t low, int64_t high, int64_t net) {
          ledger->BoundHighWater(key, low, high, net);
        });
  }
  AllocationLedger ledger;
  PeakTracker tracker;
  Outcomes outcomes;

 private:
  void Segment(const Step& s) {
    PeakTracker::Open* open = &opens[s.ring];
    if (s.begin) tracker.Begin(open, s.ring, s.segment, s.segment * 10, s.segment * 10 + 15);
    tracker.Use(open);
  }
  void Apply(const Record& r) {
    switch (r.kind) {
      case EventKind::kAlloc:
        ledger.Alloc(r.layer, r.address, r.size, r.ticket, r.scope, r.site);
        break;
      case EventKind::kFree: outcomes.Count(ledger.Free(r.layer, r.address, r.of)); break;
      case EventKind::kResize:
        outcomes.Count(ledger.Resize(r.layer, r.address, r.of, r.size, r.ticket));
        break;
      case EventKind::kRemap:
        outcomes.Count(ledger.MoveOut(r.layer, r.address, r.of, &moved));
        break;
      case EventKind::kRemapTarget:
        ledger.MoveIn(r.layer, moved, r.address, r.size, r.ticket, r.scope, r.site);
        break;
      case EventKind::kArenaReset: ledger.ResetLayer(r.layer); break;
      default: break;
    }
  }
  std::map<uint32_t, PeakTracker::Open> opens;
  AllocationLedger::Moved moved;
};

// The same steps through ShardedApply, as the drainer adds them, with a batch applied
// every `batch` records and at each epoch's end.
class Sharded {
 public:
  // `solo`: the batches the adding thread applies alone (ShardedApply::kSoloRecords).
  explicit Sharded(int appliers, size_t solo = 0)
      : ledger(kSiteCapacity), apply(&ledger, appliers, {}, nullptr, solo) {}
  void Run(const std::vector<std::vector<Step>>& epochs, bool bounded, size_t batch) {
    if (bounded) {
      ledger.set_peak_tracker(&tracker);
      ledger.set_ordered(false);
    }
    for (const auto& epoch : epochs) {
      size_t added = 0;
      for (const Step& s : epoch) {
        if (bounded) Segment(s);
        Add(s.record);
        if (++added % batch == 0) Flush();
      }
      Flush();
      if (bounded) OneLedger::EndEpoch(&tracker, &opens, &ledger);
      outcomes.missed += ledger.SettleDisplaced();  // as the drainer settles
      if (toggle_threads) {  // as a recorder stopped and started again
        if (apply.threads_running()) {
          apply.StopThreads();
        } else {
          apply.StartThreads();
        }
      }
    }
  }
  bool toggle_threads = false;
  AllocationLedger ledger;
  PeakTracker tracker;
  ShardedApply apply;
  Outcomes outcomes;

 private:
  void Segment(const Step& s) {
    PeakTracker::Open* open = &opens[s.ring];
    if (s.begin) apply.BeginSegment(open, s.ring, s.segment, s.segment * 10, s.segment * 10 + 15);
    apply.UseSegment(open);
  }
  void Flush() {
    apply.Apply();
    Take();
    apply.Collect(&move);
  }
  void Take() {
    const ApplyOutcomes o = apply.TakeOutcomes();
    outcomes.unknown += o.unknown_frees + o.unknown_resizes + o.unknown_remaps;
    outcomes.double_frees += o.double_frees;
    outcomes.ticket_misses += o.ticket_misses;
    outcomes.ambiguous += o.ambiguous_matches;
  }
  void Add(const Record& e) {
    apply.AddEvent(e.kind, e.layer, e.scope, e.address, e.size, e.ticket, e.of, e.site,
                   /*sole=*/false, &move);
  }
  std::map<uint32_t, PeakTracker::Open> opens;
  // The history's moves are made by one thread at a time: its two halves are adjacent.
  ShardedApply::PendingMove move;
};

std::vector<Step> Steps(const History::Op& op) {
  std::vector<Step> out{Step{op.record}};
  if (op.record.kind == EventKind::kRemap) out.push_back(Step{op.target});
  return out;
}

TEST(ShardedApplyTest, AHistoryInItsRealOrderEndsWithTheTestsOwnCounts) {
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    const History h = MakeHistory(seed, 20000, 4);
    std::vector<std::vector<Step>> epochs(1);
    for (const History::Op& op : h.ops) {
      for (const Step& s : Steps(op)) epochs.back().push_back(s);
      if (epochs.back().size() >= 700) epochs.emplace_back();
    }
    for (int k : {1, 2, 3, 4}) {
      Sharded sharded(k);  // every batch shared by the appliers
      sharded.Run(epochs, /*bounded=*/false, /*batch=*/256);
      const std::string what = "seed " + std::to_string(seed) + ", " + std::to_string(k) +
                               " appliers";
      ExpectSame(sharded.ledger.totals(), h.totals, what + ": totals");
      for (const auto& [layer, usage] : h.layers) {
        ExpectSame(sharded.ledger.layer_usage(static_cast<LayerId>(layer)), usage,
                   what + ": layer " + std::to_string(layer));
      }
      for (const auto& [scope, usage] : h.scopes) {
        ExpectSame(sharded.ledger.scope_usage(scope), usage,
                   what + ": scope " + std::to_string(scope));
      }
      EXPECT_EQ(sharded.outcomes, Outcomes{}) << what;
    }
  }
}

// Epochs whose records come ring by ring, as the drainer reads them, each ring's in
// segments of a few records, with some releases lost (never recorded), some naming
// nothing, some repeated, and moves of blocks nobody allocated: the appliers must end
// where one ledger ends, whatever the batches, shared or applied by the adding thread
// alone.
TEST(ShardedApplyTest, EpochsReadRingByRingWithLostAndBadReleasesEndAsOneLedgerEnds) {
  for (uint32_t seed = 11; seed <= 13; ++seed) {
    const History h = MakeHistory(seed, 20000, 4);
    std::mt19937_64 rng(seed);
    std::vector<std::vector<Step>> epochs;
    std::vector<uint64_t> segment(4, 0);
    for (size_t start = 0; start < h.ops.size(); start += 500) {
      std::vector<Step>& epoch = epochs.emplace_back();
      for (uint32_t t = 0; t < 4; ++t) {
        for (size_t i = start; i < std::min(h.ops.size(), start + 500); ++i) {
          const History::Op& op = h.ops[i];
          if (op.thread != t) continue;
          const int fate = static_cast<int>(rng() % 100);
          const Record& r = op.record;
          if (r.kind == EventKind::kFree && fate < 3) continue;  // lost
          std::vector<Step> steps = Steps(op);
          if (r.kind == EventKind::kFree && fate < 6) {
            steps.push_back(Step{r});  // freed twice
          } else if (r.kind == EventKind::kFree && fate < 9) {
            Record unknown = r;  // a release of something never allocated
            unknown.address = 0x900000 + 64 * (rng() % 64);
            unknown.of = 0;
            steps.push_back(Step{unknown});
          } else if (r.kind == EventKind::kRemap && fate < 20) {
            steps[0].record.address = 0xA00000 + 64 * (rng() % 64);  // moves a stranger
            steps[0].record.of = 0;
          }
          for (Step& s : steps) {
            if (rng() % 4 == 0 || epoch.empty()) {
              s.begin = true;
              s.segment = ++segment[t];
            }
            s.ring = t;
            epoch.push_back(s);
          }
        }
      }
    }

    for (const bool bounded : {false, true}) {
      OneLedger one;
      one.Run(epochs, bounded);
      ASSERT_GT(one.outcomes.missed, 0u) << "the history must lose releases at reused addresses";
      ASSERT_GT(one.outcomes.unknown, 0u);
      ASSERT_GT(one.outcomes.double_frees, 0u);
      const std::vector<AllocationRecord> live = one.ledger.LiveBlocks();
      for (const int k : {1, 2, 4}) {
        for (const auto& [batch, solo] : {std::pair<size_t, size_t>{7, 0}, {100000, 0},
                                          {100000, 300}, {100000, 100000}, {101, 0}}) {
          Sharded sharded(k, solo);
          sharded.toggle_threads = batch == 101;  // threads ended and started, epoch by epoch
          sharded.Run(epochs, bounded, batch);
          const std::string what = "seed " + std::to_string(seed) + ", " + std::to_string(k) +
                                   " appliers, batches of " + std::to_string(batch) +
                                   ", alone up to " + std::to_string(solo) +
                                   (bounded ? ", bounded" : "");
          const AllocationLedger& got = sharded.ledger;
          ExpectSame(got.totals(), one.ledger.totals(), what + ": totals");
          auto same_interval = [&](const UsageCounters& g, const UsageCounters& w,
                                   const std::string& name) {
            EXPECT_EQ(g.high_water_low_bytes, w.high_water_low_bytes) << what << name;
            EXPECT_EQ(g.high_water_high_bytes, w.high_water_high_bytes) << what << name;
          };
          same_interval(got.totals(), one.ledger.totals(), ": totals");
          for (LayerId layer : {0, 1}) {
            ExpectSame(got.layer_usage(layer), one.ledger.layer_usage(layer),
                       what + ": layer " + std::to_string(layer));
            same_interval(got.layer_usage(layer), one.ledger.layer_usage(layer), ": layer");
          }
          for (uint32_t scope = 0; scope < 4; ++scope) {
            ExpectSame(got.scope_usage(scope), one.ledger.scope_usage(scope),
                       what + ": scope " + std::to_string(scope));
            same_interval(got.scope_usage(scope), one.ledger.scope_usage(scope), ": scope");
          }
          EXPECT_EQ(sharded.outcomes, one.outcomes) << what;
          // The live blocks, each with its scope and site.
          const std::vector<AllocationRecord> mine = got.LiveBlocks();
          ASSERT_EQ(mine.size(), live.size()) << what;
          for (size_t i = 0; i < live.size(); ++i) {
            ASSERT_EQ(std::tie(mine[i].layer, mine[i].address, mine[i].size, mine[i].scope,
                               mine[i].site),
                      std::tie(live[i].layer, live[i].address, live[i].size, live[i].scope,
                               live[i].site))
                << what << ": block " << i;
          }
          // The per-site view: one row per (scope, site), whatever the contexts.
          auto rows = [](const AllocationLedger& l) {
            std::map<std::pair<uint32_t, uint64_t>, std::pair<uint64_t, uint64_t>> out;
            for (const auto& c : l.LiveByContext()) {
              EXPECT_TRUE(out.emplace(std::make_pair(c.scope, c.site),
                                      std::make_pair(c.live_bytes, c.live_count))
                              .second)
                  << "a (scope, site) listed twice";
            }
            return out;
          };
          EXPECT_EQ(rows(got), rows(one.ledger)) << what;
        }
      }
    }
  }
}

// A move whose first half finds no block takes the second half's own scope and site, and
// one that finds it keeps the block's, when both halves are in one batch, on two appliers.
TEST(ShardedApplyTest, AMoveOfAnUnknownBlockInOneBatchGetsItsOwnSite) {
  AllocationLedger ledger(kSiteCapacity);
  ShardedApply apply(&ledger, 2, {}, nullptr, /*solo_records=*/0);
  // Addresses whose halves fall to different appliers.
  uint64_t from = 0x100000, to = 0x200000;
  while (apply.Owner(to) == apply.Owner(from)) to += 64;
  ApplyRecord alloc;
  alloc.op = ApplyRecord::Op::kAlloc;
  alloc.address = from;
  alloc.size = 100;
  alloc.ticket = Ticket::Make(1, 1);
  alloc.scope = 1;
  alloc.context = ledger.ContextOf(1, 0x1111);
  apply.Add(alloc);
  for (const bool known : {true, false}) {
    ApplyRecord out;
    out.address = known ? from : from + 0x10000;
    out.of = known ? alloc.ticket : 0;
    out.ticket = Ticket::Make(1, known ? 2 : 4);
    ApplyRecord in;
    in.op = ApplyRecord::Op::kMoveIn;
    in.address = known ? to : to + 0x10000;
    in.size = 300;
    in.ticket = Ticket::Make(1, known ? 3 : 5);
    in.scope = 2;
    in.site = 0x2222;
    in.pair = apply.AddMoveOut(out);
    in.context = ledger.ProvisionalContext(2);
    apply.Add(in);
  }
  apply.Apply();
  const std::vector<AllocationRecord> live = ledger.LiveBlocks();
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(std::tie(live[0].address, live[0].size, live[0].scope, live[0].site),
            std::make_tuple(to, uint64_t{300}, uint32_t{1}, uint64_t{0x1111}));
  EXPECT_EQ(std::tie(live[1].address, live[1].size, live[1].scope, live[1].site),
            std::make_tuple(to + 0x10000, uint64_t{300}, uint32_t{2}, uint64_t{0x2222}));
  EXPECT_EQ(apply.TakeOutcomes().unknown_remaps, 1u);
  EXPECT_EQ(ledger.LiveByContext().size(), 2u) << "one row per (scope, site)";
  EXPECT_EQ(ledger.scope_usage(1).live_bytes, 300u);
  EXPECT_EQ(ledger.scope_usage(2).live_bytes, 300u);
}

TEST(ShardedApplyTest, EveryApplierOwnsWholeShardsAndEveryShardHasOneOwner) {
  AllocationLedger ledger(kSiteCapacity);
  for (int k = 1; k <= AllocationLedger::kShards; ++k) {
    ShardedApply apply(&ledger, k);
    std::vector<int> shards_of(k, 0);
    std::map<int, int> owner_of_shard;
    for (uint64_t a = 0; a < 65536; ++a) {
      const uint64_t address = 0x7f0000000000 + 16 * a;
      const int o = apply.Owner(address);
      ASSERT_GE(o, 0);
      ASSERT_LT(o, k);
      const auto [it, added] = owner_of_shard.emplace(AllocationLedger::ShardOf(address), o);
      ASSERT_EQ(it->second, o) << "one shard, two owners";
    }
    ASSERT_EQ(owner_of_shard.size(), static_cast<size_t>(AllocationLedger::kShards));
    for (const auto& [shard, owner] : owner_of_shard) ++shards_of[owner];
    for (int o = 0; o < k; ++o) {
      EXPECT_GE(shards_of[o], AllocationLedger::kShards / k) << k << " appliers, applier " << o;
    }
  }
}

}  // namespace
}  // namespace memtrace
