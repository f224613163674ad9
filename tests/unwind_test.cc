// Copyright 2026 The memtrace Authors.
//
// The interposer's DWARF walk (preload/unwind.h, preload/eh_frame.h) against libunwind's
// unw_backtrace(), which walks the same stacks by its own reading of the same tables: the
// expected frames are libunwind's, never computed by the code under test. The stacks go
// through functions built without frame pointers (unwind_test_frames.cc), a thread, and a
// signal handler.

#include <signal.h>
#include <ucontext.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "preload/eh_frame.h"
#include "preload/unwind.h"
#include "runtime/internal/thread_state.h"
#include "tests/unwind_test_frames.h"
#include "transport/fibonacci_index.h"

namespace memtrace::preload_internal {
namespace {

struct Capture {
  uint64_t frames[64];
  uint32_t count = 0;
  bool complete = false;
  void* expected[80];
  int expected_count = 0;
  uint32_t max = 64;
  uint64_t frame = 0;  // the probe's frame address, where the walk starts
  uint64_t* derived = nullptr;  // the word kept with these frames (unwind.h)
  uint64_t derived_read = 0;    // what it held when the walk returned
  uint64_t memo_derived = 0;    // MemoDerived() just before the walk (0: not answered)
};

// The test's own digest of a list of frames, never 0.
uint64_t Digest(const uint64_t* frames, uint32_t count) {
  uint64_t h = 1469598103934665603ull ^ count;
  for (uint32_t i = 0; i < count; ++i) h = (h ^ frames[i]) * 1099511628211ull;
  return h | 1;
}

// Built with frame pointers (.bazelrc), like the interposer's entry points: the walk
// starts at this function's frame, so frames[0] is its return address. libunwind's first
// frame is the call to unw_backtrace() inside it, so its list is one longer.
__attribute__((noinline)) void Probe(void* arg) {
  auto* c = static_cast<Capture*>(arg);
  c->frame = reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  // The interposer's inline answer for a repeated walk, asked first as the interposer
  // does; it must be the word kept for the very frames the walk below returns (checked
  // by ExpectPrefixOfLibunwind and the tests). Its memo hit is not counted, so that the
  // tests' counts are the walks'.
  const uint64_t hits = runtime_internal::Tls().unwind_memo_hits;
  c->memo_derived = MemoDerived(__builtin_frame_address(0), c->max);
  runtime_internal::Tls().unwind_memo_hits = hits;
  // As the interposer calls it: a walk the memo serves whole returns the memo's frames.
  const uint64_t* frames = nullptr;
  c->count = UnwindCfi(__builtin_frame_address(0), c->frames, c->max, &c->complete,
                       &c->derived, &frames);
  if (frames != c->frames) std::copy(frames, frames + c->count, c->frames);
  // The word kept with the frames holds nothing, or what was kept for these very frames.
  if (c->derived != nullptr) {
    c->derived_read = *c->derived;
    *c->derived = Digest(c->frames, c->count);
  }
  c->expected_count = unw_backtrace_fn(c->expected, 80);
  // A word from MemoDerived() was kept for exactly these frames, and the walk says so.
  if (c->memo_derived != 0) {
    EXPECT_EQ(c->memo_derived, Digest(c->frames, c->count));
    EXPECT_TRUE(c->complete);
  }
}

class UnwindTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    ASSERT_TRUE(LoadDwarfUnwinder(&error)) << error;
  }
};

// Every frame the walk found is libunwind's; returns how many.
void ExpectPrefixOfLibunwind(const Capture& c) {
  ASSERT_GE(c.expected_count, 2);
  ASSERT_LE(c.count, static_cast<uint32_t>(c.expected_count - 1));
  for (uint32_t i = 0; i < c.count; ++i) {
    EXPECT_EQ(c.frames[i], reinterpret_cast<uint64_t>(c.expected[i + 1])) << "frame " << i;
  }
}

TEST_F(UnwindTest, FramesWithoutFramePointersMatchLibunwind) {
  for (int depth : {0, 1, 2, 3, 7, 12}) {
    Capture c;
    unwind_test::Chain(depth, &Probe, &c);
    EXPECT_TRUE(c.complete) << "depth " << depth;
    ExpectPrefixOfLibunwind(c);
    // The whole stack, to the outermost frame libunwind reports.
    EXPECT_EQ(c.count, static_cast<uint32_t>(c.expected_count - 1)) << "depth " << depth;
    // The chain's own frames are there: one per level, plus the probe's caller.
    EXPECT_GE(c.count, static_cast<uint32_t>(depth + 1));
  }
}

TEST_F(UnwindTest, CachedRulesEqualParsedRules) {
  // The same call site twice: the second walk takes every rule from the cache.
  Capture walks[2];
  volatile int walk_count = 2;  // a loop the compiler cannot unroll into two call sites
  for (int i = 0; i < walk_count; ++i) unwind_test::Chain(5, &Probe, &walks[i]);
  const Capture& first = walks[0];
  const Capture& second = walks[1];
  EXPECT_TRUE(second.complete);
  ASSERT_EQ(first.count, second.count);
  for (uint32_t i = 0; i < first.count; ++i) {
    EXPECT_EQ(first.frames[i], second.frames[i]);
    EXPECT_EQ(RuleFor(first.frames[i]), ParseRuleFor(first.frames[i])) << "frame " << i;
  }
  // The last frame is the outermost: its rule says the stack ends there.
  EXPECT_TRUE(ParseRuleFor(first.frames[first.count - 1]).is_end());
}

// Callers with the same frame layout: the walk starts at the same frame address from
// each, with different return addresses above it. Whatever the walk remembers per thread
// (the rule memo in thread_state.h) must never hand one caller's frames to another.
__attribute__((noinline)) void WalkFromA(Capture* c) {
  unwind_test::Chain(3, &Probe, c);
  asm volatile("" ::: "memory");  // not a tail call
}
__attribute__((noinline)) void WalkFromB(Capture* c) {
  unwind_test::Chain(3, &Probe, c);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void WalkFromC(Capture* c) {
  unwind_test::Chain(3, &Probe, c);
  asm volatile("" ::: "memory");
}

TEST_F(UnwindTest, RepeatedWalksFromOneFrameFollowTheStack) {
  void (*const callers[])(Capture*) = {&WalkFromA, &WalkFromB, &WalkFromA, &WalkFromC,
                                       &WalkFromB, &WalkFromA, &WalkFromA, &WalkFromC};
  std::vector<uint64_t> first_walk_of[3];
  for (int i = 0; i < 8; ++i) {
    Capture c;
    c.max = 16;  // the interposer's default depth
    callers[i](&c);
    EXPECT_TRUE(c.complete) << "walk " << i;
    ExpectPrefixOfLibunwind(c);
    EXPECT_EQ(c.count, 16u) << "walk " << i;
    const int which = callers[i] == &WalkFromA ? 0 : callers[i] == &WalkFromB ? 1 : 2;
    const std::vector<uint64_t> walk(c.frames, c.frames + c.count);
    if (first_walk_of[which].empty()) first_walk_of[which] = walk;
    EXPECT_EQ(walk, first_walk_of[which]) << "walk " << i;
  }
  // The callers' return addresses tell the three apart.
  EXPECT_NE(first_walk_of[0], first_walk_of[1]);
  EXPECT_NE(first_walk_of[1], first_walk_of[2]);
}

// The walk memo (thread_state.h) proposes each frame's rule from the last walk that
// started at the same place. Random paths, each keeping a random outer part of the one
// before, at depths 3 to 64, through plain frames, same-layout frames of other functions,
// alloca frames of random sizes and big frames: every walk must equal libunwind's.
TEST_F(UnwindTest, WalksThatShareTheOuterStackMatchLibunwind) {
  std::mt19937 random(20261201);
  unsigned char path[40];
  for (unsigned char& element : path) element = static_cast<unsigned char>(random());
  int length = 8;
  const uint32_t depths[] = {16, 64, 3, 16, 23, 16};
  int answered = 0;  // walks MemoDerived() answered (Probe checks the word it gave)
  for (int walk = 0; walk < 3000; ++walk) {
    // Every third walk repeats the one before exactly, both at depth 16 (the memo's),
    // which the memo and MemoDerived() may answer; the others keep a random part of it.
    const bool repeat = walk % 3 == 2;
    if (!repeat) {
      const int keep = static_cast<int>(random() % static_cast<unsigned>(length + 1));
      length = 1 + static_cast<int>(random() % 40);
      for (int i = keep; i < length; ++i) path[i] = static_cast<unsigned char>(random());
    }
    Capture c;
    c.max = walk % 3 == 0 ? depths[(walk / 3) % 6] : 16;
    unwind_test::Path(path, length, &Probe, &c);
    ASSERT_TRUE(c.complete) << "walk " << walk;
    ASSERT_GE(c.expected_count, 2);
    const uint32_t want = std::min(c.max, static_cast<uint32_t>(c.expected_count - 1));
    ASSERT_EQ(c.count, want) << "walk " << walk;
    for (uint32_t i = 0; i < c.count; ++i) {
      ASSERT_EQ(c.frames[i], reinterpret_cast<uint64_t>(c.expected[i + 1]))
          << "walk " << walk << ", frame " << i;
    }
    if (c.derived_read != 0) {
      ASSERT_EQ(c.derived_read, Digest(c.frames, c.count))
          << "walk " << walk << ": a word kept for other frames";
    }
    answered += c.memo_derived != 0;
  }
  // The repeats at depth 16 are what it answers (1,013 of the 3,000 walks when written).
  EXPECT_GE(answered, 500);
}

// Two walks with nothing between them, from the same place: the second's lower frames
// stand where the first's did, with the same return addresses, but the middle alloca frame
// has moved, so the rbp its rule reads differs; and the first walk's middle frame is still
// there, stale, inside the second's larger outer alloca area, with the first outer
// function's return address. A walk that reused anything of the first one's beyond the
// rules of the return addresses it reads would report that function.
__attribute__((noinline)) void TwoWalks(unsigned inner, Capture* first, Capture* second) {
  const unsigned outer[2] = {64, 512};
  const unsigned middle[2] = {512, 64};
  Capture* captures[2] = {first, second};
  // One call site, so that the frames above the outer one are the same in both walks: a
  // loop the compiler cannot unroll.
  volatile int walks = 2;
  for (int i = 0; i < walks; ++i) {
    unwind_test::AllocaFrames(i, outer[i], middle[i], inner, &Probe, captures[i]);
    asm volatile("" ::: "memory");  // not a tail call
  }
}

// Both walks of TwoWalks(inner) equal libunwind's; their first `same` frames are equal
// and the next one (the outer functions' return addresses) differs.
void ExpectTwoWalksFollowTheirStacks(unsigned inner, uint32_t same) {
  Capture first, second;
  TwoWalks(inner, &first, &second);
  ASSERT_EQ(first.frame, second.frame) << "the probes must stand at the same place";
  for (uint32_t i = 0; i < same; ++i) ASSERT_EQ(first.frames[i], second.frames[i]);
  for (const Capture* c : {&first, &second}) {
    EXPECT_TRUE(c->complete);
    ExpectPrefixOfLibunwind(*c);
    EXPECT_EQ(c->count, static_cast<uint32_t>(c->expected_count - 1));
  }
  EXPECT_NE(first.frames[same], second.frames[same]) << "the outer functions differ";
}

TEST_F(UnwindTest, AFrameThatMovedAboveARepeatedStartIsFollowed) {
  // inner == 0: the probe's caller is the middle frame, whose CFA is rbp + 16.
  ExpectTwoWalksFollowTheirStacks(0, 1);
}

TEST_F(UnwindTest, AMovedFrameWhoseRbpIsReloadedIsFollowed) {
  // An inner frame at the same place in both walks, with the same rbp, saves the middle
  // frame's rbp, which differs.
  ExpectTwoWalksFollowTheirStacks(128, 2);
}

// Why a test that walks on a thread of its own skips under TSan (libunwind and TSan
// between them; the walk under test is not involved).
[[maybe_unused]] constexpr char kThreadExitUnderTsan[] =
    "libunwind's per-thread cache destructor locks a mutex at thread exit, after TSan has "
    "torn the thread down, and TSan's interceptor faults; the default and ASan runs cover this";

// A shallow stack that ends (its outermost frame's rule says so) within the memo's 16
// frames, then a deep one from the same place, twice: the memo of the first must not cut
// the others short. On a thread of its own, whose stack is shallow.
__attribute__((noinline)) void ShallowWalk(Capture* c) {
  unwind_test::PaddedChain(4096, 1, &Probe, c);
  asm volatile("" ::: "memory");  // not a tail call
}
__attribute__((noinline)) void DeepWalk(unsigned pad, Capture* c) {
  unwind_test::PaddedChain(pad, 12, &Probe, c);
  asm volatile("" ::: "memory");
}

TEST_F(UnwindTest, ADeepStackFromWhereAShallowOneEndedIsWalkedToItsEnd) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << kThreadExitUnderTsan;
#endif
  Capture shallow, probe, deep[2];
  std::thread([&] {
    ShallowWalk(&shallow);
    // Grow the deep walk's pad until it starts where the shallow one did.
    unsigned pad = 16;
    for (int i = 0; i < 4; ++i) {
      DeepWalk(pad, &probe);
      if (probe.frame <= shallow.frame) break;
      pad += static_cast<unsigned>(probe.frame - shallow.frame);
    }
    ShallowWalk(&shallow);  // the memo from here is the shallow walk again
    // One call site, the same stack both times: a loop the compiler cannot unroll.
    volatile int walks = 2;
    for (int i = 0; i < walks; ++i) {
      DeepWalk(pad, &deep[i]);
      asm volatile("" ::: "memory");  // not a tail call: every walk from the same frame
    }
  }).join();
  ASSERT_LE(shallow.count, 16u);
  EXPECT_EQ(shallow.count, static_cast<uint32_t>(shallow.expected_count - 1));
  for (const Capture& c : deep) {
    ASSERT_EQ(c.frame, shallow.frame) << "the walks must start at the same place";
    EXPECT_TRUE(c.complete);
    ExpectPrefixOfLibunwind(c);
    EXPECT_GT(c.count, 16u);
    EXPECT_EQ(c.count, static_cast<uint32_t>(c.expected_count - 1));
  }
}

// The same stack walked three times from one call site: the second and third walks are
// the memo's, checked against the stack, and equal libunwind's. Stacks through plain
// frames, and through alloca frames whose CFAs follow an rbp reloaded from the stack.
__attribute__((noinline)) void ThreeWalks(void (*walk)(Capture*), Capture* captures) {
  volatile int walks = 3;
  for (int i = 0; i < walks; ++i) {
    walk(&captures[i]);
    asm volatile("" ::: "memory");  // not a tail call
  }
}

TEST_F(UnwindTest, RepeatedStacksAreTheMemos) {
  void (*const shapes[])(Capture*) = {
      [](Capture* c) { unwind_test::Chain(7, &Probe, c); },
      [](Capture* c) { unwind_test::AllocaFrames(0, 64, 512, 128, &Probe, c); },
      [](Capture* c) { unwind_test::PaddedChain(256, 3, &Probe, c); },
  };
  for (int shape = 0; shape < 3; ++shape) {
    for (const uint32_t max : {16u, 64u}) {
      Capture walks[3];
      for (Capture& c : walks) c.max = max;
      const uint64_t hits = runtime_internal::Tls().unwind_memo_hits;
      ThreeWalks(shapes[shape], walks);
      // At least the second and third (the first too where an earlier walk came here).
      EXPECT_GE(runtime_internal::Tls().unwind_memo_hits - hits, 2u)
          << "shape " << shape << ", depth " << max;
      for (const Capture& c : walks) {
        EXPECT_TRUE(c.complete);
        ExpectPrefixOfLibunwind(c);
        EXPECT_EQ(c.count, std::min(max, static_cast<uint32_t>(c.expected_count - 1)));
      }
      if (max == 16) {
        // At most 16 frames, all the memo's: the second and third walks read back the
        // word kept by the walk before.
        for (int i = 1; i < 3; ++i) {
          EXPECT_EQ(walks[i].derived_read, Digest(walks[i].frames, walks[i].count))
              << "shape " << shape << ", walk " << i;
          // And the interposer's inline path answers with that word, without the frames.
          EXPECT_EQ(walks[i].memo_derived, Digest(walks[i].frames, walks[i].count))
              << "shape " << shape << ", walk " << i;
        }
      }
    }
  }
}

// Walks from as many positions as a memo set has ways, all in one set (the set is a
// hash of the position, which moves with ASLR: busy positions can share one), taken in
// turn: after the first round every walk is the memo's. (With two ways, none was.)
__attribute__((noinline)) void PaddedWalk(unsigned pad, Capture* c) {
  unwind_test::PaddedChain(pad, 3, &Probe, c);
  asm volatile("" ::: "memory");  // not a tail call
}

TEST_F(UnwindTest, BusyPositionsSharingAMemoSetAreAllTheMemos) {
  constexpr uint32_t kWays = runtime_internal::kUnwindWalkWays;
  // Pads that put the walk's start in one set: the first set to collect kWays of them.
  std::vector<std::vector<unsigned>> by_set(size_t{1} << runtime_internal::kUnwindWalkSetsLog2);
  std::vector<unsigned> pads;
  for (unsigned pad = 16; pad < 16 * 4096 && pads.empty(); pad += 16) {
    Capture c;
    c.max = 16;
    PaddedWalk(pad, &c);
    const uint64_t start = c.frame + 16;  // the memo's key (unwind.cc)
    auto& set = by_set[FibonacciIndex(start, runtime_internal::kUnwindWalkSetsLog2)];
    if (std::find(set.begin(), set.end(), pad) == set.end()) set.push_back(pad);
    if (set.size() == kWays) pads = set;
  }
  ASSERT_EQ(pads.size(), kWays);
  constexpr int kRounds = 5;
  uint64_t hits_after_first_round = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (const unsigned pad : pads) {
      Capture c;
      c.max = 16;
      const uint64_t hits = runtime_internal::Tls().unwind_memo_hits;
      PaddedWalk(pad, &c);
      if (round > 0) hits_after_first_round += runtime_internal::Tls().unwind_memo_hits - hits;
      EXPECT_TRUE(c.complete);
      ExpectPrefixOfLibunwind(c);
    }
  }
  EXPECT_EQ(hits_after_first_round, (kRounds - 1) * kWays);
}

TEST_F(UnwindTest, DepthLimit) {
  Capture c;
  c.max = 3;
  unwind_test::Chain(6, &Probe, &c);
  EXPECT_EQ(c.count, 3u);
  EXPECT_TRUE(c.complete);
  ExpectPrefixOfLibunwind(c);
}

TEST_F(UnwindTest, ThreadStacksEndAtTheThreadStart) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << kThreadExitUnderTsan;
#endif
  Capture c;
  std::thread([&] { unwind_test::Chain(4, &Probe, &c); }).join();
  EXPECT_TRUE(c.complete);
  ExpectPrefixOfLibunwind(c);
  EXPECT_EQ(c.count, static_cast<uint32_t>(c.expected_count - 1));
}

TEST_F(UnwindTest, AFrameBeyondTheCacheFormatIsLeftToLibunwind) {
  Capture c;
  unwind_test::ChainWithHugeFrame(2, &Probe, &c);
  EXPECT_FALSE(c.complete) << "a 40 KiB frame's CFA offset does not fit a rule";
  ExpectPrefixOfLibunwind(c);
  EXPECT_GE(c.count, 3u) << "the frames below the huge one are walked";
}

Capture* signal_capture = nullptr;

void OnSignal(int) { unwind_test::Chain(2, &Probe, signal_capture); }

TEST_F(UnwindTest, SignalFramesAreLeftToLibunwind) {
  Capture c;
  signal_capture = &c;
  struct sigaction action = {};
  action.sa_handler = &OnSignal;
  struct sigaction old;
  ASSERT_EQ(sigaction(SIGUSR1, &action, &old), 0);
  raise(SIGUSR1);
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_FALSE(c.complete) << "the walk must stop at the signal trampoline";
  ExpectPrefixOfLibunwind(c);
  EXPECT_GE(c.count, 4u) << "the handler's own frames are walked";
  EXPECT_GT(c.expected_count - 1, static_cast<int>(c.count)) << "libunwind goes on";
}

TEST_F(UnwindTest, AFrameOffTheThreadStackIsLeftToLibunwind) {
  uint64_t frames[8];
  bool complete = true;
  static uint64_t not_on_a_stack[4];  // static storage: outside every thread's stack
  EXPECT_EQ(UnwindCfi(not_on_a_stack, frames, 8, &complete), 0u);
  EXPECT_FALSE(complete);
  complete = true;
  EXPECT_EQ(UnwindCfi(nullptr, frames, 8, &complete), 0u);
  EXPECT_FALSE(complete);
}

// A coroutine's stack (makecontext): heap memory, not the thread's stack, so the walk
// cannot bound its reads there and hands the stack to libunwind, which walks it.
Capture* coroutine_capture = nullptr;
ucontext_t coroutine_return;
void CoroutineBody() { unwind_test::Chain(2, &Probe, coroutine_capture); }

TEST_F(UnwindTest, CoroutineStacksAreLeftToLibunwind) {
  std::vector<char> stack(256 * 1024);
  ucontext_t coroutine;
  ASSERT_EQ(getcontext(&coroutine), 0);
  coroutine.uc_stack.ss_sp = stack.data();
  coroutine.uc_stack.ss_size = stack.size();
  coroutine.uc_link = &coroutine_return;
  makecontext(&coroutine, &CoroutineBody, 0);
  Capture c;
  c.complete = true;
  coroutine_capture = &c;
  ASSERT_EQ(swapcontext(&coroutine_return, &coroutine), 0);
  EXPECT_FALSE(c.complete);
  EXPECT_EQ(c.count, 0u);
  EXPECT_GE(c.expected_count, 5) << "libunwind walks the coroutine's frames";
}

}  // namespace
}  // namespace memtrace::preload_internal
