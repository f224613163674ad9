#!/usr/bin/env bash
# Copyright 2026 The memtrace Authors.
#
# reading_speed.sh: how fast memtrace's commands read a capture, beside heaptrack_print on
# a heaptrack recording of the same program.
#
#   bench/reading_speed.sh [--runs=N] [--n=ALLOCATIONS]
#
# Records a perl one-liner that makes about 3 memory events per hash insertion (--n of
# them, 1,000,000 by default) with `memtrace run` (binary capture) and with heaptrack, then
# times each reader --runs times (5 by default) and prints the median wall time, the events
# per second it comes to, and the largest resident set. `summary` reads a clean capture's
# trailer; `summary --replay`, `top`, `peak` and `verify` replay its events (peak twice),
# and so does `report`, twice for a capture where one thread allocated (totals and tables,
# then the time series and the peak's composition).
set -euo pipefail

runs=5
n=1000000
for arg in "$@"; do
  case "$arg" in
    --runs=*) runs="${arg#--runs=}" ;;
    --n=*) n="${arg#--n=}" ;;
    *) echo "usage: bench/reading_speed.sh [--runs=N] [--n=ALLOCATIONS]" >&2; exit 2 ;;
  esac
done
root="$(cd "$(dirname "$0")/.." && pwd)"
memtrace="$root/bazel-bin/cli/memtrace"
for tool in perl heaptrack heaptrack_print /usr/bin/time; do
  command -v "$tool" > /dev/null || { echo "reading_speed.sh: needs $tool" >&2; exit 2; }
done
[[ -x "$memtrace" ]] || { echo "reading_speed.sh: build first: bazel build -c opt //cli:memtrace //preload:all" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

program=(perl -e "my %h; for my \$i (1..$n) { \$h{\$i} = 'x' x (\$i % 100); }")
"$memtrace" run --quiet -o "$work/p.mtb" -- "${program[@]}"
(cd "$work" && heaptrack -o "$work/ht" "${program[@]}" > /dev/null 2>&1)
ht_file=$(ls "$work"/ht*.zst | head -1)
events=$("$memtrace" summary --json "$work/p.mtb" | python3 -c \
  'import json,sys; print(json.load(sys.stdin)["events"])')

# Median wall seconds and the largest max RSS (MiB) of `runs` runs of the command.
measure() {
  local walls="" rss=0
  for ((i = 0; i < runs; i++)); do
    /usr/bin/time -f "%e %M" -o "$work/t" "$@" > /dev/null 2>&1 || true
    read -r wall kb < "$work/t"
    walls+="$wall "
    (( kb > rss )) && rss=$kb
  done
  python3 - "$rss" $walls <<'EOF'
import statistics, sys
rss, walls = int(sys.argv[1]), sorted(float(w) for w in sys.argv[2:])
print(f"{statistics.median_low(walls):.2f} {rss / 1024:.0f}")
EOF
}

echo "capture: $events events, $(du -h "$work/p.mtb" | cut -f1) binary; heaptrack: $(du -h "$ht_file" | cut -f1)"
echo
echo "| reader | wall s | events/s | max RSS MiB |"
echo "| --- | ---: | ---: | ---: |"
row() {
  local name="$1"; shift
  read -r wall rss < <(measure "$@")
  local rate
  rate=$(python3 -c "w=$wall; print(f'{$events / w / 1e6:.1f}M' if w > 0 else '> 100M')")
  echo "| $name | $wall | $rate | $rss |"
}
row "memtrace summary" "$memtrace" summary "$work/p.mtb"
row "memtrace summary --replay" "$memtrace" summary --replay "$work/p.mtb"
row "memtrace top" "$memtrace" top "$work/p.mtb"
row "memtrace peak" "$memtrace" peak "$work/p.mtb"
row "memtrace verify" "$memtrace" verify "$work/p.mtb"
row "memtrace report" "$memtrace" report -o "$work/p.html" "$work/p.mtb"
row "heaptrack_print" heaptrack_print "$ht_file"
