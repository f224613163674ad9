#!/usr/bin/env bash
# Copyright 2026 The memtrace Authors.
#
# pgbench.sh: a multi-process server under load. postgres serves pgbench untraced, then
# under `memtrace run --forks` (the postmaster and every backend it forks, each into its
# own capture), rounds alternating so that a slow spell of the machine falls on both.
# Prints each variant's transactions per second (median and best), what the traced rounds
# recorded (captures, allocation calls, bytes), and whether every capture passes
# `memtrace verify`.
#
#   bench/pgbench.sh [--runs=N] [--seconds=S] [--clients=C] [--select-only] [--connect]
#
# 3 rounds of 10 s with 4 clients by default. The default transaction is pgbench's TPC-B
# (like): each commit waits for its WAL flush, which on these VMs' disks takes more of
# the time than the server's CPU work. --select-only (pgbench -S: one indexed SELECT a
# transaction, nothing written) keeps the backends on the CPU, where memtrace's cost
# shows. --connect (pgbench -C) opens a new connection for every transaction, so the
# postmaster forks a backend for each: what a traced fork costs a server.
#
# The database is made once (initdb, pgbench -i -s 2, untraced); each run starts the
# server, lets pgbench connect C clients (-j 2) for S seconds, and stops the server with
# pg_ctl stop -m fast, so a traced run's captures are whole before the next round.
#
# Needs: Debian's postgresql (postgres, initdb, pg_ctl, pgbench under
# /usr/lib/postgresql/VERSION/bin), root (the server runs as postgres, through runuser).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=3
seconds=10
clients=4
mode=()
for arg in "$@"; do
  case "$arg" in
    --runs=*) runs="${arg#--runs=}" ;;
    --seconds=*) seconds="${arg#--seconds=}" ;;
    --clients=*) clients="${arg#--clients=}" ;;
    --select-only) mode+=(-S) ;;
    --connect) mode+=(-C) ;;
    *) echo "usage: bench/pgbench.sh [--runs=N] [--seconds=S] [--clients=C] [--select-only] [--connect]" >&2
       exit 2 ;;
  esac
done
pg_bin="$(ls -d /usr/lib/postgresql/*/bin 2> /dev/null | sort -V | tail -1)"
if [[ -z "$pg_bin" || ! -x "$pg_bin/pgbench" ]]; then
  echo "pgbench.sh: no postgres; install Debian's postgresql (apt-get install postgresql)" >&2
  exit 2
fi
if [[ $EUID -ne 0 ]] || ! id postgres > /dev/null 2>&1; then
  echo "pgbench.sh: run as root, with the postgres user present (the server runs as it)" >&2
  exit 2
fi

bazel build //cli:memtrace //preload:libmemtrace_preload.so > /dev/null 2>&1 || {
  echo "pgbench.sh: bazel build failed" >&2
  exit 1
}
bin="$(bazel info bazel-bin 2>/dev/null)"
work="$(mktemp -d)"
port=5497
pg() { runuser -u postgres -- "$pg_bin/$1" "${@:2}"; }
trap 'pg pg_ctl -D "$work/data" -m immediate stop > /dev/null 2>&1 || true; rm -rf "$work"' EXIT
# memtrace as installed, where the postgres user can read it (bazel's tree is root's).
chmod 755 "$work"
mkdir -p "$work/bin" "$work/lib/memtrace" "$work/sock"
cp "$bin/cli/memtrace" "$work/bin/"
cp "$bin/preload/libmemtrace_preload.so" "$work/lib/memtrace/"
memtrace="$work/bin/memtrace"
mkdir -m 700 "$work/data"
chown postgres "$work/sock" "$work/data"

pg initdb -D "$work/data" -A trust > /dev/null
server_opts=(-D "$work/data" -k "$work/sock" -p "$port" -c listen_addresses=)
pg pg_ctl "${server_opts[@]:0:2}" -o "${server_opts[*]:2}" -l "$work/sock/log" -w start > /dev/null
pg pgbench -h "$work/sock" -p "$port" -i -s 2 -q postgres > /dev/null 2>&1
pg pg_ctl -D "$work/data" -m fast -w stop > /dev/null

# One run: the server (traced when a capture directory is given), pgbench, a fast stop.
# Prints the run's transactions per second.
run() {
  local captures="$1" server
  if [[ -n "$captures" ]]; then
    runuser -u postgres -- "$memtrace" run --quiet --forks --output="$captures/pg.mtb" -- \
      "$pg_bin/postgres" "${server_opts[@]}" > "$work/server.log" 2>&1 &
  else
    runuser -u postgres -- "$pg_bin/postgres" "${server_opts[@]}" > "$work/server.log" 2>&1 &
  fi
  server=$!
  for _ in $(seq 100); do
    pg pg_isready -h "$work/sock" -p "$port" -q && break
    sleep 0.1
  done
  pg pgbench -h "$work/sock" -p "$port" "${mode[@]}" -c "$clients" -j 2 -T "$seconds" postgres \
    2> /dev/null \
    | sed -n 's/^tps = \([0-9.]*\) .*/\1/p'
  pg pg_ctl -D "$work/data" -m fast -w stop > /dev/null
  wait "$server" || true
}

untraced=()
traced=()
calls=0
bytes=0
count=0
failed=0
for round in $(seq "$runs"); do
  untraced+=("$(run "")")
  dir="$work/captures$round"
  mkdir -p -m 1777 "$dir"
  traced+=("$(run "$dir")")
  for capture in "$dir"/pg*.mtb; do
    count=$((count + 1))
    "$memtrace" verify "$capture" > /dev/null 2>&1 || failed=$((failed + 1))
    read -r c b < <("$memtrace" summary --json "$capture" | python3 -c \
      'import json, sys; t = json.load(sys.stdin)["totals"]; print(t["allocated_count"], t["allocated_bytes"])')
    calls=$((calls + c))
    bytes=$((bytes + b))
  done
  echo "round $round: untraced ${untraced[-1]} tps, traced ${traced[-1]} tps" >&2
done

source "$PWD/bench/stats.sh"  # median, largest
stats() { printf '%.0f median, %.0f best' "$(median <<< "$*")" "$(largest <<< "$*")"; }
echo "postgres $("$pg_bin/postgres" --version | awk '{print $3}'), pgbench ${mode[*]:-(TPC-B)} -c $clients -j 2 -T $seconds, scale 2, $runs rounds"
echo "untraced:                    $(stats "${untraced[@]}") tps"
echo "memtrace run --forks:        $(stats "${traced[@]}") tps"
echo "traced rounds recorded:      $count captures, $calls allocations of $bytes bytes in all"
echo "memtrace verify:             $((count - failed)) of $count pass"
[[ $failed -eq 0 ]]
