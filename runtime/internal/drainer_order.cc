// Copyright 2026 The memtrace Authors.
//
// drainer_order.cc: the order in which an epoch's records are applied (Drainer::ApplyEpoch
// and what it uses): one ring's in its own order; several rings' merged by their stamps,
// a cross-ring release after the record that made its block (its ticket's dependency),
// and the peak tracker's segments, the windows each run of records was made in. drainer.h
// gives the argument; drainer.cc the rounds that call this.

#include <algorithm>

#include "runtime/internal/drainer.h"
#include "transport/prefetch.h"
#include "transport/ticket.h"

namespace memtrace {
namespace {

bool IsRelease(EventKind kind) {
  return kind == EventKind::kFree || kind == EventKind::kResize || kind == EventKind::kRemap;
}

// The records that make a block at their address.
bool MakesBlock(EventKind kind) {
  return kind == EventKind::kAlloc || kind == EventKind::kRemapTarget;
}

// The records that look up a block by address in the ledger (word 0 is an address).
bool LooksUpBlock(EventKind kind) {
  return kind == EventKind::kAlloc || kind == EventKind::kFree || kind == EventKind::kResize ||
         kind == EventKind::kRemap || kind == EventKind::kRemapTarget;
}

// How many records ahead ApplyEpoch prefetches: far enough for a miss to memory (a
// record takes tens of nanoseconds to apply), near enough to stay in the cache.
constexpr uint64_t kPrefetchAhead = 8;

// Whether a record of `kind` changes the ledger (with appliers: goes to the batch).
bool ChangesLedger(EventKind kind) {
  switch (kind) {
    case EventKind::kAlloc:
    case EventKind::kResize:
    case EventKind::kRemap:
    case EventKind::kRemapTarget:
    case EventKind::kFree:
    case EventKind::kArenaReset:
      return true;
    default:
      return false;
  }
}

// Below this many live blocks the ledger's tables stay in the caches and reading ahead is
// only extra work; above it, a lookup misses the caches and the prefetch hides the miss
// (BM_DrainerThroughput, bench/README.md).
#ifndef MEMTRACE_PREFETCH_LIVE_BLOCKS
#define MEMTRACE_PREFETCH_LIVE_BLOCKS 65536
#endif
constexpr uint64_t kPrefetchLiveBlocks = MEMTRACE_PREFETCH_LIVE_BLOCKS;

// How many records ahead Apply() asks for the observer's batch lines: 24 records of 40
// bytes, 15 lines.
constexpr size_t kObservedPrefetchAhead = 24;
}  // namespace

uint64_t Drainer::NextStamp(const Cursor& c, uint64_t k) const noexcept {
  // Readable only once its position is published.
  return ((k + 1) << c.ring->stamp_log2()) < c.limit ? c.ring->ReadStamp(k + 1) : 0;
}

uint64_t Drainer::WindowEnd(const Cursor& c, uint64_t k) const noexcept {
  const uint64_t next = NextStamp(c, k);
  return next != 0 ? next : kOpenWindow;
}

bool Drainer::FirstRingMakesBlockAt(const Event& e, uint64_t target) const noexcept {
  const Cursor& first = cursors_[0];
  for (uint64_t p = first.pos; p < target; ++p) {
    const Event& f = first.ring->Read(p);
    if (MakesBlock(f.kind()) && f.address() == e.address() && f.layer() == e.layer()) {
      return true;
    }
  }
  return false;
}

uint64_t Drainer::SegmentEnd(const Cursor& c, uint64_t k) const noexcept {
  // A stamp on every record (Config::order_stamp_log2 = 0) is the record's own time: its
  // window is that instant. Stamp 0 is "no stamp": the window ends at the next one.
  if (c.ring->stamp_log2() == 0) {
    const uint64_t lo = c.ring->ReadStamp(k);
    if (lo != 0) return lo;
  }
  return WindowEnd(c, k);
}

uint64_t Drainer::FirstRingBefore(const Cursor& c, uint32_t epoch) const {
  // The record's window ends where its segment's does. Not past it: the first ring's
  // records made after that window are applied in their own place, or the order applied
  // would not be one the peak's interval (OpenSegment) describes.
  const uint64_t end = SegmentEnd(c, c.pos >> c.ring->stamp_log2());
  const Cursor& first = cursors_[0];
  const uint32_t first_shift = first.ring->stamp_log2();
  uint64_t p = first.pos;
  while (p < first.limit && !EpochBefore(epoch, first.ring->Read(p).epoch()) &&
         first.ring->ReadStamp(p >> first_shift) <= end) {
    ++p;
  }
  return p;
}

uint64_t Drainer::EstimateTime(const Cursor& c, uint64_t position) const noexcept {
  const uint32_t shift = c.ring->stamp_log2();
  const uint64_t k = position >> shift;
  const uint64_t lo = c.ring->ReadStamp(k);
  const uint64_t hi = NextStamp(c, k);  // 0 (not yet published, or none): lo
  if (hi <= lo) return lo;
  return lo + (((hi - lo) * (position - (k << shift))) >> shift);
}

void Drainer::OpenSegment(Cursor& c) {
  const uint32_t shift = c.ring->stamp_log2();
  const uint64_t k = c.pos >> shift;
  // Stamp 0 is "no stamp" (EpochClock::StampNow()): as a start, earlier than any; as an
  // end, an open window (WindowEnd). So is the end of a segment whose last stamp is not
  // published yet (its records may go on in a later epoch).
  const uint64_t lo = c.ring->ReadStamp(k);
  const uint64_t hi = SegmentEnd(c, k);
  if (parallel_ != nullptr) {
    parallel_->BeginSegment(&c.open, c.ring->id(), k, lo, hi);
    // Beginning a segment closes the one before, which stops the tracker using it
    // (PeakTracker::Close): the next UseSegment must be added.
    if (batch_open_ == &c.open) batch_open_ = nullptr;
  } else {
    tracker_.Begin(&c.open, c.ring->id(), k, lo, hi);
  }
  c.segment_open = true;
  c.segment = k;
}

void Drainer::UseSegment(Cursor& c) {
  if (parallel_ == nullptr) {
    tracker_.Use(&c.open);
  } else if (batch_open_ != &c.open) {
    parallel_->UseSegment(&c.open);
    batch_open_ = &c.open;
  }
}

void Drainer::CloseSegment(Cursor& c) {
  tracker_.Close(&c.open);
  c.segment_open = false;
}

bool Drainer::InSegment(const Cursor& c, uint64_t position, uint32_t epoch) const noexcept {
  return position < c.limit && !EpochBefore(epoch, c.ring->Read(position).epoch());
}

int Drainer::Dependency(const Event& e, uint32_t epoch, uint64_t* position) const {
  const uint64_t ticket = e.word2;
  const uint32_t ring_id = Ticket::RingId(ticket);
  if (ring_id >= cursor_of_ring_.size()) return -1;
  const int32_t index = cursor_of_ring_[ring_id];
  if (index < 0) return -1;
  const Cursor& other = cursors_[static_cast<size_t>(index)];
  // The ticket keeps the low 28 bits of the position (ticket.h). An unapplied record lies
  // in [other.pos, other.limit), a window shorter than 2^28, so the distance from
  // other.pos recovers the full position.
  const uint64_t distance =
      (Ticket::Position(ticket) - other.pos) & Ticket::kTruncatedPositionMask;
  if (distance >= other.limit - other.pos) return -1;  // applied already, or not ours
  const uint64_t pos = other.pos + distance;
  if (!InSegment(other, pos, epoch)) return -1;
  // Verify: the ticket must name the latest record that gave the block its ticket (an
  // allocation, a move's target, or a resize) at the same address, else it came from a
  // ticket-table collision and says nothing about order.
  const Event& target = other.ring->Read(pos);
  const EventKind kind = target.kind();
  if ((kind != EventKind::kAlloc && kind != EventKind::kRemapTarget &&
       kind != EventKind::kResize) ||
      target.address() != e.address() || target.layer() != e.layer()) {
    return -1;
  }
  *position = pos;
  return index;
}

// Inline: called once per record, from ApplyEpoch only.
__attribute__((always_inline)) inline void Drainer::Apply(Cursor& c, const Event& e) {
  const uint64_t ticket = Ticket::Make(c.ring->id(), c.pos);
  // A release made while the recorder had one ring carries no ticket (Recorder::
  // SoleRing()): paired by address, exact in one ring's order, so not a ticket miss; the
  // ledger and the capture see ticket 0 ("none").
  const bool sole = e.word2 == kSoleRingTicket && IsRelease(e.kind());
  const uint64_t of = sole ? 0 : e.word2;
  if (observer() != nullptr) {
    // The batch's memory was the writer thread's last (the sink gives vectors back for
    // reuse), so each line the drainer writes is taken from another core: ask for it
    // ahead, exclusive (bench/README.md, "The observer's batch").
    if (observed_.size() + kObservedPrefetchAhead < observed_.capacity()) {
      PrefetchForWrite(observed_.data() + observed_.size() + kObservedPrefetchAhead);
    }
    ObservedEvent& o = observed_.emplace_back(ObservedEvent{e, ticket});
    if (sole) o.event.word2 = 0;
  }
  if (parallel_ != nullptr && ChangesLedger(e.kind())) {
    if (!parallel_->AddEvent(e.kind(), e.layer(), e.scope(), e.address(), e.size(), ticket,
                             of, e.word2, sole, &c.move)) {
      ++counters_.order_conflicts;  // a target always follows its kRemap in the same ring
    }
    if (parallel_->full()) FlushBatch();
    ++counters_.events_applied;
    return;
  }
  switch (e.kind()) {
    case EventKind::kAlloc:
      ledger_->Alloc(e.layer(), e.address(), e.size(), ticket, e.scope(), e.word2);
      break;
    case EventKind::kFree:
      CountOutcome(ledger_->Free(e.layer(), e.address(), of), sole, &counters_.unknown_frees,
                   &counters_);
      break;
    case EventKind::kResize:
      CountOutcome(ledger_->Resize(e.layer(), e.address(), of, e.size(), ticket), sole,
                   &counters_.unknown_resizes, &counters_);
      break;
    case EventKind::kRemap:
      CountOutcome(ledger_->MoveOut(e.layer(), e.address(), of, &c.move.moved), sole,
                   &counters_.unknown_remaps, &counters_);
      c.move.moving = true;
      break;
    case EventKind::kRemapTarget:
      if (!c.move.moving) {  // a target always follows its kRemap in the same ring
        ++counters_.order_conflicts;
        c.move.moved = AllocationLedger::Moved{};
      }
      ledger_->MoveIn(e.layer(), c.move.moved, e.address(), e.size(), ticket, e.scope(),
                      e.word2);
      c.move.moving = false;
      break;
    case EventKind::kArenaReset:
      ledger_->ResetLayer(e.layer());
      break;
    case EventKind::kInvalid:
      ++counters_.order_conflicts;
      break;
    case EventKind::kScopeEnter:
    case EventKind::kScopeExit:
    case EventKind::kCensusUpdate:
    case EventKind::kIntervalBegin:
    case EventKind::kIntervalEnd:
      break;  // carried to sinks; the ledger has nothing to do
    case EventKind::kThreadStart:  // never recorded (the sink's own); nothing to apply
      break;
    case EventKind::kStackFrames:
      if (stacks_ != nullptr) stacks_->Add(c.ring->id(), e);
      break;
  }
  ++counters_.events_applied;
}

bool Drainer::ApplyEpoch(uint32_t epoch, uint64_t share) {
  const bool prefetch =
      parallel_ == nullptr && ledger_->totals().live_count >= kPrefetchLiveBlocks;
  if (merged_) {
    const uint64_t rings = cursors_.size();
    ApplyMerged(epoch, share > ~uint64_t{0} / rings ? ~uint64_t{0} : share * rings, prefetch);
  } else {
    for (size_t base = 0; base < cursors_.size(); ++base) {
      // The first ring (the recorder's first) goes first and whole (PollRegistry()); the
      // others up to their share. A ring's records applied earlier as another's
      // dependency count against nothing.
      const uint64_t pos = cursors_[base].pos;
      ApplyFrom(base,
                base == 0 || share > ~uint64_t{0} - pos ? ~uint64_t{0} : pos + share, epoch,
                prefetch);
    }
  }
  // Over when every ring is at its limit or at a record of a later epoch.
  for (const Cursor& c : cursors_) {
    if (c.pos < c.limit && !EpochBefore(epoch, c.ring->Read(c.pos).epoch())) return false;
  }
  return true;
}

void Drainer::ApplyMerged(uint32_t epoch, uint64_t budget, bool prefetch) {
  const uint64_t applied_before = counters_.events_applied;
  auto has_records = [&](const Cursor& c) {
    return c.pos < c.limit && !EpochBefore(epoch, c.ring->Read(c.pos).epoch());
  };
  // The rings with records of the epoch left, by the time of their next record: a
  // min-heap. A ring applied meanwhile as another's dependency keeps its old, earlier key
  // until it comes up, when the key is corrected (times only grow along a ring).
  auto later = [](const MergeEntry& a, const MergeEntry& b) { return a.time > b.time; };
  merge_heap_.clear();
  for (size_t i = 0; i < cursors_.size(); ++i) {
    if (has_records(cursors_[i])) {
      merge_heap_.push_back(MergeEntry{EstimateTime(cursors_[i], cursors_[i].pos), i});
    }
  }
  std::make_heap(merge_heap_.begin(), merge_heap_.end(), later);
  while (!merge_heap_.empty()) {
    std::pop_heap(merge_heap_.begin(), merge_heap_.end(), later);
    const MergeEntry top = merge_heap_.back();
    merge_heap_.pop_back();
    Cursor& c = cursors_[top.index];
    if (!has_records(c)) continue;
    const uint64_t time = EstimateTime(c, c.pos);
    if (time != top.time) {  // moved on as a dependency: back in at its place
      merge_heap_.push_back(MergeEntry{time, top.index});
      std::push_heap(merge_heap_.begin(), merge_heap_.end(), later);
      continue;
    }
    const uint64_t applied = counters_.events_applied - applied_before;
    if (applied >= budget) return;
    // This ring runs until its records pass the next ring's next record, and at most to
    // the slice's budget (dependencies may add a few records more).
    const uint64_t next_time = merge_heap_.empty() ? ~uint64_t{0} : merge_heap_.front().time;
    const uint64_t left = budget - applied;  // >= 1; ~0 when the budget is unbounded
    const uint64_t end = left >= c.limit - c.pos ? c.limit : c.pos + left;
    ApplyFrom(top.index, RunEnd(c, end, next_time), epoch, prefetch);
    if (has_records(c)) {
      merge_heap_.push_back(MergeEntry{EstimateTime(c, c.pos), top.index});
      std::push_heap(merge_heap_.begin(), merge_heap_.end(), later);
    }
  }
}

uint64_t Drainer::RunEnd(const Cursor& c, uint64_t end, uint64_t time) const noexcept {
  // Segment by segment, with EstimateTime()'s formula solved for the position.
  const uint32_t shift = c.ring->stamp_log2();
  // The rest of the current segment runs in any case: its records lie in one window, so
  // applying them together stays inside the bounds, and a run costs a heap operation.
  uint64_t p = std::min(end, std::max(c.pos + 1, ((c.pos >> shift) + 1) << shift));
  while (p < end) {
    const uint64_t k = p >> shift;
    const uint64_t lo = c.ring->ReadStamp(k);
    if (lo > time) break;
    const uint64_t segment_end = std::min(end, (k + 1) << shift);
    // No next stamp (every estimate is lo), or a segment wholly before `time`: all of it.
    const uint64_t hi = NextStamp(c, k);
    if (hi <= lo || time >= hi) {
      p = segment_end;
      continue;
    }
    // EstimateTime(p) <= time exactly for offsets up to this one.
    const uint64_t last = (k << shift) + (((time - lo) << shift) / (hi - lo));
    if (last + 1 < segment_end) return std::max(p, last + 1);
    p = segment_end;
  }
  return std::min(p, end);
}

void Drainer::ApplyFrom(size_t base, uint64_t base_target, uint32_t epoch, bool prefetch) {
  stack_.clear();
  stack_.push_back(Pending{base, base_target});
  cursors_[base].on_stack = true;
  // The first ring's catch-up (below), while it is on the stack: its place in stack_. At
  // most one at a time, since one is pushed only while the first ring is not on the stack.
  constexpr size_t kNone = ~size_t{0};
  size_t catch_up_at = kNone;
  // The record whose catch-up ended early (below), as its cursor and position: it goes
  // ahead without asking for another, which would end where this one did, for ever.
  size_t caught_up_index = kNone;
  uint64_t caught_up_pos = 0;
  // Why a ring's run below stopped: its records are applied up to its target (or the
  // epoch's end), it waits for a ring pushed on the stack, or the catch-up is over.
  enum class Stop : uint8_t { kDone, kBlocked, kCatchUpOver };
  while (!stack_.empty()) {
    const auto [index, target] = stack_.back();
    Cursor& c = cursors_[index];
    // Apply this ring's records of the epoch up to `target`, until one depends on a
    // record of another ring not yet applied; that ring goes on the stack first.
    const uint64_t end = std::min(target, c.limit);
    Stop stop = Stop::kDone;
    for (; c.pos < end; ++c.pos) {
      // The ledger's lookups miss the caches once its tables outgrow them: ask for the
      // slot of the record kPrefetchAhead on while this one is applied. That record is
      // published (below c.limit); if it belongs to the next epoch the hint is wasted.
      if (prefetch && c.pos + kPrefetchAhead < end) {
        const Event& ahead = c.ring->Read(c.pos + kPrefetchAhead);
        if (LooksUpBlock(ahead.kind())) ledger_->Prefetch(ahead.layer(), ahead.address());
      }
      const Event& e = c.ring->Read(c.pos);
      const uint32_t record_epoch = e.epoch();
      if (EpochBefore(epoch, record_epoch)) break;  // the next epoch's records
      // A record of the epoch before, closed without the fence, is on time here.
      if (record_epoch != epoch && record_epoch != unfenced_epoch_) {
        ++counters_.late_records;
      }
      // A release whose ticket names another ring may have to wait for that ring (a
      // ticket of this ring names a record already applied, or none).
      // (kSoleRingTicket names no ring: such a release has no other ring to wait for.)
      if (IsRelease(e.kind()) && e.word2 > kSoleRingTicket &&
          Ticket::RingId(e.word2) != c.ring->id()) {
        uint64_t dep_pos = 0;
        const int dep = Dependency(e, epoch, &dep_pos);
        if (dep >= 0) {
          Cursor& d = cursors_[static_cast<size_t>(dep)];
          if (!d.on_stack) {
            d.on_stack = true;
            stack_.push_back(Pending{static_cast<size_t>(dep), dep_pos + 1});
            stop = Stop::kBlocked;
            break;
          }
          // A ring on the stack waits for a record of this one: with a catch-up on the
          // stack, a sign that it went past the record that asked for it (below).
          if (catch_up_at != kNone) {
            stop = Stop::kCatchUpOver;
            break;
          }
          ++counters_.order_conflicts;  // impossible for real input: see the header
        }
      }
      // Just after a second ring appeared, the first ring's blocks may have no tickets
      // (PlanEpoch): a release another ring made without a ticket waits for the first
      // ring's records up to the end of its own window, which its block's allocation, made
      // before it, is among. So does a block another ring makes where the first ring
      // makes one at the same address in that window: a release without a ticket takes
      // the oldest block at its address (allocation_ledger.h), so the first ring's block,
      // made before it, must not be applied after it, set aside behind it. (In
      // ring-by-ring order the first ring went first anyway.)
      // (A release whose ticket names the first ring waits as one without.)
      const bool untracked_release =
          IsRelease(e.kind()) &&
          (e.word2 == 0 || Ticket::RingId(e.word2) == cursors_[0].ring->id());
      if (merged_ && first_ring_first_ && index != 0 &&
          (untracked_release || MakesBlock(e.kind())) && !cursors_[0].on_stack &&
          !(index == caught_up_index && c.pos == caught_up_pos)) {
        const uint64_t first_target = FirstRingBefore(c, epoch);
        if (first_target > cursors_[0].pos &&
            (untracked_release || FirstRingMakesBlockAt(e, first_target))) {
          cursors_[0].on_stack = true;
          catch_up_at = stack_.size();
          stack_.push_back(Pending{0, first_target});
          stop = Stop::kBlocked;
          break;
        }
      }
      if (bounded_) {
        // The tracker follows the record's segment (peak_tracker.h).
        if (!c.segment_open || c.segment != (c.pos >> c.ring->stamp_log2())) {
          OpenSegment(c);
        }
        UseSegment(c);
      }
      Apply(c, e);
    }
    switch (stop) {
      case Stop::kBlocked:
        break;
      case Stop::kDone:
        c.on_stack = false;
        stack_.pop_back();
        if (stack_.size() == catch_up_at) catch_up_at = kNone;  // it reached its target
        break;
      case Stop::kCatchUpOver:
        // The catch-up's target is only where the window of the record that asked for it
        // (a) ends, so it may reach records the first thread made after a. Above it every
        // entry waits for a real dependency, so the record that stopped here is r, the
        // first ring's record where the catch-up stands, or happens before r. It needs a
        // ring on the stack at or past where that ring stands: not the first ring or one
        // above it (a cycle of happens-before), so the ring that asked for the catch-up,
        // standing at a, or one below it, standing at a record a happens before. So a
        // happens before r, and every record of the first ring that happens before a (a
        // released block's allocation, or an earlier block at a new block's address) lies
        // before r: applied. The catch-up is over. The rings above it stay where they
        // stand (what they applied had its dependencies), and a goes ahead.
        while (stack_.size() > catch_up_at) {
          cursors_[stack_.back().index].on_stack = false;
          stack_.pop_back();
        }
        catch_up_at = kNone;
        caught_up_index = stack_.back().index;
        caught_up_pos = cursors_[caught_up_index].pos;
        break;
    }
  }
}
}  // namespace memtrace
