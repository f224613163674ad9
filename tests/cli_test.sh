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
grep -q ": integrity: complete, exact: " "$dir/v.txt" || fail "verify output: $(cat "$dir/v.txt")"

"$memtrace" summary --json "$dir/c.jsonl" > "$dir/s.json" || fail "summary --json"
grep -q '"verdict":"complete"' "$dir/s.json" || fail "summary verdict: $(cat "$dir/s.json")"
grep -q '"path":"request/respond"' "$dir/s.json" || fail "summary scopes: $(cat "$dir/s.json")"
# The trailer's blocks: the integrity counters, the sink's, memtrace's own memory and its
# threads' CPU time (each thread has run, so each has used some).
python3 - "$dir/s.json" <<'PY' || fail "summary --json trailer blocks: $(cat "$dir/s.json")"
import json, sys
s = json.load(open(sys.argv[1]))
i = s["integrity"]
assert i["complete"] and i["events_recorded"] == i["events_applied"] > 0, i
assert s["sink"]["events_lost"] == 0 and s["sink"]["events_written"] == i["events_applied"], s["sink"]
assert s["memtrace_bytes"] == sum(s["memtrace_memory"].values()) > 0, s["memtrace_memory"]
# Peaks: every high-water mark lies inside its interval, and the trailer says how many
# epochs had several threads recording (this workload's two workers and writer do).
for u in [s["totals"]] + [x["usage"] for x in s["scopes"]] + [x["usage"] for x in s["layers"]]:
    assert u["high_water_low_bytes"] <= u["high_water_bytes"] <= u["high_water_high_bytes"], u
assert i["bounded_epochs"] > 0, i
c = s["memtrace_cpu_ns"]
assert sorted(c) == ["drainer", "writer"] and c["drainer"] > 0 and c["writer"] > 0, c
PY
# A clean capture: its integrity in one line, in the words verify passed it with, and
# the capture's events as --json counts them.
"$memtrace" summary "$dir/c.jsonl" > "$dir/s1.txt" || fail "summary"
[[ $(grep -c "^integrity" "$dir/s1.txt") -eq 1 ]] || fail "summary integrity: $(cat "$dir/s1.txt")"
grep -q "^  " "$dir/s1.txt" && fail "a clean capture's summary has no indented block: $(cat "$dir/s1.txt")"
events=$(python3 -c 'import json,sys; print(format(json.load(open(sys.argv[1]))["events"], ","))' "$dir/s.json")
[[ "$(grep "^integrity" "$dir/s1.txt")" == "integrity: complete, exact: $events events, nothing lost, peaks within their bounds" ]] \
  || fail "summary's integrity line (the workload's threads bound peaks): $(cat "$dir/s1.txt")"
[[ "$(sed 's/^memtrace verify: [^ ]*: //' "$dir/v.txt")" == "$(grep "^integrity" "$dir/s1.txt")" ]] \
  || fail "verify and summary say different things: $(cat "$dir/v.txt" "$dir/s1.txt")"
# --verbose: the whole block.
"$memtrace" summary --verbose "$dir/c.jsonl" > "$dir/st.txt" || fail "summary --verbose"
grep -q "^integrity: complete" "$dir/st.txt" || fail "summary integrity block: $(cat "$dir/st.txt")"
grep -q "^  records    recorded " "$dir/st.txt" || fail "summary --verbose block: $(cat "$dir/st.txt")"
grep -Eq "^  peaks      [0-9]+ of [0-9]+ epochs had several threads recording" "$dir/st.txt" \
  || fail "summary peaks line: $(cat "$dir/st.txt")"
grep -Eq "^scope +live +blocks +high-water +peak bound " "$dir/st.txt" \
  || fail "summary peak bound column: $(cat "$dir/st.txt")"
# peak: the global moment and each scope's, with the interval of their high-water marks.
"$memtrace" peak "$dir/c.jsonl" > "$dir/pk.txt" || fail "peak"
grep -Eq "^global high-water: .* live after event [0-9]+ of [0-9]+; (exact|the true peak lies in \[)" \
  "$dir/pk.txt" || fail "peak's interval: $(cat "$dir/pk.txt")"
"$memtrace" peak --json "$dir/c.jsonl" > "$dir/pk.json" || fail "peak --json"
python3 - "$dir/pk.json" <<'PY' || fail "peak --json interval: $(cat "$dir/pk.json")"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["high_water_low_bytes"] <= p["live_bytes"] <= p["high_water_high_bytes"], p
for s in p["scope_peaks"]:
    assert s["high_water_low_bytes"] <= s["live_bytes"] <= s["high_water_high_bytes"], s
PY
grep -q "^  sink       events written [1-9][0-9]*, lost 0" "$dir/st.txt" \
  || fail "summary sink line: $(cat "$dir/st.txt")"
grep -Eq "^  memtrace's own CPU: drainer [0-9]+\.[0-9] ms, writer [0-9]+\.[0-9] ms " "$dir/st.txt" \
  || fail "summary own CPU line: $(cat "$dir/st.txt")"

# A partial capture: verify names the counters that lost records, and summary prints them.
head -n -1 "$dir/c.jsonl" > "$dir/partial.jsonl"
echo '{"type":"trailer","complete":false,"sink":{"events_written":10,"events_lost":7,"write_errors":0,"stack_collisions":0},"integrity":{"complete":false,"exact":false,"events_recorded":20,"events_applied":17,"events_dropped":3}}' \
  >> "$dir/partial.jsonl"
"$memtrace" verify "$dir/partial.jsonl" > "$dir/vp.txt"
[[ $? -eq 1 ]] || fail "verify of a partial capture must exit 1"
grep -q "lost records (records dropped 3, events the sink lost 7)" "$dir/vp.txt" \
  || fail "verify of a partial capture: $(cat "$dir/vp.txt")"
"$memtrace" summary "$dir/partial.jsonl" > "$dir/sp.txt" || fail "summary of a partial capture"
grep -q "^integrity: PARTIAL" "$dir/sp.txt" || fail "summary of a partial capture: $(cat "$dir/sp.txt")"
grep -q "dropped 3" "$dir/sp.txt" || fail "summary of a partial capture: $(cat "$dir/sp.txt")"
# Complete, but a release was matched by address only (an evicted ticket): not clean.
# summary prints the whole block, and verify fails it, naming the counter.
head -n -1 "$dir/c.jsonl" > "$dir/inexact.jsonl"
tail -n 1 "$dir/c.jsonl" | python3 -c '
import json, sys
t = json.loads(sys.stdin.read())
t["integrity"]["ticket_evictions"] = 2
print(json.dumps(t, separators=(",", ":")))' >> "$dir/inexact.jsonl"
"$memtrace" verify "$dir/inexact.jsonl" > "$dir/vi.txt"
[[ $? -eq 1 ]] || fail "verify of an inexact capture must exit 1: $(cat "$dir/vi.txt")"
grep -q "FAILED: its integrity block reports ticket evictions 2 " "$dir/vi.txt" \
  || fail "verify of an inexact capture: $(cat "$dir/vi.txt")"
"$memtrace" summary "$dir/inexact.jsonl" > "$dir/si.txt" || fail "summary of an inexact capture"
grep -q "^integrity: complete, inexact" "$dir/si.txt" || fail "summary, inexact: $(cat "$dir/si.txt")"
grep -q "ticket evictions 2," "$dir/si.txt" || fail "summary, inexact: $(cat "$dir/si.txt")"
# An event record removed after the capture was written: the trailer's count of event
# records says so, and verify fails it.
first_free=$(grep -m 1 -n '"type":"free"' "$dir/c.jsonl" | cut -d: -f1)
sed "${first_free}d" "$dir/c.jsonl" > "$dir/edited.jsonl"
"$memtrace" verify "$dir/edited.jsonl" > "$dir/ve.txt"
[[ $? -eq 1 ]] || fail "verify of an edited capture must exit 1: $(cat "$dir/ve.txt")"
grep -q "FAILED: it is damaged: the file holds [0-9]* event records, and its trailer says [0-9]* were written" \
  "$dir/ve.txt" || fail "verify of an edited capture: $(cat "$dir/ve.txt")"
# An event record changed after the capture was written (an allocation's size): the
# file holds as many records as the trailer says, but its bytes are not those the
# trailer's checksum was computed over, and summary and verify say so. Without the
# checksum (a capture written before the trailer carried one), the records replay to
# other totals than the trailer's, and verify says that.
python3 - "$dir/c.jsonl" "$dir/resized.jsonl" "$dir/resized_older.jsonl" <<'PY'
import json, sys, zlib
lines = open(sys.argv[1]).read().splitlines()
trailer = json.loads(lines[-1])
assert trailer["crc32"] == zlib.crc32(("\n".join(lines[:-1]) + "\n").encode()), "crc32"
for i, line in enumerate(lines):
    r = json.loads(line)
    if r.get("type") == "alloc":
        r["size"] += 1000
        lines[i] = json.dumps(r, separators=(",", ":"))
        break
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
del trailer["crc32"]
lines[-1] = json.dumps(trailer, separators=(",", ":"))
open(sys.argv[3], "w").write("\n".join(lines) + "\n")
PY
[[ $? -eq 0 ]] || fail "the trailer's crc32 is not zlib's CRC-32 of the lines before it"
"$memtrace" verify "$dir/c.jsonl" > /dev/null || fail "verify of the capture before its edit"
"$memtrace" verify "$dir/resized.jsonl" > "$dir/vr.txt"
[[ $? -eq 1 ]] || fail "verify of a capture with a size changed must exit 1: $(cat "$dir/vr.txt")"
grep -q "FAILED: it is damaged: its bytes before the trailer differ from those the trailer's checksum (crc32) was computed over" \
  "$dir/vr.txt" || fail "verify of a capture with a size changed: $(cat "$dir/vr.txt")"
"$memtrace" summary "$dir/resized.jsonl" > "$dir/sr.txt"
grep -q "capture DAMAGED (its bytes differ from those its trailer's checksum was computed over" \
  "$dir/sr.txt" || fail "summary of a capture with a size changed: $(head -n 2 "$dir/sr.txt")"
# Its integrity is never called complete: the trailer's verdict is the recorder's, said so.
grep -q "^integrity: DAMAGED: the file's bytes differ" "$dir/sr.txt" \
  || fail "a damaged capture's integrity line: $(grep integrity "$dir/sr.txt")"
grep -q "^integrity: complete" "$dir/sr.txt" && fail "a damaged capture's integrity: complete"
grep -q "^  recorder   complete, exact" "$dir/sr.txt" \
  || fail "a damaged capture's trailer verdict: $(grep -A2 integrity "$dir/sr.txt")"
# convert copies a damaged capture with its own checksum, not a fresh one that would pass,
# in either encoding, and says so.
for out in resized_copy.mtb resized_copy.jsonl; do
  "$memtrace" convert "$dir/resized.jsonl" "$dir/$out" 2> "$dir/cr.txt" \
    || fail "convert of a damaged capture to $out: $(cat "$dir/cr.txt")"
  grep -q "IN is DAMAGED: its bytes differ from those its trailer's checksum was computed over" \
    "$dir/cr.txt" || fail "convert of a damaged capture says: $(cat "$dir/cr.txt")"
  "$memtrace" verify "$dir/$out" > "$dir/vr.txt"
  [[ $? -eq 1 ]] || fail "verify of a damaged capture's copy $out must exit 1: $(cat "$dir/vr.txt")"
  grep -q "FAILED: it is damaged: its bytes before the trailer differ" "$dir/vr.txt" \
    || fail "verify of a damaged capture's copy $out: $(cat "$dir/vr.txt")"
done
"$memtrace" verify "$dir/resized_older.jsonl" > "$dir/vo.txt"
[[ $? -eq 1 ]] || fail "verify of an older capture with a size changed must exit 1: $(cat "$dir/vo.txt")"
grep -q "FAILED: it is damaged: the totals' bytes allocated: replaying its records gives [0-9]*, its trailer says [0-9]*" \
  "$dir/vo.txt" || fail "verify of an older capture with a size changed: $(cat "$dir/vo.txt")"
# A damaged trailer: exit 2, naming the field.
head -n -1 "$dir/c.jsonl" > "$dir/damaged.jsonl"
echo '{"type":"trailer","complete":true,"integrity":{"events_dropped":-1}}' >> "$dir/damaged.jsonl"
"$memtrace" summary "$dir/damaged.jsonl" > /dev/null 2> "$dir/sd.txt"
[[ $? -eq 2 ]] || fail "summary of a capture with a damaged trailer must exit 2"
grep -q "the trailer's field 'integrity.events_dropped' is not a non-negative integer" \
  "$dir/sd.txt" || fail "summary of a damaged trailer: $(cat "$dir/sd.txt")"
# verify of a partial capture with such a trailer says it cannot be read, not "lost records".
sed '$ s/"complete":true/"complete":false/' "$dir/damaged.jsonl" > "$dir/damaged_partial.jsonl"
"$memtrace" verify "$dir/damaged_partial.jsonl" > "$dir/vd.txt"
[[ $? -eq 1 ]] || fail "verify of a partial capture with a damaged trailer must exit 1"
grep -q "FAILED: it is partial, and its trailer cannot be read: the trailer's field" "$dir/vd.txt" \
  || fail "verify of a damaged partial trailer: $(cat "$dir/vd.txt")"

"$memtrace" top --limit=3 "$dir/c.jsonl" > "$dir/t.txt" || fail "top"
grep -q "request/respond" "$dir/t.txt" || fail "top rows: $(cat "$dir/t.txt")"
"$memtrace" top --by=count "$dir/c.jsonl" > "$dir/tc.txt" || fail "top --by=count"
grep -q "by count" "$dir/tc.txt" || fail "top --by=count output: $(cat "$dir/tc.txt")"
"$memtrace" top --by=nope "$dir/c.jsonl" 2> /dev/null
[[ $? -eq 2 ]] || fail "a bad --by must exit 2"
"$memtrace" peak "$dir/c.jsonl" > "$dir/p.txt" || fail "peak"
grep -q "global high-water" "$dir/p.txt" || fail "peak output: $(cat "$dir/p.txt")"

"$memtrace" summary --at-event=10 "$dir/c.jsonl" > "$dir/ae.txt" || fail "summary --at-event"
grep -q "state at event 10: after event 10 of" "$dir/ae.txt" \
  || fail "summary --at-event output: $(cat "$dir/ae.txt")"
# The counts under the table are those up to the point, and say so.
grep -Eq "^10 of [0-9]+ events applied; [0-9]+ blocks live at the snapshot point; [0-9]+ releases with no allocation in the capture up to it$" "$dir/ae.txt" \
  || fail "summary --at-event counts: $(cat "$dir/ae.txt")"
"$memtrace" summary --at-event=x "$dir/c.jsonl" 2> /dev/null
[[ $? -eq 2 ]] || fail "a bad --at-event must exit 2"
"$memtrace" coverage "$dir/c.jsonl" > "$dir/cov.txt" || fail "coverage"
grep -q "allocated in named scopes" "$dir/cov.txt" || fail "coverage output: $(cat "$dir/cov.txt")"
"$memtrace" top --by=temporaries "$dir/c.jsonl" > "$dir/tt.txt" || fail "top --by=temporaries"
grep -q "by temporaries" "$dir/tt.txt" || fail "top --by=temporaries output: $(cat "$dir/tt.txt")"
"$memtrace" top --by=short-lived "$dir/c.jsonl" > "$dir/ts.txt" || fail "top --by=short-lived"
grep -q "by short-lived" "$dir/ts.txt" || fail "top --by=short-lived output: $(cat "$dir/ts.txt")"
"$memtrace" retention "$dir/c.jsonl" > "$dir/r.txt" || fail "retention"
grep -q "request/handle/session_cache" "$dir/r.txt" || fail "retention rows: $(cat "$dir/r.txt")"
"$workload" --requests=200 --workers=1 --capture="$dir/small.jsonl" > /dev/null 2>&1 || fail "workload 2"
"$memtrace" diff "$dir/small.jsonl" "$dir/c.jsonl" > "$dir/d.txt" || fail "diff"
grep -q "TOTAL" "$dir/d.txt" || fail "diff output: $(cat "$dir/d.txt")"
"$memtrace" diff "$dir/c.jsonl" 2> /dev/null
[[ $? -eq 2 ]] || fail "diff with one file must exit 2"

"$workload" --requests=300 --workers=2 --capture="$dir/z.jsonl.zst" > /dev/null 2>&1 || fail "zstd capture"
"$memtrace" verify "$dir/z.jsonl.zst" > "$dir/vz.txt" || fail "verify of a zstd capture"
grep -q ": integrity: complete, exact: " "$dir/vz.txt" || fail "zstd verify output: $(cat "$dir/vz.txt")"

# The binary encoding (.mtb): written by the sink for .mtb paths, read by every command,
# and `memtrace convert` turns either encoding into the other (JSONL back byte for byte).
"$workload" --requests=500 --workers=2 --capture="$dir/b.mtb" > /dev/null 2>&1 || fail "binary capture"
[[ "$(head -c 8 "$dir/b.mtb")" == "MTRACEB3" ]] || fail "b.mtb is not binary: $(head -c 16 "$dir/b.mtb" | od -c | head -1)"
"$memtrace" verify "$dir/b.mtb" > "$dir/vb.txt" || fail "verify of a binary capture: $(cat "$dir/vb.txt")"
grep -q ": integrity: complete, exact: " "$dir/vb.txt" || fail "binary verify output: $(cat "$dir/vb.txt")"
"$memtrace" summary --json "$dir/b.mtb" > "$dir/sb.json" || fail "summary --json of a binary capture"
grep -q '"path":"request/respond"' "$dir/sb.json" || fail "binary summary scopes: $(cat "$dir/sb.json")"
"$memtrace" convert "$dir/c.jsonl" "$dir/c.mtb" 2> "$dir/conv.txt" || fail "convert to binary: $(cat "$dir/conv.txt")"
grep -q "wrote .*c.mtb (binary, [0-9]* events)" "$dir/conv.txt" || fail "convert message: $(cat "$dir/conv.txt")"
(( $(stat -c %s "$dir/c.mtb") * 5 < $(stat -c %s "$dir/c.jsonl") )) || fail "c.mtb is not much smaller than c.jsonl"
for cmd in summary top peak retention coverage; do
  "$memtrace" "$cmd" "$dir/c.jsonl" | sed 's/c\.jsonl/CAPTURE/g' > "$dir/from_jsonl.txt"
  "$memtrace" "$cmd" "$dir/c.mtb" | sed 's/c\.mtb/CAPTURE/g' > "$dir/from_mtb.txt"
  cmp -s "$dir/from_jsonl.txt" "$dir/from_mtb.txt" \
    || fail "$cmd differs between encodings: $(diff "$dir/from_jsonl.txt" "$dir/from_mtb.txt" | head -5)"
done
# Exports are the same from either encoding, and the same every time (a pprof sample
# order once followed abseil's per-process hash seed).
for fmt in folded pprof perfetto; do
  n=0
  for src in c.jsonl c.mtb c.jsonl; do
    n=$((n + 1))
    "$memtrace" export --format="$fmt" "$dir/$src" -o "$dir/x.$fmt" 2> /dev/null || fail "export $fmt of $src"
    if [[ $fmt == pprof ]]; then
      gzip -dc "$dir/x.$fmt"
    else
      sed "s/$src/CAPTURE/g" "$dir/x.$fmt"
    fi > "$dir/x.$fmt.$n"
  done
  cmp -s "$dir/x.$fmt.1" "$dir/x.$fmt.2" || fail "export $fmt differs between encodings"
  cmp -s "$dir/x.$fmt.1" "$dir/x.$fmt.3" || fail "export $fmt differs from one run to the next"
done
"$memtrace" convert "$dir/c.mtb" "$dir/back.jsonl.zst" 2> /dev/null || fail "convert to compressed JSONL"
"$memtrace" convert "$dir/back.jsonl.zst" "$dir/back.jsonl" 2> /dev/null || fail "convert from zstd"
cmp -s "$dir/c.jsonl" "$dir/back.jsonl" || fail "jsonl -> mtb -> jsonl is not byte-identical"
"$memtrace" convert "$dir/b.mtb" "$dir/b.jsonl" 2> /dev/null || fail "convert binary to JSONL"
"$memtrace" verify "$dir/b.jsonl" > /dev/null || fail "verify of a converted capture"
"$memtrace" convert "$dir/c.jsonl" 2> /dev/null
[[ $? -eq 2 ]] || fail "convert with one file must exit 2"
"$memtrace" convert "$dir/nope.mtb" "$dir/never.jsonl" 2> "$dir/e.txt"
[[ $? -eq 2 ]] || fail "convert of a missing capture must exit 2"
[[ ! -e "$dir/never.jsonl" ]] || fail "convert of a missing capture left an output file"
"$memtrace" convert "$dir/c.mtb" "$dir/c.mtb" 2> "$dir/e.txt"
[[ $? -eq 2 ]] || fail "convert onto itself must exit 2"
grep -q "the same file" "$dir/e.txt" || fail "convert onto itself message: $(cat "$dir/e.txt")"
# An unknown tag right after the header record (which ends with the header's last field).
at=$(grep -abo '"time_resolution":"epoch"}' "$dir/b.mtb" | head -1 | cut -d: -f1)
{ head -c $((at + 26)) "$dir/b.mtb"; printf '\x3f'; } > "$dir/badtag.mtb"
"$memtrace" summary "$dir/badtag.mtb" 2> "$dir/e.txt"
[[ $? -eq 2 ]] || fail "a corrupt binary capture must exit 2"
grep -q "badtag.mtb: record 2 at byte $((at + 26)): unknown record tag 0x3f" "$dir/e.txt" || fail "corrupt binary message: $(cat "$dir/e.txt")"
# Cut 3 bytes into the record after the header (a scope line's JSON record).
head -c $((at + 29)) "$dir/b.mtb" > "$dir/cut.mtb"
# It is read up to the cut (the header here): verify says where it was cut and exits 1, as
# for any truncated capture; convert salvages what precedes the cut.
"$memtrace" verify "$dir/cut.mtb" > "$dir/e.txt" 2>&1
[[ $? -eq 1 ]] || fail "a binary capture cut inside a record must fail verify with 1"
grep -q "record 2 at byte $((at + 26)) is cut off" "$dir/e.txt" || fail "cut binary message: $(cat "$dir/e.txt")"
"$memtrace" summary "$dir/cut.mtb" > "$dir/e.txt" 2>&1 || fail "summary of a cut capture: $(cat "$dir/e.txt")"
grep -q "capture TRUNCATED (cut off while it was written: record 2 at byte $((at + 26)) is cut off" "$dir/e.txt" \
  || fail "cut capture's verdict: $(head -2 "$dir/e.txt")"
"$memtrace" convert "$dir/cut.mtb" "$dir/cut_conv.jsonl" 2> /dev/null || fail "convert of a cut capture"
head -1 "$dir/cut_conv.jsonl" | grep -q '"type":"header"' || fail "the salvaged capture has no header"
# verify --salvage=OUT keeps what precedes a cut as a capture of its own, marked salvaged:
# it holds the events every reader takes from the cut capture, every reader calls it
# partial and says why, and verify of it fails for that reason.
size=$(stat -c %s "$dir/b.mtb")
head -c $((size * 2 / 3)) "$dir/b.mtb" > "$dir/cut_late.mtb"
"$memtrace" verify --salvage="$dir/salvaged.mtb" "$dir/cut_late.mtb" > "$dir/vs.txt" 2> "$dir/vs.err"
[[ $? -eq 1 ]] || fail "verify --salvage of a cut capture must exit 1: $(cat "$dir/vs.txt" "$dir/vs.err")"
grep -q "salvaged [0-9]* events of .*cut_late.mtb into .*salvaged.mtb, marked salvaged (partial)" \
  "$dir/vs.err" || fail "verify --salvage says: $(cat "$dir/vs.err")"
events_of() {
  "$memtrace" summary --replay --json "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["events"])'
}
[[ "$(events_of "$dir/cut_late.mtb")" -gt 0 ]] || fail "the cut capture kept no events"
[[ "$(events_of "$dir/salvaged.mtb")" == "$(events_of "$dir/cut_late.mtb")" ]] \
  || fail "the salvaged capture's events differ from the cut one's"
"$memtrace" summary "$dir/salvaged.mtb" > "$dir/ss.txt" || fail "summary of a salvaged capture"
grep -q "capture PARTIAL (salvaged from .*cut_late.mtb, which was cut off while it was written: record " \
  "$dir/ss.txt" || fail "a salvaged capture's verdict: $(head -1 "$dir/ss.txt")"
"$memtrace" verify "$dir/salvaged.mtb" > "$dir/vs.txt"
[[ $? -eq 1 ]] || fail "verify of a salvaged capture must exit 1"
grep -q "FAILED: it is partial: it was salvaged (memtrace convert, verify --salvage) from" \
  "$dir/vs.txt" || fail "verify of a salvaged capture: $(cat "$dir/vs.txt")"
"$memtrace" summary --json "$dir/salvaged.mtb" | grep -q '"salvaged":{"from":"[^"]*cut_late.mtb","cut":"record ' \
  || fail "summary --json of a salvaged capture does not say where it came from"
# A capture with its trailer has nothing to salvage: no file, and its own verdict.
"$memtrace" verify --salvage="$dir/nothing.mtb" "$dir/b.mtb" > /dev/null 2> "$dir/vs.err" \
  || fail "verify --salvage of a whole capture: $(cat "$dir/vs.err")"
[[ ! -e "$dir/nothing.mtb" ]] || fail "verify --salvage of a whole capture wrote a file"
grep -q "nothing to salvage: .*b.mtb is whole" "$dir/vs.err" || fail "verify --salvage of a whole capture: $(cat "$dir/vs.err")"
# A damaged capture has its trailer: it fails, and a file already at OUT stays as it was.
cp "$dir/b.mtb" "$dir/kept.mtb"
"$memtrace" verify --salvage="$dir/kept.mtb" "$dir/resized.jsonl" > /dev/null 2> "$dir/vs.err"
[[ $? -eq 1 ]] || fail "verify --salvage of a damaged capture must exit 1"
cmp -s "$dir/b.mtb" "$dir/kept.mtb" || fail "verify --salvage replaced a file it did not salvage into"
grep -q "nothing to salvage: .*resized.jsonl is not cut short" "$dir/vs.err" \
  || fail "verify --salvage of a damaged capture: $(cat "$dir/vs.err")"
ls -a "$dir" | grep -q "^.memtrace-salvage" && fail "verify --salvage left its scratch file"
"$memtrace" verify --salvage="$dir/s.mtb" "$dir/b.mtb" "$dir/cut_late.mtb" 2> /dev/null
[[ $? -eq 2 ]] || fail "--salvage with two captures must exit 2"
"$memtrace" verify --salvage="$dir/s.txt" "$dir/cut_late.mtb" 2> /dev/null
[[ $? -eq 2 ]] || fail "--salvage to a name that is no capture must exit 2"
# convert refuses an OUT name whose bytes it would not honour (JSONL under .gz), before
# reading IN, and says how to get that file instead; exit 2 as any usage error.
"$memtrace" convert "$dir/c.mtb" "$dir/out.jsonl.gz" 2> "$dir/e.txt"
[[ $? -eq 2 ]] || fail "convert to .gz must exit 2"
[[ ! -e "$dir/out.jsonl.gz" ]] || fail "convert to .gz wrote a file"
grep -qF "memtrace convert: cannot write '$dir/out.jsonl.gz': convert does not compress with gzip" "$dir/e.txt" \
  || fail "convert to .gz message: $(cat "$dir/e.txt")"
grep -qF "pipe the output through gzip: memtrace convert $dir/c.mtb $dir/out.jsonl && gzip $dir/out.jsonl" \
  "$dir/e.txt" || fail "convert to .gz fix: $(cat "$dir/e.txt")"
for out in refused.mtb.xz refused.bz2 refused.txt refused.json.zst; do
  "$memtrace" convert "$dir/c.mtb" "$dir/$out" 2> "$dir/e.txt"
  [[ $? -eq 2 ]] || fail "convert to $out must exit 2"
  [[ ! -e "$dir/$out" ]] || fail "convert to $out wrote a file"
  grep -q "cannot write '$dir/$out'" "$dir/e.txt" || fail "convert to $out message: $(cat "$dir/e.txt")"
done
# What convert does honour: zstd (its magic, 28 b5 2f fd), and a name with no extension
# (JSONL), as /dev/stdout is.
"$memtrace" convert "$dir/c.mtb" "$dir/z.mtb.zst" 2> /dev/null || fail "convert to .mtb.zst"
[[ "$(head -c 4 "$dir/z.mtb.zst" | od -An -tx1 | tr -d ' ')" == 28b52ffd ]] \
  || fail "z.mtb.zst is not zstd: $(head -c 4 "$dir/z.mtb.zst" | od -An -tx1)"
"$memtrace" convert "$dir/c.mtb" /dev/stdout 2> /dev/null | cmp -s - "$dir/c.jsonl" \
  || fail "convert to /dev/stdout is not the JSONL"
"$memtrace" help convert > "$dir/hc.txt" || fail "help convert"
grep -q "usage: memtrace convert" "$dir/hc.txt" || fail "help convert output: $(cat "$dir/hc.txt")"

head -n 100 "$dir/c.jsonl" > "$dir/cut.jsonl"
"$memtrace" verify "$dir/cut.jsonl" > "$dir/v2.txt"
[[ $? -eq 1 ]] || fail "a truncated capture must fail verify with 1"
grep -q "truncated" "$dir/v2.txt" || fail "truncated message: $(cat "$dir/v2.txt")"

echo "garbage" > "$dir/bad.jsonl"
"$memtrace" verify "$dir/bad.jsonl" 2> "$dir/e.txt"
[[ $? -eq 2 ]] || fail "unreadable input must exit 2"
grep -q "bad.jsonl:1:" "$dir/e.txt" || fail "error must name the line: $(cat "$dir/e.txt")"

"$memtrace" frobnicate 2> "$dir/e.txt"
[[ $? -eq 2 ]] || fail "unknown command must exit 2"
grep -q "unknown command 'frobnicate'" "$dir/e.txt" || fail "unknown command message: $(cat "$dir/e.txt")"
"$memtrace" help verify > "$dir/hv.txt" || fail "help verify"
grep -q "usage: memtrace verify" "$dir/hv.txt" || fail "help verify output: $(cat "$dir/hv.txt")"
"$memtrace" > /dev/null 2>&1
[[ $? -eq 2 ]] || fail "no command must exit 2"

# --version and `version`: one line, `memtrace X.Y.Z`, exit 0; the same in the help.
for v in --version version; do
  "$memtrace" "$v" > "$dir/ver.txt" 2> "$dir/e.txt" || fail "memtrace $v exit $?"
  [[ $(wc -l < "$dir/ver.txt") -eq 1 && ! -s "$dir/e.txt" ]] || fail "memtrace $v: $(cat "$dir/ver.txt" "$dir/e.txt")"
  grep -Eq '^memtrace [0-9]+\.[0-9]+\.[0-9]+$' "$dir/ver.txt" || fail "memtrace $v: $(cat "$dir/ver.txt")"
done
"$memtrace" help | grep -q -- "--version" || fail "help does not mention --version"
# With --json, one JSON object; with anything else after it, a usage error.
"$memtrace" version --json | python3 -c 'import json, sys; assert json.load(sys.stdin)["version"]' \
  || fail "memtrace version --json: $("$memtrace" version --json)"
"$memtrace" version extra > /dev/null 2> "$dir/e.txt"
[[ $? -eq 2 ]] && grep -q "unexpected argument 'extra'" "$dir/e.txt" \
  || fail "memtrace version extra must be refused: $(cat "$dir/e.txt")"
# It takes --help as every command does, and `help version` is the same.
for args in "version --help" "help version"; do
  "$memtrace" $args > "$dir/vh.txt" || fail "memtrace $args exit $?"
  grep -q "usage: memtrace version" "$dir/vh.txt" || fail "memtrace $args: $(cat "$dir/vh.txt")"
done

# A usage error is two lines on stderr, what is wrong and where the help is, never the
# help itself (which --help prints, on stdout, exit 0).
usage_error() {  # usage_error COMMAND WHAT ARGS...: exit 2 and exactly those two lines
  local command="$1" what="$2"
  shift 2
  "$memtrace" "$@" > "$dir/uo.txt" 2> "$dir/ue.txt"
  local rc=$?
  [[ $rc -eq 2 ]] || fail "memtrace $* exited $rc, not 2"
  [[ ! -s "$dir/uo.txt" ]] || fail "memtrace $* wrote to stdout: $(cat "$dir/uo.txt")"
  [[ $(wc -l < "$dir/ue.txt") -eq 2 ]] || fail "memtrace $* printed more than two lines: $(cat "$dir/ue.txt")"
  grep -qF -- "$what" "$dir/ue.txt" || fail "memtrace $*: no '$what' in: $(cat "$dir/ue.txt")"
  tail -1 "$dir/ue.txt" | grep -qxF "run \`memtrace $command --help\` for the options" \
    || fail "memtrace $*: no help line: $(cat "$dir/ue.txt")"
}
usage_error summary "unknown flag '--frob'" summary --frob "$dir/c.jsonl"
usage_error top "needs a value" top --limit
usage_error top "bad value for --limit" top --limit=x "$dir/c.jsonl"
# An empty value is no value: refused, never read as the flag left out.
usage_error summary "flag --at-time= has an empty value" summary --at-time= "$dir/c.jsonl"
usage_error peak "flag --scope= has an empty value" peak --scope= "$dir/c.jsonl"
usage_error summary "--limit must be 0 (all rows) or more" summary --limit=-1 "$dir/c.jsonl"
usage_error summary "'-' is not standard input here" summary -
usage_error convert "'-' is not standard input or output here" convert "$dir/c.jsonl" -
# A point past the capture's end is its end, and says so.
"$memtrace" summary --at-event=999999999 "$dir/c.jsonl" > "$dir/pe.txt" || fail "summary past the end"
grep -q "the capture ends before that event, so this is its end" "$dir/pe.txt" \
  || fail "summary past the end: $(head -n 1 "$dir/pe.txt")"
"$memtrace" diff --from=event=10 --to=event=999999999 "$dir/c.jsonl" > "$dir/pe.txt" \
  || fail "diff past the end"
grep -q "at event 999999999 (the capture ends before that event, so this is its end)" \
  "$dir/pe.txt" || fail "diff past the end: $(head -n 1 "$dir/pe.txt")"
# --limit=0 is every row, for top and peak as for summary.
for cmd in top peak; do
  "$memtrace" $cmd --limit=0 "$dir/c.jsonl" > "$dir/l0.txt" || fail "$cmd --limit=0"
  "$memtrace" $cmd --limit=1 "$dir/c.jsonl" > "$dir/l1.txt" || fail "$cmd --limit=1"
  [[ $(wc -l < "$dir/l0.txt") -gt $(wc -l < "$dir/l1.txt") ]] || fail "$cmd --limit=0 printed no more rows than --limit=1"
done
usage_error top "--limit must be 0 (all rows) or more" top --limit=-2 "$dir/c.jsonl"
# `top --by CAPTURE` took the capture for the ordering: the ordering is what is said.
usage_error top "--by must be bytes, count, live, temporaries or short-lived, not '$dir/c.jsonl'" top --by "$dir/c.jsonl"
usage_error summary "which capture" summary
usage_error convert "give two files" convert "$dir/c.jsonl"
usage_error export "which format" export "$dir/c.jsonl"
usage_error run "unknown option '--frob'" run --frob -- /bin/true
usage_error run "no program to run" run --quiet
usage_error run "--depth=99 is not" run --depth 99 -- /bin/true
usage_error report "unknown option '--frob'" report --frob "$dir/c.jsonl"
usage_error report "where to?" report "$dir/c.jsonl"
# A name that promises other bytes than are written is refused: a page that is no PDF, a
# capture that is no text file, and a weight perfetto would ignore.
usage_error report "the report is an HTML page, not '.pdf'" report "$dir/c.jsonl" -o "$dir/r.pdf"
usage_error run "the name's extension '.txt' is not a capture's" run --quiet --output="$dir/x.txt" -- /bin/true
[[ -e "$dir/x.txt" ]] && fail "run wrote a capture named .txt"
# ... but an extension that is no file type is the name's own (a pid, a version), and a
# name convert is given that is short is refused, not a crash.
"$memtrace" run --quiet --output="$dir/no_such_dir/trace.%p" -- /bin/true 2> "$dir/e.txt"
[[ $? -eq 125 ]] && grep -qF "its directory" "$dir/e.txt" || fail "run --output=trace.%p: $(cat "$dir/e.txt")"
usage_error convert "does not know the extension '.b'" convert "$dir/c.jsonl" "$dir/o.b"
usage_error export "--weight is for folded stacks" export --format=perfetto --weight=count "$dir/c.jsonl"
# An output that is the capture read, or the baseline, under any name, is refused, and the
# capture stays (it was replaced by the export or the page).
cp "$dir/c.jsonl" "$dir/self.jsonl"
ln -sf "$dir/self.jsonl" "$dir/self.html"
ln -sf "$dir/self.jsonl" "$dir/self.out"  # a name no export format refuses by itself
for args in "export --format=folded $dir/self.jsonl -o $dir/self.out" \
            "export --format=pprof $dir/self.jsonl -o $dir/self.out" \
            "report $dir/self.jsonl -o $dir/self.html" \
            "report $dir/c.jsonl --baseline=$dir/self.jsonl -o $dir/self.html"; do
  read -r -a argv <<< "$args"
  "$memtrace" "${argv[@]}" > /dev/null 2> "$dir/e.txt"
  [[ $? -eq 2 ]] && grep -qF "which this reads" "$dir/e.txt" || fail "$args: $(cat "$dir/e.txt")"
  cmp -s "$dir/self.jsonl" "$dir/c.jsonl" || fail "$args replaced the capture it read"
done
"$memtrace" frobnicate > /dev/null 2> "$dir/e.txt"
[[ $(wc -l < "$dir/e.txt") -eq 2 ]] && grep -qxF "run \`memtrace help\` for the commands" "$dir/e.txt" \
  || fail "unknown command: $(cat "$dir/e.txt")"
for cmd in run report convert summary; do
  "$memtrace" "$cmd" --help > "$dir/h.txt" 2> "$dir/e.txt" || fail "$cmd --help exit $?"
  grep -q "usage: memtrace $cmd" "$dir/h.txt" && [[ ! -s "$dir/e.txt" ]] \
    || fail "$cmd --help: $(cat "$dir/h.txt" "$dir/e.txt")"
done

# -o X, -o=X, --output X and --output=X are one flag for every command that writes a
# file: export, report, convert and run. Each spelling writes the file it names.
spellings=("-o FILE" "-o=FILE" "--output FILE" "--output=FILE")
for n in 0 1 2 3; do
  read -r -a flag <<< "${spellings[$n]/FILE/$dir/o$n}"
  "$memtrace" export --format=folded "${flag[@]}" "$dir/small.jsonl" 2> /dev/null \
    || fail "export ${spellings[$n]}"
  [[ -s "$dir/o$n" ]] || fail "export ${spellings[$n]} wrote nothing"
  read -r -a flag <<< "${spellings[$n]/FILE/$dir/o$n.html}"
  "$memtrace" report "$dir/small.jsonl" "${flag[@]}" 2> /dev/null || fail "report ${spellings[$n]}"
  grep -q "<html" "$dir/o$n.html" || fail "report ${spellings[$n]} wrote no page"
  read -r -a flag <<< "${spellings[$n]/FILE/$dir/o$n.jsonl}"
  "$memtrace" convert "$dir/c.mtb" "${flag[@]}" 2> /dev/null || fail "convert ${spellings[$n]}"
  cmp -s "$dir/o$n.jsonl" "$dir/c.jsonl" || fail "convert ${spellings[$n]}: not the capture"
  # run: a capture path whose directory is missing is refused, by name, before the
  # program starts, so the path the flag gave is seen without tracing anything (which a
  # sanitizer build of the interposer could not do; the preload_*_test targets write captures).
  read -r -a flag <<< "${spellings[$n]/FILE/$dir/no_such_dir/o$n.mtb}"
  "$memtrace" run --quiet "${flag[@]}" -- /bin/true 2> "$dir/e.txt"
  [[ $? -eq 125 ]] && grep -qF "cannot write the capture '$dir/no_such_dir/o$n.mtb'" "$dir/e.txt" \
    || fail "run ${spellings[$n]}: $(cat "$dir/e.txt")"
done

# Every subcommand: --help prints its own usage and flags (exit 0); a flag of another
# subcommand is refused by name (exit 2); --json prints one JSON object.
for cmd in summary verify top peak retention diff coverage; do
  "$memtrace" "$cmd" --help > "$dir/h.txt" || fail "$cmd --help exit $?"
  grep -q "usage: memtrace $cmd" "$dir/h.txt" || fail "$cmd --help: $(cat "$dir/h.txt")"
  grep -q -- "--json" "$dir/h.txt" || fail "$cmd --help lists --json: $(cat "$dir/h.txt")"
  "$memtrace" "$cmd" --stacks "$dir/c.jsonl" > /dev/null 2> "$dir/e.txt" && [[ $cmd != top ]] \
    && fail "$cmd accepted --stacks"
  if [[ $cmd != top ]]; then
    grep -q "memtrace $cmd: unknown flag '--stacks'" "$dir/e.txt" || fail "$cmd: $(cat "$dir/e.txt")"
  fi
done
json_ok() {  # one JSON object per line that python can parse, with the given command
  python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); assert d["command"]==sys.argv[1], d' "$1"
}
for cmd in summary verify top peak retention coverage; do
  "$memtrace" "$cmd" --json "$dir/c.jsonl" > "$dir/j.json" || fail "$cmd --json exit $?"
  json_ok "$cmd" < "$dir/j.json" || fail "$cmd --json: $(head -c 300 "$dir/j.json")"
done
"$memtrace" diff --json "$dir/small.jsonl" "$dir/c.jsonl" | json_ok diff || fail "diff --json"
"$memtrace" top --json --stacks --limit=2 "$dir/c.jsonl" \
  | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["rows"])==2 and d["rows"][0]["frames"], d' \
  || fail "top --json --stacks"

# Bad flag values and missing arguments: exit 2 with the flag named.
"$memtrace" top --limit=abc "$dir/c.jsonl" 2> "$dir/e.txt"
[[ $? -eq 2 ]] || fail "a bad --limit must exit 2"
grep -q "bad value for --limit" "$dir/e.txt" || fail "bad --limit message: $(cat "$dir/e.txt")"
"$memtrace" top --limit 2> "$dir/e.txt"
[[ $? -eq 2 ]] || fail "--limit without a value must exit 2"
"$memtrace" summary 2> "$dir/e.txt"
[[ $? -eq 2 ]] || fail "summary without a capture must exit 2"
grep -q "which capture" "$dir/e.txt" || fail "missing capture message: $(cat "$dir/e.txt")"
"$memtrace" summary "$dir/nope.jsonl" 2> "$dir/e.txt"
[[ $? -eq 2 ]] || fail "a missing file must exit 2"
grep -q "cannot open capture" "$dir/e.txt" || fail "missing file message: $(cat "$dir/e.txt")"
"$memtrace" verify "$dir/nope.jsonl" 2> /dev/null
[[ $? -eq 2 ]] || fail "verify of a missing file must exit 2"
mkdir -p "$dir/a_directory"
"$memtrace" summary "$dir/a_directory" 2> "$dir/e.txt"
[[ $? -eq 2 ]] || fail "a directory must exit 2"
grep -q "is a directory, not a capture" "$dir/e.txt" || fail "directory message: $(cat "$dir/e.txt")"

# Snapshots at a time and at a scope's exit; diff between two points of one capture.
"$memtrace" summary --at-scope-exit='request/handle#3' "$dir/c.jsonl" > "$dir/s.txt" \
  || fail "summary --at-scope-exit"
grep -q "state at exit 3 of request/handle" "$dir/s.txt" || fail "scope-exit snapshot: $(head -3 "$dir/s.txt")"
"$memtrace" summary --at-scope-exit='no/such/scope' "$dir/c.jsonl" 2> "$dir/e.txt"
[[ $? -eq 2 ]] || fail "a scope that never exits must exit 2"
grep -q "never reaches exit 1 of no/such/scope" "$dir/e.txt" || fail "never-reached: $(cat "$dir/e.txt")"
"$memtrace" summary --json --at-time=0 "$dir/c.jsonl" \
  | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["snapshot"]["events_applied"] < d["events"], d' \
  || fail "summary --at-time=0 is a snapshot before the end"
# --at-time with units: a bare number is ns, so 1.5s, 1500ms and 1500000000 are one point,
# as are 40us and 40000, and 100ns and 100 (analyzer_test checks the values themselves).
at_time_events() {
  "$memtrace" summary --json --at-time="$1" "$dir/c.jsonl" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["snapshot"]["events_applied"])'
}
same_point() {  # same_point WITH_UNIT BARE_NS: both read, and the same snapshot
  local a b
  a=$(at_time_events "$1") && b=$(at_time_events "$2") && [[ -n "$a" && "$a" == "$b" ]] \
    || fail "--at-time=$1 (events $a) is not --at-time=$2 (events $b)"
}
same_point 1.5s 1500000000
same_point 1500ms 1500000000
same_point 40us 40000
same_point 100ns 100
"$memtrace" summary --at-time=3parsecs "$dir/c.jsonl" 2> "$dir/e.txt"
[[ $? -eq 2 ]] || fail "an --at-time with an unknown unit must exit 2"
grep -q "bad snapshot point 'time=3parsecs': expected a duration with a unit (ns, us, ms, s" "$dir/e.txt" \
  || fail "bad --at-time unit message: $(cat "$dir/e.txt")"
"$memtrace" diff --from=time=100us --to=end "$dir/c.jsonl" > /dev/null || fail "diff --from=time=100us"
"$memtrace" summary --at-time=soon "$dir/c.jsonl" 2> "$dir/e.txt"
[[ $? -eq 2 ]] || fail "a bad --at-time must exit 2"
"$memtrace" summary --at-time=1 --at-event=2 "$dir/c.jsonl" 2> /dev/null
[[ $? -eq 2 ]] || fail "two --at-* flags must exit 2"
"$memtrace" diff --from=scope-exit=request#5 --to=end "$dir/c.jsonl" > "$dir/d2.txt" \
  || fail "diff between two points"
grep -q "at exit 5 of request" "$dir/d2.txt" || fail "diff points: $(head -2 "$dir/d2.txt")"
"$memtrace" diff "$dir/c.jsonl" 2> /dev/null
[[ $? -eq 2 ]] || fail "diff of one capture without points must exit 2"
# diff --sites: the rows' changes add up to the totals' change between the two points (as
# `summary` gives them at each), growth first, each site named; between two runs of the
# program, a site is matched by its name whatever address it ran at.
"$memtrace" diff --sites --json --from=event=2000 --to=end "$dir/c.jsonl" > "$dir/ds.json" \
  || fail "diff --sites"
"$memtrace" summary --json --at-event=2000 "$dir/c.jsonl" > "$dir/s0.json" || fail "summary at 2000"
"$memtrace" diff --sites --json "$dir/small.jsonl" "$dir/c.jsonl" > "$dir/ds2.json" \
  || fail "diff --sites of two captures"
# A side's peak is the site's own where one row has the name (as `top` gives it), and
# null where several rows add up (they peaked at different moments).
"$memtrace" top --json --limit=0 "$dir/c.jsonl" > "$dir/dt.json" || fail "top --json --limit=0"
python3 - "$dir/ds.json" "$dir/s0.json" "$dir/s.json" "$dir/ds2.json" "$dir/dt.json" <<'PY' || fail "diff --sites: $(head -c 600 "$dir/ds.json")"
import json, sys
d, s0, s1, two, top = (json.load(open(p)) for p in sys.argv[1:6])
stacks = {}
for g in top["rows"]:
    stacks.setdefault(g["name"], []).extend(g["stacks"])
known = 0
for r in d["rows"]:
    after, own = r["after"], stacks.get(r["site"], [])
    if len(own) == 1:
        known += 1
        assert after["high_water_bytes"] == own[0]["usage"]["high_water_bytes"], (r, own)
        assert after["high_water_low_bytes"] <= after["high_water_bytes"] <= after["high_water_high_bytes"], r
    else:
        assert after["high_water_bytes"] is None and after["high_water_low_bytes"] is None, r
for g in top["rows"]:
    if len(g["stacks"]) > 1:
        assert g["usage"]["high_water_bytes"] is None, g
assert known > 0, d["rows"]
assert d["command"] == "diff" and d["by"] == "site", d
rows = d["rows"]
assert rows, "no rows"
names = [r["site"] for r in rows]
assert all(n and not n.startswith("0x") for n in names) and len(set(names)) == len(names), names
live = [r["live_delta"] for r in rows]
assert live == sorted(live, reverse=True), live
for key, field in (("live_delta", "live_bytes"), ("allocated_delta", "allocated_bytes")):
    want = s1["totals"][field] - s0["totals"][field]
    got = sum(r[key] for r in rows)
    assert got == want, (key, got, want)
    assert all(r[key] == r["after"][field] - r["before"][field] for r in rows), key
both = [r for r in two["rows"] if r["before"]["allocated_count"] and r["after"]["allocated_count"]]
assert both, "no site matched between the two runs"
PY

# Per-scope peaks: one scope, and an unknown one.
"$memtrace" peak --scope=request/respond "$dir/c.jsonl" > "$dir/p2.txt" || fail "peak --scope"
grep -q "^request/respond: .* live after event" "$dir/p2.txt" || fail "peak --scope: $(cat "$dir/p2.txt")"
"$memtrace" peak --scope=nope "$dir/c.jsonl" 2> "$dir/e.txt"
[[ $? -eq 2 ]] || fail "peak of an unknown scope must exit 2"
# `request` only encloses the scopes that allocate: no moment of its own, said so.
"$memtrace" peak --scope=request "$dir/c.jsonl" > "$dir/p3.txt" 2> "$dir/e.txt"
[[ $? -eq 2 ]] || fail "peak of a scope that allocated nothing must exit 2: $(cat "$dir/p3.txt")"
grep -q "scope 'request' in .* allocated nothing itself, so it has no high-water moment" \
  "$dir/e.txt" || fail "peak of a scope that allocated nothing: $(cat "$dir/e.txt")"
grep -q "the scopes inside it that allocated: .*request/respond" "$dir/e.txt" \
  || fail "peak of a scope that allocated nothing names none inside it: $(cat "$dir/e.txt")"
"$memtrace" peak --scope=request/respond/ "$dir/c.jsonl" > "$dir/p4.txt" \
  || fail "peak --scope with a trailing slash: $(cat "$dir/p4.txt")"

# verify tells an interposer that saw nothing from one that was never loaded.
printf '%s\n' '{"type":"header","format":"memtrace-jsonl","schema_version":1,"source":"preload","interposer":{"library":"/x/libmemtrace_preload.so"}}' \
  '{"type":"trailer","complete":true}' > "$dir/empty_preload.jsonl"
"$memtrace" verify "$dir/empty_preload.jsonl" > "$dir/v3.txt"
[[ $? -eq 1 ]] || fail "an empty preload capture must fail verify"
grep -q "the interposer was loaded but recorded no allocations" "$dir/v3.txt" || fail "$(cat "$dir/v3.txt")"
"$memtrace" retention "$dir/empty_preload.jsonl" > "$dir/re.txt" || fail "retention of no scopes"
grep -q "^(no scope exited in this capture" "$dir/re.txt" || fail "retention of no scopes: $(cat "$dir/re.txt")"
# It names the minimum size only where one was set.
grep -q "min-size\|at least" "$dir/v3.txt" && fail "no --min-size was set, yet: $(cat "$dir/v3.txt")"
grep -q "traced only with --children" "$dir/v3.txt" || fail "$(cat "$dir/v3.txt")"
sed 's/"interposer":{/"interposer":{"min_size":4096,/' "$dir/empty_preload.jsonl" > "$dir/empty_min.jsonl"
"$memtrace" verify "$dir/empty_min.jsonl" > "$dir/v3m.txt"
grep -q "allocate blocks of at least 4096 bytes, the --min-size" "$dir/v3m.txt" \
  || fail "an empty capture under --min-size: $(cat "$dir/v3m.txt")"
# summary calls it whole, with 0 events, and says what that may mean.
"$memtrace" summary "$dir/empty_preload.jsonl" > "$dir/se.txt" || fail "summary of an empty capture"
grep -q "^integrity: complete .*: 0 events, nothing lost" "$dir/se.txt" || fail "$(cat "$dir/se.txt")"
grep -q "^note: the interposer was loaded but recorded no allocations" "$dir/se.txt" \
  || fail "$(cat "$dir/se.txt")"
"$memtrace" verify --expect-preload "$dir/c.jsonl" > "$dir/v4.txt"
[[ $? -eq 1 ]] || fail "--expect-preload on a runtime capture must fail"
grep -q 'the interposer was not loaded (header source is "runtime"' "$dir/v4.txt" || fail "$(cat "$dir/v4.txt")"

# Recording filters are stated in every verdict, never a bare "exact": with the count the
# trailer carries, or, for a capture written before the interposer counted (no
# "filtered" in its trailer) or cut short, as "filtered".
# Blocks made before tracing started that the interposer could not keep: the capture lacks
# their allocations, so it is inexact and no peak is known.
printf '%s\n' '{"type":"header","format":"memtrace-jsonl","schema_version":1,"source":"preload","interposer":{"library":"/x/libmemtrace_preload.so"}}' \
  '{"type":"alloc","t":1,"thread":1,"addr":"0x10","size":2000,"layer":0,"scope":0,"site":0,"ticket":1}' \
  '{"type":"trailer","complete":true,"integrity":{"complete":true,"exact":true,"events_recorded":1,"events_applied":1,"bounded_epochs":0},"prestart_untracked":3}' \
  > "$dir/untracked.jsonl"
"$memtrace" summary "$dir/untracked.jsonl" > "$dir/su.txt" || fail "summary of a capture with untracked blocks"
grep -qF "integrity: complete, inexact; peaks unknown (blocks made before tracing started were not tracked)" \
  "$dir/su.txt" || fail "untracked blocks' integrity: $(cat "$dir/su.txt")"
"$memtrace" summary --json "$dir/untracked.jsonl" | grep -qF '"high_water_low_bytes":null' \
  || fail "untracked blocks: the JSON peak interval is not null"
# ... and its JSON integrity says what the text says (it kept the recorder's "exact").
"$memtrace" summary --json "$dir/untracked.jsonl" | grep -qF '"integrity":{"complete":true,"exact":false,' \
  || fail "untracked blocks: the JSON integrity: $("$memtrace" summary --json "$dir/untracked.jsonl")"
"$memtrace" verify "$dir/untracked.jsonl" > "$dir/vu.txt"
[[ $? -eq 1 ]] || fail "verify must fail a capture with untracked blocks: $(cat "$dir/vu.txt")"
grep -qF "blocks untracked before start 3" "$dir/vu.txt" || fail "$(cat "$dir/vu.txt")"
"$memtrace" peak "$dir/untracked.jsonl" | grep -qF "unknown: the capture lacks operations" \
  || fail "peak of a capture with untracked blocks: $("$memtrace" peak "$dir/untracked.jsonl")"
# A program that ended by a fatal signal: partial, and the first line says why (it said
# "the trailer reports lost records", with every loss counter 0).
printf '%s\n' '{"type":"header","format":"memtrace-jsonl","schema_version":1,"source":"preload","interposer":{"library":"/x/libmemtrace_preload.so"}}' \
  '{"type":"alloc","t":1,"thread":1,"addr":"0x10","size":2000,"layer":0,"scope":0,"site":0,"ticket":1}' \
  '{"type":"trailer","complete":false,"ended_by":"signal 11","integrity":{"complete":true,"exact":true,"events_recorded":1,"events_applied":1,"bounded_epochs":0}}' \
  > "$dir/segv.jsonl"
"$memtrace" summary "$dir/segv.jsonl" | head -1 | grep -qF "capture PARTIAL (the program ended by signal 11;" \
  || fail "a capture ended by a signal: $("$memtrace" summary "$dir/segv.jsonl" | head -1)"
# A stack as deep as the interposer keeps (--depth) may have lost its outer callers:
# `top --stacks` says so below its outermost frame, and only there.
printf '%s\n' '{"type":"header","format":"memtrace-jsonl","schema_version":1,"source":"preload","interposer":{"library":"/x/libmemtrace_preload.so","stack_depth":2}}' \
  '{"type":"site","id":1,"addr":"0x10","frames":["0x10","0x20"]}' \
  '{"type":"site","id":2,"addr":"0x30","frames":["0x30"]}' \
  '{"type":"alloc","t":1,"thread":1,"addr":"0x1000","size":200,"layer":0,"scope":0,"site":1,"ticket":1}' \
  '{"type":"alloc","t":1,"thread":1,"addr":"0x2000","size":100,"layer":0,"scope":0,"site":2,"ticket":2}' \
  '{"type":"trailer","complete":true}' > "$dir/cut.jsonl"
"$memtrace" top --stacks "$dir/cut.jsonl" > "$dir/cut.txt" || fail "top --stacks of a cut stack"
[[ $(grep -c "stack cut at 2 frames: outer callers not recorded" "$dir/cut.txt") -eq 1 ]] \
  || fail "top --stacks marks cut stacks, once: $(cat "$dir/cut.txt")"
# top --by=live: rows that all hold 0 B live at the end go by bytes allocated.
{
  echo '{"type":"header","format":"memtrace-jsonl","schema_version":1,"source":"runtime"}'
  n=0
  for site in 1 2 3; do
    size=$(( (site * 7 % 5 + 1) * 100 ))
    n=$((n + 1)); echo "{\"type\":\"alloc\",\"t\":1,\"thread\":1,\"addr\":\"0x$((site * 1000))\",\"size\":$size,\"layer\":0,\"scope\":0,\"site\":$site,\"ticket\":$n}"
    n=$((n + 1)); echo "{\"type\":\"free\",\"t\":1,\"thread\":1,\"addr\":\"0x$((site * 1000))\",\"layer\":0,\"of\":$((n - 1)),\"ticket\":$n}"
  done
  echo '{"type":"trailer","complete":true}'
} > "$dir/ties.jsonl"
"$memtrace" top --by=live --json "$dir/ties.jsonl" | python3 -c '
import json, sys
rows = json.load(sys.stdin)["rows"]
allocated = [r["usage"]["allocated_bytes"] for r in rows]
assert len(rows) == 3 and all(r["usage"]["live_bytes"] == 0 for r in rows), rows
assert allocated == sorted(allocated, reverse=True), allocated
' || fail "top --by=live ties: $("$memtrace" top --by=live "$dir/ties.jsonl")"
# An export of a capture cut short still writes what it recorded, and says so on stderr;
# a baseline that cannot be read is named as the baseline.
head -n 200 "$dir/c.jsonl" > "$dir/cut_export.jsonl"
"$memtrace" export --format=folded "$dir/cut_export.jsonl" -o "$dir/cut_export.folded" 2> "$dir/e.txt" \
  || fail "export of a truncated capture: $(cat "$dir/e.txt")"
grep -qF "note: the capture is truncated: the export holds what it recorded" "$dir/e.txt" \
  || fail "export of a truncated capture says nothing: $(cat "$dir/e.txt")"
"$memtrace" report "$dir/c.jsonl" --baseline="$dir/no_such.jsonl" -o "$dir/nb.html" 2> "$dir/e.txt"
[[ $? -eq 2 ]] && grep -qF "the baseline (--baseline): " "$dir/e.txt" \
  || fail "report with a missing baseline: $(cat "$dir/e.txt")"
# diff with --to before --from in one capture: said, not passed over.
"$memtrace" diff --from=event=300 --to=event=100 "$dir/c.jsonl" > "$dir/back.txt" \
  || fail "diff backwards: $(cat "$dir/back.txt")"
grep -qF "note: --to (after event 100) comes before --from (after event 300)" "$dir/back.txt" \
  || fail "diff backwards says nothing: $(head -3 "$dir/back.txt")"
"$memtrace" diff --from=event=100 --to=event=300 "$dir/c.jsonl" | grep -q "comes before" \
  && fail "diff forwards notes a backwards order"
# Events the sink lost on the way to the file: a replay lacks them, so no peak is known.
printf '%s\n' '{"type":"header","format":"memtrace-jsonl","schema_version":1,"source":"runtime"}' \
  '{"type":"alloc","t":1,"thread":1,"addr":"0x10","size":2000,"layer":0,"scope":0,"site":0,"ticket":1}' \
  '{"type":"trailer","complete":false,"sink":{"events_written":1,"event_lines":1,"events_lost":5,"write_errors":0},"integrity":{"complete":true,"exact":true,"events_recorded":6,"events_applied":6,"bounded_epochs":0}}' \
  > "$dir/sink_lost.jsonl"
"$memtrace" summary --json "$dir/sink_lost.jsonl" | grep -qF '"high_water_bytes":null' \
  || fail "a capture whose sink lost events: its JSON peak is not null"
# ... and every line of the summary says so: the first names the loss, the integrity line
# is partial with peaks unknown (it said "complete, exact; peaks exact").
"$memtrace" summary "$dir/sink_lost.jsonl" > "$dir/sink_lost.txt"
head -1 "$dir/sink_lost.txt" | grep -qF "PARTIAL (the trailer reports lost records: events the sink lost 5)" \
  || fail "a capture whose sink lost events: $(head -1 "$dir/sink_lost.txt")"
grep -qF "integrity: PARTIAL, inexact; peaks unknown (records were lost)" "$dir/sink_lost.txt" \
  || fail "a capture whose sink lost events: $(grep integrity: "$dir/sink_lost.txt")"
"$memtrace" summary --json "$dir/sink_lost.jsonl" | grep -qF '"integrity":{"complete":false,"exact":false,' \
  || fail "sink losses: the JSON integrity: $("$memtrace" summary --json "$dir/sink_lost.jsonl")"

filtered_header='{"type":"header","format":"memtrace-jsonl","schema_version":1,"source":"preload","interposer":{"library":"/x/libmemtrace_preload.so","min_size":1000,"sample_interval_bytes":0}}'
filtered_alloc='{"type":"alloc","t":1,"thread":1,"addr":"0x10","size":2000,"layer":0,"scope":0,"site":0,"ticket":1}'
printf '%s\n' "$filtered_header" "$filtered_alloc" \
  '{"type":"trailer","complete":true,"integrity":{"complete":true,"exact":true,"events_recorded":1,"events_applied":1},"filtered":{"min_size":{"allocations":1201336,"bytes":48057344},"sample":{"allocations":0,"bytes":0}}}' \
  > "$dir/filtered.jsonl"
said="--min-size=1000 left out 1201336 allocations (45.8 MiB) of blocks smaller than 1000 bytes"
"$memtrace" summary "$dir/filtered.jsonl" > "$dir/sf.txt" || fail "summary of a filtered capture"
grep -qF "capture complete; filtered: $said" "$dir/sf.txt" || fail "filtered summary: $(cat "$dir/sf.txt")"
grep -qF "integrity: complete, exact for blocks of at least 1000 bytes;" "$dir/sf.txt" \
  || fail "filtered summary's integrity line: $(cat "$dir/sf.txt")"
grep -qF "  filters    $said" "$dir/sf.txt" || fail "filtered summary's filters line: $(cat "$dir/sf.txt")"
"$memtrace" verify "$dir/filtered.jsonl" > "$dir/vf.txt" || fail "verify of a filtered capture: $(cat "$dir/vf.txt")"
grep -qF "nothing lost" "$dir/vf.txt" || fail "filtered verify: $(cat "$dir/vf.txt")"
grep -qF "; filtered: $said" "$dir/vf.txt" || fail "filtered verify: $(cat "$dir/vf.txt")"
for command in summary verify peak top retention coverage; do
  "$memtrace" "$command" --json "$dir/filtered.jsonl" > "$dir/f.json" || fail "$command --json of a filtered capture"
  python3 - "$dir/f.json" <<'PY' || fail "$command --json filters: $(cat "$dir/f.json")"
import json, sys
f = json.load(open(sys.argv[1]))["filters"]
assert f == [{"filter": "min_size", "flag": "--min-size=1000", "setting": "MEMTRACE_MIN_SIZE",
              "value": 1000, "left_out": {"allocations": 1201336, "bytes": 48057344},
              "estimates": False}], f
PY
done
printf '%s\n' "$filtered_header" "$filtered_alloc" '{"type":"trailer","complete":true}' \
  > "$dir/filtered_old.jsonl"
"$memtrace" verify "$dir/filtered_old.jsonl" > "$dir/vfo.txt" || fail "verify of an older filtered capture: $(cat "$dir/vfo.txt")"
grep -qF "nothing lost; filtered: --min-size=1000 left out the allocations of blocks smaller than 1000 bytes (filtered: " \
  "$dir/vfo.txt" || fail "older filtered verify: $(cat "$dir/vfo.txt")"
"$memtrace" summary --json "$dir/filtered_old.jsonl" > "$dir/sfo.json" || fail "summary --json of an older filtered capture"
grep -qF '"left_out":"filtered"' "$dir/sfo.json" || fail "older filtered summary --json: $(cat "$dir/sfo.json")"
printf '%s\n' "$filtered_header" "$filtered_alloc" > "$dir/filtered_cut.jsonl"
"$memtrace" summary "$dir/filtered_cut.jsonl" > "$dir/sfc.txt" || fail "summary of a cut filtered capture"
grep -qF "; filtered: --min-size=1000 left out the allocations" "$dir/sfc.txt" \
  || fail "cut filtered summary: $(cat "$dir/sfc.txt")"

# No progress bar (or anything else) on stderr when stderr is not a terminal.
"$memtrace" summary "$dir/c.jsonl" > /dev/null 2> "$dir/e.txt" || fail "summary"
[[ ! -s "$dir/e.txt" ]] || fail "stderr must stay empty when piped: $(cat "$dir/e.txt")"

# On a terminal, reading a large capture (over 32 MiB, ~160 MB here) draws a progress bar
# on stderr: script(1) gives memtrace a pseudo-terminal and records what it draws.
# --replay: a clean capture's summary is otherwise read from its trailer, with nothing to
# show progress for.
# Exit 3 means the capture is partial (a slow sanitizer build can outrun the sink, which
# drops and counts): it is still a large, readable capture, which is all this needs.
"$workload" --requests=60000 --workers=2 --capture="$dir/big.jsonl" > /dev/null 2>&1
rc=$?
[[ $rc -eq 0 || $rc -eq 3 ]] || fail "workload (large capture) exited $rc"
script -qec "'$memtrace' summary --replay '$dir/big.jsonl' > /dev/null" /dev/null > "$dir/tty.txt" \
  || fail "summary on a terminal exited $?"
grep -q "reading .*big.jsonl: .*% (.* of .*MiB)" "$dir/tty.txt" \
  || fail "no progress bar on a terminal: $(od -c "$dir/tty.txt" | head -3)"
# The summary from the trailer and the replay's say the same, in text and in JSON.
for form in "" "--json"; do
  "$memtrace" summary $form "$dir/big.jsonl" > "$dir/trailer_summary.txt" || fail "summary $form"
  "$memtrace" summary --replay $form "$dir/big.jsonl" > "$dir/replay_summary.txt" \
    || fail "summary --replay $form"
  cmp -s "$dir/trailer_summary.txt" "$dir/replay_summary.txt" \
    || fail "summary $form differs from --replay: $(diff "$dir/trailer_summary.txt" "$dir/replay_summary.txt" | head -5)"
done
rm -f "$dir/big.jsonl"
echo "PASS"
