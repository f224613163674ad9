#!/usr/bin/env bash
# Copyright 2026 The memtrace Authors.
#
# startup_cost.sh: what the interposer adds to a process's start and end, apart from
# tracing its allocations: /bin/true started N times plain, with only the shared libraries
# the interposer loads (LD_PRELOAD of those alone: Debian's abseil, zstd, libstdc++), and
# under the interposer (which also starts the tracer, writes the capture's header and
# trailer). Prints microseconds per start (the mean of N), three rounds, and peak RSS.
#
#   bazel build //preload:libmemtrace_preload.so && bench/startup_cost.sh [N]
#   (PRELOAD=path/to/libmemtrace_preload.so: another build of the interposer)
set -euo pipefail
n="${1:-100}"
preload="${PRELOAD:-$(bazel info bazel-bin 2>/dev/null)/preload/libmemtrace_preload.so}"
[[ -f "$preload" ]] || { echo "startup_cost: build //preload:libmemtrace_preload.so first" >&2; exit 2; }
libs="$(ldd "$preload" | awk '$3 ~ /^\// {print $3}' | paste -sd:)"
capture="$(mktemp -d)/startup.mtb"
per_start() {  # per_start ENV...: mean microseconds of N starts of /bin/true
  local start end
  start=$(date +%s%N)
  for ((i = 0; i < n; i++)); do env "$@" /bin/true; done
  end=$(date +%s%N)
  echo $(((end - start) / n / 1000))
}
echo "libraries the interposer loads: $(tr ':' '\n' <<< "$libs" | wc -l)"
for round in 1 2 3; do
  echo "round $round: plain $(per_start) us, libraries only $(per_start LD_PRELOAD="$libs") us," \
    "interposer $(per_start LD_PRELOAD="$preload" MEMTRACE_OUTPUT="$capture") us"
done
rss() { /usr/bin/time -f "%M" env "$@" /bin/true 2>&1 | tail -1; }
echo "peak RSS: plain $(rss) KiB, libraries only $(rss LD_PRELOAD="$libs") KiB," \
  "interposer $(rss LD_PRELOAD="$preload" MEMTRACE_OUTPUT="$capture") KiB"
rm -rf "$(dirname "$capture")"
