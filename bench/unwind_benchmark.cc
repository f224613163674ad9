// Copyright 2026 The memtrace Authors.
//
// The interposer's DWARF walk (preload/unwind.h) at the interposer's default depth, 16
// frames, on a stack of frames built without frame pointers (tests/unwind_test_frames.h:
// plain, alloca and big frames), against libunwind's unw_backtrace() on the same stack:
//   - BM_WalkRepeated: the same stack from the same place each time, as consecutive
//     allocations from one call site are: the walk memo's case (thread_state.h);
//   - BM_WalkUnremembered: the same, with the memo emptied before each walk (a store per
//     way), so each walk follows the rules (predictor, shared rule cache);
//   - BM_Libunwind: unw_backtrace() for the same frames.
//
//   bazel build //bench:unwind_benchmark && bazel-bin/bench/unwind_benchmark

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>

#include "preload/unwind.h"
#include "runtime/internal/thread_state.h"
#include "tests/unwind_test_frames.h"

namespace memtrace::preload_internal {
namespace {

constexpr uint32_t kDepth = 16;

enum class Mode { kRepeated, kUnremembered, kLibunwind };

struct Run {
  benchmark::State* state;
  Mode mode;
};

void ForgetWalks() {
  runtime_internal::StackState* stacks = runtime_internal::Stacks(runtime_internal::Tls());
  if (stacks == nullptr) return;
  for (auto& set : stacks->unwind_walk_start) {
    for (uint64_t& start : set) start = 0;
  }
}

// Built with frame pointers, like the interposer's entry points: the walk starts here.
__attribute__((noinline)) void Probe(void* arg) {
  auto* run = static_cast<Run*>(arg);
  uint64_t frames[kDepth];
  void* buffer[kDepth + 1];
  bool complete = true;
  uint32_t n = 0;
  for (auto _ : *run->state) {
    switch (run->mode) {
      case Mode::kRepeated:
        n = UnwindCfi(__builtin_frame_address(0), frames, kDepth, &complete);
        break;
      case Mode::kUnremembered:
        ForgetWalks();
        n = UnwindCfi(__builtin_frame_address(0), frames, kDepth, &complete);
        break;
      case Mode::kLibunwind:
        n = static_cast<uint32_t>(unw_backtrace_fn(buffer, kDepth + 1));
        break;
    }
    benchmark::DoNotOptimize(frames);
    benchmark::DoNotOptimize(buffer);
  }
  if (n < kDepth) run->state->SkipWithError("the stack is shallower than 16 frames");
  run->state->counters["frames"] = n;
}

// A fixed path of 24 levels (48 frames) through the three frame shapes.
void Walk(benchmark::State& state, Mode mode) {
  std::string error;
  if (!LoadDwarfUnwinder(&error)) {
    state.SkipWithError(error.c_str());
    return;
  }
  std::mt19937 random(16);
  unsigned char path[24];
  for (unsigned char& element : path) element = static_cast<unsigned char>(random() % 0x40);
  Run run{&state, mode};
  unwind_test::Path(path, 24, &Probe, &run);
}

void BM_WalkRepeated(benchmark::State& state) { Walk(state, Mode::kRepeated); }
void BM_WalkUnremembered(benchmark::State& state) { Walk(state, Mode::kUnremembered); }
void BM_Libunwind(benchmark::State& state) { Walk(state, Mode::kLibunwind); }
BENCHMARK(BM_WalkRepeated);
BENCHMARK(BM_WalkUnremembered);
BENCHMARK(BM_Libunwind);

}  // namespace
}  // namespace memtrace::preload_internal

BENCHMARK_MAIN();
