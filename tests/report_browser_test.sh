#!/usr/bin/env bash
# The HTML report in a real browser: a traced game loop writes a capture, `memtrace report`
# turns it into a page, and headless chromium (Debian's `chromium`, from tools/setup) opens
# it. The page must draw without script errors, with both charts and the flame graph
# sized and as many series as the capture has (counted from `memtrace summary --json` and
# the trailer, not from the report); its screenshot must be the right size, not blank,
# and show the banner colour of its verdict. A truncated capture must show the warning
# colours and never the "complete" one. Screenshots are kept in the test's outputs.
set -uo pipefail
memtrace="$1"
game_loop="$2"
check="$3"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
out="${TEST_UNDECLARED_OUTPUTS_DIR:-$dir}"
source "$4"  # tests/headless_chromium.sh: fail, browse

# `memtrace report` of CAPTURE into $dir/NAME.html, and the page as chromium drew it into
# $dir/NAME.dom.
page() {
  local capture="$1" name="$2"
  "$memtrace" report "$capture" -o "$dir/$name.html" 2> "$dir/report.err" \
    || fail "memtrace report ($name) exited $?: $(cat "$dir/report.err")"
  browse --window-size=1280,2000 --dump-dom "file://$dir/$name.html" > "$dir/$name.dom" \
    2> "$dir/chromium.err" || fail "chromium --dump-dom ($name) exited $?"
}

"$game_loop" --frames=120 --capture="$dir/game.jsonl" > "$dir/game.txt" 2>&1 \
  || fail "game_loop exited $?: $(tail -3 "$dir/game.txt")"

"$memtrace" report "$dir/game.jsonl" -o "$dir/game.html" 2> "$dir/report.err" \
  || fail "memtrace report exited $?: $(cat "$dir/report.err")"
"$memtrace" summary --json "$dir/game.jsonl" > "$dir/summary.json" || fail "summary --json"
series=$(python3 "$check" expected "$dir/game.jsonl" "$dir/summary.json") || fail "$series"
[[ "$series" -ge 8 ]] || fail "game_loop's capture should have at least 8 series (total, \
cpu, frame_arena, gpu, 3 scopes, a census entry), found $series"

browse --window-size=1280,2000 --dump-dom "file://$dir/game.html" > "$dir/game.dom" 2> "$dir/chromium.err" \
  || fail "chromium --dump-dom exited $?: $(tail -5 "$dir/chromium.err")"
if grep -q "Uncaught" "$dir/chromium.err"; then
  fail "script errors in the console: $(grep Uncaught "$dir/chromium.err")"
fi
python3 "$check" selftest "$dir/game.dom" "$series" complete || exit 1
# The resident set on the layer chart: on a right axis of its own where it dwarfs the
# layers, on the one axis where it does not (the game loop's capture as it is, and with
# its RSS scaled up and down to make sure of each).
python3 "$check" axes "$dir/game.jsonl" "$dir/summary.json" "$dir/game.dom" || exit 1
python3 "$check" duration "$dir/game.jsonl" "$dir/game.dom" || exit 1
for case in "100 two" "0.01 one"; do
  read -r factor want <<< "$case"
  python3 "$check" rss-scaled "$dir/game.jsonl" "$factor" "$dir/rss_$want.jsonl" \
    || fail "rss-scaled $factor"
  page "$dir/rss_$want.jsonl" "rss_$want"
  python3 "$check" axes "$dir/rss_$want.jsonl" "$dir/summary.json" "$dir/rss_$want.dom" \
    "$want" || exit 1
done
# The integrity details end with the CPU time of memtrace's own threads, from the trailer.
grep -Eq "memtrace's own CPU: drainer [0-9.]+ [^ ,]+, writer [0-9.]+ [^ ]+ \(not counted" \
  "$dir/game.dom" || fail "no line on memtrace's own CPU in the integrity details"

browse --window-size=1280,2000 --screenshot="$out/report.png" "file://$dir/game.html" \
  2> "$dir/shot.err" || fail "chromium --screenshot exited $?: $(tail -5 "$dir/shot.err")"
# The complete capture's banner is green (#e7f6ec); no red warning (#fde8e6) anywhere.
python3 "$check" png "$out/report.png" 1280 2000 e7f6ec fde8e6 || exit 1

# Blocks the interposer saw allocated and released again before it started (the trailer's
# prestart_freed, set here on the game loop's trailer) are named under the banner.
sed '$ s/"type":"trailer",/"type":"trailer","prestart_freed":39980,"prestart_freed_bytes":5996000,/' \
  "$dir/game.jsonl" > "$dir/early.jsonl"
grep -q '"prestart_freed":39980' "$dir/early.jsonl" || fail "could not edit the trailer"
page "$dir/early.jsonl" early
grep -Eq "39,?980 blocks \([0-9.]+ MiB\) were allocated and released again" "$dir/early.dom" \
  || fail "no line on the blocks released before memtrace started"

# The same capture cut off before its trailer: truncated, in warning colours.
head -n 20000 "$dir/game.jsonl" > "$dir/cut.jsonl"
page "$dir/cut.jsonl" cut
grep -q '"verdict":"truncated"' "$dir/cut.dom" || fail "the truncated page does not say so"
grep -q 'TRUNCATED capture' "$dir/cut.dom" || fail "no TRUNCATED banner"
browse --window-size=1280,2000 --screenshot="$out/report_truncated.png" "file://$dir/cut.html" \
  2> "$dir/shot.err" || fail "chromium --screenshot (truncated) exited $?"
python3 "$check" png "$out/report_truncated.png" 1280 2000 fde8e6 e7f6ec || exit 1

# Salvaged (verify --salvage): partial, and the banner says where it came from, not "lost
# records".
"$memtrace" verify --salvage="$dir/salvaged.jsonl" "$dir/cut.jsonl" > /dev/null 2>&1
[[ -e "$dir/salvaged.jsonl" ]] || fail "verify --salvage wrote nothing"
page "$dir/salvaged.jsonl" salvaged
grep -q 'PARTIAL capture (salvaged)' "$dir/salvaged.dom" || fail "no salvaged banner"
grep -q 'salvaged from [^ ]*cut.jsonl, which ended without a trailer' "$dir/salvaged.dom" \
  || fail "the salvaged banner does not say where from"

# The same capture with one block's size changed after it was written: its trailer's
# checksum no longer matches, so the page says DAMAGED in warning colours, never complete.
awk 'NR > 1000 && !done && /"size":/ { sub(/"size":/, "\"size\":1"); done = 1 } { print }' \
  "$dir/game.jsonl" > "$dir/damaged.jsonl"
cmp -s "$dir/game.jsonl" "$dir/damaged.jsonl" && fail "could not change a record"
page "$dir/damaged.jsonl" damaged
grep -q '"verdict":"damaged"' "$dir/damaged.dom" || fail "the damaged page does not say so"
grep -q 'DAMAGED capture' "$dir/damaged.dom" || fail "no DAMAGED banner"
browse --window-size=1280,2000 --screenshot="$out/report_damaged.png" \
  "file://$dir/damaged.html" 2> "$dir/shot.err" || fail "chromium --screenshot (damaged) exited $?"
python3 "$check" png "$out/report_damaged.png" 1280 2000 fde8e6 e7f6ec || exit 1

# Usage errors exit 2.
"$memtrace" report "$dir/game.jsonl" 2> /dev/null
[[ $? -eq 2 ]] || fail "report without -o must exit 2"
"$memtrace" report --top=0 "$dir/game.jsonl" -o "$dir/x.html" 2> /dev/null
[[ $? -eq 2 ]] || fail "--top=0 must exit 2"
echo "PASS"
