// Copyright 2026 The memtrace Authors.
//
// Traced processes that fork, and several processes writing captures: a child forked
// without fork handlers, a forked child untraced or (with --forks) traced on from the
// blocks it inherited, the captures of a process family summarized as a tree, capture
// names that never overwrite another's, and a second process given the same capture
// path. The programs are tests/preload_target.cc and bash under the interposer
// (preload/).

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tests/preload_test_support.h"
#include "tests/run_program.h"
#include "tests/test_paths.h"

namespace memtrace {
namespace {

// _Fork() (glibc 2.34) runs no fork handlers, so the child keeps a copy of the tracer that
// says it is tracing, with no drainer in the child to empty its ring. Once the ring is
// full its records fail at once (the recorder sees it is not in the drainer's process)
// instead of each waiting a second for room: before, the child's 100,000 allocations
// took about that many seconds.
TEST_F(PreloadTest, AChildForkedWithoutForkHandlersIsNotStalled) {
  const std::string capture = TempDir() + "/raw_fork.mtb";
  const Result run =
      RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "raw-fork"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("child finished"), std::string::npos) << run.out;
  ExpectCompleteAndMatching(capture, run.out);  // the parent's markers alone
}

TEST_F(PreloadTest, ForkedChildRunsUntracedAndLeavesTheParentsCaptureIntact) {
  const std::string dir = TempDir() + "/fork";
  mkdir(dir.c_str(), 0755);
  const std::string capture = dir + "/cap-%p.mtb";
  const Result run =
      RunProgram({Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "fork"}, {});
  ASSERT_EQ(run.status, 0) << run.err;
  // One capture: the parent's (the child neither writes its own nor touches the parent's).
  const std::vector<std::string> files = FilesIn(dir);
  ASSERT_EQ(files.size(), 1u) << absl::StrJoin(files, " ");
  absl::Status s;
  const Replay r = ReplayCapture(dir + "/" + files[0], &s);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(r.has_trailer);
  EXPECT_EQ(Field(r.trailer, "complete"), "true") << r.trailer;
  ExpectMarkersMatch(r, ParseCounts(run.out));  // the child's 500 markers are not in it
  // The trailer counts the fork, and the summary says the child went untraced and how to
  // trace it (a daemon's whole life is in such a child).
  EXPECT_EQ(Field(r.trailer, "forks"), "1") << r.trailer;
  const Result summary = RunProgram({Cli(), "summary", dir + "/" + files[0]}, {});
  ASSERT_EQ(summary.status, 0) << summary.err;
  EXPECT_NE(summary.out.find("note: the program forked 1 child process, which memtrace did "
                             "not follow"),
            std::string::npos)
      << summary.out;
  EXPECT_NE(summary.out.find("`memtrace run --forks`"), std::string::npos) << summary.out;
}

// The child of `fork-traced`, whose capture is `child` and the run's output `out`: complete,
// every free of an inherited block matched, and its marker counts its own.
void ExpectChildTracedOn(const Replay& child, const std::string& out) {
  ASSERT_TRUE(child.has_trailer);
  EXPECT_EQ(Field(child.trailer, "complete"), "true") << child.trailer;
  EXPECT_EQ(child.unknown_releases, 0) << "a free of an inherited block went unmatched";
  const size_t line = out.find("child allocs=");
  ASSERT_NE(line, std::string::npos) << out;
  const Counts counts = ParseCounts(out.substr(line + strlen("child ")));
  EXPECT_EQ(counts.allocs, 300 + 30);
  EXPECT_EQ(counts.frees, 290 + 10);
  ExpectMarkersMatch(child, counts);
}

// With three threads applying records (--tracer-threads=3), the child, which has none of
// the parent's threads, applies what it inherited on its one thread and traces on with
// appliers of its own: its capture is as complete and matched as with one.
TEST_F(PreloadTest, WithForksAndAppliersTheChildAppliesAloneAndTracesOn) {
  const std::string dir = TempDir() + "/forks_appliers";
  mkdir(dir.c_str(), 0755);
  const Result run =
      RunProgram({Cli(), "run", "--quiet", "--forks", "--tracer-threads=3",
                  "--output=" + dir + "/cap.mtb", "--", Target(), "fork-traced"},
                 {});
  ASSERT_EQ(run.status, 0) << run.err;
  const std::vector<std::string> files = FilesIn(dir);
  ASSERT_EQ(files.size(), 2u) << absl::StrJoin(files, " ");
  ExpectCompleteAndMatching(dir + "/cap.mtb", run.out);
  absl::Status s;
  const Replay child = ReplayCapture(dir + "/" + files[0], &s);
  ASSERT_TRUE(s.ok()) << s;
  ExpectChildTracedOn(child, run.out);
}

// With --forks (MEMTRACE_TRACE_FORKS=1) a forked child traces on into a capture of its
// own that starts with the blocks it inherited: every free of one of them matches (none is
// unknown, including those of a thread that ended just before the fork, whose records the
// drainer had most likely not applied yet), and its marker counts are the child's own.
// The parent's capture is the same as without --forks.
TEST_F(PreloadTest, WithForksAForkedChildTracesOnFromTheBlocksItInherited) {
  const std::string dir = TempDir() + "/forks";
  mkdir(dir.c_str(), 0755);
  const Result run = RunProgram({Cli(), "run", "--quiet", "--forks", "--output=" + dir +
                                 "/cap.mtb", "--", Target(), "fork-traced"},
                                {});
  ASSERT_EQ(run.status, 0) << run.err;
  const std::vector<std::string> files = FilesIn(dir);
  ASSERT_EQ(files.size(), 2u) << absl::StrJoin(files, " ");
  ASSERT_EQ(files[1], "cap.mtb");
  const std::string child_capture = dir + "/" + files[0];
  EXPECT_TRUE(absl::StartsWith(files[0], "cap.")) << files[0];

  ExpectCompleteAndMatching(dir + "/cap.mtb", run.out);
  absl::Status s;
  const Replay parent = ReplayCapture(dir + "/cap.mtb", &s);
  ASSERT_TRUE(s.ok()) << s;

  const Replay child = ReplayCapture(child_capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  ExpectChildTracedOn(child, run.out);
  EXPECT_EQ(Field(child.header, "parent_pid"), Field(parent.header, "pid")) << child.header;
  EXPECT_NE(child.header.find("\"trace_forks\":true"), std::string::npos) << child.header;
  // Every inherited block is at the stack the parent allocated it at, not at site 0 ("no
  // call site").
  EXPECT_EQ(Field(child.header, "inherited_without_stack"), "0") << child.header;

  // The CLI says where the capture began, and verify passes it.
  const Result summary = RunProgram({Cli(), "summary", child_capture}, {});
  EXPECT_EQ(summary.status, 0) << summary.err;
  EXPECT_NE(summary.out.find("(inherited at fork)"), std::string::npos) << summary.out;
  EXPECT_NE(summary.out.find("this process was forked from pid " + Field(parent.header, "pid")),
            std::string::npos)
      << summary.out;
  const Result verify = RunProgram({Cli(), "verify", child_capture}, {});
  EXPECT_EQ(verify.status, 0) << verify.out;

  // `top` over the two names the child's sites as it names the parent's (the captures
  // list the same modules, and share one symbolizer): the child's 30 allocations made
  // after the fork come from a line of the target's own.
  const Result top =
      RunProgram({Cli(), "top", "--limit=1000", dir + "/cap.mtb", child_capture}, {});
  ASSERT_EQ(top.status, 0) << top.err;
  EXPECT_NE(top.out.find("preload_target.cc:"), std::string::npos) << top.out;
  EXPECT_EQ(top.out.find("?? (" + Target()), std::string::npos) << top.out;
  const Result child_top = RunProgram({Cli(), "top", "--limit=1000", child_capture}, {});
  ASSERT_EQ(child_top.status, 0) << child_top.err;
  EXPECT_EQ(child_top.out.find("no call site"), std::string::npos) << child_top.out;
  EXPECT_NE(summary.out.find("Their sites are the call stacks the parent\n  allocated them at."),
            std::string::npos)
      << summary.out;
  // The markers the parent's threads allocated, inherited, are at the sites the parent's
  // own capture has them at, the target's lines; the family's top leaves the inherited
  // blocks out (the parent's capture counts them).
  const Result parent_top = RunProgram({Cli(), "top", "--limit=1000", dir + "/cap.mtb"}, {});
  ASSERT_EQ(parent_top.status, 0) << parent_top.err;
  int inherited_at_target = 0;
  for (absl::string_view line : absl::StrSplit(child_top.out, '\n')) {
    if (!absl::StrContains(line, "preload_target.cc:")) continue;
    const size_t at = line.find("interposer ");
    ASSERT_NE(at, absl::string_view::npos) << line;
    absl::string_view site = line.substr(at + strlen("interposer "));
    if (const size_t group = site.find(" ["); group != absl::string_view::npos) {
      site = site.substr(0, group);  // " [2 stacks]": this capture's grouping
    }
    if (absl::StrContains(line, "(inherited at fork)")) {
      ++inherited_at_target;
      EXPECT_TRUE(absl::StrContains(parent_top.out, site))
          << "the inherited site " << line << " is not in the parent's top:\n"
          << parent_top.out;
    } else {
      EXPECT_TRUE(absl::StrContains(top.out, site))
          << "the child's site " << line << " is not in the family's top:\n" << top.out;
    }
  }
  EXPECT_GT(inherited_at_target, 0) << child_top.out;

  // Without --quiet, `memtrace run` lists the child's capture after the summary, in the
  // table of the process family.
  const Result loud = RunProgram({Cli(), "run", "--forks", "--output=" + dir + "/again.mtb",
                                  "--", Target(), "fork-traced"},
                                 {});
  ASSERT_EQ(loud.status, 0) << loud.err;
  EXPECT_NE(loud.err.find("1 more capture, of the processes it forked; all 2:"),
            std::string::npos)
      << loud.err;
  EXPECT_NE(loud.err.find("memtrace summary of 2 captures, one per process image: 2 complete"),
            std::string::npos)
      << loud.err;
  // The commands it suggests name the family by a glob while that matches this run's
  // captures alone; run again at the same path, the first run's child capture is still
  // there, and they name this run's files instead (the glob would add the stale one).
  EXPECT_NE(loud.err.find("memtrace summary " + dir + "/again.mtb* "), std::string::npos)
      << loud.err;
  const Result again = RunProgram({Cli(), "run", "--forks", "--output=" + dir + "/again.mtb",
                                   "--", Target(), "fork-traced"},
                                  {});
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(again.err.find("memtrace summary " + dir + "/again.mtb* "), std::string::npos)
      << again.err;
  EXPECT_NE(again.err.find("memtrace summary " + dir + "/again.mtb " + dir + "/again."),
            std::string::npos)
      << again.err;
}

// The same with a site capacity smaller than the parent's stacks: the child's header
// counts the inherited blocks whose stacks the parent did not keep, and its summary says
// where they are. Every free in the child still matches.
TEST_F(PreloadTest, InheritedBlocksWithoutAKeptStackAreCountedAndNamed) {
  const std::string dir = TempDir() + "/forks_sites";
  mkdir(dir.c_str(), 0755);
  const Result run = RunProgram({Cli(), "run", "--quiet", "--forks", "--site-capacity=2",
                                 "--output=" + dir + "/cap.mtb", "--", Target(), "fork-traced"},
                                {});
  ASSERT_EQ(run.status, 0) << run.err;
  const std::vector<std::string> files = FilesIn(dir);
  ASSERT_EQ(files.size(), 2u) << absl::StrJoin(files, " ");
  const std::string child_capture = dir + "/" + files[0];
  absl::Status s;
  const Replay child = ReplayCapture(child_capture, &s);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(child.unknown_releases, 0);
  const std::string without = Field(child.header, "inherited_without_stack");
  ASSERT_FALSE(without.empty()) << child.header;
  EXPECT_GT(std::stoull(without), 0u) << child.header;
  EXPECT_LE(std::stoull(without), std::stoull(Field(child.header, "inherited_blocks")));
  const Result summary = RunProgram({Cli(), "summary", child_capture}, {});
  ASSERT_EQ(summary.status, 0) << summary.err;
  EXPECT_NE(summary.out.find("but for " + without + " blocks whose stack the parent had not kept"),
            std::string::npos)
      << summary.out;
}

// The captures of a shell under --children --forks, summarized together: each image once,
// with who made it. bash forks a child for the first command (a traced fork), which
// execs the target; it execs the last command itself. (dash would vfork, which no fork
// handler sees: its children would be "started".) What the shell did is read from the
// captures' own names and headers (a fork object, the pid), not from the table under test.
// Two forked children that each hold 1 MiB at one moment (a pipe makes it so): the
// family's interval holds the 2 MiB they held together, and its lower end is at least one
// child's own. Each child's whole life may be one drainer epoch, so the order of the
// two is left open, and the interval says so.
TEST_F(PreloadTest, AFamilysHighWaterIntervalHoldsWhatItsProcessesHeldAtOnce) {
  const std::string dir = TempDir() + "/at_once";
  mkdir(dir.c_str(), 0755);
  constexpr uint64_t kBytes = uint64_t{1} << 20;
  const Result run = RunProgram({Cli(), "run", "--quiet", "--forks",
                                 "--output=" + dir + "/f.mtb", "--", Target(),
                                 "two-children-at-once", std::to_string(kBytes)},
                                {});
  ASSERT_EQ(run.status, 0) << run.err;
  std::vector<std::string> args = {Cli(), "summary", "--json"};
  for (const std::string& f : FilesIn(dir)) args.push_back(dir + "/" + f);
  ASSERT_EQ(args.size(), 6u) << "three captures";
  const Result summary = RunProgram(args, {});
  ASSERT_EQ(summary.status, 0) << summary.err;
  const std::string together = summary.out.substr(summary.out.find("\"together_high_water\":"));
  const uint64_t low = std::stoull(Field(together, "bytes"));
  const uint64_t high = std::stoull(Field(together, "bytes_high"));
  EXPECT_GE(high, 2 * kBytes) << together;
  EXPECT_GE(low, kBytes) << together;
  EXPECT_LE(low, high) << together;
}

TEST_F(PreloadTest, TheCapturesOfAProcessFamilyAreSummarizedAsATree) {
  const std::string dir = TempDir() + "/family";
  mkdir(dir.c_str(), 0755);
  const std::string script = Target() + " stack; " + Target() + " stack";
  const Result run = RunProgram({Cli(), "run", "--children", "--forks",
                                 "--output=" + dir + "/fam.mtb", "--", "/bin/bash", "-c", script},
                                {});
  ASSERT_EQ(run.status, 0) << run.err;
  std::vector<std::string> paths;
  for (const std::string& f : FilesIn(dir)) paths.push_back(dir + "/" + f);
  ASSERT_GE(paths.size(), 3u) << absl::StrJoin(paths, " ");
  EXPECT_NE(run.err.find(absl::StrCat("memtrace summary of ", paths.size(),
                                      " captures, one per process image: ", paths.size(),
                                      " complete")),
            std::string::npos)
      << run.err;

  // Each capture's pid, parent and first argument, from its own header.
  struct Expected {
    std::string pid;
    std::string how;
    std::string parent;  // a capture path, or "null"
    std::string argv0;
  };
  std::map<std::string, Expected> expected;
  absl::Status st;
  const std::string root_pid = Field(ReplayCapture(dir + "/fam.mtb", &st).header, "pid");
  ASSERT_TRUE(st.ok()) << st;
  for (const std::string& path : paths) {
    const Replay r = ReplayCapture(path, &st);
    ASSERT_TRUE(st.ok()) << st;
    Expected e;
    e.pid = Field(r.header, "pid");
    const size_t argv = r.header.find("\"argv\":[\"");
    ASSERT_NE(argv, std::string::npos) << r.header;
    e.argv0 = r.header.substr(argv + 9, r.header.find('"', argv + 9) - argv - 9);
    EXPECT_NE(Field(r.header, "ppid"), "") << r.header;
    if (path == dir + "/fam.mtb") {
      e.how = "root", e.parent = "null";
    } else if (absl::EndsWith(path, ".exec1")) {
      e.how = "exec", e.parent = path.substr(0, path.size() - strlen(".exec1"));
      EXPECT_EQ(e.argv0, Target()) << path;
    } else if (r.header.find("\"fork\":{") != std::string::npos) {
      e.how = "forked", e.parent = dir + "/fam.mtb";
      EXPECT_EQ(Field(r.header, "parent_pid"), root_pid) << path;
    } else {
      e.how = "started", e.parent = dir + "/fam.mtb";
      EXPECT_EQ(Field(r.header, "ppid"), root_pid) << path;
    }
    expected[path] = e;
  }
  EXPECT_EQ(expected[dir + "/fam.mtb"].argv0, "/bin/bash");
  // At least one traced fork, and every exec'd image the target.
  size_t forks = 0;
  for (const auto& [path, e] : expected) forks += e.how == "forked";
  EXPECT_GE(forks, 1u);

  std::vector<std::string> args = {Cli(), "summary", "--json"};
  args.insert(args.end(), paths.begin(), paths.end());
  const Result summary = RunProgram(args, {});
  ASSERT_EQ(summary.status, 0) << summary.out << summary.err;
  std::vector<std::string> rows = absl::StrSplit(summary.out, "{\"capture\":");
  ASSERT_EQ(rows.size(), paths.size() + 1) << summary.out;
  std::set<std::string> seen;
  for (size_t i = 1; i < rows.size(); ++i) {
    const std::string capture = rows[i].substr(1, rows[i].find('"', 1) - 1);
    ASSERT_TRUE(expected.count(capture)) << capture;
    EXPECT_TRUE(seen.insert(capture).second) << capture << " twice";
    const Expected& e = expected[capture];
    EXPECT_EQ(Field(rows[i], "pid"), e.pid) << capture;
    EXPECT_EQ(Field(rows[i], "how"), e.how) << capture;
    EXPECT_EQ(Field(rows[i], "parent"), e.parent) << capture;
    EXPECT_EQ(Field(rows[i], "verdict"), "complete") << capture;
    // Tree order: a row's parent came before it.
    if (e.parent != "null") {
      EXPECT_TRUE(seen.count(e.parent)) << capture << " before its parent";
    }
  }
  EXPECT_EQ(rows[1].substr(1, rows[1].find('"', 1) - 1), dir + "/fam.mtb");
  // The family's high-water, all processes together (analysis/family_live.h, whose sums
  // family_live_test checks): some memory, held by at least one process, at a moment
  // inside the run.
  const std::string together = summary.out.substr(summary.out.find("\"together_high_water\":"));
  EXPECT_GT(std::stoull(Field(together, "bytes")), 0u) << together;
  EXPECT_GE(std::stoull(Field(together, "bytes_high")), std::stoull(Field(together, "bytes")))
      << together;
  // Never below one process's own high-water.
  EXPECT_GE(std::stoull(Field(together, "bytes")),
            std::stoull(Field(summary.out, "largest_high_water_bytes")))
      << summary.out;
  EXPECT_GE(std::stoull(Field(together, "processes")), 1u) << together;
  const Replay root = ReplayCapture(dir + "/fam.mtb", &st);
  EXPECT_GE(std::stoll(Field(together, "unix_ns")),
            std::stoll(Field(root.header, "started_unix_ns")));

  // `top` over the family adds up rows by site name: the target's one 50,021-byte marker,
  // allocated once by each of its two images, is one row from 2 processes.
  size_t targets = 0;
  for (const auto& [path, e] : expected) targets += e.argv0 == Target();
  ASSERT_EQ(targets, 2u);
  args = {Cli(), "top", "--json", "--limit=1000"};
  args.insert(args.end(), paths.begin(), paths.end());
  const Result top = RunProgram(args, {});
  ASSERT_EQ(top.status, 0) << top.out << top.err;
  const size_t marker = top.out.find("\"allocated_bytes\":100042,\"allocated_count\":2,");
  ASSERT_NE(marker, std::string::npos) << top.out;
  const size_t row = top.out.rfind("{\"name\":", marker);
  EXPECT_EQ(Field(top.out.substr(row), "processes"), "2") << top.out.substr(row, 400);

  // `verify` over the family: one verdict line per capture, exit 0 when all pass, and 2
  // when one cannot be read.
  args = {Cli(), "verify"};
  args.insert(args.end(), paths.begin(), paths.end());
  const Result verify_all = RunProgram(args, {});
  EXPECT_EQ(verify_all.status, 0) << verify_all.out << verify_all.err;
  for (const std::string& path : paths) {
    EXPECT_NE(verify_all.out.find("memtrace verify: " + path + ": integrity: complete, exact: "),
              std::string::npos)
        << verify_all.out;
  }
  EXPECT_EQ(RunProgram({Cli(), "verify", paths[0], "/etc/hostname"}, {}).status, 2);

  // The text form says the same, and an unreadable file among them is named, exit 2.
  args = {Cli(), "summary", paths[0], "/etc/hostname"};
  const Result bad = RunProgram(args, {});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.out.find("1 complete, 1 unreadable"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("memtrace summary: /etc/hostname"), std::string::npos) << bad.out;
}

// A forked child given a pid that an earlier capture's name already has (pids wrap: at
// 32768 by default, and every thread takes one) writes beside it, never over it (a program
// forking 200 children while threads come and go reuses pids that fast).
TEST_F(PreloadTest, AForkedChildNeverOverwritesACaptureWithItsPidInTheName) {
  const std::string dir = TempDir() + "/pid_reuse";
  mkdir(dir.c_str(), 0755);
  const Result run = RunProgram({Cli(), "run", "--quiet", "--forks", "--output=" + dir +
                                 "/cap.mtb", "--", Target(), "fork-over-captures", dir},
                                {});
  ASSERT_EQ(run.status, 0) << run.err;
  const size_t at = run.out.find("child=");
  ASSERT_NE(at, std::string::npos) << run.out;
  const std::string pid = run.out.substr(at + 6, run.out.find('\n', at) - at - 6);
  const std::string taken = dir + "/cap." + pid + ".mtb";
  if (ReadFile(taken) != "placeholder\n" && access((dir + "/cap." + pid + ".2.mtb").c_str(),
                                                   F_OK) != 0 &&
      ReadFile(taken).substr(0, 8) != "MTRACEB3") {
    GTEST_SKIP() << "the child's pid " << pid << " was past the 64 files made for it";
  }
  EXPECT_EQ(ReadFile(taken), "placeholder\n") << "the other capture was overwritten";
  const std::string own = dir + "/cap." + pid + ".2.mtb";
  const Result verify = RunProgram({Cli(), "verify", own}, {});
  EXPECT_EQ(verify.status, 0) << verify.out << verify.err;
}

// Two traced processes given one MEMTRACE_OUTPUT: the capture file is locked while it is
// written, so the second writes beside it (".<pid>" before the extension) and says
// where, and both captures are whole. `memtrace run --output` naming that file refuses.
TEST_F(PreloadTest, ASecondProcessGivenTheSameCapturePathWritesBesideIt) {
  const std::string dir = TempDir() + "/same_path";
  mkdir(dir.c_str(), 0755);
  const std::string capture = dir + "/same.mtb";
  const std::string release = dir + "/release";
  const std::string first_out = dir + "/first.out";
  // The first holds its capture open until `release` exists.
  const pid_t first = SpawnTraced({Target(), "hold", release}, capture, first_out);
  ASSERT_GT(first, 0);
  // Its counts line comes after the interposer's constructor opened the capture.
  WaitForOutput(first_out, "allocs=");
  ASSERT_GE(ParseCounts(ReadFile(first_out)).allocs, 0) << "the first process did not start";

  const Result second = RunProgram({Target(), "basic"},
                                   {"LD_PRELOAD=" + Preload(), "MEMTRACE_OUTPUT=" + capture});
  ASSERT_EQ(second.status, 0) << second.err;
  const size_t at = second.err.find("writes its capture to '");
  ASSERT_NE(at, std::string::npos) << second.err;
  const size_t begin = at + strlen("writes its capture to '");
  const std::string second_capture = second.err.substr(begin, second.err.find('\'', begin) - begin);
  EXPECT_EQ(second_capture.rfind(dir + "/same.", 0), 0u) << second_capture;
  EXPECT_EQ(second_capture.substr(second_capture.size() - 4), ".mtb") << second_capture;
  EXPECT_NE(second.err.find("'" + capture + "' is being written by another process"),
            std::string::npos)
      << second.err;

  // `memtrace run` with that path refuses before it runs anything (it would remove the
  // file another process is writing).
  const Result run = RunProgram(
      {Cli(), "run", "--quiet", "--output=" + capture, "--", Target(), "basic"}, {});
  EXPECT_EQ(run.status, 125) << run.err;
  EXPECT_NE(run.err.find("'" + capture + "' is being written by another traced process"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(run.out, "") << "the program did not run";

  const int made = open(release.c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(made, 0);
  close(made);
  int status = 0;
  ASSERT_EQ(waitpid(first, &status, 0), first);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  ExpectCompleteAndMatching(capture, ReadFile(first_out));
  ExpectCompleteAndMatching(second_capture, second.out);
}

}  // namespace
}  // namespace memtrace
