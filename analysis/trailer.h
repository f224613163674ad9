// Copyright 2026 The memtrace Authors.
//
// trailer.h: what a capture's trailer says about the capture itself, beside its totals.
//
// The trailer (docs/capture-format.md) ends every finished capture with the recorder's
// integrity counters (every loss and every guess, runtime/capture_integrity.h), the sink's
// own counts (events written and lost, write errors) and memtrace's own memory. The
// Analyzer recomputes totals from the events; these blocks it cannot recompute: only the
// process that recorded knew how many records it dropped. ParseTrailer() reads them back,
// so that `memtrace summary` shows the integrity block beside the totals as the runtime's
// summary does, and `verify` can say which counters made a capture partial.
//
//   const absl::StatusOr<TrailerBlocks> t = ParseTrailer(summary.trailer);
//   if (t.ok() && t->has_integrity) puts(FormatIntegrityBlock(t->integrity, ...).c_str());
//
// Fields missing from the trailer read as 0 (older captures lack the newest counters);
// `has_integrity`, `has_sink` and `fence` say what was there at all. A trailer that is not
// a JSON object is an error naming what is wrong, never a crash.
//
// Thread safety: ParseTrailer is a pure function.

#ifndef MEMTRACE_ANALYSIS_TRAILER_H_
#define MEMTRACE_ANALYSIS_TRAILER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/capture_integrity.h"
#include "runtime/usage_counters.h"

namespace memtrace {

struct TrailerBlocks {
  bool has_integrity = false;
  CaptureIntegrity integrity;
  // "membarrier" or "seq_cst" (the trailer's integrity.uses_membarrier), or "not recorded"
  // for a capture written before the trailer carried it.
  std::string fence = "not recorded";
  // The integrity object as written (minified), with "complete" and "exact" as `integrity`
  // has them (readers add what the recorder did not know: blocks untracked before start,
  // events the sink lost); or empty.
  std::string integrity_json;

  bool has_sink = false;
  uint64_t events_written = 0;
  // Of those, the capture's event records (the sink's `event_lines`); `has_event_lines` is
  // false for a capture written before the sink counted them.
  bool has_event_lines = false;
  uint64_t event_lines = 0;
  uint64_t events_lost = 0;  // dropped by the sink: its queue was full, or after a write error
  uint64_t events_past_limit = 0;  // not written: the capture had reached max_bytes
  uint64_t max_bytes = 0;          // the capture's size bound (MEMTRACE_MAX_BYTES), 0: none
  uint64_t write_errors = 0;
  uint64_t stack_collisions = 0;
  std::string sink_json;
  // zlib's CRC-32 of the file's bytes before the trailer's record, as written (before
  // compression); absent from captures written before the sink computed it.
  std::optional<uint32_t> crc32;

  // The whole run's totals, as the ledger had them at the end (the trailer's `totals`):
  // every record, also those a size limit kept out of the event stream.
  bool has_totals = false;
  UsageCounters totals;
  // The high-water intervals of the totals, each layer and each scope (by id) at the end,
  // where the trailer has them (usage_counters.h).
  struct PeakBound {
    uint64_t low = 0;
    uint64_t high = kNoHighWaterBound;
  };
  std::optional<PeakBound> totals_peak;
  std::map<uint32_t, PeakBound> layer_peaks;
  std::map<uint32_t, PeakBound> scope_peaks;
  // Each layer's and scope's counters at the end (the trailer's `layers` and `scopes`),
  // their interval included where written, and their names.
  std::map<uint32_t, UsageCounters> layer_usage;
  std::map<uint32_t, UsageCounters> scope_usage;
  std::map<uint32_t, std::string> layer_names;
  std::map<uint32_t, std::string> scope_paths;

  // Memory over time (the trailer's `timeline`, runtime/usage_sample.h): a table whose
  // columns are "t" (unix ns), "rss_bytes", "live_bytes", "live_count", then "layer:ID"
  // and "scope:ID" (live bytes); a row per sample kept, one in every `every` taken. Empty
  // in a capture written without samples.
  struct Timeline {
    std::vector<std::string> columns;
    uint64_t every = 1;
    std::vector<std::vector<int64_t>> rows;
    // The index of the column named `name`, or -1.
    int Column(std::string_view name) const;
  };
  Timeline timeline;
  std::string timeline_json;  // the object as written (minified), or empty

  uint64_t memtrace_bytes = 0;
  std::string memtrace_memory_json;  // by part (rings, tickets, ledger, sites), or empty
  // CPU time of memtrace's own threads (runtime/internal/thread_cpu_time.h): the drainer and the
  // capture's writer. Captures written before the trailer carried it have none.
  bool has_memtrace_cpu = false;
  uint64_t drainer_cpu_ns = 0;
  uint64_t applier_cpu_ns = 0;  // the appliers beside the drainer; 0 when it had none
  uint64_t writer_cpu_ns = 0;
  std::string memtrace_cpu_json;  // the object as written (minified), or empty
  // The census attached to the tracer (runtime/census.h) at the end: each entry's value
  // and high-water, in label order. Empty when none was attached.
  struct CensusValue {
    std::string name;
    int64_t bytes = 0;
    int64_t high_water_bytes = 0;
  };
  std::vector<CensusValue> census;
  // How the capture ended: interposer captures "exit", "_exit", "exec", "signal N",
  // "unshare(CLONE_NEWUSER)"; any capture "finish while recording" (sinks/capture_ends.h).
  std::string ended_by;
  std::string exec;                  // ended by "exec": the program named, or empty
  // A capture salvaged from one without a trailer (capture_conversion.h): the capture it
  // was salvaged from, and where that one was cut off inside a record (empty: it ended
  // between records). Its records are those written before its end; what was lost after
  // them, nothing counted.
  bool salvaged = false;
  std::string salvaged_from;
  std::string salvaged_cut;
  uint64_t forks = 0;                // interposer captures: children the process forked
  // Interposer captures: blocks allocated before tracing started (in the constructors of
  // the program's libraries, which run before the interposer's) and released again
  // before it did that are not in the capture (only those the interposer's log of such
  // calls had to drop; older interposers dropped all of them); and those that did not fit
  // its table of the blocks live then (their releases count as unknown frees).
  uint64_t prestart_freed = 0;
  uint64_t prestart_freed_bytes = 0;
  uint64_t prestart_untracked = 0;
  // Interposer captures: blocks whose allocation record was lost, left out of the capture
  // with their releases (preload/record.h).
  uint64_t left_out_blocks = 0;
  // Interposer captures: what its recording filters left out (the trailer's `filtered`,
  // preload/filter_counts.h), the allocations and the bytes they asked for, by filter:
  // blocks below MEMTRACE_MIN_SIZE, and blocks sampling did not draw. `has_filtered` is
  // false for a capture written before the interposer counted them: whatever its header's
  // settings left out is then of unknown size.
  bool has_filtered = false;
  uint64_t min_size_allocations = 0;
  uint64_t min_size_bytes = 0;
  uint64_t unsampled_allocations = 0;
  uint64_t unsampled_bytes = 0;

  // What made the capture lose something, by the counters' names in the runtime's summary,
  // each with its count ("dropped 3", "sink lost 12"); empty when nothing was lost.
  std::vector<std::string> Losses() const;
  // Whether the capture's peaks are known: its integrity says so (peaks_known()), and the
  // sink lost no events on the way to the file (a replay of the file would lack them). A
  // size limit keeps the peaks of the events before it, which a replay covers. True for a
  // trailer without integrity counters (an older capture's peaks have no bounds at all).
  bool PeaksKnown() const {
    return !has_integrity ||
           (integrity.peaks_known() && events_lost == 0 && write_errors == 0);
  }
  // Whether the only loss is what a size limit kept out (events_past_limit): a capture
  // partial as its user asked, whose events before the limit are whole.
  bool LostOnlyPastTheSizeLimit() const {
    return events_past_limit != 0 && Losses().size() == 1;
  }
};

// Gives counters replayed from a capture's events the high-water intervals the recorder
// computed (usage_counters.h). A replay applies the events in the capture's order, which
// is the order the recorder applied them in, so the replayed peaks are the recorder's;
// their intervals come from `trailer`: at the capture's end (`at_end`) each counter takes
// its own; where every peak was exact (no bounded epoch) they stay exact everywhere; at a
// point inside a capture with bounded epochs, or without a trailer that has them, a peak
// has no bound (kNoHighWaterBound).
void BoundReplayedPeaks(const TrailerBlocks* trailer, bool at_end, UsageCounters* totals,
                        std::map<uint32_t, UsageCounters>* layers,
                        std::map<uint32_t, UsageCounters>* scopes);

// Reads the trailer line `line` (JSON text, as CaptureSummary::trailer holds it).
absl::StatusOr<TrailerBlocks> ParseTrailer(std::string_view line);

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_TRAILER_H_
