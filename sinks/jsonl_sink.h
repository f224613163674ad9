// Copyright 2026 The memtrace Authors.
//
// jsonl_sink.h: the capture file, one JSON object per line (docs/capture-format.md), or
// the same records in the compact binary encoding (binary_encoding.h; paths ending in
// .mtb). The name stays from when JSONL was the only encoding: everything but the bytes of
// each record (the queue, the writer thread, tables, the trailer) is shared.
//
// A JsonlSink is an EventObserver (runtime/event_observer.h): attach it to a tracer's
// recorder before Start(), and call Finish() with a final snapshot after Stop(). The file
// holds a header line, table lines (layers, scopes, sites) written the first time an
// event refers to them, one line per event, and a trailer with the totals and the
// integrity block. A capture without a trailer is truncated.
//
// Sinks never block allocating threads, and never hold up the drainer for I/O: the
// drainer's OnEpochRecords hands over the epoch's records without a copy (OnEpoch copies
// them) into a bounded queue, and a writer thread formats and writes them. If the queue is full (the disk is slower than the program), the epoch's records
// are dropped and counted (events_lost), and the trailer marks the capture partial.
// Write errors (disk full, a closed pipe, a removed directory) are kept as the sink's
// status, counted, and reported in the trailer when it can still be written; tracing goes
// on either way. A capture file removed while open (rm -rf of its directory) still
// accepts writes on Linux, into a file nobody can read: the sink notices at its next
// flush (the file's link count is 0) and reports it like a write error.
//
// Thread safety: Open/Finish from the owner; OnEpoch/OnStop from the drainer; status()
// and stats() from any thread.

#ifndef MEMTRACE_SINKS_JSONL_SINK_H_
#define MEMTRACE_SINKS_JSONL_SINK_H_

#include <sys/stat.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/internal/cpu_list.h"
#include "runtime/event_observer.h"
#include "runtime/internal/module_map.h"
#include "runtime/internal/site_table.h"
#include "runtime/snapshot.h"
#include "runtime/internal/thread_cpu_time.h"
#include "sinks/binary_encoding.h"
#include "sinks/capture_ends.h"
#include "sinks/zstd_file_stream.h"
#include "transport/cache_line.h"
#include "transport/fibonacci_index.h"

namespace memtrace {

// How records are written: JSONL text (sinks/jsonl_encoding.h) or the compact binary form
// (sinks/binary_encoding.h), several times cheaper to write and ~10x smaller.
enum class CaptureEncoding : uint8_t { kJsonl, kBinary };

struct JsonlSinkOptions {
  // Open() picks kBinary by itself for paths ending in ".mtb" or ".mtb.zst".
  CaptureEncoding encoding = CaptureEncoding::kJsonl;
  // Compress the capture with zstd (a single zstd frame; `zstd -d` or the capture reader
  // reads it). Open() turns this on by itself for paths ending in ".zst".
  bool zstd = false;
  int zstd_level = 3;
  // Records waiting for the writer, at most; beyond this an epoch's records are dropped
  // and counted. 2M records (64 MiB of records) by default.
  size_t max_queued_records = size_t{2} << 20;
  // When the queue is full: 0 drops the epoch's records at once (counted); a positive
  // value makes the drainer wait up to this long for the writer first. Waiting slows the
  // drainer, so the threads' rings fill and the recorder's overflow policy applies: the
  // program is paced by the disk instead of losing records (the interposer's choice).
  absl::Duration max_backpressure = absl::ZeroDuration();
  // The header's `source` ("runtime", or "preload" for the interposer), and extra members
  // for the header object, as raw JSON text (`"interposer":{...}`), or empty.
  std::string source = "runtime";
  std::string header_fields;
  // Distinct sites written before the rest share the "other sites" bucket; the same bound
  // as the recorder's (Config::request_site_capacity_max), so both count the same sites.
  uint32_t site_capacity = kDefaultSiteCapacity;
  // The interposer's sampling interval (0: not sampled). When set, every allocation line
  // carries its weight, 1 / (1 - exp(-size / interval)) (docs/capture-format.md).
  uint64_t sample_interval_bytes = 0;
  // The CPUs the writer thread ("memtrace-write") may run on (runtime/internal/cpu_list.h); empty:
  // wherever the kernel puts it. Open() and FromStream() refuse a CPU that is not online.
  CpuList writer_cpus;
  // A bound on the capture's size, for a program left traced for hours (0: none). Once
  // the next epoch's records would take the capture's bytes (as encoded, before any
  // compression) past it, no more records are written: they are counted
  // (events_past_limit), and the trailer, written all the same, says so and keeps the
  // totals and the integrity block of the whole run (the ledger's, which sees every
  // record). An epoch goes in whole or not at all. The closing lines (module map,
  // trailer) come after the bound, a few KiB.
  uint64_t max_bytes = 0;
};

struct JsonlSinkStats {
  uint64_t events_written = 0;
  // Of those, the events written as records of their own: all but call stacks, which
  // become site lines. A reader counts exactly these as the capture's events.
  uint64_t event_lines = 0;
  uint64_t events_lost = 0;    // dropped: queue full, or written after a write error
  // Not written: the capture had reached JsonlSinkOptions::max_bytes.
  uint64_t events_past_limit = 0;
  uint64_t bytes_written = 0;
  uint64_t write_errors = 0;
  // Two different call stacks sent under one 64-bit hash (event.h): the later one was
  // attributed to the earlier. Expected to stay 0.
  uint64_t stack_collisions = 0;
  // Times the program closed the capture's descriptor and the sink opened the file again
  // by its path (Open()'s sinks), losing nothing.
  uint64_t reopened = 0;
  // CPU time (user + system) the writer thread has used so far: encoding, compressing and
  // writing (runtime/internal/thread_cpu_time.h).
  uint64_t writer_cpu_ns = 0;
};

// The sink owns its cache lines (transport/cache_line.h): it is made on a program thread,
// and its writer updates the encoder's state in it for every record it writes.
class alignas(kCacheLineSize) JsonlSink final : public EventObserver {
 public:
  // Creates (truncates) `path` and writes the header. Errors say what and where. The
  // path's extension may switch options on: ".zst" compresses, ".mtb" (or ".mtb.zst")
  // writes the binary encoding. A regular file is locked (flock) while the sink has it
  // open: a second sink on the same file, in this process or another, gets
  // kUnavailable and leaves the file as it is.
  static absl::StatusOr<std::unique_ptr<JsonlSink>> Open(
      const std::string& path, const JsonlSinkOptions& options = JsonlSinkOptions{});
  // What Open() turns on for `path`: zstd for ".zst", the binary encoding for ".mtb" and
  // ".mtb.zst". For callers that open a variant of the path (a ".exec1" suffix).
  static void ApplyPathExtension(const std::string& path, JsonlSinkOptions* options);
  // Writes to an open stream (a pipe, stdout). The sink closes it if `owned`, and so does
  // a refusal.
  static absl::StatusOr<std::unique_ptr<JsonlSink>> FromStream(
      FILE* stream, bool owned, const std::string& name,
      const JsonlSinkOptions& options = JsonlSinkOptions{});

  ~JsonlSink() override;

  void OnEpoch(uint32_t epoch, int64_t epoch_start_unix_ns,
               std::span<const ObservedEvent> events) noexcept override;
  void OnEpochRecords(uint32_t epoch, int64_t epoch_start_unix_ns,
                      ObservedBatch& events) noexcept override;
  // Written as a "thread" line before the thread's first event, or in the next batch for
  // a thread named again (docs/capture-format.md).
  void OnThreadStart(uint32_t thread, int32_t tid, const char* name) noexcept override;
  // Kept for the trailer's "timeline" (docs/capture-format.md): every sample until
  // kMaxTimelineSamples are kept, then every other one of those and of the later ones, and
  // so on, and always the last.
  void OnUsageSample(const UsageSample& sample) noexcept override;
  static constexpr size_t kMaxTimelineSamples = 2048;

  // Writes everything queued, the module map (runtime/internal/module_map.h), then the trailer
  // from `final_snapshot` (take it after Stop(), so it includes everything), and closes
  // the file. `trailer_fields` are extra members for the trailer object as raw JSON text
  // (`"ended_by":"exit"`), or empty. `mark_partial` writes `"complete":false` whatever the
  // counters say (the program ended by a fatal signal). Returns the first write error, if
  // any. Idempotent. Detaches the sink from its tracer. Called while the tracer still
  // records, the capture ends all the same, marked partial (`"ended_by":"finish while
  // recording"`), and kFailedPrecondition says so.
  absl::Status Finish(const Snapshot& final_snapshot, std::string_view trailer_fields = {},
                      bool mark_partial = false);

  absl::Status status() const;
  JsonlSinkStats stats() const;

  // Modules (runtime/internal/module_map.h) to list in the capture's module map at Finish() even if
  // they are unloaded by then: the interposer hands over what is loaded before each
  // dlclose(). Each distinct one is kept once; one still loaded at Finish() is listed
  // as loaded. Any thread.
  void KeepModules(const std::vector<ModuleInfo>& modules);

  // For a child forked while the sink was open, in the child, before anything else uses
  // the sink there: closes the child's copy of the file descriptor, so the capture file's
  // lock (Open()) goes when the parent closes the file, not when the child ends. Touches
  // nothing else: the stream's own lock may be held by a thread the child does not have.
  // The sink must not be used in that child afterwards.
  void ReleaseInForkedChild() noexcept;

 private:
  struct Batch {
    uint32_t epoch;
    int64_t start_unix_ns;
    ObservedBatch events;
    // Of `events`, the first `thread_starts` are threads that took a ring (kThreadStart,
    // OnThreadStart()): lines of their own, not records.
    size_t thread_starts = 0;
    size_t records() const noexcept { return events.size() - thread_starts; }
  };

  // FromStream(), and Open() with the file's absolute path for Reopen() ("": none).
  static absl::StatusOr<std::unique_ptr<JsonlSink>> Create(FILE* stream, bool owned,
                                                           const std::string& name,
                                                           const JsonlSinkOptions& options,
                                                           std::string reopen_path);
  JsonlSink(FILE* stream, bool owned, std::string name, const JsonlSinkOptions& options,
            std::string reopen_path);
  // A vector the writer gave back (empty, with capacity), or a new one.
  ObservedBatch TakeSpare();
  // Past the size limit (max_bytes): counts `n` records there and says so, and the
  // epoch goes no further. False without a limit, or before it is reached.
  bool CountedPastLimit(size_t n) noexcept;
  // An epoch (or slice) without records: the thread lines waiting, if any, go out alone
  // (a thread renamed after its records were written has no record to go before).
  void EnqueueThreadsAlone(uint32_t epoch, int64_t epoch_start_unix_ns) noexcept;
  // Queues an epoch's records for the writer, waiting or dropping as the options say,
  // after the threads that took a ring since the last batch (thread_starts_).
  void Enqueue(uint32_t epoch, int64_t epoch_start_unix_ns,
               ObservedBatch&& batch) noexcept;
  void WriterLoop();
  void WriteBatch(const Batch& batch);
  // Table lines, written before the first event that refers to them.
  void EnsureScope(uint32_t path) {
    if (path >= scopes_written_.size() || !scopes_written_[path]) WriteScope(path);
  }
  void EnsureLayer(uint8_t layer) {
    if (!layers_written_[layer]) WriteLayer(layer);
  }
  void WriteScope(uint32_t path);  // and its parents
  // Mid-batch: writes the buffer once it holds kFlushBytes, except under max_bytes, where a
  // batch goes out whole or not at all (WriteBatch()). Inline: WriteBatch() asks after
  // every event.
  void FlushIfFull() {
    if (options_.max_bytes != 0) return;
    const size_t buffered =
        options_.encoding == CaptureEncoding::kBinary ? binary_.size() : buffer_.size();
    if (__builtin_expect(buffered >= kFlushBytes, 0)) FlushOutput();
  }
  static constexpr size_t kFlushBytes = size_t{1} << 20;
  void WriteLayer(uint8_t layer);
  // The site's id; writes the site's line the first time. Inline: once per allocation.
  uint32_t SiteId(uint64_t site) {
    RecentSite& recent = recent_sites_[FibonacciIndex(site, kRecentSitesLog2)];
    if (__builtin_expect(recent.site == site && recent.id != kNoSite, 1)) return recent.id;
    recent.site = site;
    recent.id = SiteIdSlow(site);
    return recent.id;
  }
  uint32_t SiteIdSlow(uint64_t site);
  void AddStackFrames(const ObservedEvent& o);
  // Writes a header, table, module or trailer line (JSON text, no newline) in the
  // capture's encoding. Writer thread only (and the constructor, before it starts).
  void Emit(const std::string& line);
  void FlushOutput();
  // The header and the modules loaded at start, written by the constructor on the thread
  // that opens the sink, before the writer starts: a process killed right after it
  // starts (SIGKILL, a shell's `kill -9 $$`) still leaves a capture that says what it
  // was and symbolizes.
  void FlushFirstLines();
  void CloseOutput();
  // False, with the status set, when the stream must not be written: its descriptor no
  // longer refers to the file it was opened on (the program closed it, and the number
  // may be a file of the program's now), or the file has no name left (it or its
  // directory was removed: writes would succeed, but nobody could read them).
  bool CheckStream();
  // Whether `fd` is the file the sink was made on (fills *st).
  bool IsCapture(int fd, struct stat* st) const;
  // After the program closed the stream's descriptor: opens the same file again by its
  // absolute path (Open()'s sinks only), appending, under the lock again. False when
  // that cannot be done or the path now names another file.
  bool Reopen();
  // Sets the status (the first failure wins) and counts a write error.
  void Fail(std::string_view what);

  std::unique_ptr<ZstdFileStream> zstd_;  // when compressing

  FILE* stream_;
  struct stat identity_ {};   // the stream's file when the sink was made (CheckStream())
  bool stream_lost_ = false;  // writer thread: the descriptor is not ours any more
  const bool owned_;
  const std::string name_;
  const std::string reopen_path_;  // Open()'s file, absolute; "" for a stream handed in
  const JsonlSinkOptions options_;

  mutable std::mutex mu_;
  // Threads that took a ring since the last batch (OnThreadStart()), as kThreadStart
  // records for the next batch's front. The drainer's thread only.
  std::vector<ObservedEvent> thread_starts_;
  // Memory over time (OnUsageSample), under mu_: the samples kept, one in every
  // timeline_stride_ of those seen, and the last one seen.
  std::vector<UsageSample> timeline_;
  uint64_t timeline_seen_ = 0;
  uint64_t timeline_stride_ = 1;
  std::optional<UsageSample> timeline_last_;
  std::string TimelineJson() const;  // the trailer's "timeline" member, or empty; under mu_
  std::condition_variable cv_;
  std::deque<Batch> queue_;
  std::vector<ObservedBatch> spare_;  // written batches' vectors, for reuse
  size_t queued_records_ = 0;
  bool writer_idle_ = true;
  bool stopping_ = false;
  bool finished_ = false;
  // max_bytes was reached: no more records are written. Set by the writer; the drainer
  // then counts each epoch's records where it hands them over (CountedPastLimit()) instead
  // of carrying them to the writer.
  bool past_limit_ = false;
  JsonlSinkStats stats_;
  absl::Status status_;
  // KeepModules(): by start address and path.
  std::map<std::pair<uint64_t, std::string>, ModuleInfo> kept_modules_;
  // The module lines written after the header (Finish() does not repeat them). Set before
  // the writer starts; read by Finish().
  std::set<std::string> initial_module_lines_;
  // Set by Finish(): the module lines and the trailer; the writer writes them last.
  std::vector<std::string> final_lines_;

  // Writer-thread state.
  uint64_t encoded_bytes_ = 0;  // bytes handed to the file so far, before compression
  // zlib's CRC-32 of every byte written so far, before compression (writer thread): the
  // trailer carries it as "crc32", over the bytes before the trailer's record.
  uint32_t crc32_ = 0;
  std::string buffer_;
  BinaryEncoder binary_{&buffer_};  // used when options_.encoding is kBinary
  std::vector<bool> scopes_written_;
  bool layers_written_[256] = {};
  absl::flat_hash_map<uint64_t, uint32_t> site_ids_;
  uint32_t other_site_id_ = 0;  // 0 until the bucket's line is written, then id + 1
  static constexpr uint32_t kNoSite = ~uint32_t{0};
  // SiteId()'s recent answers, direct-mapped by a hash of the site: a program's hot sites
  // (sqlite3 has 873 stacks, most allocations from a few dozen) skip the hash map.
  struct RecentSite {
    uint64_t site = 0;
    uint32_t id = kNoSite;
  };
  static constexpr uint32_t kRecentSitesLog2 = 8;
  RecentSite recent_sites_[1u << kRecentSitesLog2];
  // Call stacks by hash (event.h), and each thread's stack being received.
  absl::flat_hash_map<uint64_t, std::vector<uint64_t>> stacks_;
  absl::flat_hash_map<uint32_t, std::vector<uint64_t>> partial_stacks_;
  std::thread writer_;
  ThreadCpuTime writer_cpu_;
};

}  // namespace memtrace

#endif  // MEMTRACE_SINKS_JSONL_SINK_H_
