/* A C program that marks its scopes with memtrace/markers.h and links nothing of
 * memtrace: it runs as is, and under `memtrace run -- ./markers_demo` its blocks are
 * charged to "build" and "build/index". */
#include <stdio.h>
#include <stdlib.h>

#include "memtrace/markers.h"

int main(void) {
  memtrace_scope_enter("build");
  char* table = malloc(100000);
  memtrace_scope_enter("index");
  char* index = malloc(20000);
  memtrace_scope_exit();
  memtrace_scope_exit();
  if (table == NULL || index == NULL) return 1;
  table[0] = index[0] = 1;
  printf("built %d\n", table[0] + index[0]);
  free(index);
  free(table);
  return 0;
}
