// Copyright 2026 The memtrace Authors.
//
// cpu_list.h: a set of CPUs, written the way Linux writes them ("0-3,8,10-11"), for
// placing memtrace's own threads (the drainer, the capture writer) apart from the
// program's.
//
// A server that pins its latency-critical threads to some cores wants the tracer's
// background work on others: Config::thread_cpus and JsonlSinkOptions::writer_cpus take a
// CpuList, and the interposer reads one from MEMTRACE_TRACER_CPUS (`memtrace run
// --tracer-cpus=LIST`). An empty list leaves placement to the kernel.
//
// Thread safety: CpuList is plain data. PinCallingThread() acts on its caller only.

#ifndef MEMTRACE_RUNTIME_INTERNAL_CPU_LIST_H_
#define MEMTRACE_RUNTIME_INTERNAL_CPU_LIST_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace memtrace {

struct CpuList {
  // The highest CPU number a list may name (the kernel's cpu_set_t holds 1024).
  static constexpr uint32_t kMaxCpu = 1023;

  std::vector<uint32_t> cpus;  // ascending, no repeats

  bool empty() const noexcept { return cpus.empty(); }
  bool operator==(const CpuList&) const = default;
  // The Linux form, ranges folded: {0,1,2,3,8} -> "0-3,8"; "" when empty.
  std::string ToString() const;
};

// Parses "N", "N-M" and comma-separated lists of them ("0-3,8"); spaces are not allowed.
// An empty text is an empty list. Errors say what is wrong and where.
absl::StatusOr<CpuList> ParseCpuList(std::string_view text);

// The CPUs the calling thread may run on now (sched_getaffinity): what a thread it starts
// inherits.
CpuList AllowedCpus();

// The CPUs this machine has online (/sys/devices/system/cpu/online, else every CPU
// sysconf counts).
CpuList OnlineCpus();

// OK when every CPU of `list` is online; otherwise an error that names the ones that are
// not and the ones that are. Only online CPUs are asked of: a program started under
// `taskset -c 0` may still put memtrace's threads on CPU 1 (affinity is per thread). A
// CPU outside the program's cgroup cpuset passes here and is refused by the kernel when
// the thread pins itself (PinCallingThread()).
absl::Status CheckOnline(const CpuList& list);

// Restricts the calling thread to `list` (an empty list changes nothing). The kernel's
// refusal comes back as an error with its reason.
absl::Status PinCallingThread(const CpuList& list);

// PinCallingThread() for one of memtrace's own threads, named `name` (at most 15
// characters): pins it, then names it (so a thread seen by its name is already placed),
// and says on stderr when the kernel refuses that the thread runs unrestricted. For the
// drainer and the writer, as they start.
void PlaceMemtraceThread(const char* name, const CpuList& list);

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_INTERNAL_CPU_LIST_H_
