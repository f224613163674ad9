// Copyright 2026 The memtrace Authors.
//
// capture_integrity.h: everything a capture may have lost or guessed, counted.
//
// Nothing is lost silently. Every way a record can fail to arrive, and every release that
// does not match an allocation, has its own counter here, and every summary prints this
// block beside the totals. Three verdicts follow from it:
//
//   complete(): nothing was lost. No record was dropped or failed and no thread was left
//               without a ring. A partial capture is never shown as complete.
//   exact():    complete, and no release was matched by address while another block was
//               set aside at that address, none was settled at the end of an epoch, and
//               the drainer never had to break an ordering conflict. The live set and
//               every counter then equal a sequential replay of the real operations.
//               (A release matched by address alone is exact when its address holds one
//               block; ticket_misses counts those for information.)
//   clean():    exact, and the program made no unknown, double or mismatched releases.
//
// Thread safety: plain data.

#ifndef MEMTRACE_RUNTIME_CAPTURE_INTEGRITY_H_
#define MEMTRACE_RUNTIME_CAPTURE_INTEGRITY_H_

#include <cstdint>
#include <string>
#include <vector>

namespace memtrace {

struct CaptureIntegrity {
  // Records.
  uint64_t events_recorded = 0;  // published by producers into rings
  uint64_t events_applied = 0;   // applied by the drainer
  uint64_t events_dropped = 0;   // not recorded, operation went ahead (free, resize, ...)
  uint64_t records_failed = 0;   // allocation refused because its record could not be written
  uint64_t rings_unavailable = 0;  // records lost because a thread could not get a ring
  uint64_t not_recording = 0;    // operations while the recorder was stopped (not traced)
  uint64_t overflow_waits = 0;   // times a producer found its ring full and waited

  // Releases that did not match an allocation.
  uint64_t unknown_frees = 0;
  uint64_t double_frees = 0;
  uint64_t unknown_resizes = 0;
  uint64_t unknown_remaps = 0;
  uint64_t missed_frees = 0;     // a block's address was reused before its release arrived
  uint64_t ticket_misses = 0;    // releases matched by address: their ticket named no block
  uint64_t ambiguous_matches = 0;  // ... naming another block, with several at the address
  // Tickets lost within their own epoch: the ticket table was full, or the block's address
  // lay at or above 2^48, which a ticket-table slot cannot keep.
  uint64_t ticket_evictions = 0;
  uint64_t order_conflicts = 0;  // dependency cycles the drainer had to break (never expected)
  uint64_t late_records = 0;     // records stamped with an epoch already closed (never expected)

  // Peaks. Epochs in which more than one thread recorded: their records were applied in
  // the order of their time stamps, and each high-water mark they reached carries the
  // interval that must hold the real peak (usage_counters.h) instead of being exact.
  uint64_t bounded_epochs = 0;
  // False for a capture that says nothing of bounds (written before memtrace bounded
  // peaks): its peaks are the applied order's, with no interval.
  bool peaks_bounded = true;
  // Whether the peaks are known at all: not when the capture lacks operations the
  // program made, since a missing allocation or release moves the live bytes at every
  // later moment: releases or resizes not recorded (events_dropped), records of either
  // kind lost for want of a ring, blocks the interposer left out because their record was
  // lost (left_out_blocks), events the capture's writer lost (events_not_written), or
  // blocks made before tracing started and not tracked. An
  // allocation refused because its record could not be written (records_failed, through
  // the API: the program was handed null) happened in no order, and changes nothing.
  bool peaks_known() const noexcept {
    return events_dropped == 0 && rings_unavailable == 0 && left_out_blocks == 0 &&
           events_not_written == 0 && untracked_before_start == 0;
  }
  // Why peaks_known() is false, in words ("records were lost"); only then.
  const char* PeaksUnknownBecause() const noexcept {
    return untracked_before_start != 0 && complete()
               ? "blocks made before tracing started were not tracked"
               : "records were lost";
  }
  // Every peak is exact: known, and reached by one thread's records alone.
  bool peaks_exact() const noexcept {
    return peaks_known() && peaks_bounded && bounded_epochs == 0;
  }
  // "peaks exact", "peaks within their bounds", "peaks without bounds" or "peaks unknown
  // (...)"; for summaries, beside Verdict(), which is about the counters.
  std::string PeakVerdict() const;

  // API misuse that was refused.
  uint64_t foreign_span_exits = 0;  // a Span exited on a thread that did not open it
  // Records begun on a thread inside another of its records (Recorder::Nested), refused;
  // each is also in records_failed or events_dropped.
  uint64_t nested_records = 0;
  // Rounds that stopped waiting for a record a thread was still writing (Drainer::
  // AwaitClaims): the record, if it comes, is applied late (late_records).
  uint64_t stalled_claims = 0;

  // Blocks allocated before tracing started that the interposer's log of that time could
  // not keep (its trailer's `prestart_untracked`, which readers put here): their
  // allocations are not in the capture, and their releases are unknown frees.
  uint64_t untracked_before_start = 0;
  // Blocks the interposer's program holds whose allocation record was lost (its trailer's
  // `left_out_blocks`, which readers put here; also in records_failed): not in the capture.
  uint64_t left_out_blocks = 0;
  // Events the capture's writer lost on the way to the file: its queue was full, or a
  // write failed (the trailer's sink `events_lost`, which readers put here; the tracer's
  // own counters never set it). The tracer applied them, so the trailer's totals hold
  // them, but the capture's events do not: it is partial.
  uint64_t events_not_written = 0;

  // Bounded tables.
  uint64_t site_overflow = 0;    // allocations attributed to "other sites"
  uint64_t scope_overflow = 0;   // scope paths beyond the scope table's bound

  // Transport health.
  uint64_t ring_capacity = 0;    // slots per ring
  uint64_t max_ring_fill = 0;    // most unread records the drainer found in one ring
  uint64_t max_drainer_lag_ns = 0;  // longest time from an epoch's start to its application
  uint64_t epochs = 0;           // epochs closed
  uint64_t fenced_epochs = 0;    // ... of them with the heavy fence (drainer.h, step 1)
  uint64_t rings = 0;            // rings created (bounded by peak concurrent threads)
  bool uses_membarrier = false;  // the watermark's asymmetric fence (epoch_clock.h)
  // Its name, as summaries print it: "membarrier", or "seq_cst" (fences on both sides).
  const char* fence() const noexcept { return uses_membarrier ? "membarrier" : "seq_cst"; }

  // The tracer's failure flag: some release or resize could not be recorded.
  bool failure_flag() const noexcept { return events_dropped != 0; }

  bool complete() const noexcept {
    return events_dropped == 0 && records_failed == 0 && rings_unavailable == 0 &&
           events_not_written == 0;
  }
  bool exact() const noexcept {
    return complete() && ambiguous_matches == 0 && ticket_evictions == 0 &&
           missed_frees == 0 && order_conflicts == 0 && late_records == 0 &&
           untracked_before_start == 0;
  }
  bool clean() const noexcept {
    return exact() && unknown_frees == 0 && double_frees == 0 && unknown_resizes == 0 &&
           unknown_remaps == 0;
  }

  // "complete", "partial", plus qualifiers; for one-line summaries.
  std::string Verdict() const;
  // "name=value ..." for the loss and matching counters; for logs and test failures.
  std::string Counters() const;
  // What the integrity block says beyond "complete, exact, nothing lost": each counter
  // of a loss, an untraced operation, an unmatched release, an inexact match, a refused
  // misuse, a stalled claim or a full table that is not zero, in the block's own words
  // ("ticket evictions 3"). Empty when the block has nothing more to say: summaries then
  // print it in one line, with PeakVerdict()'s news. How the run went is not a finding:
  // ticket misses (releases still matched exactly, by address), waits for room, epochs,
  // the drainer's lag; nor are peaks without bounds (an older capture's), which the line
  // states.
  std::vector<std::string> Findings() const;
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_CAPTURE_INTEGRITY_H_
