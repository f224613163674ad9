#!/usr/bin/env bash
# Copyright 2026 The memtrace Authors.
#
# fork_cost.sh: what a fork() and the child's life cost a traced program
# (bench/fork_benchmark.cc), untraced, under the interposer, and under it with
# MEMTRACE_TRACE_FORKS=1 (memtrace run --forks), where each child writes a capture of its
# own. The three run alternately, --runs rounds; prints each one's median time per fork
# and wait and its ratio to the untraced median of the same run.
#
#   bench/fork_cost.sh [--runs=N]     (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5
for arg in "$@"; do
  case "$arg" in
    --runs=*) runs="${arg#--runs=}" ;;
    *) echo "usage: bench/fork_cost.sh [--runs=N]" >&2; exit 2 ;;
  esac
done
bazel build //bench:fork_benchmark //preload:libmemtrace_preload.so > /dev/null 2>&1 || {
  echo "fork_cost: bazel build failed" >&2
  exit 1
}
bin="$(bazel info bazel-bin 2>/dev/null)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The benchmark's real (wall) time per iteration, in microseconds: the parent waits.
one() {
  "$@" "$bin/bench/fork_benchmark" --benchmark_format=csv 2> /dev/null |
    awk -F, '/BM_ForkAndWait/ { printf "%.1f\n", $3 }'
}
declare -A times
for ((r = 1; r <= runs; ++r)); do
  times[untraced]+="$(one env) "
  times[traced]+="$(one env LD_PRELOAD="$bin/preload/libmemtrace_preload.so" \
    MEMTRACE_OUTPUT="$work/traced.mtb") "
  rm -rf "$work/forks" && mkdir "$work/forks"
  times[forks]+="$(one env LD_PRELOAD="$bin/preload/libmemtrace_preload.so" \
    MEMTRACE_TRACE_FORKS=1 MEMTRACE_OUTPUT="$work/forks/c.mtb") "
done
source "$PWD/bench/stats.sh"
base="$(echo "${times[untraced]}" | median)"
for v in untraced traced forks; do
  m="$(echo "${times[$v]}" | median)"
  printf '%-9s %9s us per fork and wait (median of %d runs: %s)  %5.1fx untraced\n' \
    "$v" "$m" "$runs" "${times[$v]% }" "$(echo "$m / $base" | bc -l)"
done
