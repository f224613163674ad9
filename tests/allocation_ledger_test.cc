// Copyright 2026 The memtrace Authors.

#include "runtime/internal/allocation_ledger.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/internal/address_table.h"
#include "transport/ticket.h"

namespace memtrace {
namespace {

using Outcome = AllocationLedger::Outcome;
using runtime_internal::AddressTable;
using runtime_internal::LiveBlock;

constexpr LayerId kHeap = layers::kCpuHeap;

uint64_t T(uint32_t ring, uint64_t pos) { return Ticket::Make(ring, pos); }

void ExpectInvariants(const UsageCounters& c) {
  EXPECT_EQ(c.live_bytes, c.allocated_bytes - c.freed_bytes);
  EXPECT_EQ(c.live_count, c.allocated_count - c.freed_count);
  EXPECT_GE(c.high_water_bytes, c.live_bytes);
}

TEST(AddressTableTest, MatchesAReferenceMapUnderRandomInsertErase) {
  AddressTable table;
  std::unordered_map<uint64_t, uint64_t> reference;
  std::mt19937_64 rng(42);
  for (int i = 0; i < 200'000; ++i) {
    const uint64_t address = 16 * (1 + rng() % 5000);
    LiveBlock* found = table.Find(address);
    auto it = reference.find(address);
    ASSERT_EQ(found != nullptr, it != reference.end());
    if (found != nullptr) {
      ASSERT_EQ(found->size(), it->second);
      table.Erase(found);
      reference.erase(it);
    } else {
      const uint64_t size = rng() % 100000;
      table.Insert(LiveBlock::Make(address, size, rng() & ((uint64_t{1} << 48) - 1), 3));
      reference.emplace(address, size);
    }
    ASSERT_EQ(table.size(), reference.size());
  }
  size_t visited = 0;
  table.ForEach([&](const LiveBlock& b) {
    ++visited;
    ASSERT_EQ(reference.at(b.address), b.size());
  });
  EXPECT_EQ(visited, reference.size());
}

TEST(AddressTableTest, FindOrAddAddsOnceThenFinds) {
  AddressTable table;
  bool added = false;
  LiveBlock* a = table.FindOrAdd(0x40, &added);
  EXPECT_TRUE(added);
  EXPECT_EQ(a->address, 0x40u);
  EXPECT_EQ(a->size(), 0u) << "a new slot is empty but for its address";
  *a = LiveBlock::Make(0x40, 8, 1, 0);
  LiveBlock* b = table.FindOrAdd(0x40, &added);
  EXPECT_FALSE(added);
  EXPECT_EQ(a, b);
  EXPECT_EQ(b->size(), 8u) << "an existing block is returned unchanged";
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.Find(0x40), a);
}

TEST(AddressTableTest, LiveBlockPacksTicketContextAndSize) {
  const uint64_t ticket48 = 0xABCDEF012345;
  const LiveBlock b = LiveBlock::Make(0x1000, (uint64_t{1} << 47) + 5, ticket48, 0xfeedbeef);
  EXPECT_EQ(b.size(), (uint64_t{1} << 47) + 5);
  EXPECT_EQ(b.ticket48(), ticket48);
  EXPECT_EQ(b.context(), 0xfeedbeefu);
}

TEST(AddressTableTest, StaysUnder48BytesPerLiveBlockAtEverySize) {
  AddressTable table;
  for (uint64_t n = 1; n <= 300'000; ++n) {
    table.Insert(LiveBlock::Make(n * 16, 32, n, 0));
    if (n >= 64) {
      ASSERT_LE(static_cast<double>(table.memory_bytes()) / n, 48.0) << "at " << n;
    }
  }
}

TEST(AddressTableTest, AReservedTableKeepsItsBlocksAndDoesNotGrowUntilFull) {
  AddressTable table;
  for (uint64_t n = 1; n <= 100; ++n) table.Insert(LiveBlock::Make(n * 16, n, n, 0));
  table.Reserve(50'000);
  const size_t capacity = table.capacity();
  EXPECT_GE(capacity * 15, 50'000u * 20) << "room for 50,000 at the table's 75% load";
  for (uint64_t n = 1; n <= 100; ++n) {
    const LiveBlock* b = table.Find(n * 16);
    ASSERT_NE(b, nullptr) << "block " << n << " lost by the reservation";
    EXPECT_EQ(b->size(), n);
  }
  for (uint64_t n = 101; n <= 50'000; ++n) table.Insert(LiveBlock::Make(n * 16, n, n, 0));
  EXPECT_EQ(table.capacity(), capacity) << "grew before the reserved blocks were in";
  table.Insert(LiveBlock::Make(16 * 50'001, 1, 1, 0));
  for (int i = 0; i < 20'000; ++i) table.Insert(LiveBlock::Make(16 * (60'000 + i), 1, 1, 0));
  EXPECT_GT(table.capacity(), capacity) << "grows past the reservation as before";
  EXPECT_EQ(table.size(), 70'001u);
  table.Reserve(10);  // smaller than it is: changes nothing
  EXPECT_EQ(table.size(), 70'001u);
  EXPECT_NE(table.Find(16 * 777), nullptr);
}

TEST(AddressTableTest, ReservingNothingStillLetsTheTableGrow) {
  for (size_t reserve : {0, 1, 2, 3}) {
    AddressTable table;
    table.Reserve(reserve);
    for (uint64_t n = 1; n <= 1'000; ++n) table.Insert(LiveBlock::Make(n * 16, n, n, 0));
    EXPECT_EQ(table.size(), 1'000u) << "reserve " << reserve;
  }
}

// A layer reserved for its peak starts with most of the tables it will end with, and ends
// with exactly the tables a ledger that was never reserved grows to: a reservation that
// falls short grows on along the same ladder of capacities, one that is right saves the
// growing and takes no more memory.
TEST(AllocationLedgerTest, ALayerReservedForItsPeakEndsWithTheTablesItWouldHaveGrown) {
  for (const uint64_t reserved_for : {uint64_t{200'000}, uint64_t{120'000}}) {
    AllocationLedger grown(16);
    AllocationLedger reserved(16);
    reserved.Reserve(kHeap, reserved_for);
    // The site and context tables' first entries, which take memory of their own.
    grown.Alloc(kHeap, 48, 8, T(1, 1), 0, 0x1234);
    reserved.Alloc(kHeap, 48, 8, T(1, 1), 0, 0x1234);
    const uint64_t at_start = reserved.memory_bytes();
    for (uint64_t n = 2; n <= 200'000; ++n) {
      grown.Alloc(kHeap, n * 48, 8, T(1, n), 0, 0x1234);
      reserved.Alloc(kHeap, n * 48, 8, T(1, n), 0, 0x1234);
    }
    EXPECT_EQ(reserved.memory_bytes(), grown.memory_bytes()) << "reserved for " << reserved_for;
    EXPECT_EQ(reserved.totals().live_count, 200'000u);
    if (reserved_for == 200'000) {
      EXPECT_GE(at_start * 10, reserved.memory_bytes() * 7)
          << "the reservation holds less than 70% of the tables the peak needs";
    }
  }
}

// One table's blocks, inserted into a new one in the order it holds them, pile up: that
// order is sorted by home slot, and each block of the growing table lands at the end of
// one run that holds all the others (address_table.h). The runs are looked at on the
// way, before the table's last Grow() spreads them out again.
size_t LongestRunWhileCopying(const std::vector<LiveBlock>& order) {
  AddressTable copy;
  size_t longest = 0;
  for (const LiveBlock& b : order) {
    copy.Insert(b);
    if (copy.size() % 10'000 == 0) longest = std::max(longest, copy.LongestRun());
  }
  return longest;
}

TEST(AddressTableTest, BlocksCopiedInATablesOwnOrderPileUp) {
  AddressTable table;
  uint64_t address = 0x7f0000000000;
  for (uint64_t n = 1; n <= 60'000; ++n) {  // quadratic below: kept small
    address += 16 + 16 * (n * 0x9E3779B97F4A7C15ull >> 61);  // 16-128 byte strides
    table.Insert(LiveBlock::Make(address, 32, n, 0));
  }
  std::vector<LiveBlock> order;
  table.ForEach([&](const LiveBlock& b) { order.push_back(b); });
  // Linear probing at up to 75% load keeps its longest run near a few hundred slots for
  // this many blocks. The table's own order: most of the blocks in one run.
  EXPECT_GT(LongestRunWhileCopying(order), 15'000u);
  std::sort(order.begin(), order.end(),
            [](const LiveBlock& a, const LiveBlock& b) { return a.address < b.address; });
  EXPECT_LT(LongestRunWhileCopying(order), 2'000u);
  EXPECT_LT(table.LongestRun(), 2'000u);
}

// A forked child's ledger is filled from its parent's LiveBlocks(), which come by address,
// not in the tables' order: a redis BGSAVE child under --forks, 580,000 blocks inherited,
// took 6.5 s instead of 0.5, its drainer in Grow() and Alloc().
TEST(AllocationLedgerTest, ALedgerFilledFromAnothersLiveBlocksKeepsRunsShort) {
  AllocationLedger parent(16);
  uint64_t address = 0x7f0000000000;
  for (uint64_t n = 1; n <= 200'000; ++n) {
    address += 16 + 16 * (n * 0x9E3779B97F4A7C15ull >> 61);
    parent.Alloc(kHeap, address, 32, T(1, n), 0, 0xabc);
  }
  const std::vector<AllocationRecord> live = parent.LiveBlocks();
  ASSERT_EQ(live.size(), 200'000u);
  EXPECT_TRUE(std::is_sorted(live.begin(), live.end(), [](const auto& a, const auto& b) {
    return a.address < b.address;
  }));
  AllocationLedger child(16);
  size_t longest = 0;
  for (size_t i = 0; i < live.size(); ++i) {
    child.Alloc(live[i].layer, live[i].address, live[i].size, T(2, i + 1), live[i].scope,
                live[i].site);
    // Not at multiples of the 16 shards' share, where a shard has just been filled and
    // grown, and the next not begun.
    if ((i + 1) % 7'001 == 0) longest = std::max(longest, child.LongestRun());
  }
  EXPECT_LT(longest, 2'000u);
  EXPECT_EQ(child.totals().live_count, 200'000u);
  EXPECT_TRUE(child.LiveBlocks() == live) << "the same blocks, in the same order";
}

TEST(AllocationLedgerTest, AllocThenFreeByTicket) {
  AllocationLedger ledger(16);
  ledger.Alloc(kHeap, 0x1000, 64, T(1, 0), 5, 0xabc);
  EXPECT_EQ(ledger.totals().live_bytes, 64u);
  EXPECT_EQ(ledger.scope_usage(5).live_count, 1u);
  const auto live = ledger.LiveBlocks();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0], (AllocationRecord{0x1000, 64, 5, 0xabc, kHeap}));
  EXPECT_EQ(ledger.Free(kHeap, 0x1000, T(1, 0)), Outcome::kApplied);
  EXPECT_EQ(ledger.totals().live_bytes, 0u);
  EXPECT_EQ(ledger.totals().high_water_bytes, 64u);
  EXPECT_EQ(ledger.scope_usage(5).freed_bytes, 64u);
  ExpectInvariants(ledger.totals());
}

TEST(AllocationLedgerTest, FreeOfUnknownAddressIsUnknown) {
  AllocationLedger ledger(16);
  EXPECT_EQ(ledger.Free(kHeap, 0x2000, T(1, 9)), Outcome::kUnknown);
  EXPECT_EQ(ledger.Free(kHeap, 0x2000, 0), Outcome::kUnknown);
  EXPECT_EQ(ledger.totals().freed_count, 0u);
}

TEST(AllocationLedgerTest, SecondFreeWithSameTicketIsDoubleFree) {
  AllocationLedger ledger(16);
  ledger.Alloc(kHeap, 0x1000, 8, T(2, 3), 0, 1);
  EXPECT_EQ(ledger.Free(kHeap, 0x1000, T(2, 3)), Outcome::kApplied);
  EXPECT_EQ(ledger.Free(kHeap, 0x1000, T(2, 3)), Outcome::kDoubleFree);
  ExpectInvariants(ledger.totals());
}

// How long a double free is told from an unknown free. The ledger remembers releases in a
// table of 2^14 slots indexed by a hash of the address, each release taking its slot
// (docs/guarantees.md): a second free is a double free while no later release has taken
// the slot, so after k other releases at unrelated addresses with probability
// (1 - 2^-14)^k, about e^-1 at k = 2^14. The test releases 500 blocks, then `k` others,
// then frees the 500 again, and compares the double frees counted with the expectation
// computed from that formula, within five standard deviations.
TEST(AllocationLedgerTest, ADoubleFreeIsToldWhileItsReleaseIsRemembered) {
  constexpr int kBlocks = 500;
  constexpr double kSlots = 16384;
  for (const int k : {0, 16384, 50000}) {
    SCOPED_TRACE(k);
    AllocationLedger ledger(16);
    std::mt19937_64 rng(k + 1);
    auto address = [&] { return (rng() & 0x00007ffffffffff0ull) | 0x10000; };
    uint64_t ticket = 1;
    std::vector<std::pair<uint64_t, uint64_t>> released;  // address, ticket
    for (int i = 0; i < kBlocks; ++i) {
      const uint64_t a = address();
      ledger.Alloc(kHeap, a, 8, T(1, ticket), 0, 1);
      ASSERT_EQ(ledger.Free(kHeap, a, T(1, ticket)), Outcome::kApplied);
      released.emplace_back(a, T(1, ticket++));
    }
    for (int i = 0; i < k; ++i) {
      const uint64_t a = address();
      ledger.Alloc(kHeap, a, 8, T(1, ticket), 0, 1);
      ASSERT_EQ(ledger.Free(kHeap, a, T(1, ticket++)), Outcome::kApplied);
    }
    int told = 0;
    double expected = 0;
    double variance = 0;
    for (int i = 0; i < kBlocks; ++i) {
      const auto [a, t] = released[i];
      const Outcome o = ledger.Free(kHeap, a, t);
      ASSERT_TRUE(o == Outcome::kDoubleFree || o == Outcome::kUnknown);
      told += o == Outcome::kDoubleFree;
      // Releases after this one: the later blocks' and the k others.
      const double p = std::pow(1 - 1 / kSlots, kBlocks - 1 - i + k);
      expected += p;
      variance += p * (1 - p);
    }
    EXPECT_NEAR(told, expected, 5 * std::sqrt(variance) + 1) << "expected " << expected;
    EXPECT_EQ(ledger.totals().freed_count, static_cast<uint64_t>(kBlocks + k))
        << "a second free changes no totals";
  }
}

TEST(AllocationLedgerTest, AllocOverLiveAddressDisplacesUntilItsFreeArrives) {
  // Thread B's free of the first block reaches the ledger after thread C's re-allocation
  // of the same address: the free must still release the first block, not the second.
  AllocationLedger ledger(16);
  ledger.Alloc(kHeap, 0x1000, 10, T(1, 0), /*scope=*/1, 0x11);
  EXPECT_TRUE(ledger.Alloc(kHeap, 0x1000, 20, T(3, 0), /*scope=*/2, 0x22));
  EXPECT_EQ(ledger.totals().live_count, 2u);
  EXPECT_EQ(ledger.Free(kHeap, 0x1000, T(1, 0)), Outcome::kApplied);
  EXPECT_EQ(ledger.scope_usage(1).live_bytes, 0u);
  EXPECT_EQ(ledger.scope_usage(2).live_bytes, 20u);
  EXPECT_EQ(ledger.SettleDisplaced(), 0u);
  const auto live = ledger.LiveBlocks();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].size, 20u);
  EXPECT_EQ(live[0].scope, 2u);
}

TEST(AllocationLedgerTest, SetAsideBlockIsFoundWhenTheNewerOneIsGoneAndTheTicketIsLost) {
  // C's re-allocation of 0x1000 displaces A's block, C frees its own, then B's free of
  // A's block arrives without a usable ticket (a ticket-table miss): it still releases
  // A's block, matched by address, and nothing is left over.
  AllocationLedger ledger(16);
  ledger.Alloc(kHeap, 0x1000, 10, T(1, 0), /*scope=*/1, 0);
  ledger.Alloc(kHeap, 0x1000, 20, T(3, 0), /*scope=*/2, 0);
  EXPECT_EQ(ledger.Free(kHeap, 0x1000, T(3, 0)), Outcome::kApplied);
  EXPECT_EQ(ledger.Free(kHeap, 0x1000, 0), Outcome::kMatchedByAddress);
  EXPECT_EQ(ledger.totals().live_count, 0u);
  EXPECT_EQ(ledger.scope_usage(1).live_bytes, 0u);
  EXPECT_EQ(ledger.SettleDisplaced(), 0u);
  ExpectInvariants(ledger.totals());
}

TEST(AllocationLedgerTest, SettleReleasesDisplacedBlocksWhoseFreeNeverCame) {
  AllocationLedger ledger(16);
  ledger.Alloc(kHeap, 0x1000, 10, T(1, 0), 1, 0);
  ledger.Alloc(kHeap, 0x1000, 20, T(3, 0), 2, 0);
  EXPECT_EQ(ledger.SettleDisplaced(), 1u);
  EXPECT_EQ(ledger.totals().live_bytes, 20u);
  EXPECT_EQ(ledger.scope_usage(1).live_bytes, 0u);
  ExpectInvariants(ledger.totals());
}

TEST(AllocationLedgerTest, FreeWithWrongTicketMatchesByAddress) {
  AllocationLedger ledger(16);
  ledger.Alloc(kHeap, 0x1000, 10, T(1, 0), 1, 0);
  EXPECT_EQ(ledger.Free(kHeap, 0x1000, T(9, 9)), Outcome::kMatchedByAddress);
  EXPECT_EQ(ledger.totals().live_count, 0u);
}

TEST(AllocationLedgerTest, ResizeKeepsScopeAndCountsGrowthAndShrink) {
  AllocationLedger ledger(16);
  ledger.Alloc(kHeap, 0x1000, 100, T(1, 0), 4, 0);
  EXPECT_EQ(ledger.Resize(kHeap, 0x1000, T(1, 0), 300, T(1, 1)), Outcome::kApplied);
  EXPECT_EQ(ledger.scope_usage(4).live_bytes, 300u);
  EXPECT_EQ(ledger.scope_usage(4).high_water_bytes, 300u);
  // After a resize the block answers to the resize's ticket.
  EXPECT_EQ(ledger.Resize(kHeap, 0x1000, T(1, 1), 50, T(2, 7)), Outcome::kApplied);
  const UsageCounters c = ledger.scope_usage(4);
  EXPECT_EQ(c.live_bytes, 50u);
  EXPECT_EQ(c.allocated_bytes, 300u);
  EXPECT_EQ(c.freed_bytes, 250u);
  EXPECT_EQ(c.live_count, 1u);
  ExpectInvariants(c);
  EXPECT_EQ(ledger.Resize(kHeap, 0x9000, T(1, 1), 5, T(1, 2)), Outcome::kUnknown);
  EXPECT_EQ(ledger.Free(kHeap, 0x1000, T(2, 7)), Outcome::kApplied);
}

TEST(AllocationLedgerTest, RemapMovesBlockKeepingScopeAndSite) {
  AllocationLedger ledger(16);
  ledger.Alloc(kHeap, 0x1000, 100, T(1, 0), 4, 0x77);
  EXPECT_EQ(ledger.Remap(kHeap, 0x1000, T(1, 0), 0x5000, 400, T(2, 1), 9, 0x99),
            Outcome::kApplied);
  const auto live = ledger.LiveBlocks();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0], (AllocationRecord{0x5000, 400, 4, 0x77, kHeap}));
  // The moved block answers to its new ticket.
  EXPECT_EQ(ledger.Free(kHeap, 0x5000, T(2, 1)), Outcome::kApplied);
  ExpectInvariants(ledger.totals());
}

TEST(AllocationLedgerTest, RemapOfUnknownBlockRecordsTheNewOne) {
  AllocationLedger ledger(16);
  EXPECT_EQ(ledger.Remap(kHeap, 0x1000, T(1, 0), 0x5000, 400, T(2, 1), 9, 0x99),
            Outcome::kUnknown);
  EXPECT_EQ(ledger.scope_usage(9).live_bytes, 400u);
}

TEST(AllocationLedgerTest, ArenaResetReleasesEveryBlockOfThatLayerOnly) {
  AllocationLedger ledger(16);
  for (uint64_t i = 1; i <= 100; ++i) {
    ledger.Alloc(layers::kFrameArena, i * 64, 64, T(1, i), 3, 0);
  }
  ledger.Alloc(kHeap, 64, 8, T(1, 1000), 3, 0);
  EXPECT_EQ(ledger.ResetLayer(layers::kFrameArena), 100u);
  EXPECT_EQ(ledger.layer_usage(layers::kFrameArena).live_bytes, 0u);
  EXPECT_EQ(ledger.layer_usage(layers::kFrameArena).high_water_bytes, 6400u);
  EXPECT_EQ(ledger.layer_usage(kHeap).live_bytes, 8u);
  EXPECT_EQ(ledger.scope_usage(3).live_bytes, 8u);
}

TEST(AllocationLedgerTest, SiteTableOverflowGoesToOtherSites) {
  AllocationLedger ledger(/*site_capacity=*/2);
  ledger.Alloc(kHeap, 0x10, 1, T(1, 0), 0, 0xa);
  ledger.Alloc(kHeap, 0x20, 1, T(1, 1), 0, 0xb);
  ledger.Alloc(kHeap, 0x30, 1, T(1, 2), 0, 0xc);
  EXPECT_EQ(ledger.sites().overflowed(), 1u);
  bool saw_other = false;
  ledger.ForEachLive([&](const AllocationRecord& r) {
    if (r.address == 0x30) saw_other = r.site == SiteTable::kOtherSitesValue;
  });
  EXPECT_TRUE(saw_other);
}

// LiveByContext() sums every live block, a set-aside one and the other sites' bucket
// included, by (scope, site) across layers, and leaves out pairs with nothing live.
TEST(AllocationLedgerTest, LiveByContextSumsEveryLiveBlockByScopeAndSite) {
  AllocationLedger ledger(/*site_capacity=*/2);
  ledger.Alloc(kHeap, 0x10, 100, T(1, 0), /*scope=*/1, 0xa);
  ledger.Alloc(layers::kGpuHeap, 0x10, 50, T(1, 1), /*scope=*/1, 0xa);  // another layer
  ledger.Alloc(kHeap, 0x20, 7, T(1, 2), /*scope=*/2, 0xa);
  ledger.Alloc(kHeap, 0x30, 9, T(1, 3), /*scope=*/1, 0xb);
  EXPECT_TRUE(ledger.Alloc(kHeap, 0x30, 11, T(2, 0), /*scope=*/1, 0xb));  // sets one aside
  ledger.Alloc(kHeap, 0x40, 13, T(1, 4), /*scope=*/2, 0xc);  // beyond the site table
  ledger.Alloc(kHeap, 0x50, 17, T(1, 5), /*scope=*/3, 0xb);
  EXPECT_EQ(ledger.Free(kHeap, 0x50, T(1, 5)), Outcome::kApplied);  // nothing left there

  std::map<std::pair<uint32_t, uint64_t>, std::pair<uint64_t, uint64_t>> got;
  for (const AllocationLedger::ContextLive& c : ledger.LiveByContext()) {
    EXPECT_TRUE(got.emplace(std::pair(c.scope, c.site), std::pair(c.live_bytes, c.live_count))
                    .second)
        << "pair listed twice: " << c.scope << ", " << c.site;
  }
  const std::map<std::pair<uint32_t, uint64_t>, std::pair<uint64_t, uint64_t>> want = {
      {{1, 0xa}, {150, 2}},
      {{2, 0xa}, {7, 1}},
      {{1, 0xb}, {20, 2}},
      {{2, SiteTable::kOtherSitesValue}, {13, 1}},
  };
  EXPECT_EQ(got, want);
}

// The reference for the per-layer and per-scope counters: sums and a running peak, kept
// here, not by UsageCounters.
struct Reference {
  uint64_t live_bytes = 0, live_count = 0, high_water = 0;
  uint64_t allocated_bytes = 0, allocated_count = 0, freed_bytes = 0, freed_count = 0;
  void Add(uint64_t n) {
    live_bytes += n;
    ++live_count;
    allocated_bytes += n;
    ++allocated_count;
    high_water = std::max(high_water, live_bytes);
  }
  void Remove(uint64_t n) {
    live_bytes -= n;
    --live_count;
    freed_bytes += n;
    ++freed_count;
  }
  void Change(uint64_t from, uint64_t to) {
    if (to >= from) {
      live_bytes += to - from;
      allocated_bytes += to - from;
      high_water = std::max(high_water, live_bytes);
    } else {
      live_bytes -= from - to;
      freed_bytes += from - to;
    }
  }
};

void ExpectMatches(const UsageCounters& c, const Reference& r, const char* what, int id) {
  EXPECT_EQ(c.live_bytes, r.live_bytes) << what << " " << id;
  EXPECT_EQ(c.live_count, r.live_count) << what << " " << id;
  EXPECT_EQ(c.high_water_bytes, r.high_water) << what << " " << id;
  EXPECT_EQ(c.allocated_bytes, r.allocated_bytes) << what << " " << id;
  EXPECT_EQ(c.allocated_count, r.allocated_count) << what << " " << id;
  EXPECT_EQ(c.freed_bytes, r.freed_bytes) << what << " " << id;
  EXPECT_EQ(c.freed_count, r.freed_count) << what << " " << id;
}

// While every change is in one layer and one scope, the ledger keeps only the totals and
// copies them into that layer's and scope's counters when read or when a change elsewhere
// comes (allocation_ledger.h, sole_). However the second context appears, every layer's
// and scope's counters must stay exact, peaks included.
TEST(AllocationLedgerTest, PerLayerAndPerScopeCountersStayExactWhenASecondContextAppears) {
  constexpr LayerId kOther = 7;
  for (int ender = 0; ender < 3; ++ender) {
    AllocationLedger ledger(kDefaultSiteCapacity);
    std::map<LayerId, Reference> layer_ref;
    std::map<uint32_t, Reference> scope_ref;
    struct Live {
      LayerId layer;
      uint32_t scope;
      uint64_t size;
      uint64_t ticket;
    };
    std::map<uint64_t, Live> live;  // by address
    std::mt19937_64 rng(100 + ender);
    uint64_t next_ticket = 1;
    auto alloc = [&](LayerId layer, uint32_t scope, uint64_t address, uint64_t size) {
      const uint64_t ticket = T(1, next_ticket++);
      ledger.Alloc(layer, address, size, ticket, scope, 0x400000 + scope);
      live[address] = Live{layer, scope, size, ticket};
      layer_ref[layer].Add(size);
      scope_ref[scope].Add(size);
    };
    auto release = [&](uint64_t address) {
      const Live b = live.at(address);
      EXPECT_EQ(ledger.Free(b.layer, address, b.ticket), Outcome::kApplied);
      layer_ref[b.layer].Remove(b.size);
      scope_ref[b.scope].Remove(b.size);
      live.erase(address);
    };
    auto resize = [&](uint64_t address, uint64_t size) {
      Live& b = live.at(address);
      const uint64_t ticket = T(1, next_ticket++);
      EXPECT_EQ(ledger.Resize(b.layer, address, b.ticket, size, ticket), Outcome::kApplied);
      layer_ref[b.layer].Change(b.size, size);
      scope_ref[b.scope].Change(b.size, size);
      b.size = size;
      b.ticket = ticket;
    };
    auto check = [&] {
      for (const auto& [layer, r] : layer_ref) {
        ExpectMatches(ledger.layer_usage(layer), r, "layer", layer);
        ExpectMatches(ledger.layers()[layer], r, "layers()", layer);
      }
      for (const auto& [scope, r] : scope_ref) {
        ExpectMatches(ledger.scope_usage(scope), r, "scope", static_cast<int>(scope));
        ExpectMatches(ledger.scopes()[scope], r, "scopes()", static_cast<int>(scope));
      }
    };
    // One context: the heap in scope 0, with a peak in the middle.
    for (uint64_t i = 0; i < 200; ++i) alloc(kHeap, 0, 0x10000 + 64 * i, 1 + rng() % 500);
    for (uint64_t i = 0; i < 150; ++i) release(0x10000 + 64 * i);
    resize(0x10000 + 64 * 160, 4000);
    check();  // reading in the sole mode copies the totals; recording goes on afterwards
    alloc(kHeap, 0, 0x90000, 77);
    // The first change elsewhere (a resize cannot be one: its block's allocation came
    // first): an allocation in another scope, in another layer, or the new block of a
    // move whose old block is unknown (recorded in the move's own scope).
    if (ender == 0) alloc(kHeap, 3, 0xa0000, 900);
    if (ender == 1) alloc(kOther, 0, 0xb0000, 900);
    if (ender == 2) {
      EXPECT_EQ(ledger.Remap(kHeap, 0xdead0, 0, 0xc0000, 5000, T(2, 1), 3, 0x9),
                Outcome::kUnknown);
      live[0xc0000] = Live{kHeap, 3, 5000, T(2, 1)};
      layer_ref[kHeap].Add(5000);
      scope_ref[3].Add(5000);
    }
    // Both contexts mixed, then all freed.
    for (uint64_t i = 0; i < 300; ++i) {
      const uint32_t scope = static_cast<uint32_t>(rng() % 2) * 3;
      const LayerId layer = rng() % 2 == 0 ? kHeap : kOther;
      alloc(layer, scope, 0x200000 + 64 * i, 1 + rng() % 700);
      if (i % 3 == 0) resize(0x200000 + 64 * i, 1 + rng() % 900);
      if (i % 2 == 1) release(0x200000 + 64 * (i - 1));
    }
    check();
    while (!live.empty()) release(live.begin()->first);
    check();
    ExpectInvariants(ledger.totals());
    EXPECT_EQ(ledger.totals().live_count, 0u);
  }
}

// A replay's ledger carries a note in each block's slot (analysis/analyzer.h). Random
// operations at a few reused addresses (so blocks are set aside and settled), with right,
// missing and wrong tickets, resizes, moves and arena resets, applied to a ReplayLedger
// and to an AllocationLedger: the outcomes and every counter agree, and each block the
// replay ledger lets go of carries the note given to that very block. The test knows
// which block that is from the ticket the ledger names: every ticket here is used once,
// and a resize or a move hands the block's note on to its new ticket.
TEST(ReplayLedgerTest, EveryReleasedBlockCarriesItsOwnNote) {
  using runtime_internal::BlockNote;
  std::mt19937_64 rng(7);
  AllocationLedger plain(64);
  ReplayLedger noted(64);
  std::map<uint64_t, uint64_t> note_of;  // ticket48 -> the note id its block carries
  struct Live {
    LayerId layer;
    uint64_t address;
    uint64_t ticket;
  };
  std::vector<Live> live;  // what the test allocated and has not released
  uint64_t next_ticket = 1;
  uint64_t next_id = 1000;
  uint64_t checked = 0;
  auto check = [&](const ReplayLedger::Released& r) {
    auto it = note_of.find(r.ticket48);
    ASSERT_NE(it, note_of.end()) << "a released block with a ticket never given";
    EXPECT_EQ(r.note.id, it->second);
    EXPECT_EQ(r.note.thread, static_cast<uint32_t>(it->second % 7));
    ++checked;
  };
  auto forget = [&](LayerId layer, uint64_t ticket48) {
    for (size_t i = 0; i < live.size(); ++i) {
      if (live[i].layer == layer && CompactTicket(live[i].ticket) == ticket48) {
        live.erase(live.begin() + static_cast<ptrdiff_t>(i));
        return;
      }
    }
  };
  for (int step = 0; step < 200'000; ++step) {
    const LayerId layer = rng() % 8 == 0 ? layers::kFrameArena : kHeap;
    const uint32_t op = rng() % 100;
    if (op < 40 || live.empty()) {
      const uint64_t address = 16 * (1 + rng() % 64);
      const uint64_t ticket = T(1, next_ticket++);
      const uint64_t id = next_id++;
      const uint64_t size = 1 + rng() % 1000;
      const uint32_t scope = static_cast<uint32_t>(rng() % 3);
      note_of[CompactTicket(ticket)] = id;
      plain.Alloc(layer, address, size, ticket, scope, 0x40 + scope);
      noted.Alloc(layer, address, size, ticket, scope, 0x40 + scope,
                  BlockNote{id, static_cast<uint32_t>(step), static_cast<uint32_t>(id % 7)});
      live.push_back(Live{layer, address, ticket});
      continue;
    }
    const Live pick = live[rng() % live.size()];
    // The block's own ticket, none, or a wrong one.
    const uint32_t how = rng() % 10;
    const uint64_t ticket = how < 7 ? pick.ticket : how < 9 ? 0 : T(9, rng() % 1000);
    if (op < 70) {
      ReplayLedger::Released r;
      const Outcome o = noted.Free(pick.layer, pick.address, ticket, &r);
      ASSERT_EQ(plain.Free(pick.layer, pick.address, ticket), o);
      if (o != Outcome::kUnknown && o != Outcome::kDoubleFree) {
        check(r);
        forget(pick.layer, r.ticket48);
      }
    } else if (op < 85) {
      const uint64_t new_ticket = T(1, next_ticket++);
      const uint64_t size = 1 + rng() % 1000;
      ReplayLedger::Released before;
      const Outcome o =
          noted.Resize(pick.layer, pick.address, ticket, size, new_ticket, &before);
      ASSERT_EQ(plain.Resize(pick.layer, pick.address, ticket, size, new_ticket), o);
      if (o != Outcome::kUnknown) {
        check(before);
        note_of[CompactTicket(new_ticket)] = before.note.id;
        for (Live& l : live) {
          if (l.layer == pick.layer && CompactTicket(l.ticket) == before.ticket48) {
            l.ticket = new_ticket;
          }
        }
      }
    } else if (op < 97) {
      const uint64_t new_ticket = T(1, next_ticket++);
      const uint64_t to = 16 * (1 + rng() % 64);
      ReplayLedger::Moved moved;
      AllocationLedger::Moved plain_moved;
      const Outcome o = noted.MoveOut(pick.layer, pick.address, ticket, &moved);
      ASSERT_EQ(plain.MoveOut(pick.layer, pick.address, ticket, &plain_moved), o);
      BlockNote note{next_id++, 0, 0};
      if (moved.known) {
        check(ReplayLedger::Released{{}, moved.ticket48, moved.note});
        forget(pick.layer, moved.ticket48);
        note = moved.note;
      }
      note.thread = static_cast<uint32_t>(note.id % 7);
      note_of[CompactTicket(new_ticket)] = note.id;
      plain.MoveIn(pick.layer, plain_moved, to, 64, new_ticket, 1, 0x41);
      noted.MoveIn(pick.layer, moved, to, 64, new_ticket, 1, 0x41, note);
      live.push_back(Live{pick.layer, to, new_ticket});
    } else if (op < 99) {
      ASSERT_EQ(plain.SettleDisplaced(), noted.SettleDisplaced([&](const auto& r) {
        check(r);
        forget(r.block.layer, r.ticket48);
      }));
    } else {
      ASSERT_EQ(plain.ResetLayer(layers::kFrameArena),
                noted.ResetLayer(layers::kFrameArena, [&](const auto& r) {
                  check(r);
                  forget(r.block.layer, r.ticket48);
                }));
    }
    ASSERT_EQ(plain.totals().live_bytes, noted.totals().live_bytes) << "step " << step;
  }
  EXPECT_GT(checked, 50'000u);
  EXPECT_EQ(plain.LiveBlocks(), noted.LiveBlocks());
  for (uint32_t scope = 0; scope < 3; ++scope) {
    EXPECT_EQ(plain.scope_usage(scope).high_water_bytes,
              noted.scope_usage(scope).high_water_bytes);
  }
  // Every block the test still holds is found by its note, with its size.
  for (const Live& l : live) {
    const uint64_t id = note_of.at(CompactTicket(l.ticket));
    uint64_t size = 0;
    const BlockNote* n = noted.FindNote(
        l.layer, l.address, [id](const BlockNote& b) { return b.id == id; }, &size);
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->id, id);
    EXPECT_GT(size, 0u);
  }
}

TEST(ReplayLedgerTest, ARemapKeepsTheBlocksNote) {
  ReplayLedger ledger(16);
  ledger.Alloc(kHeap, 0x1000, 100, T(1, 0), 4, 0x77, runtime_internal::BlockNote{7, 3, 2});
  ASSERT_EQ(ledger.Remap(kHeap, 0x1000, T(1, 0), 0x5000, 400, T(2, 1), 9, 0x99),
            Outcome::kApplied);
  ReplayLedger::Released r;
  ASSERT_EQ(ledger.Free(kHeap, 0x5000, T(2, 1), &r), Outcome::kApplied);
  EXPECT_EQ(r.note.id, 7u);
  EXPECT_EQ(r.note.thread_event, 3u);
  EXPECT_EQ(r.note.thread, 2u);
}

}  // namespace
}  // namespace memtrace
