// Copyright 2026 The memtrace Authors.

#include "cli/live_command.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/internal/live_view.h"
#include "runtime/internal/live_server.h"
#include "simdjson.h"

ABSL_FLAG(bool, once, false, "live: print one snapshot and exit");

namespace memtrace {

const CommandSpec kLiveSpec = {
    "live", "memtrace live [flags] PID|SOCKET",
    "Reads the ledger of a running process traced with --live (`memtrace run --live`,\n"
    "MEMTRACE_LIVE=1, or Config::live): PID, or the path of its socket. Every second it\n"
    "shows live bytes, the high-water mark and the top call sites, scopes and layers by\n"
    "live bytes or by growth since it started; g sorts by growth, l by live bytes, q or\n"
    "Ctrl-C quits. --once prints one snapshot; --json the object `summary --json` prints\n"
    "with the top sites. Only a process of your own uid answers.",
    {"once", "json"}};

namespace {

// A reply larger than this is not a snapshot (a snapshot is a few hundred bytes a scope).
constexpr size_t kMaxReplyBytes = size_t{256} << 20;
// Long enough for a flush of a busy program's rings and a snapshot.
constexpr int kReplyTimeoutSeconds = 10;

volatile sig_atomic_t interrupted = 0;
void OnInterrupt(int) { interrupted = 1; }

// The terminal in non-canonical mode without echo, restored when this ends.
class RawTerminal {
 public:
  RawTerminal() {
    if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    termios raw = saved_;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);  // ISIG stays: Ctrl-C is SIGINT
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    active_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (active_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  bool active() const { return active_; }

 private:
  termios saved_{};
  bool active_ = false;
};

// Waits up to a second, applying the keys typed to `view` (null: --json, no view, only q
// counts); true when the user asked to quit (q, Ctrl-C, or stdin closed on a terminal).
bool WaitOrQuit(bool read_keys, cli_internal::LiveView* view) {
  pollfd fd = {STDIN_FILENO, POLLIN, 0};
  const int n = poll(read_keys ? &fd : nullptr, read_keys ? 1 : 0, 1000);
  if (interrupted) return true;
  if (n <= 0 || !read_keys) return false;
  char keys[64];
  const ssize_t got = read(STDIN_FILENO, keys, sizeof(keys));
  if (got <= 0) return got == 0;
  if (view != nullptr) return view->Keys(keys, static_cast<size_t>(got));
  return std::find(keys, keys + got, 'q') != keys + got;
}

}  // namespace

namespace {

// The processes whose parent is `pid`: its threads' /proc children lists, or where the
// kernel has none (CONFIG_PROC_CHILDREN), every process's parent in /proc/PID/stat.
std::vector<int> ChildrenOf(int pid) {
  std::vector<int> children;
  bool listed = false;
  if (DIR* tasks = opendir(absl::StrCat("/proc/", pid, "/task").c_str())) {
    while (const dirent* task = readdir(tasks)) {
      if (task->d_name[0] == '.') continue;
      std::ifstream list(absl::StrCat("/proc/", pid, "/task/", task->d_name, "/children"));
      listed = listed || list.is_open();
      for (int child = 0; list >> child;) children.push_back(child);
    }
    closedir(tasks);
  }
  if (listed) return children;
  if (DIR* proc = opendir("/proc")) {
    while (const dirent* entry = readdir(proc)) {
      int other = 0;
      if (!absl::SimpleAtoi(entry->d_name, &other)) continue;
      std::ifstream stat(absl::StrCat("/proc/", other, "/stat"));
      std::string line;
      std::getline(stat, line);
      // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses; it ends at the
      // last ')'.
      const size_t close = line.rfind(')');
      if (close == std::string::npos) continue;
      char state = 0;
      int parent = 0;
      if (sscanf(line.c_str() + close + 1, " %c %d", &state, &parent) == 2 && parent == pid) {
        children.push_back(other);
      }
    }
    closedir(proc);
  }
  return children;
}

}  // namespace

absl::StatusOr<std::string> LiveSocketFor(const std::string& target) {
  int pid = 0;
  if (!absl::SimpleAtoi(target, &pid) || pid <= 0) return target;  // a socket's path
  if (kill(pid, 0) != 0 && errno == ESRCH) {
    return absl::NotFoundError(absl::StrCat("no process ", pid));
  }
  absl::StatusOr<std::string> own =
      runtime_internal::LiveSocketPath(pid, getuid(), /*create_dir=*/false);
  struct stat st;
  if (!own.ok() || stat(own->c_str(), &st) == 0) return own;
  // `memtrace run --live -- prog &` leaves $! the pid of memtrace run, which stays the
  // traced program's parent: a pid with no socket whose one child has one means that child.
  std::vector<std::string> served;
  std::vector<int> children;
  for (int child : ChildrenOf(pid)) {
    absl::StatusOr<std::string> path =
        runtime_internal::LiveSocketPath(child, getuid(), /*create_dir=*/false);
    if (path.ok() && stat(path->c_str(), &st) == 0) {
      served.push_back(*std::move(path));
      children.push_back(child);
    }
  }
  if (served.size() == 1) {
    fprintf(stderr, "memtrace: pid %d is not traced itself; its child %d is: reading that\n",
            pid, children[0]);
    return served[0];
  }
  if (served.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pid ", pid, " is not traced itself, and several of its children serve a ledger (",
        absl::StrJoin(children, ", "), "): name one"));
  }
  return own;  // the connection's error says what is wrong
}

LiveConnection::~LiveConnection() {
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<LiveConnection> AskLive(const std::string& socket_path,
                                       std::string_view request, pid_t* server_pid) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(socket_path, " is too long for a socket"));
  }
  memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  LiveConnection connection(fd);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    const char* why =
        err == ENOENT || err == ECONNREFUSED
            ? "; is the process traced with --live? Start it with MEMTRACE_LIVE=1 or "
              "`memtrace run --live`"
            : err == EACCES ? "; the socket belongs to another user: run as the process's user"
                            : "";
    return absl::UnavailableError(
        absl::StrCat("cannot connect to ", socket_path, ": ", strerror(err), why));
  }
  if (server_pid != nullptr) {
    // The pid of the process that listens (SO_PEERCRED on a connected socket).
    ucred cred{};
    socklen_t cred_len = sizeof(cred);
    *server_pid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) == 0 ? cred.pid : 0;
  }
  const timeval timeout = {kReplyTimeoutSeconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return absl::UnavailableError(
        absl::StrCat("cannot send to ", socket_path, ": ", strerror(errno)));
  }
  return connection;
}

absl::Status LiveErrorReply(const std::string& socket_path, std::string_view line) {
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  if (parser.parse(simdjson::padded_string(line)).get_object().get(object) !=
      simdjson::SUCCESS) {
    return absl::DataLossError(absl::StrCat(socket_path, " answered something not JSON"));
  }
  if (std::string_view error; object["error"].get_string().get(error) == simdjson::SUCCESS) {
    return absl::FailedPreconditionError(
        absl::StrCat(socket_path, " refused the request: ", std::string(error)));
  }
  return absl::OkStatus();
}

absl::Status NoReply(const std::string& socket_path, pid_t server_pid) {
  if (server_pid > 0 && kill(server_pid, 0) != 0 && errno == ESRCH) {
    return absl::UnavailableError(absl::StrCat("process ", server_pid, " (", socket_path,
                                               ") ended before it answered"));
  }
  return absl::PermissionDeniedError(absl::StrCat(
      socket_path, " closed without a reply: it serves only its own user's processes (run "
      "as that user)"));
}

absl::StatusOr<std::string> FetchLiveSnapshot(const std::string& socket_path,
                                              pid_t* server_pid) {
  const absl::StatusOr<LiveConnection> asked = AskLive(socket_path, "snapshot\n", server_pid);
  if (!asked.ok()) return asked.status();
  const int fd = asked->fd();
  std::string reply;
  char buf[65536];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::UnavailableError(
          absl::StrCat("no reply from ", socket_path, ": ", strerror(errno)));
    }
    if (n == 0) break;
    reply.append(buf, static_cast<size_t>(n));
    if (reply.size() > kMaxReplyBytes) {
      return absl::DataLossError(absl::StrCat(socket_path, " sent more than ",
                                              kMaxReplyBytes, " bytes: not a snapshot"));
    }
  }
  if (reply.empty()) return NoReply(socket_path, server_pid != nullptr ? *server_pid : 0);
  if (reply.back() != '\n') {
    return absl::DataLossError(absl::StrCat(socket_path, " sent an incomplete reply"));
  }
  reply.pop_back();
  if (absl::Status s = LiveErrorReply(socket_path, reply); !s.ok()) return s;
  return reply;
}

int LiveCommand(int argc, char** argv) {
  ParsedArgs args;
  if (auto exit = ParseCommandFlags(kLiveSpec, argc, argv, &args)) return *exit;
  if (args.positional.size() != 1) {
    return UsageError(kLiveSpec, "which process? memtrace live PID|SOCKET");
  }
  const std::string& target = args.positional[0];
  auto fail = [](const absl::Status& s) {
    fprintf(stderr, "memtrace live: %s\n", std::string(s.message()).c_str());
    return 1;
  };
  const absl::StatusOr<std::string> socket_path = LiveSocketFor(target);
  if (!socket_path.ok()) return fail(socket_path.status());
  const bool json = absl::GetFlag(FLAGS_json);
  const bool once = absl::GetFlag(FLAGS_once);
  const bool clear = !once && !json && isatty(STDOUT_FILENO);

  std::optional<RawTerminal> terminal;  // --once reads no keys
  if (!once) {
    struct sigaction on_interrupt {};
    on_interrupt.sa_handler = OnInterrupt;  // no SA_RESTART: poll() returns at once
    sigaction(SIGINT, &on_interrupt, nullptr);
    terminal.emplace();
  }
  std::optional<cli_internal::LiveView> view;
  pid_t served = 0;  // the process that answered the last request, once one did
  for (;;) {
    pid_t pid = 0;
    const absl::StatusOr<std::string> reply = FetchLiveSnapshot(*socket_path, &pid);
    if (!reply.ok()) {
      // A process that answered before and is gone now ended: that ends the view, and is
      // no error (the socket goes with it).
      if (served > 0 && kill(served, 0) != 0 && errno == ESRCH) {
        fprintf(stderr, "memtrace live: process %d ended\n", static_cast<int>(served));
        return 0;
      }
      return fail(reply.status());
    }
    served = pid;
    std::string text = *reply + "\n";
    if (!json) {
      if (!view.has_value()) view.emplace(target, pid);
      absl::StatusOr<std::string> screen = view->Render(*reply);
      if (!screen.ok()) return fail(screen.status());
      text = clear ? "\033[H\033[2J" + *screen : *screen + "\n";
    }
    fputs(text.c_str(), stdout);
    fflush(stdout);
    if (once || WaitOrQuit(terminal->active(), view.has_value() ? &*view : nullptr)) return 0;
  }
}

}  // namespace memtrace
