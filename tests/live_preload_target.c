/* Copyright 2026 The memtrace Authors.
 *
 * live_preload_target: a C program for live_test.cc to run under `memtrace run --live`.
 * In the scope "held" (include/memtrace/markers.h) it allocates blocks of 1000, 2000,
 * 3000, 4000 and 5000 bytes and frees the 3000: the scope holds 4 blocks, 12000 bytes.
 * Then it prints "ready <pid>", waits for a line on stdin, frees the rest and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memtrace/markers.h"

/* Global, so the blocks held are reachable (LeakSanitizer). */
static void* held[5];

int main(void) {
  memtrace_scope_enter("held");
  for (int i = 0; i < 5; ++i) {
    held[i] = malloc((size_t)(i + 1) * 1000);
    if (held[i] == NULL) return 3;
    memset(held[i], 1, (size_t)(i + 1) * 1000);
  }
  free(held[2]);
  held[2] = NULL;
  memtrace_scope_exit();
  printf("ready %d\n", (int)getpid());
  fflush(stdout);
  char line[64];
  if (fgets(line, sizeof(line), stdin) == NULL) return 4;
  for (int i = 0; i < 5; ++i) free(held[i]);
  return 0;
}
