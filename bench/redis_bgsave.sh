#!/usr/bin/env bash
# Copyright 2026 The memtrace Authors.
#
# redis_bgsave.sh: a forked child that inherits a large heap. redis-server is filled with
# about 190,000 keys (redis-benchmark, SET of 100-byte values over 300,000 random keys),
# then BGSAVE forks a child that writes the dump and exits. Untraced, traced (`memtrace
# run`: the child is not traced) and traced with --forks (the child traces on, its
# capture beginning with every block it inherited) run alternately, --runs rounds; prints
# each one's BGSAVE time (from the command until redis reports it done) and the fork's
# own time (redis's latest_fork_usec), and verifies the traced captures.
#
#   bench/redis_bgsave.sh [--runs=N]      (default 3)
#
# Needs: redis-server, redis-cli, redis-benchmark (tools/setup --bench installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3
for arg in "$@"; do
  case "$arg" in
    --runs=*) runs="${arg#--runs=}" ;;
    *) echo "usage: bench/redis_bgsave.sh [--runs=N]" >&2; exit 2 ;;
  esac
done
for tool in redis-server redis-cli redis-benchmark; do
  command -v "$tool" > /dev/null || { echo "redis_bgsave: '$tool' is missing; run tools/setup --bench" >&2; exit 2; }
done
bazel build //cli:memtrace //preload:libmemtrace_preload.so > /dev/null 2>&1 || {
  echo "redis_bgsave: bazel build failed" >&2
  exit 1
}
memtrace="$(bazel info bazel-bin 2>/dev/null)/cli/memtrace"
work="$(mktemp -d)"
port=6393
trap 'redis-cli -p $port shutdown nosave > /dev/null 2>&1 || true; rm -rf "$work"' EXIT

# One run: the server under the given command prefix, filled, one BGSAVE, a shutdown.
# Prints "SECONDS FORK_US".
run() {
  rm -f "$work"/dump.rdb
  "$@" redis-server --port "$port" --save '' --appendonly no --dir "$work" \
    > "$work/server.log" 2>&1 &
  local server=$!
  for _ in $(seq 100); do
    redis-cli -p "$port" ping > /dev/null 2>&1 && break
    sleep 0.1
  done
  redis-benchmark -p "$port" -t set -n 300000 -r 300000 -d 100 -P 16 -q > /dev/null 2>&1
  local start end
  start=$(date +%s.%N)
  redis-cli -p "$port" bgsave > /dev/null
  until redis-cli -p "$port" info persistence | grep -q '^rdb_bgsave_in_progress:0'; do
    sleep 0.02
  done
  end=$(date +%s.%N)
  echo "$(echo "$end - $start" | bc) $(redis-cli -p "$port" info stats |
    sed -n 's/^latest_fork_usec:\([0-9]*\).*/\1/p')"
  redis-cli -p "$port" shutdown nosave > /dev/null 2>&1 || true
  wait "$server" || true
}

declare -A seconds forks
failed=0
for round in $(seq "$runs"); do
  for variant in untraced traced forks; do
    rm -f "$work"/*.mtb
    case "$variant" in
      untraced) read -r s f < <(run env) ;;
      traced) read -r s f < <(run "$memtrace" run --quiet --output="$work/r.mtb" --) ;;
      forks) read -r s f < <(run "$memtrace" run --quiet --forks --output="$work/r.mtb" --) ;;
    esac
    seconds[$variant]+="$s "
    forks[$variant]+="$f "
    for capture in "$work"/*.mtb; do
      [[ -e "$capture" ]] || continue
      "$memtrace" verify "$capture" > /dev/null 2>&1 || { failed=$((failed + 1)); echo "verify failed: $capture" >&2; }
    done
  done
done
source "$PWD/bench/stats.sh"
for variant in untraced traced forks; do
  printf '%-9s BGSAVE %6.3f s (runs: %s)  fork %6s us\n' "$variant" \
    "$(echo "${seconds[$variant]}" | median)" "${seconds[$variant]% }" \
    "$(echo "${forks[$variant]}" | median)"
done
echo "memtrace verify: $failed failed"
[[ $failed -eq 0 ]]
