// Copyright 2026 The memtrace Authors.
//
// live_target_process.h: live_target.cc run from a test, for the tests of the live
// endpoint (live_test.cc, snapshot_test.cc): the program, what it says it holds by its
// own count (Truth), a raw client of its socket (Connect, Ask), and what the tests read
// back (FindPair, Field).
//
// Thread safety: from the test's main thread.
//
// Example:
//   Target target;
//   Truth truth;
//   ASSERT_TRUE(target.WaitReady(&truth));
//   ... ask truth.pid's socket ...
//   EXPECT_EQ(target.Finish("stop"), 0);

#ifndef MEMTRACE_TESTS_LIVE_TARGET_PROCESS_H_
#define MEMTRACE_TESTS_LIVE_TARGET_PROCESS_H_

#include <fcntl.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "simdjson.h"
#include "tests/live_target_shape.h"
#include "tests/test_paths.h"

namespace memtrace::live_testing {

// What live_target said it holds, by its own count.
struct Truth {
  pid_t pid = 0;
  uint64_t live_bytes = 0, live_count = 0;
  uint64_t thread_bytes[kThreads] = {}, thread_count[kThreads] = {};
  // By thread (scope "worker/t<t>") and site.
  uint64_t site_bytes[kThreads][kSites] = {}, site_count[kThreads][kSites] = {};
};

// A program (live_target by default), running, with a pipe to its stdin and one from
// its stdout.
class Target {
 public:
  explicit Target(std::vector<std::string> argv = {Runfile("tests/live_target")}) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return;
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      execv(args[0], args.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    stdin_ = in[1];
    stdout_ = fdopen(out[0], "r");
  }
  ~Target() {
    if (stdin_ >= 0) close(stdin_);
    if (stdout_ != nullptr) fclose(stdout_);
    if (pid_ > 0 && status_ < 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // Reads the "ready" and "sites" lines; false if the program said something else or
  // ended.
  bool WaitReady(Truth* truth) {
    char line[512], sites[1024];
    if (stdout_ == nullptr || fgets(line, sizeof(line), stdout_) == nullptr ||
        fgets(sites, sizeof(sites), stdout_) == nullptr) {
      return false;
    }
    std::istringstream in(line);
    std::string word;
    in >> word >> truth->pid >> truth->live_bytes >> truth->live_count;
    for (int t = 0; t < kThreads; ++t) in >> truth->thread_bytes[t] >> truth->thread_count[t];
    std::istringstream by_site(sites);
    std::string sites_word;
    by_site >> sites_word;
    for (int t = 0; t < kThreads; ++t) {
      for (int k = 0; k < kSites; ++k) {
        by_site >> truth->site_bytes[t][k] >> truth->site_count[t][k];
      }
    }
    return word == "ready" && !in.fail() && truth->pid == pid_ && sites_word == "sites" &&
           !by_site.fail();
  }

  pid_t pid() const { return pid_; }  // the process this started

  // Reads live_preload_target's "ready <pid>" line: the pid of the program that
  // `memtrace run` started; 0 if it said something else.
  pid_t WaitReadyPid() {
    char line[128];
    if (stdout_ == nullptr || fgets(line, sizeof(line), stdout_) == nullptr) return 0;
    int pid = 0;
    return sscanf(line, "ready %d", &pid) == 1 ? pid : 0;
  }

  // Sends `command` ("stop" or "exit") and returns the exit status.
  int Finish(const std::string& command) {
    if (!Send(command)) return -1;
    return Wait();
  }

  // Sends one line.
  bool Send(const std::string& command) {
    const std::string line = command + "\n";
    return write(stdin_, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  }

  // The next line of its output without the newline; "(end)" when it ended.
  std::string ReadLine() {
    char line[1024];
    if (stdout_ == nullptr || fgets(line, sizeof(line), stdout_) == nullptr) return "(end)";
    std::string out(line);
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }

  // Ctrl-C, and the exit status.
  int Interrupt() {
    kill(pid_, SIGINT);
    return Wait();
  }

  // Waits for it to end on its own: its exit status, or 128 + the signal that ended it.
  int Wait() {
    int status = 0;
    if (waitpid(pid_, &status, 0) != pid_) return -1;
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return status_;
  }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  FILE* stdout_ = nullptr;
  int status_ = -1;
};

// A client socket connected to `path`, or -1.
inline int Connect(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` raw and reads the reply until the server closes.
inline std::string Ask(const std::string& path, const std::string& request) {
  const int fd = Connect(path);
  if (fd < 0) return "(no connection)";
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string reply;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) reply.append(buf, static_cast<size_t>(n));
  close(fd);
  return reply;
}

// A short private runtime directory, XDG_RUNTIME_DIR while this lives, so that the
// sockets of the programs a test starts are there: a socket's path is limited to 107
// bytes, and the test's own temporary directory can be longer. Removed at the end if
// empty (a socket left behind means a test failed).
class PrivateRuntimeDir {
 public:
  PrivateRuntimeDir() {
    char dir[] = "/tmp/memtrace-live-test.XXXXXX";
    if (mkdtemp(dir) == nullptr) return;
    path_ = dir;
    setenv("XDG_RUNTIME_DIR", dir, 1);
  }
  ~PrivateRuntimeDir() {
    unsetenv("XDG_RUNTIME_DIR");
    if (!path_.empty()) rmdir(path_.c_str());
  }
  PrivateRuntimeDir(const PrivateRuntimeDir&) = delete;
  PrivateRuntimeDir& operator=(const PrivateRuntimeDir&) = delete;

  // Empty when it could not be made.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Which of live_target's (thread, site) pairs the site at `addr` ("0x5110") in scope
// `path` ("worker/t2") is; false for none of them.
inline bool FindPair(std::string_view addr, std::string_view path, int* thread, int* site) {
  for (int t = 0; t < kThreads; ++t) {
    for (int k = 0; k < kSites; ++k) {
      if (addr == absl::StrCat("0x", absl::Hex(kSiteBase + kSiteStep * k)) &&
          path == absl::StrCat("worker/t", t)) {
        *thread = t;
        *site = k;
        return true;
      }
    }
  }
  return false;
}

// The unsigned integer `name` of a JSON object; a test failure when it has none.
inline uint64_t Field(simdjson::dom::element object, const char* name) {
  uint64_t v = ~uint64_t{0};
  EXPECT_EQ(object[name].get_uint64().get(v), simdjson::SUCCESS) << name;
  return v;
}

// Checks rows of (site, scope) pairs against what live_target counted: each row's `addr`
// and its scope path (the member `scope_key`) name one of the program's pairs, whose live
// bytes and blocks the row holds (in the member `usage_key`, or itself when null), and
// every pair has a row.
inline void ExpectPairsMatch(simdjson::dom::array rows, const char* scope_key,
                             const char* usage_key, const Truth& truth) {
  int pairs = 0;
  for (simdjson::dom::element row : rows) {
    std::string_view addr, path;
    ASSERT_EQ(row["addr"].get_string().get(addr), simdjson::SUCCESS);
    ASSERT_EQ(row[scope_key].get_string().get(path), simdjson::SUCCESS);
    int t = 0, k = 0;
    if (!FindPair(addr, path, &t, &k)) {
      ADD_FAILURE() << addr << " in " << path;
      continue;
    }
    ++pairs;
    const simdjson::dom::element usage = usage_key != nullptr ? row[usage_key].value() : row;
    EXPECT_EQ(Field(usage, "live_bytes"), truth.site_bytes[t][k]) << path << " " << addr;
    EXPECT_EQ(Field(usage, "live_count"), truth.site_count[t][k]) << path << " " << addr;
  }
  EXPECT_EQ(pairs, kThreads * kSites);
}

}  // namespace memtrace::live_testing

#endif  // MEMTRACE_TESTS_LIVE_TARGET_PROCESS_H_
