// Copyright 2026 The memtrace Authors.

#include "runtime/config.h"

#include <sched.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "transport/spsc_ring.h"
#include "transport/ticket_table.h"

namespace memtrace {

absl::Status Config::Validate() const {
  if (ring_capacity_log2 < 4 || ring_capacity_log2 > SpscRing::kMaxCapacityLog2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Config.ring_capacity_log2 is ", ring_capacity_log2, "; it must be between 4 and ",
        SpscRing::kMaxCapacityLog2, " (16 to ", uint64_t{1} << SpscRing::kMaxCapacityLog2,
        " records per thread); the default is ", Config{}.ring_capacity_log2));
  }
  if (ticket_table_log2 < TicketTable::kMinSlotsLog2 ||
      ticket_table_log2 > TicketTable::kMaxSlotsLog2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Config.ticket_table_log2 is ", ticket_table_log2, "; it must be between ",
        TicketTable::kMinSlotsLog2, " and ", TicketTable::kMaxSlotsLog2,
        "; the default is ", Config{}.ticket_table_log2));
  }
  if (overflow_wait < absl::ZeroDuration() || overflow_wait > absl::Seconds(10)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Config.overflow_wait is ", absl::FormatDuration(overflow_wait),
        "; it must be between 0 and 10s; the default is 1s"));
  }
  if (drain_period < absl::Microseconds(10) || drain_period > absl::Seconds(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Config.drain_period is ", absl::FormatDuration(drain_period),
        "; it must be between 10us and 1s; the default is 2ms"));
  }
  if (idle_drain_period < absl::ZeroDuration() || idle_drain_period > absl::Seconds(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Config.idle_drain_period is ", absl::FormatDuration(idle_drain_period),
        "; it must be between 0 and 1s (below drain_period it counts as drain_period); "
        "the default is 16ms"));
  }
  if (timeline_period != absl::ZeroDuration() &&
      (timeline_period < absl::Milliseconds(1) || timeline_period > absl::Hours(24))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Config.timeline_period is ", absl::FormatDuration(timeline_period),
        "; it must be 0 (no samples) or between 1ms and 24h; the default is 1s"));
  }
  if (drain_slice_records == 0) {
    return absl::InvalidArgumentError(
        "Config.drain_slice_records is 0; it must be at least 1 (default 65536)");
  }
  if (request_site_capacity_max == 0) {
    return absl::InvalidArgumentError(
        "Config.request_site_capacity_max is 0; it must be at least 1 (default 65536)");
  }
  if (fence != FenceMode::kMembarrier && fence != FenceMode::kSeqCst) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Config.fence is ", static_cast<int>(fence),
        ", not a FenceMode; use FenceMode::kMembarrier (the default) or FenceMode::kSeqCst"));
  }
  if (order_stamp_log2 > SpscRing::kMaxStampLog2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Config.order_stamp_log2 is ", order_stamp_log2, "; it must be between 0 (a time ",
        "stamp on every record) and ", SpscRing::kMaxStampLog2, "; the default is ",
        SpscRing::kDefaultStampLog2));
  }
  if (tracer_threads > kMaxTracerThreads) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Config.tracer_threads is ", tracer_threads, "; it must be at most ",
        kMaxTracerThreads, " (0: chosen from the CPU count)"));
  }
  if (absl::Status s = CheckOnline(thread_cpus); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("Config.thread_cpus: ", s.message()));
  }
  return absl::OkStatus();
}

uint32_t TracerThreadsFor(uint32_t configured, size_t cpus) {
  if (configured != 0) return configured;
  if (cpus < 8) return 1;
  return static_cast<uint32_t>(std::min<size_t>(4, cpus / 4));
}

size_t TracerCpuCount(const CpuList& cpus) {
  if (!cpus.empty()) return cpus.cpus.size();
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return static_cast<size_t>(std::max(1, CPU_COUNT(&set)));
}

}  // namespace memtrace
