// Copyright 2026 The memtrace Authors.
//
// exports.h: a capture in the formats other viewers read (docs/exports.md).
//
//   PerfettoTrace()  Chrome trace-event JSON ({"traceEvents":[...]}) that Perfetto UI and
//                    chrome://tracing open: a live-bytes counter per scope ("ph":"C"),
//                    scope slices per thread ("B"/"E", balanced per thread, on a track
//                    named after the capture's thread), and instant events ("ph":"i") for
//                    the global peak and for what was still live at the end (leaks), one
//                    per site and scope, named by the site's label (SiteLabel: the caller
//                    of the allocator functions) with its address beside it.
//   FoldedStacks()   collapsed stacks for flame-graph tools: "outer;caller;callee WEIGHT"
//                    per line, weighted by bytes or by allocation calls (reallocs
//                    included, as heaptrack counts them: UsageCounters::allocation_calls).
//   PprofProfile()   a gzip-compressed profile.proto heap profile with sample types
//                    alloc_objects/count, alloc_space/bytes, inuse_objects/count and
//                    inuse_space/bytes (inuse: live at the end), for `go tool pprof`. The
//                    frames a site's name passes over (FindCaller: allocator functions
//                    such as malloc, operator new or a program's own wrappers, then the
//                    container library's, inlined ones included) are left out, so the leaf
//                    is the function `memtrace top` names the site after.
//
// Frames are symbolized through the capture's module lines (analysis/symbolizer.h); a
// site without a captured stack is the one frame of its return address. Sampled captures
// export the scaled estimates (docs/capture-format.md "Sampling").
//
// Thread safety: pure functions over their arguments; the Symbolizer is used by one thread.

#ifndef MEMTRACE_ANALYSIS_EXPORTS_H_
#define MEMTRACE_ANALYSIS_EXPORTS_H_

#include <string>

#include "absl/status/statusor.h"
#include "analysis/allocator_frames.h"
#include "analysis/analyzer.h"
#include "analysis/symbolizer.h"

namespace memtrace {

// Replays the capture at `path` (whose summary is `summary`) into trace-event JSON; leak
// sites are named through `symbolizer` with `allocators`.
absl::StatusOr<std::string> PerfettoTrace(const std::string& path, const CaptureSummary& summary,
                                          Symbolizer& symbolizer,
                                          const AllocatorFunctions& allocators = {});

enum class FoldedWeight { kBytes, kCount };
// Collapsed stacks of the allocations, outermost frame first, identical stacks merged, one
// line each, sorted. A ';' inside a frame name becomes ':' and a newline a space (the
// format has no escape). Stacks that weigh 0 are left out.
std::string FoldedStacks(const CaptureSummary& summary, Symbolizer& symbolizer,
                         FoldedWeight weight);

// The gzip-compressed profile.proto bytes. Each (site, scope, layer) is a sample labelled
// with its scope and layer, its stack from the frame SiteLabel names it after
// (FindCaller with `allocators`: the built-in list and the program's own), that frame's
// location without the functions inlined inward of it; a stack of allocator frames only
// keeps its outermost.
absl::StatusOr<std::string> PprofProfile(const CaptureSummary& summary, Symbolizer& symbolizer,
                                         const AllocatorFunctions& allocators = {});

// A frame's name in exports: the function, or Describe() when the function is unknown (so
// two unknown pcs stay apart).
std::string FrameName(Symbolizer& symbolizer, uint64_t pc);

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_EXPORTS_H_
