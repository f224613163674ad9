#!/usr/bin/env bash
# bench/side_by_side on tiny workloads: every variant runs, the driver exits 0, and its
# markdown table has one well-formed row per (workload, variant) with zero drops for the
# memtrace rows. heaptrack's rows are expected only when heaptrack is installed. No
# timing is checked: the figures on a shared machine mean nothing at this scale.
set -uo pipefail
driver="$1"
workload="$2"
preload="$(cd "$(dirname "$3")" && pwd)/$(basename "$3")"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*"; exit 1; }

run() {  # run OUT ARGS...: the driver on prebuilt binaries, tiny work, one repetition
  local out="$1"; shift
  python3 "$driver" --scale=0.005 --repeat=1 --workload-bin="$workload" \
    --preload="$preload" "$@" > "$dir/$out" 2> "$dir/$out.err" ||
    fail "side_by_side $*: exit $?: $(tail -5 "$dir/$out.err")"
}

# A sanitizer runtime must come first in a process, so nothing can be preloaded into a
# sanitized build (tests/preload_*_test.cc skip likewise): there, only the variants
# without a preload run. (readelf's output is read whole first: with pipefail, `grep -q`
# quitting at its first match could SIGPIPE readelf and turn a match into a miss.)
dynamic="$(readelf -d "$workload")" || fail "readelf -d $workload"
if grep -q 'NEEDED.*lib[at]san' <<< "$dynamic"; then
  echo "sanitized build: the preload and heaptrack variants are skipped"
  frame_variants="untraced,untraced-arena,memtrace-api"
  rest_variants="memtrace-api"
  expected_frame="untraced untraced-arena memtrace-api"
  expected_rest="untraced memtrace-api"
else
  frame_variants="untraced,untraced-arena,memtrace-api,preload-dwarf16,preload-fp16,heaptrack"
  rest_variants="memtrace-api,preload-fp16"
  expected_frame="untraced untraced-arena memtrace-api preload-dwarf16 preload-fp16"
  expected_rest="untraced memtrace-api preload-fp16"
  if command -v heaptrack > /dev/null; then
    expected_frame+=" heaptrack"
  else
    echo "heaptrack is not installed: its rows are not expected"
  fi
fi

# The frame workload has every variant, untraced-arena included.
run frame.md --workloads=frame --variants="$frame_variants"
# The other workloads through memtrace's two paths (heaptrack is slow to start).
run rest.md --workloads=churn,server,realloc --variants="$rest_variants"
if [[ $expected_frame == *heaptrack* ]]; then
  grep -q "^heaptrack / memtrace preload" "$dir/frame.md" || fail "no heaptrack ratio table"
fi

python3 - "$dir/frame.md" "$dir/rest.md" "$expected_frame" "$expected_rest" <<'PY' || exit 1
import re, sys
frame_md, rest_md = sys.argv[1], sys.argv[2]
expected_frame, expected_rest = sys.argv[3].split(), sys.argv[4].split()

def rows(path):
    out = {}
    header = None
    for line in open(path):
        if not line.startswith("| "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "workload":
            if header is None:
                header = cells
            continue
        if cells[0].startswith("---") or header is None or len(cells) != len(header):
            continue
        out[(cells[0], cells[1].split(" ")[0])] = dict(zip(header, cells))
    if header is None:
        sys.exit(f"FAIL: {path}: no table header")
    return out

def check(path, expected):
    table = rows(path)
    if sorted(table) != sorted(expected):
        sys.exit(f"FAIL: {path}: rows {sorted(table)}, expected {sorted(expected)}")
    for (w, v), row in table.items():
        for col in ("ns/op 1T", "Mops/s 1T", "Mops/s 2T"):
            if not re.fullmatch(r"[0-9]+(\.[0-9]+)?", row[col]):
                sys.exit(f"FAIL: {w}/{v}: {col} is '{row[col]}', not a number")
        if not re.fullmatch(r"[0-9.]+x", row["vs untraced 1T"]):
            sys.exit(f"FAIL: {w}/{v}: ratio '{row['vs untraced 1T']}'")
        if not re.fullmatch(r"[0-9.]+ (B|KiB|MiB|GiB)", row["peak RSS 1T"]):
            sys.exit(f"FAIL: {w}/{v}: peak RSS '{row['peak RSS 1T']}'")
        memtrace = v in ("memtrace-api", "preload-dwarf16", "preload-fp16")
        if memtrace and row["dropped"] != "0":
            sys.exit(f"FAIL: {w}/{v}: dropped {row['dropped']}, expected 0")
        mem = row["memtrace memory 1T (parts)"]
        parts = re.fullmatch(r"([0-9.]+) (KiB|MiB|GiB) \(rings ([0-9.]+), tickets ([0-9.]+), "
                             r"ledger ([0-9.]+), sites ([0-9.]+) MiB\)", mem)
        if memtrace and not parts:
            sys.exit(f"FAIL: {w}/{v}: memtrace memory '{mem}' lacks its parts")
        if memtrace and parts.group(2) == "MiB":
            # The parts sum to the total (each rounded to 0.1 MiB).
            total = float(parts.group(1))
            summed = sum(float(parts.group(i)) for i in range(3, 7))
            if abs(total - summed) > 0.25:
                sys.exit(f"FAIL: {w}/{v}: parts sum to {summed} MiB, total {total} MiB")
        if not memtrace and row["dropped"] != "n/a":
            sys.exit(f"FAIL: {w}/{v}: dropped should be n/a, is {row['dropped']}")

check(frame_md, [("frame", v) for v in expected_frame])
check(rest_md, [(w, v) for w in ("churn", "server", "realloc") for v in expected_rest])
PY
echo "PASS"
