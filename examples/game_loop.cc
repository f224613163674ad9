// Copyright 2026 The memtrace Authors.
//
// game_loop: a small frame loop traced by memtrace, the way a game engine uses it.
//
// Each frame runs "update/physics", "update/ai" and "render" phases through a Context.
// Per-frame scratch memory comes from a frame arena that is reset at the end of every
// frame (one event releases every sub-allocation). Long-lived objects live on the CPU heap;
// textures are allocated on a simulated device heap on the "gpu" layer and streamed in
// and out; a streaming pool reports its mapped bytes through the census. An interval sink
// times the phases, the way a frame timer or another profiler would hang off memtrace's
// scopes. A job thread does work for the physics phase under the carried scope.
//
//   bazel run //examples:game_loop -- --frames=600 [--capture=/tmp/game.jsonl]

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "runtime/census.h"
#include "runtime/context.h"
#include "runtime/device_heap.h"
#include "runtime/frame_arena.h"
#include "runtime/malloc_allocator.h"
#include "runtime/tracer.h"
#include "sinks/jsonl_sink.h"
#include "sinks/summary_table.h"

ABSL_FLAG(int, frames, 600, "frames to simulate");
ABSL_FLAG(std::string, capture, "",
          "also write the JSONL capture here (docs/capture-format.md)");

namespace {

using memtrace::AsMemory;
using memtrace::Context;
using memtrace::ScopeName;

// Phase timing through the interval sink: categories 0-3.
struct FrameTimer {
  std::chrono::steady_clock::time_point started[4];
  double total_ms[4] = {};
  static void Begin(void* user, uint8_t c) {
    static_cast<FrameTimer*>(user)->started[c & 3] = std::chrono::steady_clock::now();
  }
  static void End(void* user, uint8_t c) {
    auto* t = static_cast<FrameTimer*>(user);
    t->total_ms[c & 3] += std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - t->started[c & 3])
                              .count();
  }
};

enum Category : uint8_t { kFrame = 0, kPhysics = 1, kAi = 2, kRender = 3 };

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("Runs a traced game frame loop and prints its summary.");
  absl::ParseCommandLine(argc, argv);
  const int frames = absl::GetFlag(FLAGS_frames);
  if (frames < 1) {
    fprintf(stderr, "game_loop: --frames must be at least 1\n");
    return 2;
  }

  auto created = memtrace::Tracer::Create(memtrace::Config{});
  if (!created.ok()) {
    fprintf(stderr, "game_loop: %s\n", created.status().ToString().c_str());
    return 1;
  }
  memtrace::Tracer& tracer = **created;
  std::unique_ptr<memtrace::JsonlSink> capture;
  if (const std::string path = absl::GetFlag(FLAGS_capture); !path.empty()) {
    auto opened = memtrace::JsonlSink::Open(path);
    if (!opened.ok()) {
      fprintf(stderr, "game_loop: %s\n", opened.status().ToString().c_str());
      return 1;
    }
    capture = std::move(opened).value();
    if (absl::Status s = tracer.recorder().SetObserver(capture.get()); !s.ok()) {
      fprintf(stderr, "game_loop: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  if (absl::Status s = tracer.Start(); !s.ok()) {
    fprintf(stderr, "game_loop: %s\n", s.ToString().c_str());
    return 1;
  }

  memtrace::MallocAllocator heap;
  memtrace::FrameArena arena(4 << 20);
  memtrace::TracingAllocator frame_memory(&tracer, &arena, memtrace::layers::kFrameArena);
  memtrace::SimulatedDeviceHeap device(uint64_t{512} << 20);
  memtrace::Census census;
  tracer.AttachCensus(&census);
  const memtrace::CensusLabel streaming = census.Label("streaming/mapped_pages").value();

  FrameTimer timer;
  const memtrace::IntervalSink sink{&FrameTimer::Begin, &FrameTimer::End, &timer};
  const Context cpu(&tracer, memtrace::layers::kCpuHeap, &census, &sink);
  const Context gpu = cpu.WithLayer(memtrace::layers::kGpuHeap);

  static const ScopeName kFrameScope("frame");
  static const ScopeName kUpdate("update");
  static const ScopeName kPhysicsScope("physics");
  static const ScopeName kAiScope("ai");
  static const ScopeName kRenderScope("render");

  std::mt19937 rng(7);
  std::vector<std::pair<void*, size_t>> entities;     // long-lived, CPU heap
  std::deque<std::pair<void*, size_t>> textures;      // GPU, streamed
  for (int f = 0; f < frames; ++f) {
    auto frame = cpu.Enter(kFrameScope, kFrame);
    {
      auto update = cpu.Enter(kUpdate, kFrame);
      {
        auto physics = cpu.Enter(kPhysicsScope, kPhysics);
        // Broadphase pairs: frame scratch.
        for (int i = 0; i < 200; ++i) frame_memory.Alloc(48, 16, MEMTRACE_HERE());
        // A job thread computes contacts under the physics scope, carried over.
        const memtrace::Scope carried = memtrace::Scope::Current();
        std::vector<std::pair<void*, size_t>> contacts;
        std::thread job([&] {
          auto adopted = cpu.Adopt(carried, kPhysics);
          for (int i = 0; i < 16; ++i) {
            const size_t n = 64 + rng() % 64;
            contacts.emplace_back(cpu.Alloc(heap, n, 16, MEMTRACE_HERE()), n);
          }
        });
        job.join();
        for (auto [p, n] : contacts) cpu.Free(heap, AsMemory(p, n), 16, MEMTRACE_HERE());
      }
      {
        auto ai = cpu.Enter(kAiScope, kAi);
        if (entities.size() < 500 || rng() % 2 == 0) {
          const size_t n = 256 + rng() % 2048;
          entities.emplace_back(cpu.Alloc(heap, n, 16, MEMTRACE_HERE()), n);
        }
        if (entities.size() > 400 && rng() % 3 == 0) {
          const size_t i = rng() % entities.size();
          cpu.Free(heap, AsMemory(entities[i].first, entities[i].second), 16,
                   MEMTRACE_HERE());
          entities[i] = entities.back();
          entities.pop_back();
        }
        for (int i = 0; i < 100; ++i) frame_memory.Alloc(128, 16, MEMTRACE_HERE());
      }
    }
    {
      auto render = cpu.Enter(kRenderScope, kRender);
      for (int i = 0; i < 300; ++i) frame_memory.Alloc(64, 16, MEMTRACE_HERE());
      if (f % 10 == 0) {  // stream a texture in, and an old one out
        const size_t n = size_t{1} << (18 + rng() % 4);
        if (void* t = gpu.Alloc(device, n, 256, MEMTRACE_HERE())) textures.emplace_back(t, n);
        cpu.CensusAdd(streaming, static_cast<int64_t>(n));
        if (textures.size() > 24) {
          auto [t, size] = textures.front();
          textures.pop_front();
          gpu.Free(device, AsMemory(t, size), 256, MEMTRACE_HERE());
          cpu.CensusSubtract(streaming, static_cast<int64_t>(size));
        }
      }
    }
    arena.ResetTraced(frame_memory);  // one event releases the frame's scratch
  }

  const memtrace::Snapshot snapshot = tracer.TakeSnapshot();
  printf("game_loop: %d frames; %zu entities and %zu textures live; phase time: physics "
         "%.1f ms, ai %.1f ms, render %.1f ms (from the interval sink)\n\n",
         frames, entities.size(), textures.size(), timer.total_ms[kPhysics],
         timer.total_ms[kAi], timer.total_ms[kRender]);
  fputs(memtrace::FormatSummaryTable(snapshot).c_str(), stdout);
  for (auto [p, n] : entities) cpu.Free(heap, AsMemory(p, n), 16, 0);
  for (auto [t, n] : textures) gpu.Free(device, AsMemory(t, n), 256, 0);
  tracer.Stop().IgnoreError();
  if (capture != nullptr) {
    // The capture's trailer holds the final state (with the census), after Stop().
    const absl::Status written = capture->Finish(tracer.TakeSnapshot());
    if (!written.ok()) {
      fprintf(stderr, "game_loop: capture %s: %s\n", absl::GetFlag(FLAGS_capture).c_str(),
              written.ToString().c_str());
      return 3;
    }
  }
  tracer.AttachCensus(nullptr);
  return snapshot.integrity.complete() ? 0 : 3;
}
