// Copyright 2026 The memtrace Authors.

#include "analysis/capture_reader.h"

#include <sys/stat.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "analysis/internal/capture_line_parser.h"
#include "runtime/scope_table.h"
#include "sinks/binary_encoding.h"

namespace memtrace {

// BinaryDecoder::Next()'s way into a CaptureRecord (sinks/binary_encoding.h), which
// decodes a binary event straight into its record: every field an event line may carry,
// at CaptureEvent's default, which is CaptureRecord's too. The fields only tables, the
// header and the trailer carry are not written.
static void ResetDecodedEvent(CaptureRecord& r) {
  r.thread = 0;
  r.addr = 0;
  r.size = 0;
  r.ticket = 0;
  r.of = 0;
  r.layer = 0;
  r.scope = 0;
  r.outer = 0;
  r.site = 0;
  r.label = 0;
  r.category = 0;
  r.has_delta = false;
  r.delta = 0;
  r.bytes = 0;
  r.mono_ns = 0;
  r.has_weight = false;
  r.weight = 1.0;
}
static void SetDecodedType(CaptureRecord& r, CaptureEventType type) {
  r.type = static_cast<LineType>(static_cast<uint8_t>(LineType::kAlloc) +
                                 static_cast<uint8_t>(type));
}

namespace {

using analysis_internal::CaptureLineParser;
using analysis_internal::kKnownCaptureSchema;

// The longest JSONL line, without its newline: what one JSON record of a binary capture
// may hold, as every line converts to one. Tables and events are short, but the trailer is
// not: it lists every scope (a few hundred bytes each, up to ScopeTable::kMaxPaths) and
// a timeline of up to JsonlSink::kMaxTimelineSamples rows, and the header carries any
// fields JsonlSinkOptions::header_fields adds. The bound is what keeps memory bounded on
// input without newlines (/dev/zero through a pipe, a damaged file).
constexpr uint64_t kMaxLineBytes = kBinaryMaxPayload;
// The runtime's largest layer id (LayerId is a byte).
constexpr uint32_t kMaxLayer = 0xff;

// Shared by the file and text readers: takes records in order, checks the structure,
// and hands each record to a callback or puts it in a batch (ReadCaptureInBatches()).
class StructureChecker {
 public:
  StructureChecker(std::string name,
                   const std::function<absl::Status(const CaptureRecord&)>& fn,
                   CaptureReadStats* stats)
      : parser_(std::move(name)), fn_(&fn), stats_(stats) {}
  StructureChecker(std::string name, CaptureBatch* first, const CaptureBatchSwap& swap,
                   CaptureReadStats* stats)
      : parser_(std::move(name)), batch_(first), swap_(&swap), stats_(stats) {
    batch_->size = 0;
  }

  // One JSONL line, without its newline. `last`: the capture's last line, which has no
  // newline: a line like any other, or, when it does not parse, a line cut off while it
  // was written (CaptureReadStats::cut).
  absl::Status Line(std::string_view text, bool last = false) {
    ++line_;
    stats_->lines = line_;
    json_record_start_ = stats_->bytes;
    stats_->bytes += text.size() + 1;
    if (text.empty()) return parser_.Error(line_, "empty line");
    if (stats_->has_trailer) {
      return parser_.Error(line_, "content after the trailer (two captures concatenated?)");
    }
    CaptureRecord rec;
    if (absl::Status s = parser_.Parse(text, line_, &rec); !s.ok()) {
      if (!last) return s;
      // Left out, as a binary record cut off is: not counted as read.
      NoteCut(absl::StrCat("line ", line_, " is cut off (", text.size(),
                           text.size() == 1 ? " byte" : " bytes", " of it are there)"));
      stats_->lines = --line_;
      stats_->bytes -= text.size() + 1;
      return absl::OkStatus();
    }
    return Deliver(rec);
  }

  // One record of a binary capture that begins at byte `offset` and is `size` bytes long;
  // an event's fields decoded into `event`, which EventSlot() gave.
  absl::Status Binary(const BinaryRecord& record, CaptureRecord& event, uint64_t offset,
                      size_t size) {
    ++line_;
    stats_->lines = line_;
    stats_->bytes = offset + size;
    parser_.set_binary_offset(static_cast<int64_t>(offset));
    if (stats_->has_trailer) {
      return parser_.Error(line_, "content after the trailer (two captures concatenated?)");
    }
    if (!stats_->has_header && record.kind != BinaryRecord::Kind::kJson) {
      return parser_.Error(line_, "the first record is not a header; is this a memtrace "
                                  "capture?");
    }
    switch (record.kind) {
      case BinaryRecord::Kind::kEpoch:
      case BinaryRecord::Kind::kSkipped:
        return absl::OkStatus();
      case BinaryRecord::Kind::kJson: {
        if (record.json.empty()) return parser_.Error(line_, "an empty JSON record");
        json_record_start_ = offset;
        CaptureRecord rec;
        if (absl::Status s = parser_.Parse(record.json, line_, &rec); !s.ok()) return s;
        if (rec.type >= LineType::kAlloc && rec.type <= LineType::kIntervalEnd) {
          return parser_.Error(line_, "a JSON record holds an event; JSON records hold only "
                                      "the header, table lines and the trailer");
        }
        return Deliver(rec);
      }
      case BinaryRecord::Kind::kEvent:
        event.line = line_;
        event.t = record.t;
        event.epoch = record.epoch;
        return DeliverAfterHeader(event);
    }
    return absl::OkStatus();
  }

  absl::Status End(const std::string& name) const {
    if (line_ == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": empty file: a capture starts with a header line"));
    }
    return absl::OkStatus();
  }

  // The capture ends inside a record: what is there of it is left out.
  void NoteCut(std::string what) {
    if (stats_->cut.empty()) stats_->cut = std::move(what);
  }

  // A zstd stream's trailer waits for the end of the frame that holds it: a frame that
  // does not end was not finished, whatever it decompressed to, and a capture with a
  // trailer reads as finished. The trailer is the last record (anything after it is an
  // error, which holding it does not change), so nothing comes after it either way.
  void HoldTrailer() { hold_trailer_ = true; }
  // The frame ended: the trailer held, if any, goes to fn_ or the batch.
  absl::Status ReleaseTrailer() {
    if (!held_trailer_) return absl::OkStatus();
    held_trailer_ = false;
    return Emit(trailer_);
  }
  // The frame did not end: the trailer held, if any, is left out, as a record cut off is
  // (not counted as read). Its number, or 0 when none was held.
  uint64_t DropTrailer() {
    if (!held_trailer_) return 0;
    held_trailer_ = false;
    stats_->has_trailer = false;
    taking_events_ = batch_ != nullptr;
    stats_->lines = trailer_.line - 1;
    stats_->bytes = trailer_start_;
    return trailer_.line;
  }

  CaptureLineParser& parser() { return parser_; }
  uint64_t records() const { return line_; }
  // JSONL: the byte offset of the next line, every line so far counted with its newline.
  uint64_t bytes() const { return stats_->bytes; }

  // Batches: the last batch, partly filled, to swap_ when the reading has ended; `read`
  // is how it ended. swap_'s error, if any, comes before the reading's.
  absl::Status Finish(absl::Status read) {
    if (batch_ == nullptr || swap_failed_ || batch_->size == 0) return read;
    batch_->read = *stats_;
    absl::StatusOr<CaptureBatch*> none = (*swap_)(batch_, /*last=*/true);
    return none.ok() ? read : none.status();
  }

  // Where a binary event is decoded: the record reused for every event, or its slot in
  // the batch (cleared first if it held a whole record, as the decoder writes only the
  // fields events carry).
  __attribute__((always_inline)) CaptureRecord& EventSlot() {
    if (batch_ == nullptr) return event_;
    const size_t i = batch_->size;
    if (__builtin_expect(batch_->whole_slots != 0, 0) && batch_->whole[i]) {
      batch_->records[i] = CaptureRecord{};
      batch_->whole[i] = false;
      --batch_->whole_slots;
    }
    return batch_->records[i];
  }

  // Binary()'s way for the usual binary event, decoded in its slot (EventSlot()) and
  // ending at byte `end`: the same checks and counts, taken inline. False, having changed
  // nothing, for any event it does not take (no batch, before the header or after the
  // trailer, out of range, or the batch's last slot, which swaps): Binary() takes those.
  __attribute__((always_inline)) bool TakeEvent(CaptureRecord& event,
                                                const BinaryRecord& record, uint64_t end) {
    if (!taking_events_) return false;
    const size_t i = batch_->size;
    if (i + 1 >= batch_->records.size()) return false;
    if (event.layer > kMaxLayer || std::max(event.scope, event.outer) > ScopeTable::kMaxPaths) {
      return false;  // DeliverAfterHeader() says which is out of range
    }
    event.line = ++line_;
    event.t = record.t;
    event.epoch = record.epoch;
    stats_->lines = line_;
    stats_->bytes = end;
    ++stats_->events;
    batch_->size = i + 1;
    return true;
  }

 private:
  absl::Status Deliver(CaptureRecord& rec) {
    if (!stats_->has_header) {
      if (rec.type != LineType::kHeader) {
        return parser_.Error(line_, "the first line is not a header (type \"header\"); is "
                                    "this a memtrace capture?");
      }
      if (rec.schema_version != kKnownCaptureSchema) {
        return parser_.Error(line_, absl::StrCat("unknown schema version ",
                                                 rec.schema_version, "; this reader knows "
                                                 "version ", kKnownCaptureSchema,
                                                 ". Use a memtrace built for that version"));
      }
      stats_->has_header = true;
      taking_events_ = batch_ != nullptr;
    } else if (rec.type == LineType::kHeader) {
      return parser_.Error(line_, "a second header (two captures concatenated?)");
    }
    return DeliverAfterHeader(rec);
  }

  // The rest of Deliver(), for a record that is not the header and comes after it: all of
  // it for a binary event, which Binary() has checked comes after the header.
  __attribute__((always_inline)) absl::Status DeliverAfterHeader(CaptureRecord& rec) {
    // The runtime has 256 layers (LayerId) and numbers scopes densely up to
    // ScopeTable::kMaxPaths; a record beyond them was not written by it (and a replay
    // sizes its tables by these ids).
    if (rec.layer > kMaxLayer || (rec.type == LineType::kLayer && rec.id > kMaxLayer)) {
      return parser_.Error(line_, absl::StrCat("layer ", std::max(rec.layer, rec.id),
                                               " is out of range: layers are 0 to ",
                                               kMaxLayer));
    }
    // Two by two: std::max of a list went through memory, a stall every record.
    uint32_t scope = std::max(rec.scope, rec.outer);
    if (rec.type == LineType::kScope) scope = std::max(scope, std::max(rec.id, rec.parent));
    if (scope > ScopeTable::kMaxPaths) {
      return parser_.Error(line_, absl::StrCat("scope ", scope,
                                               " is out of range: scopes are 0 to ",
                                               ScopeTable::kMaxPaths));
    }
    if (rec.type == LineType::kTrailer) {
      stats_->has_trailer = true;
      taking_events_ = false;
      if (hold_trailer_) return Hold(rec);
    }
    if (rec.type >= LineType::kAlloc && rec.type <= LineType::kIntervalEnd) ++stats_->events;
    return Emit(rec);
  }

  // HoldTrailer()'s: the trailer, and where it begins, kept for ReleaseTrailer() or
  // DropTrailer().
  __attribute__((noinline)) absl::Status Hold(CaptureRecord& trailer) {
    trailer_ = std::move(trailer);
    trailer_start_ = json_record_start_;
    held_trailer_ = true;
    return absl::OkStatus();
  }

  // `rec`, checked, to fn_, or into the batch: an event decoded in its slot (EventSlot())
  // is there already, any other record is moved there.
  __attribute__((always_inline)) absl::Status Emit(CaptureRecord& rec) {
    if (batch_ == nullptr) return (*fn_)(rec);
    const size_t i = batch_->size;
    if (&rec != &batch_->records[i]) {
      batch_->records[i] = std::move(rec);
      if (!batch_->whole[i]) {
        batch_->whole[i] = true;
        ++batch_->whole_slots;
      }
    }
    ++batch_->size;
    if (__builtin_expect(!batch_->full(), 1)) return absl::OkStatus();
    return Swap();
  }

  __attribute__((noinline)) absl::Status Swap() {
    batch_->read = *stats_;
    absl::StatusOr<CaptureBatch*> next = (*swap_)(batch_, /*last=*/false);
    if (!next.ok()) {
      swap_failed_ = true;
      return next.status();
    }
    batch_ = *next;
    batch_->size = 0;
    return absl::OkStatus();
  }

  CaptureLineParser parser_;
  // Either fn_, or batch_ and swap_.
  const std::function<absl::Status(const CaptureRecord&)>* fn_ = nullptr;
  CaptureBatch* batch_ = nullptr;
  const CaptureBatchSwap* swap_ = nullptr;
  bool swap_failed_ = false;
  CaptureReadStats* stats_;
  // TakeEvent() may take events: there is a batch, the header has come and no trailer.
  bool taking_events_ = false;
  uint64_t line_ = 0;
  uint64_t json_record_start_ = 0;  // the byte offset of the last JSON line or record
  // HoldTrailer(): the trailer, until the zstd frame that holds it is known to end.
  bool hold_trailer_ = false;
  bool held_trailer_ = false;
  CaptureRecord trailer_;
  uint64_t trailer_start_ = 0;
  // Without a batch, every binary event is decoded into this one (EventSlot()), so that
  // an event neither builds nor destroys the strings and the vector a CaptureRecord holds.
  CaptureRecord event_;
};

static_assert(static_cast<uint8_t>(LineType::kIntervalEnd) -
                      static_cast<uint8_t>(LineType::kAlloc) + 1 ==
                  kCaptureEventTypes,
              "the event line types and CaptureEventType are in the same order");
static_assert(static_cast<uint8_t>(LineType::kRemapTarget) -
                  static_cast<uint8_t>(LineType::kAlloc) ==
              static_cast<uint8_t>(CaptureEventType::kRemapTarget));
static_assert(static_cast<uint8_t>(LineType::kCensus) - static_cast<uint8_t>(LineType::kAlloc) ==
              static_cast<uint8_t>(CaptureEventType::kCensus));

// What a file that is not a capture is, from its first bytes (`head`: at least the first
// kBinaryMagicSize, or the whole file when it is shorter), with what to do instead; ""
// when it may be a capture. Files people pass by mistake: a program, a compressed or
// archived capture, another profiler's data.
std::string ForeignFormat(std::string_view head) {
  if (head.starts_with("\x7f" "ELF")) {
    return "an ELF file (a program or a library), not a capture: to trace a program, run "
           "`memtrace run -- PROGRAM`, which writes the capture";
  }
  const auto compressed = [](const char* what, const char* tool) {
    return absl::StrCat(what, "-compressed data; memtrace reads captures plain or "
                        "zstd-compressed: decompress it with `", tool, "` first");
  };
  if (head.starts_with("\x1f\x8b")) return compressed("gzip", "gunzip");
  if (head.starts_with("\xfd" "7zXZ")) return compressed("xz", "unxz");
  if (head.starts_with("BZh")) return compressed("bzip2", "bunzip2");
  if (head.starts_with("\x04\x22\x4d\x18")) return compressed("lz4", "unlz4");
  if (head.starts_with("PK\x03\x04")) return "a zip archive, not a capture: unzip it first";
  if (head.starts_with("PERFILE2")) {
    return "perf's data (perf.data), not a capture: open it with `perf report`";
  }
  // heaptrack's format: a version line ("v 10400 3"), then the command ("X /bin/true").
  if (head.starts_with("v ") && head.substr(0, 64).find("\nX ") != std::string_view::npos) {
    return "a heaptrack capture, not memtrace's: open it with heaptrack_print or "
           "heaptrack_gui (`memtrace run -- PROGRAM` writes memtrace's)";
  }
  return "";
}

// A capture's bytes, in chunks of any size, in order: tells the encodings apart by the
// first bytes, then splits lines or decodes binary records and hands them to `checker`.
class CaptureBytes {
 public:
  CaptureBytes(const std::string& name, StructureChecker& checker)
      : name_(name), checker_(checker) {}

  absl::Status Feed(std::string_view chunk) {
    if (mode_ == Mode::kUnknown) {
      pending_.append(chunk.data(), chunk.size());
      if (pending_.size() < kBinaryMagicSize) return absl::OkStatus();
      std::string first = std::move(pending_);
      pending_.clear();
      if (first.starts_with(kBinaryMagicStem) && BinaryCaptureVersion(first) == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            name_, ": a binary capture of encoding version '",
            absl::CEscape(first.substr(kBinaryMagicStem.size(), 1)),
            "' (its magic is \"", absl::CEscape(first.substr(0, kBinaryMagicSize)),
            "\"); this memtrace reads versions 1 to ", kBinaryVersion,
            ": read it with the memtrace that wrote it, or a newer one"));
      }
      if (absl::Status s = Decide(first); !s.ok()) return s;
      return Feed(first);
    }
    return mode_ == Mode::kText ? FeedText(chunk) : FeedBinary(chunk);
  }

  absl::Status End() {
    // Fewer than kBinaryMagicSize bytes came.
    if (mode_ == Mode::kUnknown && !pending_.empty() &&
        kBinaryMagicStem.starts_with(pending_)) {
      return absl::DataLossError(absl::StrCat(
          name_, ": the binary capture's magic is cut off after ", pending_.size(),
          " bytes: the capture was truncated"));
    }
    if (mode_ == Mode::kUnknown) {
      // No bytes at all are left to StructureChecker::End() ("empty file").
      if (pending_.empty()) return absl::OkStatus();
      std::string first = std::move(pending_);
      pending_.clear();
      if (absl::Status s = Decide(first); !s.ok()) return s;
      if (absl::Status s = Feed(first); !s.ok()) return s;
    }
    if (mode_ == Mode::kText) return EndText();
    if (!pending_.empty()) {
      checker_.NoteCut(absl::StrCat("record ", checker_.records() + 1, " at byte ", offset_,
                                    " is cut off (", pending_.size(),
                                    pending_.size() == 1 ? " byte" : " bytes",
                                    " of it are there)"));
    }
    if (checker_.records() != 0) return absl::OkStatus();
    // A binary capture holds a record only after its header (StructureChecker::Binary()),
    // so the cut, if any, is in the header: there is nothing to read.
    if (pending_.empty()) {
      return absl::DataLossError(absl::StrCat(
          name_, ": the capture is cut off right after its magic (its first ",
          kBinaryMagicSize, " bytes): the header record that comes next is missing, so there "
          "is nothing to read. It was truncated while it was written (a crash, a kill or a "
          "full disk); record it again"));
    }
    return absl::DataLossError(absl::StrCat(
        name_, ": the capture is cut off inside its header record (record 1 at byte ", offset_,
        "; ", pending_.size(), " bytes of it are there), so there is nothing to read. It "
        "was truncated while it was written (a crash, a kill or a full disk); record it "
        "again"));
  }

  // The bytes stop short of a whole stream (a cut zstd frame).
  void NoteCut(std::string what) { checker_.NoteCut(std::move(what)); }

  bool binary() const { return mode_ == Mode::kBinary; }

 private:
  enum class Mode : uint8_t { kUnknown, kText, kBinary };

  // The encoding `first` (the first bytes, at least one) begins, or why it is no capture
  // at all.
  absl::Status Decide(std::string_view first) {
    if (const std::string what = ForeignFormat(first); !what.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": this is ", what));
    }
    const int version = BinaryCaptureVersion(first);
    mode_ = version != 0 ? Mode::kBinary : Mode::kText;
    if (mode_ == Mode::kBinary) {
      decoder_.set_version(version);
      skip_magic_ = true;
      return absl::OkStatus();
    }
    // No JSON text starts with a control byte (JSON's whitespace aside): binary data, or
    // the NUL bytes of a hole a crash left, is refused here, not searched for a newline.
    // Printable text goes on, to fail as a line that is not JSON.
    const auto byte = static_cast<unsigned char>(first[0]);
    if ((byte < 0x20 && byte != '\t' && byte != '\n' && byte != '\r') || byte == 0x7f) {
      return absl::InvalidArgumentError(absl::StrCat(
          name_, ": not a memtrace capture: it starts with byte 0x",
          absl::Hex(byte, absl::kZeroPad2), ", and a capture starts with its header line ('{') "
          "or, in the binary encoding, with the magic \"", kBinaryMagic, "\". Name a capture "
          "file (`memtrace run` writes memtrace-<pid>.mtb)"));
    }
    return absl::OkStatus();
  }

  // JSONL: the next line is longer than kMaxLineBytes.
  absl::Status LineTooLong() {
    return checker_.parser().Error(
        checker_.records() + 1,
        absl::StrCat("the line at byte ", checker_.bytes(), " is longer than ", kMaxLineBytes,
                     " bytes (", kMaxLineBytes >> 20, " MiB), the most a capture's line "
                     "may hold: this is not a memtrace capture, or a damaged one"));
  }

  absl::Status EndText() {
    if (pending_.empty()) return absl::OkStatus();
    // A last line that does not parse was cut off while it was written; but a first line
    // that does not begin as a JSON object does ('{') is other text, and gets the line's
    // own error.
    const bool first = checker_.records() == 0;
    const absl::Status s = checker_.Line(pending_, /*last=*/!first || pending_[0] == '{');
    if (!s.ok() || checker_.records() != 0) return s;
    return absl::DataLossError(absl::StrCat(
        name_, ": the capture is cut off inside its first line, the header (",
        pending_.size(), " bytes of it are there, without a newline), so there is nothing "
        "to read. It was truncated while it was written (a crash, a kill or a full disk); "
        "record it again"));
  }

  // Every line is checked against kMaxLineBytes before it is kept, so pending_ never
  // holds more.
  absl::Status FeedText(std::string_view chunk) {
    size_t start = 0;
    if (!pending_.empty()) {
      const size_t nl = chunk.find('\n');
      const size_t more = nl == std::string_view::npos ? chunk.size() : nl;
      if (pending_.size() + more > kMaxLineBytes) return LineTooLong();
      if (nl == std::string_view::npos) {
        pending_.append(chunk.data(), chunk.size());
        return absl::OkStatus();
      }
      pending_.append(chunk.data(), nl);
      if (absl::Status s = checker_.Line(pending_); !s.ok()) return s;
      pending_.clear();
      start = nl + 1;
    }
    for (size_t nl; (nl = chunk.find('\n', start)) != std::string_view::npos; start = nl + 1) {
      if (nl - start > kMaxLineBytes) return LineTooLong();
      if (absl::Status s = checker_.Line(chunk.substr(start, nl - start)); !s.ok()) return s;
    }
    if (chunk.size() - start > kMaxLineBytes) return LineTooLong();
    pending_.assign(chunk.data() + start, chunk.size() - start);
    return absl::OkStatus();
  }

  absl::Status FeedBinary(std::string_view chunk) {
    if (skip_magic_) {
      // Decide() saw the whole magic at the start of this chunk.
      chunk.remove_prefix(kBinaryMagicSize);
      offset_ = kBinaryMagicSize;
      skip_magic_ = false;
    }
    std::string_view data = chunk;
    if (!pending_.empty()) {
      pending_.append(chunk.data(), chunk.size());
      data = pending_;
    }
    size_t pos = 0;
    BinaryRecord record;
    std::string error;
    while (pos < data.size()) {
      size_t used = 0;
      CaptureRecord& event = checker_.EventSlot();
      const std::string_view rest(data.data() + pos, data.size() - pos);
      // All but a chunk's last few records have room for any record's fields.
      const BinaryDecoder::Result r =
          rest.size() >= kBinaryMaxFieldBytes
              ? decoder_.NextRoomy(rest, &used, &record, &event, &error)
              : decoder_.Next(rest, &used, &record, &event, &error);
      if (r == BinaryDecoder::Result::kNeedMore) break;
      if (__builtin_expect(r == BinaryDecoder::Result::kError, 0)) {
        checker_.parser().set_binary_offset(static_cast<int64_t>(offset_));
        return checker_.parser().Error(checker_.records() + 1, error);
      }
      if (record.kind != BinaryRecord::Kind::kEvent ||
          !checker_.TakeEvent(event, record, offset_ + used)) {
        if (absl::Status s = checker_.Binary(record, event, offset_, used); !s.ok()) return s;
      }
      pos += used;
      offset_ += used;
    }
    if (data.data() == pending_.data()) {
      pending_.erase(0, pos);
    } else {
      pending_.assign(data.data() + pos, data.size() - pos);
    }
    return absl::OkStatus();
  }

  const std::string& name_;
  StructureChecker& checker_;
  Mode mode_ = Mode::kUnknown;
  bool skip_magic_ = false;
  std::string pending_;  // an unfinished line or record
  BinaryDecoder decoder_;
  uint64_t offset_ = 0;  // binary: the byte offset of pending_'s first byte
};

}  // namespace

namespace {

// A read that failed (ferror() is set, so errno is fread()'s).
absl::Status ReadError(const std::string& path) {
  const int err = errno;
  return absl::DataLossError(absl::StrCat("error reading capture '", path, "': ", strerror(err),
                                          " (errno ", err, ")"));
}

// The next bytes of `f` into `chunk`; 0 at the end of the file, or on an error (ferror()).
size_t ReadMore(FILE* f, std::string& chunk) { return fread(chunk.data(), 1, chunk.size(), f); }

// Feeds a zstd-compressed capture (one or more frames), decompressed, to `bytes`: `chunk`
// holds its first `n` compressed bytes, and is reused for the rest.
//
// zstd decodes a block only whole (its sequences are read from the block's end), so a
// stream cut short yields what its whole blocks hold, and nothing of the block it is cut
// in. A frame that does not end was not finished even when its last block is whole (the
// cut is in the checksum): the capture is cut, and the trailer, if it came, is left out.
absl::Status ReadZstd(FILE* f, const std::string& path, std::string& chunk, size_t n,
                      CaptureBytes& bytes, StructureChecker& checker) {
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  if (dctx == nullptr) return absl::ResourceExhaustedError("cannot create a zstd context");
  checker.HoldTrailer();
  std::string out(ZSTD_DStreamOutSize(), '\0');
  size_t last = 0;  // ZSTD_decompressStream's last hint: 0 when a frame is complete
  bool full = false;  // the last call filled `out`: the decoder may hold more of its output
  uint64_t offset = 0;
  uint64_t decompressed = 0;
  absl::Status status;
  for (;; n = ReadMore(f, chunk)) {
    ZSTD_inBuffer input{chunk.data(), n, 0};
    // At the end of the file (n == 0) only what the decoder holds is left to come out.
    while (input.pos < input.size || full) {
      ZSTD_outBuffer output{out.data(), out.size(), 0};
      last = ZSTD_decompressStream(dctx, &output, &input);
      if (ZSTD_isError(last)) {
        ZSTD_freeDCtx(dctx);
        return absl::DataLossError(absl::StrCat(
            "capture '", path, "' is not valid zstd data near compressed byte ",
            offset + input.pos, ": ", ZSTD_getErrorName(last)));
      }
      // A frame's end (0) comes after all its output: asked again, the decoder would take
      // the call for the start of another frame.
      full = output.pos == output.size && last != 0;
      decompressed += output.pos;
      status = bytes.Feed(std::string_view(out.data(), output.pos));
      if (!status.ok()) {
        ZSTD_freeDCtx(dctx);
        return status;
      }
    }
    if (n == 0) break;
    offset += n;
  }
  ZSTD_freeDCtx(dctx);
  if (ferror(f) != 0) return ReadError(path);
  if (last != 0 && decompressed == 0) {
    return absl::DataLossError(absl::StrCat(
        path, ": the zstd stream is cut off at compressed byte ", offset, ", before its "
        "first block ends, and zstd decodes a block only whole: nothing of the capture can "
        "be read. It was truncated while it was written (a crash, a kill or a full disk); "
        "record it again"));
  }
  // The record the frame is cut inside, if any, is said first (End()).
  if (absl::Status s = bytes.End(); !s.ok()) return s;
  if (last == 0) return checker.ReleaseTrailer();
  if (const uint64_t trailer = checker.DropTrailer(); trailer != 0) {
    bytes.NoteCut(absl::StrCat("the zstd stream is cut off at compressed byte ", offset,
                               ", before its frame's end; the trailer (",
                               bytes.binary() ? "record " : "line ", trailer,
                               ") is left out, as the stream that holds it was not finished"));
  } else {
    bytes.NoteCut(absl::StrCat("the zstd stream is cut off at compressed byte ", offset,
                               "; what the zstd block it is cut in holds is lost"));
  }
  return absl::OkStatus();
}

// Reads the file at `path` into `checker`.
absl::Status ReadFile(const std::string& path, StructureChecker& checker) {
  // A device is refused unopened (opening one may act on it: a tape rewinds, a terminal
  // waits for input), and no device holds a capture: /dev/zero would be read forever.
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", path, "' is a ", S_ISCHR(st.st_mode) ? "character" : "block",
        " device, not a capture: name a capture file (`memtrace run` writes "
        "memtrace-<pid>.mtb), or a pipe that carries one"));
  }
  FILE* f = fopen(path.c_str(), "r");
  if (f == nullptr) {
    const int err = errno;
    return absl::NotFoundError(absl::StrCat("cannot open capture '", path, "': ",
                                            strerror(err), " (errno ", err, ")"));
  }
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    fclose(f);
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' is a directory, not a capture: name a capture file in it "
                     "(`memtrace run` writes memtrace-<pid>.mtb)"));
  }
  CaptureBytes bytes(path, checker);
  // The first chunk tells the form and is then fed like any other: a pipe or a FIFO
  // cannot be rewound to read it again.
  std::string chunk(size_t{1} << 20, '\0');
  size_t n = ReadMore(f, chunk);
  absl::Status status;
  // zstd frames start with the magic number 0xFD2FB528 (little-endian); a file that ends
  // inside it is a zstd stream cut off (ReadZstd() says so), as one inside the binary
  // magic is a binary capture cut off (CaptureBytes::End()).
  constexpr std::string_view kZstdMagic = "\x28\xb5\x2f\xfd";
  if (n > 0 && kZstdMagic.starts_with(std::string_view(chunk.data(), std::min<size_t>(n, 4)))) {
    status = ReadZstd(f, path, chunk, n, bytes, checker);
  } else {
    for (; n != 0; n = ReadMore(f, chunk)) {
      status = bytes.Feed(std::string_view(chunk.data(), n));
      if (!status.ok()) break;
    }
    if (status.ok() && ferror(f) != 0) {
      status = ReadError(path);
    }
    if (status.ok()) status = bytes.End();
  }
  fclose(f);
  if (!status.ok()) return status;
  return checker.End(path);
}

}  // namespace

absl::Status ReadCapture(const std::string& path,
                         const std::function<absl::Status(const CaptureRecord&)>& fn,
                         CaptureReadStats* stats) {
  CaptureReadStats local;
  if (stats == nullptr) stats = &local;
  *stats = CaptureReadStats{};
  StructureChecker checker(path, fn, stats);
  return ReadFile(path, checker);
}

absl::Status ReadCaptureInBatches(const std::string& path, CaptureBatch* first,
                                  const CaptureBatchSwap& swap, CaptureReadStats* stats) {
  CaptureReadStats local;
  if (stats == nullptr) stats = &local;
  *stats = CaptureReadStats{};
  StructureChecker checker(path, first, swap, stats);
  return checker.Finish(ReadFile(path, checker));
}

absl::Status ReadCaptureText(std::string_view text, const std::string& name,
                             const std::function<absl::Status(const CaptureRecord&)>& fn,
                             CaptureReadStats* stats) {
  CaptureReadStats local;
  if (stats == nullptr) stats = &local;
  *stats = CaptureReadStats{};
  StructureChecker checker(name, fn, stats);
  CaptureBytes bytes(name, checker);
  if (absl::Status s = bytes.Feed(text); !s.ok()) return s;
  if (absl::Status s = bytes.End(); !s.ok()) return s;
  return checker.End(name);
}

}  // namespace memtrace
