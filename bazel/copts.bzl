"""Compiler flags for memtrace's own code: the one place they are set.

The language level (C++20) and optimisation (-O2) apply to everything and live in .bazelrc;
the warnings below apply to our code only, since Debian's headers are not ours to fix.
"""

MEMTRACE_COPTS = [
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wshadow=local",
    "-Wnon-virtual-dtor",
    "-Wno-missing-field-initializers",
]

# Tests and benchmarks: gtest and benchmark macros trip -Wshadow in their own expansions.
MEMTRACE_TEST_COPTS = [
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wno-missing-field-initializers",
]
