// Copyright 2026 The memtrace Authors.
//
// memtrace's own threads leave the program's signals to the program
// (runtime/internal/memtrace_thread.h): they start with every asynchronous signal blocked, faults
// excepted, and the starting thread's mask is as it was.

#include "runtime/internal/memtrace_thread.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "runtime/malloc_allocator.h"
#include "runtime/tracer.h"
#include "sinks/jsonl_sink.h"

namespace memtrace {
namespace {

sigset_t CurrentMask() {
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  return mask;
}

TEST(MemtraceThreadTest, StartsWithAsynchronousSignalsBlockedAndFaultsNot) {
  const sigset_t before = CurrentMask();
  sigset_t seen;
  std::thread t = StartMemtraceThread([&] { seen = CurrentMask(); });
  t.join();
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD, SIGPIPE,
                  SIGALRM, SIGPROF, SIGWINCH, SIGRTMIN + 2, SIGRTMAX}) {
    EXPECT_EQ(sigismember(&seen, sig), 1) << "signal " << sig;
  }
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS}) {
    EXPECT_EQ(sigismember(&seen, sig), 0) << "signal " << sig;
  }
  // The caller's mask is restored.
  const sigset_t after = CurrentMask();
  for (int sig = 1; sig < SIGRTMIN; ++sig) {
    EXPECT_EQ(sigismember(&before, sig), sigismember(&after, sig)) << "signal " << sig;
  }
}

// A program that blocks SIGUSR1 and reads it when it likes (sigtimedwait; a signalfd is
// the same): with a tracer and a capture running, a SIGUSR1 sent to the process stays
// pending for it. Were the drainer or the writer to take it, its default action would end
// this test's process.
TEST(MemtraceThreadTest, ASignalTheProgramBlocksStaysPendingForIt) {
  const char* dir = getenv("TEST_TMPDIR");
  const std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/signals.jsonl";
  // memtrace's threads start first, as under the interposer (its constructor runs before
  // the program's main() blocks anything): they cannot have inherited the program's mask.
  auto sink = JsonlSink::Open(path).value();
  auto tracer = Tracer::Create(Config{}).value();
  ASSERT_TRUE(tracer->recorder().SetObserver(sink.get()).ok());
  ASSERT_TRUE(tracer->Start().ok());
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigset_t previous;
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &usr1, &previous), 0);
  MallocAllocator heap;
  TracingAllocator traced(tracer.get(), &heap, layers::kCpuHeap);
  for (int i = 0; i < 1000; ++i) traced.Free(AsMemory(traced.Alloc(64, 16, 0), 64), 16, 0);
  ASSERT_EQ(kill(getpid(), SIGUSR1), 0);
  ASSERT_TRUE(tracer->Flush().ok());  // a few drainer rounds and writes meanwhile
  const timespec wait{5, 0};
  EXPECT_EQ(sigtimedwait(&usr1, nullptr, &wait), SIGUSR1);
  ASSERT_TRUE(tracer->Stop().ok());
  EXPECT_TRUE(sink->Finish(tracer->TakeSnapshot()).ok());
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

}  // namespace
// The count of memtrace's running threads (unshare() in the interposer tells the
// program's threads from them by it): counted from before a thread starts until its body
// returns.
TEST(MemtraceThreadTest, RunningThreadsAreCountedUntilTheirBodyReturns) {
  const int before = RunningMemtraceThreads();
  std::atomic<bool> release{false};
  std::atomic<bool> started{false};
  std::thread t = StartMemtraceThread([&] {
    started.store(true);
    while (!release.load()) usleep(100);
  });
  EXPECT_EQ(RunningMemtraceThreads(), before + 1);  // whether or not it has started yet
  while (!started.load()) usleep(100);
  EXPECT_EQ(RunningMemtraceThreads(), before + 1);
  release.store(true);
  t.join();
  EXPECT_EQ(RunningMemtraceThreads(), before);
}

}  // namespace memtrace
