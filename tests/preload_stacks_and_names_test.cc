// Copyright 2026 The memtrace Authors.
//
// The stacks the interposer (preload/) records in a real program (tests/preload_target.cc)
// and the names `memtrace top` and `diff` give them: the call chain by frame pointers and
// by DWARF, sites named after the caller of operator new, stacks that share a site name,
// inlined functions, standard library frames passed over, call sites in an unloaded
// plugin, frames named from debuginfod or said to be unnamed, and the program's own name
// and path (one that is not UTF-8; a diff of two programs).

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/fake_debuginfod.h"
#include "tests/preload_test_support.h"
#include "tests/run_program.h"
#include "tests/std_container_frames.h"
#include "tests/test_paths.h"

namespace memtrace {
namespace {

const std::string& Plugin() {
  static const std::string path = Runfile("tests/libplugin.so");
  return path;
}

// A plugin loaded, used and unloaded: the capture's module map still lists it (the
// interposer notes the modules before each dlclose()), so the block it allocated is
// attributed to its function, not to "??".
TEST_F(PreloadTest, CallSitesInAnUnloadedPluginStillSymbolize) {
  const std::string capture = TempDir() + "/plugin.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "plugin", Plugin()}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  ExpectCompleteAndMatching(capture, run.out);
  EXPECT_NE(ReadFile(capture).find("libplugin.so"), std::string::npos)
      << "the module map lists the plugin";
  const Result top = RunProgram({Cli(), "top", capture}, {});
  ASSERT_EQ(top.status, 0) << top.err;
  EXPECT_NE(top.out.find("memtrace_test_plugin_alloc"), std::string::npos) << top.out;
}

// A stripped program (Debian's ls: no .symtab, no debug information installed) has call
// sites that read "??"; `top` says under its table which file lacks symbols and where its
// debug information would be found, and the test program's own frames (built with -g) are
// not in that list.
TEST_F(PreloadTest, TopSaysWhereTheSymbolsOfUnnamedFramesWouldBe) {
  const std::string capture = TempDir() + "/stripped_ls.mtb";
  const Result run =
      RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", "/bin/ls", "/"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  const Result top = RunProgram({Cli(), "top", capture}, {});
  ASSERT_EQ(top.status, 0) << top.err;
  const size_t note = top.out.find("frames without a name (\"??\")");
  if (note == std::string::npos && access("/usr/lib/debug/.build-id", F_OK) == 0 &&
      top.out.find("?? (/usr/bin/ls") == std::string::npos) {
    GTEST_SKIP() << "this machine has debug information installed that names ls's frames";
  }
  ASSERT_NE(note, std::string::npos) << top.out;
  const std::string listed = top.out.substr(note);
  EXPECT_NE(listed.find("/usr/bin/ls ("), std::string::npos) << listed;
  EXPECT_NE(listed.find("/usr/lib/debug/.build-id/"), std::string::npos) << listed;
  // The same for scripts: top --json and peak --json carry the list.
  for (const char* command : {"top", "peak"}) {
    const Result json = RunProgram({Cli(), command, "--json", capture}, {});
    ASSERT_EQ(json.status, 0) << json.err;
    const size_t unresolved = json.out.find("\"unresolved\":[{");
    ASSERT_NE(unresolved, std::string::npos) << command << ": " << json.out;
    EXPECT_NE(json.out.find("{\"path\":\"/usr/bin/ls\",\"why\":\"no_symbols\"", unresolved),
              std::string::npos)
        << command << ": " << json.out;
  }

  const std::string own = TempDir() + "/stack_symbols.mtb";
  ASSERT_EQ(RunProgram({Cli(), "run", "--quiet", "--output=" + own, "--", Target(), "stack"}, {})
                .status,
            0);
  const Result own_top = RunProgram({Cli(), "top", own}, {});
  ASSERT_EQ(own_top.status, 0) << own_top.err;
  const size_t own_note = own_top.out.find("frames without a name");
  if (own_note != std::string::npos) {
    EXPECT_EQ(own_top.out.find(Target(), own_note), std::string::npos) << own_top.out;
  }
}

// A call site in a library stripped of every symbol reads "??" until a debuginfod server
// gives its debug information: `top` says where it would come from, asks the server
// DEBUGINFOD_URLS names (announcing that on stderr), and names the function.
TEST_F(PreloadTest, TopNamesFramesWithDebugInformationFromDebuginfod) {
  const std::string library = Runfile("tests/debuginfod_fixture/stripped.so");
  const std::string capture = TempDir() + "/debuginfod.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "plugin", library}, {});
  ASSERT_EQ(run.status, 0) << run.err;

  const Result unnamed = RunProgram({Cli(), "top", capture}, {});
  ASSERT_EQ(unnamed.status, 0) << unnamed.err;
  EXPECT_EQ(unnamed.out.find("memtrace_fixture::Allocate"), std::string::npos) << unnamed.out;
  const size_t note = unnamed.out.find("debuginfod_fixture/stripped.so (");
  ASSERT_NE(note, std::string::npos) << unnamed.out;
  EXPECT_NE(unnamed.out.find("or set DEBUGINFOD_URLS to fetch its debug information", note),
            std::string::npos)
      << unnamed.out;

  FakeDebuginfod server;
  ASSERT_FALSE(server.url().empty());
  const std::vector<std::string> env = {"DEBUGINFOD_URLS=" + server.url(),
                                        "DEBUGINFOD_CACHE_PATH=" + TempDir() + "/debuginfod",
                                        "no_proxy=127.0.0.1"};
  // A server without it: the note says so.
  const Result missing = RunProgram({Cli(), "top", capture}, env);
  ASSERT_EQ(missing.status, 0) << missing.err;
  EXPECT_NE(missing.out.find("debuginfod: no server in DEBUGINFOD_URLS (" + server.url() +
                             ") has the debug information"),
            std::string::npos)
      << missing.out;
  EXPECT_NE(missing.err.find("memtrace: asking debuginfod for the debug information of "),
            std::string::npos)
      << missing.err;

  // The libdebuginfod client keeps a "not found" for a while: another cache for the rest.
  std::vector<std::string> served = env;
  served[1] += "-served";
  const std::string build_id = BuildIdOf(library);
  ASSERT_FALSE(build_id.empty());
  server.Serve(build_id, "debuginfo", Runfile("tests/debuginfod_fixture/debug"));
  const Result named = RunProgram({Cli(), "top", capture}, served);
  ASSERT_EQ(named.status, 0) << named.err;
  EXPECT_NE(named.out.find("memtrace_fixture::Allocate(unsigned long) ("), std::string::npos)
      << named.out;
  EXPECT_NE(named.out.find("debuginfod_fixture.cc:"), std::string::npos) << named.out;
  EXPECT_EQ(named.out.find("debuginfod_fixture/stripped.so ("), std::string::npos)
      << named.out;
}

// Two call stacks that reach malloc through one function read the same in a listing:
// `top`, `peak` and the report add them up as one row marked [2 stacks], so the function
// ranks by all it allocated, and `top --stacks` shows each stack with its own counts
// (analysis/site_groups.h).
TEST_F(PreloadTest, StacksThatShareASiteNameAreOneRow) {
  const std::string capture = TempDir() + "/two_callers.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "two-callers"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  ExpectCompleteAndMatching(capture, run.out);
  auto rows_naming = [](const std::string& out, const std::string& name) {
    std::vector<std::string> rows;
    for (absl::string_view line : absl::StrSplit(out, '\n')) {
      if (!absl::StartsWith(line, "    #") && !absl::StartsWith(line, "  stack ") &&
          line.find(name) != absl::string_view::npos) {
        rows.emplace_back(line);
      }
    }
    return rows;
  };
  const Result top = RunProgram({Cli(), "top", "--stacks", capture}, {});
  ASSERT_EQ(top.status, 0) << top.err;
  const std::vector<std::string> rows = rows_naming(top.out, "::Inner(");
  ASSERT_EQ(rows.size(), 1u) << top.out;
  // allocated, allocs, calls, live, blocks: the five blocks of 50,023 bytes, each one
  // malloc, all still live.
  const std::vector<std::string> cells = absl::StrSplit(rows[0], ' ', absl::SkipEmpty());
  ASSERT_GE(cells.size(), 7u) << rows[0];
  EXPECT_EQ(cells[0] + " " + cells[1], "244.3 KiB") << rows[0];
  EXPECT_EQ(cells[2], "5") << rows[0];
  EXPECT_EQ(cells[3], "5") << rows[0];
  EXPECT_EQ(cells[6], "5") << rows[0];
  EXPECT_TRUE(absl::EndsWith(rows[0], " [2 stacks]")) << rows[0];
  // Each stack with its own counts, the larger first, and its own caller.
  const size_t left = top.out.find("  stack 1 of 2: 146.6 KiB in 3 allocations");
  const size_t right = top.out.find("  stack 2 of 2: 97.7 KiB in 2 allocations");
  ASSERT_NE(left, std::string::npos) << top.out;
  ASSERT_NE(right, std::string::npos) << top.out;
  const size_t from_left = top.out.find("::FromLeft(", left);
  const size_t from_right = top.out.find("::FromRight(", left);
  EXPECT_LT(from_left, right) << top.out;
  EXPECT_GT(from_right, right) << top.out;

  // --json: one row with both stacks' site ids and counts.
  const Result json = RunProgram({Cli(), "top", "--json", capture}, {});
  ASSERT_EQ(json.status, 0) << json.err;
  const size_t row = json.out.find("::Inner(");
  ASSERT_NE(row, std::string::npos) << json.out;
  const std::string from_row = json.out.substr(row);
  EXPECT_EQ(Field(from_row, "allocated_count"), "5") << from_row;
  const size_t stacks = from_row.find("\"stacks\":[");
  ASSERT_NE(stacks, std::string::npos) << from_row;
  EXPECT_EQ(Field(from_row.substr(stacks), "allocated_count"), "3") << from_row;
  const size_t second = from_row.find("},{\"site\":", stacks);
  ASSERT_NE(second, std::string::npos) << from_row;
  EXPECT_EQ(Field(from_row.substr(second), "allocated_count"), "2") << from_row;

  // peak: what held the high-water moment, by site, one row.
  const Result peak = RunProgram({Cli(), "peak", capture}, {});
  ASSERT_EQ(peak.status, 0) << peak.err;
  const std::vector<std::string> peak_rows = rows_naming(peak.out, "::Inner(");
  ASSERT_EQ(peak_rows.size(), 2u) << peak.out;  // the global list and the one scope's
  for (const std::string& r : peak_rows) {
    EXPECT_TRUE(absl::StartsWith(absl::StripLeadingAsciiWhitespace(r), "244.3 KiB")) << r;
    EXPECT_TRUE(absl::EndsWith(r, " [2 stacks]")) << r;
  }

  // The report's tables name it once, the same way.
  const std::string page = TempDir() + "/two_callers.html";
  const Result report = RunProgram({Cli(), "report", capture, "-o", page}, {});
  ASSERT_EQ(report.status, 0) << report.err;
  const std::string html = ReadFile(page);
  const std::string label = rows[0].substr(rows[0].find("(anonymous namespace)::Inner("));
  size_t named = 0;
  for (size_t at = html.find(label); at != std::string::npos; at = html.find(label, at + 1)) {
    ++named;
  }
  EXPECT_EQ(named, 3u) << "top sites, leaks and the peak's sites: " << label;
}

// A block allocated in code the compiler inlined: the inlined function, which called
// malloc, names the site at its own line, and `top --stacks` lists it above the function
// it was inlined into, that one at the line that called it, as gdb's backtrace does.
TEST_F(PreloadTest, InlinedFunctionsAreListedInStacks) {
  const std::string capture = TempDir() + "/inlined.mtb";
  const Result run =
      RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "inlined"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  const Result top = RunProgram({Cli(), "top", "--stacks", "--by=live", capture}, {});
  ASSERT_EQ(top.status, 0) << top.err;
  const size_t row = top.out.find(
      "interposer memtrace_inline_test::InlinedAllocate(unsigned long) (tests/inline_frames.cc:");
  ASSERT_NE(row, std::string::npos) << top.out;
  const size_t inlined =
      top.out.find("#0  memtrace_inline_test::InlinedAllocate(unsigned long) (", row);
  ASSERT_NE(inlined, std::string::npos) << top.out;
  const std::string inlined_line = top.out.substr(inlined, top.out.find('\n', inlined) - inlined);
  EXPECT_NE(inlined_line.find("inline_frames.cc:"), std::string::npos) << inlined_line;
  EXPECT_NE(inlined_line.find(") [inlined]"), std::string::npos) << inlined_line;
  const size_t own = top.out.find("#0  memtrace_inline_test::AllocateThroughInlined(", inlined);
  EXPECT_NE(own, std::string::npos) << top.out;

  // Named as an allocator function, the inlined function is passed over like any other:
  // the function it was inlined into names the site, at the line that called it.
  const Result wrapped = RunProgram(
      {Cli(), "top", "--allocator=memtrace_inline_test::InlinedAllocate*", capture}, {});
  ASSERT_EQ(wrapped.status, 0) << wrapped.err;
  EXPECT_NE(wrapped.out.find("memtrace_inline_test::AllocateThroughInlined(unsigned long) "
                             "(tests/inline_frames.cc:"),
            std::string::npos)
      << wrapped.out;
  EXPECT_NE(wrapped.out.find(") via memtrace_inline_test::InlinedAllocate(unsigned long)"),
            std::string::npos)
      << wrapped.out;

  const Result json = RunProgram({Cli(), "top", "--stacks", "--json", capture}, {});
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_NE(json.out.find("\"inlined\":[{\"function\":\"memtrace_inline_test::InlinedAllocate("
                          "unsigned long)\",\"file\":\""),
            std::string::npos)
      << json.out;

  // The folded export and the report's flame graph have it as a frame of its own, called
  // by the function it was inlined into.
  const Result folded = RunProgram({Cli(), "export", "--format=folded", capture}, {});
  ASSERT_EQ(folded.status, 0) << folded.err;
  EXPECT_NE(folded.out.find(";memtrace_inline_test::AllocateThroughInlined(unsigned long);"
                            "memtrace_inline_test::InlinedAllocate(unsigned long) 50039\n"),
            std::string::npos)
      << folded.out;
  const std::string page = TempDir() + "/inlined.html";
  const Result report = RunProgram({Cli(), "report", "-o", page, capture}, {});
  ASSERT_EQ(report.status, 0) << report.err;
  EXPECT_NE(ReadFile(page).find("\"memtrace_inline_test::InlinedAllocate(unsigned long) ("),
            std::string::npos);
}

// A C++ program allocates mostly through container libraries. Its sites are named after
// the program's functions that called the library, by the library function they called
// (its short name), not after std::_Vector_base::_M_allocate or std::allocator_traits.
// The fixture is built at -O2 with -g2, so push_back and make_shared are inlined frames.
TEST_F(PreloadTest, StandardLibraryFramesArePassedOverInSiteNames) {
  const std::string capture = TempDir() + "/std_containers.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "std-containers"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  ASSERT_NE(run.out.find("particles=1000 shared=1 map=100 hash_map=1000"), std::string::npos)
      << run.out;
  const Result top = RunProgram({Cli(), "top", "--limit=50", capture}, {});
  ASSERT_EQ(top.status, 0) << top.err;
  // The site's row: every allocation of that function, and nothing of std's own name.
  const auto row_of = [&](const std::string& label) { return RowOf(top.out, label); };
  const std::string vector_row = row_of(
      absl::StrCat("memtrace_std_test::GrowParticles(unsigned long) (tests/std_container_frames.cc:",
                   memtrace_std_test::kPushBackLine, ") via std::vector::push_back"));
  ASSERT_FALSE(vector_row.empty()) << top.out;
  // 1,000 pushed one at a time: capacities 1, 2, 4, ... 1024, eleven blocks.
  EXPECT_TRUE(absl::StrContains(vector_row, " 11 ")) << vector_row;
  EXPECT_FALSE(row_of(absl::StrCat("memtrace_std_test::MakeParticle() (tests/std_container_",
                                   "frames.cc:", memtrace_std_test::kMakeSharedLine,
                                   ") via std::make_shared"))
                   .empty())
      << top.out;
  const std::string map_row = row_of(
      absl::StrCat("memtrace_std_test::FillMap(int) (tests/std_container_frames.cc:",
                   memtrace_std_test::kMapInsertLine, ") via std::map::operator[]"));
  ASSERT_FALSE(map_row.empty()) << top.out;
  EXPECT_TRUE(absl::StrContains(map_row, " 100 ")) << map_row;
  // abseil's containers are passed over the same way.
  EXPECT_FALSE(RowOf(top.out, absl::StrCat("memtrace_std_test::FillHashMap(int) (tests/std_",
                                           "container_frames.cc:",
                                           memtrace_std_test::kHashMapInsertLine, ") via absl::"))
                   .empty())
      << top.out;
  EXPECT_FALSE(absl::StrContains(top.out, "_M_allocate")) << top.out;
  EXPECT_FALSE(absl::StrContains(top.out, "allocator_traits")) << top.out;

  // `top --stacks` keeps every frame, the library's too.
  const Result stacks = RunProgram({Cli(), "top", "--stacks", "--limit=50", capture}, {});
  ASSERT_EQ(stacks.status, 0) << stacks.err;
  EXPECT_TRUE(absl::StrContains(stacks.out, "_M_realloc_insert")) << stacks.out;
}

// `memtrace diff` of captures of two different programs says so (by the headers'
// command lines); of two runs of one program it does not.
TEST_F(PreloadTest, ADiffOfTwoProgramsSaysSo) {
  const std::string early = TempDir() + "/diff_early.mtb";
  const std::string early2 = TempDir() + "/diff_early2.mtb";
  const std::string other = TempDir() + "/diff_other.mtb";
  for (const std::string& capture : {early, early2}) {
    const Result run = RunProgram(
        {Cli(), "run", "--quiet", "--output=" + capture, "--", EarlyAllocations()}, {});
    ASSERT_EQ(run.status, 0) << run.err;
  }
  const Result run =
      RunProgram({Cli(), "run", "--quiet", "--output=" + other, "--", Target(), "new"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string target_name = Target().substr(Target().rfind('/') + 1);
  const Result two = RunProgram({Cli(), "diff", early, other}, {});
  ASSERT_EQ(two.status, 0) << two.err;
  EXPECT_TRUE(absl::StrContains(two.out, "note: these are captures of two programs, "
                                         "'early_allocations' before and '" +
                                             target_name + "' after"))
      << two.out;
  const Result one = RunProgram({Cli(), "diff", early, early2}, {});
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_FALSE(absl::StrContains(one.out, "two programs")) << one.out;
  EXPECT_TRUE(absl::StrContains(one.out, "TOTAL")) << one.out;
}

// A block allocated with new[] is named after the function that called it, not after
// operator new (analysis/allocator_frames.h).
TEST_F(PreloadTest, SitesAreNamedAfterTheCallerOfOperatorNew) {
  const std::string capture = TempDir() + "/new.mtb";
  const Result run =
      RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "new"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  ExpectCompleteAndMatching(capture, run.out);
  const Result top = RunProgram({Cli(), "top", "--by=live", capture}, {});
  ASSERT_EQ(top.status, 0) << top.err;
  const size_t row = top.out.find("MakeMarkerWithNew");
  ASSERT_NE(row, std::string::npos) << top.out;
  const std::string line = top.out.substr(row, top.out.find('\n', row) - row);
  EXPECT_NE(line.find(" via operator new"), std::string::npos) << line;  // new[] tail-calls new

  // The program's own allocator function, named with --allocator: the site is named after
  // its caller.
  const Result own = RunProgram(
      {Cli(), "top", "--by=live", "--allocator=(anonymous namespace)::MakeMarkerWith*", capture},
      {});
  ASSERT_EQ(own.status, 0) << own.err;
  const size_t own_row = own.out.find(" via (anonymous namespace)::MakeMarkerWithNew(");
  ASSERT_NE(own_row, std::string::npos) << own.out;
  const size_t own_start = own.out.rfind('\n', own_row) + 1;
  const std::string own_line = own.out.substr(own_start, own_row - own_start);
  EXPECT_NE(own_line.find(" (anonymous namespace)::NewMarker() ("), std::string::npos)
      << own_line;
  const Result bad = RunProgram({Cli(), "top", "--allocator=Make*Marker", capture}, {});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("'Make*Marker' is not a function name"), std::string::npos) << bad.err;

  // The report names sites the same way.
  const std::string page = TempDir() + "/new.html";
  const Result report = RunProgram({Cli(), "report", capture, "-o", page,
                                    "--allocator=(anonymous namespace)::MakeMarkerWith*"},
                                   {});
  ASSERT_EQ(report.status, 0) << report.err;
  const std::string html = ReadFile(page);
  // The whole label: the flame graph has the caller's frame either way.
  const size_t label_start = own.out.find("(anonymous namespace)::NewMarker()", own_start);
  const std::string label =
      own.out.substr(label_start, own.out.find('\n', own_row) - label_start);
  EXPECT_NE(html.find(label), std::string::npos) << label;
  const Result bad_report =
      RunProgram({Cli(), "report", capture, "-o", page, "--allocator=,"}, {});
  EXPECT_EQ(bad_report.status, 2);
  EXPECT_NE(bad_report.err.find("--allocator: '' is not a function name"), std::string::npos)
      << bad_report.err;
}

// A program whose path is not UTF-8 (a Latin-1 directory name): its module line and
// command line hold U+FFFD where the byte was (the byte itself would make every command
// refuse the capture: "not valid UTF-8").
TEST_F(PreloadTest, AProgramAtAPathThatIsNotUtf8GivesAReadableCapture) {
  const std::string dir = TempDir() + "/latin\xE9";
  mkdir(dir.c_str(), 0755);
  const std::string program = dir + "/target";
  ASSERT_EQ(RunProgram({"/bin/cp", Target(), program}, {}).status, 0);
  const std::string capture = TempDir() + "/latin.mtb";
  const Result run = RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", program,
                                 "stack"},
                                {});
  ASSERT_EQ(run.status, 0) << run.err;
  const Result verify = RunProgram({Cli(), "verify", capture}, {});
  EXPECT_EQ(verify.status, 0) << verify.out << verify.err;
  absl::Status st;
  const Replay r = ReplayCapture(capture, &st);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_NE(r.header.find("/latin\xEF\xBF\xBD/target"), std::string::npos) << r.header;
}

void CheckStack(const std::string& unwind) {
  const std::string capture = TempDir() + "/stack_" + unwind + ".mtb";
  const Result run = RunProgram({Cli(), "run", "--quiet", "--unwind=" + unwind, "--depth=8",
                          "--output=" + capture, "--", Target(), "stack"},
                         {});
  ASSERT_EQ(run.status, 0) << run.err;
  uint64_t inner = 0, middle = 0, outer = 0;
  ASSERT_EQ(sscanf(run.out.c_str(), "inner=%lx middle=%lx outer=%lx", &inner, &middle, &outer),
            3)
      << run.out;
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(r.marker_allocs.size(), 1u);
  const auto site = r.sites.find(r.marker_allocs[0].site);
  ASSERT_NE(site, r.sites.end());
  const std::vector<uint64_t>& frames = site->second.frames;
  ASSERT_GE(frames.size(), 3u) << unwind;
  // Return addresses lie inside the calling functions, a little past their starts.
  auto inside = [](uint64_t pc, uint64_t fn) { return pc > fn && pc < fn + 256; };
  EXPECT_TRUE(inside(frames[0], inner)) << unwind;
  EXPECT_TRUE(inside(frames[1], middle)) << unwind;
  EXPECT_TRUE(inside(frames[2], outer)) << unwind;
}

TEST_F(PreloadTest, FramePointerStacksFindTheCallChain) { CheckStack("fp"); }

TEST_F(PreloadTest, DwarfStacksFindTheCallChain) { CheckStack("dwarf"); }

}  // namespace
}  // namespace memtrace
