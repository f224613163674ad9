// Copyright 2026 The memtrace Authors.

#include "sinks/jsonl_sink.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "runtime/internal/own_descriptor.h"
#include "runtime/internal/thread_state.h"
#include "runtime/layer_table.h"
#include "runtime/internal/memtrace_thread.h"
#include "runtime/internal/module_map.h"
#include "runtime/scope_table.h"
#include "sinks/capture_ends.h"
#include "sinks/capture_lock.h"
#include "sinks/json_text.h"
#include "sinks/jsonl_encoding.h"
#include "sinks/zstd_file_stream.h"
#include "transport/fibonacci_index.h"
#include "transport/ticket.h"

namespace memtrace {
namespace {

// Emptied batch vectors kept for reuse (JsonlSink::OnEpoch): a few, of ordinary size
// (64K records, 2.5 MiB), so an outsized epoch's memory is given back.
constexpr size_t kSpareBatches = 4;
constexpr size_t kSpareCapacity = kObservedBatchReserve;

}  // namespace

absl::StatusOr<std::unique_ptr<JsonlSink>> JsonlSink::Open(const std::string& path,
                                                           const JsonlSinkOptions& given) {
  JsonlSinkOptions options = given;
  ApplyPathExtension(path, &options);
  if (absl::Status s = CheckOnline(options.writer_cpus); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("memtrace: writer_cpus: ", s.message()));
  }
  // Opened without O_TRUNC: a file another sink is writing must not be emptied before its
  // lock is seen.
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int err = errno;
    const char* fix = "check that the directory exists and is writable";
    if (err == EACCES && access(path.c_str(), F_OK) == 0) {
      fix = "the file exists and cannot be written: remove it, or give another path";
    } else if (err == EISDIR) {
      fix = "the path is a directory: give a file's path";
    }
    return absl::InvalidArgumentError(absl::StrCat("memtrace: cannot create capture file '",
                                                   path, "': ", strerror(err), " (errno ",
                                                   err, "); ", fix));
  }
  fd = runtime_internal::AboveProgramDescriptors(fd);
  // One writer per capture file (sinks/capture_lock.h): held while the file stays open,
  // in this process and in children forked before they exec or exit.
  if (!LockCapture(fd)) {
    close(fd);
    return absl::UnavailableError(absl::StrCat(
        "memtrace: capture file '", path, "' is being written by another sink (this "
        "process's or another one's: it holds the file's lock); give each capture a path "
        "of its own, for example with %p (the process id) in MEMTRACE_OUTPUT"));
  }
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    if (ftruncate(fd, 0) != 0) {
      const int err = errno;
      close(fd);
      return absl::InvalidArgumentError(absl::StrCat("memtrace: cannot empty capture file '",
                                                     path, "': ", strerror(err), " (errno ",
                                                     err, ")"));
    }
  }
  FILE* f = fdopen(fd, "w");
  if (f == nullptr) {
    const int err = errno;
    close(fd);
    return absl::ResourceExhaustedError(absl::StrCat(
        "memtrace: cannot open a stream on capture file '", path, "': ", strerror(err)));
  }
  // Unbuffered: the sink batches lines itself, and a stdio buffer holding part of a batch
  // would be written twice if the program forked and the child exited through exit().
  setvbuf(f, nullptr, _IONBF, 0);
  // The path to open the file again by (Reopen()), absolute: the program may change its
  // working directory.
  std::string reopen_path = path;
  if (path.empty() || path[0] != '/') {
    char cwd[PATH_MAX];
    reopen_path = getcwd(cwd, sizeof(cwd)) != nullptr ? absl::StrCat(cwd, "/", path) : "";
  }
  return Create(f, /*owned=*/true, path, options, std::move(reopen_path));
}

void JsonlSink::ApplyPathExtension(const std::string& path, JsonlSinkOptions* options) {
  auto ends_with = [&](std::string_view suffix) {
    return path.size() > suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".zst")) options->zstd = true;
  if (ends_with(".mtb") || ends_with(".mtb.zst")) options->encoding = CaptureEncoding::kBinary;
}

absl::StatusOr<std::unique_ptr<JsonlSink>> JsonlSink::FromStream(
    FILE* stream, bool owned, const std::string& name, const JsonlSinkOptions& options) {
  return Create(stream, owned, name, options, /*reopen_path=*/"");
}

absl::StatusOr<std::unique_ptr<JsonlSink>> JsonlSink::Create(FILE* stream, bool owned,
                                                             const std::string& name,
                                                             const JsonlSinkOptions& options,
                                                             std::string reopen_path) {
  if (stream == nullptr) {
    return absl::InvalidArgumentError("memtrace: JsonlSink needs an open stream");
  }
  if (absl::Status s = CheckOnline(options.writer_cpus); !s.ok()) {
    if (owned) fclose(stream);  // the sink would have owned it
    return absl::InvalidArgumentError(absl::StrCat("memtrace: writer_cpus: ", s.message()));
  }
  std::unique_ptr<JsonlSink> sink(
      new JsonlSink(stream, owned, name, options, std::move(reopen_path)));
  return sink;
}

JsonlSink::JsonlSink(FILE* stream, bool owned, std::string name,
                     const JsonlSinkOptions& options, std::string reopen_path)
    : stream_(stream),
      owned_(owned),
      name_(std::move(name)),
      reopen_path_(std::move(reopen_path)),
      options_(options) {
  // What the descriptor is now; CheckStream() compares before every write.
  fflush(stream_);
  fstat(fileno(stream_), &identity_);
  if (options_.zstd) {
    zstd_ = std::make_unique<ZstdFileStream>(options_.zstd_level, /*checksum=*/true);
    if (!zstd_->ok()) status_ = absl::ResourceExhaustedError("memtrace: zstd context");
  }
  // The header is the writer's first line.
  if (options_.encoding == CaptureEncoding::kBinary) binary_.Magic();
  Emit(JsonHeaderLine(getpid(), CaptureNowNs(), options_.source, options_.header_fields));
  // The modules loaded now, right after the header, so that a capture that never gets
  // its trailer (the process was killed, or ended without exit handlers, as Go programs
  // do) can still be symbolized. Finish() lists the modules again for what was loaded
  // later, without repeating these.
  for (const ModuleInfo& m : LoadedModules()) {
    std::string line = JsonModuleLine(m.path, m.start, m.end, m.offset, m.build_id);
    Emit(line);
    initial_module_lines_.insert(std::move(line));
  }
  FlushFirstLines();
  writer_ = StartMemtraceThread([this] { WriterLoop(); });  // signals blocked
}

void JsonlSink::FlushFirstLines() {
  // SIGPIPE blocked for the write, so that a closed pipe fails it (counted, as the
  // writer's failures are) instead of ending the program; a SIGPIPE the write raised is
  // taken back, one that was pending already is left for the program.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  sigset_t old;
  pthread_sigmask(SIG_BLOCK, &pipe, &old);
  sigset_t pending;
  sigpending(&pending);
  const bool pending_before = sigismember(&pending, SIGPIPE) == 1;
  FlushOutput();
  sigpending(&pending);
  if (!pending_before && sigismember(&pending, SIGPIPE) == 1) {
    const timespec now{};
    sigtimedwait(&pipe, nullptr, &now);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

JsonlSink::~JsonlSink() {
  // First, while this object is whole: its tracer may still be recording (an early
  // return that skipped Stop()), and the drainer must not call into it after this.
  DetachFromRecorder();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();  // drains the queue and closes the file
}

ObservedBatch JsonlSink::TakeSpare() {
  std::lock_guard<std::mutex> lock(mu_);
  if (spare_.empty()) return {};
  ObservedBatch spare = std::move(spare_.back());
  spare_.pop_back();
  return spare;
}

void JsonlSink::OnEpoch(uint32_t epoch, int64_t epoch_start_unix_ns,
                        std::span<const ObservedEvent> events) noexcept {
  if (events.empty()) return EnqueueThreadsAlone(epoch, epoch_start_unix_ns);
  if (CountedPastLimit(events.size())) {
    thread_starts_.clear();  // no line is written past the limit: nothing would take them
    return;
  }
  // The copy is made outside the lock, into a vector the writer gave back (its capacity
  // is already touched), so neither side waits on the other for allocation or page
  // faults.
  ObservedBatch copy = TakeSpare();
  copy.assign(events.begin(), events.end());
  Enqueue(epoch, epoch_start_unix_ns, std::move(copy));
}

void JsonlSink::OnEpochRecords(uint32_t epoch, int64_t epoch_start_unix_ns,
                               ObservedBatch& events) noexcept {
  if (events.empty()) return EnqueueThreadsAlone(epoch, epoch_start_unix_ns);
  if (CountedPastLimit(events.size())) {
    thread_starts_.clear();  // as in OnEpoch()
    return;
  }
  // No copy: the drainer's vector becomes the batch, and the drainer goes on with one the
  // writer gave back.
  ObservedBatch batch = TakeSpare();
  // Room for an ordinary epoch up front: a vector grown by doubling is new memory at each
  // step, every page of it a fault (6-14 us each on the VMs of bench/README.md), and the
  // drainer faulted 2,500-2,600 times a sqlite3 run that way; 1,000-1,800 with this. The
  // room is in huge pages (ObservedBatch), touched 2 MiB at a time as records fill it:
  // about 350 fewer faults again.
  batch.reserve(kSpareCapacity);
  batch.swap(events);
  Enqueue(epoch, epoch_start_unix_ns, std::move(batch));
}

void JsonlSink::OnThreadStart(uint32_t thread, int32_t tid, const char* name) noexcept {
  // The name in words 2 and 3, NUL-padded.
  char text[16] = {};
  if (name != nullptr) strncpy(text, name, sizeof(text) - 1);
  uint64_t words[2];
  memcpy(words, text, sizeof(words));
  Event e{static_cast<uint64_t>(static_cast<uint32_t>(tid)),
          Event::PackKindSize(EventKind::kThreadStart, 0, 0), words[0], words[1]};
  thread_starts_.push_back(ObservedEvent{e, Ticket::Make(thread, 0)});
}

void JsonlSink::EnqueueThreadsAlone(uint32_t epoch, int64_t epoch_start_unix_ns) noexcept {
  if (thread_starts_.empty()) return;
  if (CountedPastLimit(0)) {
    thread_starts_.clear();  // as in OnEpoch()
    return;
  }
  ObservedBatch none = TakeSpare();
  none.clear();
  Enqueue(epoch, epoch_start_unix_ns, std::move(none));
}

bool JsonlSink::CountedPastLimit(size_t n) noexcept {
  if (options_.max_bytes == 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (!past_limit_) return false;
  stats_.events_past_limit += n;
  return true;
}

void JsonlSink::Enqueue(uint32_t epoch, int64_t epoch_start_unix_ns,
                        ObservedBatch&& batch) noexcept {
  const size_t n = batch.size();  // records
  const size_t thread_starts = thread_starts_.size();
  if (thread_starts != 0) {
    batch.insert(batch.begin(), thread_starts_.begin(), thread_starts_.end());
    thread_starts_.clear();
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (!finished_ && options_.max_backpressure > absl::ZeroDuration() &&
      queued_records_ + n > options_.max_queued_records) {
    // The writer notifies after every batch it writes.
    cv_.wait_for(lock, absl::ToChronoNanoseconds(options_.max_backpressure), [&] {
      return finished_ || queued_records_ + n <= options_.max_queued_records ||
             queued_records_ == 0;
    });
  }
  // With backpressure an epoch larger than the whole queue still goes in once the queue
  // is empty; without it, it is dropped like any epoch that does not fit.
  const bool fits = queued_records_ + n <= options_.max_queued_records ||
                    (options_.max_backpressure > absl::ZeroDuration() && queued_records_ == 0);
  if (finished_ || !fits) {
    stats_.events_lost += n;  // never wait on I/O: drop and count
    return;
  }
  queue_.push_back(Batch{epoch, epoch_start_unix_ns, std::move(batch), thread_starts});
  queued_records_ += n + thread_starts;
  cv_.notify_one();
}

void JsonlSink::WriterLoop() {
  runtime_internal::MarkInternalThread();  // the sink never traces itself
  PlaceMemtraceThread("memtrace-write", options_.writer_cpus);
  writer_cpu_.Attach();
  // A closed pipe becomes EPIPE from write(), not SIGPIPE killing the program: the signal
  // goes to the thread that wrote, and this one started with it blocked, as with every
  // asynchronous signal (StartMemtraceThread).
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty() && stopping_) {
      std::vector<std::string> final_lines = std::move(final_lines_);
      lock.unlock();
      if (!final_lines.empty()) {
        // The trailer, last, carries the CRC-32 of every byte written before it.
        std::string trailer = std::move(final_lines.back());
        final_lines.pop_back();
        for (const std::string& line : final_lines) Emit(line);
        FlushOutput();
        Emit(TrailerWithCrc32(trailer, crc32_));
        FlushOutput();
      }
      CloseOutput();
      writer_cpu_.Detach();
      return;
    }
    Batch batch = std::move(queue_.front());
    queue_.pop_front();
    writer_idle_ = false;
    lock.unlock();
    WriteBatch(batch);  // and flushes it
    lock.lock();
    queued_records_ -= batch.events.size();
    if (spare_.size() < kSpareBatches && batch.events.capacity() <= kSpareCapacity) {
      batch.events.clear();
      spare_.push_back(std::move(batch.events));
    }
    writer_idle_ = queue_.empty();
    cv_.notify_all();
  }
}

void JsonlSink::WriteLayer(uint8_t layer) {
  layers_written_[layer] = true;
  Emit(JsonLayerLine(layer, LayerTable::Global().Name(layer)));
}

void JsonlSink::WriteScope(uint32_t path) {
  ScopeTable& table = ScopeTable::Global();
  if (path != ScopeTable::kRootPath) EnsureScope(table.Parent(path));
  if (path >= scopes_written_.size()) scopes_written_.resize(path + 1, false);
  scopes_written_[path] = true;
  Emit(JsonScopeLine(path, table.Parent(path), table.Name(path), table.PathString(path)));
}

uint32_t JsonlSink::SiteIdSlow(uint64_t site) {
  auto it = site_ids_.find(site);
  if (it != site_ids_.end()) return it->second;
  if (site_ids_.size() >= options_.site_capacity) {
    // Past the bound: one shared bucket, as in the recorder's site table.
    if (other_site_id_ == 0) {
      other_site_id_ = static_cast<uint32_t>(site_ids_.size()) + 1;
      Emit(JsonSiteLine(other_site_id_ - 1, SiteTable::kOtherSitesValue, {}, /*other=*/true));
    }
    return other_site_id_ - 1;
  }
  const auto id = static_cast<uint32_t>(site_ids_.size());
  site_ids_.emplace(site, id);
  auto stack = stacks_.find(site);
  if (stack != stacks_.end() && !stack->second.empty()) {
    Emit(JsonSiteLine(id, stack->second[0], stack->second, /*other=*/false));
  } else {
    Emit(JsonSiteLine(id, site, {}, /*other=*/false));
  }
  return id;
}

void JsonlSink::AddStackFrames(const ObservedEvent& o) {
  const Event& e = o.event;
  std::vector<uint64_t>& partial = partial_stacks_[Ticket::RingId(o.ticket)];
  if (!AppendStackFrames(e, &partial)) return;
  auto [it, inserted] = stacks_.try_emplace(e.word0);
  if (inserted) {
    it->second = std::move(partial);
  } else if (it->second != partial) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.stack_collisions;
  }
  partial.clear();
}

void JsonlSink::WriteBatch(const Batch& batch) {
  if (past_limit_) {  // read without mu_: only this thread writes it
    // The capture is full (max_bytes): a batch queued before the drainer saw it. The
    // records are counted, not encoded.
    std::lock_guard<std::mutex> lock(mu_);
    stats_.events_past_limit += batch.records();
    return;
  }
  // Every line of the batch shares the epoch's time and number.
  const bool binary = options_.encoding == CaptureEncoding::kBinary;
  const std::string time_fields =
      binary ? std::string() : JsonTimeFields(batch.start_unix_ns, batch.epoch);
  // One CaptureEvent for the whole batch: each case below sets every field its type's
  // encoding reads (sinks/capture_event.h), so nothing stale is written, and the struct
  // is not zeroed per event (that `rep stos` was 40% of this loop's samples).
  CaptureEvent c;
  // The binary encoding's common records skip the CaptureEvent (BinaryEncoder::Alloc,
  // Free: the same bytes): a third of the writer's instructions per event.
  const bool binary_fast = binary && options_.sample_interval_bytes == 0;
  uint64_t not_lines = 0;  // call stacks and invalid records: no line of their own
  for (const ObservedEvent& o : batch.events) {
    const Event& e = o.event;
    if (binary_fast) {
      if (e.kind() == EventKind::kFree) {
        EnsureLayer(e.layer());
        binary_.Epoch(batch.start_unix_ns, batch.epoch);
        binary_.Free(Ticket::RingId(o.ticket), e.address(), e.layer(), o.ticket, e.word2);
        FlushIfFull();
        continue;
      }
      if (e.kind() == EventKind::kAlloc) {
        EnsureLayer(e.layer());
        EnsureScope(e.scope());
        const uint32_t site = SiteId(e.word2);
        binary_.Epoch(batch.start_unix_ns, batch.epoch);
        binary_.Alloc(Ticket::RingId(o.ticket), e.address(), e.size(), e.layer(), e.scope(),
                      site, o.ticket);
        FlushIfFull();
        continue;
      }
    }
    // Table lines an event refers to go first, then the event, encoded straight into the
    // output buffer (this loop is the sink's throughput).
    c.thread = Ticket::RingId(o.ticket);
    c.layer = e.layer();
    c.has_weight = false;
    switch (e.kind()) {
      case EventKind::kAlloc:
      case EventKind::kRemapTarget:
        EnsureLayer(e.layer());
        EnsureScope(e.scope());
        c.type = e.kind() == EventKind::kAlloc ? CaptureEventType::kAlloc
                                               : CaptureEventType::kRemapTarget;
        c.site = SiteId(e.word2);
        c.addr = e.address();
        c.size = e.size();
        c.scope = e.scope();
        c.ticket = o.ticket;
        if (options_.sample_interval_bytes != 0) {
          c.has_weight = true;
          c.weight = SampleWeight(e.size(), options_.sample_interval_bytes);
          // The binary record stores the value a reader of the JSON text would get.
          if (binary) c.weight = RoundedWeight(c.weight);
        }
        break;
      case EventKind::kFree:
      case EventKind::kRemap:
      case EventKind::kResize:
        EnsureLayer(e.layer());
        c.type = e.kind() == EventKind::kFree    ? CaptureEventType::kFree
                 : e.kind() == EventKind::kRemap ? CaptureEventType::kRemap
                                                 : CaptureEventType::kResize;
        c.addr = e.address();
        c.size = e.size();
        c.of = e.word2;
        c.ticket = o.ticket;
        break;
      case EventKind::kArenaReset:
        EnsureLayer(e.layer());
        c.type = CaptureEventType::kArenaReset;
        break;
      case EventKind::kScopeEnter:
      case EventKind::kScopeExit:
        EnsureScope(static_cast<uint32_t>(e.address()));
        EnsureScope(e.scope());
        c.type = e.kind() == EventKind::kScopeEnter ? CaptureEventType::kScopeEnter
                                                    : CaptureEventType::kScopeExit;
        c.scope = static_cast<uint32_t>(e.address());
        c.outer = e.scope();
        c.mono_ns = static_cast<int64_t>(e.word2);
        break;
      case EventKind::kCensusUpdate:
        c.type = CaptureEventType::kCensus;
        c.label = static_cast<uint32_t>(e.address());
        c.has_delta = true;  // a change, not a value (Recorder::RecordCensus)
        c.delta = static_cast<int64_t>(e.word2);
        break;
      case EventKind::kIntervalBegin:
      case EventKind::kIntervalEnd:
        c.type = e.kind() == EventKind::kIntervalBegin ? CaptureEventType::kIntervalBegin
                                                       : CaptureEventType::kIntervalEnd;
        c.category = static_cast<uint32_t>(e.address());
        c.mono_ns = static_cast<int64_t>(e.word2);
        break;
      case EventKind::kStackFrames:
        AddStackFrames(o);
        ++not_lines;
        continue;  // stacks become site lines, not lines of their own
      case EventKind::kThreadStart: {
        const uint64_t words[2] = {e.word2, e.word3};
        char name[17] = {};
        memcpy(name, words, 16);
        Emit(JsonThreadLine(Ticket::RingId(o.ticket), static_cast<int32_t>(e.address()), name));
        continue;  // a line of its own, not a record (Batch::thread_starts)
      }
      default:
        ++not_lines;
        continue;  // kInvalid
    }
    if (binary) {
      // After the event's table lines, as `memtrace convert` writes it (a no-op but for
      // the epoch's first event).
      binary_.Epoch(batch.start_unix_ns, batch.epoch);
      binary_.Event(c);
    } else {
      AppendJsonEvent(c, time_fields, &buffer_);
      buffer_ += '\n';
    }
    FlushIfFull();
  }
  if (options_.max_bytes != 0) {
    binary_.Flush();
    if (encoded_bytes_ + buffer_.size() > options_.max_bytes) {
      // The whole batch is left out (its table lines too: no record after it refers to
      // them), and every later one.
      buffer_.clear();
      std::lock_guard<std::mutex> lock(mu_);
      past_limit_ = true;
      stats_.events_past_limit += batch.records();
      return;
    }
  }
  // Flushed before it is counted: a batch whose bytes did not all reach the file is
  // counted lost, never written.
  FlushOutput();
  std::lock_guard<std::mutex> lock(mu_);
  if (status_.ok()) {
    stats_.events_written += batch.records();
    stats_.event_lines += batch.records() - not_lines;
  } else {
    stats_.events_lost += batch.records();
  }
}

void JsonlSink::OnUsageSample(const UsageSample& sample) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  timeline_last_ = sample;
  if (timeline_seen_++ % timeline_stride_ != 0) return;
  timeline_.push_back(sample);
  if (timeline_.size() < kMaxTimelineSamples) return;
  // Full: keep every other sample, and from now on every other one of those to come.
  size_t kept = 0;
  for (size_t i = 0; i < timeline_.size(); i += 2) timeline_[kept++] = std::move(timeline_[i]);
  timeline_.resize(kept);
  timeline_stride_ *= 2;
}

std::string JsonlSink::TimelineJson() const {
  std::vector<const UsageSample*> rows;
  for (const UsageSample& s : timeline_) rows.push_back(&s);
  if (timeline_last_ && (rows.empty() || rows.back()->unix_ns != timeline_last_->unix_ns)) {
    rows.push_back(&*timeline_last_);
  }
  if (rows.empty()) return std::string();
  // Columns: every layer any sample has, and the scopes with the most live bytes at any
  // sample, at most UsageSample::kTopScopes of them.
  std::map<uint32_t, bool> layers;
  std::map<uint32_t, uint64_t> scope_max;
  for (const UsageSample* s : rows) {
    for (const auto& [id, bytes] : s->layers) layers[id] = true;
    for (const auto& [id, bytes] : s->scopes) {
      scope_max[id] = std::max(scope_max[id], bytes);
    }
  }
  std::vector<std::pair<uint32_t, uint64_t>> scopes(scope_max.begin(), scope_max.end());
  std::sort(scopes.begin(), scopes.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (scopes.size() > UsageSample::kTopScopes) scopes.resize(UsageSample::kTopScopes);
  std::sort(scopes.begin(), scopes.end());
  std::string out = ",\"timeline\":{\"columns\":[\"t\",\"rss_bytes\",\"live_bytes\",\"live_count\"";
  for (const auto& [id, unused] : layers) absl::StrAppend(&out, ",\"layer:", id, "\"");
  for (const auto& [id, unused] : scopes) absl::StrAppend(&out, ",\"scope:", id, "\"");
  absl::StrAppend(&out, "],\"every\":", timeline_stride_, ",\"rows\":[");
  auto value = [](const std::vector<std::pair<uint32_t, uint64_t>>& v, uint32_t id) {
    for (const auto& [key, bytes] : v) {
      if (key == id) return bytes;
    }
    return uint64_t{0};
  };
  for (size_t r = 0; r < rows.size(); ++r) {
    const UsageSample& s = *rows[r];
    absl::StrAppend(&out, r == 0 ? "[" : ",[", s.unix_ns, ",", s.rss_bytes, ",", s.live_bytes,
                    ",", s.live_count);
    for (const auto& [id, unused] : layers) absl::StrAppend(&out, ",", value(s.layers, id));
    for (const auto& [id, unused] : scopes) absl::StrAppend(&out, ",", value(s.scopes, id));
    out += ']';
  }
  out += "]}";
  return out;
}

void JsonlSink::Emit(const std::string& line) {
  if (options_.encoding == CaptureEncoding::kBinary) {
    binary_.Json(line);
  } else {
    buffer_ += line;
    buffer_ += '\n';
  }
  FlushIfFull();
}

void JsonlSink::FlushOutput() {
  binary_.Flush();  // staged binary records, if any, go out first
  if (buffer_.empty()) return;
  encoded_bytes_ += buffer_.size();
  bool failed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    failed = !status_.ok();
  }
  // Checked before every write: the bytes must not go to a file that is not the capture.
  if (!failed) failed = !CheckStream();
  if (!failed) {
    size_t n = 0;
    bool ok;
    if (zstd_ != nullptr) {
      ok = zstd_->Write(buffer_, /*end_frame=*/false, stream_, &n);
    } else {
      n = fwrite(buffer_.data(), 1, buffer_.size(), stream_);
      ok = n == buffer_.size();
    }
    if (!ok || fflush(stream_) != 0) {
      const int err = errno != 0 ? errno : EIO;
      Fail(absl::StrCat("writing capture '", name_, "' failed: ", strerror(err), " (errno ",
                        err, "); records from here on are counted as lost and tracing goes "
                        "on. Free space or choose another path for the next capture"));
    } else {
      crc32_ = static_cast<uint32_t>(
          crc32_z(crc32_, reinterpret_cast<const Bytef*>(buffer_.data()), buffer_.size()));
      std::lock_guard<std::mutex> lock(mu_);
      stats_.bytes_written += n;
    }
  }
  buffer_.clear();
}

bool JsonlSink::Reopen() {
  // Only a file Open() made has a path to open again; the same file, found by its path,
  // is appended to (every byte written so far is there), locked again, and used from a
  // new descriptor. The old stream is left alone (its number may be the program's).
  if (reopen_path_.empty()) return false;
  int fd = open(reopen_path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return false;
  fd = runtime_internal::AboveProgramDescriptors(fd);
  struct stat st {};
  FILE* f = nullptr;
  if (!IsCapture(fd, &st) || !LockCapture(fd) || (f = fdopen(fd, "a")) == nullptr) {
    close(fd);
    return false;
  }
  setvbuf(f, nullptr, _IONBF, 0);
  stream_ = f;
  stream_lost_ = false;
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.reopened;
  return true;
}

void JsonlSink::Fail(std::string_view what) {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.write_errors;
  if (status_.ok()) status_ = absl::DataLossError(absl::StrCat("memtrace: ", std::string(what)));
}

bool JsonlSink::IsCapture(int fd, struct stat* st) const {
  return fstat(fd, st) == 0 && st->st_dev == identity_.st_dev &&
         st->st_ino == identity_.st_ino;
}

bool JsonlSink::CheckStream() {
  if (stream_ == nullptr) return false;
  struct stat st {};
  const int fd = fileno(stream_);
  if (!IsCapture(fd, &st)) {
    // The program closed the descriptor (a daemon closing all of them, say) and may have
    // opened a file of its own under the same number: never write there, nor close it.
    stream_lost_ = true;
    if (Reopen()) return CheckStream();
    Fail(absl::StrCat("the program closed the capture's file descriptor ", fd, " ('", name_,
                      "'); records from here on are counted as lost and tracing goes on. "
                      "A program that closes every descriptor it did not open cannot keep "
                      "a capture file: trace it without that step, or capture through the "
                      "runtime API"));
    return false;
  }
  // Writes to a removed file succeed and go nowhere anyone can read: say so. (Only a
  // regular file has a link count to lose.)
  if (S_ISREG(st.st_mode) && st.st_nlink == 0) {
    Fail(absl::StrCat("the capture file '", name_, "' was removed while it was being written "
                      "(it, or its directory, was deleted); records from here on are counted "
                      "as lost and tracing goes on. Write captures where nothing cleans up "
                      "behind the program"));
    return false;
  }
  return true;
}

absl::Status JsonlSink::Finish(const Snapshot& snap, std::string_view trailer_fields,
                              bool mark_partial) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (finished_) return status_;
    cv_.wait(lock, [&] { return queue_.empty() && writer_idle_; });
    finished_ = true;  // later epochs are counted as lost
  }
  // Finished while its tracer still records: what the tracer records from here on is not
  // in the capture, so the trailer says partial, and why, and the caller hears of it.
  const bool recording = recorder_running();
  std::string fields(trailer_fields);
  if (recording && fields.find("\"ended_by\"") == std::string::npos) {
    absl::StrAppend(&fields, fields.empty() ? "" : ",", "\"ended_by\":\"", kEndedWhileRecording,
                    "\"");
  }
  const JsonlSinkStats s = stats();
  const bool complete =
      !mark_partial && !recording && snap.integrity.complete() && s.events_lost == 0 &&
      s.events_past_limit == 0 && status().ok();
  // The module map goes last, so it includes libraries loaded while tracing. Modules
  // kept from before a dlclose() that are no longer loaded come first: a reader lets a
  // later line win where two overlap (the address range was reused).
  std::vector<std::string> lines;
  const std::vector<ModuleInfo> loaded = LoadedModules();
  std::map<std::pair<uint64_t, std::string>, ModuleInfo> unloaded;
  {
    std::lock_guard<std::mutex> lock(mu_);
    unloaded = kept_modules_;
  }
  for (const ModuleInfo& m : loaded) unloaded.erase({m.start, m.path});
  for (const auto& [key, m] : unloaded) {
    lines.push_back(JsonModuleLine(m.path, m.start, m.end, m.offset, m.build_id));
  }
  for (const ModuleInfo& m : loaded) {
    lines.push_back(JsonModuleLine(m.path, m.start, m.end, m.offset, m.build_id));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A module listed after the header and still loaded goes unrepeated, unless a module
    // unloaded since is listed here: then the whole list follows it, so that the modules
    // loaded at the end are the later lines wherever ranges were reused.
    if (unloaded.empty()) {
      lines.erase(std::remove_if(lines.begin(), lines.end(),
                                 [&](const std::string& line) {
                                   return initial_module_lines_.count(line) != 0;
                                 }),
                  lines.end());
    }
    final_lines_ = std::move(lines);
    CaptureSinkCounts counts;
    counts.events_written = s.events_written;
    counts.event_lines = s.event_lines;
    counts.events_lost = s.events_lost;
    counts.events_past_limit = s.events_past_limit;
    counts.max_bytes = options_.max_bytes;
    counts.write_errors = s.write_errors;
    counts.stack_collisions = s.stack_collisions;
    counts.writer_cpu_ns = s.writer_cpu_ns;
    final_lines_.push_back(JsonTrailerLine(snap, complete, counts, TimelineJson(), fields));
    stopping_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();  // writes the trailer and closes the file
  // The capture is closed: the tracer has nothing more to hand it.
  DetachFromRecorder();
  if (recording) {
    return absl::FailedPreconditionError(
        "memtrace: JsonlSink::Finish() while its tracer records: the capture ends here and "
        "is marked partial, and what the tracer records from now on is not in it; call the "
        "tracer's Stop() before Finish()");
  }
  return status();
}

void JsonlSink::CloseOutput() {
  if (zstd_ != nullptr && stream_ != nullptr && status().ok()) {
    // End the zstd frame (its checksum), so the file is complete.
    size_t n = 0;
    if (!zstd_->Write({}, /*end_frame=*/true, stream_, &n) || fflush(stream_) != 0) {
      const int err = errno != 0 ? errno : EIO;
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.write_errors;
      status_ = absl::DataLossError(absl::StrCat("memtrace: ending the zstd frame of '", name_,
                                                 "' failed: ", strerror(err)));
    } else {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.bytes_written += n;
    }
  }
  if (!owned_ || stream_ == nullptr) return;
  if (stream_lost_) {
    // Its descriptor is the program's now, or nobody's: the stream is left as it is.
    stream_ = nullptr;
    return;
  }
  if (fclose(stream_) != 0) {
    const int err = errno;
    std::lock_guard<std::mutex> lock(mu_);
    if (status_.ok()) {
      status_ = absl::DataLossError(absl::StrCat("memtrace: closing capture '", name_,
                                                 "' failed: ", strerror(err)));
    }
  }
  stream_ = nullptr;
}

void JsonlSink::KeepModules(const std::vector<ModuleInfo>& modules) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const ModuleInfo& m : modules) kept_modules_.try_emplace({m.start, m.path}, m);
}

void JsonlSink::ReleaseInForkedChild() noexcept {
  if (stream_ == nullptr || !owned_) return;
  // fileno() reads the stream's descriptor without taking the stream's lock. Closed only
  // if it is still the capture: the program may have closed it and opened a file of its
  // own under the number before the writer noticed (CheckStream()).
  const int fd = fileno(stream_);
  struct stat st {};
  if (IsCapture(fd, &st)) close(fd);
}

absl::Status JsonlSink::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

JsonlSinkStats JsonlSink::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  JsonlSinkStats s = stats_;
  s.writer_cpu_ns = writer_cpu_.TotalNs();
  return s;
}

}  // namespace memtrace
