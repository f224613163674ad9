// Copyright 2026 The memtrace Authors.
//
// A program for the interposer's tests (preload_*_test.cc), run under LD_PRELOAD.
//
// Every block it allocates on purpose has an odd size in [50001, 59999], which neither
// glibc nor libstdc++ ever asks for, so the test can pick the program's own operations out
// of a capture that also holds the runtime's. The program keeps its own count of what it
// did (not memtrace's) and prints it as "allocs=A frees=F live_count=C live_bytes=B
// in_place=I moved=M" (I and M: reallocs of markers that kept the block where it was, and
// that moved it) before it ends; the test compares the capture with that.
//
// Modes (argv[1]):
//   basic       every interposed entry point, four threads, frees on other threads,
//               realloc in place and moving, C++ new/delete in all their forms
//   calls       one thread makes 600 malloc-family calls on blocks of odd sizes in
//               [80001, 99999] (not markers: above the 72,704 bytes libstdc++ takes for its
//               exception pool at start, below glibc's 128 KiB mmap threshold): malloc, calloc,
//               reallocarray, realloc that grows or shrinks (in place or moving); frees
//               half of the blocks and keeps the rest; its counts line ends "calls=K": the calls that
//               allocated, a realloc being one (heaptrack's "calls to allocation functions")
//   exit-thread a worker thread calls exit(5) while the main thread keeps allocating
//   atexit      main returns with 400 markers live; an atexit handler frees them (as a
//               server's shutdown does, after exit() has run the thread's TLS destructors)
//   exit-handlers N
//               registers N exit handlers of its own with atexit() and ends: glibc's list
//               of them starts with room for 32, and takes a 1,040-byte block from malloc
//               for each 32 more
//   fork        a multithreaded parent forks; the child allocates, frees and exits
//   fork-traced a parent with three threads churning small blocks keeps 100 markers live,
//               200 of them allocated by a thread that ended just before, and forks. The
//               child frees all but 10 of them, allocates 30 and frees 10 of those, prints
//               "child allocs=A ..." (the markers it inherited counted as allocations, as
//               its own capture records them under MEMTRACE_TRACE_FORKS) and exits; the
//               parent waits for it, frees its markers and prints its counts
//   exec        allocates, then execs argv[2] (with argv[3...])
//   run-with-env HOW PROGRAM ARGS...
//               allocates, prints its counts, then runs PROGRAM with an environment of
//               its own, as `env -i` or Python's subprocess.run(env={}) do. HOW:
//               execve-empty (no variables at all), execve-preload (only
//               LD_PRELOAD=libm.so.6: the program's own preload list), execve-large
//               (LD_PRELOAD=libm.so.6 among 400 variables), fexecve-empty
//               (the program opened, and exec'd by descriptor), spawn-empty
//               (posix_spawn, then waits for the child: exits with its status),
//               vfork-empty (vfork and execve, then waits likewise)
//   crash       allocates, prints its counts, then dereferences a null pointer
//   two-children-at-once N   forks two children that each hold N bytes at one moment
//   shrink-below N [same]   blocks of 4N bytes shrunk in place below N (with `same`:
//               reallocated to their own size) and freed; none of them left
//   raise N     allocates, prints its counts, then raises signal N (left to its default
//               action: it ends the process); exit 9 if it returns
//   raise-after-default N HOW   the same after asking for N's default action itself (HOW:
//               signal, sigaction, sysv_signal or sigset); exit 8 if it does not read back
//               as the default
//   signal-as-libc  signal() with siginterrupt() and with SIG_ERR, as untraced; exit 8 if not
//   raise-like-a-shell N   the same, N caught by a handler that puts back the disposition
//               found at start, with no flags, and sends N again; exit 8 if what was
//               found does not read back as the default
//   stack       allocates through nested functions and prints their addresses
//   two-callers allocates through Inner() from two callers, FromLeft() three times and
//               FromRight() twice (blocks of 50,023 bytes, kept live): two stacks with
//               one site name; prints its counts
//   mmap        anonymous mappings: a hole cut in one, a whole-mapping mremap that grows
//               it, MAP_FIXED over part of another, a mapping moved by mremap onto
//               part of another, a mapping made on one thread and
//               unmapped on another, a file mapping (not an allocation); prints the
//               pages it leaves mapped as "mmap_live_pages=P mmap_live_mappings=M"
//   threads     prints "NAME=CPUS" for each of its threads named memtrace-* (the CPUs the
//               kernel lets it run on, /proc's Cpus_allowed_list), once the drainer, the
//               writer and the exit thread are there (they start with the program)
//   hold FILE   allocates, prints its counts, then waits for FILE to exist (at most a
//               minute) before it ends: a process whose capture stays open meanwhile
//   close-fds FILE
//               closes every descriptor above stderr (as a daemon does), opens FILE and
//               takes the next 1,000 numbers with copies of it, allocates, writes "USER\n"
//               to FILE and ends: the capture's descriptor is gone, and its number is
//               the program's
//   plugin LIB  dlopen()s LIB, allocates a marker through its
//               memtrace_test_plugin_alloc() (kept live), dlclose()s it, prints its counts
//   new         allocates a marker with new[] inside MakeMarkerWithNew(), prints its counts
//   inlined     allocates a marker in code inlined into a function built with -g2
//               (tests/inline_frames.h), prints its counts
//   std-containers
//               allocates only through the C++ standard library, in functions built at
//               -O2 with -g2 (tests/std_container_frames.h): grows a vector of 1,000
//               particles, makes a shared particle, fills a map of 100 entries and an
//               absl::flat_hash_map of 1,000
//   quick-exit  allocates, prints its counts, and ends with _exit(7) (no destructors)
//   exit-in-handler
//               a SIGTERM handler calls _exit(0) if the signal came while the program was
//               inside malloc() or free(), else _exit(10); prints "ready", then allocates
//               and frees until the signal comes (at most a minute)
//   raw-fork    forks with _Fork() (no fork handlers run, so the child keeps an active
//               tracer copy without its drainer); the child makes 100,000 small
//               allocations and ends; the parent prints "child finished" if it did within
//               30 s ("child stuck" otherwise, and kills it), then allocates and prints
//               its counts
//   getattr     a thread asks for its own attributes (pthread_getattr_np) before anything
//               else, as every JVM thread does: glibc allocates while it holds the
//               thread's lock, so that is the thread's first allocation; then it
//               allocates markers. SIGALRM ends the program after 30 s (a deadlock)
//   unshare-threaded
//               as unshare, with a second thread of the program's running: the call fails
//               (EINVAL) traced or not; prints "unshare failed: ..." then allocates more
//               and prints the counts of every marker (exit 6 if the call succeeded)
//   small-stack a thread with a 32 KiB stack (Node.js starts one) allocates markers
//               (exit 5 if pthread_create refuses the stack)
//   unshare     allocates markers, enters a new user namespace (unshare(CLONE_NEWUSER),
//               which fails in a process with more than one thread), prints "unshared" or
//               "unshare failed: ERROR" (exit 4), allocates more (untraced) and prints
//               the counts of the markers allocated before
//   signalfd    blocks SIGTERM, as a service reading it from a signalfd does, allocates,
//               prints "ready", waits for SIGTERM there (at most a minute), prints
//               "graceful shutdown" and its counts
//   sizes       for the recording filters (--min-size, --sample): the main thread and
//               three others each allocate and free 2,000 small blocks (16 to 408 bytes)
//               and 25 markers, with malloc and free only; prints its counts of the
//               markers and "small=N small_bytes=B"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "memtrace/markers.h"
#include "tests/inline_frames.h"
#include "tests/std_container_frames.h"

namespace {

std::atomic<uint64_t> allocs{0};
std::atomic<uint64_t> frees{0};
std::atomic<int64_t> live_count{0};
std::atomic<int64_t> live_bytes{0};
// Reallocs of markers, by what realloc did: kept the block where it was, or moved it.
std::atomic<uint64_t> reallocs_in_place{0};
std::atomic<uint64_t> reallocs_moved{0};

size_t MarkerSize(uint64_t i) { return 50001 + 2 * (i % 4999); }

void CountAlloc(size_t n) {
  allocs.fetch_add(1, std::memory_order_relaxed);
  live_count.fetch_add(1, std::memory_order_relaxed);
  live_bytes.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed);
}

void CountFree(size_t n) {
  frees.fetch_add(1, std::memory_order_relaxed);
  live_count.fetch_sub(1, std::memory_order_relaxed);
  live_bytes.fetch_sub(static_cast<int64_t>(n), std::memory_order_relaxed);
}

// The counts as the line the preload tests parse (ParseCounts, preload_test_support.h).
std::string CountsLine() {
  char line[224];
  snprintf(line, sizeof(line),
           "allocs=%llu frees=%llu live_count=%lld live_bytes=%lld in_place=%llu moved=%llu",
           static_cast<unsigned long long>(allocs.load()),
           static_cast<unsigned long long>(frees.load()),
           static_cast<long long>(live_count.load()), static_cast<long long>(live_bytes.load()),
           static_cast<unsigned long long>(reallocs_in_place.load()),
           static_cast<unsigned long long>(reallocs_moved.load()));
  return line;
}

void PrintCounts() {
  printf("%s\n", CountsLine().c_str());
  fflush(stdout);
}

// Allocates `count` markers and frees every other one, counting both.
void AllocateMarkers(int count) {
  for (int i = 0; i < count; ++i) {
    void* p = malloc(MarkerSize(i));
    if (p == nullptr) {
      fprintf(stderr, "preload_target: allocation failed\n");
      exit(3);
    }
    CountAlloc(MarkerSize(i));
    if (i % 2 == 0) {
      CountFree(MarkerSize(i));
      free(p);
    }
  }
}

struct Block {
  void* p;
  size_t n;
};

// A mailbox of blocks handed from one thread to another, which frees them.
class Mailbox {
 public:
  void Put(Block b) {
    std::lock_guard<std::mutex> lock(mu_);
    blocks_.push_back(b);
  }
  bool Take(Block* b) {
    std::lock_guard<std::mutex> lock(mu_);
    if (blocks_.empty()) return false;
    *b = blocks_.back();
    blocks_.pop_back();
    return true;
  }

 private:
  std::mutex mu_;
  std::vector<Block> blocks_;
};

void* MustAlloc(void* p) {
  if (p == nullptr) {
    fprintf(stderr, "preload_target: allocation failed\n");
    exit(3);
  }
  return p;
}

// Reallocs a block to `n2` bytes, counting what realloc did: kept the block where it
// was, or moved it.
void ReallocCounted(Block* b, size_t n2) {
  const auto before = reinterpret_cast<uintptr_t>(b->p);
  b->p = MustAlloc(realloc(b->p, n2));
  if (reinterpret_cast<uintptr_t>(b->p) == before) {
    reallocs_in_place.fetch_add(1, std::memory_order_relaxed);
  } else {
    reallocs_moved.fetch_add(1, std::memory_order_relaxed);
  }
  live_bytes.fetch_add(static_cast<int64_t>(n2) - static_cast<int64_t>(b->n));
  b->n = n2;
}

// One thread's share of `basic`: every entry point; every third block goes to the next
// thread's mailbox to be freed there.
void BasicWorker(int id, int rounds, Mailbox* mine, Mailbox* next, std::vector<Block>* kept) {
  for (int r = 0; r < rounds; ++r) {
    const uint64_t i = static_cast<uint64_t>(id) * 1000003 + r;
    Block b{nullptr, MarkerSize(i)};
    switch (r % 8) {
      case 0: b.p = MustAlloc(malloc(b.n)); break;
      case 1: {
        b.n = 50001 + 2 * (r % 100);  // count * size, both odd: an odd product
        b.p = MustAlloc(calloc(1, b.n));
        break;
      }
      case 2: {
        void* p = nullptr;
        if (posix_memalign(&p, 64, b.n) != 0) MustAlloc(nullptr);
        b.p = p;
        break;
      }
      case 3: b.p = MustAlloc(aligned_alloc(128, b.n)); break;
      case 4: b.p = MustAlloc(memalign(256, b.n)); break;
      case 5: b.p = MustAlloc(valloc(b.n)); break;
      case 6: b.p = MustAlloc(reallocarray(nullptr, 1, b.n)); break;
      case 7: b.p = MustAlloc(pvalloc(b.n)); break;
    }
    CountAlloc(b.n);
    // Grow or shrink some blocks: realloc keeps the block (in place or moved).
    if (r % 5 == 0 && r % 8 != 5 && r % 8 != 7 && r % 8 != 2 && r % 8 != 3 && r % 8 != 4) {
      ReallocCounted(&b, MarkerSize(i + 17));
    }
    if (r % 3 == 0) {
      next->Put(b);
    } else if (r % 3 == 1) {
      CountFree(b.n);
      free(b.p);
    } else if (r % 100 == 2) {
      kept->push_back(b);  // live at the end
    } else {
      CountFree(b.n);
      free(b.p);
    }
    Block other;
    while (mine->Take(&other)) {
      CountFree(other.n);
      free(other.p);
    }
  }
}

void Basic() {
  constexpr int kThreads = 4;
  constexpr int kRounds = 3000;
  Mailbox boxes[kThreads];
  std::vector<Block> kept[kThreads];
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back(BasicWorker, t, kRounds, &boxes[t], &boxes[(t + 1) % kThreads],
                         &kept[t]);
  }
  for (auto& th : threads) th.join();
  for (Mailbox& box : boxes) {
    Block b;
    while (box.Take(&b)) {
      CountFree(b.n);
      free(b.p);
    }
  }
  // C++: libstdc++ reaches malloc/aligned_alloc/free for every form. Aligned new rounds
  // the size up to the alignment (an even size, so not a marker and not counted here;
  // its release must still match: the test checks there are no unknown frees).
  for (int i = 0; i < 100; ++i) {
    // The pointers escape, so the compiler cannot drop a new/delete pair.
    char* a = new char[50011];
    asm volatile("" : : "r"(a) : "memory");
    CountAlloc(50011);
    auto* s = static_cast<char*>(::operator new(50013));
    CountAlloc(50013);
    auto* n = new (std::nothrow) char[50015];
    asm volatile("" : : "r"(n) : "memory");
    CountAlloc(50015);
    auto* al = static_cast<char*>(::operator new(50017, std::align_val_t{128}));
    delete[] a;
    CountFree(50011);
    ::operator delete(s, 50013);
    CountFree(50013);
    delete[] n;
    CountFree(50015);
    ::operator delete(al, 50017, std::align_val_t{128});
  }
  // malloc_usable_size on a live block; the usable size covers the request.
  void* probe = MustAlloc(malloc(50019));
  CountAlloc(50019);
  if (malloc_usable_size(probe) < 50019) {
    fprintf(stderr, "preload_target: malloc_usable_size too small\n");
    exit(4);
  }
  kept[0].push_back(Block{probe, 50019});
  PrintCounts();
  if (getenv("PRELOAD_TARGET_LIST_LIVE") != nullptr) {
    for (const auto& blocks : kept) {
      for (const Block& b : blocks) printf("live %p %zu\n", b.p, b.n);
    }
  }
}

void ExitFromThread() {
  std::atomic<bool> stop{false};
  std::thread worker([&] {
    AllocateMarkers(1000);
    PrintCounts();
    exit(5);  // from this thread, while main allocates
  });
  for (uint64_t i = 0; !stop.load(); ++i) {
    void* p = malloc(64);
    free(p);
  }
  worker.join();
}

std::vector<Block>* kept_for_atexit = nullptr;

void FreeKeptAtExit() {
  for (const Block& b : *kept_for_atexit) {
    CountFree(b.n);
    free(b.p);
  }
  PrintCounts();
}

void ExitHandler() {}

__attribute__((noinline)) void RegisterExitHandlers(int n) {
  for (int i = 0; i < n; ++i) {
    if (atexit(ExitHandler) != 0) exit(3);
  }
}

void FreeAtExit() {
  kept_for_atexit = new std::vector<Block>();  // never freed: still in use during exit
  kept_for_atexit->reserve(400);
  for (uint64_t i = 0; i < 400; ++i) {
    const size_t n = MarkerSize(i);
    kept_for_atexit->push_back(Block{MustAlloc(malloc(n)), n});
    CountAlloc(n);
  }
  atexit(FreeKeptAtExit);
}

// Three threads allocating and freeing small blocks until Stop(), so that a fork comes
// while other threads record.
class ChurningThreads {
 public:
  ChurningThreads() {
    for (int t = 0; t < 3; ++t) {
      threads_.emplace_back([this] {
        // Relaxed: pairs with the store in Stop(), which orders nothing else.
        while (!stop_.load(std::memory_order_relaxed)) free(malloc(128));
      });
    }
  }
  void Stop() {
    // Relaxed: only ends the loops; join() orders the rest.
    stop_.store(true, std::memory_order_relaxed);
    for (auto& th : threads_) th.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// Waits for a forked child, and exits 6 unless it exited 0.
void WaitForChild(pid_t child) {
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "preload_target: the forked child failed\n");
    exit(6);
  }
}

void Fork() {
  ChurningThreads churn;
  AllocateMarkers(100);
  const pid_t child = fork();
  if (child == 0) {
    // The child: allocates and frees markers of its own, untraced (documented), then
    // exits through exit(), which runs the interposer's destructor.
    for (int i = 0; i < 500; ++i) free(MustAlloc(malloc(MarkerSize(i))));
    exit(0);
  }
  WaitForChild(child);
  churn.Stop();
  PrintCounts();
}

void ForkTraced() {
  ChurningThreads churn;
  std::vector<std::pair<void*, size_t>> live;
  std::mutex mu;
  auto allocate = [&](uint64_t i) {
    void* p = MustAlloc(malloc(MarkerSize(i)));
    CountAlloc(MarkerSize(i));
    std::lock_guard<std::mutex> lock(mu);
    live.emplace_back(p, MarkerSize(i));
  };
  for (int i = 0; i < 100; ++i) allocate(i);
  // Records published by a thread that is gone, most likely not yet applied at the fork.
  std::thread([&] {
    for (int i = 100; i < 300; ++i) allocate(i);
  }).join();
  const pid_t child = fork();
  if (child == 0) {
    // What the child's capture counts: the markers live now, as allocations.
    allocs.store(static_cast<uint64_t>(live_count.load()));
    frees.store(0);
    for (size_t i = 10; i < live.size(); ++i) {
      CountFree(live[i].second);
      free(live[i].first);
    }
    for (int i = 0; i < 30; ++i) {
      void* p = MustAlloc(malloc(MarkerSize(1000 + i)));
      CountAlloc(MarkerSize(1000 + i));
      if (i % 3 == 0) {
        CountFree(MarkerSize(1000 + i));
        free(p);
      }
    }
    printf("child %s\n", CountsLine().c_str());
    fflush(stdout);
    exit(0);
  }
  WaitForChild(child);
  churn.Stop();
  for (const auto& [p, n] : live) {
    CountFree(n);
    free(p);
  }
  PrintCounts();
}

void Exec(char** argv) {
  AllocateMarkers(10);
  PrintCounts();
  execv(argv[0], argv);
  perror("preload_target: execv");
  exit(7);
}

void RunWithEnvironment(const std::string& how, char** argv) {
  AllocateMarkers(10);
  PrintCounts();
  fflush(stdout);
  char* empty[] = {nullptr};
  char preload[] = "LD_PRELOAD=libm.so.6";
  char* own_preload[] = {preload, nullptr};
  if (how == "execve-empty") {
    execve(argv[0], argv, empty);
  } else if (how == "execve-preload") {
    execve(argv[0], argv, own_preload);
  } else if (how == "execve-large") {
    static std::vector<std::string> variables;
    static std::vector<char*> large;
    for (int i = 0; i < 400; ++i) variables.push_back("V" + std::to_string(i) + "=x");
    for (std::string& v : variables) large.push_back(v.data());
    large.insert(large.begin() + 200, preload);
    large.push_back(nullptr);
    execve(argv[0], argv, large.data());
  } else if (how == "fexecve-empty") {
    const int fd = open(argv[0], O_RDONLY | O_CLOEXEC);
    if (fd >= 0) fexecve(fd, argv, empty);
  } else if (how == "spawn-empty" || how == "vfork-empty") {
    pid_t pid = -1;
    if (how == "spawn-empty") {
      if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv, empty) != 0) pid = -1;
    } else {
      pid = vfork();
      if (pid == 0) {
        execve(argv[0], argv, empty);
        _exit(127);
      }
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) exit(8);
    exit(WIFEXITED(status) ? WEXITSTATUS(status) : 9);
  } else {
    fprintf(stderr, "preload_target: run-with-env: unknown way '%s'\n", how.c_str());
    exit(2);
  }
  perror("preload_target: run-with-env");
  exit(7);
}

void RaiseSignal(int sig) {
  AllocateMarkers(50);
  PrintCounts();
  raise(sig);
  exit(9);
}

// Whether `sig`'s disposition reads back as the default action, as a program untraced
// would find it.
bool ReadsBackAsDefault(int sig) {
  struct sigaction now {};
  return sigaction(sig, nullptr, &now) == 0 && now.sa_handler == SIG_DFL && now.sa_flags == 0;
}

// Asks for `sig`'s default action itself (`how`: "signal" or "sigaction"), as dash does
// for SIGTERM, then raises it. Exits 8 if the disposition does not read back as asked.
void RaiseAfterSettingTheDefault(int sig, const char* how) {
  if (strcmp(how, "signal") == 0) {
    if (signal(sig, SIG_DFL) != SIG_DFL) exit(8);
  } else if (strcmp(how, "sysv_signal") == 0) {
    if (sysv_signal(sig, SIG_DFL) != SIG_DFL) exit(8);
  } else if (strcmp(how, "sigset") == 0) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // programs still call it
    if (sigset(sig, SIG_DFL) != SIG_DFL) exit(8);
#pragma GCC diagnostic pop
  } else {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    struct sigaction old {};
    if (sigaction(sig, &dfl, &old) != 0 || old.sa_handler != SIG_DFL) exit(8);
  }
  if (!ReadsBackAsDefault(sig)) exit(8);
  RaiseSignal(sig);
}

// As a shell ends by a signal it caught: the disposition found at start is saved, a
// handler of the program's installed, and from it the saved disposition is put back with
// the shell's own flags (none) before the signal is sent again. Exits 8 if what was found
// at start does not read back as the default action.
struct sigaction saved_at_start;
void RestoreTheSavedAndRaiseAgain(int sig) {
  struct sigaction restore = saved_at_start;
  restore.sa_flags = 0;
  sigaction(sig, &restore, nullptr);
  kill(getpid(), sig);
}
// signal() as the C library does it, for everything but a stop signal's default: a
// signal siginterrupt() marked interrupts a read() (no restart), and SIG_ERR is refused
// with EINVAL. Exits 0 when both hold, 8 otherwise.
void InterruptedRead(int) {}
void SignalAsTheCLibraryDoes() {
  errno = 0;
  if (signal(SIGUSR1, SIG_ERR) != SIG_ERR || errno != EINVAL) exit(8);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // programs still call it
  siginterrupt(SIGALRM, 1);
#pragma GCC diagnostic pop
  if (signal(SIGALRM, &InterruptedRead) == SIG_ERR) exit(8);
  int fds[2];
  if (pipe(fds) != 0) exit(8);
  ualarm(100000, 0);
  char c;
  const ssize_t n = read(fds[0], &c, 1);  // nothing comes: only the alarm ends it
  if (n != -1 || errno != EINTR) exit(8);
  exit(0);
}

void RaiseLikeAShell(int sig) {
  if (sigaction(sig, nullptr, &saved_at_start) != 0 || saved_at_start.sa_handler != SIG_DFL) {
    exit(8);
  }
  struct sigaction mine {};
  mine.sa_handler = &RestoreTheSavedAndRaiseAgain;
  sigemptyset(&mine.sa_mask);
  sigaction(sig, &mine, nullptr);
  RaiseSignal(sig);
}

// A real fault, so the interposer's SIGSEGV path runs: UBSan's null check (this program is
// built with it under --config=asan and --config=tsan) would end it with a report instead.
// noinline: gcc drops the attribute of a function it inlines into a checked caller.
__attribute__((noinline, no_sanitize("null"))) void Crash() {
  AllocateMarkers(50);
  PrintCounts();
  volatile int* null = nullptr;
  *null = 1;
}

void CloseDescriptors(const char* file) {
  for (int fd = 3; fd < 4096; ++fd) close(fd);
  const int own = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (own < 0) {
    perror("open");
    exit(3);
  }
  for (int i = 0; i < 1000; ++i) {
    if (dup(own) < 0) break;  // the limit on open files
  }
  AllocateMarkers(200);
  usleep(20000);  // a few epochs: the writer writes meanwhile
  AllocateMarkers(200);
  if (write(own, "USER\n", 5) != 5) exit(4);
  PrintCounts();
}

void Plugin(const char* library) {
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    fprintf(stderr, "preload_target: %s\n", dlerror());
    exit(3);
  }
  using AllocFn = void* (*)(size_t);
  auto alloc = reinterpret_cast<AllocFn>(dlsym(handle, "memtrace_test_plugin_alloc"));
  if (alloc == nullptr) exit(3);
  MustAlloc(alloc(50077));
  CountAlloc(50077);
  dlclose(handle);
  PrintCounts();
}

__attribute__((noinline)) char* MakeMarkerWithNew(size_t n) {
  char* p = new char[n];
  asm volatile("" : : "r"(p) : "memory");  // a call, not a tail call
  return p;
}

void UnshareThreaded() {
  std::atomic<bool> stop{false};
  std::thread other([&] {
    while (!stop.load()) usleep(1000);
  });
  AllocateMarkers(30);
  const bool failed = unshare(CLONE_NEWUSER) != 0;
  printf("unshare %s: %s\n", failed ? "failed" : "succeeded", strerror(failed ? errno : 0));
  stop.store(true);
  other.join();
  if (!failed) exit(6);
  AllocateMarkers(30);
  PrintCounts();
}

void SmallStack() {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 32 * 1024);
  pthread_t thread;
  const int rc = pthread_create(
      &thread, &attr,
      [](void*) -> void* {
        AllocateMarkers(20);
        return nullptr;
      },
      nullptr);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    printf("pthread_create failed: %s\n", strerror(rc));
    exit(5);
  }
  pthread_join(thread, nullptr);
  PrintCounts();
}

void Unshare() {
  AllocateMarkers(30);
  if (unshare(CLONE_NEWUSER) != 0) {
    printf("unshare failed: %s\n", strerror(errno));
    exit(4);
  }
  printf("unshared\n");
  const std::string before = CountsLine();
  AllocateMarkers(30);  // after the capture ended: not in it
  printf("%s\n", before.c_str());
}

void GetattrThread() {
  alarm(30);  // a deadlock ends the program, by SIGALRM, instead of the test
  std::thread t([] {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) {
      fprintf(stderr, "preload_target: pthread_getattr_np failed\n");
      exit(3);
    }
    void* stack = nullptr;
    size_t size = 0;
    pthread_attr_getstack(&attr, &stack, &size);
    pthread_attr_destroy(&attr);
    AllocateMarkers(20);
    printf("stack of %zu bytes\n", size);
  });
  t.join();
  PrintCounts();
}

void InlinedMarker() {
  MustAlloc(memtrace_inline_test::AllocateThroughInlined(50039));
  CountAlloc(50039);
  PrintCounts();
}

void StdContainers() {
  const std::vector<memtrace_std_test::Particle> particles = memtrace_std_test::GrowParticles(1000);
  const std::shared_ptr<memtrace_std_test::Particle> shared = memtrace_std_test::MakeParticle();
  const std::map<int, int> map = memtrace_std_test::FillMap(100);
  const absl::flat_hash_map<int, int> hash_map = memtrace_std_test::FillHashMap(1000);
  printf("particles=%zu shared=%ld map=%zu hash_map=%zu\n", particles.size(),
         shared.use_count(), map.size(), hash_map.size());
}

__attribute__((noinline)) void NewMarker() {
  char* p = MakeMarkerWithNew(50035);
  CountAlloc(50035);
  PrintCounts();
  asm volatile("" : : "r"(p) : "memory");
}

void QuickExit() {
  AllocateMarkers(100);
  PrintCounts();
  _exit(7);
}

// _exit() with a SIGTERM on its way, as a process pool's worker ends (it calls _exit()
// as its parent terminates it): a thread sends one SIGTERM `delay_us` microseconds after
// main() is about to call _exit(), so that it lands while the trailer is being written.
void QuickExitUnderSigterm(long delay_us) {
  AllocateMarkers(100);
  PrintCounts();
  static std::atomic<bool> exiting{false};
  std::thread([delay_us] {
    while (!exiting.load(std::memory_order_acquire)) {
    }
    const timespec pause{delay_us / 1'000'000, (delay_us % 1'000'000) * 1000};
    nanosleep(&pause, nullptr);
    kill(getpid(), SIGTERM);
  }).detach();
  exiting.store(true, std::memory_order_release);
  _exit(7);
}

// A forked child whose pid an earlier capture already has in its name (pids wrap): the
// files DIR/cap.<pid>.mtb for the next 64 pids are made first, each holding
// "placeholder\n"; then a child is forked, allocates and exits. Prints "child=PID".
// Blocks that shrink in place below `min_size` (memtrace run --min-size) and are freed:
// 100 of 4 * min_size bytes, each reallocated to min_size / 8 (glibc shrinks in place)
// and freed, then 100 more of 4 * min_size, freed. None of them is left live. With
// `shrink` false, each is reallocated to its own size instead. Prints how many of the
// reallocations stayed in place.
void ShrinkBelow(size_t min_size, bool shrink) {
  int in_place = 0;
  for (int i = 0; i < 100; ++i) {
    void* p = malloc(4 * min_size);
    if (p == nullptr) exit(8);
    void* q = realloc(p, shrink ? min_size / 8 : 4 * min_size);
    if (q == nullptr) exit(8);
    in_place += q == p;
    free(q);
  }
  void* kept[100];
  for (void*& k : kept) k = malloc(4 * min_size);
  for (void* k : kept) free(k);
  printf("in_place=%d\n", in_place);
  exit(0);
}

// Two forked children each hold `bytes` at one moment: each allocates and touches its
// block, says so on a pipe, and frees it only once the parent has heard from both. The
// family held 2 * bytes at once (and the parent's own blocks beside them).
void TwoChildrenAtOnce(size_t bytes) {
  int ready[2], go[2];
  if (pipe(ready) != 0 || pipe(go) != 0) exit(8);
  pid_t children[2];
  for (pid_t& child : children) {
    child = fork();
    if (child < 0) exit(8);
    if (child == 0) {
      char* block = static_cast<char*>(malloc(bytes));
      if (block == nullptr) _exit(8);
      memset(block, 1, bytes);
      char c = 'r';
      if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1) _exit(8);
      free(block);
      exit(0);  // through the exit handlers: the child's capture gets its trailer
    }
  }
  char c;
  for (int i = 0; i < 2; ++i) {
    if (read(ready[0], &c, 1) != 1) exit(8);
  }
  c = 'g';
  for (int i = 0; i < 2; ++i) {
    if (write(go[1], &c, 1) != 1) exit(8);
  }
  for (pid_t child : children) {
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      exit(8);
    }
  }
  exit(0);
}

void ForkOverCaptures(const char* dir) {
  FILE* f = fopen("/proc/sys/kernel/ns_last_pid", "r");
  long last = 0;
  if (f == nullptr || fscanf(f, "%ld", &last) != 1) {
    fprintf(stderr, "cannot read /proc/sys/kernel/ns_last_pid\n");
    exit(3);
  }
  fclose(f);
  for (long pid = last + 1; pid <= last + 64; ++pid) {
    const std::string path = std::string(dir) + "/cap." + std::to_string(pid) + ".mtb";
    if (FILE* p = fopen(path.c_str(), "w")) {
      fputs("placeholder\n", p);
      fclose(p);
    }
  }
  const pid_t child = fork();
  if (child == 0) {
    AllocateMarkers(10);
    exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  printf("child=%d\n", static_cast<int>(child));
}

// Set while the loop below is inside malloc() or free(), for the handler to say where
// the signal found the program.
volatile sig_atomic_t in_allocator = 0;

void ExitOnSigterm(int) { _exit(in_allocator ? 0 : 10); }

void ExitInHandler() {
  signal(SIGTERM, &ExitOnSigterm);
  AllocateMarkers(10);
  printf("ready\n");
  fflush(stdout);
  const time_t start = time(nullptr);
  for (uint64_t i = 0; time(nullptr) - start < 60; ++i) {
    in_allocator = 1;
    void* p = malloc(16 + i % 200);
    asm volatile("" : : "r"(p) : "memory");
    free(p);
    in_allocator = 0;
  }
}

void RawFork() {
  AllocateMarkers(10);
  const pid_t child = _Fork();
  if (child < 0) {
    perror("_Fork");
    exit(3);
  }
  if (child == 0) {
    for (int i = 0; i < 100000; ++i) {
      void* p = malloc(64 + i % 7);
      asm volatile("" : : "r"(p) : "memory");  // keep the pair
      free(p);
    }
    _exit(0);
  }
  int status = 0;
  bool finished = false;
  for (int i = 0; i < 30000 && !finished; ++i) {
    finished = waitpid(child, &status, WNOHANG) == child;
    if (!finished) usleep(1000);
  }
  if (!finished) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
  }
  printf("%s\n", finished && WIFEXITED(status) ? "child finished" : "child stuck");
  AllocateMarkers(10);
  PrintCounts();
}

void WaitForSigterm() {
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_BLOCK, &term, nullptr);
  const int fd = signalfd(-1, &term, 0);
  if (fd < 0) {
    perror("signalfd");
    exit(3);
  }
  AllocateMarkers(100);
  printf("ready\n");
  fflush(stdout);
  pollfd p{fd, POLLIN, 0};
  signalfd_siginfo info{};
  if (poll(&p, 1, 60000) == 1 && read(fd, &info, sizeof(info)) == sizeof(info)) {
    printf("graceful shutdown on signal %u\n", info.ssi_signo);
  }
  AllocateMarkers(100);
  PrintCounts();
}

void Hold(const char* file) {
  AllocateMarkers(40);
  PrintCounts();
  for (int i = 0; i < 60000 && access(file, F_OK) != 0; ++i) usleep(1000);
}

// A known call chain: Outer -> Middle -> Inner -> malloc.
__attribute__((noinline)) void* Inner(size_t n) {
  void* p = malloc(n);
  asm volatile("" ::: "memory");  // keep the call from becoming a tail call
  return p;
}
__attribute__((noinline)) void* Middle(size_t n) {
  void* p = Inner(n);
  asm volatile("" ::: "memory");
  return p;
}
__attribute__((noinline)) void* Outer(size_t n) {
  void* p = Middle(n);
  asm volatile("" ::: "memory");
  return p;
}

// Two paths to Middle() -> Inner() -> malloc: two call stacks, one site name (Inner's).
// noipa: the two (and Outer) have the same body, which GCC would otherwise fold into one.
__attribute__((noipa)) void* FromLeft(size_t n) {
  void* p = Middle(n);
  asm volatile("" ::: "memory");
  return p;
}
__attribute__((noipa)) void* FromRight(size_t n) {
  void* p = Middle(n);
  asm volatile("" ::: "memory");
  return p;
}

// noipa: a loop of unknown length, one call site (not an unrolled copy per iteration).
__attribute__((noipa)) void AllocateVia(void* (*from)(size_t), int times) {
  for (int i = 0; i < times; ++i) {
    MustAlloc(from(50023));
    CountAlloc(50023);
  }
}

void TwoCallers() {
  AllocateVia(FromLeft, 3);
  AllocateVia(FromRight, 2);
  PrintCounts();
}

void Stack() {
  void* p = MustAlloc(Outer(50021));
  CountAlloc(50021);
  printf("inner=%p middle=%p outer=%p\n", reinterpret_cast<void*>(&Inner),
         reinterpret_cast<void*>(&Middle), reinterpret_cast<void*>(&Outer));
  PrintCounts();
  CountFree(50021);
  free(p);
}

char* MapPages(size_t pages, void* at = nullptr, int extra_flags = 0) {
  const size_t page = static_cast<size_t>(getpagesize());
  void* p = mmap(at, pages * page, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | extra_flags, -1, 0);
  if (p == MAP_FAILED) {
    perror("mmap");
    exit(3);
  }
  return static_cast<char*>(p);
}

void Unmap(void* p, size_t pages) {
  if (munmap(p, pages * static_cast<size_t>(getpagesize())) != 0) {
    perror("munmap");
    exit(3);
  }
}

void Mappings() {
  const size_t page = static_cast<size_t>(getpagesize());
  // 10 pages, then a 2-page hole: a 3-page front and a 5-page tail.
  char* a = MapPages(10);
  Unmap(a + 3 * page, 2);
  // The front grows to 8 pages (it may move).
  void* grown = mremap(a, 3 * page, 8 * page, MREMAP_MAYMOVE);
  if (grown == MAP_FAILED) {
    perror("mremap");
    exit(3);
  }
  // MAP_FIXED over the middle of a 4-page mapping leaves three mappings; all go.
  char* e = MapPages(4);
  MapPages(2, e + page, MAP_FIXED);
  Unmap(e, 4);
  // Mapped on one thread, unmapped on another.
  char* c = nullptr;
  std::thread([&] { c = MapPages(2); }).join();
  std::thread([&] { Unmap(c, 2); }).join();
  // A file mapping is not an allocation.
  const int fd = open("/proc/self/exe", O_RDONLY);
  if (fd >= 0) {
    void* f = mmap(nullptr, page, PROT_READ, MAP_PRIVATE, fd, 0);
    if (f != MAP_FAILED) munmap(f, page);
    close(fd);
  }
  // One more, kept.
  MapPages(6);
  // A 2-page mapping moved (MREMAP_FIXED) onto the middle of a 6-page one, which it cuts
  // in two: 2 + 2 + 2 pages in three mappings.
  char* g = MapPages(6);
  char* h = MapPages(2);
  if (mremap(h, 2 * page, 2 * page, MREMAP_MAYMOVE | MREMAP_FIXED, g + 2 * page) ==
      MAP_FAILED) {
    perror("mremap");
    exit(3);
  }
  printf("mmap_live_pages=%d mmap_live_mappings=%d page=%zu\n", 8 + 5 + 6 + 6, 3 + 3, page);
  PrintCounts();
}

// The memtrace threads of this process, "NAME=CPUS" sorted by name, from /proc.
std::vector<std::string> MemtraceThreads() {
  std::vector<std::string> found;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return found;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const std::string task = std::string("/proc/self/task/") + e->d_name;
    char name[64] = {};
    FILE* comm = fopen((task + "/comm").c_str(), "r");
    if (comm == nullptr) continue;
    const bool named = fgets(name, sizeof(name), comm) != nullptr;
    fclose(comm);
    if (!named || strncmp(name, "memtrace-", 9) != 0) continue;
    name[strcspn(name, "\n")] = '\0';
    FILE* status = fopen((task + "/status").c_str(), "r");
    if (status == nullptr) continue;
    char line[512];
    while (fgets(line, sizeof(line), status) != nullptr) {
      if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
        const char* cpus = line + 18 + strspn(line + 18, " \t");
        found.push_back(std::string(name) + "=" + std::string(cpus, strcspn(cpus, "\n")));
      }
    }
    fclose(status);
  }
  closedir(dir);
  std::sort(found.begin(), found.end());
  return found;
}

// One thread's share of the "sizes" mode (the header).
void SmallAndLarge(std::atomic<uint64_t>* small, std::atomic<uint64_t>* small_bytes) {
  for (int i = 0; i < 2000; ++i) {
    const size_t n = 16 + 8 * static_cast<size_t>(i % 50);
    void* p = malloc(n);
    if (p == nullptr) exit(3);
    small->fetch_add(1, std::memory_order_relaxed);
    small_bytes->fetch_add(n, std::memory_order_relaxed);
    free(p);
    if (i % 80 == 0) {
      void* m = malloc(MarkerSize(static_cast<uint64_t>(i)));
      if (m == nullptr) exit(3);
      CountAlloc(MarkerSize(static_cast<uint64_t>(i)));
      CountFree(MarkerSize(static_cast<uint64_t>(i)));
      free(m);
    }
  }
}

void Sizes() {
  std::atomic<uint64_t> small{0};
  std::atomic<uint64_t> small_bytes{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) threads.emplace_back(SmallAndLarge, &small, &small_bytes);
  SmallAndLarge(&small, &small_bytes);
  for (std::thread& t : threads) t.join();
  printf("%s small=%llu small_bytes=%llu\n", CountsLine().c_str(),
         static_cast<unsigned long long>(small.load()),
         static_cast<unsigned long long>(small_bytes.load()));
  fflush(stdout);
}

// Mode `calls`. Its blocks sit in a static array, so the program allocates nothing else
// of their size (the test records only blocks that large).
void Calls() {
  constexpr int kBlocks = 300;
  static Block blocks[kBlocks];
  uint64_t calls = 0;
  for (int i = 0; i < kBlocks; ++i) {
    Block& b = blocks[i];
    b.n = 80001 + 2 * static_cast<size_t>(i);
    switch (i % 3) {
      case 0: b.p = MustAlloc(malloc(b.n)); break;
      case 1: b.p = MustAlloc(calloc(1, b.n)); break;
      case 2: b.p = MustAlloc(reallocarray(nullptr, 1, b.n)); break;
    }
    ++calls;
    CountAlloc(b.n);
  }
  // Shrinking keeps a block where it is; growing one whose neighbour is still in use
  // moves it.
  for (int i = 0; i < kBlocks; ++i) {
    Block& b = blocks[i];
    ReallocCounted(&b, i % 2 == 0 ? 80001 : 99999);
    ++calls;
    if (i % 2 == 0) {
      CountFree(b.n);
      free(b.p);
      b.p = nullptr;
    }
  }
  // The other half stays live, reachable from the array.
  printf("%s calls=%llu\n", CountsLine().c_str(), static_cast<unsigned long long>(calls));
  fflush(stdout);
}

void Threads() {
  // The three start in the interposer's constructor; a wait bounds the race with their
  // first instructions (naming and placing themselves).
  std::vector<std::string> threads;
  for (int i = 0; i < 5000; ++i) {
    threads = MemtraceThreads();
    if (threads.size() >= 3) break;
    usleep(1000);
  }
  for (const std::string& t : threads) printf("%s\n", t.c_str());
}

// burst THREADS SECONDS [malloc|mmap|marker]: each thread releases and allocates for
// SECONDS, keeping 64 blocks live whose addresses come straight back: malloc's (the
// default), one-page anonymous mappings (the kernel hands the range just unmapped back),
// or 64-byte blocks of a pool of the thread's own reported through the markers on the
// layer "pool"; then releases them all.
void Burst(int threads, double seconds, const std::string& kind) {
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                       std::chrono::duration<double>(seconds));
  const int pool_layer = kind == "marker" ? memtrace_layer("pool") : -1;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto release = [&](void* p) {
    if (p == nullptr) return;
    if (kind == "mmap") {
      munmap(p, page);
    } else if (kind == "marker") {
      memtrace_free(pool_layer, p);
    } else {
      free(p);
    }
  };
  auto allocate = [&](void** slot, uint64_t i, char* pool) {
    if (kind == "mmap") {
      void* m = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      *slot = m == MAP_FAILED ? nullptr : m;
    } else if (kind == "marker") {
      *slot = pool + (i % 64) * 64;
      memtrace_alloc(pool_layer, *slot, 16 + i % 48);
    } else {
      *slot = malloc(16 + i % 100);
    }
    if (*slot != nullptr) static_cast<char*>(*slot)[0] = 1;  // used: not optimized away
  };
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w) {
    workers.emplace_back([&] {
      alignas(64) static thread_local char pool[64 * 64];
      void* keep[64] = {};
      for (uint64_t i = 0;; ++i) {
        if (i % 1024 == 0 && std::chrono::steady_clock::now() > end) break;
        void*& slot = keep[i % 64];
        release(slot);
        allocate(&slot, i, pool);
      }
      for (void* p : keep) release(p);
    });
  }
  for (std::thread& t : workers) t.join();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "basic") {
    Basic();
  } else if (mode == "burst" && argc > 3) {
    Burst(atoi(argv[2]), atof(argv[3]), argc > 4 ? argv[4] : "malloc");
  } else if (mode == "calls") {
    Calls();
  } else if (mode == "exit-thread") {
    ExitFromThread();
  } else if (mode == "atexit") {
    FreeAtExit();
  } else if (mode == "exit-handlers" && argc > 2) {
    RegisterExitHandlers(atoi(argv[2]));
  } else if (mode == "fork") {
    Fork();
  } else if (mode == "fork-traced") {
    ForkTraced();
  } else if (mode == "exec" && argc > 2) {
    Exec(argv + 2);
  } else if (mode == "run-with-env" && argc > 3) {
    RunWithEnvironment(argv[2], argv + 3);
  } else if (mode == "crash") {
    Crash();
  } else if (mode == "raise" && argc > 2) {
    RaiseSignal(atoi(argv[2]));
  } else if (mode == "raise-after-default" && argc > 3) {
    RaiseAfterSettingTheDefault(atoi(argv[2]), argv[3]);
  } else if (mode == "signal-as-libc") {
    SignalAsTheCLibraryDoes();
  } else if (mode == "raise-like-a-shell" && argc > 2) {
    RaiseLikeAShell(atoi(argv[2]));
  } else if (mode == "two-callers") {
    TwoCallers();
  } else if (mode == "stack") {
    Stack();
  } else if (mode == "mmap") {
    Mappings();
  } else if (mode == "threads") {
    Threads();
  } else if (mode == "hold" && argc > 2) {
    Hold(argv[2]);
  } else if (mode == "close-fds" && argc > 2) {
    CloseDescriptors(argv[2]);
  } else if (mode == "plugin" && argc > 2) {
    Plugin(argv[2]);
  } else if (mode == "new") {
    NewMarker();
  } else if (mode == "inlined") {
    InlinedMarker();
  } else if (mode == "std-containers") {
    StdContainers();
  } else if (mode == "shrink-below" && argc > 2) {
    ShrinkBelow(static_cast<size_t>(atoll(argv[2])), argc < 4 || strcmp(argv[3], "same") != 0);
  } else if (mode == "two-children-at-once" && argc > 2) {
    TwoChildrenAtOnce(static_cast<size_t>(atoll(argv[2])));
  } else if (mode == "fork-over-captures" && argc > 2) {
    ForkOverCaptures(argv[2]);
  } else if (mode == "quick-exit") {
    QuickExit();
  } else if (mode == "quick-exit-under-sigterm" && argc > 2) {
    QuickExitUnderSigterm(atol(argv[2]));
  } else if (mode == "exit-in-handler") {
    ExitInHandler();
  } else if (mode == "raw-fork") {
    RawFork();
  } else if (mode == "signalfd") {
    WaitForSigterm();
  } else if (mode == "getattr") {
    GetattrThread();
  } else if (mode == "unshare") {
    Unshare();
  } else if (mode == "small-stack") {
    SmallStack();
  } else if (mode == "unshare-threaded") {
    UnshareThreaded();
  } else if (mode == "sizes") {
    Sizes();
  } else {
    fprintf(stderr, "usage: preload_target "
                    "basic|exit-thread|atexit|exit-handlers N|fork|fork-traced|exec PROGRAM...|"
                    "run-with-env HOW PROGRAM...|raise N|crash|stack|mmap|threads|"
                    "hold FILE|close-fds FILE|plugin LIB|new|fork-over-captures DIR|quick-exit|"
                    "quick-exit-under-sigterm US|"
                    "exit-in-handler|raw-fork|"
                    "signalfd|getattr|unshare|unshare-threaded|small-stack|sizes\n");
    return 2;
  }
  return 0;
}
