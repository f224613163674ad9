// Copyright 2026 The memtrace Authors.
//
// The interposer when records are lost: a program whose threads keep allocating while
// memtrace's drainer is held still (ptrace stops that one thread), so its rings fill, a
// thread waits its second, and records fail. Every loss is counted, and the records that
// are written say nothing the program did not do: a block whose allocation record was
// lost is left out of the capture, its release too (preload/record.h, LeaveOut(); and the
// same for the mmap layer's mappings and the markers' blocks), so the releases of such
// blocks are neither double frees nor unknown frees. No peak is
// known then (the order applied lacks operations), and none is called exact.

#include <dirent.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tests/preload_test_support.h"
#include "tests/run_program.h"
#include "tests/test_paths.h"

namespace memtrace {
namespace {

// The thread of `pid` named memtrace-drain, waiting up to 5 s for it; 0 if none.
pid_t DrainThreadOf(pid_t pid) {
  for (int tries = 0; tries < 500; ++tries) {
    const std::string tasks = absl::StrCat("/proc/", pid, "/task");
    if (DIR* dir = opendir(tasks.c_str())) {
      pid_t found = 0;
      while (dirent* e = readdir(dir)) {
        const std::string comm = ReadFile(absl::StrCat(tasks, "/", e->d_name, "/comm"));
        int tid = 0;
        if (comm == "memtrace-drain\n" && absl::SimpleAtoi(e->d_name, &tid)) found = tid;
      }
      closedir(dir);
      if (found != 0) return found;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}

uint64_t Counter(const std::string& trailer, const std::string& name) {
  uint64_t n = 0;
  return absl::SimpleAtoi(Field(trailer, name), &n) ? n : ~uint64_t{0};
}

// Runs preload_target's `burst 4 5 KIND` (with `env`) while holding memtrace's drainer
// still for 3.5 s, and checks what a full ring lost. A ring waits up to 1 s for a drainer
// that applies nothing (docs/preload.md, "Pacing and losses"), then each record fails. A
// run in which only releases were lost says nothing here: up to three runs.
void ExpectLostBlocksLeftOut(const std::string& kind, const std::vector<std::string>& env) {
  uint64_t failed = 0;
  for (int run = 0; run < 3 && failed == 0; ++run) {
    const std::string capture = absl::StrCat(TempDir(), "/lost_", kind, run, ".mtb");
    const std::string out = absl::StrCat(TempDir(), "/lost_", kind, run, ".out");
    const pid_t pid = SpawnTraced({Target(), "burst", "4", "5", kind}, capture, out, env);
    ASSERT_GT(pid, 0);
    const pid_t drain = DrainThreadOf(pid);
    ASSERT_NE(drain, 0) << "no memtrace-drain thread in pid " << pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (ptrace(PTRACE_SEIZE, drain, nullptr, nullptr) != 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      GTEST_SKIP() << "ptrace is not allowed here: " << strerror(errno);
    }
    ASSERT_EQ(ptrace(PTRACE_INTERRUPT, drain, nullptr, nullptr), 0) << strerror(errno);
    int stop = 0;
    ASSERT_EQ(waitpid(drain, &stop, __WALL), drain) << strerror(errno);
    std::this_thread::sleep_for(std::chrono::milliseconds(3500));
    ASSERT_EQ(ptrace(PTRACE_DETACH, drain, nullptr, nullptr), 0) << strerror(errno);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

    absl::Status s;
    const Replay r = ReplayCapture(capture, &s);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_TRUE(r.has_trailer);
    failed = Counter(r.trailer, "records_failed");
    const uint64_t dropped = Counter(r.trailer, "events_dropped");
    EXPECT_GT(failed + dropped, 0u) << "nothing was lost: " << r.trailer;
    EXPECT_EQ(Field(r.trailer, "complete"), "false") << r.trailer;
    // The program freed each block once, and only blocks it had allocated.
    EXPECT_EQ(Counter(r.trailer, "double_frees"), 0u) << r.trailer;
    EXPECT_EQ(Counter(r.trailer, "unknown_frees"), 0u) << r.trailer;
    // Each block left out is one whose allocation record failed.
    EXPECT_EQ(Counter(r.trailer, "left_out_blocks"), failed) << r.trailer;
    // With operations missing, no peak is known: none is called exact or bounded.
    const Result summary = RunProgram({Cli(), "summary", capture}, {});
    EXPECT_NE(summary.out.find("PARTIAL, inexact; peaks unknown (records were lost)"),
              std::string::npos)
        << summary.out;
    const Result json = RunProgram({Cli(), "summary", "--json", capture}, {});
    EXPECT_NE(json.out.find("\"high_water_low_bytes\":null,\"high_water_high_bytes\":null"),
              std::string::npos)
        << json.out;
  }
  EXPECT_GT(failed, 0u) << "no allocation record of " << kind << " was lost in three runs";
}


// The malloc family's blocks (preload/record.h).
TEST_F(PreloadTest, ARecordLostToAFullRingLeavesItsBlockOutAndNoReleaseIsMisread) {
  MEMTRACE_SKIP_UNDER_SANITIZERS();
  ExpectLostBlocksLeftOut("malloc", {});
}

// Mappings of the mmap layer, whose addresses the kernel hands straight back
// (preload/mmap_layer.inc, LeaveOutMapping()).
TEST_F(PreloadTest, AMappingWhoseRecordWasLostLeavesTheCaptureWithItsUnmapping) {
  MEMTRACE_SKIP_UNDER_SANITIZERS();
  ExpectLostBlocksLeftOut("mmap", {"MEMTRACE_MMAP=1"});
}

// Blocks of a program's own pool, reported through the markers (preload/markers.inc).
TEST_F(PreloadTest, AMarkedBlockWhoseRecordWasLostLeavesTheCaptureWithItsRelease) {
  MEMTRACE_SKIP_UNDER_SANITIZERS();
  ExpectLostBlocksLeftOut("marker", {});
}

}  // namespace
}  // namespace memtrace
