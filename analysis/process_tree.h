// Copyright 2026 The memtrace Authors.
//
// process_tree.h: the captures of one traced program's processes, put in a tree.
//
// `memtrace run --children --forks` leaves one capture per process image: the program's,
// one per child it forked (NAME.<pid>.mtb), and one per program a process exec'd
// (NAME.mtb.exec1, ...). Each capture's header says which process wrote it (pid; the
// interposer's "process" object: the parent's pid; a forked child's "fork" object: the
// parent it was forked from), when its capture started, and its trailer how it ended.
// ProcessTree() turns that into the order `memtrace summary A B ...` prints them in:
//
//   bash -c '...'                 pid 100              root
//     bash (forked)               pid 101, from 100    kForked
//       tr a-z A-Z                pid 101              kExeced: 101's next image
//     sort /etc/passwd            pid 102, from 100    kStarted: exec'd by an untraced fork
//   python3 app.py                pid 100              kExeced: the shell exec'd its last command
//
// A process's children come after it, one level deeper, in the order they started; the
// image that replaced it by exec comes after those, at its own level. A child is attached
// to the image of its parent that was running when it started (the latest one that had
// started by then). A capture whose parent is not among those given is a root.
//
// Thread safety: a pure function.

#ifndef MEMTRACE_ANALYSIS_PROCESS_TREE_H_
#define MEMTRACE_ANALYSIS_PROCESS_TREE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace memtrace {

// What ProcessTree() needs of one capture.
struct ProcessImage {
  uint64_t pid = 0;
  uint64_t ppid = 0;          // the parent's pid; 0 when the capture does not say
  bool forked = false;        // a forked child's capture, which began with the parent's blocks
  uint64_t fork_parent = 0;   // its parent (the header's fork.parent_pid)
  int64_t started_unix_ns = 0;
  bool ended_by_exec = false;  // the trailer's ended_by: the process went on as another image
};

enum class ProcessRelation {
  kRoot,     // no parent among the captures given
  kForked,   // forked from `parent` (a traced fork, `--forks`)
  kExeced,   // `parent` replaced itself with this image (same pid)
  kStarted,  // a child of `parent`'s process that was traced from its exec on
};

struct ProcessTreeRow {
  size_t image = 0;  // index into the images given
  int depth = 0;     // 0 for roots; children one deeper than their parent; an exec'd image
                     // as deep as the image it replaced
  ProcessRelation relation = ProcessRelation::kRoot;
  size_t parent = 0;  // index of the parent image; meaningless for kRoot
};

// Every image once, in tree order (above).
std::vector<ProcessTreeRow> ProcessTree(const std::vector<ProcessImage>& images);

}  // namespace memtrace

#endif  // MEMTRACE_ANALYSIS_PROCESS_TREE_H_
