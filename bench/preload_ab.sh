#!/usr/bin/env bash
# Copyright 2026 The memtrace Authors.
#
# preload_ab.sh: two or more interposer builds, A/B, on the sqlite3 workload of
# real_programs.sh (bench/sqlite_workload.sql), by the CPU time of the program's main
# thread, and of the whole process.
#
# Why the main thread's CPU time: the wall time of a whole traced run moves by tens of
# milliseconds between identical runs on a shared 2-vCPU machine, and it mixes the hot
# path's cost with the drainer's and the writer's. sqlite3's main thread is the only one
# that allocates, and the one memtrace's hot path slows down. A tiny library preloaded
# after the interposer prints its CPU time from a destructor (after the program is done
# allocating; before 7b8c923, being loaded after the interposer shifted the heap enough to
# put memtrace's per-scope counters on a line sqlite3 wrote, and unpinned runs paid
# 70-110 ms for it: bench/README.md, "Lines the drainer shares with the program"). The
# process's CPU time (user + system of every thread, memtrace's drainer
# and writer and the final flush included: bash's `time`, millisecond resolution) is what
# bench/real_programs.sh's "CPU time added per call" counts, and what splits a build's cost
# between the program's thread and memtrace's own. The wall time of each run (start to
# exit, the capture's final flush included) is shown beside them: a producer waiting for ring space sleeps, which shows
# there and not in CPU time. Variants run round-robin, --runs rounds; each figure is the
# median and the fastest run, with the time added against the untraced variant's same
# figure (on a shared machine other work only ever adds time: the fastest run is the
# least disturbed one).
#
#   bench/preload_ab.sh [--runs=N] [--cpu=N|any] [--tracer-cpus=LIST] [--sql=FILE] \
#       label=PRELOAD.so[:ENV=VALUE,...] ...
#
# --cpu: the CPU every run is pinned to (taskset), 0 by default. On the shared 2-vCPU
# machines the two vCPUs can differ by half in speed for minutes at a time (another
# tenant on the host core behind one of them: sqlite3 untraced has taken 0.50 s on one
# and 0.81 s on the other in the same minute), and a run lands on either; unpinned, that
# difference swamps what is measured. Pinned, memtrace's drainer and writer share the
# program's CPU: the main thread's CPU time stays a fair measure (its caches are shared
# with them), and the wall time then includes their work. "any": the kernel places runs.
# --tracer-cpus: MEMTRACE_TRACER_CPUS for every traced variant: with --cpu=0
# --tracer-cpus=1 the program runs on CPU 0 and memtrace's drainer and writer on CPU 1,
# the two-core split of an unpinned run without its lottery. (Interposer builds older
# than the setting ignore it; their threads then share the program's CPU.)
# --sql: what sqlite3 runs instead of the workload (/dev/null: start-up and exit only,
# each variant's fixed cost).
#
# A variant is a label, the interposer to load ("none": untraced; "idle-thread": untraced,
# with one idle thread started in the process, which is what any in-process tracer's
# background thread alone costs the program: glibc's mutexes and malloc's arena locks skip
# their atomic instructions only while a process has one thread) and optional settings
# for it, for example:
#
#   cp bazel-bin/preload/libmemtrace_preload.so /tmp/before.so   # at the older commit
#   bench/preload_ab.sh --runs=7 untraced=none before=/tmp/before.so \
#       after=bazel-bin/preload/libmemtrace_preload.so \
#       after-depth0=bazel-bin/preload/libmemtrace_preload.so:MEMTRACE_STACK_DEPTH=0
#
# Needs: sqlite3 and a C compiler (cc).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5
cpu=0
tracer_cpus=""
sql="$PWD/bench/sqlite_workload.sql"
variants=()
for arg in "$@"; do
  case "$arg" in
    --runs=*) runs="${arg#--runs=}" ;;
    --cpu=*) cpu="${arg#--cpu=}" ;;
    --tracer-cpus=*) tracer_cpus="${arg#--tracer-cpus=}" ;;
    --sql=*) sql="${arg#--sql=}" ;;
    *=*) variants+=("$arg") ;;
    *) echo "usage: bench/preload_ab.sh [--runs=N] [--cpu=N|any] [--tracer-cpus=LIST]" \
            "[--sql=FILE]" \
            "label=PRELOAD.so[:ENV=VALUE,...] ..." >&2
       exit 2 ;;
  esac
done
if [[ ${#variants[@]} -eq 0 ]]; then
  echo "preload_ab: name at least one variant, label=PRELOAD.so or label=none" >&2
  exit 2
fi
[[ -r "$sql" ]] || { echo "preload_ab: --sql=$sql: no such readable file" >&2; exit 2; }
pin=()
if [[ "$cpu" != any ]]; then
  [[ "$cpu" =~ ^[0-9]+$ ]] || {
    echo "preload_ab: --cpu=$cpu: give a CPU number or 'any'" >&2
    exit 2
  }
  taskset -c "$cpu" true 2> /dev/null || {
    echo "preload_ab: cannot pin to CPU $cpu (taskset -c $cpu failed);" \
         "pick one of $(nproc) CPUs or --cpu=any" >&2
    exit 2
  }
  pin=(taskset -c "$cpu")
fi
command -v sqlite3 > /dev/null || {
  echo "preload_ab: sqlite3 is missing; run tools/setup --bench" >&2
  exit 2
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# median, fastest, own_cpu_ms and cpu_speeds (only those: its workloads are not run here).
source "$PWD/bench/real_workloads.sh"
cpu_speeds before

cat > "$work/main_cpu.c" <<'EOF'
#include <stdio.h>
#include <time.h>
/* The main thread's CPU time, printed as the process ends. */
__attribute__((destructor)) static void memtrace_ab_main_cpu(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  fprintf(stderr, "memtrace_ab_main_cpu %.4f\n", (double)t.tv_sec + t.tv_nsec / 1e9);
}
EOF
cc -O2 -shared -fPIC -o "$work/main_cpu.so" "$work/main_cpu.c"
cat > "$work/idle_thread.c" <<'EOF'
#include <pthread.h>
#include <unistd.h>
/* One thread that never runs: the process is multithreaded, so glibc's locks (sqlite3's
   mutexes, malloc's arenas) take their atomic paths, as under any tracer with a thread. */
static void* memtrace_ab_idle(void* arg) {
  for (;;) pause();
  return arg;
}
__attribute__((constructor)) static void memtrace_ab_start_idle(void) {
  pthread_t t;
  if (pthread_create(&t, 0, memtrace_ab_idle, 0) == 0) pthread_detach(t);
}
EOF
cc -O2 -shared -fPIC -o "$work/idle_thread.so" "$work/idle_thread.c" -lpthread

# One run of variant $1: prints the main thread's CPU seconds, the run's wall seconds, the
# process's CPU seconds (user + system), and memtrace's drainer and writer CPU ms.
run_variant() {
  local spec="$1" label so settings preload
  label="${spec%%=*}"
  so="${spec#*=}"
  settings=""
  if [[ "$so" == *:* ]]; then settings="${so#*:}"; so="${so%%:*}"; fi
  if [[ "$so" == none ]]; then
    preload="$work/main_cpu.so"
  elif [[ "$so" == idle-thread ]]; then
    preload="$work/idle_thread.so $work/main_cpu.so"
  else
    [[ -f "$so" ]] || { echo "preload_ab: '$so' (variant $label) does not exist" >&2; exit 2; }
    preload="$(realpath "$so") $work/main_cpu.so"
  fi
  local -a env_args=()
  if [[ -n "$settings" ]]; then IFS=',' read -r -a env_args <<< "$settings"; fi
  local start end cpu times
  start=$(date +%s%N)
  local -a tracer=()
  [[ -n "$tracer_cpus" ]] && tracer=(MEMTRACE_TRACER_CPUS="$tracer_cpus")
  local TIMEFORMAT='%3U %3S'
  times=$({ time "${pin[@]}" env MEMTRACE_OUTPUT="$work/capture.mtb" "${tracer[@]}" \
    "${env_args[@]}" LD_PRELOAD="$preload" \
    sqlite3 :memory: < "$sql" > /dev/null 2> "$work/stderr" || true; } 2>&1)
  end=$(date +%s%N)
  cpu=$(awk '/^memtrace_ab_main_cpu / {print $2}' "$work/stderr")
  if [[ -z "$cpu" ]]; then
    echo "preload_ab: variant $label printed no time; its stderr:" >&2
    cat "$work/stderr" >&2
    return 1
  fi
  # memtrace's own threads, from the capture's trailer; "- -" for an untraced run.
  local own
  own=$(own_cpu_ms "$work/capture.mtb")
  rm -f "$work/capture.mtb"
  echo "$cpu $(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.4f", (b - a) / 1e9}')" \
    "$(awk '{printf "%.3f", $1 + $2}' <<< "$times")" "$own"
}

declare -A cpu wall process drainer writer
for _ in $(seq "$runs"); do
  for spec in "${variants[@]}"; do
    s="$(run_variant "$spec")" || exit 1
    read -r c w p d t <<< "$s"
    cpu["${spec%%=*}"]+=" $c"
    wall["${spec%%=*}"]+=" $w"
    process["${spec%%=*}"]+=" $p"
    [[ "$d" != - ]] && drainer["${spec%%=*}"]+=" $d" && writer["${spec%%=*}"]+=" $t"
  done
done

base_label=""
for spec in "${variants[@]}"; do
  [[ "${spec#*=}" == none ]] && base_label="${spec%%=*}" && break
done
added() {  # $1 against the untraced $2, in ms
  [[ -n "$2" ]] || { echo "-"; return; }
  awk -v m="$1" -v b="$2" 'BEGIN {printf "%+.0f", (m - b) * 1000}'
}
# Per variant: the main thread's CPU time, the wall time and the process's CPU time, each
# as the median and the fastest run (on a shared machine other work only ever adds time,
# so the fastest run is the least disturbed), and each against the untraced variant's
# same statistic.
printf '%-14s | %-31s | %-31s | %-31s\n' "" "main thread CPU s (added ms)" \
  "wall s (added ms)" "process CPU s (added ms)"
printf '%-14s | %15s %15s | %15s %15s | %15s %15s\n' variant median fastest median fastest \
  median fastest
for spec in "${variants[@]}"; do
  label="${spec%%=*}"
  row=()
  for series in cpu wall process; do
    declare -n values="$series"
    m="$(median <<< "${values[$label]}")"
    f="$(fastest <<< "${values[$label]}")"
    bm="" bf=""
    if [[ -n "$base_label" ]]; then
      bm="$(median <<< "${values[$base_label]}")"
      bf="$(fastest <<< "${values[$base_label]}")"
    fi
    row+=("$(printf '%s (%s)' "$m" "$(added "$m" "$bm")")")
    row+=("$(printf '%s (%s)' "$f" "$(added "$f" "$bf")")")
    unset -n values
  done
  printf '%-14s | %15s %15s | %15s %15s | %15s %15s\n' "$label" "${row[@]}"
done

# memtrace's drainer and writer threads (each capture's trailer, memtrace_cpu_ns), medians.
echo
printf '%-14s | %-33s\n' "" "memtrace's threads' CPU ms, median"
printf '%-14s | %16s %16s\n' variant drainer writer
for spec in "${variants[@]}"; do
  label="${spec%%=*}"
  [[ -n "${drainer[$label]:-}" ]] || continue
  printf '%-14s | %16s %16s\n' "$label" "$(median <<< "${drainer[$label]}")" \
    "$(median <<< "${writer[$label]}")"
done
cpu_speeds after
