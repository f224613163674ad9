// Copyright 2026 The memtrace Authors.
//
// tracer.h: the public face of memtrace: Tracer and TracingAllocator.
//
// A Tracer records memory operations against the scope in force and answers with
// snapshots and integrity. A TracingAllocator wraps the allocator the caller hands it
// (the backing allocator), forwards every operation to it, and records each one in a
// tracer under one layer. Wrapping one allocator at a time scopes the record to the
// subsystem the caller chose; several tracers and layers coexist in one process.
//
// Failure semantics (the seed's):
//   - The backing allocator fails: the caller sees the failure, nothing is recorded.
//   - Recording an allocation fails (ring full under OverflowPolicy::kFail, or after the
//     bounded wait): Alloc frees the memory it obtained and answers nullptr, so no live
//     memory exists that the record does not mention.
//   - Recording a resize, remap or free fails: the operation stands, the tracer's failure
//     flag goes up (failure_flag()), and the capture is partial (CaptureIntegrity).
//   - A tracer that is not running (before Start, after Stop) forwards everything and
//     records nothing; such operations are counted as not_recording.
//
// Order: an allocation is recorded after the backing returns it, a free before the block
// goes back, and a remap around the backing call (Recorder::BeginRemap), so that a block
// reused by another thread is never recorded out of order.
//
// Thread safety: Tracer's Start/Stop from one owner; everything else, and every
// TracingAllocator method, from any thread, as far as the backing allocator allows:
// TracingAllocator adds no locking of its own.
//
// Shutting down while threads still allocate: call Stop(). Threads may keep calling
// through Stop() and after it; their operations are forwarded untraced and counted as
// not_recording, so none is lost silently. Destroy the tracer only once no thread will
// call it (or a TracingAllocator or Span on it) again: destroying it while another thread
// is inside one of its calls is undefined, as for any object in use. Threads that
// recorded may outlive the tracer; their rings die with it (internal/thread_state.h).
// Misuse answers (tests/api_misuse_test.cc): Stop() twice is kFailedPrecondition and
// changes nothing; a free of a block the tracer never saw counts unknown_frees, a second
// free of the same block double_frees, a resize or remap of a freed block
// unknown_resizes/unknown_remaps, and a free of a null pointer nothing; each is forwarded
// to the backing allocator, and the capture stays complete but not clean
// (capture_integrity.h).
//
// Example:
//   auto tracer = memtrace::Tracer::Create(memtrace::Config{}).value();
//   tracer->Start().IgnoreError();
//   memtrace::MallocAllocator heap;
//   memtrace::TracingAllocator traced(tracer.get(), &heap, memtrace::layers::kCpuHeap);
//   static const memtrace::ScopeName kLoad("load");
//   {
//     memtrace::Span span = tracer->Enter(kLoad);
//     void* p = traced.Alloc(4096, 16, MEMTRACE_CALL_SITE());
//     ...
//   }
//   puts(memtrace::FormatSummaryTable(tracer->TakeSnapshot()).c_str());

#ifndef MEMTRACE_RUNTIME_TRACER_H_
#define MEMTRACE_RUNTIME_TRACER_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/allocator.h"
#include "runtime/census.h"
#include "runtime/config.h"
#include "runtime/internal/live_server.h"
#include "runtime/internal/recorder.h"
#include "runtime/snapshot.h"
#include "runtime/span.h"

namespace memtrace {

class Tracer {
 public:
  static absl::StatusOr<std::unique_ptr<Tracer>> Create(const Config& config);

  // Starts recording; an attached census's updates made before now are sent (census.h).
  // With Config::live, also opens the live socket first; Start() fails, recording nothing,
  // if it cannot be made.
  absl::Status Start();
  // Closes the live socket (Config::live), then stops recording.
  absl::Status Stop();
  absl::Status Flush() { return recorder_->Flush(); }
  bool running() const noexcept { return recorder_->running(); }

  // Opens a scope on the calling thread (span.h).
  Span Enter(const ScopeName& name) noexcept { return Span(recorder_.get(), name); }

  // Shows `census` in every snapshot and sends its updates into this capture, as signed
  // changes, starting with its values so far (census.h); null detaches. Attach a census
  // once per capture. The census must outlive the tracer or be detached first.
  void AttachCensus(Census* census) noexcept;

  // A consistent cut after a flush, with layer names and the census filled in; with
  // `top_sites` > 0, the call sites holding the most live bytes too (Snapshot::sites).
  Snapshot TakeSnapshot(uint32_t top_sites = 0);
  CaptureIntegrity Integrity() const { return recorder_->Integrity(); }

  // Raised when a resize, remap or free could not be recorded (the capture is partial).
  bool failure_flag() const noexcept {
    return failure_.load(std::memory_order_relaxed);
  }
  void RaiseFailure() noexcept {
    // Relaxed: a flag read by summaries; only reached on a failed record (rare path).
    failure_.store(true, std::memory_order_relaxed);
  }

  Recorder& recorder() noexcept { return *recorder_; }

  // A capture of one moment (Config::live's "capture" request, `memtrace snapshot`) copies
  // at most this many live blocks (40 bytes each, for the time it is written); a process
  // that holds more is answered with an error that says so.
  static constexpr uint64_t kMaxCaptureBlocks = uint64_t{16} << 20;

  // The traced operations, on any backing allocator and layer. TracingAllocator and
  // Context forward here; the semantics are those in the header comment. Alloc and Free
  // are defined here, inline, so that a TracingAllocator call is the backing's call plus
  // the recorder's inlined record, with no call in between.
  void* Alloc(Allocator& backing, LayerId layer, size_t len, size_t alignment,
              uintptr_t ret_addr) noexcept {
    void* p = backing.Alloc(len, alignment, ret_addr);
    if (p == nullptr) return nullptr;  // the backing failed: nothing to record
    if (__builtin_expect(recorder_->RecordAlloc(layer, reinterpret_cast<uint64_t>(p), len,
                                                ret_addr) == RecordResult::kFailed,
                         0)) {
      // The seed's rawAlloc: no live memory the record does not mention.
      backing.Free(AsMemory(p, len), alignment, ret_addr);
      return nullptr;
    }
    return p;
  }
  bool Resize(Allocator& backing, LayerId layer, Memory memory, size_t alignment,
              size_t new_len, uintptr_t ret_addr) noexcept;
  void* Remap(Allocator& backing, LayerId layer, Memory memory, size_t alignment,
              size_t new_len, uintptr_t ret_addr) noexcept;
  void Free(Allocator& backing, LayerId layer, Memory memory, size_t alignment,
            uintptr_t ret_addr) noexcept {
    // free(NULL): no block, nothing to record (the backing decides what it does).
    if (__builtin_expect(memory.data() == nullptr, 0)) {
      backing.Free(memory, alignment, ret_addr);
      return;
    }
    // Recorded before the release, so the address cannot be handed out again first.
    if (__builtin_expect(recorder_->RecordFree(layer, reinterpret_cast<uint64_t>(
                                                          memory.data())) ==
                             RecordResult::kFailed,
                         0)) {
      RaiseFailure();
    }
    backing.Free(memory, alignment, ret_addr);
  }

 private:
  explicit Tracer(std::unique_ptr<Recorder> recorder) : recorder_(std::move(recorder)) {}
  // Fills in the layers' names and the attached census.
  void NameAndCensus(Snapshot* snap) const;
  // The live server's reply to "capture": the blocks live now (sinks/snapshot_capture.h),
  // or an {"error":...} line.
  void WriteCapture(runtime_internal::LiveServer::Writer write);

  std::unique_ptr<Recorder> recorder_;
  std::atomic<bool> failure_{false};
  std::atomic<Census*> census_{nullptr};
  // Config::live: open between Start() and Stop(). Declared after recorder_ so that it is
  // destroyed first: its thread takes snapshots of the recorder.
  std::unique_ptr<runtime_internal::LiveServer> live_;
};

class TracingAllocator final : public Allocator {
 public:
  // Records into `tracer` under `layer`, forwarding to `backing`. Neither is owned; both
  // must outlive this allocator.
  TracingAllocator(Tracer* tracer, Allocator* backing, LayerId layer) noexcept
      : tracer_(tracer), backing_(backing), layer_(layer) {}

  void* Alloc(size_t len, size_t alignment, uintptr_t ret_addr) noexcept override {
    return tracer_->Alloc(*backing_, layer_, len, alignment, ret_addr);
  }
  bool Resize(Memory memory, size_t alignment, size_t new_len,
              uintptr_t ret_addr) noexcept override {
    return tracer_->Resize(*backing_, layer_, memory, alignment, new_len, ret_addr);
  }
  void* Remap(Memory memory, size_t alignment, size_t new_len,
              uintptr_t ret_addr) noexcept override {
    return tracer_->Remap(*backing_, layer_, memory, alignment, new_len, ret_addr);
  }
  void Free(Memory memory, size_t alignment, uintptr_t ret_addr) noexcept override {
    tracer_->Free(*backing_, layer_, memory, alignment, ret_addr);
  }

  // Records that every live block of this allocator's layer was released at once. Call it
  // when the backing arena was reset (frame_arena.h does). The layer should belong to
  // this allocator alone.
  void RecordReset() noexcept;

  LayerId layer() const noexcept { return layer_; }
  Allocator* backing() const noexcept { return backing_; }

 private:
  Tracer* const tracer_;
  Allocator* const backing_;
  const LayerId layer_;
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_TRACER_H_
