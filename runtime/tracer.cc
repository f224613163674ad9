// Copyright 2026 The memtrace Authors.

#include "runtime/tracer.h"

#include "runtime/layer_table.h"

namespace memtrace {
namespace {

uint64_t Addr(const void* p) noexcept { return reinterpret_cast<uint64_t>(p); }

}  // namespace

absl::StatusOr<std::unique_ptr<Tracer>> Tracer::Create(const Config& config) {
  auto recorder = Recorder::Create(config);
  if (!recorder.ok()) return recorder.status();
  return std::unique_ptr<Tracer>(new Tracer(std::move(recorder).value()));
}

Snapshot Tracer::TakeSnapshot() {
  Snapshot snap = recorder_->TakeSnapshot();
  for (LayerUsage& l : snap.layers) l.name = LayerTable::Global().Name(l.layer);
  return snap;
}

void* TracingAllocator::Alloc(size_t len, size_t alignment, uintptr_t ret_addr) noexcept {
  void* p = backing_->Alloc(len, alignment, ret_addr);
  if (p == nullptr) return nullptr;  // the backing failed: nothing to record
  if (recorder_->RecordAlloc(layer_, Addr(p), len, ret_addr) == RecordResult::kFailed) {
    // The seed's rawAlloc: no live memory the record does not mention.
    backing_->Free(AsMemory(p, len), alignment, ret_addr);
    return nullptr;
  }
  return p;
}

bool TracingAllocator::Resize(Memory memory, size_t alignment, size_t new_len,
                              uintptr_t ret_addr) noexcept {
  if (!backing_->Resize(memory, alignment, new_len, ret_addr)) return false;
  if (recorder_->RecordResize(layer_, Addr(memory.data()), new_len) ==
      RecordResult::kFailed) {
    tracer_->RaiseFailure();
  }
  return true;
}

void* TracingAllocator::Remap(Memory memory, size_t alignment, size_t new_len,
                              uintptr_t ret_addr) noexcept {
  const Recorder::RemapClaim claim = recorder_->BeginRemap(layer_, Addr(memory.data()));
  void* p = backing_->Remap(memory, alignment, new_len, ret_addr);
  if (p == nullptr) {
    recorder_->AbortRemap(claim);
    return nullptr;
  }
  if (claim.result() == RecordResult::kRecorded) {
    recorder_->CommitRemap(claim, Addr(p), new_len, ret_addr);
  } else if (claim.result() == RecordResult::kFailed) {
    tracer_->RaiseFailure();
  }
  return p;
}

void TracingAllocator::Free(Memory memory, size_t alignment, uintptr_t ret_addr) noexcept {
  if (recorder_->RecordFree(layer_, Addr(memory.data())) == RecordResult::kFailed) {
    tracer_->RaiseFailure();
  }
  backing_->Free(memory, alignment, ret_addr);
}

void TracingAllocator::RecordReset() noexcept {
  if (recorder_->RecordArenaReset(layer_) == RecordResult::kFailed) tracer_->RaiseFailure();
}

}  // namespace memtrace
