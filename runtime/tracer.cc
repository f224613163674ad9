// Copyright 2026 The memtrace Authors.

#include "runtime/tracer.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "runtime/layer_table.h"
#include "sinks/json_text.h"
#include "sinks/snapshot_capture.h"
#include "sinks/summary_table.h"

namespace memtrace {
namespace {

uint64_t Addr(const void* p) noexcept { return reinterpret_cast<uint64_t>(p); }

}  // namespace

absl::StatusOr<std::unique_ptr<Tracer>> Tracer::Create(const Config& config) {
  auto recorder = Recorder::Create(config);
  if (!recorder.ok()) return recorder.status();
  return std::unique_ptr<Tracer>(new Tracer(std::move(recorder).value()));
}

absl::Status Tracer::Start() {
  if (recorder_->config().live && live_ == nullptr) {
    auto path = runtime_internal::LiveSocketPath(getpid(), getuid(), /*create_dir=*/true);
    if (!path.ok()) return path.status();
    // The reply is the object `memtrace summary --json` prints, with the top sites; a
    // capture, the blocks live now (`memtrace snapshot`).
    auto server = runtime_internal::LiveServer::Start(
        *std::move(path),
        [this] {
          return FormatSummaryJson(TakeSnapshot(runtime_internal::LiveServer::kTopSites));
        },
        [this](runtime_internal::LiveServer::Writer write) { WriteCapture(write); });
    if (!server.ok()) return server.status();
    live_ = *std::move(server);
  }
  absl::Status s = recorder_->Start();
  if (!s.ok()) live_.reset();
  // Acquire: pairs with the exchange in AttachCensus(). The census's updates made before
  // the start were not recorded; they are sent now (census.h).
  if (Census* census = census_.load(std::memory_order_acquire); s.ok() && census != nullptr) {
    census->SendUnsent();
  }
  return s;
}

absl::Status Tracer::Stop() {
  // First: the server's thread takes snapshots, which must not race with the stop.
  live_.reset();
  return recorder_->Stop();
}

void Tracer::AttachCensus(Census* census) noexcept {
  // Release/acquire: the census is fully built before a snapshot reads it.
  Census* const old = census_.exchange(census, std::memory_order_acq_rel);
  // Attached again: detaching and attaching would send its values into this capture twice.
  if (old == census) return;
  if (old != nullptr) old->Attach(nullptr);
  if (census != nullptr) census->Attach(recorder_.get());
}

Snapshot Tracer::TakeSnapshot(uint32_t top_sites) {
  Snapshot snap = recorder_->TakeSnapshot(top_sites);
  NameAndCensus(&snap);
  return snap;
}

void Tracer::NameAndCensus(Snapshot* snap) const {
  for (LayerUsage& l : snap->layers) l.name = LayerTable::Global().Name(l.layer);
  // Acquire: pairs with the exchange in AttachCensus().
  if (const Census* census = census_.load(std::memory_order_acquire)) {
    snap->has_census = true;
    snap->census = census->Entries();
    snap->census_status = census->status();
  }
}

void Tracer::WriteCapture(runtime_internal::LiveServer::Writer write) {
  absl::StatusOr<LiveCapture> capture = recorder_->CaptureLive(kMaxCaptureBlocks);
  if (!capture.ok()) {
    write(absl::StrCat("{\"error\":", JsonQuote(std::string(capture.status().message())),
                       "}\n"));
    return;
  }
  NameAndCensus(&capture->snapshot);
  WriteSnapshotCapture(*capture, getpid(), recorder_->config().live_capture, write);
}

bool Tracer::Resize(Allocator& backing, LayerId layer, Memory memory, size_t alignment,
                    size_t new_len, uintptr_t ret_addr) noexcept {
  if (!backing.Resize(memory, alignment, new_len, ret_addr)) return false;
  if (recorder_->RecordResize(layer, Addr(memory.data()), new_len) ==
      RecordResult::kFailed) {
    RaiseFailure();
  }
  return true;
}

void* Tracer::Remap(Allocator& backing, LayerId layer, Memory memory, size_t alignment,
                    size_t new_len, uintptr_t ret_addr) noexcept {
  // A size no record holds (2^48 bytes and more) is refused before the backing is asked,
  // as Alloc() refuses it: the remap fails, and the refusal is counted (records_failed).
  if (__builtin_expect(!Event::Fits(new_len), 0)) {
    recorder_->RefuseSize();
    return nullptr;
  }
  const Recorder::RemapClaim claim = recorder_->BeginRemap(layer, Addr(memory.data()));
  void* p = backing.Remap(memory, alignment, new_len, ret_addr);
  if (p == nullptr) {
    recorder_->AbortRemap(claim);
    return nullptr;
  }
  if (claim.result() == RecordResult::kRecorded) {
    // In place, the same block at a new size: a resize, as the interposer records a
    // realloc that did not move (one allocation call, no release).
    if (p == memory.data()) {
      recorder_->CommitResize(claim, new_len);
    } else {
      recorder_->CommitRemap(claim, Addr(p), new_len, ret_addr);
    }
  } else if (claim.result() == RecordResult::kFailed) {
    RaiseFailure();
  }
  return p;
}

void TracingAllocator::RecordReset() noexcept {
  if (tracer_->recorder().RecordArenaReset(layer_) == RecordResult::kFailed) {
    tracer_->RaiseFailure();
  }
}

}  // namespace memtrace
