// Copyright 2026 The memtrace Authors.

#include "analysis/capture_matcher.h"

#include <algorithm>
#include <future>
#include <optional>
#include <span>

#include "absl/container/flat_hash_map.h"
#include "analysis/analyzer.h"
#include "analysis/batch_reader.h"
#include "analysis/capture_file_ends.h"
#include "runtime/internal/allocation_ledger.h"
#include "runtime/internal/site_table.h"
#include "sinks/capture_lock.h"

namespace memtrace {
namespace {

// The matching half of Analyzer::Apply(): the same ledger calls on the same records, in
// the same order, with the same epoch ends. A release the ledger finds no block for (or
// finds released already) is one with no allocation in the capture. The ledger counts as
// the recording process's did, sizes as recorded (a sampled block unscaled, as there).
class Matcher {
 public:
  // Counting as the drainer counts: in the capture's order, which is the order it applied.
  Matcher() : ledger_(SiteTable::kOtherSites - 1) {}

  void Reserve(const std::string& path) {
    for (const LayerBlocks& l : ReplayTableSizes(path)) {
      ledger_.Reserve(l.layer, l.blocks);
      ahead_ = true;
    }
  }

  void ApplyBatch(std::span<const CaptureRecord> batch) {
    const size_t n = batch.size();
    const bool ahead = ahead_ || live_ >= kReplayTablesFromBlocks;
    auto prefetch = [&](const CaptureRecord& rec) {
      if (ahead && rec.type >= LineType::kAlloc && rec.type <= LineType::kRemapTarget) {
        ledger_.Prefetch(static_cast<LayerId>(rec.layer), rec.addr);
      }
    };
    for (size_t i = 0; i < std::min(n, kReplayAheadEvents); ++i) prefetch(batch[i]);
    for (size_t i = 0; i < n; ++i) {
      if (i + kReplayAheadEvents < n) prefetch(batch[i + kReplayAheadEvents]);
      Apply(batch[i]);
    }
  }

  // `checksum`: MatchesTrailerChecksum(path).
  CaptureSummary Finish(const std::string& path, const CaptureReadStats& stats,
                        std::optional<bool> checksum) {
    live_ -= std::min(live_, ledger_.SettleDisplaced());  // the last epoch ends
    summary_.events = stats.events;
    summary_.events_applied = events_seen_;
    summary_.cut = stats.cut;
    summary_.being_written = !summary_.has_trailer && CaptureBeingWritten(path);
    // Also without a trailer read: a flipped byte may make a record run past the end, and
    // the file read as cut off before the trailer that is there.
    summary_.checksum_differs = checksum == false;
    summary_.totals = ledger_.totals();
    for (size_t layer = 0; layer < ledger_.layers().size(); ++layer) {
      if (ledger_.layers()[layer].allocated_count != 0) {
        summary_.layers[static_cast<uint32_t>(layer)] = ledger_.layers()[layer];
      }
    }
    for (size_t scope = 0; scope < ledger_.scopes().size(); ++scope) {
      if (ledger_.scopes()[scope].allocated_count != 0) {
        summary_.scopes[static_cast<uint32_t>(scope)] = ledger_.scopes()[scope];
      }
    }
    return std::move(summary_);
  }

 private:
  struct Moving {
    bool active = false;  // between a remap and its target on this thread
    AllocationLedger::Moved moved;
  };

  void Apply(const CaptureRecord& rec) {
    if (IsEvent(rec.type)) {
      if (rec.epoch != epoch_ && events_seen_ > 0) {
        live_ -= std::min(live_, ledger_.SettleDisplaced());
      }
      epoch_ = rec.epoch;
      ++events_seen_;
    }
    const auto layer = static_cast<LayerId>(rec.layer);
    switch (rec.type) {
      case LineType::kHeader:
        ReadCaptureHeader(rec, &summary_);
        break;
      case LineType::kAlloc:
        if (rec.weight != 1.0) summary_.sampled = true;
        ledger_.Alloc(layer, rec.addr, rec.size, rec.ticket, rec.scope, rec.site);
        ++live_;
        break;
      case LineType::kFree:
        if (Unmatched(ledger_.Free(layer, rec.addr, rec.of))) break;
        live_ -= std::min<uint64_t>(live_, 1);
        break;
      case LineType::kResize:
        Unmatched(ledger_.Resize(layer, rec.addr, rec.of, rec.size, rec.ticket));
        break;
      case LineType::kRemap: {
        Moving& m = moving_[rec.thread];
        m = Moving{};
        m.active = true;
        if (!Unmatched(ledger_.MoveOut(layer, rec.addr, rec.of, &m.moved))) {
          live_ -= std::min<uint64_t>(live_, 1);
        }
        break;
      }
      case LineType::kRemapTarget: {
        if (rec.weight != 1.0) summary_.sampled = true;
        Moving& m = moving_[rec.thread];
        ledger_.MoveIn(layer, m.active ? m.moved : AllocationLedger::Moved{}, rec.addr,
                       rec.size, rec.ticket, rec.scope, rec.site);
        ++live_;
        m = Moving{};
        break;
      }
      case LineType::kArenaReset:
        live_ -= std::min(live_, ledger_.ResetLayer(layer));
        break;
      case LineType::kTrailer:
        summary_.has_trailer = true;
        summary_.trailer_complete = rec.complete;
        summary_.trailer = rec.raw;
        break;
      default:  // tables, scopes, census, intervals: nothing to match
        break;
    }
  }

  // Counts an outcome that found no block (Analyzer::ApplyLine() counts the same ones).
  bool Unmatched(LedgerOutcome outcome) {
    if (outcome != LedgerOutcome::kUnknown && outcome != LedgerOutcome::kDoubleFree) {
      return false;
    }
    ++summary_.unmatched_releases;
    return true;
  }

  AllocationLedger ledger_;
  absl::flat_hash_map<uint32_t, Moving> moving_;  // by thread; remaps are rare
  CaptureSummary summary_;
  uint64_t events_seen_ = 0;
  uint32_t epoch_ = 0;
  uint64_t live_ = 0;  // about: whether to ask memory for slots ahead
  bool ahead_ = false;
};

}  // namespace

absl::StatusOr<CaptureSummary> MatchCapture(
    const std::string& path, const std::function<void(uint64_t bytes_read)>& progress) {
  Matcher matcher;
  matcher.Reserve(path);
  std::future<std::optional<bool>> checksum = MatchTrailerChecksumAside(path);
  CaptureReadStats stats;
  const absl::Status s = ReadCaptureBatches(
      path,
      [&](std::span<const CaptureRecord> batch, const CaptureReadStats& read) {
        if (progress) progress(read.bytes);
        matcher.ApplyBatch(batch);
        return absl::OkStatus();
      },
      &stats);
  if (!s.ok()) return ExplainReadError(path, s);
  return matcher.Finish(path, stats, checksum.get());
}

}  // namespace memtrace
