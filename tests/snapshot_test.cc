// Copyright 2026 The memtrace Authors.
//
// `memtrace snapshot PID -o FILE` (cli/snapshot_command.h) and the capture it writes
// (sinks/snapshot_capture.h): a program that serves its ledger (live_target.cc), stopped
// at a quiescent point, is captured; every command reads the capture and finds what the
// program counted itself: live bytes and blocks per scope and per call site, the
// allocations and releases it made before, and, between two snapshots, the blocks it
// added. The endpoint streams a capture a piece at a time and drops a client that stops
// reading.

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/internal/live_server.h"
#include "simdjson.h"
#include "tests/live_target_process.h"
#include "tests/run_program.h"
#include "tests/test_paths.h"

namespace memtrace {
namespace {

using live_testing::Ask;
using live_testing::Connect;
using live_testing::Field;
using live_testing::ExpectPairsMatch;
using live_testing::kBlocks;
using live_testing::kGrowBlocks;
using live_testing::kGrowBytes;
using live_testing::kThreads;
using live_testing::PrivateRuntimeDir;
using live_testing::Target;
using live_testing::Truth;
using runtime_internal::LiveServer;

std::string Cli() { return Runfile("cli/memtrace"); }

// The usage object of scope `path` in `summary --json`'s "scopes", or null.
simdjson::dom::element ScopeUsage(simdjson::dom::element root, const std::string& path) {
  for (simdjson::dom::element scope : root["scopes"].get_array()) {
    std::string_view p;
    if (scope["path"].get_string().get(p) == simdjson::SUCCESS && p == path) {
      return scope["usage"];
    }
  }
  ADD_FAILURE() << "no scope " << path;
  return root["no such scope"].value_unsafe();
}

class SnapshotTest : public testing::Test {
 protected:
  // The sockets in a private runtime directory; the captures in the test's own.
  void SetUp() override {
    runtime_dir_.emplace();
    dir_ = runtime_dir_->path();
    ASSERT_FALSE(dir_.empty());
    const char* out = getenv("TEST_TMPDIR");
    out_ = out != nullptr ? out : dir_;
  }
  void TearDown() override { runtime_dir_.reset(); }

  // `memtrace snapshot PID -o <out_>/NAME`; the capture's path.
  std::string Snapshot(pid_t pid, const std::string& name) {
    const std::string path = absl::StrCat(out_, "/", name);
    const Result r = RunProgram({Cli(), "snapshot", std::to_string(pid), "-o", path}, {});
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_NE(r.out.find(absl::StrCat("wrote ", path, " (a file of ")), std::string::npos) << r.out;
    return path;
  }

  std::optional<PrivateRuntimeDir> runtime_dir_;
  std::string dir_;
  std::string out_;
};

// The bytes live_target's thread `t` allocated: block i has 16 + (37 i + 101 t) % 2000
// bytes (live_target.cc).
uint64_t AllocatedBytes(int t) {
  uint64_t bytes = 0;
  for (int i = 0; i < kBlocks; ++i) {
    bytes += 16 + static_cast<uint64_t>((i * 37 + t * 101) % 2000);
  }
  return bytes;
}

// The program's own counts, by scope: every thread allocated kBlocks blocks in its scope
// and freed every third.
void ExpectSummaryMatches(const std::string& json, const Truth& truth) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(simdjson::padded_string(json)).get(root), simdjson::SUCCESS) << json;
  EXPECT_EQ(Field(root["snapshot_of"], "blocks"), truth.live_count) << json;
  EXPECT_EQ(Field(root["snapshot_of"], "bytes"), truth.live_bytes) << json;
  EXPECT_EQ(Field(root, "events"), truth.live_count);
  EXPECT_EQ(Field(root, "live_blocks"), truth.live_count);
  EXPECT_EQ(Field(root["totals"], "live_bytes"), truth.live_bytes);
  EXPECT_EQ(Field(root["totals"], "live_count"), truth.live_count);
  // What came before the moment, from the trailer: every allocation and release.
  const uint64_t freed_per_thread = (kBlocks + 2) / 3;
  EXPECT_EQ(Field(root["totals"], "allocated_count"), uint64_t{kThreads} * kBlocks);
  EXPECT_EQ(Field(root["totals"], "freed_count"), uint64_t{kThreads} * freed_per_thread);
  uint64_t allocated = 0;
  for (int t = 0; t < kThreads; ++t) allocated += AllocatedBytes(t);
  EXPECT_EQ(Field(root["totals"], "allocated_bytes"), allocated);
  EXPECT_EQ(Field(root["totals"], "freed_bytes"), allocated - truth.live_bytes);
  EXPECT_GE(Field(root["totals"], "high_water_bytes"), truth.live_bytes);
  for (int t = 0; t < kThreads; ++t) {
    const simdjson::dom::element usage = ScopeUsage(root, absl::StrCat("worker/t", t));
    EXPECT_EQ(Field(usage, "live_bytes"), truth.thread_bytes[t]) << t;
    EXPECT_EQ(Field(usage, "live_count"), truth.thread_count[t]) << t;
    EXPECT_EQ(Field(usage, "allocated_count"), uint64_t{kBlocks}) << t;
    EXPECT_EQ(Field(usage, "freed_count"), freed_per_thread) << t;
    EXPECT_EQ(Field(usage, "allocated_bytes"), AllocatedBytes(t)) << t;
  }
  bool complete = false;
  EXPECT_EQ(root["complete"].get_bool().get(complete), simdjson::SUCCESS);
  EXPECT_TRUE(complete) << json;
}

TEST_F(SnapshotTest, EveryCommandReadsWhatTheProgramCountedItself) {
  Target target;
  Truth truth;
  ASSERT_TRUE(target.WaitReady(&truth));
  const std::string capture = Snapshot(truth.pid, "quiescent.mtb");

  // summary, from the trailer and by replaying the events.
  for (const char* how : {"--noreplay", "--replay"}) {
    const Result summary = RunProgram({Cli(), "summary", "--json", how, capture}, {});
    ASSERT_EQ(summary.status, 0) << summary.err;
    ExpectSummaryMatches(summary.out, truth);
  }
  const Result text = RunProgram({Cli(), "summary", capture}, {});
  EXPECT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find(absl::StrCat("snapshot of pid ", truth.pid, " at ")), std::string::npos)
      << text.out;

  // top --by=live: each (site, scope) pair with the program's own count.
  const Result top = RunProgram({Cli(), "top", "--by=live", "--json", "--limit=100", capture}, {});
  ASSERT_EQ(top.status, 0) << top.err;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(simdjson::padded_string(top.out)).get(root), simdjson::SUCCESS);
  ExpectPairsMatch(root["rows"].get_array(), "scope", "usage", truth);

  // coverage counts what the program allocated before, in its scopes.
  const Result coverage = RunProgram({Cli(), "coverage", "--json", capture}, {});
  ASSERT_EQ(coverage.status, 0) << coverage.err;
  ASSERT_EQ(parser.parse(simdjson::padded_string(coverage.out)).get(root), simdjson::SUCCESS);
  uint64_t allocated = 0;
  for (int t = 0; t < kThreads; ++t) allocated += AllocatedBytes(t);
  EXPECT_EQ(Field(root, "allocated_scoped"), allocated) << coverage.out;
  EXPECT_EQ(Field(root, "live_scoped"), truth.live_bytes) << coverage.out;
  // The program freed blocks soon after making them, but a snapshot holds only the live
  // ones: those counts are not known, not 0.
  for (const char* unknown : {"temporaries", "temporary_bytes", "short_lived"}) {
    EXPECT_TRUE(root[unknown].is_null()) << unknown << ": " << coverage.out;
  }
  const Result coverage_text = RunProgram({Cli(), "coverage", capture}, {});
  EXPECT_NE(coverage_text.out.find("temporaries, short-lived   not known: a snapshot holds"),
            std::string::npos)
      << coverage_text.out;

  // peak refuses: the high-water moment came before the snapshot, and is not in it.
  const Result peak = RunProgram({Cli(), "peak", capture}, {});
  EXPECT_EQ(peak.status, 2);
  EXPECT_NE(peak.err.find(absl::StrCat("is a snapshot of pid ", truth.pid)), std::string::npos)
      << peak.err;
  EXPECT_NE(peak.err.find("top --by=live"), std::string::npos) << peak.err;

  // verify passes; report writes a page.
  const Result verify = RunProgram({Cli(), "verify", capture}, {});
  EXPECT_EQ(verify.status, 0) << verify.out << verify.err;
  const std::string html = absl::StrCat(out_, "/quiescent.html");
  const Result report = RunProgram({Cli(), "report", capture, "-o", html}, {});
  EXPECT_EQ(report.status, 0) << report.out << report.err;
  std::ifstream page(html);
  std::stringstream body;
  body << page.rdbuf();
  EXPECT_NE(body.str().find("<html"), std::string::npos);
  EXPECT_NE(body.str().find("worker/t3"), std::string::npos);

  EXPECT_EQ(target.Finish("stop"), 0);
}

TEST_F(SnapshotTest, DiffOfTwoSnapshotsIsWhatTheProgramAddedBetweenThem) {
  Target target;
  Truth truth;
  ASSERT_TRUE(target.WaitReady(&truth));
  const std::string before = Snapshot(truth.pid, "before.mtb");
  ASSERT_TRUE(target.Send("grow"));
  ASSERT_EQ(target.ReadLine(), "grown");
  const std::string after = Snapshot(truth.pid, "after.mtb");

  const Result diff = RunProgram({Cli(), "diff", "--json", before, after}, {});
  ASSERT_EQ(diff.status, 0) << diff.err;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(simdjson::padded_string(diff.out)).get(root), simdjson::SUCCESS);
  int rows = 0;
  for (simdjson::dom::element row : root["rows"].get_array()) {
    std::string_view path;
    ASSERT_EQ(row["path"].get_string().get(path), simdjson::SUCCESS);
    const bool grew = path == "TOTAL" || path == "worker/t0";
    int64_t live_delta = -1, allocated_delta = -1;
    ASSERT_EQ(row["live_delta"].get_int64().get(live_delta), simdjson::SUCCESS);
    ASSERT_EQ(row["allocated_delta"].get_int64().get(allocated_delta), simdjson::SUCCESS);
    const int64_t added = grew ? static_cast<int64_t>(kGrowBlocks * kGrowBytes) : 0;
    EXPECT_EQ(live_delta, added) << path;
    EXPECT_EQ(allocated_delta, added) << path;
    EXPECT_EQ(Field(row["after"], "live_count") - Field(row["before"], "live_count"),
              grew ? kGrowBlocks : 0)
        << path;
    ++rows;
  }
  EXPECT_EQ(rows, kThreads + 1) << diff.out;
  EXPECT_EQ(target.Finish("stop"), 0);
}

// The interposer's path: an unmodified program under `memtrace run --live`, whose sites
// are call stacks.
TEST_F(SnapshotTest, RunLiveProgramsSnapshotHoldsItsBlocksWithTheirStacks) {
  MEMTRACE_SKIP_UNDER_SANITIZERS();
  Target run({Cli(), "run", "--live", "--quiet", "--output=" + out_ + "/run.mtb", "--",
              Runfile("tests/live_preload_target")});
  const pid_t pid = run.WaitReadyPid();
  ASSERT_GT(pid, 0);
  const std::string capture = Snapshot(pid, "preload.mtb");
  const Result summary = RunProgram({Cli(), "summary", "--json", capture}, {});
  ASSERT_EQ(summary.status, 0) << summary.err;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(simdjson::padded_string(summary.out)).get(root), simdjson::SUCCESS);
  std::string_view source;
  EXPECT_EQ(root["source"].get_string().get(source), simdjson::SUCCESS);
  EXPECT_EQ(source, "preload");
  // As live_preload_target.c says: 1000 + 2000 + 4000 + 5000 bytes in 4 blocks, after 5
  // allocations and the free of the 3000.
  const simdjson::dom::element held = ScopeUsage(root, "held");
  EXPECT_EQ(Field(held, "live_bytes"), 12000u);
  EXPECT_EQ(Field(held, "live_count"), 4u);
  EXPECT_EQ(Field(held, "allocated_count"), 5u);
  EXPECT_EQ(Field(held, "freed_bytes"), 3000u);
  // Its sites are stacks, named from the program's own frames.
  const Result top = RunProgram({Cli(), "top", "--by=live", capture}, {});
  EXPECT_EQ(top.status, 0) << top.err;
  EXPECT_NE(top.out.find("main (tests/live_preload_target.c"), std::string::npos) << top.out;
  EXPECT_EQ(RunProgram({Cli(), "verify", capture}, {}).status, 0);
  // Not over the capture the process is writing (its lock is held): refused, and that
  // capture stays the run's own.
  const Result over = RunProgram(
      {Cli(), "snapshot", std::to_string(pid), "-o", out_ + "/run.mtb"}, {});
  EXPECT_EQ(over.status, 2) << over.out;
  EXPECT_NE(over.err.find("is a capture a running process is writing"), std::string::npos)
      << over.err;
  // Through a symbolic link: the file it names gets the snapshot, the link stays a link.
  const std::string target = out_ + "/linked.mtb", link = out_ + "/link.mtb";
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  {
    std::ofstream(target) << "old";
  }
  const Result via_link = RunProgram({Cli(), "snapshot", std::to_string(pid), "-o", link}, {});
  EXPECT_EQ(via_link.status, 0) << via_link.err;
  struct stat st;
  ASSERT_EQ(lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the link was replaced";
  EXPECT_EQ(RunProgram({Cli(), "verify", target}, {}).status, 0);
  EXPECT_EQ(run.Finish("done"), 0);
  EXPECT_EQ(RunProgram({Cli(), "verify", out_ + "/run.mtb"}, {}).status, 0)
      << "the run's own capture is whole";
}

TEST_F(SnapshotTest, BadRequestsSayWhatIsWrongAndHowToFixIt) {
  const Result no_output = RunProgram({Cli(), "snapshot", "1"}, {});
  EXPECT_EQ(no_output.status, 2);
  EXPECT_NE(no_output.err.find("-o FILE"), std::string::npos) << no_output.err;

  const Result no_process = RunProgram({Cli(), "snapshot", "999999999", "-o", "x.mtb"}, {});
  EXPECT_EQ(no_process.status, 1);
  EXPECT_NE(no_process.err.find("no process 999999999"), std::string::npos) << no_process.err;

  // This test's own process serves no ledger.
  const std::string file = absl::StrCat(out_, "/not_live.mtb");
  const Result not_live =
      RunProgram({Cli(), "snapshot", std::to_string(getpid()), "-o", file}, {});
  EXPECT_EQ(not_live.status, 1);
  EXPECT_NE(not_live.err.find("MEMTRACE_LIVE=1 or `memtrace run --live`"), std::string::npos)
      << not_live.err;
  EXPECT_NE(access(file.c_str(), F_OK), 0) << "nothing is left at -o";

  // A destination that is no plain file is refused before anything is asked, never
  // replaced by a rename.
  const Result device = RunProgram({Cli(), "snapshot", "1", "-o", "/dev/null"}, {});
  EXPECT_EQ(device.status, 2);
  EXPECT_NE(device.err.find("-o /dev/null is not a plain file"), std::string::npos) << device.err;
  struct stat st;
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

// A capture refused (an error line) or cut short (no trailer) leaves nothing at -o, and
// says why.
TEST_F(SnapshotTest, RefusedOrCutCaptureLeavesNoFileAndSaysWhy) {
  const std::string path = absl::StrCat(dir_, "/cut.sock");
  // What the server sends, set by the test between clients (on another thread than the
  // server's: under a lock).
  std::mutex mu;
  std::string reply;
  auto set_reply = [&](std::string r) {
    std::lock_guard<std::mutex> lock(mu);
    reply = std::move(r);
  };
  auto server = LiveServer::Start(
      path, [] { return std::string("{}"); },
      [&](LiveServer::Writer write) {
        std::string sent;
        {
          std::lock_guard<std::mutex> lock(mu);
          sent = reply;
        }
        write(sent);
      });
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string file = absl::StrCat(out_, "/cut.mtb");

  set_reply("{\"error\":\"the process holds 99 live blocks, more than 9\"}\n");
  const Result refused = RunProgram({Cli(), "snapshot", path, "-o", file}, {});
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("refused the request: the process holds 99 live blocks"),
            std::string::npos)
      << refused.err;
  EXPECT_NE(access(file.c_str(), F_OK), 0);

  set_reply("MTRACEB3\x01\x05{}");  // the magic and a record of 5 bytes cut at 2
  const Result cut = RunProgram({Cli(), "snapshot", path, "-o", file}, {});
  EXPECT_EQ(cut.status, 1);
  EXPECT_NE(cut.err.find("stopped sending before the capture's end"), std::string::npos)
      << cut.err;
  EXPECT_NE(access(file.c_str(), F_OK), 0);
  EXPECT_NE(access((file + ".partial").c_str(), F_OK), 0);
  (*server)->Stop();
}

// A server's capture is sent as it is made, and a client that stops reading is dropped
// after kClientTimeout without its reply; the next client is served.
TEST_F(SnapshotTest, ClientThatStopsReadingACaptureIsDroppedAndTheNextServed) {
  const std::string path = absl::StrCat(dir_, "/stream.sock");
  uint64_t pieces_sent = 0;
  bool writer_refused = false;
  auto server = LiveServer::Start(
      path, [] { return std::string("{\"ok\":1}"); },
      [&](LiveServer::Writer write) {
        // Far more than a socket's buffers hold: 256 MiB in 64 KiB pieces.
        const std::string piece(64 << 10, 'x');
        for (int i = 0; i < 4096; ++i) {
          if (!write(piece)) {
            writer_refused = true;
            return;
          }
          ++pieces_sent;
        }
      });
  ASSERT_TRUE(server.ok()) << server.status();
  const int silent = Connect(path);
  ASSERT_GE(silent, 0);
  ASSERT_EQ(send(silent, "capture\n", 8, MSG_NOSIGNAL), 8);
  // Served one at a time: the next client's reply comes once the silent one is dropped.
  EXPECT_EQ(Ask(path, "snapshot\n"), "{\"ok\":1}\n");
  EXPECT_TRUE(writer_refused);
  EXPECT_LT(pieces_sent, 4096u);
  close(silent);
  (*server)->Stop();
}

}  // namespace
}  // namespace memtrace
