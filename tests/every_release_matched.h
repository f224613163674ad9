// Copyright 2026 The memtrace Authors.
//
// every_release_matched.h: the integrity a multithreaded test may demand of a capture
// whose ledger it then compares with an independent replay.
//
// Every record arrived and was applied, and every release, resize and remap found its
// block without a guess. ticket_evictions is left out on purpose: five blocks of one
// ticket-table bucket allocated within one epoch evict a ticket (transport/ticket_table.h),
// which a random workload does now and then (one CI run of fault_injection_test did; 300
// runs here did not). The counter says exactness was no longer guaranteed, not that it failed, so
// the caller's comparison with its replay is what decides.
//
// Example:
//   ExpectEveryReleaseMatched(recorder->Integrity());
//   ... compare the ledger's live blocks and totals with the replay ...

#ifndef MEMTRACE_TESTS_EVERY_RELEASE_MATCHED_H_
#define MEMTRACE_TESTS_EVERY_RELEASE_MATCHED_H_

#include <string>

#include <gtest/gtest.h>

#include "runtime/capture_integrity.h"

namespace memtrace::testing {

inline void ExpectEveryReleaseMatched(const CaptureIntegrity& integrity) {
  EXPECT_TRUE(integrity.complete()) << integrity.Verdict();
  const std::string counters = integrity.Counters();
  EXPECT_EQ(integrity.events_applied, integrity.events_recorded) << counters;
  EXPECT_EQ(integrity.unknown_frees, 0u) << counters;
  EXPECT_EQ(integrity.double_frees, 0u) << counters;
  EXPECT_EQ(integrity.unknown_resizes, 0u) << counters;
  EXPECT_EQ(integrity.unknown_remaps, 0u) << counters;
  EXPECT_EQ(integrity.missed_frees, 0u) << counters;
  EXPECT_EQ(integrity.ambiguous_matches, 0u) << counters;
  EXPECT_EQ(integrity.order_conflicts, 0u) << counters;
  EXPECT_EQ(integrity.late_records, 0u) << counters;
}

}  // namespace memtrace::testing

#endif  // MEMTRACE_TESTS_EVERY_RELEASE_MATCHED_H_
