// Copyright 2026 The memtrace Authors.
//
// capture_conversion.h: one capture rewritten as another (`memtrace convert`, and `verify
// --salvage`), in the encoding the output's name asks for (capture_writer.h), keeping what
// the input says of itself:
//
//   - A damaged input (its bytes no longer match its trailer's checksum,
//     MatchTrailerChecksumAside()) keeps its own checksum in the copy, which reads as
//     damaged too: a fresh checksum would hide the damage. Where the copy could not show
//     it, the conversion is refused: a compressed output (readers do not check a
//     compressed capture's checksum), or damage that makes the input read as cut off.
//   - An input without a trailer (cut off while it was written, or ended without its exit
//     handlers) is salvaged: the copy holds every record before its end, then a trailer of
//     its own, `{"type":"trailer","complete":false,"salvaged":{"from":IN,"cut":WHERE}}`
//     (docs/capture-format.md), so that every reader calls it partial and says why, rather
//     than guessing how the original ended.
//
// The output is created once the input's first record was read: an unreadable input
// leaves none, and a failed conversion removes what it wrote.
//
// Example:
//   absl::StatusOr<ConversionResult> r = ConvertCapture("cut.mtb", "cut_salvaged.mtb");
//   if (r.ok() && r->salvaged) printf("kept the %llu events before the cut\n", r->events);

#ifndef MEMTRACE_ANALYSIS_CAPTURE_CONVERSION_H_
#define MEMTRACE_ANALYSIS_CAPTURE_CONVERSION_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace memtrace {

struct ConversionResult {
  uint64_t events = 0;   // event records written
  bool binary = false;   // the output's encoding
  bool damaged = false;  // the input's checksum did not match: the copy keeps it
  bool salvaged = false;  // the input had no trailer: the copy got a salvage trailer
  std::string cut;        // where the input was cut off inside a record, or empty
};

absl::StatusOr<ConversionResult> ConvertCapture(const std::string& in, const std::string& out);

// The trailer of a capture salvaged from `from`, cut off at `cut` (CaptureReadStats::cut;
// empty when it ended between records): JSON, without its checksum.
std::string SalvageTrailerJson(const std::string& from, const std::string& cut);

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_CAPTURE_CONVERSION_H_
