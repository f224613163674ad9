// Copyright 2026 The memtrace Authors.
//
// recorder_test_support.h: what the recorder's tests (tests/recorder_*_test.cc) share: the
// layer they record into and a recorder made from a configuration.

#ifndef MEMTRACE_TESTS_RECORDER_TEST_SUPPORT_H_
#define MEMTRACE_TESTS_RECORDER_TEST_SUPPORT_H_

#include <memory>
#include <utility>

#include <gtest/gtest.h>

#include "runtime/internal/recorder.h"

namespace memtrace {

inline constexpr LayerId kHeap = layers::kCpuHeap;

// A recorder made with `config`, not started (a test failure when it is refused).
inline std::unique_ptr<Recorder> Make(Config config = Config{}) {
  auto r = Recorder::Create(config);
  EXPECT_TRUE(r.ok()) << r.status();
  return std::move(r).value();
}

}  // namespace memtrace

#endif  // MEMTRACE_TESTS_RECORDER_TEST_SUPPORT_H_
