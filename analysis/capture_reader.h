// Copyright 2026 The memtrace Authors.
//
// capture_reader.h: a streaming reader of captures (docs/capture-format.md), in either
// encoding: JSONL text, or the compact binary form (.mtb, sinks/binary_encoding.h).
//
// ReadCapture() reads a capture one line at a time with simdjson and hands each line to a
// callback as a CaptureRecord: the line's type and its fields, already decoded (addresses
// from their hex strings, integers as integers). Memory is bounded by the longest line,
// never by the file size, and a line may hold at most 64 MiB (kBinaryMaxPayload, what one
// JSON record of a binary capture holds): a longer one is an error that names its number
// and byte offset, so input without newlines is refused, not gathered. The header must
// come first and name a schema version this reader knows; any line that is not valid
// JSON, lacks a field its type requires, or has an unknown type is an error that names the
// line number and the problem. Captures compressed with zstd (the sink's .zst output) are
// recognised by their magic number and decompressed as they stream. The trailer's object
// is kept as raw JSON for callers that want it (CaptureRecord::raw). A file is read as it
// comes, once, so a pipe or a FIFO may carry a capture; a device is refused unopened.
//
// A binary capture is recognised by its magic bytes (also inside zstd) and yields exactly
// the records its JSONL form would, except `line`, which is then the record's number
// (epoch records count). Its errors name the record number and byte offset.
//
// A capture cut off inside its last record (a crash or a full disk while it was written;
// a zstd stream cut short) is read up to that record, which is left out and said
// (CaptureReadStats::cut): what precedes a cut is as good as any capture's, and the
// verdict calls it truncated. A record that is bad anywhere else is an error, and so is a
// capture cut before its header ends, which says where. zstd decodes a block only whole,
// so a zstd stream cut short yields the records of its whole blocks; one whose frame does
// not end (its checksum cut) was not finished, so its trailer, if it came, is left out.
//
// Thread safety: ReadCapture is reentrant; each call has its own parser.

#ifndef MEMTRACE_ANALYSIS_CAPTURE_READER_H_
#define MEMTRACE_ANALYSIS_CAPTURE_READER_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace memtrace {

enum class LineType : uint8_t {
  kHeader,
  kLayer,
  kScope,
  kSite,
  kModule,
  kAlloc,
  kFree,
  kResize,
  kRemap,
  kRemapTarget,
  kArenaReset,
  kScopeEnter,
  kScopeExit,
  kCensus,
  kIntervalBegin,
  kIntervalEnd,
  kTrailer,
  kThread,  // a thread took a ring: the later events of that `thread` are its (`tid`)
};

// Whether a line of this type is an event (counted in `events`, replayed in order), not a
// table, the header or the trailer.
inline bool IsEvent(LineType type) {
  return type >= LineType::kAlloc && type <= LineType::kIntervalEnd;
}

// One decoded line. Fields a line type does not carry are zero or empty.
struct alignas(64) CaptureRecord {
  // An event's fields come first, in two cache lines (alignas(64)): a reader decodes
  // events straight into a batch's records (ReadCaptureInBatches()), and a consumer on
  // another CPU reads them, so each line an event touches is a line moved between caches.
  LineType type = LineType::kHeader;
  // Census: the entry's signed change when has_delta (the line's `delta`); otherwise
  // `bytes`, its new value, as captures written before census changes were deltas hold
  // it. A reader adds a change to the entry and puts a value in its place.
  bool has_delta = false;
  bool has_weight = false;  // the line carried a `weight` (every allocation of a sampled capture)
  uint32_t epoch = 0;
  uint64_t line = 0;  // 1-based line number in the file (binary captures: record number)
  // Events (`t`); on the header, its started_unix_ns.
  int64_t t = 0;
  uint32_t thread = 0;
  uint32_t layer = 0;
  uint64_t addr = 0;
  uint64_t size = 0;
  uint64_t ticket = 0;
  uint64_t of = 0;
  uint32_t scope = 0;
  uint32_t outer = 0;
  uint32_t site = 0;
  uint32_t label = 0;
  int64_t delta = 0;
  int64_t bytes = 0;
  int64_t mono_ns = 0;  // scope and interval events: the thread's steady clock
  uint32_t category = 0;  // interval events
  // Tables and header.
  uint32_t id = 0;
  // Sampled captures: how many allocations like this one the sample stands for (1 when
  // the capture is not sampled).
  double weight = 1.0;
  int64_t tid = 0;  // thread lines: the kernel thread id
  // The rest: tables, the header and the trailer.
  uint32_t parent = 0;
  std::string name;
  std::string path;
  uint32_t schema_version = 0;
  uint64_t pid = 0;
  std::string source;  // header: "runtime" or "preload"
  // Header (interposer): the object whose malloc the program's calls reached instead of
  // the interposer's, when one came before it; empty otherwise.
  std::string malloc_from;
  // Sites: the call stack, innermost first (frames[0] == addr), when one was captured;
  // `other` marks the bucket for sites beyond the site table's capacity.
  std::vector<uint64_t> frames;
  bool other = false;
  // Modules (addr is not used): the mapped range [start, end) of `path` that begins at
  // file offset `offset`, and the module's GNU build id in hex (may be empty).
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;
  std::string build_id;
  // Trailer.
  bool complete = false;
  std::string raw;  // the whole line, for the header and the trailer
};

struct CaptureReadStats {
  uint64_t lines = 0;
  uint64_t bytes = 0;
  uint64_t events = 0;  // lines that are events (not header, tables or trailer)
  bool has_header = false;
  bool has_trailer = false;
  // Where the capture was cut off inside a record, which was left out ("record 17 at byte
  // 996 is cut off (4 bytes of it are there)"), or where its zstd stream was (between
  // records, the trailer left out if it came); empty when it ends whole.
  std::string cut;
};

// Reads `path`, calling `fn` for every line in order. Stops at the first error, from the
// file or from `fn`. Errors name the file, the line number and what is wrong.
absl::Status ReadCapture(const std::string& path,
                         const std::function<absl::Status(const CaptureRecord&)>& fn,
                         CaptureReadStats* stats = nullptr);

// Records in order, which ReadCaptureInBatches() puts in place.
struct CaptureBatch {
  // At least one record.
  explicit CaptureBatch(size_t capacity)
      : records(std::max<size_t>(capacity, 1)), whole(records.size(), false) {}

  bool full() const { return size == records.size(); }

  std::vector<CaptureRecord> records;  // the first `size` are the batch
  // Slots last given a whole record (the header, a table line, any line of a JSONL
  // capture). A binary event is decoded into its slot, writing only the fields events
  // carry, so such a slot is cleared first.
  std::vector<bool> whole;
  size_t whole_slots = 0;  // how many of `whole` are true
  size_t size = 0;
  CaptureReadStats read;  // the stats as of the batch's last record
};

// Takes a batch that is full and gives the empty batch to fill next; or, with `last`, the
// last batch, when the reading has ended, and gives nothing (nullptr). An error stops the
// reading, and is what ReadCaptureInBatches() returns. The records are the reader's to
// reuse: a consumer reads them and leaves them as they are.
using CaptureBatchSwap =
    std::function<absl::StatusOr<CaptureBatch*>(CaptureBatch* full, bool last)>;

// ReadCapture() with each record put straight in its place in a batch: a binary event is
// decoded into its slot, with no call and no copy per record. `first` (not null) is the
// batch to fill first; `swap` is called with each batch once it is full, and with the
// last one, partly filled, when the reading ends (before an error of the reading, which
// comes after every record before it, as ReadCapture() returns it; not after an error of
// swap's). A batch's records are written again when it is filled again.
absl::Status ReadCaptureInBatches(const std::string& path, CaptureBatch* first,
                                  const CaptureBatchSwap& swap, CaptureReadStats* stats = nullptr);

// The same over a capture in memory, either encoding but not compressed (tests, fuzzers).
// `name` stands in for the file name.
absl::Status ReadCaptureText(std::string_view text, const std::string& name,
                             const std::function<absl::Status(const CaptureRecord&)>& fn,
                             CaptureReadStats* stats = nullptr);

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_CAPTURE_READER_H_
