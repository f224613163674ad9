// Copyright 2026 The memtrace Authors.

#include "analysis/analyzer.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

#include "analysis/batch_reader.h"
#include "analysis/capture_file_ends.h"
#include "analysis/trailer.h"
#include "runtime/internal/site_table.h"
#include "sinks/capture_lock.h"

namespace memtrace {
namespace {

// Estimated bytes for a recorded size under a sample weight.
uint64_t Scaled(uint64_t size, double weight) {
  return weight == 1.0 ? size
                       : static_cast<uint64_t>(std::llround(static_cast<double>(size) * weight));
}

}  // namespace

Analyzer::Analyzer() : ledger_(std::make_unique<ReplayLedger>(SiteTable::kOtherSites - 1)) {
  // The Analyzer keeps every counter it reports (they scale sampled blocks, and count
  // some threads' blocks or each view's); the ledger only matches.
  ledger_->set_counting(false);
}
Analyzer::~Analyzer() = default;
Analyzer::Analyzer(Analyzer&&) noexcept = default;
Analyzer& Analyzer::operator=(Analyzer&&) noexcept = default;

absl::StatusOr<CaptureSummary> Analyzer::Summarize(const std::string& path,
                                                   uint64_t stop_after) {
  Analyzer analyzer;
  analyzer.StopAfter(stop_after);
  CaptureReadStats stats;
  if (absl::Status s = analyzer.ApplyFile(path, &stats); !s.ok()) return s;
  return analyzer.FinishFile(path, stats);
}

absl::StatusOr<CaptureSummary> Analyzer::Summarize(const std::string& path,
                                                   const SnapshotPoint& point) {
  AnalysisSummaryOptions options;
  options.point = point;
  return Summarize(path, options);
}

absl::StatusOr<CaptureSummary> Analyzer::Summarize(const std::string& path,
                                                   const AnalysisSummaryOptions& options) {
  Analyzer analyzer;
  analyzer.StopAt(options.point);
  CaptureReadStats stats;
  if (absl::Status s = analyzer.ApplyFile(path, &stats, options.progress); !s.ok()) return s;
  return analyzer.FinishFile(path, stats);
}

CaptureSummary Analyzer::FinishFile(const std::string& path, const CaptureReadStats& stats) {
  CaptureSummary summary = Finish(stats);
  summary.being_written = !summary.has_trailer && CaptureBeingWritten(path);
  // Also without a trailer read: a flipped byte may make a record run past the end, and
  // the file read as cut off before the trailer that is there.
  summary.checksum_differs =
      (checksum_.valid() ? checksum_.get() : MatchesTrailerChecksum(path)) == false;
  return summary;
}

absl::StatusOr<CaptureSummary> Analyzer::SummarizeText(std::string_view text,
                                                       const std::string& name) {
  Analyzer analyzer;
  CaptureReadStats stats;
  absl::Status s = ReadCaptureText(
      text, name, [&](const CaptureRecord& rec) { return analyzer.Apply(rec); }, &stats);
  if (!s.ok()) return s;
  return analyzer.Finish(stats);
}

void Analyzer::Account(uint64_t size, uint32_t scope_id, uint32_t site, uint32_t layer,
                       uint64_t count, bool allocate, uint32_t thread) {
  const int64_t bytes = static_cast<int64_t>(size);
  live_bytes_ = allocate ? live_bytes_ + size : live_bytes_ - size;
  LogLiveChange(scope_id, site, allocate ? bytes : -bytes, allocate ? 1 : -1);
  const ThreadState& allocating = ThreadOf(thread);
  if (allocating.counted) {
    Count(main_, size, scope_id, site, layer, count, allocate);
    if (live_change_hook_) live_change_hook_(scope_id, layer);
  }
  if (const size_t view = allocating.view; view != kNoView) {
    Count(views_[view], size, scope_id, site, layer, count, allocate);
    if (view_live_change_hook_) view_live_change_hook_(view, scope_id, layer);
  }
}

void Analyzer::Count(Tally& t, uint64_t size, uint32_t scope_id, uint32_t site, uint32_t layer,
                     uint64_t count, bool allocate) {
  Row& row = t.RowOf(AttributionKey{site, scope_id, layer});
  const UsageCounters& scope = *row.scope;
  const uint64_t scope_high_water = scope.high_water_bytes;
  const uint64_t high_water = t.summary.totals.high_water_bytes;
  UsageCounters* all[] = {&t.summary.totals, row.layer, row.scope, &row.attribution};
  if (!allocate) {  // raises no high-water mark
    for (UsageCounters* c : all) c->Free(size);
  } else {
    for (UsageCounters* c : all) c->Allocate(size);
  }
  if (count != 1) {
    // A sampled block stands for `count` allocations: the counters' own step is one.
    const uint64_t extra = count - 1;
    for (UsageCounters* c : all) {
      if (allocate) {
        c->allocated_count += extra;
        c->allocation_calls += extra;
        c->live_count += extra;
      } else {
        c->freed_count += extra;
        c->live_count -= extra;
      }
    }
  }
  if (scope.high_water_bytes > scope_high_water ||
      t.summary.totals.high_water_bytes > high_water) {
    NotePeaks(t, scope_id, scope, scope_high_water, high_water);
  }
}

void Analyzer::CountResize(Tally& t, uint64_t before, uint64_t after, uint32_t scope_id,
                           uint32_t site, uint32_t layer, uint64_t count) {
  Row& row = t.RowOf(AttributionKey{site, scope_id, layer});
  const UsageCounters& scope = *row.scope;
  const uint64_t scope_high_water = scope.high_water_bytes;
  const uint64_t high_water = t.summary.totals.high_water_bytes;
  UsageCounters* all[] = {&t.summary.totals, row.layer, row.scope, &row.attribution};
  // One call, as Resize() counts it; a sampled block's resize stands for `count`.
  for (UsageCounters* c : all) {
    c->Resize(before, after);
    c->allocation_calls += count - 1;
  }
  NotePeaks(t, scope_id, scope, scope_high_water, high_water);
}

void Analyzer::NotePeaks(Tally& t, uint32_t scope_id, const UsageCounters& scope,
                         uint64_t scope_high_water, uint64_t high_water) {
  // A new moment's log starts empty: what the ledger holds now is its composition.
  auto moment = [&](MomentLog& log) {
    ++log.generation;
    log.event_index = events_seen_;
    log.t = last_t_;
    log.total_live_bytes = live_bytes_;
  };
  if (scope.high_water_bytes > scope_high_water) {
    t.summary.scope_peak_event[scope_id] = events_seen_;
    if (moments_ != nullptr && &t == &main_) moment(moments_->Scope(scope_id));
  }
  if (t.summary.totals.high_water_bytes > high_water) {
    t.summary.peak_event_index = events_seen_;
    t.summary.peak_t = last_t_;
    if (moments_ != nullptr && &t == &main_) moment(moments_->global);
  }
}

void Analyzer::SetThreadViews(ThreadViews views) {
  views_.clear();
  views_.resize(views.count);
  thread_views_ = std::move(views);
  for (auto& [thread, state] : threads_) state->view = ViewOfThread(thread);
}

void Analyzer::SetThreadFilter(ThreadFilter keep) {
  counted_thread_ = std::move(keep);
  for (auto& [thread, state] : threads_) {
    state->counted = !counted_thread_ || counted_thread_(thread);
  }
}

size_t Analyzer::ViewOfThread(uint32_t thread) const {
  if (views_.empty()) return kNoView;
  if (auto it = thread_views_.view_of.find(thread); it != thread_views_.view_of.end()) {
    return it->second;
  }
  return thread_views_.others ? *thread_views_.others : kNoView;
}

uint64_t Analyzer::SampledCount(const AttributionKey& key, double weight) {
  if (weight == 1.0) return 1;  // adds exactly one to any sum: the sum is left as it is
  double& sum = weight_sums_[key];
  const int64_t before = std::llround(sum);
  sum += weight;
  // At least 1: weights are >= 1, and llround(x + 1) == llround(x) + 1 for x >= 0.
  return static_cast<uint64_t>(std::llround(sum) - before);
}

runtime_internal::BlockNote Analyzer::AddNote(const Note& note) {
  if (note.weight != 1.0) sampled_[note.id] = Sample{note.count, note.weight};
  live_blocks_ += note.count;
  return runtime_internal::BlockNote{note.id, note.thread_event, note.thread};
}

Analyzer::Note Analyzer::Expand(const runtime_internal::BlockNote& n, uint64_t size) const {
  Note out{n.id, size, n.thread_event, n.thread, 1, 1.0};
  if (!sampled_.empty()) {
    if (auto it = sampled_.find(n.id); it != sampled_.end()) {
      out.count = it->second.count;
      out.weight = it->second.weight;
    }
  }
  return out;
}

Analyzer::Note Analyzer::TakeNote(const Released& r) {
  const Note out = Expand(r.note, r.block.size);
  if (out.weight != 1.0) sampled_.erase(out.id);
  live_blocks_ -= out.count;
  if (!moved_to_.empty()) moved_to_.erase(out.id);
  return out;
}

std::optional<Analyzer::Note> Analyzer::FindNote(const BlockAt& block) {
  BlockAt at = block;
  if (!moved_to_.empty()) {
    if (auto moved = moved_to_.find(block.id); moved != moved_to_.end()) at = moved->second;
  }
  uint64_t size = 0;
  const runtime_internal::BlockNote* n = ledger_->FindNote(
      static_cast<LayerId>(at.layer), at.address,
      [id = block.id](const runtime_internal::BlockNote& s) { return s.id == id; }, &size);
  if (n == nullptr) return std::nullopt;
  return Expand(*n, size);
}

void Analyzer::SettleEpoch() {
  ledger_->SettleDisplaced([&](const Released& r) {
    const Note note = TakeNote(r);
    Account(r.block.size, r.block.scope, static_cast<uint32_t>(r.block.site), r.block.layer,
            note.count, /*allocate=*/false, note.thread);
    ++main_.summary.missed_frees;
  });
}

bool Analyzer::BeyondPoint(const CaptureRecord& rec) {
  if (stopped_ || events_seen_ >= stop_after_) return true;
  switch (point_.kind) {
    case SnapshotPoint::Kind::kEnd:
    case SnapshotPoint::Kind::kScopeExit:  // checked after the event is applied
      return false;
    case SnapshotPoint::Kind::kEvent:
      stopped_ = events_seen_ >= point_.event;
      return stopped_;
    case SnapshotPoint::Kind::kTime: {
      const int64_t started = main_.summary.started_unix_ns;
      const int64_t at = point_.time_ns < started ? started + point_.time_ns : point_.time_ns;
      stopped_ = rec.t > at;
      return stopped_;
    }
  }
  return false;
}

absl::Status Analyzer::Apply(const CaptureRecord& rec) {
  if (IsEvent(rec.type)) {
    if (BeyondPoint(rec)) return absl::OkStatus();
    // The drainer settles the blocks set aside at reused addresses when an epoch's records
    // are all applied, before the next epoch's.
    if (rec.epoch != epoch_ && events_seen_ > 0) SettleEpoch();
    epoch_ = rec.epoch;
    ++events_seen_;
    last_t_ = rec.t;
    ++ThreadOf(rec.thread).events;
  }
  absl::Status s = ApplyLine(rec);
  if (rec.type == LineType::kScopeExit && point_.kind == SnapshotPoint::Kind::kScopeExit) {
    auto path = main_.summary.scope_paths.find(rec.scope);
    if (path != main_.summary.scope_paths.end() && path->second == point_.scope &&
        ++scope_exits_seen_ == point_.nth) {
      stopped_ = true;
    }
  }
  return s;
}

absl::Status Analyzer::ApplyBatch(std::span<const CaptureRecord> batch,
                                  const AfterRecord& after) {
  const size_t n = batch.size();
  const bool ahead = reserved_ || live_blocks_ >= kReplayTablesFromBlocks;
  auto prefetch = [&](const CaptureRecord& rec) {
    if (ahead && rec.type >= LineType::kAlloc && rec.type <= LineType::kRemapTarget) {
      ledger_->Prefetch(static_cast<LayerId>(rec.layer), rec.addr);
    }
  };
  for (size_t i = 0; i < std::min(n, kAheadEvents); ++i) prefetch(batch[i]);
  for (size_t i = 0; i < n; ++i) {
    if (i + kAheadEvents < n) prefetch(batch[i + kAheadEvents]);
    if (absl::Status s = Apply(batch[i]); !s.ok()) return s;
    if (after) {
      if (absl::Status s = after(batch[i]); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

std::vector<LayerBlocks> ReplayTableSizes(const std::string& path) {
  std::vector<LayerBlocks> out;
  const CaptureFileEnds ends = ReadCaptureFileEnds(path, /*with_header=*/false);
  if (!ends.trailer) return out;
  const absl::StatusOr<TrailerBlocks> t = ParseTrailer(*ends.trailer);
  if (!t.ok() || !t->has_totals) return out;
  // Samples can miss the peak itself: this is at most the peak's count.
  uint64_t most = t->totals.live_count;
  if (const int column = t->timeline.Column("live_count"); column >= 0) {
    for (const std::vector<int64_t>& row : t->timeline.rows) {
      if (static_cast<size_t>(column) < row.size() && row[column] > 0) {
        most = std::max(most, static_cast<uint64_t>(row[column]));
      }
    }
  }
  // No more blocks than the capture's allocations, nor than its file can hold: an
  // allocation takes at least 4 bytes in a binary capture and 64 in a JSONL one. So a
  // trailer written by hand or damaged sizes no table beyond what a replay of a file that
  // size could need anyway.
  most = std::min({most, t->totals.allocated_count, ends.file_bytes / (ends.binary ? 4 : 64)});
  if (most < kReplayTablesFromBlocks) return out;  // small tables grow in the caches
  // Each layer by the larger of its shares: of the allocations, and of the blocks live at
  // the end (a layer of long-lived blocks may make few of the allocations). In doubles:
  // a damaged trailer's counts may add up past 2^64.
  double allocations = 0;
  double live = 0;
  for (const auto& [layer, usage] : t->layer_usage) {
    allocations += static_cast<double>(usage.allocated_count);
    live += static_cast<double>(usage.live_count);
  }
  for (const auto& [layer, usage] : t->layer_usage) {
    double share = 0;
    if (allocations > 0) share = static_cast<double>(usage.allocated_count) / allocations;
    if (live > 0) share = std::max(share, static_cast<double>(usage.live_count) / live);
    const auto blocks =
        static_cast<uint64_t>(static_cast<double>(most) * std::clamp(share, 0.0, 1.0));
    if (layer <= 0xff && blocks >= kReplayTablesFromBlocks) {
      out.push_back(LayerBlocks{static_cast<LayerId>(layer), std::min(blocks, most)});
    }
  }
  return out;
}

void Analyzer::ReserveForPeak(const std::string& path) {
  for (const LayerBlocks& l : ReplayTableSizes(path)) {
    ledger_->Reserve(l.layer, l.blocks);
    reserved_ = true;
  }
}

absl::Status Analyzer::ApplyFile(const std::string& path, CaptureReadStats* stats,
                                 const Progress& progress, const AfterRecord& after) {
  if (events_seen_ == 0 && live_blocks_ == 0) ReserveForPeak(path);
  if (!skip_checksum_ && !checksum_.valid()) {
    checksum_ = MatchTrailerChecksumAside(path);  // for FinishFile()
  }
  return ExplainReadError(path, ReadCaptureBatches(
                                    path,
                                    [&](std::span<const CaptureRecord> batch,
                                        const CaptureReadStats& read) {
                                      if (progress) progress(read.bytes);
                                      return ApplyBatch(batch, after);
                                    },
                                    stats));
}

absl::Status Analyzer::ApplyLine(const CaptureRecord& rec) {
  switch (rec.type) {
    case LineType::kHeader:
      ReadCaptureHeader(rec, &main_.summary);
      break;
    case LineType::kLayer:
      main_.summary.layer_names[rec.id] = rec.name;
      break;
    case LineType::kScope:
      main_.summary.scope_paths[rec.id] = rec.path;
      break;
    case LineType::kSite:
      main_.summary.site_addrs[rec.id] = rec.addr;
      if (!rec.frames.empty()) main_.summary.site_frames[rec.id] = rec.frames;
      break;
    case LineType::kModule:
      main_.summary.modules.push_back(rec);
      break;
    case LineType::kThread: {
      // The line again for the ring's thread (the same tid): its new name.
      std::vector<CaptureSummary::KernelThread>& threads = main_.summary.kernel_threads;
      auto holder = std::find_if(threads.rbegin(), threads.rend(),
                                 [&](const auto& k) { return k.thread == rec.thread; });
      if (holder != threads.rend() && holder->tid == rec.tid) {
        holder->name = rec.name;
      } else {
        threads.push_back({rec.thread, rec.tid, rec.name});
      }
      break;
    }
    case LineType::kAlloc: {
      if (rec.weight != 1.0) main_.summary.sampled = true;
      const uint64_t size = Scaled(rec.size, rec.weight);
      const LayerId layer = static_cast<LayerId>(rec.layer);
      ThreadState& thread = ThreadOf(rec.thread);
      const Note note{next_id_++,
                      size,
                      static_cast<uint32_t>(thread.events),
                      rec.thread,
                      SampledCount({rec.site, rec.scope, rec.layer}, rec.weight),
                      rec.weight};
      ledger_->Alloc(layer, rec.addr, size, rec.ticket, rec.scope, rec.site, AddNote(note));
      Account(size, rec.scope, rec.site, rec.layer, note.count, /*allocate=*/true, rec.thread);
      NoteAllocation(thread, BlockAt{rec.addr, note.id, rec.layer});
      thread.last_allocation = note.id;
      break;
    }
    case LineType::kFree: {
      Released r;
      const auto outcome = ledger_->Free(static_cast<LayerId>(rec.layer), rec.addr, rec.of, &r);
      if (outcome == LedgerOutcome::kUnknown ||
          outcome == LedgerOutcome::kDoubleFree) {
        ++main_.summary.unmatched_releases;
        ThreadOf(rec.thread).last_allocation = 0;  // a release all the same
        break;
      }
      const Note note = TakeNote(r);
      Account(r.block.size, r.block.scope, static_cast<uint32_t>(r.block.site), r.block.layer,
              note.count, /*allocate=*/false, note.thread);
      NoteFreed(rec.thread, note, r.block);
      break;
    }
    case LineType::kResize: {
      const LayerId layer = static_cast<LayerId>(rec.layer);
      // A sampled block's new size is the recorded one times the block's weight, which
      // the ledger's one resize takes: the block is found first, as the resize finds it.
      uint64_t new_size = rec.size;
      if (!sampled_.empty()) {
        if (const runtime_internal::BlockNote* n = ledger_->PeekNote(layer, rec.addr, rec.of)) {
          new_size = Scaled(rec.size, Expand(*n, 0).weight);
        }
      }
      Released before;
      if (ledger_->Resize(layer, rec.addr, rec.of, new_size, rec.ticket, &before) ==
          LedgerOutcome::kUnknown) {
        ++main_.summary.unmatched_releases;
        ThreadOf(rec.thread).last_allocation = 0;  // a call all the same
        break;
      }
      const Note note = Expand(before.note, before.block.size);
      NoteReallocated(rec.thread, note, before.block);
      live_bytes_ = live_bytes_ - before.block.size + new_size;
      const uint32_t scope_id = before.block.scope;
      const uint32_t site = static_cast<uint32_t>(before.block.site);
      LogLiveChange(scope_id, site,
                    static_cast<int64_t>(new_size) - static_cast<int64_t>(before.block.size), 0);
      if (Counted(note.thread)) {
        CountResize(main_, before.block.size, new_size, scope_id, site, rec.layer, note.count);
        if (live_change_hook_) live_change_hook_(scope_id, rec.layer);
      }
      if (const size_t view = ViewOf(note.thread); view != kNoView) {
        CountResize(views_[view], before.block.size, new_size, scope_id, site, rec.layer,
                    note.count);
        if (view_live_change_hook_) view_live_change_hook_(view, scope_id, rec.layer);
      }
      ThreadOf(rec.thread).last_allocation = note.id;
      break;
    }
    case LineType::kRemap: {
      Moving& m = ThreadOf(rec.thread).moving;
      m = Moving{};
      m.active = true;
      const auto outcome = ledger_->MoveOut(static_cast<LayerId>(rec.layer), rec.addr, rec.of,
                                            &m.moved);
      if (outcome == LedgerOutcome::kUnknown) {
        ++main_.summary.unmatched_releases;
        ThreadOf(rec.thread).last_allocation = 0;  // a call all the same
        break;
      }
      const AllocationRecord old{rec.addr, m.moved.size, m.moved.scope, m.moved.site,
                                 static_cast<LayerId>(rec.layer)};
      m.note = TakeNote(Released{old, m.moved.ticket48, m.moved.note});
      Account(old.size, old.scope, static_cast<uint32_t>(old.site), old.layer, m.note.count,
              /*allocate=*/false, m.note.thread);
      NoteReallocated(rec.thread, m.note, old);
      break;
    }
    case LineType::kRemapTarget: {
      ThreadState& thread = ThreadOf(rec.thread);
      Moving& m = thread.moving;
      // The moved block keeps the site and scope of the block it came from, and carries
      // its own weight: in a sampled capture the interposer draws a moved block anew, on
      // its new size (preload/byte_sampler.h).
      const double weight = rec.weight;
      if (weight != 1.0) main_.summary.sampled = true;
      const bool known = m.active && m.moved.known;
      const uint64_t size = Scaled(rec.size, weight);
      const uint32_t scope = known ? m.moved.scope : rec.scope;
      const uint32_t site = known ? static_cast<uint32_t>(m.moved.site) : rec.site;
      // The moved block: the same allocation, under its first id and of its first thread,
      // at its new address.
      Note note{known ? m.note.id : next_id_++, size, 0, 0, 1, weight};
      note.thread = known ? m.note.thread : rec.thread;
      note.thread_event = known ? m.note.thread_event
                                : static_cast<uint32_t>(thread.events);
      note.count = SampledCount({site, scope, rec.layer}, weight);
      // Only an open scope's list can hold the block (CloseScope() looks it up there).
      if (known && open_scope_instances_ > 0) {
        moved_to_[note.id] = BlockAt{rec.addr, note.id, rec.layer};
      }
      ledger_->MoveIn(static_cast<LayerId>(rec.layer), m.active ? m.moved : ReplayLedger::Moved{},
                      rec.addr, size, rec.ticket, rec.scope, rec.site, AddNote(note));
      Account(size, scope, site, rec.layer, note.count, /*allocate=*/true, note.thread);
      thread.last_allocation = note.id;
      m = Moving{};
      break;
    }
    case LineType::kArenaReset:
      ThreadOf(rec.thread).last_allocation = 0;  // it releases
      ledger_->ResetLayer(static_cast<LayerId>(rec.layer), [&](const Released& r) {
        const Note note = TakeNote(r);
        Account(r.block.size, r.block.scope, static_cast<uint32_t>(r.block.site),
                r.block.layer, note.count, /*allocate=*/false, note.thread);
      });
      break;
    case LineType::kScopeEnter:
      ThreadOf(rec.thread).open_scopes.push_back(OpenScope{rec.scope, {}});
      ++open_scope_instances_;
      break;
    case LineType::kScopeExit:
      CloseScope(ThreadOf(rec.thread), rec.scope);
      break;
    case LineType::kCensus:
      // A change adds up in any order (runtime/census.h); a value, from a capture written
      // before census changes were deltas, replaces. Unsigned: the sum wraps as the
      // runtime's differences do (Census::Set()).
      if (rec.has_delta) {
        int64_t& value = census_[rec.label];
        value = static_cast<int64_t>(static_cast<uint64_t>(value) +
                                     static_cast<uint64_t>(rec.delta));
      } else {
        census_[rec.label] = rec.bytes;
      }
      break;
    case LineType::kIntervalBegin:
    case LineType::kIntervalEnd:
      break;
    case LineType::kTrailer:
      main_.summary.has_trailer = true;
      main_.summary.trailer_complete = rec.complete;
      main_.summary.trailer = rec.raw;
      break;
  }
  return absl::OkStatus();
}

void Analyzer::NoteFreed(uint32_t thread, const Note& note, const AllocationRecord& block) {
  // The thread's last allocator call made this block: no other allocation or release
  // between. This release is the thread's last call now.
  ThreadState& state = ThreadOf(thread);
  const bool temporary = state.last_allocation == note.id;
  state.last_allocation = 0;
  const bool short_lived =
      note.thread == thread &&
      static_cast<uint32_t>(state.events) - note.thread_event <= kShortLivedEvents;
  CountAtOnce(note, block, temporary, short_lived);
}

void Analyzer::NoteReallocated(uint32_t thread, const Note& note,
                               const AllocationRecord& block) {
  // heaptrack takes each realloc for a release and an allocation: one of the thread's
  // last allocation is a temporary, and the block is still the thread's last allocation.
  CountAtOnce(note, block, ThreadOf(thread).last_allocation == note.id,
              /*short_lived=*/false);
}

void Analyzer::CountAtOnce(const Note& note, const AllocationRecord& block, bool temporary,
                           bool short_lived) {
  if (!temporary && !short_lived) return;
  const AttributionKey key{static_cast<uint32_t>(block.site), block.scope, block.layer};
  if (Counted(note.thread)) {
    CountFreed(main_, key, block.size, note.count, temporary, short_lived);
  }
  if (const size_t view = ViewOf(note.thread); view != kNoView) {
    CountFreed(views_[view], key, block.size, note.count, temporary, short_lived);
  }
}

void Analyzer::CountFreed(Tally& t, const AttributionKey& key, uint64_t bytes, uint64_t count,
                          bool temporary, bool short_lived) {
  FreedAtOnce& at = t.RowOf(key).freed;
  if (temporary) {
    t.summary.temporaries += count;
    t.summary.temporary_bytes += bytes;
    at.temporaries += count;
  }
  if (short_lived) {
    t.summary.short_lived += count;
    t.summary.short_lived_bytes += bytes;
    at.short_lived += count;
  }
}

void Analyzer::NoteAllocation(ThreadState& thread, const BlockAt& block) {
  if (!thread.open_scopes.empty()) thread.open_scopes.back().blocks.push_back(block);
}

void Analyzer::CloseScope(ThreadState& thread, uint32_t scope) {
  auto& stack = thread.open_scopes;
  // Exits are recorded innermost first; close up to and including `scope`.
  while (!stack.empty()) {
    OpenScope open = std::move(stack.back());
    stack.pop_back();
    --open_scope_instances_;
    Retention& r = retention_[open.scope];
    r.scope = open.scope;
    ++r.exits;
    uint64_t blocks = 0, bytes = 0;
    std::vector<BlockAt> survivors;
    for (const BlockAt& block : open.blocks) {
      if (const std::optional<Note> live = FindNote(block)) {
        blocks += live->count;
        bytes += live->size;
        survivors.push_back(block);
      }
    }
    // What outlived this scope was also allocated inside the enclosing one.
    if (!stack.empty()) {
      auto& parent = stack.back().blocks;
      parent.insert(parent.end(), survivors.begin(), survivors.end());
    }
    if (blocks > 0) ++r.exits_retaining;
    r.retained_blocks += blocks;
    r.retained_bytes += bytes;
    if (open.scope == scope) break;
  }
}

CaptureSummary Analyzer::Finish(const CaptureReadStats& stats,
                                std::vector<CaptureSummary>* views) {
  // The last epoch ends with the capture; a snapshot inside it is the state before.
  if (point_.kind == SnapshotPoint::Kind::kEnd && !stopped_ && events_seen_ < stop_after_) {
    SettleEpoch();
  }
  CaptureSummary& summary = main_.summary;
  for (const auto& [scope, r] : retention_) summary.retention.push_back(r);
  summary.events = stats.events;
  summary.cut = stats.cut;
  summary.events_applied = events_seen_;
  summary.snapshot_t = last_t_;
  summary.snapshot_reached =
      point_.kind != SnapshotPoint::Kind::kScopeExit || scope_exits_seen_ >= point_.nth;
  summary.live_blocks = live_blocks_;
  // The replay's peaks are the recorder's (the capture's order is the one it applied);
  // their intervals come from the trailer, at the end only (trailer.h).
  std::optional<TrailerBlocks> blocks;
  if (summary.has_trailer) {
    if (absl::StatusOr<TrailerBlocks> t = ParseTrailer(summary.trailer); t.ok()) {
      blocks = *std::move(t);
    }
  }
  if (views != nullptr) {
    // A view's summary: what the replay knows of the whole capture, with its own counters.
    for (Tally& view : views_) {
      CaptureSummary counts = std::move(view.summary);
      view.summary = summary;
      view.summary.totals = counts.totals;
      view.summary.layers = std::move(counts.layers);
      view.summary.scopes = std::move(counts.scopes);
      view.summary.scope_peak_event = std::move(counts.scope_peak_event);
      view.summary.temporaries = counts.temporaries;
      view.summary.temporary_bytes = counts.temporary_bytes;
      view.summary.short_lived = counts.short_lived;
      view.summary.short_lived_bytes = counts.short_lived_bytes;
      view.summary.peak_event_index = counts.peak_event_index;
      view.summary.peak_t = counts.peak_t;
      // The trailer bounds the whole process's peaks, not those of some threads' blocks.
      FinishTally(view, nullptr);
      views->push_back(std::move(view.summary));
    }
  }
  const bool all_threads = !counted_thread_;
  // A snapshot's events say what was live; its trailer, what was allocated and freed
  // before, and how high the peaks went (snapshot_capture.h); coverage counts from those
  // too. Not for a sampled process: its ledger counts the sample unscaled, and the
  // replay's estimates stand alone; nor for some threads' blocks (the whole process's).
  if (summary.snapshot_of.taken && !summary.sampled && all_threads &&
      point_.kind == SnapshotPoint::Kind::kEnd && blocks && blocks->has_totals) {
    TakeTrailerCounters(*blocks, &summary);
  }
  FinishTally(main_, blocks && all_threads ? &*blocks : nullptr);
  return std::move(main_.summary);
}

void Analyzer::FinishTally(Tally& t, const TrailerBlocks* trailer) {
  CaptureSummary& summary = t.summary;
  for (const auto& [key, row] : t.rows) {
    auto it = summary.site_addrs.find(key.site);
    summary.attribution.push_back(AllocationAttribution{
        key.site, it != summary.site_addrs.end() ? it->second : 0, key.scope, key.layer,
        row->attribution, row->freed.temporaries, row->freed.short_lived});
  }
  // The hash map's order changes from process to process (abseil seeds its hash), and
  // exports follow this vector: sort it so that the same capture always gives the same
  // output.
  std::sort(summary.attribution.begin(), summary.attribution.end(),
            [](const AllocationAttribution& a, const AllocationAttribution& b) {
              return std::tie(a.site, a.scope, a.layer) < std::tie(b.site, b.scope, b.layer);
            });
  Coverage& c = summary.coverage;
  for (const auto& [scope, usage] : summary.scopes) {
    (scope == 0 ? c.allocated_unscoped : c.allocated_scoped) += usage.allocated_bytes;
    (scope == 0 ? c.live_unscoped : c.live_scoped) += usage.live_bytes;
  }
  for (const auto& [label, bytes] : census_) c.census_bytes += bytes;
  c.census_entries = census_.size();
  BoundReplayedPeaks(trailer, point_.kind == SnapshotPoint::Kind::kEnd, &summary.totals,
                     &summary.layers, &summary.scopes);
}

void TakeTrailerCounters(const TrailerBlocks& t, CaptureSummary* s) {
  s->totals = t.totals;
  // The replay's tables hold the layers and scopes that allocated.
  s->layers.clear();
  s->scopes.clear();
  for (const auto& [id, usage] : t.layer_usage) {
    if (usage.allocated_count != 0) s->layers[id] = usage;
  }
  for (const auto& [id, usage] : t.scope_usage) {
    if (usage.allocated_count != 0) s->scopes[id] = usage;
  }
  for (const auto& [id, name] : t.layer_names) s->layer_names.emplace(id, name);
  for (const auto& [id, path_text] : t.scope_paths) s->scope_paths.emplace(id, path_text);
}

}  // namespace memtrace
