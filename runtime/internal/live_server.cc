// Copyright 2026 The memtrace Authors.

#include "runtime/internal/live_server.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <new>
#include <string_view>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "runtime/internal/cpu_list.h"
#include "runtime/internal/memtrace_thread.h"
#include "runtime/internal/own_descriptor.h"
#include "runtime/internal/thread_state.h"

namespace memtrace::runtime_internal {
namespace {

// The path of the one running server, for the exit handler. Written by Start() before
// the release store of server_pid.
char exit_unlink_path[sizeof(sockaddr_un::sun_path)];
// The process whose server runs; 0: none. A child of fork() inherits its parent's value
// but not the server thread: a pid other than ours is no claim (Start() takes it over,
// the exit handler leaves the parent's socket alone).
std::atomic<pid_t> server_pid{0};

// The running server's descriptors and what they name, for the fork child handler: a
// forked child closes its copies at once (a worker, and its own workers, would otherwise
// each hold the socket and the eventfd of every ancestor). Written by Start() and Stop()
// in the owner's process; read in a fork child, whose one thread is the forking one.
struct ServerDescriptors {
  int listen_fd = -1;
  int wake_fd = -1;
  DescriptorIdentity listen_id, wake_id;
};
ServerDescriptors running_descriptors;
std::mutex running_descriptors_mu;  // taken around fork (pthread_atfork)

void CloseInheritedDescriptors() {
  // In the child: the parent's lock is copied held by the forking thread, this one.
  ServerDescriptors& d = running_descriptors;
  if (d.listen_id.Names(d.listen_fd)) close(d.listen_fd);
  if (d.wake_id.Names(d.wake_fd)) close(d.wake_fd);
  d = ServerDescriptors{};
  running_descriptors_mu.unlock();
}

void UnlinkAtExit() {
  // Acquire: pairs with the release store in Start(), so the path is complete.
  if (server_pid.load(std::memory_order_acquire) == getpid()) unlink(exit_unlink_path);
}

// Claims the process's one server; false when it runs already.
bool ClaimServer() {
  const pid_t self = getpid();
  // Relaxed: Start() and Stop() come from one owner; this only refuses a second owner.
  pid_t seen = server_pid.load(std::memory_order_relaxed);
  do {
    if (seen == self) return false;
  } while (!server_pid.compare_exchange_weak(seen, -1, std::memory_order_relaxed));
  return true;  // -1 until Start() publishes the path, or 0 if it fails
}

absl::Status Errno(const std::string& what, int err) {
  return absl::Status(absl::ErrnoToStatusCode(err), absl::StrCat(what, ": ", strerror(err)));
}

// Whether a server still listens at the socket `path`: a connection is refused only
// where none does. Non-blocking: a full backlog (EAGAIN) is a listener.
bool SomeoneListens(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return true;
  memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return true;
  const bool refused =
      connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 &&
      errno == ECONNREFUSED;
  close(fd);
  return !refused;
}

}  // namespace

void RemoveStaleSockets(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return;
  const std::string dir = path.substr(0, slash);
  const std::string_view name = std::string_view(path).substr(slash + 1);
  // Only a name LiveSocketPath() gives: a prefix, this process's pid, ".sock".
  const std::string own = absl::StrCat(getpid(), ".sock");
  if (name.size() < own.size() || name.substr(name.size() - own.size()) != own) return;
  const std::string_view prefix = name.substr(0, name.size() - own.size());
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (const dirent* e = readdir(d)) {
    const std::string entry = e->d_name;
    if (entry.size() <= prefix.size() + 5 || entry.compare(0, prefix.size(), prefix) != 0 ||
        entry.substr(entry.size() - 5) != ".sock") {
      continue;
    }
    int pid = 0;
    if (!absl::SimpleAtoi(entry.substr(prefix.size(), entry.size() - prefix.size() - 5),
                          &pid) ||
        pid <= 0 || pid == getpid()) {
      continue;
    }
    const std::string file = absl::StrCat(dir, "/", entry);
    struct stat st;
    if (lstat(file.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != getuid()) {
      continue;
    }
    // A pid that runs keeps its socket, even where none listens: it may be starting. One
    // that runs in another pid namespace sharing this directory looks gone, and its
    // server still listens.
    if ((kill(pid, 0) == 0 || errno != ESRCH) || SomeoneListens(file)) continue;
    unlink(file.c_str());
  }
  closedir(d);
}

namespace {

// Polls `fd` for `events` and `wake_fd` for a stop, until `deadline`. True when fd is
// ready; false on a timeout, a stop or an error.
bool WaitFor(int fd, short events, int wake_fd, absl::Time deadline) {
  for (;;) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    pollfd fds[2] = {{fd, events, 0}, {wake_fd, POLLIN, 0}};
    const int n = poll(fds, 2, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || fds[1].revents != 0) return false;
    return (fds[0].revents & (events | POLLHUP | POLLERR)) != 0;
  }
}

}  // namespace

absl::StatusOr<std::string> LiveSocketPath(pid_t pid, uid_t uid, bool create_dir) {
  if (const char* xdg = getenv("XDG_RUNTIME_DIR"); xdg != nullptr && xdg[0] != '\0') {
    return absl::StrCat(xdg, "/memtrace-", pid, ".sock");
  }
  const std::string dir = absl::StrCat("/tmp/memtrace-", uid);
  if (create_dir && mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Errno(absl::StrCat("cannot create ", dir), errno);
  }
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) return Errno(absl::StrCat("cannot use ", dir), errno);
  // Another user could have made it first in the shared /tmp, or could write into it, to
  // replace our socket with theirs: only our own real directory, writable by us alone.
  if (!S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 022) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        dir, " is not a directory owned by uid ", uid, " and writable by it alone",
        "; remove it, or set XDG_RUNTIME_DIR to a private directory"));
  }
  return absl::StrCat(dir, "/", pid, ".sock");
}

bool PeerMayConnect(uid_t peer_uid, uid_t own_uid) noexcept { return peer_uid == own_uid; }

LiveServer::LiveServer(std::string path, Render render, Capture capture, int listen_fd,
                       int wake_fd)
    : path_(std::move(path)), render_(std::move(render)), capture_(std::move(capture)),
      listen_fd_(listen_fd), wake_fd_(wake_fd), listen_id_(DescriptorIdentity::Of(listen_fd)),
      wake_id_(DescriptorIdentity::Of(wake_fd)), owner_pid_(getpid()) {}

bool LiveServer::OwnsDescriptors() const {
  return listen_id_.Names(listen_fd_) && wake_id_.Names(wake_fd_);
}

absl::StatusOr<std::unique_ptr<LiveServer>> LiveServer::Start(std::string path, Render render,
                                                              Capture capture) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("live socket path ", path, " is longer than ",
                     sizeof(addr.sun_path) - 1, " bytes; set XDG_RUNTIME_DIR to a shorter "
                     "directory"));
  }
  memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (!ClaimServer()) {
    return absl::AlreadyExistsError("a live server already runs in this process");
  }
  auto fail = [](absl::Status s, int fd1, int fd2) {
    if (fd1 >= 0) close(fd1);
    if (fd2 >= 0) close(fd2);
    // Relaxed: frees the claim; no path was published.
    server_pid.store(0, std::memory_order_relaxed);
    return s;
  };
  const int socket_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (socket_fd < 0) return fail(Errno("live socket", errno), -1, -1);
  const int fd = AboveProgramDescriptors(socket_fd);
  // A socket left at our path by a process of the same pid that died (pid reuse) is
  // stale: this process runs no other server. Anything else there is not ours to remove.
  if (struct stat st; lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return fail(absl::AlreadyExistsError(absl::StrCat(path, " exists and is not a socket")),
                  fd, -1);
    }
    unlink(path.c_str());
  }
  // The socket file is created with the umask's mode and narrowed to 0600 just after; in
  // between, the 0700 directory (ours, or XDG_RUNTIME_DIR) and the peer check guard it.
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return fail(Errno(absl::StrCat("cannot bind ", path), errno), fd, -1);
  }
  if (chmod(path.c_str(), 0600) != 0 || listen(fd, 16) != 0) {
    const int err = errno;
    unlink(path.c_str());
    return fail(Errno(absl::StrCat("cannot listen on ", path), err), fd, -1);
  }
  const int wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd < 0) {
    const int err = errno;
    unlink(path.c_str());
    return fail(Errno("live server eventfd", err), fd, -1);
  }
  const int wake = AboveProgramDescriptors(wake_fd);
  memcpy(exit_unlink_path, path.c_str(), path.size() + 1);
  // Release: publishes exit_unlink_path. Pairs with the acquire load in UnlinkAtExit().
  server_pid.store(getpid(), std::memory_order_release);
  static std::once_flag exit_handler;
  std::call_once(exit_handler, [] {
    atexit(UnlinkAtExit);
    pthread_atfork([] { running_descriptors_mu.lock(); },
                   [] { running_descriptors_mu.unlock(); }, CloseInheritedDescriptors);
  });
  std::unique_ptr<LiveServer> server(
      new LiveServer(std::move(path), std::move(render), std::move(capture), fd, wake));
  {
    std::lock_guard<std::mutex> lock(running_descriptors_mu);
    running_descriptors = ServerDescriptors{fd, wake, server->listen_id_, server->wake_id_};
  }
  server->thread_ = StartMemtraceThread([s = server.get()] { s->Run(); });
  return server;
}

void LiveServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (getpid() != owner_pid_) {
    // A fork child's copy: writing the eventfd would stop the parent's server, and the
    // socket's path is the parent's. Only this process's copies of the descriptors go.
    if (listen_id_.Names(listen_fd_)) close(listen_fd_);
    if (wake_id_.Names(wake_fd_)) close(wake_fd_);
    // The thread is the parent's: there is none here to join, and its handle is dropped
    // without one (a joinable std::thread destroyed would end the process).
    new (&thread_) std::thread();
    return;
  }
  // Release: pairs with the acquire loads in Stopping(); the thread sees it within
  // kStopCheckMs even when the eventfd is gone.
  stop_.store(true, std::memory_order_release);
  // Only into our own eventfd: the number may be a file of the program's now.
  if (wake_id_.Names(wake_fd_)) {
    const uint64_t one = 1;
    if (write(wake_fd_, &one, sizeof(one)) < 0) {
      // An eventfd refuses a write only when its counter would overflow: it is set already.
    }
  }
  thread_.join();
  unlink(path_.c_str());
  {
    std::lock_guard<std::mutex> lock(running_descriptors_mu);
    running_descriptors = ServerDescriptors{};
  }
  // Closed only where they are still ours.
  if (listen_id_.Names(listen_fd_)) close(listen_fd_);
  if (wake_id_.Names(wake_fd_)) close(wake_fd_);
  // Relaxed: the socket is gone already; the exit handler has nothing left to remove.
  server_pid.store(0, std::memory_order_relaxed);
}

void LiveServer::Run() {
  MarkInternalThread();
  // Anywhere: it sleeps but for a client, and is no reason to share the drainer's CPUs.
  PlaceMemtraceThread("memtrace-live", CpuList{});
  // Here, not in Start(): off the program's start-up.
  RemoveStaleSockets(path_);
  for (;;) {
    // A descriptor closed while poll() waits on it does not wake it: the wait is bounded,
    // and each wake looks at the stop flag and at the descriptors first.
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    const int n = poll(fds, 2, kStopCheckMs);
    if (Stopping()) return;
    if (!OwnsDescriptors()) return;  // the program took them: serving ends
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || fds[1].revents != 0) {
      if (n < 0) return;
      continue;
    }
    const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (client < 0) continue;  // the client left already, or no descriptors: try the next
    ServeClient(client);
    close(client);
  }
}

LiveRequest LiveServer::ReadRequest(int fd) {
  const absl::Time deadline = absl::Now() + kClientTimeout;
  // ParseLiveRequest() decides by then: a newline, or one byte past the longest line.
  char buf[kMaxRequestBytes + 1];
  size_t len = 0;
  while (WaitFor(fd, POLLIN, wake_fd_, deadline)) {
    const ssize_t n = recv(fd, buf + len, sizeof(buf) - len, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // an error, or the client closed without a full line
    len += static_cast<size_t>(n);
    const LiveRequest request = ParseLiveRequest(std::string_view(buf, len));
    if (request != LiveRequest::kIncomplete) return request;
  }
  return LiveRequest::kIncomplete;
}

void LiveServer::ServeClient(int fd) {
  ucred cred{};
  socklen_t cred_len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0 ||
      !PeerMayConnect(cred.uid, getuid())) {
    return;
  }
  std::string reply;
  switch (ReadRequest(fd)) {
    case LiveRequest::kSnapshot:
      reply = render_();
      break;
    case LiveRequest::kCapture:
      if (capture_ == nullptr) {
        reply = "{\"error\":\"this process serves no captures\"}";
        break;
      }
      // Each piece within kClientTimeout of the last: a capture of millions of blocks
      // takes a while whole, and a client that keeps reading keeps it going.
      // A client that reads as fast as the pieces come never makes Send() wait, where it
      // would see a stop: each piece asks first.
      capture_([&](std::string_view piece) {
        return !Stopping() && Send(fd, piece, absl::Now() + kClientTimeout);
      });
      return;
    case LiveRequest::kUnknown:
      reply = "{\"error\":\"unknown request; send snapshot or capture\"}";
      break;
    case LiveRequest::kTooLong:
      reply = absl::StrCat("{\"error\":\"request longer than ", kMaxRequestBytes, " bytes\"}");
      break;
    case LiveRequest::kIncomplete:
      return;  // silent, gone, or we are stopping: no reply
  }
  reply.push_back('\n');
  Send(fd, reply, absl::Now() + kClientTimeout);
}

bool LiveServer::Stopping() const {
  // Acquire: pairs with the release store in Stop().
  return stop_.load(std::memory_order_acquire);
}

bool LiveServer::Send(int fd, std::string_view bytes, absl::Time deadline) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN && WaitFor(fd, POLLOUT, wake_fd_, deadline)) {
      continue;
    } else {
      return false;  // slow or gone: never wait longer
    }
  }
  return true;
}

}  // namespace memtrace::runtime_internal
