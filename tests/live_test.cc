// Copyright 2026 The memtrace Authors.
//
// The live endpoint (runtime/internal/live_server.h) and its client (`memtrace live`,
// cli/live_command.h): a program that serves its ledger (live_target.cc) answers with the
// counts it computed itself; hostile clients change nothing; the socket is 0600, refuses
// other users, and is gone once the program ends.

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/live_command.h"
#include "gtest/gtest.h"
#include "runtime/internal/live_request.h"
#include "runtime/internal/live_server.h"
#include "simdjson.h"
#include "sinks/summary_table.h"
#include "tests/live_target_process.h"
#include "tests/run_program.h"
#include "tests/test_paths.h"

namespace memtrace {
namespace {

using live_testing::Ask;
using live_testing::Connect;
using live_testing::Field;
using live_testing::ExpectPairsMatch;
using live_testing::PrivateRuntimeDir;
using live_testing::kThreads;
using live_testing::Target;
using live_testing::Truth;
using runtime_internal::LiveServer;
using runtime_internal::LiveSocketPath;
using runtime_internal::PeerMayConnect;

// Checks a snapshot's totals and each worker scope against what the program counted.
void ExpectMatches(const std::string& json, const Truth& truth) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(simdjson::padded_string(json)).get(root), simdjson::SUCCESS) << json;
  EXPECT_EQ(Field(root["totals"], "live_bytes"), truth.live_bytes);
  EXPECT_EQ(Field(root["totals"], "live_count"), truth.live_count);
  EXPECT_GE(Field(root["totals"], "high_water_bytes"), truth.live_bytes);
  int found = 0;
  for (simdjson::dom::element scope : root["scopes"].get_array()) {
    std::string_view path;
    ASSERT_EQ(scope["path"].get_string().get(path), simdjson::SUCCESS);
    for (int t = 0; t < kThreads; ++t) {
      if (path != absl::StrCat("worker/t", t)) continue;
      ++found;
      EXPECT_EQ(Field(scope["usage"], "live_bytes"), truth.thread_bytes[t]) << path;
      EXPECT_EQ(Field(scope["usage"], "live_count"), truth.thread_count[t]) << path;
    }
  }
  EXPECT_EQ(found, kThreads) << json;
  // Each (site, scope) pair: the program's own count, and no other pair holds anything.
  ExpectPairsMatch(root["sites"].get_array(), "path", nullptr, truth);
  EXPECT_EQ(Field(root["sites_omitted"], "pairs"), 0u);
  bool complete = false;
  EXPECT_EQ(root["integrity"]["complete"].get_bool().get(complete), simdjson::SUCCESS);
  EXPECT_TRUE(complete) << json;
}

class LiveTest : public testing::Test {
 protected:
  void SetUp() override {
    runtime_dir_.emplace();
    dir_ = runtime_dir_->path();
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override { runtime_dir_.reset(); }
  std::string SocketOf(pid_t pid) const { return absl::StrCat(dir_, "/memtrace-", pid, ".sock"); }
  void ExpectPrivateSocketGoneAfter(const std::string& command);

  std::optional<PrivateRuntimeDir> runtime_dir_;
  std::string dir_;
};

TEST_F(LiveTest, SnapshotAtQuiescentPointMatchesTheProgramsOwnCounts) {
  Target target;
  Truth truth;
  ASSERT_TRUE(target.WaitReady(&truth));
  const absl::StatusOr<std::string> socket = LiveSocketFor(std::to_string(truth.pid));
  ASSERT_TRUE(socket.ok()) << socket.status();
  EXPECT_EQ(*socket, SocketOf(truth.pid));
  const absl::StatusOr<std::string> json = FetchLiveSnapshot(*socket);
  ASSERT_TRUE(json.ok()) << json.status();
  ExpectMatches(*json, truth);

  // The CLI prints the same object.
  const Result cli = RunProgram(
      {Runfile("cli/memtrace"), "live", std::to_string(truth.pid), "--once", "--json"}, {});
  EXPECT_EQ(cli.status, 0) << cli.err;
  ASSERT_FALSE(cli.out.empty());
  ExpectMatches(cli.out, truth);
  // And its text view names the total and the scopes.
  const Result view = RunProgram({Runfile("cli/memtrace"), "live", *socket, "--once"}, {});
  EXPECT_EQ(view.status, 0) << view.err;
  EXPECT_NE(view.out.find(absl::StrCat("in ", truth.live_count, " blocks")), std::string::npos)
      << view.out;
  EXPECT_NE(view.out.find("worker/t3"), std::string::npos) << view.out;
  // And the sites, by address (they are made up: in no module), each in its scope.
  EXPECT_NE(view.out.find("sites by live bytes"), std::string::npos) << view.out;
  EXPECT_NE(view.out.find("0x5130) in worker/t2"), std::string::npos) << view.out;

  EXPECT_EQ(target.Finish("stop"), 0);
}

// One refresh of `memtrace live` on a pipe: its lines up to the blank line after the
// layers.
std::string ReadRefresh(Target& view) {
  std::string out;
  bool layers = false;
  for (int i = 0; i < 200; ++i) {
    const std::string line = view.ReadLine();
    if (line == "(end)") break;
    if (line.rfind("layers by", 0) == 0) layers = true;
    if (layers && line.empty()) break;
    out += line + "\n";
  }
  return out;
}

// The line of `screen` that has both `a` and `b`, or "".
std::string LineWith(const std::string& screen, const std::string& a, const std::string& b) {
  std::istringstream in(screen);
  for (std::string line; std::getline(in, line);) {
    if (line.find(a) != std::string::npos && line.find(b) != std::string::npos) return line;
  }
  return "";
}

// Without a terminal the view prints one refresh a second, each with the growth since the
// first, until Ctrl-C.
TEST_F(LiveTest, ViewWithoutATerminalPrintsRefreshesWithGrowthUntilInterrupted) {
  Target target;
  Truth truth;
  ASSERT_TRUE(target.WaitReady(&truth));
  Target view({Runfile("cli/memtrace"), "live", std::to_string(truth.pid)});
  const std::string first = ReadRefresh(view);
  EXPECT_NE(first.find(absl::StrCat("in ", truth.live_count, " blocks (0 B since the view "
                                    "started)")),
            std::string::npos)
      << first;
  EXPECT_EQ(first.find("\033["), std::string::npos) << "a pipe's screen is not cleared";
  const std::string site = LineWith(first, "0x5100)", "in worker/t0");
  EXPECT_NE(site, "") << first;
  EXPECT_NE(site.find(" 0 B"), std::string::npos) << site;

  // live_target allocates 10 blocks of 1000 bytes at site 0x5100 in worker/t0.
  ASSERT_TRUE(target.Send("grow"));
  ASSERT_EQ(target.ReadLine(), "grown");
  std::string later;
  for (int i = 0; i < 5; ++i) {
    later = ReadRefresh(view);
    if (later.find(absl::StrCat("in ", truth.live_count + 10, " blocks")) != std::string::npos) {
      break;
    }
  }
  EXPECT_NE(later.find(absl::StrCat("in ", truth.live_count + 10,
                                    " blocks (+9.8 KiB since the view started)")),
            std::string::npos)
      << later;
  const std::string grown = LineWith(later, "0x5100)", "in worker/t0");
  EXPECT_NE(grown.find(FormatBytes(truth.site_bytes[0][0] + 10000)), std::string::npos) << grown;
  EXPECT_NE(grown.find(absl::StrCat(" ", truth.site_count[0][0] + 10, " ")), std::string::npos)
      << grown;
  EXPECT_NE(grown.find("+9.8 KiB"), std::string::npos) << grown;
  EXPECT_NE(LineWith(later, "  worker/t0 ", "+9.8 KiB"), "") << later;

  EXPECT_EQ(view.Interrupt(), 0);
  EXPECT_EQ(target.Finish("stop"), 0);
}

// The view ends, with status 0, when the process it watches ends (before, it said
// "cannot connect ... is the process traced with --live?" and exited 1).
TEST_F(LiveTest, TheViewEndsWithTheProcessItWatches) {
  Target target;
  Truth truth;
  ASSERT_TRUE(target.WaitReady(&truth));
  Target view({Runfile("cli/memtrace"), "live", std::to_string(truth.pid)});
  const std::string first = ReadRefresh(view);
  EXPECT_NE(first.find("blocks"), std::string::npos) << first;
  EXPECT_EQ(target.Finish("stop"), 0);
  EXPECT_EQ(view.Wait(), 0);
}

// Reads `fd` into *all until what it adds contains `text`, for at most 10 s; returns what
// it added.
std::string ReadUntil(int fd, const std::string& text, std::string* all) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  const size_t from = all->size();
  while (all->find(text, from) == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    all->append(buf, static_cast<size_t>(n));
  }
  return all->substr(from);
}

// On a terminal the view clears the screen for each refresh, g sorts by growth and q
// quits with status 0.
TEST_F(LiveTest, ViewOnATerminalTakesKeys) {
  Target target;
  Truth truth;
  ASSERT_TRUE(target.WaitReady(&truth));
  int terminal = -1;
  std::string memtrace = Runfile("cli/memtrace"), live = "live", pid = std::to_string(truth.pid);
  char* argv[] = {memtrace.data(), live.data(), pid.data(), nullptr};
  const pid_t view = forkpty(&terminal, nullptr, nullptr, nullptr);
  ASSERT_GE(view, 0);
  if (view == 0) {
    execv(argv[0], argv);
    _exit(127);
  }
  std::string all;
  const std::string first = ReadUntil(terminal, "sorted by live bytes", &all);
  EXPECT_NE(first.find("\033[H\033[2J"), std::string::npos) << first;
  ASSERT_EQ(write(terminal, "g", 1), 1);
  const std::string growth = ReadUntil(terminal, "sites by growth", &all);
  EXPECT_NE(growth.find("sorted by growth"), std::string::npos) << all;
  ASSERT_EQ(write(terminal, "q", 1), 1);
  int status = -1;
  EXPECT_EQ(waitpid(view, &status, 0), view);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << "\n" << all;
  close(terminal);
  EXPECT_EQ(target.Finish("stop"), 0);
}

// Runs live_target to its quiescent point, checks its socket is a 0600 socket of ours,
// ends it with `command` and checks the socket is gone.
void LiveTest::ExpectPrivateSocketGoneAfter(const std::string& command) {
  Target target;
  Truth truth;
  ASSERT_TRUE(target.WaitReady(&truth));
  struct stat st;
  ASSERT_EQ(lstat(SocketOf(truth.pid).c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, getuid());
  EXPECT_EQ(target.Finish(command), 0);
  EXPECT_NE(lstat(SocketOf(truth.pid).c_str(), &st), 0);
}

TEST_F(LiveTest, SocketIsPrivateAndRemovedWhenTheProgramStops) {
  ExpectPrivateSocketGoneAfter("stop");
}

// Only the exit handler can remove it then.
TEST_F(LiveTest, SocketIsRemovedWhenTheProgramExitsWithoutStopping) {
  ExpectPrivateSocketGoneAfter("exit");
}

TEST_F(LiveTest, HostileClientsChangeNothing) {
  Target target;
  Truth truth;
  ASSERT_TRUE(target.WaitReady(&truth));
  const std::string socket = SocketOf(truth.pid);

  EXPECT_EQ(Ask(socket, "hello\n"),
            "{\"error\":\"unknown request; send snapshot or capture\"}\n");
  EXPECT_EQ(Ask(socket, std::string(100000, 'x')),
            absl::StrCat("{\"error\":\"request longer than ", LiveServer::kMaxRequestBytes,
                         " bytes\"}\n"));
  // A request cut short: closed without a reply.
  EXPECT_EQ(Ask(socket, "snap"), "");

  // A client that connects and says nothing holds the server for its timeout, then is
  // dropped, and the next is served.
  const int silent = Connect(socket);
  ASSERT_GE(silent, 0);
  const absl::StatusOr<std::string> after_silent = FetchLiveSnapshot(socket);
  ASSERT_TRUE(after_silent.ok()) << after_silent.status();
  ExpectMatches(*after_silent, truth);
  char byte;
  EXPECT_EQ(recv(silent, &byte, 1, 0), 0);  // closed by the server, no reply
  close(silent);

  // 100 clients that connect and drop at once, some after half a request.
  for (int i = 0; i < 100; ++i) {
    const int fd = Connect(socket);
    if (fd >= 0 && i % 2 == 0) send(fd, "snap", 4, MSG_NOSIGNAL);
    if (fd >= 0) close(fd);
  }
  const absl::StatusOr<std::string> after = FetchLiveSnapshot(socket);
  ASSERT_TRUE(after.ok()) << after.status();
  ExpectMatches(*after, truth);

  EXPECT_EQ(target.Finish("stop"), 0);
}

// The interposer's path: `memtrace run --live` sets MEMTRACE_LIVE=1 for the program.
TEST_F(LiveTest, RunLiveServesAnUnmodifiedProgramsLedger) {
  MEMTRACE_SKIP_UNDER_SANITIZERS();
  const std::string capture = absl::StrCat(TempDir(), "/live_preload.mtb");
  Target run({Runfile("cli/memtrace"), "run", "--live", "--quiet", "--output=" + capture, "--",
              Runfile("tests/live_preload_target")});
  const pid_t pid = run.WaitReadyPid();
  ASSERT_GT(pid, 0);
  // `memtrace live $!` after `memtrace run --live -- prog &` names memtrace run, which is
  // not traced: its one traced child is read instead.
  ASSERT_NE(run.pid(), pid);
  const absl::StatusOr<std::string> via_run = LiveSocketFor(std::to_string(run.pid()));
  ASSERT_TRUE(via_run.ok()) << via_run.status();
  EXPECT_EQ(*via_run, SocketOf(pid));
  const absl::StatusOr<std::string> json = FetchLiveSnapshot(SocketOf(pid));
  ASSERT_TRUE(json.ok()) << json.status();
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(simdjson::padded_string(*json)).get(root), simdjson::SUCCESS);
  bool found = false;
  for (simdjson::dom::element scope : root["scopes"].get_array()) {
    std::string_view path;
    ASSERT_EQ(scope["path"].get_string().get(path), simdjson::SUCCESS);
    if (path != "held") continue;
    found = true;
    // As live_preload_target.c says: 1000 + 2000 + 4000 + 5000 bytes in 4 blocks.
    EXPECT_EQ(Field(scope["usage"], "live_bytes"), 12000u);
    EXPECT_EQ(Field(scope["usage"], "live_count"), 4u);
    EXPECT_EQ(Field(scope["usage"], "freed_bytes"), 3000u);
  }
  EXPECT_TRUE(found) << *json;
  // Its sites: the interposer's stacks, with their frames (one site or several: the
  // loop's calls may share one stack).
  uint64_t held_bytes = 0, held_count = 0;
  for (simdjson::dom::element site : root["sites"].get_array()) {
    std::string_view path;
    ASSERT_EQ(site["path"].get_string().get(path), simdjson::SUCCESS);
    if (path != "held") continue;
    held_bytes += Field(site, "live_bytes");
    held_count += Field(site, "live_count");
    EXPECT_GT(site["frames"].get_array().size(), 0u) << *json;
  }
  EXPECT_EQ(held_bytes, 12000u) << *json;
  EXPECT_EQ(held_count, 4u) << *json;
  EXPECT_EQ(run.Finish("done"), 0);
  struct stat st;
  EXPECT_NE(lstat(SocketOf(pid).c_str(), &st), 0);
}

TEST_F(LiveTest, ClientSaysWhyItCannotConnect) {
  // No such process: a pid above the kernel's limit (pid_max is at most 2^22).
  const Result none = RunProgram({Runfile("cli/memtrace"), "live", "99999999", "--once"}, {});
  EXPECT_EQ(none.status, 1);
  EXPECT_NE(none.err.find("no process 99999999"), std::string::npos) << none.err;
  // A process that does not serve: this test.
  const Result quiet =
      RunProgram({Runfile("cli/memtrace"), "live", std::to_string(getpid()), "--once"}, {});
  EXPECT_EQ(quiet.status, 1);
  EXPECT_NE(quiet.err.find("--live"), std::string::npos) << quiet.err;
  EXPECT_EQ(RunProgram({Runfile("cli/memtrace"), "live", "--once"}, {}).status, 2);
}

TEST_F(LiveTest, ClientRefusesAReplyThatIsNotASnapshot) {
  // A server that answers garbage.
  const std::string path = absl::StrCat(dir_, "/garbage.sock");
  auto server = LiveServer::Start(path, [] { return std::string("not json"); });
  ASSERT_TRUE(server.ok()) << server.status();
  const absl::StatusOr<std::string> reply = FetchLiveSnapshot(path);
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kDataLoss) << reply.status();
  const Result cli = RunProgram({Runfile("cli/memtrace"), "live", path, "--once"}, {});
  EXPECT_EQ(cli.status, 1);
  EXPECT_NE(cli.err.find("not JSON"), std::string::npos) << cli.err;
  (*server)->Stop();
  struct stat st;
  EXPECT_NE(lstat(path.c_str(), &st), 0);
}

// A client of another uid: the socket's directory and mode keep it out, and where they
// would not, the server's SO_PEERCRED check does (it is answered nothing and closed).
// Needs root, to become that uid; PeerMayConnect's own test covers the check otherwise.
TEST_F(LiveTest, AnotherUidIsRefusedByTheSocketAndByTheServer) {
  if (getuid() != 0) GTEST_SKIP() << "needs root to connect as another uid";
  const std::string path = absl::StrCat(dir_, "/peer.sock");
  auto server = LiveServer::Start(path, [] { return std::string("{\"ok\":1}"); });
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_EQ(Ask(path, "snapshot\n"), "{\"ok\":1}\n") << "the server answers its own uid";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof(addr.sun_path));
  memcpy(addr.sun_path, path.data(), path.size());
  // The child's exit status: 0 no connection, 1 connected and answered nothing, 2 answered.
  auto as_nobody = [&addr] {
    const pid_t pid = fork();
    if (pid == 0) {
      if (setgid(65534) != 0 || setuid(65534) != 0) _exit(9);
      const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
      if (fd < 0 || connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
        _exit(0);
      }
      static const char kRequest[] = "snapshot\n";
      send(fd, kRequest, sizeof(kRequest) - 1, MSG_NOSIGNAL);
      char c;
      _exit(recv(fd, &c, 1, 0) > 0 ? 2 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  EXPECT_EQ(as_nobody(), 0) << "the 0700 directory and the 0600 socket keep another uid out";
  // Open the way on the file system: the server itself must refuse.
  ASSERT_EQ(chmod(dir_.c_str(), 0711), 0);
  ASSERT_EQ(chmod(path.c_str(), 0666), 0);
  EXPECT_EQ(as_nobody(), 1) << "another uid reached the socket and must be answered nothing";
  ASSERT_EQ(chmod(dir_.c_str(), 0700), 0);
  EXPECT_EQ(Ask(path, "snapshot\n"), "{\"ok\":1}\n") << "the refusal changed nothing";
  (*server)->Stop();
}

// A child of fork() holds a copy of the server (its thread stays in the parent). Stopped
// there (a forked worker whose tracer stops as it exits), the copy closes the child's
// descriptors and nothing else: before, it woke the parent's thread through the shared
// eventfd, which stopped serving, and unlinked the parent's socket.
TEST_F(LiveTest, AForkedChildStoppingItsCopyLeavesTheParentServing) {
  const std::string path = absl::StrCat(dir_, "/forked.sock");
  auto server = LiveServer::Start(path, [] { return std::string("{\"ok\":1}"); });
  ASSERT_TRUE(server.ok()) << server.status();
  const pid_t pid = fork();
  if (pid == 0) {
    // Its copies of the server's descriptors (from 512 up: own_descriptor.h) were closed
    // at the fork: no socket is left there.
    int sockets = 0;
    for (int fd = 512; fd < 1024; ++fd) {
      struct stat st;
      if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode)) ++sockets;
    }
    (*server)->Stop();
    server->reset();
    _exit(sockets == 0 ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  struct stat st;
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << "the child removed the parent's socket";
  EXPECT_EQ(Ask(path, "snapshot\n"), "{\"ok\":1}\n") << "the parent stopped serving";
  (*server)->Stop();
}

TEST_F(LiveTest, OneServerPerProcess) {
  auto first = LiveServer::Start(absl::StrCat(dir_, "/a.sock"), [] { return "{}"; });
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = LiveServer::Start(absl::StrCat(dir_, "/b.sock"), [] { return "{}"; });
  EXPECT_EQ(second.status().code(), absl::StatusCode::kAlreadyExists);
  (*first)->Stop();
  auto third = LiveServer::Start(absl::StrCat(dir_, "/b.sock"), [] { return "{}"; });
  EXPECT_TRUE(third.ok()) << third.status();
}

// A pid that has ended: a child's, waited for.
pid_t EndedPid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

// A Unix socket bound at `path`; listening when `listen_too`. Its descriptor, or -1.
int BoundSocket(const std::string& path, bool listen_too) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0 || bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 ||
      (listen_too && listen(fd, 4) != 0)) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

// A server killed before it could remove its socket (SIGKILL: no exit handler) leaves the
// file behind; the next server started in the directory removes it, and only it: not a
// socket at which a server listens (a process of another pid namespace looks ended), not
// a file that is no socket, not a socket of a process that runs.
TEST_F(LiveTest, ASocketLeftByAKilledServerIsRemovedByTheNextServer) {
  const std::string stale = absl::StrCat(dir_, "/memtrace-", EndedPid(), ".sock");
  const std::string listening = absl::StrCat(dir_, "/memtrace-", EndedPid(), ".sock");
  const std::string not_socket = absl::StrCat(dir_, "/memtrace-", EndedPid(), ".sock");
  const std::string running = absl::StrCat(dir_, "/memtrace-", getppid(), ".sock");
  const std::string other_name = absl::StrCat(dir_, "/other-", EndedPid(), ".sock");
  const int dead = BoundSocket(stale, /*listen_too=*/false);
  ASSERT_GE(dead, 0) << strerror(errno);
  close(dead);  // the file stays, and nothing listens: as after a SIGKILL
  const int listener = BoundSocket(listening, /*listen_too=*/true);
  ASSERT_GE(listener, 0) << strerror(errno);
  const int other = BoundSocket(other_name, /*listen_too=*/false);
  ASSERT_GE(other, 0) << strerror(errno);
  close(other);
  const int parent = BoundSocket(running, /*listen_too=*/false);
  ASSERT_GE(parent, 0) << strerror(errno);
  close(parent);
  const int file = open(not_socket.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  ASSERT_GE(file, 0) << strerror(errno);
  close(file);

  const std::string own = absl::StrCat(dir_, "/memtrace-", getpid(), ".sock");
  auto server = LiveServer::Start(own, [] { return std::string("{\"ok\":1}"); });
  ASSERT_TRUE(server.ok()) << server.status();
  // The server sweeps before it serves: once it answers, the sweep is over.
  EXPECT_EQ(Ask(own, "snapshot\n"), "{\"ok\":1}\n");
  struct stat st;
  EXPECT_NE(lstat(stale.c_str(), &st), 0) << stale << " was left";
  EXPECT_EQ(lstat(listening.c_str(), &st), 0) << "a socket with a listener was removed";
  EXPECT_EQ(lstat(not_socket.c_str(), &st), 0) << "a file that is no socket was removed";
  EXPECT_EQ(lstat(running.c_str(), &st), 0) << "a running process's socket was removed";
  EXPECT_EQ(lstat(other_name.c_str(), &st), 0) << "a socket named otherwise was removed";
  (*server)->Stop();
  close(listener);
}

// The server's socket and eventfd sit far above the numbers a program's own files get
// (runtime/internal/own_descriptor.h): the lowest free descriptor, the one the program's
// next open() gets, is the same before the server starts and while it runs.
TEST_F(LiveTest, ItsDescriptorsLeaveTheProgramsNumbersFree) {
  auto lowest_free = [] {
    const int fd = dup(0);
    if (fd >= 0) close(fd);
    return fd;
  };
  const int before = lowest_free();
  ASSERT_GE(before, 0);
  auto server = LiveServer::Start(absl::StrCat(dir_, "/fds.sock"), [] { return "{}"; });
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(lowest_free(), before);
  (*server)->Stop();
}

TEST(LiveRequestTest, TheFirstLineDecidesOnceItEndsOrIsTooLong) {
  using runtime_internal::LiveRequest;
  using runtime_internal::ParseLiveRequest;
  EXPECT_EQ(ParseLiveRequest(""), LiveRequest::kIncomplete);
  EXPECT_EQ(ParseLiveRequest("snap"), LiveRequest::kIncomplete);
  EXPECT_EQ(ParseLiveRequest("snapshot"), LiveRequest::kIncomplete);
  EXPECT_EQ(ParseLiveRequest("snapshot\n"), LiveRequest::kSnapshot);
  EXPECT_EQ(ParseLiveRequest("snapshot\r\n"), LiveRequest::kSnapshot);
  EXPECT_EQ(ParseLiveRequest("snapshot\nhello\n"), LiveRequest::kSnapshot);
  EXPECT_EQ(ParseLiveRequest("snapshot \n"), LiveRequest::kUnknown);
  EXPECT_EQ(ParseLiveRequest("snapshot\r\r\n"), LiveRequest::kUnknown);
  EXPECT_EQ(ParseLiveRequest(std::string("snapshot\0\n", 10)), LiveRequest::kUnknown);
  EXPECT_EQ(ParseLiveRequest("capture"), LiveRequest::kIncomplete);
  EXPECT_EQ(ParseLiveRequest("capture\n"), LiveRequest::kCapture);
  EXPECT_EQ(ParseLiveRequest("capture\r\nsnapshot\n"), LiveRequest::kCapture);
  EXPECT_EQ(ParseLiveRequest("captures\n"), LiveRequest::kUnknown);
  EXPECT_EQ(ParseLiveRequest("\n"), LiveRequest::kUnknown);
  EXPECT_EQ(ParseLiveRequest("hello\nsnapshot\n"), LiveRequest::kUnknown);
  // The longest line still read, and one byte more.
  const std::string longest(LiveServer::kMaxRequestBytes, 'x');
  EXPECT_EQ(ParseLiveRequest(longest), LiveRequest::kIncomplete);
  EXPECT_EQ(ParseLiveRequest(longest + "\n"), LiveRequest::kUnknown);
  EXPECT_EQ(ParseLiveRequest(longest + "x"), LiveRequest::kTooLong);
  EXPECT_EQ(ParseLiveRequest(longest + "x\n"), LiveRequest::kTooLong);
}

TEST(LivePeerTest, OnlyTheSameUidMayConnect) {
  EXPECT_TRUE(PeerMayConnect(1000, 1000));
  EXPECT_TRUE(PeerMayConnect(0, 0));
  EXPECT_FALSE(PeerMayConnect(1001, 1000));
  EXPECT_FALSE(PeerMayConnect(0, 1000));  // root is no exception
  EXPECT_FALSE(PeerMayConnect(1000, 0));
}

TEST(LiveSocketPathTest, UsesXdgRuntimeDirWhenSet) {
  setenv("XDG_RUNTIME_DIR", "/run/user/1000", 1);
  const absl::StatusOr<std::string> path = LiveSocketPath(42, 1000, /*create_dir=*/false);
  unsetenv("XDG_RUNTIME_DIR");
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, "/run/user/1000/memtrace-42.sock");
}

TEST(LiveSocketPathTest, RefusesATmpDirectoryOwnedByAnotherUid) {
  unsetenv("XDG_RUNTIME_DIR");
  // A uid no directory is made for: as root, mkdir makes it ours (uid 0), not 54321's;
  // as anyone else, it exists already made by us, or cannot be made.
  const uid_t other = getuid() == 54321 ? 54322 : 54321;
  const std::string dir = absl::StrCat("/tmp/memtrace-", other);
  const bool existed = access(dir.c_str(), F_OK) == 0;
  const absl::StatusOr<std::string> path = LiveSocketPath(42, other, /*create_dir=*/true);
  if (!existed) rmdir(dir.c_str());
  EXPECT_FALSE(path.ok());
  if (getuid() == 0 || existed) {
    EXPECT_EQ(path.status().code(), absl::StatusCode::kPermissionDenied) << path.status();
  }

  // Our own is made 0700 (or was made before; no one else may write into it), and used.
  const absl::StatusOr<std::string> own = LiveSocketPath(42, getuid(), /*create_dir=*/true);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(*own, absl::StrCat("/tmp/memtrace-", getuid(), "/42.sock"));
  struct stat st;
  ASSERT_EQ(lstat(absl::StrCat("/tmp/memtrace-", getuid()).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 022, 0u);
}

}  // namespace
}  // namespace memtrace
