// Copyright 2026 The memtrace Authors.
//
// captured_run.h: a tracer started with a capture of `path` (its extension picks the
// encoding and compression) and a traced heap on it, for tests that record a program and
// then read its capture.

#ifndef MEMTRACE_TESTS_CAPTURED_RUN_H_
#define MEMTRACE_TESTS_CAPTURED_RUN_H_

#include <memory>
#include <string>

#include "runtime/malloc_allocator.h"
#include "runtime/tracer.h"
#include "sinks/jsonl_sink.h"

namespace memtrace {

struct CapturedRun {
  explicit CapturedRun(const std::string& path, const Config& config = Config{},
                       const JsonlSinkOptions& options = JsonlSinkOptions{})
      : sink(JsonlSink::Open(path, options).value()), tracer(Tracer::Create(config).value()) {}
  // Stops the tracer and writes the trailer; whether both went well.
  bool Finish() {
    return tracer->Stop().ok() && sink->Finish(tracer->TakeSnapshot()).ok();
  }
  std::unique_ptr<JsonlSink> sink;
  std::unique_ptr<Tracer> tracer;
  MallocAllocator heap;
  TracingAllocator traced{tracer.get(), &heap, layers::kCpuHeap};
  bool started = tracer->recorder().SetObserver(sink.get()).ok() && tracer->Start().ok();
};

}  // namespace memtrace

#endif  // MEMTRACE_TESTS_CAPTURED_RUN_H_
