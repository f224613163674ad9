// Copyright 2026 The memtrace Authors.
//
// The interposer's lock-free address sets (preload/internal_blocks.h): every inserted
// address is found and erased exactly once, from any thread, while other threads insert
// and erase theirs; a full set refuses and counts instead of losing silently. Expected
// values come from each thread's own bookkeeping, not from the set.

#include "preload/internal_blocks.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace memtrace::preload_internal {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kRounds = 20000;
#else
constexpr int kRounds = 200000;
#endif

TEST(AddressSetTest, InsertFindEraseOnce) {
  static AddressSet<10> set;  // static: 16 KiB of slots
  EXPECT_FALSE(set.Erase(0x1000)) << "empty";
  set.Insert(0x1000);
  set.Insert(0x2000);
  EXPECT_EQ(set.live(), 2);
  EXPECT_TRUE(set.Erase(0x1000));
  EXPECT_FALSE(set.Erase(0x1000)) << "erased once only";
  EXPECT_FALSE(set.Erase(0x3000)) << "never inserted";
  EXPECT_TRUE(set.Erase(0x2000));
  EXPECT_EQ(set.live(), 0);
  EXPECT_EQ(set.overflowed(), 0u);
}

TEST(AddressSetTest, AFullSetCountsWhatItRefuses) {
  static AddressSet<6> set;  // 64 slots
  int inserted = 0;
  for (uint64_t a = 1; a <= 100; ++a) {
    const uint64_t before = set.overflowed();
    set.Insert(a * 16);
    if (set.overflowed() == before) ++inserted;
  }
  EXPECT_EQ(inserted, 64);
  EXPECT_EQ(set.overflowed(), 36u);
  EXPECT_EQ(set.live(), 64);
  int erased = 0;
  for (uint64_t a = 1; a <= 100; ++a) erased += set.Erase(a * 16) ? 1 : 0;
  EXPECT_EQ(erased, 64) << "exactly the addresses that went in come out";
  EXPECT_EQ(set.live(), 0);
}

// The interposer's own blocks (InternalBlocks: homes by nearness, not by hash) in the
// shapes malloc gives them: runs of neighbouring blocks, and blocks at the same offset of
// heaps a megabyte or 64 MiB apart (the thread arenas), which a plain address modulo
// the table would pile onto one home. All of them fit, none past the probe limit; each
// comes out once, and an address next to them that never went in is not found.
TEST(AddressSetTest, NearbyHomesKeepRunsAndAlignedHeapsApart) {
  static AddressSet<16, 12, AddressHome::kNearby> set;
  std::vector<uint64_t> blocks;
  for (uint64_t i = 0; i < 20000; ++i) blocks.push_back(0x55550000'0000 + 48 * i);  // a run
  for (uint64_t heap = 1; heap <= 300; ++heap) {
    blocks.push_back(0x7f0000000000 + (heap << 26) + 0x8c0);  // 64 MiB-aligned arenas
    blocks.push_back(0x7e0000000000 + (heap << 20) + 0x8c0);  // a megabyte apart
  }
  for (uint64_t a : blocks) set.Insert(a);
  EXPECT_EQ(set.overflowed(), 0u);
  EXPECT_EQ(set.live(), static_cast<int64_t>(blocks.size()));
  EXPECT_FALSE(set.Erase(0x55550000'0000 + 48 * 20000)) << "just past the run";
  EXPECT_FALSE(set.Erase(0x7f0000000000 + (uint64_t{301} << 26) + 0x8c0)) << "another arena";
  for (uint64_t a : blocks) EXPECT_TRUE(set.Erase(a)) << std::hex << a;
  for (uint64_t a : blocks) EXPECT_FALSE(set.Erase(a)) << "erased once only";
  EXPECT_EQ(set.live(), 0);
}

// Four threads each own a range of addresses; a block inserted by one thread is erased
// by another (the way a block allocated on one thread is freed on another), through a
// hand-off queue per thread. Every hand-off must find its address. `set` needs room for
// every address handed off (at most half of 4 x kRounds live at once).
template <typename Set>
void InsertAndEraseAcrossThreads(Set& set) {
  constexpr int kThreads = 4;
  struct Mailbox {
    std::vector<std::atomic<uint64_t>> slots;
    std::atomic<uint64_t> head{0};
    explicit Mailbox(size_t n) : slots(n) {}
  };
  std::vector<std::unique_ptr<Mailbox>> boxes;
  for (int t = 0; t < kThreads; ++t) boxes.push_back(std::make_unique<Mailbox>(kRounds));
  std::atomic<int64_t> found{0}, missing{0}, own_erased{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t + 1);
      Mailbox& next = *boxes[(t + 1) % kThreads];
      for (int i = 0; i < kRounds; ++i) {
        // Addresses are unique per thread and round, aligned like real blocks.
        const uint64_t address = (static_cast<uint64_t>(t + 1) << 40) + static_cast<uint64_t>(i) * 16;
        set.Insert(address);
        if (rng() % 2 == 0) {
          // Erased here, at once.
          if (set.Erase(address)) {
            own_erased.fetch_add(1, std::memory_order_relaxed);
          } else {
            missing.fetch_add(1, std::memory_order_relaxed);
          }
        } else {
          // Handed to the next thread. Release pairs with the acquire load below, so the
          // insert happens before the other thread's erase.
          const uint64_t at = next.head.load(std::memory_order_relaxed);
          next.slots[at].store(address, std::memory_order_relaxed);
          next.head.store(at + 1, std::memory_order_release);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  // Now every thread's mailbox is complete; erase the handed-off addresses concurrently.
  threads.clear();
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Mailbox& mine = *boxes[t];
      const uint64_t n = mine.head.load(std::memory_order_acquire);
      for (uint64_t i = 0; i < n; ++i) {
        if (set.Erase(mine.slots[i].load(std::memory_order_relaxed))) {
          found.fetch_add(1, std::memory_order_relaxed);
        } else {
          missing.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  int64_t handed = 0;
  for (auto& box : boxes) handed += static_cast<int64_t>(box->head.load());
  EXPECT_EQ(missing.load(), 0);
  EXPECT_EQ(found.load(), handed);
  EXPECT_EQ(own_erased.load() + handed, int64_t{kThreads} * kRounds);
  EXPECT_EQ(set.live(), 0);
  EXPECT_EQ(set.overflowed(), 0u);
}

TEST(AddressSetTest, ConcurrentInsertAndEraseAcrossThreads) {
  static SampledBlocks set;  // the interposer's sampled-block set: 2^20 slots, no filter
  InsertAndEraseAcrossThreads(set);
}

TEST(AddressSetTest, ConcurrentInsertAndEraseThroughASaturatedFilter) {
  // 16 filter counters for up to 400K live addresses: they reach 255 and stick, and
  // every erase must still find its address.
  static AddressSet<20, 4> set;
  InsertAndEraseAcrossThreads(set);
}

// Millions of blocks come and go through `set`, a couple of thousand live at a time, as
// sampled blocks do through the interposer over a long run; then lookups of addresses
// that were never in it (the free of an unsampled block: most frees) must still read only
// a slot or two, and every address that is in the set must still be found, once. Slots
// that erased addresses leave behind must not pile up: with slots marked deleted for
// good, the table filled with them and every such lookup read all kMaxProbe slots.
template <typename Set>
void LookupsStayShortAfterMillionsOfBlocks(Set& set) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  constexpr uint64_t kBlocks = 400'000;
#else
  constexpr uint64_t kBlocks = 4'000'000;
#endif
  constexpr size_t kLive = 2000;
  // Distinct addresses, 48 bytes apart, each erased kLive blocks after it came.
  auto address = [](uint64_t n) { return 0x5555'0000'0000 + 48 * n; };
  for (uint64_t n = 0; n < kBlocks; ++n) {
    set.Insert(address(n));
    if (n >= kLive) {
      ASSERT_TRUE(set.Erase(address(n - kLive))) << n - kLive;
    }
  }
  EXPECT_EQ(set.overflowed(), 0u);
  EXPECT_EQ(set.live(), static_cast<int64_t>(kLive));
  // Addresses never inserted: between the blocks, and far from them.
  constexpr int kAbsent = 10'000;
  size_t total = 0, longest = 0;
  for (int k = 0; k < kAbsent; ++k) {
    const uint64_t absent = k % 2 == 0 ? address(static_cast<uint64_t>(k) * 97) + 16
                                       : 0x7f00'0000'0000 + 16 * static_cast<uint64_t>(k);
    const size_t probes = set.SlotsLookedAt(absent);
    total += probes;
    longest = std::max(longest, probes);
  }
  EXPECT_LT(total, 2u * kAbsent) << "slots read per lookup, on average, below 2";
  EXPECT_LE(longest, 16u);
  for (uint64_t n = kBlocks - kLive; n < kBlocks; ++n) {
    EXPECT_TRUE(set.Erase(address(n))) << n;
  }
  for (uint64_t n = kBlocks - kLive; n < kBlocks; ++n) EXPECT_FALSE(set.Erase(address(n)));
  EXPECT_EQ(set.live(), 0);
}

TEST(AddressSetTest, LookupsStayShortAfterMillionsOfBlocksScattered) {
  static AddressSet<16> set;  // 65,536 slots, homes by hash (as the sampled set)
  LookupsStayShortAfterMillionsOfBlocks(set);
}

TEST(AddressSetTest, LookupsStayShortAfterMillionsOfBlocksNearby) {
  static InternalBlocks set;  // the interposer's own-block set: homes by nearness
  LookupsStayShortAfterMillionsOfBlocks(set);
}

// Four threads insert fresh addresses into a 256-slot set and erase them soon after,
// some themselves and some through another thread (handed over by an exchange, as a
// block passes from the thread that allocated it to the one that frees it), so that
// inserts and erases of neighbouring slots race all the time. Every erase of an address
// in the set finds it, every erase of one that never was does not, and nothing is
// refused: at most 4 x 18 addresses are in the set at once, far from a full probe window.
TEST(AddressSetTest, RacingInsertsAndErasesOfNeighbouringSlotsFindEveryAddress) {
  static AddressSet<8> set;
  constexpr int kThreads = 4;
  constexpr size_t kOwn = 16;
  std::atomic<uint64_t> inbox[kThreads] = {};
  std::atomic<int64_t> missing{0}, phantom{0};
  auto erase_expecting = [&](uint64_t a, bool present) {
    // Relaxed: counters, read after the threads are joined.
    if (set.Erase(a) != present) {
      (present ? missing : phantom).fetch_add(1, std::memory_order_relaxed);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t + 7);
      uint64_t own[kOwn] = {};
      for (int i = 0; i < kRounds; ++i) {
        const uint64_t a =
            (static_cast<uint64_t>(t + 1) << 40) + static_cast<uint64_t>(i) * 16;
        set.Insert(a);
        uint64_t& oldest = own[static_cast<size_t>(i) % kOwn];
        if (oldest != 0) {
          if (rng() % 2 == 0) {
            erase_expecting(oldest, true);
          } else {
            // Acq_rel: the release publishes this thread's insert of `oldest` to the
            // thread that takes it; the acquire does the same for whatever comes back.
            const uint64_t back =
                inbox[(t + 1) % kThreads].exchange(oldest, std::memory_order_acq_rel);
            if (back != 0) erase_expecting(back, true);  // not taken yet: erase it here
          }
        }
        oldest = a;
        // Acq_rel: pairs with the exchange above, on the thread that handed it over.
        const uint64_t handed = inbox[t].exchange(0, std::memory_order_acq_rel);
        if (handed != 0) erase_expecting(handed, true);
        erase_expecting(a + 8, false);  // never inserted
      }
      for (uint64_t a : own) {
        if (a != 0) erase_expecting(a, true);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (auto& box : inbox) {
    // Relaxed: the threads that wrote the boxes are joined.
    if (const uint64_t a = box.load(std::memory_order_relaxed); a != 0) {
      erase_expecting(a, true);
    }
  }
  EXPECT_EQ(missing.load(), 0);
  EXPECT_EQ(phantom.load(), 0);
  EXPECT_EQ(set.live(), 0);
  EXPECT_EQ(set.overflowed(), 0u);
}

TEST(AddressSetTest, TheFilterAnswersForAddressesNeverInserted) {
  static InternalBlocks set;  // the interposer's own-block set, with its 4 KiB filter
  for (uint64_t a = 1; a <= 8; ++a) set.Insert(a << 20);
  int erased = 0;
  for (uint64_t a = 1; a <= 4096; ++a) erased += set.Erase((a << 20) + 16) ? 1 : 0;
  EXPECT_EQ(erased, 0) << "addresses never inserted";
  for (uint64_t a = 1; a <= 8; ++a) EXPECT_TRUE(set.Erase(a << 20)) << a;
  for (uint64_t a = 1; a <= 8; ++a) EXPECT_FALSE(set.Erase(a << 20)) << "erased once: " << a;
  EXPECT_EQ(set.live(), 0);
}

TEST(AddressSetTest, StuckFilterCountersStillFindEveryAddress) {
  static AddressSet<10, 1> set;  // two counters for 600 addresses: both stick at 255
  for (uint64_t a = 1; a <= 600; ++a) set.Insert(a * 16);
  ASSERT_EQ(set.overflowed(), 0u);
  for (uint64_t a = 1; a <= 600; ++a) ASSERT_TRUE(set.Erase(a * 16)) << a;
  EXPECT_EQ(set.live(), 0);
  EXPECT_FALSE(set.Erase(16)) << "erased once";
}

}  // namespace
}  // namespace memtrace::preload_internal
