// Copyright 2026 The memtrace Authors.

#include "cli/snapshot_command.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string_view>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "analysis/capture_reader.h"
#include "cli/live_command.h"
#include "sinks/binary_encoding.h"
#include "sinks/capture_lock.h"

namespace memtrace {

const CommandSpec kSnapshotSpec = {
    "snapshot", "memtrace snapshot PID|SOCKET -o FILE",
    "Writes a capture of this moment of a running process traced with --live (`memtrace\n"
    "run --live`, MEMTRACE_LIVE=1, or Config::live) to FILE: PID, or the path of its\n"
    "socket. Its events are the blocks live now, one allocation each, at their call site\n"
    "and scope; its trailer holds the process's counters up to now (allocated, freed,\n"
    "high-water, integrity). summary, top, report and verify read it like any capture;\n"
    "`memtrace diff A B` of two snapshots shows what changed between them. The file is\n"
    "binary (.mtb) whatever its name. Only a process of your own uid answers.",
    {"output"}};

namespace {

// The first bytes of a reply: a capture's magic, or the start of an {"error":..} line.
constexpr size_t kMagicBytes = kBinaryMagicSize;
// An error line longer than this is not one the server writes.
constexpr size_t kMaxErrorBytes = size_t{64} << 10;

// Writes all of `bytes` to `fd`; false on an error (errno says which).
bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

absl::StatusOr<SnapshotReceived> FetchSnapshotCapture(const std::string& socket_path,
                                                      const std::string& path) {
  SnapshotReceived got;
  const absl::StatusOr<LiveConnection> asked = AskLive(socket_path, "capture\n", &got.pid);
  if (!asked.ok()) return asked.status();
  const int fd = asked->fd();
  const std::string partial = path + ".partial";
  int out = -1;
  auto fail = [&](absl::Status s) {
    if (out >= 0) {
      close(out);
      unlink(partial.c_str());
    }
    return s;
  };
  std::string head;  // the reply's first bytes, until they tell a capture from an error
  char buf[65536];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return fail(absl::UnavailableError(absl::StrCat(
          socket_path, " stopped sending after ", got.bytes + head.size(), " bytes: ",
          strerror(errno), "; try again")));
    }
    if (n == 0) break;
    std::string_view piece(buf, static_cast<size_t>(n));
    if (out < 0) {
      head.append(piece);
      if (head[0] == '{' && head.size() > kMaxErrorBytes) {
        return fail(absl::DataLossError(
            absl::StrCat(socket_path, " answered something that is not a capture")));
      }
      // An error line is read whole; a capture's magic, before anything is written.
      if (head[0] == '{' || head.size() < kMagicBytes) continue;
      if (!IsBinaryCapture(head)) {
        return fail(absl::DataLossError(
            absl::StrCat(socket_path, " answered something that is not a capture")));
      }
      out = open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (out < 0) {
        return fail(absl::InvalidArgumentError(absl::StrCat(
            "cannot create ", partial, ": ", strerror(errno),
            "; check that the directory exists and is writable, or choose another -o")));
      }
      piece = head;
    }
    if (!WriteAll(out, piece)) {
      return fail(absl::InvalidArgumentError(absl::StrCat(
          "writing ", partial, " failed: ", strerror(errno), "; free space or choose another -o")));
    }
    got.bytes += piece.size();
  }
  if (out < 0) {
    if (head.empty()) return NoReply(socket_path, got.pid);
    if (head.back() == '\n') head.pop_back();
    absl::Status refused = LiveErrorReply(socket_path, head);
    return refused.ok() ? absl::DataLossError(absl::StrCat(
                              socket_path, " answered something that is not a capture"))
                        : refused;
  }
  if (close(out) != 0) {
    out = -1;
    unlink(partial.c_str());
    return absl::InvalidArgumentError(
        absl::StrCat("writing ", partial, " failed: ", strerror(errno)));
  }
  out = -1;
  // Whole only with its trailer: a process that stopped its tracer or ended mid-way sent
  // less.
  CaptureReadStats stats;
  const absl::Status read = ReadCapture(
      partial, [](const CaptureRecord&) { return absl::OkStatus(); }, &stats);
  if (!read.ok() || !stats.has_trailer) {
    unlink(partial.c_str());
    return absl::DataLossError(absl::StrCat(
        socket_path, " stopped sending before the capture's end (", got.bytes,
        " bytes came): the process ended, stopped its tracer, or was too slow to take it; "
        "try again"));
  }
  if (rename(partial.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(partial.c_str());
    return absl::InvalidArgumentError(
        absl::StrCat("cannot rename ", partial, " to ", path, ": ", strerror(err)));
  }
  got.blocks = stats.events;
  return got;
}

namespace {

// Where a snapshot for `path` goes: `path` itself, or the file a symbolic link there names
// (the link stays a link). The capture is checked whole in a file beside it before it is
// renamed into place, so a destination that is not a plain file (a device such as
// /dev/stdout, a pipe) is refused rather than replaced, and so is a capture a running
// process is writing.
absl::StatusOr<std::string> SnapshotDestination(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return path;  // a new file
  std::string dest = path;
  if (S_ISLNK(st.st_mode)) {
    char resolved[PATH_MAX];
    if (realpath(path.c_str(), resolved) == nullptr || stat(resolved, &st) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "-o ", path, " is a symbolic link to a file that cannot be reached (",
          strerror(errno), "); name the capture's file itself"));
    }
    dest = resolved;
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "-o ", path, " is not a plain file (a device, a pipe or a directory): a snapshot is "
        "a capture file, checked whole before it is put in place; name a file, and read it "
        "from there"));
  }
  if (CaptureBeingWritten(dest)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "-o ", path, " is a capture a running process is writing (its capture lock is "
        "held); give the snapshot a name of its own"));
  }
  return dest;
}

}  // namespace

int SnapshotCommand(int argc, char** argv) {
  ParsedArgs args;
  if (auto exit = ParseCommandFlags(kSnapshotSpec, argc, argv, &args)) return *exit;
  if (args.positional.size() != 1) {
    return UsageError(kSnapshotSpec, "which process? memtrace snapshot PID|SOCKET -o FILE");
  }
  const std::string path = absl::GetFlag(FLAGS_output);
  if (path.empty()) {
    return UsageError(kSnapshotSpec,
                      "where to? give the capture's file: memtrace snapshot PID|SOCKET -o FILE");
  }
  auto fail = [](const absl::Status& s) {
    fprintf(stderr, "memtrace snapshot: %s\n", std::string(s.message()).c_str());
    return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  };
  const absl::StatusOr<std::string> dest = SnapshotDestination(path);
  if (!dest.ok()) return fail(dest.status());
  const absl::StatusOr<std::string> socket_path = LiveSocketFor(args.positional[0]);
  if (!socket_path.ok()) return fail(socket_path.status());
  const absl::StatusOr<SnapshotReceived> got = FetchSnapshotCapture(*socket_path, *dest);
  if (!got.ok()) return fail(got.status());
  printf("memtrace snapshot: wrote %s (a file of %llu bytes): %llu live blocks of pid %d\n",
         path.c_str(), static_cast<unsigned long long>(got->bytes),
         static_cast<unsigned long long>(got->blocks), static_cast<int>(got->pid));
  return 0;
}

}  // namespace memtrace
