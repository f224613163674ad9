// Copyright 2026 The memtrace Authors.
//
// config.h: how a recorder is set up.
//
// Defaults are chosen for a multithreaded server allocating a few million blocks a second:
// 16,384 records (512 KiB) per thread, a 2 ms epoch, and a wait of at most 1 s when a
// ring is full. Every field is checked by Validate(), which says what is wrong and how to fix it.
//
// Overflow policy (what a producer does when its ring is full because the drainer is
// behind):
//   kFail:         fail the record at once. An allocation frees what it obtained and
//                  answers null; a resize, remap or free goes ahead, is counted as dropped
//                  and raises the failure flag (the capture becomes partial).
//   kWaitThenFail: wake the drainer and wait for space; after `overflow_wait` in which the
//                  drainer applied nothing (stalled, or held), fail as above. A drainer
//                  that is working but behind (more busy threads than CPUs) is waited for:
//                  each `overflow_wait` in which it made progress starts a new one. This
//                  is the default: a stall is better for a production program than an
//                  allocation failure or a lost record, and the wait is counted.
//
// Thread safety: plain data.

#ifndef MEMTRACE_RUNTIME_CONFIG_H_
#define MEMTRACE_RUNTIME_CONFIG_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "runtime/internal/cpu_list.h"
#include "runtime/internal/site_table.h"
#include "transport/epoch_clock.h"

namespace memtrace {

enum class OverflowPolicy : uint8_t { kFail, kWaitThenFail };

struct Config {
  // The most threads that may apply records (tracer_threads below): one per shard of the
  // ledger (AllocationLedger::kShards), which each owns whole.
  static constexpr uint32_t kMaxTracerThreads = 16;

  // Records per thread ring: 2^ring_capacity_log2, each 32 bytes.
  uint32_t ring_capacity_log2 = 14;
  // Slots in the ticket table: 2^ticket_table_log2, 16 bytes of address space each
  // (16 MiB by default, touched as blocks are allocated, 2 MiB at a time where the kernel
  // grants huge pages). Size it well above the number of blocks allocated within one
  // epoch, live or freed (a free leaves its entry): only a ticket evicted in its own epoch
  // can cost exactness (ticket_evictions counts those); older ones are matched by address.
  // An epoch lasts as long as the drainer waits for CPU: eight threads passing blocks to
  // each other on a busy 2-core machine allocate tens of thousands of blocks in one, and
  // with 2^18 slots nine of them landed in one bucket (an eviction, and an inexact
  // capture) often enough to fail default_config_test under load. The odds of nine in a
  // bucket fall with the ninth power of the load per bucket, so four times the buckets
  // make it vanishingly rare.
  uint32_t ticket_table_log2 = 20;
  OverflowPolicy overflow_policy = OverflowPolicy::kWaitThenFail;
  // How long a producer waits for room while the drainer applies nothing (kWaitThenFail).
  // A second: on a 2-core machine whose CPUs other work keeps busy, the drainer and a
  // capture's writer can go without CPU for longer than a tenth of a second, and a wait
  // that short dropped records and refused allocations (default_config_test); a second
  // rides that out. The trade-off: a drainer truly stalled (an observer that blocks) holds
  // each allocating thread that finds its ring full for up to a second per record before
  // it fails.
  absl::Duration overflow_wait = absl::Seconds(1);
  // How often the drainer closes an epoch when nobody asks sooner (a thread whose ring
  // passes a quarter full asks sooner). Each epoch costs memtrace's two threads a wake-up
  // and, with more than one ring, a membarrier() interrupt to every CPU running the
  // program, so a shorter period costs a busy multi-threaded program measurably more CPU
  // (bench/README.md, "Epochs of 2 ms").
  // Longer epochs coarsen what a high-water mark of several threads can resolve
  // (drainer.h).
  absl::Duration drain_period = absl::Milliseconds(2);
  // While the program is quiet (a round finds fewer than Drainer::kQuietRecords new
  // records in all rings together), the drainer doubles its sleep after each round, up to
  // this; the first busy round brings it back to drain_period. An idle process then wakes
  // the drainer (a context switch and a membarrier() interrupt to each CPU running the
  // program) about 60 times a second instead of 500. An epoch that begins in a quiet spell
  // can last this long (drainer.h: what one epoch means for high-water marks). A burst
  // after a quiet spell does not wait for the long sleep to end: a thread whose ring
  // passes a quarter full wakes the drainer (spsc_ring.h). Never shorter than
  // drain_period; equal to it for a fixed period.
  absl::Duration idle_drain_period = absl::Milliseconds(16);
  // How often the drainer samples memory over time for the observer (usage_sample.h): live
  // bytes in total, per layer and for the top scopes, and the resident set; also at the
  // last epoch. A sample costs the drainer a read of /proc/self/statm and a pass over the
  // layers and scopes. 0: no samples.
  absl::Duration timeline_period = absl::Seconds(1);
  // The most records the drainer applies before it releases ring space, when a closed
  // epoch holds more (drainer.h, "slices"): each ring gets drain_slice_records / rings
  // of each slice (at least one), the first ring all of its records at once. Smaller
  // slices hand room back to full rings sooner, at the cost of more rounds of release;
  // 65,536 records is about 2.5 MB of records handed to a sink at a time.
  uint32_t drain_slice_records = 65536;
  // Distinct call sites kept per recorder before "other sites" (the seed's
  // request_site_capacity_max).
  uint32_t request_site_capacity_max = kDefaultSiteCapacity;
  // Keep each call stack's frames in the drainer as well as in the sinks
  // (stack_frame_table.h), up to request_site_capacity_max stacks, for a forked child to
  // name the stacks of the blocks it inherited (Recorder::InheritedStackFrames()). The
  // interposer sets it when forked children are traced (MEMTRACE_TRACE_FORKS=1). Costs
  // the drainer each distinct stack's frames once (8 bytes a frame), and nothing per
  // allocation.
  bool keep_stack_frames = false;
  // The CPUs the drainer thread may run on (cpu_list.h); empty: wherever the kernel puts
  // it. Validate() checks that each is online.
  CpuList thread_cpus;
  // The threads that apply ring records to the ledger, the drainer among them
  // (runtime/internal/sharded_apply.h). 0: chosen from the CPUs the tracer's threads may
  // use (TracerThreadsFor()). More than 1 pays off only with CPUs to spare beyond the
  // program's, the drainer's and the capture writer's. At most kMaxTracerThreads.
  uint32_t tracer_threads = 0;
  // How epochs are fenced (transport/epoch_clock.h). kMembarrier (default): the drainer
  // calls membarrier() as it closes an epoch while more than one thread records, which
  // interrupts each CPU running a thread of the process (about 500 times a second, more
  // while a ring fills fast), and producers pay nothing; where the kernel lacks
  // membarrier() this falls back to kSeqCst. kSeqCst: every record batch pays a full fence on its producer (a few ns to
  // tens of ns; bench/README.md, "Choosing the fence") and no thread is ever
  // interrupted. CaptureIntegrity::uses_membarrier says which one ran.
  FenceMode fence = FenceMode::kMembarrier;
  // Order inside an epoch (transport/epoch_clock.h): each thread stamps its records with
  // the time every 2^order_stamp_log2 records, and the drainer applies the threads'
  // records of an epoch in stamp order and bounds every high-water mark by them. The
  // bound's width grows with the records between stamps; the cost shrinks with them
  // (bench/README.md, "Peaks under concurrency"). 0: a stamp on every record, exact order
  // (`memtrace run --exact-order`). At most 16.
  uint32_t order_stamp_log2 = SpscRing::kDefaultStampLog2;
  // Serve the ledger on a Unix socket while recording (runtime/internal/live_server.h), for
  // `memtrace live PID`: one more thread of memtrace's that sleeps until a client of the
  // same uid connects, and nothing on the recording path. Keeps stack frames in the
  // drainer as keep_stack_frames does, so that the reply's sites name their stacks.
  // Tracer::Start() fails if the socket cannot be made. MEMTRACE_LIVE=1 (`memtrace run
  // --live`) for the interposer.
  bool live = false;
  // How a capture of one moment served on that socket (`memtrace snapshot`,
  // sinks/snapshot_capture.h) describes the process, as the process's own capture does:
  // the header's `source` and more header members as raw JSON (`"interposer":{...}`), and
  // the sampling interval whose weights its allocations carry (0: every allocation was
  // recorded). The interposer sets its own; the defaults are the API's.
  struct CaptureDescription {
    std::string source = "runtime";
    std::string header_fields;
    uint64_t sample_interval_bytes = 0;
  };
  CaptureDescription live_capture;

  absl::Status Validate() const;
};

// The threads that apply records (Config::tracer_threads) for a tracer whose threads may
// use `cpus` CPUs: `configured` when it is not 0; otherwise 1 below 8 CPUs, where a second
// applier would take a CPU from the program, else a quarter of them, at most 4.
uint32_t TracerThreadsFor(uint32_t configured, size_t cpus);

// The CPUs the tracer's threads may use: the size of `cpus` (Config::thread_cpus) when it
// is not empty, else the CPUs the calling thread may run on (sched_getaffinity), which
// the threads it starts inherit. At least 1.
size_t TracerCpuCount(const CpuList& cpus);

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_CONFIG_H_
