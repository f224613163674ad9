// Copyright 2026 The memtrace Authors.
//
// snapshot_point.h: a moment in a capture to stop a replay at (`--at-event`, `--at-time`,
// `--at-scope-exit`, `--at`), and how it is spelled.

#ifndef MEMTRACE_ANALYSIS_SNAPSHOT_POINT_H_
#define MEMTRACE_ANALYSIS_SNAPSHOT_POINT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace memtrace {

// A point in a capture to take a snapshot at (see ParseSnapshotPoint for the spelling).
struct SnapshotPoint {
  enum class Kind { kEnd, kEvent, kTime, kScopeExit };
  Kind kind = Kind::kEnd;
  uint64_t event = 0;    // kEvent: after this many events
  int64_t time_ns = 0;   // kTime: unix ns, or ns since the capture started when below the
                         // capture's started_unix_ns
  std::string scope;     // kScopeExit: the scope's path
  uint64_t nth = 1;      // kScopeExit: after its nth exit (1-based, on any thread)
  std::string text;      // as written, for messages
};

// Parses "end", "event=N" (or a bare N), "time=T", "scope-exit=PATH" or
// "scope-exit=PATH#N". T is a bare number of nanoseconds or a duration with a unit, as
// absl::ParseDuration reads it ("1.5s", "250ms", "40us", "100ns"); either way it is ns
// since the capture started, or unix ns (SnapshotPoint::time_ns). Errors say what is
// wrong and show the accepted forms.
absl::StatusOr<SnapshotPoint> ParseSnapshotPoint(std::string_view text);

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_SNAPSHOT_POINT_H_
