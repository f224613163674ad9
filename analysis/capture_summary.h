// Copyright 2026 The memtrace Authors.
//
// capture_summary.h: what reading a capture tells (CaptureSummary), and the parts it is
// made of: attribution by call site, coverage, retention, the composition of live memory
// at a moment, and where the traced process came from (the capture's header).
// analyzer.h fills them in by replaying the capture's events.

#ifndef MEMTRACE_ANALYSIS_CAPTURE_SUMMARY_H_
#define MEMTRACE_ANALYSIS_CAPTURE_SUMMARY_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analysis/capture_reader.h"
#include "runtime/usage_counters.h"

namespace memtrace {

// What one call site allocated, in one scope and layer (the seed's AllocationAttribution).
struct AllocationAttribution {
  uint32_t site = 0;       // the capture's site id
  uint64_t site_addr = 0;  // the call site's return address
  uint32_t scope = 0;
  uint32_t layer = 0;
  UsageCounters usage;
  uint64_t temporaries = 0;  // heaptrack's temporaries (CaptureSummary::temporaries)
  uint64_t short_lived = 0;  // blocks freed almost at once (CaptureSummary::short_lived)
};

// How much of the memory is explained (the seed's coverage view): bytes attributed to named
// scopes versus unscoped, and what the census reports beside what the allocator observed.
struct Coverage {
  uint64_t allocated_scoped = 0;
  uint64_t allocated_unscoped = 0;
  uint64_t live_scoped = 0;    // at the end of the capture
  uint64_t live_unscoped = 0;
  int64_t census_bytes = 0;    // sum of the census entries' values at the end
  uint64_t census_entries = 0;
};

// What held memory at one moment, by scope and by site (the seed's causal view).
struct PeakComposition {
  uint64_t event_index = 0;  // the event after which the moment was reached (1-based)
  int64_t t = 0;
  uint64_t live_bytes = 0;
  std::vector<std::pair<uint32_t, uint64_t>> by_scope;  // (scope, live bytes), largest first
  std::vector<std::pair<uint32_t, uint64_t>> by_site;   // (site, live bytes), largest first
};

// Allocations made inside a scope (or a scope nested in it) that were still live when that
// scope instance exited on its thread: per-phase leaks (the seed's Retention), summed per
// scope path. A block that outlives a frame's render phase and then the frame counts for
// both. A block resized or moved before the exit still counts, with its size then.
struct Retention {
  uint32_t scope = 0;
  uint64_t exits = 0;             // scope instances that exited
  uint64_t exits_retaining = 0;   // of those, how many left something live
  uint64_t retained_blocks = 0;   // summed over exits
  uint64_t retained_bytes = 0;
};

// A scope's own high-water moment: when its live bytes first reached their maximum, and
// what of the scope was live then, by site (composition.by_site, composition.live_bytes),
// beside the total live bytes of the whole capture at that moment.
struct ScopePeak {
  uint32_t scope = 0;
  uint64_t event_index = 0;
  int64_t t = 0;
  uint64_t total_live_bytes = 0;
  PeakComposition composition;  // restricted to the scope's own blocks
};

// Where a forked child's capture began (the header's "fork" object, written by the
// interposer under MEMTRACE_TRACE_FORKS): the parent, and the blocks live in it at the
// fork, which the capture records first, in the scope "(inherited at fork)".
// unpublished_records: records the parent's other threads were writing at that moment,
// whose operations the inherited blocks lack. The inherited blocks carry the call stacks
// the parent allocated them at (older captures put all of them at site 0): stacks_known
// says the header has inherited_without_stack, the blocks among them whose stack the
// parent had not kept (beyond its site capacity, or recorded without one).
struct ForkOrigin {
  bool forked = false;
  uint64_t parent_pid = 0;
  uint64_t inherited_blocks = 0;
  uint64_t inherited_bytes = 0;
  uint64_t unpublished_records = 0;
  bool stacks_known = false;
  uint64_t inherited_without_stack = 0;
};

// The traced process as the interposer's header describes it (its "process" object): the
// parent's pid and the command line. `known` is false for a capture without one (older
// captures, and the runtime API's).
struct ProcessOrigin {
  bool known = false;
  uint64_t ppid = 0;
  std::vector<std::string> argv;
  bool argv_truncated = false;  // the interposer kept the first arguments, or cut one
};

// A capture of one moment of a running process (`memtrace snapshot`; the header's
// "snapshot" object, sinks/snapshot_capture.h): its events are the blocks live at
// `taken_unix_ns`, one allocation each, and what came before is only in its trailer.
struct SnapshotOrigin {
  bool taken = false;  // the capture is a snapshot
  int64_t taken_unix_ns = 0;
  uint64_t blocks = 0;
  uint64_t bytes = 0;
};

struct CaptureSummary {
  uint64_t pid = 0;
  SnapshotOrigin snapshot_of;      // the header's, for a capture of one moment
  ProcessOrigin process;           // the header's, for the interposer's captures
  bool trace_children = false;     // the interposer's header: exec'd images traced on
  bool trace_forks = false;        // the interposer's header: forked children traced on
  std::string source;              // the header's source: "runtime" or "preload"
  std::string malloc_from;         // the header's: whose malloc came before the interposer
  ForkOrigin fork;                 // the header's, for a forked child's capture
  int64_t started_unix_ns = 0;     // the header's, 0 when absent
  bool sampled = false;            // weights were applied: the numbers are estimates
  uint64_t sample_interval_bytes = 0;  // the interposer's, 0 when every allocation was kept
  uint64_t min_size = 0;  // the interposer's: smaller blocks were not recorded (0: none)
  uint64_t site_capacity = 0;  // the interposer's, 0 when not recorded (older captures)
  // The interposer's: the most frames a call stack keeps (--depth), 0 when not recorded. A
  // stack that long may have lost its outermost callers.
  uint64_t stack_depth = 0;
  // Whether a stack of `frames` frames may have lost its outermost callers (stack_depth):
  // not when its outermost frame, named by `outermost()` ("function" or "function
  // (file:line)", asked only for a stack that long), is where every stack of a process or
  // thread begins (IsStackStart()).
  template <typename NameOuter>
  bool StackMayBeCut(size_t frames, const NameOuter& outermost) const {
    return stack_depth > 0 && frames >= stack_depth && !IsStackStart(outermost());
  }
  // Whether the frame named `frame` is a stack's first: a process's entry point (_start)
  // or a thread's (glibc's clone and clone3).
  static bool IsStackStart(std::string_view frame);
  // What stands for those callers at the root of such a stack, in every output that shows
  // stacks, so that its outermost recorded frame does not read as the program's entry.
  std::string CutStackFrame() const;
  // Snapshot: how many events were applied (all of them without a snapshot point), and
  // whether the point was reached (a scope exit may not happen N times).
  uint64_t events_applied = 0;
  bool snapshot_reached = true;
  int64_t snapshot_t = 0;          // `t` of the last event applied
  uint64_t events = 0;
  bool has_trailer = false;
  // No trailer yet, and a running process holds the file's capture lock
  // (sinks/capture_lock.h): the capture is being written, not cut short. Set by the
  // Summarize() overloads that read a path.
  bool being_written = false;
  // The bytes before the trailer differ from those its "crc32" was computed over: the
  // file was changed after it was written (MatchesTrailerChecksum()). Set where a summary
  // is read from a path (the trailer's own summary, a replay's FinishFile(), verify's).
  bool checksum_differs = false;
  bool trailer_complete = false;  // the trailer's own verdict (runtime and sink)
  // Where the capture was cut off inside a record (CaptureReadStats::cut), or empty.
  std::string cut;
  std::string trailer;            // the trailer line, raw
  UsageCounters totals;
  std::map<uint32_t, std::string> scope_paths;  // scope id -> path
  std::map<uint32_t, UsageCounters> scopes;     // scopes that allocated
  std::map<uint32_t, std::string> layer_names;
  std::map<uint32_t, UsageCounters> layers;
  uint64_t unmatched_releases = 0;  // releases the capture has no allocation for
  // Blocks set aside at a reused address whose release never came, released when their
  // epoch ended (the drainer's missed frees, AllocationLedger::SettleDisplaced).
  uint64_t missed_frees = 0;
  uint64_t live_blocks = 0;
  std::map<uint32_t, uint64_t> site_addrs;         // site id -> return address
  // Site id -> call stack, innermost first (frames[0] is the site's address), for sites
  // that carry one.
  absl::flat_hash_map<uint32_t, std::vector<uint64_t>> site_frames;
  std::vector<CaptureRecord> modules;              // the capture's module lines
  // The kernel threads behind the capture's thread numbers (its "thread" lines), in the
  // order they took their rings: a number a later thread took again has several. Empty for
  // a capture written before memtrace wrote them.
  struct KernelThread {
    uint32_t thread = 0;  // the events' "thread" (the ring)
    int64_t tid = 0;
    std::string name;     // its last name in the capture (a line again for a renamed thread)
  };
  std::vector<KernelThread> kernel_threads;
  // Scope id -> the event index (1-based) at which its live bytes first reached their
  // high-water mark.
  std::map<uint32_t, uint64_t> scope_peak_event;
  std::vector<AllocationAttribution> attribution;  // every (site, scope, layer) seen, in
                                                   // that order
  std::vector<Retention> retention;  // scopes whose instances exited, by scope id
  Coverage coverage;
  // Temporaries as heaptrack defines them, per thread: blocks freed or reallocated by
  // the thread's next allocator call after the one that made them (an allocation, a
  // resize, a move), with no other allocation or release by that thread in between.
  // heaptrack takes a realloc for a release and an allocation, and so do these.
  uint64_t temporaries = 0;
  uint64_t temporary_bytes = 0;
  // Short-lived blocks, another measure: freed (not reallocated) by the thread that
  // allocated them within Analyzer::kShortLivedEvents of that thread's events, other
  // allocations and releases between included.
  uint64_t short_lived = 0;
  uint64_t short_lived_bytes = 0;
  // The first event after which total live bytes reached their maximum.
  uint64_t peak_event_index = 0;
  int64_t peak_t = 0;
};

// What a capture's header line says, into `summary`: the process, the interposer's
// settings, where a forked child came from.
void ReadCaptureHeader(const CaptureRecord& header, CaptureSummary* summary);

// One word for the state of the capture `s` was read from, the first that holds: damaged
// (checksum_differs), running (being_written), truncated (no trailer), complete (the
// trailer's own verdict) or partial. Every reader's JSON and the report say it so.
std::string VerdictWord(const CaptureSummary& s);

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_CAPTURE_SUMMARY_H_
