// Copyright 2026 The memtrace Authors.
//
// The analyzer replays a capture through the runtime's AllocationLedger: a block set aside
// at a reused address is settled when its epoch ends, as the drainer settles it. Two
// kinds of test:
//   - captures written by hand, epoch by epoch, whose state the test states from the
//     ledger's documented rule (at most one block is really live at an address once an
//     epoch's records are all in);
//   - a traced program that hands blocks back to malloc behind the tracer's back, so their
//     releases are lost: the replay must end where the runtime ended, and where the
//     program really is (the test counts the blocks it lost and the addresses that came
//     back).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "analysis/analyzer.h"
#include "runtime/malloc_allocator.h"
#include "runtime/tracer.h"
#include "sinks/jsonl_sink.h"
#include "tests/captured_run.h"
#include "transport/ticket.h"

namespace memtrace {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

const char kHeader[] = "{\"type\":\"header\",\"schema_version\":1}\n";

// Lines of one epoch, by thread; tickets as the drainer makes them (ring = thread).
uint64_t TicketOf(uint32_t thread, uint64_t position) { return Ticket::Make(thread, position); }

std::string Alloc(uint32_t epoch, uint32_t thread, uint64_t addr, uint64_t size,
                  uint64_t ticket) {
  return absl::StrCat("{\"type\":\"alloc\",\"t\":", epoch, ",\"epoch\":", epoch,
                      ",\"thread\":", thread, ",\"addr\":\"0x", absl::Hex(addr),
                      "\",\"size\":", size, ",\"layer\":0,\"scope\":0,\"site\":0,\"ticket\":",
                      ticket, "}\n");
}

std::string Free(uint32_t epoch, uint32_t thread, uint64_t addr, uint64_t of,
                 uint64_t ticket) {
  return absl::StrCat("{\"type\":\"free\",\"t\":", epoch, ",\"epoch\":", epoch,
                      ",\"thread\":", thread, ",\"addr\":\"0x", absl::Hex(addr),
                      "\",\"layer\":0,\"of\":", of, ",\"ticket\":", ticket, "}\n");
}

// Thread 1 allocates A at 0x1000 and loses its release; thread 2 gets 0x1000 back and
// keeps B there. Once epoch 1 ends, only B can be live at 0x1000: A is a missed free.
// Before it ends (a snapshot at event 2), both are still in the ledger.
TEST(ReplayLedgerTest, ABlockWhoseReleaseWasLostIsReleasedWhenItsAddressComesBackAndTheEpochEnds) {
  const uint64_t a = TicketOf(1, 0), b = TicketOf(2, 0);
  const std::string text = std::string(kHeader) + Alloc(1, 1, 0x1000, 100, a) +
                           Alloc(1, 2, 0x1000, 30, b) + Alloc(2, 1, 0x2000, 7, TicketOf(1, 1));
  const auto end = Analyzer::SummarizeText(text, "lost.jsonl");
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->missed_frees, 1u);
  EXPECT_EQ(end->totals.live_count, 2u);       // B and the block of epoch 2
  EXPECT_EQ(end->totals.live_bytes, 30u + 7u);
  EXPECT_EQ(end->totals.freed_count, 1u);      // A, released by the settling
  EXPECT_EQ(end->totals.freed_bytes, 100u);
  EXPECT_EQ(end->totals.high_water_bytes, 130u);
  EXPECT_EQ(end->live_blocks, 2u);
  EXPECT_EQ(end->unmatched_releases, 0u);

  Analyzer replay;
  replay.StopAfter(2);
  CaptureReadStats stats;
  ASSERT_TRUE(ReadCaptureText(text, "lost.jsonl",
                              [&](const CaptureRecord& r) { return replay.Apply(r); }, &stats)
                  .ok());
  EXPECT_EQ(replay.Composition().live_bytes, 130u);  // inside epoch 1: not settled yet
}

// The last epoch ends with the capture: a block set aside then is settled too.
TEST(ReplayLedgerTest, TheLastEpochIsSettledAtTheEndOfTheCapture) {
  const std::string text = std::string(kHeader) + Alloc(4, 1, 0x1000, 100, TicketOf(1, 0)) +
                           Alloc(4, 2, 0x1000, 30, TicketOf(2, 0));
  const auto end = Analyzer::SummarizeText(text, "last.jsonl");
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->missed_frees, 1u);
  EXPECT_EQ(end->totals.live_bytes, 30u);
  EXPECT_EQ(end->live_blocks, 1u);
}

// The drainer reads rings one after the other: thread 1's ring first, with an allocation
// at 0x1000 that really came after thread 2's block there was freed. Thread 2's
// allocation then sets thread 1's block aside, and its free (by ticket) takes its own.
// At the epoch's end the address has no other block, so the one set aside is the live
// one: put back, not a missed free.
TEST(ReplayLedgerTest, ABlockSetAsideByAnAllocationThatReallyCameBeforeItIsPutBack) {
  const uint64_t a = TicketOf(1, 0), b = TicketOf(2, 0);
  const std::string text = std::string(kHeader) + Alloc(1, 1, 0x1000, 100, a) +
                           Alloc(1, 2, 0x1000, 30, b) + Free(1, 2, 0x1000, b, TicketOf(2, 1)) +
                           Alloc(2, 1, 0x2000, 7, TicketOf(1, 1)) +
                           Free(2, 1, 0x1000, a, TicketOf(1, 2));
  const auto end = Analyzer::SummarizeText(text, "reordered.jsonl");
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->missed_frees, 0u);
  EXPECT_EQ(end->unmatched_releases, 0u);  // A's free in epoch 2 found A
  EXPECT_EQ(end->totals.live_bytes, 7u);
  EXPECT_EQ(end->totals.freed_count, 2u);
}

// A release of a block released before (its ticket again) names no live block.
TEST(ReplayLedgerTest, AReleaseOfABlockAlreadyReleasedIsUnmatched) {
  const uint64_t a = TicketOf(1, 0);
  const std::string text = std::string(kHeader) + Alloc(1, 1, 0x1000, 100, a) +
                           Free(1, 1, 0x1000, a, TicketOf(1, 1)) +
                           Free(1, 1, 0x1000, a, TicketOf(1, 2));
  const auto end = Analyzer::SummarizeText(text, "double.jsonl");
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->unmatched_releases, 1u);
  EXPECT_EQ(end->totals.live_bytes, 0u);
  EXPECT_EQ(end->totals.freed_count, 1u);
}

// Retention follows a block by its own identity, not its address or ticket: a block
// allocated in a scope, then resized in place and moved to another address before the
// scope exits, is retained once, with its size at the exit; one moved and then freed
// inside the scope is not retained.
TEST(ReplayLedgerTest, RetentionFollowsABlockThroughAResizeAndAMove) {
  auto scope = [](const char* type, uint32_t id) {
    return absl::StrCat("{\"type\":\"", type, "\",\"t\":1,\"epoch\":1,\"thread\":1,\"scope\":",
                        id, ",\"outer\":0}\n");
  };
  auto line = [](const char* type, uint64_t addr, uint64_t size, uint64_t of,
                 uint64_t ticket) {
    return absl::StrCat("{\"type\":\"", type, "\",\"t\":1,\"epoch\":1,\"thread\":1,\"addr\":\"0x",
                        absl::Hex(addr), "\"", size != 0 ? absl::StrCat(",\"size\":", size) : "",
                        ",\"layer\":0,\"of\":", of, ",\"ticket\":", ticket, "}\n");
  };
  auto target = [](uint64_t addr, uint64_t size, uint64_t ticket) {
    return absl::StrCat("{\"type\":\"remap_target\",\"t\":1,\"epoch\":1,\"thread\":1,"
                        "\"addr\":\"0x", absl::Hex(addr), "\",\"size\":", size,
                        ",\"layer\":0,\"scope\":1,\"site\":0,\"ticket\":", ticket, "}\n");
  };
  const uint64_t a = TicketOf(1, 0), b = TicketOf(1, 1);
  const std::string text =
      std::string(kHeader) + "{\"type\":\"scope\",\"id\":1,\"parent\":0,\"name\":\"phase\",\"path\":\"phase\"}\n" +
      scope("scope_enter", 1) + Alloc(1, 1, 0x1000, 64, a) + Alloc(1, 1, 0x3000, 16, b) +
      line("resize", 0x1000, 100, a, TicketOf(1, 2)) +
      line("remap", 0x1000, 0, TicketOf(1, 2), TicketOf(1, 3)) + target(0x2000, 300, TicketOf(1, 4)) +
      line("remap", 0x3000, 0, b, TicketOf(1, 5)) + target(0x4000, 32, TicketOf(1, 6)) +
      line("free", 0x4000, 0, TicketOf(1, 6), TicketOf(1, 7)) + scope("scope_exit", 1);
  const auto end = Analyzer::SummarizeText(text, "retention.jsonl");
  ASSERT_TRUE(end.ok()) << end.status();
  ASSERT_EQ(end->retention.size(), 1u);
  EXPECT_EQ(end->retention[0].exits, 1u);
  EXPECT_EQ(end->retention[0].retained_blocks, 1u);
  EXPECT_EQ(end->retention[0].retained_bytes, 300u);
  EXPECT_EQ(end->totals.live_bytes, 300u);
  EXPECT_EQ(end->unmatched_releases, 0u);
}

// A scope id beyond what the runtime numbers (ScopeTable::kMaxPaths) would size the
// replay's tables by it (found by the capture reader's fuzzer: out of memory).
TEST(ReplayLedgerTest, AScopeBeyondTheRuntimesIsAnErrorThatNamesIt) {
  const std::string text = std::string(kHeader) +
                           "{\"type\":\"alloc\",\"t\":1,\"epoch\":1,\"thread\":1,\"addr\":"
                           "\"0x10\",\"size\":1,\"layer\":0,\"scope\":4294967040,\"site\":0,"
                           "\"ticket\":1}\n";
  const auto end = Analyzer::SummarizeText(text, "scope.jsonl");
  ASSERT_FALSE(end.ok());
  EXPECT_NE(end.status().message().find("scope 4294967040 is out of range: scopes are 0 to 1048576"),
            std::string::npos)
      << end.status();
}

TEST(ReplayLedgerTest, ALayerBeyondTheRuntimesIsAnErrorThatNamesIt) {
  const std::string text = std::string(kHeader) +
                           "{\"type\":\"alloc\",\"t\":1,\"epoch\":1,\"thread\":1,\"addr\":"
                           "\"0x10\",\"size\":1,\"layer\":300,\"scope\":0,\"site\":0,"
                           "\"ticket\":1}\n";
  const auto end = Analyzer::SummarizeText(text, "layer.jsonl");
  ASSERT_FALSE(end.ok());
  EXPECT_NE(end.status().message().find("layer 300 is out of range: layers are 0 to 255"),
            std::string::npos)
      << end.status();
  EXPECT_NE(end.status().message().find("layer.jsonl:2"), std::string::npos) << end.status();
}

// A traced program whose blocks go back to malloc untraced: the tracer never sees those
// releases. One thread loses a block and allocates the same size again, which malloc's
// per-thread cache mostly answers with the same address; another thread allocates and
// frees traced blocks meanwhile, so the capture has several rings in its epochs. Every
// epoch ends (Flush) with the blocks the first thread kept still live.
//
// What the test knows: at most one block is really live at an address, the last one the
// thread got there. Each earlier block at that address lost its release, and is a missed
// free once that last one's epoch ends; a lost block whose address never came back stays
// live as far as any tracer can tell. So the missed frees are the thread's allocations
// less its distinct addresses, and the live blocks are the last one at each address.
TEST(ReplayLedgerTest, LostReleasesEndTheReplayWhereTheyEndedTheRuntime) {
  const std::string path = TempPath("lost_releases.jsonl");
  CapturedRun run(path);
  ASSERT_TRUE(run.started);
  MallocAllocator& heap = run.heap;
  TracingAllocator& traced = run.traced;

  constexpr int kRounds = 2000;
  std::vector<std::pair<void*, size_t>> allocations, kept;  // in the thread's order
  std::thread other([&] {
    for (int i = 0; i < kRounds; ++i) {
      void* p = traced.Alloc(24 + i % 64, 8, 0x2000);
      ASSERT_NE(p, nullptr);
      traced.Free(AsMemory(p, 24 + i % 64), 8, 0x2000);
    }
  });
  for (int i = 0; i < kRounds; ++i) {
    const size_t n = 32 + 16 * (i % 4);
    void* p = traced.Alloc(n, 8, 0x1000);
    ASSERT_NE(p, nullptr);
    allocations.emplace_back(p, n);
    heap.Free(AsMemory(p, n), 8, 0);  // behind the tracer's back
    void* q = traced.Alloc(n, 8, 0x1000);
    ASSERT_NE(q, nullptr);
    allocations.emplace_back(q, n);
    kept.emplace_back(q, n);
  }
  other.join();
  ASSERT_TRUE(run.tracer->Flush().ok());
  ASSERT_TRUE(run.tracer->Stop().ok());
  const Snapshot snap = run.tracer->TakeSnapshot();
  ASSERT_TRUE(run.sink->Finish(snap).ok());
  for (auto [q, n] : kept) heap.Free(AsMemory(q, n), 8, 0);

  std::map<void*, size_t> last;  // address -> the size of the last block there
  for (auto [p, n] : allocations) last[p] = n;
  uint64_t live_bytes = 0;
  for (auto [p, n] : last) live_bytes += n;
  const uint64_t missed = allocations.size() - last.size();

  const auto summary = Analyzer::Summarize(path);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->unmatched_releases, 0u);
  // The replay against the program...
  EXPECT_EQ(summary->missed_frees, missed);
  EXPECT_EQ(summary->totals.live_count, last.size());
  EXPECT_EQ(summary->totals.live_bytes, live_bytes);
  EXPECT_EQ(summary->live_blocks, last.size());
  // ... and against the runtime: the same blocks settled, the same counters.
  EXPECT_EQ(summary->missed_frees, snap.integrity.missed_frees);
  EXPECT_EQ(summary->totals.live_bytes, snap.totals.live_bytes);
  EXPECT_EQ(summary->totals.live_count, snap.totals.live_count);
  EXPECT_EQ(summary->totals.freed_count, snap.totals.freed_count);
  EXPECT_EQ(summary->totals.freed_bytes, snap.totals.freed_bytes);
  EXPECT_EQ(summary->totals.high_water_bytes, snap.totals.high_water_bytes);
}

}  // namespace
}  // namespace memtrace
