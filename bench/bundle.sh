#!/bin/bash
# Copyright 2026 The memtrace Authors.
#
# bundle.sh: the benchmark binaries and everything they load, in one folder, for a
# machine that has neither Bazel nor our Debian packages (the 16-core table of
# bench/README.md, "Scaling to 16 cores", was measured this way).
#
#   bench/bundle.sh DIR [--perf]
#
# DIR/bin   side_by_side_workload, overhead_benchmark, many_threads_workload, memtrace,
#           libmemtrace_preload.so; heaptrack and zstd when heaptrack is installed (its
#           script finds DIR/lib/heaptrack beside it); perf with --perf
# DIR/deps  every shared library those load, except glibc's own and the C++ runtime
#           (the other machine has newer ones)
# DIR/perfdeps  perf's libraries, kept apart: its libpython and libperl should not be
#           found by anything else
#
# On the other machine, from a copy of this repository with DIR in it:
#   export LD_LIBRARY_PATH=$PWD/DIR/deps PATH=$PWD/DIR/bin:$PATH
#   bench/thread_scaling.sh --bin=DIR/bin --max-threads=16
# Exit 0 when the folder is complete, 1 when a build or copy failed, 2 for bad usage.

set -euo pipefail
usage() { echo "usage: bench/bundle.sh DIR [--perf]" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
out=$1
with_perf=false
if [[ $# -eq 2 ]]; then [[ $2 == --perf ]] || usage; with_perf=true; fi
cd "$(dirname "$0")/.."

bazel build //bench:side_by_side_workload //bench:overhead_benchmark \
  //bench:many_threads_workload //cli:memtrace //preload:libmemtrace_preload.so >/dev/null 2>&1 || {
  echo "bundle.sh: bazel build failed (run it yourself to see why)" >&2
  exit 1
}
bb=$(bazel info bazel-bin 2>/dev/null)
rm -rf "$out"
mkdir -p "$out/bin" "$out/deps"
cp "$bb/bench/side_by_side_workload" "$bb/bench/overhead_benchmark" \
  "$bb/bench/many_threads_workload" "$bb/cli/memtrace" "$bb/preload/libmemtrace_preload.so" \
  "$out/bin/"
if command -v heaptrack >/dev/null; then
  cp "$(command -v heaptrack)" "$out/bin/"
  mkdir -p "$out/lib" && cp -r /usr/lib/heaptrack "$out/lib/"
  if command -v zstd >/dev/null; then cp "$(command -v zstd)" "$out/bin/"; fi
else
  echo "bundle.sh: heaptrack is not installed; its rows will be skipped there" >&2
fi

source "$PWD/bench/shared_libraries.sh"
shared_libraries "$out"/bin/* $(find "$out/lib" -type f 2>/dev/null) | while read -r lib; do
  cp -L "$lib" "$out/deps/"
done
if $with_perf; then
  perf=$(command -v perf) || { echo "bundle.sh: --perf, but perf is not installed" >&2; exit 1; }
  cp "$perf" "$out/bin/perf"
  mkdir -p "$out/perfdeps"
  shared_libraries "$perf" | while read -r lib; do cp -L "$lib" "$out/perfdeps/"; done
  echo "bundle.sh: run perf there as: env LD_LIBRARY_PATH=DIR/perfdeps:DIR/deps DIR/bin/perf ..." \
    "(DIR: where $out is there, as an absolute path)" >&2
fi
echo "bundle.sh: $out holds $(ls "$out/bin" | wc -l) programs and $(ls "$out/deps" | wc -l) libraries, $(du -sh "$out" | cut -f1)" >&2
