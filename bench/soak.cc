// Copyright 2026 The memtrace Authors.
//
// soak: the bounded soak of issue 8. Runs the server workload (bench/workloads.h) through
// memtrace's wrapped-allocator API for --minutes, with a JsonlSink writing the capture,
// and every --sample_seconds takes a snapshot and prints memtrace's own memory
// (Snapshot::memtrace_bytes: rings, ticket table, ledger with its site table), the
// process's resident set, the workload's live bytes and the loss counters.
//
// The workload runs in rounds: each round starts --threads workers and a writer thread,
// serves --round_requests requests per worker, and joins them, so threads come and go
// all along (their rings are retired and reused). --rate paces the requests (0: as fast
// as the machine goes).
//
// Verdict, printed last: after the warm-up (the first tenth of the run, at least one
// sample), memtrace's memory is flat when the largest sample of the last quarter is
// within --flat_tolerance of the largest of the first quarter; and nothing was dropped
// (integrity's dropped, failed and ring-less records, and the sink's lost events, all 0).
// Exit 0 when both hold, 1 when either does not, 2 for bad flags.
//
// Not a test (it runs for minutes); run it by hand:
//   bazel run -c opt //bench:soak -- --minutes=10

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "bench/workloads.h"
#include "runtime/malloc_allocator.h"
#include "runtime/tracer.h"
#include "sinks/jsonl_sink.h"

ABSL_FLAG(double, minutes, 10, "how long to run");
ABSL_FLAG(double, sample_seconds, 5, "time between samples");
ABSL_FLAG(int, threads, 2, "worker threads per round (plus one writer thread)");
ABSL_FLAG(int, round_requests, 2000, "requests per worker per round");
ABSL_FLAG(double, rate, 10000, "requests per second in all; 0 runs unpaced");
ABSL_FLAG(double, flat_tolerance, 0.05,
          "largest allowed growth of memtrace's memory, last quarter vs first quarter");
ABSL_FLAG(std::string, capture, "/dev/null",
          "the capture path (a 10-minute capture is tens of GB; the sink formats and "
          "writes it either way)");

namespace memtrace {
namespace {

struct Sample {
  double seconds;
  uint64_t requests;
  uint64_t memtrace_bytes;
  MemtraceMemory parts;
  long rss_kb;
  uint64_t live_bytes;
  uint64_t events;
  uint64_t dropped;
  uint64_t sink_lost;
  uint64_t overflow_waits;
};

int Usage(const std::string& message) {
  fprintf(stderr, "soak: %s\n", message.c_str());
  return 2;
}

uint64_t MaxMemtraceBytes(const std::vector<Sample>& samples, size_t begin, size_t end) {
  uint64_t m = 0;
  for (size_t i = begin; i < end; ++i) m = std::max(m, samples[i].memtrace_bytes);
  return m;
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Runs the server workload under memtrace for minutes and checks that memtrace's "
      "memory stays flat and nothing is dropped (bench/README.md).");
  absl::ParseCommandLine(argc, argv);
  const double minutes = absl::GetFlag(FLAGS_minutes);
  const double sample_seconds = absl::GetFlag(FLAGS_sample_seconds);
  const int threads = absl::GetFlag(FLAGS_threads);
  const int round_requests = absl::GetFlag(FLAGS_round_requests);
  const double rate = absl::GetFlag(FLAGS_rate);
  const double tolerance = absl::GetFlag(FLAGS_flat_tolerance);
  if (!(minutes > 0 && minutes <= 24 * 60)) {
    return Usage(absl::StrCat("--minutes=", minutes, " is outside (0, 1440]"));
  }
  if (!(sample_seconds >= 0.1 && sample_seconds <= minutes * 60)) {
    return Usage(absl::StrCat("--sample_seconds=", sample_seconds,
                              " must be at least 0.1 and at most the run's length"));
  }
  if (threads < 1 || threads > 256) {
    return Usage(absl::StrCat("--threads=", threads, " is outside 1..256"));
  }
  if (round_requests < 1) {
    return Usage(absl::StrCat("--round_requests=", round_requests, " must be at least 1"));
  }
  if (!(rate >= 0)) return Usage(absl::StrCat("--rate=", rate, " must be 0 or more"));
  if (!(tolerance >= 0)) {
    return Usage(absl::StrCat("--flat_tolerance=", tolerance, " must be 0 or more"));
  }

  auto created = Tracer::Create(Config{});
  if (!created.ok()) return Usage(std::string(created.status().message()));
  std::unique_ptr<Tracer> tracer = std::move(created).value();
  auto opened = JsonlSink::Open(absl::GetFlag(FLAGS_capture));
  if (!opened.ok()) return Usage(std::string(opened.status().message()));
  std::unique_ptr<JsonlSink> sink = std::move(opened).value();
  if (absl::Status s = tracer->recorder().SetObserver(sink.get()); !s.ok()) {
    return Usage(std::string(s.message()));
  }
  if (absl::Status s = tracer->Start(); !s.ok()) return Usage(std::string(s.message()));
  MallocAllocator malloc_heap;
  TracingAllocator traced(tracer.get(), &malloc_heap, layers::kCpuHeap);
  bench::ApiHeap heap{tracer.get(), &traced};

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  const double total_seconds = minutes * 60;
  printf("soak: server workload, %d workers + 1 writer per round, %d requests/worker/round, "
         "rate %s, %.1f min, capture %s\n\n",
         threads, round_requests,
         rate > 0 ? absl::StrCat(rate, " requests/s").c_str() : "unpaced", minutes,
         absl::GetFlag(FLAGS_capture).c_str());
  printf("| elapsed s | requests | memtrace memory | rings | tickets | ledger | sites | RSS "
         "| live bytes | events | dropped | sink lost | overflow waits |\n");
  printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
         "| ---: |\n");
  fflush(stdout);

  std::vector<Sample> samples;
  uint64_t requests = 0;
  uint64_t ops = 0;
  double next_sample = sample_seconds;
  while (elapsed() < total_seconds) {
    ops += bench::ServerWorkload(heap, threads, round_requests);
    requests += static_cast<uint64_t>(threads) * static_cast<uint64_t>(round_requests);
    if (rate > 0) {
      const double due = static_cast<double>(requests) / rate;
      const double now = elapsed();
      if (due > now) {
        std::this_thread::sleep_for(std::chrono::duration<double>(
            std::min(due, total_seconds) - now));
      }
    }
    if (elapsed() >= next_sample || elapsed() >= total_seconds) {
      const Snapshot snap = tracer->TakeSnapshot();
      const CaptureIntegrity& in = snap.integrity;
      const JsonlSinkStats stats = sink->stats();
      Sample s{elapsed(),
               requests,
               snap.memtrace_bytes,
               snap.memtrace_memory,
               bench::CurrentRssKb(),
               snap.totals.live_bytes,
               in.events_applied,
               in.events_dropped + in.records_failed + in.rings_unavailable,
               stats.events_lost,
               in.overflow_waits};
      samples.push_back(s);
      printf("| %.0f | %llu | %llu | %llu | %llu | %llu | %llu | %ld KiB | %llu | %llu | %llu "
             "| %llu | %llu |\n",
             s.seconds, static_cast<unsigned long long>(s.requests),
             static_cast<unsigned long long>(s.memtrace_bytes),
             static_cast<unsigned long long>(s.parts.rings),
             static_cast<unsigned long long>(s.parts.tickets),
             static_cast<unsigned long long>(s.parts.ledger),
             static_cast<unsigned long long>(s.parts.sites), s.rss_kb,
             static_cast<unsigned long long>(s.live_bytes),
             static_cast<unsigned long long>(s.events),
             static_cast<unsigned long long>(s.dropped),
             static_cast<unsigned long long>(s.sink_lost),
             static_cast<unsigned long long>(s.overflow_waits));
      fflush(stdout);
      while (next_sample <= elapsed()) next_sample += sample_seconds;
    }
  }
  tracer->Stop().IgnoreError();
  const Snapshot final_snapshot = tracer->TakeSnapshot();
  const absl::Status finished = sink->Finish(final_snapshot);
  const JsonlSinkStats stats = sink->stats();
  const CaptureIntegrity& in = final_snapshot.integrity;
  const uint64_t dropped = in.events_dropped + in.records_failed + in.rings_unavailable;

  // Warm-up: the first tenth of the run (at least one sample); then quarters.
  size_t warm = 1;
  while (warm < samples.size() && samples[warm - 1].seconds < total_seconds / 10) ++warm;
  const size_t rest = samples.size() - std::min(warm, samples.size());
  bool flat = false;
  std::string flat_line;
  if (rest < 4) {
    flat_line = absl::StrCat("too few samples after warm-up (", rest,
                             "); lower --sample_seconds or raise --minutes");
  } else {
    const size_t quarter = rest / 4;
    const uint64_t first = MaxMemtraceBytes(samples, warm, warm + quarter);
    const uint64_t last = MaxMemtraceBytes(samples, samples.size() - quarter, samples.size());
    const double growth = first > 0 ? static_cast<double>(last) / first - 1 : 0;
    flat = static_cast<double>(last) <= static_cast<double>(first) * (1 + tolerance);
    flat_line = absl::StrCat("memtrace memory: first-quarter max ", first,
                             " B, last-quarter max ", last, " B (", growth * 100,
                             "%, tolerance ", tolerance * 100, "%)");
  }
  const bool lossless = dropped == 0 && stats.events_lost == 0;
  printf("\nsoak: %llu requests, %llu operations in %.0f s (%.0f ops/s); %llu events "
         "applied, %llu written by the sink (%llu bytes); capture %s\n",
         static_cast<unsigned long long>(requests), static_cast<unsigned long long>(ops),
         elapsed(), static_cast<double>(ops) / elapsed(),
         static_cast<unsigned long long>(in.events_applied),
         static_cast<unsigned long long>(stats.events_written),
         static_cast<unsigned long long>(stats.bytes_written),
         finished.ok() ? "finished" : std::string(finished.message()).c_str());
  printf("soak: %s: %s\n", flat ? "FLAT" : "NOT FLAT", flat_line.c_str());
  printf("soak: %s: dropped %llu, sink lost %llu, overflow waits %llu; integrity %s\n",
         lossless ? "NO DROPS" : "DROPS", static_cast<unsigned long long>(dropped),
         static_cast<unsigned long long>(stats.events_lost),
         static_cast<unsigned long long>(in.overflow_waits), in.Verdict().c_str());
  printf("soak: integrity counters: %s; max drainer lag %.1f ms\n", in.Counters().c_str(),
         static_cast<double>(in.max_drainer_lag_ns) / 1e6);
  printf("soak: verdict %s\n", flat && lossless ? "PASS" : "FAIL");
  return flat && lossless ? 0 : 1;
}

}  // namespace
}  // namespace memtrace

int main(int argc, char** argv) { return memtrace::Main(argc, argv); }
