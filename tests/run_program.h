// Copyright 2026 The memtrace Authors.
//
// run_program.h: tests that run other programs (the CLI, traced targets) start them here
// and read back what they wrote.
//
// Thread safety: RunProgram() numbers its output files with a counter of its own; call
// it from one thread.

#ifndef MEMTRACE_TESTS_RUN_PROGRAM_H_
#define MEMTRACE_TESTS_RUN_PROGRAM_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace memtrace {

struct Result {
  int status = -1;  // exit status, or 128 + signal
  std::string out;
  std::string err;
};

// The whole file, or "" when it cannot be read.
std::string ReadFile(const std::string& path);

// Starts argv with `env` added to ours, without waiting for it; stdout goes to `out`,
// stderr to `err` unless it is empty. Returns its pid, or -1.
pid_t Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
            const std::string& out, const std::string& err);

// Runs argv with `env` added to ours; stdout and stderr go to files in TempDir(), read
// back after.
Result RunProgram(const std::vector<std::string>& argv, const std::vector<std::string>& env);

}  // namespace memtrace

#endif  // MEMTRACE_TESTS_RUN_PROGRAM_H_
