// Copyright 2026 The memtrace Authors.
//
// capture_reader_benchmark: how fast captures are read (target: at least 100 MB/s).
//
//   BM_ReadCapture        parse every line (simdjson) and decode its fields
//   BM_AnalyzeCapture     the same plus the Analyzer's replay (totals, scopes, layers)
//   BM_ReadBinaryCapture  the same events in the binary encoding (.mtb), decoded into
//                         CaptureRecords for a consumer that only counts them and sums
//                         their sizes: the decode path alone, without a replay
//   BM_ReadCaptureFile    with --capture=FILE: that capture (either encoding, plain or
//                         zstd) read from the file with ReadCapture(), to the same consumer
//   BM_ReadBatchesFile    with --capture=FILE: the same read as a replay reads it, into
//                         batches (ReadCaptureBatches() on one thread), each batch given
//                         to the same consumer: a replay's reading half
//   BM_SummarizeFile      with --capture=FILE: Analyzer::Summarize() of it, the replay that
//                         summary --replay, top, verify and report run (events/s, ns an event)
//
// The synthetic capture is made in memory in the exact format the JSONL sink writes (or,
// for the binary one, by the sink's BinaryEncoder): 1M events (alloc/free pairs with
// address reuse, scope enters and exits), ~120 MB of JSONL.
//
//   bazel-bin/bench/capture_reader_benchmark [--capture=/tmp/p.mtb] [benchmark flags]

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "analysis/analyzer.h"
#include "analysis/batch_reader.h"
#include "analysis/capture_reader.h"
#include "sinks/binary_encoding.h"
#include "sinks/capture_event.h"

namespace memtrace {
namespace {

const std::string& Capture() {
  static const std::string text = [] {
    std::string s =
        "{\"type\":\"header\",\"format\":\"memtrace-jsonl\",\"schema_version\":1,\"pid\":1,"
        "\"clock\":\"unix_ns\",\"started_unix_ns\":1795996070980625720,\"source\":\"runtime\","
        "\"time_resolution\":\"epoch\"}\n"
        "{\"type\":\"scope\",\"id\":0,\"parent\":0,\"name\":\"(unscoped)\",\"path\":\"(unscoped)\"}\n"
        "{\"type\":\"scope\",\"id\":2,\"parent\":0,\"name\":\"request\",\"path\":\"request\"}\n"
        "{\"type\":\"layer\",\"id\":0,\"name\":\"cpu\"}\n"
        "{\"type\":\"site\",\"id\":0,\"addr\":\"0x55d1c2a01f3c\"}\n";
    const int64_t t = 1795996070980685932;
    for (uint64_t i = 0; i < 250000; ++i) {
      const uint64_t addr = 0x55d1c3b2a000 + 16 * (i % 4096);
      const uint64_t ticket = (uint64_t{1 + i % 4} << 44) + i;
      absl::StrAppend(&s, "{\"type\":\"scope_enter\",\"t\":", t, ",\"epoch\":", i / 1000,
                      ",\"thread\":", 1 + i % 4, ",\"scope\":2,\"outer\":0,\"mono_ns\":",
                      5259996085456 + i, "}\n");
      absl::StrAppend(&s, "{\"type\":\"alloc\",\"t\":", t, ",\"epoch\":", i / 1000,
                      ",\"thread\":", 1 + i % 4, ",\"addr\":\"0x", absl::Hex(addr),
                      "\",\"size\":", 16 + i % 500, ",\"layer\":0,\"scope\":2,\"site\":0,"
                      "\"ticket\":", ticket, "}\n");
      absl::StrAppend(&s, "{\"type\":\"free\",\"t\":", t, ",\"epoch\":", i / 1000,
                      ",\"thread\":", 1 + i % 4, ",\"addr\":\"0x", absl::Hex(addr),
                      "\",\"layer\":0,\"of\":", ticket, ",\"ticket\":", ticket + 1, "}\n");
      absl::StrAppend(&s, "{\"type\":\"scope_exit\",\"t\":", t, ",\"epoch\":", i / 1000,
                      ",\"thread\":", 1 + i % 4, ",\"scope\":2,\"outer\":0,\"mono_ns\":",
                      5259996085457 + i, "}\n");
    }
    s += "{\"type\":\"trailer\",\"complete\":true}\n";
    return s;
  }();
  return text;
}

// The header and tables of Capture(), one per line.
constexpr std::string_view kTables[] = {
    "{\"type\":\"header\",\"format\":\"memtrace-jsonl\",\"schema_version\":1,\"pid\":1,"
    "\"clock\":\"unix_ns\",\"started_unix_ns\":1795996070980625720,\"source\":\"runtime\","
    "\"time_resolution\":\"epoch\"}",
    "{\"type\":\"scope\",\"id\":0,\"parent\":0,\"name\":\"(unscoped)\",\"path\":\"(unscoped)\"}",
    "{\"type\":\"scope\",\"id\":2,\"parent\":0,\"name\":\"request\",\"path\":\"request\"}",
    "{\"type\":\"layer\",\"id\":0,\"name\":\"cpu\"}",
    "{\"type\":\"site\",\"id\":0,\"addr\":\"0x55d1c2a01f3c\"}",
};

// Capture()'s events, written by the binary sink's encoder.
const std::string& BinaryCapture() {
  static const std::string bytes = [] {
    std::string s;
    BinaryEncoder encoder(&s);
    encoder.Magic();
    for (std::string_view line : kTables) encoder.Json(line);
    const int64_t t = 1795996070980685932;
    for (uint64_t i = 0; i < 250000; ++i) {
      const uint64_t addr = 0x55d1c3b2a000 + 16 * (i % 4096);
      const uint64_t ticket = (uint64_t{1 + i % 4} << 44) + i;
      const auto thread = static_cast<uint32_t>(1 + i % 4);
      encoder.Epoch(t, static_cast<uint32_t>(i / 1000));
      CaptureEvent scope{.type = CaptureEventType::kScopeEnter, .thread = thread};
      scope.scope = 2;
      scope.mono_ns = static_cast<int64_t>(5259996085456 + i);
      encoder.Event(scope);
      encoder.Alloc(thread, addr, 16 + i % 500, /*layer=*/0, /*scope=*/2, /*site=*/0, ticket);
      encoder.Free(thread, addr, /*layer=*/0, ticket + 1, ticket);
      scope.type = CaptureEventType::kScopeExit;
      scope.mono_ns += 1;
      encoder.Event(scope);
    }
    encoder.Json("{\"type\":\"trailer\",\"complete\":true}");
    encoder.Flush();
    return s;
  }();
  return bytes;
}

// A consumer that does almost nothing: counts the events and sums their sizes.
struct Tally {
  uint64_t events = 0;
  uint64_t bytes = 0;

  absl::Status operator()(const CaptureRecord& r) {
    events += r.type >= LineType::kAlloc && r.type <= LineType::kIntervalEnd;
    bytes += r.size;
    return absl::OkStatus();
  }

  // Bytes read and events per second, and the time per event, for `state`.
  void Report(benchmark::State& state, uint64_t bytes_read) const {
    benchmark::DoNotOptimize(bytes);
    state.SetBytesProcessed(static_cast<int64_t>(bytes_read));
    state.SetItemsProcessed(static_cast<int64_t>(events));
    state.counters["ns_per_event"] = benchmark::Counter(
        static_cast<double>(events), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  }
};

std::string& CapturePath() {
  static std::string path;
  return path;
}

void BM_ReadBinaryCapture(benchmark::State& state) {
  const std::string& bytes = BinaryCapture();
  Tally tally;
  const std::function<absl::Status(const CaptureRecord&)> fn = std::ref(tally);
  for (auto _ : state) {
    const absl::Status s = ReadCaptureText(bytes, "bench", fn);
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
  }
  tally.Report(state, state.iterations() * bytes.size());
}

void BM_ReadCaptureFile(benchmark::State& state) {
  Tally tally;
  const std::function<absl::Status(const CaptureRecord&)> fn = std::ref(tally);
  uint64_t bytes_read = 0;
  for (auto _ : state) {
    CaptureReadStats stats;
    const absl::Status s = ReadCapture(CapturePath(), fn, &stats);
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
    bytes_read += stats.bytes;
  }
  tally.Report(state, bytes_read);
}

void BM_ReadBatchesFile(benchmark::State& state) {
  Tally tally;
  uint64_t bytes_read = 0;
  for (auto _ : state) {
    CaptureReadStats stats;
    const absl::Status s = ReadCaptureBatches(
        CapturePath(),
        [&](std::span<const CaptureRecord> batch, const CaptureReadStats&) {
          for (const CaptureRecord& r : batch) tally(r).IgnoreError();
          return absl::OkStatus();
        },
        &stats, ReadThreads::kOne);
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
    bytes_read += stats.bytes;
  }
  tally.Report(state, bytes_read);
}

void BM_SummarizeFile(benchmark::State& state) {
  uint64_t events = 0;
  for (auto _ : state) {
    const auto summary = Analyzer::Summarize(CapturePath(), AnalysisSummaryOptions{});
    if (!summary.ok()) {
      state.SkipWithError(std::string(summary.status().message()).c_str());
      return;
    }
    events += summary->events;
  }
  state.SetItemsProcessed(static_cast<int64_t>(events));
  state.counters["ns_per_event"] = benchmark::Counter(
      static_cast<double>(events), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_ReadCapture(benchmark::State& state) {
  const std::string& text = Capture();
  uint64_t events = 0;
  for (auto _ : state) {
    CaptureReadStats stats;
    const absl::Status s = ReadCaptureText(
        text, "bench", [](const CaptureRecord&) { return absl::OkStatus(); }, &stats);
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
    events += stats.events;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events),
                                                      benchmark::Counter::kIsRate);
}

void BM_AnalyzeCapture(benchmark::State& state) {
  const std::string& text = Capture();
  for (auto _ : state) {
    const auto summary = Analyzer::SummarizeText(text, "bench");
    if (!summary.ok()) state.SkipWithError(std::string(summary.status().message()).c_str());
    benchmark::DoNotOptimize(summary->totals.allocated_bytes);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

BENCHMARK(BM_ReadCapture)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AnalyzeCapture)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadBinaryCapture)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace memtrace

int main(int argc, char** argv) {
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--capture=", 10) == 0) {
      memtrace::CapturePath() = argv[i] + 10;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  if (!memtrace::CapturePath().empty()) {
    benchmark::RegisterBenchmark("BM_ReadCaptureFile", memtrace::BM_ReadCaptureFile)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("BM_ReadBatchesFile", memtrace::BM_ReadBatchesFile)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("BM_SummarizeFile", memtrace::BM_SummarizeFile)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();  // it reads on a second thread (analysis/batch_reader.h)
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
