// Copyright 2026 The memtrace Authors.

#include "runtime/memtrace_thread.h"

#include <pthread.h>
#include <signal.h>

#include <utility>

namespace memtrace {

std::thread StartMemtraceThread(std::function<void()> body) {
  sigset_t blocked;
  sigfillset(&blocked);  // glibc leaves its internal signals out
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS}) sigdelset(&blocked, sig);
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &blocked, &previous);
  // The new thread inherits the mask in force here.
  std::thread thread(std::move(body));
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return thread;
}

}  // namespace memtrace
