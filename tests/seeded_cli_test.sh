#!/usr/bin/env bash
# The CLI on captures of one seeded thread (tests/seeded_workload.cc):
#   - every number of summary, top, peak, retention, coverage and diff --json equals the
#     truth the workload computed from its own operations (seeded_cli_check.py);
#   - the text of summary and peak equals tests/golden/seeded_*.txt, unmasked but for the
#     capture's path and the lines about memtrace's own transport, memory and CPU, which
#     depend on timing. One thread: high-water marks, peak bounds and the peak's
#     composition are exact and stay in the goldens.
#
# Regenerate the goldens after an intended output change (then review the diff):
#   bazel run //tests:seeded_cli_test -- --update
set -uo pipefail
memtrace="$1"
workload="$2"
check="$3"
golden_dir="$4"
update="${5:-}"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*"; exit 1; }

"$workload" "$dir/a.jsonl" "$dir/a.json" 1 || fail "seeded_workload (seed 1) exited $?"
"$workload" "$dir/b.jsonl" "$dir/b.json" 2 || fail "seeded_workload (seed 2) exited $?"
python3 "$check" "$memtrace" "$dir/a.jsonl" "$dir/a.json" "$dir/b.jsonl" "$dir/b.json" \
  || fail "the CLI's numbers differ from the workload's own (above)"

normalize() {
  sed -E -e "s#$dir/a.jsonl#CAPTURE#g" \
    -e "s/^(  transport ).*/\1*/" -e "s/^(  memtrace's own memory:) .*/\1 */" \
    -e "s/^(  memtrace's own CPU:) .*/\1 */" -e "s/^(  peaks +)[0-9]+ of [0-9]+ epochs/\1* of * epochs/"
}
status=0
for command in summary peak; do
  golden="$golden_dir/seeded_$command.txt"
  "$memtrace" "$command" "$dir/a.jsonl" | normalize > "$dir/$command.txt" \
    || fail "memtrace $command exited non-zero"
  if [[ "$update" == "--update" ]]; then
    cp "$dir/$command.txt" "${BUILD_WORKSPACE_DIRECTORY:-.}/$golden"
    echo "updated $golden"
  elif ! diff -u "$golden" "$dir/$command.txt"; then
    echo "FAIL: memtrace $command differs from $golden (regenerate with --update if intended)"
    status=1
  fi
done
[[ $status -eq 0 ]] && echo "PASS"
exit $status
