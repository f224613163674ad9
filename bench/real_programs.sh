#!/usr/bin/env bash
# Traces real programs nobody here wrote (python3, sqlite3, redis-server under
# redis-benchmark) with `memtrace run` (its defaults: depth-16 DWARF stacks, the binary
# capture) and with heaptrack, on the same workload, and prints one table: allocation
# calls and peak heap as each tool counts them, wall time untraced / memtrace / heaptrack,
# what each tool adds per allocation call (its wall time less the untraced one and less
# the tool's fixed cost, measured on /bin/true, over the calls), and memtrace's verify
# verdict. The wall times include each tool's start and its final flush (heaptrack:
# waiting for its interpreter).
#
#   bench/real_programs.sh [--runs=N]      (default 3 runs each)
#
# The runs of untraced, memtrace and heaptrack alternate (one of each per round), so a
# change in the machine's load falls on all three. The wall times shown are medians; the
# time added per call is given from the medians, from each one's fastest run (on a shared
# machine, other work only ever adds time, so the fastest run is the least disturbed one),
# and paired by round (the median of each round's traced run less that round's untraced
# run: a slow spell of the machine lasts minutes, a round seconds). The CPU time added
# per call (user + system of everything each run started, less the untraced run's and the
# tool's fixed cost) counts work on every core, the tool's background threads and
# processes included, and moves less with other sessions' load than wall time does.
# The column after it is the part of memtrace's that its own drainer and writer threads
# used (each capture's trailer, `memtrace_cpu_ns`); the rest is what its hot path adds on
# the program's threads.
#
# Needs: bazel (builds //cli:memtrace), python3, sqlite3, redis-server, redis-benchmark,
# redis-cli, heaptrack, heaptrack_print (tools/setup --bench installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup --bench

runs=3
for arg in "$@"; do
  case "$arg" in
    --runs=*) runs="${arg#--runs=}" ;;
    *) echo "usage: bench/real_programs.sh [--runs=N]" >&2; exit 2 ;;
  esac
done

for tool in python3 sqlite3 redis-server redis-benchmark redis-cli heaptrack heaptrack_print; do
  command -v "$tool" > /dev/null || { echo "real_programs: '$tool' is missing; run tools/setup --bench" >&2; exit 2; }
done

bazel build //cli:memtrace > /dev/null 2>&1 || { echo "real_programs: bazel build failed" >&2; exit 1; }
memtrace="$(bazel info bazel-bin 2>/dev/null)/cli/memtrace"
work="$(mktemp -d)"
trap 'redis-cli -p 6399 shutdown nosave > /dev/null 2>&1 || true; rm -rf "$work"' EXIT

# The workloads, median, fastest and timed: bench/real_workloads.sh.
source "$PWD/bench/real_workloads.sh"
real_workloads_init
cpu_speeds before

noprefix() { "$@"; }
# heaptrack prints its own progress on stdout; the capture goes to $ht_out.
heaptrack_quiet() { heaptrack -o "$ht_out" "$@" > "$work/heaptrack.log" 2>&1; }

# Runs of all three variants of workload $1, alternating, $runs rounds: sets wall_u,
# wall_m, wall_h and cpu_u, cpu_m, cpu_h (space-separated seconds), and own_d, own_w: the
# CPU time memtrace's drainer and writer threads used in each memtrace run, as its
# capture's trailer says (memtrace_cpu_ns; read after the timed run).
measure() {
  local workload="$1" w c d wr
  wall_u=""; wall_m=""; wall_h=""; cpu_u=""; cpu_m=""; cpu_h=""; own_d=""; own_w=""
  for _ in $(seq "$runs"); do
    read -r w c <<< "$(timed "$workload" noprefix)"; wall_u+=" $w"; cpu_u+=" $c"
    read -r w c <<< "$(timed "$workload" "$memtrace" run --quiet --output="$work/mt_$workload.mtb" --)"
    wall_m+=" $w"; cpu_m+=" $c"
    read -r d wr <<< "$("$memtrace" summary --json "$work/mt_$workload.mtb" | python3 -c \
      'import json,sys; c=json.load(sys.stdin)["memtrace_cpu_ns"]; print(c["drainer"]/1e9, c["writer"]/1e9)')"
    own_d+=" $d"; own_w+=" $wr"
    rm -f "$ht_out"*
    read -r w c <<< "$(timed "$workload" heaptrack_quiet)"; wall_h+=" $w"; cpu_h+=" $c"
  done
}

# The fixed cost of starting and finishing each tool, taken out of "added per call".
ht_out="$work/ht_true"
measure true
fixed_wall_u=$wall_u; fixed_wall_m=$wall_m; fixed_wall_h=$wall_h
fixed_cpu_u=$cpu_u; fixed_cpu_m=$cpu_m; fixed_cpu_h=$cpu_h

printf '| program | workload | allocation calls (memtrace / heaptrack) | peak heap (memtrace / heaptrack) | untraced s | memtrace s | heaptrack s | wall time added per call, medians (memtrace / heaptrack) | the same, fastest runs | the same, paired by round | CPU time added per call, medians | CPU time of memtrace drainer + writer per call, medians | memtrace verify |\n'
printf '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n'
for workload in python sqlite redis; do
  ht_out="$work/ht_$workload"
  measure "$workload"
  untraced=$(median <<< "$wall_u")
  mt=$(median <<< "$wall_m")
  ht=$(median <<< "$wall_h")
  # memtrace: calls = allocations + in-place resizes + moves (each realloc is one call),
  # counted in the capture's JSONL form (converted after the timed runs).
  "$memtrace" convert "$work/mt_$workload.mtb" "$work/mt_$workload.jsonl" > /dev/null 2>&1
  calls=$(python3 - "$work/mt_$workload.jsonl" <<'EOF'
import sys
n = 0
for line in open(sys.argv[1]):
    if line.startswith(('{"type":"alloc"', '{"type":"resize"', '{"type":"remap_target"')):
        n += 1
print(n)
EOF
)
  peak=$("$memtrace" summary --json "$work/mt_$workload.mtb" | python3 -c \
    'import json,sys; print(json.load(sys.stdin)["totals"]["high_water_bytes"])')
  verdict=$("$memtrace" verify "$work/mt_$workload.mtb" > /dev/null 2>&1 && echo pass || echo FAIL)
  heap=$(heaptrack_print "$work/ht_$workload".zst 2>/dev/null | sed -n \
    -e 's/^calls to allocation functions: \([0-9]*\).*/calls \1/p' \
    -e 's/^peak heap memory consumption: \(.*\)/peak \1/p')
  ht_calls=$(awk '$1 == "calls" {print $2}' <<< "$heap")
  ht_peak=$(awk '$1 == "peak" {print $2}' <<< "$heap")
  mt_peak=$(python3 -c "print(f'{$peak / 1e6:.2f}M')")
  # What each tool adds per allocation call, fixed costs out, and how many times more
  # heaptrack adds. $1: median (of each variant's runs), fastest (each variant's fastest
  # run) or paired (the median over rounds of each run less the same round's untraced run:
  # the runs of a round are seconds apart, so a slower spell of the machine that lasts a
  # round or more, as they do here, falls on both sides of each difference); $2: wall or
  # cpu.
  added() {
    local u="$2_u" m="$2_m" h="$2_h" fu="fixed_$2_u" fm="fixed_$2_m" fh="fixed_$2_h"
    python3 - "$1" "$calls" "$ht_calls" "${!u}" "${!m}" "${!h}" "${!fu}" "${!fm}" "${!fh}" <<'EOF'
import statistics, sys
mode, calls, ht_calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
u, m, h, fu, fm, fh = ([float(x) for x in a.split()] for a in sys.argv[4:10])
def cost(tool, base, fixed_tool, fixed_base):
    if mode == "paired":
        return (statistics.median_low([t - b for t, b in zip(tool, base)]) -
                statistics.median_low([t - b for t, b in zip(fixed_tool, fixed_base)]))
    pick = statistics.median_low if mode == "median" else min  # as median() above
    return pick(tool) - pick(base) - (pick(fixed_tool) - pick(fixed_base))
mt = cost(m, u, fm, fu) / calls * 1e9
ht = cost(h, u, fh, fu) / ht_calls * 1e9
# Under half a nanosecond (a ratio would be noise over nearly nothing) or below zero:
# memtrace's runs were no slower than the untraced ones.
print(f"{mt:.0f} / {ht:.0f} ns ({ht / mt:.1f}x)" if mt >= 0.5 else
      f"{mt:.0f} / {ht:.0f} ns (memtrace not above untraced)")
EOF
  }
  # memtrace's drainer and writer, from each run's trailer: the part of memtrace's CPU
  # time added that its own threads used (the rest is the hot path on the program's).
  own=$(python3 - "$calls" "$own_d" "$own_w" <<'EOF'
import statistics, sys
calls = int(sys.argv[1])
d, w = ([float(x) for x in a.split()] for a in sys.argv[2:4])
print(f"{statistics.median_low(d) / calls * 1e9:.0f} + "
      f"{statistics.median_low(w) / calls * 1e9:.0f} ns")
EOF
)
  printf '| %s | %s | %s / %s | %s / %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
    "$workload" "$(case $workload in python) echo '4 threads: json + sqlite3 module';; \
      sqlite) echo '200k inserts, index, group by, vacuum';; \
      redis) echo 'redis-benchmark -n 50000 -c 20 -P 4, 5 commands';; esac)" \
    "$calls" "$ht_calls" "$mt_peak" "$ht_peak" "$untraced" "$mt" "$ht" "$(added median wall)" \
    "$(added fastest wall)" "$(added paired wall)" "$(added median cpu)" "$own" "$verdict"
done
cpu_speeds after
