#!/usr/bin/env bash
# Copyright 2026 The memtrace Authors.
#
# install_test: an install tree (tools/install_tree, what tools/install lays out) used as
# a program outside this workspace would use it:
#   - examples/cmake_consumer builds with find_package(memtrace) and runs, its capture
#     read by the installed memtrace;
#   - examples/make_consumer builds through pkg-config and runs (census_demo), and its C
#     program that includes only memtrace/markers.h runs alone and under the installed
#     `memtrace run`, which finds the installed interposer beside itself;
#   - nothing in the tree points into the build.
# The numbers checked are the programs' own: 10 blocks of 1000 bytes, 5 freed; a census
# value of 1 MiB; 100000 and 20000 bytes in "build" and "build/index".
#
# Args: the install_tree script, then the workspace's runfiles directory is found from
# $TEST_SRCDIR. Under a sanitizer configuration the library carries that sanitizer's
# runtime, which a program built outside cannot load first: the test skips itself then.
set -euo pipefail
install_tree="$1"
root="$TEST_SRCDIR/memtrace"
work="$TEST_TMPDIR/install"
prefix="$work/prefix"
mkdir -p "$work"

skip() {  # records a skipped case in the XML Bazel keeps (tools/skipped_cases reads it)
  cat > "${XML_OUTPUT_FILE:-/dev/null}" <<XML
<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="1" failures="0"><testsuite name="InstallTest" tests="1" failures="0" skipped="1">
<testcase name="AnInstallTreeServesCMakePkgConfigAndTheMarkers" result="skipped"><skipped message="$1"/></testcase>
</testsuite></testsuites>
XML
  echo "SKIPPED: $1"
  exit 0
}
# (ldd's output taken whole first: under pipefail, `ldd | grep -q` fails when grep's early
# exit kills ldd with SIGPIPE, and the skip would depend on timing.)
if grep -Eq 'lib(asan|tsan|ubsan)' <<< "$(ldd "$root/dist/libmemtrace.so")"; then
  skip "libmemtrace.so is built with this configuration's sanitizer runtime, which a program built outside Bazel cannot load; the default configuration runs this test"
fi
for tool in cmake make pkg-config c++ cc; do
  command -v "$tool" > /dev/null || { echo "FAIL: $tool is not installed (tools/setup)"; exit 1; }
done
fail() { echo "FAIL: $*"; exit 1; }

"$install_tree" --prefix="$prefix" --from="$root" --source="$root" --version=1.2.3
for f in bin/memtrace lib/libmemtrace_preload.so lib/libmemtrace.so include/memtrace/markers.h \
         include/memtrace/runtime/tracer.h lib/pkgconfig/memtrace.pc \
         lib/cmake/memtrace/memtraceConfig.cmake; do
  [[ -f "$prefix/$f" ]] || fail "$f is not in the tree"
done
if grep -rlF -e "$root" -e "bazel-out" "$prefix/lib/pkgconfig" "$prefix/lib/cmake"; then
  fail "the files above point into the build"
fi
env -u MEMTRACE_PRELOAD "$prefix/bin/memtrace" --version > "$work/version" 2>&1 || true

# CMake: find_package(memtrace), the target memtrace::memtrace.
cmake -S "$root/examples/cmake_consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  > "$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "cmake configure"; }
cmake --build "$work/cmake" > "$work/cmake_build.log" 2>&1 ||
  { cat "$work/cmake_build.log"; fail "cmake build"; }
out="$("$work/cmake/cmake_consumer" "$work/cmake.jsonl")"
[[ "$out" == "live_count=5 live_bytes=5000" ]] || fail "cmake_consumer printed '$out'"
summary="$("$prefix/bin/memtrace" summary --json "$work/cmake.jsonl")"
grep -q '"totals":{"live_bytes":0,"live_count":0,"high_water_bytes":10000,' <<< "$summary" ||
  fail "the cmake_consumer's capture: $summary"

# pkg-config and make.
mkdir -p "$work/make"
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" make -s -C "$root/examples/make_consumer" \
  OUT="$work/make" > "$work/make.log" 2>&1 || { cat "$work/make.log"; fail "make"; }
out="$("$work/make/census_demo")"
[[ "$out" == "live_bytes=4096 load=4096 textures=1048576 peaks exact" ]] || fail "census_demo printed '$out'"
out="$("$work/make/markers_demo")"
[[ "$out" == "built 2" ]] || fail "markers_demo alone printed '$out'"
# The headers build under a program's own strict warnings (they come in as system
# headers), and with clang++ as well, where it is installed.
compilers=(c++)
command -v clang++-14 > /dev/null && compilers+=(clang++-14)
for cxx in "${compilers[@]}"; do
  mkdir -p "$work/strict_$cxx"
  PKG_CONFIG_PATH="$prefix/lib/pkgconfig" make -s -C "$root/examples/make_consumer" \
    CXX="$cxx" CXXFLAGS="-O1 -Wall -Wextra -Wpedantic -Werror" OUT="$work/strict_$cxx" \
    "$work/strict_$cxx/census_demo" > "$work/strict.log" 2>&1 ||
    { cat "$work/strict.log"; fail "census_demo with $cxx -Wpedantic -Werror"; }
  out="$("$work/strict_$cxx/census_demo")"
  [[ "$out" == "live_bytes=4096 load=4096 textures=1048576 peaks exact" ]] || fail "census_demo ($cxx) printed '$out'"
done

# The installed memtrace run, with its own interposer and nothing of the build's.
env -u MEMTRACE_PRELOAD "$prefix/bin/memtrace" run --quiet --output="$work/markers.jsonl" -- \
  "$work/make/markers_demo" > "$work/run.out" 2>&1 || { cat "$work/run.out"; fail "memtrace run"; }
grep -q "\"library\":\"$prefix/bin/../lib/libmemtrace_preload.so\"" "$work/markers.jsonl" ||
  fail "the capture was not made by the installed interposer: $(head -c 600 "$work/markers.jsonl")"
summary="$("$prefix/bin/memtrace" summary --json "$work/markers.jsonl")"
for scope in '"path":"build","usage":{"live_bytes":0,"live_count":0,"high_water_bytes":100000,' \
             '"path":"build/index","usage":{"live_bytes":0,"live_count":0,"high_water_bytes":20000,'; do
  grep -qF "$scope" <<< "$summary" || fail "no $scope in: $summary"
done
echo "PASS"
