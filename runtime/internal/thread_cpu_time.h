// Copyright 2026 The memtrace Authors.
//
// thread_cpu_time.h: the CPU time memtrace's own background threads use (the drainer, the
// capture writer), as the capture's trailer and the summaries report it.
//
// What tracing costs a program is two things: the hot path on the program's own threads
// (interposition, the stack walk, the record), and the work of memtrace's threads. The
// first cannot be measured from inside without adding to it (bench/preload_ab.sh measures
// it from outside); the second can, for free, from each thread's CPU clock (user +
// system, pthread_getcpuclockid). A ThreadCpuTime follows one role: the thread in it now
// and every thread that held it before (a recorder stopped and started again runs a new
// drainer thread).
//
//   ThreadCpuTime cpu;
//   // on the thread itself:
//   cpu.Attach();   ... work ...   cpu.Detach();
//   // any thread, any time:
//   uint64_t ns = cpu.TotalNs();
//
// Thread safety: every member is safe from any thread. Attach() and Detach() must be
// called on the thread being measured, Detach() before it exits.

#ifndef MEMTRACE_RUNTIME_INTERNAL_THREAD_CPU_TIME_H_
#define MEMTRACE_RUNTIME_INTERNAL_THREAD_CPU_TIME_H_

#include <time.h>

#include <cstdint>
#include <mutex>

namespace memtrace {

class ThreadCpuTime {
 public:
  ThreadCpuTime() = default;
  ThreadCpuTime(const ThreadCpuTime&) = delete;
  ThreadCpuTime& operator=(const ThreadCpuTime&) = delete;

  // Starts following the calling thread; once per thread. A thread followed before and
  // not detached is counted up to here first.
  void Attach();
  // Adds the calling thread's CPU time to the total and stops following it. Call before
  // the thread exits (its clock is gone after that).
  void Detach();
  // CPU nanoseconds of every thread followed so far, the current one up to now.
  uint64_t TotalNs() const;

 private:
  mutable std::mutex mu_;
  // While a thread is followed, its CPU clock: valid until it calls Detach(), which
  // happens under mu_, so a reader holding mu_ with `live_` set reads a running thread.
  clockid_t clock_{};
  bool live_ = false;
  uint64_t finished_ns_ = 0;  // threads that detached
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_INTERNAL_THREAD_CPU_TIME_H_
