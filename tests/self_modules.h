// Copyright 2026 The memtrace Authors.
//
// self_modules.h: the executable mappings of the test's own process (/proc/self/maps) as
// capture module records, the way the interposer lists them, for symbolizer tests.

#ifndef MEMTRACE_TESTS_SELF_MODULES_H_
#define MEMTRACE_TESTS_SELF_MODULES_H_

#include <vector>

#include "analysis/capture_reader.h"

namespace memtrace {

std::vector<CaptureRecord> SelfExecutableModules();

}  // namespace memtrace

#endif  // MEMTRACE_TESTS_SELF_MODULES_H_
