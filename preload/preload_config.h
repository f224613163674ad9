// Copyright 2026 The memtrace Authors.
//
// preload_config.h: the interposer's settings, read from the environment.
//
// The knobs mirror the seed's (tiny.memtrace and Tracy's memory profiling):
//
//   MEMTRACE_OUTPUT          capture path; "%p" becomes the process id
//                            (default "memtrace-%p.mtb", the binary encoding; a path
//                            ending in ".jsonl" gives JSONL; ".zst" compresses)
//   MEMTRACE_MIN_SIZE        bytes; blocks whose usable size is smaller are not recorded
//                            (the seed's minCpuAllocSizeInBytesToTrack; default 0), but
//                            counted, as what sampling leaves out is (filter_counts.h)
//   MEMTRACE_STACK_DEPTH     frames per allocation, 0..64; 0 records the return address
//                            only (the seed's memoryTraceStackCaptureDepth; default 16)
//   MEMTRACE_UNWIND          "fp" (walk frame pointers: for code built with
//                            -fno-omit-frame-pointer) or "dwarf" (the unwind tables,
//                            right for any code that has them; default: unwind.h)
//   MEMTRACE_TRACE_CHILDREN  "1": programs this one execs are traced too, each into its
//                            own capture; "0" (default): the interposer removes itself
//                            from LD_PRELOAD so children run untraced
//   MEMTRACE_TRACE_FORKS     "1": a child of fork() traces on into its own capture,
//                            "NAME.<pid>.EXT", which starts with the blocks it inherited
//                            (scope "(inherited at fork)"); for servers that fork their
//                            workers (postgres, nginx, gunicorn). Each fork then waits
//                            for a drainer round in progress to finish. "0" (default):
//                            a forked child runs untraced
//   MEMTRACE_SAMPLE_BYTES    0 (default): record every block; N: record a sample, each
//                            block of s bytes with probability 1 - exp(-s/N), and mark
//                            the capture sampled (estimates are scaled by 1/probability;
//                            docs/capture-format.md, Sampling)
//   MEMTRACE_RING_LOG2       records per thread ring, as a power of two, 10..22 (default
//                            15: 1 MiB a thread; python3's four threads ran 35 ms faster
//                            than with 16, and sqlite3 waits for ring space less often
//                            than with 14; bench/README.md, "Rings at exit, and the
//                            ring size")
//   MEMTRACE_MMAP            "1": also record the program's anonymous mappings (mmap,
//                            munmap, mremap) on a layer of their own, "mmap"; "0"
//                            (default): leave them out (mmap_layer.inc, mappings.h).
//                            Not with MEMTRACE_SAMPLE_BYTES (mappings are recorded
//                            whole), nor under a malloc other than glibc's (which may
//                            mmap while holding its locks): the interposer warns and
//                            leaves mappings out
//   MEMTRACE_FENCE           "membarrier" (default): epochs are closed with membarrier()
//                            while several threads record, which interrupts each CPU
//                            running one of the program's threads about 500 times a
//                            second; "seq_cst": each record pays a fence on its own
//                            thread instead and no thread is interrupted
//                            (transport/epoch_clock.h, runtime/config.h)
//   MEMTRACE_EXACT_ORDER     "1": stamp every record with the time, so that records of
//                            threads that allocate at once are applied in their real
//                            order and every peak is exact where the stamps allow
//                            (Config::order_stamp_log2 = 0; a serialised counter read
//                            per record, bench/README.md); "0" (default): a stamp every
//                            32 records, and peaks with an interval
//   MEMTRACE_LIVE            "1": serve the ledger on a Unix socket while the program
//                            runs, for `memtrace live PID` (Config::live,
//                            runtime/internal/live_server.h); "0" (default): no socket
//   MEMTRACE_TRACER_THREADS  threads that apply records to the ledger, the drainer
//                            among them, 0..16 (Config::tracer_threads); 0 (default):
//                            chosen from the CPUs memtrace's threads may use
//                            (TracerThreadsFor)
//
// A value that cannot be used is never fatal: the problem is written to stderr, naming
// the variable, the value and the accepted range, and the documented default is used. A
// MEMTRACE_ name that is none of these is named too (WarnUnknownSettings).
//
// Thread safety: ParsePreloadConfig is a pure function of its input.

#ifndef MEMTRACE_PRELOAD_PRELOAD_CONFIG_H_
#define MEMTRACE_PRELOAD_PRELOAD_CONFIG_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/config.h"
#include "runtime/internal/cpu_list.h"
#include "runtime/internal/site_table.h"
#include "transport/epoch_clock.h"

namespace memtrace {

enum class UnwindMethod : uint8_t { kFramePointers, kDwarf };

struct PreloadConfig {
  std::string output = "memtrace-%p.mtb";
  uint64_t min_size = 0;
  uint32_t stack_depth = 16;
  UnwindMethod unwind = UnwindMethod::kDwarf;
  bool trace_children = false;
  bool trace_forks = false;
  uint64_t sample_bytes = 0;
  uint32_t ring_capacity_log2 = 15;
  bool mmap = false;
  // MEMTRACE_TRACER_CPUS: where memtrace's drainer and writer threads run (empty: anywhere).
  CpuList tracer_cpus;
  // MEMTRACE_TRACER_THREADS: Config::tracer_threads, up to kMaxPreloadTracerThreads.
  uint32_t tracer_threads = 0;
  FenceMode fence = FenceMode::kMembarrier;
  bool exact_order = false;  // MEMTRACE_EXACT_ORDER
  bool live = false;         // MEMTRACE_LIVE
  // MEMTRACE_MAX_BYTES: the capture's size bound (JsonlSinkOptions::max_bytes; 0: none).
  uint64_t max_bytes = 0;
  // MEMTRACE_SITE_CAPACITY: distinct call sites (stacks) kept before "other sites" (the
  // seed's request_site_capacity_max: Config::request_site_capacity_max and
  // JsonlSinkOptions::site_capacity), up to kMaxPreloadSiteCapacity.
  uint32_t site_capacity = kDefaultSiteCapacity;
};

// A size in bytes: a whole number with an optional binary suffix, K, M, G or T (either
// case, 1024-based, "KiB" and "KB" read the same). False on anything else, or past 2^63.
bool ParseByteSize(std::string_view text, uint64_t* out);

inline constexpr uint32_t kMaxPreloadStackDepth = 64;
// Each site costs the drainer and the writer a table entry and, with stacks, its frames
// (about 150 bytes at depth 16, in each): 16M sites would be gigabytes.
inline constexpr uint32_t kMaxPreloadSiteCapacity = uint32_t{1} << 24;
// Config::Validate() refuses more.
inline constexpr uint32_t kMaxPreloadTracerThreads = Config::kMaxTracerThreads;

// Reads the settings through `lookup` (getenv, or a table in tests). Every problem is
// appended to `warnings` as one line naming the variable and what was used instead.
PreloadConfig ParsePreloadConfig(const std::function<const char*(const char*)>& lookup,
                                 std::vector<std::string>* warnings);

// The interposer's settings (above), each with its "MEMTRACE_" prefix.
inline constexpr std::string_view kPreloadSettingNames[] = {
    "MEMTRACE_OUTPUT",      "MEMTRACE_MIN_SIZE",   "MEMTRACE_STACK_DEPTH",
    "MEMTRACE_UNWIND",      "MEMTRACE_TRACE_CHILDREN", "MEMTRACE_TRACE_FORKS",
    "MEMTRACE_SAMPLE_BYTES", "MEMTRACE_RING_LOG2",  "MEMTRACE_MMAP",
    "MEMTRACE_FENCE",       "MEMTRACE_TRACER_CPUS", "MEMTRACE_MAX_BYTES",
    "MEMTRACE_SITE_CAPACITY", "MEMTRACE_EXACT_ORDER",
    "MEMTRACE_LIVE",        "MEMTRACE_TRACER_THREADS"};

// One warning for each variable of the environment `env` (null-terminated "NAME=value"
// strings, or null) whose name starts with "MEMTRACE_" and is no setting: a misspelt
// MEMTRACE_OUTPUT would otherwise be ignored without a word. Names the memtrace tools
// themselves set or read (MEMTRACE_ROOT_PID, MEMTRACE_PRELOAD, and the test and benchmark
// knobs) are not warned about. The warning names the closest setting when one is close,
// else lists them all.
void WarnUnknownSettings(const char* const* env, std::vector<std::string>* warnings);

// The program `name` (no '/') as execvp() finds it: the first "DIR/name" that is
// executable, for each DIR of the ':'-separated `dirs` (an empty entry is the current
// directory), written to `out` (NUL-terminated). False when none is, or none fits in
// `size`. No allocation (the interposer searches before an exec, maybe in a vfork()ed
// child).
bool FindInPath(const char* name, const char* dirs, char* out, size_t size);

// True when the dynamic loader would run the file at `path` in secure mode, where it
// ignores LD_PRELOAD and the interposer never loads: a set-user-ID file of another owner
// than this process's effective user, or set-group-ID of another group (on a file system
// mounted nosuid the bits do nothing). The reason goes to `why` ("set-user-ID (owner uid
// 65534, this user 0)"), NUL-terminated and cut to `size`. False when the file cannot be
// examined. No allocation: the interposer asks before an exec, maybe in a vfork()ed child.
bool LoaderIgnoresPreload(const char* path, char* why, size_t size);

// The capture path for process `pid`: "%p" replaced by the pid. When children are traced
// and the path has no "%p", processes other than the first (`root_pid`) get ".<pid>"
// before the extension, so no two processes write one file. `copy` > 1 names a later
// process that got a pid again (pids wrap) while the earlier one's capture is still
// there: "<pid>.<copy>" where the pid goes (/tmp/a.mtb -> /tmp/a.4242.2.mtb).
std::string CapturePath(const std::string& pattern, int pid, int root_pid, int copy = 1);

// `path` with ".<pid>" inserted before the extension(s) of its file name:
// /tmp/a.mtb -> /tmp/a.<pid>.mtb, /tmp/a -> /tmp/a.<pid>.
std::string PidTaggedPath(const std::string& path, int pid);

// A glob(3) pattern for the captures that the processes other than the first write under
// `pattern` (CapturePath(), and the ".execN" of an image that exec'd): each pid where
// "%p" is, else ".<pid>" before the extension. It matches the first process's capture
// too when `pattern` has "%p".
std::string OtherCapturesGlob(const std::string& pattern);

// Removes every LD_PRELOAD entry naming this interposer from the environment array
// `env`: a file whose name contains `marker` ("libmemtrace_preload"), or, given
// `own_path` (the path the loader has for the library, dladdr's), that path, or its file
// name where the entry has no '/': a copy of the library under another name
// (`cp libmemtrace_preload.so /opt/mt.so`). In place: the LD_PRELOAD
// string is rewritten with the entries kept, separated by single spaces, or, when none
// is left, the variable is taken out by moving the later pointers back. Nothing is
// allocated and nothing else changes; a null `env` is left alone.
//
// Why not unsetenv() or setenv(): a program may define its own, and the interposer's
// calls then reach them. bash does: before its shell starts, its unsetenv() changes
// nothing, and bash then exports LD_PRELOAD (read from main's `envp`) to every command it
// runs, each of which would trace itself into the same capture file.
void DropFromPreload(char** env, std::string_view marker, std::string_view own_path = {});

// With children traced (MEMTRACE_TRACE_CHILDREN=1), the environment a program this one
// runs (exec, posix_spawn) must still load the interposer and carry its settings. A
// program may hand its child another environment: empty (`env -i`, Python's
// `subprocess.run(env={})`), or with LD_PRELOAD set to its own libraries (`env
// LD_PRELOAD=libjemalloc.so.2 ...`). Then the child went untraced, and nothing said so.
//
// `env` as given, with:
//   - `library` (this interposer's path) at the front of each LD_PRELOAD that names
//     neither a file containing `marker` ("libmemtrace_preload") nor `library` itself, or
//     LD_PRELOAD=`library` added when there is none;
//   - every entry of `tracing` (null-terminated "MEMTRACE_NAME=value" strings: the
//     settings this process started with) whose name `env` lacks, added. An entry `env`
//     has is kept as given.
// MeasureTracingEnvironment() says whether anything must change and how much room the
// new array needs; BuildTracingEnvironment() fills caller-provided memory with it (the
// exec wrappers may run in a vfork()ed child, where malloc must not be called). Entries
// keep their order; added ones go last. Neither allocates.
struct TracingEnvironmentSize {
  bool changes = false;  // false: `env` already keeps tracing; use it as it is
  size_t entries = 0;    // pointers of the new array, its final nullptr included
  size_t bytes = 0;      // bytes of the rewritten LD_PRELOAD strings, their NULs included
};
TracingEnvironmentSize MeasureTracingEnvironment(const char* const* env, std::string_view library,
                                                 std::string_view marker,
                                                 const char* const* tracing);
void BuildTracingEnvironment(const char* const* env, std::string_view library,
                             std::string_view marker, const char* const* tracing,
                             const char** entries, char* bytes);

}  // namespace memtrace

#endif  // MEMTRACE_PRELOAD_PRELOAD_CONFIG_H_
