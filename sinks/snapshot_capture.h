// Copyright 2026 The memtrace Authors.
//
// snapshot_capture.h: a capture of one moment of a running process (`memtrace snapshot
// PID -o FILE`; docs/capture-format.md, "Snapshots").
//
// A snapshot capture is an ordinary binary capture (.mtb, binary_encoding.h) that every
// reader and command accepts, written from a LiveCapture (runtime/live_capture.h) instead
// of from the event stream:
//
//   magic
//   header     "snapshot":{"taken_unix_ns":T,"blocks":N,"bytes":B} marks it; the header's
//              started_unix_ns is T too; source and the interposer's settings as the
//              process's own capture has them (Config::live_capture)
//   modules    the process's modules, for symbolizing the sites' frames offline
//   layer, scope (with its parents), site lines, each before the first event naming it
//   epoch      t = T
//   alloc x N  one per block live at T: its layer, size, address, scope and site; thread
//              0 (the ledger keeps no block's thread), tickets 1..N; in a sampled
//              process, the weight its sampled size gives it
//   trailer    the ledger's counters at T, as a sink's trailer has them at the end: the
//              totals, layers and scopes with their high-water marks and intervals, every
//              allocation and release before T, and the integrity block
//
// Replaying the events gives the live blocks, bytes and sites at T exactly; what came
// before (allocations since released, high-water marks) is only in the trailer, and the
// analyzer takes it from there for a snapshot (analysis/analyzer.h).
//
// Thread safety: any thread; it reads its arguments and the process's module list, scope
// table and layer table, which are thread-safe.
//
// Example (the tracer's reply to a live client's "capture" request):
//   absl::StatusOr<LiveCapture> c = recorder.CaptureLive(kMaxBlocks);
//   WriteSnapshotCapture(*c, getpid(), config.live_capture,
//                        [&](std::string_view bytes) { return Send(bytes); });

#ifndef MEMTRACE_SINKS_SNAPSHOT_CAPTURE_H_
#define MEMTRACE_SINKS_SNAPSHOT_CAPTURE_H_

#include <sys/types.h>

#include <cstddef>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "runtime/config.h"
#include "runtime/live_capture.h"

namespace memtrace {

// The most bytes WriteSnapshotCapture() hands to `write` at once (one piece may be larger
// only by its last record, a header or trailer line).
inline constexpr size_t kSnapshotPieceBytes = size_t{64} << 10;

// Writes `capture`, of process `pid` described as `description` says (its source, header
// members and sampling interval: a sampled process's blocks carry their weights), as a
// binary capture, handing its bytes to `write` in pieces of about kSnapshotPieceBytes;
// stops early, returning false, once `write` returns false (the reader is gone). True
// when every byte was handed over.
bool WriteSnapshotCapture(const LiveCapture& capture, pid_t pid,
                          const Config::CaptureDescription& description,
                          absl::FunctionRef<bool(std::string_view)> write);

}  // namespace memtrace

#endif  // MEMTRACE_SINKS_SNAPSHOT_CAPTURE_H_
