// Copyright 2026 The memtrace Authors.
//
// A program built without PIE that takes the address of malloc and free, as CPython's
// interpreter does: the executable's PLT entries then are malloc's and free's addresses
// for every object (dlsym(RTLD_DEFAULT, "malloc") among them), while its calls still reach
// whatever definition comes first. preload_counts_test checks that the interposer is not fooled
// into naming the executable as an allocator of its own.

#include <stdio.h>
#include <stdlib.h>

using Malloc = void* (*)(size_t);
using Free = void (*)(void*);

volatile Malloc malloc_address = &malloc;
volatile Free free_address = &free;

int main() {
  int blocks = 0;
  for (int i = 0; i < 100; ++i) {
    void* p = malloc_address(50001 + 2 * static_cast<size_t>(i));  // the preload tests' markers
    if (p != nullptr) ++blocks;
    free_address(p);
  }
  printf("blocks=%d\n", blocks);
  return 0;
}
