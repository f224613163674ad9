// Copyright 2026 The memtrace Authors.
//
// ProcessTree(): the captures of a process family, in the order and at the depths
// `memtrace summary A B ...` prints them. Each expected tree is written out by hand from
// the story the test tells (who forked, exec'd or started whom, and when).

#include "analysis/process_tree.h"

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace memtrace {
namespace {

// One row as text: "index@depth:relation<-parent" (no parent for a root).
std::string Describe(const ProcessTreeRow& r) {
  static const char* const kNames[] = {"root", "forked", "execed", "started"};
  std::string s = std::to_string(r.image) + "@" + std::to_string(r.depth) + ":" +
                  kNames[static_cast<int>(r.relation)];
  if (r.relation != ProcessRelation::kRoot) s += "<-" + std::to_string(r.parent);
  return s;
}

std::vector<std::string> Tree(const std::vector<ProcessImage>& images) {
  std::vector<std::string> out;
  for (const ProcessTreeRow& r : ProcessTree(images)) out.push_back(Describe(r));
  return out;
}

ProcessImage Image(uint64_t pid, uint64_t ppid, int64_t started, bool ended_by_exec = false) {
  ProcessImage i;
  i.pid = pid;
  i.ppid = ppid;
  i.started_unix_ns = started;
  i.ended_by_exec = ended_by_exec;
  return i;
}

ProcessImage Forked(uint64_t pid, uint64_t parent, int64_t started, bool ended_by_exec = false) {
  ProcessImage i = Image(pid, parent, started, ended_by_exec);
  i.forked = true;
  i.fork_parent = parent;
  return i;
}

// The shell of the header comment: `bash -c 'x=$(echo hi | tr a-z A-Z); sort f; python3'`
// under --children --forks. Given out of start order, as a directory listing gives them.
TEST(ProcessTreeTest, AShellsForksExecsAndChildrenNestUnderTheImageThatMadeThem) {
  const std::vector<ProcessImage> images = {
      /*0*/ Image(100, 1, 50, /*ended_by_exec=*/false),  // python3: the shell's last command
      /*1*/ Image(101, 100, 30),                         // tr, exec'd by the fork 101
      /*2*/ Image(100, 1, 10, /*ended_by_exec=*/true),   // the shell
      /*3*/ Forked(101, 100, 20, /*ended_by_exec=*/true),  // the shell's fork for tr
      /*4*/ Image(102, 100, 40),                         // sort: its fork was not traced
  };
  EXPECT_EQ(Tree(images), (std::vector<std::string>{"2@0:root", "3@1:forked<-2", "1@1:execed<-3",
                                                    "4@1:started<-2", "0@0:execed<-2"}));
}

// A pid used again by a later, unrelated process is not taken for an exec.
TEST(ProcessTreeTest, AReusedPidIsANewProcessNotAnExec) {
  const std::vector<ProcessImage> images = {
      Image(100, 1, 10),
      Image(200, 100, 20, /*ended_by_exec=*/false),  // exits
      Image(200, 100, 30),                           // a new child that got pid 200 again
      Forked(200, 100, 40),                          // and a forked one, once more
  };
  EXPECT_EQ(Tree(images), (std::vector<std::string>{"0@0:root", "1@1:started<-0",
                                                    "2@1:started<-0", "3@1:forked<-0"}));
}

// A child belongs to the image of its parent that was running when it started.
TEST(ProcessTreeTest, AChildAttachesToTheParentsImageRunningWhenItStarted) {
  const std::vector<ProcessImage> images = {
      Image(100, 1, 10, /*ended_by_exec=*/true),  // launcher
      Image(300, 100, 20),                        // started by the launcher
      Image(100, 1, 30),                          // the launcher's exec
      Image(301, 100, 40),                        // started by the new image
  };
  EXPECT_EQ(Tree(images), (std::vector<std::string>{"0@0:root", "1@1:started<-0",
                                                    "2@0:execed<-0", "3@1:started<-2"}));
}

// Captures whose parents are not given are roots, in the order they started; a capture
// that names no parent (ppid 0: an older capture) is one too.
TEST(ProcessTreeTest, CapturesWithoutAParentAmongThemAreRootsInStartOrder) {
  const std::vector<ProcessImage> images = {
      Image(500, 1, 30), Image(400, 2, 10), Image(600, 0, 20), Forked(700, 999, 5)};
  EXPECT_EQ(Tree(images),
            (std::vector<std::string>{"3@0:root", "1@0:root", "2@0:root", "0@0:root"}));
}

// Two images that both ended by exec with one pid: only the latest running one is the
// predecessor, so each exec image follows the one it replaced.
TEST(ProcessTreeTest, AnExecChainStaysInOrderAtOneDepth) {
  const std::vector<ProcessImage> images = {
      Image(100, 1, 10, true), Image(100, 1, 20, true), Image(100, 1, 30, true),
      Image(100, 1, 40)};
  EXPECT_EQ(Tree(images), (std::vector<std::string>{"0@0:root", "1@0:execed<-0",
                                                    "2@0:execed<-1", "3@0:execed<-2"}));
}

// 100,000 generations of forks, and as many execs: no recursion to overflow.
TEST(ProcessTreeTest, DeepFamiliesDoNotOverflowTheStack) {
  constexpr int kDepth = 100000;
  std::vector<ProcessImage> forks = {Image(1, 0, 0)};
  for (int i = 1; i < kDepth; ++i) forks.push_back(Forked(i + 1, i, i));
  const std::vector<ProcessTreeRow> rows = ProcessTree(forks);
  ASSERT_EQ(rows.size(), static_cast<size_t>(kDepth));
  for (int i = 0; i < kDepth; ++i) {
    ASSERT_EQ(rows[i].image, static_cast<size_t>(i));
    ASSERT_EQ(rows[i].depth, i);
  }
  std::vector<ProcessImage> execs;
  for (int i = 0; i < kDepth; ++i) execs.push_back(Image(7, 1, i, /*ended_by_exec=*/true));
  const std::vector<ProcessTreeRow> chain = ProcessTree(execs);
  ASSERT_EQ(chain.size(), static_cast<size_t>(kDepth));
  for (int i = 0; i < kDepth; ++i) {
    ASSERT_EQ(chain[i].image, static_cast<size_t>(i));
    ASSERT_EQ(chain[i].depth, 0);
  }
}

}  // namespace
}  // namespace memtrace
