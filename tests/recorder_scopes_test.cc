// Copyright 2026 The memtrace Authors.
//
// The recorder's scopes (runtime/span.h): allocations are attributed to the open scope
// and frees charge back to the scope that allocated; a span exited out of order closes
// the scopes inside it, and one exited on another thread is refused and counted; a
// snapshot's top sites are (site, scope) pairs.

#include "runtime/internal/recorder.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/internal/thread_state.h"
#include "runtime/span.h"
#include "tests/recorder_test_support.h"

namespace memtrace {
namespace {

TEST(RecorderTest, ScopesAttributeAllocationsAndFreesChargeBack) {
  auto recorder = Make();
  ASSERT_TRUE(recorder->Start().ok());
  static const ScopeName kFrame("rt_frame");
  static const ScopeName kPhysics("rt_physics");
  uint32_t frame_path = 0, physics_path = 0;
  {
    Span frame(recorder.get(), kFrame);
    frame_path = frame.path();
    recorder->RecordAlloc(kHeap, 0x100, 100, 0);
    {
      Span physics(recorder.get(), kPhysics);
      physics_path = physics.path();
      EXPECT_EQ(CurrentScopePath(), physics_path);
      recorder->RecordAlloc(kHeap, 0x200, 200, 0);
    }
    EXPECT_EQ(CurrentScopePath(), frame_path);
  }
  EXPECT_EQ(CurrentScopePath(), 0u);
  recorder->RecordFree(kHeap, 0x200);  // freed unscoped: charged back to physics
  const Snapshot snap = recorder->TakeSnapshot();
  EXPECT_EQ(ScopeTable::Global().PathString(physics_path), "rt_frame/rt_physics");
  bool saw_physics = false;
  for (const ScopeUsage& s : snap.scopes) {
    if (s.scope == physics_path) {
      saw_physics = true;
      EXPECT_EQ(s.usage.live_bytes, 0u);
      EXPECT_EQ(s.usage.freed_bytes, 200u);
      EXPECT_EQ(s.usage.high_water_bytes, 200u);
    }
    if (s.scope == frame_path) {
      EXPECT_EQ(s.usage.live_bytes, 100u);
    }
    EXPECT_NE(s.scope, 0u) << "nothing was allocated unscoped";
  }
  EXPECT_TRUE(saw_physics);
}

TEST(RecorderTest, OutOfOrderSpanExitClosesInnerScopes) {
  static const ScopeName kOuter("rt_outer");
  static const ScopeName kInner("rt_inner");
  auto outer = std::make_unique<Span>(nullptr, kOuter);
  Span inner(nullptr, kInner);
  outer->Exit();  // closes inner too
  EXPECT_EQ(CurrentScopePath(), 0u);
  inner.Exit();   // already closed: no effect
  EXPECT_EQ(CurrentScopePath(), 0u);
}

TEST(RecorderTest, SpanExitedOnAnotherThreadIsRefusedAndCounted) {
  auto recorder = Make();
  ASSERT_TRUE(recorder->Start().ok());
  static const ScopeName kOwned("rt_owned");
  auto span = std::make_unique<Span>(recorder.get(), kOwned);
  const uint32_t path = span->path();
  std::thread([&] {
    span->Exit();  // not this thread's span
    EXPECT_EQ(CurrentScopePath(), 0u) << "the other thread's stack is untouched";
  }).join();
  EXPECT_EQ(CurrentScopePath(), path) << "the scope stays open on its own thread";
  EXPECT_EQ(recorder->Integrity().foreign_span_exits, 1u);
  span.reset();  // already exited: nothing more happens
  EXPECT_EQ(recorder->Integrity().foreign_span_exits, 1u);
  // Leave this (gtest's) thread unscoped for the tests that follow: the refused span's
  // scope is still open here, and no enclosing span exists to close it.
  runtime_internal::Tls().depth = 0;
  runtime_internal::Tls().scope = 0;
}

// TakeSnapshot(top) lists the (site, scope) pairs holding the most live bytes, the
// largest first, at most `top`, and sums the rest: 20 sites, site k holding k+1 blocks
// of 100 * (k + 1) bytes, each in scope 0 and half of them in scope 1 as well. A stack's
// site carries its frames (Config::live keeps them).
TEST(RecorderTest, SnapshotListsTheTopSitesByLiveBytesAndSumsTheRest) {
  Config config;
  config.live = true;  // keeps stack frames; the recorder opens no socket itself
  auto recorder = Make(config);
  ASSERT_TRUE(recorder->Start().ok());
  constexpr uint64_t kSites = 20;
  std::map<std::pair<uint64_t, uint32_t>, std::pair<uint64_t, uint64_t>> truth;
  uint64_t address = 0x10000000;
  auto alloc = [&](uint64_t site, uint32_t scope, uint64_t size) {
    ASSERT_EQ(recorder->RecordAlloc(kHeap, address += 0x1000, size, site),
              RecordResult::kRecorded);
    auto& [bytes, count] = truth[{site, scope}];
    bytes += size;
    ++count;
  };
  for (uint64_t k = 0; k < kSites; ++k) {
    for (uint64_t b = 0; b <= k; ++b) alloc(0x5000 + 16 * k, 0, 100 * (k + 1));
  }
  uint64_t frames[3] = {0x7000, 0x7010, 0x7020};
  const uint64_t stack = recorder->StackSite(frames, 3);
  uint32_t s1 = 0;
  {
    static const ScopeName kScope("rt_sites");
    Span span(recorder.get(), kScope);
    s1 = span.path();
    for (uint64_t k = 0; k < kSites; k += 2) alloc(0x5000 + 16 * k, s1, 7 * k + 1);
    alloc(stack, s1, 50000);  // the largest pair
  }

  const Snapshot snap = recorder->TakeSnapshot(5);
  ASSERT_TRUE(snap.has_sites);
  ASSERT_EQ(snap.sites.size(), 5u);
  std::vector<std::pair<uint64_t, std::pair<uint64_t, uint32_t>>> by_bytes;
  for (const auto& [key, v] : truth) by_bytes.push_back({v.first, key});
  std::sort(by_bytes.begin(), by_bytes.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  uint64_t rest_bytes = 0, rest_count = 0;
  for (size_t i = 0; i < by_bytes.size(); ++i) {
    const auto& [site, scope] = by_bytes[i].second;
    const auto& [bytes, count] = truth[{site, scope}];
    if (i >= 5) {
      rest_bytes += bytes;
      rest_count += count;
      continue;
    }
    EXPECT_EQ(snap.sites[i].site, site) << i;
    EXPECT_EQ(snap.sites[i].scope, scope) << i;
    EXPECT_EQ(snap.sites[i].live_bytes, bytes) << i;
    EXPECT_EQ(snap.sites[i].live_count, count) << i;
  }
  EXPECT_EQ(snap.sites[0].site, stack);
  EXPECT_EQ(snap.sites[0].scope, s1);
  EXPECT_EQ(snap.sites[0].path, "rt_sites");
  EXPECT_EQ(snap.sites[0].frames, std::vector<uint64_t>(frames, frames + 3));
  EXPECT_TRUE(snap.sites[1].frames.empty());
  EXPECT_EQ(snap.sites_omitted, truth.size() - 5);
  EXPECT_EQ(snap.sites_omitted_bytes, rest_bytes);
  EXPECT_EQ(snap.sites_omitted_count, rest_count);
  EXPECT_EQ(snap.sites[0].live_bytes + snap.sites[1].live_bytes + snap.sites[2].live_bytes +
                snap.sites[3].live_bytes + snap.sites[4].live_bytes + rest_bytes,
            snap.totals.live_bytes);

  // Without top_sites, none.
  const Snapshot plain = recorder->TakeSnapshot();
  EXPECT_FALSE(plain.has_sites);
  EXPECT_TRUE(plain.sites.empty());
}

}  // namespace
}  // namespace memtrace
