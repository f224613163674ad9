#!/usr/bin/env bash
# Golden tests: small deterministic captures from the examples, and the CLI's output on
# them compared with tests/golden/*.txt:
#   - //examples:server_workload (one worker, 300 requests: the counts and sizes come from
#     a seeded generator): `memtrace summary`, `top`, `retention`, `coverage`, `verify`;
#   - //examples:game_loop (30 frames: a frame arena reset per frame, a GPU heap, a job
#     thread adopting the frame's context, a census): `summary`, `top --by=count`,
#     `coverage` (game_*.txt).
#
# What varies from run to run is normalized before comparing: addresses (0xADDR), the
# capture's path (CAPTURE), and the numbers that depend on how the writer thread that frees
# responses interleaves with the worker: high-water marks (summary), what each scope
# instance still held at its exit (retention's last three columns) and temporaries (top,
# coverage) are masked with '*', and so are the integrity block's matching, transport and
# memory numbers (summary).
#
# Regenerate the goldens after an intended output change (then review the diff):
#   bazel run //tests:golden_test -- --update
set -uo pipefail
memtrace="$1"
workload="$2"
golden_dir="$3"
game_loop="$4"
update="${5:-}"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*"; exit 1; }

"$workload" --requests=300 --workers=1 --capture="$dir/g.jsonl" > /dev/null 2>&1 \
  || fail "workload exited $?"
"$game_loop" --frames=30 --capture="$dir/game.jsonl" > /dev/null 2>&1 \
  || fail "game_loop exited $?"

normalize() {
  sed -E -e "s#$dir/(g|game).jsonl#CAPTURE#g" -e 's/0x[0-9a-f]+/0xADDR/g'
}
# summary rows: "%-36s %11s %9s %11s %12s": the high-water column is characters 60-70 and
# its peak bound 72-83 (not in the integrity block's lines).
mask_high_water() {
  sed -E -e '/^(memtrace|[0-9]+ events;|$|integrity|  )/!s/^(.{59}).{11} .{12}/\1          *            */'
}
# The integrity block (summary), or its one line (summary, verify): how releases were
# matched, which peaks are bounded (by how the threads' records interleaved), the
# transport, memtrace's own memory and its threads' CPU time depend on the drainer's
# timing, and the fence on the kernel; their labels stay, their values are masked.
mask_integrity() {
  sed -E -e "/^  (matching|peaks|transport)/s/[0-9]+(\.[0-9]+)?/*/g" \
    -e 's/; peaks (exact|within their bounds)$/; peaks */' \
    -e 's/(nothing lost)(, peaks within their bounds)?$/\1, peaks */' \
    -e 's/fence (membarrier|seq_cst)$/fence */' -e "s/^(  memtrace's own memory:) .*/\1 */" \
    -e "/^  memtrace's own CPU:/s/[0-9]+\.[0-9] (ms|ns)/* \1/g"
}
# Memory over time (the trailer's samples): how many samples a run gets, when, and the
# resident set are the machine's; the line goes, with the blank line before it.
mask_timeline() {
  sed -E -e '/^$/{N;/^\nmemory over time /d}'
}
# Temporaries (freed or reallocated by their thread's next allocator call) count how the worker's
# and the writer's calls interleave: top's column (characters 57-67 of a row) and
# coverage's line are masked.
mask_temporaries() {
  sed -E -e '/^ +[0-9]/s/^(.{56}).{11}/\1          */' \
    -e 's/^temporaries +[0-9]+  allocations \([^)]*\)/temporaries  *  allocations (*)/'
}
# retention rows: "%-40s %10s %16s %14s %12s": keep the scope and its exits.
mask_retention() {
  sed -E -e '/^(memtrace|$)/!s/^(.{51}).*/\1  *  *  */'
}

# Rows of the per-scope tables come in scope-id order (ids are handed out as threads
# first enter a scope) or by a racy quantity (retention): sort the rows after each
# "scope" header up to the next blank line or TOTAL.
sort_rows() {
  LC_ALL=C awk '
    /^scope / { print; inblock = 1; next }
    inblock && (/^$/ || /^TOTAL/) { close("sort"); inblock = 0 }
    inblock { print | "sort"; next }
    { print }
    END { close("sort") }'
}

declare -A commands=(
  [summary]="summary"
  [top]="top --limit=10"
  [top_count]="top --by=count --limit=10"
  [retention]="retention"
  [coverage]="coverage"
  [verify]="verify"
  [game_summary]="summary"
  [game_top_count]="top --by=count --limit=12"
  [game_coverage]="coverage"
)
status=0
for name in "${!commands[@]}"; do
  # shellcheck disable=SC2086
  capture="$dir/g.jsonl"
  [[ $name == game_* ]] && capture="$dir/game.jsonl"
  "$memtrace" ${commands[$name]} "$capture" > "$dir/$name.raw" 2>&1 \
    || fail "memtrace ${commands[$name]} exited $?: $(cat "$dir/$name.raw")"
  case "$name" in
    summary|game_summary)
      normalize < "$dir/$name.raw" | mask_high_water | mask_integrity | mask_timeline \
        | sort_rows > "$dir/$name.txt" ;;
    retention) normalize < "$dir/$name.raw" | mask_retention | sort_rows > "$dir/$name.txt" ;;
    verify) normalize < "$dir/$name.raw" | mask_integrity > "$dir/$name.txt" ;;
    *) normalize < "$dir/$name.raw" | mask_temporaries > "$dir/$name.txt" ;;
  esac
  if [[ "$update" == "--update" ]]; then
    target="${BUILD_WORKSPACE_DIRECTORY:?run --update through bazel run}/tests/golden/$name.txt"
    cp "$dir/$name.txt" "$target"
    echo "updated $target"
  elif [[ ! -s "$dir/$name.txt" ]]; then
    echo "FAIL: the normalized output of memtrace ${commands[$name]} is empty"
    status=1
  elif ! diff -u "$golden_dir/$name.txt" "$dir/$name.txt"; then
    echo "FAIL: memtrace ${commands[$name]} differs from tests/golden/$name.txt (above);"
    echo "      if the change is intended: bazel run //tests:golden_test -- --update"
    status=1
  fi
done
[[ $status -eq 0 ]] && echo "PASS"
exit $status
