// Copyright 2026 The memtrace Authors.
//
// ReadCaptureBatches() (analysis/batch_reader.h) against ReadCapture() on the same files,
// on one thread and on two, in JSONL, binary and zstd-compressed binary: the same
// records, field for field, in the same order (table lines with names, paths and frames
// between events, and event lines that carry a name, so that batch slots are reused
// across kinds), the same stats at the end, the same error after the same records (a bad
// line mid-capture), a capture cut inside its last line, the consumer's error stopping
// the reading (also while the reader waits for a free batch), and a missing file.

#include "analysis/batch_reader.h"

#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/capture_reader.h"
#include "analysis/capture_writer.h"

namespace memtrace {
namespace {

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/", name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Every field of a record, as text: two records are the same when these are.
std::string Describe(const CaptureRecord& r) {
  return absl::StrCat(
      static_cast<int>(r.type), " line=", r.line, " t=", r.t, " epoch=", r.epoch,
      " thread=", r.thread, " addr=", r.addr, " size=", r.size, " ticket=", r.ticket,
      " of=", r.of, " layer=", r.layer, " scope=", r.scope, " outer=", r.outer,
      " site=", r.site, " label=", r.label, " has_delta=", r.has_delta, " delta=", r.delta,
      " bytes=", r.bytes, " mono=", r.mono_ns, " category=", r.category, " id=", r.id,
      " parent=", r.parent, " name=", r.name, " path=", r.path, " schema=", r.schema_version,
      " pid=", r.pid, " source=", r.source, " malloc_from=", r.malloc_from,
      " frames=", absl::StrJoin(r.frames, ","), " other=", r.other, " start=", r.start,
      " end=", r.end, " offset=", r.offset, " build_id=", r.build_id, " weight=", r.weight,
      " has_weight=", r.has_weight, " complete=", r.complete, " raw=", r.raw);
}

// A capture of `events` events of every kind, with a site line (frames), a scope line
// (a path) and a module line every 777 events; `bad_line` (1-based, 0 for none) is
// replaced by a line that is not JSON.
std::string Capture(uint64_t events, uint64_t bad_line = 0) {
  std::vector<std::string> lines = {
      "{\"type\":\"header\",\"format\":\"memtrace-jsonl\",\"schema_version\":1,\"pid\":7}",
      "{\"type\":\"layer\",\"id\":1,\"name\":\"frame\"}",
  };
  for (uint64_t i = 0; i < events; ++i) {
    if (i % 777 == 0) {
      lines.push_back(absl::StrCat("{\"type\":\"site\",\"id\":", i, ",\"addr\":\"0x", i + 16,
                                   "\",\"frames\":[\"0x", i + 16, "\",\"0x99\"]}"));
      lines.push_back(absl::StrCat("{\"type\":\"scope\",\"id\":", 1 + i % 5,
                                   ",\"name\":\"step", i, "\",\"path\":\"main/step", i,
                                   "\",\"parent\":0}"));
      lines.push_back(absl::StrCat("{\"type\":\"module\",\"path\":\"/lib/m", i,
                                   ".so\",\"start\":\"0x1000\",\"end\":\"0x2000\","
                                   "\"offset\":\"0x0\",\"build_id\":\"ab", i, "\"}"));
    }
    const uint64_t t = 1000 + i;
    const uint64_t addr = 0x10000 + 16 * (i % 97);
    switch (i % 6) {
      case 0:
      case 1:
        // A field of table lines on an event line: kept by the reader, a text in a slot.
        lines.push_back(absl::StrCat("{\"type\":\"alloc\",\"t\":", t, ",\"epoch\":", i / 50,
                                     ",\"thread\":", i % 3, ",\"addr\":\"0x",
                                     absl::Hex(addr), "\",\"size\":", 8 + i % 200,
                                     ",\"layer\":", i % 2, ",\"scope\":", i % 5,
                                     ",\"site\":", i % 9, ",\"ticket\":", i + 1,
                                     i % 1000 == 0 ? absl::StrCat(",\"name\":\"n", i, "\"") : "",
                                     "}"));
        break;
      case 2:
        lines.push_back(absl::StrCat("{\"type\":\"free\",\"t\":", t, ",\"thread\":", i % 3,
                                     ",\"addr\":\"0x", absl::Hex(addr), "\",\"layer\":",
                                     i % 2, ",\"of\":", i, ",\"ticket\":", i + 1, "}"));
        break;
      case 3:
        lines.push_back(absl::StrCat("{\"type\":\"scope_enter\",\"t\":", t, ",\"thread\":1,"
                                     "\"scope\":2,\"outer\":0,\"mono_ns\":", 5 * i, "}"));
        break;
      case 4:
        lines.push_back(absl::StrCat("{\"type\":\"census\",\"t\":", t, ",\"thread\":2,"
                                     "\"label\":", i % 4, ",\"delta\":", -int64_t(i), "}"));
        break;
      case 5:
        lines.push_back(absl::StrCat("{\"type\":\"scope_exit\",\"t\":", t, ",\"thread\":1,"
                                     "\"scope\":2,\"outer\":0,\"mono_ns\":", 5 * i + 1, "}"));
        break;
    }
  }
  lines.push_back("{\"type\":\"trailer\",\"complete\":true}");
  if (bad_line != 0) lines[bad_line - 1] = "not json";
  return absl::StrJoin(lines, "\n") + "\n";
}

struct Read {
  absl::Status status;
  std::vector<std::string> records;
  CaptureReadStats stats;
  size_t batches = 0;
};

Read ByRecord(const std::string& path) {
  Read out;
  out.status = ReadCapture(
      path,
      [&](const CaptureRecord& r) {
        out.records.push_back(Describe(r));
        return absl::OkStatus();
      },
      &out.stats);
  return out;
}

Read ByBatch(const std::string& path, ReadThreads threads, size_t stop_at = 0) {
  Read out;
  out.status = ReadCaptureBatches(
      path,
      [&](std::span<const CaptureRecord> batch, const CaptureReadStats& read) {
        EXPECT_FALSE(batch.empty());
        EXPECT_LE(batch.size(), kCaptureBatchRecords);
        // As of the batch's last record (or of a bad line right after it).
        EXPECT_GE(read.lines, batch.back().line);
        EXPECT_LE(read.lines, batch.back().line + 1);
        ++out.batches;
        for (const CaptureRecord& r : batch) {
          out.records.push_back(Describe(r));
          if (out.records.size() == stop_at) return absl::CancelledError("enough");
        }
        return absl::OkStatus();
      },
      &out.stats, threads);
  return out;
}

void ExpectSameRead(const Read& got, const Read& want, const std::string& what) {
  EXPECT_EQ(got.status, want.status) << what;
  ASSERT_EQ(got.records.size(), want.records.size()) << what;
  for (size_t i = 0; i < want.records.size(); ++i) {
    ASSERT_EQ(got.records[i], want.records[i]) << what << ", record " << i;
  }
  EXPECT_EQ(got.stats.lines, want.stats.lines) << what;
  EXPECT_EQ(got.stats.bytes, want.stats.bytes) << what;
  EXPECT_EQ(got.stats.events, want.stats.events) << what;
  EXPECT_EQ(got.stats.has_header, want.stats.has_header) << what;
  EXPECT_EQ(got.stats.has_trailer, want.stats.has_trailer) << what;
  EXPECT_EQ(got.stats.cut, want.stats.cut) << what;
}

constexpr ReadThreads kBoth[] = {ReadThreads::kOne, ReadThreads::kTwo};

const char* Name(ReadThreads t) { return t == ReadThreads::kOne ? "one thread" : "two"; }

TEST(BatchReaderTest, GivesReadCapturesRecordsAndStats) {
  // Enough batches for the reader to run ahead of the consumer and wait for free ones.
  const uint64_t events = 20 * kCaptureBatchRecords + 123;
  const std::string path = WriteFile("whole.jsonl", Capture(events));
  const Read want = ByRecord(path);
  ASSERT_TRUE(want.status.ok()) << want.status;
  ASSERT_EQ(want.stats.events, events);
  for (ReadThreads threads : kBoth) {
    const Read got = ByBatch(path, threads);
    ExpectSameRead(got, want, Name(threads));
    EXPECT_EQ(got.batches, (want.records.size() + kCaptureBatchRecords - 1) /
                               kCaptureBatchRecords)
        << Name(threads) << ": every batch but the last is full";
  }
}

TEST(BatchReaderTest, BinaryAndCompressedCapturesToo) {
  const std::string jsonl = WriteFile("to_convert.jsonl", Capture(12 * kCaptureBatchRecords));
  for (const char* name : {"converted.mtb", "converted.mtb.zst"}) {
    const std::string path = absl::StrCat(::testing::TempDir(), "/", name);
    absl::StatusOr<std::unique_ptr<CaptureWriter>> writer = CaptureWriter::Open(path);
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE(ReadCapture(jsonl, [&](const CaptureRecord& r) { return (*writer)->Write(r); })
                    .ok());
    ASSERT_TRUE((*writer)->Finish().ok());
    const Read want = ByRecord(path);
    ASSERT_TRUE(want.status.ok()) << want.status;
    ASSERT_GT(want.stats.events, 12 * kCaptureBatchRecords - 1) << name;
    for (ReadThreads threads : kBoth) {
      ExpectSameRead(ByBatch(path, threads), want, absl::StrCat(name, ", ", Name(threads)));
    }
  }
}

TEST(BatchReaderTest, AnErrorComesAfterTheRecordsBeforeIt) {
  for (uint64_t bad : {uint64_t{2}, uint64_t{kCaptureBatchRecords},
                       uint64_t{kCaptureBatchRecords + 1}, uint64_t{5000}}) {
    const std::string path = WriteFile("bad.jsonl", Capture(8000, bad));
    const Read want = ByRecord(path);
    ASSERT_FALSE(want.status.ok());
    ASSERT_EQ(want.records.size(), bad - 1);
    for (ReadThreads threads : kBoth) {
      const Read got = ByBatch(path, threads);
      EXPECT_EQ(got.status, want.status) << Name(threads) << ", bad line " << bad;
      ASSERT_EQ(got.records, want.records) << Name(threads) << ", bad line " << bad;
    }
  }
}

TEST(BatchReaderTest, ACaptureCutInItsLastLineIsReadUpToIt) {
  std::string text = Capture(3000);
  text.resize(text.size() - 12);  // into the trailer
  const std::string path = WriteFile("cut.jsonl", text);
  const Read want = ByRecord(path);
  ASSERT_TRUE(want.status.ok()) << want.status;
  ASSERT_FALSE(want.stats.cut.empty());
  for (ReadThreads threads : kBoth) ExpectSameRead(ByBatch(path, threads), want, Name(threads));
}

TEST(BatchReaderTest, TheConsumersErrorStopsTheReading) {
  const std::string path = WriteFile("stop.jsonl", Capture(30 * kCaptureBatchRecords));
  for (size_t stop_at : {size_t{1}, kCaptureBatchRecords, 3 * kCaptureBatchRecords + 5}) {
    for (ReadThreads threads : kBoth) {
      const Read got = ByBatch(path, threads, stop_at);
      EXPECT_EQ(got.status, absl::CancelledError("enough")) << Name(threads);
      EXPECT_EQ(got.records.size(), stop_at) << Name(threads) << ": no batch after the error";
      EXPECT_LE(got.stats.lines, stop_at + kCaptureBatchRecords) << Name(threads);
    }
  }
}

// The consumer is slow on its first batch, so the reader fills every batch and waits for
// a free one; the consumer's error must then stop it (the call returns, no hang).
TEST(BatchReaderTest, AnErrorStopsAReaderWaitingForAFreeBatch) {
  const std::string path = WriteFile("waiting.jsonl", Capture(40 * kCaptureBatchRecords));
  size_t batches = 0;
  const absl::Status s = ReadCaptureBatches(
      path,
      [&](std::span<const CaptureRecord>, const CaptureReadStats&) {
        ++batches;
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        return absl::CancelledError("enough");
      },
      nullptr, ReadThreads::kTwo);
  EXPECT_EQ(s, absl::CancelledError("enough"));
  EXPECT_EQ(batches, 1u);
}

TEST(BatchReaderTest, AMissingFileIsNotFound) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/no/such.mtb");
  const Read want = ByRecord(path);
  for (ReadThreads threads : kBoth) {
    const Read got = ByBatch(path, threads);
    EXPECT_EQ(got.status, want.status) << Name(threads);
    EXPECT_TRUE(absl::IsNotFound(got.status)) << got.status;
    EXPECT_EQ(got.batches, 0u);
  }
}

}  // namespace
}  // namespace memtrace
