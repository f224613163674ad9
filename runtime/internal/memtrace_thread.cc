// Copyright 2026 The memtrace Authors.

#include "runtime/internal/memtrace_thread.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <utility>

namespace memtrace {
namespace {

// Relaxed: a count read for a decision that tolerates a thread just starting or ending
// (unshare() retries, preload/finish.inc); it orders nothing.
std::atomic<int> running{0};

}  // namespace

int RunningMemtraceThreads() noexcept { return running.load(std::memory_order_relaxed); }

void ForgetMemtraceThreadsAfterFork() noexcept { running.store(0, std::memory_order_relaxed); }

std::thread StartMemtraceThread(std::function<void()> body) {
  sigset_t blocked;
  sigfillset(&blocked);  // glibc leaves its internal signals out
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS}) sigdelset(&blocked, sig);
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &blocked, &previous);
  // The new thread inherits the mask in force here.
  // Counted from before it starts, so that a thread on its way counts.
  running.fetch_add(1, std::memory_order_relaxed);
  std::thread thread;
  try {
    thread = std::thread([body = std::move(body)] {
      body();
      running.fetch_sub(1, std::memory_order_relaxed);
    });
  } catch (...) {
    running.fetch_sub(1, std::memory_order_relaxed);
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return thread;
}

}  // namespace memtrace
