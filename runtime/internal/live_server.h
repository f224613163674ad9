// Copyright 2026 The memtrace Authors.
//
// live_server.h: a Unix domain socket that serves the ledger of the running process
// (`memtrace live PID`, Config::live, MEMTRACE_LIVE=1).
//
// Where the socket is (LiveSocketPath):
//   $XDG_RUNTIME_DIR/memtrace-<pid>.sock            when XDG_RUNTIME_DIR is set
//   /tmp/memtrace-<uid>/<pid>.sock                 otherwise; the directory is created
//                                                  0700 and refused unless it is a real
//                                                  directory owned by this uid and
//                                                  writable by it alone
// The socket is made 0600 and unlinked by Stop(), and at exit() by a handler registered
// on the first Start(), for a program that exits without stopping its tracer. A process
// killed before either runs leaves its socket: the next server started in the directory
// removes it (RemoveStaleSockets).
//
// Protocol: a client sends one line (live_request.h parses what it sends), the server
// answers and closes:
//   "snapshot\n"  one line, the rendered reply (a JSON object) and "\n". The tracer's
//                 reply is the object `memtrace summary --json` prints with "sites" added:
//                 the kTopSites (site, scope) pairs holding the most live bytes,
//                 unsymbolized (FormatSummaryJson, Snapshot::sites).
//   "capture\n"   a binary capture of the blocks live now (sinks/snapshot_capture.h,
//                 `memtrace snapshot`), streamed in pieces as the capture function makes
//                 them; or, when it cannot be made, one {"error":"..."} line. A capture
//                 starts with its magic ("MTRACEB"), never with "{".
// Any other request is answered {"error":"..."}\n and closed. The request is read with a
// bound (kMaxRequestBytes) and a timeout (kClientTimeout), and the reply is sent with
// MSG_NOSIGNAL: a snapshot's line whole within kClientTimeout, a capture's each piece
// within kClientTimeout of the last, so a slow, silent or hostile client is dropped and
// never holds the program. A capture may be large (tens of bytes a live block): it is
// sent as it is encoded, never held whole.
// One client at a time: others wait in the listen backlog.
//
// Security: only a peer of the process's own uid (SO_PEERCRED; PeerMayConnect) is served;
// any other is closed at once. Root is not special: a root client of a non-root program
// is refused too.
//
// Cost: nothing on the recording path. While no client is connected, the server thread
// sleeps in poll() on the listening socket and an eventfd that Stop() signals, waking for
// a client, to stop, and every kStopCheckMs to see that its descriptors are still its own
// (a daemon closes every descriptor, and may be given their numbers for its own files:
// the server then stops serving, and never reads, accepts on or writes them). A reply costs one render (for the tracer: a flush
// and a snapshot, which take the drainer's state lock as Tracer::TakeSnapshot() does from
// any thread); a capture one copy of the live blocks under that lock
// (Recorder::CaptureLive), encoded and sent after it is released.
//
// Thread safety: Start() and Stop() from one owner; at most one server runs per process
// (a second Start() is kAlreadyExists), since the socket's path names only the pid. A
// child of fork() has no server (the thread stays in the parent; the child's copies of
// its descriptors are closed at the fork, and Stop() on its copy of the object touches
// nothing of the parent's) and may start its own, at its own pid's path. The
// render function is called on the server's thread, which is memtrace's own
// (memtrace_thread.h) and marked internal, so its allocations are never traced.
//
//   auto server = LiveServer::Start(
//       LiveSocketPath(getpid()).value(),
//       [&] { return FormatSummaryJson(tracer->TakeSnapshot()); },
//       [&](LiveServer::Writer write) { WriteSnapshotCapture(..., write); });
//   ...
//   (*server)->Stop();

#ifndef MEMTRACE_RUNTIME_INTERNAL_LIVE_SERVER_H_
#define MEMTRACE_RUNTIME_INTERNAL_LIVE_SERVER_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/internal/live_request.h"
#include "runtime/internal/own_descriptor.h"

namespace memtrace::runtime_internal {

// The socket path for process `pid` as seen by a process of uid `uid` with the current
// environment (see above). With `create_dir`, the /tmp/memtrace-<uid> directory is created
// if missing; either way an existing one is checked (a directory, not a link, owned by
// `uid`). Errors say which path is wrong and why.
absl::StatusOr<std::string> LiveSocketPath(pid_t pid, uid_t uid, bool create_dir);

// Removes the sockets in `path`'s directory that servers killed before they could remove
// their own left there (SIGKILL, a crash: no exit handler ran). Only where `path` is this
// process's, as LiveSocketPath() names it ("<pid>.sock", "memtrace-<pid>.sock"), and only
// sockets named so, of this uid, of a pid that no longer runs, at which no server listens
// (a process of another pid namespace sharing the directory looks gone, and listens).
// LiveServer::Run() calls it once, on its own thread. The checks and the unlink are not
// one step: a process that, in between, takes over the path (a reused pid starting its
// server, or another namespace's server between its bind() and listen()) can lose its
// socket; `memtrace live` then cannot reach it.
void RemoveStaleSockets(const std::string& path);

// Whether a peer of uid `peer_uid` may read the ledger of a process of uid `own_uid`:
// only the same uid.
bool PeerMayConnect(uid_t peer_uid, uid_t own_uid) noexcept;

class LiveServer {
 public:
  static constexpr size_t kMaxRequestBytes = kMaxLiveRequestBytes;
  static constexpr absl::Duration kClientTimeout = absl::Seconds(1);
  // The longest the server thread sleeps without looking at stop_ and at its descriptors.
  static constexpr int kStopCheckMs = 200;
  // The tracer's reply lists at most this many call sites (Tracer::TakeSnapshot).
  static constexpr uint32_t kTopSites = 50;

  using Render = std::function<std::string()>;
  // Sends bytes to the client; false once the client is gone or took longer than
  // kClientTimeout, or the server is stopping: the caller then stops writing.
  using Writer = absl::FunctionRef<bool(std::string_view)>;
  // Writes a capture through the writer it is given, a piece at a time.
  using Capture = std::function<void(Writer)>;

  // Binds and listens on `path` (an existing socket there, left by a process of the same
  // pid that died, is replaced) and starts the server thread. `render` answers
  // "snapshot"; `capture` answers "capture" (null: the request gets an error reply).
  static absl::StatusOr<std::unique_ptr<LiveServer>> Start(std::string path, Render render,
                                                           Capture capture = nullptr);

  // Stops the thread (promptly: at most one client's timeout when a reply is in flight)
  // and unlinks the socket. Idempotent. In a child of fork() (the server's copy, whose
  // thread, socket path and eventfd's other end are the parent's), it closes this
  // process's copies of the descriptors and nothing else: the parent keeps serving.
  void Stop();
  ~LiveServer() { Stop(); }

  LiveServer(const LiveServer&) = delete;
  LiveServer& operator=(const LiveServer&) = delete;

  const std::string& path() const noexcept { return path_; }

 private:
  LiveServer(std::string path, Render render, Capture capture, int listen_fd, int wake_fd);
  void Run();
  void ServeClient(int fd);
  // Sends all of `bytes` by `deadline`; false when the client is gone, too slow, or the
  // server is stopping.
  bool Send(int fd, std::string_view bytes, absl::Time deadline);
  // Whether Stop() has asked the thread to end.
  bool Stopping() const;
  // Whether the socket and the eventfd are still this server's: a program that closes
  // descriptors it did not open (a daemon closes them all) may have been given their
  // numbers for files of its own, which the server must not read, accept on or write.
  bool OwnsDescriptors() const;
  // Reads until the request is known (ParseLiveRequest); kIncomplete on a timeout, an
  // error, a client that left, or a stop.
  LiveRequest ReadRequest(int fd);

  const std::string path_;
  const Render render_;
  const Capture capture_;
  const int listen_fd_;
  const int wake_fd_;  // an eventfd: Stop() writes it, the poll()s of Run() wake
  const DescriptorIdentity listen_id_;
  const DescriptorIdentity wake_id_;
  // Set by Stop() (release), read by the server thread (acquire) at least every
  // kStopCheck: the eventfd wakes it at once, unless the program closed it.
  std::atomic<bool> stop_{false};
  std::thread thread_;
  const pid_t owner_pid_;  // the process whose thread serves; a fork child's copy does not
  bool stopped_ = false;  // owner only
};

}  // namespace memtrace::runtime_internal

#endif  // MEMTRACE_RUNTIME_INTERNAL_LIVE_SERVER_H_
