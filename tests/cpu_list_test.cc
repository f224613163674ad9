// Copyright 2026 The memtrace Authors.
//
// CPU lists (runtime/internal/cpu_list.h): parsing and its errors, the check against the CPUs that
// are online, and memtrace's own threads named and placed where a Config or
// JsonlSinkOptions asks, read back from /proc/self/task, not from memtrace; and how many
// threads apply records for the CPUs the tracer may use (TracerThreadsFor, config.h).

#include "runtime/internal/cpu_list.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "runtime/config.h"
#include "runtime/internal/recorder.h"
#include "sinks/jsonl_sink.h"

namespace memtrace {
namespace {

std::vector<uint32_t> Cpus(const char* text) {
  absl::StatusOr<CpuList> list = ParseCpuList(text);
  EXPECT_TRUE(list.ok()) << text << ": " << list.status();
  return list.ok() ? list->cpus : std::vector<uint32_t>{};
}

std::string ErrorOf(const char* text) {
  absl::StatusOr<CpuList> list = ParseCpuList(text);
  EXPECT_FALSE(list.ok()) << text << " was accepted";
  return list.ok() ? "" : std::string(list.status().message());
}

TEST(CpuListTest, ParsesTheLinuxForm) {
  EXPECT_EQ(Cpus("0"), (std::vector<uint32_t>{0}));
  EXPECT_EQ(Cpus("0-3,8"), (std::vector<uint32_t>{0, 1, 2, 3, 8}));
  EXPECT_EQ(Cpus("5,1-2,2,1"), (std::vector<uint32_t>{1, 2, 5})) << "sorted, no repeats";
  EXPECT_EQ(Cpus("1023"), (std::vector<uint32_t>{1023}));
  EXPECT_TRUE(Cpus("").empty());
  EXPECT_EQ(ParseCpuList("8,0-3")->ToString(), "0-3,8");
  EXPECT_EQ(ParseCpuList("1,3,5-6")->ToString(), "1,3,5-6");
  EXPECT_EQ(CpuList{}.ToString(), "");
}

TEST(CpuListTest, ErrorsSayWhatAndWhere) {
  EXPECT_NE(ErrorOf("a").find("expected a CPU number at position 1"), std::string::npos);
  EXPECT_NE(ErrorOf("0-").find("position 3"), std::string::npos);
  EXPECT_NE(ErrorOf("-1").find("position 1"), std::string::npos);
  EXPECT_NE(ErrorOf("3-1").find("the range 3-1 runs backwards"), std::string::npos);
  EXPECT_NE(ErrorOf("0,,1").find("position 3"), std::string::npos);
  EXPECT_NE(ErrorOf("0,").find("unexpected ','"), std::string::npos);
  EXPECT_NE(ErrorOf("0 ,1").find("unexpected ' ' at position 2"), std::string::npos);
  EXPECT_NE(ErrorOf("1024").find("above 1023"), std::string::npos);
  EXPECT_NE(ErrorOf("99999999999999999999").find("above 1023"), std::string::npos);
  EXPECT_NE(ErrorOf("0;1").find("write it like 0-3,8"), std::string::npos);
}

// The first CPU number that is not online (there is always one below 1024 on the machines
// this runs on: they have far fewer CPUs).
uint32_t OfflineCpu() {
  const CpuList online = OnlineCpus();
  uint32_t cpu = 0;
  while (std::find(online.cpus.begin(), online.cpus.end(), cpu) != online.cpus.end()) ++cpu;
  return cpu;
}

TEST(CpuListTest, OnlyOnlineCpusAreAccepted) {
  const CpuList online = OnlineCpus();
  ASSERT_FALSE(online.empty());
  EXPECT_TRUE(CheckOnline(online).ok());
  EXPECT_TRUE(CheckOnline(CpuList{}).ok());
  // The CPUs this thread may use are online.
  const CpuList allowed = AllowedCpus();
  ASSERT_FALSE(allowed.empty());
  EXPECT_TRUE(CheckOnline(allowed).ok()) << allowed.ToString() << " vs " << online.ToString();
  const uint32_t offline = OfflineCpu();
  const absl::Status s = CheckOnline(CpuList{{online.cpus[0], offline}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("CPU " + std::to_string(offline) + " of the list"),
            std::string::npos)
      << s;
  EXPECT_NE(s.message().find("(online: " + online.ToString() + ")"), std::string::npos) << s;
}

// Cpus_allowed_list of this process's thread named `name` (from /proc), once one exists.
std::optional<std::string> ThreadCpus(const std::string& name) {
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return std::nullopt;
  std::optional<std::string> found;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const std::string task = std::string("/proc/self/task/") + e->d_name;
    std::ifstream comm(task + "/comm");
    std::string comm_name;
    std::getline(comm, comm_name);
    if (comm_name != name) continue;
    std::ifstream status(task + "/status");
    for (std::string line; std::getline(status, line);) {
      const std::string key = "Cpus_allowed_list:";
      if (line.rfind(key, 0) == 0) {
        found = line.substr(line.find_first_not_of(" \t", key.size()));
      }
    }
  }
  closedir(dir);
  return found;
}

// Waits (up to 10 s: the thread names and pins itself as it starts) for the thread.
std::optional<std::string> AwaitThreadCpus(const std::string& name, const std::string& want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::optional<std::string> seen;
  while (std::chrono::steady_clock::now() < deadline) {
    seen = ThreadCpus(name);
    if (seen == want) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return seen;
}

TEST(CpuListTest, TheDrainerAndTheWriterRunWhereTheyAreTold) {
  const CpuList allowed = AllowedCpus();
  const CpuList last{{allowed.cpus.back()}};  // one CPU, not all of them (where possible)
  Config config;
  config.thread_cpus = last;
  auto recorder = Recorder::Create(config);
  ASSERT_TRUE(recorder.ok()) << recorder.status();
  ASSERT_TRUE((*recorder)->Start().ok());
  EXPECT_EQ(AwaitThreadCpus("memtrace-drain", last.ToString()), last.ToString());

  char path[] = "/tmp/memtrace_cpu_list_test_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  JsonlSinkOptions options;
  options.writer_cpus = last;
  auto sink = JsonlSink::Open(path, options);
  ASSERT_TRUE(sink.ok()) << sink.status();
  EXPECT_EQ(AwaitThreadCpus("memtrace-write", last.ToString()), last.ToString());
  (*sink)->Finish(Snapshot{}, "", false).IgnoreError();
  EXPECT_TRUE((*recorder)->Stop().ok());
  std::remove(path);
}

TEST(CpuListTest, CpusThatAreNotOnlineAreRefusedUpFront) {
  const CpuList forbidden{{OfflineCpu()}};
  Config config;
  config.thread_cpus = forbidden;
  auto recorder = Recorder::Create(config);
  ASSERT_FALSE(recorder.ok());
  EXPECT_NE(recorder.status().message().find("Config.thread_cpus: CPU"), std::string::npos)
      << recorder.status();

  const std::string path = "/tmp/memtrace_cpu_list_test_refused_" + std::to_string(getpid());
  JsonlSinkOptions options;
  options.writer_cpus = forbidden;
  auto sink = JsonlSink::Open(path, options);
  ASSERT_FALSE(sink.ok());
  EXPECT_NE(sink.status().message().find("writer_cpus: CPU"), std::string::npos)
      << sink.status();
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "no capture file is created";
}

// Config::tracer_threads: a configured count is taken as it is; 0 gives one applier below
// 8 CPUs and a quarter of the CPUs above, at most 4.
TEST(CpuListTest, TracerThreadsComeFromTheCpuCountUnlessConfigured) {
  struct Case {
    uint32_t configured;
    size_t cpus;
    uint32_t want;
  };
  const Case cases[] = {{0, 0, 1},  {0, 1, 1},  {0, 2, 1},  {0, 7, 1},   {0, 8, 2},
                        {0, 11, 2}, {0, 12, 3}, {0, 15, 3}, {0, 16, 4},  {0, 64, 4},
                        {0, 1024, 4}, {3, 2, 3}, {1, 64, 1}, {64, 1, 64}};
  for (const Case& c : cases) {
    EXPECT_EQ(TracerThreadsFor(c.configured, c.cpus), c.want)
        << "configured " << c.configured << ", " << c.cpus << " CPUs";
  }
}

// The CPUs counted are Config::thread_cpus when given, else the calling thread's affinity
// (what the drainer, started by it, inherits), read here from a thread pinned to one CPU.
TEST(CpuListTest, TracerCpuCountIsTheListOrTheCallersAffinity) {
  EXPECT_EQ(TracerCpuCount(CpuList{{0, 2, 5}}), 3u);
  const CpuList allowed = AllowedCpus();
  EXPECT_EQ(TracerCpuCount(CpuList{}), allowed.cpus.size());
  size_t pinned = 0;
  std::thread([&] {
    ASSERT_TRUE(PinCallingThread(CpuList{{allowed.cpus.back()}}).ok());
    pinned = TracerCpuCount(CpuList{});
  }).join();
  EXPECT_EQ(pinned, 1u);
}

TEST(CpuListTest, MoreTracerThreadsThanSixtyFourAreRefused) {
  Config config;
  config.tracer_threads = 16;
  EXPECT_TRUE(config.Validate().ok()) << config.Validate();
  config.tracer_threads = 17;
  const absl::Status refused = config.Validate();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.message(),
            "Config.tracer_threads is 17; it must be at most 16 (0: chosen from the CPU "
            "count)");
  const auto recorder = Recorder::Create(config);
  ASSERT_FALSE(recorder.ok());
  EXPECT_EQ(recorder.status(), refused);
}

}  // namespace
}  // namespace memtrace
