// Copyright 2026 The memtrace Authors.
//
// MatchCapture() (analysis/capture_matcher.h), the replay `memtrace verify` uses: it
// matches releases and nothing more, and must give a verdict's fields as the full replay
// (Analyzer::Summarize()) gives them for the same file. Two kinds of test:
//   - a capture whose releases with no allocation the test counts itself as it writes
//     them (never allocated, released twice, resized or moved when unknown);
//   - random captures of every memory event on several threads, layers and epochs, with
//     addresses that come back while their blocks are live (set aside, settled at the
//     epoch's end), in JSONL and binary, whole, cut and without a trailer: every verdict
//     field equals the full replay's, and so do its counters where nothing is sampled.

#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "analysis/analyzer.h"
#include "analysis/capture_matcher.h"
#include "analysis/capture_reader.h"
#include "analysis/capture_writer.h"

namespace memtrace {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

const char kHeader[] =
    "{\"type\":\"header\",\"schema_version\":1,\"source\":\"preload\",\"interposer\":"
    "{\"sample_interval_bytes\":0,\"stack_depth\":0}}\n";
const char kTrailer[] = "{\"type\":\"trailer\",\"complete\":true}\n";

// One event line; `fields` follows the common ones.
std::string Event(const char* type, uint32_t epoch, uint32_t thread, const std::string& fields) {
  return absl::StrCat("{\"type\":\"", type, "\",\"t\":", epoch, ",\"epoch\":", epoch,
                      ",\"thread\":", thread, fields, "}\n");
}
std::string Addr(uint64_t addr) { return absl::StrCat(",\"addr\":\"0x", absl::Hex(addr), "\""); }

// The fields a verdict reads (cli/internal/analysis_common.cc), equal to the full replay's.
void ExpectSameVerdictFields(const CaptureSummary& got, const CaptureSummary& want,
                             const std::string& what) {
  EXPECT_EQ(got.events, want.events) << what;
  EXPECT_EQ(got.events_applied, want.events_applied) << what;
  EXPECT_EQ(got.unmatched_releases, want.unmatched_releases) << what;
  EXPECT_EQ(got.cut, want.cut) << what;
  EXPECT_EQ(got.has_trailer, want.has_trailer) << what;
  EXPECT_EQ(got.trailer_complete, want.trailer_complete) << what;
  EXPECT_EQ(got.trailer, want.trailer) << what;
  EXPECT_EQ(got.being_written, want.being_written) << what;
  EXPECT_EQ(got.sampled, want.sampled) << what;
  EXPECT_EQ(got.source, want.source) << what;
  EXPECT_EQ(got.malloc_from, want.malloc_from) << what;
  EXPECT_EQ(got.fork.unpublished_records, want.fork.unpublished_records) << what;
}

TEST(CaptureMatcherTest, CountsTheReleasesWithNoAllocationTheTestWroteAndNoOthers) {
  std::string text = kHeader;
  uint64_t ticket = 0;
  uint64_t unmatched = 0;  // the test's own count
  uint64_t events = 0;
  auto add = [&](const std::string& line) {
    text += line;
    ++events;
  };
  for (uint64_t i = 0; i < 300; ++i) {
    const uint64_t addr = 0x10000 + 32 * i;
    const uint64_t mine = ++ticket;
    add(Event("alloc", 1, 1, absl::StrCat(Addr(addr), ",\"size\":16,\"layer\":0,\"scope\":0,"
                                          "\"site\":3,\"ticket\":", mine)));
    uint64_t current = mine;
    if (i % 5 == 0) {  // resized in place: later releases carry the resize's ticket
      const uint64_t t = ++ticket;
      add(Event("resize", 1, 1, absl::StrCat(Addr(addr), ",\"size\":48,\"layer\":0,\"of\":",
                                             current, ",\"ticket\":", t)));
      current = t;
    }
    uint64_t at = addr;
    if (i % 7 == 0) {  // moved, on another thread
      const uint64_t out = ++ticket;
      add(Event("remap", 1, 2, absl::StrCat(Addr(addr), ",\"layer\":0,\"of\":", current,
                                            ",\"ticket\":", out)));
      at = 0x900000 + 32 * i;
      current = ++ticket;
      add(Event("remap_target", 1, 2,
                absl::StrCat(Addr(at), ",\"size\":64,\"layer\":0,\"scope\":0,\"site\":3,"
                                       "\"ticket\":", current)));
    }
    const uint64_t released = ++ticket;
    add(Event("free", 2, 2, absl::StrCat(Addr(at), ",\"layer\":0,\"of\":", current,
                                         ",\"ticket\":", released)));
    if (i % 3 == 0) {  // released again, with the same ticket
      add(Event("free", 2, 1, absl::StrCat(Addr(at), ",\"layer\":0,\"of\":", current,
                                           ",\"ticket\":", ++ticket)));
      ++unmatched;
    }
    if (i % 11 == 0) {  // never allocated
      add(Event("free", 3, 1, absl::StrCat(Addr(0x5000000 + 16 * i), ",\"layer\":0,\"of\":",
                                           0, ",\"ticket\":", ++ticket)));
      ++unmatched;
    }
    if (i % 13 == 0) {  // a resize and a move of blocks never allocated
      add(Event("resize", 3, 1, absl::StrCat(Addr(0x6000000 + 16 * i),
                                             ",\"size\":8,\"layer\":0,\"of\":77,\"ticket\":",
                                             ++ticket)));
      add(Event("remap", 3, 1, absl::StrCat(Addr(0x7000000 + 16 * i),
                                            ",\"layer\":0,\"of\":78,\"ticket\":", ++ticket)));
      add(Event("remap_target", 3, 1,
                absl::StrCat(Addr(0x8000000 + 16 * i),
                             ",\"size\":8,\"layer\":0,\"scope\":0,\"site\":3,\"ticket\":",
                             ++ticket)));
      unmatched += 2;
    }
  }
  text += kTrailer;
  ASSERT_GT(unmatched, 150u);
  const std::string path = WriteFile("counted.jsonl", text);
  const absl::StatusOr<CaptureSummary> got = MatchCapture(path);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->unmatched_releases, unmatched);
  EXPECT_EQ(got->events, events);
  EXPECT_TRUE(got->has_trailer);
  EXPECT_TRUE(got->trailer_complete);
  EXPECT_FALSE(got->sampled);
  EXPECT_EQ(got->source, "preload");
  // The full replay agrees.
  const absl::StatusOr<CaptureSummary> want = Analyzer::Summarize(path);
  ASSERT_TRUE(want.ok()) << want.status();
  ExpectSameVerdictFields(*got, *want, "counted");
}

// Random memory events: allocations on 3 threads in 2 layers, at addresses drawn from a
// small pool (so an address often comes back while a block is still live there, which
// the ledger sets aside until the epoch's end), released by any thread with the right
// ticket, a stale one or none; resized, moved, released twice, arenas reset, and some
// sampled. Epochs advance every few records.
std::string RandomCapture(uint32_t seed, bool sampled, bool trailer) {
  std::mt19937_64 rng(seed);
  auto pick = [&](uint64_t n) { return static_cast<uint64_t>(rng() % n); };
  struct Live {
    uint64_t addr;
    uint32_t layer;
    uint64_t ticket;
  };
  std::vector<Live> live;
  std::string text = kHeader;
  uint64_t ticket = 1;
  uint32_t epoch = 1;
  for (int i = 0; i < 4000; ++i) {
    if (pick(7) == 0) ++epoch;
    const auto thread = static_cast<uint32_t>(1 + pick(3));
    const uint64_t op = pick(100);
    if (op < 45 || live.empty()) {
      const Live b{0x1000 + 16 * pick(400), static_cast<uint32_t>(pick(2)), ++ticket};
      std::string weight = sampled && pick(4) == 0 ? ",\"weight\":2.5" : "";
      text += Event("alloc", epoch, thread,
                    absl::StrCat(Addr(b.addr), ",\"size\":", 1 + pick(200), ",\"layer\":",
                                 b.layer, ",\"scope\":0,\"site\":", pick(9), ",\"ticket\":",
                                 b.ticket, weight));
      live.push_back(b);
      continue;
    }
    const size_t k = pick(live.size());
    Live& b = live[k];
    const uint64_t of = op < 80 ? b.ticket : op < 85 ? b.ticket + 1 : 0;  // right, stale, none
    if (op < 70) {
      text += Event("free", epoch, thread,
                    absl::StrCat(Addr(b.addr), ",\"layer\":", b.layer, ",\"of\":", of,
                                 ",\"ticket\":", ++ticket));
      if (pick(4) != 0) live.erase(live.begin() + static_cast<ptrdiff_t>(k));  // else again
    } else if (op < 82) {
      const uint64_t t = ++ticket;
      text += Event("resize", epoch, thread,
                    absl::StrCat(Addr(b.addr), ",\"size\":", 1 + pick(300), ",\"layer\":",
                                 b.layer, ",\"of\":", of, ",\"ticket\":", t));
      b.ticket = t;
    } else if (op < 97) {
      text += Event("remap", epoch, thread,
                    absl::StrCat(Addr(b.addr), ",\"layer\":", b.layer, ",\"of\":", of,
                                 ",\"ticket\":", ++ticket));
      if (pick(10) != 0) {  // its target, mostly at once, on the same thread
        b.addr = 0x1000 + 16 * pick(400);
        b.ticket = ++ticket;
        std::string weight = sampled && pick(4) == 0 ? ",\"weight\":3" : "";
        text += Event("remap_target", epoch, thread,
                      absl::StrCat(Addr(b.addr), ",\"size\":", 1 + pick(200), ",\"layer\":",
                                   b.layer, ",\"scope\":0,\"site\":", pick(9),
                                   ",\"ticket\":", b.ticket, weight));
      }
    } else {
      const auto layer = static_cast<uint32_t>(pick(2));
      text += Event("arena_reset", epoch, thread, absl::StrCat(",\"layer\":", layer));
      std::erase_if(live, [&](const Live& l) { return l.layer == layer; });
    }
  }
  if (trailer) text += kTrailer;
  return text;
}

// `text` as a file of its own in binary (capture_writer.h), so the matcher reads what
// `memtrace run` writes too.
std::string AsBinary(const std::string& text, const std::string& name) {
  const std::string jsonl = WriteFile(name + ".jsonl", text);
  const std::string path = TempPath(name + ".mtb");
  auto writer = CaptureWriter::Open(path);
  EXPECT_TRUE(writer.ok()) << writer.status();
  absl::Status s =
      ReadCapture(jsonl, [&](const CaptureRecord& r) { return (*writer)->Write(r); });
  if (s.ok()) s = (*writer)->Finish();
  EXPECT_TRUE(s.ok()) << s;
  return path;
}

TEST(CaptureMatcherTest, EveryVerdictFieldIsTheFullReplaysOnRandomCaptures) {
  uint64_t unmatched = 0;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    const bool sampled = seed % 3 == 0;
    const bool trailer = seed % 4 != 0;
    const std::string text = RandomCapture(seed, sampled, trailer);
    const std::string name = absl::StrCat("random", seed);
    const std::string binary = AsBinary(text, name);
    std::ifstream in(binary, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::vector<std::pair<std::string, std::string>> files = {
        {"jsonl", WriteFile(name + ".jsonl", text)},
        {"binary", binary},
        // Cut inside a record, at several places: what precedes the cut is matched.
        {"binary cut at 1/3", WriteFile(name + "_a.mtb", bytes.substr(0, bytes.size() / 3))},
        {"binary cut at 2/3",
         WriteFile(name + "_b.mtb", bytes.substr(0, 2 * bytes.size() / 3 + 1))},
        {"jsonl cut", WriteFile(name + "_c.jsonl", text.substr(0, text.size() / 2 + 5))}};
    for (const auto& [kind, path] : files) {
      const std::string what = absl::StrCat("seed ", seed, ", ", kind);
      const absl::StatusOr<CaptureSummary> want = Analyzer::Summarize(path);
      const absl::StatusOr<CaptureSummary> got = MatchCapture(path);
      ASSERT_EQ(got.ok(), want.ok()) << what << ": " << got.status() << " / " << want.status();
      if (!want.ok()) {
        EXPECT_EQ(got.status(), want.status()) << what;
        continue;
      }
      ExpectSameVerdictFields(*got, *want, what);
      if (!sampled) {
        // Unscaled, the ledger's counters are the full replay's.
        EXPECT_EQ(got->totals.allocated_bytes, want->totals.allocated_bytes) << what;
        EXPECT_EQ(got->totals.allocated_count, want->totals.allocated_count) << what;
        EXPECT_EQ(got->totals.freed_bytes, want->totals.freed_bytes) << what;
        EXPECT_EQ(got->totals.live_bytes, want->totals.live_bytes) << what;
        EXPECT_EQ(got->totals.live_count, want->totals.live_count) << what;
        EXPECT_EQ(got->totals.high_water_bytes, want->totals.high_water_bytes) << what;
        EXPECT_EQ(got->totals.allocation_calls, want->totals.allocation_calls) << what;
        EXPECT_EQ(got->layers.size(), want->layers.size()) << what;
      }
      if (kind == "binary") {
        EXPECT_EQ(got->sampled, sampled) << what;
        EXPECT_EQ(got->has_trailer, trailer) << what;
        EXPECT_GT(got->events, 4000u) << what;
        unmatched += got->unmatched_releases;
      }
    }
  }
  EXPECT_GT(unmatched, 1000u) << "the captures should hold many releases of nothing";
}

// Past kReplayTablesFromBlocks live blocks the matcher sizes its tables from the trailer
// and asks memory for slots ahead: the verdict is the same.
TEST(CaptureMatcherTest, ALargeLiveSetSizedFromTheTrailerGivesTheFullReplaysVerdict) {
  std::string text = kHeader;
  std::vector<uint64_t> tickets;
  uint64_t ticket = 0;
  constexpr uint64_t kBlocks = 40000;
  for (uint64_t i = 0; i < kBlocks; ++i) {
    tickets.push_back(++ticket);
    text += Event("alloc", 1, 1, absl::StrCat(Addr(0x100000 + 64 * i), ",\"size\":24,"
                                              "\"layer\":0,\"scope\":0,\"site\":1,\"ticket\":",
                                              ticket));
  }
  uint64_t unmatched = 0;
  for (uint64_t i = 0; i < kBlocks; i += 2) {
    const uint64_t j = (i * 7919) % kBlocks;
    for (int twice = 0; twice < (j % 3 == 0 ? 2 : 1); ++twice) {
      text += Event("free", 2, 2, absl::StrCat(Addr(0x100000 + 64 * j), ",\"layer\":0,\"of\":",
                                               tickets[j], ",\"ticket\":", ++ticket));
    }
    if (j % 3 == 0) ++unmatched;
  }
  text += absl::StrCat(
      "{\"type\":\"trailer\",\"complete\":true,\"totals\":{\"live_count\":", kBlocks,
      ",\"allocated_count\":", kBlocks, "},\"layers\":[{\"id\":0,\"name\":\"heap\",\"usage\":"
      "{\"live_count\":", kBlocks / 2, ",\"allocated_count\":", kBlocks, "}}]}\n");
  const std::string path = WriteFile("large.jsonl", text);
  ASSERT_FALSE(ReplayTableSizes(path).empty()) << "the trailer should size the tables";
  const absl::StatusOr<CaptureSummary> got = MatchCapture(path);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->unmatched_releases, unmatched);
  const absl::StatusOr<CaptureSummary> want = Analyzer::Summarize(path);
  ASSERT_TRUE(want.ok()) << want.status();
  ExpectSameVerdictFields(*got, *want, "large live set");
}

TEST(CaptureMatcherTest, AFileThatCannotBeReadIsTheFullReplaysError) {
  for (const std::string& path :
       {TempPath("does_not_exist.mtb"), WriteFile("junk.jsonl", "not a capture\n")}) {
    const absl::StatusOr<CaptureSummary> got = MatchCapture(path);
    const absl::StatusOr<CaptureSummary> want = Analyzer::Summarize(path);
    ASSERT_FALSE(want.ok()) << path;
    EXPECT_EQ(got.status(), want.status()) << path;
  }
}

}  // namespace
}  // namespace memtrace
