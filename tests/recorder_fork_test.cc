// Copyright 2026 The memtrace Authors.
//
// The recorder across fork(): a forked child gets every block live in the parent at the
// fork, and the frames of the stacks it inherited (keep_stack_frames); without that
// setting no frames are kept.

#include "runtime/internal/recorder.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/recorder_test_support.h"

namespace memtrace {
namespace {

// Waits for the forked child `child`, which reports by its exit status: 0 or one of
// `codes` (what each nonzero status means).
void ExpectChildExitsZero(pid_t child, const char* codes) {
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << codes;
}

// A forked child gets what was live in the parent at the fork (Recorder::HoldForFork):
// the blocks the drainer had applied and those whose records still waited in the rings,
// from every thread, one of them gone already, a release on another thread than its
// allocation's among them. The expected set is the test's own map of what it recorded.
TEST(RecorderTest, AForkedChildGetsEveryBlockLiveInTheParentAtTheFork) {
  Config config;
  config.drain_period = absl::Seconds(1);  // asleep: what comes after Flush() waits
  config.idle_drain_period = absl::Seconds(1);
  auto recorder = Make(config);
  ASSERT_TRUE(recorder->Start().ok());
  std::map<uint64_t, uint64_t> live;  // address -> size
  std::mutex mu;
  auto work = [&](uint64_t base, int n) {
    for (int i = 0; i < n; ++i) {
      const uint64_t address = base + 64 * static_cast<uint64_t>(i);
      const uint64_t size = 16 + static_cast<uint64_t>(i % 40);
      ASSERT_EQ(recorder->RecordAlloc(kHeap, address, size, 0x401000), RecordResult::kRecorded);
      std::lock_guard<std::mutex> lock(mu);
      live[address] = size;
      if (i % 3 == 0) {
        ASSERT_EQ(recorder->RecordFree(kHeap, address), RecordResult::kRecorded);
        live.erase(address);
      }
    }
  };
  work(0x100000, 600);
  ASSERT_TRUE(recorder->Flush().ok());  // applied before the fork
  std::thread(work, 0x200000, 600).join();  // a thread gone before the fork
  std::thread(work, 0x300000, 600).join();
  work(0x400000, 600);
  ASSERT_EQ(recorder->RecordFree(kHeap, 0x200040), RecordResult::kRecorded);  // another ring's
  live.erase(0x200040);
  const CaptureIntegrity before = recorder->Integrity();
  EXPECT_LT(before.events_applied, before.events_recorded) << "the test wants records waiting";
  const std::vector<std::pair<uint64_t, uint64_t>> want(live.begin(), live.end());

  recorder->HoldForFork();
  const pid_t child = fork();
  if (child == 0) {
    uint64_t unpublished = 1;
    const std::vector<AllocationRecord> got = recorder->LiveBlocksInForkedChild(&unpublished);
    std::vector<std::pair<uint64_t, uint64_t>> have;
    for (const AllocationRecord& b : got) have.emplace_back(b.address, b.size);
    std::sort(have.begin(), have.end());
    _exit(unpublished != 0 ? 1 : have.size() != want.size() ? 2 : have != want ? 3 : 0);
  }
  recorder->ReleaseAfterFork();
  ExpectChildExitsZero(
      child, "1: records counted unpublished, 2: another number of live blocks, 3: other blocks");

  // The parent goes on as before.
  ASSERT_TRUE(recorder->Flush().ok());
  recorder->Inspect([&](const AllocationLedger& ledger, const CaptureIntegrity& integrity) {
    std::vector<std::pair<uint64_t, uint64_t>> have;
    for (const AllocationRecord& b : ledger.LiveBlocks()) have.emplace_back(b.address, b.size);
    std::sort(have.begin(), have.end());
    EXPECT_EQ(have, want);
    EXPECT_TRUE(integrity.clean()) << integrity.Counters();
  });
  ASSERT_TRUE(recorder->Stop().ok());
}

// With Config::keep_stack_frames the forked child also gets the frames of each inherited
// block's stack: sent by threads still running and by one gone before the fork, some of
// them still waiting in the rings at the fork, some stacks sent again by a second thread.
// The frames expected for each block are the ones the test gave it.
TEST(RecorderTest, AForkedChildGetsTheFramesOfTheStacksItInherited) {
  Config config;
  config.keep_stack_frames = true;
  config.drain_period = absl::Seconds(1);  // asleep: what comes after Flush() waits
  config.idle_drain_period = absl::Seconds(1);
  auto recorder = Make(config);
  ASSERT_TRUE(recorder->Start().ok());
  // Stack k: 1 to 16 frames, distinct per stack.
  auto stack = [](uint64_t k) {
    std::vector<uint64_t> frames;
    for (uint64_t f = 0; f <= k % 16; ++f) frames.push_back(0x400000 + k * 0x1000 + f * 8);
    return frames;
  };
  std::map<uint64_t, std::vector<uint64_t>> frames_of;  // live address -> its frames
  std::mutex mu;
  auto work = [&](uint64_t base, int n, uint64_t first_stack) {
    for (int i = 0; i < n; ++i) {
      const uint64_t address = base + 64 * static_cast<uint64_t>(i);
      const std::vector<uint64_t> frames = stack(first_stack + static_cast<uint64_t>(i % 50));
      const uint64_t site =
          recorder->StackSite(frames.data(), static_cast<uint32_t>(frames.size()));
      ASSERT_EQ(recorder->RecordAlloc(kHeap, address, 32, site), RecordResult::kRecorded);
      std::lock_guard<std::mutex> lock(mu);
      frames_of[address] = frames;
      if (i % 4 == 0) {
        ASSERT_EQ(recorder->RecordFree(kHeap, address), RecordResult::kRecorded);
        frames_of.erase(address);
      }
    }
  };
  work(0x100000, 300, 0);
  ASSERT_TRUE(recorder->Flush().ok());           // applied before the fork
  std::thread(work, 0x200000, 300, 25).join();  // a thread gone; stacks 25-49 sent again
  work(0x300000, 300, 100);                      // waiting in the ring at the fork
  const std::map<uint64_t, std::vector<uint64_t>> want = frames_of;

  recorder->HoldForFork();
  const pid_t child = fork();
  if (child == 0) {
    uint64_t unpublished = 1;
    const std::vector<AllocationRecord> got = recorder->LiveBlocksInForkedChild(&unpublished);
    if (got.size() != want.size()) _exit(1);
    for (const AllocationRecord& b : got) {
      auto it = want.find(b.address);
      if (it == want.end()) _exit(2);
      const absl::Span<const uint64_t> frames = recorder->InheritedStackFrames(b.site);
      if (std::vector<uint64_t>(frames.begin(), frames.end()) != it->second) _exit(3);
    }
    _exit(0);
  }
  recorder->ReleaseAfterFork();
  ExpectChildExitsZero(child,
                       "1: another number of live blocks, 2: another block, 3: other frames");
  ASSERT_TRUE(recorder->Stop().ok());
  // The frames count in the memory of the site table's part.
  EXPECT_GE(recorder->memory().sites, 150 * 8 * sizeof(uint64_t));
}

// Without keep_stack_frames the drainer keeps no frames: none is found for any site.
TEST(RecorderTest, WithoutKeepStackFramesNoFramesAreKept) {
  auto recorder = Make(Config{});
  ASSERT_TRUE(recorder->Start().ok());
  const uint64_t frames[] = {0x401000, 0x402000};
  const uint64_t site = recorder->StackSite(frames, 2);
  ASSERT_NE(site & kStackHashBit, 0u);
  ASSERT_EQ(recorder->RecordAlloc(kHeap, 0x1000, 32, site), RecordResult::kRecorded);
  ASSERT_TRUE(recorder->Stop().ok());
  EXPECT_TRUE(recorder->InheritedStackFrames(site).empty());
}

}  // namespace
}  // namespace memtrace
