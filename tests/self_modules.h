// Copyright 2026 The memtrace Authors.
//
// self_modules.h: the executable mappings of the test's own process (/proc/self/maps) as
// capture module records, the way the interposer lists them, for symbolizer tests.

#ifndef MEMTRACE_TESTS_SELF_MODULES_H_
#define MEMTRACE_TESTS_SELF_MODULES_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/capture_reader.h"

namespace memtrace {

std::vector<CaptureRecord> SelfExecutableModules();

// A module record for a file mapped at [start, end) from file offset `offset`.
inline CaptureRecord ModuleLine(std::string path, uint64_t start, uint64_t end,
                                uint64_t offset = 0) {
  CaptureRecord m;
  m.type = LineType::kModule;
  m.path = std::move(path);
  m.start = start;
  m.end = end;
  m.offset = offset;
  return m;
}

}  // namespace memtrace

#endif  // MEMTRACE_TESTS_SELF_MODULES_H_
