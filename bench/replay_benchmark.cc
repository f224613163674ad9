// Copyright 2026 The memtrace Authors.
//
// replay_benchmark: the per-record work of memtrace's own threads for a real program,
// replayed from its capture. It reads the capture's memory events (allocations, frees,
// resizes, moves and arena resets, in the capture's order, which is the order the drainer
// applied them). A synthetic churn keeps its blocks in a few cache lines and repeats one
// record shape; a real program's addresses, sizes, lifetimes and sites decide how often
// the ledger's tables miss the caches and how short the capture's records are.
//
//   bazel-bin/bench/replay_benchmark --capture=/tmp/sq.mtb [benchmark flags]
//
//   BM_LedgerReplay/0/0        the drainer's ledger: the events applied to a fresh
//                              AllocationLedger, as Drainer::Apply() does; tables warm
//                              from one record to the next
//   BM_LedgerReplay/7000/4096  the same, writing 4 MiB of other memory (untimed) every
//                              7,000 events: a drainer round's worth of records, after
//                              which the program has run and filled the caches
//   BM_SinkReplay              the capture sink: the events, grouped by epoch as the
//                              drainer hands them over (OnEpochRecords, which takes the
//                              vectors without a copy), encoded in the binary format and
//                              written to /dev/null by the sink's writer thread; wall
//                              time, the writer's backlog included
//   BM_EncodeReplay            the binary encoder alone on one thread: each event's
//                              record, the bytes dropped at every 1 MiB
//   BM_ShardedReplay/K         the events, epoch by epoch, into one ledger through K
//                              appliers that own its shards by address, as the drainer
//                              applies them with Config::tracer_threads = K
//                              (runtime/internal/sharded_apply.h), the in-order accounting
//                              on the calling thread; K = 1 is the same code on one thread,
//                              the ratio's baseline
//
// Reports ns per event and events/s. Without --capture it says what it needs and exits 2.

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "analysis/capture_reader.h"
#include "runtime/internal/allocation_ledger.h"
#include "runtime/internal/sharded_apply.h"
#include "runtime/snapshot.h"
#include "sinks/binary_encoding.h"
#include "sinks/capture_event.h"
#include "sinks/jsonl_sink.h"
#include "transport/event.h"
#include "transport/ticket.h"

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
  uint32_t epoch;
  int64_t t;
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
                                       r.size, r.ticket, r.of, uint64_t{r.site} + 1, r.epoch,
                                       r.t});
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

// The drainer's records for the sink: each epoch's events as ObservedEvents. Sites become
// stack hashes (bit 63 set), as the interposer's are; the sink numbers them again.
struct ReplayEpoch {
  uint32_t epoch;
  int64_t t;
  std::vector<ObservedEvent> events;
};

std::vector<ReplayEpoch> Epochs() {
  std::vector<ReplayEpoch> epochs;
  for (const ReplayEvent& e : Events()) {
    if (epochs.empty() || epochs.back().epoch != e.epoch) {
      epochs.push_back(ReplayEpoch{e.epoch, e.t, {}});
    }
    EventKind kind = EventKind::kInvalid;
    uint64_t word2 = e.of;
    switch (e.type) {
      case LineType::kAlloc:
        kind = EventKind::kAlloc;
        word2 = e.site | (uint64_t{1} << 63);
        break;
      case LineType::kRemapTarget:
        kind = EventKind::kRemapTarget;
        word2 = e.site | (uint64_t{1} << 63);
        break;
      case LineType::kFree: kind = EventKind::kFree; break;
      case LineType::kResize: kind = EventKind::kResize; break;
      case LineType::kRemap: kind = EventKind::kRemap; break;
      case LineType::kArenaReset: kind = EventKind::kArenaReset; break;
      default: continue;
    }
    const Event event{e.addr, Event::PackKindSize(kind, e.layer, e.size), word2,
                      Event::PackScopeEpoch(e.scope, e.epoch)};
    epochs.back().events.push_back(ObservedEvent{event, e.ticket});
  }
  return epochs;
}

void BM_SinkReplay(benchmark::State& state) {
  const std::vector<ReplayEpoch> epochs = Epochs();
  JsonlSinkOptions options;
  options.encoding = CaptureEncoding::kBinary;
  options.max_backpressure = absl::Seconds(60);  // wait for the writer, never drop
  uint64_t bytes = 0;
  for (auto _ : state) {
    // The drainer's vectors, made outside the timing: OnEpochRecords takes each without a
    // copy, so what is timed is the handoff and the writer's work.
    state.PauseTiming();
    std::vector<ObservedBatch> batches;
    batches.reserve(epochs.size());
    for (const ReplayEpoch& e : epochs) batches.emplace_back(e.events.begin(), e.events.end());
    auto sink = JsonlSink::Open("/dev/null", options);
    state.ResumeTiming();
    if (!sink.ok()) {
      state.SkipWithError(std::string(sink.status().message()).c_str());
      return;
    }
    for (size_t i = 0; i < epochs.size(); ++i) {
      (*sink)->OnEpochRecords(epochs[i].epoch, epochs[i].t, batches[i]);
    }
    const absl::Status finished = (*sink)->Finish(Snapshot{});
    if (!finished.ok()) state.SkipWithError(std::string(finished.message()).c_str());
    if ((*sink)->stats().events_lost != 0) state.SkipWithError("the sink dropped records");
    bytes = (*sink)->stats().bytes_written;
  }
  state.counters["bytes_per_event"] =
      static_cast<double>(bytes) / static_cast<double>(Events().size());
  state.counters["ns_per_event"] = benchmark::Counter(
      static_cast<double>(Events().size()) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetItemsProcessed(static_cast<int64_t>(Events().size() * state.iterations()));
}

BENCHMARK(BM_SinkReplay)->UseRealTime()->Unit(benchmark::kMillisecond);

// The binary encoder alone, on this thread: each event's record (BinaryEncoder::Alloc,
// Free or Event, as the sink's loop calls them), the bytes dropped at every 1 MiB as the
// sink's flush would write them. No handoff, no table lines, no write.
void BM_EncodeReplay(benchmark::State& state) {
  std::string buffer;
  uint64_t bytes = 0;
  for (auto _ : state) {
    BinaryEncoder encoder(&buffer);
    encoder.Magic();
    for (const ReplayEvent& e : Events()) {
      const auto thread = static_cast<uint32_t>(Ticket::RingId(e.ticket));
      encoder.Epoch(e.t, e.epoch);
      switch (e.type) {
        case LineType::kAlloc:
          encoder.Alloc(thread, e.addr, e.size, e.layer, e.scope,
                        static_cast<uint32_t>(e.site - 1), e.ticket);
          break;
        case LineType::kFree:
          encoder.Free(thread, e.addr, e.layer, e.ticket, e.of);
          break;
        default: {
          CaptureEvent c;
          c.type = e.type == LineType::kResize        ? CaptureEventType::kResize
                   : e.type == LineType::kRemap       ? CaptureEventType::kRemap
                   : e.type == LineType::kRemapTarget ? CaptureEventType::kRemapTarget
                                                      : CaptureEventType::kArenaReset;
          c.thread = thread;
          c.addr = e.addr;
          c.size = e.size;
          c.layer = e.layer;
          c.scope = e.scope;
          c.site = static_cast<uint32_t>(e.site - 1);
          c.ticket = e.ticket;
          c.of = e.of;
          encoder.Event(c);
          break;
        }
      }
      if (encoder.size() >= (size_t{1} << 20)) {
        encoder.Flush();
        bytes += buffer.size();
        buffer.clear();
      }
    }
    encoder.Flush();
    bytes += buffer.size();
    buffer.clear();
  }
  state.counters["bytes_per_event"] =
      static_cast<double>(bytes) /
      (static_cast<double>(Events().size()) * static_cast<double>(state.iterations()));
  state.counters["ns_per_event"] = benchmark::Counter(
      static_cast<double>(Events().size()) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetItemsProcessed(static_cast<int64_t>(Events().size() * state.iterations()));
}

BENCHMARK(BM_EncodeReplay)->Unit(benchmark::kMillisecond);

// The capture's memory events through a fresh ledger and K appliers as the drainer
// hands them over with appliers (Drainer::Apply): each added with its context interned,
// a batch applied when full and at each epoch's end, then the epoch's blocks set aside
// settled. A move's halves are paired per ring.
void BM_ShardedReplay(benchmark::State& state) {
  uint64_t live = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto ledger = std::make_unique<AllocationLedger>(kDefaultSiteCapacity);
    auto apply = std::make_unique<ShardedApply>(ledger.get(), static_cast<int>(state.range(0)));
    std::vector<ShardedApply::PendingMove> moves;  // by ring id, as the drainer's cursors
    state.ResumeTiming();
    auto flush = [&] {
      apply->Apply();
      for (ShardedApply::PendingMove& move : moves) apply->Collect(&move);
    };
    uint32_t epoch = Events().empty() ? 0 : Events().front().epoch;
    for (const ReplayEvent& e : Events()) {
      if (e.epoch != epoch) {
        flush();
        ledger->SettleDisplaced();
        epoch = e.epoch;
      }
      EventKind kind;
      switch (e.type) {
        case LineType::kAlloc: kind = EventKind::kAlloc; break;
        case LineType::kFree: kind = EventKind::kFree; break;
        case LineType::kResize: kind = EventKind::kResize; break;
        case LineType::kRemap: kind = EventKind::kRemap; break;
        case LineType::kRemapTarget: kind = EventKind::kRemapTarget; break;
        case LineType::kArenaReset: kind = EventKind::kArenaReset; break;
        default: continue;
      }
      const uint32_t ring = Ticket::RingId(e.ticket);
      if (ring >= moves.size()) moves.resize(ring + 1);
      apply->AddEvent(kind, e.layer, e.scope, e.addr, e.size, e.ticket, e.of, e.site,
                      /*sole=*/false, &moves[ring]);
      if (apply->full()) flush();
    }
    flush();
    ledger->SettleDisplaced();
    live = ledger->totals().live_count;
    benchmark::DoNotOptimize(live);
    state.PauseTiming();
    apply.reset();  // joins its threads, untimed
    ledger.reset();
    state.ResumeTiming();
  }
  state.counters["live_at_end"] = static_cast<double>(live);
  state.counters["ns_per_event"] = benchmark::Counter(
      static_cast<double>(Events().size()) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetItemsProcessed(static_cast<int64_t>(Events().size() * state.iterations()));
}

BENCHMARK(BM_ShardedReplay)->Arg(1)->Arg(2)->Arg(4)->UseRealTime()->Unit(benchmark::kMillisecond);

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
                 "replay_benchmark: needs --capture=PATH, a capture of the program "
                 "to replay (for example MEMTRACE_OUTPUT=/tmp/sq.mtb under the "
                 "interposer)\n");
    return 2;
  }
  if (absl::Status s = memtrace::Load(capture); !s.ok()) {
    std::fprintf(stderr, "replay_benchmark: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  std::fprintf(stderr, "replay_benchmark: %zu memory events from %s\n",
               memtrace::Events().size(), capture.c_str());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
