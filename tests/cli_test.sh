#!/usr/bin/env bash
# End-to-end: a traced program writes a capture; `memtrace verify` and `memtrace summary`
# read it; truncated, partial-less and unreadable captures get the documented exit codes.
set -uo pipefail
memtrace="$1"
workload="$2"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*"; exit 1; }

"$workload" --requests=500 --workers=2 --capture="$dir/c.jsonl" > "$dir/out.txt" 2>&1 \
  || fail "workload exited $?"
"$memtrace" verify "$dir/c.jsonl" > "$dir/v.txt" || fail "verify of a complete capture: $(cat "$dir/v.txt")"
grep -q "is complete" "$dir/v.txt" || fail "verify output: $(cat "$dir/v.txt")"

"$memtrace" summary --json "$dir/c.jsonl" > "$dir/s.json" || fail "summary --json"
grep -q '"verdict":"complete"' "$dir/s.json" || fail "summary verdict: $(cat "$dir/s.json")"
grep -q '"path":"request/respond"' "$dir/s.json" || fail "summary scopes: $(cat "$dir/s.json")"

"$memtrace" top --limit=3 "$dir/c.jsonl" > "$dir/t.txt" || fail "top"
grep -q "request/respond" "$dir/t.txt" || fail "top rows: $(cat "$dir/t.txt")"
"$memtrace" top --by=count "$dir/c.jsonl" | grep -q "by count" || fail "top --by=count"
"$memtrace" top --by=nope "$dir/c.jsonl" 2> /dev/null
[[ $? -eq 2 ]] || fail "a bad --by must exit 2"
"$memtrace" peak "$dir/c.jsonl" > "$dir/p.txt" || fail "peak"
grep -q "global high-water" "$dir/p.txt" || fail "peak output: $(cat "$dir/p.txt")"

"$memtrace" summary --at-event=10 "$dir/c.jsonl" | grep -q "state after event 10" \
  || fail "summary --at-event"
"$memtrace" summary --at-event=x "$dir/c.jsonl" 2> /dev/null
[[ $? -eq 2 ]] || fail "a bad --at-event must exit 2"
"$memtrace" coverage "$dir/c.jsonl" > "$dir/cov.txt" || fail "coverage"
grep -q "allocated in named scopes" "$dir/cov.txt" || fail "coverage output: $(cat "$dir/cov.txt")"
"$memtrace" top --by=temporaries "$dir/c.jsonl" | grep -q "by temporaries" || fail "top --by=temporaries"
"$memtrace" retention "$dir/c.jsonl" > "$dir/r.txt" || fail "retention"
grep -q "request/handle/session_cache" "$dir/r.txt" || fail "retention rows: $(cat "$dir/r.txt")"
"$workload" --requests=200 --workers=1 --capture="$dir/small.jsonl" > /dev/null 2>&1 || fail "workload 2"
"$memtrace" diff "$dir/small.jsonl" "$dir/c.jsonl" > "$dir/d.txt" || fail "diff"
grep -q "TOTAL" "$dir/d.txt" || fail "diff output: $(cat "$dir/d.txt")"
"$memtrace" diff "$dir/c.jsonl" 2> /dev/null
[[ $? -eq 2 ]] || fail "diff with one file must exit 2"

"$workload" --requests=300 --workers=2 --capture="$dir/z.jsonl.zst" > /dev/null 2>&1 || fail "zstd capture"
"$memtrace" verify "$dir/z.jsonl.zst" | grep -q "is complete" || fail "verify of a zstd capture"

head -n 100 "$dir/c.jsonl" > "$dir/cut.jsonl"
"$memtrace" verify "$dir/cut.jsonl" > "$dir/v2.txt"
[[ $? -eq 1 ]] || fail "a truncated capture must fail verify with 1"
grep -q "truncated" "$dir/v2.txt" || fail "truncated message: $(cat "$dir/v2.txt")"

echo "garbage" > "$dir/bad.jsonl"
"$memtrace" verify "$dir/bad.jsonl" 2> "$dir/e.txt"
[[ $? -eq 2 ]] || fail "unreadable input must exit 2"
grep -q "bad.jsonl:1:" "$dir/e.txt" || fail "error must name the line: $(cat "$dir/e.txt")"

"$memtrace" frobnicate 2> /dev/null
[[ $? -eq 2 ]] || fail "unknown command must exit 2"
"$memtrace" help verify | grep -q "usage: memtrace verify" || fail "help verify"
echo "PASS"
