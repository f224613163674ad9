// Copyright 2026 The memtrace Authors.
//
// analyzer.h: rebuilds a capture's ledger from its events and answers with totals.
//
// Analyzer replays a capture (capture_reader.h) in file order, which is the order the
// drainer applied the records in, through the runtime's own ledger (ReplayLedger,
// runtime/internal/allocation_ledger.h): one set of matching rules. Releases are paired
// with allocations by ticket (`of`), then by address; a block set aside at a reused
// address is settled when its epoch ends (the `epoch` field changes, and at the end), as
// the drainer settles it. So the totals, per-scope and per-layer counters and high-water
// marks equal the runtime's own Snapshot taken at the end of the capture (the round-trip
// test checks this). The analyzer keeps its own counters (a sampled block stands for
// several allocations, which the ledger's do not know) and a note per live block in the
// ledger's own slot for it (its id, who allocated it, when; a sampled block's weight
// apart), so a release finds its block and its note in one lookup. Memory is bounded by the live
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
// Top sites (CaptureSummary::attribution), retention, coverage and the composition of live
// memory at a moment (peak_composition.cc) build on the same replay; difference.h
// compares two summaries.
//
// Threads: with SetThreadFilter(), the counters (totals, layers, scopes, attribution,
// temporaries, the peak's moment; not retention, whose scopes are each on one thread
// already) count only the blocks allocated on the threads the filter keeps, wherever they
// are released; the ledger still matches every release, so the blocks of the other threads
// are paired as before and simply not counted. A thread is an event's `thread`, the ring
// it came from (docs/capture-format.md): a moved block keeps its first one.
//
// Thread views: SetThreadViews() gives one replay several more sets of those counters,
// one per view (a view is some threads, or all the threads no other view names). The
// replay's work is done once: the ledger matches each release, and the notes say which
// thread allocated each block; only the counting is done again, in the view of the block's
// allocating thread. So each view's summary (Finish(stats, &views)) is the summary of a
// replay filtered to its threads, for about the cost of one replay whatever the number of
// views:
//
//   event --> ledger (match) --> note (id, size, allocating thread)
//                                   |-- thread filter keeps it? --> main counters: state()
//                                   '-- view of that thread?     --> that view's counters
//
// Thread safety: an Analyzer is used by one thread.

#ifndef MEMTRACE_ANALYSIS_ANALYZER_H_
#define MEMTRACE_ANALYSIS_ANALYZER_H_

#include <array>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "analysis/capture_reader.h"
#include "analysis/capture_summary.h"
#include "analysis/snapshot_point.h"
#include "analysis/trailer.h"
#include "runtime/allocation_record.h"
#include "runtime/internal/allocation_ledger.h"
#include "runtime/usage_counters.h"

namespace memtrace {

struct TrailerBlocks;  // analysis/trailer.h

// How Analyzer::Summarize() reads a capture: where to stop (the end by default, or a
// snapshot point), and a hook called with the bytes read so far after every batch of
// records (may be empty; the CLI's progress bar).
struct AnalysisSummaryOptions {
  SnapshotPoint point;
  std::function<void(uint64_t bytes_read)> progress;
};

// From how many live blocks on a replay sizes its ledger's tables ahead and asks memory
// for each event's ledger slot kReplayAheadEvents events before it applies it: fewer fit
// in the caches, and asking costs more than it saves.
inline constexpr uint64_t kReplayTablesFromBlocks = 16384;
inline constexpr size_t kReplayAheadEvents = 16;

// The blocks a replay's ledger table for one layer is sized for (Reserve()).
struct LayerBlocks {
  LayerId layer;
  uint64_t blocks;
};
// The tables a replay of the capture at `path` sizes before its first record, from its
// trailer (if it has one that can be read from the file's end): for the most blocks it
// shows live at once, at its samples of memory over time and at the end (never more than
// the capture's allocations, nor than the file could hold), each layer by the larger of
// its shares of the allocations and of the blocks live at the end; only layers of at
// least kReplayTablesFromBlocks. The tables then grow less, or not at all: growing moves
// every block again and again, each move a cache miss once the tables pass the caches,
// into memory the kernel zeroes anew. A hint: a replay gives the same results without it.
std::vector<LayerBlocks> ReplayTableSizes(const std::string& path);

class Analyzer {
 public:
  // A block freed by the thread that allocated it, within this many of that thread's
  // events, is short-lived (CaptureSummary::short_lived).
  static constexpr uint64_t kShortLivedEvents = 8;

  Analyzer();
  ~Analyzer();
  Analyzer(Analyzer&&) noexcept;  // the moved-from Analyzer is only destroyed
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

  // The composition of live memory at the capture's global high-water moment, in one
  // reading (SummarizeWithPeaks()).
  static absl::StatusOr<PeakComposition> Peak(const std::string& path);

  // Each scope's own high-water moment (ScopePeak), for the scopes in `scopes` (all that
  // allocated when empty), ordered by the scope's high-water bytes, largest first, in one
  // reading.
  static absl::StatusOr<std::vector<ScopePeak>> ScopePeaks(const std::string& path,
                                                           const std::vector<uint32_t>& scopes);

  // Both of the above for a capture already summarized (`summary`: Summarize() of the
  // same file, which finds the moments), in one more reading of it that stops at each
  // moment and takes the live set there (what SummarizeWithPeaks() gets from its logs).
  // `progress` as for Summarize().
  struct Peaks {
    PeakComposition global;
    std::vector<ScopePeak> scopes;
  };
  static absl::StatusOr<Peaks> PeaksOf(const std::string& path, const CaptureSummary& summary,
                                       const std::vector<uint32_t>& scopes,
                                       const Progress& progress = Progress());

  // The summary (Summarize()) and both kinds of peak, every scope's that allocated, in one
  // reading. Each moment's composition is the live set at the end less what changed after
  // the moment: the replay logs each change of the live set by scope and call site, and a
  // new high-water mark starts its moment's log anew.
  struct SummaryAndPeaks {
    CaptureSummary summary;
    Peaks peaks;
  };
  static absl::StatusOr<SummaryAndPeaks> SummarizeWithPeaks(
      const std::string& path, const Progress& progress = Progress());

  // Counts only the blocks whose allocating thread `keep` accepts (see Threads above).
  // Call before the first Apply(); an empty function counts every thread.
  using ThreadFilter = std::function<bool(uint32_t thread)>;
  void SetThreadFilter(ThreadFilter keep);

  // Thread views (see Threads above): `count` more sets of counters, view i counting the
  // blocks allocated on the threads `view_of` maps to i, and view `others`, if any, those
  // of every thread `view_of` does not name. Independent of the thread filter.
  struct ThreadViews {
    absl::flat_hash_map<uint32_t, uint32_t> view_of;  // thread -> view, < count
    uint32_t count = 0;
    std::optional<uint32_t> others;  // < count
  };
  // Call before the first Apply(). Finish(stats, &views) gives their summaries.
  void SetThreadViews(ThreadViews views);

  // Replays only the first `events` events (the rest of the file is still checked).
  void StopAfter(uint64_t events) noexcept { stop_after_ = events; }
  // Replays up to `point` (the rest of the file is still checked).
  void StopAt(const SnapshotPoint& point) { point_ = point; }
  // Live bytes by scope and by site right now; with `only_scope`, only that scope's blocks.
  PeakComposition Composition() const;
  PeakComposition Composition(uint32_t only_scope) const;
  uint64_t events_applied() const noexcept { return events_seen_; }
  // The state so far, while replaying: per-scope counters and the scope table.
  const std::map<uint32_t, UsageCounters>& scope_usage() const { return main_.summary.scopes; }
  const std::map<uint32_t, std::string>& scope_paths() const {
    return main_.summary.scope_paths;
  }

  absl::Status Apply(const CaptureRecord& rec);
  // Apply() of every record of `batch` in order (ReadCaptureBatches(), batch_reader.h),
  // each event's block asked of memory kAheadEvents events before it is applied (a large
  // live set's lookups miss every cache; by then the ledger's slot has arrived). The
  // state is current when it returns, and when `after` (if any) is called with each
  // record, right after that record is applied. The first error, of Apply() or of
  // `after`, stops it.
  using AfterRecord = std::function<absl::Status(const CaptureRecord& rec)>;
  absl::Status ApplyBatch(std::span<const CaptureRecord> batch,
                          const AfterRecord& after = AfterRecord());
  // Reads `path` on the batch reader (ReadCaptureBatches()) and applies every record
  // (ApplyBatch(), `after` as there), calling `progress` (if any) with the bytes read
  // before each batch. `*stats`: the reading's, for Finish(). Into an Analyzer that has
  // applied nothing yet, an uncompressed capture with a trailer is replayed with the
  // ledger's tables sized for the most blocks the trailer says were live at once
  // (ReserveForPeak()).
  absl::Status ApplyFile(const std::string& path, CaptureReadStats* stats,
                         const Progress& progress = Progress(),
                         const AfterRecord& after = AfterRecord());
  // ApplyFile() checks the file against its trailer's checksum on a thread beside the
  // replay, for FinishFile(). A later pass over a file an earlier one checked, whose
  // summary is not FinishFile()'s, need not: this leaves that thread out.
  void SkipFileChecksum() { skip_checksum_ = true; }
  // The summary; with `views`, also each thread view's (SetThreadViews()), in their order:
  // the same as the summary of a replay whose thread filter keeps that view's threads.
  // Finish() ends the replay: nothing is applied after it.
  CaptureSummary Finish(const CaptureReadStats& stats,
                        std::vector<CaptureSummary>* views = nullptr);
  // Finish() for a capture read from `path`: also whether it is still being written.
  CaptureSummary FinishFile(const std::string& path, const CaptureReadStats& stats);

  // Replay in progress, for consumers that follow it event by event (analysis/timeline.h).
  // `hook` is called during Apply() each time one block's bytes are counted in or out of
  // its scope and layer (an allocation, a release, a resize, either half of a move, each
  // block of an arena reset); read the new values from state().
  using LiveChangeHook = std::function<void(uint32_t scope, uint32_t layer)>;
  void SetLiveChangeHook(LiveChangeHook hook) { live_change_hook_ = std::move(hook); }
  // The same for the thread views: `hook` is called with the view whose counters changed,
  // whose new values view_state() gives.
  using ViewLiveChangeHook = std::function<void(size_t view, uint32_t scope, uint32_t layer)>;
  void SetViewLiveChangeHook(ViewLiveChangeHook hook) {
    view_live_change_hook_ = std::move(hook);
  }
  // The state so far: totals, scopes and layers are current after every Apply(); the
  // attribution, retention and coverage are filled in only by Finish().
  const CaptureSummary& state() const noexcept { return main_.summary; }
  // A thread view's counters so far (totals, scopes, layers; the rest of the summary is
  // state()'s).
  const CaptureSummary& view_state(size_t view) const { return views_[view].summary; }
  // Census values so far: label -> value (its changes summed, or in captures written
  // before census changes were deltas, its last value).
  const std::map<uint32_t, int64_t>& census() const noexcept { return census_; }
  // Events applied so far (the 1-based index of the last one), and its time.
  uint64_t events_seen() const noexcept { return events_seen_; }
  int64_t last_t() const noexcept { return last_t_; }

 private:
  // Pointers to the entries of a map found lately, in N slots by a hash of their key:
  // every event looks up its thread, its call site's counters and, for `peak`, its logs,
  // and a program allocates on one thread, at a few sites, at a time, so one compare
  // finds most. `find` gives the map's entry for a key not at hand; the map must never
  // move its entries (node maps, or unique_ptr values).
  template <typename Key, typename Value, size_t N>
  class Recent {
   public:
    template <typename Find>
    Value& Get(const Key& key, uint64_t hash, const Find& find) {
      Slot& s = slots_[N == 1 ? 0 : (hash >> 32) % N];
      if (s.value == nullptr || !(s.key == key)) s = Slot{key, &find()};
      return *s.value;
    }

   private:
    struct Slot {
      Key key{};
      Value* value = nullptr;
    };
    std::array<Slot, N> slots_{};
  };

  // What the replay keeps of a live block beside the ledger's size, scope, site and ticket,
  // under the same (layer, address) and in the same order as the ledger holds the blocks
  // at one address (the oldest first), so the first note with the ticket the ledger names
  // is the block it took.
  struct Note {
    uint64_t id = 0;            // the block's number in the replay, kept through resizes
                                // and moves (what retention and temporaries follow)
    uint64_t size = 0;          // estimated bytes: the recorded size times the weight
    // The low 32 bits of the allocating thread's event count at allocation: short-lived
    // blocks ask only for differences of a few events, which wrap correctly.
    uint32_t thread_event = 0;
    uint32_t thread = 0;
    uint64_t count = 1;         // allocations this block stands for (SampledCount())
    double weight = 1.0;
  };
  struct Sample {
    uint64_t count;
    double weight;
  };
  using Released = ReplayLedger::Released;
  struct Moving {
    bool active = false;  // between a remap and its target on this thread
    ReplayLedger::Moved moved;
    Note note;  // the moved block's, when moved.known
  };
  // Whether `rec` (an event) lies beyond the snapshot point; updates the point's state.
  bool BeyondPoint(const CaptureRecord& rec);
  PeakComposition CompositionOf(const std::function<bool(const AllocationRecord&)>& keep) const;

  absl::Status ApplyLine(const CaptureRecord& rec);

  // SummarizeWithPeaks()'s logs: the changes of the live set since each high-water
  // moment, the whole capture's by (scope, site) and each scope's by site. A change is
  // logged before it is counted, so the change that makes a moment is not in its log.
  struct LiveChange {
    int64_t bytes = 0;
    int64_t blocks = 0;
    uint64_t generation = 0;  // the log's generation when last changed; older: zero
  };
  // Changes are logged for every block counted, so the logs are found through Recent
  // tables (node maps: their entries stay put).
  struct MomentLog {
    uint64_t generation = 1;  // a new moment starts the next one
    uint64_t event_index = 0;
    int64_t t = 0;
    uint64_t total_live_bytes = 0;
    absl::node_hash_map<uint64_t, LiveChange> changes;
    Recent<uint64_t, LiveChange, 64> recent;
    void Change(uint64_t key, int64_t bytes, int64_t blocks) {
      LiveChange& c = recent.Get(key, key * 0x9E3779B97F4A7C15ull,
                                 [&]() -> LiveChange& { return changes[key]; });
      if (c.generation != generation) c = LiveChange{0, 0, generation};
      c.bytes += bytes;
      c.blocks += blocks;
    }
  };
  struct MomentLogs {
    MomentLog global;                                // by scope << 32 | site
    absl::node_hash_map<uint32_t, MomentLog> scopes;  // by site
    Recent<uint32_t, MomentLog, 1> recent_scope;
    MomentLog& Scope(uint32_t scope) {
      return recent_scope.Get(scope, 0, [&]() -> MomentLog& { return scopes[scope]; });
    }
  };
  void LogLiveChange(uint32_t scope, uint32_t site, int64_t bytes, int64_t blocks) {
    if (moments_ == nullptr) return;
    moments_->global.Change((uint64_t{scope} << 32) | site, bytes, blocks);
    moments_->Scope(scope).Change(site, bytes, blocks);
  }
  // The moments' compositions from the live set now and the logs.
  Peaks MomentPeaks() const;
  // The note a new block carries in the ledger (its id, thread and thread event), and what
  // the analyzer keeps apart of it (a sampled block's count and weight, in sampled_, as
  // most captures have none).
  runtime_internal::BlockNote AddNote(const Note& note);
  // The note of the block the ledger released, which the analyzer forgets.
  Note TakeNote(const Released& r);
  // A block's note, as the ledger keeps it (`size`: its size), expanded.
  Note Expand(const runtime_internal::BlockNote& n, uint64_t size) const;
  // Counts a block in or out of the totals, its layer, its scope and its attribution, if
  // the thread filter keeps `thread`, the thread that allocated it, and in its thread
  // view's counters, if it has one.
  void Account(uint64_t size, uint32_t scope, uint32_t site, uint32_t layer, uint64_t count,
               bool allocate, uint32_t thread);
  bool Counted(uint32_t thread) { return ThreadOf(thread).counted; }
  // End of an epoch: the ledger settles the blocks set aside (AllocationLedger).
  void SettleEpoch();

  // A block by its id, and where it was when seen.
  struct BlockAt {
    uint64_t address;
    uint64_t id;
    uint32_t layer;
  };
  // An open scope instance on a thread, and the blocks allocated directly inside it.
  struct OpenScope {
    uint32_t scope;
    std::vector<BlockAt> blocks;
  };
  // The note of the live block `block.id`, seen at `block.address`, or null.
  std::optional<Note> FindNote(const BlockAt& block);

  // What the replay follows per thread (a capture's `thread`, the ring it came from).
  struct ThreadState {
    uint64_t events = 0;  // events so far
    // The id of the block the thread's last allocator call made or changed (an
    // allocation, a resize, a move), 0 when that call released (a free, an arena reset)
    // or there was none (ids start at 1): a free of that block by the thread, or its
    // realloc, is a temporary.
    uint64_t last_allocation = 0;
    Moving moving;                      // between a remap's halves
    std::vector<OpenScope> open_scopes;  // innermost last
    // Whether the thread filter counts the blocks this thread allocates, and the view that
    // counts them (kNoView: none): the filter and the views are set before the first
    // record, so each thread asks them once.
    bool counted = true;
    size_t view = 0;
  };
  // `thread`'s state, made on first use. Events come in runs of one thread (a ring's
  // records are applied together), so the last thread asked for is kept at hand.
  ThreadState& ThreadOf(uint32_t thread) {
    return recent_thread_.Get(thread, 0, [&]() -> ThreadState& {
      std::unique_ptr<ThreadState>& state = threads_[thread];
      if (state == nullptr) {
        state = std::make_unique<ThreadState>();
        state->counted = !counted_thread_ || counted_thread_(thread);
        state->view = ViewOfThread(thread);
      }
      return *state;
    });
  }
  void NoteAllocation(ThreadState& thread, const BlockAt& block);
  void CloseScope(ThreadState& thread, uint32_t scope);
  absl::flat_hash_map<uint32_t, std::unique_ptr<ThreadState>> threads_;
  Recent<uint32_t, ThreadState, 1> recent_thread_;
  std::map<uint32_t, int64_t> census_;        // label -> value
  std::map<uint32_t, Retention> retention_;

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
  // A block reallocated (resized or moved) by `thread`: a temporary when it was the
  // thread's last allocation, as heaptrack counts a realloc (a release, then an
  // allocation).
  void NoteReallocated(uint32_t thread, const Note& note, const AllocationRecord& block);
  // Counts `block` as a temporary, short-lived, or both, for its allocating thread's views.
  void CountAtOnce(const Note& note, const AllocationRecord& block, bool temporary,
                   bool short_lived);

  struct FreedAtOnce {
    uint64_t temporaries = 0, short_lived = 0;
  };
  // The counters of one set of blocks: its summary's totals, layers, scopes,
  // scope_peak_event, temporaries, short_lived and peak_event_index (filled in during the
  // replay; Finish() adds the attribution and coverage they make), and its attribution
  // while the replay goes on.
  //
  // Every count of a block changes the counters of its (site, scope, layer): a Row holds
  // that attribution's own and points at its scope's and layer's in the summary (nodes of
  // std::map, which stay where they are), so one lookup finds all three.
  struct Row {
    UsageCounters attribution;
    FreedAtOnce freed;
    UsageCounters* scope = nullptr;
    UsageCounters* layer = nullptr;
  };
  struct Tally {
    CaptureSummary summary;
    absl::flat_hash_map<AttributionKey, std::unique_ptr<Row>> rows;
    Recent<AttributionKey, Row, 64> recent;

    Row& RowOf(const AttributionKey& key) {
      const uint64_t hash =
          (uint64_t{key.site} * 0x9E3779B97F4A7C15ull) ^ (uint64_t{key.scope} << 8) ^ key.layer;
      return recent.Get(key, hash, [&]() -> Row& {
        std::unique_ptr<Row>& row = rows[key];
        if (row == nullptr) {
          row = std::make_unique<Row>();
          row->scope = &summary.scopes[key.scope];
          row->layer = &summary.layers[key.layer];
        }
        return *row;
      });
    }
  };
  // Counts one block in or out of `t` (Account()); a resize of one (the counters' one
  // call); one freed at once (NoteFreed()).
  void Count(Tally& t, uint64_t size, uint32_t scope, uint32_t site, uint32_t layer,
             uint64_t count, bool allocate);
  void CountResize(Tally& t, uint64_t before, uint64_t after, uint32_t scope, uint32_t site,
                   uint32_t layer, uint64_t count);
  // After counting in `t`: the event is the high-water moment of `scope` (its counters in
  // `t`) and of the totals if they rose above `scope_high_water` and `high_water`.
  void NotePeaks(Tally& t, uint32_t scope_id, const UsageCounters& scope,
                 uint64_t scope_high_water, uint64_t high_water);
  static void CountFreed(Tally& t, const AttributionKey& key, uint64_t bytes, uint64_t count,
                         bool temporary, bool short_lived);
  // The attribution and coverage of a tally's counters, and their peaks' bounds.
  void FinishTally(Tally& t, const TrailerBlocks* trailer);
  // The view that counts the blocks of `thread`, or kNoView.
  static constexpr size_t kNoView = ~size_t{0};
  size_t ViewOf(uint32_t thread) { return ThreadOf(thread).view; }
  size_t ViewOfThread(uint32_t thread) const;  // asks thread_views_ (ThreadState::view)

  // The counters of the blocks the thread filter keeps, beside everything the replay
  // knows of the whole capture (its tables, retention, releases unmatched): state().
  Tally main_;
  std::vector<Tally> views_;  // one per thread view (SetThreadViews()); only the counters
  ThreadViews thread_views_;
  ViewLiveChangeHook view_live_change_hook_;
  absl::flat_hash_map<AttributionKey, double> weight_sums_;  // sampled captures only
  uint64_t events_seen_ = 0;
  uint64_t stop_after_ = ~uint64_t{0};
  SnapshotPoint point_;
  bool stopped_ = false;          // the snapshot point was passed
  uint64_t scope_exits_seen_ = 0; // exits of point_.scope so far
  int64_t last_t_ = 0;
  uint32_t epoch_ = 0;            // of the last event applied
  uint64_t next_id_ = 1;          // Note::id

  std::unique_ptr<MomentLogs> moments_;  // SummarizeWithPeaks() only
  // ApplyFile()'s file checked against its trailer's checksum beside the replay, for
  // FinishFile().
  std::future<std::optional<bool>> checksum_;
  bool skip_checksum_ = false;  // SkipFileChecksum()

  // How far ahead ApplyBatch() asks for an event's ledger slot: from
  // kReplayTablesFromBlocks live blocks on, or once the tables were sized for that many
  // (ReserveForPeak()).
  static constexpr size_t kAheadEvents = kReplayAheadEvents;
  bool reserved_ = false;

  // Sizes the ledger's tables as ReplayTableSizes(path) says. A replay that stops early
  // sizes them for the whole capture.
  void ReserveForPeak(const std::string& path);

  // The live blocks, each with its note, and the rules that match releases to them: the
  // drainer's.
  std::unique_ptr<ReplayLedger> ledger_;
  absl::flat_hash_map<uint64_t, Sample> sampled_;  // by note id: blocks of weight != 1
  // Id -> where a remap moved a block (its target's address and layer, which a capture
  // may give as another layer) from where an open scope saw it; `id` unused.
  absl::flat_hash_map<uint64_t, BlockAt> moved_to_;
  // Scope instances open on every thread: while there are none, no scope's list holds a
  // block, and a move need not say where its block went.
  uint64_t open_scope_instances_ = 0;
  uint64_t live_blocks_ = 0;  // the notes' counts, summed
  // Every live block's bytes, whatever the thread filter and views: what the ledger's own
  // totals would say, which it does not keep here (the Analyzer counts for itself).
  uint64_t live_bytes_ = 0;
  LiveChangeHook live_change_hook_;
  ThreadFilter counted_thread_;
};

// Puts the counters of the recording process's ledger at the capture's end (the
// trailer's totals, and every layer and scope that allocated, with their names) in place
// of `summary`'s. A summary read from the trailer alone (trailer_summary.h) is made so,
// and so is a snapshot's replay at its end: its events are the blocks live at one moment,
// and the allocations and peaks before it are only in the trailer.
void TakeTrailerCounters(const TrailerBlocks& trailer, CaptureSummary* summary);

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_ANALYZER_H_
