// Copyright 2026 The memtrace Authors.
//
// Exports over a hand-built summary whose stack points into this test binary, symbolized
// through module lines made from /proc/self/maps: folded stacks are outermost first, with
// symbolized names, ';' replaced, and merged; pprof's stacks begin at the function the
// site is named after.

#include "analysis/exports.h"

#include <zlib.h>

#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/analyzer.h"
#include "gtest/gtest.h"
#include "memtrace/markers.h"
#include "tests/inline_frames.h"
#include "tests/self_modules.h"

// The program's entry point (crt1.o): where the main thread's stacks begin.
extern "C" void _start();

namespace memtrace_exports_test {
__attribute__((noinline)) int Inner() { return 1; }
__attribute__((noinline)) int Outer() { return Inner() + 1; }

// The return addresses of the calls that led to the function whose frame is `fp`
// (its __builtin_frame_address(0)), innermost first, `depth` at most: read through the
// saved frame pointers, which the build keeps (-fno-omit-frame-pointer).
std::vector<uint64_t> ReturnAddresses(const void* fp, int depth) {
  std::vector<uint64_t> out;
  for (auto* frame = static_cast<void* const*>(fp); frame != nullptr && depth-- > 0;
       frame = static_cast<void* const*>(frame[0])) {
    out.push_back(reinterpret_cast<uint64_t>(frame[1]));
  }
  return out;
}

// The stack of the last block allocated through RecordingAllocator or reported with
// memtrace_alloc(), as a capture has it: from the return address of the call of the
// function that recorded it, as the interposer's malloc and memtrace_marker_alloc() do.
std::vector<uint64_t> recorded;

// A standard allocator that records its callers' stack, three frames deep: a vector's
// growth reaches it through std::allocator_traits, _Vector_base::_M_allocate and
// vector::reserve, inlined or not.
template <typename T>
struct RecordingAllocator {
  using value_type = T;
  RecordingAllocator() = default;
  template <typename U>
  RecordingAllocator(const RecordingAllocator<U>&) {}  // implicit, as an allocator's must be
  __attribute__((noinline)) T* allocate(size_t n) {
    recorded = ReturnAddresses(__builtin_frame_address(0), 3);
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) { std::allocator<T>().deallocate(p, n); }
  bool operator==(const RecordingAllocator&) const { return true; }
};

using RecordedInts = std::vector<int, RecordingAllocator<int>>;

__attribute__((noinline)) RecordedInts ReserveInts(size_t n) {
  RecordedInts v;
  v.reserve(n);
  return v;
}

__attribute__((noinline)) size_t LoadLevel() {
  RecordedInts v = ReserveInts(100);
  asm volatile("" : : "r"(v.data()) : "memory");  // a call, not a tail call
  return v.capacity();
}

// The same growth with vector::reserve a frame of its own, as at -O0: called through a
// pointer the compiler cannot see through, so it is not inlined here.
__attribute__((noinline)) size_t ReserveOutOfLine() {
  static void (RecordedInts::*volatile reserve)(size_t) = &RecordedInts::reserve;
  RecordedInts v;
  (v.*reserve)(100);
  asm volatile("" : : "r"(v.data()) : "memory");
  return v.capacity();
}

// A pool of the program's own that reports its blocks with the markers header.
char pool_memory[64];
__attribute__((noinline)) void ReportPoolBlock() {
  asm volatile("");
  memtrace_alloc(3, pool_memory, sizeof(pool_memory));
  asm volatile("" : : : "memory");  // a call, not a tail call
}

}  // namespace memtrace_exports_test

// What the interposer defines for include/memtrace/markers.h, here without it.
extern "C" void memtrace_marker_alloc(int, const void*, size_t) {
  memtrace_exports_test::recorded =
      memtrace_exports_test::ReturnAddresses(__builtin_frame_address(0), 1);
}

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

// The values of a packed repeated varint field.
std::vector<uint64_t> PackedVarints(const std::string& bytes) {
  std::vector<uint64_t> out;
  size_t i = 0;
  while (i < bytes.size()) {
    uint64_t v = 0;
    for (int shift = 0; i < bytes.size(); shift += 7) {
      const auto byte = static_cast<unsigned char>(bytes[i++]);
      v |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) break;
    }
    out.push_back(v);
  }
  return out;
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
      for (uint64_t id : PackedVarints(f.bytes)) {
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

// A stack as deep as the capture keeps (the interposer's --depth) may have lost its
// outermost callers: folded stacks and pprof put a frame saying so at its root, as the
// report's flame graph does, and only there; not where that frame is the program's entry
// point, where every stack begins.
TEST(ExportsTest, AStackAsDeepAsTheCaptureKeepsIsMarkedCut) {
  CaptureSummary s;
  s.modules = SelfExecutableModules();
  const uint64_t inner = reinterpret_cast<uint64_t>(&memtrace_exports_test::Inner) + 1;
  const uint64_t outer = reinterpret_cast<uint64_t>(&memtrace_exports_test::Outer) + 1;
  const uint64_t start = reinterpret_cast<uint64_t>(&_start) + 1;
  s.stack_depth = 2;
  s.site_addrs = {{1, inner}, {2, inner}, {3, inner}};
  s.site_frames[1] = {inner, outer};  // two frames: as deep as kept
  s.site_frames[2] = {inner};         // one: whole
  s.site_frames[3] = {inner, start};  // two, but the outermost is where stacks begin
  s.attribution.resize(3);
  for (uint32_t site : {1, 2, 3}) {
    AllocationAttribution& row = s.attribution[site - 1];
    row.site = site;
    row.site_addr = inner;
    row.usage.Allocate(site == 1 ? 100 : site == 2 ? 7 : 3);
  }
  Symbolizer symbolizer;
  for (const CaptureRecord& m : s.modules) symbolizer.AddModule(m);
  const std::string kCut = "[stack cut at 2 frames: outer callers not recorded]";
  const std::string kInner = "memtrace_exports_test::Inner()";
  const std::string kOuter = "memtrace_exports_test::Outer()";
  EXPECT_EQ(FoldedStacks(s, symbolizer, FoldedWeight::kBytes),
            kCut + ";" + kOuter + ";" + kInner + " 100\n_start;" + kInner + " 3\n" + kInner +
                " 7\n");  // sorted, as flamegraph.pl reads them
  const auto data = PprofProfile(s, symbolizer, AllocatorFunctions());
  ASSERT_TRUE(data.ok()) << data.status();
  using Stacks = std::vector<std::vector<std::string>>;
  EXPECT_EQ(SampleStacks(Inflate(*data)),
            (Stacks{{kInner, kOuter, kCut}, {kInner}, {kInner, "_start"}}));
}

TEST(ExportsTest, StacksBeginAtTheEntryPointOrAThreadsClone) {
  for (const char* frame : {"_start", "_start (../sysdeps/x86_64/start.S:115)", "clone",
                            "__clone3 (../sysdeps/unix/sysv/linux/x86_64/clone3.S:81)"}) {
    EXPECT_TRUE(CaptureSummary::IsStackStart(frame)) << frame;
  }
  for (const char* frame : {"main", "__libc_start_call_main", "start_thread", "_start2",
                            "?? (0x1234)", ""}) {
    EXPECT_FALSE(CaptureSummary::IsStackStart(frame)) << frame;
  }
}

// Each sample's stack as `go tool pprof -traces` lists it, innermost first: every line of
// its locations, in order (a location's inlined functions before its own).
std::vector<std::vector<std::string>> SampleLines(const std::string& profile) {
  std::vector<std::string> strings;
  std::map<uint64_t, uint64_t> function_names;  // function id -> string index
  std::map<uint64_t, std::vector<uint64_t>> location_lines;  // location id -> function ids
  std::vector<std::string> samples;
  for (const Field& f : Fields(profile)) {
    if (f.number == 2) samples.push_back(f.bytes);
    if (f.number == 5) function_names[VarintField(f.bytes, 1)] = VarintField(f.bytes, 2);
    if (f.number == 6) strings.push_back(f.bytes);
    if (f.number == 4) {
      std::vector<uint64_t>& lines = location_lines[VarintField(f.bytes, 1)];
      for (const Field& line : Fields(f.bytes)) {
        if (line.number == 4) lines.push_back(VarintField(line.bytes, 1));
      }
    }
  }
  std::vector<std::vector<std::string>> stacks;
  for (const std::string& sample : samples) {
    std::vector<std::string> stack;
    for (const Field& f : Fields(sample)) {
      if (f.number != 1) continue;  // location_id, packed
      for (uint64_t id : PackedVarints(f.bytes)) {
        for (uint64_t function : location_lines.at(id)) {
          stack.push_back(strings.at(function_names.at(function)));
        }
      }
    }
    stacks.push_back(stack);
  }
  return stacks;
}

// pprof's flat leader is the function `memtrace top` names the site after: the frames
// the site's name passes over are left out, the container library's after the allocator's
// (std::vector::reserve's growth), and memtrace_alloc() of include/memtrace/markers.h,
// inlined functions included. --allocator still moves the leader outward.
TEST(ExportsTest, PprofLeaderIsTheFunctionTheSiteIsNamedAfter) {
  const std::string kReserveInts = "memtrace_exports_test::ReserveInts(unsigned long)";
  const std::string kLoadLevel = "memtrace_exports_test::LoadLevel()";
  const std::string kReportPoolBlock = "memtrace_exports_test::ReportPoolBlock()";
  const std::string kReserveOutOfLine = "memtrace_exports_test::ReserveOutOfLine()";
  memtrace_exports_test::LoadLevel();
  const std::vector<uint64_t> reserved = memtrace_exports_test::recorded;
  memtrace_exports_test::ReportPoolBlock();
  const std::vector<uint64_t> reported = memtrace_exports_test::recorded;
  memtrace_exports_test::ReserveOutOfLine();
  const std::vector<uint64_t> out_of_line = memtrace_exports_test::recorded;
  CaptureSummary s;
  s.modules = SelfExecutableModules();
  for (const auto& [site, frames] : {std::make_pair(1u, reserved), std::make_pair(2u, reported),
                                     std::make_pair(3u, out_of_line)}) {
    s.site_addrs[site] = frames.at(0);
    s.site_frames[site] = frames;
    AllocationAttribution a;
    a.site = site;
    a.site_addr = frames[0];
    a.usage.Allocate(64);
    s.attribution.push_back(a);
  }
  Symbolizer symbolizer;
  for (const CaptureRecord& m : s.modules) symbolizer.AddModule(m);

  // What `top` names them: the premise, that the stacks pass through those functions.
  const std::string reserve_site = SiteLabel(symbolizer, reserved);
  EXPECT_EQ(reserve_site.substr(0, kReserveInts.size() + 2), kReserveInts + " (") << reserve_site;
  EXPECT_NE(reserve_site.find(") via std::vector::reserve"), std::string::npos) << reserve_site;
  const std::string pool_site = SiteLabel(symbolizer, reported);
  EXPECT_EQ(pool_site.substr(0, kReportPoolBlock.size() + 2), kReportPoolBlock + " (")
      << pool_site;
  EXPECT_NE(pool_site.find(") via memtrace_alloc"), std::string::npos) << pool_site;
  const std::string out_of_line_site = SiteLabel(symbolizer, out_of_line);
  EXPECT_EQ(symbolizer.Resolve(out_of_line.at(0)).function,
            "std::vector<int, memtrace_exports_test::RecordingAllocator<int> >::reserve("
            "unsigned long)");
  EXPECT_EQ(out_of_line_site.substr(0, kReserveOutOfLine.size() + 2), kReserveOutOfLine + " (")
      << out_of_line_site;

  auto stacks = [&](const char* allocators) {
    absl::StatusOr<AllocatorFunctions> list = AllocatorFunctions::Parse(allocators);
    EXPECT_TRUE(list.ok()) << list.status();
    const auto data = PprofProfile(s, symbolizer, *list);
    EXPECT_TRUE(data.ok()) << data.status();
    return SampleLines(Inflate(*data));
  };
  const std::vector<std::vector<std::string>> built_in = stacks("");
  ASSERT_EQ(built_in.size(), 3u);
  ASSERT_GE(built_in[0].size(), 2u);
  EXPECT_EQ(built_in[0][0], kReserveInts);
  EXPECT_EQ(built_in[0][1], kLoadLevel);
  EXPECT_EQ(built_in[1], (std::vector<std::string>{kReportPoolBlock}));
  ASSERT_FALSE(built_in[2].empty());
  EXPECT_EQ(built_in[2][0], kReserveOutOfLine);

  // The program's own list, as `--allocator` gives it: ReserveInts() is an allocator too.
  const std::vector<std::vector<std::string>> own = stacks("memtrace_exports_test::ReserveI*");
  ASSERT_EQ(own.size(), 3u);
  ASSERT_FALSE(own[0].empty());
  EXPECT_EQ(own[0][0], kLoadLevel);
  const AllocatorFunctions reserve_too =
      *AllocatorFunctions::Parse("memtrace_exports_test::ReserveI*");
  const std::string own_site = SiteLabel(symbolizer, reserved, reserve_too);
  EXPECT_EQ(own_site.substr(0, kLoadLevel.size() + 2), kLoadLevel + " (") << own_site;
}

// A thread line again for the thread that has the ring (the same tid) is its new name:
// the summary lists that thread once, with it, and its perfetto track is named after it.
// A line for another tid on the same ring is another thread.
TEST(ExportsTest, AThreadNamedAgainKeepsItsLastNameAndItsTrack) {
  const std::string text =
      "{\"type\":\"header\",\"schema_version\":1}\n"
      "{\"type\":\"layer\",\"id\":0,\"name\":\"heap\"}\n"
      "{\"type\":\"scope\",\"id\":1,\"parent\":0,\"name\":\"load\",\"path\":\"load\"}\n"
      "{\"type\":\"thread\",\"thread\":1,\"tid\":100,\"name\":\"early\"}\n"
      "{\"type\":\"scope_enter\",\"t\":1,\"thread\":1,\"scope\":1,\"outer\":0,\"mono_ns\":10}\n"
      "{\"type\":\"thread\",\"thread\":2,\"tid\":200,\"name\":\"other\"}\n"
      "{\"type\":\"thread\",\"thread\":1,\"tid\":100,\"name\":\"late\"}\n"
      "{\"type\":\"scope_exit\",\"t\":1,\"thread\":1,\"scope\":1,\"outer\":0,\"mono_ns\":20}\n"
      "{\"type\":\"thread\",\"thread\":1,\"tid\":300,\"name\":\"next\"}\n"
      "{\"type\":\"scope_enter\",\"t\":2,\"thread\":1,\"scope\":1,\"outer\":0,\"mono_ns\":30}\n"
      "{\"type\":\"scope_exit\",\"t\":2,\"thread\":1,\"scope\":1,\"outer\":0,\"mono_ns\":40}\n";
  const auto summary = Analyzer::SummarizeText(text, "renamed.jsonl");
  ASSERT_TRUE(summary.ok()) << summary.status();
  std::vector<std::string> threads;
  for (const CaptureSummary::KernelThread& k : summary->kernel_threads) {
    threads.push_back(absl::StrCat(k.thread, "/", k.tid, "/", k.name));
  }
  EXPECT_EQ(threads, (std::vector<std::string>{"1/100/late", "2/200/other", "1/300/next"}));

  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/renamed.jsonl";
  {
    std::ofstream out(path);
    out << text;
  }
  Symbolizer symbolizer;
  const auto trace = PerfettoTrace(path, *summary, symbolizer);
  ASSERT_TRUE(trace.ok()) << trace.status();
  auto named = [&](int tid, const std::string& name) {
    return trace->find(absl::StrCat("\"name\":\"thread_name\",\"pid\":", summary->pid,
                                    ",\"tid\":", tid, ",\"ts\":0,\"args\":{\"name\":\"",
                                    name, "\"}")) != std::string::npos;
  };
  EXPECT_TRUE(named(100, "late (tid 100)")) << *trace;
  EXPECT_FALSE(named(100, "early (tid 100)")) << *trace;
  EXPECT_TRUE(named(300, "next (tid 300)")) << *trace;
}

// The trace's process is named after the program where the interposer's header says
// which (its argv[0], without the directory), and "memtrace capture" where it does not.
TEST(ExportsTest, TheProcessIsNamedAfterItsProgram) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/program.jsonl";
  {
    std::ofstream out(path);
    out << "{\"type\":\"header\",\"schema_version\":1}\n";
  }
  CaptureSummary s;
  s.pid = 77;
  Symbolizer symbolizer;
  auto process_name = [&](const CaptureSummary& summary) {
    const auto trace = PerfettoTrace(path, summary, symbolizer);
    EXPECT_TRUE(trace.ok()) << trace.status();
    const std::string key = "\"name\":\"process_name\",\"pid\":77,\"tid\":0,\"ts\":0,"
                            "\"args\":{\"name\":\"";
    const size_t at = trace->find(key);
    if (at == std::string::npos) return std::string("(none)");
    const size_t from = at + key.size();
    return trace->substr(from, trace->find('"', from) - from);
  };
  EXPECT_EQ(process_name(s), "memtrace capture");
  s.process.argv = {"/usr/local/bin/python3.11", "-c", "pass"};
  EXPECT_EQ(process_name(s), "python3.11");
  s.process.argv = {"sqlite3"};
  EXPECT_EQ(process_name(s), "sqlite3");
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
