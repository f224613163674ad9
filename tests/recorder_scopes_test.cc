// Copyright 2026 The memtrace Authors.
//
// The recorder's scopes (runtime/span.h): allocations are attributed to the open scope
// and frees charge back to the scope that allocated; a span exited out of order closes
// the scopes inside it, and one exited on another thread is refused and counted.

#include "runtime/internal/recorder.h"

#include <cstdint>
#include <thread>

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

}  // namespace
}  // namespace memtrace
