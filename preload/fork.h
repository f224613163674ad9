// Copyright 2026 The memtrace Authors.
//
// fork.h: fork() and MEMTRACE_TRACE_FORKS.
//
// A forked child has one thread, the one that called fork(), and a copy of the tracer
// with no drainer. By default it runs untraced (interposer_state.h). With
// MEMTRACE_TRACE_FORKS=1 it traces on into a capture of its own: the forking thread holds
// the drainer between rounds across the fork (Recorder::HoldForFork), so the child's copy
// of the ledger is whole; the child applies what its copies of the rings hold, and starts
// a new tracer whose capture begins with the blocks that were live in the parent, at
// their stacks, whose frames the parent's drainer kept (Config::keep_stack_frames). The
// hold is taken last among the prepare handlers (this library's constructor registered
// its handlers before the program could), so the program's handlers never wait for it.
//
// Thread safety: the handlers run on the forking thread, as pthread_atfork() calls them.

#ifndef MEMTRACE_PRELOAD_FORK_H_
#define MEMTRACE_PRELOAD_FORK_H_

#include <atomic>
#include <cstdint>

// Hidden: shared by the interposer's files, never exported (exports.lds).
#pragma GCC visibility push(hidden)

namespace memtrace::preload_internal {

// Children this process forked (the trailer's "forks"): without MEMTRACE_TRACE_FORKS
// those that go on running the program (workers, a daemon that outlives its parent) are
// not traced, and `memtrace summary` says so. Any thread; relaxed: a count.
extern std::atomic<uint64_t> forks_made;

// The pthread_atfork() handlers (start.inc registers them): BeforeFork only when forks
// are traced.
void BeforeFork();
void AfterForkInParent();
void AfterForkInChild();

}  // namespace memtrace::preload_internal

#pragma GCC visibility pop

#endif  // MEMTRACE_PRELOAD_FORK_H_
