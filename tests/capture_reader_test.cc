// Copyright 2026 The memtrace Authors.
//
// The capture reader (analysis/capture_reader.h): malformed JSONL and binary input, each
// with the message it must produce; files that are not captures; a capture cut inside its
// last record, read up to it; binary records with their epochs, skippable records, stacks,
// modules and sample weights decoded; unknown fields ignored.

#include "analysis/capture_reader.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "sinks/binary_encoding.h"

namespace memtrace {
namespace {

struct Malformed {
  const char* what;
  std::string text;
  const char* message;
};

// Each case must fail, with its message, when read as a capture named `name`.
void ExpectClearErrors(const std::vector<Malformed>& cases, const std::string& name) {
  for (const Malformed& c : cases) {
    const absl::Status s =
        ReadCaptureText(c.text, name, [](const CaptureRecord&) { return absl::OkStatus(); });
    EXPECT_FALSE(s.ok()) << c.what;
    EXPECT_NE(s.message().find(c.message), std::string::npos)
        << c.what << ": got '" << s.message() << "'";
  }
}

TEST(CaptureReaderTest, MalformedInputsGetClearErrors) {
  const std::string header = "{\"type\":\"header\",\"schema_version\":1}\n";
  const std::vector<Malformed> cases = {
      {"empty file", "", "empty file"},
      {"not JSON", "not json\n", "bad.jsonl:1: not a JSON object"},
      {"broken JSON", "{\"type\":\n", "bad.jsonl:1: not JSON"},
      {"not an object", "[1,2]\n", "bad.jsonl:1: not a JSON object"},
      {"no header", "{\"type\":\"trailer\",\"complete\":true}\n", "first line is not a header"},
      {"future schema", "{\"type\":\"header\",\"schema_version\":2}\n",
       "unknown schema version 2"},
      {"missing field", header + "{\"type\":\"alloc\",\"t\":1}\n",
       "bad.jsonl:2: a 'alloc' line needs field 'thread'"},
      {"unknown type", header + "{\"type\":\"bogus\"}\n", "unknown line type 'bogus'"},
      {"bad address",
       header + "{\"type\":\"free\",\"t\":1,\"thread\":1,\"addr\":\"xyz\",\"layer\":0,"
                "\"of\":1,\"ticket\":2}\n",
       "field 'addr' must be a hex string"},
      {"negative size",
       header + "{\"type\":\"alloc\",\"t\":1,\"thread\":1,\"addr\":\"0x1\",\"size\":-4,"
                "\"layer\":0,\"scope\":0,\"site\":0,\"ticket\":1}\n",
       "field 'size' must be a non-negative integer"},
      {"blank line", header + "\n{\"type\":\"trailer\",\"complete\":true}\n",
       "bad.jsonl:2: empty line"},
      {"after trailer",
       header + "{\"type\":\"trailer\",\"complete\":true}\n" + header,
       "bad.jsonl:3: content after the trailer"},
      {"second header", header + header, "bad.jsonl:2: a second header"},
      {"frames not hex", header + "{\"type\":\"site\",\"id\":0,\"addr\":\"0x1\",\"frames\":[1]}\n",
       "bad.jsonl:2: field 'frames' must be an array of hex strings"},
      {"module without end",
       header + "{\"type\":\"module\",\"path\":\"/bin/x\",\"start\":\"0x1000\"}\n",
       "bad.jsonl:2: a 'module' line needs field 'end'"},
      {"census without an amount",
       header + "{\"type\":\"census\",\"t\":1,\"thread\":1,\"label\":0}\n",
       "bad.jsonl:2: a 'census' line needs field 'delta'"},
      {"census with a change and a value",
       header + "{\"type\":\"census\",\"t\":1,\"thread\":1,\"label\":0,\"delta\":1,"
                "\"bytes\":1}\n",
       "bad.jsonl:2: a 'census' line has both 'delta' (a change) and 'bytes' (a value)"},
      {"weight below one",
       header + "{\"type\":\"alloc\",\"t\":1,\"thread\":1,\"addr\":\"0x1\",\"size\":4,"
                "\"layer\":0,\"scope\":0,\"site\":0,\"ticket\":1,\"weight\":0.5}\n",
       "bad.jsonl:2: field 'weight' must be a number from 1 to 1e15"},
  };
  ExpectClearErrors(cases, "bad.jsonl");
}

// Files people pass by mistake are named for what they are, with what to do instead,
// rather than reported as malformed captures ("not JSON").
TEST(CaptureReaderTest, FilesThatAreNotCapturesSayWhatTheyAre) {
  const std::vector<Malformed> cases = {
      {"a program", std::string("\x7f" "ELF\x02\x01\x01\x00", 8) + std::string(56, '\0'),
       "other.bin: this is an ELF file (a program or a library), not a capture: to trace a "
       "program, run `memtrace run -- PROGRAM`"},
      {"gzip", std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10),
       "other.bin: this is gzip-compressed data; memtrace reads captures plain or "
       "zstd-compressed: decompress it with `gunzip` first"},
      {"xz", std::string("\xfd" "7zXZ\x00\x00\x04", 8), "decompress it with `unxz` first"},
      {"bzip2", "BZh91AY&SY", "decompress it with `bunzip2` first"},
      {"lz4", std::string("\x04\x22\x4d\x18\x64\x40\xa7\x00", 8),
       "decompress it with `unlz4` first"},
      {"zip", std::string("PK\x03\x04\x14\x00\x00\x00", 8), "a zip archive"},
      {"perf", "PERFILE2\x68\x00\x00\x00", "open it with `perf report`"},
      {"heaptrack", "v 10400 3\nX /bin/true\nI 1000 5e2939\n",
       "other.bin: this is a heaptrack capture, not memtrace's: open it with heaptrack_print"},
      {"short ELF", "\x7f" "ELF", "this is an ELF file"},
  };
  ExpectClearErrors(cases, "other.bin");
  // Text that merely starts like one of them is read as a capture (and fails as one).
  ExpectClearErrors({{"v without X", "v 1\nnot json\n", "other.bin:1: not a JSON object"}},
                    "other.bin");
}

// Binary captures (.mtb; docs/capture-format.md, "Binary encoding"), built byte by byte
// here so the cases do not depend on the encoder they check.
std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}

std::string JsonRecord(const std::string& json) { return "\x01" + Varint(json.size()) + json; }

std::string Double(double d) {
  uint64_t bits;
  memcpy(&bits, &d, 8);
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(bits >> (8 * i)));
  return out;
}

TEST(CaptureReaderTest, MalformedBinaryInputsGetClearErrors) {
  const std::string magic = "MTRACEB1";
  // The header record spans bytes 8..45, so the second record starts at byte 46.
  const std::string head = magic + JsonRecord("{\"type\":\"header\",\"schema_version\":1}");
  ASSERT_EQ(head.size(), 46u);
  const std::string trailer = JsonRecord("{\"type\":\"trailer\",\"complete\":true}");
  // An alloc on thread 1: addr +16, size 8, layer 0, scope 0, site 0, ticket +1.
  const std::string alloc_fields = std::string("\x01\x20\x08\x00\x00\x00\x02", 7);
  const std::vector<Malformed> cases = {
      {"magic only", magic, "bad.mtb: empty file"},
      {"event first", magic + "\x10" + alloc_fields,
       "bad.mtb: record 1 at byte 8: the first record is not a header"},
      {"future schema", magic + JsonRecord("{\"type\":\"header\",\"schema_version\":2}"),
       "bad.mtb: record 1 at byte 8: unknown schema version 2"},
      {"not JSON", magic + JsonRecord("abc"), "bad.mtb: record 1 at byte 8: not"},
      {"unknown tag", head + "\x30", "bad.mtb: record 2 at byte 46: unknown record tag 0x30"},
      {"weight on a free", head + "\x91", "record 2 at byte 46: unknown record tag 0x91"},
      {"varint past 64 bits", head + "\x10" + std::string(9, '\xff') + "\x7f",
       "record 2 at byte 46: a varint overflows 64 bits"},
      {"thread out of range", head + "\x10" + Varint(uint64_t{1} << 33),
       "record 2 at byte 46: field 'thread' is out of range (8589934592)"},
      {"epoch out of range", head + "\x02" + Varint(uint64_t{1} << 32) + std::string(1, '\0'),
       "record 2 at byte 46: field 'epoch' is out of range"},
      {"absurd length", head + "\x01" + Varint(uint64_t{1} << 40),
       "record 2 at byte 46: a record of 1099511627776 bytes"},
      {"weight below one", head + "\x90" + alloc_fields + Double(0.5),
       "record 2 at byte 46: field 'weight' must be a number from 1 to 1e15"},
      {"weight not a number", head + "\x94" + alloc_fields + Double(std::nan("")),
       "record 2 at byte 46: field 'weight' must be a number from 1 to 1e15"},
      {"event in a JSON record",
       head + JsonRecord("{\"type\":\"arena_reset\",\"t\":1,\"thread\":1,\"layer\":0}"),
       "record 2 at byte 46: a JSON record holds an event"},
      {"empty JSON record", head + JsonRecord(""), "record 2 at byte 46: an empty JSON record"},
      {"table line missing a field", head + JsonRecord("{\"type\":\"layer\",\"id\":1}"),
       "record 2 at byte 46: a 'layer' line needs field 'name'"},
      {"second header", head + head.substr(8), "record 2 at byte 46: a second header"},
      {"after the trailer", head + trailer + "\x02\x01\x02",
       "record 3 at byte 82: content after the trailer"},
  };
  ExpectClearErrors(cases, "bad.mtb");
}

// A capture cut off inside its last record (a crash or a full disk while it was written)
// is read up to that record, which is left out and said; a bad record anywhere else is
// still an error (above).
TEST(CaptureReaderTest, ACaptureCutInsideItsLastRecordIsReadUpToIt) {
  const std::string header =
      "{\"type\":\"header\",\"format\":\"memtrace-jsonl\",\"schema_version\":1,\"pid\":1}\n";
  const std::string magic = std::string(kBinaryMagic, kBinaryMagicSize);
  const std::string head =
      magic + JsonRecord("{\"type\":\"header\",\"schema_version\":1,\"pid\":7}");
  const std::string alloc_fields = std::string("\x01\x20\x08\x00\x00\x00\x02", 7);
  // Each text ends with a record cut off; `whole` is the part before that record.
  struct Cut {
    const char* what;
    std::string whole;
    std::string cut_record;
  };
  const std::vector<Cut> cuts = {
      {"a line cut off", header, "{\"type\":\"alloc\",\"t\":1,\"thr"},
      {"a varint cut off", head, "\x10\x80"},
      {"a weight cut off", head, "\x90" + alloc_fields + "\x01\x02"},
      {"a length past the end", head, "\x01\x50{}"},
  };
  for (const Cut& c : cuts) {
    CaptureReadStats stats;
    uint64_t records = 0;
    const absl::Status s = ReadCaptureText(
        c.whole + c.cut_record, "cut",
        [&](const CaptureRecord&) {
          ++records;
          return absl::OkStatus();
        },
        &stats);
    EXPECT_TRUE(s.ok()) << c.what << ": " << s;
    EXPECT_EQ(records, 1u) << c.what << ": the header, and nothing of the cut record";
    const std::string said =
        c.whole == header
            ? absl::StrCat("line 2 is cut off (", c.cut_record.size(), " bytes of it are there)")
            : absl::StrCat("record 2 at byte ", c.whole.size(), " is cut off (",
                           c.cut_record.size(), " bytes of it are there)");
    EXPECT_EQ(stats.cut, said) << c.what;
    EXPECT_FALSE(stats.has_trailer) << c.what;
  }
  // A last line without its newline that parses is a whole line, not a cut.
  CaptureReadStats whole;
  ASSERT_TRUE(ReadCaptureText(header + "{\"type\":\"trailer\",\"complete\":true}", "whole",
                              [](const CaptureRecord&) { return absl::OkStatus(); }, &whole)
                  .ok());
  EXPECT_TRUE(whole.cut.empty()) << whole.cut;
  EXPECT_TRUE(whole.has_trailer);
}

TEST(CaptureReaderTest, BinaryRecordsDecodeWithTheirEpochAndSkippablesAreIgnored) {
  const std::string text =
      "MTRACEB1" + JsonRecord("{\"type\":\"header\",\"schema_version\":1}") +
      "\x02\x07" + Varint(2000) +                       // epoch 7, t = 0 + 1000 (zigzag)
      "\x40\x03xyz" +                                   // a later version's record
      std::string("\x10\x05\x40\x08\x01\x02\x00\x06", 8) +  // alloc, thread 5
      std::string("\x11\x05\x00\x01\x02\x01", 6) +     // free: same addr, of = ticket - 1
      JsonRecord("{\"type\":\"trailer\",\"complete\":true}");
  std::vector<CaptureRecord> records;
  CaptureReadStats stats;
  const absl::Status s = ReadCaptureText(
      text, "ok.mtb",
      [&](const CaptureRecord& r) {
        records.push_back(r);
        return absl::OkStatus();
      },
      &stats);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(stats.events, 2u);
  EXPECT_TRUE(stats.has_trailer);
  EXPECT_EQ(stats.bytes, text.size());
  const CaptureRecord& alloc = records[1];
  EXPECT_EQ(alloc.type, LineType::kAlloc);
  EXPECT_EQ(alloc.line, 4u) << "records are numbered, epoch and skipped ones included";
  EXPECT_EQ(alloc.t, 1000);
  EXPECT_EQ(alloc.epoch, 7u);
  EXPECT_EQ(alloc.thread, 5u);
  EXPECT_EQ(alloc.addr, 32u);
  EXPECT_EQ(alloc.size, 8u);
  EXPECT_EQ(alloc.layer, 1u);
  EXPECT_EQ(alloc.scope, 2u);
  EXPECT_EQ(alloc.site, 0u);
  EXPECT_EQ(alloc.ticket, 3u);
  EXPECT_FALSE(alloc.has_weight);
  const CaptureRecord& free = records[2];
  EXPECT_EQ(free.type, LineType::kFree);
  EXPECT_EQ(free.addr, 32u);
  EXPECT_EQ(free.layer, 1u);
  EXPECT_EQ(free.ticket, 4u);
  EXPECT_EQ(free.of, 3u);
  EXPECT_EQ(free.t, 1000);
}

TEST(CaptureReaderTest, MissingFileIsNotFound) {
  const absl::Status s = ReadCapture("/nonexistent/capture.jsonl",
                                     [](const CaptureRecord&) { return absl::OkStatus(); });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("/nonexistent/capture.jsonl"), std::string::npos);
}

TEST(CaptureReaderTest, UnknownFieldsAreIgnored) {
  const std::string text =
      "{\"type\":\"header\",\"schema_version\":1,\"future\":{\"x\":[1,2]}}\n"
      "{\"type\":\"trailer\",\"complete\":false,\"integrity\":{\"complete\":false}}\n";
  CaptureReadStats stats;
  const absl::Status s = ReadCaptureText(
      text, "ok.jsonl", [](const CaptureRecord&) { return absl::OkStatus(); }, &stats);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_TRUE(stats.has_header);
  EXPECT_TRUE(stats.has_trailer);
  EXPECT_EQ(stats.events, 0u);
}

TEST(CaptureReaderTest, StacksModulesAndSampleWeightsAreDecoded) {
  const std::string text =
      "{\"type\":\"header\",\"schema_version\":1,\"source\":\"preload\"}\n"
      "{\"type\":\"module\",\"path\":\"/usr/bin/prog\",\"start\":\"0x400000\","
      "\"end\":\"0x401000\",\"offset\":\"0x1000\",\"build_id\":\"ab12\"}\n"
      "{\"type\":\"site\",\"id\":0,\"addr\":\"0x400010\",\"frames\":[\"0x400010\",\"0x400abc\"]}\n"
      "{\"type\":\"site\",\"id\":1,\"addr\":\"0xffffffffffffffff\",\"other\":true}\n"
      "{\"type\":\"alloc\",\"t\":1,\"thread\":1,\"addr\":\"0x10\",\"size\":8,\"layer\":0,"
      "\"scope\":0,\"site\":0,\"ticket\":1,\"weight\":64.5}\n"
      "{\"type\":\"trailer\",\"complete\":true}\n";
  std::vector<CaptureRecord> records;
  const absl::Status s = ReadCaptureText(text, "stacks.jsonl", [&](const CaptureRecord& r) {
    records.push_back(r);
    return absl::OkStatus();
  });
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(records.size(), 6u);
  EXPECT_EQ(records[0].source, "preload");
  EXPECT_NE(records[0].raw.find("\"preload\""), std::string::npos);
  EXPECT_EQ(records[1].type, LineType::kModule);
  EXPECT_EQ(records[1].path, "/usr/bin/prog");
  EXPECT_EQ(records[1].start, 0x400000u);
  EXPECT_EQ(records[1].end, 0x401000u);
  EXPECT_EQ(records[1].offset, 0x1000u);
  EXPECT_EQ(records[1].build_id, "ab12");
  EXPECT_EQ(records[2].frames, (std::vector<uint64_t>{0x400010, 0x400abc}));
  EXPECT_FALSE(records[2].other);
  EXPECT_TRUE(records[3].other);
  EXPECT_TRUE(records[3].frames.empty());
  EXPECT_DOUBLE_EQ(records[4].weight, 64.5);
  EXPECT_DOUBLE_EQ(records[5].weight, 1.0);
}

}  // namespace
}  // namespace memtrace
