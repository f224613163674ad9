// Copyright 2026 The memtrace Authors.
//
// unwind.h: the call stack of an allocation, as return addresses, innermost first.
//
// Two methods (preload_config.h, MEMTRACE_UNWIND):
//   - Frame pointers: follow the saved-%rbp chain from the interposed function's own
//     frame. A few loads per frame, but only right for code built with frame pointers;
//     through code without them the chain skips frames or ends early. Every frame
//     pointer is checked against the thread's stack bounds before it is read, so a chain
//     broken by such code ends the walk instead of faulting.
//   - DWARF: libunwind's unw_backtrace(), which reads the unwind tables every ELF object
//     carries (.eh_frame) and caches them. Right for distribution binaries built without
//     frame pointers; several times slower per frame.
// Both return addresses, so a symbolizer looks up pc - 1 (the call instruction).
//
// Thread safety: per thread; may allocate on a thread's first call (stack bounds,
// libunwind's caches), so callers hold the reentrancy guard.

#ifndef MEMTRACE_PRELOAD_UNWIND_H_
#define MEMTRACE_PRELOAD_UNWIND_H_

#include <cstdint>
#include <string>

namespace memtrace::preload_internal {

// Fills `frames` from the frame whose frame pointer is `frame` (the interposed function's
// __builtin_frame_address(0)): frames[0] is that function's return address. Returns the
// number of frames written, at most `max`.
uint32_t UnwindFramePointers(const void* frame, uint64_t* frames, uint32_t max) noexcept;

// Loads libunwind for UnwindDwarf(); false, with the reason, when it is not there. Call
// once, before tracing starts.
bool LoadDwarfUnwinder(std::string* error);

// The same with libunwind (0 frames until LoadDwarfUnwinder() succeeded). Frames inside [skip_begin, skip_end) (the interposer's own
// code) are left out at the start, so frames[0] is the interposed function's caller.
uint32_t UnwindDwarf(uint64_t skip_begin, uint64_t skip_end, uint64_t* frames,
                     uint32_t max) noexcept;

}  // namespace memtrace::preload_internal

#endif  // MEMTRACE_PRELOAD_UNWIND_H_
