// Copyright 2026 The memtrace Authors.
//
// fake_debuginfod.h: a debuginfod server on 127.0.0.1 for tests, serving files the test
// names by build id.
//
// The debuginfod protocol is plain HTTP: GET /buildid/<hex>/debuginfo or
// /buildid/<hex>/executable answers 200 with the file, or 404. This server answers those
// from a table the test fills (Serve()), one connection at a time, closing each after its
// answer, and logs every request path it gets, so a test can say what the client asked
// and how often.
//
// Thread safety: the server answers on its own thread; Serve(), requests() and url() may
// be called from any thread.
//
// Example:
//   FakeDebuginfod server;
//   server.Serve(build_id, "debuginfo", "/tmp/lib.debug");
//   setenv("DEBUGINFOD_URLS", server.url().c_str(), 1);

#ifndef MEMTRACE_TESTS_FAKE_DEBUGINFOD_H_
#define MEMTRACE_TESTS_FAKE_DEBUGINFOD_H_

#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace memtrace {

// The GNU build id of the ELF file at `path`, lower-case hex, what a server is asked by;
// empty when it has none or cannot be read.
std::string BuildIdOf(const std::string& path);

class FakeDebuginfod {
 public:
  // Listens on an unused port of 127.0.0.1. A test that cannot listen fails through
  // url() being empty.
  FakeDebuginfod();
  ~FakeDebuginfod();
  FakeDebuginfod(const FakeDebuginfod&) = delete;
  FakeDebuginfod& operator=(const FakeDebuginfod&) = delete;

  // Answers GET /buildid/<build_id>/<kind> ("debuginfo", "executable") with `file`.
  void Serve(const std::string& build_id, const std::string& kind, const std::string& file);

  // "http://127.0.0.1:PORT", for DEBUGINFOD_URLS; empty when the server could not start.
  std::string url() const { return url_; }

  // The paths of the requests answered so far, in order.
  std::vector<std::string> requests() const;

 private:
  void Run();
  void Answer(int connection);

  int listener_ = -1;
  int wake_[2] = {-1, -1};  // a byte on wake_[1] stops Run()
  std::string url_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> files_;  // request path -> file served
  std::vector<std::string> requests_;
  std::thread thread_;
};

}  // namespace memtrace

#endif  // MEMTRACE_TESTS_FAKE_DEBUGINFOD_H_
