// Copyright 2026 The memtrace Authors.
//
// The Symbolizer against this test's own process: module lines built from /proc/self/maps
// (as the interposer writes them), pcs inside functions whose names and lines are known.

#include "analysis/symbolizer.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/inline_frames.h"
#include "tests/self_modules.h"

namespace memtrace_symbolizer_test {

constexpr int kReturnAddressLine = __LINE__ + 1;  // the function's first line
__attribute__((noinline)) uint64_t ReturnAddress() {
  uint64_t pc = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  asm volatile("" : "+r"(pc));
  return pc;
}

constexpr int kCallLine = __LINE__ + 3;  // the line of the call below
__attribute__((noinline)) uint64_t KnownCaller() {
  asm volatile("");
  uint64_t pc = ReturnAddress();
  asm volatile("" : "+r"(pc));  // not a tail call: the return address stays in here
  return pc;
}

}  // namespace memtrace_symbolizer_test

namespace memtrace {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(),
                                                suffix) == 0;
}

TEST(SymbolizerTest, ResolvesReturnAddressToCallerFileAndLine) {
  Symbolizer symbolizer;
  for (const CaptureRecord& m : SelfExecutableModules()) symbolizer.AddModule(m);
  const uint64_t pc = memtrace_symbolizer_test::KnownCaller();
  const SymbolizedFrame& f = symbolizer.Resolve(pc);
  EXPECT_EQ(f.function, "memtrace_symbolizer_test::KnownCaller()");
  EXPECT_TRUE(EndsWith(f.file, "symbolizer_test.cc")) << f.file;
  EXPECT_EQ(f.line, static_cast<uint32_t>(memtrace_symbolizer_test::kCallLine));
  EXPECT_FALSE(f.module.empty());
  EXPECT_EQ(symbolizer.Describe(pc),
            "memtrace_symbolizer_test::KnownCaller() (" + f.file + ":" +
                std::to_string(memtrace_symbolizer_test::kCallLine) + ")");
}

TEST(SymbolizerTest, ResolvesAPcJustInsideAFunction) {
  Symbolizer symbolizer;
  for (const CaptureRecord& m : SelfExecutableModules()) symbolizer.AddModule(m);
  // A "return address" one byte into the function: pc - 1 is its first instruction.
  const uint64_t pc = reinterpret_cast<uint64_t>(&memtrace_symbolizer_test::ReturnAddress) + 1;
  const SymbolizedFrame& f = symbolizer.Resolve(pc);
  EXPECT_EQ(f.function, "memtrace_symbolizer_test::ReturnAddress()");
  EXPECT_TRUE(EndsWith(f.file, "symbolizer_test.cc")) << f.file;
  // The function's opening line, or one of its first lines.
  EXPECT_GE(f.line, static_cast<uint32_t>(memtrace_symbolizer_test::kReturnAddressLine));
  EXPECT_LE(f.line, static_cast<uint32_t>(memtrace_symbolizer_test::kReturnAddressLine + 2));
  // Cached: the same object comes back.
  EXPECT_EQ(&symbolizer.Resolve(pc), &f);
}

// A pc in code the compiler inlined: the frame is its function at the line that called
// the inlined one, and the inlined function follows at its own line.
TEST(SymbolizerTest, InlinedFunctionsAreNamedAtTheirOwnLines) {
  Symbolizer symbolizer;
  for (const CaptureRecord& m : SelfExecutableModules()) symbolizer.AddModule(m);
  const uint64_t pc = memtrace_inline_test::Outer();
  const SymbolizedFrame& f = symbolizer.Resolve(pc);
  EXPECT_EQ(f.function, "memtrace_inline_test::Outer()");
  EXPECT_TRUE(EndsWith(f.file, "inline_frames.cc")) << f.file;
  EXPECT_EQ(f.line, static_cast<uint32_t>(memtrace_inline_test::kInlinedCallLine));
  // Innermost first: InnerInlined() at its call of Leaf(), then Inlined() at its call of
  // InnerInlined().
  ASSERT_EQ(f.inlined.size(), 2u);
  EXPECT_EQ(f.inlined[0].function, "memtrace_inline_test::InnerInlined()");
  EXPECT_TRUE(EndsWith(f.inlined[0].file, "inline_frames.cc")) << f.inlined[0].file;
  EXPECT_EQ(f.inlined[0].line, static_cast<uint32_t>(memtrace_inline_test::kLeafCallLine));
  EXPECT_EQ(f.inlined[1].function, "memtrace_inline_test::Inlined()");
  EXPECT_EQ(f.inlined[1].line, static_cast<uint32_t>(memtrace_inline_test::kInnerCallLine));
  EXPECT_EQ(symbolizer.Describe(pc),
            "memtrace_inline_test::Outer() (" + f.file + ":" +
                std::to_string(memtrace_inline_test::kInlinedCallLine) + ")");

  // A pc where nothing was inlined has no inlined functions.
  EXPECT_TRUE(symbolizer.Resolve(memtrace_symbolizer_test::KnownCaller()).inlined.empty());
}

// A pc one byte into libc's own `name`, not a sanitizer's interceptor of the same name.
uint64_t InLibc(const char* name) {
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  if (libc == nullptr) return 0;
  const uint64_t pc = reinterpret_cast<uint64_t>(dlsym(libc, name)) + 1;
  dlclose(libc);
  return pc;
}

TEST(SymbolizerTest, SharedLibraryWithoutDebugInfoUsesItsSymbolTable) {
  Symbolizer symbolizer;
  for (const CaptureRecord& m : SelfExecutableModules()) symbolizer.AddModule(m);
  const SymbolizedFrame& f = symbolizer.Resolve(InLibc("abort"));
  EXPECT_EQ(f.function, "abort");
  EXPECT_NE(f.module.find("libc.so"), std::string::npos) << f.module;
}

// glibc's separate debug file (libc6-dbg, which tools/setup installs) names functions with
// their versions ("__libc_start_main@@GLIBC_2.34"); a frame is named by the function
// alone. (Without the debug file the name comes from libc's dynamic symbols, unversioned.)
TEST(SymbolizerTest, NamesWithoutTheSymbolsVersion) {
  Symbolizer symbolizer;
  for (const CaptureRecord& m : SelfExecutableModules()) symbolizer.AddModule(m);
  const SymbolizedFrame& f = symbolizer.Resolve(InLibc("__libc_start_main"));
  EXPECT_EQ(f.function, "__libc_start_main")
      << "debug info " << (f.file.empty() ? "absent" : f.file);
}

TEST(SymbolizerTest, PcOutsideEveryModuleIsUnknown) {
  Symbolizer symbolizer;
  for (const CaptureRecord& m : SelfExecutableModules()) symbolizer.AddModule(m);
  const SymbolizedFrame& f = symbolizer.Resolve(0x10);
  EXPECT_EQ(f.function, "??");
  EXPECT_EQ(f.module, "");
  EXPECT_EQ(symbolizer.Describe(0x10), "?? (0x10)");
  // Site 0 is no call site at all (a block found allocated before tracing started).
  EXPECT_EQ(symbolizer.Describe(0), kNoCallSite);
  // The bucket of sites beyond the capture's site capacity has a name, not "??".
  EXPECT_EQ(symbolizer.Describe(kOtherSitesAddress), kOtherSites);
}

TEST(SymbolizerTest, MissingFileGivesModuleAndFileOffset) {
  Symbolizer symbolizer;
  CaptureRecord m;
  m.type = LineType::kModule;
  m.path = "/nonexistent/libgone.so";
  m.start = 0x7f0000001000;
  m.end = 0x7f0000003000;
  m.offset = 0x2000;
  symbolizer.AddModule(m);
  const SymbolizedFrame& f = symbolizer.Resolve(0x7f0000001100);
  EXPECT_EQ(f.function, "??");
  EXPECT_EQ(f.module, "/nonexistent/libgone.so");
  EXPECT_EQ(f.module_offset, 0x2100u);
  EXPECT_EQ(symbolizer.Describe(0x7f0000001100), "?? (/nonexistent/libgone.so+0x2100)");
  EXPECT_EQ(symbolizer.Describe(0x7f0000003000), "?? (0x7f0000003000)");  // end excluded
}

TEST(SymbolizerTest, BuildIdMismatchIsTreatedAsMissing) {
  Symbolizer symbolizer;
  for (CaptureRecord m : SelfExecutableModules()) {
    m.build_id = "00112233445566778899aabbccddeeff00112233";
    symbolizer.AddModule(m);
  }
  const uint64_t pc = memtrace_symbolizer_test::KnownCaller();
  const SymbolizedFrame& f = symbolizer.Resolve(pc);
  EXPECT_EQ(f.function, "??");
  EXPECT_FALSE(f.module.empty());
  EXPECT_EQ(f.file, "");
}

// Every module whose frames came out "??" is listed once, with the reason; a frame that
// resolves, or the same pc resolved again, adds nothing.
TEST(SymbolizerTest, UnresolvedModulesAreListedWithTheReason) {
  Symbolizer symbolizer;
  for (const CaptureRecord& m : SelfExecutableModules()) symbolizer.AddModule(m);
  EXPECT_NE(symbolizer.Resolve(memtrace_symbolizer_test::KnownCaller()).function, "??");
  EXPECT_TRUE(symbolizer.Unresolved().empty()) << "a frame that resolved is not listed";

  symbolizer.AddModule(ModuleLine("/nonexistent/libgone.so", 0x7f0000001000, 0x7f0000003000));
  // A second mapping of the same file.
  symbolizer.AddModule(
      ModuleLine("/nonexistent/libgone.so", 0x7f0000003000, 0x7f0000004000, 0x2000));
  // /usr/bin/true (coreutils, stripped): an ELF file whose .dynsym names only what it
  // imports, so no pc in it has a name. Mapped whole at 0x500000 from offset 0.
  symbolizer.AddModule(ModuleLine("/usr/bin/true", 0x500000, 0x510000));

  symbolizer.Resolve(0x7f0000001100);
  symbolizer.Resolve(0x7f0000001100);  // cached: counted once
  symbolizer.Resolve(0x7f0000003100);
  symbolizer.Resolve(0x502345);
  const std::vector<UnresolvedModule> unresolved = symbolizer.Unresolved();
  ASSERT_EQ(unresolved.size(), 2u);
  EXPECT_EQ(unresolved[0].path, "/nonexistent/libgone.so");
  EXPECT_EQ(unresolved[0].why, MissingSymbols::kNoFile);
  EXPECT_EQ(unresolved[0].frames, 2u) << "two pcs, in two mappings of one file";
  EXPECT_EQ(unresolved[1].path, "/usr/bin/true");
  EXPECT_EQ(unresolved[1].why, MissingSymbols::kNoSymbols);
  EXPECT_EQ(unresolved[1].frames, 1u);
}

TEST(SymbolizerTest, AnotherBuildAtThePathIsNamedAsSuch) {
  Symbolizer symbolizer;
  for (CaptureRecord m : SelfExecutableModules()) {
    m.build_id = "00112233445566778899aabbccddeeff00112233";
    symbolizer.AddModule(m);
  }
  symbolizer.Resolve(memtrace_symbolizer_test::KnownCaller());
  const std::vector<UnresolvedModule> unresolved = symbolizer.Unresolved();
  ASSERT_EQ(unresolved.size(), 1u);
  EXPECT_EQ(unresolved[0].why, MissingSymbols::kOtherBuild);
  EXPECT_EQ(unresolved[0].build_id, "00112233445566778899aabbccddeeff00112233");
}

TEST(SymbolizerTest, DebugFileIsFoundUnderTheBuildIdDirectory) {
  EXPECT_EQ(DebugFileForBuildId("5221b80bd99650e3e55370b0e24f4b4dbe81264f"),
            "/usr/lib/debug/.build-id/52/21b80bd99650e3e55370b0e24f4b4dbe81264f.debug");
  EXPECT_EQ(DebugFileForBuildId(""), "");
}

TEST(SymbolizerTest, FileThatIsNotElfGivesModuleOffset) {
  const std::string path = std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp") +
                           "/not_elf.so";
  FILE* out = fopen(path.c_str(), "w");
  ASSERT_NE(out, nullptr);
  fputs("this is not an ELF file\n", out);
  fclose(out);
  Symbolizer symbolizer;
  CaptureRecord m;
  m.type = LineType::kModule;
  m.path = path;
  m.start = 0x1000;
  m.end = 0x2000;
  symbolizer.AddModule(m);
  EXPECT_EQ(symbolizer.Describe(0x1010), "?? (" + path + "+0x10)");
}

}  // namespace
}  // namespace memtrace
