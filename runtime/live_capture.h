// Copyright 2026 The memtrace Authors.
//
// live_capture.h: what a recorder holds at one moment, whole: the ledger's counters and
// every block live then (Recorder::CaptureLive()), for a capture of that moment
// (sinks/snapshot_capture.h, `memtrace snapshot`).
//
// The counters and the blocks come from one cut (one hold of the drainer's state lock),
// so the blocks' sizes add up to the totals' live bytes, per scope and per layer too.
// `frames` holds the call stack of each site that is a stack's hash, where the recorder
// kept it (Config::keep_stack_frames or Config::live); other sites are return addresses
// and have none.
//
// Thread safety: plain data.

#ifndef MEMTRACE_RUNTIME_LIVE_CAPTURE_H_
#define MEMTRACE_RUNTIME_LIVE_CAPTURE_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "runtime/allocation_record.h"
#include "runtime/snapshot.h"

namespace memtrace {

struct LiveCapture {
  Snapshot snapshot;                     // the counters at the cut; no sites
  std::vector<AllocationRecord> blocks;  // every live block, by layer, then address
  // Site word (AllocationRecord::site) -> its stack's frames, innermost first.
  absl::flat_hash_map<uint64_t, std::vector<uint64_t>> frames;
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_LIVE_CAPTURE_H_
