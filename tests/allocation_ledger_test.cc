// Copyright 2026 The memtrace Authors.

#include "runtime/allocation_ledger.h"

#include <algorithm>
#include <cstdint>
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

}  // namespace
}  // namespace memtrace
