// Copyright 2026 The memtrace Authors.
//
// thread_state.h: all of memtrace's per-thread state, in one place.
//
// Life cycle, per thread:
//
//   1. Created lazily: the ThreadState is a constant-initialised thread_local, zero until
//      the thread first records. No constructor runs, no guard variable is checked.
//   2. Registered: the first record for a given recorder binds a ring to this thread
//      (RingBinding) through Recorder's slow path, and arms the exit hook.
//   3. Retired at thread exit: the exit hook (a pthread key's destructor, armed only on
//      the slow path; it runs after the thread's C++ thread_local destructors) retires
//      every ring still bound to a live recorder and sets `exited`. Records made after
//      that by later thread-exit code (other pthread keys' destructors, glibc's own
//      freeing memory) take one fresh ring, which the thread keeps to its end: no hook
//      runs after them to retire it, so the drainer does once the thread is gone
//      (RingRegistry::Orphan(), `orphaned_rings`). A thread that calls exit() keeps its
//      ring to the end: exit() runs no key destructors, and the final drain reads it.
//   4. Reclaimed after the final drain: the drainer reads what a retired ring holds, then
//      returns it to the registry for the next thread (transport/ring_registry.h).
//
// Recorder slots: each live Recorder owns one of kMaxRecorders slots and a generation
// number. A binding is valid only while its generation equals the slot's, so a thread
// never writes into a ring of a destroyed recorder, even if a new recorder reuses the slot.
// The slot table's mutex serialises thread exit against recorder destruction; it is never
// taken on the hot path.
//
// The reentrancy guard (`in_tracer`) is set while memtrace's own code runs on this thread
// (and for the drainer's whole life): any allocation made meanwhile passes through
// untraced, so the tracer never traces itself.
//
// Thread safety: a thread touches only its own ThreadState. The slot functions are
// thread-safe.

#ifndef MEMTRACE_RUNTIME_INTERNAL_THREAD_STATE_H_
#define MEMTRACE_RUNTIME_INTERNAL_THREAD_STATE_H_

#include <cstdint>

#include "transport/ring_registry.h"
#include "transport/spsc_ring.h"

namespace memtrace::runtime_internal {

inline constexpr int kMaxRecorders = 64;
inline constexpr uint32_t kMaxScopeDepth = 256;
// Stack hashes this thread sent (recorder.h, StackSite): two ways in each of
// kStackCacheSets sets, by the hash's low bits, the way used last first. 16 KiB: a program
// cycling through more stacks than this holds sends their frames again (sqlite3 has 875
// stacks; with 64 direct-mapped entries it sent 3.2M stack records for 2.7M memory
// events). The interposer keeps most stacks' site words with its walk memo and asks here
// only for the walks the memo does not serve.
inline constexpr uint32_t kStackCacheSets = 1024;

struct RingBinding {
  uint64_t generation;  // the recorder slot's generation this ring belongs to; 0 = none
  SpscRing* ring;
};

// The DWARF walk's predictor (preload/unwind.cc): entries, a power of two.
inline constexpr uint32_t kUnwindStepsLog2 = 8;

// One step of a stack, as the walk last saw it: the frame found above the return address
// `from`, as a RuleEntry word (preload/eh_frame.h: its return address and frame rule);
// 0 when empty.
struct UnwindStep {
  uint64_t from;
  uint64_t to;
};

// The DWARF walk's memo (preload/unwind.cc): the first kUnwindWalkFrames frames of the
// last walk that started at a given position of the interposed function's frame, with
// what the walk computed there, so that the next walk from that position can check the
// stack against it instead of walking it. kUnwindWalkWays ways in each of
// 2^kUnwindWalkSetsLog2 sets, by a hash of the position, replaced in turn. Four ways, not
// two: the hash of an absolute stack address moves with ASLR, and with two ways one run
// in twelve of sqlite3 put three of its seven busy positions in one set, which then
// missed 600,000 of 1,450,307 walks (each a full walk). Offsets are from the walk's
// `start` (StackState::unwind_walk_start), which every address here is at or above.
inline constexpr uint32_t kUnwindWalkSetsLog2 = 3;
inline constexpr uint32_t kUnwindWalkWays = 4;
inline constexpr uint32_t kUnwindWalkFrames = 16;
inline constexpr uint32_t kUnwindInitialRbp = ~uint32_t{0};
struct UnwindWalk {
  uint32_t frames;   // frames recorded below
  bool ended;        // the walk ended at its last recorded frame, by that frame's rule
  bool complete;     // and if so, whether that rule was one the walk follows (End)
  uint64_t entries[kUnwindWalkFrames];  // RuleEntry words (eh_frame.h): address and rule
  uint32_t cfa[kUnwindWalkFrames];      // frame i's CFA (the stack pointer in its caller)
  // Where rbp at frame i came from: the stack slot it was reloaded from at an earlier
  // frame, or kUnwindInitialRbp for the interposed function's saved rbp.
  uint32_t rbp_from[kUnwindWalkFrames];
  // The check a later walk from `start` runs instead of walking: every stack word this
  // walk's frames depend on, as an offset from the interposed function's frame (`start` -
  // 16) and the value read there. Frame i's return address (`ret`, which is also frame i)
  // was read at `ret_at[i]`; `rbp_checks` words hold the rbp a frame's CFA was computed
  // from. Flat arrays, so the check is independent loads and compares, no decoding.
  uint64_t ret[kUnwindWalkFrames];
  uint32_t ret_at[kUnwindWalkFrames];
  uint64_t rbp_value[kUnwindWalkFrames];
  uint32_t rbp_at[kUnwindWalkFrames];
  uint32_t rbp_checks;
  // A word the walk's caller keeps for the first `derived_frames` frames above (the
  // interposer: the stack's hash); cleared whenever they change. 0: none.
  uint32_t derived_frames;
  uint64_t derived;
};
static_assert(sizeof(UnwindWalk) == 664);

// What a thread that records call stacks keeps about them: the interposer's walk memo
// and predictor (preload/unwind.cc) and the recorder's cache of stacks sent (recorder.h).
// 41 KiB, mapped for each such thread on first need (Stacks()) and unmapped by its exit
// hook, not part of ThreadState: in the static TLS block it would take that much of
// every thread's stack, whose creator sized it for the program alone (Node.js starts a
// thread with a 32 KiB stack, which pthread_create() refuses, EINVAL, when static TLS
// leaves too little of it).
struct StackState {
  // The DWARF walk's predictor (preload/unwind.cc), indexed by a hash of `from`: given a
  // frame's return address, the caller's and its rule as last seen, so most frames skip
  // the shared rule cache. 4 KiB; on sqlite3's stacks it predicts 87% of frames (512
  // entries: 91%).
  UnwindStep unwind_steps[size_t{1} << kUnwindStepsLog2];
  // The walk memo (21 KiB): allocations made from the same stack depth mostly come
  // through the same frames (preload/unwind.cc). `unwind_walk_next`: the way of each set
  // that a walk from a new position takes next.
  UnwindWalk unwind_walks[size_t{1} << kUnwindWalkSetsLog2][kUnwindWalkWays];
  // Where each way's walk started (the stack pointer above the interposed function's
  // frame; 0: none yet), apart from the walks so that a look-up reads one line.
  uint64_t unwind_walk_start[size_t{1} << kUnwindWalkSetsLog2][kUnwindWalkWays];
  uint8_t unwind_walk_next[size_t{1} << kUnwindWalkSetsLog2];
  uint64_t stack_cache_generation;           // the recorder the cache below belongs to
  uint64_t stack_cache[kStackCacheSets][2];  // hashes whose frames this thread sent
};

struct ThreadState {
  // What every record reads comes first, so that with the first recorder's ring binding
  // it shares one cache line.
  uint32_t scope;                        // innermost scope path in force (0 = unscoped)
  uint32_t depth;                        // scopes entered and not yet exited
  bool in_tracer;                        // reentrancy guard
  bool internal_thread;                  // memtrace's own (drainer, sink writer)
  bool exit_hook_armed;
  bool exited;                           // the exit hook has run
  // After it: the recorder slots whose ring was handed to the drainer to retire when this
  // thread is gone (step 3), one bit each.
  uint64_t orphaned_rings;
  // Inside pthread_getattr_np(), interposed (preload/exports.inc): glibc holds the
  // queried thread's lock while it allocates, and the stack bounds the walk would ask it
  // for need the same lock when that thread is this one (preload/unwind.cc, Bounds()).
  bool in_stack_query;
  // Between the interposer's fork() handlers: this thread holds the drainer
  // (Recorder::HoldForFork), and the parent's or the child's handler lets it go.
  bool fork_hold;
  RingBinding rings[kMaxRecorders];
  uint32_t scope_stack[kMaxScopeDepth];  // the path in force before each enter
  // This thread's stack, for walking frame pointers safely (preload/unwind.h); 0 until
  // known. Kept here because this is the one initial-exec TLS variable: gold resolves an
  // initial-exec access to a second, file-local thread_local in a shared object to the
  // start of the module's TLS block, which aliases this struct.
  uint64_t stack_low;
  uint64_t stack_high;
  // The thread's call-stack state (StackState, below), or null until it first needs it.
  StackState* stacks;
  uint64_t unwind_memo_hits;  // walks the memo served (checked, not walked), for tests
  // The interposer's byte sampling: bytes left until the next sample, and the thread's
  // random state (0 until first used).
  int64_t sample_countdown;
  uint64_t sample_random;
  // The interposer's line of counts of what its filters left out (preload/
  // filter_counts.h), plus one; 0 until a filter first leaves out one of its allocations.
  uint32_t filter_line;
};

// Returns the thread's StackState, mapping it (zeroed) on its first call; null when that
// fails or the thread's exit hook has run (the memory goes back then). Slow path: callers
// on the hot path read ThreadState::stacks and come here only when it is null.
StackState* Stacks(ThreadState& t) noexcept;

// Constant-initialised and trivially destructible, so access is a plain TLS load: the
// declaration says constinit, so no caller goes through a TLS wrapper function.
// Defined once, in thread_state.cc, never inline: a program built against libmemtrace.so
// must reach the library's copy from its own inlined code. An inline thread_local is
// unique across shared objects only as g++ emits it (STB_GNU_UNIQUE); clang++ makes it a
// weak symbol the executable keeps a copy of, so that the program's inlined records and
// the library saw two states (scopes lost, every thread's records taken as another's).
// initial-exec: the state is reached with one %fs-relative load and never allocated
// lazily (a global-dynamic access may call malloc on a thread's first touch, which the
// interposer in preload/ could not allow). memtrace is linked into executables or
// preloaded, never dlopen()ed, so the static TLS block always has room.
// (Sanitizer builds keep the default model: GCC's UBSan misreads an initial-exec access
// in an executable as a null pointer, and the interposer is never built with them.)
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MEMTRACE_TLS_MODEL
#else
#define MEMTRACE_TLS_MODEL __attribute__((tls_model("initial-exec")))
#endif
extern thread_local constinit ThreadState tls_state MEMTRACE_TLS_MODEL;

inline ThreadState& Tls() noexcept { return tls_state; }

// Ensures rings bound to this thread are retired when it exits. Slow path only.
void ArmExitHook() noexcept;

// Marks the calling thread as memtrace's own (the drainer): never traced.
inline void MarkInternalThread() noexcept {
  Tls().in_tracer = true;
  Tls().internal_thread = true;
}

// Sets the reentrancy guard for a scope; nests.
class ReentrancyGuard {
 public:
  ReentrancyGuard() noexcept : was_(Tls().in_tracer) { Tls().in_tracer = true; }
  ~ReentrancyGuard() { Tls().in_tracer = was_; }
  ReentrancyGuard(const ReentrancyGuard&) = delete;
  ReentrancyGuard& operator=(const ReentrancyGuard&) = delete;

 private:
  bool was_;
};

// Recorder slots (see the header comment).
struct SlotLease {
  int index;            // -1 when every slot is taken
  uint64_t generation;  // never 0
};
SlotLease AcquireRecorderSlot(RingRegistry* registry) noexcept;
void ReleaseRecorderSlot(int index) noexcept;

// fork(): the slot table's lock, held by the forking thread across the call (a
// pthread_atfork() prepare handler takes it, the parent's and the child's handlers let it
// go). Otherwise a thread that was exiting (its rings being retired) or starting a tracer
// as another forked would leave the child a lock no thread of its owns, and the child's
// first tracer would wait for it forever. No thread holding it waits for anything.
void LockRecorderSlotsForFork() noexcept;
void UnlockRecorderSlotsAfterFork() noexcept;

}  // namespace memtrace::runtime_internal

#endif  // MEMTRACE_RUNTIME_INTERNAL_THREAD_STATE_H_
