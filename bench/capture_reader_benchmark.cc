// Copyright 2026 The memtrace Authors.
//
// capture_reader_benchmark: how fast captures are read (target: at least 100 MB/s).
//
//   BM_ReadCapture      parse every line (simdjson) and decode its fields
//   BM_AnalyzeCapture   the same plus the Analyzer's replay (totals, scopes, layers)
//
// The capture is synthesised in memory in the exact format the JSONL sink writes: 1M
// events (alloc/free pairs with address reuse, scope enters and exits), ~120 MB.

#include <benchmark/benchmark.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "analysis/analyzer.h"
#include "analysis/capture_reader.h"

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

}  // namespace
}  // namespace memtrace

BENCHMARK_MAIN();
