// Copyright 2026 The memtrace Authors.
//
// The analyzer: a round trip (record with the runtime, write JSONL, analyze: the
// analyzer's totals equal the counts the test keeps of its own operations, and the
// runtime's own Snapshot), calls, retention, temporaries, peaks, snapshot points, sampled
// captures. The reader's own tests are in capture_reader_test.cc.

#include "analysis/analyzer.h"
#include "analysis/batch_reader.h"
#include "analysis/difference.h"
#include "analysis/timeline.h"
#include "analysis/trailer.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "runtime/frame_arena.h"
#include "runtime/malloc_allocator.h"
#include "runtime/tracer.h"
#include "sinks/jsonl_sink.h"
#include "tests/captured_run.h"
#include "tests/same_usage.h"

namespace memtrace {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

// What the test itself did, counted as usage_counters.h defines the counters: an in-place
// resize moves bytes only, a remap is a release of the old block and an allocation of the
// new one. `calls` counts the calls that allocated as heaptrack does: every allocation
// and every resize, a move (a remap: Free and Allocate here) being one call.
struct OwnCounts {
  uint64_t allocated_count = 0, allocated_bytes = 0, freed_count = 0, freed_bytes = 0;
  uint64_t calls = 0;
  void Allocate(uint64_t n) {
    ++allocated_count;
    ++calls;
    allocated_bytes += n;
  }
  void Free(uint64_t n) {
    ++freed_count;
    freed_bytes += n;
  }
  void Resize(uint64_t from, uint64_t to) {
    ++calls;
    if (to >= from) {
      allocated_bytes += to - from;
    } else {
      freed_bytes += from - to;
    }
  }
  void Add(const OwnCounts& o) {
    allocated_count += o.allocated_count;
    allocated_bytes += o.allocated_bytes;
    freed_count += o.freed_count;
    freed_bytes += o.freed_bytes;
    calls += o.calls;
  }
};

void ExpectCounts(const UsageCounters& got, const OwnCounts& want, const std::string& what) {
  EXPECT_EQ(got.allocated_count, want.allocated_count) << what;
  EXPECT_EQ(got.allocated_bytes, want.allocated_bytes) << what;
  EXPECT_EQ(got.freed_count, want.freed_count) << what;
  EXPECT_EQ(got.freed_bytes, want.freed_bytes) << what;
  EXPECT_EQ(got.allocation_calls, want.calls) << what;
  EXPECT_EQ(got.live_count, want.allocated_count - want.freed_count) << what;
  EXPECT_EQ(got.live_bytes, want.allocated_bytes - want.freed_bytes) << what;
}

TEST(AnalyzerTest, RoundTripTotalsEqualTheTestsOwnCountsAndTheRuntimesSnapshot) {
  const std::string path = TempPath("roundtrip.jsonl");
  CapturedRun run(path);
  ASSERT_TRUE(run.started);
  std::unique_ptr<JsonlSink>& sink = run.sink;
  std::unique_ptr<Tracer>& tracer = run.tracer;
  MallocAllocator& heap = run.heap;
  TracingAllocator& traced = run.traced;
  FrameArena arena(1 << 20);
  TracingAllocator frame(tracer.get(), &arena, layers::kFrameArena);
  static const ScopeName kA("rt_a");
  static const ScopeName kB("rt_b");
  std::vector<std::thread> threads;
  std::vector<std::vector<std::pair<void*, size_t>>> kept(4);
  std::vector<OwnCounts> own(4);  // the heap's, in scope rt_a/rt_b, by thread
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      OwnCounts& mine = own[t];
      Span a = tracer->Enter(kA);
      for (int i = 0; i < 2000; ++i) {
        Span b = tracer->Enter(kB);
        size_t n = 16 + (i * 7) % 300;
        void* p = traced.Alloc(n, 16, 0x1000 + i % 5);
        ASSERT_NE(p, nullptr);
        mine.Allocate(n);
        if (i % 3 == 0 && traced.Resize(AsMemory(p, n), 16, n / 2 + 1, 0)) {
          mine.Resize(n, n / 2 + 1);
          n = n / 2 + 1;
        }
        if (i % 5 == 0) {
          void* q = traced.Remap(AsMemory(p, n), 16, n + 4096, 0);
          if (q == p) {  // grown in place: the same block, resized
            mine.Resize(n, n + 4096);
            n += 4096;
          } else if (q != nullptr) {  // moved
            mine.Free(n);
            mine.Allocate(n + 4096);
            p = q;
            n += 4096;
          }
        }
        if (i % 4 == 0) {
          kept[t].emplace_back(p, n);
        } else {
          traced.Free(AsMemory(p, n), 16, 0);
          mine.Free(n);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  OwnCounts frames;  // the arena's, outside any scope
  for (int f = 0; f < 10; ++f) {  // a frame arena on this thread
    for (int i = 0; i < 50; ++i) {
      ASSERT_NE(frame.Alloc(64, 16, 0), nullptr);
      frames.Allocate(64);
    }
    arena.ResetTraced(frame);
    for (int i = 0; i < 50; ++i) frames.Free(64);  // a reset releases every block
  }
  OwnCounts heap_counts;
  for (const OwnCounts& o : own) heap_counts.Add(o);
  OwnCounts all = heap_counts;
  all.Add(frames);
  ASSERT_TRUE(tracer->Stop().ok());
  const Snapshot snap = tracer->TakeSnapshot();
  ASSERT_TRUE(sink->Finish(snap).ok());

  const auto summary = Analyzer::Summarize(path);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_TRUE(summary->has_trailer);
  EXPECT_TRUE(summary->trailer_complete);
  EXPECT_EQ(summary->unmatched_releases, 0u);
  EXPECT_EQ(summary->events, snap.integrity.events_applied);
  // The analyzer's replay against the test's own counts...
  ExpectCounts(summary->totals, all, "totals");
  ExpectCounts(summary->layers.at(layers::kCpuHeap), heap_counts, "layer cpu");
  ExpectCounts(summary->layers.at(layers::kFrameArena), frames, "layer frame");
  bool found_scope = false;
  for (const auto& [scope, path] : summary->scope_paths) {
    if (path != "rt_a/rt_b") continue;
    found_scope = true;
    ExpectCounts(summary->scopes.at(scope), heap_counts, path);
  }
  EXPECT_TRUE(found_scope) << "no scope rt_a/rt_b in the capture";
  // ... and against the runtime's ledger, which follows the same records.
  ExpectSame(summary->totals, snap.totals, "totals");
  for (const ScopeUsage& s : snap.scopes) {
    ExpectSame(summary->scopes.at(s.scope), s.usage, s.path);
    EXPECT_EQ(summary->scope_paths.at(s.scope), s.path);
  }
  for (const LayerUsage& l : snap.layers) {
    ExpectSame(summary->layers.at(l.layer), l.usage, l.name);
    EXPECT_EQ(summary->layer_names.at(l.layer), l.name);
  }
  // The trailer's blocks read back (analysis/trailer.h) are what the runtime counted.
  const absl::StatusOr<TrailerBlocks> t = ParseTrailer(summary->trailer);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE(t->has_integrity);
  EXPECT_EQ(t->integrity.Counters(), snap.integrity.Counters());
  EXPECT_EQ(t->integrity.epochs, snap.integrity.epochs);
  EXPECT_EQ(t->integrity.rings, snap.integrity.rings);
  EXPECT_EQ(t->integrity.max_ring_fill, snap.integrity.max_ring_fill);
  EXPECT_EQ(t->fence, snap.integrity.uses_membarrier ? "membarrier" : "seq_cst");
  EXPECT_EQ(t->memtrace_bytes, snap.memtrace_bytes);
  ASSERT_TRUE(t->has_sink);
  EXPECT_EQ(t->events_written, snap.integrity.events_applied);
  EXPECT_TRUE(t->Losses().empty());
  for (const auto& blocks : kept) {
    for (auto [p, n] : blocks) heap.Free(AsMemory(p, n), 16, 0);
  }
}

// AnalysisSummaryOptions: a snapshot point and a progress hook. The point stops the
// replay where the test says (its own count of the events before it), and the hook sees
// the bytes read grow to the file's size.
TEST(AnalyzerTest, SummaryOptionsStopAtTheirPointAndReportProgress) {
  const std::string path = TempPath("options.jsonl");
  CapturedRun run(path);
  ASSERT_TRUE(run.started);
  std::unique_ptr<JsonlSink>& sink = run.sink;
  std::unique_ptr<Tracer>& tracer = run.tracer;
  TracingAllocator& traced = run.traced;
  std::vector<void*> kept;
  for (int i = 0; i < 300; ++i) kept.push_back(traced.Alloc(100, 16, 0));  // 300 events
  for (void* p : kept) traced.Free(AsMemory(p, 100), 16, 0);                // 300 more
  ASSERT_TRUE(tracer->Stop().ok());
  ASSERT_TRUE(sink->Finish(tracer->TakeSnapshot()).ok());

  AnalysisSummaryOptions options;
  options.point = ParseSnapshotPoint("event=450").value();
  std::vector<uint64_t> read;
  options.progress = [&read](uint64_t bytes) { read.push_back(bytes); };
  const auto at = Analyzer::Summarize(path, options);
  ASSERT_TRUE(at.ok()) << at.status();
  EXPECT_EQ(at->totals.allocated_count, 300u);
  EXPECT_EQ(at->totals.freed_count, 150u);
  EXPECT_EQ(at->totals.live_bytes, 150u * 100);
  EXPECT_EQ(at->totals.high_water_bytes, 300u * 100);
  ASSERT_FALSE(read.empty());
  EXPECT_TRUE(std::is_sorted(read.begin(), read.end()));
  EXPECT_LE(read.back(), std::filesystem::file_size(path));
  EXPECT_GT(read.back(), 0u);

  const auto end = Analyzer::Summarize(path, AnalysisSummaryOptions{});
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(end->totals.freed_count, 300u);
  EXPECT_EQ(end->totals.live_bytes, 0u);
}

TEST(AnalyzerTest, ZstdCaptureRoundTripsAndACutOffStreamIsReported) {
  const std::string path = TempPath("roundtrip.jsonl.zst");  // ".zst": compressed
  CapturedRun run(path);
  ASSERT_TRUE(run.started);
  std::unique_ptr<JsonlSink>& sink = run.sink;
  std::unique_ptr<Tracer>& tracer = run.tracer;
  MallocAllocator& heap = run.heap;
  TracingAllocator& traced = run.traced;
  std::vector<std::pair<void*, size_t>> kept;
  for (int i = 0; i < 20000; ++i) {
    void* p = traced.Alloc(8 + i % 100, 16, 0x2000 + i % 7);
    if (i % 10 == 0) {
      kept.emplace_back(p, 8 + i % 100);
    } else {
      traced.Free(AsMemory(p, 8 + i % 100), 16, 0);
    }
  }
  ASSERT_TRUE(tracer->Stop().ok());
  const Snapshot snap = tracer->TakeSnapshot();
  ASSERT_TRUE(sink->Finish(snap).ok());
  {
    std::ifstream in(path, std::ios::binary);
    unsigned char magic[4] = {};
    in.read(reinterpret_cast<char*>(magic), 4);
    EXPECT_EQ(magic[0], 0x28);
    EXPECT_EQ(magic[3], 0xfd);
  }
  const auto summary = Analyzer::Summarize(path);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_TRUE(summary->trailer_complete);
  ExpectSame(summary->totals, snap.totals, "totals from the zstd capture");
  EXPECT_LT(sink->stats().bytes_written, summary->events * 20)
      << "compressed well below the ~130 bytes per event of plain JSONL";

  // Cut the compressed file in half: read up to the cut, which is said; not a crash.
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const std::string cut = TempPath("cut.jsonl.zst");
  {
    std::ofstream out(cut, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  }
  const auto truncated = Analyzer::Summarize(cut);
  ASSERT_TRUE(truncated.ok()) << truncated.status();
  EXPECT_FALSE(truncated->has_trailer);
  EXPECT_NE(truncated->cut.find("cut off"), std::string::npos) << truncated->cut;
  EXPECT_GT(truncated->events, 0u);
  EXPECT_LT(truncated->events, summary->events);
  for (auto [p, n] : kept) heap.Free(AsMemory(p, n), 16, 0);
}

TEST(AnalyzerTest, CaptureWithoutTrailerIsTruncated) {
  const std::string text =
      "{\"type\":\"header\",\"schema_version\":1}\n"
      "{\"type\":\"alloc\",\"t\":1,\"thread\":1,\"addr\":\"0x10\",\"size\":8,\"layer\":0,"
      "\"scope\":0,\"site\":0,\"ticket\":5}\n";
  const auto summary = Analyzer::SummarizeText(text, "cut.jsonl");
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_FALSE(summary->has_trailer);
  EXPECT_EQ(summary->totals.live_bytes, 8u);
}

std::string Alloc(uint64_t addr, uint64_t size, uint32_t scope, uint32_t site,
                  uint64_t ticket) {
  return "{\"type\":\"alloc\",\"t\":" + std::to_string(ticket) +
         ",\"thread\":1,\"addr\":\"0x" + std::to_string(addr) + "\",\"size\":" +
         std::to_string(size) + ",\"layer\":0,\"scope\":" + std::to_string(scope) +
         ",\"site\":" + std::to_string(site) + ",\"ticket\":" + std::to_string(ticket) +
         "}\n";
}

std::string Free(uint64_t addr, uint64_t of, uint64_t ticket) {
  return "{\"type\":\"free\",\"t\":" + std::to_string(ticket) +
         ",\"thread\":1,\"addr\":\"0x" + std::to_string(addr) + "\",\"layer\":0,\"of\":" +
         std::to_string(of) + ",\"ticket\":" + std::to_string(ticket) + "}\n";
}

const char kHeader[] = "{\"type\":\"header\",\"schema_version\":1}\n";
// The header of a sampled capture, as the interposer writes it.
const char kSampledHeader[] =
    "{\"type\":\"header\",\"schema_version\":1,\"source\":\"preload\",\"interposer\":"
    "{\"sample_interval_bytes\":4096,\"stack_depth\":0}}\n";

// A resize in place, and the two halves of a move, on thread 1 in layer 0, addresses
// spelled as Alloc() spells them.
std::string Resize(uint64_t addr, uint64_t size, uint64_t of, uint64_t ticket) {
  return absl::StrCat("{\"type\":\"resize\",\"t\":", ticket, ",\"thread\":1,\"addr\":\"0x",
                      addr, "\",\"size\":", size, ",\"layer\":0,\"of\":", of,
                      ",\"ticket\":", ticket, "}\n");
}
std::string Remap(uint64_t addr, uint64_t of, uint64_t ticket) {
  return absl::StrCat("{\"type\":\"remap\",\"t\":", ticket, ",\"thread\":1,\"addr\":\"0x",
                      addr, "\",\"layer\":0,\"of\":", of, ",\"ticket\":", ticket, "}\n");
}
std::string RemapTarget(uint64_t addr, uint64_t size, uint64_t ticket) {
  return absl::StrCat("{\"type\":\"remap_target\",\"t\":", ticket,
                      ",\"thread\":1,\"addr\":\"0x", addr, "\",\"size\":", size,
                      ",\"layer\":0,\"scope\":0,\"site\":0,\"ticket\":", ticket, "}\n");
}

// Calls as heaptrack counts them, beside blocks: the test writes a sequence of
// allocations, in-place resizes, moves and frees in two scopes, counting as it goes each
// record that is a call (an alloc, a resize, a remap_target: a move is one call) and each
// that makes a block (an alloc, a remap_target).
TEST(AnalyzerTest, AllocationCallsCountEveryAllocationAndResizeAndAMoveOnce) {
  std::string text = kHeader;
  std::map<uint32_t, uint64_t> calls, blocks;  // by scope
  uint64_t ticket = 0;
  for (uint64_t i = 0; i < 12; ++i) {
    const uint32_t scope = 1 + i % 2;
    const uint64_t first = ++ticket;
    uint64_t addr = 100 + i, last = first, size = 10 + i;
    text += Alloc(addr, size, scope, 0, first);
    ++calls[scope];
    ++blocks[scope];
    for (uint64_t r = 0; r < i % 3; ++r) {  // 0, 1 or 2 resizes in place
      size += 5;
      last = ++ticket;
      text += Resize(addr, size, first, last);
      ++calls[scope];
    }
    if (i % 4 == 1) {  // a move: the block keeps its scope
      const uint64_t remap = ++ticket;
      text += Remap(addr, last, remap);
      addr += 1000;
      size *= 2;
      last = ++ticket;
      text += RemapTarget(addr, size, last);
      ++calls[scope];
      ++blocks[scope];
    }
    if (i % 2 == 0) text += Free(addr, last, ++ticket);
  }
  const auto s = Analyzer::SummarizeText(text, "calls.jsonl");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->unmatched_releases, 0u);
  uint64_t all_calls = 0, all_blocks = 0;
  for (uint32_t scope : {1u, 2u}) {
    all_calls += calls[scope];
    all_blocks += blocks[scope];
    EXPECT_EQ(s->scopes.at(scope).allocation_calls, calls[scope]) << "scope " << scope;
    EXPECT_EQ(s->scopes.at(scope).allocated_count, blocks[scope]) << "scope " << scope;
  }
  EXPECT_EQ(s->totals.allocation_calls, all_calls);
  EXPECT_EQ(s->layers.at(0).allocation_calls, all_calls);
  EXPECT_EQ(s->totals.allocated_count, all_blocks);
  EXPECT_GT(all_calls, all_blocks) << "the sequence has resizes in place";
  uint64_t by_site = 0;
  for (const AllocationAttribution& a : s->attribution) by_site += a.usage.allocation_calls;
  EXPECT_EQ(by_site, all_calls);
}

TEST(AnalyzerTest, PeakCompositionIsTheLiveSetAtTheGlobalHighWater) {
  const std::string path = TempPath("peak.jsonl");
  {
    std::ofstream out(path);
    out << kHeader << "{\"type\":\"site\",\"id\":0,\"addr\":\"0x401000\"}\n"
        << "{\"type\":\"site\",\"id\":1,\"addr\":\"0x402000\"}\n"
        << Alloc(10, 100, 1, 0, 1) << Alloc(20, 200, 2, 1, 2)  // peak: 300 after event 2
        << Free(10, 1, 3) << Alloc(30, 50, 1, 0, 4)            // 250
        << "{\"type\":\"trailer\",\"complete\":true}\n";
  }
  const auto peak = Analyzer::Peak(path);
  ASSERT_TRUE(peak.ok()) << peak.status();
  EXPECT_EQ(peak->event_index, 2u);
  EXPECT_EQ(peak->live_bytes, 300u);
  ASSERT_EQ(peak->by_scope.size(), 2u);
  EXPECT_EQ(peak->by_scope[0], (std::pair<uint32_t, uint64_t>{2, 200}));
  EXPECT_EQ(peak->by_scope[1], (std::pair<uint32_t, uint64_t>{1, 100}));
  ASSERT_EQ(peak->by_site.size(), 2u);
  EXPECT_EQ(peak->by_site[0], (std::pair<uint32_t, uint64_t>{1, 200}));

  const auto summary = Analyzer::Summarize(path);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(summary->totals.high_water_bytes, 300u);
  // A snapshot at a point: after the first three events (two allocations and a free).
  const auto at3 = Analyzer::Summarize(path, 3);
  ASSERT_TRUE(at3.ok());
  EXPECT_EQ(at3->totals.live_bytes, 200u);
  EXPECT_EQ(at3->totals.allocated_count, 2u);
  EXPECT_EQ(at3->events, 4u) << "the whole file is still read and checked";
  EXPECT_EQ(summary->totals.live_bytes, 250u);
  // Attribution: site 0 in scope 1 allocated twice (150 bytes), 50 still live.
  bool found = false;
  for (const AllocationAttribution& a : summary->attribution) {
    if (a.site == 0 && a.scope == 1) {
      found = true;
      EXPECT_EQ(a.site_addr, 0x401000u);
      EXPECT_EQ(a.usage.allocated_count, 2u);
      EXPECT_EQ(a.usage.allocated_bytes, 150u);
      EXPECT_EQ(a.usage.live_bytes, 50u);
    }
  }
  EXPECT_TRUE(found);
}

TEST(AnalyzerTest, RetentionCountsWhatOutlivedEachScopeInstance) {
  auto enter = [](uint32_t scope, uint32_t outer) {
    return "{\"type\":\"scope_enter\",\"t\":0,\"thread\":1,\"scope\":" +
           std::to_string(scope) + ",\"outer\":" + std::to_string(outer) + "}\n";
  };
  auto exit = [](uint32_t scope, uint32_t outer) {
    return "{\"type\":\"scope_exit\",\"t\":0,\"thread\":1,\"scope\":" +
           std::to_string(scope) + ",\"outer\":" + std::to_string(outer) + "}\n";
  };
  // Two frames (scope 1) with a render phase (scope 2). Frame 1 leaks block 10 out of
  // render and frees it before the frame ends; frame 2 leaks block 20 out of both.
  const std::string text = std::string(kHeader) + enter(1, 0) + enter(2, 1) +
                           Alloc(10, 64, 2, 0, 1) + Alloc(11, 8, 2, 0, 2) + Free(11, 2, 3) +
                           exit(2, 1) + Free(10, 1, 4) + exit(1, 0) + enter(1, 0) +
                           enter(2, 1) + Alloc(20, 32, 2, 0, 5) + exit(2, 1) + exit(1, 0);
  const auto summary = Analyzer::SummarizeText(text, "frames.jsonl");
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_EQ(summary->retention.size(), 2u);
  const Retention& frame = summary->retention[0];
  const Retention& render = summary->retention[1];
  EXPECT_EQ(frame.scope, 1u);
  EXPECT_EQ(frame.exits, 2u);
  EXPECT_EQ(frame.exits_retaining, 1u);
  EXPECT_EQ(frame.retained_blocks, 1u);
  EXPECT_EQ(frame.retained_bytes, 32u);
  EXPECT_EQ(render.scope, 2u);
  EXPECT_EQ(render.exits, 2u);
  EXPECT_EQ(render.exits_retaining, 2u);
  EXPECT_EQ(render.retained_blocks, 2u);
  EXPECT_EQ(render.retained_bytes, 96u);
}

// A record of thread `thread` (the helpers above write thread 1).
std::string OnThread(uint32_t thread, std::string record) {
  record.replace(record.find("\"thread\":1"), 10, absl::StrCat("\"thread\":", thread));
  return record;
}

// A thread filter counts the blocks its threads allocated, wherever released, resized or
// moved: three threads allocate, each releases and moves the others' blocks, and the test
// follows each thread's live bytes and high-water mark as it writes the records.
TEST(AnalyzerTest, AThreadFilterCountsTheBlocksItsThreadsAllocatedWhereverReleased) {
  std::string text = kHeader;
  struct Counts {
    uint64_t allocated = 0, live = 0, high_water = 0, allocations = 0;
  };
  std::map<uint32_t, Counts> truth;  // by allocating thread
  struct Block {
    uint32_t thread;
    uint64_t addr, size, ticket;
  };
  std::vector<Block> live;
  uint64_t ticket = 0;
  auto grow = [&](uint32_t thread, int64_t by) {
    Counts& c = truth[thread];
    c.live += by;
    c.high_water = std::max(c.high_water, c.live);
  };
  for (uint64_t i = 0; i < 60; ++i) {
    const uint32_t thread = 1 + i % 3;
    const uint32_t other = 1 + (i + 1) % 3;  // releases, resizes and moves others' blocks
    const uint64_t size = 16 + (i * 37) % 200 * (thread == 2 ? 3 : 1);
    const Block b{thread, 1000 + i, size, ++ticket};
    text += OnThread(thread, Alloc(b.addr, b.size, thread, 0, b.ticket));
    truth[thread].allocated += size;
    ++truth[thread].allocations;
    grow(thread, static_cast<int64_t>(size));
    live.push_back(b);
    if (i % 5 == 2) {  // the oldest block grows in place, on another thread
      Block& r = live.front();
      const uint64_t resized = ++ticket;
      text += OnThread(other, Resize(r.addr, r.size + 8, r.ticket, resized));
      truth[r.thread].allocated += 8;
      grow(r.thread, 8);
      r.size += 8;
      r.ticket = resized;
    }
    if (i % 7 == 3) {  // the newest moves, on another thread
      Block& m = live.back();
      const uint64_t out = ++ticket, in = ++ticket;
      text += OnThread(other, Remap(m.addr, m.ticket, out));
      text += OnThread(other, RemapTarget(m.addr + 100000, m.size * 2, in));
      // A move counts the block out and in again, as a new block of its new size.
      truth[m.thread].allocated += m.size * 2;
      ++truth[m.thread].allocations;
      grow(m.thread, -static_cast<int64_t>(m.size));
      grow(m.thread, static_cast<int64_t>(m.size * 2));
      m.addr += 100000;
      m.size *= 2;
      m.ticket = in;
    }
    if (i % 2 == 1) {  // the oldest is released, by another thread
      const Block f = live.front();
      live.erase(live.begin());
      text += OnThread(other, Free(f.addr, f.ticket, ++ticket));
      grow(f.thread, -static_cast<int64_t>(f.size));
    }
  }
  const auto all = Analyzer::SummarizeText(text, "threads.jsonl");
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->unmatched_releases, 0u);
  uint64_t allocated = 0;
  for (const auto& [thread, want] : truth) {
    Analyzer a;
    a.SetThreadFilter([thread = thread](uint32_t t) { return t == thread; });
    CaptureReadStats stats;
    ASSERT_TRUE(ReadCaptureText(text, "threads.jsonl",
                                [&](const CaptureRecord& r) { return a.Apply(r); }, &stats)
                    .ok());
    const CaptureSummary s = a.Finish(stats);
    EXPECT_EQ(s.totals.allocated_bytes, want.allocated) << "thread " << thread;
    EXPECT_EQ(s.totals.allocated_count, want.allocations) << "thread " << thread;
    EXPECT_EQ(s.totals.live_bytes, want.live) << "thread " << thread;
    EXPECT_EQ(s.totals.high_water_bytes, want.high_water) << "thread " << thread;
    // Each thread allocated in its own scope: the others' scopes count nothing.
    EXPECT_EQ(s.scopes.at(thread).allocated_bytes, want.allocated) << "thread " << thread;
    for (const auto& [scope, usage] : s.scopes) {
      if (scope != thread) {
        EXPECT_EQ(usage.allocated_bytes, 0u) << "scope " << scope;
      }
    }
    allocated += s.totals.allocated_bytes;
  }
  EXPECT_EQ(allocated, all->totals.allocated_bytes);
}

// Four threads allocate in five scopes at seven sites; each thread's blocks are resized,
// moved and released by another thread, some freed at once by their own (temporaries),
// some resized and then freed by the thread that resized them (temporaries of another
// thread's block); census entries change. Times grow with the records.
std::string FourThreadCapture() {
  std::string text = kHeader;
  struct Block {
    uint64_t addr, size, ticket;
  };
  std::vector<Block> live;
  uint64_t ticket = 0;
  for (uint64_t i = 0; i < 240; ++i) {
    const uint32_t thread = 1 + (i * 7) % 4;
    const uint32_t other = 1 + (i + 1) % 4;
    const uint32_t scope = 1 + (i / 3) % 5;
    const uint32_t site = (i * 5) % 7;
    const Block b{1000 + i, 16 + (i * 37) % 300 * (thread == 3 ? 4 : 1), ++ticket};
    text += OnThread(thread, Alloc(b.addr, b.size, scope, site, b.ticket));
    if (i % 9 == 4) {  // freed at once by its own thread
      text += OnThread(thread, Free(b.addr, b.ticket, ++ticket));
      continue;
    }
    live.push_back(b);
    if (i % 5 == 2) {  // the oldest grows or shrinks in place, on another thread
      Block& r = live.front();
      const uint64_t resized = ++ticket;
      r.size = i % 2 == 0 ? r.size + 24 : r.size / 2 + 1;
      text += OnThread(other, Resize(r.addr, r.size, r.ticket, resized));
      r.ticket = resized;
    }
    if (i % 7 == 3) {  // the newest moves, on another thread
      Block& m = live.back();
      const uint64_t out = ++ticket, in = ++ticket;
      text += OnThread(other, Remap(m.addr, m.ticket, out));
      m.addr += 100000;
      m.size *= 2;
      m.ticket = in;
      text += OnThread(other, RemapTarget(m.addr, m.size, in));
    }
    if (i % 11 == 5) {
      text += absl::StrCat("{\"type\":\"census\",\"t\":", ticket, ",\"thread\":1,\"label\":",
                           i % 2, ",\"delta\":", 100 + i, "}\n");
    }
    if (i % 3 != 0) {  // the oldest is released, by another thread
      const Block f = live.front();
      live.erase(live.begin());
      text += OnThread(other, Free(f.addr, f.ticket, ++ticket));
    }
  }
  return text;
}

void ExpectSameSummary(const CaptureSummary& got, const CaptureSummary& want,
                       const std::string& what) {
  ExpectSame(got.totals, want.totals, what + " totals");
  EXPECT_TRUE(got.totals == want.totals) << what << " totals' high-water bounds";
  EXPECT_TRUE(got.layers == want.layers) << what << " layers";
  EXPECT_TRUE(got.scopes == want.scopes) << what << " scopes";
  EXPECT_EQ(got.scope_peak_event, want.scope_peak_event) << what;
  ASSERT_EQ(got.attribution.size(), want.attribution.size()) << what;
  for (size_t i = 0; i < got.attribution.size(); ++i) {
    const AllocationAttribution& g = got.attribution[i];
    const AllocationAttribution& w = want.attribution[i];
    const std::string row = absl::StrCat(what, " attribution ", i);
    EXPECT_EQ(std::tie(g.site, g.site_addr, g.scope, g.layer, g.temporaries, g.short_lived),
              std::tie(w.site, w.site_addr, w.scope, w.layer, w.temporaries, w.short_lived))
        << row;
    ExpectSame(g.usage, w.usage, row);
    EXPECT_TRUE(g.usage == w.usage) << row;
  }
  ASSERT_EQ(got.retention.size(), want.retention.size()) << what;
  for (size_t i = 0; i < got.retention.size(); ++i) {
    const Retention& g = got.retention[i];
    const Retention& w = want.retention[i];
    EXPECT_EQ(std::tie(g.scope, g.exits, g.exits_retaining, g.retained_blocks, g.retained_bytes),
              std::tie(w.scope, w.exits, w.exits_retaining, w.retained_blocks, w.retained_bytes))
        << what << " retention " << i;
  }
  const Coverage& gc = got.coverage;
  const Coverage& wc = want.coverage;
  EXPECT_EQ(std::tie(gc.allocated_scoped, gc.allocated_unscoped, gc.live_scoped,
                     gc.live_unscoped, gc.census_bytes, gc.census_entries),
            std::tie(wc.allocated_scoped, wc.allocated_unscoped, wc.live_scoped,
                     wc.live_unscoped, wc.census_bytes, wc.census_entries))
      << what << " coverage";
  EXPECT_EQ(std::tie(got.temporaries, got.temporary_bytes, got.short_lived,
                     got.short_lived_bytes),
            std::tie(want.temporaries, want.temporary_bytes, want.short_lived,
                     want.short_lived_bytes))
      << what << " freed at once";
  EXPECT_EQ(std::tie(got.peak_event_index, got.peak_t),
            std::tie(want.peak_event_index, want.peak_t))
      << what << " peak";
  EXPECT_EQ(std::tie(got.unmatched_releases, got.missed_frees, got.live_blocks, got.events,
                     got.events_applied, got.snapshot_t, got.sampled),
            std::tie(want.unmatched_releases, want.missed_frees, want.live_blocks, want.events,
                     want.events_applied, want.snapshot_t, want.sampled))
      << what;
  EXPECT_EQ(got.scope_paths, want.scope_paths) << what;
  EXPECT_EQ(got.site_addrs, want.site_addrs) << what;
}

// The thread views of one replay (SetThreadViews()) give, view by view, the summary of a
// replay whose thread filter keeps that view's threads; a thread in no view counts in none.
TEST(AnalyzerTest, EachThreadViewOfOneReplayEqualsAThreadFilterReplay) {
  const std::string text = FourThreadCapture();
  Analyzer::ThreadViews views;
  views.count = 3;
  views.view_of = {{3, 0}, {1, 1}};  // thread 3, thread 1, then threads 2 and 4
  views.others = 2;
  const std::vector<Analyzer::ThreadFilter> filters = {
      [](uint32_t t) { return t == 3; }, [](uint32_t t) { return t == 1; },
      [](uint32_t t) { return t == 2 || t == 4; }};
  auto replay = [&](Analyzer& a, std::vector<CaptureSummary>* view_summaries) {
    CaptureReadStats stats;
    EXPECT_TRUE(ReadCaptureText(text, "views.jsonl",
                                [&](const CaptureRecord& r) { return a.Apply(r); }, &stats)
                    .ok());
    return a.Finish(stats, view_summaries);
  };
  Analyzer viewed;
  viewed.SetThreadViews(views);
  std::vector<CaptureSummary> got;
  const CaptureSummary all = replay(viewed, &got);
  ASSERT_EQ(got.size(), 3u);
  ASSERT_EQ(all.unmatched_releases, 0u);
  EXPECT_GT(all.temporaries, 0u);
  EXPECT_GT(all.short_lived, 0u);
  uint64_t allocated = 0, temporaries = 0;
  for (size_t i = 0; i < filters.size(); ++i) {
    Analyzer filtered;
    filtered.SetThreadFilter(filters[i]);
    const CaptureSummary want = replay(filtered, nullptr);
    ExpectSameSummary(got[i], want, absl::StrCat("view ", i));
    allocated += got[i].totals.allocated_bytes;
    temporaries += got[i].temporaries;
  }
  EXPECT_EQ(allocated, all.totals.allocated_bytes);
  EXPECT_EQ(temporaries, all.temporaries);
  // The views leave the replay's own counters as they were.
  Analyzer plain;
  ExpectSameSummary(all, replay(plain, nullptr), "all threads");

  // Without `others`, threads 2 and 4 are in no view.
  views.count = 2;
  views.others.reset();
  Analyzer two;
  two.SetThreadViews(views);
  std::vector<CaptureSummary> both;
  replay(two, &both);
  ASSERT_EQ(both.size(), 2u);
  ExpectSameSummary(both[1], got[1], "thread 1 alone");
}

void ExpectSamePoint(const TimelinePoint& got, const TimelinePoint& want,
                     const std::string& what) {
  EXPECT_EQ(std::tie(got.event, got.t, got.value), std::tie(want.event, want.t, want.value))
      << what;
}

// The timelines of thread views made in one replay (TimelineOptions::views) are those of
// builders whose thread filter keeps each view's threads, point for point, with few points
// per series (buckets merge) and few scope series (the rest as "other scopes").
TEST(AnalyzerTest, EachThreadViewsTimelineOfOneReplayEqualsAThreadFilterTimeline) {
  const std::string text = FourThreadCapture();
  TimelineOptions options;
  options.max_points = 9;
  options.scope_series = 2;
  options.views.count = 2;
  options.views.view_of = {{2, 0}};
  options.views.others = 1;
  const std::vector<Analyzer::ThreadFilter> filters = {[](uint32_t t) { return t == 2; },
                                                       [](uint32_t t) { return t != 2; }};
  CaptureReadStats stats;
  Analyzer counters;
  counters.SetThreadViews(options.views);
  ASSERT_TRUE(ReadCaptureText(text, "views.jsonl",
                              [&](const CaptureRecord& r) { return counters.Apply(r); }, &stats)
                  .ok());
  std::vector<CaptureSummary> view_summaries;
  const CaptureSummary all = counters.Finish(stats, &view_summaries);
  TimelineBuilder viewed(options, all, view_summaries);
  ASSERT_TRUE(ReadCaptureText(text, "views.jsonl",
                              [&](const CaptureRecord& r) { return viewed.Apply(r); })
                  .ok());
  std::vector<Timeline> got;
  viewed.Finish(&got);
  ASSERT_EQ(got.size(), 2u);
  for (size_t v = 0; v < filters.size(); ++v) {
    TimelineOptions one = options;
    one.views = {};
    one.threads = filters[v];
    TimelineBuilder filtered(one, view_summaries[v]);
    ASSERT_TRUE(ReadCaptureText(text, "views.jsonl",
                                [&](const CaptureRecord& r) { return filtered.Apply(r); })
                    .ok());
    const Timeline want = filtered.Finish();
    const Timeline& g = got[v];
    const std::string what = absl::StrCat("view ", v);
    EXPECT_GT(want.events_per_bucket, 1u) << what;
    EXPECT_EQ(std::tie(g.events, g.events_per_bucket, g.first_t, g.last_t, g.scopes_total,
                       g.scopes_drawn, g.census_total, g.census_drawn),
              std::tie(want.events, want.events_per_bucket, want.first_t, want.last_t,
                       want.scopes_total, want.scopes_drawn, want.census_total,
                       want.census_drawn))
        << what;
    EXPECT_EQ(want.scopes_total, 5u) << what;
    ASSERT_EQ(g.series.size(), want.series.size()) << what;
    for (size_t i = 0; i < g.series.size(); ++i) {
      const TimelineSeries& gs = g.series[i];
      const TimelineSeries& ws = want.series[i];
      const std::string series = absl::StrCat(what, " series ", ws.name);
      EXPECT_EQ(std::tie(gs.kind, gs.id, gs.name), std::tie(ws.kind, ws.id, ws.name)) << series;
      ExpectSamePoint(gs.high_water, ws.high_water, series + " high-water");
      ASSERT_EQ(gs.points.size(), ws.points.size()) << series;
      for (size_t p = 0; p < gs.points.size(); ++p) {
        ExpectSamePoint(gs.points[p], ws.points[p], absl::StrCat(series, " point ", p));
      }
    }
    EXPECT_EQ(g.stack_series, want.stack_series) << what;
    EXPECT_EQ(g.stack_values, want.stack_values) << what;
    ASSERT_EQ(g.stack_moments.size(), want.stack_moments.size()) << what;
    for (size_t p = 0; p < g.stack_moments.size(); ++p) {
      ExpectSamePoint(g.stack_moments[p], want.stack_moments[p], absl::StrCat(what, " moment ", p));
    }
  }
}

// Call sites are matched by the name each capture's namer gives them, whatever their ids.
TEST(AnalyzerTest, CompareSitesMatchesCallSitesByNameAcrossCaptures) {
  CaptureSummary before, after;
  auto row = [](uint32_t site, uint32_t scope, uint64_t live, uint64_t allocated) {
    AllocationAttribution a;
    a.site = site;
    a.scope = scope;
    a.usage.live_bytes = live;
    a.usage.allocated_bytes = allocated;
    a.usage.allocated_count = 1;
    a.usage.high_water_bytes = a.usage.high_water_low_bytes = a.usage.high_water_high_bytes =
        allocated;
    return a;
  };
  before.attribution = {row(1, 0, 100, 500), row(2, 0, 40, 40)};
  after.attribution = {row(7, 0, 150, 900), row(8, 3, 250, 300), row(9, 0, 10, 10)};
  const std::map<uint32_t, std::string> before_names = {{1, "parse"}, {2, "gone"}};
  const std::map<uint32_t, std::string> after_names = {{7, "parse"}, {8, "parse"}, {9, "new"}};
  const std::vector<Difference> d = CompareSites(
      before, [&](uint32_t s) { return before_names.at(s); }, after,
      [&](uint32_t s) { return after_names.at(s); });
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].path, "parse");  // 100 -> 150 + 250 live: the largest growth first
  EXPECT_EQ(d[0].live_delta(), 300);
  EXPECT_EQ(d[0].allocated_delta(), 700);
  EXPECT_EQ(d[0].after.allocated_count, 2u);
  EXPECT_EQ(d[1].path, "new");
  EXPECT_EQ(d[1].live_delta(), 10);
  EXPECT_EQ(d[2].path, "gone");
  EXPECT_EQ(d[2].live_delta(), -40);
  // A side's peak is its one row's; the sum of two rows' (sites 7 and 8) has none.
  EXPECT_TRUE(d[0].before_peak_known);
  EXPECT_EQ(d[0].before.high_water_bytes, 500u);
  EXPECT_FALSE(d[0].after_peak_known);
  EXPECT_EQ(d[0].after.high_water_bytes, 0u);
  EXPECT_EQ(d[0].after.high_water_high_bytes, 0u);
  EXPECT_TRUE(d[1].after_peak_known);
  EXPECT_EQ(d[1].after.high_water_bytes, 10u);
  EXPECT_EQ(d[1].before.high_water_bytes, 0u);  // no row: nothing allocated, no peak
  // A snapshot capture holds only the blocks live at its moment: no peak at all.
  after.snapshot_of.taken = true;
  const std::vector<Difference> s = CompareSites(
      before, [&](uint32_t s) { return before_names.at(s); }, after,
      [&](uint32_t s) { return after_names.at(s); });
  for (const Difference& row : s) {
    EXPECT_FALSE(row.after_peak_known && row.after.allocated_count != 0) << row.path;
    EXPECT_EQ(row.after.high_water_bytes, 0u) << row.path;
  }
}

TEST(AnalyzerTest, CompareMatchesScopesByPathAcrossCaptures) {
  CaptureSummary before, after;
  before.scope_paths = {{1, "a"}, {2, "gone"}};
  before.scopes[1].live_bytes = 100;
  before.scopes[2].live_bytes = 10;
  after.scope_paths = {{7, "a"}, {8, "new"}};  // different ids, same path "a"
  after.scopes[7].live_bytes = 400;
  after.scopes[8].live_bytes = 50;
  const std::vector<Difference> d = Compare(before, after);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0].path, "TOTAL");
  EXPECT_EQ(d[1].path, "a");
  EXPECT_EQ(d[1].live_delta(), 300);
  EXPECT_EQ(d[2].path, "new");
  EXPECT_EQ(d[2].live_delta(), 50);
  EXPECT_EQ(d[3].path, "gone");
  EXPECT_EQ(d[3].live_delta(), -10);
}

TEST(AnalyzerTest, TemporariesAndCoverage) {
  std::string text = std::string(kHeader) + Alloc(10, 64, 0, 0, 1) + Free(10, 1, 2);
  text += Alloc(20, 100, 2, 1, 3);
  for (int i = 0; i < 20; ++i) {  // the long-lived block's thread keeps working
    text += Alloc(1000 + i, 1, 2, 1, 100 + i) + Free(1000 + i, 100 + i, 200 + i);
  }
  text += Free(20, 3, 4);
  // Label 0 as captures from before census changes have it: each line the new value.
  text += "{\"type\":\"census\",\"t\":0,\"thread\":1,\"label\":0,\"bytes\":300}\n";
  text += "{\"type\":\"census\",\"t\":0,\"thread\":1,\"label\":0,\"bytes\":500}\n";
  // Label 1 as memtrace writes it: each line a change, two threads' in one epoch.
  text += "{\"type\":\"census\",\"t\":0,\"thread\":1,\"label\":1,\"delta\":700}\n";
  text += "{\"type\":\"census\",\"t\":0,\"thread\":2,\"label\":1,\"delta\":-200}\n";
  text += "{\"type\":\"census\",\"t\":0,\"thread\":1,\"label\":1,\"delta\":50}\n";
  text += Alloc(30, 7, 2, 1, 5);  // live at the end, scoped
  const auto summary = Analyzer::SummarizeText(text, "tmp.jsonl");
  ASSERT_TRUE(summary.ok()) << summary.status();
  // Each of block 10 and the 20 one-byte blocks is freed right after its allocation: a
  // temporary (no allocation between) and short-lived (within 8 of the thread's events).
  EXPECT_EQ(summary->temporaries, 21u);
  EXPECT_EQ(summary->temporary_bytes, 64u + 20u);
  EXPECT_EQ(summary->short_lived, 21u);
  EXPECT_EQ(summary->short_lived_bytes, 64u + 20u);
  const Coverage& c = summary->coverage;
  EXPECT_EQ(c.allocated_unscoped, 64u);
  EXPECT_EQ(c.allocated_scoped, 100u + 20u + 7u);
  EXPECT_EQ(c.live_scoped, 7u);
  EXPECT_EQ(c.live_unscoped, 0u);
  EXPECT_EQ(c.census_bytes, 500 + 550)
      << "an older capture's value replaces the entry's; a change adds to it";
  EXPECT_EQ(c.census_entries, 2u);
}

// Whatever allocator call comes between a block's allocation and its release ends its
// chance to be a temporary: a release of a block the capture never saw allocated, a resize
// of one, an arena reset of another layer. A block released at once stays one.
TEST(AnalyzerTest, AnyAllocatorCallBetweenEndsATemporary) {
  std::string text = kHeader;
  text += Alloc(10, 8, 0, 0, 1) + Free(999, 500, 2) + Free(10, 1, 3);        // unknown free
  text += Alloc(20, 8, 0, 0, 4) + Resize(998, 16, 501, 5) + Free(20, 4, 6);  // unknown resize
  text += Alloc(30, 8, 0, 0, 7) +  // another layer's reset
          "{\"type\":\"arena_reset\",\"t\":8,\"thread\":1,\"layer\":1}\n" + Free(30, 7, 9);
  text += Alloc(40, 8, 0, 0, 10) + Free(40, 10, 11);                          // at once
  const auto s = Analyzer::SummarizeText(text, "between.jsonl");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->unmatched_releases, 2u);
  EXPECT_EQ(s->totals.live_count, 0u);
  EXPECT_EQ(s->temporaries, 1u) << "only block 40, freed by the call after its allocation";
}

// The two kinds of blocks freed at once, on a sequence of two threads' allocations,
// resizes and frees. The test derives both counts from the sequence it writes: a free or
// a resize is a temporary when its thread's last allocator call was the allocation or
// resize of that block, with no release between (heaptrack's definition, which takes a
// realloc for a free and an allocation, here per thread), and a free is short-lived when
// the thread that allocated the block frees it within 8 of its own events.
TEST(AnalyzerTest, TemporariesAreHeaptracksAndShortLivedBlocksAreFreedWithinEightEvents) {
  enum Kind { kAllocOp, kResizeOp, kFreeOp };
  struct Op {
    uint32_t thread;
    Kind kind;
    int block;
  };
  std::vector<Op> ops = {
      {1, kAllocOp, 0}, {1, kFreeOp, 0},                     // at once
      {1, kAllocOp, 1}, {2, kAllocOp, 2}, {1, kFreeOp, 1},  // another thread between
      {1, kAllocOp, 3}, {1, kAllocOp, 4}, {1, kFreeOp, 3},  // an allocation between
      {1, kFreeOp, 4},                                       // a release between
      {1, kAllocOp, 5}, {1, kAllocOp, 6}, {1, kResizeOp, 5}, {1, kFreeOp, 5},  // resized last
      {1, kAllocOp, 7}, {2, kFreeOp, 7},                     // freed by another thread
      {2, kFreeOp, 2}, {1, kFreeOp, 6},
      {1, kAllocOp, 8}, {1, kResizeOp, 8}, {1, kResizeOp, 8}, {1, kFreeOp, 8}};  // 3 at once
  // Nine blocks, then one freed after nine frees: neither (releases between).
  for (int b = 10; b < 19; ++b) ops.push_back({1, kAllocOp, b});
  ops.push_back({1, kAllocOp, 20});
  for (int b = 10; b < 19; ++b) ops.push_back({1, kFreeOp, b});
  ops.push_back({1, kFreeOp, 20});

  struct Live {
    uint32_t thread;
    uint64_t first_ticket, last_ticket, size, thread_event;
  };
  std::map<int, Live> live;
  std::map<uint32_t, uint64_t> events;      // per thread
  std::map<uint32_t, int> last_allocation;  // per thread: the block, or -1
  uint64_t ticket = 0, temporaries = 0, temporary_bytes = 0, short_lived = 0;
  std::string text = kHeader;
  auto line = [](const char* type, uint32_t thread, int block, uint64_t ticket,
                 const std::string& rest) {
    return absl::StrCat("{\"type\":\"", type, "\",\"t\":", ticket, ",\"thread\":", thread,
                        ",\"addr\":\"0x", 1000 + block, "\",\"layer\":0", rest,
                        ",\"ticket\":", ticket, "}\n");
  };
  for (const Op& op : ops) {
    ++events[op.thread];
    ++ticket;
    if (op.kind == kAllocOp) {
      const uint64_t size = 10 + op.block;
      live[op.block] = Live{op.thread, ticket, ticket, size, events[op.thread]};
      last_allocation[op.thread] = op.block;
      text += line("alloc", op.thread, op.block, ticket,
                   absl::StrCat(",\"size\":", size, ",\"scope\":0,\"site\":0"));
    } else if (op.kind == kResizeOp) {
      Live& b = live.at(op.block);
      if (last_allocation.count(op.thread) && last_allocation[op.thread] == op.block) {
        ++temporaries;
        temporary_bytes += b.size;
      }
      b.size += 100;
      text += line("resize", op.thread, op.block, ticket,
                   absl::StrCat(",\"size\":", b.size, ",\"of\":", b.last_ticket));
      b.last_ticket = ticket;
      last_allocation[op.thread] = op.block;
    } else {
      const Live b = live.at(op.block);
      live.erase(op.block);
      text += line("free", op.thread, op.block, ticket, absl::StrCat(",\"of\":", b.last_ticket));
      if (last_allocation.count(op.thread) && last_allocation[op.thread] == op.block) {
        ++temporaries;
        temporary_bytes += b.size;
      }
      last_allocation[op.thread] = -1;  // this release is the thread's last call now
      if (b.thread == op.thread && events[op.thread] - b.thread_event <= 8) ++short_lived;
    }
  }
  const auto s = Analyzer::SummarizeText(text, "freed_at_once.jsonl");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->unmatched_releases, 0u);
  EXPECT_EQ(s->totals.live_count, 0u);
  // The sequence has each kind: both, a temporary only, short-lived only, neither.
  ASSERT_GT(temporaries, 0u);
  ASSERT_GT(short_lived, 0u);
  ASSERT_NE(temporaries, short_lived);
  EXPECT_EQ(s->temporaries, temporaries);
  EXPECT_EQ(s->temporary_bytes, temporary_bytes);
  EXPECT_EQ(s->short_lived, short_lived);
  uint64_t by_site_temporaries = 0, by_site_short_lived = 0;
  for (const AllocationAttribution& a : s->attribution) {
    by_site_temporaries += a.temporaries;
    by_site_short_lived += a.short_lived;
  }
  EXPECT_EQ(by_site_temporaries, temporaries);
  EXPECT_EQ(by_site_short_lived, short_lived);
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = TempPath(name);
  std::ofstream(path) << text;
  return path;
}

std::string ScopeLine(uint32_t id, const std::string& path) {
  return "{\"type\":\"scope\",\"id\":" + std::to_string(id) + ",\"parent\":0,\"name\":\"" +
         path + "\",\"path\":\"" + path + "\"}\n";
}

std::string ScopeEvent(const char* type, uint32_t scope, int64_t t) {
  return std::string("{\"type\":\"") + type + "\",\"t\":" + std::to_string(t) +
         ",\"thread\":1,\"scope\":" + std::to_string(scope) + ",\"outer\":0}\n";
}

TEST(AnalyzerTest, ParseSnapshotPointAcceptsEachFormAndRejectsJunk) {
  EXPECT_EQ(ParseSnapshotPoint("end")->kind, SnapshotPoint::Kind::kEnd);
  EXPECT_EQ(ParseSnapshotPoint("12")->event, 12u);
  EXPECT_EQ(ParseSnapshotPoint("event=7")->event, 7u);
  EXPECT_EQ(ParseSnapshotPoint("time=500")->time_ns, 500);
  const auto scope = ParseSnapshotPoint("scope-exit=frame/render#3");
  ASSERT_TRUE(scope.ok());
  EXPECT_EQ(scope->scope, "frame/render");
  EXPECT_EQ(scope->nth, 3u);
  EXPECT_EQ(ParseSnapshotPoint("scope-exit=a#b")->nth, 1u);
  EXPECT_EQ(ParseSnapshotPoint("scope-exit=a#b")->scope, "a#b") << "a '#' in a path is kept";
  for (const char* bad : {"", "x", "event=-1", "time=abc", "scope-exit=", "scope-exit=a#0"}) {
    const auto p = ParseSnapshotPoint(bad);
    EXPECT_FALSE(p.ok()) << bad;
    if (!p.ok()) {
      EXPECT_NE(p.status().message().find("scope-exit=PATH#N"), std::string::npos);
    }
  }
}

TEST(AnalyzerTest, ParseSnapshotPointReadsATimeWithAUnitAndABareNumberAsNanoseconds) {
  const std::pair<const char*, int64_t> expected[] = {
      {"time=1.5s", 1'500'000'000}, {"time=250ms", 250'000'000}, {"time=40us", 40'000},
      {"time=100ns", 100},          {"time=2m", 120'000'000'000}, {"time=1500", 1500},
      {"time=0", 0},                {"time=0s", 0}};
  for (const auto& [text, ns] : expected) {
    const auto p = ParseSnapshotPoint(text);
    ASSERT_TRUE(p.ok()) << text << ": " << p.status();
    EXPECT_EQ(p->kind, SnapshotPoint::Kind::kTime) << text;
    EXPECT_EQ(p->time_ns, ns) << text;
  }
  for (const char* bad : {"time=1.5", "time=3parsecs", "time=5 s", "time=-1s", "time=inf",
                          "time=", "time=1e30h", "event=1.5s"}) {
    const auto p = ParseSnapshotPoint(bad);
    EXPECT_FALSE(p.ok()) << bad;
    if (!p.ok()) {
      EXPECT_NE(p.status().message().find("1.5s, 250ms"), std::string::npos) << p.status();
    }
  }
}

TEST(AnalyzerTest, SnapshotAtATimeAndAtAScopeExit) {
  // Header started at t=1000; events at t = 1000 + ticket (the helpers use t = ticket).
  std::string text =
      "{\"type\":\"header\",\"schema_version\":1,\"started_unix_ns\":1000}\n" +
      ScopeLine(1, "frame");
  text += ScopeEvent("scope_enter", 1, 1001) + Alloc(10, 100, 1, 0, 1002) +
          ScopeEvent("scope_exit", 1, 1003);                           // 1st exit: 100 live
  text += ScopeEvent("scope_enter", 1, 1004) + Alloc(20, 50, 1, 0, 1005) +
          Free(10, 1002, 1006) + ScopeEvent("scope_exit", 1, 1007);   // 2nd exit: 50 live
  text += Alloc(30, 7, 0, 0, 1008);
  const std::string path = WriteFile("points.jsonl", text);
  auto at = [&](const std::string& point) {
    auto p = ParseSnapshotPoint(point);
    EXPECT_TRUE(p.ok()) << p.status();
    auto s = Analyzer::Summarize(path, *p);
    EXPECT_TRUE(s.ok()) << s.status();
    return *s;
  };
  EXPECT_EQ(at("time=5").totals.live_bytes, 150u) << "5 ns after the start: t <= 1005";
  EXPECT_EQ(at("time=5").totals.allocated_count, 2u);
  EXPECT_EQ(at("time=1002").totals.live_bytes, 100u) << "absolute unix ns";
  EXPECT_EQ(at("time=1002").events_applied, 2u);
  EXPECT_EQ(at("scope-exit=frame").totals.live_bytes, 100u);
  EXPECT_EQ(at("scope-exit=frame").events_applied, 3u);
  EXPECT_EQ(at("scope-exit=frame#2").totals.live_bytes, 50u);
  EXPECT_TRUE(at("scope-exit=frame#2").snapshot_reached);
  EXPECT_FALSE(at("scope-exit=frame#3").snapshot_reached);
  EXPECT_EQ(at("end").totals.live_bytes, 57u);
  EXPECT_EQ(at("event=2").totals.live_bytes, 100u);
  const std::vector<Difference> d = Compare(at("scope-exit=frame"), at("scope-exit=frame#2"));
  EXPECT_EQ(d[0].live_delta(), -50);
}

TEST(AnalyzerTest, SampledCapturesAreScaledByWeight) {
  std::string text = kSampledHeader;
  text += "{\"type\":\"alloc\",\"t\":1,\"thread\":1,\"addr\":\"0x10\",\"size\":100,\"layer\":0,"
          "\"scope\":0,\"site\":0,\"ticket\":1,\"weight\":40.96}\n";
  text += Alloc(20, 8192, 0, 1, 2);  // weight 1: recorded as it is
  text += Free(10, 1, 3);
  const auto s = Analyzer::SummarizeText(text, "sampled.jsonl");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->sampled);
  EXPECT_EQ(s->sample_interval_bytes, 4096u);
  EXPECT_EQ(s->source, "preload");
  EXPECT_EQ(s->totals.allocated_count, 41u + 1u);
  EXPECT_EQ(s->totals.allocated_bytes, 4096u + 8192u);
  EXPECT_EQ(s->totals.freed_count, 41u);
  EXPECT_EQ(s->totals.live_bytes, 8192u);
  EXPECT_EQ(s->totals.live_count, 1u);
  EXPECT_EQ(s->totals.high_water_bytes, 4096u + 8192u);
  EXPECT_EQ(s->live_blocks, 1u);
  const auto unsampled = Analyzer::SummarizeText(std::string(kHeader) + Alloc(1, 2, 0, 0, 1), "u");
  ASSERT_TRUE(unsampled.ok());
  EXPECT_FALSE(unsampled->sampled);
}

// Counts are each row's running sum of weights, rounded: ten blocks of weight 1.5 at one
// site are 15 allocations (a weight rounded per block would make 20), and a row never
// strays more than half an allocation from its sum. A moved block keeps its site and
// scope and carries its own weight (the interposer drew it anew on its new size).
TEST(AnalyzerTest, SampledCountsFollowTheSumOfWeights) {
  const std::string header = kSampledHeader;
  auto weighted = [](const char* type, uint64_t addr, uint64_t size, uint32_t site,
                     uint64_t ticket, double weight) {
    return absl::StrCat("{\"type\":\"", type, "\",\"t\":", ticket,
                        ",\"thread\":1,\"addr\":\"0x", absl::Hex(addr), "\",\"size\":", size,
                        ",\"layer\":0,\"scope\":0,\"site\":", site, ",\"ticket\":", ticket,
                        ",\"weight\":", weight, "}\n");
  };
  std::string text = header;
  uint64_t ticket = 0;
  for (uint64_t i = 0; i < 10; ++i) {
    text += weighted("alloc", 0x1000 + 0x100 * i, 100, 1, ++ticket, 1.5);
    text += weighted("alloc", 0x9000 + 0x100 * i, 100, 2, ++ticket, 1.2);
  }
  // The block at 0x1000 (ticket 1, site 1) moves to 0x5000, where its new size has
  // weight 1.25: counted at site 1, not at site 3 named by the record.
  text += absl::StrCat("{\"type\":\"remap\",\"t\":30,\"thread\":1,\"addr\":\"0x1000\","
                       "\"layer\":0,\"of\":1,\"ticket\":30}\n");
  text += weighted("remap_target", 0x5000, 200, 3, 31, 1.25);
  const auto s = Analyzer::SummarizeText(text, "sampled.jsonl");
  ASSERT_TRUE(s.ok()) << s.status();
  std::map<uint32_t, UsageCounters> by_site;
  for (const AllocationAttribution& a : s->attribution) by_site[a.site].AddCounts(a.usage);
  ASSERT_EQ(by_site.size(), 2u);
  // Site 1: 10 * 1.5 + 1.25 = 16.25; site 2: 10 * 1.2 = 12.
  EXPECT_EQ(by_site[1].allocated_count, 16u);
  EXPECT_EQ(by_site[2].allocated_count, 12u);
  EXPECT_EQ(by_site[1].allocated_bytes, 10u * 150u + 250u);
  EXPECT_EQ(by_site[2].allocated_bytes, 10u * 120u);
  EXPECT_EQ(s->totals.allocated_count, 28u);
  EXPECT_EQ(s->totals.freed_count, 2u);  // the moved block's count (its first, 1.5: 2)
  EXPECT_EQ(s->totals.live_count, 26u);
}

TEST(AnalyzerTest, KeepsSiteFramesAndModules) {
  std::string text = std::string(kHeader) +
                     "{\"type\":\"module\",\"path\":\"/bin/x\",\"start\":\"0x1000\",\"end\":"
                     "\"0x2000\",\"offset\":\"0x0\",\"build_id\":\"ab\"}\n"
                     "{\"type\":\"site\",\"id\":3,\"addr\":\"0x1010\",\"frames\":[\"0x1010\","
                     "\"0x1020\"]}\n" +
                     Alloc(10, 8, 0, 3, 1);
  const auto s = Analyzer::SummarizeText(text, "frames.jsonl");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->modules.size(), 1u);
  EXPECT_EQ(s->modules[0].path, "/bin/x");
  EXPECT_EQ(s->modules[0].build_id, "ab");
  ASSERT_EQ(s->site_frames.count(3), 1u);
  EXPECT_EQ(s->site_frames.at(3), (std::vector<uint64_t>{0x1010, 0x1020}));
}

// A capture without its trailer is either cut short or still being written: a running
// writer holds the file's capture lock (sinks/capture_lock.h), here taken by the test.
TEST(AnalyzerTest, ACaptureWhoseWriterHoldsItsLockIsBeingWrittenNotTruncated) {
  const std::string path = WriteFile("being_written.jsonl",
                                     std::string(kHeader) + Alloc(10, 100, 1, 0, 1));
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0);
  const auto held = Analyzer::Summarize(path);
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_FALSE(held->has_trailer);
  EXPECT_TRUE(held->being_written);
  close(fd);  // the writer is gone, and the trailer never came
  const auto cut = Analyzer::Summarize(path);
  ASSERT_TRUE(cut.ok()) << cut.status();
  EXPECT_FALSE(cut->being_written);
}

TEST(AnalyzerTest, EachScopePeakIsItsOwnHighWaterComposition) {
  std::string text = std::string(kHeader) + ScopeLine(1, "load") + ScopeLine(2, "render");
  text += Alloc(10, 100, 1, 0, 1) + Alloc(11, 60, 1, 1, 2);   // load peaks at 160 (event 2)
  text += Free(10, 1, 3) + Free(11, 2, 4);
  text += Alloc(20, 30, 2, 0, 5) + Alloc(21, 400, 1, 0, 6);   // load's own peak is later: 400
  text += Free(20, 5, 7);
  const std::string path = WriteFile("scope_peaks.jsonl", text);
  const auto peaks = Analyzer::ScopePeaks(path, {});
  ASSERT_TRUE(peaks.ok()) << peaks.status();
  ASSERT_EQ(peaks->size(), 2u);
  EXPECT_EQ((*peaks)[0].scope, 1u);
  EXPECT_EQ((*peaks)[0].event_index, 6u);
  EXPECT_EQ((*peaks)[0].composition.live_bytes, 400u);
  EXPECT_EQ((*peaks)[0].total_live_bytes, 430u);
  ASSERT_EQ((*peaks)[0].composition.by_site.size(), 1u);
  EXPECT_EQ((*peaks)[1].scope, 2u);
  EXPECT_EQ((*peaks)[1].event_index, 5u);
  EXPECT_EQ((*peaks)[1].composition.live_bytes, 30u);
  EXPECT_EQ((*peaks)[1].total_live_bytes, 30u);
  const auto only = Analyzer::ScopePeaks(path, {2});
  ASSERT_TRUE(only.ok());
  ASSERT_EQ(only->size(), 1u);
  EXPECT_EQ((*only)[0].scope, 2u);

  // Both kinds of peak in one reading, from a summary made first (`memtrace peak`): the
  // global one (430 after event 6, which is also load's) and each scope's.
  const auto summary = Analyzer::Summarize(path);
  ASSERT_TRUE(summary.ok()) << summary.status();
  const auto both = Analyzer::PeaksOf(path, *summary, {});
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->global.event_index, 6u);
  EXPECT_EQ(both->global.live_bytes, 430u);
  ASSERT_EQ(both->global.by_scope.size(), 2u);
  EXPECT_EQ(both->global.by_scope[0], (std::pair<uint32_t, uint64_t>{1, 400}));
  ASSERT_EQ(both->scopes.size(), 2u);
  EXPECT_EQ(both->scopes[1].event_index, 5u);
  EXPECT_EQ(both->scopes[1].composition.live_bytes, 30u);

  // A summary of a longer capture than the file now holds: a clear error, not the
  // composition of some other moment.
  CaptureSummary longer = *summary;
  longer.peak_event_index = 99;
  const auto stale = Analyzer::PeaksOf(path, longer, {});
  ASSERT_FALSE(stale.ok());
  EXPECT_NE(stale.status().message().find("fewer events (7)"), std::string::npos)
      << stale.status();
}

// FourThreadCapture(), then 40 instances of a scope on thread 1, each allocating at one of
// three sites and half of them leaving their block live (retention, scope peaks).
std::string ScopedFourThreadCapture() {
  std::string text = FourThreadCapture() + ScopeLine(9, "outer");
  uint64_t t = 100000;
  for (uint64_t i = 0; i < 40; ++i) {
    text += ScopeEvent("scope_enter", 9, ++t);
    const uint64_t ticket = ++t;
    text += Alloc(500000 + i, 64 + (i * 13) % 50, 9, static_cast<uint32_t>(i % 3), ticket);
    if (i % 2 == 1) text += Free(500000 + i, ticket, ++t);
    text += ScopeEvent("scope_exit", 9, ++t);
  }
  return text;
}

// ApplyBatch() asks for each event's block a few events before applying it: the summary
// is that of Apply() record by record, at the end and at snapshot points inside the
// capture, with cross-thread frees, resizes, moves, census changes and scope instances
// whose blocks outlive them, over batches cut anywhere.
TEST(AnalyzerTest, ApplyingBatchesGivesApplysSummary) {
  const std::string text = ScopedFourThreadCapture();
  for (const char* point : {"end", "event=1", "event=250", "event=600", "scope-exit=outer#7"}) {
    const absl::StatusOr<SnapshotPoint> p = ParseSnapshotPoint(point);
    ASSERT_TRUE(p.ok()) << p.status();
    // The state after each record: events applied and live bytes.
    std::vector<std::pair<uint64_t, uint64_t>> want_states;
    Analyzer one;
    one.StopAt(*p);
    CaptureReadStats one_stats;
    ASSERT_TRUE(ReadCaptureText(
                    text, "one.jsonl",
                    [&](const CaptureRecord& r) {
                      absl::Status s = one.Apply(r);
                      want_states.emplace_back(one.events_applied(),
                                               one.state().totals.live_bytes);
                      return s;
                    },
                    &one_stats)
                    .ok());
    const CaptureSummary want = one.Finish(one_stats);
    EXPECT_GT(want.events_applied, 0u) << point;
    std::vector<CaptureRecord> records;
    CaptureReadStats stats;
    ASSERT_TRUE(ReadCaptureText(
                    text, "batches.jsonl",
                    [&](const CaptureRecord& r) {
                      records.push_back(r);
                      return absl::OkStatus();
                    },
                    &stats)
                    .ok());
    for (size_t cut : {size_t{1}, size_t{7}, size_t{17}, size_t{100}, records.size()}) {
      Analyzer a;
      a.StopAt(*p);
      std::vector<std::pair<uint64_t, uint64_t>> states;
      auto after = [&](const CaptureRecord&) {
        states.emplace_back(a.events_applied(), a.state().totals.live_bytes);
        return absl::OkStatus();
      };
      for (size_t i = 0; i < records.size(); i += cut) {
        const size_t n = std::min(cut, records.size() - i);
        ASSERT_TRUE(a.ApplyBatch(std::span<const CaptureRecord>(&records[i], n), after).ok());
      }
      const std::string what = absl::StrCat(point, ", batches of ", cut);
      EXPECT_EQ(states, want_states) << what << ": the state right after each record";
      ExpectSameSummary(a.Finish(stats), want, what);
    }
  }
}

// The same over a live set large enough (more than Analyzer::kAheadFromBlocks blocks) for
// ApplyBatch() to ask for each event's slot ahead: 40,000 blocks, then half of them
// released in another order, resized or freed twice, at addresses that come back.
// 40,000 allocations, half of them freed in another order, some twice, some of their
// addresses reused: more blocks live than ApplyBatch() prefetches from. No header.
std::string LargeLiveSetEvents() {
  std::string text;
  uint64_t ticket = 0;
  std::vector<uint64_t> tickets;
  for (uint64_t i = 0; i < 40000; ++i) {
    tickets.push_back(++ticket);
    text += Alloc(0x100000 + 64 * i, 16 + i % 48, 0, static_cast<uint32_t>(i % 7), ticket);
  }
  for (uint64_t i = 0; i < 40000; i += 2) {
    const uint64_t j = (i * 7919) % 40000;  // another order
    text += Free(0x100000 + 64 * j, tickets[j], ++ticket);
    if (j % 3 == 0) text += Free(0x100000 + 64 * j, tickets[j], ++ticket);  // twice
    if (j % 5 == 0) text += Alloc(0x100000 + 64 * j, 24, 0, 1, ++ticket);   // reused
  }
  return text;
}

TEST(AnalyzerTest, ApplyingBatchesOverALargeLiveSetGivesApplysSummary) {
  const std::string text = kHeader + LargeLiveSetEvents();
  std::vector<CaptureRecord> records;
  CaptureReadStats stats;
  Analyzer one;
  ASSERT_TRUE(ReadCaptureText(
                  text, "large.jsonl",
                  [&](const CaptureRecord& r) {
                    records.push_back(r);
                    return one.Apply(r);
                  },
                  &stats)
                  .ok());
  const CaptureSummary want = one.Finish(stats);
  ASSERT_GT(want.live_blocks, 20000u);
  ASSERT_GT(want.unmatched_releases, 0u);
  Analyzer batched;
  for (size_t i = 0; i < records.size(); i += kCaptureBatchRecords) {
    const size_t n = std::min(kCaptureBatchRecords, records.size() - i);
    ASSERT_TRUE(batched.ApplyBatch(std::span<const CaptureRecord>(&records[i], n)).ok());
  }
  ExpectSameSummary(batched.Finish(stats), want, "large live set");
}

// Replaying a file sizes the ledger's tables for the most blocks its trailer shows live
// (Analyzer::ReserveForPeak()). That is a hint: the summary is the one a replay without it
// gives, whether the trailer's count is right, in its timeline only, or far too large (a
// damaged trailer, which must not size tables beyond what the file can hold).
TEST(AnalyzerTest, TablesSizedFromTheTrailerLeaveTheSummaryAsItIs) {
  const std::string events = LargeLiveSetEvents();
  // The trailer's totals; layer 0's counts, and those of a layer 1 when `other` is not 0.
  const auto trailer = [](uint64_t live_count, uint64_t sampled_count, uint64_t allocations,
                          uint64_t other) {
    const auto layer = [&](int id, uint64_t count) {
      return absl::StrCat("{\"id\":", id, ",\"name\":\"heap\",\"usage\":{\"live_count\":",
                          live_count, ",\"allocated_count\":", count, "}}");
    };
    return absl::StrCat(
        "{\"type\":\"trailer\",\"complete\":true,\"totals\":{\"live_count\":", live_count,
        ",\"allocated_count\":", allocations, "},\"layers\":[", layer(0, allocations),
        other != 0 ? "," + layer(1, other) : "", "],\"timeline\":{\"columns\":"
        "[\"t\",\"rss_bytes\",\"live_bytes\",\"live_count\"],\"every\":1,\"rows\":[[1,0,0,",
        sampled_count, "]]}}\n");
  };
  const std::string path = TempPath("sized_from_trailer.jsonl");
  constexpr uint64_t kHuge = uint64_t{1} << 62;
  for (const auto& [what, live_count, sampled_count, allocations, other] :
       {std::tuple{"the peak at the end", uint64_t{40000}, uint64_t{0}, uint64_t{44000},
                   uint64_t{0}},
        std::tuple{"the peak in the timeline", uint64_t{24000}, uint64_t{40000},
                   uint64_t{44000}, uint64_t{0}},
        std::tuple{"a small peak", uint64_t{100}, uint64_t{100}, uint64_t{44000},
                   uint64_t{0}},
        // Damaged: more blocks than the file can hold, and layers whose allocations add
        // up past 2^64.
        std::tuple{"a damaged trailer", kHuge, kHuge, kHuge, uint64_t{0}},
        std::tuple{"damaged layers", uint64_t{40000}, kHuge, kHuge, ~uint64_t{0} - 5}}) {
    const std::string text =
        kHeader + events + trailer(live_count, sampled_count, allocations, other);
    const absl::StatusOr<TrailerBlocks> t = ParseTrailer(text.substr(text.rfind("{\"type\"")));
    ASSERT_TRUE(t.ok()) << what << ": " << t.status();
    ASSERT_TRUE(t->has_totals && t->layer_usage.count(0) == 1 && t->timeline.rows.size() == 1)
        << what << ": the trailer does not say what the test means it to";
    const absl::StatusOr<CaptureSummary> want = Analyzer::SummarizeText(text, "text");
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_GT(want->live_blocks, 20000u);
    std::ofstream(path) << text;
    const absl::StatusOr<CaptureSummary> got = Analyzer::Summarize(path);
    ASSERT_TRUE(got.ok()) << what << ": " << got.status();
    ExpectSameSummary(*got, *want, what);
    EXPECT_EQ(got->live_blocks, want->live_blocks) << what;
    EXPECT_EQ(got->unmatched_releases, want->unmatched_releases) << what;
  }
}

// SummarizeWithPeaks() gives in one reading what Summarize() and PeaksOf() give in two:
// the summary, the global moment's composition and every scope's, on a capture with
// cross-thread frees, resizes, moves, census changes and scope instances.
//
// The second capture adds 300 call sites in three scopes, more than the logs' tables of
// recent entries hold, allocated and freed in an order that keeps them apart.
std::string ManySitesCapture() {
  std::string text = ScopedFourThreadCapture() + ScopeLine(10, "a") + ScopeLine(11, "b");
  uint64_t t = 200000;
  std::vector<std::pair<uint64_t, uint64_t>> live;  // address, ticket
  for (uint64_t i = 0; i < 900; ++i) {
    const uint64_t ticket = ++t;
    const uint64_t addr = 700000 + 16 * i;
    text += Alloc(addr, 32 + (i * 31) % 300, static_cast<uint32_t>(9 + i % 3),
                  static_cast<uint32_t>((i * 37) % 300), ticket);
    live.emplace_back(addr, ticket);
    if (i % 4 == 3) {  // free one from far back
      const auto [a, k] = live[(i * 53) % live.size()];
      text += Free(a, k, ++t);
    }
  }
  return text;
}

TEST(AnalyzerTest, OneReadingGivesThePeaksOfTwo) {
  for (const auto& [name, text] : {std::pair{"four threads", ScopedFourThreadCapture()},
                                   std::pair{"many sites", ManySitesCapture()}}) {
    SCOPED_TRACE(name);
    const std::string path = WriteFile("one_reading.jsonl", text);
    const absl::StatusOr<CaptureSummary> summary = Analyzer::Summarize(path);
    ASSERT_TRUE(summary.ok()) << summary.status();
    const absl::StatusOr<Analyzer::Peaks> two = Analyzer::PeaksOf(path, *summary, {});
    ASSERT_TRUE(two.ok()) << two.status();
    const absl::StatusOr<Analyzer::SummaryAndPeaks> one = Analyzer::SummarizeWithPeaks(path);
    ASSERT_TRUE(one.ok()) << one.status();
    ExpectSameSummary(one->summary, *summary, "summary");
    auto same = [](const PeakComposition& got, const PeakComposition& want,
                   const std::string& what) {
      EXPECT_EQ(std::tie(got.event_index, got.t, got.live_bytes, got.by_scope, got.by_site),
                std::tie(want.event_index, want.t, want.live_bytes, want.by_scope, want.by_site))
          << what;
    };
    EXPECT_GT(two->global.by_scope.size(), 1u);
    same(one->peaks.global, two->global, "global");
    ASSERT_EQ(one->peaks.scopes.size(), two->scopes.size());
    ASSERT_GT(two->scopes.size(), 2u);
    for (size_t i = 0; i < two->scopes.size(); ++i) {
      const ScopePeak& got = one->peaks.scopes[i];
      const ScopePeak& want = two->scopes[i];
      const std::string what = absl::StrCat("scope ", want.scope);
      EXPECT_EQ(std::tie(got.scope, got.event_index, got.t, got.total_live_bytes),
                std::tie(want.scope, want.event_index, want.t, want.total_live_bytes))
          << what;
      same(got.composition, want.composition, what);
    }
  }
}

// A block allocated inside a scope and moved by a remap whose target a capture puts in
// another layer is still live when the scope exits: retention follows it into that layer.
TEST(AnalyzerTest, RetentionFollowsAMoveIntoAnotherLayer) {
  std::string text = std::string(kHeader) + ScopeLine(1, "s") + ScopeEvent("scope_enter", 1, 1);
  text += Alloc(16, 64, 1, 0, 2);
  text += Remap(16, 2, 3);
  text += "{\"type\":\"remap_target\",\"t\":4,\"thread\":1,\"addr\":\"0x32\",\"size\":64,"
          "\"layer\":1,\"scope\":1,\"site\":0,\"ticket\":4}\n";
  text += ScopeEvent("scope_exit", 1, 5);
  const absl::StatusOr<CaptureSummary> s = Analyzer::SummarizeText(text, "moved.jsonl");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->totals.live_bytes, 64u);
  EXPECT_EQ(s->unmatched_releases, 0u);
  ASSERT_EQ(s->retention.size(), 1u);
  EXPECT_EQ(s->retention[0].retained_blocks, 1u);
  EXPECT_EQ(s->retention[0].retained_bytes, 64u);
}

// A sampled block resized by a record that names it by ticket, while an older block is set
// aside at its address, and whose own ticket is 0 (a hand-written capture): the new size
// times the block's weight goes to that block, not to the one set aside.
TEST(AnalyzerTest, ASampledResizeScalesTheBlockItNames) {
  std::string text = kSampledHeader + ScopeLine(1, "s") + ScopeEvent("scope_enter", 1, 1);
  text += "{\"type\":\"alloc\",\"t\":2,\"thread\":1,\"addr\":\"0x10\",\"size\":10,\"layer\":0,"
          "\"scope\":1,\"site\":0,\"ticket\":1,\"weight\":2}\n";
  text += "{\"type\":\"alloc\",\"t\":3,\"thread\":1,\"addr\":\"0x10\",\"size\":10,\"layer\":0,"
          "\"scope\":1,\"site\":0,\"ticket\":2,\"weight\":2}\n";
  // Resize() would write t = 0, the ticket: kept in time order by hand.
  text += "{\"type\":\"resize\",\"t\":4,\"thread\":1,\"addr\":\"0x10\",\"size\":30,\"layer\":0,"
          "\"of\":2,\"ticket\":0}\n";
  text += ScopeEvent("scope_exit", 1, 5);
  const absl::StatusOr<CaptureSummary> s = Analyzer::SummarizeText(text, "resize.jsonl");
  ASSERT_TRUE(s.ok()) << s.status();
  // At the scope's exit, 10 x 2 bytes for the block set aside and 30 x 2 for the one
  // resized, each standing for 2 allocations; at the end only the resized one is live (the
  // other is settled as a missed free: one block at an address once its epoch ends).
  EXPECT_EQ(s->totals.high_water_bytes, 80u);
  ASSERT_EQ(s->retention.size(), 1u);
  EXPECT_EQ(s->retention[0].retained_blocks, 4u);
  EXPECT_EQ(s->retention[0].retained_bytes, 80u);
  EXPECT_EQ(s->missed_frees, 1u);
  EXPECT_EQ(s->totals.live_bytes, 60u);
}

}  // namespace
}  // namespace memtrace
