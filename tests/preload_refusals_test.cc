// Copyright 2026 The memtrace Authors.
//
// What `memtrace run` refuses, with the reason, before the program runs (a static
// program, a set-user-ID program of another owner, a program that cannot be run, a
// capture directory that cannot hold the capture, an interposer that cannot be loaded),
// and the CLI never tracing itself.

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/preload_test_support.h"
#include "tests/run_program.h"
#include "tests/test_paths.h"

namespace memtrace {
namespace {

TEST_F(PreloadTest, TheCliNeverTracesItself) {
  const std::string capture = TempDir() + "/cli_self.mtb";
  const Result run = RunProgram({Cli(), "help"}, {"LD_PRELOAD=" + Preload(), "MEMTRACE_OUTPUT=" + capture});
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_NE(access(capture.c_str(), F_OK), 0) << "the CLI wrote a capture of itself";
}

TEST_F(PreloadTest, UnloadableInterposerIsAClearError) {
  const Result run = RunProgram({Cli(), "run", "--preload=/nonexistent/libmemtrace_preload.so", "--",
                          Target(), "stack"},
                         {});
  EXPECT_EQ(run.status, 125);
  EXPECT_NE(run.err.find("/nonexistent/libmemtrace_preload.so"), std::string::npos) << run.err;
}

// An interposer that cannot create its capture traces nothing, so a run into a directory
// that is missing (or is a file) is refused before the program starts: it must not run.
TEST_F(PreloadTest, CaptureDirectoryThatCannotHoldItIsRefusedBeforeTheProgramRuns) {
  const std::string ran = TempDir() + "/refused_program_ran";
  const std::string file = TempDir() + "/refused_plain_file";
  ASSERT_EQ(RunProgram({"/bin/sh", "-c", "echo > " + file}, {}).status, 0);
  struct Case {
    std::string output;
    std::string reason;
  };
  const std::string directory = TempDir() + "/refused_is_a_directory";
  mkdir(directory.c_str(), 0755);
  const std::string read_only = TempDir() + "/refused_read_only.mtb";
  ASSERT_EQ(RunProgram({"/bin/sh", "-c", "echo > " + read_only}, {}).status, 0);
  ASSERT_EQ(chmod(read_only.c_str(), 0444), 0);
  std::vector<Case> cases = {Case{TempDir() + "/no_such_dir/x.mtb", "does not exist"},
                             Case{file + "/x.mtb", "is not a directory"},
                             Case{directory, "it is a directory; name a file in it"}};
  // root writes a file whatever its mode.
  if (geteuid() != 0) cases.push_back(Case{read_only, "the file exists and cannot be written"});
  for (const Case& c : cases) {
    const Result run = RunProgram({Cli(), "run", "--output=" + c.output, "--", "/bin/sh", "-c",
                                   "echo > " + ran},
                                  {});
    EXPECT_EQ(run.status, 125) << run.err;
    EXPECT_NE(run.err.find("cannot write the capture '" + c.output + "'"), std::string::npos)
        << run.err;
    EXPECT_NE(run.err.find(c.reason), std::string::npos) << run.err;
    EXPECT_NE(access(ran.c_str(), F_OK), 0) << "the program ran: " << c.output;
  }
}

// `--output` naming a symbolic link or a FIFO: written through, never removed (before,
// run removed whatever was at the path; as root that took /dev/null with it). A device
// is the same case as a FIFO; the test leaves the machine's own devices alone.
TEST_F(PreloadTest, AnOutputThatIsNoRegularFileIsWrittenThroughAndKept) {
  const std::string dir = TempDir() + "/through";
  mkdir(dir.c_str(), 0755);
  const std::string target = dir + "/target.mtb", link = dir + "/link.mtb";
  unlink(link.c_str());
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  Result run = RunProgram({Cli(), "run", "--quiet", "--output=" + link, "--", Target(), "raise",
                           "0"},
                          {});
  struct stat st;
  ASSERT_EQ(lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the link was replaced";
  EXPECT_EQ(RunProgram({Cli(), "verify", target}, {}).status, 0) << run.err;

  const std::string fifo = dir + "/capture.fifo";
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // Opened before the run without waiting for a writer, and read until the writer has
  // come and gone (POLLHUP comes only after a writer), for at most 30 s: a run that
  // replaced the FIFO leaves nothing to read, and the test fails instead of waiting.
  std::string read;
  const int fd = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(fd, 0);
  std::thread reader([&] {
    char buffer[65536];
    for (int waited = 0; waited < 300;) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 100) == 0) {
        ++waited;
        continue;
      }
      const ssize_t n = ::read(fd, buffer, sizeof(buffer));
      if (n > 0) {
        read.append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        break;  // the writer closed it
      }
    }
    close(fd);
  });
  run = RunProgram({Cli(), "run", "--output=" + fifo, "--", Target(), "raise", "0"}, {});
  reader.join();
  EXPECT_EQ(run.status, 9) << run.err;  // `raise 0` sends no signal and exits 9
  EXPECT_NE(run.err.find("which is not a file to read back"), std::string::npos) << run.err;
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced";
  const std::string copy = dir + "/from_fifo.mtb";
  FILE* f = fopen(copy.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  fwrite(read.data(), 1, read.size(), f);
  fclose(f);
  const Result verify = RunProgram({Cli(), "verify", copy}, {});
  EXPECT_EQ(verify.status, 0) << verify.out;
}

// A set-user-ID program of another owner runs in the loader's secure mode, which ignores
// LD_PRELOAD: refused with the reason before it runs, like a static one. Making such a file
// takes root (chown); elsewhere the test has nothing to check.
TEST_F(PreloadTest, SetUserIdProgramOfAnotherOwnerIsRefusedWithTheReason) {
  if (geteuid() != 0) GTEST_SKIP() << "making a set-user-ID file of another owner takes root";
  const std::string program = TempDir() + "/setuid_true";
  ASSERT_EQ(RunProgram({"/bin/cp", "/bin/true", program}, {}).status, 0);
  ASSERT_EQ(chown(program.c_str(), 65534, static_cast<gid_t>(-1)), 0) << strerror(errno);
  ASSERT_EQ(chmod(program.c_str(), 04755), 0);
  struct statvfs fs;
  ASSERT_EQ(statvfs(program.c_str(), &fs), 0);
  if ((fs.f_flag & ST_NOSUID) != 0) GTEST_SKIP() << "the test's directory is mounted nosuid";
  const Result run = RunProgram({Cli(), "run", "--", program}, {});
  EXPECT_EQ(run.status, 125) << run.err;
  EXPECT_NE(run.err.find("set-user-ID (owner uid 65534"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("ignores LD_PRELOAD"), std::string::npos) << run.err;

  // Run by a traced program with children traced: it runs, untraced, and the interposer
  // says so: by path (the shell searches $PATH itself and calls execve), and by name
  // (env calls execvp, which the interposer resolves in $PATH as the loader would).
  for (const std::string& how : {program, std::string("env setuid_true")}) {
    const std::string capture = TempDir() + "/setuid_parent.mtb";
    const Result child = RunProgram(
        {Cli(), "run", "--quiet", "--children", "--output=" + capture, "--", "/bin/sh", "-c",
         "PATH=" + TempDir() + ":$PATH; " + how + " && echo ran"},
        {});
    EXPECT_EQ(child.status, 0) << child.err;
    EXPECT_NE(child.out.find("ran"), std::string::npos) << child.out;
    EXPECT_NE(child.err.find("'" + program + "' is set-user-ID"), std::string::npos)
        << how << ": " << child.err;
    EXPECT_NE(child.err.find("runs untraced"), std::string::npos) << child.err;
  }
}

// Debian's ldconfig (essential package libc-bin) is a static-pie executable: no program
// interpreter, so LD_PRELOAD cannot reach it. (A static test program of our own cannot
// be linked in the sanitizer configurations.) `-p` only prints the cache, were it run.
TEST_F(PreloadTest, StaticProgramIsRefusedWithTheReason) {
  const Result run = RunProgram({Cli(), "run", "--", "/sbin/ldconfig", "-p"}, {});
  EXPECT_EQ(run.status, 125);
  EXPECT_NE(run.err.find("statically linked"), std::string::npos) << run.err;
}

// A program that cannot be run is reported as such, with the reason and the usual shell
// status (127 not found, 126 not runnable), not as an interposer that failed to load:
// the child reports execve()'s errno to the CLI through a close-on-exec pipe.
TEST_F(PreloadTest, AProgramThatCannotBeRunIsReportedWithTheReason) {
  const std::string dir = TempDir() + "/not_runnable";
  mkdir(dir.c_str(), 0755);
  auto write_file = [](const std::string& path, const std::string& text, mode_t mode) {
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr) << path;
    fputs(text.c_str(), f);
    fclose(f);
    ASSERT_EQ(chmod(path.c_str(), mode), 0) << path;
  };
  write_file(dir + "/no_interpreter", "#!/nonexistent/bin/python9 -u\nprint(1)\n", 0755);
  write_file(dir + "/not_executable", "#!/bin/sh\ntrue\n", 0644);
  write_file(dir + "/not_a_program", "just some text\n", 0755);
  struct Case {
    std::string program;
    int status;
    std::string says;
  };
  const std::vector<Case> cases = {
      {dir + "/missing", 127, "No such file or directory"},
      {dir + "/no_interpreter", 126, "its interpreter '/nonexistent/bin/python9'"},
      {dir + "/not_executable", 126, "chmod +x"},
      {dir + "/not_a_program", 126, "Exec format error"},
      {dir, 126, "it is a directory"},
  };
  for (const Case& c : cases) {
    const std::string capture = dir + "/capture.mtb";
    const Result run = RunProgram({Cli(), "run", "--output=" + capture, "--", c.program}, {});
    EXPECT_EQ(run.status, c.status) << c.program << ": " << run.err;
    EXPECT_NE(run.err.find("memtrace run: cannot run '" + c.program + "': "), std::string::npos)
        << run.err;
    EXPECT_NE(run.err.find(c.says), std::string::npos) << run.err;
    // Nothing about the interposer or a missing capture: the program never started.
    EXPECT_EQ(run.err.find("interposer"), std::string::npos) << run.err;
    EXPECT_EQ(run.err.find("no capture"), std::string::npos) << run.err;
    EXPECT_NE(access(capture.c_str(), F_OK), 0) << c.program;
  }
}

}  // namespace
}  // namespace memtrace
