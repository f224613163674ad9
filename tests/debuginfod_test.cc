// Copyright 2026 The memtrace Authors.
//
// The Symbolizer with debuginfod servers (analysis/debuginfod.h): a library stripped of
// every symbol, loaded into this process, whose debug information and file a fake server
// on 127.0.0.1 (fake_debuginfod.h) hands out by build id. Each test names its own client
// cache, so no answer of one test is another's.

#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "analysis/debuginfod.h"
#include "analysis/symbolizer.h"
#include "gtest/gtest.h"
#include "tests/fake_debuginfod.h"
#include "tests/self_modules.h"
#include "tests/test_paths.h"

namespace memtrace {
namespace {

// A return address one byte into the fixture's hidden Inner(), in the copy of the
// library at `path` (loaded once per path).
uint64_t InnerIn(const std::string& path) {
  void* library = dlopen(path.c_str(), RTLD_NOW);
  if (library == nullptr) return 0;
  auto inner = reinterpret_cast<const void* (*)()>(dlsym(library, "DebuginfodFixtureInner"));
  return inner != nullptr ? reinterpret_cast<uint64_t>(inner()) + 1 : 0;
}

// This process's mapping that holds `pc` (a fixture's), as a capture would list it had
// the library been at `path`: with the fixture's build id. end 0 when no mapping has pc.
CaptureRecord MappingOf(uint64_t pc, const std::string& path) {
  for (CaptureRecord m : SelfExecutableModules()) {
    if (pc < m.start || pc >= m.end) continue;
    m.build_id = BuildIdOf(m.path);
    m.path = path;
    return m;
  }
  return CaptureRecord{};
}

constexpr char kInner[] = "memtrace_fixture::Inner(int)";

class DebuginfodTest : public ::testing::Test {
 protected:
  void SetUp() override {
    stripped_ = Runfile("tests/debuginfod_fixture/stripped.so");
    debug_ = Runfile("tests/debuginfod_fixture/debug");
    build_id_ = BuildIdOf(stripped_);
    ASSERT_EQ(build_id_.size(), 40u) << stripped_ << " has no build id";
    ASSERT_EQ(BuildIdOf(debug_), build_id_);
    ASSERT_FALSE(server_.url().empty()) << "the test server could not listen";
    // The test's own client cache, and nothing between the client and 127.0.0.1.
    const std::string cache =
        TempDir() + "/cache-" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    setenv("DEBUGINFOD_CACHE_PATH", cache.c_str(), 1);
    setenv("DEBUGINFOD_URLS", server_.url().c_str(), 1);
    setenv("no_proxy", "127.0.0.1", 1);
    progress_ = open_memstream(&progress_text_, &progress_size_);
  }
  void TearDown() override {
    unsetenv("DEBUGINFOD_URLS");
    if (progress_ != nullptr) fclose(progress_);
    free(progress_text_);
  }
  // The server has the fixture's file and its debug information.
  void ServeFileAndDebugInformation() {
    server_.Serve(build_id_, "executable", stripped_);
    server_.Serve(build_id_, "debuginfo", debug_);
  }
  // What the symbolizers announced so far.
  std::string Progress() {
    fflush(progress_);
    return std::string(progress_text_, progress_size_);
  }
  // A symbolizer given this process's mappings, announcing into Progress().
  std::unique_ptr<Symbolizer> SelfSymbolizer() {
    auto symbolizer = std::make_unique<Symbolizer>();
    symbolizer->set_progress(progress_);
    for (const CaptureRecord& m : SelfExecutableModules()) symbolizer->AddModule(m);
    return symbolizer;
  }

  FakeDebuginfod server_;
  std::string stripped_, debug_, build_id_;
  std::FILE* progress_ = nullptr;
  char* progress_text_ = nullptr;
  size_t progress_size_ = 0;
};

TEST_F(DebuginfodTest, StrippedLibraryIsNamedByTheDebugInformationAServerGives) {
  server_.Serve(build_id_, "debuginfo", debug_);
  const uint64_t pc = InnerIn(stripped_);
  ASSERT_NE(pc, 0u) << dlerror();
  auto symbolizer = SelfSymbolizer();
  const SymbolizedFrame& f = symbolizer->Resolve(pc);
  EXPECT_EQ(f.function, kInner);
  EXPECT_NE(f.file.find("debuginfod_fixture.cc"), std::string::npos) << f.file;
  EXPECT_GT(f.line, 0u);
  const std::vector<std::string> asked = server_.requests();
  EXPECT_EQ(asked, std::vector<std::string>{"/buildid/" + build_id_ + "/debuginfo"});
  EXPECT_NE(Progress().find("memtrace: asking debuginfod for the debug information of "),
            std::string::npos)
      << Progress();
  EXPECT_NE(Progress().find(build_id_), std::string::npos) << Progress();

  // A second symbolizer in this process gets the answer without asking again.
  EXPECT_EQ(SelfSymbolizer()->Resolve(pc).function, kInner);
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(DebuginfodTest, WithoutServersNothingIsAsked) {
  server_.Serve(build_id_, "debuginfo", debug_);
  unsetenv("DEBUGINFOD_URLS");
  const uint64_t pc = InnerIn(stripped_);
  ASSERT_NE(pc, 0u) << dlerror();
  auto symbolizer = SelfSymbolizer();
  EXPECT_EQ(symbolizer->Resolve(pc).function, "??");
  const std::vector<UnresolvedModule> unresolved = symbolizer->Unresolved();
  ASSERT_EQ(unresolved.size(), 1u);
  EXPECT_EQ(unresolved[0].why, MissingSymbols::kNoSymbols);
  EXPECT_EQ(unresolved[0].debuginfod, "");
  EXPECT_TRUE(server_.requests().empty());
  EXPECT_EQ(Progress(), "");
}

TEST_F(DebuginfodTest, AServerWithoutItIsTheReasonGiven) {
  const uint64_t pc = InnerIn(stripped_);
  ASSERT_NE(pc, 0u) << dlerror();
  auto symbolizer = SelfSymbolizer();
  EXPECT_EQ(symbolizer->Resolve(pc).function, "??");
  const std::vector<UnresolvedModule> unresolved = symbolizer->Unresolved();
  ASSERT_EQ(unresolved.size(), 1u);
  EXPECT_EQ(unresolved[0].debuginfod, "no server in DEBUGINFOD_URLS (" + server_.url() +
                                          ") has the debug information");
  EXPECT_EQ(server_.requests(), std::vector<std::string>{"/buildid/" + build_id_ + "/debuginfo"});
  EXPECT_NE(UnresolvedJson(unresolved).find("\"debuginfod\":\"no server in DEBUGINFOD_URLS"),
            std::string::npos);
}

TEST_F(DebuginfodTest, AServerThatCannotBeReachedIsTheReasonGiven) {
  // A port nobody listens on: bound, then closed.
  const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(s);
  const std::string closed = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  setenv("DEBUGINFOD_URLS", closed.c_str(), 1);

  const uint64_t pc = InnerIn(stripped_);
  ASSERT_NE(pc, 0u) << dlerror();
  auto symbolizer = SelfSymbolizer();
  EXPECT_EQ(symbolizer->Resolve(pc).function, "??");
  const std::vector<UnresolvedModule> unresolved = symbolizer->Unresolved();
  ASSERT_EQ(unresolved.size(), 1u);
  const std::string said = "DEBUGINFOD_URLS (" + closed + ") could not be asked: ";
  EXPECT_EQ(unresolved[0].debuginfod.rfind(said, 0), 0u) << unresolved[0].debuginfod;
}

TEST_F(DebuginfodTest, AMissingFileIsFetchedByItsBuildId) {
  ServeFileAndDebugInformation();
  const uint64_t pc = InnerIn(stripped_);
  ASSERT_NE(pc, 0u) << dlerror();
  const CaptureRecord gone = MappingOf(pc, TempDir() + "/no-such-dir/libgone.so");
  ASSERT_NE(gone.end, 0u);
  Symbolizer symbolizer;
  symbolizer.set_progress(progress_);
  symbolizer.AddModule(gone);
  const SymbolizedFrame& f = symbolizer.Resolve(pc);
  EXPECT_EQ(f.function, kInner);
  EXPECT_EQ(f.module, gone.path);
  EXPECT_EQ(server_.requests(),
            (std::vector<std::string>{"/buildid/" + build_id_ + "/executable",
                                      "/buildid/" + build_id_ + "/debuginfo"}));
  EXPECT_NE(Progress().find("memtrace: asking debuginfod for the file of " + gone.path),
            std::string::npos)
      << Progress();
  EXPECT_TRUE(symbolizer.Unresolved().empty());
}

TEST_F(DebuginfodTest, AnotherBuildAtThePathIsReplacedByTheOneThatRan) {
  ServeFileAndDebugInformation();
  const uint64_t pc = InnerIn(stripped_);
  ASSERT_NE(pc, 0u) << dlerror();
  // At the capture's path now: some other ELF file, another build.
  const CaptureRecord moved = MappingOf(pc, Runfile("tests/debuginfod_test"));
  ASSERT_NE(moved.end, 0u);
  ASSERT_NE(BuildIdOf(moved.path), build_id_);
  Symbolizer symbolizer;
  symbolizer.AddModule(moved);
  EXPECT_EQ(symbolizer.Resolve(pc).function, kInner);
  EXPECT_TRUE(symbolizer.Unresolved().empty());
}

TEST_F(DebuginfodTest, AMissingFileNoServerHasKeepsItsReason) {
  const uint64_t pc = InnerIn(stripped_);
  ASSERT_NE(pc, 0u) << dlerror();
  const CaptureRecord gone = MappingOf(pc, TempDir() + "/no-such-dir/libgone.so");
  Symbolizer symbolizer;
  symbolizer.AddModule(gone);
  EXPECT_EQ(symbolizer.Resolve(pc).function, "??");
  const std::vector<UnresolvedModule> unresolved = symbolizer.Unresolved();
  ASSERT_EQ(unresolved.size(), 1u);
  EXPECT_EQ(unresolved[0].why, MissingSymbols::kNoFile);
  EXPECT_EQ(unresolved[0].debuginfod,
            "no server in DEBUGINFOD_URLS (" + server_.url() + ") has the file");
}

// A debug file compressed by dwz shares part of its DWARF with a supplementary file that
// its .gnu_debugaltlink names by build id; that file is asked for too, by its own id.
TEST_F(DebuginfodTest, DwzCompressedDebugInformationGetsItsSupplementaryFile) {
  const std::string library = Runfile("tests/debuginfod_fixture/dwz_stripped.so");
  const std::string common = Runfile("tests/debuginfod_fixture/dwz_common");
  const std::string id = BuildIdOf(library);
  const std::string common_id = BuildIdOf(common);
  ASSERT_FALSE(id.empty());
  ASSERT_FALSE(common_id.empty());
  server_.Serve(id, "debuginfo", Runfile("tests/debuginfod_fixture/dwz_debug"));
  server_.Serve(common_id, "debuginfo", common);
  const uint64_t pc = InnerIn(library);
  ASSERT_NE(pc, 0u) << dlerror();
  auto symbolizer = SelfSymbolizer();
  const SymbolizedFrame& f = symbolizer->Resolve(pc);
  EXPECT_EQ(f.function, kInner);
  EXPECT_NE(f.file.find("debuginfod_fixture.cc"), std::string::npos) << f.file;
  EXPECT_EQ(server_.requests(), (std::vector<std::string>{"/buildid/" + id + "/debuginfo",
                                                          "/buildid/" + common_id + "/debuginfo"}));
  EXPECT_NE(Progress().find(", the part dwz moved to a shared file (build id " + common_id),
            std::string::npos)
      << Progress();
}

// The local search that replaced elfutils' standard one still finds a debuglink's file
// beside the library, without asking any server.
TEST_F(DebuginfodTest, DebugLinkBesideTheFileIsFoundWithoutAServer) {
  const uint64_t pc = InnerIn(Runfile("tests/debuginfod_fixture/linked.so"));
  ASSERT_NE(pc, 0u) << dlerror();
  EXPECT_EQ(SelfSymbolizer()->Resolve(pc).function, kInner);
  EXPECT_TRUE(server_.requests().empty());
}

// A library without a build id: its debuglink's checksum says which file beside it is its
// debug information.
TEST_F(DebuginfodTest, DebugLinkChecksumFindsTheDebugFileOfALibraryWithoutABuildId) {
  const std::string library = Runfile("tests/debuginfod_fixture/no_build_id.so");
  ASSERT_EQ(BuildIdOf(library), "");
  const uint64_t pc = InnerIn(library);
  ASSERT_NE(pc, 0u) << dlerror();
  EXPECT_EQ(SelfSymbolizer()->Resolve(pc).function, kInner);
  EXPECT_TRUE(server_.requests().empty());
}

}  // namespace
}  // namespace memtrace
