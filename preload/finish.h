// Copyright 2026 The memtrace Authors.
//
// finish.h: how the capture ends: the trailer, written once (Finish()), at exit (the
// library's destructor), at exec (children.h), at _exit() and _Exit(), at a signal that
// ends the process, and before unshare(CLONE_NEWUSER).
//
// _exit() and _Exit() skip the destructor that finishes the capture, and are often
// called from a signal handler, where finishing on the calling thread could block on a
// lock the interrupted code holds (malloc's). So the calling thread hands the work to a
// thread of memtrace's kept for it alone ("memtrace-exit", asleep on a semaphore:
// sem_post() may be called from a handler), waits for it at most kExitFinishWaitMs, and
// then exits as asked.
//
// Thread safety: Finish() may be called from any thread, any number of times; one call
// writes the trailer, in the traced process only (a forked child's copy does nothing).

#ifndef MEMTRACE_PRELOAD_FINISH_H_
#define MEMTRACE_PRELOAD_FINISH_H_

#include <atomic>
#include <cstdint>
#include <string>

#include <signal.h>
#include <sys/types.h>

#include "preload/interposer_state.h"
#include "runtime/internal/cpu_list.h"

// Hidden: shared by the interposer's files, never exported (exports.lds).
#pragma GCC visibility push(hidden)

namespace memtrace::preload_internal {

// Who is finishing the capture, so that a stopping signal that arrives meanwhile waits
// for the trailer instead of ending the process halfway through it (OnTerminatingSignal):
// the thread running Finish() (0 before), and whether it is done. A process pool's
// worker ends with _exit() while its parent sends it SIGTERM: the signal often lands
// while memtrace-exit writes the trailer, which must still be finished.
extern std::atomic<pid_t> finishing_tid;
extern std::atomic<uint32_t> finish_done;  // a futex word: SetAndWake(), WaitUntilSet()
// A stopping signal that arrived on the thread running Finish(): raised again once the
// capture is finished (the handler cannot wait for its own thread).
extern std::atomic<int> deferred_signal;

// `exec_target`: for ended_by "exec", the program the process is replaced with, as the
// exec call named it (the trailer's "exec"; `memtrace summary` points at it).
void Finish(const std::string& ended_by, bool partial, const char* exec_target = nullptr);

// memtrace-exit's state (finish.inc), which a forked child resets (fork.inc).
extern std::atomic<bool> exit_finisher_started;
extern std::atomic<uint32_t> exit_finished;  // a futex word: SetAndWake(), WaitUntilSet()
// Set before the semaphore is posted when the thread is to end without finishing
// anything (BeforeSingleThreaded).
extern std::atomic<bool> exit_finisher_quit;
// The signal ending the process when the semaphore is posted from OnTerminatingSignal(),
// for the trailer's ended_by; 0 for _exit().
extern std::atomic<int> exit_signal;

// Starts memtrace-exit, on `cpus`.
void StartExitFinisher(const CpuList& cpus);

// unshare(): CLONE_NEWUSER fails with EINVAL in a process with more than one thread, and
// memtrace's threads would be the others. They are stopped first (BeforeSingleThreaded);
// a thread that has returned is gone from the process a moment later, so an EINVAL right
// after is retried, for at most 100 ms. When the program has threads of its own the call
// fails whatever memtrace does, so tracing goes on and the call fails as it would untraced.
int UnshareSingleThreaded(int flags);

// _exit() and _Exit(): `which` names the real function to end with.
[[noreturn]] void QuickExitAfterCapture(ExitFn RealFunctions::*which, int status);

// Finishes the capture at a fatal or stopping signal the program has no handler for.
//
// The handler stands in for the signal's default action: it has the capture finished,
// then sets the default action and raises the signal again, so the process ends by it.
// It is installed at start for each such signal whose disposition is the default, and
// again each time the program asks for the default itself (ProgramSigaction()).
void InstallSignalHandlers();

// sigaction() as the program calls it. For a fatal or stopping signal, a request for the
// default action installs memtrace's stand-in instead, while tracing in the traced
// process (dash sets SIGTERM's default itself; so does a program that calls
// signal(SIGTERM, SIG_DFL) before raise(SIGTERM)); a handler of the program's, or
// SIG_IGN, is installed as asked. The stand-in reads back as the default action
// (SIG_DFL; its flags and mask read back empty, whatever the request for the default
// gave: they change nothing for a default action), so a shell that saves the disposition
// it found at start and restores it to end by a signal restores the stand-in, which then
// ends the process by the default action whatever flags the shell restored it with.
// Async-signal-safe, as sigaction() is.
//
// Not covered: a handler of the program's installed with SA_RESETHAND. The kernel puts
// the true default back when it runs, so a second such signal ends the process without
// the trailer, as it would with no memtrace handler at all.
int ProgramSigaction(int sig, const struct sigaction* act, struct sigaction* oldact);
// signal(), bsd_signal() and sysv_signal() (`which`: the C library's own): the default
// action of a signal above gets the stand-in, as in ProgramSigaction(); anything else is
// the C library's call, with its flags (siginterrupt()) and its errors.
sighandler_t ProgramSignal(SignalFn RealFunctions::*which, int sig, sighandler_t handler);
// sigset(): the C library's own call (it also changes the thread's mask), then the
// stand-in over a default it set.
sighandler_t ProgramSigset(int sig, sighandler_t disposition);

}  // namespace memtrace::preload_internal

#pragma GCC visibility pop

#endif  // MEMTRACE_PRELOAD_FINISH_H_
