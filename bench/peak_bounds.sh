#!/usr/bin/env bash
# Copyright 2026 The memtrace Authors.
#
# peak_bounds.sh: how wide memtrace's high-water intervals are, and whether the true peak
# is inside, on the two workloads issue 41 names, at default settings unless told:
#   - examples/server_workload (20,000 requests, 4 workers, a writer that frees): the
#     interval of the totals and of request/respond, from `memtrace summary --json` of its
#     capture, beside the program's own count of live responses (a lower bound of the
#     true peak within one body per thread);
#   - bench/pipeline_workload (4 producers, 2 consumers): the interval of the totals beside
#     the true peak, counted under the mutex of each traced operation.
# Width is (high - low) / high-water, in percent.
#
#   bench/peak_bounds.sh [RUNS] [ORDER_STAMP_LOG2]     (defaults: 10, the Config default)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-10}"
stamp="${2:--1}"
bazel build //examples:server_workload //bench:pipeline_workload //cli:memtrace >/dev/null 2>&1
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

echo "run  server TOTAL width%  request/respond width%  own count <= high | pipeline width%  true peak inside"
for i in $(seq 1 "$runs"); do
  # (ORDER_STAMP_LOG2 applies to the pipeline; the example keeps the default.)
  bazel-bin/examples/server_workload --capture="$dir/s.jsonl" >"$dir/out.txt" 2>/dev/null
  bazel-bin/cli/memtrace summary --json "$dir/s.jsonl" >"$dir/s.json"
  own=$(sed -nE 's/.*peaked at [0-9.]+ MiB, ([0-9]+) bytes.*/\1/p' "$dir/out.txt")
  line=$(bazel-bin/bench/pipeline_workload --order_stamp_log2="$stamp" | tail -1)
  python3 - "$dir/s.json" "$own" "$line" "$i" <<'PY'
import json, re, sys
s = json.load(open(sys.argv[1]))
own = int(sys.argv[2])  # a lower bound of the true peak: counted after malloc, before free
def width(u):
    return 100.0 * (u["high_water_high_bytes"] - u["high_water_low_bytes"]) / max(1, u["high_water_bytes"])
respond = next(x["usage"] for x in s["scopes"] if x["path"] == "request/respond")
p = dict(kv.split("=") for kv in sys.argv[3].split()[1:])
p = {k: int(v) for k, v in p.items()}
pw = 100.0 * (p["high"] - p["low"]) / max(1, p["high_water"])
inside = p["low"] <= p["true_peak"] <= p["high"]
print(f"{sys.argv[4]:>3}  {width(s['totals']):>19.2f}  {width(respond):>22.2f}  "
      f"{str(own <= respond['high_water_high_bytes']):>18} | "
      f"{pw:>15.2f}  {str(inside):>16}")
PY
done
