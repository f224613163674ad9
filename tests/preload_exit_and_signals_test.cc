// Copyright 2026 The memtrace Authors.
//
// How the capture of a traced program (tests/preload_target.cc under the interposer,
// preload/) ends, with the outcome each way is documented to have: exit() from another
// thread, _exit(), frees in atexit handlers, a signal during the exit finish or one
// whose handler calls _exit(), a service reading SIGTERM from a signalfd, a signal that
// stops the program, a crash, a kill, and unshare(CLONE_NEWUSER), which the program's
// other threads would make fail.

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "tests/preload_test_support.h"
#include "tests/run_program.h"
#include "tests/test_paths.h"

namespace memtrace {
namespace {

TEST_F(PreloadTest, ExitFromAnotherThreadWritesTheTrailer) {
  const std::string capture = TempDir() + "/exit_thread.mtb";
  const Result run =
      RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "exit-thread"}, {});
  EXPECT_EQ(run.status, 5) << "the program's exit status passes through; " << run.err;
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.trailer, "ended_by"), "exit");
  ExpectMarkersMatch(r, ParseCounts(run.out));
}

// unshare(CLONE_NEWUSER) needs a process with one thread, and memtrace's would be the
// others: the interposer finishes the capture and stops them first, and the program goes
// on untraced. Before, the call failed with EINVAL (`memtrace run -- unshare -U true`).
// Also with threads that apply records (--tracer-threads=3), which stop with the drainer.
TEST_F(PreloadTest, UnshareOfAUserNamespaceFinishesTheCaptureAndSucceeds) {
  const Result untraced = RunProgram({Target(), "unshare"}, {});
  if (untraced.status != 0) {
    GTEST_SKIP() << "no user namespaces here, even untraced: " << untraced.out;
  }
  for (const std::string threads : {"--tracer-threads=0", "--tracer-threads=3"}) {
    SCOPED_TRACE(threads);
    const std::string capture = TempDir() + "/unshare.mtb";
    const Result run = RunProgram(
        {Cli(), "run", threads, "--output=" + capture, "--", Target(), "unshare"}, {});
    ASSERT_EQ(run.status, 0) << run.out << run.err;
    EXPECT_NE(run.out.find("unshared"), std::string::npos) << run.out;
    ExpectCompleteAndMatching(capture, run.out);  // the markers allocated before
    absl::Status s;
    const Replay r = ReplayCapture(capture, &s);
    EXPECT_EQ(Field(r.trailer, "ended_by"), "unshare(CLONE_NEWUSER)") << r.trailer;
    EXPECT_NE(run.err.find("note: the capture ends where the program called "
                           "unshare(CLONE_NEWUSER)"),
              std::string::npos)
        << run.err;
  }
}

// With a thread of the program's own running, unshare(CLONE_NEWUSER) fails whatever
// memtrace does: it fails as it would untraced, and tracing goes on.
TEST_F(PreloadTest, UnshareInAProgramWithThreadsFailsAsUntracedAndTracingGoesOn) {
  const Result untraced = RunProgram({Target(), "unshare"}, {});
  if (untraced.status != 0) {
    GTEST_SKIP() << "no user namespaces here, even untraced: " << untraced.out;
  }
  const std::string capture = TempDir() + "/unshare_threaded.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "unshare-threaded"}, {});
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("unshare failed: Invalid argument"), std::string::npos) << run.out;
  ExpectCompleteAndMatching(capture, run.out);  // all 60 markers: tracing went on
  absl::Status s;
  EXPECT_EQ(Field(ReplayCapture(capture, &s).trailer, "ended_by"), "exit");
}

// exit() runs the main thread's TLS destructors before its atexit handlers; the frees
// made there are recorded in the main thread's ring like any other, and every one is
// matched. (With the exit hook a thread_local destructor, each took a fresh 2 MiB ring.)
TEST_F(PreloadTest, FreesInAtexitHandlersAreRecordedInTheMainThreadsRing) {
  const std::string capture = TempDir() + "/atexit.mtb";
  const Result run =
      RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "atexit"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.trailer, "complete"), "true") << r.trailer;
  EXPECT_EQ(Field(r.trailer, "ended_by"), "exit");
  const Counts program = ParseCounts(run.out);
  EXPECT_EQ(program.frees, 400) << run.out;
  EXPECT_EQ(program.live_count, 0) << run.out;
  ExpectMarkersMatch(r, program);
  // The main thread's ring; the interposer's own start-up may add one more.
  EXPECT_LE(std::stoi(Field(r.trailer, "rings")), 2) << r.trailer;
}

// _exit() runs no destructors, the interposer's included: it finishes the capture first,
// on a thread of its own, and the program exits with its status.
TEST_F(PreloadTest, UnderscoreExitWritesTheTrailer) {
  const std::string capture = TempDir() + "/quick_exit.mtb";
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "quick-exit"}, {});
  EXPECT_EQ(run.status, 7) << run.err;
  ExpectCompleteAndMatching(capture, run.out);
  EXPECT_NE(ReadFile(capture).find("\"ended_by\":\"_exit\""), std::string::npos);
}

// SIGTERM arriving while _exit()'s capture is being finished (a process pool's worker,
// terminated by its parent as it exits): the signal waits for the trailer, then ends the
// process. Ending it at once would leave the capture without a trailer, which happens to
// many of a process pool's workers under `--forks`.
TEST_F(PreloadTest, ASignalDuringTheExitFinishWaitsForTheTrailer) {
  // Delays from the _exit() call to the signal that span the few milliseconds the finish
  // takes here: at least one lands inside it.
  for (const int delay_us : {0, 200, 500, 1000, 2000, 3000, 5000}) {
    const std::string capture = absl::StrCat(TempDir(), "/quick_exit_sigterm", delay_us, ".mtb");
    const Result run = RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--",
                                   Target(), "quick-exit-under-sigterm",
                                   std::to_string(delay_us)},
                                  {});
    // Ended by the signal, or by _exit(7) when it got there first.
    EXPECT_TRUE(run.status == 128 + SIGTERM || run.status == 7) << run.status << run.err;
    ExpectCompleteAndMatching(capture, run.out);
    // Whichever began the finish names it: _exit(), or the signal when it landed before
    // _exit() handed the capture over.
    const std::string text = ReadFile(capture);
    EXPECT_TRUE(text.find("\"ended_by\":\"_exit\"") != std::string::npos ||
                text.find("\"ended_by\":\"signal 15\"") != std::string::npos)
        << delay_us;
  }
}

// The same from a SIGTERM handler that interrupted the program inside malloc() or free()
// (malloc's own locks and memtrace's record may be held there): the capture is finished by
// memtrace's thread, and the process ends with the handler's status. The handler says
// whether the signal found the program inside the allocator (status 0) or between its
// calls (10); a run of the latter kind is tried again.
TEST_F(PreloadTest, UnderscoreExitFromASignalHandlerWritesTheTrailer) {
  const std::string capture = TempDir() + "/exit_in_handler.mtb";
  const std::string out = TempDir() + "/exit_in_handler.out";
  int status = 0;
  for (int attempt = 0; attempt < 10; ++attempt) {
    const pid_t pid = SpawnTraced({Target(), "exit-in-handler"}, capture, out);
    ASSERT_GT(pid, 0);
    ASSERT_TRUE(WaitForOutput(out, "ready")) << "the program did not start";
    usleep(100000);  // well into its allocations
    ASSERT_EQ(kill(pid, SIGTERM), 0);
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status);
    if (WEXITSTATUS(status) != 10) break;  // 10: between two calls
  }
  ASSERT_EQ(WEXITSTATUS(status), 0) << "the signal never came inside malloc() or free()";
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.trailer, "ended_by"), "_exit") << r.trailer;
  EXPECT_EQ(r.unknown_releases, 0);
  EXPECT_EQ(r.markers.allocs, 10);
}

// A service that blocks SIGTERM and reads it from a signalfd: a SIGTERM sent to it is
// its own to read (memtrace's threads start with signals blocked), so it shuts down as it
// means to and the capture is whole. Before, the drainer or the writer took the signal
// and its default action ended the process: no shutdown, no trailer.
TEST_F(PreloadTest, AServiceReadingSigtermFromASignalfdStillGetsIt) {
  const std::string capture = TempDir() + "/signalfd.mtb";
  const std::string out = TempDir() + "/signalfd.out";
  const pid_t pid = SpawnTraced({Target(), "signalfd"}, capture, out);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitForOutput(out, "ready")) << "the service did not start";
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const std::string printed = ReadFile(out);
  EXPECT_NE(printed.find("graceful shutdown on signal 15"), std::string::npos) << printed;
  ExpectCompleteAndMatching(capture, printed);
}

// A process killed outright runs nothing of memtrace's: its capture has no trailer, and
// no module map at the end. The modules loaded at the start are listed right after the
// header, so what was written is still symbolized, and `verify` names the likely causes.
TEST_F(PreloadTest, AKilledProcesssCaptureIsStillSymbolized) {
  const std::string dir = TempDir() + "/killed";
  mkdir(dir.c_str(), 0755);
  const std::string capture = dir + "/killed.mtb";
  const std::string out = dir + "/killed.out";
  const pid_t pid = SpawnTraced({Target(), "hold", dir + "/never"}, capture, out);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitForOutput(out, "allocs=")) << "the program did not start";
  // The markers' epoch is written within milliseconds (drainer.h); wait for its records.
  for (int i = 0; i < 3000; ++i) {
    absl::Status s;
    if (ReplayCapture(capture, &s).markers.allocs >= 40) break;
    usleep(1000);
  }
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));

  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  EXPECT_FALSE(r.has_trailer);
  EXPECT_EQ(r.markers.allocs, 40);
  const Result top = RunProgram({Cli(), "top", "--by=count", "--stacks", capture}, {});
  ASSERT_EQ(top.status, 0) << top.err;
  EXPECT_NE(top.out.find("AllocateMarkers("), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("capture TRUNCATED (no trailer: the process ended without its exit "
                         "handlers"),
            std::string::npos)
      << top.out;
  const Result verify = RunProgram({Cli(), "verify", capture}, {});
  EXPECT_EQ(verify.status, 1);
  EXPECT_NE(verify.out.find("it was killed (SIGKILL, the OOM killer)"), std::string::npos)
      << verify.out;
}

// Killed the moment it starts, before memtrace's writer thread has run: the header and
// the modules are written when the capture is opened, so the capture still says what it
// is and why it has no trailer.
TEST_F(PreloadTest, AProcessKilledAsItStartsLeavesACaptureWithItsHeader) {
  for (int i = 0; i < 5; ++i) {
    const std::string capture = absl::StrCat(TempDir(), "/killed_at_start", i, ".mtb");
    const Result run = RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--",
                                   "/bin/sh", "-c", "kill -KILL $$"},
                                  {});
    EXPECT_EQ(run.status, 128 + SIGKILL) << run.err;
    absl::Status s;
    const Replay r = ReplayCapture(capture, &s);
    EXPECT_EQ(r.source, "preload") << "run " << i << ": " << s;
    EXPECT_FALSE(r.has_trailer);
    const Result verify = RunProgram({Cli(), "verify", capture}, {});
    EXPECT_EQ(verify.status, 1) << verify.out;
    EXPECT_NE(verify.out.find("it was killed (SIGKILL, the OOM killer)"), std::string::npos)
        << "run " << i << ": " << verify.out;
    EXPECT_EQ(verify.out.find("recorded no allocations"), std::string::npos) << verify.out;
  }
}

TEST_F(PreloadTest, CrashKeepsEverythingRecordedAndIsPartial) {
  const std::string capture = TempDir() + "/crash.mtb";
  const Result run =
      RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "crash"}, {});
  EXPECT_EQ(run.status, 128 + SIGSEGV) << run.err;
  absl::Status s;
  const Replay r = ReplayCapture(capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.trailer, "complete"), "false");
  EXPECT_EQ(Field(r.trailer, "ended_by"), "signal 11");
  ExpectMarkersMatch(r, ParseCounts(run.out));
  const Result verify = RunProgram({Cli(), "verify", capture}, {});
  EXPECT_EQ(verify.status, 1) << verify.out << verify.err;
  EXPECT_NE(verify.out.find("the program ended by signal 11"), std::string::npos)
      << verify.out << verify.err;
}

// Both unwinders find the program's own call chain Outer -> Middle -> Inner -> malloc.
// A signal sent to stop the program (Ctrl-C, kill, a process pool's terminate(), a
// closed pipe) that it leaves to the default action still ends it, by that signal, and
// the capture is finished first: complete, ended by the signal, every marker in it.
TEST_F(PreloadTest, ASignalThatStopsTheProgramFinishesTheCaptureFirst) {
  for (const int sig : {SIGTERM, SIGINT, SIGPIPE}) {
    SCOPED_TRACE(strsignal(sig));
    const std::string capture = absl::StrCat(TempDir(), "/signal", sig, ".mtb");
    const Result run = RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--",
                                   Target(), "raise", std::to_string(sig)},
                                  {});
    EXPECT_EQ(run.status, 128 + sig) << "the signal still ends it: " << run.err;
    ExpectCompleteAndMatching(capture, run.out);
    absl::Status s;
    const Replay r = ReplayCapture(capture, &s);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(Field(r.trailer, "ended_by"), absl::StrCat("signal ", sig)) << r.trailer;
    const Result verify = RunProgram({Cli(), "verify", capture}, {});
    EXPECT_EQ(verify.status, 0) << verify.out;
    const Result summary = RunProgram({Cli(), "summary", capture}, {});
    EXPECT_NE(summary.out.find(absl::StrCat("the program was ended by signal ", sig)),
              std::string::npos)
        << summary.out;
  }
}


// Runs argv (traced by the CLI) and waits at most 30 s; a program still running then is
// killed and reported as status -1.
Result RunBounded(const std::vector<std::string>& argv, const std::string& name) {
  const std::string out = absl::StrCat(TempDir(), "/", name, ".out");
  const pid_t pid = Spawn(argv, {}, out, out);
  Result r;
  if (pid <= 0) return r;
  int status = 0;
  for (int i = 0; i < 3000; ++i) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      r.out = ReadFile(out);
      return r;
    }
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  r.out = ReadFile(out) + " (still running after 30 s: killed)";
  return r;
}

// The default action a program asks for itself (dash sets SIGTERM's; signal(SIGTERM,
// SIG_DFL) before raise()) is still "left to the default action": the capture is
// finished first, and the disposition reads back as the program set it.
TEST_F(PreloadTest, ASignalWhoseDefaultTheProgramSetItselfFinishesTheCaptureFirst) {
  for (const int sig : {SIGTERM, SIGINT}) {
    for (const char* how : {"signal", "sigaction", "sysv_signal", "sigset"}) {
      SCOPED_TRACE(absl::StrCat(strsignal(sig), " set by ", how));
      const std::string capture = absl::StrCat(TempDir(), "/default", sig, how, ".mtb");
      const Result run = RunBounded({Cli(), "run", "--quiet", "--output=" + capture, "--",
                                     Target(), "raise-after-default", std::to_string(sig), how},
                                    absl::StrCat("default", sig, how));
      ASSERT_EQ(run.status, 128 + sig) << "8: it did not read back as the default; " << run.out;
      ExpectCompleteAndMatching(capture, run.out);
      absl::Status s;
      const Replay r = ReplayCapture(capture, &s);
      ASSERT_TRUE(s.ok()) << s;
      EXPECT_EQ(Field(r.trailer, "ended_by"), absl::StrCat("signal ", sig)) << r.trailer;
    }
  }
}

// Signals other than a stop signal's default go through the C library's own signal():
// a read() that siginterrupt() lets an alarm interrupt is interrupted (before, every
// signal() set SA_RESTART and the read waited forever), and SIG_ERR is refused.
TEST_F(PreloadTest, SignalIsTheCLibrarysForAnythingButAStopSignalsDefault) {
  const std::string capture = TempDir() + "/signal_as_libc.mtb";
  const Result run = RunBounded({Cli(), "run", "--quiet", "--output=" + capture, "--",
                                 Target(), "signal-as-libc"},
                                "signal_as_libc");
  EXPECT_EQ(run.status, 0) << "8: signal() differed from the C library's; " << run.out;
}

// A shell ends by a signal it caught by putting back the disposition it found at start
// and sending the signal again, with flags of its own: the process ends by the signal
// (before, bash under `memtrace run` re-raised SIGINT into memtrace's handler forever).
TEST_F(PreloadTest, AProgramThatPutsBackTheDispositionItFoundEndsByTheSignal) {
  for (const int sig : {SIGINT, SIGTERM}) {
    SCOPED_TRACE(strsignal(sig));
    const std::string capture = absl::StrCat(TempDir(), "/shell", sig, ".mtb");
    const Result run = RunBounded({Cli(), "run", "--quiet", "--output=" + capture, "--",
                                   Target(), "raise-like-a-shell", std::to_string(sig)},
                                  absl::StrCat("shell", sig));
    ASSERT_EQ(run.status, 128 + sig) << run.out;
    ExpectCompleteAndMatching(capture, run.out);
  }
  // The shells themselves, where they are: bash catches SIGINT and ends by it as above;
  // dash asks for SIGTERM's default action itself.
  for (const auto& [shell, sig] : {std::pair{"/bin/bash", SIGINT}, std::pair{"/bin/dash", SIGTERM}}) {
    if (access(shell, X_OK) != 0) continue;
    SCOPED_TRACE(shell);
    const std::string capture = absl::StrCat(TempDir(), "/", sig, ".shell.mtb");
    const Result run =
        RunBounded({Cli(), "run", "--quiet", "--output=" + capture, "--", shell, "-c",
                    absl::StrCat("kill -", sig, " $$")},
                   absl::StrCat("realshell", sig));
    ASSERT_EQ(run.status, 128 + sig) << run.out;
    const Result verify = RunProgram({Cli(), "verify", capture}, {});
    EXPECT_EQ(verify.status, 0) << verify.out;
    absl::Status s;
    const Replay r = ReplayCapture(capture, &s);
    EXPECT_EQ(Field(r.trailer, "ended_by"), absl::StrCat("signal ", sig)) << r.trailer;
  }
}

}  // namespace
}  // namespace memtrace
