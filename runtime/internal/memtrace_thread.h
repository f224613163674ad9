// Copyright 2026 The memtrace Authors.
//
// memtrace_thread.h: how memtrace starts its own background threads (the drainer, the
// capture writer), so that the program's signals stay the program's.
//
// The kernel hands a signal sent to the process (kill, SIGTERM from a service manager,
// SIGINT from a terminal, SIGCHLD, a process-wide timer) to any one thread that does not
// block it. A program that blocks a signal in all of its threads and reads it from a
// signalfd, or with sigwaitinfo() in a thread that is busy when it arrives, counts on it
// staying pending until then. A thread of memtrace's that did not block it would take it
// instead: the default action (SIGTERM: the process ends, no graceful shutdown, no capture
// trailer) or the program's handler would run there. So memtrace's threads start with
// every asynchronous signal blocked, from their first instruction: the mask is set in the
// starting thread around the creation and restored there after.
//
// Left unblocked: the signals a fault raises on the thread that faults (SIGSEGV, SIGBUS,
// SIGILL, SIGFPE, SIGTRAP, SIGSYS), so a crash on memtrace's thread is handled as any.
// glibc's own internal signals (thread cancellation, setuid across threads) cannot be
// blocked and are not.
//
//   std::thread t = StartMemtraceThread([this] { Run(); });
//
// Thread safety: call from any thread; it changes that thread's mask only for the call.

#ifndef MEMTRACE_RUNTIME_INTERNAL_MEMTRACE_THREAD_H_
#define MEMTRACE_RUNTIME_INTERNAL_MEMTRACE_THREAD_H_

#include <functional>
#include <thread>

namespace memtrace {

// Starts `body` on a new thread whose asynchronous signals are all blocked (see above).
std::thread StartMemtraceThread(std::function<void()> body);

// How many threads StartMemtraceThread() started are running their body now: the
// process's threads less these are the program's (preload/finish.inc, unshare).
int RunningMemtraceThreads() noexcept;

// In a child of fork(), which has none of the parent's threads: counts them gone.
void ForgetMemtraceThreadsAfterFork() noexcept;

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_INTERNAL_MEMTRACE_THREAD_H_
