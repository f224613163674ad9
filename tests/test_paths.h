// Copyright 2026 The memtrace Authors.
//
// test_paths.h: where a Bazel test finds its data files and may write its own.

#ifndef MEMTRACE_TESTS_TEST_PATHS_H_
#define MEMTRACE_TESTS_TEST_PATHS_H_

#include <cstdlib>
#include <string>

namespace memtrace {

// The path of a data file of the test, by its path in the workspace ("tests/x.so").
inline std::string Runfile(const std::string& path) {
  const char* dir = getenv("TEST_SRCDIR");
  return std::string(dir != nullptr ? dir : ".") + "/memtrace/" + path;
}

// A directory the test may write (TEST_TMPDIR; /tmp outside Bazel).
inline std::string TempDir() {
  const char* dir = getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

}  // namespace memtrace

#endif  // MEMTRACE_TESTS_TEST_PATHS_H_
