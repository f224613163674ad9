// Copyright 2026 The memtrace Authors.
//
// The capture reader (analysis/capture_reader.h): malformed JSONL and binary input, each
// with the message it must produce; files that are not captures; a capture cut inside its
// last record, read up to it, or inside its header, which says so; zstd streams cut short;
// lines past the length limit; devices and FIFOs; binary records with their epochs,
// skippable records, stacks, modules and sample weights decoded; unknown fields ignored.

#include "analysis/capture_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "sinks/binary_encoding.h"
#include "sinks/zstd_file_stream.h"
#include "tests/test_paths.h"

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

// A binary event decoded into a batch's record writes the fields events carry, and the
// consumer on the other thread reads them: they lie in the record's first two cache
// lines (capture_reader.h), which a record starts (alignas(64)).
TEST(CaptureReaderTest, AnEventsFieldsLieInItsRecordsFirstTwoCacheLines) {
  EXPECT_EQ(alignof(CaptureRecord), 64u);
  CaptureRecord r;
  const auto* base = reinterpret_cast<const char*>(&r);
  auto within = [&](const auto& field) {
    const auto* at = reinterpret_cast<const char*>(&field);
    return at >= base && at + sizeof(field) <= base + 128;
  };
  EXPECT_TRUE(within(r.type) && within(r.line) && within(r.t) && within(r.epoch) &&
              within(r.thread) && within(r.addr) && within(r.size) && within(r.ticket) &&
              within(r.of) && within(r.layer) && within(r.scope) && within(r.outer) &&
              within(r.site) && within(r.label) && within(r.category) &&
              within(r.has_delta) && within(r.delta) && within(r.bytes) &&
              within(r.mono_ns) && within(r.has_weight) && within(r.weight));
}

TEST(CaptureReaderTest, MalformedInputsGetClearErrors) {
  const std::string header = "{\"type\":\"header\",\"schema_version\":1}\n";
  const std::vector<Malformed> cases = {
      {"empty file", "", "empty file"},
      {"not JSON", "not json\n", "bad.jsonl:1: this is not a memtrace capture"},
      {"broken JSON", "{\"type\":\n", "bad.jsonl:1: not JSON"},
      {"not an object", "[1,2]\n",
       "bad.jsonl:1: this is not a memtrace capture (one begins with a header line, "
       "{\"type\":\"header\",...}, or with the bytes MTRACEB3): not a JSON object"},
      {"no header", "{\"type\":\"trailer\",\"complete\":true}\n", "first line is not a header"},
      {"future schema", "{\"type\":\"header\",\"schema_version\":2}\n",
       "unknown schema version 2"},
      {"missing field", header + "{\"type\":\"alloc\",\"t\":1}\n",
       "bad.jsonl:2: a 'alloc' line needs field 'thread'"},
      {"unknown type", header + "{\"type\":\"bogus\"}\n", "unknown line type 'bogus'"},
      {"thread without its kernel id", header + "{\"type\":\"thread\",\"thread\":2}\n",
       "bad.jsonl:2: a 'thread' line needs field 'tid'"},
      {"thread with no kernel id", header + "{\"type\":\"thread\",\"thread\":2,\"tid\":0}\n",
       "bad.jsonl:2: field 'tid' must be a kernel thread id"},
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
  ExpectClearErrors({{"v without X", "v 1\nnot json\n",
                      "other.bin:1: this is not a memtrace capture (one begins with a header "
                      "line, {\"type\":\"header\",...}, or with the bytes MTRACEB3): not a "
                      "JSON object"}},
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
      {"magic only", magic, "bad.mtb: the capture is cut off right after its magic"},
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

// A capture that ends before its first record does is cut off in its header (or is no
// capture at all), and the error says which and where, rather than "empty file", which
// is said of a file with no bytes only.
TEST(CaptureReaderTest, ACaptureCutBeforeItsFirstRecordEndsSaysWhereItIsCut) {
  const std::string magic = std::string(kBinaryMagic, kBinaryMagicSize);
  const std::string header = "{\"type\":\"header\",\"schema_version\":1}";
  const std::string header_record = JsonRecord(header);
  const auto error = [](const std::string& text, const std::string& name) {
    return ReadCaptureText(text, name, [](const CaptureRecord&) { return absl::OkStatus(); });
  };
  for (size_t n = 1; n < header_record.size(); ++n) {
    const absl::Status s = error(magic + header_record.substr(0, n), "cut.mtb");
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << n;
    EXPECT_NE(s.message().find(absl::StrCat(
                  "cut.mtb: the capture is cut off inside its header record (record 1 at byte ",
                  magic.size(), "; ", n, " bytes of it are there), so there is nothing to read")),
              std::string::npos)
        << s;
  }
  for (size_t n = 1; n < header.size(); ++n) {
    const absl::Status s = error(header.substr(0, n), "cut.jsonl");
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << n;
    EXPECT_NE(s.message().find(absl::StrCat(
                  "cut.jsonl: the capture is cut off inside its first line, the header (", n,
                  " bytes of it are there, without a newline)")),
              std::string::npos)
        << s;
  }
  // NUL bytes (a hole a crash or a full disk left) and other control bytes begin no capture;
  // their error comes at once, not after a search for the end of a line.
  for (const char c : {'\0', '\x01', '\x1b', '\x7f'}) {
    const absl::Status s = error(std::string(1000, c), "junk.bin");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    char hex[8];
    snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(c));
    EXPECT_NE(s.message().find(absl::StrCat("junk.bin: not a memtrace capture: it starts with "
                                            "byte ", hex, ", and a capture starts with its "
                                            "header line")),
              std::string::npos)
        << s;
  }
  // Text that does not begin as a JSON object is not a cut header; its line says why.
  EXPECT_NE(error("hello", "other.txt")
                .message()
                .find("other.txt:1: this is not a memtrace capture (one begins with a header "
                      "line"),
            std::string::npos);
  EXPECT_NE(error("", "empty.mtb").message().find("empty.mtb: empty file"), std::string::npos);
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteFile(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A JSONL capture of `allocs` allocations, a line each.
std::string JsonlCapture(int allocs) {
  std::string text = "{\"type\":\"header\",\"schema_version\":1}\n";
  for (int i = 0; i < allocs; ++i) {
    absl::StrAppend(&text, "{\"type\":\"alloc\",\"t\":", 1000 + 7 * i,
                    ",\"thread\":1,\"addr\":\"0x", absl::Hex(0x10000 + 48 * i), "\",\"size\":",
                    8 + i % 97, ",\"layer\":0,\"scope\":0,\"site\":0,\"ticket\":", i + 1, "}\n");
  }
  return text + "{\"type\":\"trailer\",\"complete\":true}\n";
}

// `text` compressed by the sink's writer: in one Write() that ends the frame, as `memtrace
// convert` and a capture that fits the sink's buffer write it, or (`end_apart`) flushed,
// and the frame ended by a Write() of its own, as the sink ends it at Finish().
std::string Zstd(const std::string& text, bool end_apart) {
  const std::string path = TempDir() + "/compressed.zst";
  FILE* f = fopen(path.c_str(), "w");
  EXPECT_NE(f, nullptr);
  ZstdFileStream zstd(/*level=*/3, /*checksum=*/true);
  size_t written = 0;
  bool ok = zstd.ok() && zstd.Write(text, /*end_frame=*/!end_apart, f, &written);
  if (end_apart) ok = ok && zstd.Write({}, /*end_frame=*/true, f, &written);
  EXPECT_TRUE(ok);
  fclose(f);
  return FileBytes(path);
}

// What libzstd decompresses `compressed`, perhaps cut short, to.
std::string Decompressed(std::string_view compressed) {
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  std::string out;
  std::string buffer(ZSTD_DStreamOutSize(), '\0');
  ZSTD_inBuffer in{compressed.data(), compressed.size(), 0};
  for (;;) {
    ZSTD_outBuffer o{buffer.data(), buffer.size(), 0};
    const size_t r = ZSTD_decompressStream(dctx, &o, &in);
    if (ZSTD_isError(r)) {
      ADD_FAILURE() << ZSTD_getErrorName(r);
      break;
    }
    out.append(buffer.data(), o.pos);
    if (in.pos == in.size && o.pos < o.size) break;
  }
  ZSTD_freeDCtx(dctx);
  return out;
}

// Where each block of the zstd frame `z` ends, from the frame's layout (RFC 8878, 3.1.1).
std::vector<size_t> BlockEnds(std::string_view z) {
  const auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(z[i])); };
  const uint32_t descriptor = byte(4);
  const bool single_segment = (descriptor >> 5) & 1;
  const size_t dictionary_id[] = {0, 1, 2, 4};
  const size_t content_size[] = {single_segment ? 1u : 0u, 2, 4, 8};
  size_t pos = 5 + (single_segment ? 0 : 1) + dictionary_id[descriptor & 3] +
               content_size[descriptor >> 6];
  std::vector<size_t> ends;
  for (bool last = false; !last && pos + 3 <= z.size();) {
    const uint32_t block = byte(pos) | byte(pos + 1) << 8 | byte(pos + 2) << 16;
    last = block & 1;
    pos += 3 + (((block >> 1) & 3) == 1 ? 1 : block >> 3);  // an RLE block holds one byte
    ends.push_back(pos);
  }
  return ends;
}

struct Read {
  absl::Status status;
  CaptureReadStats stats;
  uint64_t records = 0;
  bool saw_trailer = false;
};

Read ReadFileCapture(const std::string& path) {
  Read r;
  r.status = ReadCapture(
      path,
      [&](const CaptureRecord& rec) {
        ++r.records;
        r.saw_trailer |= rec.type == LineType::kTrailer;
        return absl::OkStatus();
      },
      &r.stats);
  return r;
}

// A zstd frame cut in its end (the checksum; after a flush, the empty last block too) has
// decompressed to the whole capture, trailer and all; but it was not finished, so it is
// cut, and its trailer, which says it was, is left out.
TEST(CaptureReaderTest, AZstdFrameCutInItsEndIsCutAndItsTrailerLeftOut) {
  const std::string text = JsonlCapture(50);
  const uint64_t lines = std::count(text.begin(), text.end(), '\n');
  const size_t trailer_start = text.rfind('\n', text.size() - 2) + 1;
  const std::string path = TempDir() + "/frame_end.jsonl.zst";
  for (const bool end_apart : {false, true}) {
    const std::string z = Zstd(text, end_apart);
    size_t whole_cuts = 0;
    for (size_t cut = 1; cut <= 8; ++cut) {
      if (Decompressed(z.substr(0, z.size() - cut)) != text) continue;  // a block is cut
      ++whole_cuts;
      WriteFile(path, z.substr(0, z.size() - cut));
      const Read r = ReadFileCapture(path);
      ASSERT_TRUE(r.status.ok()) << cut << ": " << r.status;
      EXPECT_EQ(r.records, lines - 1) << cut;
      EXPECT_FALSE(r.saw_trailer) << cut;
      EXPECT_FALSE(r.stats.has_trailer) << cut;
      EXPECT_EQ(r.stats.lines, lines - 1) << cut;
      EXPECT_EQ(r.stats.bytes, trailer_start) << cut;
      EXPECT_EQ(r.stats.cut, absl::StrCat("the zstd stream is cut off at compressed byte ",
                                          z.size() - cut, ", before its frame's end; the "
                                          "trailer (line ", lines, ") is left out, as the "
                                          "stream that holds it was not finished"));
    }
    EXPECT_GE(whole_cuts, 4u) << "the checksum's 4 bytes";
    // Whole, the trailer is read, by either reader.
    WriteFile(path, z);
    const Read r = ReadFileCapture(path);
    ASSERT_TRUE(r.status.ok()) << r.status;
    EXPECT_EQ(r.records, lines);
    EXPECT_TRUE(r.saw_trailer);
    EXPECT_TRUE(r.stats.has_trailer);
    EXPECT_TRUE(r.stats.cut.empty()) << r.stats.cut;
    CaptureBatch batch(7);
    std::vector<LineType> types;
    const absl::Status batched = ReadCaptureInBatches(
        path, &batch, [&](CaptureBatch* full, bool last) -> absl::StatusOr<CaptureBatch*> {
          for (size_t i = 0; i < full->size; ++i) types.push_back(full->records[i].type);
          return last ? nullptr : full;
        });
    ASSERT_TRUE(batched.ok()) << batched;
    ASSERT_EQ(types.size(), lines);
    EXPECT_EQ(types.back(), LineType::kTrailer);
  }
}

// zstd decodes a block only whole: a stream cut short yields what its whole blocks hold.
// The sink's writer ends a block every ZstdFileStream::kBlockInputBytes, so that a capture
// cut short keeps what was written before the last such block, small captures included.
TEST(CaptureReaderTest, AZstdCaptureCutShortIsReadUpToItsLastWholeBlock) {
  const std::string text = JsonlCapture(700);
  ASSERT_GT(text.size(), ZstdFileStream::kBlockInputBytes);  // two blocks of ours at least
  ASSERT_LT(text.size(), size_t{ZSTD_BLOCKSIZE_MAX}) << "one block of zstd's own could hold it";
  const uint64_t lines = std::count(text.begin(), text.end(), '\n');
  const std::string z = Zstd(text, /*end_apart=*/false);
  size_t before = 0;
  for (const size_t end : BlockEnds(z)) {
    const size_t now = Decompressed(z.substr(0, end)).size();
    EXPECT_LE(now - before, ZstdFileStream::kBlockInputBytes) << "the block ending at " << end;
    before = now;
  }
  EXPECT_EQ(before, text.size());

  const std::string path = TempDir() + "/cut_short.jsonl.zst";
  for (size_t cut = 1; cut < z.size(); cut += 41) {
    const std::string d = Decompressed(z.substr(0, cut));
    ASSERT_EQ(text.compare(0, d.size(), d), 0);
    // The lines whole in `d` (a last one whole but for its newline too); the trailer is
    // left out, as its frame does not end.
    uint64_t whole = std::count(d.begin(), d.end(), '\n');
    if (!d.empty() && d.back() != '\n' && text[d.size()] == '\n') ++whole;
    whole = std::min(whole, lines - 1);
    WriteFile(path, z.substr(0, cut));
    const Read r = ReadFileCapture(path);
    if (d.empty()) {
      EXPECT_EQ(r.status.code(), absl::StatusCode::kDataLoss) << cut;
      EXPECT_NE(r.status.message().find(absl::StrCat(
                    "the zstd stream is cut off at compressed byte ", cut,
                    ", before its first block ends")),
                std::string::npos)
          << r.status;
      continue;
    }
    ASSERT_TRUE(r.status.ok()) << cut << ": " << r.status;
    EXPECT_EQ(r.records, whole) << cut;
    EXPECT_EQ(r.stats.lines, whole) << cut;
    EXPECT_FALSE(r.stats.has_trailer) << cut;
    EXPECT_NE(r.stats.cut.find("cut off"), std::string::npos) << cut << ": " << r.stats.cut;
  }
  // Cut inside its last block, as a crash may leave it: the blocks before are read.
  WriteFile(path, z.substr(0, z.size() - 20));
  const Read half = ReadFileCapture(path);
  ASSERT_TRUE(half.status.ok()) << half.status;
  EXPECT_GT(half.records, 1u);
}

// A line past the limit (what one JSON record of a binary capture may hold, 64 MiB:
// docs/capture-format.md) is refused with its number and offset as soon as it passes the
// limit, whether its newline ever comes or not: memory stays bounded.
TEST(CaptureReaderTest, ALineLongerThanTheLimitIsRefusedWithItsNumberAndOffset) {
  const std::string header = "{\"type\":\"header\",\"schema_version\":1}\n";
  const std::string said = absl::StrCat(":2: the line at byte ", header.size(),
                                        " is longer than ", kBinaryMaxPayload, " bytes (",
                                        kBinaryMaxPayload >> 20, " MiB), the most a capture's "
                                        "line may hold");
  std::string text = header + "{\"type\":\"layer\",\"id\":1,\"name\":\"";
  text.append(kBinaryMaxPayload + 1 - (text.size() - header.size()), 'a');
  ASSERT_EQ(text.size() - header.size(), kBinaryMaxPayload + 1);
  // From a file, in chunks, with no newline to come.
  const std::string path = TempDir() + "/long_line.jsonl";
  WriteFile(path, text);
  const Read r = ReadFileCapture(path);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status.message().find(path + said), std::string::npos) << r.status;
  EXPECT_EQ(r.records, 1u);
  // In memory, with its newline and more after it.
  text += "\"}\n" + header;
  const absl::Status s = ReadCaptureText(text, "long.jsonl",
                                         [](const CaptureRecord&) { return absl::OkStatus(); });
  EXPECT_NE(s.message().find("long.jsonl" + said), std::string::npos) << s;
}

void WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n <= 0) return;  // the reader has gone (EPIPE)
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// A device holds no capture, and reading one may never end (/dev/zero): it is refused
// unopened. A FIFO is read as it comes, its first bytes once (it cannot be rewound).
TEST(CaptureReaderTest, DevicesAreRefusedAndFifosAreReadAsTheyCome) {
  const Read zero = ReadFileCapture("/dev/zero");
  EXPECT_EQ(zero.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(zero.status.message().find("'/dev/zero' is a character device, not a capture"),
            std::string::npos)
      << zero.status;

  signal(SIGPIPE, SIG_IGN);  // a writer below may outlive its reader
  const std::string fifo = TempDir() + "/capture.fifo";
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << strerror(errno);
  const std::string binary =
      std::string(kBinaryMagic, kBinaryMagicSize) +
      JsonRecord("{\"type\":\"header\",\"schema_version\":1}") + "\x02\x07" + Varint(2000) +
      std::string("\x10\x05\x40\x08\x01\x02\x00\x06", 8) +  // epoch 7, alloc on thread 5
      JsonRecord("{\"type\":\"trailer\",\"complete\":true}");
  const std::string jsonl = JsonlCapture(5);
  struct Case {
    const char* what;
    std::string bytes;
    uint64_t records;
  };
  const std::vector<Case> cases = {
      {"binary", binary, 3},
      {"binary in zstd", Zstd(binary, /*end_apart=*/true), 3},
      {"JSONL", jsonl, 7},
      {"NUL bytes", std::string(size_t{4} << 20, '\0'), 0},
  };
  for (const Case& c : cases) {
    std::thread writer([&] {
      const int fd = open(fifo.c_str(), O_WRONLY);
      if (fd < 0) return;
      WriteAll(fd, c.bytes);
      close(fd);
    });
    const Read r = ReadFileCapture(fifo);
    // A reader that never opened the FIFO would leave the writer waiting in open(): a
    // reader of our own lets it on, to find no reader when it writes.
    const int unblock = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    if (unblock >= 0) close(unblock);
    writer.join();
    EXPECT_EQ(r.records, c.records) << c.what;
    if (c.records == 0) {
      EXPECT_NE(r.status.message().find("not a memtrace capture: it starts with byte 0x00"),
                std::string::npos)
          << c.what << ": " << r.status;
      continue;
    }
    EXPECT_TRUE(r.status.ok()) << c.what << ": " << r.status;
    EXPECT_TRUE(r.stats.has_trailer) << c.what;
  }
  unlink(fifo.c_str());
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
