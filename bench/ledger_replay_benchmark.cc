// Copyright 2026 The memtrace Authors.
//
// ledger_replay_benchmark: the drainer's ledger work for a real program, replayed from a
// capture. It reads the capture's memory events (allocations, frees, resizes, moves and
// arena resets, in the capture's order, which is the order the drainer applied them) and
// applies them to a fresh AllocationLedger per iteration, exactly as Drainer::Apply()
// does. A synthetic churn keeps its blocks in a few cache lines; a real program's
// addresses, sizes and lifetimes decide how often the ledger's tables miss the caches.
//
//   bazel-bin/bench/ledger_replay_benchmark --capture=/tmp/sq.mtb [benchmark flags]
//
//   BM_LedgerReplay/0/0        the replay, tables warm from one record to the next
//   BM_LedgerReplay/7000/4096  the same, writing 4 MiB of other memory (untimed) every
//                              7,000 events: a drainer round's worth of records, after
//                              which the program has run and filled the caches
//
// Reports ns per event and events/s. Without --capture it says what it needs and exits 2.

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "analysis/capture_reader.h"
#include "runtime/allocation_ledger.h"

namespace memtrace {
namespace {

struct ReplayEvent {
  LineType type;
  uint8_t layer;
  uint32_t scope;
  uint64_t addr;
  uint64_t size;
  uint64_t ticket;  // the record's own ticket
  uint64_t of;      // the ticket of the block a release acts on (0: none)
  uint64_t site;
};

std::vector<ReplayEvent>& Events() {
  static std::vector<ReplayEvent> events;
  return events;
}

absl::Status Load(const std::string& path) {
  return ReadCapture(path, [](const CaptureRecord& r) {
    switch (r.type) {
      case LineType::kAlloc:
      case LineType::kFree:
      case LineType::kResize:
      case LineType::kRemap:
      case LineType::kRemapTarget:
      case LineType::kArenaReset:
        // Site ids stand in for the stack hashes the drainer sees: one value per site.
        Events().push_back(ReplayEvent{r.type, static_cast<uint8_t>(r.layer), r.scope, r.addr,
                                       r.size, r.ticket, r.of, uint64_t{r.site} + 1});
        break;
      default:
        break;
    }
    return absl::OkStatus();
  });
}

void BM_LedgerReplay(benchmark::State& state) {
  const std::vector<ReplayEvent>& events = Events();
  // Records per round (0: the whole capture in one) and KiB written between rounds.
  const size_t round =
      state.range(0) == 0 ? events.size() : static_cast<size_t>(state.range(0));
  std::vector<uint64_t> other(static_cast<size_t>(state.range(1)) * 1024 / 8, 1);
  uint64_t live = 0;
  for (auto _ : state) {
    AllocationLedger ledger(kDefaultSiteCapacity);
    AllocationLedger::Moved moved;
    size_t n = 0;
    for (const ReplayEvent& e : events) {
      if (++n == round) {
        n = 0;
        state.PauseTiming();
        for (size_t i = 0; i < other.size(); i += 8) other[i] += i;
        benchmark::ClobberMemory();
        state.ResumeTiming();
      }
      switch (e.type) {
        case LineType::kAlloc:
          ledger.Alloc(e.layer, e.addr, e.size, e.ticket, e.scope, e.site);
          break;
        case LineType::kFree:
          benchmark::DoNotOptimize(ledger.Free(e.layer, e.addr, e.of));
          break;
        case LineType::kResize:
          benchmark::DoNotOptimize(ledger.Resize(e.layer, e.addr, e.of, e.size, e.ticket));
          break;
        case LineType::kRemap:
          benchmark::DoNotOptimize(ledger.MoveOut(e.layer, e.addr, e.of, &moved));
          break;
        case LineType::kRemapTarget:
          ledger.MoveIn(e.layer, moved, e.addr, e.size, e.ticket, e.scope, e.site);
          break;
        case LineType::kArenaReset:
          ledger.ResetLayer(e.layer);
          break;
        default:
          break;
      }
    }
    live = ledger.totals().live_count;
    benchmark::DoNotOptimize(live);
  }
  state.counters["live_at_end"] = static_cast<double>(live);
  state.counters["ns_per_event"] = benchmark::Counter(
      static_cast<double>(events.size()) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetItemsProcessed(static_cast<int64_t>(events.size() * state.iterations()));
}

BENCHMARK(BM_LedgerReplay)
    ->Args({0, 0})
    ->Args({7000, 4096})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace memtrace

int main(int argc, char** argv) {
  std::string capture;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--capture=", 10) == 0) {
      capture = argv[i] + 10;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  if (capture.empty()) {
    std::fprintf(stderr,
                 "ledger_replay_benchmark: needs --capture=PATH, a capture of the program "
                 "to replay (for example MEMTRACE_OUTPUT=/tmp/sq.mtb under the "
                 "interposer)\n");
    return 2;
  }
  if (absl::Status s = memtrace::Load(capture); !s.ok()) {
    std::fprintf(stderr, "ledger_replay_benchmark: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  std::fprintf(stderr, "ledger_replay_benchmark: %zu memory events from %s\n",
               memtrace::Events().size(), capture.c_str());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
