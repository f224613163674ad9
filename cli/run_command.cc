// Copyright 2026 The memtrace Authors.

#include "cli/run_command.h"

#include <elf.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/capture_file_ends.h"
#include "analysis/capture_name.h"
#include "analysis/capture_reader.h"
#include "analysis/trailer.h"
#include "cli/command_line.h"
#include "preload/preload_config.h"
#include "runtime/internal/cpu_list.h"
#include "sinks/capture_lock.h"

// The interposer looks this up and stands down in any program that defines it: the CLI
// must never trace itself (cli/BUILD.bazel exports it in the dynamic symbol table).
extern "C" __attribute__((visibility("default"), used)) const int memtrace_never_trace = 1;

namespace memtrace {
namespace {

constexpr int kCaptureFailed = 125;  // like env(1) and timeout(1): the tool itself failed
// Like a shell and env(1): the program was not found (127), or was found and could not be
// run (126).
constexpr int kProgramNotFound = 127;
constexpr int kProgramNotRunnable = 126;

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string SelfPath() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

bool Readable(const std::string& path) { return access(path.c_str(), R_OK) == 0; }

// The interposer: --preload, $MEMTRACE_PRELOAD, or beside this binary (a Bazel output
// tree, its runfiles, or an install tree's lib/, tools/install).
std::string FindPreload(const std::string& given, std::string* tried) {
  if (!given.empty()) return given;
  if (const char* env = getenv("MEMTRACE_PRELOAD"); env != nullptr && *env != '\0') return env;
  const std::string self = SelfPath();
  const std::string dir = Dirname(self);
  const std::string candidates[] = {
      dir + "/../preload/libmemtrace_preload.so",
      self + ".runfiles/memtrace/preload/libmemtrace_preload.so",
      dir + "/libmemtrace_preload.so",
      dir + "/../lib/libmemtrace_preload.so",
      dir + "/../lib/memtrace/libmemtrace_preload.so",
  };
  for (const std::string& c : candidates) {
    if (Readable(c)) return c;
    absl::StrAppend(tried, "\n  ", c);
  }
  return "";
}

// The file execvp() would run for `name`, or "" if none is found.
std::string ResolveProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* dirs = getenv("PATH");
  char found[PATH_MAX];
  return FindInPath(name.c_str(), dirs != nullptr ? dirs : "/usr/local/bin:/usr/bin:/bin", found,
                    sizeof(found))
             ? std::string(found)
             : std::string();
}

// Why execve() of `path` failed with `err`, and what to do about it: the message after
// "cannot run 'PATH': ". A file that exists but gives ENOENT is a script whose interpreter
// (its "#!" line) does not exist.
std::string ExecFailure(const std::string& path, int err) {
  struct stat st;
  const bool exists = stat(path.c_str(), &st) == 0;
  if (err == ENOENT && exists) {
    std::string interpreter;
    if (FILE* f = fopen(path.c_str(), "re"); f != nullptr) {
      char line[256];
      if (fgets(line, sizeof(line), f) != nullptr && strncmp(line, "#!", 2) == 0) {
        interpreter = line + 2;
        interpreter.erase(0, interpreter.find_first_not_of(" \t"));
        interpreter.erase(std::min(interpreter.find_first_of(" \t\r\n"), interpreter.size()));
      }
      fclose(f);
    }
    if (!interpreter.empty()) {
      return absl::StrCat("its interpreter '", interpreter,
                          "' (named on its #! line) does not exist; install it or fix that line");
    }
    return absl::StrCat(strerror(err), " (the file exists: its program interpreter, the "
                        "dynamic loader it names, may be missing)");
  }
  if (exists && S_ISDIR(st.st_mode)) return "it is a directory";
  if (err == EACCES && exists) {
    return absl::StrCat(strerror(err), ": it is not executable (chmod +x '", path,
                        "'), or it is on a file system mounted noexec");
  }
  if (err == ENOEXEC) {
    return absl::StrCat(strerror(err), ": it is neither a program for this machine nor a "
                        "script with a #! line");
  }
  return strerror(err);
}

// True when `path` is an ELF executable without a program interpreter: the dynamic
// loader never runs, so LD_PRELOAD cannot work.
bool IsStaticElf(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  Elf64_Ehdr eh;
  bool is_static = false;
  if (pread(fd, &eh, sizeof(eh), 0) == sizeof(eh) && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
      eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr)) {
    is_static = true;
    for (int i = 0; i < eh.e_phnum; ++i) {
      Elf64_Phdr ph;
      if (pread(fd, &ph, sizeof(ph), static_cast<off_t>(eh.e_phoff + i * sizeof(ph))) !=
          sizeof(ph)) {
        break;
      }
      if (ph.p_type == PT_INTERP) is_static = false;
    }
  }
  close(fd);
  return is_static;
}

// The interposer settings `memtrace run` sets from its flags: each setting's name, the
// flag that stands for it, and its value for the child (empty: not set, the interposer's
// default applies). The flags without a value of their own are always set, "0" or "1".
struct SettingFromFlag {
  const char* setting;
  const char* flag;
  std::string value;
};

std::vector<SettingFromFlag> SettingsFromFlags(const RunOptions& o) {
  const auto on_off = [](bool on) { return std::string(on ? "1" : "0"); };
  return {{"MEMTRACE_OUTPUT", "--output", o.output},
          {"MEMTRACE_STACK_DEPTH", "--depth", o.depth},
          {"MEMTRACE_UNWIND", "--unwind", o.unwind},
          {"MEMTRACE_MIN_SIZE", "--min-size", o.min_size},
          {"MEMTRACE_SAMPLE_BYTES", "--sample", o.sample},
          {"MEMTRACE_MAX_BYTES", "--max-size", o.max_size},
          {"MEMTRACE_SITE_CAPACITY", "--site-capacity", o.site_capacity},
          {"MEMTRACE_TRACE_CHILDREN", "--children", on_off(o.children)},
          {"MEMTRACE_TRACE_FORKS", "--forks", on_off(o.forks)},
          {"MEMTRACE_MMAP", "--mmap", on_off(o.mmap)},
          {"MEMTRACE_TRACER_CPUS", "--tracer-cpus", o.tracer_cpus},
          {"MEMTRACE_TRACER_THREADS", "--tracer-threads", o.tracer_threads},
          {"MEMTRACE_FENCE", "--fence", o.fence},
          {"MEMTRACE_EXACT_ORDER", "--exact-order", on_off(o.exact_order)},
          {"MEMTRACE_LIVE", "--live", on_off(o.live)}};
}

// The child's environment: ours with the interposer and its settings added.
std::vector<std::string> ChildEnvironment(const RunOptions& o, const std::string& preload) {
  const std::vector<SettingFromFlag> settings = SettingsFromFlags(o);
  std::vector<std::string> env;
  std::string ld_preload = preload;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (entry.rfind("LD_PRELOAD=", 0) == 0) {
      const std::string rest = entry.substr(strlen("LD_PRELOAD="));
      if (!rest.empty()) ld_preload += " " + rest;
      continue;
    }
    if (entry.rfind("MEMTRACE_", 0) == 0) {
      const std::string name = entry.substr(0, entry.find('='));
      // A stale marker of traced children must not leak in.
      if (name == "MEMTRACE_ROOT_PID") continue;
      // The settings a flag of ours stands for are set below, from the flags and their
      // defaults: a value for one of them in the environment is not used, and we say so.
      // Other MEMTRACE_ variables pass (MEMTRACE_RING_LOG2 has no flag; the interposer
      // warns about names that are no setting).
      const auto ours = std::find_if(settings.begin(), settings.end(),
                                     [&](const SettingFromFlag& f) { return name == f.setting; });
      if (ours != settings.end()) {
        fprintf(stderr,
                "memtrace run: %s in the environment is not used: memtrace run sets %s from "
                "%s (pass the flag instead)\n",
                entry.c_str(), name.c_str(), ours->flag);
        continue;
      }
    }
    env.push_back(entry);
  }
  env.push_back("LD_PRELOAD=" + ld_preload);
  for (const SettingFromFlag& f : settings) {
    if (!f.value.empty()) env.push_back(std::string(f.setting) + "=" + f.value);
  }
  return env;
}

// Checks the capture's header: the interposer announces itself there.
absl::Status CheckHeader(const std::string& path) {
  if (access(path.c_str(), F_OK) != 0) {
    return absl::NotFoundError(absl::StrCat("no capture was written at '", path, "'"));
  }
  std::string source;
  const absl::Status stop = absl::CancelledError("header read");
  absl::Status s = ReadCapture(path, [&](const CaptureRecord& r) {
    source = r.source;
    return stop;
  });
  if (s.ok() || s.code() == absl::StatusCode::kCancelled) {
    if (source != "preload") {
      return absl::FailedPreconditionError(absl::StrCat(
          "the capture at '", path, "' was not written by the interposer (its header says ",
          "source \"", source, "\")"));
    }
    return absl::OkStatus();
  }
  return s;
}


// Why a capture cannot be named `pattern` (a --output value), or "" when it can. The
// writer picks the encoding by the name's last extensions (JsonlSink::ApplyPathExtension):
// ".mtb" binary, ".jsonl" or none JSONL, then ".zst" or nothing. Any other extension would
// put JSONL under a name that promises other bytes (".txt", ".gz"): one of letters alone.
// Others are a name's own ("run-1.2", "trace.%p": the pid). A FIFO or a device there is
// written through whatever its name: its reader decides.
std::string CaptureNameProblem(const std::string& pattern) {
  if (struct stat st; stat(pattern.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return "";
  const CaptureName name = SplitCaptureName(pattern);
  const std::string& ext = name.extension;
  if (ext.empty() || ext == "mtb" || ext == "jsonl") return "";
  if (!std::all_of(ext.begin(), ext.end(), [](char c) { return absl::ascii_isalpha(c); })) {
    return "";
  }
  return absl::StrCat("the name's extension '.", ext, "' is not a capture's: name it .mtb "
                      "(binary, the default) or .jsonl (JSONL text), with .zst after either "
                      "to compress (--output=",
                      name.stem, ".mtb)");
}

// Why no process could create a capture at `pattern` (a --output value), or "" when its
// directory is one this user may create files in and the path is not a directory or a
// file this user may not write. Checked before the program runs: an
// interposer that cannot create its capture traces nothing, and a long run would be
// wasted. A directory that itself holds "%p" is not known yet, so not checked.
std::string CaptureDirectoryProblem(const std::string& pattern) {
  const size_t slash = pattern.rfind('/');
  const std::string directory =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : pattern.substr(0, slash));
  if (directory.find("%p") != std::string::npos) return "";
  struct stat st;
  if (stat(directory.c_str(), &st) != 0) {
    return absl::StrCat("its directory '", directory, "' ",
                        errno == ENOENT ? "does not exist" : strerror(errno),
                        "; create it, or pass another --output");
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::StrCat("'", directory, "' is not a directory; pass another --output");
  }
  if (access(directory.c_str(), W_OK | X_OK) != 0) {
    return absl::StrCat("no file can be created in '", directory, "' (", strerror(errno),
                        "); pass another --output");
  }
  // The path itself: a directory there cannot be the capture, nor a file this user may
  // not write. (A device, /dev/null, or a FIFO is written through, never removed.)
  if (pattern.find("%p") == std::string::npos && stat(pattern.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return absl::StrCat("it is a directory; name a file in it (--output=", pattern,
                          pattern.back() == '/' ? "" : "/", "NAME.mtb)");
    }
    if (access(pattern.c_str(), W_OK) != 0) {
      return absl::StrCat("the file exists and cannot be written (", strerror(errno),
                          "); pass another --output");
    }
  }
  return "";
}

// Runs `memtrace summary ARGS...` (this binary) with its output on our stderr.
void PrintSummary(const std::vector<std::string>& args) {
  const std::string self = SelfPath();
  std::vector<std::string> argv = {self, "summary"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> argp;
  for (std::string& a : argv) argp.push_back(a.data());
  argp.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(2, 1);
    execv(self.c_str(), argp.data());
    _exit(127);
  }
  if (pid > 0) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

// The captures the program's other processes wrote (--children, --forks:
// OtherCapturesGlob, and the images the root process exec'd, ROOT.execN), written since
// `since` (an earlier run's are left out). Sorted, the root capture left out.
std::vector<std::string> OtherCaptures(const std::string& output, const std::string& root,
                                       const timespec& since) {
  std::set<std::string> found;
  for (const std::string& pattern : {OtherCapturesGlob(output), root + ".exec[0-9]*"}) {
    glob_t g;
    if (glob(pattern.c_str(), 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) {
        struct stat st;
        if (g.gl_pathv[i] == root || stat(g.gl_pathv[i], &st) != 0) continue;
        if (st.st_mtim.tv_sec > since.tv_sec ||
            (st.st_mtim.tv_sec == since.tv_sec && st.st_mtim.tv_nsec >= since.tv_nsec)) {
          found.insert(g.gl_pathv[i]);
        }
      }
    }
    globfree(&g);
  }
  return std::vector<std::string>(found.begin(), found.end());
}

}  // namespace

bool ParseRunOptions(int argc, char** argv, RunOptions* o, std::string* error) {
  // Each flag of `run`, by its name as ReadFlagArgument() gives it: one that takes a value
  // sets `value`, one that does not sets `on`.
  struct RunFlag {
    const char* name;
    std::string* value;
    bool* on;
  };
  const RunFlag flags[] = {
      {"output", &o->output, nullptr},        {"depth", &o->depth, nullptr},
      {"unwind", &o->unwind, nullptr},        {"min_size", &o->min_size, nullptr},
      {"sample", &o->sample, nullptr},        {"tracer_cpus", &o->tracer_cpus, nullptr},
      {"fence", &o->fence, nullptr},          {"preload", &o->preload, nullptr},
      {"max_size", &o->max_size, nullptr},    {"site_capacity", &o->site_capacity, nullptr},
      {"children", nullptr, &o->children},    {"forks", nullptr, &o->forks},
      {"mmap", nullptr, &o->mmap},            {"exact_order", nullptr, &o->exact_order},
      {"live", nullptr, &o->live},            {"quiet", nullptr, &o->quiet},
      {"tracer_threads", &o->tracer_threads, nullptr},
  };
  int i = 1;
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    const std::optional<FlagArgument> read = ReadFlagArgument(arg);
    if (!read) break;  // the program, without a "--" before it
    const RunFlag* flag = std::find_if(std::begin(flags), std::end(flags),
                                       [&](const RunFlag& f) { return read->name == f.name; });
    if (flag == std::end(flags)) {
      *error = absl::StrCat("unknown option '", arg, "'");
      return false;
    }
    if (flag->on != nullptr) {
      if (read->has_value) {
        *error = absl::StrCat("'", arg, "': this option takes no value");
        return false;
      }
      *flag->on = true;
    } else if (!TakeFlagValue(*read, argc, argv, &i, flag->value, error)) {
      return false;
    }
  }
  for (; i < argc; ++i) o->command.push_back(argv[i]);
  if (o->command.empty()) {
    *error = "no program to run; put it after \"--\"";
    return false;
  }
  uint32_t n = 0;
  if (!o->depth.empty() && (!absl::SimpleAtoi(o->depth, &n) || n > kMaxPreloadStackDepth)) {
    *error = absl::StrCat("--depth=", o->depth, " is not a whole number from 0 to ",
                          kMaxPreloadStackDepth);
    return false;
  }
  if (!o->site_capacity.empty() &&
      (!absl::SimpleAtoi(o->site_capacity, &n) || n < 1 || n > kMaxPreloadSiteCapacity)) {
    *error = absl::StrCat("--site-capacity=", o->site_capacity,
                          " is not a whole number from 1 to ", kMaxPreloadSiteCapacity);
    return false;
  }
  if (!o->tracer_threads.empty() &&
      (!absl::SimpleAtoi(o->tracer_threads, &n) || n > kMaxPreloadTracerThreads)) {
    *error = absl::StrCat("--tracer-threads=", o->tracer_threads,
                          " is not a whole number from 0 to ", kMaxPreloadTracerThreads,
                          " (0: chosen from the CPU count)");
    return false;
  }
  uint64_t bytes = 0;
  if (!o->min_size.empty() && !ParseByteSize(o->min_size, &bytes)) {
    *error = absl::StrCat("--min-size=", o->min_size,
                          " is not a size in bytes (a whole number, or with K, M, G or T: "
                          "--min-size=1K)");
    return false;
  }
  if (!o->sample.empty() && !ParseByteSize(o->sample, &bytes)) {
    *error = absl::StrCat("--sample=", o->sample,
                          " is not a size in bytes (a whole number, or with K, M, G or T: "
                          "--sample=64K)");
    return false;
  }
  if (!o->max_size.empty() && !ParseByteSize(o->max_size, &bytes)) {
    *error = absl::StrCat("--max-size=", o->max_size,
                          " is not a size in bytes (a whole number, or with K, M, G or T: "
                          "--max-size=2G)");
    return false;
  }
  // A flag that names one of two choices, when given.
  auto either = [&](const char* flag, const std::string& v, const char* a, const char* b) {
    if (v.empty() || v == a || v == b) return true;
    *error = absl::StrCat(flag, "=", v, " is not \"", a, "\" or \"", b, "\"");
    return false;
  };
  if (!either("--unwind", o->unwind, "fp", "dwarf") ||
      !either("--fence", o->fence, "membarrier", "seq_cst")) {
    return false;
  }
  if (o->output.empty()) {
    *error = "--output is empty";
    return false;
  }
  // The list's form only: whether this machine has the CPUs, the interposer checks (and
  // says) in the program, where they are needed.
  if (const absl::StatusOr<CpuList> cpus = ParseCpuList(o->tracer_cpus); !cpus.ok()) {
    *error = absl::StrCat("--tracer-cpus: ", cpus.status().message());
    return false;
  }
  return true;
}

const char* RunUsage() {
  return "usage: memtrace run [options] -- program [args...]\n"
         "\n"
         "Runs program with the memtrace interposer (LD_PRELOAD for the program only), writes\n"
         "the capture, prints its summary to stderr, and exits with the program's status.\n"
         "\n"
         "options (a value as --name=VALUE or --name VALUE):\n"
         "  -o PATH, --output=PATH\n"
         "                      capture path; %p is the program's pid (memtrace-%p.mtb);\n"
         "                      .mtb is the compact binary encoding, .jsonl is JSONL text\n"
         "                      (memtrace convert turns one into the other), any other\n"
         "                      name (trace.%p, a FIFO) JSONL, and an extension of letters\n"
         "                      (.txt, .gz) is refused; a path ending in .zst is compressed\n"
         "  --depth=N           stack frames per allocation, 0..64 (16); 0 = return address\n"
         "  --unwind=fp|dwarf   frame pointers (code built with them) or the unwind\n"
         "                      tables, .eh_frame (any code; default)\n"
         "  --min-size=SIZE     do not record blocks smaller than this (0; 1K, 64K: K, M,\n"
         "                      G, T); the verdicts say how many were left out\n"
         "  --sample=SIZE       record a sample: a block of s bytes with probability\n"
         "                      1-exp(-s/SIZE); summaries are scaled estimates (0: all)\n"
         "  --children          also trace programs it execs, each into its own capture\n"
         "  --forks             also trace the children it forks (a server's workers, a\n"
         "                      daemon that runs on after its first process exits),\n"
         "                      each into its own capture, NAME.<pid>.EXT, which starts\n"
         "                      with the blocks it inherited\n"
         "  --mmap              also record anonymous mappings (mmap, munmap, mremap) on\n"
         "                      a layer of their own, \"mmap\"\n"
         "  --tracer-cpus=LIST  run memtrace's own threads (drainer, writer, exit) only\n"
         "                      on these CPUs, a list like 2-3,6 (default: wherever the\n"
         "                      kernel puts them)\n"
         "  --tracer-threads=K  threads that apply records (default: 1 below 8 CPUs,\n"
         "                      else CPUs/4 up to 4)\n"
         "  --fence=membarrier|seq_cst\n"
         "                      how epochs are closed while several threads record:\n"
         "                      membarrier() from memtrace's thread, which interrupts\n"
         "                      each CPU running the program (default), or a fence on\n"
         "                      each recording thread, which interrupts none\n"
         "  --exact-order       stamp every record with the time (a serialised counter\n"
         "                      read each), so that the records of threads allocating at\n"
         "                      once are applied in their real order and high-water marks\n"
         "                      are exact; by default a stamp every 32 records bounds each\n"
         "                      peak instead\n"
         "  --max-size=SIZE     stop writing events once the capture holds SIZE (2G,\n"
         "                      500M; no limit by default): for a program left traced\n"
         "                      for hours; the trailer still has the whole run's totals\n"
         "  --site-capacity=N   distinct call sites (stacks) kept before the rest share\n"
         "                      one \"other sites\" row (default 65536; at most 16777216)\n"
         "  --live              serve the ledger on a socket while the program runs, for\n"
         "                      `memtrace live PID` (docs/preload.md)\n"
         "  --preload=PATH      the interposer (default: beside this binary, or\n"
         "                      $MEMTRACE_PRELOAD)\n"
         "  --quiet             do not print the summary\n"
         "\n"
         "exit status: the program's (128+N if signal N ended it); 125 when no capture\n"
         "could be made (the interposer was not loaded), 127 when the program was not\n"
         "found, 126 when it could not be run, 2 for a usage error.\n";
}

int RunCommand(int argc, char** argv) {
  RunOptions o;
  std::string error;
  for (int i = 1; i < argc && std::string(argv[i]) != "--"; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      fputs(RunUsage(), stdout);
      return 0;
    }
  }
  if (!ParseRunOptions(argc, argv, &o, &error)) return UsageError("run", error);
  if (const std::string why = CaptureNameProblem(o.output); !why.empty()) {
    return UsageError("run", absl::StrCat("cannot write the capture '", o.output, "': ", why));
  }

  std::string tried;
  const std::string preload = FindPreload(o.preload, &tried);
  if (preload.empty()) {
    fprintf(stderr,
            "memtrace run: cannot find libmemtrace_preload.so; looked in:%s\n"
            "Pass --preload=PATH or set MEMTRACE_PRELOAD.\n",
            tried.c_str());
    return kCaptureFailed;
  }
  if (!Readable(preload)) {
    fprintf(stderr, "memtrace run: the interposer '%s' does not exist or is not readable\n",
            preload.c_str());
    return kCaptureFailed;
  }
  const std::string program = ResolveProgram(o.command[0]);
  if (program.empty()) {
    fprintf(stderr, "memtrace run: '%s' was not found on PATH\n", o.command[0].c_str());
    return kProgramNotFound;
  }
  if (IsStaticElf(program)) {
    fprintf(stderr,
            "memtrace run: '%s' is statically linked; LD_PRELOAD cannot reach it, so it "
            "cannot be traced. Link it dynamically, or use the runtime API "
            "(runtime/tracer.h)\n",
            program.c_str());
    return kCaptureFailed;
  }

  if (char why[128]; LoaderIgnoresPreload(program.c_str(), why, sizeof(why))) {
    fprintf(stderr,
            "memtrace run: '%s' is %s: the dynamic loader runs it in secure mode and ignores "
            "LD_PRELOAD, so it cannot be traced. Run memtrace as that user, or trace a copy "
            "without the bit (cp, then chmod u-s,g-s)\n",
            program.c_str(), why);
    return kCaptureFailed;
  }
  if (const std::string why = CaptureDirectoryProblem(o.output); !why.empty()) {
    fprintf(stderr, "memtrace run: cannot write the capture '%s': %s\n", o.output.c_str(),
            why.c_str());
    return kCaptureFailed;
  }
  // A fixed path is overwritten by the run; remove it first so a stale capture from an
  // earlier run can never pass for this one. Unless a live process is writing it (it
  // holds the file's lock: sinks/capture_lock.h): removing that would lose its capture, and
  // this run's program would have to write elsewhere.
  // Only a regular file is removed: a device (/dev/null), a FIFO or a symbolic link is
  // written through as it is, and is no file to read back afterwards.
  bool read_back = true;
  if (o.output.find("%p") == std::string::npos) {
    if (CaptureBeingWritten(o.output)) {
      fprintf(stderr,
              "memtrace run: '%s' is being written by another traced process (it holds the "
              "file's lock); give this run another --output, or put %%p (the process id) in "
              "it\n",
              o.output.c_str());
      return kCaptureFailed;
    }
    struct stat at;
    if (lstat(o.output.c_str(), &at) == 0 && S_ISREG(at.st_mode)) unlink(o.output.c_str());
    struct stat target;
    read_back = stat(o.output.c_str(), &target) != 0 || S_ISREG(target.st_mode);
  }
  std::vector<std::string> env = ChildEnvironment(o, preload);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> args;
  for (std::string& a : o.command) args.push_back(a.data());
  args.push_back(nullptr);

  // Like time(1): keyboard signals go to the program, not to us while we wait for it.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  timespec started{};
  clock_gettime(CLOCK_REALTIME, &started);
  // The child writes execve()'s errno here if it fails; a successful exec closes the pipe
  // (O_CLOEXEC) and the parent reads nothing. So a program that cannot be run is told
  // apart from one that ran without the interposer.
  int exec_errors[2];
  if (pipe2(exec_errors, O_CLOEXEC) != 0) {
    fprintf(stderr, "memtrace run: pipe2 failed: %s\n", strerror(errno));
    return kCaptureFailed;
  }
  const pid_t child = fork();
  if (child < 0) {
    fprintf(stderr, "memtrace run: fork failed: %s\n", strerror(errno));
    close(exec_errors[0]);
    close(exec_errors[1]);
    return kCaptureFailed;
  }
  if (child == 0) {
    close(exec_errors[0]);
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    execve(program.c_str(), args.data(), envp.data());
    const int err = errno;
    while (write(exec_errors[1], &err, sizeof(err)) < 0 && errno == EINTR) {
    }
    _exit(err == ENOENT ? kProgramNotFound : kProgramNotRunnable);
  }
  close(exec_errors[1]);
  int exec_error = 0;
  ssize_t got;
  while ((got = read(exec_errors[0], &exec_error, sizeof(exec_error))) < 0 && errno == EINTR) {
  }
  close(exec_errors[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) {
      fprintf(stderr, "memtrace run: waitpid failed: %s\n", strerror(errno));
      return kCaptureFailed;
    }
  }
  if (got == static_cast<ssize_t>(sizeof(exec_error))) {
    fprintf(stderr, "memtrace run: cannot run '%s': %s\n", program.c_str(),
            ExecFailure(program, exec_error).c_str());
    // ENOENT for a file that is there: its #! interpreter (or its ELF one) is missing. It
    // was found and could not be run, as bash says too.
    const bool found = exec_error != ENOENT || access(program.c_str(), F_OK) == 0;
    return found ? kProgramNotRunnable : kProgramNotFound;
  }
  int exit_code = 0;
  std::string ended;
  if (WIFEXITED(status)) {
    exit_code = WEXITSTATUS(status);
    ended = absl::StrCat("exited with status ", exit_code);
  } else if (WIFSIGNALED(status)) {
    exit_code = 128 + WTERMSIG(status);
    ended = absl::StrCat("was killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)),
                         ")");
  }

  // The path the program's interposer opens: it is the first (root) traced process.
  const std::string capture = CapturePath(o.output, child, /*root_pid=*/0);
  if (!read_back) {
    if (!o.quiet) {
      fprintf(stderr, "memtrace run: '%s' %s; capture written to '%s', which is not a file "
              "to read back: no summary\n", o.command[0].c_str(), ended.c_str(),
              capture.c_str());
    }
    return exit_code;
  }
  if (absl::Status s = CheckHeader(capture); !s.ok()) {
    fprintf(stderr,
            "memtrace run: %s\nEither the interposer was not loaded into '%s' (which %s: a "
            "setuid program ignores LD_PRELOAD; check --preload and that the program is "
            "dynamically linked), or it could not create the capture (its own message "
            "above, if any, says why).\n",
            std::string(s.message()).c_str(), program.c_str(), ended.c_str());
    return exit_code != 0 ? exit_code : kCaptureFailed;
  }
  if (!o.quiet) {
    fprintf(stderr, "memtrace run: '%s' %s; capture: %s\n", o.command[0].c_str(),
            ended.c_str(), capture.c_str());
    fflush(stderr);
    PrintSummary({capture});
    std::string family_glob;  // the captures of every process, for the commands below
    // The capture the commands below read: the root process's, or where others were
    // written, that of the process whose memory rose highest (its trailer's high-water):
    // a launcher, a shell or a pyenv shim that runs the real program is small beside it.
    std::string busiest = capture;
    if (o.children || o.forks) {
      const std::vector<std::string> others = OtherCaptures(o.output, capture, started);
      auto high_water = [](const std::string& path) -> uint64_t {
        const std::optional<std::string> end =
            ReadCaptureFileEnds(path, /*with_header=*/false).trailer;
        const absl::StatusOr<TrailerBlocks> t =
            end ? ParseTrailer(*end) : absl::NotFoundError("no trailer");
        return t.ok() && t->has_totals ? t->totals.high_water_bytes : 0;
      };
      uint64_t most = high_water(capture);
      for (const std::string& other : others) {
        if (const uint64_t h = high_water(other); h > most) {
          most = h;
          busiest = other;
        }
      }
      if (!others.empty()) {
        // The glob, where it names this run's captures alone; captures an earlier run left
        // at these paths would join the family's sums, so then the files themselves.
        const timespec epoch{};
        const size_t matching =
            OtherCaptures(o.output, capture, epoch).size();
        family_glob = matching == others.size()
                          ? absl::StrCat(capture, "* ", OtherCapturesGlob(o.output))
                          : absl::StrCat(capture, " ", absl::StrJoin(others, " "));
        fprintf(stderr, "\nmemtrace run: %zu more capture%s, of the processes it %s; all %zu:\n\n",
                others.size(), others.size() == 1 ? "" : "s",
                o.forks && o.children ? "forked and ran" : (o.forks ? "forked" : "ran"),
                others.size() + 1);
        fflush(stderr);
        std::vector<std::string> family = {"--limit=20", capture};
        family.insert(family.end(), others.begin(), others.end());
        PrintSummary(family);
      }
    }
    // Where to look next: the summary has totals only. A capture with no events has
    // nothing more to show (the summary's note says why that may be).
    const std::optional<std::string> trailer =
        ReadCaptureFileEnds(capture, /*with_header=*/false).trailer;
    const absl::StatusOr<TrailerBlocks> t =
        trailer ? ParseTrailer(*trailer) : absl::NotFoundError("no trailer");
    if (family_glob.empty() && t.ok() && t->has_event_lines && t->event_lines == 0) {
      return exit_code;
    }
    std::vector<std::pair<std::string, std::string>> commands = {
        {absl::StrCat("memtrace top ", busiest),
         "call sites by bytes allocated (--by=live: what was left at exit)"},
        {absl::StrCat("memtrace peak ", busiest), "what held memory at the high-water moment"},
        {absl::StrCat("memtrace report ", busiest, " -o report.html"),
         "all of it as a page, with plots"}};
    if (busiest != capture) {
      fprintf(stderr, "\nmemtrace run: the process whose memory rose highest wrote %s; the "
                      "first commands below read it\n", busiest.c_str());
    }
    if (!family_glob.empty()) {
      commands.emplace_back(absl::StrCat("memtrace summary ", family_glob),
                            "the table of every process above, whole");
      commands.emplace_back(absl::StrCat("memtrace top ", family_glob),
                            "call sites added up over every process");
    }
    size_t width = 0;
    for (const auto& [command, what] : commands) width = std::max(width, command.size());
    fprintf(stderr, "\n");
    for (size_t i = 0; i < commands.size(); ++i) {
      fprintf(stderr, "%s %-*s  %s\n", i == 0 ? "next:" : "     ", static_cast<int>(width),
              commands[i].first.c_str(), commands[i].second.c_str());
    }
  }
  return exit_code;
}

}  // namespace memtrace
