// Copyright 2026 The memtrace Authors.
//
// interposer_state.h: libmemtrace_preload.so, which traces an unmodified program's heap.
//
// Loaded with LD_PRELOAD (`memtrace run -- program`), it defines the malloc family, so the
// dynamic linker binds the program's (and its libraries') calls here; each call goes on to
// the next definition (glibc's, or whatever allocator follows) found with
// dlsym(RTLD_NEXT), and is recorded into a Tracer (runtime/tracer.h) on the "interposer"
// layer, with the call stack (unwind.h). A JsonlSink writes the capture.
//
// Interposed: malloc, free, calloc, realloc, reallocarray, posix_memalign, aligned_alloc,
// memalign, valloc, pvalloc, malloc_usable_size, the exec family, mmap, mmap64, munmap
// and mremap, and __cxa_atexit (only passed on, to tell whose exit handlers make glibc
// allocate: exit_handlers.h). The mapping calls are recorded only with
// MEMTRACE_MMAP=1, on a layer of their own ("mmap"), and only for anonymous mappings:
// mappings.h turns holes, MAP_FIXED and mremap into block operations; mappings made
// before tracing starts are not known, and their unmapping is ignored like a file
// mapping's. C++ operator new/delete are not interposed: libstdc++ implements every
// variant (sized, aligned, nothrow, arrays) with malloc, aligned_alloc and free, which
// reach the functions here through the PLT (tests/preload_target.cc calls each variant;
// tests/preload_counts_test.cc checks the capture against its counts).
//
// The corners:
//   - Bootstrap: dlsym() may allocate before the real functions are known. Those
//     requests are served from a static buffer, never freed, never passed on.
//   - Reentrancy: anything memtrace itself allocates (the first record of a thread binds
//     a ring; the drainer and the sink's writer are marked internal) runs with the
//     thread's reentrancy flag set and goes straight to the real allocator, untraced.
//   - Before the tracer starts: what the program allocates and releases before this
//     library's constructor runs (the program's libraries' constructors run first) is
//     logged in order, with the stacks, and recorded in that order when tracing starts,
//     so the capture has those calls and their later frees match (bounded: see
//     prestart.h; what the log drops is counted in the trailer). What the libraries
//     loaded only for this one allocated then is left out (own_libraries.h).
//   - Exit handlers: glibc's list of them takes a block from malloc for each 32 beyond
//     its first 32, and memtrace's own objects can fill those 32 on their own. A block
//     glibc takes while one of memtrace's objects registers a handler is memtrace's, left
//     out like the rest (see exit_handlers.h); one it takes for the program's own
//     registration is the program's.
//   - Thread exit: handled by the runtime (a thread's ring is retired and drained).
//   - fork(): by default the child runs untraced (documented): its copy of the tracer has
//     no drainer thread, and its heap is a copy of the parent's, already recorded. It
//     closes its copy of the capture file's descriptor (the file's lock goes with the
//     parent's). A child that execs is traced again when MEMTRACE_TRACE_CHILDREN=1, into
//     its own capture. With MEMTRACE_TRACE_FORKS=1 the child traces on into a capture of
//     its own that starts with the blocks live in the parent at the fork, at the stacks
//     the parent allocated them at (see fork.h).
//   - Children not traced (the default): this library leaves LD_PRELOAD by rewriting the
//     environment array main() gets, never through the program's unsetenv() (bash has
//     its own; preload_config.h, DropFromPreload). A process that finds its capture path
//     locked by another (JsonlSink::Open) writes "NAME.<pid>.EXT" instead and says so.
//   - _exit() and _Exit(): the capture is finished first ("ended_by":"_exit") by a thread
//     of memtrace's kept for it, waited for at most 3 s, so that a call from a signal
//     handler that interrupted malloc cannot hang the process.
//   - dlclose(): the loaded modules are noted before an object may be unmapped, so call
//     sites in a plugin the program unloaded still symbolize.
//   - exec: the capture is finished (trailer "ended_by":"exec", and "exec": the program
//     named) before the process image is replaced; if exec fails the process goes on
//     untraced. With MEMTRACE_TRACE_CHILDREN=1 every exec and posix_spawn keeps this
//     library and the MEMTRACE_ settings in the new program's environment, should the
//     program hand it one without them (ChildEnvironment).
//   - Process exit, through exit() from any thread or a return from main: this library's
//     destructor stops the tracer and writes the trailer. The tracer is never destroyed,
//     so threads still running during exit keep calling into valid (stopped) state.
//   - A fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) with no handler of the
//     program's own: best effort, the capture is drained and finished with
//     "ended_by":"signal N" and marked partial, then the signal is raised again. An
//     alarm bounds this, so a crash inside the allocator cannot hang the process.
//   - A signal sent to stop the program (SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE,
//     SIGUSR1, SIGUSR2) with no handler of the program's: the capture is finished,
//     complete, with "ended_by":"signal N" (by memtrace-exit, as for _exit()), then the
//     signal is raised again. The handler stands in for the default action, also when
//     the program asks for the default itself (sigaction() and signal(): finish.h).
//
// Overflow: a record that cannot be written (the thread's ring stayed full past the
// bounded wait) never fails the program's malloc; the loss is counted in the capture's
// integrity (failed_records) and the capture is partial.

//
// The files (all in the one target, //preload:libmemtrace_preload.so, compiled as one
// translation unit: interposer.cc says why):
//   interposer_state.h/.inc  the state every part shares: the real functions, the phase,
//                            the settings the hot path reads, the sink, memtrace's blocks
//   bootstrap.h/.inc         allocations served while dlsym() runs; looking up the real
//                            functions
//   prestart.h/.inc          the log of what the program did before tracing started
//   record.h/.inc            recording the malloc family (the hot path, inline in record.h)
//   start.h/.inc             the constructor: reading the settings, opening the capture
//   finish.h/.inc            the trailer: exit, _exit() and _Exit(), signals, unshare()
//   fork.h/.inc              fork() and MEMTRACE_TRACE_FORKS
//   children.h/.inc          exec, posix_spawn and the environment of programs run
//   mmap_layer.inc           the mapping calls (MEMTRACE_MMAP=1), exported ones included
//   exit_handlers.h/.inc     __cxa_atexit(): whose registrations make glibc allocate
//   exports.inc              the other exported (interposed) functions
//   markers.inc              what include/memtrace/markers.h calls: scopes, named layers
//                            and census values from the program
//
// Thread safety: each declaration below says who writes it and how it is read.

#ifndef MEMTRACE_PRELOAD_INTERPOSER_STATE_H_
#define MEMTRACE_PRELOAD_INTERPOSER_STATE_H_

#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "preload/filter_counts.h"
#include "preload/internal_blocks.h"
#include "preload/mappings.h"
#include "preload/preload_config.h"
#include "runtime/layer_table.h"
#include "runtime/tracer.h"
#include "sinks/jsonl_sink.h"

// Hidden: shared by the interposer's files, never exported (exports.lds).
#pragma GCC visibility push(hidden)

namespace memtrace::preload_internal {

constexpr LayerId kLayer = layers::kInterposer;

using MallocFn = void* (*)(size_t);
using FreeFn = void (*)(void*);
using CallocFn = void* (*)(size_t, size_t);
using ReallocFn = void* (*)(void*, size_t);
using MemalignFn = void* (*)(size_t, size_t);
using PosixMemalignFn = int (*)(void**, size_t, size_t);
using UsableSizeFn = size_t (*)(void*);
using ExecveFn = int (*)(const char*, char* const[], char* const[]);
using ExecvpeFn = int (*)(const char*, char* const[], char* const[]);
using FexecveFn = int (*)(int, char* const[], char* const[]);
using ExecveatFn = int (*)(int, const char*, char* const[], char* const[], int);
using PosixSpawnFn = int (*)(pid_t*, const char*, const posix_spawn_file_actions_t*,
                             const posix_spawnattr_t*, char* const[], char* const[]);
using MmapFn = void* (*)(void*, size_t, int, int, int, off_t);
using MunmapFn = int (*)(void*, size_t);
using MremapFn = void* (*)(void*, size_t, size_t, int, ...);
using DlcloseFn = int (*)(void*);
using ExitFn = void (*)(int);
using GetattrFn = int (*)(pthread_t, pthread_attr_t*);
using UnshareFn = int (*)(int);
using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
using SignalFn = sighandler_t (*)(int, sighandler_t);
// noexcept (glibc's never throws), so that a noexcept caller can pass a call on with a
// jump instead of keeping its frame for std::terminate().
using CxaAtexitFn = int (*)(void (*)(void*), void*, void*) noexcept;

struct RealFunctions {
  MallocFn malloc;
  FreeFn free;
  CallocFn calloc;
  ReallocFn realloc;
  MemalignFn memalign;
  PosixMemalignFn posix_memalign;
  MemalignFn aligned_alloc;
  MallocFn valloc;
  MallocFn pvalloc;
  UsableSizeFn malloc_usable_size;
  ExecveFn execve;
  ExecvpeFn execvpe;
  FexecveFn fexecve;
  ExecveatFn execveat;  // glibc 2.34 and later
  PosixSpawnFn posix_spawn;
  PosixSpawnFn posix_spawnp;
  MmapFn mmap;
  MunmapFn munmap;
  MremapFn mremap;
  DlcloseFn dlclose;
  ExitFn _exit;
  ExitFn _Exit;
  GetattrFn pthread_getattr_np;
  UnshareFn unshare;
  CxaAtexitFn cxa_atexit;
  SigactionFn sigaction;
  SignalFn signal;
  SignalFn bsd_signal;
  SignalFn sysv_signal;
  SignalFn sigset;
};

extern RealFunctions real;
// 0: not resolved, 1: resolving (dlsym is running), 2: resolved. Acquire/release: a
// thread that sees 2 sees every pointer in `real`.
extern std::atomic<int> resolve_state;

// Resolved()'s first call: looks the real functions up (bootstrap.inc).
bool ResolveOnce() noexcept;

// True once the real functions are known; false while they are being looked up (the
// caller serves the request from the bootstrap buffer). Inlined into every interposed
// function: after start-up, one load and a branch.
__attribute__((always_inline)) inline bool Resolved() noexcept {
  // Acquire: pairs with the release store in ResolveOnce(); the caller then reads `real`.
  if (__builtin_expect(resolve_state.load(std::memory_order_acquire) == 2, 1)) return true;
  return ResolveOnce();
}

// ---- Tracing state -------------------------------------------------------------------

enum Phase : int { kBeforeStart, kTracing, kFinished, kDisabled };

// Acquire/release: a thread that loads a non-null tracer sees it fully started (the
// constructor's release store). Only ever set once, and cleared at the end; the Tracer
// itself is never destroyed.
extern std::atomic<Tracer*> active_tracer;
extern std::atomic<int> phase;
// What the hot path reads, set by Start(). Plain data with constant initialization: a
// global with a constructor or destructor would run after Start() (constructor priority
// 101 comes first) or during exit while other threads still allocate.
struct Settings {
  uint64_t min_size;
  uint32_t stack_depth;
  UnwindMethod unwind;
  uint64_t sample_bytes;  // 0: no sampling
  bool mmap;              // the mmap layer is on (MEMTRACE_MMAP)
  LayerId mmap_layer;
};
extern constinit Settings config;
extern JsonlSink* sink;
// The mmap layer's table of the program's anonymous mappings (mappings.h), set by Start()
// when MEMTRACE_MMAP=1. The mutex is held across each mapping call and its records, so
// the table follows the kernel and every mmap-layer record of an address range is
// ordered after the one that released it. (Mapping calls are system calls; unlike malloc
// they take this lock.)
extern std::mutex mappings_mu;
extern preload_internal::MappingTable* mappings;
extern pid_t traced_pid;
// This library's executable segment, for unwinding.
extern uint64_t own_code_begin;
extern uint64_t own_code_end;

inline uint64_t Addr(const void* p) noexcept { return reinterpret_cast<uint64_t>(p); }

// What memtrace allocated on the program's threads (internal_blocks.h).
extern constinit preload_internal::InternalBlocks internal_blocks;
// With sampling: the live blocks that were sampled, whose releases are recorded.
extern constinit preload_internal::SampledBlocks sampled_blocks;
// What the minimum size and sampling left out (filter_counts.h), for the trailer.
extern constinit preload_internal::FilterCounts filter_counts;
// Blocks the program holds whose allocation record was lost (record.h, LeaveOut()), for
// the trailer (`left_out_blocks`): the capture lacks them, so its peaks are not known.
extern std::atomic<uint64_t> left_out_blocks;
// Blocks reported through the markers whose allocation record was lost (markers.inc):
// left out with their releases, as LeaveOut() leaves out malloc's; counted above.
extern constinit preload_internal::LeftOutMarkedBlocks left_out_marked;

// Where an interposed call came from, captured in the exported function itself.
struct Caller {
  const void* frame;
  uint64_t ret;
};
#define MEMTRACE_CALLER()                                       \
  ::memtrace::preload_internal::Caller {                        \
    __builtin_frame_address(0),                                 \
        reinterpret_cast<uint64_t>(__builtin_return_address(0)) \
  }

// Writes `text` to stderr, as memtrace's own (no allocation of it is recorded).
void WriteStderr(const std::string& text);

// An interposed function, exported (exports.lds lists them): exports.inc, mmap_layer.inc.
#define MEMTRACE_EXPORT extern "C" __attribute__((visibility("default")))

}  // namespace memtrace::preload_internal

#pragma GCC visibility pop

#endif  // MEMTRACE_PRELOAD_INTERPOSER_STATE_H_
