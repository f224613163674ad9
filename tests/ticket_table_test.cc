// Copyright 2026 The memtrace Authors.
//
// The ticket table (transport/ticket_table.h): what a releasing thread reads back, what a
// full bucket gives up, and that threads claiming slots of one bucket at the same moment
// never lose each other's entries. Expected tickets are built with Ticket::Make from the
// ring id and position each test chose, not read from the table.

#include "transport/ticket_table.h"

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "transport/ticket.h"

namespace memtrace {
namespace {

// The smallest table: 16 slots, four buckets of four.
constexpr uint32_t kSmallLog2 = TicketTable::kMinSlotsLog2;

// What Lookup() returns for the record at `position` of ring `ring_id`: the
// ticket with the position's low 28 bits (ticket.h).
uint64_t Expected(uint32_t ring_id, uint64_t position) {
  return Ticket::Make(ring_id, position & Ticket::kTruncatedPositionMask);
}

// `n` distinct block-aligned addresses that share one bucket of `table`.
std::vector<uint64_t> AddressesInOneBucket(const TicketTable& table, size_t n) {
  std::vector<uint64_t> out;
  const TicketTable::Bucket bucket = table.BucketOf(0x10000);
  for (uint64_t a = 0x10000; out.size() < n; a += 16) {
    if (table.BucketOf(a) == bucket) out.push_back(a);
  }
  return out;
}

TEST(TicketTableTest, LookupReturnsTheLatestRecordedTicket) {
  TicketTable table(kSmallLog2);
  ASSERT_TRUE(table.ok());
  const uint64_t a = 0x7f0000001230;
  EXPECT_EQ(table.Lookup(a), 0u) << "nothing recorded yet";
  table.Record(table.BucketOf(a), a, 3, 100, /*epoch=*/7);
  EXPECT_EQ(table.Lookup(table.BucketOf(a), a), Expected(3, 100));
  // A resize records again at the same address: the newer ticket replaces the older.
  table.Record(table.BucketOf(a), a, 3, 101, /*epoch=*/7);
  EXPECT_EQ(table.Lookup(a), Expected(3, 101));
  // A release writes nothing: a second release of the block reads the same ticket (the
  // ledger then knows it for a double free).
  EXPECT_EQ(table.Lookup(a), Expected(3, 101));
  // The next block at the address takes the same slot. Positions keep their low 28 bits.
  table.Record(table.BucketOf(a), a, 5, (uint64_t{1} << 30) + 9, /*epoch=*/8);
  EXPECT_EQ(table.Lookup(a), Expected(5, 9));
  EXPECT_EQ(table.fresh_evictions(), 0u);
}

constexpr uint32_t kWays = TicketTable::kWays;

TEST(TicketTableTest, AFullBucketGivesUpItsOldestEntry) {
  TicketTable table(kSmallLog2);
  ASSERT_TRUE(table.ok());
  const std::vector<uint64_t> a = AddressesInOneBucket(table, kWays + 1);
  for (uint32_t i = 0; i < kWays; ++i) table.Record(table.BucketOf(a[i]), a[i], 1, i, 10 + i);
  // The bucket's next block takes the slot written in the oldest epoch (10). That
  // ticket's epoch is closed, so nothing is counted.
  table.Record(table.BucketOf(a[kWays]), a[kWays], 1, kWays, 10 + kWays);
  EXPECT_EQ(table.fresh_evictions(), 0u);
  EXPECT_EQ(table.Lookup(a[0]), 0u);
  for (uint32_t i = 1; i <= kWays; ++i) EXPECT_EQ(table.Lookup(a[i]), Expected(1, i)) << i;
}

TEST(TicketTableTest, MoreBlocksOfABucketThanWaysInOneEpochAreCounted) {
  TicketTable table(kSmallLog2);
  ASSERT_TRUE(table.ok());
  const std::vector<uint64_t> a = AddressesInOneBucket(table, kWays + 1);
  for (uint32_t i = 0; i <= kWays; ++i) table.Record(table.BucketOf(a[i]), a[i], 2, i, 20);
  EXPECT_EQ(table.fresh_evictions(), 1u);
  uint32_t found = 0;
  for (uint32_t i = 0; i <= kWays; ++i) found += table.Lookup(a[i]) == Expected(2, i);
  EXPECT_EQ(found, kWays);
}

// An epoch a whole number of 2^16 epochs before the current one has the current epoch's
// low 16 bits: about two minutes of 2 ms epochs. The entries such an epoch left in a
// bucket are old, and evicting them loses no ticket that may still be needed.
TEST(TicketTableTest, EntriesWholeCyclesOf2To16EpochsOldAreNotFreshEvictions) {
  TicketTable table(kSmallLog2);
  ASSERT_TRUE(table.ok());
  constexpr uint32_t kFirst = 100;
  constexpr int kCycles = 12;
  const std::vector<uint64_t> a = AddressesInOneBucket(table, kWays + kCycles);
  for (uint32_t i = 0; i < kWays; ++i) table.Record(table.BucketOf(a[i]), a[i], 1, i, kFirst);
  // Each record evicts an entry from kFirst: whole cycles of 2^16 epochs before its own.
  for (uint32_t k = 1; k <= kCycles; ++k) {
    const uint32_t epoch = kFirst + (k < kCycles ? k : 20000) * 65536;
    const uint64_t address = a[kWays - 1 + k];
    table.Record(table.BucketOf(address), address, 1, kWays - 1 + k, epoch);
    EXPECT_EQ(table.fresh_evictions(), 0u) << "evicted at epoch " << epoch;
    EXPECT_EQ(table.Lookup(address), Expected(1, kWays - 1 + k)) << k;
  }
  // A genuine one: a bucket filled within the current epoch still counts its eviction.
  const uint32_t now = kFirst + 20000 * 65536 + 1;
  const std::vector<uint64_t> b = AddressesInOneBucket(table, kWays + kCycles + kWays + 1);
  for (size_t i = kWays + kCycles; i < b.size(); ++i) {
    table.Record(table.BucketOf(b[i]), b[i], 2, i, now);
  }
  EXPECT_EQ(table.fresh_evictions(), 1u);
}

// The victim of a full bucket is the entry written longest ago, also when the epochs of
// the entries differ by more than 2^16: an entry from 2^16 + 10 epochs ago goes before
// entries from 5 to 3 epochs ago.
TEST(TicketTableTest, AFullBucketGivesUpItsOldestEntryAcrossCyclesOf2To16Epochs) {
  TicketTable table(kSmallLog2);
  ASSERT_TRUE(table.ok());
  const std::vector<uint64_t> a = AddressesInOneBucket(table, kWays + 1);
  const uint32_t now = 65536 + 10;
  table.Record(table.BucketOf(a[0]), a[0], 1, 0, 10);
  for (uint32_t i = 1; i < kWays; ++i) {
    table.Record(table.BucketOf(a[i]), a[i], 1, i, now - 2 - kWays + i);  // a few ago
  }
  table.Record(table.BucketOf(a[kWays]), a[kWays], 1, kWays, now);
  EXPECT_EQ(table.Lookup(a[0]), 0u) << "the oldest entry is the one given up";
  for (uint32_t i = 1; i <= kWays; ++i) EXPECT_EQ(table.Lookup(a[i]), Expected(1, i)) << i;
  EXPECT_EQ(table.fresh_evictions(), 0u);
}

// A slot keeps 48 bits of address (the header): every user-space address of x86-64 and
// of AArch64 with 48-bit virtual addresses, whose mappings lie just below 2^48. A block
// at or above 2^48 (only where a program asks a 5-level page table or 52-bit address
// space for such addresses) gets no entry, and its lost ticket is counted.
TEST(TicketTableTest, AddressesBelow2To48AreKeptAndHigherOnesCounted) {
  TicketTable table(kSmallLog2);
  ASSERT_TRUE(table.ok());
  const uint64_t aarch64 = 0xffff'8765'4320;  // above 2^47
  table.Record(table.BucketOf(aarch64), aarch64, 4, 40, 0x1234'5678);
  EXPECT_EQ(table.Lookup(aarch64), Expected(4, 40));
  EXPECT_EQ(table.fresh_evictions(), 0u);
  const uint64_t high = uint64_t{1} << 48 | 0x1230;
  table.Record(table.BucketOf(high), high, 4, 41, 0x1234'5678);
  EXPECT_EQ(table.Lookup(high), 0u);
  EXPECT_EQ(table.Lookup(high & ~(uint64_t{1} << 48)), 0u) << "nor under its low 48 bits";
  EXPECT_EQ(table.fresh_evictions(), 1u);
}

// Threads record and release blocks of one bucket as fast as they can, each from its own
// set of addresses, as allocating threads do when malloc hands them blocks whose addresses
// hash alike. There are more addresses than slots, so every record claims a slot from
// another entry, often at the same moment as another thread. A release may then find no
// ticket, and each such loss is counted (one epoch throughout: every eviction is of a
// ticket that may still be needed); it never reads another block's ticket, which would
// pair it with the wrong record.
TEST(TicketTableTest, RacingClaimsLoseOnlyWhatTheyCount) {
  const int threads = 4;
  const int per_thread = 3;
  const uint64_t rounds = 1'000'000;
  TicketTable table(kSmallLog2);
  ASSERT_TRUE(table.ok());
  const std::vector<uint64_t> addresses = AddressesInOneBucket(table, threads * per_thread);
  std::atomic<int> ready{0};
  std::atomic<uint64_t> lost{0}, wrong{0};
  auto worker = [&](int t) {
    const uint32_t ring_id = static_cast<uint32_t>(t) + 1;
    uint64_t my_lost = 0, my_wrong = 0;
    // Relaxed: only a start signal, so that the threads overlap from the first record.
    ready.fetch_add(1, std::memory_order_relaxed);
    while (ready.load(std::memory_order_relaxed) < threads) std::this_thread::yield();
    for (uint64_t n = 0; n < rounds; ++n) {
      const uint64_t address = addresses[static_cast<size_t>(t * per_thread) + n % per_thread];
      table.Record(table.BucketOf(address), address, ring_id, n, /*epoch=*/1);
      const uint64_t got = table.Lookup(address);
      if (got == 0) {
        ++my_lost;
      } else if (got != Expected(ring_id, n)) {
        ++my_wrong;
      }
    }
    lost.fetch_add(my_lost, std::memory_order_relaxed);
    wrong.fetch_add(my_wrong, std::memory_order_relaxed);
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  for (auto& th : pool) th.join();
  EXPECT_EQ(wrong.load(), 0u) << "of " << rounds * threads << " records";
  // An eviction or a claim given up loses at most one ticket, and both are counted.
  EXPECT_LE(lost.load(), table.fresh_evictions());
  EXPECT_GT(table.fresh_evictions(), 0u) << "the test should make claims evict";
}

}  // namespace
}  // namespace memtrace
