// Copyright 2026 The memtrace Authors.
//
// capture_ends.h: the first and last lines of a capture, its header and its trailer
// (docs/capture-format.md, "header" and "trailer"), spelled once.
//
// Two writers end a capture: the sink (jsonl_sink.h), which writes a capture as the
// program runs, and the snapshot capture (snapshot_capture.h), which writes the blocks
// live at one moment for `memtrace snapshot`. Both compose their header and trailer here,
// so a reader finds the same fields, in the same order, in either.
//
// Thread safety: pure functions.
//
// Example:
//   Emit(JsonHeaderLine(getpid(), CaptureNowNs(), "runtime", ""));
//   ...
//   CaptureSinkCounts counts;
//   counts.events_written = counts.event_lines = n;
//   Emit(JsonTrailerLine(snapshot, /*complete=*/true, counts, "", ""));

#ifndef MEMTRACE_SINKS_CAPTURE_ENDS_H_
#define MEMTRACE_SINKS_CAPTURE_ENDS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/capture_integrity.h"
#include "runtime/snapshot.h"

namespace memtrace {

// The trailer's `ended_by` of a capture whose sink was finished while its tracer still
// recorded (JsonlSink::Finish()): partial.
inline constexpr char kEndedWhileRecording[] = "finish while recording";

inline constexpr int kCaptureSchemaVersion = 1;

// The wall clock, in nanoseconds since the Unix epoch.
int64_t CaptureNowNs();

// The header line: `source` ("runtime", "preload"), and `extra_fields`, more members as
// raw JSON text (`"interposer":{...}`), or empty.
std::string JsonHeaderLine(pid_t pid, int64_t started_unix_ns, const std::string& source,
                           std::string_view extra_fields);

// The trailer's "integrity" object: every counter of capture_integrity.h by name.
std::string JsonIntegrity(const CaptureIntegrity& integrity);

// What the writer of a capture counts of its own work (the trailer's "sink" object and
// memtrace_cpu_ns.writer).
struct CaptureSinkCounts {
  uint64_t events_written = 0;
  uint64_t event_lines = 0;
  uint64_t events_lost = 0;
  uint64_t events_past_limit = 0;
  uint64_t max_bytes = 0;  // written only when not 0
  uint64_t write_errors = 0;
  uint64_t stack_collisions = 0;
  uint64_t writer_cpu_ns = 0;
};

// `trailer` (a trailer's JSON text) with "crc32": `crc` as its last member, in place of
// one it ends with already (a capture converted to another encoding carries its source's,
// over other bytes). `crc` is zlib's CRC-32 of every byte of the file before the trailer's
// record, as written (before compression): the writer's (docs/capture-format.md).
std::string TrailerWithCrc32(std::string_view trailer, uint32_t crc);

// The trailer line, from the ledger's counters in `snap` (totals, layers, scopes, census,
// integrity, memtrace's own memory and drainer time) and the writer's own `counts`.
// `timeline` is the "timeline" member with its leading comma, or empty; `extra_fields`
// more members as raw JSON text, or empty.
std::string JsonTrailerLine(const Snapshot& snap, bool complete, const CaptureSinkCounts& counts,
                            std::string_view timeline, std::string_view extra_fields);

}  // namespace memtrace

#endif  // MEMTRACE_SINKS_CAPTURE_ENDS_H_
