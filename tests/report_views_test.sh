#!/usr/bin/env bash
# The HTML report's views, in headless chromium (Debian's `chromium`, from tools/setup), on
# captures that tests/report_views_check.py writes together with what the page must show,
# computed from the events it wrote: a row that adds up two stacks that read the same
# unfolds to both, each with its own numbers, which add up to the row; choosing a thread
# (#thread=ID in the page's address) shows its blocks alone, in the chart by scope and the
# call sites, and with --threads=1 the rest as "other threads"; --baseline adds the growth
# since another capture by scope and by call site.
set -uo pipefail
memtrace="$1"
check="$2"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
source "$3"  # tests/headless_chromium.sh: fail, browse
dom() {
  browse --window-size=1280,2000 --dump-dom "$1" > "$2" 2> "$dir/chromium.err" \
    || fail "chromium --dump-dom $1 exited $?: $(tail -5 "$dir/chromium.err")"
}

thread=$(python3 "$check" make "$dir") || fail "$thread"

"$memtrace" report "$dir/new.jsonl" --baseline "$dir/old.jsonl" -o "$dir/new.html" \
  2> "$dir/report.err" || fail "memtrace report exited $?: $(cat "$dir/report.err")"
dom "file://$dir/new.html#expand=all" "$dir/all.dom"
python3 "$check" check "$dir/all.dom" "$dir/truth.json" stacks || exit 1
python3 "$check" check "$dir/all.dom" "$dir/truth.json" compared || exit 1
python3 "$check" check "$dir/all.dom" "$dir/truth.json" functions || exit 1
dom "file://$dir/new.html#thread=$thread&expand=all" "$dir/thread.dom"
python3 "$check" check "$dir/thread.dom" "$dir/truth.json" thread "$thread" || exit 1

"$memtrace" report "$dir/new.jsonl" --threads=1 -o "$dir/one.html" 2> "$dir/report.err" \
  || fail "memtrace report --threads=1 exited $?: $(cat "$dir/report.err")"
dom "file://$dir/one.html#thread=other&expand=all" "$dir/other.dom"
python3 "$check" check "$dir/other.dom" "$dir/truth.json" other || exit 1
grep -q '"baseline":null' "$dir/one.html" || fail "a report without --baseline has a comparison"

# One thread: no selector.
grep -v '"thread":[23],' "$dir/new.jsonl" > "$dir/single.jsonl"
"$memtrace" report "$dir/single.jsonl" -o "$dir/single.html" 2> "$dir/report.err" \
  || fail "memtrace report (one thread) exited $?: $(cat "$dir/report.err")"
grep -q '"threads":null' "$dir/single.html" || fail "a capture of one thread has thread views"

# Usage errors exit 2; an unreadable baseline is named.
"$memtrace" report "$dir/new.jsonl" --threads=x -o "$dir/x.html" 2> /dev/null
[[ $? -eq 2 ]] || fail "--threads=x must exit 2"
"$memtrace" report "$dir/new.jsonl" --baseline "$dir/missing.jsonl" -o "$dir/x.html" \
  2> "$dir/report.err"
[[ $? -eq 2 ]] || fail "a missing baseline must exit 2"
grep -q "missing.jsonl" "$dir/report.err" || fail "the error does not name the baseline: \
$(cat "$dir/report.err")"
echo "PASS"
