/* Copyright 2026 The memtrace Authors.
 *
 * markers_target: a C program that marks its scopes, a pool of its own and a census value
 * with include/memtrace/markers.h alone (no memtrace library linked), for markers_test.cc.
 * It keeps what it allocates on purpose live to the end, so the test reads each scope's
 * and layer's bytes from the capture's last state:
 *   load              3 blocks of 70001 bytes, live
 *   load/parse/tokens 1 block of 70003, freed
 *   load/parse/words  1 block of 70005, live (its name is written into the buffer that
 *                     held "tokens": a reused buffer is another name)
 *   layer "pool"      2 blocks reported (1000 and 2000 bytes), the first released
 *   census "cache"    12345
 * Unscoped again after the last exit: an extra exit (nothing open) changes nothing, and
 * the final 70007-byte block is unscoped. Prints "pool=yes" when memtrace named the layer
 * (it is loaded), "pool=no" when not.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace/markers.h"

static void* MustAlloc(size_t n) {
  void* p = malloc(n);
  if (p == NULL) exit(3);
  memset(p, 1, n);
  return p;
}

static char pool_memory[4096];
/* Global, so the blocks kept to the end are reachable (LeakSanitizer). */
static void* kept[5];

int main(void) {
  memtrace_scope_enter("load");
  for (int i = 0; i < 3; ++i) kept[i] = MustAlloc(70001);
  memtrace_scope_enter("parse");
  char name[16];
  strcpy(name, "tokens");
  memtrace_scope_enter(name);
  free(MustAlloc(70003));
  memtrace_scope_exit();
  strcpy(name, "words");
  memtrace_scope_enter(name);
  kept[3] = MustAlloc(70005);
  memtrace_scope_exit();
  memtrace_scope_exit(); /* parse */
  memtrace_scope_exit(); /* load */
  memtrace_scope_exit(); /* nothing open */
  kept[4] = MustAlloc(70007);

  const int pool = memtrace_layer("pool");
  memtrace_alloc(pool, pool_memory, 1000);
  memtrace_alloc(pool, pool_memory + 1024, 2000);
  memtrace_free(pool, pool_memory);
  memtrace_census_set("cache", 12345);
  /* One of memtrace's own layers: refused (-1), and the interposer says so. */
  const int own = memtrace_layer("interposer");
  memtrace_alloc(own, pool_memory + 4096, 500);

  printf("pool=%s own=%d kept=%p\n", pool >= 0 ? "yes" : "no", own, (void*)kept);
  return 0;
}
