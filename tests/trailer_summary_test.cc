// Copyright 2026 The memtrace Authors.
//
// SummaryFromTrailer: a clean capture's summary from its header and trailer equals the
// replay's, field for field, in both encodings; any capture whose trailer is not the whole
// story (a lost release, a cut, a compressed stream, an older trailer, an edited one)
// gets no summary from it, so the caller replays.

#include "analysis/trailer_summary.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "analysis/analyzer.h"
#include "analysis/capture_file_ends.h"
#include "analysis/capture_matcher.h"
#include "analysis/capture_reader.h"
#include "analysis/capture_writer.h"
#include "analysis/trailer.h"
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

// Records a program with scopes, two layers (a heap and a frame arena that is reset),
// resizes, moves and cross-thread frees into `path`; with `lose`, one thread also hands
// blocks back to malloc untraced and gets their addresses again.
void Record(const std::string& path, bool lose) {
  CapturedRun run(path);
  ASSERT_TRUE(run.started);
  Tracer* tracer = run.tracer.get();
  MallocAllocator& heap = run.heap;
  TracingAllocator& traced = run.traced;
  FrameArena arena(1 << 20);
  TracingAllocator frame(tracer, &arena, layers::kFrameArena);
  static const ScopeName kLoad("load");
  static const ScopeName kParse("parse");
  std::vector<std::pair<void*, size_t>> handed;  // freed by the other thread
  std::vector<std::pair<void*, size_t>> kept;    // live at the end (freed untraced after)
  std::thread worker([&] {
    Span load = tracer->Enter(kLoad);
    for (int i = 0; i < 3000; ++i) {
      Span parse = tracer->Enter(kParse);
      size_t n = 24 + (i * 13) % 500;
      void* p = traced.Alloc(n, 16, 0x1000 + i % 7);
      ASSERT_NE(p, nullptr);
      if (i % 3 == 0 && traced.Resize(AsMemory(p, n), 16, n + 8, 0)) n += 8;
      if (i % 5 == 0) {
        if (void* q = traced.Remap(AsMemory(p, n), 16, n + 4096, 0)) {
          p = q;
          n += 4096;
        }
      }
      if (i % 2 == 0) {
        traced.Free(AsMemory(p, n), 16, 0);
      } else if (i % 4 == 1) {
        handed.emplace_back(p, n);
      } else {
        kept.emplace_back(p, n);
      }
      if (lose && i % 100 == 0) {
        void* r = traced.Alloc(64, 16, 0x2000);
        heap.Free(AsMemory(r, 64), 16, 0);  // behind the tracer's back
        void* again = traced.Alloc(64, 16, 0x2000);
        handed.emplace_back(again, 64);
      }
    }
  });
  worker.join();
  for (auto [p, n] : handed) traced.Free(AsMemory(p, n), 16, 0);  // on another thread
  for (int f = 0; f < 5; ++f) {
    for (int i = 0; i < 40; ++i) ASSERT_NE(frame.Alloc(96, 16, 0x3000), nullptr);
    arena.ResetTraced(frame);
  }
  ASSERT_TRUE(run.Finish());
  for (auto [p, n] : kept) heap.Free(AsMemory(p, n), 16, 0);
}

void ExpectSameSummary(const CaptureSummary& got, const CaptureSummary& want) {
  auto same_peak = [](const UsageCounters& a, const UsageCounters& b, const std::string& what) {
    ExpectSame(a, b, what);
    EXPECT_EQ(a.high_water_low_bytes, b.high_water_low_bytes) << what;
    EXPECT_EQ(a.high_water_high_bytes, b.high_water_high_bytes) << what;
  };
  same_peak(got.totals, want.totals, "totals");
  ASSERT_EQ(got.scopes.size(), want.scopes.size());
  for (const auto& [id, usage] : want.scopes) {
    ASSERT_EQ(got.scopes.count(id), 1u) << "scope " << id;
    same_peak(got.scopes.at(id), usage, "scope " + want.scope_paths.at(id));
    EXPECT_EQ(got.scope_paths.at(id), want.scope_paths.at(id));
  }
  ASSERT_EQ(got.layers.size(), want.layers.size());
  for (const auto& [id, usage] : want.layers) {
    ASSERT_EQ(got.layers.count(id), 1u) << "layer " << id;
    same_peak(got.layers.at(id), usage, "layer " + want.layer_names.at(id));
    EXPECT_EQ(got.layer_names.at(id), want.layer_names.at(id));
  }
  EXPECT_EQ(got.events, want.events);
  EXPECT_EQ(got.events_applied, want.events_applied);
  EXPECT_EQ(got.live_blocks, want.live_blocks);
  EXPECT_EQ(got.unmatched_releases, want.unmatched_releases);
  EXPECT_EQ(got.missed_frees, want.missed_frees);
  EXPECT_EQ(got.has_trailer, want.has_trailer);
  EXPECT_EQ(got.trailer_complete, want.trailer_complete);
  EXPECT_EQ(got.trailer, want.trailer);
  EXPECT_EQ(got.pid, want.pid);
  EXPECT_EQ(got.source, want.source);
  EXPECT_EQ(got.started_unix_ns, want.started_unix_ns);
  EXPECT_EQ(got.sampled, want.sampled);
}

TEST(TrailerSummaryTest, ACleanCapturesSummaryFromItsTrailerIsTheReplaysInBothEncodings) {
  for (const char* name : {"clean.jsonl", "clean.mtb"}) {
    const std::string path = TempPath(name);
    Record(path, /*lose=*/false);
    const auto replayed = Analyzer::Summarize(path);
    ASSERT_TRUE(replayed.ok()) << replayed.status();
    ASSERT_GT(replayed->events, 10000u);
    ASSERT_GE(replayed->scopes.size(), 2u) << name;
    ASSERT_EQ(replayed->layers.size(), 2u) << name;
    const std::optional<CaptureSummary> read = SummaryFromTrailer(path);
    ASSERT_TRUE(read.has_value()) << name << ": a clean capture's trailer was not used";
    SCOPED_TRACE(name);
    ExpectSameSummary(*read, *replayed);
  }
}

// Releases lost at reused addresses make the integrity block say so (missed frees): the
// trailer's account is the ledger's guess then, and the summary replays. Under an
// allocator that does not hand addresses straight back (a sanitizer's), nothing is
// missed, the lost blocks stay live for both, and the trailer's summary is the replay's.
TEST(TrailerSummaryTest, ACaptureThatMissedFreesIsReplayed) {
  const std::string path = TempPath("lost.mtb");
  Record(path, /*lose=*/true);
  const auto replayed = Analyzer::Summarize(path);
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  const std::optional<CaptureSummary> read = SummaryFromTrailer(path);
  if (replayed->missed_frees != 0) {
    EXPECT_FALSE(read.has_value());
  } else {
    ASSERT_TRUE(read.has_value());
    ExpectSameSummary(*read, *replayed);
  }
}

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

TEST(TrailerSummaryTest, ACutACompressedAnOlderOrAnEditedCaptureIsReplayed) {
  const std::string jsonl = TempPath("whole.jsonl"), binary = TempPath("whole.mtb");
  Record(jsonl, false);
  Record(binary, false);
  ASSERT_TRUE(SummaryFromTrailer(jsonl).has_value());
  ASSERT_TRUE(SummaryFromTrailer(binary).has_value());
  const std::string text = Contents(jsonl), bytes = Contents(binary);

  // Cut short: no trailer at the end.
  Write(TempPath("cut.jsonl"), text.substr(0, text.size() / 2));
  EXPECT_FALSE(SummaryFromTrailer(TempPath("cut.jsonl")).has_value());
  Write(TempPath("cut.mtb"), bytes.substr(0, bytes.size() - 7));
  EXPECT_FALSE(SummaryFromTrailer(TempPath("cut.mtb")).has_value());
  // An older trailer, without the sink's count of event records.
  std::string older = text;
  const size_t at = older.rfind(",\"event_lines\":");
  ASSERT_NE(at, std::string::npos);
  older.erase(at, older.find(',', at + 1) - at);
  Write(TempPath("older.jsonl"), older);
  EXPECT_FALSE(SummaryFromTrailer(TempPath("older.jsonl")).has_value());
  // An edited trailer that no longer parses.
  std::string edited = text;
  edited.insert(edited.size() - 2, "x");
  Write(TempPath("edited.jsonl"), edited);
  EXPECT_FALSE(SummaryFromTrailer(TempPath("edited.jsonl")).has_value());
  // A trailer whose binary length prefix does not match its text.
  std::string shifted = bytes;
  shifted.insert(shifted.size() - 2, " ");
  Write(TempPath("shifted.mtb"), shifted);
  EXPECT_FALSE(SummaryFromTrailer(TempPath("shifted.mtb")).has_value());
  // Compressed: read through, never from the end.
  const std::string zst = TempPath("whole.mtb.zst");
  Record(zst, false);
  ASSERT_TRUE(Analyzer::Summarize(zst).ok());
  EXPECT_FALSE(SummaryFromTrailer(zst).has_value());
  EXPECT_FALSE(SummaryFromTrailer(TempPath("no such capture")).has_value());
}

// CRC-32 as zlib computes it (the reflected polynomial 0xEDB88320), one bit at a time:
// the test's own, to check the writer's.
uint32_t BitwiseCrc32(std::string_view bytes) {
  uint32_t crc = 0xffffffffu;
  for (const char c : bytes) {
    crc ^= static_cast<uint8_t>(c);
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// Where the trailer's record starts: a JSONL capture's last line; in a binary capture the
// tag (0x01) and the length varint before the trailer's text, which ends the file.
size_t TrailerRecordStart(const std::string& bytes, bool binary) {
  const size_t text = bytes.rfind("{\"type\":\"trailer\"");
  if (!binary || text == std::string::npos) return text;
  size_t at = text - 1;
  while (at > 0 && (static_cast<uint8_t>(bytes[at - 1]) & 0x80) != 0) --at;  // varint's first
  return at - 1;  // the tag
}

// The trailer carries the CRC-32 of every byte before its record, in JSONL, in binary and
// in a capture converted from one to the other; a summary read from the trailer, a replay
// and verify's matching each call a capture with a byte changed since DAMAGED.
TEST(CaptureChecksumTest, TheTrailersCrc32IsOfTheBytesBeforeItAndAChangedByteIsDamage) {
  const std::string jsonl = TempPath("crc.jsonl"), binary = TempPath("crc.mtb");
  Record(jsonl, false);
  Record(binary, false);
  // Converted: the trailer carries the new file's checksum, not its source's.
  const std::string converted = TempPath("crc_converted.jsonl");
  {
    auto writer = CaptureWriter::Open(converted);
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE(ReadCapture(binary, [&](const CaptureRecord& r) {
                  return (*writer)->Write(r);
                }).ok());
    ASSERT_TRUE((*writer)->Finish().ok());
  }
  for (const std::string& path : {jsonl, binary, converted}) {
    SCOPED_TRACE(path);
    const bool is_binary = path == binary;
    const std::string bytes = Contents(path);
    const size_t start = TrailerRecordStart(bytes, is_binary);
    ASSERT_NE(start, std::string::npos);
    const absl::StatusOr<TrailerBlocks> t =
        ParseTrailer(bytes.substr(bytes.rfind("{\"type\":\"trailer\"")));
    ASSERT_TRUE(t.ok()) << t.status();
    ASSERT_TRUE(t->crc32.has_value()) << "no crc32 in the trailer";
    EXPECT_EQ(*t->crc32, BitwiseCrc32(std::string_view(bytes).substr(0, start)));
    EXPECT_EQ(MatchesTrailerChecksum(path), std::optional<bool>(true));
    const std::optional<CaptureSummary> read = SummaryFromTrailer(path);
    ASSERT_TRUE(read.has_value());
    EXPECT_FALSE(read->checksum_differs);

    // One bit of an event's bytes changed, a third of the way in. The records may still
    // read (a size, an address) or not (a tag); either way nothing calls it whole.
    std::string changed = bytes;
    changed[bytes.size() / 3] ^= 0x02;
    const std::string damaged = path + ".damaged";
    Write(damaged, changed);
    EXPECT_EQ(MatchesTrailerChecksum(damaged), std::optional<bool>(false));
    const std::optional<CaptureSummary> fast = SummaryFromTrailer(damaged);
    ASSERT_TRUE(fast.has_value());
    EXPECT_TRUE(fast->checksum_differs);
    const absl::StatusOr<CaptureSummary> replayed = Analyzer::Summarize(damaged);
    if (replayed.ok()) {
      EXPECT_TRUE(replayed->checksum_differs);
    }
    const absl::StatusOr<CaptureSummary> matched = MatchCapture(damaged);
    if (matched.ok()) {
      EXPECT_TRUE(matched->checksum_differs);
    }
  }
}

// Whatever byte before the trailer is changed, the replay and the matching call the
// capture damaged: in its summary, or in the error that stopped the reading (a tag or a
// length changed, so that a record no longer parses, or runs past the end and the file
// reads as cut off before its trailer). One bit of each of 200 bytes spread over a binary
// capture, the first records' all among them.
TEST(CaptureChecksumTest, EveryChangedByteIsCalledDamageWhateverItBreaks) {
  const std::string path = TempPath("every_byte.mtb");
  Record(path, false);
  const std::string bytes = Contents(path);
  const size_t start = TrailerRecordStart(bytes, /*binary=*/true);
  ASSERT_NE(start, std::string::npos);
  int errors = 0, read = 0;
  std::vector<size_t> positions;
  for (size_t at = 8; at < std::min<size_t>(start, 108); ++at) positions.push_back(at);
  for (size_t at = 108; at < start; at += std::max<size_t>(1, start / 100)) {
    positions.push_back(at);
  }
  for (const size_t at : positions) {
    std::string changed = bytes;
    changed[at] ^= 0x01;
    const std::string damaged = TempPath("every_byte_damaged.mtb");
    Write(damaged, changed);
    for (const bool replay : {true, false}) {
      const absl::StatusOr<CaptureSummary> s =
          replay ? Analyzer::Summarize(damaged) : MatchCapture(damaged);
      if (s.ok()) {
        EXPECT_TRUE(s->checksum_differs) << "byte " << at << (replay ? " replayed" : " matched");
        ++read;
      } else {
        ++errors;
        EXPECT_NE(s.status().message().find("it is damaged"), std::string::npos)
            << "byte " << at << ": " << s.status();
      }
    }
  }
  // Both kinds were met (else the test would not show what it claims).
  EXPECT_GT(errors, 0);
  EXPECT_GT(read, 0);
}

// A pipe has no end to read from. Opening one for reading would wait for a writer, or
// take the place of the reader the writer waits for: it is not opened at all.
TEST(CaptureFileEndsTest, APipeIsNotOpened) {
  const std::string fifo = TempPath("capture.fifo");
  std::filesystem::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto ends = std::async(std::launch::async, [&] { return ReadCaptureFileEnds(fifo); });
  const bool returned = ends.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (!returned) {
    // It waits in open(): a writer lets it go, so that the test can end.
    const int fd = open(fifo.c_str(), O_WRONLY);
    if (fd >= 0) close(fd);
  }
  EXPECT_TRUE(returned) << "ReadCaptureFileEnds waited on a pipe";
  const CaptureFileEnds got = ends.get();
  EXPECT_FALSE(got.header.has_value());
  EXPECT_FALSE(got.trailer.has_value());
  EXPECT_FALSE(SummaryFromTrailer(fifo).has_value());
}

}  // namespace
}  // namespace memtrace
