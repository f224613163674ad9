// Copyright 2026 The memtrace Authors.
//
// libother_malloc.so: a stand-in for an allocator other than glibc's (jemalloc, tcmalloc),
// for preload_counts_test. Preloaded after libmemtrace_preload.so, it is the malloc the
// interposer finds next (dlsym(RTLD_NEXT)); it forwards to glibc's own entry points.

#include <stddef.h>

extern "C" {
void* __libc_malloc(size_t n);
void __libc_free(void* p);
void* __libc_calloc(size_t n, size_t size);
void* __libc_realloc(void* p, size_t n);

__attribute__((visibility("default"))) void* malloc(size_t n) { return __libc_malloc(n); }
__attribute__((visibility("default"))) void free(void* p) { __libc_free(p); }
__attribute__((visibility("default"))) void* calloc(size_t n, size_t size) {
  return __libc_calloc(n, size);
}
__attribute__((visibility("default"))) void* realloc(void* p, size_t n) {
  return __libc_realloc(p, n);
}
}
