// Copyright 2026 The memtrace Authors.
//
// sink_benchmark: how fast the capture sink's writer thread turns applied records into a
// capture file, per encoding. In a traced program it shares the cores with the program
// and the drainer, so every nanosecond it spends per event is taken from them.
//
//   BM_SinkWrite/0   JSONL text
//   BM_SinkWrite/1   the binary encoding (.mtb), the preload's default
//
// Each iteration hands the sink one epoch of kEpochRecords records, as the drainer does
// (OnEpochRecords), with the churn workload's shape: alloc/free pairs over a 64-slot
// window of heap addresses, sizes 16-271, a handful of call sites, four threads. The
// sink waits for its writer instead of dropping (max_backpressure), so the time is the
// writer's; the file goes to /dev/null. Counter: ns_per_event.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "bench/churn.h"
#include "runtime/event_observer.h"
#include "runtime/snapshot.h"
#include "sinks/jsonl_sink.h"
#include "transport/event.h"
#include "transport/ticket.h"

namespace memtrace {
namespace {

constexpr size_t kEpochRecords = 4096;

std::vector<ObservedEvent> ChurnEpoch(uint32_t epoch) {
  std::vector<ObservedEvent> out;
  out.reserve(kEpochRecords);
  uint32_t seed = 12345 + epoch;
  uint64_t live_ticket[4][bench::kChurnWindow] = {};
  for (size_t i = 0; i < kEpochRecords / 2; ++i) {
    const uint32_t r = bench::XorShift(seed);
    const uint32_t ring = 1 + (i / 64) % 4;  // runs of 64 records per thread
    const uint32_t slot = r & (bench::kChurnWindow - 1);
    const uint64_t address = 0x7f3a12000000 + ring * 0x100000 + slot * 288;
    const uint64_t position = uint64_t{epoch} * kEpochRecords + 2 * i;
    Event free_event{address, Event::PackKindSize(EventKind::kFree, layers::kCpuHeap, 0),
                     live_ticket[ring - 1][slot], Event::PackScopeEpoch(0, epoch)};
    out.push_back(ObservedEvent{free_event, Ticket::Make(ring, position)});
    const uint64_t size = 16 + (r >> 8) % 256;
    const uint64_t site = 0x401000 + 32 * ((r >> 20) % 8);
    Event alloc{address, Event::PackKindSize(EventKind::kAlloc, layers::kCpuHeap, size),
                site, Event::PackScopeEpoch(0, epoch)};
    out.push_back(ObservedEvent{alloc, Ticket::Make(ring, position + 1)});
    live_ticket[ring - 1][slot] = Ticket::Make(ring, position + 1);
  }
  return out;
}

void BM_SinkWrite(benchmark::State& state) {
  JsonlSinkOptions options;
  options.encoding = state.range(0) == 1 ? CaptureEncoding::kBinary : CaptureEncoding::kJsonl;
  options.max_backpressure = absl::Seconds(60);
  auto sink = JsonlSink::Open("/dev/null", options);
  if (!sink.ok()) {
    state.SkipWithError(std::string(sink.status().message()).c_str());
    return;
  }
  std::vector<std::vector<ObservedEvent>> epochs;
  for (uint32_t e = 1; e <= 16; ++e) epochs.push_back(ChurnEpoch(e));
  ObservedBatch batch;
  uint32_t epoch = 1;
  int64_t t = 1795996070980625720;
  for (auto _ : state) {
    batch.assign(epochs[epoch % epochs.size()].begin(), epochs[epoch % epochs.size()].end());
    (*sink)->OnEpochRecords(epoch, t, batch);
    ++epoch;
    t += 1000000;
  }
  // The writer's backlog is part of the work: wait for it inside the timed region.
  const absl::Status finished = (*sink)->Finish(Snapshot{});
  if (!finished.ok()) state.SkipWithError(std::string(finished.message()).c_str());
  if ((*sink)->stats().events_lost != 0) state.SkipWithError("the sink dropped records");
  const double events = static_cast<double>(state.iterations()) * kEpochRecords;
  state.counters["ns_per_event"] = benchmark::Counter(
      events, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetItemsProcessed(static_cast<int64_t>(events));
}
BENCHMARK(BM_SinkWrite)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace memtrace

BENCHMARK_MAIN();
