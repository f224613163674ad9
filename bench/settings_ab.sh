#!/usr/bin/env bash
# Copyright 2026 The memtrace Authors.
#
# settings_ab.sh: interposer settings (or builds) A/B on one of real_programs.sh's
# workloads, by the wall and CPU time of the whole run, as real_programs.sh measures them.
#
#   bench/settings_ab.sh [--runs=N] --workload=python|sqlite|redis \
#       label=none | label=[PRELOAD.so:]ENV=VALUE,ENV=VALUE ... 
#
# A variant is a label and either "none" (untraced) or the settings the run gets, with
# optionally the interposer to load before a colon (bazel-bin's by default); for example
#
#   bench/settings_ab.sh --runs=15 --workload=python untraced=none \
#       ring16=MEMTRACE_RING_LOG2=16 ring14=MEMTRACE_RING_LOG2=14
#
# Variants run round-robin, --runs rounds (default 9), so a change in the machine's load
# falls on all of them. Each line gives the medians and the fastest runs of wall and CPU
# time (user + system of everything the run started), and what it adds to the first
# untraced variant's same figure, if there is one (+0 for that variant itself); then,
# from a traced variant's last capture, the transport figures that explain a
# difference: rings, the ring's greatest fill, producer waits for ring space, epochs, and
# memtrace's own memory; and the medians of memtrace's drainer and writer CPU time over
# the variant's runs (each capture's trailer, `memtrace_cpu_ns`). The program runs
# under LD_PRELOAD directly (not `memtrace run`), with its capture in a scratch directory.
#
# Needs: bazel, and the workload's programs (tools/setup --bench installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=9
workload=""
variants=()
for arg in "$@"; do
  case "$arg" in
    --runs=*) runs="${arg#--runs=}" ;;
    --workload=*) workload="${arg#--workload=}" ;;
    *=*) variants+=("$arg") ;;
    *) echo "settings_ab: '$arg' is neither a flag nor label=SETTINGS; see the usage at the top of $0" >&2; exit 2 ;;
  esac
done
case "$workload" in
  python|sqlite|redis) ;;
  *) echo "settings_ab: --workload must be python, sqlite or redis (got '$workload')" >&2; exit 2 ;;
esac
if [[ ${#variants[@]} -lt 2 ]]; then
  echo "settings_ab: give at least two variants (label=none for untraced, label=ENV=VALUE,...)" >&2
  exit 2
fi
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "settings_ab: --runs must be a positive whole number (got '$runs')" >&2; exit 2; }

bazel build //preload:libmemtrace_preload.so //cli:memtrace > /dev/null 2>&1 ||
  { echo "settings_ab: bazel build failed" >&2; exit 1; }
bin="$(bazel info bazel-bin 2>/dev/null)"
memtrace="$bin/cli/memtrace"
work="$(mktemp -d)"
trap 'redis-cli -p 6399 shutdown nosave > /dev/null 2>&1 || true; rm -rf "$work"' EXIT
source "$PWD/bench/real_workloads.sh"
real_workloads_init
cpu_speeds before
# The transport figures of a capture, from `memtrace summary --json` on stdin (its
# trailer's integrity block).
cat > "$work/transport.py" <<'EOF'
import json, sys
t = json.loads(sys.stdin.read())
i = t["integrity"]
print("   [%s; rings %d x %d, max fill %d, overflow waits %d, epochs %d, memtrace %.1f MiB]" % (
    "complete" if t["complete"] else "PARTIAL", i["rings"], i["ring_capacity"],
    i["max_ring_fill"], i["overflow_waits"], i["epochs"], t["memtrace_bytes"] / 2**20))
EOF

# Each variant's command prefix, by label: "env" and, when traced, LD_PRELOAD, the
# capture's path and the variant's settings, as words.
declare -A prefix wall cpu
labels=()
baseline=""
for v in "${variants[@]}"; do
  label="${v%%=*}"; settings="${v#*=}"
  [[ "$label" =~ ^[A-Za-z0-9_.-]+$ ]] || { echo "settings_ab: label '$label' may hold only letters, digits, '.', '_' and '-'" >&2; exit 2; }
  labels+=("$label")
  if [[ "$settings" == none ]]; then
    prefix[$label]="env"
    [[ -n "$baseline" ]] || baseline="$label"
    continue
  fi
  so="$bin/preload/libmemtrace_preload.so"
  if [[ "$settings" == *:* ]]; then so="${settings%%:*}"; settings="${settings#*:}"; fi
  [[ -r "$so" ]] || { echo "settings_ab: variant '$label': no interposer at '$so'" >&2; exit 2; }
  p="env LD_PRELOAD=$so MEMTRACE_OUTPUT=$work/$label.mtb"
  IFS=, read -ra pairs <<< "$settings"
  for pair in "${pairs[@]}"; do
    [[ "$pair" =~ ^[A-Z_][A-Z0-9_]*=[^[:space:]]*$ ]] ||
      { echo "settings_ab: variant '$label': '$pair' is not NAME=VALUE" >&2; exit 2; }
    p+=" $pair"
  done
  prefix[$label]="$p"
done

declare -A drainer writer
for _ in $(seq "$runs"); do
  for label in "${labels[@]}"; do
    rm -f "$work/$label.mtb"
    # shellcheck disable=SC2086  # the prefix is words: env and NAME=VALUE settings
    read -r w c <<< "$(timed "$workload" ${prefix[$label]})"
    wall[$label]+=" $w"; cpu[$label]+=" $c"
    # memtrace's own threads' CPU time, from this run's trailer.
    read -r d t <<< "$(own_cpu_ms "$work/$label.mtb")"
    if [[ "$d" != - ]]; then drainer[$label]+=" $d"; writer[$label]+=" $t"; fi
  done
done

printf '%s, %s rounds; seconds: median / fastest' "$workload" "$runs"
[[ -n "$baseline" ]] && printf ' (+ added to %s)' "$baseline"
printf '\n'
for label in "${labels[@]}"; do
  line=$(python3 - "$(median <<< "${wall[$label]}")" "$(fastest <<< "${wall[$label]}")" \
    "$(median <<< "${cpu[$label]}")" "$(fastest <<< "${cpu[$label]}")" \
    "${baseline:+$(median <<< "${wall[$baseline]}")}" "${baseline:+$(fastest <<< "${wall[$baseline]}")}" \
    "${baseline:+$(median <<< "${cpu[$baseline]}")}" "${baseline:+$(fastest <<< "${cpu[$baseline]}")}" <<'EOF'
import sys
v = [float(x) if x else None for x in sys.argv[1:]]
def part(name, a, b, ba, bb):
    s = f"{name} {a:.3f} / {b:.3f}"
    if ba is not None:
        s += f" (+{a - ba:.3f} / +{b - bb:.3f})"
    return s
print(part("wall", v[0], v[1], v[4], v[5]) + "   " + part("cpu", v[2], v[3], v[6], v[7]))
EOF
)
  extra=""
  if [[ -f "$work/$label.mtb" ]]; then
    extra=$("$memtrace" summary --json "$work/$label.mtb" | python3 "$work/transport.py")
  fi
  if [[ -n "${drainer[$label]:-}" ]]; then
    extra+=$(printf ' [drainer %.1f ms, writer %.1f ms: medians]' \
      "$(median <<< "${drainer[$label]}")" "$(median <<< "${writer[$label]}")")
  fi
  printf '%-12s %s%s\n' "$label" "$line" "$extra"
done
cpu_speeds after
