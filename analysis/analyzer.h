// Copyright 2026 The memtrace Authors.
//
// analyzer.h: rebuilds a capture's ledger from its events and answers with totals.
//
// Analyzer replays a capture (capture_reader.h) in file order, which is the order the
// drainer applied the records in, through the runtime's own AllocationLedger
// (runtime/internal/allocation_ledger.h): one set of matching rules. Releases are paired
// with allocations by ticket (`of`), then by address; a block set aside at a reused
// address is settled when its epoch ends (the `epoch` field changes, and at the end), as
// the drainer settles it. So the totals, per-scope and per-layer counters and high-water
// marks equal the runtime's own Snapshot taken at the end of the capture (the round-trip
// test checks this). The analyzer keeps its own counters (a sampled block stands for
// several allocations, which the ledger's do not know) and a note per live block beside
// the ledger's (who allocated it, when, its weight). Memory is bounded by the live
// allocations, not by the file.
//
// Snapshots: a SnapshotPoint stops the replay after an event count, at a time (every
// event whose `t` is not later), or right after the N-th exit of a scope; the summary is
// then the state at that point. Sampled captures (docs/capture-format.md "Sampling") are
// scaled: each recorded allocation counts as round(size * weight) bytes, and as
// allocations such that each (site, scope, layer)'s count is its running sum of weights,
// rounded (a block's own round(weight) would bias counts of blocks near the sampling
// interval, whose weights lie between 1 and 2); CaptureSummary::sampled says the numbers
// are estimates. preload/byte_sampler.h derives them and their variance.
//
// Top sites, differences, retention, peak composition (global and per scope) and coverage
// build on the same replay.
//
// Thread safety: an Analyzer is used by one thread.

#ifndef MEMTRACE_ANALYSIS_ANALYZER_H_
#define MEMTRACE_ANALYSIS_ANALYZER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "analysis/capture_reader.h"
#include "runtime/allocation_record.h"
#include "runtime/internal/allocation_ledger.h"
#include "runtime/usage_counters.h"
#include "transport/huge_page_allocator.h"

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
// both. Blocks whose allocation moved (remap) or changed size keep their original ticket
// here only until then, so retention counts blocks as first allocated.
struct Retention {
  uint32_t scope = 0;
  uint64_t exits = 0;             // scope instances that exited
  uint64_t exits_retaining = 0;   // of those, how many left something live
  uint64_t retained_blocks = 0;   // summed over exits
  uint64_t retained_bytes = 0;
};

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

struct CaptureSummary {
  uint64_t pid = 0;
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
  // Scope id -> the event index (1-based) at which its live bytes first reached their
  // high-water mark.
  std::map<uint32_t, uint64_t> scope_peak_event;
  std::vector<AllocationAttribution> attribution;  // every (site, scope, layer) seen, in
                                                   // that order
  std::vector<Retention> retention;  // scopes whose instances exited, by scope id
  Coverage coverage;
  // Temporaries as heaptrack defines them: blocks freed by a thread with no other
  // allocation by that thread in between (the free's thread made its last allocation
  // call, an allocation or a resize, on this block).
  uint64_t temporaries = 0;
  uint64_t temporary_bytes = 0;
  // Short-lived blocks, a wider net: freed by the thread that allocated them within
  // Analyzer::kShortLivedEvents of that thread's events. Every temporary freed by its
  // allocating thread soon enough is one too.
  uint64_t short_lived = 0;
  uint64_t short_lived_bytes = 0;
  // The first event after which total live bytes reached their maximum.
  uint64_t peak_event_index = 0;
  int64_t peak_t = 0;
};

// One scope compared between two captures (the seed's Difference), matched by path.
struct Difference {
  std::string path;
  UsageCounters before;  // zeros if the scope is new
  UsageCounters after;   // zeros if the scope is gone
  int64_t live_delta() const {
    return static_cast<int64_t>(after.live_bytes) - static_cast<int64_t>(before.live_bytes);
  }
  int64_t high_water_delta() const {
    return static_cast<int64_t>(after.high_water_bytes) -
           static_cast<int64_t>(before.high_water_bytes);
  }
  int64_t allocated_delta() const {
    return static_cast<int64_t>(after.allocated_bytes) -
           static_cast<int64_t>(before.allocated_bytes);
  }
};

// Per-scope differences between two summaries, largest change in live bytes first (ties:
// high-water, then path). The totals come first, under the path "TOTAL".
std::vector<Difference> Compare(const CaptureSummary& before, const CaptureSummary& after);

// How Analyzer::Summarize() reads a capture: where to stop (the end by default, or a
// snapshot point), and a hook called with the bytes read so far after every line (may be
// empty; the CLI's progress bar).
struct AnalysisSummaryOptions {
  SnapshotPoint point;
  std::function<void(uint64_t bytes_read)> progress;
};

class Analyzer {
 public:
  // A block freed by the thread that allocated it, within this many of that thread's
  // events, is short-lived (CaptureSummary::short_lived).
  static constexpr uint64_t kShortLivedEvents = 8;

  Analyzer();
  ~Analyzer();
  Analyzer(Analyzer&&) noexcept;
  Analyzer& operator=(Analyzer&&) noexcept;

  // Reads and replays a capture file; with `stop_after` (an event count), the state right
  // after that many events: a snapshot at that point of the capture.
  static absl::StatusOr<CaptureSummary> Summarize(const std::string& path,
                                                  uint64_t stop_after = ~uint64_t{0});
  static absl::StatusOr<CaptureSummary> Summarize(const std::string& path,
                                                  const SnapshotPoint& point);
  static absl::StatusOr<CaptureSummary> SummarizeText(std::string_view text,
                                                      const std::string& name);

  using Progress = std::function<void(uint64_t bytes_read)>;
  // The same with every option (AnalysisSummaryOptions).
  static absl::StatusOr<CaptureSummary> Summarize(const std::string& path,
                                                  const AnalysisSummaryOptions& options);

  // The composition of live memory at the capture's global high-water moment: reads the
  // capture twice (find the moment, then replay up to it).
  static absl::StatusOr<PeakComposition> Peak(const std::string& path);

  // Each scope's own high-water moment (ScopePeak), for the scopes in `scopes` (all that
  // allocated when empty), ordered by the scope's high-water bytes, largest first. Reads
  // the capture twice.
  static absl::StatusOr<std::vector<ScopePeak>> ScopePeaks(const std::string& path,
                                                           const std::vector<uint32_t>& scopes);

  // Both of the above for a capture already summarized (`summary`: Summarize() of the
  // same file, which finds the moments), in one more reading of it. `progress` as for
  // Summarize().
  struct Peaks {
    PeakComposition global;
    std::vector<ScopePeak> scopes;
  };
  static absl::StatusOr<Peaks> PeaksOf(const std::string& path, const CaptureSummary& summary,
                                       const std::vector<uint32_t>& scopes,
                                       const Progress& progress = Progress());

  // Replays only the first `events` events (the rest of the file is still checked).
  void StopAfter(uint64_t events) noexcept { stop_after_ = events; }
  // Replays up to `point` (the rest of the file is still checked).
  void StopAt(const SnapshotPoint& point) { point_ = point; }
  // Live bytes by scope and by site right now; with `only_scope`, only that scope's blocks.
  PeakComposition Composition() const;
  PeakComposition Composition(uint32_t only_scope) const;
  uint64_t events_applied() const noexcept { return events_seen_; }
  // The state so far, while replaying: per-scope counters and the scope table.
  const std::map<uint32_t, UsageCounters>& scope_usage() const { return summary_.scopes; }
  const std::map<uint32_t, std::string>& scope_paths() const { return summary_.scope_paths; }

  absl::Status Apply(const CaptureRecord& rec);
  CaptureSummary Finish(const CaptureReadStats& stats);
  // Finish() for a capture read from `path`: also whether it is still being written.
  CaptureSummary FinishFile(const std::string& path, const CaptureReadStats& stats);

  // Replay in progress, for consumers that follow it event by event (analysis/timeline.h).
  // `hook` is called during Apply() each time one block's bytes are counted in or out of
  // its scope and layer (an allocation, a release, a resize, either half of a move, each
  // block of an arena reset); read the new values from state().
  using LiveChangeHook = std::function<void(uint32_t scope, uint32_t layer)>;
  void SetLiveChangeHook(LiveChangeHook hook) { live_change_hook_ = std::move(hook); }
  // The state so far: totals, scopes and layers are current after every Apply(); the
  // attribution, retention and coverage are filled in only by Finish().
  const CaptureSummary& state() const noexcept { return summary_; }
  // Census values so far: label -> value (its changes summed, or in captures written
  // before census changes were deltas, its last value).
  const std::map<uint32_t, int64_t>& census() const noexcept { return census_; }
  // Events applied so far (the 1-based index of the last one), and its time.
  uint64_t events_seen() const noexcept { return events_seen_; }
  int64_t last_t() const noexcept { return last_t_; }

 private:
  // What the replay keeps of a live block beside the ledger's size, scope, site and ticket,
  // under the same (layer, address) and in the same order as the ledger holds the blocks
  // at one address (the oldest first), so the first note with the ticket the ledger names
  // is the block it took.
  struct Note {
    uint64_t id = 0;            // the block's number in the replay, kept through resizes
                                // and moves (what retention and temporaries follow)
    uint64_t ticket48 = 0;      // the ledger's (AllocationLedger::Released::ticket48)
    uint64_t size = 0;          // estimated bytes: the recorded size times the weight
    uint64_t thread_event = 0;  // the allocating thread's event count at allocation
    uint64_t count = 1;         // allocations this block stands for (SampledCount())
    double weight = 1.0;
    uint32_t thread = 0;
  };
  using Released = AllocationLedger::Released;
  struct Moving {
    bool active = false;  // between a remap and its target on this thread
    AllocationLedger::Moved moved;
    Note note;  // the moved block's, when moved.known
  };
  // Whether `rec` (an event) lies beyond the snapshot point; updates the point's state.
  bool BeyondPoint(const CaptureRecord& rec);
  PeakComposition CompositionOf(const std::function<bool(const AllocationRecord&)>& keep) const;

  absl::Status ApplyLine(const CaptureRecord& rec);
  void AddNote(uint32_t layer, uint64_t addr, const Note& note);
  // Removes and returns the note of the block the ledger released.
  Note TakeNote(const Released& r);
  // Counts a block in or out of the totals, its layer, its scope and its attribution.
  void Account(uint64_t size, uint32_t scope, uint32_t site, uint32_t layer, uint64_t count,
               bool allocate);
  // End of an epoch: the ledger settles the blocks set aside (AllocationLedger).
  void SettleEpoch();

  // An open scope instance on a thread, and the blocks allocated directly inside it (their
  // ids, and where their notes were then).
  struct OpenScope {
    uint32_t scope;
    std::vector<std::pair<uint64_t, uint64_t>> blocks;  // (address key, id)
  };
  void NoteAllocation(uint32_t thread, uint64_t address_key, uint64_t id);
  void CloseScope(uint32_t thread, uint32_t scope);
  // The note of the live block `id`, last seen at `address_key`, or null.
  const Note* FindNote(uint64_t address_key, uint64_t id) const;

  absl::flat_hash_map<uint32_t, std::vector<OpenScope>> open_scopes_;  // by thread
  absl::flat_hash_map<uint32_t, uint64_t> thread_events_;             // events per thread
  std::map<uint32_t, int64_t> census_;                                // label -> value
  std::map<uint32_t, Retention> retention_;
  // Per thread, the id of the block its last allocation call (an allocation, a resize, a
  // move) made or changed: a free of that block by the thread is a temporary.
  absl::flat_hash_map<uint32_t, uint64_t> last_allocation_;

  struct AttributionKey {
    uint32_t site, scope, layer;
    bool operator==(const AttributionKey&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const AttributionKey& k) {
      return H::combine(std::move(h), k.site, k.scope, k.layer);
    }
  };

  // The allocations a recorded block of `weight` stands for, at `key`: the key's running
  // sum of weights (weight_sums_), rounded, less what its earlier blocks took. So each
  // key's count stays within half an allocation of its sum of weights, which estimates
  // its allocations without bias; 1 for an unsampled block.
  uint64_t SampledCount(const AttributionKey& key, double weight);

  // A block freed at once, counted under its (site, scope, layer) (CaptureSummary).
  void NoteFreed(uint32_t thread, const Note& note, const AllocationRecord& block);

  CaptureSummary summary_;
  absl::flat_hash_map<AttributionKey, UsageCounters> attribution_;
  struct FreedAtOnce {
    uint64_t temporaries = 0, short_lived = 0;
  };
  absl::flat_hash_map<AttributionKey, FreedAtOnce> freed_at_once_;
  absl::flat_hash_map<AttributionKey, double> weight_sums_;  // sampled captures only
  uint64_t events_seen_ = 0;
  uint64_t stop_after_ = ~uint64_t{0};
  SnapshotPoint point_;
  bool stopped_ = false;          // the snapshot point was passed
  uint64_t scope_exits_seen_ = 0; // exits of point_.scope so far
  int64_t last_t_ = 0;
  uint32_t epoch_ = 0;            // of the last event applied
  uint64_t next_id_ = 1;          // Note::id

  // The live blocks and the rules that match releases to them: the drainer's.
  std::unique_ptr<AllocationLedger> ledger_;
  // The notes, by layer<<56^address: almost always one per address, kept inline. A large
  // table goes in huge pages (transport/huge_page_allocator.h).
  template <typename V>
  using LiveTable =
      absl::flat_hash_map<uint64_t, V, absl::Hash<uint64_t>, std::equal_to<uint64_t>,
                          HugePageAllocator<std::pair<const uint64_t, V>>>;
  LiveTable<absl::InlinedVector<Note, 1>> notes_;
  // Id -> address key, for blocks a remap moved from where an open scope saw them.
  absl::flat_hash_map<uint64_t, uint64_t> moved_to_;
  uint64_t live_blocks_ = 0;  // the notes' counts, summed
  absl::flat_hash_map<uint32_t, Moving> moving_;  // by thread, between remap halves
  LiveChangeHook live_change_hook_;
};

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_ANALYZER_H_
