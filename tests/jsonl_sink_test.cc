// Copyright 2026 The memtrace Authors.
//
// The JSONL capture sink: structure of a capture, and the sink errors it must survive
// (an unwritable path, a full disk, a closed pipe, a directory removed mid-run) while
// tracing goes on.

#include "sinks/jsonl_sink.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "analysis/capture_reader.h"
#include "runtime/malloc_allocator.h"
#include "runtime/internal/module_map.h"
#include "runtime/tracer.h"
#include "sinks/json_text.h"

namespace memtrace {
namespace {

std::vector<std::string> ReadLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string TypeOf(const std::string& line) {
  const std::string key = "\"type\":\"";
  const size_t at = line.find(key);
  if (at == std::string::npos) return "";
  const size_t start = at + key.size();
  return line.substr(start, line.find('"', start) - start);
}

std::string TempPath(const std::string& name) {
  const char* dir = getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

// A tracer of `config`, started, its records going to `sink`.
std::unique_ptr<Tracer> StartedInto(JsonlSink* sink, const Config& config = Config{}) {
  std::unique_ptr<Tracer> tracer = Tracer::Create(config).value();
  EXPECT_TRUE(tracer->recorder().SetObserver(sink).ok());
  EXPECT_TRUE(tracer->Start().ok());
  return tracer;
}

TEST(JsonlSinkTest, CaptureHasHeaderTablesEventsAndTrailer) {
  const std::string path = TempPath("capture.jsonl");
  auto sink = JsonlSink::Open(path).value();
  auto tracer = StartedInto(sink.get());
  MallocAllocator heap;
  TracingAllocator traced(tracer.get(), &heap, layers::kCpuHeap);
  static const ScopeName kWork("jsonl_work");
  std::vector<std::thread> threads;
  std::vector<std::vector<std::pair<void*, size_t>>> kept(3);  // live at the end
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      Span span = tracer->Enter(kWork);
      for (int i = 0; i < 100; ++i) {
        void* p = traced.Alloc(32 + i, 16, MEMTRACE_CALL_SITE());
        if (i % 2 == 0) {
          traced.Free(AsMemory(p, 32 + i), 16, 0);
        } else {
          kept[t].emplace_back(p, 32 + i);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_FALSE(tracer->recorder().SetObserver(nullptr).ok()) << "not while running";
  ASSERT_TRUE(tracer->Stop().ok());
  const Snapshot snap = tracer->TakeSnapshot();
  ASSERT_TRUE(sink->Finish(snap).ok()) << sink->status();

  const std::vector<std::string> lines = ReadLines(path);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(TypeOf(lines.front()), "header");
  EXPECT_NE(lines.front().find("\"schema_version\":1"), std::string::npos);
  EXPECT_EQ(TypeOf(lines.back()), "trailer");
  EXPECT_NE(lines.back().find("\"complete\":true"), std::string::npos) << lines.back();
  const MemtraceMemory& m = snap.memtrace_memory;
  const std::string memory =
      "\"memtrace_bytes\":" + std::to_string(snap.memtrace_bytes) +
      ",\"memtrace_memory\":{\"rings\":" + std::to_string(m.rings) +
      ",\"tickets\":" + std::to_string(m.tickets) + ",\"ledger\":" + std::to_string(m.ledger) +
      ",\"sites\":" + std::to_string(m.sites) + "}";
  EXPECT_NE(lines.back().find(memory), std::string::npos) << lines.back();
  EXPECT_EQ(snap.memtrace_bytes, m.rings + m.tickets + m.ledger + m.sites);
  EXPECT_GT(m.rings, 0u);
  // The CPU time of memtrace's own threads: the drainer's as the snapshot says, and the
  // writer's, which has written 456 records and the header by then.
  const std::string cpu = "},\"memtrace_cpu_ns\":{\"drainer\":" +
                          std::to_string(snap.drainer_cpu_ns) + ",\"writer\":";
  const size_t at = lines.back().find(cpu);
  ASSERT_NE(at, std::string::npos) << lines.back();
  EXPECT_GT(snap.drainer_cpu_ns, 0u);
  EXPECT_GT(std::stoull(lines.back().substr(at + cpu.size())), 0u) << lines.back();
  std::map<std::string, int> counts;
  bool scope_before_use = false, seen_scope = false;
  for (const std::string& line : lines) {
    const std::string type = TypeOf(line);
    ++counts[type];
    if (type == "scope" && line.find("jsonl_work") != std::string::npos) seen_scope = true;
    if (type == "alloc" && line.find("\"scope\":") != std::string::npos && seen_scope) {
      scope_before_use = true;
    }
  }
  EXPECT_EQ(counts["alloc"], 300);
  EXPECT_EQ(counts["free"], 150);
  EXPECT_EQ(counts["scope_enter"], 3);
  EXPECT_EQ(counts["scope_exit"], 3);
  EXPECT_EQ(counts["layer"], 1);
  EXPECT_GE(counts["site"], 1);
  EXPECT_TRUE(scope_before_use) << "a scope's table line comes before events that use it";
  const JsonlSinkStats stats = sink->stats();
  EXPECT_EQ(stats.events_written, snap.integrity.events_applied);
  EXPECT_EQ(stats.events_lost, 0u);
  for (const auto& blocks : kept) {
    for (auto [p, n] : blocks) heap.Free(AsMemory(p, n), 16, 0);
  }
}

// Call stacks travel ahead of the allocations that use them (transport/event.h); the
// capture must pair every allocation with exactly the stack it was recorded with, from
// any thread, whatever the stack's depth, and list the process's modules.
// Misuse of a sink's life beside its tracer's: each is refused or said, never a crash or
// a capture that claims more than it holds.
TEST(JsonlSinkTest, ASinkDestroyedWhileItsTracerRecordsIsDetachedFirst) {
  auto tracer = Tracer::Create(Config{}).value();
  MallocAllocator heap;
  TracingAllocator traced(tracer.get(), &heap, layers::kCpuHeap);
  std::atomic<bool> stop{false};
  {
    auto sink = JsonlSink::Open(TempPath("destroyed.mtb")).value();
    ASSERT_TRUE(tracer->recorder().SetObserver(sink.get()).ok());
    ASSERT_TRUE(tracer->Start().ok());
    // A thread keeps the drainer busy handing epochs to the sink while it goes.
    std::thread busy([&] {
      while (!stop.load()) traced.Free(AsMemory(traced.Alloc(64, 16, 0), 64), 16, 0);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    sink.reset();  // an early return that skipped Stop()
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stop = true;
    busy.join();
  }
  ASSERT_TRUE(tracer->Stop().ok());
  EXPECT_EQ(tracer->TakeSnapshot().totals.live_count, 0u);
}

TEST(JsonlSinkTest, FinishWhileTheTracerRecordsMarksTheCapturePartialAndSaysSo) {
  const std::string path = TempPath("early_finish.jsonl");
  auto sink = JsonlSink::Open(path).value();
  auto tracer = StartedInto(sink.get());
  MallocAllocator heap;
  TracingAllocator traced(tracer.get(), &heap, layers::kCpuHeap);
  for (int i = 0; i < 100; ++i) traced.Free(AsMemory(traced.Alloc(64, 16, 0), 64), 16, 0);
  ASSERT_TRUE(tracer->Flush().ok());
  const absl::Status finished = sink->Finish(tracer->TakeSnapshot());
  EXPECT_EQ(finished.code(), absl::StatusCode::kFailedPrecondition) << finished;
  EXPECT_NE(finished.message().find("call the tracer's Stop() before Finish()"),
            std::string::npos);
  EXPECT_FALSE(sink->attached());  // the tracer hands it nothing more
  for (int i = 0; i < 100; ++i) traced.Free(AsMemory(traced.Alloc(64, 16, 0), 64), 16, 0);
  ASSERT_TRUE(tracer->Stop().ok());
  const std::vector<std::string> lines = ReadLines(path);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(TypeOf(lines.back()), "trailer");
  EXPECT_NE(lines.back().find("\"complete\":false"), std::string::npos) << lines.back();
  EXPECT_NE(lines.back().find("\"ended_by\":\"finish while recording\""), std::string::npos)
      << lines.back();
}

TEST(JsonlSinkTest, ASinkAttachedToOneTracerIsRefusedByAnother) {
  auto sink = JsonlSink::Open(TempPath("two_tracers.jsonl")).value();
  auto first = Tracer::Create(Config{}).value();
  auto second = Tracer::Create(Config{}).value();
  ASSERT_TRUE(first->recorder().SetObserver(sink.get()).ok());
  const absl::Status s = second->recorder().SetObserver(sink.get());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("attached to another tracer"), std::string::npos) << s;
  // Detached from the first, it may go to the second; and attaching it twice to one is
  // no error.
  ASSERT_TRUE(first->recorder().SetObserver(nullptr).ok());
  EXPECT_TRUE(second->recorder().SetObserver(sink.get()).ok());
  EXPECT_TRUE(second->recorder().SetObserver(sink.get()).ok());
  // A tracer destroyed first leaves the sink detached, not pointing at it.
  second.reset();
  EXPECT_FALSE(sink->attached());
}

TEST(JsonlSinkTest, StacksArriveWithTheirAllocationsAndModulesAreListed) {
  const std::string path = TempPath("stacks.jsonl");
  JsonlSinkOptions options;
  options.site_capacity = 4;  // five distinct stacks below: the last goes to "other"
  auto sink = JsonlSink::Open(path, options).value();
  Config config;
  config.request_site_capacity_max = 4;
  auto tracer = StartedInto(sink.get(), config);
  // Synthetic stacks of depths 1, 2, 5, 16 and 3, each frame unique to its stack.
  const std::vector<uint32_t> depths = {1, 2, 5, 16, 3};
  std::vector<std::vector<uint64_t>> stacks;
  for (size_t s = 0; s < depths.size(); ++s) {
    std::vector<uint64_t> frames;
    for (uint32_t f = 0; f < depths[s]; ++f) frames.push_back(0x400000 + s * 0x1000 + f * 8);
    stacks.push_back(frames);
  }
  // Thread t allocates block i at a made-up address that says which stack it used.
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  auto address_of = [](int t, int i) { return uint64_t{0x10000000} + (uint64_t(t) << 20) + i * 16; };
  auto stack_of = [&](int t, int i) { return static_cast<size_t>((t + i) % 4); };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const std::vector<uint64_t>& frames = stacks[stack_of(t, i)];
        const uint64_t site =
            tracer->recorder().StackSite(frames.data(), static_cast<uint32_t>(frames.size()));
        ASSERT_EQ(tracer->recorder().RecordAlloc(layers::kCpuHeap, address_of(t, i), 8, site),
                  RecordResult::kRecorded);
      }
    });
  }
  for (auto& th : threads) th.join();
  // The fifth stack, past the capacity. Flush first: inside one epoch the drainer applies
  // (and the sink numbers sites in) ring order, not time order, so without it the late
  // allocation could take a site id before the threads' stacks (drainer.h, guarantees).
  ASSERT_TRUE(tracer->recorder().Flush().ok());
  const uint64_t late = tracer->recorder().StackSite(stacks[4].data(), 3);
  ASSERT_EQ(tracer->recorder().RecordAlloc(layers::kCpuHeap, 0x7000, 8, late),
            RecordResult::kRecorded);
  ASSERT_TRUE(tracer->Stop().ok());
  ASSERT_TRUE(sink->Finish(tracer->TakeSnapshot()).ok()) << sink->status();

  std::map<uint32_t, CaptureRecord> sites;
  std::vector<CaptureRecord> modules;
  int allocs = 0;
  int other = 0;
  const absl::Status read = ReadCapture(path, [&](const CaptureRecord& r) {
    if (r.type == LineType::kSite) sites[r.id] = r;
    if (r.type == LineType::kModule) modules.push_back(r);
    if (r.type != LineType::kAlloc) return absl::OkStatus();
    const auto site = sites.find(r.site);
    EXPECT_NE(site, sites.end()) << "a site line comes before its first use";
    if (site == sites.end()) return absl::OkStatus();
    if (r.addr == 0x7000) {
      EXPECT_TRUE(site->second.other);
      ++other;
      return absl::OkStatus();
    }
    const uint64_t offset = r.addr - 0x10000000;
    const int t = static_cast<int>(offset >> 20);
    const int i = static_cast<int>((offset & 0xfffff) / 16);
    EXPECT_EQ(site->second.frames, stacks[stack_of(t, i)]) << "thread " << t << " block " << i;
    EXPECT_EQ(site->second.addr, stacks[stack_of(t, i)][0]);
    ++allocs;
    return absl::OkStatus();
  });
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(allocs, kThreads * kPerThread);
  EXPECT_EQ(other, 1);
  EXPECT_EQ(sites.size(), 5u) << "four stacks and the other-sites bucket";
  EXPECT_EQ(sink->stats().stack_collisions, 0u);
  // This test's own code is inside one of the listed executable mappings.
  const auto here = reinterpret_cast<uint64_t>(&ReadLines);
  bool found = false;
  for (const CaptureRecord& m : modules) {
    if (here >= m.start && here < m.end) {
      found = true;
      EXPECT_NE(m.path.find("jsonl_sink_test"), std::string::npos) << m.path;
    }
  }
  EXPECT_TRUE(found) << modules.size() << " modules";
}

// Each thread that records is named in the capture by a "thread" line before its first
// event: its kernel id and name, on the capture's number of its ring. A ring a later thread
// takes again gets a second line, after every event of the thread before. The test knows
// each thread's gettid() and name, and which blocks it allocated.
TEST(JsonlSinkTest, EveryThreadIsNamedWithItsKernelIdBeforeItsEvents) {
  const std::string path = TempPath("threads.jsonl");
  auto sink = JsonlSink::Open(path).value();
  auto tracer = StartedInto(sink.get());
  constexpr int kRounds = 3;  // one thread at a time: each takes the ring the last left
  constexpr int kPerThread = 100;
  std::map<uint64_t, int64_t> tid_of_block;  // block address -> the thread that made it
  std::map<int64_t, std::string> name_of_tid;
  for (int round = 0; round < kRounds; ++round) {
    int64_t tid = 0;
    const std::string name = absl::StrCat("worker-", round);
    std::thread worker([&] {
      pthread_setname_np(pthread_self(), name.c_str());
      tid = static_cast<int64_t>(syscall(SYS_gettid));
      for (int i = 0; i < kPerThread; ++i) {
        ASSERT_EQ(tracer->recorder().RecordAlloc(layers::kCpuHeap,
                                                 0x100000 + round * 0x10000 + i * 16, 8, 0),
                  RecordResult::kRecorded);
      }
    });
    worker.join();
    for (int i = 0; i < kPerThread; ++i) tid_of_block[0x100000 + round * 0x10000 + i * 16] = tid;
    name_of_tid[tid] = name;
    // The drainer reclaims the exited thread's ring before the next thread asks for one.
    ASSERT_TRUE(tracer->recorder().Flush().ok());
    ASSERT_TRUE(tracer->recorder().Flush().ok());
  }
  ASSERT_TRUE(tracer->Stop().ok());
  ASSERT_TRUE(sink->Finish(tracer->TakeSnapshot()).ok()) << sink->status();

  std::map<uint32_t, int64_t> holder;  // capture thread -> the kernel thread that has it
  std::map<uint32_t, int> lines_of_thread;
  int allocs = 0;
  const absl::Status read = ReadCapture(path, [&](const CaptureRecord& r) {
    if (r.type == LineType::kThread) {
      holder[r.thread] = r.tid;
      ++lines_of_thread[r.thread];
      EXPECT_EQ(r.name, name_of_tid.count(r.tid) ? name_of_tid[r.tid] : r.name) << r.tid;
    }
    if (r.type != LineType::kAlloc) return absl::OkStatus();
    ++allocs;
    EXPECT_EQ(holder.count(r.thread), 1u) << "an event before its thread's line";
    EXPECT_EQ(holder[r.thread], tid_of_block.at(r.addr)) << "block 0x" << std::hex << r.addr;
    return absl::OkStatus();
  });
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(allocs, kRounds * kPerThread);
  // The rounds took one ring in turn (reused: the positions go on), each announced.
  int reused = 0;
  for (const auto& [thread, lines] : lines_of_thread) reused += lines > 1;
  EXPECT_GE(reused, 1) << "no ring was taken again: the test shows nothing of reuse";
  // Thread lines are not events: the sink's counts are the records'.
  EXPECT_EQ(sink->stats().event_lines, static_cast<uint64_t>(kRounds * kPerThread));
}

// A thread renamed after it took its ring is named again: at its exit hook when it exits
// before the capture ends, at the capture's end when it is still running (renamed there
// by another thread). A thread never renamed has its one line.
TEST(JsonlSinkTest, AThreadRenamedAfterItTookItsRingIsNamedAgain) {
  const std::string path = TempPath("renamed.jsonl");
  auto sink = JsonlSink::Open(path).value();
  auto tracer = StartedInto(sink.get());
  auto alloc = [&](uint64_t addr) {
    ASSERT_EQ(tracer->recorder().RecordAlloc(layers::kCpuHeap, addr, 8, 0),
              RecordResult::kRecorded);
  };
  std::map<int64_t, std::vector<std::string>> want;  // tid -> its names, in order
  int64_t tid = 0;
  // Each rename comes after the thread's records were written (Flush()): its line has
  // no record of its own to go before, in an epoch that may have none at all.
  std::thread exits([&] {  // renames itself and exits
    tid = static_cast<int64_t>(syscall(SYS_gettid));
    pthread_setname_np(pthread_self(), "exits-early");
    alloc(0x1000);
    ASSERT_TRUE(tracer->recorder().Flush().ok());
    pthread_setname_np(pthread_self(), "exits-late");
  });
  exits.join();
  ASSERT_TRUE(tracer->recorder().Flush().ok());
  want[tid] = {"exits-early", "exits-late"};
  std::thread same([&] {  // never renamed
    tid = static_cast<int64_t>(syscall(SYS_gettid));
    pthread_setname_np(pthread_self(), "same");
    alloc(0x3000);
  });
  same.join();
  want[tid] = {"same"};
  std::atomic<int> stage{0};
  std::thread runs([&] {  // renamed by the test's thread, and still running at the end
    tid = static_cast<int64_t>(syscall(SYS_gettid));
    pthread_setname_np(pthread_self(), "runs-early");
    alloc(0x4000);
    stage.store(1);
    while (stage.load() != 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (stage.load() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(tracer->recorder().Flush().ok());
  ASSERT_EQ(pthread_setname_np(runs.native_handle(), "runs-late"), 0);
  want[tid] = {"runs-early", "runs-late"};
  ASSERT_TRUE(tracer->Stop().ok());
  stage.store(2);
  runs.join();
  ASSERT_TRUE(sink->Finish(tracer->TakeSnapshot()).ok()) << sink->status();

  std::map<int64_t, std::vector<std::string>> got;
  const absl::Status read = ReadCapture(path, [&](const CaptureRecord& r) {
    if (r.type == LineType::kThread && want.count(r.tid) != 0) got[r.tid].push_back(r.name);
    return absl::OkStatus();
  });
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(got, want);
}

// More sites than the writer's recent-site cache holds (jsonl_sink.h), interleaved: every
// allocation still names its own site.
TEST(JsonlSinkTest, ManyInterleavedSitesKeepTheirIds) {
  const std::string path = TempPath("many_sites.jsonl");
  auto sink = JsonlSink::Open(path).value();
  // 30,000 records into a 16,384-record ring: the thread waits for the drainer at least
  // once. On a loaded machine (CI compiles beside the tests) that wait can outlast even
  // the default second, and this test is about site ids, not about the wait.
  Config config;
  config.overflow_wait = absl::Seconds(10);
  auto tracer = StartedInto(sink.get(), config);
  constexpr uint64_t kSites = 3000;
  constexpr uint64_t kAllocs = 30000;
  auto site_of = [](uint64_t i) { return 0x500000 + ((i * 7919) % kSites) * 16; };
  for (uint64_t i = 0; i < kAllocs; ++i) {
    ASSERT_EQ(tracer->recorder().RecordAlloc(layers::kCpuHeap, 0x10000000 + i * 16, 8,
                                             site_of(i)),
              RecordResult::kRecorded);
  }
  ASSERT_TRUE(tracer->Stop().ok());
  ASSERT_TRUE(sink->Finish(tracer->TakeSnapshot()).ok()) << sink->status();
  std::map<uint32_t, uint64_t> site_addr;
  uint64_t allocs = 0;
  const absl::Status read = ReadCapture(path, [&](const CaptureRecord& r) {
    if (r.type == LineType::kSite) site_addr[r.id] = r.addr;
    if (r.type != LineType::kAlloc) return absl::OkStatus();
    const uint64_t i = (r.addr - 0x10000000) / 16;
    EXPECT_EQ(site_addr[r.site], site_of(i)) << "allocation " << i;
    ++allocs;
    return absl::OkStatus();
  });
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(allocs, kAllocs);
  EXPECT_EQ(site_addr.size(), kSites) << "each site once";
}

TEST(JsonlSinkTest, UnwritablePathIsAClearError) {
  const auto sink = JsonlSink::Open("/nonexistent-dir/capture.jsonl");
  ASSERT_FALSE(sink.ok());
  EXPECT_NE(sink.status().message().find("/nonexistent-dir/capture.jsonl"), std::string::npos);
  EXPECT_NE(sink.status().message().find("No such file or directory"), std::string::npos);
  EXPECT_NE(sink.status().message().find("check that the directory exists"), std::string::npos);
  // A file that exists and cannot be written (sysfs refuses even root), and a directory:
  // each fix names what is wrong, not the directory.
  if (access("/sys/kernel/notes", F_OK) == 0) {
    const auto file = JsonlSink::Open("/sys/kernel/notes");
    ASSERT_FALSE(file.ok());
    EXPECT_NE(file.status().message().find("the file exists and cannot be written"),
              std::string::npos)
        << file.status();
  }
  const auto dir = JsonlSink::Open(TempPath(""));
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("the path is a directory"), std::string::npos)
      << dir.status();
}

// Writes through `sink` from a traced workload and checks that tracing went on.
void TraceThroughFailingSink(JsonlSink& sink) {
  auto tracer = Tracer::Create(Config{}).value();
  ASSERT_TRUE(tracer->recorder().SetObserver(&sink).ok());
  ASSERT_TRUE(tracer->Start().ok());
  MallocAllocator heap;
  TracingAllocator traced(tracer.get(), &heap, layers::kCpuHeap);
  for (int i = 0; i < 20000; ++i) {
    void* p = traced.Alloc(64, 16, 0);
    traced.Free(AsMemory(p, 64), 16, 0);
    if (i % 5000 == 0) {
      ASSERT_TRUE(tracer->Flush().ok());
    }
  }
  ASSERT_TRUE(tracer->Stop().ok());
  const Snapshot snap = tracer->TakeSnapshot();
  EXPECT_TRUE(snap.integrity.complete()) << "the sink's failure does not stop tracing";
  EXPECT_EQ(snap.totals.allocated_count, 20000u);
  const absl::Status finished = sink.Finish(snap);
  EXPECT_EQ(finished.code(), absl::StatusCode::kDataLoss) << finished;
  EXPECT_GE(sink.stats().write_errors, 1u);
  EXPECT_GT(sink.stats().events_lost, 0u);
  // Every applied record was either written or counted lost.
  EXPECT_EQ(sink.stats().events_written + sink.stats().events_lost,
            snap.integrity.events_applied);
}

TEST(JsonlSinkTest, FullDiskIsReportedAndTracingGoesOn) {
  for (const CaptureEncoding encoding : {CaptureEncoding::kJsonl, CaptureEncoding::kBinary}) {
    JsonlSinkOptions options;
    options.encoding = encoding;
    auto sink = JsonlSink::Open("/dev/full", options).value();
    TraceThroughFailingSink(*sink);
    EXPECT_NE(sink->status().message().find("No space left on device"), std::string::npos)
        << sink->status();
  }
}

TEST(JsonlSinkTest, ClosedPipeIsReportedNotASignal) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  close(fds[0]);  // nobody will ever read
  FILE* stream = fdopen(fds[1], "w");
  ASSERT_NE(stream, nullptr);
  auto sink = JsonlSink::FromStream(stream, /*owned=*/true, "pipe").value();
  TraceThroughFailingSink(*sink);  // a SIGPIPE would kill the test here
  EXPECT_NE(sink->status().message().find("Broken pipe"), std::string::npos)
      << sink->status();
}

// rm -rf of the capture's directory while the program traces: Linux keeps accepting
// writes into the unlinked file, so the sink must notice by itself (link count 0).
TEST(JsonlSinkTest, DirectoryRemovedMidRunIsReportedAndTracingGoesOn) {
  const std::filesystem::path dir = TempPath("removed_mid_run");
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(std::filesystem::create_directories(dir));
  auto sink = JsonlSink::Open((dir / "capture.jsonl").string()).value();
  auto tracer = StartedInto(sink.get());
  MallocAllocator heap;
  TracingAllocator traced(tracer.get(), &heap, layers::kCpuHeap);
  auto churn = [&](int n) {
    for (int i = 0; i < n; ++i) {
      void* p = traced.Alloc(64, 16, 0);
      ASSERT_NE(p, nullptr);
      traced.Free(AsMemory(p, 64), 16, 0);
    }
    ASSERT_TRUE(tracer->Flush().ok());
  };
  churn(1000);
  // Wait (hang guard only) until the writer has written what was drained.
  for (int i = 0; i < 10000 && sink->stats().events_written < 2000; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(sink->status().ok()) << sink->status();
  std::filesystem::remove_all(dir);  // the capture's directory goes away mid-run
  for (int round = 0; round < 4; ++round) churn(1000);
  ASSERT_TRUE(tracer->Stop().ok());
  const Snapshot snap = tracer->TakeSnapshot();
  EXPECT_TRUE(snap.integrity.complete()) << "the sink's failure does not stop tracing";
  EXPECT_EQ(snap.totals.allocated_count, 5000u);
  EXPECT_EQ(snap.totals.live_count, 0u);
  const absl::Status finished = sink->Finish(snap);
  EXPECT_EQ(finished.code(), absl::StatusCode::kDataLoss) << finished;
  EXPECT_NE(finished.message().find("was removed while it was being written"),
            std::string::npos)
      << finished;
  EXPECT_EQ(sink->stats().write_errors, 1u);
  EXPECT_GT(sink->stats().events_lost, 0u) << "records after the removal are counted lost";
  EXPECT_EQ(sink->stats().events_written + sink->stats().events_lost,
            snap.integrity.events_applied)
      << "every applied record was written or counted lost";
  EXPECT_FALSE(std::filesystem::exists(dir)) << "nothing recreated the directory";
}

TEST(JsonlSinkTest, QueueOverflowDropsAndCountsInsteadOfBlocking) {
  const std::string path = TempPath("tiny_queue.jsonl");
  JsonlSinkOptions options;
  options.max_queued_records = 1;  // every multi-record epoch overflows
  auto sink = JsonlSink::Open(path, options).value();
  Event e{0x1000, Event::PackKindSize(EventKind::kAlloc, 0, 8), 0x400000, 0};
  const ObservedEvent batch[2] = {{e, 1}, {e, 2}};
  sink->OnEpoch(1, 0, batch);
  EXPECT_EQ(sink->stats().events_lost, 2u);
  ASSERT_TRUE(sink->Finish(Snapshot{}).ok());
  std::vector<std::string> lines = ReadLines(path);
  // Header, the module map, trailer: no table or event line.
  std::erase_if(lines, [](const std::string& l) { return TypeOf(l) == "module"; });
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines.back().find("\"complete\":false"), std::string::npos) << lines.back();
  EXPECT_NE(lines.back().find("\"events_lost\":2"), std::string::npos);
}

// With backpressure (JsonlSinkOptions::max_backpressure; the interposer's is 2 s), a full
// queue makes the drainer's hand-over wait for the writer instead of dropping: an epoch
// larger than the whole queue goes in once the queue is empty, and nothing is lost while
// the writer keeps up. A writer stuck for longer than the bound (a pipe nobody reads) makes
// a hand-over wait that long, then drop and count its records: the drainer is slowed,
// never stopped.
TEST(JsonlSinkTest, AFullQueueUnderBackpressureWaitsForTheWriterThenDropsAndCounts) {
  const Event e{0x1000, Event::PackKindSize(EventKind::kAlloc, 0, 8), 0x400000, 0};
  const ObservedEvent batch[2] = {{e, 1}, {e, 2}};
  {
    const std::string path = TempPath("backpressure.jsonl");
    JsonlSinkOptions options;
    options.max_queued_records = 1;  // every epoch is larger than the queue
    options.max_backpressure = absl::Seconds(30);
    auto sink = JsonlSink::Open(path, options).value();
    for (uint32_t epoch = 1; epoch <= 50; ++epoch) sink->OnEpoch(epoch, 0, batch);
    ASSERT_TRUE(sink->Finish(Snapshot{}).ok());
    EXPECT_EQ(sink->stats().events_lost, 0u);
    EXPECT_EQ(sink->stats().events_written, 100u);
    std::vector<std::string> lines = ReadLines(path);
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                            [](const std::string& l) { return TypeOf(l) == "alloc"; }),
              100);
  }
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  JsonlSinkOptions options;
  options.max_queued_records = 1;
  options.max_backpressure = absl::Milliseconds(20);
  auto sink = JsonlSink::FromStream(fdopen(fds[1], "w"), /*owned=*/true, "a pipe", options)
                  .value();
  // However the test ends, the pipe is drained, so the writer never stays blocked in it.
  struct Drain {
    int fd;
    bool reading = false;  // a reader took the read end, and closes it once drained
    ~Drain() {
      // Never read: the writer's next write fails (EPIPE, no signal) instead of blocking.
      if (!reading) close(fd);
    }
  } drain{fds[0]};
  // Nobody reads yet: the writer blocks once the pipe is full, and hand-overs start to
  // wait out their bound and drop (a hang guard of 20,000 epochs, no timing asserted).
  uint32_t epochs = 0;
  while (sink->stats().events_lost == 0 && epochs < 20000) sink->OnEpoch(++epochs, 0, batch);
  ASSERT_GT(sink->stats().events_lost, 0u) << "the writer never blocked";
  drain.reading = true;
  std::thread reader([fd = fds[0]] {
    char buffer[65536];
    while (read(fd, buffer, sizeof(buffer)) > 0) {
    }
    close(fd);
  });
  for (int i = 0; i < 10; ++i) sink->OnEpoch(++epochs, 0, batch);
  const absl::Status finished = sink->Finish(Snapshot{});  // closes the pipe: the reader ends
  reader.join();
  ASSERT_TRUE(finished.ok()) << finished;
  EXPECT_EQ(sink->stats().events_written + sink->stats().events_lost, 2u * epochs)
      << "every record handed over was written or counted lost";
}

// A size limit (JsonlSinkOptions::max_bytes), in either encoding: epochs go in whole
// while they fit, and once one would pass the limit, it and every later one are counted
// (events_past_limit), never written. The file holds the header, whole epochs and the
// trailer; it reads back; written + past the limit = every record handed over.
TEST(JsonlSinkTest, ASizeLimitStopsTheEventsAtAnEpochAndCountsTheRest) {
  for (const char* name : {"limited.jsonl", "limited.mtb"}) {
    SCOPED_TRACE(name);
    const std::string path = TempPath(name);
    JsonlSinkOptions options;
    options.max_bytes = 64 * 1024;
    auto sink = JsonlSink::Open(path, options).value();
    constexpr int kEpochs = 400;
    constexpr int kPerEpoch = 50;  // alloc, free pairs
    uint64_t ticket = 0;
    for (int epoch = 1; epoch <= kEpochs; ++epoch) {
      ObservedBatch batch;
      for (int i = 0; i < kPerEpoch / 2; ++i) {
        const uint64_t addr = 0x10000 + 64 * static_cast<uint64_t>(i);
        const Event alloc{addr, Event::PackKindSize(EventKind::kAlloc, 0, 24 + i),
                          0x400000 + static_cast<uint64_t>(i % 7),
                          Event::PackScopeEpoch(0, static_cast<uint32_t>(epoch))};
        const uint64_t alloc_ticket = ++ticket;
        batch.push_back({alloc, alloc_ticket});
        const Event free{addr, Event::PackKindSize(EventKind::kFree, 0, 0), alloc_ticket,
                         Event::PackScopeEpoch(0, static_cast<uint32_t>(epoch))};
        batch.push_back({free, ++ticket});
      }
      sink->OnEpochRecords(static_cast<uint32_t>(epoch), epoch * int64_t{1000000}, batch);
    }
    ASSERT_TRUE(sink->Finish(Snapshot{}).ok());
    const JsonlSinkStats stats = sink->stats();
    EXPECT_GT(stats.events_written, 0u);
    EXPECT_GT(stats.events_past_limit, 0u) << "400 epochs need more than 64 KiB";
    EXPECT_EQ(stats.events_written + stats.events_past_limit, uint64_t{kEpochs * kPerEpoch});
    EXPECT_EQ(stats.events_written % kPerEpoch, 0u) << "whole epochs only";
    EXPECT_EQ(stats.events_lost, 0u);
    // Within the limit but for the closing lines (the module map and the trailer).
    const auto size = std::filesystem::file_size(path);
    uint64_t events = 0;
    std::string trailer;
    uint64_t closing = 0;
    CaptureReadStats read;
    ASSERT_TRUE(ReadCapture(
                    path,
                    [&](const CaptureRecord& r) {
                      if (r.type == LineType::kTrailer) trailer = r.raw;
                      if (r.type == LineType::kModule || r.type == LineType::kTrailer) {
                        closing += r.raw.size() + 8;
                      }
                      return absl::OkStatus();
                    },
                    &read)
                    .ok());
    events = read.events;
    EXPECT_LE(size, options.max_bytes + closing);
    EXPECT_EQ(events, stats.events_written) << "every written record reads back";
    EXPECT_NE(trailer.find("\"complete\":false"), std::string::npos) << trailer;
    EXPECT_NE(trailer.find(absl::StrCat("\"events_past_limit\":", stats.events_past_limit)),
              std::string::npos)
        << trailer;
    EXPECT_NE(trailer.find("\"max_bytes\":65536"), std::string::npos) << trailer;
  }
}

// The drainer's path: the sink takes the records out of the drainer's vector (no copy)
// and leaves it an empty one; the capture has every record, in order.
// A JSONL capture from its header to its trailer, with `allocs` alloc lines.
void ExpectWholeCapture(const std::string& path, int allocs) {
  const std::vector<std::string> lines = ReadLines(path);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(TypeOf(lines.front()), "header");
  EXPECT_EQ(TypeOf(lines.back()), "trailer");
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                          [](const std::string& l) { return TypeOf(l) == "alloc"; }),
            allocs);
}

// A capture file is locked while a sink writes it: a second sink on it, in this process
// or another, is refused (kUnavailable, naming the file) and the first capture is whole.
TEST(JsonlSinkTest, ASecondSinkOnAFileBeingWrittenIsRefusedAndTheFileStaysWhole) {
  const std::string path = TempPath("locked.jsonl");
  auto first = JsonlSink::Open(path).value();
  ObservedBatch events = {
      {Event{0x1000, Event::PackKindSize(EventKind::kAlloc, 0, 8), 0x400000, 0}, 1}};
  first->OnEpochRecords(1, 0, events);
  const auto second = JsonlSink::Open(path);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
  EXPECT_NE(second.status().message().find("'" + path + "' is being written by another sink"),
            std::string::npos)
      << second.status();
  ASSERT_TRUE(first->Finish(Snapshot{}).ok());
  ExpectWholeCapture(path, 1);
  first.reset();  // closed: the lock goes with it
  auto third = JsonlSink::Open(path);
  ASSERT_TRUE(third.ok()) << third.status();
  ASSERT_TRUE((*third)->Finish(Snapshot{}).ok());
}

// A child forked while a sink is open shares the file, and with it the lock, until it
// execs or ends; ReleaseInForkedChild() (the interposer's fork handler) lets it go in the
// child, so the file is free once the parent closes it.
TEST(JsonlSinkTest, AForkedChildKeepsTheFileLockedUnlessItReleasesTheSink) {
  for (const bool release : {false, true}) {
    SCOPED_TRACE(release ? "released in the child" : "kept by the child");
    const std::string path = TempPath("forked.jsonl");
    auto sink = JsonlSink::Open(path).value();
    int ready[2];
    int go[2];
    ASSERT_EQ(pipe(ready), 0);
    ASSERT_EQ(pipe(go), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      if (release) sink->ReleaseInForkedChild();
      char c = 1;
      if (write(ready[1], &c, 1) != 1) _exit(3);
      if (read(go[0], &c, 1) != 1) _exit(4);
      _exit(0);
    }
    char c = 0;
    ASSERT_EQ(read(ready[0], &c, 1), 1);
    ASSERT_TRUE(sink->Finish(Snapshot{}).ok());
    sink.reset();
    {
      auto again = JsonlSink::Open(path);
      if (release) {
        EXPECT_TRUE(again.ok()) << again.status();
      } else {
        EXPECT_EQ(again.status().code(), absl::StatusCode::kUnavailable) << again.status();
      }
      if (again.ok()) {
        ASSERT_TRUE((*again)->Finish(Snapshot{}).ok());
      }
    }
    ASSERT_EQ(write(go[1], &c, 1), 1);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    for (int fd : {ready[0], ready[1], go[0], go[1]}) close(fd);
    // The child gone, the file is free either way.
    auto after = JsonlSink::Open(path);
    ASSERT_TRUE(after.ok()) << after.status();
    ASSERT_TRUE((*after)->Finish(Snapshot{}).ok());
  }
}

// The descriptor this process has open on `path`, from /proc/self/fd, or -1.
int DescriptorOf(const std::string& path) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    const std::filesystem::path target = std::filesystem::read_symlink(entry.path(), error);
    if (!error && target == path) return std::stoi(entry.path().filename().string());
  }
  return -1;
}

ObservedBatch OneAlloc(uint64_t address, uint64_t ticket) {
  return {{Event{address, Event::PackKindSize(EventKind::kAlloc, 0, 8), 0x400000, 0}, ticket}};
}

// The program closes the capture's descriptor and a file of its own takes the number: the
// sink writes nothing there, opens the capture again by its path, and loses nothing.
TEST(JsonlSinkTest, ACaptureWhoseDescriptorTheProgramClosedIsOpenedAgain) {
  const std::string path = TempPath("reopened.jsonl");
  const std::string own = TempPath("reopened.own");
  // Opened by a relative path, and the program changes its directory before the capture
  // has to be opened again.
  const std::filesystem::path start = std::filesystem::current_path();
  std::filesystem::current_path(std::filesystem::path(path).parent_path());
  auto sink = JsonlSink::Open("reopened.jsonl").value();
  std::filesystem::current_path("/");
  ObservedBatch events = OneAlloc(0x1000, 1);
  sink->OnEpochRecords(1, 0, events);
  // The writer checks the descriptor and then writes: the program's dup2() below must not
  // fall between the two, or the bytes go to its file. Wait until epoch 1 is written.
  for (int i = 0; i < 10000; ++i) {
    const std::vector<std::string> lines = ReadLines(path);
    if (std::any_of(lines.begin(), lines.end(),
                    [](const std::string& l) { return TypeOf(l) == "alloc"; })) {
      break;
    }
    usleep(1000);
  }
  const int fd = DescriptorOf(path);
  ASSERT_GE(fd, 512) << "Open() moves the capture far above the program's descriptors";
  const int theirs = open(own.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(theirs, 0);
  ASSERT_EQ(dup2(theirs, fd), fd);  // closes the capture's descriptor, takes its number
  events = OneAlloc(0x2000, 2);
  sink->OnEpochRecords(2, 0, events);
  ASSERT_TRUE(sink->Finish(Snapshot{}).ok()) << sink->status();
  std::filesystem::current_path(start);
  EXPECT_EQ(sink->stats().reopened, 1u);
  EXPECT_EQ(sink->stats().events_written, 2u);
  EXPECT_NE(fcntl(fd, F_GETFD), -1) << "the program's descriptor stays open";
  close(fd);
  close(theirs);
  EXPECT_EQ(std::filesystem::file_size(own), 0u) << "nothing went into the program's file";
  ExpectWholeCapture(path, 2);
}

// A stream the sink was handed has no path to open again: the loss is reported and
// counted, and the descriptor (the program's now) is neither written nor closed.
TEST(JsonlSinkTest, AStreamWhoseDescriptorTheProgramClosedIsReportedNotWritten) {
  const std::string own = TempPath("lost_stream.own");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  auto sink = JsonlSink::FromStream(fdopen(fds[1], "w"), /*owned=*/true, "a pipe").value();
  // The writer's first flush (the header, one line per loaded module) must be in the pipe
  // before the program's dup2() below: the writer checks the descriptor, then writes.
  const size_t first_lines = 1 + LoadedModules().size();
  size_t newlines = 0;
  char buf[4096];
  while (newlines < first_lines) {
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    ASSERT_GT(n, 0);
    newlines += static_cast<size_t>(std::count(buf, buf + n, '\n'));
  }
  const int theirs = open(own.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(theirs, 0);
  ASSERT_EQ(dup2(theirs, fds[1]), fds[1]);
  ObservedBatch events = OneAlloc(0x1000, 1);
  sink->OnEpochRecords(1, 0, events);
  const absl::Status finished = sink->Finish(Snapshot{});
  EXPECT_EQ(finished.code(), absl::StatusCode::kDataLoss) << finished;
  EXPECT_NE(finished.message().find("the program closed the capture's file descriptor"),
            std::string::npos)
      << finished;
  EXPECT_EQ(sink->stats().events_lost, 1u);
  EXPECT_EQ(sink->stats().events_written, 0u);
  EXPECT_NE(fcntl(fds[1], F_GETFD), -1) << "the sink did not close the program's descriptor";
  close(fds[1]);
  close(theirs);
  close(fds[0]);
  EXPECT_EQ(std::filesystem::file_size(own), 0u);
}

// The modules loaded when the sink starts follow the header, so that a capture cut off
// before its trailer can still be symbolized; Finish() does not repeat them.
TEST(JsonlSinkTest, ModulesFollowTheHeaderAndAreNotRepeated) {
  const std::string path = TempPath("modules.jsonl");
  auto sink = JsonlSink::Open(path).value();
  const std::vector<ModuleInfo> loaded = LoadedModules();
  ASSERT_FALSE(loaded.empty());
  ASSERT_TRUE(sink->Finish(Snapshot{}).ok());
  const std::vector<std::string> lines = ReadLines(path);
  ASSERT_GT(lines.size(), loaded.size());
  EXPECT_EQ(TypeOf(lines[0]), "header");
  for (size_t i = 1; i <= loaded.size(); ++i) EXPECT_EQ(TypeOf(lines[i]), "module") << i;
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                          [](const std::string& l) { return TypeOf(l) == "module"; }),
            static_cast<ptrdiff_t>(loaded.size()));
}

// Modules unloaded by the end (a plugin closed with dlclose()) are listed at the end once
// each, before the loaded ones, which are listed again after them: where an address range
// was reused the later line wins, and that is the module loaded at the end.
TEST(JsonlSinkTest, KeptModulesAreListedOnceAndBeforeTheLoadedOnes) {
  const std::string path = TempPath("kept_modules.jsonl");
  auto sink = JsonlSink::Open(path).value();
  const std::vector<ModuleInfo> loaded = LoadedModules();
  ASSERT_FALSE(loaded.empty());
  ModuleInfo gone;
  gone.path = "/gone/libgone.so";
  gone.start = 0x1000;
  gone.end = 0x2000;
  sink->KeepModules({gone, loaded[0]});
  sink->KeepModules({gone});  // noted again before another dlclose()
  ASSERT_TRUE(sink->Finish(Snapshot{}).ok());
  std::vector<std::string> modules;
  for (const std::string& line : ReadLines(path)) {
    if (TypeOf(line) == "module") modules.push_back(line);
  }
  // The list after the header, then the one Finish() wrote.
  ASSERT_EQ(modules.size(), loaded.size() + loaded.size() + 1);
  const std::vector<std::string> last(modules.begin() + static_cast<ptrdiff_t>(loaded.size()),
                                      modules.end());
  EXPECT_NE(last[0].find("/gone/libgone.so"), std::string::npos) << last[0];
  EXPECT_EQ(std::count_if(last.begin(), last.end(),
                          [&](const std::string& l) {
                            return l.find("\"" + loaded[0].path + "\"") != std::string::npos;
                          }),
            std::count_if(loaded.begin(), loaded.end(),
                          [&](const ModuleInfo& m) { return m.path == loaded[0].path; }));
}

TEST(JsonlSinkTest, OnEpochRecordsTakesTheDrainersVector) {
  const std::string path = TempPath("taken.jsonl");
  auto sink = JsonlSink::Open(path).value();
  ObservedBatch events;
  for (uint64_t i = 1; i <= 3; ++i) {
    events.push_back({Event{0x1000 * i, Event::PackKindSize(EventKind::kAlloc, 0, 8 * i),
                            0x400000, 0},
                      i});
  }
  sink->OnEpochRecords(1, 0, events);
  EXPECT_TRUE(events.empty()) << "the records went to the sink";
  events.push_back({Event{0x1000, Event::PackKindSize(EventKind::kFree, 0, 0), 1, 0}, 4});
  sink->OnEpochRecords(2, 0, events);
  EXPECT_TRUE(events.empty());
  ASSERT_TRUE(sink->Finish(Snapshot{}).ok());
  EXPECT_EQ(sink->stats().events_written, 4u);
  EXPECT_EQ(sink->stats().events_lost, 0u);
  std::vector<std::string> lines = ReadLines(path);
  std::vector<std::string> kinds;
  for (const std::string& l : lines) {
    const std::string type = TypeOf(l);
    if (type == "alloc" || type == "free") kinds.push_back(type);
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"alloc", "alloc", "alloc", "free"}));
}

// JSON text is UTF-8 and the reader rejects anything else, so a name with other bytes in
// it (a Latin-1 path) is written with U+FFFD in their place; valid sequences are kept.
TEST(JsonQuoteTest, BytesThatAreNotUtf8BecomeTheReplacementCharacter) {
  const std::string r = "\xEF\xBF\xBD";  // U+FFFD
  EXPECT_EQ(JsonQuote("plain \"x\"\n"), "\"plain \\\"x\\\"\\n\"");
  EXPECT_EQ(JsonQuote("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"");  // 2, 3 and 4 bytes
  EXPECT_EQ(JsonQuote("bad\xE9" "dir"), "\"bad" + r + "dir\"");      // Latin-1 e-acute
  EXPECT_EQ(JsonQuote("\x80"), "\"" + r + "\"");                      // stray continuation
  EXPECT_EQ(JsonQuote("\xE2\x82"), "\"" + r + r + "\"");              // cut short
  EXPECT_EQ(JsonQuote("\xC0\xAF"), "\"" + r + r + "\"");              // overlong '/'
  EXPECT_EQ(JsonQuote("\xED\xA0\x80"), "\"" + r + r + r + "\"");      // a surrogate
  EXPECT_EQ(JsonQuote("\xF4\x90\x80\x80"), "\"" + r + r + r + r + "\"");  // above U+10FFFF
  EXPECT_EQ(JsonQuote("\xF4\x8F\xBF\xBF"), "\"\xF4\x8F\xBF\xBF\"");  // U+10FFFF itself
}

}  // namespace
}  // namespace memtrace
