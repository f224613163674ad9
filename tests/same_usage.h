// Copyright 2026 The memtrace Authors.
//
// same_usage.h: a test expectation that two sets of usage counters agree field by field,
// each mismatch named with `what`.

#ifndef MEMTRACE_TESTS_SAME_USAGE_H_
#define MEMTRACE_TESTS_SAME_USAGE_H_

#include <string>

#include <gtest/gtest.h>

#include "runtime/usage_counters.h"

namespace memtrace {

inline void ExpectSame(const UsageCounters& got, const UsageCounters& want,
                       const std::string& what) {
  EXPECT_EQ(got.live_bytes, want.live_bytes) << what;
  EXPECT_EQ(got.live_count, want.live_count) << what;
  EXPECT_EQ(got.high_water_bytes, want.high_water_bytes) << what;
  EXPECT_EQ(got.allocated_bytes, want.allocated_bytes) << what;
  EXPECT_EQ(got.allocated_count, want.allocated_count) << what;
  EXPECT_EQ(got.freed_bytes, want.freed_bytes) << what;
  EXPECT_EQ(got.freed_count, want.freed_count) << what;
  EXPECT_EQ(got.allocation_calls, want.allocation_calls) << what;
}

}  // namespace memtrace

#endif  // MEMTRACE_TESTS_SAME_USAGE_H_
