// Copyright 2026 The memtrace Authors.
//
// snapshot.h: a consistent cut of a capture, as plain data.
//
// Recorder::TakeSnapshot() flushes (every record made before the call is applied) and
// copies, between two drainer rounds, the totals, the counters of every scope and layer
// that saw any activity, and the capture's integrity. Sinks consume snapshots; nothing in
// a snapshot points back into the recorder.
//
// Thread safety: plain data.

#ifndef MEMTRACE_RUNTIME_SNAPSHOT_H_
#define MEMTRACE_RUNTIME_SNAPSHOT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/capture_integrity.h"
#include "runtime/census_status.h"
#include "runtime/usage_counters.h"
#include "transport/event.h"

namespace memtrace {

struct ScopeUsage {
  uint32_t scope = 0;  // scope path id (scope_table.h)
  std::string path;    // "frame/physics/broadphase"; "(unscoped)" for path 0
  UsageCounters usage;
};

struct LayerUsage {
  LayerId layer = 0;
  std::string name;
  UsageCounters usage;
};

// What one call site holds live in one scope, for the per-site view of a snapshot taken
// with top_sites (Recorder::TakeSnapshot(uint32_t), the live endpoint's reply). The site
// is as recorded and never symbolized here: a return address; with call stacks, the
// stack's hash (kStackHashBit set, transport/event.h), whose frames follow when the
// recorder kept them (Config::keep_stack_frames, or Config::live); 0 for a block recorded
// without a site; SiteTable::kOtherSitesValue for the sites beyond the site table.
struct SiteUsage {
  uint64_t site = 0;
  std::vector<uint64_t> frames;  // innermost first; empty unless `site` is a kept stack
  uint32_t scope = 0;            // scope path id (scope_table.h)
  std::string path;              // the scope's path, as ScopeUsage::path
  uint64_t live_bytes = 0;
  uint64_t live_count = 0;
};

// The memory a recorder holds, by part (Recorder::memory()). Rings are mapped per
// recording thread and kept for reuse; the ticket table is mapped once and touched as
// blocks are allocated; the ledger grows with the live set; the site table with the
// distinct call sites (bounded by Config::request_site_capacity_max).
struct MemtraceMemory {
  uint64_t rings = 0;
  uint64_t tickets = 0;
  uint64_t ledger = 0;  // without the site table
  uint64_t sites = 0;   // the site table, and the stack frames kept (stack_frame_table.h)

  uint64_t total() const noexcept { return rings + tickets + ledger + sites; }
};

struct Snapshot {
  int64_t taken_unix_ns = 0;
  UsageCounters totals;
  std::vector<ScopeUsage> scopes;  // by path id; only scopes with any allocation
  std::vector<LayerUsage> layers;  // by layer id; only layers with any allocation
  CaptureIntegrity integrity;
  uint64_t memtrace_bytes = 0;     // rings, ticket table and ledger of the recorder
  MemtraceMemory memtrace_memory;  // the same, by part (memtrace_bytes is its total)
  // CPU time (user + system) the recorder's drainer thread has used so far
  // (runtime/internal/thread_cpu_time.h). Not in it: the hot path on the recording threads.
  uint64_t drainer_cpu_ns = 0;
  // The same for the threads that applied records beside the drainer
  // (Config::tracer_threads > 1); 0 without.
  uint64_t applier_cpu_ns = 0;

  // With top_sites: the (site, scope) pairs holding the most live bytes, the largest
  // first, and what the pairs left out hold (nothing is dropped silently). The live
  // bytes and blocks of all of them together are the totals'.
  bool has_sites = false;
  std::vector<SiteUsage> sites;
  uint64_t sites_omitted = 0;  // pairs holding live blocks that are not in `sites`
  uint64_t sites_omitted_bytes = 0;
  uint64_t sites_omitted_count = 0;

  // The attached census, if any (Tracer::AttachCensus): hand-reported bytes, shown beside
  // the totals the tracer observed, and whether the census ran out of room.
  bool has_census = false;
  std::vector<CensusEntry> census;
  CensusStatus census_status;
};

// The name of a fixed layer ("cpu", "frame_arena", "gpu", "census", "interposer"), or
// "layer<N>" for the others.
std::string DefaultLayerName(LayerId layer);

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_SNAPSHOT_H_
