// Copyright 2026 The memtrace Authors.
//
// interposer.cc: libmemtrace_preload.so, which traces an unmodified program's heap.
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
// allocate: "Exit handlers" below). The mapping calls are recorded only with
// MEMTRACE_MMAP=1, on a layer of their own ("mmap"), and only for anonymous mappings:
// mappings.h turns holes, MAP_FIXED and mremap into block operations; mappings made
// before tracing starts are not known, and their unmapping is ignored like a file
// mapping's. C++ operator new/delete are not interposed: libstdc++ implements every
// variant (sized, aligned, nothrow, arrays) with malloc, aligned_alloc and free, which
// reach the functions here through the PLT (tests/preload_test.cc checks each variant).
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
//     "kPrestartOps"; what the log drops is counted in the trailer). What the libraries
//     loaded only for this one allocated then is left out (own_libraries.h).
//   - Exit handlers: glibc's list of them takes a block from malloc for each 32 beyond
//     its first 32, and memtrace's own objects can fill those 32 on their own. A block
//     glibc takes while one of memtrace's objects registers a handler is memtrace's, left
//     out like the rest (see "Exit handlers" below); one it takes for the program's own
//     registration is the program's.
//   - Thread exit: handled by the runtime (a thread's ring is retired and drained).
//   - fork(): by default the child runs untraced (documented): its copy of the tracer has
//     no drainer thread, and its heap is a copy of the parent's, already recorded. It
//     closes its copy of the capture file's descriptor (the file's lock goes with the
//     parent's). A child that execs is traced again when MEMTRACE_TRACE_CHILDREN=1, into
//     its own capture. With MEMTRACE_TRACE_FORKS=1 the child traces on into a capture of
//     its own that starts with the blocks live in the parent at the fork, at the stacks
//     the parent allocated them at (see "fork()" below, before Start()).
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
//     signal is raised again.
//
// Overflow: a record that cannot be written (the thread's ring stayed full past the
// bounded wait) never fails the program's malloc; the loss is counted in the capture's
// integrity (failed_records) and the capture is partial.

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <linux/futex.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "preload/byte_sampler.h"
#include "preload/filter_counts.h"
#include "preload/internal_blocks.h"
#include "preload/mappings.h"
#include "preload/own_libraries.h"
#include "preload/preload_config.h"
#include "preload/unwind.h"
#include "runtime/internal/thread_state.h"
#include "runtime/layer_table.h"
#include "runtime/memtrace_thread.h"
#include "runtime/allocation_record.h"
#include "runtime/module_map.h"
#include "runtime/scope_table.h"
#include "runtime/span.h"
#include "runtime/tracer.h"
#include "sinks/json_text.h"
#include "sinks/jsonl_sink.h"
#include "transport/event.h"
#include "transport/fibonacci_index.h"

// This library's dso handle (crtbeginS.o): what its C++ globals' exit handlers are
// registered with (RegisterExitHandler()).
extern "C" void* __dso_handle __attribute__((visibility("hidden")));

namespace memtrace {
namespace {

constexpr char kVersion[] = "0.1.0";
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
};

RealFunctions real;
// 0: not resolved, 1: resolving (dlsym is running), 2: resolved. Acquire/release: a
// thread that sees 2 sees every pointer in `real`.
std::atomic<int> resolve_state{0};

// ---- Bootstrap buffer ----------------------------------------------------------------

constexpr size_t kBootstrapBytes = size_t{1} << 20;
alignas(4096) char bootstrap[kBootstrapBytes];
std::atomic<size_t> bootstrap_used{0};  // relaxed: only the offset is shared

bool IsBootstrap(const void* p) noexcept {
  const auto a = reinterpret_cast<uintptr_t>(p);
  const auto b = reinterpret_cast<uintptr_t>(bootstrap);
  return a >= b && a < b + kBootstrapBytes;
}

// Zeroed memory (the buffer is never reused), with its size in the 16 bytes before it.
void* BootstrapAlloc(size_t n, size_t alignment) noexcept {
  if (alignment < 16) alignment = 16;
  const size_t need = n + alignment + 16;
  const size_t at = bootstrap_used.fetch_add(need, std::memory_order_relaxed);
  if (at + need > kBootstrapBytes) {
    static const char kMessage[] = "memtrace: the bootstrap buffer ran out before the real "
                                   "allocator was found\n";
    (void)!write(2, kMessage, sizeof(kMessage) - 1);
    return nullptr;
  }
  uintptr_t user = reinterpret_cast<uintptr_t>(bootstrap + at) + 16;
  user = (user + alignment - 1) & ~(alignment - 1);
  reinterpret_cast<size_t*>(user)[-1] = n;
  return reinterpret_cast<void*>(user);
}

size_t BootstrapSize(const void* p) noexcept { return static_cast<const size_t*>(p)[-1]; }

template <typename Fn>
void Resolve(Fn* out, const char* name) {
  *out = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

// Resolved()'s first call: looks the real functions up.
__attribute__((noinline)) bool ResolveOnce() noexcept {
  int expected = 0;
  if (!resolve_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    return expected == 2;  // 1: another call (or dlsym itself) is resolving
  }
  Resolve(&real.malloc, "malloc");
  Resolve(&real.free, "free");
  Resolve(&real.calloc, "calloc");
  Resolve(&real.realloc, "realloc");
  Resolve(&real.memalign, "memalign");
  Resolve(&real.posix_memalign, "posix_memalign");
  Resolve(&real.aligned_alloc, "aligned_alloc");
  Resolve(&real.valloc, "valloc");
  Resolve(&real.pvalloc, "pvalloc");
  Resolve(&real.malloc_usable_size, "malloc_usable_size");
  Resolve(&real.execve, "execve");
  Resolve(&real.execvpe, "execvpe");
  Resolve(&real.fexecve, "fexecve");
  Resolve(&real.execveat, "execveat");
  Resolve(&real.posix_spawn, "posix_spawn");
  Resolve(&real.posix_spawnp, "posix_spawnp");
  Resolve(&real.mmap, "mmap");
  Resolve(&real.munmap, "munmap");
  Resolve(&real.mremap, "mremap");
  Resolve(&real.dlclose, "dlclose");
  Resolve(&real._exit, "_exit");
  Resolve(&real._Exit, "_Exit");
  Resolve(&real.pthread_getattr_np, "pthread_getattr_np");
  Resolve(&real.unshare, "unshare");
  Resolve(&real.cxa_atexit, "__cxa_atexit");
  if (real.malloc == nullptr || real.free == nullptr || real.calloc == nullptr ||
      real.realloc == nullptr) {
    static const char kMessage[] =
        "memtrace: no malloc/free after libmemtrace_preload.so in the lookup order\n";
    (void)!write(2, kMessage, sizeof(kMessage) - 1);
    abort();
  }
  resolve_state.store(2, std::memory_order_release);
  return true;
}

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
std::atomic<Tracer*> active_tracer{nullptr};
std::atomic<int> phase{kBeforeStart};
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
constinit Settings config{0, 0, UnwindMethod::kFramePointers, 0, false, 0};
JsonlSink* sink = nullptr;
// The mmap layer's table of the program's anonymous mappings (mappings.h), set by Start()
// when MEMTRACE_MMAP=1. The mutex is held across each mapping call and its records, so
// the table follows the kernel and every mmap-layer record of an address range is
// ordered after the one that released it. (Mapping calls are system calls; unlike malloc
// they take this lock.)
std::mutex mappings_mu;
preload_internal::MappingTable* mappings = nullptr;
pid_t traced_pid = 0;
uint64_t own_code_begin = 0;  // this library's executable segment, for unwinding
uint64_t own_code_end = 0;
// The libraries loaded only for this one (own_libraries.h), found on first need
// (OwnLibraries()); null until then. Never freed: exit handlers are registered until the
// process ends.
std::atomic<const std::vector<preload_internal::CodeRange>*> own_libraries{nullptr};
std::atomic<bool> own_libraries_looked_up{false};  // a look-up is under way or done

// The libraries loaded only for this one, or null while another call looks them up. The
// first call does: the first exit handler's registration (the loader has loaded and
// relocated every object before any constructor runs, so the answer does not change
// later), or the start. It allocates, as memtrace's own.
const std::vector<preload_internal::CodeRange>* OwnLibraries() {
  // Acquire: pairs with the release store below; the vector is whole before it is seen.
  if (const auto* ours = own_libraries.load(std::memory_order_acquire)) return ours;
  // Relaxed: only elects the one caller that looks up, so that a registration made by
  // code the look-up calls cannot start another; the others go without for that moment.
  if (own_libraries_looked_up.exchange(true, std::memory_order_relaxed)) return nullptr;
  runtime_internal::ReentrancyGuard guard;  // what the look-up allocates is memtrace's
  const auto* found = new std::vector<preload_internal::CodeRange>(
      preload_internal::LibrariesOnlyOursNeed(&__dso_handle));
  // Release: publishes the whole vector; pairs with the acquire load above.
  own_libraries.store(found, std::memory_order_release);
  return found;
}

// Allocations and releases made before tracing started (in other libraries'
// constructors, which the loader runs before this one's), logged in order and recorded
// in that order when it starts: each allocation at the stack it was made from, each
// release after it. So the capture has every call of those constructors, and its replay
// (and the ledger) their high-water mark too. Stacks are walked by the unwind tables
// whatever MEMTRACE_UNWIND says (the settings are read when tracing starts),
// kPrestartDepth frames at most, cut to MEMTRACE_STACK_DEPTH then; each distinct stack is
// kept once (past 6,144 of them or kPrestartFrameCapacity frames in all, a block gets no
// stack: "no call site"). Bounds: kPrestartLive blocks live at once (past that a block
// is not remembered, and its release counts as an unknown free: prestart_untracked), and
// kPrestartOps operations in the log; when it fills, the blocks it holds that were
// released again are dropped from it and only counted (prestart_freed), and the log
// goes on.
constexpr size_t kPrestartOps = 131072;
constexpr size_t kPrestartLive = 16384;
constexpr size_t kPrestartLiveSlots = 2 * kPrestartLive;  // the live blocks' index
constexpr uint32_t kPrestartDepth = 32;
constexpr size_t kPrestartFrameCapacity = 65536;
constexpr size_t kPrestartStackSlots = 8192;  // distinct stacks, at most 3/4 of these
constexpr uint32_t kNoPrestartStack = ~uint32_t{0};
static_assert(kPrestartDepth <= kMaxPreloadStackDepth);
static_assert((kPrestartLiveSlots & (kPrestartLiveSlots - 1)) == 0);
static_assert((kPrestartStackSlots & (kPrestartStackSlots - 1)) == 0);
static_assert(kPrestartOps <= ~uint32_t{0});

struct PrestartOp {
  uintptr_t address;
  uint64_t size;    // an allocation's size as asked
  uint64_t usable;  // an allocation's usable size, for MEMTRACE_MIN_SIZE
  // An allocation's stack (prestart_stacks), or kNoPrestartStack; a release's allocation
  // (its index in the log).
  uint32_t ref;
  bool release;
  bool freed;     // an allocation released again later in the log
  bool recorded;  // an allocation Start() recorded (the minimum size and sampling let it)
};
PrestartOp prestart_ops[kPrestartOps];
size_t prestart_op_count = 0;
// The live allocations' places in the log (index + 1; 0: an empty slot), by address:
// linear probing, deletion by shifting back.
uint32_t prestart_live[kPrestartLiveSlots];
size_t prestart_live_count = 0;
uint64_t prestart_overflow = 0;
// Allocations released again before tracing started that the log had to drop: counted
// in the trailer, never in the capture.
uint64_t prestart_freed = 0;
uint64_t prestart_freed_bytes = 0;

struct PrestartStack {
  uint64_t hash;
  uint32_t frames_at;  // prestart_frames[frames_at, frames_at + depth)
  uint32_t depth;      // 0: an empty slot
};
PrestartStack prestart_stacks[kPrestartStackSlots];
size_t prestart_stack_count = 0;
uint64_t prestart_frames[kPrestartFrameCapacity];
size_t prestart_frames_used = 0;
// A spin lock: taken only before tracing starts (and once by the constructor).
std::atomic_flag prestart_lock = ATOMIC_FLAG_INIT;

class PrestartLock {
 public:
  PrestartLock() noexcept {
    // Acquire: pairs with the release in the destructor of the previous holder.
    while (prestart_lock.test_and_set(std::memory_order_acquire)) sched_yield();
  }
  ~PrestartLock() { prestart_lock.clear(std::memory_order_release); }
};

// The stack `frames[0, depth)` in the table (added if new), or kNoPrestartStack when the
// table or the frame pool is full. Under the lock.
uint32_t PrestartStackId(const uint64_t* frames, uint32_t depth) noexcept {
  uint64_t hash = depth;
  for (uint32_t i = 0; i < depth; ++i) hash = (hash ^ frames[i]) * 0x9e3779b97f4a7c15ull;
  for (size_t i = FibonacciIndex(hash, std::countr_zero(kPrestartStackSlots));;
       i = (i + 1) & (kPrestartStackSlots - 1)) {
    PrestartStack& s = prestart_stacks[i];
    if (s.depth == 0) {
      if (prestart_stack_count >= kPrestartStackSlots / 4 * 3 ||
          prestart_frames_used + depth > kPrestartFrameCapacity) {
        return kNoPrestartStack;
      }
      memcpy(&prestart_frames[prestart_frames_used], frames, depth * sizeof(uint64_t));
      s = PrestartStack{hash, static_cast<uint32_t>(prestart_frames_used), depth};
      prestart_frames_used += depth;
      ++prestart_stack_count;
      return static_cast<uint32_t>(i);
    }
    if (s.hash == hash && s.depth == depth &&
        memcmp(&prestart_frames[s.frames_at], frames, depth * sizeof(uint64_t)) == 0) {
      return static_cast<uint32_t>(i);
    }
  }
}

size_t PrestartLiveHome(uintptr_t address) noexcept {
  return FibonacciIndex(address, std::countr_zero(kPrestartLiveSlots));
}

void PrestartLiveInsert(uintptr_t address, uint32_t op) noexcept {
  size_t i = PrestartLiveHome(address);
  while (prestart_live[i] != 0) i = (i + 1) & (kPrestartLiveSlots - 1);
  prestart_live[i] = op + 1;
  ++prestart_live_count;
}

// Removes the live allocation at `address` from the index; its place in the log, or -1
// when none is remembered there.
int64_t PrestartLiveErase(uintptr_t address) noexcept {
  size_t i = PrestartLiveHome(address);
  for (;; i = (i + 1) & (kPrestartLiveSlots - 1)) {
    if (prestart_live[i] == 0) return -1;
    if (prestart_ops[prestart_live[i] - 1].address == address) break;
  }
  const int64_t op = prestart_live[i] - 1;
  // Shift back the entries after it that would no longer be found past the hole.
  size_t hole = i;
  for (size_t j = (i + 1) & (kPrestartLiveSlots - 1); prestart_live[j] != 0;
       j = (j + 1) & (kPrestartLiveSlots - 1)) {
    const size_t home = PrestartLiveHome(prestart_ops[prestart_live[j] - 1].address);
    // Movable when its home is not in (hole, j], cyclically.
    if (((j - home) & (kPrestartLiveSlots - 1)) >= ((j - hole) & (kPrestartLiveSlots - 1))) {
      prestart_live[hole] = prestart_live[j];
      hole = j;
    }
  }
  prestart_live[hole] = 0;
  --prestart_live_count;
  return op;
}

// The log is full: drops the allocations released again, and their releases, counting
// them, and keeps the live ones in their order. Under the lock.
void CompactPrestartLog() noexcept {
  size_t kept = 0;
  for (size_t i = 0; i < prestart_op_count; ++i) {
    const PrestartOp& op = prestart_ops[i];
    if (op.release) continue;
    if (op.freed) {
      ++prestart_freed;
      prestart_freed_bytes += op.size;
      continue;
    }
    prestart_ops[kept++] = op;
  }
  prestart_op_count = kept;
  memset(prestart_live, 0, sizeof(prestart_live));
  prestart_live_count = 0;
  for (size_t i = 0; i < kept; ++i) {
    PrestartLiveInsert(prestart_ops[i].address, static_cast<uint32_t>(i));
  }
}

// Before start: logs the allocation of block `p` (`n` bytes asked, `usable` given) made
// at the stack `frames[0, depth)` (at least one frame). Returns false when tracing has
// started meanwhile (the caller records normally).
bool PrestartAdd(void* p, size_t n, size_t usable, const uint64_t* frames,
                 uint32_t depth) noexcept {
  PrestartLock lock;
  if (phase.load(std::memory_order_relaxed) != kBeforeStart) return false;
  if (prestart_live_count >= kPrestartLive) {
    ++prestart_overflow;
    return true;
  }
  if (prestart_op_count == kPrestartOps) CompactPrestartLog();
  const auto op = static_cast<uint32_t>(prestart_op_count++);
  prestart_ops[op] = PrestartOp{reinterpret_cast<uintptr_t>(p), n, usable,
                                PrestartStackId(frames, depth), false, false, false};
  PrestartLiveInsert(reinterpret_cast<uintptr_t>(p), op);
  return true;
}

// Before start: logs the release of block `p`, if its allocation is in the log (one that
// is not was never recorded, as for any untracked block). Returns false when tracing has
// started meanwhile (the caller records normally).
bool PrestartRemove(void* p) noexcept {
  PrestartLock lock;
  if (phase.load(std::memory_order_relaxed) != kBeforeStart) return false;
  const int64_t alloc = PrestartLiveErase(reinterpret_cast<uintptr_t>(p));
  if (alloc < 0) return true;
  prestart_ops[alloc].freed = true;
  if (prestart_op_count == kPrestartOps) {
    CompactPrestartLog();  // which drops this block with the others released
    return true;
  }
  prestart_ops[prestart_op_count++] = PrestartOp{reinterpret_cast<uintptr_t>(p), 0, 0,
                                                 static_cast<uint32_t>(alloc), true, false,
                                                 false};
  return true;
}

// Before start: logs the program's new block `p` with the stack of the interposed call
// whose frame and return address are `frame` and `ret`, the return address alone where
// the unwind tables give no stack (and while dlsym() runs: the thread's stack bounds
// cannot be asked for yet). False when tracing has started meanwhile. Not inlined: the
// interposed functions keep only a call.
__attribute__((noinline)) bool PrestartAddWithStack(void* p, size_t n, const void* frame,
                                                    uint64_t ret) noexcept {
  uint64_t frames[kPrestartDepth];
  uint32_t depth = 0;
  size_t usable = n;
  if (IsBootstrap(p)) {
    usable = BootstrapSize(p);
  } else if (Resolved()) {
    usable = real.malloc_usable_size(p);
    // The walk may allocate (the thread's stack bounds, asked once): memtrace's own.
    runtime_internal::ReentrancyGuard guard;
    bool complete = true;
    depth = preload_internal::UnwindCfi(frame, frames, kPrestartDepth, &complete);
    if (!complete) depth = 0;
  }
  if (depth == 0) {
    frames[0] = ret;
    depth = 1;
  }
  return PrestartAdd(p, n, usable, frames, depth);
}

uint64_t Addr(const void* p) noexcept { return reinterpret_cast<uint64_t>(p); }

// What memtrace allocated on the program's threads (internal_blocks.h).
constinit preload_internal::InternalBlocks internal_blocks;
// With sampling: the live blocks that were sampled, whose releases are recorded.
constinit preload_internal::SampledBlocks sampled_blocks;
// What the minimum size and sampling left out (filter_counts.h), for the trailer.
constinit preload_internal::FilterCounts filter_counts;

using preload_internal::Filter;

// Counts an allocation of `n` bytes that `filter` left out of the capture.
void CountFiltered(Filter filter, size_t n) noexcept {
  filter_counts.Count(runtime_internal::Tls(), filter, n);
}

// Byte sampling (MEMTRACE_SAMPLE_BYTES = N): whether this thread records a new block of
// n bytes, with probability 1 - exp(-n/N) whatever came before it (byte_sampler.h, which
// also derives the estimates and their variance); the sink writes 1/probability as its
// weight.
bool TakeSample(size_t n) noexcept {
  runtime_internal::ThreadState& t = runtime_internal::Tls();
  if (__builtin_expect(t.sample_random == 0, 0)) {
    // Seeded from the thread's state address and the clock.
    preload_internal::SeedByteSampler(config.sample_bytes,
                                      reinterpret_cast<uint64_t>(&t) ^ __builtin_ia32_rdtsc(),
                                      &t.sample_countdown, &t.sample_random);
  }
  return preload_internal::TakeByteSample(config.sample_bytes, n, &t.sample_countdown,
                                          &t.sample_random);
}

// True when this call is memtrace's own, made on a program thread while memtrace is
// active: its block is remembered so that a later release by other code is not recorded.
bool OwnCallOnProgramThread(const runtime_internal::ThreadState& state) noexcept {
  if (!state.in_tracer || state.internal_thread) return false;
  const int p = phase.load(std::memory_order_relaxed);
  return p == kBeforeStart || p == kTracing;
}

bool Tracked(void* p) noexcept {
  if (config.min_size == 0) return true;
  const size_t usable = IsBootstrap(p) ? BootstrapSize(p) : real.malloc_usable_size(p);
  return usable >= config.min_size;
}

// Site() for a stack the walk memo does not answer on its own: walks (or checks the memo
// for the frames) and finds or sends the stack's site word. Not inlined: its frame
// buffer and out-parameters would cost every interposed call registers and stack. The
// walks start at `frame`, the interposed function's, whatever frames lie below it.
__attribute__((noinline)) uint64_t SiteWalked(Tracer* t, const void* frame,
                                              uint64_t ret) noexcept {
  uint64_t buffer[kMaxPreloadStackDepth];
  const uint64_t* frames = buffer;  // or the walk memo's own copy (unwind.h)
  uint32_t n;
  // The stack's site word, kept with the walk memo's frames (unwind.h) once this thread
  // has sent the frames: a stack the memo serves is neither hashed again (16 dependent
  // multiplies) nor looked up in the recorder's small cache of sent stacks, which a
  // program with more stacks than it holds (sqlite3: 875) would miss, sending the frames
  // again.
  uint64_t* kept_site = nullptr;
  if (config.unwind == UnwindMethod::kFramePointers) {
    n = preload_internal::UnwindFramePointers(frame, buffer, config.stack_depth);
  } else {
    bool complete;
    n = preload_internal::UnwindCfiFromMemo(frame, config.stack_depth, &complete, &kept_site,
                                            &frames);
    if (n == 0) {
      n = preload_internal::UnwindCfi(frame, buffer, config.stack_depth, &complete,
                                      &kept_site, &frames);
    }
    if (__builtin_expect(!complete, 0) && preload_internal::unw_backtrace_fn != nullptr) {
      // A frame whose rule memtrace does not follow (a signal trampoline): libunwind.
      kept_site = nullptr;
      frames = buffer;
      n = preload_internal::UnwindDwarf(own_code_begin, own_code_end, buffer,
                                        config.stack_depth);
    }
  }
  if (n == 0) return ret;
  if (kept_site == nullptr) return t->recorder().StackSite(frames, n);
  // The frames went into this thread's ring ahead of an allocation that used the hash,
  // so the sink knows them whatever ring this thread records into next. (The preload's
  // one recorder is never replaced, so a kept word never outlives the recorder it was
  // sent to.)
  if (*kept_site != 0) return *kept_site;
  const uint64_t hash = Recorder::StackHash(frames, n);
  const uint64_t site = t->recorder().StackSiteOfHash(hash, frames, n);
  if (site == hash) *kept_site = site;  // sent; not the return address of a failed send
  return site;
}

// The call site of an interposed call whose own frame is `frame` and return address
// `ret`: the return address alone at depth 0, else the stack's site word
// (Recorder::StackSite). A repeated DWARF walk whose word is kept with the memo (99% of
// sqlite3's and redis-server's) is answered inline (MemoDerived); the rest SiteWalked().
__attribute__((always_inline)) inline uint64_t Site(Tracer* t, const void* frame,
                                                    uint64_t ret) noexcept {
  if (config.stack_depth == 0) return ret;
  if (config.unwind == UnwindMethod::kDwarf) {
    const uint64_t kept = preload_internal::MemoDerived(frame, config.stack_depth);
    if (__builtin_expect(kept != 0, 1)) return kept;
  }
  return SiteWalked(t, frame, ret);
}

// Where an interposed call came from, captured in the exported function itself.
struct Caller {
  const void* frame;
  uint64_t ret;
};
#define MEMTRACE_CALLER()                                       \
  ::memtrace::Caller {                                          \
    __builtin_frame_address(0),                                 \
        reinterpret_cast<uint64_t>(__builtin_return_address(0)) \
  }

// The tracer to record into, with this thread's reentrancy flag raised; null when this
// call must not be recorded (not tracing, or memtrace's own allocation).
class RecordScope {
 public:
  RecordScope() noexcept {
    runtime_internal::ThreadState& t = runtime_internal::Tls();
    if (t.in_tracer) return;
    tracer_ = active_tracer.load(std::memory_order_acquire);
    if (tracer_ != nullptr) t.in_tracer = true;
  }
  ~RecordScope() {
    if (tracer_ != nullptr) runtime_internal::Tls().in_tracer = false;
  }
  RecordScope(const RecordScope&) = delete;
  RecordScope& operator=(const RecordScope&) = delete;

  Tracer* tracer() const noexcept { return tracer_; }

 private:
  Tracer* tracer_ = nullptr;
};

bool BeforeStart() noexcept {
  return phase.load(std::memory_order_relaxed) == kBeforeStart &&
         !runtime_internal::Tls().in_tracer;
}

// Records a new block of the program's, unless the minimum size or sampling leaves it
// out (counted, filter_counts.h). The stack is unwound only for a block that is recorded.
__attribute__((always_inline)) inline void RecordNewBlock(Tracer* t, void* p, size_t n,
                                                       Caller caller) noexcept {
  if (!Tracked(p)) {
    CountFiltered(Filter::kMinSize, n);
    return;
  }
  if (config.sample_bytes != 0) {
    if (!TakeSample(n)) {
      CountFiltered(Filter::kSample, n);
      return;
    }
    sampled_blocks.Insert(Addr(p));  // before any thread can free it
  }
  // A failed record leaves the block allocated (the program never sees memtrace fail);
  // the loss is counted in integrity and the capture is partial.
  t->recorder().RecordAlloc(kLayer, Addr(p), n, Site(t, caller.frame, caller.ret));
}

// Inlined into each interposed function, with the unwinder call: fewer frames of our own
// for the DWARF walk to step through (unwind.h).
__attribute__((always_inline)) inline void OnAlloc(void* p, size_t n, Caller caller) noexcept {
  if (p == nullptr) return;
  if (OwnCallOnProgramThread(runtime_internal::Tls())) {
    internal_blocks.Insert(Addr(p));
    return;
  }
  RecordScope scope;
  if (__builtin_expect(scope.tracer() != nullptr, 1)) {
    RecordNewBlock(scope.tracer(), p, n, caller);
    return;
  }
  if (BeforeStart() && PrestartAddWithStack(p, n, caller.frame, caller.ret)) return;
  RecordScope retry;  // tracing began meanwhile
  if (retry.tracer() != nullptr) RecordNewBlock(retry.tracer(), p, n, caller);
}

// Records the release of a block of the program's, unless the minimum size or sampling
// left its allocation out.
__attribute__((always_inline)) inline void RecordRelease(Tracer* t, void* p) noexcept {
  if (!Tracked(p)) return;
  if (config.sample_bytes != 0 && !sampled_blocks.Erase(Addr(p))) return;  // not sampled
  t->recorder().RecordFree(kLayer, Addr(p));
}

// OnFree() while no tracer records: before tracing starts, the release goes to the log;
// if tracing began meanwhile, to the tracer (as OnAlloc() does with an allocation);
// after it ends, nowhere. Not inlined: OnFree() keeps only a call.
__attribute__((noinline)) void OnFreeUntraced(void* p) noexcept {
  if (BeforeStart() && PrestartRemove(p)) return;
  RecordScope retry;  // tracing began meanwhile
  if (retry.tracer() != nullptr) RecordRelease(retry.tracer(), p);
}

// Before the block goes back to the allocator, so no other thread can get the address
// again before this release has its place in the order (transport/epoch_clock.h).
void OnFree(void* p) noexcept {
  // memtrace's own block (internal_blocks.h), released by anyone: glibc frees the node it
  // allocated for a thread's exit hook, and a dlopen()ed library's TLS block, this way.
  if (internal_blocks.Erase(Addr(p))) return;
  RecordScope scope;
  if (__builtin_expect(scope.tracer() != nullptr, 1)) {
    RecordRelease(scope.tracer(), p);
    return;
  }
  OnFreeUntraced(p);
}

// realloc under sampling, with the meaning the unsampled path gives it (Realloc below):
// a move is a release and a new allocation, a resize in place is the same allocation at
// a new size (byte_sampler.h derives the estimates). So a moved block gets a new draw on
// its new size, and a block resized in place keeps its draw: recorded as a resize when it
// was sampled, not at all when it was not. The old block's release is recorded when it
// was sampled.
void* ReallocSampled(Tracer* t, void* p, size_t n, Caller caller) noexcept {
  Recorder& r = t->recorder();
  const bool own = internal_blocks.Erase(Addr(p));  // memtrace's own block: never recorded
  const bool old_tracked = !own && Tracked(p);
  const bool old_sampled = old_tracked && sampled_blocks.Erase(Addr(p));
  if (n == 0) {  // glibc frees the block and returns null
    if (old_sampled) r.RecordFree(kLayer, Addr(p));
    void* q = real.realloc(p, 0);
    if (q != nullptr) RecordNewBlock(t, q, 0, caller);
    return q;
  }
  if (!old_sampled) {
    void* q = real.realloc(p, n);
    // In place, a tracked block left out by its draw stays left out; a block below the
    // minimum size that grew past it is new to the capture, as in Realloc.
    if (q != nullptr && (q != p || !old_tracked)) RecordNewBlock(t, q, n, caller);
    return q;
  }
  const uint64_t site = Site(t, caller.frame, caller.ret);
  // The release is claimed before the call (Recorder::BeginRemap): once realloc returns,
  // another thread may get the old address.
  const Recorder::RemapClaim claim = r.BeginRemap(kLayer, Addr(p));
  void* q = real.realloc(p, n);
  if (q == nullptr) {
    r.AbortRemap(claim);
    sampled_blocks.Insert(Addr(p));  // unchanged, still sampled
    return nullptr;
  }
  if (q == p) {
    r.CommitResize(claim, n);
    sampled_blocks.Insert(Addr(p));  // the same allocation: its draw stands
    return q;
  }
  const bool new_tracked = Tracked(q);
  if (new_tracked && TakeSample(n)) {
    sampled_blocks.Insert(Addr(q));  // before the program, or any thread, can free it
    r.CommitRemap(claim, Addr(q), n, site);  // the target carries its own weight
  } else {
    // The moved block is a new allocation its draw (or the minimum size) left out.
    CountFiltered(new_tracked ? Filter::kSample : Filter::kMinSize, n);
    r.CommitRelease(claim);
  }
  return q;
}

void* Realloc(void* p, size_t n, Caller caller) noexcept {
  if (p == nullptr) {
    void* q = real.realloc(nullptr, n);
    OnAlloc(q, n, caller);
    return q;
  }
  if (IsBootstrap(p)) {  // moves out of the bootstrap buffer, which never takes it back
    void* q = real.malloc(n);
    if (q == nullptr) return nullptr;
    memcpy(q, p, BootstrapSize(p) < n ? BootstrapSize(p) : n);
    OnFree(p);
    OnAlloc(q, n, caller);
    return q;
  }
  if (OwnCallOnProgramThread(runtime_internal::Tls())) {
    const bool own = internal_blocks.Erase(Addr(p));
    void* q = real.realloc(p, n);
    if (q == nullptr && n != 0 && own) internal_blocks.Insert(Addr(p));  // unchanged
    if (q != nullptr) internal_blocks.Insert(Addr(q));
    return q;
  }
  RecordScope scope;
  Tracer* t = scope.tracer();
  if (t == nullptr) {
    if (BeforeStart()) {
      // Logged as a release and an allocation; tracing may begin meanwhile, and then
      // they are recorded (without the claim a traced realloc takes: no thread can be
      // handed the old address before the release is ordered only while one starts).
      void* q = real.realloc(p, n);
      if (q != nullptr || n == 0) OnFreeUntraced(p);
      OnAlloc(q, n, caller);
      return q;
    }
    return real.realloc(p, n);
  }
  if (config.sample_bytes != 0) return ReallocSampled(t, p, n, caller);
  Recorder& r = t->recorder();
  const bool own = internal_blocks.Erase(Addr(p));  // memtrace's block: never recorded
  if (n == 0) {  // glibc frees the block and returns null
    if (Tracked(p) && !own) r.RecordFree(kLayer, Addr(p));
    void* q = real.realloc(p, 0);
    if (q != nullptr) RecordNewBlock(t, q, 0, caller);
    return q;
  }
  if (!Tracked(p) || own) {  // the old block was not recorded
    void* q = real.realloc(p, n);
    if (q != nullptr) RecordNewBlock(t, q, n, caller);
    return q;
  }
  // Claimed before the call, so the old address cannot be handed to another thread
  // before the release is ordered (Recorder::BeginRemap).
  const uint64_t site = Site(t, caller.frame, caller.ret);
  const Recorder::RemapClaim claim = r.BeginRemap(kLayer, Addr(p));
  void* q = real.realloc(p, n);
  if (q == nullptr) {
    r.AbortRemap(claim);  // the block is unchanged
    return nullptr;
  }
  if (q == p) {
    r.CommitResize(claim, n);
    return q;
  }
  r.CommitRemap(claim, Addr(q), n, site);
  if (!Tracked(q)) r.RecordFree(kLayer, Addr(q));  // moved below the minimum size
  return q;
}

// ---- Start and finish ----------------------------------------------------------------

void WriteStderr(const std::string& text) {
  runtime_internal::ReentrancyGuard guard;
  (void)!write(2, text.data(), text.size());
}

std::string LibraryPath() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&LibraryPath), &info) != 0 && info.dli_fname != nullptr) {
    return info.dli_fname;
  }
  return "";
}

int FindOwnCode(dl_phdr_info* info, size_t, void* data) {
  const auto self = reinterpret_cast<uint64_t>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
    const uint64_t begin = info->dlpi_addr + ph.p_vaddr;
    if (self >= begin && self < begin + ph.p_memsz) {
      own_code_begin = begin;
      own_code_end = begin + ph.p_memsz;
      return 1;
    }
  }
  return 0;
}

// The environment array the program's main() is given, from this library's constructor
// (glibc passes argc, argv and envp to constructors): a program like bash builds the
// environment of the commands it runs from it, not from `environ`.
char** initial_environment = nullptr;

// What every LD_PRELOAD entry naming this library contains, whatever its directory.
constexpr char kLibraryMarker[] = "libmemtrace_preload";

// Removes this library from LD_PRELOAD, so programs this one execs run untraced: in the
// array main() gets and in `environ`, should an earlier constructor have replaced it
// (preload_config.h, DropFromPreload: why not unsetenv(); and a copy under another name).
// Until 2026-12-05 a copy not named libmemtrace_preload stayed, and every program this
// one ran traced itself too.
void RemoveFromPreload() {
  // A copy under another name is found by the path the loader has for it.
  Dl_info info{};
  const char* own = dladdr(reinterpret_cast<void*>(&RemoveFromPreload), &info) != 0 &&
                            info.dli_fname != nullptr
                        ? info.dli_fname
                        : "";
  DropFromPreload(initial_environment, kLibraryMarker, own);
  if (environ != initial_environment) DropFromPreload(environ, kLibraryMarker, own);
}

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
ChildTracing* child_tracing = nullptr;

void KeepChildTracing(int root_pid) {
  Dl_info info{};
  char path[PATH_MAX];
  if (dladdr(reinterpret_cast<void*>(&KeepChildTracing), &info) == 0 ||
      info.dli_fname == nullptr || realpath(info.dli_fname, path) == nullptr) {
    WriteStderr("memtrace: cannot find the interposer's own path; a program this one runs "
                "with an environment of its own (without LD_PRELOAD) will not be traced\n");
    return;
  }
  auto* c = new ChildTracing;
  c->library = path;
  // Every setting as this process has it, but the root pid, which is this family's.
  constexpr char kRoot[] = "MEMTRACE_ROOT_PID=";
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (entry.starts_with("MEMTRACE_") && !entry.starts_with(kRoot)) {
      c->settings.emplace_back(entry);
    }
  }
  c->settings.push_back(absl::StrCat(kRoot, root_pid));
  for (const std::string& setting : c->settings) c->pointers.push_back(setting.c_str());
  c->pointers.push_back(nullptr);
  child_tracing = c;
}

// With children traced: says on stderr that the program about to be run will not be
// (the loader ignores LD_PRELOAD for it: LoaderIgnoresPreload), so that its missing
// capture is not silent. `file` is a path, or a name searched in $PATH as execvp() does.
// No allocation (a vfork()ed child may call it); errno is kept for the caller.
void WarnIfLoaderIgnoresPreload(const char* file) noexcept {
  if (child_tracing == nullptr || file == nullptr || file[0] == '\0') return;
  const int saved = errno;
  char path[PATH_MAX];
  const char* found = file;
  if (strchr(file, '/') == nullptr) {
    const char* dirs = getenv("PATH");
    found = FindInPath(file, dirs != nullptr ? dirs : "/bin:/usr/bin", path, sizeof(path))
                ? path
                : nullptr;
  }
  char why[128];
  if (found != nullptr && LoaderIgnoresPreload(found, why, sizeof(why))) {
    char line[PATH_MAX + 256];
    const int n = snprintf(line, sizeof(line),
                           "memtrace: '%s' is %s: the dynamic loader ignores LD_PRELOAD for "
                           "it, so it runs untraced (no capture of its own)\n",
                           found, why);
    if (n > 0) (void)!write(2, line, std::min(static_cast<size_t>(n), sizeof(line) - 1));
  }
  errno = saved;
}

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

// Waits, at most `ms` milliseconds, until `flag` is set by another thread (Finish(),
// memtrace-exit) with SetAndWake(). It may wait in a signal handler, where waiting on a
// semaphore or a condition variable may not be done: it sleeps in the futex system call
// on the flag's own word, which SetAndWake() wakes. (Until 2026-12-04 it polled every
// 0.2 ms, and a child ending with _exit() waited for its capture 0.1 ms longer on
// average than the finishing took.)
void WaitUntilSet(std::atomic<uint32_t>& flag, int ms) {
  static_assert(sizeof(flag) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free);
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const int64_t deadline = now.tv_sec * 1'000'000'000LL + now.tv_nsec + ms * 1'000'000LL;
  // Acquire: pairs with the release store in SetAndWake().
  while (flag.load(std::memory_order_acquire) == 0) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    const int64_t left = deadline - (now.tv_sec * 1'000'000'000LL + now.tv_nsec);
    if (left <= 0) return;
    const timespec timeout{static_cast<time_t>(left / 1'000'000'000),
                           static_cast<long>(left % 1'000'000'000)};
    // Returns at once when the flag is no longer 0, at the wake-up, at the timeout, or
    // on a signal; each way the flag is looked at again.
    syscall(SYS_futex, &flag, FUTEX_WAIT_PRIVATE, 0, &timeout, nullptr, 0);
  }
}

// Sets `flag` for WaitUntilSet().
void SetAndWake(std::atomic<uint32_t>& flag) {
  // Release: pairs with the acquire load in WaitUntilSet(); what this thread wrote before
  // (the trailer) is seen by the thread that waited.
  flag.store(1, std::memory_order_release);
  syscall(SYS_futex, &flag, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

// Who is finishing the capture, so that a stopping signal that arrives meanwhile waits
// for the trailer instead of ending the process halfway through it (OnTerminatingSignal):
// the thread running Finish() (0 before), and whether it is done. A process pool's
// worker ends with _exit() while its parent sends it SIGTERM: until 2026-12-03 the
// signal often landed while memtrace-exit wrote the trailer, and the capture had none.
std::atomic<pid_t> finishing_tid{0};
std::atomic<uint32_t> finish_done{0};  // a futex word: SetAndWake(), WaitUntilSet()
// A stopping signal that arrived on the thread running Finish(): raised again once the
// capture is finished (the handler cannot wait for its own thread).
std::atomic<int> deferred_signal{0};

// Children this process forked (the trailer's "forks"): without MEMTRACE_TRACE_FORKS
// those that go on running the program (workers, a daemon that outlives its parent) are
// not traced, and `memtrace summary` says so. Any thread; relaxed: a count.
std::atomic<uint64_t> forks_made{0};

// `exec_target`: for ended_by "exec", the program the process is replaced with, as the
// exec call named it (the trailer's "exec"; `memtrace summary` points at it).
void Finish(const std::string& ended_by, bool partial, const char* exec_target = nullptr) {
  static std::atomic<bool> finished{false};
  if (getpid() != traced_pid) return;  // a forked or vforked child: not its capture
  // Acq_rel: one caller finishes; it sees the constructor's writes.
  if (finished.exchange(true, std::memory_order_acq_rel)) return;
  // Release: pairs with the acquire loads in BeforeQuickExit() and OnTerminatingSignal().
  finishing_tid.store(gettid(), std::memory_order_release);
  Tracer* t = active_tracer.exchange(nullptr, std::memory_order_acq_rel);
  phase.store(kFinished, std::memory_order_release);
  if (t != nullptr && sink != nullptr) {
    runtime_internal::ReentrancyGuard guard;
    t->Stop().IgnoreError();
    const Snapshot snap = t->TakeSnapshot();
    const preload_internal::FilterTotals filtered = filter_counts.Sum();
    auto left_out = [&filtered](Filter f) {
      const auto i = static_cast<uint32_t>(f);
      return absl::StrCat("{\"allocations\":", filtered.allocations[i],
                          ",\"bytes\":", filtered.bytes[i], "}");
    };
    std::string fields = absl::StrCat("\"ended_by\":", JsonQuote(ended_by),
                                      ",\"prestart_untracked\":", prestart_overflow,
                                      ",\"prestart_freed\":", prestart_freed,
                                      ",\"prestart_freed_bytes\":", prestart_freed_bytes,
                                      ",\"forks\":", forks_made.load(std::memory_order_relaxed),
                                      ",\"filtered\":{\"min_size\":", left_out(Filter::kMinSize),
                                      ",\"sample\":", left_out(Filter::kSample), "}");
    if (exec_target != nullptr) absl::StrAppend(&fields, ",\"exec\":", JsonQuote(exec_target));
    const absl::Status s = sink->Finish(snap, fields, partial);
    if (!s.ok()) WriteStderr(absl::StrCat(s.message(), "\n"));
  }
  SetAndWake(finish_done);  // BeforeQuickExit() may wait for it
  // Acquire: pairs with the release store in OnTerminatingSignal().
  if (const int sig = deferred_signal.exchange(0, std::memory_order_acquire); sig != 0) {
    raise(sig);  // its handler was reset (SA_RESETHAND): the default action ends the process
  }
}

// ---- _exit() and _Exit() -------------------------------------------------------------
//
// They skip the destructor that finishes the capture, and are often called from a signal
// handler, where finishing on the calling thread could block on a lock the interrupted
// code holds (malloc's). So the calling thread hands the work to a thread of memtrace's
// kept for it alone ("memtrace-exit", asleep on a semaphore: sem_post() may be called
// from a handler), waits for it at most kExitFinishWaitMs, and then exits as asked.

constexpr int kExitFinishWaitMs = 3000;
sem_t exit_request;
std::atomic<bool> exit_finisher_started{false};
std::atomic<uint32_t> exit_finished{0};  // a futex word: SetAndWake(), WaitUntilSet()

// Set before the semaphore is posted when the thread is to end without finishing
// anything (BeforeSingleThreaded).
std::atomic<bool> exit_finisher_quit{false};
// The signal ending the process when the semaphore is posted from OnTerminatingSignal(),
// for the trailer's ended_by; 0 for _exit().
std::atomic<int> exit_signal{0};

void ExitFinisher(const CpuList& cpus) {
  runtime_internal::MarkInternalThread();
  PlaceMemtraceThread("memtrace-exit", cpus);  // with the drainer and the writer
  while (sem_wait(&exit_request) != 0) {
  }
  // Acquire: pairs with the release store in BeforeSingleThreaded().
  if (exit_finisher_quit.load(std::memory_order_acquire)) return;
  // Acquire: pairs with the release store in BeforeQuickExit().
  const int sig = exit_signal.load(std::memory_order_acquire);
  Finish(sig != 0 ? absl::StrCat("signal ", sig) : std::string("_exit"), false);
  SetAndWake(exit_finished);  // for BeforeQuickExit()
}

void StartExitFinisher(const CpuList& cpus) {
  if (sem_init(&exit_request, 0, 0) != 0) return;
  StartMemtraceThread([cpus] { ExitFinisher(cpus); }).detach();
  // Release: pairs with the acquire load in BeforeQuickExit(); sem_init() happened first.
  exit_finisher_started.store(true, std::memory_order_release);
}

// `sig`: the signal that ends the process (OnTerminatingSignal), or 0 for _exit().
void BeforeQuickExit(int sig = 0) {
  if (!exit_finisher_started.load(std::memory_order_acquire) || getpid() != traced_pid) return;
  // Acquire: pairs with the release store in Finish().
  if (phase.load(std::memory_order_acquire) != kTracing) {
    // Being finished by another thread (memtrace-exit for an _exit() this signal
    // interrupted, or exit() on another thread): the trailer first.
    const pid_t finisher = finishing_tid.load(std::memory_order_acquire);
    if (finisher != 0 && finisher != gettid()) WaitUntilSet(finish_done, kExitFinishWaitMs);
    return;
  }
  // Release: pairs with the acquire load in ExitFinisher() (sem_post orders it as well).
  exit_signal.store(sig, std::memory_order_release);
  sem_post(&exit_request);
  WaitUntilSet(exit_finished, kExitFinishWaitMs);
}

// The process's threads (/proc/self/status), or -1. System calls only: no allocation, and
// little stack (the caller's thread may have little).
int ProcessThreads() noexcept {
  const int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char text[4096];
  const ssize_t n = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (n <= 0) return -1;
  text[n] = '\0';
  const char* at = strstr(text, "\nThreads:");
  return at == nullptr ? -1 : atoi(at + strlen("\nThreads:"));
}

// Before a call that needs the process to have one thread (unshare(CLONE_NEWUSER)):
// finishes the capture, which stops the drainer and the writer, and ends memtrace-exit.
// The program goes on untraced, as a forked child does. Returns whether it did: not where
// memtrace is not tracing, nor where the program has threads of its own running.
bool BeforeSingleThreaded(const char* call) {
  if (getpid() != traced_pid || phase.load(std::memory_order_relaxed) != kTracing) {
    return false;
  }
  // With threads of the program's own the call fails whatever memtrace does: trace on.
  const int threads = ProcessThreads();
  if (threads >= 0 && threads - RunningMemtraceThreads() > 1) return false;
  Finish(call, false);
  if (exit_finisher_started.load(std::memory_order_acquire)) {
    // Release: pairs with the acquire load in ExitFinisher().
    exit_finisher_quit.store(true, std::memory_order_release);
    sem_post(&exit_request);
  }
  return true;
}

// unshare(): CLONE_NEWUSER fails with EINVAL in a process with more than one thread, and
// memtrace's threads would be the others. They are stopped first (BeforeSingleThreaded);
// a thread that has returned is gone from the process a moment later, so an EINVAL right
// after is retried, for at most 100 ms. When the program has threads of its own the call
// fails whatever memtrace does, so tracing goes on and the call fails as it would untraced.
int UnshareSingleThreaded(int flags) {
  if (!Resolved() || real.unshare == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  if ((flags & CLONE_NEWUSER) == 0 || !BeforeSingleThreaded("unshare(CLONE_NEWUSER)")) {
    return real.unshare(flags);
  }
  int rc = real.unshare(flags);
  for (int i = 0; i < 100 && rc != 0 && errno == EINVAL; ++i) {
    const timespec pause{0, 1'000'000};
    nanosleep(&pause, nullptr);
    rc = real.unshare(flags);
  }
  return rc;
}

// _exit() and _Exit(): `which` names the real function to end with.
[[noreturn]] void QuickExitAfterCapture(ExitFn RealFunctions::*which, int status) {
  Resolved();
  BeforeQuickExit();
  if (real.*which != nullptr) (real.*which)(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

void OnFatalSignal(int sig) {
  // Best effort (see the header): bounded by an alarm whose default action ends the
  // process, then the signal is raised again with its default action (SA_RESETHAND).
  alarm(5);
  Finish(absl::StrCat("signal ", sig), /*partial=*/true);
  raise(sig);
}

// Signals sent to stop a program (Ctrl-C, kill, a process pool's terminate(), a write to
// a closed pipe), whose default action ends the process without its exit handlers. With
// no handler of the program's, the capture is finished first, complete, with
// "ended_by":"signal N": by memtrace-exit, as for _exit() from a signal handler (the
// interrupted thread may hold malloc's lock), waited for at most kExitFinishWaitMs. Then
// the signal is raised again with its default action (SA_RESETHAND), so the process ends
// as it would have. Until 2026-12-03 such a capture had no trailer (`verify`: truncated).
constexpr int kTerminatingSignals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM,
                                       SIGPIPE, SIGUSR1, SIGUSR2};

void OnTerminatingSignal(int sig) {
  const int saved_errno = errno;
  // On the thread that is writing the trailer (exit() ran the destructor, and the signal
  // interrupted it): the signal is raised again when the trailer is written.
  if (finishing_tid.load(std::memory_order_acquire) == gettid() &&
      finish_done.load(std::memory_order_acquire) == 0 && getpid() == traced_pid) {
    // Release: pairs with the acquire exchange at the end of Finish().
    deferred_signal.store(sig, std::memory_order_release);
    errno = saved_errno;
    return;
  }
  BeforeQuickExit(sig);
  errno = saved_errno;
  raise(sig);
}

void InstallSignalHandlers() {
  auto install = [](int sig, void (*handler)(int)) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0) return;
    if (old.sa_handler != SIG_DFL) return;  // the program's (or the runtime's) own, or ignored
    struct sigaction sa {};
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigaction(sig, &sa, nullptr);
  };
  for (int sig : kFatalSignals) install(sig, &OnFatalSignal);
  for (int sig : kTerminatingSignals) install(sig, &OnTerminatingSignal);
}

// The object that defines the malloc this library forwards to.
std::string MallocLibrary() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(real.malloc), &info) == 0 || info.dli_fname == nullptr) {
    return "an unknown object";
  }
  return info.dli_fname;
}

// The first object ahead of this library in the lookup order (the program excluded) that
// defines `symbol` itself, or "" when none does. Asked of each object's own symbols
// (dlsym on its handle finds its own definition before its dependencies'), because the
// global address can name the program: one that takes malloc's address makes its PLT
// entry malloc's address for everyone (tests/takes_malloc_address.cc).
std::string DefinedAheadOfUs(const char* symbol) {
  std::vector<std::string> names;  // load order, which is the lookup order
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* out = static_cast<std::vector<std::string>*>(data);
        out->emplace_back(info->dlpi_name != nullptr ? info->dlpi_name : "");
        return 0;
      },
      &names);
  const std::string self = LibraryPath();
  for (size_t i = 1; i < names.size(); ++i) {  // [0] is the program
    const std::string& name = names[i];
    if (name == self) break;
    if (name.empty()) continue;  // the vDSO
    void* handle = dlopen(name.c_str(), RTLD_NOLOAD | RTLD_LAZY);
    if (handle == nullptr) continue;
    void* found = dlsym(handle, symbol);
    Dl_info info;
    const bool own = found != nullptr && dladdr(found, &info) != 0 &&
                     info.dli_fname != nullptr && name == info.dli_fname;
    dlclose(handle);
    if (own) return name;
  }
  return "";
}

// The object whose malloc the program's calls reach, when that is not this library: an
// executable or library with an allocator of its own, ahead of the interposer in the
// lookup order (Chromium's PartitionAlloc, a library preloaded before this one). Its
// allocations never reach memtrace. Empty when calls reach the interposer. Found by a
// call, not by comparing addresses: an executable that takes malloc's address makes its
// own PLT entry malloc's address for everyone. Call with the reentrancy guard held, so
// that this library's malloc notes the block as memtrace's own (internal_blocks).
std::string ShadowingMalloc() {
  using Malloc = void* (*)(size_t);
  using Free = void (*)(void*);
  const auto global_malloc = reinterpret_cast<Malloc>(dlsym(RTLD_DEFAULT, "malloc"));
  const auto global_free = reinterpret_cast<Free>(dlsym(RTLD_DEFAULT, "free"));
  if (global_malloc == nullptr || global_free == nullptr) return "";
  void* p = global_malloc(24);
  if (p == nullptr) return "";
  const bool ours = internal_blocks.Erase(Addr(p));
  if (ours) internal_blocks.Insert(Addr(p));  // still ours: this library's free takes it
  global_free(p);
  if (ours) return "";
  if (std::string library = DefinedAheadOfUs("malloc"); !library.empty()) return library;
  Dl_info found;
  if (dladdr(reinterpret_cast<void*>(global_malloc), &found) != 0 &&
      found.dli_fname != nullptr && found.dli_fname[0] != '\0') {
    return found.dli_fname;
  }
  const std::string exe = ExecutablePath();  // the main program has no name of its own
  return exe.empty() ? "the program itself" : exe;
}

// glibc's malloc maps memory with its internal mmap, never through the interposed one.
bool MallocIsGlibcs() {
  const std::string library = MallocLibrary();
  const size_t slash = library.rfind('/');
  return library.compare(slash == std::string::npos ? 0 : slash + 1, std::string::npos,
                         "libc.so.6") == 0;
}

// What Start() set up for this process's capture, kept for the captures of its forked
// children (MEMTRACE_TRACE_FORKS): each opens its own with the same settings.
struct CaptureSetup {
  Config recorder;
  JsonlSinkOptions sink;       // the header's fields included; the encoding set per path
  std::string output;          // MEMTRACE_OUTPUT
  int naming_root = 0;         // the process whose capture has the untagged name
  bool trace_children = false;
};
CaptureSetup* capture_setup = nullptr;  // lives for the whole process

// The header's "process" object: the parent's pid and the command line as the kernel has
// it now (/proc/self/cmdline: a forked child's is its parent's, unless the program has
// rewritten it, as postgres names each backend), so that the captures of a process
// family can be told apart and put in a tree (`memtrace summary A B ...`). At most
// kMaxArgs arguments of kMaxArgBytes each; "argv_truncated" says when more were left out.
std::string ProcessHeaderField() {
  constexpr size_t kMaxArgs = 64;
  constexpr size_t kMaxArgBytes = 256;
  std::string cmdline;
  if (const int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC); fd >= 0) {
    char buffer[4096];
    ssize_t n;
    while (cmdline.size() < (kMaxArgs + 1) * kMaxArgBytes &&
           ((n = read(fd, buffer, sizeof(buffer))) > 0 || (n < 0 && errno == EINTR))) {
      if (n > 0) cmdline.append(buffer, static_cast<size_t>(n));
    }
    close(fd);
  }
  std::string argv;
  bool truncated = false;
  size_t count = 0;
  for (size_t at = 0; at < cmdline.size();) {
    size_t end = cmdline.find('\0', at);
    if (end == std::string::npos) end = cmdline.size();
    if (count == kMaxArgs) {
      truncated = true;
      break;
    }
    std::string arg = cmdline.substr(at, end - at);
    if (arg.size() > kMaxArgBytes) {
      arg.resize(kMaxArgBytes);
      truncated = true;
    }
    absl::StrAppend(&argv, count++ == 0 ? "" : ",", JsonQuote(arg));
    at = end + 1;
  }
  return absl::StrCat("\"process\":{\"ppid\":", getppid(), ",\"argv\":[", argv, "]",
                      truncated ? ",\"argv_truncated\":true" : "", "}");
}

// The scope a forked child records the blocks it inherited in. Made by the parent as it
// starts (when forks are traced), with its path under the root, so that a child does not
// grow the scope table: every page of the table's vectors it wrote would be copied first.
const ScopeName& InheritedScope() {
  static const ScopeName name("(inherited at fork)");
  return name;
}

// What a forked child was born with: the blocks live in its parent at the fork, and the
// parent's recorder (the child's copy), which kept their stacks' frames.
struct Inheritance {
  std::vector<AllocationRecord> blocks;
  const Recorder* parent = nullptr;
};

// The site word in `recorder` for an inherited block whose site in the parent's was
// `site`: a return address stays as it is (the child has the parent's mappings); a
// stack's hash becomes the same stack in `recorder`, whose frames it sends ahead, when the
// parent kept them; otherwise 0, "no call site" (so for the parent's "other sites"
// bucket too, whose value has the hash bit and names no stack).
uint64_t InheritedSite(const Recorder& parent, Recorder& recorder, uint64_t site) {
  if ((site & kStackHashBit) == 0) return site;
  const absl::Span<const uint64_t> frames = parent.InheritedStackFrames(site);
  if (frames.empty()) return 0;
  return recorder.StackSite(frames.data(), static_cast<uint32_t>(frames.size()));
}

// Records the log of what the program allocated and released before tracing started,
// in its order (the prestart section above), with the settings just read: an allocation
// below the minimum size, or not drawn by sampling, is left out with its release, as it
// would have been once traced. Under the prestart lock, before tracing is on.
//
// A block allocated from the constructor of a library loaded only for memtrace (`ours`,
// own_libraries.h: libstdc++'s emergency pool under a C program) is memtrace's: left out,
// and one still live is marked memtrace's own, so its release is never recorded either.
void RecordPrestartLog(Recorder& r, const std::vector<preload_internal::CodeRange>& ours) {
  auto from_ours = [&ours](const PrestartOp& op) {
    if (ours.empty() || op.ref == kNoPrestartStack) return false;
    const PrestartStack& stack = prestart_stacks[op.ref];
    for (uint32_t f = 0; f < stack.depth; ++f) {
      const uint64_t frame = prestart_frames[stack.frames_at + f];
      for (const preload_internal::CodeRange& range : ours) {
        if (range.Contains(frame)) return true;
      }
    }
    return false;
  };
  for (size_t i = 0; i < prestart_op_count; ++i) {
    PrestartOp& op = prestart_ops[i];
    if (op.release) {
      if (prestart_ops[op.ref].recorded) r.RecordFree(kLayer, op.address);
      continue;
    }
    if (from_ours(op)) {
      op.recorded = false;
      if (!op.freed) internal_blocks.Insert(op.address);
      continue;
    }
    const bool sized = config.min_size == 0 || op.usable >= config.min_size;
    op.recorded = sized && (config.sample_bytes == 0 || TakeSample(op.size));
    if (!op.recorded) {
      CountFiltered(sized ? Filter::kSample : Filter::kMinSize, op.size);
      continue;
    }
    // A sampled block still live: its release, traced, is recorded (OnFree).
    if (config.sample_bytes != 0 && !op.freed) sampled_blocks.Insert(op.address);
    uint64_t site = 0;  // no stack: "no call site"
    if (op.ref != kNoPrestartStack) {
      const PrestartStack& stack = prestart_stacks[op.ref];
      const uint64_t* frames = &prestart_frames[stack.frames_at];
      site = config.stack_depth == 0
                 ? frames[0]
                 : r.StackSite(frames, std::min(stack.depth, config.stack_depth));
    }
    r.RecordAlloc(kLayer, op.address, op.size, site);
  }
  // The log and its index are not used again (tracing never goes back to kBeforeStart);
  // the index is left as it is rather than written over, page by page, at every start.
  prestart_op_count = 0;
}

// Opens this process's capture (pid traced_pid) and starts a tracer writing it, recording
// `inherited` first, inside the scope "(inherited at fork)": the blocks a forked child was
// born with, at their stacks in the parent where it kept them. `header`: fields for the
// capture's header besides the setup's. False, with the reason on stderr, when tracing is
// off.
bool StartTracing(const CaptureSetup& setup, const std::string& header,
                  const Inheritance* inherited) {
  auto tracer = Tracer::Create(setup.recorder);
  if (!tracer.ok()) {
    WriteStderr(absl::StrCat("memtrace: tracing is off: ", tracer.status().message(), "\n"));
    phase.store(kDisabled, std::memory_order_relaxed);
    return false;
  }
  std::string path = CapturePath(setup.output, traced_pid, setup.naming_root);
  JsonlSinkOptions options = setup.sink;
  // The encoding and compression the path names, before an ".execN" suffix hides them.
  JsonlSink::ApplyPathExtension(path, &options);
  if (inherited != nullptr) {
    // A forked child is a new process: a capture already at its name is another
    // process's, whose pid this one got again (pids wrap, at 32768 by default, and every
    // thread takes one), or an earlier run's. Never overwritten: NAME.<pid>.2.EXT, ...
    for (int n = 2; access(path.c_str(), F_OK) == 0 && n < 1000; ++n) {
      path = CapturePath(setup.output, traced_pid, setup.naming_root, n);
    }
  } else if (setup.trace_children) {
    // An exec'd image keeps the pid, so it would reuse its parent image's path.
    const std::string base = path;
    for (int n = 1; access(path.c_str(), F_OK) == 0 && n < 1000; ++n) {
      path = absl::StrCat(base, ".exec", n);
    }
  }
  absl::StrAppend(&options.header_fields, ",", ProcessHeaderField());
  if (!header.empty()) absl::StrAppend(&options.header_fields, ",", header);
  auto opened = JsonlSink::Open(path, options);
  if (!opened.ok() && absl::IsUnavailable(opened.status())) {
    // Another process is writing that file (two programs given one MEMTRACE_OUTPUT
    // without %p, or a program that put this library back into its children's
    // LD_PRELOAD): this one writes beside it instead, and says where.
    const std::string own = PidTaggedPath(path, traced_pid);
    opened = JsonlSink::Open(own, options);
    if (opened.ok()) {
      WriteStderr(absl::StrCat("memtrace: '", path, "' is being written by another process; "
                               "this one (pid ", traced_pid, ") writes its capture to '", own,
                               "'\n"));
    }
  }
  if (!opened.ok()) {
    WriteStderr(absl::StrCat(opened.status().message(), "; tracing is off\n"));
    phase.store(kDisabled, std::memory_order_relaxed);
    return false;
  }
  sink = opened.value().release();      // lives for the whole process
  Tracer* t = tracer.value().release();  // likewise: threads may record during exit
  t->recorder().SetObserver(sink).IgnoreError();
  if (absl::Status s = t->Start(); !s.ok()) {
    WriteStderr(absl::StrCat(s.message(), "; tracing is off\n"));
    phase.store(kDisabled, std::memory_order_relaxed);
    return false;
  }
  // Before the prestart lock: the loader's lock, taken here (unless an exit handler's
  // registration found the libraries first), is held by a thread that allocates inside
  // dlopen(), which would wait for the prestart lock.
  const std::vector<preload_internal::CodeRange> none;
  const std::vector<preload_internal::CodeRange>* found =
      inherited == nullptr ? OwnLibraries() : nullptr;
  const std::vector<preload_internal::CodeRange>& ours = found != nullptr ? *found : none;
  {
    PrestartLock lock;
    RecordPrestartLog(t->recorder(), ours);
    if (inherited != nullptr) {
      Span span(&t->recorder(), InheritedScope());
      for (const AllocationRecord& b : inherited->blocks) {
        t->recorder().RecordAlloc(b.layer, b.address, b.size,
                                  InheritedSite(*inherited->parent, t->recorder(), b.site));
      }
    }
    // Release: pairs with the acquire load in RecordScope.
    active_tracer.store(t, std::memory_order_release);
    phase.store(kTracing, std::memory_order_relaxed);
  }
  return true;
}

// ---- fork() --------------------------------------------------------------------------
//
// A forked child has one thread, the one that called fork(), and a copy of the tracer
// with no drainer. By default it runs untraced (see the header). With
// MEMTRACE_TRACE_FORKS=1 it traces on into a capture of its own: the forking thread holds
// the drainer between rounds across the fork (Recorder::HoldForFork), so the child's copy
// of the ledger is whole; the child applies what its copies of the rings hold, and starts
// a new tracer whose capture begins with the blocks that were live in the parent, at
// their stacks, whose frames the parent's drainer kept (Config::keep_stack_frames). The
// hold is taken last among the prepare handlers (this library's constructor registered
// its handlers before the program could), so the program's handlers never wait for it.

// The tracer whose drainer the forking thread holds; written only by that thread, while
// it holds it (a second thread's fork waits in HoldForFork until the first is done).
Tracer* fork_held_tracer = nullptr;

void BeforeFork() {
  runtime_internal::ThreadState& ts = runtime_internal::Tls();
  // in_tracer: fork() from a signal handler that interrupted a record of this thread's;
  // the drainer may be waiting for that record, so it cannot be held. The child runs
  // untraced.
  if (ts.in_tracer || getpid() != traced_pid) return;
  Tracer* t = active_tracer.load(std::memory_order_acquire);
  if (t == nullptr) return;
  runtime_internal::ReentrancyGuard guard;
  // The mapping table too, taken first as the mapping calls take it (they may wait for the
  // drainer while they hold it): the child's copy must not be locked by a thread it lacks.
  if (config.mmap) mappings_mu.lock();
  t->recorder().HoldForFork();
  // Last: nothing that holds it waits for the drainer.
  runtime_internal::LockRecorderSlotsForFork();
  fork_held_tracer = t;
  ts.fork_hold = true;
}

void AfterForkInParent() {
  forks_made.fetch_add(1, std::memory_order_relaxed);
  runtime_internal::ThreadState& ts = runtime_internal::Tls();
  if (!ts.fork_hold) return;
  ts.fork_hold = false;
  Tracer* t = fork_held_tracer;
  fork_held_tracer = nullptr;  // before the release: the next holder writes it
  runtime_internal::UnlockRecorderSlotsAfterFork();
  t->recorder().ReleaseAfterFork();
  if (config.mmap) mappings_mu.unlock();
}

void AfterForkInChild() {
  forks_made.store(0, std::memory_order_relaxed);  // the child's own, if it traces on
  filter_counts.Reset();  // likewise
  runtime_internal::ThreadState& ts = runtime_internal::Tls();
  Tracer* const parent_tracer = ts.fork_hold ? fork_held_tracer : nullptr;
  if (ts.fork_hold) runtime_internal::UnlockRecorderSlotsAfterFork();
  ts.fork_hold = false;
  fork_held_tracer = nullptr;
  // The child's copy of the tracer has no drainer: nothing records into it from here.
  // Relaxed: the child has this one thread.
  active_tracer.store(nullptr, std::memory_order_relaxed);
  phase.store(kDisabled, std::memory_order_relaxed);
  ForgetMemtraceThreadsAfterFork();
  // Nor does it write the parent's capture: its copy of the file's descriptor would keep
  // the file's lock (JsonlSink::Open) held after the parent closed it.
  if (sink != nullptr) sink->ReleaseInForkedChild();
  if (parent_tracer == nullptr) return;
  if (config.mmap) mappings_mu.unlock();  // held by this thread since BeforeFork()

  runtime_internal::ReentrancyGuard guard;
  uint64_t unpublished = 0;
  Inheritance inherited;
  inherited.blocks = parent_tracer->recorder().LiveBlocksInForkedChild(&unpublished);
  inherited.parent = &parent_tracer->recorder();
  uint64_t inherited_bytes = 0;
  uint64_t without_stack = 0;  // with a stack's hash in the parent whose frames it lacks
  for (const AllocationRecord& b : inherited.blocks) {
    inherited_bytes += b.size;
    if ((b.site & kStackHashBit) != 0 &&
        inherited.parent->InheritedStackFrames(b.site).empty()) {
      ++without_stack;
    }
  }
  const pid_t parent = traced_pid;
  traced_pid = getpid();
  // The parent's memtrace-exit is not here either. Relaxed: this process has one thread
  // until StartTracing() starts memtrace's, which orders these stores before them.
  exit_finisher_started.store(false, std::memory_order_relaxed);
  exit_finished.store(0, std::memory_order_relaxed);
  exit_finisher_quit.store(false, std::memory_order_relaxed);
  exit_signal.store(0, std::memory_order_relaxed);
  finishing_tid.store(0, std::memory_order_relaxed);
  finish_done.store(0, std::memory_order_relaxed);
  deferred_signal.store(0, std::memory_order_relaxed);
  // The stacks the parent's recorder had are not in the new capture.
  preload_internal::ForgetKeptSites();
  const std::string header = absl::StrCat(
      "\"fork\":{\"parent_pid\":", parent, ",\"inherited_blocks\":", inherited.blocks.size(),
      ",\"inherited_bytes\":", inherited_bytes, ",\"inherited_without_stack\":", without_stack,
      ",\"unpublished_records\":", unpublished, "}");
  if (!StartTracing(*capture_setup, header, &inherited)) return;
  StartExitFinisher(capture_setup->recorder.thread_cpus);
}

void Start() {
  if (!Resolved()) return;
  runtime_internal::ReentrancyGuard guard;
  // The memtrace CLI marks itself; it must never trace itself (`memtrace run` sets
  // LD_PRELOAD for the child only, but a user may preload the CLI by accident).
  if (dlsym(RTLD_DEFAULT, "memtrace_never_trace") != nullptr) {
    RemoveFromPreload();
    phase.store(kDisabled, std::memory_order_relaxed);
    return;
  }
  std::vector<std::string> warnings;
  const PreloadConfig settings =
      ParsePreloadConfig([](const char* name) { return getenv(name); }, &warnings);
  WarnUnknownSettings(environ, &warnings);
  for (const std::string& w : warnings) WriteStderr(w + "\n");
  config = Settings{settings.min_size, settings.stack_depth, settings.unwind,
                    settings.sample_bytes, false, 0};
  if (settings.mmap && settings.sample_bytes != 0) {
    // The sink gives every allocation of a sampled capture a weight, and the mmap layer
    // records every mapping: its bytes would be scaled up as if sampled.
    WriteStderr("memtrace: MEMTRACE_MMAP=1 and MEMTRACE_SAMPLE_BYTES do not go together "
                "(mappings are recorded whole, never sampled); mappings are not recorded\n");
  } else if (settings.mmap && !MallocIsGlibcs()) {
    WriteStderr(absl::StrCat(
        "memtrace: the program's malloc comes from ", MallocLibrary(),
        ", not glibc; an allocator like that maps its own memory with mmap while holding "
        "its locks, and recording a mapping may allocate, so MEMTRACE_MMAP=1 could "
        "deadlock it: mappings are not recorded (its blocks still are, on the interposer "
        "layer)\n"));
  } else if (settings.mmap) {
    if (auto layer = LayerTable::Global().Register("mmap"); layer.ok()) {
      mappings = new preload_internal::MappingTable(static_cast<uint64_t>(getpagesize()));
      config.mmap = true;
      config.mmap_layer = *layer;
    } else {
      WriteStderr(absl::StrCat(layer.status().message(), "; mappings are not recorded\n"));
    }
  }
  traced_pid = getpid();
  int root_pid = 0;
  if (settings.trace_children) {
    const char* root = getenv("MEMTRACE_ROOT_PID");
    root_pid = root != nullptr ? atoi(root) : 0;
    if (root_pid == 0) {
      root_pid = traced_pid;
      setenv("MEMTRACE_ROOT_PID", std::to_string(root_pid).c_str(), 1);
    }
    KeepChildTracing(root_pid);
  } else {
    RemoveFromPreload();
  }
  dl_iterate_phdr(&FindOwnCode, reinterpret_cast<void*>(&FindOwnCode));
  if (config.stack_depth > 0 && config.unwind == UnwindMethod::kDwarf) {
    std::string error;
    if (!preload_internal::LoadDwarfUnwinder(&error)) {
      // memtrace's own reader of the unwind tables (unwind.h) does the walk; libunwind
      // only takes the stacks that pass through a signal frame or a CFA expression.
      WriteStderr(absl::StrCat("memtrace: ", error, "; stacks that pass through a signal "
                               "handler end at its frame\n"));
    }
  }

  // The process-wide tables exist before memtrace's threads do. Each is a function-local
  // static; if the writer built one on its first layer line while the program forked,
  // the child inherited its guard taken, and waited on it forever (a forked bash under
  // --children --forks, 2026-12-03: `tools/program_sweep` hung on `git log | wc -l`).
  LayerTable::Global();
  ScopeTable::Global();

  capture_setup = new CaptureSetup;
  CaptureSetup& setup = *capture_setup;
  setup.output = settings.output;
  setup.naming_root = root_pid != 0 ? root_pid : traced_pid;
  setup.trace_children = settings.trace_children;
  Config& rc = setup.recorder;
  rc.ring_capacity_log2 = settings.ring_capacity_log2;
  rc.thread_cpus = settings.tracer_cpus;
  rc.fence = settings.fence;
  if (settings.exact_order) rc.order_stamp_log2 = 0;
  // Lossless by default: a thread whose ring is full waits (up to a second) for the
  // drainer, and the drainer waits for the disk (below), so a program that allocates
  // faster than its capture can be written is slowed down rather than losing records.
  rc.overflow_wait = absl::Seconds(1);
  // A forked child names the stacks of the blocks it inherited from the drainer's copy.
  rc.keep_stack_frames = settings.trace_forks;
  rc.request_site_capacity_max = settings.site_capacity;
  JsonlSinkOptions& options = setup.sink;
  options.site_capacity = settings.site_capacity;  // both count the same sites
  options.source = "preload";
  options.max_backpressure = absl::Seconds(2);
  options.sample_interval_bytes = settings.sample_bytes;
  options.max_bytes = settings.max_bytes;
  options.header_fields = absl::StrCat(
      "\"interposer\":{\"library\":", JsonQuote(LibraryPath()), ",\"version\":\"", kVersion,
      "\",\"min_size\":", config.min_size, ",\"stack_depth\":", config.stack_depth,
      ",\"unwind\":\"", config.unwind == UnwindMethod::kFramePointers ? "fp" : "dwarf",
      "\",\"sample_interval_bytes\":", settings.sample_bytes, ",\"trace_children\":",
      settings.trace_children ? "true" : "false", ",\"trace_forks\":",
      settings.trace_forks ? "true" : "false", ",\"mmap\":", config.mmap ? "true" : "false",
      ",\"tracer_cpus\":", JsonQuote(settings.tracer_cpus.ToString()),
      ",\"max_bytes\":", settings.max_bytes, ",\"site_capacity\":", settings.site_capacity,
      ",\"exact_order\":", settings.exact_order ? "true" : "false", "}");
  options.writer_cpus = settings.tracer_cpus;
  if (const std::string shadow = ShadowingMalloc(); !shadow.empty()) {
    // Said here and in the header, so that `memtrace verify` can fail the capture and say
    // why.
    WriteStderr(absl::StrCat(
        "memtrace: this program's calls to malloc and free reach the allocator of ", shadow,
        ", which comes before the interposer in the lookup order; memtrace sees only the "
        "allocations that reach it by other calls, and may miss their frees. Preload "
        "libmemtrace_preload.so first, or trace a build of the program that uses the C "
        "library's malloc\n"));
    absl::StrAppend(&options.header_fields, ",\"malloc_from\":", JsonQuote(shadow));
  }
  if (!StartTracing(setup, "", nullptr)) return;
  if (settings.trace_forks) {
    ScopeTable::Global().Child(ScopeTable::kRootPath, InheritedScope().id());
    pthread_atfork(&BeforeFork, &AfterForkInParent, &AfterForkInChild);
  } else {
    pthread_atfork(nullptr, &AfterForkInParent, &AfterForkInChild);
  }
  InstallSignalHandlers();
  StartExitFinisher(settings.tracer_cpus);
}

__attribute__((constructor(101))) void PreloadConstructor(int, char**, char** envp) {
  initial_environment = envp;
  Start();
}
__attribute__((destructor(101))) void PreloadDestructor() { Finish("exit", false); }

void BeforeExec(const char* target) { Finish("exec", false, target); }

// fexecve() and execveat() of a descriptor: the trailer names the file the descriptor is
// open on, as /proc says.
void BeforeExecOfDescriptor(int fd) {
  if (getpid() != traced_pid) return;  // a vfork()ed child: not its capture (Finish())
  char link[64];
  char target[PATH_MAX];
  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, target, sizeof(target) - 1);
  if (n <= 0) {
    BeforeExec(link);
    return;
  }
  target[n] = '\0';
  BeforeExec(target);
}

// Before dlclose() may unmap an object (and the objects only it needed): the modules
// loaded now go to the sink, which lists them with the capture's module map at the end,
// so call sites inside them still symbolize after they are gone.
void BeforeDlclose() {
  if (phase.load(std::memory_order_relaxed) != kTracing || sink == nullptr) return;
  runtime_internal::ReentrancyGuard guard;
  // Objects handed over already (by load address, with their name) are skipped before any
  // work on them: a program that opens and closes a plugin in a loop pays a walk of the
  // loader's list, not a build-id read of every object, at each dlclose().
  static std::mutex mu;
  static auto* handed = new std::map<uint64_t, std::string>;  // never destroyed: exit
  std::lock_guard<std::mutex> lock(mu);
  std::vector<ModuleInfo> fresh =
      LoadedModules([](std::string_view name, uint64_t base) {
        auto [it, added] = handed->try_emplace(base, name);
        if (added) return false;
        if (it->second == name) return true;
        it->second = std::string(name);  // another object at that address now
        return false;
      });
  if (!fresh.empty()) sink->KeepModules(fresh);
}

// ---- The mmap layer (MEMTRACE_MMAP=1) ---------------------------------------------------

void RecordMappingOps(Recorder& r, const std::vector<preload_internal::MappingOp>& ops) {
  using Kind = preload_internal::MappingOp::Kind;
  for (const preload_internal::MappingOp& op : ops) {
    switch (op.kind) {
      case Kind::kAlloc:
        r.RecordAlloc(config.mmap_layer, op.address, op.size, op.site);
        break;
      case Kind::kResize:
        r.RecordResize(config.mmap_layer, op.address, op.size);
        break;
      case Kind::kFree:
        r.RecordFree(config.mmap_layer, op.address);
        break;
    }
  }
}

// What the interposed mapping calls do when the layer is on and the call is the
// program's. Anonymous mappings only: file mappings are not allocations (and a munmap of
// one finds nothing in the table).
void* Map(void* addr, size_t length, int prot, int flags, int fd, off_t offset,
          Caller caller) noexcept {
  RecordScope scope;
  Tracer* t = scope.tracer();
  if (t == nullptr || (flags & MAP_ANONYMOUS) == 0) {
    return real.mmap(addr, length, prot, flags, fd, offset);
  }
  const uint64_t site = Site(t, caller.frame, caller.ret);
  std::lock_guard<std::mutex> lock(mappings_mu);
  void* p = real.mmap(addr, length, prot, flags, fd, offset);
  if (p == MAP_FAILED) return p;
  // A new range, recorded after the kernel made it; MAP_FIXED may have replaced known
  // mappings, whose releases come first (nobody else can have those addresses: the new
  // mapping holds them).
  std::vector<preload_internal::MappingOp> ops;
  mappings->Map(Addr(p), length, site, &ops);
  RecordMappingOps(t->recorder(), ops);
  return p;
}

// Puts back known mappings a failed call had already released in the records: each as a
// new block with its own site (the table's entries for the range, taken before).
void RestoreMappings(Recorder& r, const std::vector<preload_internal::MappingTable::Entry>& before) {
  std::vector<preload_internal::MappingOp> ops;
  for (const auto& e : before) mappings->Map(e.start, e.end - e.start, e.site, &ops);
  RecordMappingOps(r, ops);
}

int Unmap(void* addr, size_t length) noexcept {
  RecordScope scope;
  Tracer* t = scope.tracer();
  if (t == nullptr) return real.munmap(addr, length);
  std::lock_guard<std::mutex> lock(mappings_mu);
  // Released in the records before the kernel releases the range: once it does, another
  // thread (or malloc itself) may get these addresses.
  const auto before = mappings->Overlapping(Addr(addr), length);
  std::vector<preload_internal::MappingOp> ops;
  mappings->Unmap(Addr(addr), length, &ops);
  RecordMappingOps(t->recorder(), ops);
  const int rc = real.munmap(addr, length);
  if (rc != 0) {
    const int saved = errno;
    RestoreMappings(t->recorder(), before);
    errno = saved;
  }
  return rc;
}

void* Remap(void* old_address, size_t old_size, size_t new_size, int flags,
            void* new_address, Caller caller) noexcept {
  RecordScope scope;
  Tracer* t = scope.tracer();
  if (t == nullptr) return real.mremap(old_address, old_size, new_size, flags, new_address);
  Recorder& r = t->recorder();
  std::lock_guard<std::mutex> lock(mappings_mu);
  const uint64_t old_start = Addr(old_address);
  uint64_t site = 0;
  const bool copy = old_size == 0 || (flags & MREMAP_DONTUNMAP) != 0;  // the old stays
  if (!copy && mappings->Exact(old_start, old_size, &site)) {
    // A whole mapping, resized or moved: one block, like realloc. The release is
    // claimed before the call (Recorder::BeginRemap).
    const Recorder::RemapClaim claim = r.BeginRemap(config.mmap_layer, old_start);
    void* q = real.mremap(old_address, old_size, new_size, flags, new_address);
    if (q == MAP_FAILED) {
      const int saved = errno;
      r.AbortRemap(claim);
      errno = saved;
      return q;
    }
    std::vector<preload_internal::MappingOp> ops;
    mappings->Moved(old_start, Addr(q), new_size, &ops);  // what MREMAP_FIXED replaced
    const uint64_t size = mappings->Round(new_size);
    if (ops.empty()) {
      if (q == old_address) {
        r.CommitResize(claim, size);
      } else {
        r.CommitRemap(claim, Addr(q), size, site);
      }
      return q;
    }
    // The releases of what the call replaced go before the block's new extent. They
    // cannot be recorded while the claim is open (they would take its slots), so the
    // claim is given back and the resize or move recorded after them: mappings_mu, held
    // since before the call, keeps any other thread from recording a mapping at the old
    // range meanwhile.
    r.AbortRemap(claim);
    RecordMappingOps(r, ops);
    if (q == old_address) {
      r.RecordResize(config.mmap_layer, old_start, size);
    } else {
      r.RecordRemap(config.mmap_layer, old_start, Addr(q), size, site);
    }
    return q;
  }
  // Part of a mapping, an unknown one, or a copy: the old range (unless it stays) is
  // released first, and what the call returns is a new mapping made here.
  std::vector<preload_internal::MappingTable::Entry> before;
  std::vector<preload_internal::MappingOp> ops;
  if (!copy) {
    before = mappings->Overlapping(old_start, old_size);
    mappings->Unmap(old_start, old_size, &ops);
    RecordMappingOps(r, ops);
  }
  void* q = real.mremap(old_address, old_size, new_size, flags, new_address);
  if (q == MAP_FAILED) {
    const int saved = errno;
    RestoreMappings(r, before);
    errno = saved;
    return q;
  }
  // The result is one of the program's anonymous mappings only if the old range was.
  if (copy ? !mappings->Contains(old_start) : before.empty()) return q;
  ops.clear();
  mappings->Map(Addr(q), new_size, Site(t, caller.frame, caller.ret), &ops);
  RecordMappingOps(r, ops);
  return q;
}

// Bootstrap blocks (served while dlsym runs) are remembered like any block allocated
// before tracing starts, so the capture counts every call the program made.
void* BootstrapCall(size_t n, size_t alignment, Caller caller) noexcept {
  void* p = BootstrapAlloc(n, alignment);
  OnAlloc(p, n, caller);
  return p;
}

// ---- Exit handlers ---------------------------------------------------------------------
//
// glibc keeps the handlers that atexit() and __cxa_atexit() register (C++ globals'
// destructors among them) in a list with room for 32 to begin with; the 33rd
// registration, the 65th, ... each make __new_exitfn() take a 1,040-byte block from
// malloc, live to the end. memtrace's own objects register handlers before main() that
// can fill those 32 on their own: the libraries loaded only for it (libstdc++ and abseil
// under a C program) and this library's C++ globals, whose initializers run just after
// its constructor has started tracing. So a C program that registers one handler or none
// (/bin/true, sort) got a block that only memtrace needed, charged to it.
//
// The interposer passes every registration on to glibc and looks at who makes it, by the
// dso handle that names the registering object (a constructor hands over to
// __cxa_atexit() with a jump, so no frame of it is on the stack for the unwinder to
// find). A registration of this library's, or of a library loaded only for it, is made
// with the reentrancy flag raised, before tracing starts or after: a block glibc takes
// for it is memtrace's (internal_blocks.h), never recorded, nor is its release. A
// registration of the program's (or of a library of its own) is passed on with a jump,
// and a block glibc takes for it is the program's, as it would be without memtrace.
//
// Which registration makes glibc allocate depends on all of them: memtrace's handlers
// take slots that the program's would otherwise have had, so a program whose own
// registrations come just short of filling a block can still be charged one that only
// memtrace's made necessary (a C program one of whose libraries registers nearly 32
// handlers in its constructor, after libstdc++ and abseil have registered theirs). The
// program is never charged less than the blocks its own registrations take beyond the
// room memtrace's left.

// True for the dso handle of this library or of one loaded only for it. The handle of
// an executable built without -fPIE is null: the program's.
bool OwnObject(uint64_t dso) {
  if (dso == Addr(&__dso_handle)) return true;
  if (dso == 0) return false;
  const std::vector<preload_internal::CodeRange>* ours = OwnLibraries();
  if (ours == nullptr) return false;
  for (const preload_internal::CodeRange& range : *ours) {
    if (range.Contains(dso)) return true;
  }
  return false;
}

// __cxa_atexit(): glibc's result (0, or -1 when the handler could not be registered).
int RegisterExitHandler(void (*fn)(void*), void* arg, void* dso) noexcept {
  // Resolved() is false only while dlsym() runs, which registers no exit handler; -1 is
  // glibc's own answer for a registration it cannot make.
  if (!Resolved() || real.cxa_atexit == nullptr) return -1;
  if (OwnObject(Addr(dso))) {
    runtime_internal::ReentrancyGuard guard;  // a block glibc takes now is memtrace's
    return real.cxa_atexit(fn, arg, dso);
  }
  // Passed on with a jump: the program's stacks show no frame of memtrace's.
  return real.cxa_atexit(fn, arg, dso);
}

}  // namespace
}  // namespace memtrace

// ---- The interposed functions ----------------------------------------------------------

using memtrace::BootstrapAlloc;
using memtrace::Caller;
using memtrace::IsBootstrap;
using memtrace::real;
using memtrace::Resolved;

#define MEMTRACE_EXPORT extern "C" __attribute__((visibility("default")))

using memtrace::BootstrapCall;

MEMTRACE_EXPORT void* malloc(size_t n) {
  if (__builtin_expect(!Resolved(), 0)) return BootstrapCall(n, 16, MEMTRACE_CALLER());
  void* p = real.malloc(n);
  memtrace::OnAlloc(p, n, MEMTRACE_CALLER());
  return p;
}

MEMTRACE_EXPORT void free(void* p) {
  if (p == nullptr) return;
  if (IsBootstrap(p)) {  // recorded, never passed on
    memtrace::OnFree(p);
    return;
  }
  if (__builtin_expect(!Resolved(), 0)) return;  // cannot be ours to pass on yet
  memtrace::OnFree(p);
  real.free(p);
}

MEMTRACE_EXPORT void* calloc(size_t count, size_t size) {
  size_t n;
  if (__builtin_mul_overflow(count, size, &n)) {
    errno = ENOMEM;
    return nullptr;
  }
  if (__builtin_expect(!Resolved(), 0)) return BootstrapCall(n, 16, MEMTRACE_CALLER());
  void* p = real.calloc(count, size);
  memtrace::OnAlloc(p, n, MEMTRACE_CALLER());
  return p;
}

MEMTRACE_EXPORT void* realloc(void* p, size_t n) {
  if (__builtin_expect(!Resolved(), 0)) {
    void* q = BootstrapCall(n, 16, MEMTRACE_CALLER());
    if (q != nullptr && p != nullptr) {
      memcpy(q, p, memtrace::BootstrapSize(p) < n ? memtrace::BootstrapSize(p) : n);
      memtrace::OnFree(p);
    }
    return q;
  }
  return memtrace::Realloc(p, n, MEMTRACE_CALLER());
}

MEMTRACE_EXPORT void* reallocarray(void* p, size_t count, size_t size) {
  size_t n;
  if (__builtin_mul_overflow(count, size, &n)) {
    errno = ENOMEM;
    return nullptr;
  }
  if (__builtin_expect(!Resolved(), 0)) return BootstrapCall(n, 16, MEMTRACE_CALLER());
  return memtrace::Realloc(p, n, MEMTRACE_CALLER());
}

MEMTRACE_EXPORT int posix_memalign(void** out, size_t alignment, size_t n) {
  if (__builtin_expect(!Resolved(), 0)) {
    *out = BootstrapCall(n, alignment, MEMTRACE_CALLER());
    return *out != nullptr ? 0 : ENOMEM;
  }
  const int rc = real.posix_memalign(out, alignment, n);
  if (rc == 0) memtrace::OnAlloc(*out, n, MEMTRACE_CALLER());
  return rc;
}

MEMTRACE_EXPORT void* aligned_alloc(size_t alignment, size_t n) {
  if (__builtin_expect(!Resolved(), 0)) return BootstrapCall(n, alignment, MEMTRACE_CALLER());
  void* p = real.aligned_alloc(alignment, n);
  memtrace::OnAlloc(p, n, MEMTRACE_CALLER());
  return p;
}

MEMTRACE_EXPORT void* memalign(size_t alignment, size_t n) {
  if (__builtin_expect(!Resolved(), 0)) return BootstrapCall(n, alignment, MEMTRACE_CALLER());
  void* p = real.memalign(alignment, n);
  memtrace::OnAlloc(p, n, MEMTRACE_CALLER());
  return p;
}

MEMTRACE_EXPORT void* valloc(size_t n) {
  if (__builtin_expect(!Resolved(), 0)) return BootstrapCall(n, 4096, MEMTRACE_CALLER());
  void* p = real.valloc(n);
  memtrace::OnAlloc(p, n, MEMTRACE_CALLER());
  return p;
}

MEMTRACE_EXPORT void* pvalloc(size_t n) {
  if (__builtin_expect(!Resolved(), 0)) return BootstrapCall(n, 4096, MEMTRACE_CALLER());
  void* p = real.pvalloc(n);
  memtrace::OnAlloc(p, n, MEMTRACE_CALLER());
  return p;
}

MEMTRACE_EXPORT size_t malloc_usable_size(void* p) {
  if (p == nullptr) return 0;
  if (IsBootstrap(p)) return memtrace::BootstrapSize(p);
  if (__builtin_expect(!Resolved(), 0)) return 0;
  return real.malloc_usable_size(p);
}

// The exec family: the capture ends before the image is replaced. glibc's exec*
// functions call the internal execve directly, so each is interposed.
// With children traced, each also keeps the interposer in the new program's environment
// (ChildEnvironment), as posix_spawn() below does.
MEMTRACE_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  Resolved();
  memtrace::BeforeExec(path);
  memtrace::WarnIfLoaderIgnoresPreload(path);
  const memtrace::ChildEnvironment env(envp);
  return real.execve(path, argv, env.get());
}

MEMTRACE_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  if (!Resolved() || real.fexecve == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  memtrace::BeforeExecOfDescriptor(fd);
  const memtrace::ChildEnvironment env(envp);
  return real.fexecve(fd, argv, env.get());
}

MEMTRACE_EXPORT int execveat(int dirfd, const char* path, char* const argv[],
                             char* const envp[], int flags) {
  if (!Resolved() || real.execveat == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  if (path[0] == '\0' && (flags & AT_EMPTY_PATH) != 0) {
    memtrace::BeforeExecOfDescriptor(dirfd);
  } else {
    memtrace::BeforeExec(path);
    if (path[0] == '/' || dirfd == AT_FDCWD) memtrace::WarnIfLoaderIgnoresPreload(path);
  }
  const memtrace::ChildEnvironment env(envp);
  return real.execveat(dirfd, path, argv, env.get(), flags);
}

// posix_spawn: the child is a new process, which glibc execs itself (through its
// internal execve, which no interposer reaches); with children traced, the environment
// it is given keeps the interposer. This process's capture goes on.
MEMTRACE_EXPORT int posix_spawn(pid_t* pid, const char* path,
                                const posix_spawn_file_actions_t* actions,
                                const posix_spawnattr_t* attr, char* const argv[],
                                char* const envp[]) {
  if (!Resolved() || real.posix_spawn == nullptr) return ENOSYS;
  memtrace::WarnIfLoaderIgnoresPreload(path);
  const memtrace::ChildEnvironment env(envp);
  return real.posix_spawn(pid, path, actions, attr, argv, env.get());
}

MEMTRACE_EXPORT int posix_spawnp(pid_t* pid, const char* file,
                                 const posix_spawn_file_actions_t* actions,
                                 const posix_spawnattr_t* attr, char* const argv[],
                                 char* const envp[]) {
  if (!Resolved() || real.posix_spawnp == nullptr) return ENOSYS;
  memtrace::WarnIfLoaderIgnoresPreload(file);
  const memtrace::ChildEnvironment env(envp);
  return real.posix_spawnp(pid, file, actions, attr, argv, env.get());
}

// unshare: see UnshareSingleThreaded.
MEMTRACE_EXPORT int unshare(int flags) { return memtrace::UnshareSingleThreaded(flags); }

// pthread_getattr_np: glibc allocates while it holds the queried thread's lock, and an
// allocation made there must not ask for this thread's stack bounds, which takes the
// same lock when the thread queried is this one (preload/unwind.cc, Bounds()).
MEMTRACE_EXPORT int pthread_getattr_np(pthread_t thread, pthread_attr_t* attr) {
  if (!Resolved() || real.pthread_getattr_np == nullptr) return ENOSYS;
  memtrace::runtime_internal::ThreadState& t = memtrace::runtime_internal::Tls();
  const bool outer = !t.in_stack_query;
  t.in_stack_query = true;
  const int rc = real.pthread_getattr_np(thread, attr);
  if (outer) t.in_stack_query = false;
  return rc;
}

// _exit and _Exit: the capture is finished first, on memtrace's thread, within a bound
// (BeforeQuickExit).
MEMTRACE_EXPORT [[noreturn]] void _exit(int status) {
  memtrace::QuickExitAfterCapture(&memtrace::RealFunctions::_exit, status);
}

MEMTRACE_EXPORT [[noreturn]] void _Exit(int status) {
  memtrace::QuickExitAfterCapture(&memtrace::RealFunctions::_Exit, status);
}

// Every exit handler's registration (atexit() calls it), passed on: see "Exit handlers".
MEMTRACE_EXPORT int __cxa_atexit(void (*fn)(void*), void* arg, void* dso) {
  return memtrace::RegisterExitHandler(fn, arg, dso);
}

// dlclose: the modules are noted first (BeforeDlclose).
MEMTRACE_EXPORT int dlclose(void* handle) {
  Resolved();
  memtrace::BeforeDlclose();
  // Found in libc since glibc 2.34; should it be missing, the object stays loaded.
  return real.dlclose != nullptr ? real.dlclose(handle) : 0;
}

MEMTRACE_EXPORT int execv(const char* path, char* const argv[]) {
  return execve(path, argv, environ);
}

MEMTRACE_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  Resolved();
  memtrace::BeforeExec(file);
  memtrace::WarnIfLoaderIgnoresPreload(file);
  const memtrace::ChildEnvironment env(envp);
  return real.execvpe(file, argv, env.get());
}

MEMTRACE_EXPORT int execvp(const char* file, char* const argv[]) {
  return execvpe(file, argv, environ);
}

namespace {
// The variadic forms: collect the arguments (and execle's environment) into an array,
// then exec through the interposed functions above.
constexpr int kMaxExecArgs = 4096;

enum class ExecKind { kPath, kSearch, kPathWithEnvironment };

int ExecList(ExecKind kind, const char* target, const char* first, va_list ap) {
  const char* argv[kMaxExecArgs];
  int n = 0;
  argv[n++] = first;
  while (argv[n - 1] != nullptr) {
    if (n == kMaxExecArgs) {
      errno = E2BIG;
      return -1;
    }
    argv[n++] = va_arg(ap, const char*);
  }
  auto* args = const_cast<char* const*>(argv);
  switch (kind) {
    case ExecKind::kPath: return execve(target, args, environ);
    case ExecKind::kSearch: return execvpe(target, args, environ);
    case ExecKind::kPathWithEnvironment: return execve(target, args, va_arg(ap, char* const*));
  }
  return -1;
}
}  // namespace

MEMTRACE_EXPORT int execl(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const int rc = ExecList(ExecKind::kPath, path, arg, ap);
  va_end(ap);
  return rc;
}

MEMTRACE_EXPORT int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const int rc = ExecList(ExecKind::kSearch, file, arg, ap);
  va_end(ap);
  return rc;
}

MEMTRACE_EXPORT int execle(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const int rc = ExecList(ExecKind::kPathWithEnvironment, path, arg, ap);
  va_end(ap);
  return rc;
}

// The mapping calls (the mmap layer). Before the real functions are known they go
// straight to the kernel.
namespace memtrace {
namespace {
// mmap and mmap64 (the same on 64-bit Linux), inlined into each so that the call site
// and the stack start at the exported function.
__attribute__((always_inline)) inline void* MmapCall(void* addr, size_t length, int prot,
                                                     int flags, int fd, off_t offset,
                                                     Caller caller) {
  if (__builtin_expect(!Resolved(), 0)) {
    return reinterpret_cast<void*>(syscall(SYS_mmap, addr, length, prot, flags, fd, offset));
  }
  if (!config.mmap) return real.mmap(addr, length, prot, flags, fd, offset);
  return Map(addr, length, prot, flags, fd, offset, caller);
}
}  // namespace
}  // namespace memtrace

MEMTRACE_EXPORT void* mmap(void* addr, size_t length, int prot, int flags, int fd,
                           off_t offset) {
  return memtrace::MmapCall(addr, length, prot, flags, fd, offset, MEMTRACE_CALLER());
}

MEMTRACE_EXPORT void* mmap64(void* addr, size_t length, int prot, int flags, int fd,
                             off_t offset) {
  return memtrace::MmapCall(addr, length, prot, flags, fd, offset, MEMTRACE_CALLER());
}

MEMTRACE_EXPORT int munmap(void* addr, size_t length) {
  if (__builtin_expect(!memtrace::Resolved(), 0)) {
    return static_cast<int>(syscall(SYS_munmap, addr, length));
  }
  if (!memtrace::config.mmap) return memtrace::real.munmap(addr, length);
  return memtrace::Unmap(addr, length);
}

MEMTRACE_EXPORT void* mremap(void* old_address, size_t old_size, size_t new_size, int flags,
                             ...) {
  void* new_address = nullptr;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    new_address = va_arg(ap, void*);
    va_end(ap);
  }
  if (__builtin_expect(!memtrace::Resolved(), 0)) {
    return reinterpret_cast<void*>(
        syscall(SYS_mremap, old_address, old_size, new_size, flags, new_address));
  }
  if (!memtrace::config.mmap) {
    return memtrace::real.mremap(old_address, old_size, new_size, flags, new_address);
  }
  return memtrace::Remap(old_address, old_size, new_size, flags, new_address,
                         MEMTRACE_CALLER());
}
