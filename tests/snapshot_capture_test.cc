// Copyright 2026 The memtrace Authors.
//
// WriteSnapshotCapture (sinks/snapshot_capture.h) from a LiveCapture made by hand: the
// capture reader reads back every block as one allocation, with its site's frames, its
// scope's path and, in a sampled process, its weight; the pieces are bounded and stop
// when the reader is gone; and a replay of the capture takes what came before the moment
// from its trailer.

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/analyzer.h"
#include "analysis/capture_reader.h"
#include "gtest/gtest.h"
#include "runtime/internal/site_table.h"
#include "runtime/scope_table.h"
#include "sinks/jsonl_encoding.h"
#include "sinks/snapshot_capture.h"
#include "transport/event.h"

namespace memtrace {
namespace {

constexpr int64_t kTaken = 1796000000123456789;
constexpr uint64_t kReturnSite = 0x401234;
constexpr uint64_t kStackSite = kStackHashBit | 77;
const std::vector<uint64_t> kFrames = {0x401aaa, 0x401bbb};
constexpr uint64_t kBlocks = 20000;  // some pieces' worth

// kBlocks blocks in the scope "snapshot_capture_test": each fourth at the stack site, one
// in the other-sites bucket, the rest at the return address; the counters say 3 times
// as many were allocated and two thirds of them freed.
LiveCapture MadeByHand(uint32_t* scope) {
  static const ScopeName kName("snapshot_capture_test");
  *scope = ScopeTable::Global().Child(ScopeTable::kRootPath, kName.id());
  LiveCapture c;
  c.snapshot.taken_unix_ns = kTaken;
  UsageCounters& t = c.snapshot.totals;
  for (uint64_t i = 0; i < kBlocks; ++i) {
    AllocationRecord b;
    b.address = 0x10000 + i * 64;
    b.size = 16 + i % 48;
    b.scope = *scope;
    b.site = i == 7 ? SiteTable::kOtherSitesValue : i % 4 == 0 ? kStackSite : kReturnSite;
    b.layer = 0;
    c.blocks.push_back(b);
    t.live_bytes += b.size;
    ++t.live_count;
  }
  c.frames[kStackSite] = kFrames;
  t.allocated_count = 3 * kBlocks;
  t.allocation_calls = 3 * kBlocks;
  t.allocated_bytes = 3 * t.live_bytes;
  t.freed_count = 2 * kBlocks;
  t.freed_bytes = 2 * t.live_bytes;
  t.high_water_bytes = t.high_water_low_bytes = t.high_water_high_bytes = 2 * t.live_bytes;
  c.snapshot.scopes.push_back(ScopeUsage{*scope, "snapshot_capture_test", t});
  c.snapshot.layers.push_back(LayerUsage{0, "cpu", t});
  return c;
}

std::string Written(const LiveCapture& c, const Config::CaptureDescription& description,
                    size_t* pieces) {
  std::string out;
  *pieces = 0;
  EXPECT_TRUE(WriteSnapshotCapture(c, 4242, description, [&](std::string_view piece) {
    EXPECT_LE(piece.size(), kSnapshotPieceBytes + 64);
    ++*pieces;
    out.append(piece);
    return true;
  }));
  return out;
}

TEST(SnapshotCaptureTest, EveryBlockReadsBackAsOneAllocationWithItsSiteScopeAndWeight) {
  uint32_t scope = 0;
  const LiveCapture c = MadeByHand(&scope);
  const Config::CaptureDescription sampled{"preload", "\"interposer\":{\"min_size\":0}", 4096};
  size_t pieces = 0;
  const std::string text = Written(c, sampled, &pieces);
  EXPECT_GT(pieces, 1u);

  std::vector<CaptureRecord> allocs;
  CaptureRecord header, trailer, stack_site, other_site;
  std::map<uint32_t, uint64_t> site_addrs;
  std::string scope_path;
  const absl::Status read = ReadCaptureText(text, "made.mtb", [&](const CaptureRecord& r) {
    switch (r.type) {
      case LineType::kHeader: header = r; break;
      case LineType::kTrailer: trailer = r; break;
      case LineType::kAlloc: allocs.push_back(r); break;
      case LineType::kScope:
        if (r.id == scope) scope_path = r.path;
        break;
      case LineType::kSite:
        site_addrs[r.id] = r.addr;
        if (r.other) other_site = r;
        if (!r.frames.empty()) stack_site = r;
        break;
      default: break;
    }
    return absl::OkStatus();
  });
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(header.pid, 4242u);
  EXPECT_EQ(header.source, "preload");
  EXPECT_EQ(header.t, kTaken);
  EXPECT_NE(header.raw.find(absl::StrCat("\"interposer\":{\"min_size\":0},\"snapshot\":{"
                                         "\"taken_unix_ns\":", kTaken, ",\"blocks\":", kBlocks)),
            std::string::npos)
      << header.raw;
  EXPECT_EQ(scope_path, "snapshot_capture_test");
  EXPECT_EQ(stack_site.frames, kFrames);
  EXPECT_EQ(stack_site.addr, kFrames[0]);
  EXPECT_TRUE(other_site.other);
  EXPECT_EQ(site_addrs.size(), 3u);
  ASSERT_EQ(allocs.size(), kBlocks);
  for (uint64_t i = 0; i < kBlocks; ++i) {
    const CaptureRecord& a = allocs[i];
    const AllocationRecord& b = c.blocks[i];
    ASSERT_EQ(a.addr, b.address) << i;
    EXPECT_EQ(a.size, b.size) << i;
    EXPECT_EQ(a.scope, scope) << i;
    EXPECT_EQ(a.thread, 0u) << i;
    EXPECT_EQ(a.ticket, i + 1) << i;
    EXPECT_EQ(a.t, kTaken) << i;
    EXPECT_EQ(a.weight, RoundedWeight(SampleWeight(b.size, 4096))) << i;
    // A site's line names its stack's innermost frame, or its return address.
    EXPECT_EQ(site_addrs[a.site], b.site == kStackSite ? kFrames[0] : b.site) << i;
  }
  EXPECT_TRUE(trailer.complete);
  EXPECT_NE(trailer.raw.find(absl::StrCat("\"event_lines\":", kBlocks)), std::string::npos);
}

TEST(SnapshotCaptureTest, ReplayTakesWhatCameBeforeTheMomentFromTheTrailer) {
  uint32_t scope = 0;
  const LiveCapture c = MadeByHand(&scope);
  size_t pieces = 0;
  const std::string text = Written(c, Config::CaptureDescription{}, &pieces);
  const absl::StatusOr<CaptureSummary> s = Analyzer::SummarizeText(text, "made.mtb");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->snapshot_of.taken);
  EXPECT_EQ(s->snapshot_of.taken_unix_ns, kTaken);
  EXPECT_EQ(s->snapshot_of.blocks, kBlocks);
  EXPECT_EQ(s->live_blocks, kBlocks);
  EXPECT_EQ(s->totals.live_count, kBlocks);
  EXPECT_EQ(s->totals.live_bytes, c.snapshot.totals.live_bytes);
  EXPECT_EQ(s->totals.allocated_count, 3 * kBlocks);
  EXPECT_EQ(s->totals.freed_count, 2 * kBlocks);
  EXPECT_EQ(s->totals.high_water_bytes, 2 * c.snapshot.totals.live_bytes);
  ASSERT_EQ(s->scopes.count(scope), 1u);
  EXPECT_EQ(s->scopes.at(scope).allocated_count, 3 * kBlocks);
}

TEST(SnapshotCaptureTest, StopsWhenTheReaderIsGone) {
  uint32_t scope = 0;
  const LiveCapture c = MadeByHand(&scope);
  int calls = 0;
  EXPECT_FALSE(WriteSnapshotCapture(c, 4242, Config::CaptureDescription{},
                                    [&](std::string_view) { return ++calls < 1; }));
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace memtrace
