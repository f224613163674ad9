// Copyright 2026 The memtrace Authors.
//
// start.h: how tracing starts: the library's constructor reads the MEMTRACE_ settings,
// opens the capture and starts the tracer (StartTracing), which a forked child traced on
// does again into a capture of its own (fork.h).
//
// Thread safety: the constructor runs before the program's main(); StartTracing() in a
// forked child runs while it has one thread.

#ifndef MEMTRACE_PRELOAD_START_H_
#define MEMTRACE_PRELOAD_START_H_

#include <string>
#include <vector>

#include "runtime/allocation_record.h"
#include "runtime/config.h"
#include "runtime/internal/recorder.h"
#include "sinks/jsonl_sink.h"

// Hidden: shared by the interposer's files, never exported (exports.lds).
#pragma GCC visibility push(hidden)

namespace memtrace::preload_internal {

// What Start() set up for this process's capture, kept for the captures of its forked
// children (MEMTRACE_TRACE_FORKS): each opens its own with the same settings.
struct CaptureSetup {
  Config recorder;
  JsonlSinkOptions sink;       // the header's fields included; the encoding set per path
  std::string output;          // MEMTRACE_OUTPUT
  int naming_root = 0;         // the process whose capture has the untagged name
  bool trace_children = false;
};
extern CaptureSetup* capture_setup;  // lives for the whole process

// What a forked child was born with: the blocks live in its parent at the fork, and the
// parent's recorder (the child's copy), which kept their stacks' frames.
struct Inheritance {
  std::vector<AllocationRecord> blocks;
  const Recorder* parent = nullptr;
};

// Opens this process's capture (pid traced_pid) and starts a tracer writing it, recording
// `inherited` first, inside the scope "(inherited at fork)": the blocks a forked child was
// born with, at their stacks in the parent where it kept them. `header`: fields for the
// capture's header besides the setup's. False, with the reason on stderr, when tracing is
// off.
bool StartTracing(const CaptureSetup& setup, const std::string& header,
                  const Inheritance* inherited);

// Before dlclose() may unmap an object (and the objects only it needed): the modules
// loaded now go to the sink, which lists them with the capture's module map at the end,
// so call sites inside them still symbolize after they are gone.
void BeforeDlclose();

}  // namespace memtrace::preload_internal

#pragma GCC visibility pop

#endif  // MEMTRACE_PRELOAD_START_H_
