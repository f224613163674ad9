// Copyright 2026 The memtrace Authors.
//
// capture_filters.h: the recording filters a capture was made with, and what they left
// out, as every verdict states them.
//
// A filter is not a loss: the user asked the interposer to leave some allocations out
// (`memtrace run --min-size=N`, MEMTRACE_MIN_SIZE; `--sample=N`, MEMTRACE_SAMPLE_BYTES).
// Nothing was dropped, so the capture is complete; but "exact" then holds only for what
// the filters kept, and a verdict that said "complete, exact, nothing lost" beside a
// capture holding 4% of a program's allocations would mislead. So each filter in force is
// stated wherever a verdict is: its flag, and what it left out, a count with its bytes
// where the trailer has them (`filtered`, docs/capture-format.md), or the word
// "filtered" where it has not (a capture written before the interposer counted, or one
// cut short before its trailer). Under sampling the capture's counts and bytes are
// estimates, and the statement says so.
//
// Which filters were in force comes from the header (`interposer.min_size`,
// `interposer.sample_interval_bytes`); a capture of the runtime API has none.
//
// Thread safety: plain values and pure functions.
//
// Example:
//   const CaptureFilters filters = CaptureFilters::Of(summary, trailer_or_null);
//   printf("capture complete%s\n", filters.VerdictSuffix().c_str());
//   // capture complete; filtered: --min-size=1000 left out 1201336 allocations (45.8 MiB)
//   //   of blocks smaller than 1000 bytes

#ifndef MEMTRACE_ANALYSIS_CAPTURE_FILTERS_H_
#define MEMTRACE_ANALYSIS_CAPTURE_FILTERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/trailer.h"

namespace memtrace {

// One filter in force.
struct CaptureFilter {
  enum class Kind : uint8_t {
    kMinSize,  // blocks whose usable size is below `value` bytes were not recorded
    kSample,   // a block of s bytes was recorded with probability 1 - exp(-s / `value`)
  };
  Kind kind = Kind::kMinSize;
  uint64_t value = 0;
  bool counted = false;      // the trailer says what it left out (below)
  uint64_t allocations = 0;  // allocations it left out
  uint64_t bytes = 0;        // the bytes they asked for

  // `memtrace run`'s flag for it: "--min-size=1000", "--sample=65536".
  std::string Flag() const;
  // The interposer's setting: "MEMTRACE_MIN_SIZE", "MEMTRACE_SAMPLE_BYTES".
  const char* Setting() const;
  // What it left out, in a sentence without a final period:
  //   "--min-size=1000 left out 1201336 allocations (45.8 MiB) of blocks smaller than
  //    1000 bytes"
  // and, not counted, "... left out the allocations of blocks smaller than 1000 bytes
  // (filtered: ...)". Under sampling it ends by saying that counts are estimates.
  std::string Statement() const;
  // {"filter":"min_size","flag":"--min-size=1000","setting":"MEMTRACE_MIN_SIZE",
  //  "value":1000,"left_out":{"allocations":N,"bytes":B},"estimates":false};
  // "left_out" is the string "filtered" when not counted.
  std::string Json() const;
};

class CaptureFilters {
 public:
  // The filters of the capture `s` (its header), with the counts of `trailer` (null: a
  // capture without a trailer, or one that could not be read).
  static CaptureFilters Of(const CaptureSummary& s, const TrailerBlocks* trailer);

  const std::vector<CaptureFilter>& in_force() const { return in_force_; }
  bool any() const { return !in_force_.empty(); }

  // What "exact" holds for: "" with no filter; "for blocks of at least 1000 bytes", "for
  // the sampled blocks", "for the sampled blocks of at least 1000 bytes".
  std::string ExactFor() const;
  // Each filter's Statement().
  std::vector<std::string> Statements() const;
  // For a one-line verdict ("capture complete" + this): "" with no filter, else
  // "; filtered: " (or "; sampled: " when sampling is the only filter) and the
  // statements, joined by "; ".
  std::string VerdictSuffix() const;
  // A JSON array of each filter's Json(); "[]" with none.
  std::string Json() const;

 private:
  std::vector<CaptureFilter> in_force_;
};

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_CAPTURE_FILTERS_H_
