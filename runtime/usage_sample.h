// Copyright 2026 The memtrace Authors.
//
// usage_sample.h: memory over time. Every Config::timeline_period the drainer, at the end
// of an epoch, hands its observer (EventObserver::OnUsageSample) the ledger's live bytes
// in total, per layer and for the scopes holding the most, beside the process's resident
// set. A capture keeps these samples in its trailer (sinks/jsonl_sink.h), so a program
// traced for hours shows its growth without its events, also when a size limit left most
// of them out.

#ifndef MEMTRACE_RUNTIME_USAGE_SAMPLE_H_
#define MEMTRACE_RUNTIME_USAGE_SAMPLE_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace memtrace {

struct UsageSample {
  // How many scopes a sample names: those with the most live bytes then.
  static constexpr size_t kTopScopes = 16;

  int64_t unix_ns = 0;     // when the epoch sampled began
  uint64_t rss_bytes = 0;  // the process's resident set (/proc/self/statm); 0: unreadable
  uint64_t live_bytes = 0;
  uint64_t live_count = 0;
  std::vector<std::pair<uint32_t, uint64_t>> layers;  // (layer id, live bytes), every layer
                                                      // that has allocated
  std::vector<std::pair<uint32_t, uint64_t>> scopes;  // (scope id, live bytes), the top
                                                      // kTopScopes by live bytes
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_USAGE_SAMPLE_H_
