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

// Calls probe(arg) at the bottom of one frame per element of path[0, length), outermost
// first, each element choosing the frame's shape: element & 3 picks a plain frame, a
// second plain function of the same layout (another return address at the same stack
// position), an alloca frame (its CFA follows rbp) of 16 * (1 + (element >> 2)) bytes,
// or a 3000-byte frame. Two paths with a common start share the outer part of their
// stacks, as consecutive allocations of a program do.
int Path(const unsigned char* path, int length, Probe probe, void* arg);

// probe(arg) below an alloca frame of `pad` bytes and then `levels` plain frames: with
// `pad` chosen, a deep stack and a shallow one can start at the same place.
int PaddedChain(unsigned pad, int levels, Probe probe, void* arg);

// probe(arg) below alloca frames (their CFA follows rbp) of `outer`, then `middle`, then,
// unless it is 0, `inner` bytes. The outer frame is one of two functions of the same
// layout, picked by `which`: another return address at the same stack position. With
// outer + middle fixed, the frames below the middle one stand where they stood, with the
// same return addresses, while the middle frame, and so rbp there, has moved; and the
// outer frame's larger alloca area still holds what the previous call's middle frame left.
int AllocaFrames(int which, unsigned outer, unsigned middle, unsigned inner, Probe probe,
                 void* arg);

}  // namespace memtrace::unwind_test

#endif  // MEMTRACE_TESTS_UNWIND_TEST_FRAMES_H_
