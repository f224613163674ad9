/* Copyright 2026 The memtrace Authors.
 *
 * A statically linked program: LD_PRELOAD cannot reach it, and `memtrace run` must say so
 * (preload_test.cc). */
int main(void) { return 0; }
