// Copyright 2026 The memtrace Authors.
//
// run_command.h: `memtrace run [options] -- program args...`
//
// Runs `program` with libmemtrace_preload.so (preload/) in its LD_PRELOAD, and only its:
// the CLI never traces itself (it also exports `memtrace_never_trace`, which makes the
// interposer stand down if someone preloads it into the CLI). When the program exits,
// prints the capture's summary to stderr (the program's stdout stays its own) and exits
// with the program's exit status (128 + N when a signal N ended it).
//
// It tells apart the failures Tracy users meet silently:
//   - the interposer was not loaded (a static or setuid program, a wrong path): no
//     capture, or one whose header is not the interposer's; exit 125 with the reason;
//   - a static program, or a set-user-ID or set-group-ID one of another owner (the
//     loader's secure mode ignores LD_PRELOAD): refused before it runs, exit 125;
//   - the capture cannot be created (its directory is missing, a file, or not writable):
//     refused before the program starts, exit 125;
//   - the program crashed: the capture keeps everything up to the crash and is marked
//     partial; `memtrace verify` says so.
//
// Options (before `--`; a value as `--name=VALUE` or `--name VALUE`, read by the spelling
// every subcommand shares, cli/command_line.h):
//   -o PATH, --output=PATH
//                       capture path; "%p" is the program's pid (default memtrace-%p.mtb,
//                       the binary encoding; a path ending in .jsonl gives JSONL)
//   --depth=N           stack frames per allocation, 0..64 (default 16)
//   --unwind=fp|dwarf   how stacks are walked (default dwarf)
//   --min-size=BYTES    skip blocks smaller than this (default 0); what it and --sample
//                       left out is counted, and every verdict states it
//   --sample=BYTES      record a sample: a block of s bytes with probability
//                       1 - exp(-s/BYTES); results are scaled estimates (default 0: all)
//   --children          trace programs it execs too, each into its own capture
//   --forks             trace the children it forks too, each into its own capture
//                       that starts with the blocks it inherited (MEMTRACE_TRACE_FORKS)
//   --mmap              also record anonymous mappings (mmap, munmap, mremap) on a
//                       layer of their own, "mmap"
//   --preload=PATH      the interposer library (default: found beside this binary, or
//                       $MEMTRACE_PRELOAD)
//   --quiet             do not print the summary
//
// Thread safety: a command-line entry point.

#ifndef MEMTRACE_CLI_RUN_COMMAND_H_
#define MEMTRACE_CLI_RUN_COMMAND_H_

#include <string>
#include <vector>

namespace memtrace {

// The options of `memtrace run`, as ParseRunOptions() reads them.
struct RunOptions {
  std::string output = "memtrace-%p.mtb";
  std::string depth;
  std::string unwind;
  std::string min_size;
  std::string sample;
  std::string max_size;     // a size (preload_config.h, ParseByteSize), or empty: no limit
  std::string site_capacity;  // distinct call sites kept, or empty: the interposer's default
  std::string preload;
  std::string tracer_cpus;  // a CPU list (runtime/internal/cpu_list.h), or empty
  std::string tracer_threads;  // threads that apply records, 0..64, or empty: 0 (chosen)
  std::string fence;        // "membarrier", "seq_cst", or empty (the interposer's default)
  bool children = false;
  bool forks = false;
  bool mmap = false;
  bool exact_order = false;
  bool live = false;  // MEMTRACE_LIVE: serve the ledger for `memtrace live PID`
  bool quiet = false;
  std::vector<std::string> command;  // the program and its arguments; never empty if OK
};

// Reads argv[1..argc) (argv[0] is "run") into `options`: flags until "--" or the first
// argument that is not one, then the program. False with `error` saying what is wrong
// (an unknown option, no program, a value out of range). Touches nothing outside its
// arguments: no file, no environment (the fuzz target in tests/fuzz relies on this).
bool ParseRunOptions(int argc, char** argv, RunOptions* options, std::string* error);

// argv[0] is "run"; returns the process exit code.
int RunCommand(int argc, char** argv);

// The usage text of `memtrace run`.
const char* RunUsage();

}  // namespace memtrace

#endif  // MEMTRACE_CLI_RUN_COMMAND_H_
