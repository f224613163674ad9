// Copyright 2026 The memtrace Authors.
//
// live_command.h: `memtrace live PID|SOCKET` reads the ledger of a running process that
// serves it (Config::live, `memtrace run --live`, MEMTRACE_LIVE=1), over the Unix socket
// of runtime/internal/live_server.h.
//
//   memtrace live 4242 --once --json   one snapshot, the object `summary --json` prints
//   memtrace live 4242                 every second: live bytes, high-water, the top
//                                      sites, scopes and layers by live bytes or growth
//                                      (cli/internal/live_view.h); q or Ctrl-C quits
//
// The screen is cleared before each refresh only when stdout is a terminal; otherwise
// each refresh is one more block (or, with --json, one more line). The terminal is put
// in non-canonical mode, to read q without Enter, only when stdin is one, and restored.
//
// Exit status: 0; 1 when the process or its socket cannot be reached (none, not
// serving, another user's) or answers something that is not a snapshot; 2 bad usage.
//
// Thread safety: called from main() only; FetchLiveSnapshot from any thread.

#ifndef MEMTRACE_CLI_LIVE_COMMAND_H_
#define MEMTRACE_CLI_LIVE_COMMAND_H_

#include <sys/types.h>

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "cli/command_line.h"

namespace memtrace {

extern const CommandSpec kLiveSpec;

int LiveCommand(int argc, char** argv);

// The socket `target` names: a process id (its socket as LiveSocketPath() finds it for
// this uid; for a process with none, such as `memtrace run`, the socket of its one child
// that has one, said on stderr), or a path. NotFound when the process does not exist.
absl::StatusOr<std::string> LiveSocketFor(const std::string& target);

// Connects to `socket_path`, asks for a snapshot and returns the reply line without its
// newline; an error says what failed (connect, permission, timeout, an {"error":..}
// reply, or a reply that is not a JSON object). With `server_pid`, sets it to the pid of
// the process serving (SO_PEERCRED), 0 when unknown.
absl::StatusOr<std::string> FetchLiveSnapshot(const std::string& socket_path,
                                              pid_t* server_pid = nullptr);

// A connected socket, closed when this ends.
class LiveConnection {
 public:
  explicit LiveConnection(int fd) : fd_(fd) {}
  LiveConnection(LiveConnection&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  LiveConnection& operator=(LiveConnection&&) = delete;
  ~LiveConnection();
  int fd() const { return fd_; }

 private:
  int fd_;
};

// What FetchLiveSnapshot() and `memtrace snapshot` share:
// Connects to `socket_path` and sends `request` (a line of live_request.h); returns the
// connected socket, with a receive timeout set. Errors say what
// failed and what to do (start the process with MEMTRACE_LIVE=1, run as its user).
// With `server_pid`, sets it to the pid of the process serving, 0 when unknown.
absl::StatusOr<LiveConnection> AskLive(const std::string& socket_path, std::string_view request,
                            pid_t* server_pid);
// An error for the reply line `line` when it is the server's {"error":...} or not JSON;
// OK for any other JSON object.
absl::Status LiveErrorReply(const std::string& socket_path, std::string_view line);
// The error for a server that closed without a word: it serves another user, or, when
// `server_pid` (the pid AskLive() found, 0 if none) is gone, it ended before it answered.
absl::Status NoReply(const std::string& socket_path, pid_t server_pid);

}  // namespace memtrace

#endif  // MEMTRACE_CLI_LIVE_COMMAND_H_
