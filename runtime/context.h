// Copyright 2026 The memtrace Authors.
//
// context.h: the participation context a subsystem is handed.
//
// A Context holds an optional tracer (with the layer to record under), an optional census
// and an optional interval sink. A subsystem allocates, enters scopes and reports census
// values through its Context and keeps one code path whether an observer is present or
// not: a default-constructed (disabled) Context leaves every call inert, forwarding
// allocations straight to the backing allocator for the price of one predictable branch
// (bench/README.md measures it).
//
// Work that hops threads carries its scope: capture Scope::Current() where the work is
// queued, and call Adopt() on the thread that runs it; allocations there are attributed
// to the captured scope.
//
// Thread safety: a Context is a small immutable value; copy it freely and use it from any
// thread. The objects it points to are borrowed and must outlive every copy.
//
// Example:
//   void Decode(const memtrace::Context& ctx, memtrace::Allocator& heap) {
//     static const memtrace::ScopeName kDecode("decode");
//     auto phase = ctx.Enter(kDecode, /*category=*/3);
//     void* buffer = ctx.Alloc(heap, 1 << 16, 64, MEMTRACE_CALL_SITE());
//     ...
//   }

#ifndef MEMTRACE_RUNTIME_CONTEXT_H_
#define MEMTRACE_RUNTIME_CONTEXT_H_

#include <cstdint>
#include <optional>

#include "runtime/allocator.h"
#include "runtime/census.h"
#include "runtime/interval_sink.h"
#include "runtime/span.h"
#include "runtime/tracer.h"

namespace memtrace {

class Context {
 public:
  // An open phase: a scope (when the context has a tracer) and the interval sink's
  // begin/end (when it has a sink). Closes when destroyed.
  class Phase {
   public:
    Phase(const Phase&) = delete;
    Phase& operator=(const Phase&) = delete;
    ~Phase() {
      interval_.reset();  // end the interval inside the scope it began in
      span_.reset();
    }

   private:
    friend class Context;
    // A new scope `name`, or (name == nullptr) the adopted `scope`.
    Phase(Tracer* tracer, const ScopeName* name, Scope scope, const IntervalSink* sink,
          uint8_t category) noexcept {
      if (tracer != nullptr) {
        if (name != nullptr) {
          span_.emplace(&tracer->recorder(), *name);
        } else {
          span_.emplace(&tracer->recorder(), scope);
        }
      }
      if (sink != nullptr) interval_.emplace(sink, category);
    }
    std::optional<Span> span_;
    std::optional<IntervalSpan> interval_;
  };

  // Disabled: every call is inert.
  Context() noexcept = default;
  Context(Tracer* tracer, LayerId layer, Census* census = nullptr,
          const IntervalSink* interval_sink = nullptr) noexcept
      : tracer_(tracer), census_(census), interval_sink_(interval_sink), layer_(layer) {}

  bool enabled() const noexcept {
    return tracer_ != nullptr || census_ != nullptr || interval_sink_ != nullptr;
  }
  Tracer* tracer() const noexcept { return tracer_; }
  Census* census() const noexcept { return census_; }
  const IntervalSink* interval_sink() const noexcept { return interval_sink_; }
  LayerId layer() const noexcept { return layer_; }

  // The same observers, recording under another layer.
  Context WithLayer(LayerId layer) const noexcept {
    return Context(tracer_, layer, census_, interval_sink_);
  }

  // ---- Allocation through the subsystem's backing allocator -----------------------------

  void* Alloc(Allocator& backing, size_t len, size_t alignment,
              uintptr_t ret_addr) const noexcept {
    if (__builtin_expect(tracer_ == nullptr, 1)) return backing.Alloc(len, alignment, ret_addr);
    return tracer_->Alloc(backing, layer_, len, alignment, ret_addr);
  }
  bool Resize(Allocator& backing, Memory memory, size_t alignment, size_t new_len,
              uintptr_t ret_addr) const noexcept {
    if (__builtin_expect(tracer_ == nullptr, 1)) {
      return backing.Resize(memory, alignment, new_len, ret_addr);
    }
    return tracer_->Resize(backing, layer_, memory, alignment, new_len, ret_addr);
  }
  void* Remap(Allocator& backing, Memory memory, size_t alignment, size_t new_len,
              uintptr_t ret_addr) const noexcept {
    if (__builtin_expect(tracer_ == nullptr, 1)) {
      return backing.Remap(memory, alignment, new_len, ret_addr);
    }
    return tracer_->Remap(backing, layer_, memory, alignment, new_len, ret_addr);
  }
  void Free(Allocator& backing, Memory memory, size_t alignment,
            uintptr_t ret_addr) const noexcept {
    if (__builtin_expect(tracer_ == nullptr, 1)) {
      backing.Free(memory, alignment, ret_addr);
      return;
    }
    tracer_->Free(backing, layer_, memory, alignment, ret_addr);
  }

  // ---- Scopes and phases -------------------------------------------------------------------

  // Enters `name` below the scope in force; calls the interval sink's begin with
  // `category`. Inert on a disabled context.
  [[nodiscard]] Phase Enter(const ScopeName& name, uint8_t category = 0) const noexcept {
    return Phase(tracer_, &name, Scope{}, interval_sink_, category);
  }

  // Puts a scope captured on another thread (Scope::Current()) in force on this one.
  [[nodiscard]] Phase Adopt(Scope scope, uint8_t category = 0) const noexcept {
    return Phase(tracer_, nullptr, scope, interval_sink_, category);
  }

  // ---- Census --------------------------------------------------------------------------------

  void CensusSet(CensusLabel label, int64_t bytes) const noexcept {
    if (census_ != nullptr) census_->Set(label, bytes);
  }
  void CensusAdd(CensusLabel label, int64_t bytes) const noexcept {
    if (census_ != nullptr) census_->Add(label, bytes);
  }
  void CensusSubtract(CensusLabel label, int64_t bytes) const noexcept {
    if (census_ != nullptr) census_->Subtract(label, bytes);
  }

 private:
  Tracer* tracer_ = nullptr;
  Census* census_ = nullptr;
  const IntervalSink* interval_sink_ = nullptr;
  LayerId layer_ = layers::kCpuHeap;
};

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_CONTEXT_H_
