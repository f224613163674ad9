// Copyright 2026 The memtrace Authors.
//
// run_program.h: running a program from a test (the memtrace CLI, a traced target) and
// reading back what it printed. For the tests that trace real programs through the
// interposer (the preload_*_test targets).
//
// Thread safety: call from the test's main thread (RunProgram numbers its output files
// with a counter of its own).
//
// Example:
//   const Result r = RunProgram({Cli(), "verify", capture}, {});
//   EXPECT_EQ(r.status, 0) << r.out << r.err;

#ifndef MEMTRACE_TESTS_RUN_PROGRAM_H_
#define MEMTRACE_TESTS_RUN_PROGRAM_H_

#include <sys/types.h>

#include <string>
#include <vector>

// The interposer and the programs it traces are built with the test's configuration; a
// sanitizer runtime owns malloc itself and must be first in the process, so the
// interposer cannot be loaded into a sanitized build. The engine it drives is covered by
// the other tests under both sanitizers. For a test's SetUp().
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MEMTRACE_SKIP_UNDER_SANITIZERS() \
  GTEST_SKIP() << "the interposer cannot be preloaded into a sanitized build"
#else
#define MEMTRACE_SKIP_UNDER_SANITIZERS() static_cast<void>(0)
#endif

namespace memtrace {

struct Result {
  int status = -1;  // exit status, or 128 + signal
  std::string out;
  std::string err;
};

// The contents of the file at `path`; "" when it cannot be read.
std::string ReadFile(const std::string& path);

// Starts argv with `env` added to ours, without waiting for it; stdout goes to `out`,
// stderr to `err` unless it is empty. Returns its pid, or -1.
pid_t Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
            const std::string& out, const std::string& err);

// Runs argv with `env` added to ours; stdout and stderr go to files (in TempDir()), read
// back after it ends.
Result RunProgram(const std::vector<std::string>& argv, const std::vector<std::string>& env);

}  // namespace memtrace

#endif  // MEMTRACE_TESTS_RUN_PROGRAM_H_
