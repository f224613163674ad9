// Copyright 2026 The memtrace Authors.
//
// span.h: a named scope open on the calling thread.
//
// Constructing a Span enters a scope: allocations made on this thread until the Span
// exits are attributed to it, nested inside whatever scope was open before
// ("frame/physics/broadphase"). The scope closes when the Span is destroyed or Exit() is
// called. Memory keeps the scope it was allocated in: a free inside another scope is
// charged back to the allocation's scope (the ledger does this).
//
// The name is a ScopeName, interned once per call site, so entering a scope does no string
// hashing: the path id comes from a small per-thread cache in front of the process-wide
// scope table, which is consulted (under its mutex) only the first time a thread opens a
// given scope under a given parent.
//
// Scope stacks are per thread. A Span must exit on the thread that entered it, in LIFO
// order; an out-of-order Exit() closes the scopes opened inside it as well (they are
// recorded as exits). A Span exited or destroyed on another thread changes nothing and is
// counted (CaptureIntegrity::foreign_span_exits); its scope stays in force on the thread
// that opened it until an enclosing Span there exits.
//
// Thread safety: a Span belongs to the thread that created it.
//
// Example:
//   static const memtrace::ScopeName kParse("parse");
//   {
//     memtrace::Span span(recorder, kParse);
//     Parse(request);  // allocations here are charged to ".../parse"
//   }

#ifndef MEMTRACE_RUNTIME_SPAN_H_
#define MEMTRACE_RUNTIME_SPAN_H_

#include <cstdint>
#include <string>

#include "runtime/internal/recorder.h"
#include "runtime/scope_table.h"

namespace memtrace {

// A scope path as a value: what a thread has in force, carried to another thread so work
// that hops threads keeps its attribution (the Span constructor that takes a Scope).
struct Scope {
  uint32_t path = 0;  // scope_table.h path id; 0 = unscoped
  static Scope Current() noexcept;
  std::string PathString() const { return ScopeTable::Global().PathString(path); }
  friend bool operator==(const Scope&, const Scope&) = default;
};

class Span {
 public:
  // Enters `name` below the scope in force on this thread. `recorder` may be null (the
  // scope is still tracked for attribution, nothing is recorded).
  Span(Recorder* recorder, const ScopeName& name) noexcept;

  // Puts `scope` (captured on another thread with Scope::Current()) in force on this
  // thread until the span exits: a request handled on a pool thread stays attributed to
  // the request's scope.
  Span(Recorder* recorder, Scope scope) noexcept;
  ~Span() { Exit(); }

  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

  // Closes the scope (and any still open inside it). Idempotent.
  void Exit() noexcept;

  // The scope path this span opened.
  uint32_t path() const noexcept { return path_; }

 private:
  void Push(uint32_t path) noexcept;

  Recorder* recorder_;
  uint32_t path_;
  uint32_t depth_;  // stack depth before entering; UINT32_MAX once exited
  const void* thread_;
};

// The scope path in force on the calling thread (0 = unscoped).
uint32_t CurrentScopePath() noexcept;

// Scopes opened and closed by calls rather than by a Span's life, for the C markers
// (include/memtrace/markers.h), whose program knows a scope only by its name at run time.
// EnterNamedScope() opens `name` inside the scope in force on this thread; the name is
// interned the first time this thread opens it under that parent and found again by its
// address (checked against the interned text, so a buffer reused for another name is
// never taken for the first). ExitInnermostScope() closes the scope most recently opened
// on this thread that is still open, whichever way it was opened; false (nothing recorded)
// when none is. `recorder` may be null: the thread's scope changes, nothing is recorded.
void EnterNamedScope(Recorder* recorder, const char* name) noexcept;
bool ExitInnermostScope(Recorder* recorder) noexcept;

}  // namespace memtrace

#endif  // MEMTRACE_RUNTIME_SPAN_H_
