// Copyright 2026 The memtrace Authors.
//
// exec and the interposer in a traced program's children (tests/preload_target.cc and
// bash under the interposer, preload/): exec ends the capture, and children are traced
// only when asked (--children), even one given an environment of its own; otherwise the
// interposer is not passed on, whether the shell runs commands, the interposer is a copy
// under another name, or the program has its own unsetenv().

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/preload_test_support.h"
#include "tests/run_program.h"
#include "tests/test_paths.h"

namespace memtrace {
namespace {

// A traced shell `run` that ran the target's "basic" mode, writing its capture to
// DIR/shell.mtb: the commands ran, and only the shell was traced (one capture, no
// warning, none of the target's markers in it), its capture whole.
void ExpectOnlyTheShellTraced(const Result& run, const std::string& dir) {
  ASSERT_EQ(run.status, 0) << run.err;
  ASSERT_GE(ParseCounts(run.out).allocs, 1) << "the commands ran: " << run.out;
  EXPECT_EQ(FilesIn(dir), std::vector<std::string>{"shell.mtb"});
  EXPECT_EQ(run.err.find("memtrace:"), std::string::npos) << run.err;
  absl::Status s;
  const Replay r = ReplayCapture(dir + "/shell.mtb", &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.trailer, "complete"), "true") << r.trailer;
  EXPECT_EQ(Field(r.trailer, "ended_by"), "exit") << r.trailer;
  EXPECT_EQ(r.markers.allocs, 0) << "the shell itself allocates no markers";
}

// bash defines its own setenv() and unsetenv(), and exports what main() was given: the
// interposer takes itself out of that array directly, so the commands a traced shell
// runs are not traced. (They were, each into the shell's capture file, which came out
// as several captures overwriting each other.)
TEST_F(PreloadTest, CommandsRunByATracedShellAreNotTraced) {
  if (access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "no /bin/bash";
  const std::string dir = TempDir() + "/shell";
  mkdir(dir.c_str(), 0755);
  const std::string capture = dir + "/shell.mtb";
  const std::string t = Target();
  const Result run = RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", "/bin/bash",
                                 "-c", t + " basic | " + t + " basic > /dev/null; " + t +
                                           " basic; " + t + " basic & wait"},
                                {});
  ExpectOnlyTheShellTraced(run, dir);
}

// The same with a copy of the interposer under another name, preloaded by hand: the
// commands the shell runs are still not traced (left in LD_PRELOAD, the copy would make
// each command write a capture of its own beside the shell's).
TEST_F(PreloadTest, ACopyOfTheInterposerUnderAnotherNameIsNotPassedToChildren) {
  if (access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "no /bin/bash";
  const std::string dir = TempDir() + "/renamed";
  mkdir(dir.c_str(), 0755);
  const std::string copy = TempDir() + "/mt.so";
  ASSERT_EQ(RunProgram({"/bin/cp", Preload(), copy}, {}).status, 0);
  const std::string capture = dir + "/shell.mtb";
  const std::string t = Target();
  // Not the last command alone: bash would exec it instead of forking first.
  const Result run = RunProgram({"/bin/bash", "-c", t + " basic; " + t + " basic & wait"},
                                {"LD_PRELOAD=" + copy, "MEMTRACE_OUTPUT=" + capture});
  ExpectOnlyTheShellTraced(run, dir);
}

const std::string& OwnEnvironment() {
  static const std::string path = Runfile("tests/own_environment");
  return path;
}

// The same with a program of our own whose setenv() and unsetenv() do nothing at all,
// and which execs its argument with main()'s environment: the exec'd target runs
// untraced, and the capture is the first image's, ended by the exec.
TEST_F(PreloadTest, AProgramsOwnUnsetenvDoesNotKeepTheInterposerInItsChildren) {
  const std::string dir = TempDir() + "/own_env";
  mkdir(dir.c_str(), 0755);
  const std::string capture = dir + "/own.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", OwnEnvironment(), Target(), "basic"},
      {});
  ASSERT_EQ(run.status, 0) << run.err;
  ASSERT_GE(ParseCounts(run.out).allocs, 1) << run.out;
  EXPECT_EQ(FilesIn(dir), std::vector<std::string>{"own.mtb"});
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.trailer, "ended_by"), "exec")
      << "the target, traced, would have rewritten the file: " << r.trailer;
  EXPECT_EQ(r.markers.allocs, 0);
}

TEST_F(PreloadTest, ExecEndsTheCaptureAndChildrenAreTracedOnlyWhenAsked) {
  const std::string capture = TempDir() + "/exec.mtb";
  // Not traced children: the exec'd program (the target again, in stack mode) is not
  // traced, so the capture is the first image's alone.
  Result run = RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "exec",
                    Target(), "stack"},
                   {});
  ASSERT_EQ(run.status, 0) << run.err;
  absl::Status s;
  Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.trailer, "ended_by"), "exec");
  EXPECT_EQ(Field(r.trailer, "exec"), Target()) << "the trailer names the program exec'd";
  EXPECT_EQ(Field(r.trailer, "complete"), "true") << r.trailer;
  ExpectMarkersMatch(r, ParseCounts(run.out));  // the first counts line is the first image's
  EXPECT_NE(access((capture + ".exec1").c_str(), F_OK), 0) << "the child was not traced";
  // The summary says where the program went, for wrapper scripts (a pyenv shim).
  const Result summary = RunProgram({Cli(), "summary", capture}, {});
  ASSERT_EQ(summary.status, 0) << summary.err;
  EXPECT_NE(summary.out.find(absl::StrCat("replaced itself with '", Target(), "' (exec)")),
            std::string::npos)
      << summary.out;
  EXPECT_NE(summary.out.find("memtrace run --children"), std::string::npos) << summary.out;

  // --children: the new image writes its own capture beside the first.
  const std::string traced = TempDir() + "/exec_children.mtb";
  run = RunProgram({Cli(), "run", "--quiet", "--children", "--output=" + traced, "--", Target(),
             "exec", Target(), "stack"},
            {});
  ASSERT_EQ(run.status, 0) << run.err;
  const Replay child = ReplayCapture(traced + ".exec1", &s);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(ReadFile(traced + ".exec1").substr(0, 8), "MTRACEB3")
      << "the new image's capture keeps the encoding the path named";
  EXPECT_EQ(child.source, "preload");
  EXPECT_EQ(Field(child.trailer, "ended_by"), "exit");
  EXPECT_EQ(child.markers.allocs, 1);  // the stack mode's one marker

  // Where to look next, after the summaries: the capture of the process whose memory rose
  // highest (here the new image, which holds 40 markers), not a launcher's first image.
  const std::string hinted = TempDir() + "/exec_hint.mtb";
  run = RunProgram({Cli(), "run", "--children", "--output=" + hinted, "--", Target(), "exec",
                    Target(), "hold", Target()},
                   {});
  ASSERT_EQ(run.status, 0) << run.err;
  auto high_water = [&](const std::string& path) {
    const Replay r = ReplayCapture(path, &s);
    EXPECT_TRUE(s.ok()) << s;
    const size_t totals = r.trailer.find("\"totals\":");
    EXPECT_NE(totals, std::string::npos) << r.trailer;
    return std::stoull("0" + Field(r.trailer.substr(totals), "high_water_bytes"));
  };
  ASSERT_GT(high_water(hinted + ".exec1"), high_water(hinted)) << "the test's premise";
  EXPECT_NE(run.err.find("next: memtrace top " + hinted + ".exec1 "), std::string::npos)
      << run.err;
}

// With --children, a program the traced one runs is traced even when it is handed an
// environment of its own: none at all (`env -i`, subprocess.run(env={})), or its own
// LD_PRELOAD: it is traced, not silently left out. Each way
// of starting it: execve, fexecve, posix_spawn, and vfork + execve; and an environment
// too large for the copy's room on the stack (execve-large: the copy goes to mapped pages).
TEST_F(PreloadTest, AChildGivenAnEnvironmentOfItsOwnIsStillTracedWithChildren) {
  char real_target[PATH_MAX];
  ASSERT_NE(realpath(Target().c_str(), real_target), nullptr);
  for (const std::string how :
       {"execve-empty", "execve-preload", "execve-large", "fexecve-empty", "spawn-empty",
        "vfork-empty"}) {
    SCOPED_TRACE(how);
    const std::string dir = TempDir() + "/own_env_" + how;
    ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
    const std::string capture = dir + "/c.mtb";
    const Result run = RunProgram({Cli(), "run", "--quiet", "--children", "--output=" + capture,
                                   "--", Target(), "run-with-env", how, Target(), "stack"},
                                  {});
    ASSERT_EQ(run.status, 0) << run.err;
    absl::Status s;
    const Replay parent = ReplayCapture(capture, &s);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(Field(parent.trailer, "complete"), "true") << parent.trailer;
    EXPECT_EQ(parent.markers.allocs, 10) << "the first program's own markers";
    // The child's capture: the exec'd image's beside the first (.exec1), or a new
    // process's named by its pid.
    const bool exec = how.find("exec") != std::string::npos && how != "vfork-empty";
    std::string child_capture;
    for (const std::string& f : FilesIn(dir)) {
      if (f != "c.mtb") child_capture = dir + "/" + f;
    }
    ASSERT_FALSE(child_capture.empty()) << "the child left no capture: " << run.err;
    if (exec) {
      EXPECT_EQ(child_capture, capture + ".exec1");
      EXPECT_EQ(Field(parent.trailer, "ended_by"), "exec");
      EXPECT_EQ(Field(parent.trailer, "exec"), how == "fexecve-empty" ? real_target : Target())
          << "fexecve: the file the descriptor is open on";
    } else {
      EXPECT_TRUE(absl::StartsWith(child_capture, dir + "/c.")) << child_capture;
      EXPECT_EQ(Field(parent.trailer, "ended_by"), "exit");
    }
    const Replay child = ReplayCapture(child_capture, &s);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(Field(child.trailer, "complete"), "true") << child.trailer;
    EXPECT_EQ(child.markers.allocs, 1) << "the stack mode's one marker";
    const Result verify = RunProgram({Cli(), "verify", child_capture}, {});
    EXPECT_EQ(verify.status, 0) << verify.out << verify.err;
  }
}

}  // namespace
}  // namespace memtrace
