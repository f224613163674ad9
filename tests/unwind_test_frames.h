// Copyright 2026 The memtrace Authors.
//
// unwind_test_frames.h: call chains compiled without frame pointers
// (-fomit-frame-pointer), for the unwinder tests: plain frames, frames with alloca (their
// CFA follows rbp), 20 KiB frames, and one 40 KiB frame, whose CFA offset is beyond what
// the rule cache holds (eh_frame.h).

#ifndef MEMTRACE_TESTS_UNWIND_TEST_FRAMES_H_
#define MEMTRACE_TESTS_UNWIND_TEST_FRAMES_H_

namespace memtrace::unwind_test {

using Probe = void (*)(void* arg);

// Calls probe(arg) at the bottom of `depth` nested frames of the three ordinary shapes.
// Returns a value that depends on every frame, so none is optimised away.
int Chain(int depth, Probe probe, void* arg);

// The same through one 40 KiB frame first.
int ChainWithHugeFrame(int depth, Probe probe, void* arg);

}  // namespace memtrace::unwind_test

#endif  // MEMTRACE_TESTS_UNWIND_TEST_FRAMES_H_
