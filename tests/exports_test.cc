// Copyright 2026 The memtrace Authors.
//
// Exports over a hand-built summary whose stack points into this test binary, symbolized
// through module lines made from /proc/self/maps: folded stacks are outermost first, with
// symbolized names, ';' replaced, and merged.

#include "analysis/exports.h"

#include <zlib.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/inline_frames.h"
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
  b.usage.Resize(50, 80);  // and a realloc in place: a call, 30 bytes more
  AllocationAttribution unknown;
  unknown.site = 3;
  unknown.site_addr = 0x10;
  unknown.usage.Allocate(7);
  s.attribution = {a, b, unknown};
  Symbolizer symbolizer;
  for (const CaptureRecord& m : s.modules) symbolizer.AddModule(m);
  EXPECT_EQ(FoldedStacks(s, symbolizer, FoldedWeight::kBytes),
            "?? (0x10) 7\n"
            "memtrace_exports_test::Outer();memtrace_exports_test::Inner() 280\n");
  // By calls, as heaptrack counts them: the realloc is one.
  EXPECT_EQ(FoldedStacks(s, symbolizer, FoldedWeight::kCount),
            "?? (0x10) 1\n"
            "memtrace_exports_test::Outer();memtrace_exports_test::Inner() 4\n");
}

// A stack through inlined code (tests/inline_frames.h): a summary with one site there.
CaptureSummary InlinedStack() {
  CaptureSummary s;
  s.modules = SelfExecutableModules();
  const uint64_t pc = memtrace_inline_test::Outer();
  s.site_addrs = {{1, pc}};
  s.site_frames[1] = {pc};
  AllocationAttribution a;
  a.site = 1;
  a.site_addr = pc;
  a.usage.Allocate(64);
  s.attribution = {a};
  return s;
}

TEST(ExportsTest, FoldedStacksListInlinedFunctionsAsFrames) {
  const CaptureSummary s = InlinedStack();
  Symbolizer symbolizer;
  for (const CaptureRecord& m : s.modules) symbolizer.AddModule(m);
  EXPECT_EQ(FoldedStacks(s, symbolizer, FoldedWeight::kBytes),
            "memtrace_inline_test::Outer();memtrace_inline_test::Inlined();"
            "memtrace_inline_test::InnerInlined() 64\n");
}

// One field of a protobuf message: a varint's value, or a length-delimited value's bytes.
struct Field {
  int number;
  uint64_t varint = 0;
  std::string bytes;
};

// The fields of one protobuf message, in order (the exporter writes no other wire types).
std::vector<Field> Fields(const std::string& message) {
  std::vector<Field> out;
  size_t i = 0;
  auto varint = [&]() {
    uint64_t v = 0;
    for (int shift = 0; i < message.size(); shift += 7) {
      const auto byte = static_cast<unsigned char>(message[i++]);
      v |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) break;
    }
    return v;
  };
  while (i < message.size()) {
    const uint64_t key = varint();
    Field f{static_cast<int>(key >> 3)};
    if ((key & 7) == 0) {
      f.varint = varint();
    } else if ((key & 7) == 2) {
      const uint64_t n = varint();
      f.bytes = message.substr(i, n);
      i += n;
    } else {
      ADD_FAILURE() << "wire type " << (key & 7);
      return out;
    }
    out.push_back(std::move(f));
  }
  return out;
}

// The value of the varint field `number` of `message`, 0 when it has none.
uint64_t VarintField(const std::string& message, int number) {
  for (const Field& f : Fields(message)) {
    if (f.number == number) return f.varint;
  }
  return 0;
}

// The profile.proto bytes of a gzip-compressed profile.
std::string Inflate(const std::string& data) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
  std::string profile(1 << 20, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(profile.data());
  z.avail_out = static_cast<uInt>(profile.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  profile.resize(z.total_out);
  inflateEnd(&z);
  return profile;
}

// A pprof location lists the functions inlined at its address as lines of their own,
// innermost first, the frame's own function last.
TEST(ExportsTest, PprofLocationsCarryInlinedFunctionsAsLines) {
  const CaptureSummary s = InlinedStack();
  Symbolizer symbolizer;
  for (const CaptureRecord& m : s.modules) symbolizer.AddModule(m);
  const auto data = PprofProfile(s, symbolizer);
  ASSERT_TRUE(data.ok()) << data.status();
  const std::string profile = Inflate(*data);

  // Profile: location (4), function (5), string_table (6). Function: id (1), name (2).
  std::vector<std::string> strings, locations;
  std::map<uint64_t, uint64_t> function_names;  // function id -> string index
  for (const Field& f : Fields(profile)) {
    if (f.number == 4) locations.push_back(f.bytes);
    if (f.number == 5) function_names[VarintField(f.bytes, 1)] = VarintField(f.bytes, 2);
    if (f.number == 6) strings.push_back(f.bytes);
  }
  ASSERT_EQ(locations.size(), 1u);
  std::vector<std::string> lines;  // location: line (4); line: function_id (1)
  for (const Field& f : Fields(locations[0])) {
    if (f.number == 4) lines.push_back(strings.at(function_names.at(VarintField(f.bytes, 1))));
  }
  EXPECT_EQ(lines, (std::vector<std::string>{"memtrace_inline_test::InnerInlined()",
                                             "memtrace_inline_test::Inlined()",
                                             "memtrace_inline_test::Outer()"}));
}

// Each sample's stack, innermost first, as the names of its locations' own functions.
std::vector<std::vector<std::string>> SampleStacks(const std::string& profile) {
  std::vector<std::string> strings;
  std::map<uint64_t, uint64_t> function_names;  // function id -> string index
  std::map<uint64_t, uint64_t> location_functions;  // location id -> its last line's function
  std::vector<std::string> samples;
  for (const Field& f : Fields(profile)) {
    if (f.number == 2) samples.push_back(f.bytes);
    if (f.number == 5) function_names[VarintField(f.bytes, 1)] = VarintField(f.bytes, 2);
    if (f.number == 6) strings.push_back(f.bytes);
    if (f.number == 4) {
      for (const Field& line : Fields(f.bytes)) {
        if (line.number == 4) location_functions[VarintField(f.bytes, 1)] = VarintField(line.bytes, 1);
      }
    }
  }
  std::vector<std::vector<std::string>> stacks;
  for (const std::string& sample : samples) {
    std::vector<std::string> stack;
    for (const Field& f : Fields(sample)) {
      if (f.number != 1) continue;  // location_id, packed
      size_t i = 0;
      while (i < f.bytes.size()) {
        uint64_t id = 0;
        for (int shift = 0; i < f.bytes.size(); shift += 7) {
          const auto byte = static_cast<unsigned char>(f.bytes[i++]);
          id |= uint64_t{byte & 0x7fu} << shift;
          if ((byte & 0x80) == 0) break;
        }
        stack.push_back(strings.at(function_names.at(location_functions.at(id))));
      }
    }
    stacks.push_back(stack);
  }
  return stacks;
}

// pprof's leaf is the code that asked for memory: the innermost frames that are allocator
// functions (here the program's own, named as --allocator would) are left out, and a stack
// of allocator frames only keeps its outermost.
TEST(ExportsTest, PprofLeavesOutTheInnermostAllocatorFrames) {
  CaptureSummary s;
  s.modules = SelfExecutableModules();
  const uint64_t inner = reinterpret_cast<uint64_t>(&memtrace_exports_test::Inner) + 1;
  const uint64_t outer = reinterpret_cast<uint64_t>(&memtrace_exports_test::Outer) + 1;
  s.site_addrs = {{1, inner}};
  s.site_frames[1] = {inner, outer};
  AllocationAttribution a;
  a.site = 1;
  a.site_addr = inner;
  a.usage.Allocate(100);
  s.attribution = {a};
  Symbolizer symbolizer;
  for (const CaptureRecord& m : s.modules) symbolizer.AddModule(m);
  const std::string kInner = "memtrace_exports_test::Inner()";
  const std::string kOuter = "memtrace_exports_test::Outer()";

  auto stacks = [&](const char* allocators) {
    absl::StatusOr<AllocatorFunctions> list = AllocatorFunctions::Parse(allocators);
    EXPECT_TRUE(list.ok()) << list.status();
    const auto data = PprofProfile(s, symbolizer, *list);
    EXPECT_TRUE(data.ok()) << data.status();
    return SampleStacks(Inflate(*data));
  };
  using Stacks = std::vector<std::vector<std::string>>;
  EXPECT_EQ(stacks(""), (Stacks{{kInner, kOuter}}));
  EXPECT_EQ(stacks("memtrace_exports_test::Inner"), (Stacks{{kOuter}}));
  EXPECT_EQ(stacks("memtrace_exports_test::*"), (Stacks{{kOuter}}));
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
