// Copyright 2026 The memtrace Authors.
//
// Exports over a hand-built summary whose stack points into this test binary, symbolized
// through module lines made from /proc/self/maps: folded stacks are outermost first, with
// symbolized names, ';' replaced, and merged.

#include "analysis/exports.h"

#include "gtest/gtest.h"
#include "tests/self_modules.h"

namespace memtrace_exports_test {
__attribute__((noinline)) int Inner() { return 1; }
__attribute__((noinline)) int Outer() { return Inner() + 1; }
}  // namespace memtrace_exports_test

namespace memtrace {
namespace {

TEST(ExportsTest, FoldedStacksAreOutermostFirstSymbolizedAndMerged) {
  CaptureSummary s;
  s.modules = SelfExecutableModules();
  // "Return addresses" one byte into each function: pc - 1 is its first instruction.
  const uint64_t inner = reinterpret_cast<uint64_t>(&memtrace_exports_test::Inner) + 1;
  const uint64_t outer = reinterpret_cast<uint64_t>(&memtrace_exports_test::Outer) + 1;
  s.site_addrs = {{1, inner}, {2, inner}, {3, 0x10}};
  s.site_frames[1] = {inner, outer};
  s.site_frames[2] = {inner, outer};  // the same stack under another scope: merged
  AllocationAttribution a;
  a.site = 1;
  a.site_addr = inner;
  a.usage.Allocate(100);
  AllocationAttribution b = a;
  b.site = 2;
  b.scope = 4;
  b.usage.Allocate(50);  // 2 allocations, 150 bytes
  AllocationAttribution unknown;
  unknown.site = 3;
  unknown.site_addr = 0x10;
  unknown.usage.Allocate(7);
  s.attribution = {a, b, unknown};
  Symbolizer symbolizer;
  for (const CaptureRecord& m : s.modules) symbolizer.AddModule(m);
  EXPECT_EQ(FoldedStacks(s, symbolizer, FoldedWeight::kBytes),
            "?? (0x10) 7\n"
            "memtrace_exports_test::Outer();memtrace_exports_test::Inner() 250\n");
  EXPECT_EQ(FoldedStacks(s, symbolizer, FoldedWeight::kCount),
            "?? (0x10) 1\n"
            "memtrace_exports_test::Outer();memtrace_exports_test::Inner() 3\n");
}

TEST(ExportsTest, PprofIsGzip) {
  CaptureSummary s;
  s.site_addrs = {{0, 0x1000}};
  AllocationAttribution a;
  a.site_addr = 0x1000;
  a.usage.Allocate(64);
  s.attribution = {a};
  Symbolizer symbolizer;
  const auto data = PprofProfile(s, symbolizer);
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_GE(data->size(), 18u);
  EXPECT_EQ(static_cast<unsigned char>((*data)[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>((*data)[1]), 0x8b);
}

}  // namespace
}  // namespace memtrace
