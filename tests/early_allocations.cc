// Copyright 2026 The memtrace Authors.
//
// early_allocations: a program whose library (early_allocator.cc) allocated in its
// constructor, before the interposer's ran. Prints what the library kept and ends.

#include <stdio.h>

extern "C" {
extern void* memtrace_early_table;
extern void* memtrace_early_kept[20];
}

int main() {
  int kept = 0;
  for (void* p : memtrace_early_kept) kept += p != nullptr;
  printf("table=%s kept=%d\n", memtrace_early_table != nullptr ? "yes" : "no", kept);
  return 0;
}
