// Copyright 2026 The memtrace Authors.
//
// side_by_side_workload: the four workloads of the side-by-side comparison (issue 8), in
// one binary, each runnable untraced or through memtrace's wrapped-allocator API. The
// same binary run in `plain` mode is what the preload variants (LD_PRELOAD=
// libmemtrace_preload.so) and heaptrack trace, so every variant runs the same code.
//
//   --workload=churn    malloc/free churn: a 64-slot window, free what is in a random slot,
//                       malloc 16-271 bytes into it (bench/overhead_benchmark's MallocFree).
//   --workload=server   worker threads serve requests under request/parse/handle/respond
//                       scopes, with a mix of sizes (16 B - 64 KiB), a shared session
//                       cache, and responses freed by a writer thread (cross-thread frees).
//   --workload=frame    a frame loop per thread: 2,000 small allocations per frame, all
//                       released at once at the end of the frame.
//   --workload=realloc  buffers grown with realloc, std::vector push_back and std::string
//                       append from empty.
//
//   --mode=plain   the program as written: malloc/free/realloc, std::allocator. Frame
//                  allocations are malloc'd and freed at the end of the frame.
//   --mode=api     memtrace's wrapped-allocator API: a TracingAllocator over malloc
//                  (MallocAllocator) recording into a Tracer whose JsonlSink writes
//                  --capture, so the cost includes the capture. The server workload opens
//                  Tracer scopes; the frame workload uses a traced FrameArena
//                  (runtime/frame_arena.h) with one reset event per frame; containers use
//                  StdAllocator.
//   --mode=arena   frame workload only: the FrameArena untraced, the baseline for the
//                  api mode's frame figures.
//
// An operation is one call the plain program makes into the allocator family (malloc,
// free, realloc, operator new/delete); in the frame workload a block's release counts
// once whether a free or a reset releases it. The count is the same in every mode.
//
// Output: one line, `RESULT {json}`, with ops, the wall time of the work alone (threads
// started to threads joined), this process's peak RSS (VmHWM at the end of main), and
// in api mode memtrace's own memory and the capture's loss counters. The driver
// (bench/side_by_side) reads it.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "bench/workloads.h"
#include "runtime/frame_arena.h"
#include "runtime/malloc_allocator.h"
#include "runtime/tracer.h"
#include "sinks/jsonl_sink.h"

ABSL_FLAG(std::string, workload, "churn", "churn, server, frame or realloc");
ABSL_FLAG(std::string, mode, "plain", "plain, api, or arena (frame only)");
ABSL_FLAG(int, threads, 1, "worker threads, 1..256");
ABSL_FLAG(double, scale, 1.0, "multiplies the work per thread (0 < scale <= 1000)");
ABSL_FLAG(std::string, capture, "side_by_side.mtb",
          "api mode: the capture path (.mtb binary, .jsonl JSONL; .zst compresses)");

namespace memtrace {
namespace {

using bench::ApiHeap;
using bench::FramesArena;
using bench::FramesPlain;
using bench::kFrameArenaBytes;
using bench::OnThreads;
using bench::PeakRssKb;
using bench::PlainHeap;
using bench::RunWorkload;
using bench::Work;

int Usage(const std::string& message) {
  fprintf(stderr, "side_by_side_workload: %s\n", message.c_str());
  return 2;
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "One workload of the side-by-side comparison; prints `RESULT {json}` "
      "(bench/README.md).");
  absl::ParseCommandLine(argc, argv);
  const std::string workload = absl::GetFlag(FLAGS_workload);
  const std::string mode = absl::GetFlag(FLAGS_mode);
  const int threads = absl::GetFlag(FLAGS_threads);
  const double scale = absl::GetFlag(FLAGS_scale);
  if (workload != "churn" && workload != "server" && workload != "frame" &&
      workload != "realloc") {
    return Usage(absl::StrCat("--workload=", workload,
                              " is not one of churn, server, frame, realloc"));
  }
  if (mode != "plain" && mode != "api" && mode != "arena") {
    return Usage(absl::StrCat("--mode=", mode, " is not one of plain, api, arena"));
  }
  if (mode == "arena" && workload != "frame") {
    return Usage("--mode=arena is the frame workload's baseline only; use --workload=frame");
  }
  if (threads < 1 || threads > 256) {
    return Usage(absl::StrCat("--threads=", threads, " is outside 1..256"));
  }
  if (!(scale > 0 && scale <= 1000)) {
    return Usage(absl::StrCat("--scale=", scale, " is outside (0, 1000]"));
  }
  const int64_t frames = std::max<int64_t>(
      1, static_cast<int64_t>(static_cast<double>(Work::kFrames) * scale));

  std::unique_ptr<Tracer> tracer;
  std::unique_ptr<JsonlSink> sink;
  if (mode == "api") {
    auto created = Tracer::Create(Config{});
    if (!created.ok()) return Usage(std::string(created.status().message()));
    tracer = std::move(created).value();
    auto opened = JsonlSink::Open(absl::GetFlag(FLAGS_capture));
    if (!opened.ok()) return Usage(std::string(opened.status().message()));
    sink = std::move(opened).value();
    if (absl::Status s = tracer->recorder().SetObserver(sink.get()); !s.ok()) {
      return Usage(std::string(s.message()));
    }
    if (absl::Status s = tracer->Start(); !s.ok()) return Usage(std::string(s.message()));
  }

  MallocAllocator malloc_heap;
  std::optional<TracingAllocator> traced;
  if (tracer != nullptr) traced.emplace(tracer.get(), &malloc_heap, layers::kCpuHeap);

  const auto start = std::chrono::steady_clock::now();
  uint64_t ops = 0;
  if (workload == "frame") {
    if (mode == "plain") {
      ops = OnThreads(threads, [&](int t) { return FramesPlain(t, frames); });
    } else {
      ops = OnThreads(threads, [&](int t) {
        FrameArena arena(kFrameArenaBytes);
        std::optional<TracingAllocator> frame;
        if (tracer != nullptr) frame.emplace(tracer.get(), &arena, layers::kFrameArena);
        return FramesArena(frame ? &*frame : nullptr, arena, t, frames);
      });
    }
  } else if (mode == "plain") {
    PlainHeap heap;
    ops = RunWorkload(workload, heap, threads, scale);
  } else {
    ApiHeap heap{tracer.get(), &*traced};
    ops = RunWorkload(workload, heap, threads, scale);
  }
  const double work_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::string traced_fields;
  if (tracer != nullptr) {
    // Stop drains what the threads recorded; Finish writes the rest of the capture.
    const auto finish_start = std::chrono::steady_clock::now();
    tracer->Stop().IgnoreError();
    const Snapshot snap = tracer->TakeSnapshot();
    const absl::Status finished = sink->Finish(snap);
    const double finish_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - finish_start)
            .count();
    const JsonlSinkStats stats = sink->stats();
    const CaptureIntegrity& in = snap.integrity;
    traced_fields = absl::StrCat(
        ",\"finish_s\":", finish_s, ",\"memtrace_bytes\":", snap.memtrace_bytes,
        ",\"memtrace_memory\":{\"rings\":", snap.memtrace_memory.rings, ",\"tickets\":",
        snap.memtrace_memory.tickets, ",\"ledger\":", snap.memtrace_memory.ledger,
        ",\"sites\":", snap.memtrace_memory.sites, "}",
        ",\"dropped\":", in.events_dropped + in.records_failed + in.rings_unavailable,
        ",\"sink_lost\":", stats.events_lost, ",\"overflow_waits\":", in.overflow_waits,
        ",\"events\":", in.events_applied, ",\"capture_ok\":", finished.ok() ? "true" : "false");
  }
  printf("RESULT {\"workload\":\"%s\",\"mode\":\"%s\",\"threads\":%d,\"ops\":%llu,"
         "\"work_s\":%.6f,\"maxrss_kb\":%ld%s}\n",
         workload.c_str(), mode.c_str(), threads, static_cast<unsigned long long>(ops),
         work_s, PeakRssKb(), traced_fields.c_str());
  return 0;
}

}  // namespace
}  // namespace memtrace

int main(int argc, char** argv) { return memtrace::Main(argc, argv); }
