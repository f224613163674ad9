// Copyright 2026 The memtrace Authors.
//
// live_target_shape.h: what tests/live_target.cc allocates, for the program itself and
// for the tests that check what it serves (live_target_process.h): kThreads threads, each
// in the scope "worker/t<i>", allocate kBlocks blocks at the call sites kSiteBase +
// kSiteStep * (i % kSites); "grow" adds kGrowBlocks blocks of kGrowBytes in worker/t0 at
// the first site.

#ifndef MEMTRACE_TESTS_LIVE_TARGET_SHAPE_H_
#define MEMTRACE_TESTS_LIVE_TARGET_SHAPE_H_

#include <cstdint>

namespace memtrace::live_testing {

inline constexpr int kThreads = 4;
inline constexpr int kSites = 4;
inline constexpr uint64_t kSiteBase = 0x5100;
inline constexpr uint64_t kSiteStep = 0x10;
inline constexpr int kBlocks = 300;
inline constexpr int kGrowBlocks = 10;
inline constexpr uint64_t kGrowBytes = 1000;

}  // namespace memtrace::live_testing

#endif  // MEMTRACE_TESTS_LIVE_TARGET_SHAPE_H_
