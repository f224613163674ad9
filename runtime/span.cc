// Copyright 2026 The memtrace Authors.

#include "runtime/span.h"

#include <chrono>
#include <cstring>

#include "runtime/internal/thread_state.h"

namespace memtrace {
namespace {

using runtime_internal::kMaxScopeDepth;
using runtime_internal::ThreadState;
using runtime_internal::Tls;

uint64_t NowNs() noexcept {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Per-thread cache of (parent path, name id) -> child path, in front of the scope table.
struct ChildCache {
  static constexpr int kSize = 256;
  uint64_t keys[kSize];
  uint32_t paths[kSize];
};
thread_local constinit ChildCache child_cache{};

uint32_t ChildPath(uint32_t parent, uint32_t name_id) {
  const uint64_t key = ((uint64_t{parent} << 32) | name_id) + 1;  // never 0
  const size_t slot = ((key * 0x9E3779B97F4A7C15ull) >> 56) % ChildCache::kSize;
  if (child_cache.keys[slot] == key) return child_cache.paths[slot];
  runtime_internal::ReentrancyGuard guard;  // the scope table may allocate
  const uint32_t path = ScopeTable::Global().Child(parent, name_id);
  child_cache.keys[slot] = key;
  child_cache.paths[slot] = path;
  return path;
}

// Per-thread cache of (parent path, name's address) -> child path, for scopes opened by
// name at run time (EnterNamedScope). `text` is the interned name, compared with the
// caller's string on every hit.
struct NamedScopeCache {
  static constexpr int kSize = 64;
  struct Entry {
    const char* name;
    const char* text;
    uint32_t parent;
    uint32_t path;
  };
  Entry entries[kSize];
};
thread_local constinit NamedScopeCache named_scope_cache{};

uint32_t NamedChildPath(uint32_t parent, const char* name) {
  const uint64_t key = reinterpret_cast<uintptr_t>(name) ^ (uint64_t{parent} << 40);
  NamedScopeCache::Entry& e =
      named_scope_cache.entries[((key * 0x9E3779B97F4A7C15ull) >> 58) % NamedScopeCache::kSize];
  if (e.name == name && e.parent == parent && e.text != nullptr && strcmp(e.text, name) == 0) {
    return e.path;
  }
  runtime_internal::ReentrancyGuard guard;  // the scope table may allocate
  ScopeTable& table = ScopeTable::Global();
  const uint32_t name_id = table.InternName(name);
  const uint32_t path = ChildPath(parent, name_id);
  e = NamedScopeCache::Entry{name, table.NameText(name_id), parent, path};
  return path;
}

void Enter(Recorder* recorder, uint32_t path) noexcept {
  ThreadState& t = Tls();
  const uint32_t outer = t.scope;
  if (t.depth < kMaxScopeDepth) t.scope_stack[t.depth] = outer;
  ++t.depth;
  t.scope = path;
  if (recorder != nullptr) recorder->RecordScope(EventKind::kScopeEnter, path, outer, NowNs());
}

}  // namespace

uint32_t CurrentScopePath() noexcept { return Tls().scope; }

void EnterNamedScope(Recorder* recorder, const char* name) noexcept {
  if (name == nullptr) name = "";
  Enter(recorder, NamedChildPath(Tls().scope, name));
}

bool ExitInnermostScope(Recorder* recorder) noexcept {
  ThreadState& t = Tls();
  if (t.depth == 0) return false;
  --t.depth;
  const uint32_t closing = t.scope;
  const uint32_t outer =
      t.depth < kMaxScopeDepth ? t.scope_stack[t.depth] : ScopeTable::Global().Parent(closing);
  t.scope = outer;
  if (recorder != nullptr) recorder->RecordScope(EventKind::kScopeExit, closing, outer, NowNs());
  return true;
}

Scope Scope::Current() noexcept { return Scope{Tls().scope}; }

Span::Span(Recorder* recorder, const ScopeName& name) noexcept
    : recorder_(recorder), path_(0), depth_(UINT32_MAX), thread_(&Tls()) {
  Push(ChildPath(Tls().scope, name.id()));
}

Span::Span(Recorder* recorder, Scope scope) noexcept
    : recorder_(recorder), path_(0), depth_(UINT32_MAX), thread_(&Tls()) {
  Push(scope.path);
}

void Span::Push(uint32_t path) noexcept {
  path_ = path;
  depth_ = Tls().depth;
  Enter(recorder_, path);
}

void Span::Exit() noexcept {
  if (depth_ == UINT32_MAX) return;
  ThreadState& t = Tls();
  if (&t != thread_) {  // not this thread's scope stack: refuse, and count it
    if (recorder_ != nullptr) recorder_->CountForeignSpanExit();
    depth_ = UINT32_MAX;
    return;
  }
  // Close scopes opened inside this one that are still open, innermost first.
  while (t.depth > depth_) {
    --t.depth;
    const uint32_t closing = t.scope;
    const uint32_t outer =
        t.depth < kMaxScopeDepth ? t.scope_stack[t.depth] : ScopeTable::Global().Parent(closing);
    t.scope = outer;
    if (recorder_ != nullptr) {
      recorder_->RecordScope(EventKind::kScopeExit, closing, outer, NowNs());
    }
  }
  depth_ = UINT32_MAX;
}

}  // namespace memtrace
