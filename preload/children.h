// Copyright 2026 The memtrace Authors.
//
// children.h: the programs this one runs. By default they run untraced: this library
// leaves LD_PRELOAD (RemoveFromPreload). With MEMTRACE_TRACE_CHILDREN=1 every exec and
// posix_spawn keeps it, and the MEMTRACE_ settings, in the new program's environment
// (ChildEnvironment). Either way an exec finishes this process's capture first
// (BeforeExec).
//
// Thread safety: child_tracing is set once by Start(), before any thread of the program
// can exec, and read-only afterwards (also in a vfork()ed child).

#ifndef MEMTRACE_PRELOAD_CHILDREN_H_
#define MEMTRACE_PRELOAD_CHILDREN_H_

#include <errno.h>
#include <sys/mman.h>

#include <cstddef>
#include <string>
#include <vector>

#include "preload/interposer_state.h"
#include "preload/preload_config.h"

// Hidden: shared by the interposer's files, never exported (exports.lds).
#pragma GCC visibility push(hidden)

namespace memtrace::preload_internal {

// The environment array the program's main() is given, from this library's constructor
// (glibc passes argc, argv and envp to constructors): a program like bash builds the
// environment of the commands it runs from it, not from `environ`.
extern char** initial_environment;

// What every LD_PRELOAD entry naming this library contains, whatever its directory.
inline constexpr char kLibraryMarker[] = "libmemtrace_preload";

// Removes this library from LD_PRELOAD, so programs this one execs run untraced: in the
// array main() gets and in `environ`, should an earlier constructor have replaced it
// (preload_config.h, DropFromPreload: why not unsetenv(); and a copy under another name).
// A copy not named libmemtrace_preload is removed too; left in, every program this one
// runs would trace itself too.
void RemoveFromPreload();

// With children traced: what a program this one runs needs in its environment to be
// traced too (preload_config.h, BuildTracingEnvironment): this library's absolute path,
// and the MEMTRACE_ settings this process started with. Set once by Start(), before any
// thread of the program can exec; read-only afterwards (also in a vfork()ed child). Null
// when children are not traced.
struct ChildTracing {
  std::string library;                // absolute
  std::vector<std::string> settings;  // "MEMTRACE_NAME=value"
  std::vector<const char*> pointers;  // into `settings`, null-terminated
};
extern ChildTracing* child_tracing;

// Keeps what KeepChildTracing() needs for programs this one runs (Start(), with
// children traced).
void KeepChildTracing(int root_pid);

// With children traced: says on stderr that the program about to be run will not be
// (the loader ignores LD_PRELOAD for it: LoaderIgnoresPreload), so that its missing
// capture is not silent. `file` is a path, or a name searched in $PATH as execvp() does.
// No allocation (a vfork()ed child may call it); errno is kept for the caller.
void WarnIfLoaderIgnoresPreload(const char* file) noexcept;

// The environment to hand a program this one execs or spawns: `envp` itself, or, with
// children traced and `envp` lacking what tracing needs (an empty environment, another
// LD_PRELOAD), a copy with it (BuildTracingEnvironment). Never on the heap: an exec may
// come from a vfork()ed child, which shares its parent's heap. In this object (on the
// caller's stack) when it fits, as an emptied environment does; otherwise in pages mapped
// for it, unmapped when this goes out of scope (exec failed, or posix_spawn returned).
// (A vfork()ed child that execs leaves such pages mapped in its parent, whose address
// space it shares: hence the stack first.) errno is kept for the caller.
class ChildEnvironment {
 public:
  explicit ChildEnvironment(char* const* envp) noexcept : env_(envp) {
    const ChildTracing* c = child_tracing;
    if (c == nullptr) return;
    const auto* given = const_cast<const char* const*>(envp);
    const TracingEnvironmentSize size = MeasureTracingEnvironment(
        given, c->library, kLibraryMarker, c->pointers.data());
    if (!size.changes) return;
    const size_t bytes = size.entries * sizeof(char*) + size.bytes;
    void* mem = local_;
    if (bytes > sizeof(local_)) {
      if (real.mmap == nullptr || real.munmap == nullptr) return;
      mem = real.mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                      0);
      if (mem == MAP_FAILED) return;  // the program's own environment, as it asked
      mapped_ = mem;
      mapped_bytes_ = bytes;
    }
    auto** entries = static_cast<const char**>(mem);
    BuildTracingEnvironment(given, c->library, kLibraryMarker, c->pointers.data(),
                            entries, reinterpret_cast<char*>(entries + size.entries));
    env_ = const_cast<char* const*>(entries);
  }
  ~ChildEnvironment() {
    if (mapped_ == nullptr) return;
    const int saved = errno;
    real.munmap(mapped_, mapped_bytes_);
    errno = saved;
  }
  ChildEnvironment(const ChildEnvironment&) = delete;
  ChildEnvironment& operator=(const ChildEnvironment&) = delete;

  char* const* get() const noexcept { return env_; }

 private:
  char* const* env_;
  void* mapped_ = nullptr;
  size_t mapped_bytes_ = 0;
  // An emptied environment takes about 250 bytes (LD_PRELOAD and a dozen settings); one
  // of 200 variables fits.
  alignas(alignof(char*)) char local_[2048];
};

// Before an exec: the capture is finished ("ended_by":"exec"), naming `target`.
void BeforeExec(const char* target);

// fexecve() and execveat() of a descriptor: the trailer names the file the descriptor is
// open on, as /proc says.
void BeforeExecOfDescriptor(int fd);

}  // namespace memtrace::preload_internal

#pragma GCC visibility pop

#endif  // MEMTRACE_PRELOAD_CHILDREN_H_
