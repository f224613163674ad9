/* Copyright 2026 The memtrace Authors.
 *
 * memtrace/markers.h: scopes, named allocators and census values for a program traced
 * by `memtrace run`, in C or C++, with no library to link.
 *
 * Under `memtrace run` (the interposer, libmemtrace_preload.so, loaded with LD_PRELOAD)
 * these calls reach memtrace:
 *   - memtrace_scope_enter("parse") ... memtrace_scope_exit(): the allocations this
 *     thread makes in between are charged to the scope, nested in the one open before
 *     ("request/parse"), as a Span does (runtime/span.h). A scope is closed by the
 *     thread that opened it, innermost first. Retention, coverage, scope diff and the
 *     report's scope panels then work on the program.
 *   - memtrace_layer("pool") names an allocator of the program's own (an arena, a pool,
 *     GPU memory) and returns its layer; memtrace_alloc(layer, p, size) and
 *     memtrace_free(layer, p) report its blocks, which memtrace shows on that layer
 *     beside the malloc family's.
 *   - memtrace_census_set("cache", bytes): a value the program counts itself, shown in
 *     snapshots and the capture (runtime/census.h).
 * Without memtrace each call is a test of a null pointer: the functions behind them are
 * declared weak, so a program built with this header runs anywhere, and finds them only
 * when the interposer defines them. (A static executable never does: build the program
 * dynamically linked, as `memtrace run` needs anyway.)
 *
 * Names are copied by memtrace the first time it sees them; a scope name is then found
 * again by its address and checked against the copy, so any string may be passed, a
 * literal is cheapest.
 */
#ifndef MEMTRACE_MARKERS_H_
#define MEMTRACE_MARKERS_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Defined by libmemtrace_preload.so; null without it. Call the functions below instead. */
extern void memtrace_marker_scope_enter(const char* name) __attribute__((weak));
extern void memtrace_marker_scope_exit(void) __attribute__((weak));
extern int memtrace_marker_layer(const char* name) __attribute__((weak));
extern void memtrace_marker_alloc(int layer, const void* block, size_t size)
    __attribute__((weak));
extern void memtrace_marker_free(int layer, const void* block) __attribute__((weak));
extern void memtrace_marker_census_set(const char* label, size_t bytes) __attribute__((weak));

/* Opens scope `name` on this thread, inside the scope open before. */
static inline void memtrace_scope_enter(const char* name) {
  if (memtrace_marker_scope_enter) memtrace_marker_scope_enter(name);
}

/* Closes the innermost scope this thread has open (none: nothing happens). */
static inline void memtrace_scope_exit(void) {
  if (memtrace_marker_scope_exit) memtrace_marker_scope_exit();
}

/* The layer named `name` (the same name gives the same layer), or -1: memtrace is not
 * loaded, its 256 layers are taken, or the name is one of memtrace's own layers ("cpu",
 * "mmap" under --mmap, ...); the interposer says why on stderr. Blocks reported on -1 are
 * not recorded. */
static inline int memtrace_layer(const char* name) {
  return memtrace_marker_layer ? memtrace_marker_layer(name) : -1;
}

/* A block of `size` bytes at `block` was allocated on `layer` (from memtrace_layer()). */
static inline void memtrace_alloc(int layer, const void* block, size_t size) {
  if (memtrace_marker_alloc && layer >= 0) memtrace_marker_alloc(layer, block, size);
}

/* The block at `block` on `layer` was released. */
static inline void memtrace_free(int layer, const void* block) {
  if (memtrace_marker_free && layer >= 0) memtrace_marker_free(layer, block);
}

/* The census value `label` is now `bytes`. */
static inline void memtrace_census_set(const char* label, size_t bytes) {
  if (memtrace_marker_census_set) memtrace_marker_census_set(label, bytes);
}

#ifdef __cplusplus
} /* extern "C" */

/* C++: MEMTRACE_SCOPE("parse"); opens a scope until the end of the enclosing block. */
namespace memtrace_markers {
class ScopeGuard {
 public:
  explicit ScopeGuard(const char* name) { memtrace_scope_enter(name); }
  ~ScopeGuard() { memtrace_scope_exit(); }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;
};
}  // namespace memtrace_markers
#define MEMTRACE_MARKERS_CONCAT_(a, b) a##b
#define MEMTRACE_MARKERS_CONCAT(a, b) MEMTRACE_MARKERS_CONCAT_(a, b)
#define MEMTRACE_SCOPE(name) \
  ::memtrace_markers::ScopeGuard MEMTRACE_MARKERS_CONCAT(memtrace_scope_, __LINE__)(name)
#endif

#endif /* MEMTRACE_MARKERS_H_ */
