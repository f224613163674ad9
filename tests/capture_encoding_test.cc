// Copyright 2026 The memtrace Authors.
//
// The two capture encodings (docs/capture-format.md): the sink, fed the same epochs of
// records, writes a JSONL capture and a binary (.mtb) capture that the reader turns into
// the same records, field by field; `memtrace convert`'s writer turns either into the
// other, JSONL -> binary -> JSONL byte for byte.

#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "analysis/capture_reader.h"
#include "analysis/capture_writer.h"
#include "runtime/scope_table.h"
#include "sinks/binary_encoding.h"
#include "sinks/jsonl_sink.h"
#include "transport/ticket.h"

namespace memtrace {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Epoch {
  uint32_t epoch;
  int64_t t;
  std::vector<ObservedEvent> events;
};

// One record as the drainer hands it to a sink.
ObservedEvent Record(EventKind kind, uint8_t layer, uint64_t word0, uint64_t size,
                     uint64_t word2, uint32_t scope, uint32_t ring, uint64_t position) {
  Event e;
  e.word0 = word0;
  e.word1 = Event::PackKindSize(kind, layer, size);
  e.word2 = word2;
  e.word3 = Event::PackScopeEpoch(scope, 0);
  return ObservedEvent{e, Ticket::Make(ring, position)};
}

constexpr uint64_t kStackHash = kStackHashBit | 0x1234abcd;
constexpr int64_t kStart = 1764457000001000000;

// Every kind of record, from four rings (one with an id past the encoder's direct table),
// over epochs whose time moves forward, stays, and goes back; a stack of three frames; a
// site past the sink's capacity (3); a release of an unknown ticket; a negative census
// change; a size near the 48-bit limit.
std::vector<Epoch> Epochs() {
  ScopeTable& scopes = ScopeTable::Global();
  const uint32_t a = scopes.Child(ScopeTable::kRootPath, scopes.InternName("encode_a"));
  const uint32_t ab = scopes.Child(a, scopes.InternName("encode_b"));
  const uint64_t alloc1 = Ticket::Make(1, 3);
  const uint64_t alloc2 = Ticket::Make(1, 4);
  const uint64_t resize = Ticket::Make(1, 10);
  const uint64_t target = Ticket::Make(1, 12);
  std::vector<Epoch> out;
  out.push_back(Epoch{1, kStart, {
      Record(EventKind::kScopeEnter, 0, a, 0, 1000, 0, 1, 0),
      Record(EventKind::kStackFrames, 2, kStackHash, 0x401000, 0x402000, 0, 1, 1),
      Record(EventKind::kStackFrames, 1 | kStackLastRecord, kStackHash, 0x403000, 0, 0, 1, 2),
      Record(EventKind::kAlloc, 0, 0x7f0000001000, 64, kStackHash, a, 1, 3),
      Record(EventKind::kAlloc, 0, 0x7f0000001040, 4096, 0x401234, a, 1, 4),
      Record(EventKind::kCensusUpdate, 0, 0, 0, 100, 0, 1, 5),
      Record(EventKind::kIntervalBegin, 0, 2, 0, 1500, 0, 1, 6),
      Record(EventKind::kAlloc, 1, 0x5555000010, Event::kMaxSize - 1, 0x401234, 0, 2, 0),
      Record(EventKind::kFree, 0, 0x7f0000001000, 0, alloc1, 0, 2, 1),
  }});
  out.push_back(Epoch{2, kStart + 1000000, {
      Record(EventKind::kScopeEnter, 0, ab, 0, 2000, a, 1, 9),
      Record(EventKind::kResize, 0, 0x7f0000001040, 8192, alloc2, ab, 1, 10),
      Record(EventKind::kRemap, 0, 0x7f0000001040, 0, resize, ab, 1, 11),
      Record(EventKind::kRemapTarget, 0, 0x7f0000100000, 16384, 0x401234, a, 1, 12),
      Record(EventKind::kFree, 0, 0x7f0000100000, 0, target, ab, 1, 13),
      Record(EventKind::kFree, 0, 0xdead, 0, 0, ab, 1, 14),
      Record(EventKind::kCensusUpdate, 0, 0, 0, static_cast<uint64_t>(int64_t{-50}), 0, 1, 15),
      Record(EventKind::kScopeExit, 0, ab, 0, 5000, a, 1, 16),
      Record(EventKind::kIntervalEnd, 0, 2, 0, 4000, 0, 1, 17),
      Record(EventKind::kArenaReset, 1, 0, 0, 0, 0, 3, 0),
      Record(EventKind::kAlloc, 1, 0x1000, 24, 0x405555, 0, 3, 1),
      Record(EventKind::kAlloc, 1, 0x1020, 24, 0x406666, 0, 3, 2),  // past the capacity
  }});
  out.push_back(Epoch{3, kStart + 1000000, {  // same time, next epoch
      Record(EventKind::kAlloc, 0, 0x2000, 1, 0x401234, 0, 5000, 7),
      Record(EventKind::kFree, 0, 0x2000, 0, Ticket::Make(5000, 7), 0, 5000, 8),
      Record(EventKind::kScopeExit, 0, a, 0, 6000, 0, 1, 18),
  }});
  out.push_back(Epoch{4, kStart - 5, {  // time went back (a wall-clock step)
      Record(EventKind::kAlloc, 0, 0x7f0000001000, 128, kStackHash, 0, 2, 2),
  }});
  return out;
}

Snapshot FinalSnapshot() {
  Snapshot snap;
  snap.has_census = true;
  snap.census = {CensusEntry{"textures", 50, 100}};
  return snap;
}

void WriteCapture(const std::string& path, JsonlSinkOptions options) {
  options.site_capacity = 3;
  auto sink = JsonlSink::Open(path, options);
  ASSERT_TRUE(sink.ok()) << sink.status();
  for (const Epoch& e : Epochs()) (*sink)->OnEpoch(e.epoch, e.t, e.events);
  ASSERT_TRUE((*sink)->Finish(FinalSnapshot(), "\"ended_by\":\"exit\"").ok())
      << (*sink)->status();
}

// What Describe() leaves out of two captures' records that should otherwise be the same.
enum class Mask {
  kNothing,
  // The trailer's checksum of the bytes before it: two files in two encodings.
  kChecksum,
  // The times two sinks cannot share (when each opened and finished, and the CPU time
  // each one's writer used), and the checksum of the bytes that hold them.
  kTimes,
};

// Every field of a record but `line`, less what `mask` says.
std::string Describe(const CaptureRecord& r, Mask mask) {
  std::string raw = r.raw;
  int64_t t = r.t;
  if (mask != Mask::kNothing) {
    std::vector<const char*> keys = {"\"crc32\":"};
    if (mask == Mask::kTimes) {
      keys.insert(keys.end(), {"\"started_unix_ns\":", "\"finished_unix_ns\":", "\"writer\":"});
    }
    for (const char* key : keys) {
      const size_t at = raw.find(key);
      if (at == std::string::npos) continue;
      size_t end = at + strlen(key);
      while (end < raw.size() && isdigit(static_cast<unsigned char>(raw[end]))) ++end;
      raw.replace(at + strlen(key), end - at - strlen(key), "T");
    }
    if (mask == Mask::kTimes && r.type == LineType::kHeader) t = 0;
  }
  std::string frames;
  for (uint64_t f : r.frames) absl::StrAppend(&frames, absl::Hex(f), ",");
  char weight[64];
  snprintf(weight, sizeof(weight), "%a", r.weight);
  return absl::StrCat(
      "type=", static_cast<int>(r.type), " t=", t, " epoch=", r.epoch, " thread=", r.thread,
      " addr=", absl::Hex(r.addr), " size=", r.size, " ticket=", r.ticket, " of=", r.of,
      " layer=", r.layer, " scope=", r.scope, " outer=", r.outer, " site=", r.site,
      " label=", r.label, " bytes=", r.bytes, " mono_ns=", r.mono_ns,
      " category=", r.category, " id=", r.id, " parent=", r.parent, " name=", r.name,
      " path=", r.path, " schema=", r.schema_version, " pid=", r.pid, " source=", r.source,
      " frames=", frames, " other=", r.other, " start=", absl::Hex(r.start),
      " end=", absl::Hex(r.end), " offset=", absl::Hex(r.offset), " build_id=", r.build_id,
      " weight=", weight, " has_weight=", r.has_weight, " complete=", r.complete,
      " raw=", raw);
}

std::vector<std::string> Records(const std::string& path, Mask mask,
                                 std::vector<CaptureRecord>* kept = nullptr) {
  std::vector<std::string> out;
  const absl::Status s = ReadCapture(path, [&](const CaptureRecord& r) {
    out.push_back(Describe(r, mask));
    if (kept != nullptr) kept->push_back(r);
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

void ExpectSameRecords(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "record " << i;
}

TEST(CaptureEncodingTest, SinkWritesTheSameRecordsInBothEncodings) {
  const std::string jsonl = TempPath("same.jsonl");
  const std::string mtb = TempPath("same.mtb");
  WriteCapture(jsonl, JsonlSinkOptions{});
  WriteCapture(mtb, JsonlSinkOptions{});
  ASSERT_TRUE(IsBinaryCapture(FileBytes(mtb)));
  ASSERT_EQ(FileBytes(jsonl).front(), '{');
  std::vector<CaptureRecord> records;
  const std::vector<std::string> from_jsonl = Records(jsonl, Mask::kTimes, &records);
  ExpectSameRecords(from_jsonl, Records(mtb, Mask::kTimes));
  // The capture holds what the test wrote (so the comparison is not of two empty files).
  int allocs = 0, frees = 0, sites = 0, modules = 0, scope_events = 0, other_sites = 0;
  int census = 0, intervals = 0, resets = 0, remaps = 0;
  bool stack = false;
  for (const CaptureRecord& r : records) {
    allocs += r.type == LineType::kAlloc;
    frees += r.type == LineType::kFree;
    sites += r.type == LineType::kSite;
    other_sites += r.type == LineType::kSite && r.other;
    modules += r.type == LineType::kModule;
    scope_events += r.type == LineType::kScopeEnter || r.type == LineType::kScopeExit;
    census += r.type == LineType::kCensus;
    intervals += r.type == LineType::kIntervalBegin || r.type == LineType::kIntervalEnd;
    resets += r.type == LineType::kArenaReset;
    remaps += r.type == LineType::kRemap || r.type == LineType::kRemapTarget;
    if (r.type == LineType::kSite && r.frames == std::vector<uint64_t>{0x401000, 0x402000,
                                                                       0x403000}) {
      stack = true;
    }
    if (r.type == LineType::kCensus) {
      EXPECT_TRUE(r.has_delta) << "the sink writes census changes, not values";
      EXPECT_TRUE(r.delta == 100 || r.delta == -50) << r.delta;
    }
    if (r.type == LineType::kIntervalEnd) {
      EXPECT_EQ(r.category, 2u);
    }
  }
  EXPECT_EQ(allocs, 7);
  EXPECT_EQ(frees, 4);
  EXPECT_EQ(sites, 4) << "three sites and the other-sites bucket";
  EXPECT_EQ(other_sites, 1);
  EXPECT_TRUE(stack);
  EXPECT_GT(modules, 0);
  EXPECT_EQ(scope_events, 4);
  EXPECT_EQ(census, 2);
  EXPECT_EQ(intervals, 2);
  EXPECT_EQ(resets, 1);
  EXPECT_EQ(remaps, 2);
  EXPECT_EQ(records.back().type, LineType::kTrailer);
  EXPECT_NE(records.back().raw.find("\"ended_by\":\"exit\""), std::string::npos);
}

TEST(CaptureEncodingTest, SampledWeightsSurviveExactly) {
  JsonlSinkOptions options;
  options.sample_interval_bytes = 4096;
  const std::string jsonl = TempPath("sampled.jsonl");
  const std::string mtb = TempPath("sampled.mtb");
  WriteCapture(jsonl, options);
  WriteCapture(mtb, options);
  std::vector<CaptureRecord> records;
  ExpectSameRecords(Records(jsonl, Mask::kTimes), Records(mtb, Mask::kTimes, &records));
  int weighted = 0;
  for (const CaptureRecord& r : records) {
    if (r.type != LineType::kAlloc && r.type != LineType::kRemapTarget) {
      EXPECT_FALSE(r.has_weight);
      continue;
    }
    EXPECT_TRUE(r.has_weight);
    ++weighted;
    // 1 / (1 - exp(-64/4096)) = 64.50130..., written with six digits.
    if (r.size == 64) {
      EXPECT_EQ(r.weight, 64.5013);
    }
  }
  EXPECT_EQ(weighted, 8);
}

TEST(CaptureEncodingTest, CompressedBinaryIsReadLikeThePlainOne) {
  const std::string mtb = TempPath("plain.mtb");
  const std::string zst = TempPath("packed.mtb.zst");
  WriteCapture(mtb, JsonlSinkOptions{});
  WriteCapture(zst, JsonlSinkOptions{});
  const std::string packed = FileBytes(zst);
  ASSERT_GE(packed.size(), 4u);
  EXPECT_EQ(static_cast<unsigned char>(packed[0]), 0x28) << "a zstd frame";
  ExpectSameRecords(Records(mtb, Mask::kTimes), Records(zst, Mask::kTimes));
}

absl::Status Convert(const std::string& in, const std::string& out) {
  auto writer = CaptureWriter::Open(out);
  if (!writer.ok()) return writer.status();
  const absl::Status s =
      ReadCapture(in, [&](const CaptureRecord& r) { return (*writer)->Write(r); });
  const absl::Status finished = (*writer)->Finish();
  return s.ok() ? finished : s;
}

TEST(CaptureEncodingTest, ConvertRoundTripsByteForByte) {
  for (const bool sampled : {false, true}) {
    JsonlSinkOptions options;
    options.sample_interval_bytes = sampled ? 1000 : 0;
    const std::string jsonl = TempPath("rt.jsonl");
    const std::string mtb = TempPath("rt.mtb");
    WriteCapture(jsonl, options);
    WriteCapture(mtb, options);
    // Binary -> JSONL: the reader sees the same records, header and trailer included (the
    // trailer with the checksum of its own file's bytes).
    const std::string back = TempPath("rt_back.jsonl");
    ASSERT_TRUE(Convert(mtb, back).ok());
    ExpectSameRecords(Records(mtb, Mask::kChecksum), Records(back, Mask::kChecksum));
    // JSONL -> binary -> JSONL: the sink's own lines, byte for byte.
    const std::string there = TempPath("rt_there.mtb.zst");
    const std::string again = TempPath("rt_again.jsonl");
    ASSERT_TRUE(Convert(jsonl, there).ok());
    ASSERT_TRUE(Convert(there, again).ok());
    EXPECT_EQ(FileBytes(again), FileBytes(jsonl)) << (sampled ? "sampled" : "");
    // And binary -> JSONL -> binary gives the binary capture back.
    const std::string mtb_again = TempPath("rt_again.mtb");
    ASSERT_TRUE(Convert(back, mtb_again).ok());
    EXPECT_EQ(FileBytes(mtb_again), FileBytes(mtb));
  }
}

// A capture cut anywhere reads up to the cut: inside a record, that record is left out
// and the cut is said (CaptureReadStats::cut); at a record boundary it reads as a capture
// without a trailer. A flipped byte anywhere gives an error or different records, never a
// crash or a hang.
TEST(CaptureEncodingTest, CutOrCorruptedBinaryCapturesFailCleanly) {
  const std::string mtb = TempPath("cut.mtb");
  WriteCapture(mtb, JsonlSinkOptions{});
  const std::string bytes = FileBytes(mtb);
  auto read = [](std::string_view text, CaptureReadStats* stats) {
    return ReadCaptureText(text, "cut.mtb", [](const CaptureRecord&) { return absl::OkStatus(); },
                           stats);
  };
  int inside = 0, boundaries = 0;
  uint64_t last_records = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    CaptureReadStats stats;
    const absl::Status s = read(std::string_view(bytes).substr(0, n), &stats);
    if (!s.ok()) {
      // Only a capture with no whole record is refused: no header to read. Each says
      // where it is cut, and a cut before its magic is whole says that.
      const bool says_where =
          n == 0 ? s.message().find("empty file") != std::string::npos
          : n < 8 ? s.message().find("magic is cut off") != std::string::npos
                  : s.message().find("the capture is cut off") != std::string::npos &&
                        s.message().find("empty file") == std::string::npos;
      EXPECT_TRUE(says_where) << "cut at " << n << ": " << s;
      continue;
    }
    EXPECT_FALSE(stats.has_trailer) << "cut at " << n;
    // More bytes never read fewer records.
    EXPECT_GE(stats.lines, last_records) << "cut at " << n;
    last_records = stats.lines;
    if (stats.cut.empty()) {
      ++boundaries;
    } else {
      ++inside;
      EXPECT_NE(stats.cut.find("is cut off"), std::string::npos) << stats.cut;
    }
  }
  EXPECT_GT(boundaries, 20);
  EXPECT_GT(inside, boundaries);
  uint32_t seed = 12345;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    std::string corrupt = bytes;
    seed = seed * 1103515245 + 12345;
    corrupt[i] = static_cast<char>(corrupt[i] ^ static_cast<char>(1 + (seed >> 16) % 255));
    CaptureReadStats stats;
    (void)read(corrupt, &stats);  // any outcome but a crash
  }
}

TEST(CaptureEncodingTest, BinaryIsMuchSmaller) {
  // Many ordinary records: the per-event size, not the header and module lines, counts.
  // A new site every 997 allocations puts site lines between events all along, across
  // the encoder's staging blocks, whose order must survive.
  std::vector<ObservedEvent> events;
  for (uint64_t i = 0; i < 10000; ++i) {
    const uint64_t addr = 0x7f1200000000 + (i % 64) * 48;
    const uint64_t site = 0x401234 + 16 * (i / 997);
    events.push_back(Record(EventKind::kAlloc, 0, addr, 16 + i % 100, site, 0, 1, 2 * i));
    events.push_back(
        Record(EventKind::kFree, 0, addr, 0, Ticket::Make(1, 2 * i), 0, 1, 2 * i + 1));
  }
  const std::string jsonl = TempPath("many.jsonl");
  const std::string mtb = TempPath("many.mtb");
  for (const std::string& path : {jsonl, mtb}) {
    auto sink = JsonlSink::Open(path).value();
    sink->OnEpoch(1, kStart, events);
    ASSERT_TRUE(sink->Finish(Snapshot{}).ok());
  }
  const size_t text = FileBytes(jsonl).size();
  const size_t binary = FileBytes(mtb).size();
  EXPECT_LT(binary * 8, text) << binary << " vs " << text << " bytes";
  ExpectSameRecords(Records(jsonl, Mask::kTimes), Records(mtb, Mask::kTimes));
}

// Version 2's short records (binary_encoding.h, BinaryEventContext): an alloc, free, remap
// or remap_target whose thread, layer (and scope) are those of the event before it, and
// whose ticket is its thread's previous one plus one, is written without them, and reads
// back whole. The expected shape of each record is worked out here from those rules, not
// asked of the encoder.
TEST(CaptureEncodingTest, ShortRecordsLeaveOutWhatTheEventBeforeThemSays) {
  struct Case {
    CaptureEvent event;
    bool short_form;
  };
  auto release = [](uint32_t thread, uint64_t addr, uint32_t layer, uint64_t ticket,
                    uint64_t of, CaptureEventType type = CaptureEventType::kFree) {
    CaptureEvent e;
    e.type = type;
    e.thread = thread;
    e.addr = addr;
    e.layer = layer;
    e.ticket = ticket;
    e.of = of;
    return e;
  };
  auto alloc = [&](uint32_t thread, uint64_t addr, uint32_t layer, uint32_t scope,
                   uint64_t ticket, CaptureEventType type = CaptureEventType::kAlloc) {
    CaptureEvent e = release(thread, addr, layer, ticket, 0, type);
    e.size = 48;
    e.scope = scope;
    e.site = 7;
    return e;
  };
  CaptureEvent resize = release(1, 0x1000, 0, 7, 5, CaptureEventType::kResize);
  resize.size = 96;
  CaptureEvent weighted = alloc(1, 0x5000, 0, 3, 12);
  weighted.has_weight = true;
  weighted.weight = 64.5013;
  CaptureEvent census;  // a value, as an older capture converted has it
  census.type = CaptureEventType::kCensus;
  census.thread = 9;
  census.label = 1;
  census.bytes = -5;
  CaptureEvent census_change = census;  // a change, as memtrace writes it
  census_change.bytes = 0;
  census_change.has_delta = true;
  census_change.delta = -7;
  const std::vector<Case> cases = {
      {release(1, 0x1000, 0, 1, 0), false},  // nothing before it
      {alloc(1, 0x1000, 0, 3, 2), false},    // no allocation before it: no scope yet
      {alloc(1, 0x1040, 0, 3, 3), true},
      {release(1, 0x1000, 0, 4, 2), true},
      {alloc(1, 0x1080, 0, 4, 5), false},    // another scope
      {alloc(1, 0x10c0, 0, 4, 6), true},
      {resize, false},                       // resizes are always whole...
      {release(1, 0x1080, 0, 8, 0), true},   // ...and leave the context as it was
      {census, false},                       // so do other events
      {census_change, false},
      {alloc(1, 0x2000, 1, 4, 9), false},    // another layer
      {release(2, 0x2000, 1, 10, 9), false},  // another thread
      {release(2, 0x3000, 1, 11, 0), true},
      {release(1, 0x4000, 1, 12, 0), false},  // back to thread 1: its ticket was 9
      {release(1, 0x4010, 1, 15, 0), false},  // a gap in the tickets
      {release(1, 0x10c0, 0, 16, 6, CaptureEventType::kRemap), false},  // layer 0 again
      {alloc(1, 0x9000, 0, 4, 17, CaptureEventType::kRemapTarget), true},
      {weighted, false},                    // scope 3 after 4; ticket 12 after 17
      {alloc(1, 0x5040, 0, 3, 13), true},
  };
  std::string bytes;
  BinaryEncoder encoder(&bytes);
  encoder.Magic();
  for (const Case& c : cases) encoder.Event(c.event);
  encoder.Flush();
  ASSERT_EQ(BinaryCaptureVersion(bytes), kBinaryVersion);

  BinaryDecoder decoder(BinaryCaptureVersion(bytes));
  std::string_view in = std::string_view(bytes).substr(kBinaryMagicSize);
  int shortened = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const CaptureEvent& want = cases[i].event;
    const auto tag = static_cast<uint8_t>(in.front());
    const bool was_short = (tag & 0x7f) >= kBinaryShortTagBase;
    EXPECT_EQ(was_short, cases[i].short_form) << "record " << i;
    shortened += was_short;
    size_t used = 0;
    BinaryRecord record;
    std::string error;
    ASSERT_EQ(decoder.Next(in, &used, &record, &error), BinaryDecoder::Result::kRecord)
        << "record " << i << ": " << error;
    in.remove_prefix(used);
    const CaptureEvent& got = record.event;
    EXPECT_EQ(got.type, want.type) << "record " << i;
    EXPECT_EQ(got.thread, want.thread) << "record " << i;
    EXPECT_EQ(got.layer, want.layer) << "record " << i;
    EXPECT_EQ(got.ticket, want.ticket) << "record " << i;
    if (want.type == CaptureEventType::kCensus) {
      EXPECT_EQ(tag, want.has_delta ? 0x98 : 0x18) << "record " << i;
      EXPECT_EQ(got.label, want.label) << "record " << i;
      EXPECT_EQ(got.has_delta, want.has_delta) << "record " << i;
      EXPECT_EQ(got.delta, want.delta) << "record " << i;
      EXPECT_EQ(got.bytes, want.bytes) << "record " << i;
      continue;
    }
    EXPECT_EQ(got.addr, want.addr) << "record " << i;
    if (IsAllocation(want.type)) {
      EXPECT_EQ(got.scope, want.scope) << "record " << i;
      EXPECT_EQ(got.site, want.site) << "record " << i;
      EXPECT_EQ(got.size, want.size) << "record " << i;
      EXPECT_EQ(got.has_weight, want.has_weight) << "record " << i;
      if (want.has_weight) {
        EXPECT_EQ(got.weight, want.weight) << "record " << i;
      }
    } else {
      EXPECT_EQ(got.of, want.of) << "record " << i;
    }
  }
  EXPECT_TRUE(in.empty());
  EXPECT_EQ(shortened, 7);
}

// PutVarint() writes whole words below 2^56 and loops above: both give LEB128's bytes,
// checked against a byte-at-a-time encoding of its own at every length's edges, and it
// writes nothing past the end it returns plus kVarintSpill.
TEST(CaptureEncodingTest, VarintsAreLeb128AtEveryLength) {
  auto reference = [](uint64_t v) {
    std::string out;
    do {
      const uint8_t low = v & 0x7f;
      v >>= 7;
      out.push_back(static_cast<char>(v != 0 ? low | 0x80 : low));
    } while (v != 0);
    return out;
  };
  std::vector<uint64_t> values = {0, 1, 0x7f, ~uint64_t{0}, 0x0123456789abcdefull};
  for (int bits = 1; bits <= 64; ++bits) {
    const uint64_t top = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    values.push_back(top);                          // all ones: the longest of its length
    values.push_back(uint64_t{1} << (bits - 1));    // the shortest of its bit width
    values.push_back(top & 0x5555555555555555ull);  // alternating bits
  }
  for (const uint64_t v : values) {
    uint8_t buffer[32];
    std::memset(buffer, 0xee, sizeof(buffer));
    const uint8_t* end = BinaryEncoder::PutVarint(buffer + 1, v);
    const std::string want = reference(v);
    ASSERT_EQ(std::string(reinterpret_cast<const char*>(buffer + 1),
                          static_cast<size_t>(end - buffer - 1)),
              want)
        << "value " << v;
    EXPECT_EQ(buffer[0], 0xee) << "value " << v;
    for (const uint8_t* p = end + BinaryEncoder::kVarintSpill; p < buffer + sizeof(buffer); ++p) {
      EXPECT_EQ(*p, 0xee) << "value " << v << ", byte " << (p - buffer);
    }
  }
}

// Every field of a decoded event, to compare two decodings or a decoding and its source.
std::string EventFields(const CaptureEvent& e) {
  return absl::StrCat(CaptureEventTypeName(e.type), " thread=", e.thread, " addr=", e.addr,
                      " size=", e.size, " ticket=", e.ticket, " of=", e.of, " layer=", e.layer,
                      " scope=", e.scope, " outer=", e.outer, " site=", e.site,
                      " label=", e.label, " category=", e.category, " has_delta=", e.has_delta,
                      " delta=", e.delta, " bytes=", e.bytes, " mono_ns=", e.mono_ns,
                      " has_weight=", e.has_weight,
                      " weight bits=", absl::Hex(std::bit_cast<uint64_t>(e.weight)));
}

// A value of `bits` significant bits (0 to 64) at random, half of them at the edges of
// its varint length: all ones, or the top bit alone.
uint64_t ValueOfWidth(std::mt19937_64& rng, int bits) {
  if (bits == 0) return 0;
  const uint64_t top = uint64_t{1} << (bits - 1);
  switch (rng() % 4) {
    case 0: return top | (top - 1);
    case 1: return top;
    default: return top | (rng() & (top - 1));
  }
}

// NextRoomy() reads a record's fields with no check against the end of its input, and a
// varint of up to 8 bytes from one word. Events of every type with fields of every varint
// length come back as the encoder was given them, by either way; and on any bytes at all,
// both ways give the same result, length, event and error.
TEST(CaptureEncodingTest, RoomyDecodingAgreesWithCheckedDecodingOnAnyBytes) {
  std::mt19937_64 rng(20261207);
  auto width = [&] { return ValueOfWidth(rng, static_cast<int>(rng() % 65)); };
  auto width32 = [&] { return static_cast<uint32_t>(ValueOfWidth(rng, static_cast<int>(rng() % 33))); };
  std::vector<CaptureEvent> events;
  uint64_t tickets[3] = {0, 0, 0};
  for (int i = 0; i < 20000; ++i) {
    CaptureEvent e;
    e.type = static_cast<CaptureEventType>(rng() % kCaptureEventTypes);
    e.thread = static_cast<uint32_t>(rng() % 3);
    // Short records need the thread's previous ticket plus one: most tickets are.
    uint64_t& ticket = tickets[e.thread];
    ticket = rng() % 4 != 0 ? ticket + 1 : width();
    switch (e.type) {
      case CaptureEventType::kAlloc:
      case CaptureEventType::kRemapTarget:
        e.addr = width();
        e.size = width();
        e.layer = static_cast<uint32_t>(rng() % 3);
        e.scope = static_cast<uint32_t>(rng() % 3);
        e.site = width32();
        e.ticket = ticket;
        if (rng() % 8 == 0) {
          e.has_weight = true;
          e.weight = 1.0 + static_cast<double>(rng() % 1000000) / 7.0;
        }
        break;
      case CaptureEventType::kFree:
      case CaptureEventType::kRemap:
      case CaptureEventType::kResize:
        e.addr = width();
        if (e.type == CaptureEventType::kResize) e.size = width();
        e.layer = static_cast<uint32_t>(rng() % 3);
        e.ticket = ticket;
        e.of = rng() % 2 == 0 ? 0 : width();
        if (e.of == e.ticket) e.of = 0;  // "no ticket" (BinaryEncoder::OfDelta())
        break;
      case CaptureEventType::kArenaReset:
        e.layer = width32();
        break;
      case CaptureEventType::kScopeEnter:
      case CaptureEventType::kScopeExit:
        e.scope = width32();
        e.outer = width32();
        e.mono_ns = static_cast<int64_t>(width());
        break;
      case CaptureEventType::kCensus:
        e.label = width32();
        e.has_delta = rng() % 2 == 0;
        (e.has_delta ? e.delta : e.bytes) = static_cast<int64_t>(width());
        break;
      case CaptureEventType::kIntervalBegin:
      case CaptureEventType::kIntervalEnd:
        e.category = width32();
        e.mono_ns = static_cast<int64_t>(width());
        break;
    }
    events.push_back(e);
  }
  std::string bytes;
  BinaryEncoder encoder(&bytes);
  encoder.Magic();
  for (const CaptureEvent& e : events) encoder.Event(e);
  encoder.Flush();
  const std::string_view stream = std::string_view(bytes).substr(kBinaryMagicSize);
  // Roomy: the same stream with room after its last record (bytes no record reads).
  const std::string padded = std::string(stream) + std::string(kBinaryMaxFieldBytes, '\xff');

  BinaryDecoder checked_decoder;
  BinaryDecoder roomy_decoder;
  size_t checked_at = 0;
  size_t roomy_at = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    size_t checked_used = 0;
    size_t roomy_used = 0;
    BinaryRecord checked;
    BinaryRecord roomy;
    std::string error;
    ASSERT_EQ(checked_decoder.Next(stream.substr(checked_at), &checked_used, &checked, &error),
              BinaryDecoder::Result::kRecord) << "event " << i << ": " << error;
    ASSERT_EQ(roomy_decoder.NextRoomy(std::string_view(padded).substr(roomy_at), &roomy_used,
                                      &roomy, &roomy.event, &error),
              BinaryDecoder::Result::kRecord) << "event " << i << ": " << error;
    ASSERT_EQ(checked_used, roomy_used) << "event " << i;
    checked_at += checked_used;
    roomy_at += roomy_used;
    ASSERT_EQ(EventFields(checked.event), EventFields(events[i])) << "event " << i;
    ASSERT_EQ(EventFields(roomy.event), EventFields(events[i])) << "event " << i;
  }
  EXPECT_EQ(checked_at, stream.size());

  // Any bytes: a tag (an event's, mostly) and fields of random bytes, many with the high
  // bit set (long, overlong and overflowing varints), after a whole alloc that gives
  // short records their context.
  std::string prime;
  BinaryEncoder prime_encoder(&prime);
  prime_encoder.Magic();
  prime_encoder.Event(events[0].type == CaptureEventType::kAlloc ? events[0] : [] {
    CaptureEvent e;
    e.addr = 0x1000;
    e.size = 16;
    e.ticket = 1;
    return e;
  }());
  prime_encoder.Flush();
  const std::string_view prime_record = std::string_view(prime).substr(kBinaryMagicSize);
  int records = 0;
  int errors = 0;
  for (int trial = 0; trial < 200000; ++trial) {
    std::string in(kBinaryMaxFieldBytes + rng() % 16, '\0');
    const uint64_t high = rng() % 4;  // how often a byte has its high bit: 0 to 3 in 4
    for (char& c : in) {
      c = static_cast<char>((rng() % 4 < high ? 0x80 : 0) | (rng() & 0x7f));
    }
    in[0] = static_cast<char>(rng() % 4 != 0 ? kBinaryEventTagBase + rng() % 0x20 +
                                                   (rng() % 2 != 0 ? kBinaryWeightFlag : 0)
                                             : rng() % 256);
    BinaryDecoder checked_decoder2;
    BinaryDecoder roomy_decoder2;
    for (BinaryDecoder* d : {&checked_decoder2, &roomy_decoder2}) {
      size_t used = 0;
      BinaryRecord r;
      std::string error;
      ASSERT_EQ(d->Next(prime_record, &used, &r, &error), BinaryDecoder::Result::kRecord);
    }
    size_t checked_used = 0;
    size_t roomy_used = 0;
    BinaryRecord checked;
    BinaryRecord roomy;
    std::string checked_error;
    std::string roomy_error;
    const BinaryDecoder::Result c =
        checked_decoder2.Next(in, &checked_used, &checked, &checked_error);
    const BinaryDecoder::Result r =
        roomy_decoder2.NextRoomy(in, &roomy_used, &roomy, &roomy.event, &roomy_error);
    ASSERT_EQ(c, r) << "bytes " << absl::CEscape(in) << ": " << checked_error << " / "
                    << roomy_error;
    ASSERT_EQ(checked_error, roomy_error) << "bytes " << absl::CEscape(in);
    if (c != BinaryDecoder::Result::kRecord) {
      errors += c == BinaryDecoder::Result::kError;
      continue;
    }
    ++records;
    ASSERT_EQ(checked_used, roomy_used) << "bytes " << absl::CEscape(in);
    ASSERT_EQ(checked.kind, roomy.kind) << "bytes " << absl::CEscape(in);
    ASSERT_EQ(checked.t, roomy.t) << "bytes " << absl::CEscape(in);
    ASSERT_EQ(checked.epoch, roomy.epoch) << "bytes " << absl::CEscape(in);
    ASSERT_EQ(checked.json, roomy.json) << "bytes " << absl::CEscape(in);
    if (checked.kind == BinaryRecord::Kind::kEvent) {
      ASSERT_EQ(EventFields(checked.event), EventFields(roomy.event))
          << "bytes " << absl::CEscape(in);
    }
  }
  // Both kinds of outcome were tried, many times each.
  EXPECT_GT(records, 10000);
  EXPECT_GT(errors, 10000);
}

// The longest record's fields take kBinaryMaxFieldBytes: a weighted alloc or remap_target
// of seven overlong ten-byte varints and its weight, read by both ways from exactly that
// many bytes before a page no one may read (a read past them faults). And every tag byte
// means, in each encoding version, what the format says (docs/capture-format.md): the
// table that decodes tags against the test's own reading of those rules.
TEST(CaptureEncodingTest, TheLongestRecordEndsWithinTheRoomAndEveryTagMeansWhatTheFormatSays) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* map = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  ASSERT_EQ(mprotect(static_cast<char*>(map) + page, page, PROT_NONE), 0);
  char* const room = static_cast<char*>(map) + page - kBinaryMaxFieldBytes;
  for (const uint8_t tag : {uint8_t{0x90}, uint8_t{0x94}}) {  // weighted alloc, remap_target
    std::string record(1, static_cast<char>(tag));
    for (int field = 0; field < 7; ++field) {  // thread ... ticket, each 0 in ten bytes
      record += std::string(9, '\x80') + std::string(1, '\0');
    }
    const double weight = 3.0;
    record += std::string(reinterpret_cast<const char*>(&weight), sizeof(weight));
    ASSERT_EQ(record.size(), kBinaryMaxFieldBytes);
    std::memcpy(room, record.data(), record.size());
    const std::string_view in(room, kBinaryMaxFieldBytes);
    for (const bool roomy : {false, true}) {
      BinaryDecoder decoder;
      BinaryRecord out;
      size_t used = 0;
      std::string error;
      const BinaryDecoder::Result r =
          roomy ? decoder.NextRoomy(in, &used, &out, &out.event, &error)
                : decoder.Next(in, &used, &out, &error);
      ASSERT_EQ(r, BinaryDecoder::Result::kRecord) << "tag " << int{tag} << ": " << error;
      EXPECT_EQ(used, kBinaryMaxFieldBytes);
      EXPECT_EQ(out.event.weight, 3.0);
    }
  }
  munmap(map, 2 * page);

  // The format's event tags: 0x10 + type, whole; 0x20 + type, short (version 2 on), for
  // alloc, free, remap and remap_target only; bit 0x80 on an alloc or a remap_target (a
  // weight, either form), or on a whole census record (a change, version 3 on).
  auto known = [](int tag, int version) {
    const bool flag = (tag & 0x80) != 0;
    const int base = tag & 0x7f;
    if (base >= 0x10 && base < 0x10 + kCaptureEventTypes) {
      const auto type = static_cast<CaptureEventType>(base - 0x10);
      if (!flag) return true;
      if (type == CaptureEventType::kCensus) return version >= 3;
      return IsAllocation(type);
    }
    if (base >= 0x20 && base < 0x20 + kCaptureEventTypes && version >= 2) {
      const auto type = static_cast<CaptureEventType>(base - 0x20);
      const bool release = type == CaptureEventType::kFree || type == CaptureEventType::kRemap;
      return flag ? IsAllocation(type) : IsAllocation(type) || release;
    }
    return false;
  };
  std::string prime;
  BinaryEncoder encoder(&prime);
  encoder.Magic();
  CaptureEvent first;  // a whole alloc: the context short records need
  first.addr = 0x1000;
  first.size = 16;
  first.ticket = 1;
  encoder.Event(first);
  encoder.Flush();
  for (int version = 1; version <= 3; ++version) {
    for (int tag = 0; tag < 256; ++tag) {
      if (tag == kBinaryTagJson || tag == kBinaryTagEpoch ||
          (tag >= kBinarySkippableFirst && tag <= kBinarySkippableLast)) {
        continue;  // not events
      }
      BinaryDecoder decoder(version);
      BinaryRecord out;
      size_t used = 0;
      std::string error;
      ASSERT_EQ(decoder.Next(std::string_view(prime).substr(kBinaryMagicSize), &used, &out,
                             &error),
                BinaryDecoder::Result::kRecord) << error;
      std::string record(kBinaryMaxFieldBytes, '\0');
      record[0] = static_cast<char>(tag);
      error.clear();
      decoder.NextRoomy(record, &used, &out, &out.event, &error);
      EXPECT_EQ(error.find("unknown record tag") == std::string::npos, known(tag, version))
          << "tag " << tag << ", version " << version << ": " << error;
    }
  }
}

TEST(CaptureEncodingTest, ShortRecordsAreErrorsWhereTheyCannotBe) {
  auto decode = [](int version, std::string_view record) {
    BinaryDecoder decoder(version);
    size_t used = 0;
    BinaryRecord out;
    std::string error;
    const BinaryDecoder::Result r = decoder.Next(record, &used, &out, &error);
    return r == BinaryDecoder::Result::kError ? error : std::string("no error");
  };
  // A short free (tag 0x21: addr delta 0, `of` 0) with no event before it to say whose.
  const std::string short_free("\x21\x00\x00", 3);
  EXPECT_NE(decode(2, short_free).find("comes before any allocation or release"),
            std::string::npos)
      << decode(2, short_free);
  // Version 1 has no short records.
  EXPECT_NE(decode(1, short_free).find("unknown record tag 0x21"), std::string::npos)
      << decode(1, short_free);
  // A whole version-1 free reads in either version: the long forms did not change.
  const std::string free_v1("\x11\x02\x20\x00\x02\x00", 6);
  EXPECT_EQ(decode(1, free_v1), "no error");
  EXPECT_EQ(decode(2, free_v1), "no error");
  // A census record that carries a change (tag 0x98: thread 1, label 0, delta -1) is
  // version 3's; versions 1 and 2 hold values (0x18), which read as values still.
  const std::string census_change("\x98\x01\x00\x01", 4);
  const std::string census_value("\x18\x01\x00\x01", 4);
  EXPECT_NE(decode(2, census_change).find("unknown record tag 0x98"), std::string::npos)
      << decode(2, census_change);
  for (int version : {1, 2, 3}) {
    for (const std::string* record : {&census_value, &census_change}) {
      if (record == &census_change && version < 3) continue;
      BinaryDecoder decoder(version);
      size_t used = 0;
      BinaryRecord out;
      std::string error;
      ASSERT_EQ(decoder.Next(*record, &used, &out, &error), BinaryDecoder::Result::kRecord)
          << error;
      EXPECT_EQ(out.event.type, CaptureEventType::kCensus);
      EXPECT_EQ(out.event.has_delta, record == &census_change) << "version " << version;
      EXPECT_EQ(record == &census_change ? out.event.delta : out.event.bytes, -1);
    }
  }
  // A capture of a version this reader does not know says which.
  const absl::Status s = ReadCaptureText(
      "MTRACEB9\x01\x02{}", "future.mtb", [](const CaptureRecord&) { return absl::OkStatus(); });
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("encoding version '9'"), std::string::npos) << s;
  EXPECT_EQ(BinaryCaptureVersion("MTRACEB1"), 1);
  EXPECT_EQ(BinaryCaptureVersion("MTRACEB2"), 2);
  EXPECT_EQ(BinaryCaptureVersion("MTRACEB3"), 3);
  EXPECT_EQ(BinaryCaptureVersion("MTRACEB4"), 0);
  EXPECT_EQ(BinaryCaptureVersion("MTRACEB"), 0);
}

}  // namespace
}  // namespace memtrace
