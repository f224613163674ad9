#!/bin/bash
# Copyright 2026 The memtrace Authors.
#
# thread_scaling.sh: how memtrace scales with threads on a machine with many cores.
# Three parts, each printed as it finishes:
#
#   1. bench/side_by_side --threads=1,2,4,..,N on churn and server: throughput of the
#      untraced workload, the wrapped-allocator API, the preload (fp16 with each fence,
#      fp16 with one thread applying records against the default's CPUs/4, dwarf16), and
#      heaptrack when it is installed.
#   2. bench/overhead_benchmark with MEMTRACE_BENCH_MAX_THREADS=N: a malloc+free pair's
#      cost per thread with each fence, and whether the one drainer keeps up with N
#      paced producers at 5M-40M allocations/s (BM_SustainedRate: dropped must be 0).
#   3. bench/many_threads_workload 256 under `memtrace run`, then `memtrace verify`.
#
#   bench/thread_scaling.sh                    # builds, N = the number of CPUs
#   bench/thread_scaling.sh --bin=DIR --max-threads=16 --scale=0.2 --repeat=3
#       DIR holds side_by_side_workload, overhead_benchmark, many_threads_workload,
#       memtrace and libmemtrace_preload.so (a machine without Bazel: bench/bundle.sh
#       makes such a folder; bench/README.md, "Scaling to 16 cores").
#
# Exit 0 when every part ran, 1 when one failed, 2 for bad usage.

set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=""
max_threads=$(nproc)
scale=0.2
repeat=3

for arg in "$@"; do
  case "$arg" in
    --bin=*) bin=${arg#--bin=} ;;
    --max-threads=*) max_threads=${arg#--max-threads=} ;;
    --scale=*) scale=${arg#--scale=} ;;
    --repeat=*) repeat=${arg#--repeat=} ;;
    -h|--help) sed -n '4,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "thread_scaling.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
if ! [[ "$max_threads" =~ ^[0-9]+$ ]] || ((max_threads < 1 || max_threads > 256)); then
  echo "thread_scaling.sh: --max-threads=$max_threads must be a whole number in 1..256" >&2
  exit 2
fi

if [[ -z "$bin" ]]; then
  # The same build and folder as for another machine (its libraries are this machine's).
  bundle=$(mktemp -d)
  trap 'rm -rf "$bundle"' EXIT
  "$here/bundle.sh" "$bundle/b" || exit 1
  bin=$bundle/b/bin
fi
if [[ ! -d "$bin" ]]; then
  echo "thread_scaling.sh: --bin=$bin is not a folder (make one with bench/bundle.sh DIR)" >&2
  exit 2
fi
bin=$(cd "$bin" && pwd)
for f in side_by_side_workload overhead_benchmark many_threads_workload memtrace \
    libmemtrace_preload.so; do
  if [[ ! -e "$bin/$f" ]]; then
    echo "thread_scaling.sh: $bin/$f is missing; build it or point --bin at a folder that has it" >&2
    exit 2
  fi
done

threads=""
for ((t = 1; t <= max_threads; t *= 2)); do threads+="${threads:+,}$t"; done
((max_threads & (max_threads - 1))) && threads+=",$max_threads"

status=0
echo "== $(nproc) CPUs; $(uname -r); threads $threads; scale $scale; repeat $repeat"
echo "== 1. side_by_side"
python3 "$here/side_by_side" --threads="$threads" --workloads=churn,server \
    --variants=untraced,memtrace-api,preload-fp16,preload-fp16-seqcst,preload-fp16-k1,preload-dwarf16,heaptrack \
    --scale="$scale" --repeat="$repeat" \
    --workload-bin="$bin/side_by_side_workload" --preload="$bin/libmemtrace_preload.so" ||
  status=1

echo "== 2. overhead_benchmark, MEMTRACE_BENCH_MAX_THREADS=$max_threads"
MEMTRACE_BENCH_MAX_THREADS=$max_threads "$bin/overhead_benchmark" \
    --benchmark_filter='MallocFree|SustainedRate|DrainerThroughput/pairs:1048576/live:0/' \
    --benchmark_min_time=0.2 || status=1

echo "== 3. many_threads_workload 256 under memtrace run"
capture=$(mktemp --suffix=.mtb)
start=$(date +%s%N)
MEMTRACE_PRELOAD="$bin/libmemtrace_preload.so" "$bin/memtrace" run --quiet \
    --output="$capture" -- "$bin/many_threads_workload" 256 || status=1
echo "memtrace run: $((($(date +%s%N) - start) / 1000000)) ms"
"$bin/memtrace" verify "$capture" || status=1
"$bin/memtrace" summary "$capture" | sed -n '/^integrity/,/own CPU/p'
rm -f "$capture"
exit $status
