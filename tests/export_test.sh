#!/usr/bin/env bash
# memtrace export, each format checked by its consumer's rules:
#   pprof     `go tool pprof` (Debian's golang-go) reads the profile; its -raw samples sum
#             to the analyzer's totals and its -top total equals inuse bytes; a frame in
#             an address range two module lines share maps to the later one;
#   folded    every line is "frame(;frame)* WEIGHT" as flamegraph.pl/inferno parse it (no
#             Debian package ships a flame-graph tool), and the weights sum to the totals;
#   perfetto  the trace-event format's rules: a JSON object with traceEvents, every event
#             with ph/name/pid/tid/ts, B/E balanced and nested per thread, numeric counters,
#             an instant for the global peak.
set -uo pipefail
memtrace="$1"
workload="$2"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*"; exit 1; }

"$workload" --requests=400 --workers=2 --capture="$dir/c.jsonl" > /dev/null 2>&1 || fail "workload"
# A cut-off capture still has live blocks, so the inuse numbers are not all zero.
head -n 4000 "$dir/c.jsonl" > "$dir/cut.jsonl"
"$memtrace" summary --json "$dir/cut.jsonl" > "$dir/s.json" || fail "summary"
total() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["totals"][sys.argv[2]])' "$dir/s.json" "$1"; }
live_bytes=$(total live_bytes); live_count=$(total live_count)
alloc_bytes=$(total allocated_bytes); alloc_count=$(total allocated_count)
alloc_calls=$(total allocation_calls)
[[ $live_bytes -gt 0 ]] || fail "the cut capture should have live bytes"

# ---- pprof, read by go tool pprof (offline, with a private cache).
"$memtrace" export --format=pprof "$dir/cut.jsonl" -o "$dir/heap.pb.gz" 2> "$dir/e.txt" || fail "export pprof: $(cat "$dir/e.txt")"
gzip -t "$dir/heap.pb.gz" || fail "pprof output is not gzip"
export HOME="$dir/home" GOCACHE="$dir/gocache" GOPATH="$dir/gopath" GOTOOLCHAIN=local GOPROXY=off GOFLAGS=
mkdir -p "$HOME"
go tool pprof -raw "$dir/heap.pb.gz" > "$dir/raw.txt" 2> "$dir/raw.err" || fail "go tool pprof -raw: $(cat "$dir/raw.err")"
grep -q "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes" "$dir/raw.txt" \
  || fail "sample types: $(head -8 "$dir/raw.txt")"
sums=$(awk '/^Samples:/{s=1;next} /^Locations/{s=0} s && /:/ && $1 ~ /^[0-9]+$/ {a+=$1; b+=$2; c+=$3; d+=$4} END {print a, b, c, d}' "$dir/raw.txt")
[[ "$sums" == "$alloc_count $alloc_bytes $live_count $live_bytes" ]] \
  || fail "pprof sample sums '$sums' != analyzer '$alloc_count $alloc_bytes $live_count $live_bytes'"
go tool pprof -top -sample_index=inuse_space -unit=B "$dir/heap.pb.gz" > "$dir/top.txt" 2>&1 || fail "go tool pprof -top: $(cat "$dir/top.txt")"
grep -q " of ${live_bytes}B total" "$dir/top.txt" || fail "pprof -top total: $(cat "$dir/top.txt")"
# Two module lines at one address range (a library unloaded and another loaded there):
# the later one is the frames' mapping, as the symbolizer names them.
python3 - "$dir/cut.jsonl" "$dir/reused.jsonl" <<'PY' || fail "could not write reused.jsonl"
import json, sys
lines = open(sys.argv[1]).read().splitlines(keepends=True)
at = next(i for i, l in enumerate(lines) if json.loads(l).get("type") == "module")
later = json.loads(lines[at])
later["path"] = "/reused/later.so"
later["build_id"] = "0123456789abcdef0123456789abcdef01234567"  # another file
lines.insert(at + 1, json.dumps(later, separators=(",", ":")) + "\n")
open(sys.argv[2], "w").write("".join(lines))
PY
"$memtrace" export --format=pprof "$dir/reused.jsonl" -o "$dir/reused.pb.gz" 2> "$dir/e.txt" \
  || fail "export pprof (reused range): $(cat "$dir/e.txt")"
go tool pprof -raw "$dir/reused.pb.gz" > "$dir/reused.txt" 2>&1 \
  || fail "go tool pprof -raw: $(cat "$dir/reused.txt")"
python3 - "$dir/reused.txt" <<'PY' \
  || fail "a frame in the reused range is not mapped to the later module: $(sed -n '/^Locations/,$p' "$dir/reused.txt" | head -20)"
import re, sys
text = open(sys.argv[1]).read()
locations = text.split("Locations")[1].split("Mappings")[0]
mappings = dict(re.findall(r"^(\d+): \S+ (\S+)", text.split("Mappings")[1], re.M))
# The first location is a frame of the workload's own code, inside the reused range.
first = re.search(r"M=(\d+)", locations)
sys.exit(0 if first and mappings.get(first.group(1)) == "/reused/later.so" else 1)
PY

# ---- folded, both weights.
for w in bytes count; do
  "$memtrace" export --format=folded --weight=$w "$dir/cut.jsonl" > "$dir/f_$w.txt" || fail "export folded $w"
  [[ -s "$dir/f_$w.txt" ]] || fail "folded $w is empty"
  if grep -vqE '^[^;]+(;[^;]+)* [0-9]+$' "$dir/f_$w.txt"; then
    fail "folded lines must be 'frame;frame WEIGHT': $(grep -vE '^[^;]+(;[^;]+)* [0-9]+$' "$dir/f_$w.txt" | head -3)"
  fi
  sum=$(awk '{s += $NF} END {print s}' "$dir/f_$w.txt")
  want=$([[ $w == bytes ]] && echo "$alloc_bytes" || echo "$alloc_calls")
  [[ "$sum" == "$want" ]] || fail "folded $w weights sum to $sum, the analyzer says $want"
done

# ---- perfetto trace-event JSON.
"$memtrace" export --format=perfetto "$dir/c.jsonl" -o "$dir/trace.json" 2> /dev/null || fail "export perfetto"
"$memtrace" export --format=perfetto "$dir/cut.jsonl" -o "$dir/cut_trace.json" 2> /dev/null || fail "export perfetto (cut)"
python3 - "$dir/trace.json" "$dir/cut_trace.json" <<'PY' || fail "perfetto trace does not follow the trace-event rules"
import json, sys
d = json.load(open(sys.argv[1]))
events = d["traceEvents"]
assert isinstance(events, list) and events, "no traceEvents"
stacks, counters, instants, slices = {}, 0, [], 0
for e in events:
    for k in ("ph", "name", "pid", "tid", "ts"):
        assert k in e, f"event without {k}: {e}"
    assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
    ph = e["ph"]
    if ph == "B":
        stacks.setdefault(e["tid"], []).append(e["name"])
        slices += 1
    elif ph == "E":
        st = stacks.get(e["tid"], [])
        assert st and st[-1] == e["name"], f"unbalanced E on tid {e['tid']}: {e}"
        st.pop()
    elif ph == "C":
        counters += 1
        assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values()), e
    elif ph == "i":
        assert e.get("s") in ("g", "p", "t"), e
        instants.append(e["name"])
    else:
        assert ph == "M", f"unexpected ph {ph}"
assert all(not s for s in stacks.values()), "B without E"
assert slices > 0 and counters > 0, (slices, counters)
assert "global peak" in instants, instants
# Leaks (what the cut capture still holds at its end) name their site by function, with
# the address beside it; every thread with slices has a named track.
cut_events = json.load(open(sys.argv[2]))["traceEvents"]
leaks = [e for e in cut_events if e["ph"] == "i" and e["name"].startswith("leak: ")]
assert leaks, "no leak instants in the cut capture"
for e in leaks:
    assert not e["args"]["site"].startswith(("0x", "??")), e
    assert e["args"]["site_addr"].startswith("0x"), e
named = {e["tid"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
assert set(stacks) <= named, (sorted(stacks), sorted(named))
PY
# Slices are on the kernel threads' tracks: every slice's tid is a tid the capture's
# "thread" lines name, and its track says so.
python3 - "$dir/c.jsonl" "$dir/trace.json" <<'PY' || fail "perfetto tracks are not the kernel threads"
import json, sys
tids = {json.loads(l)["tid"] for l in open(sys.argv[1]) if '"type":"thread"' in l}
assert tids, "the capture names no thread"
events = json.load(open(sys.argv[2]))["traceEvents"]
sliced = {e["tid"] for e in events if e["ph"] in "BE"}
assert sliced and sliced <= tids, (sorted(sliced), sorted(tids))
names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
for tid in sliced:
    assert names[tid].endswith("(tid %d)" % tid), (tid, names[tid])
PY

# Counters: the total, each layer and each scope. A block allocated and freed within one
# epoch still shows (the counter takes the epoch's most); the last value is the end's.
# The truth is this script's own replay of the events it writes.
python3 - "$dir/epochs.jsonl" <<'PY' || fail "could not write epochs.jsonl"
import json, random, sys
rng = random.Random(5)
lines = ['{"type":"header","format":"memtrace-jsonl","schema_version":1,"source":"runtime"}',
         '{"type":"layer","id":0,"name":"cpu"}',
         '{"type":"scope","id":0,"parent":0,"name":"(unscoped)","path":"(unscoped)"}',
         '{"type":"scope","id":1,"parent":0,"name":"phase","path":"phase"}']
live, ticket, t = {}, 0, 1_000_000_000
for epoch in range(40):
    t += 2_000_000
    for _ in range(rng.randint(1, 6)):
        ticket += 1
        scope = rng.choice([0, 1])
        size = rng.choice([16, 4096, 50 << 20]) if scope else rng.randint(1, 1000)
        lines.append(json.dumps({"type": "alloc", "t": t, "thread": 1, "addr": hex(0x10000 + ticket * 64),
                                 "size": size, "layer": 0, "scope": scope, "site": 0, "ticket": ticket}))
        live[ticket] = (scope, size)
        if size > 1000 or rng.random() < 0.5:  # freed in the same epoch
            ticket += 1
            of = max(live)
            lines.append(json.dumps({"type": "free", "t": t, "thread": 1, "addr": hex(0x10000 + of * 64),
                                     "layer": 0, "of": of, "ticket": ticket}))
            del live[of]
lines.append('{"type":"trailer","complete":true}')
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
"$memtrace" export --format=perfetto "$dir/epochs.jsonl" -o "$dir/epochs.json" 2> /dev/null || fail "export perfetto (epochs)"
python3 - "$dir/epochs.jsonl" "$dir/epochs.json" <<'PY' || fail "perfetto counters"
import json, sys
cur, high, end = {"[total]": 0, "[layer cpu]": 0, ": phase": 0, ": (unscoped)": 0}, {}, None
blocks = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["type"] == "alloc":
        blocks[r["ticket"]] = (r["scope"], r["size"])
        delta, scope = r["size"], r["scope"]
    elif r["type"] == "free":
        scope, size = blocks.pop(r["of"])
        delta = -size
    else:
        continue
    for k in ("[total]", "[layer cpu]", ": phase" if scope else ": (unscoped)"):
        cur[k] += delta
        high[k] = max(high.get(k, 0), cur[k])
counters = {}
for e in json.load(open(sys.argv[2]))["traceEvents"]:
    if e["ph"] == "C":
        counters.setdefault(e["name"], []).append((e["ts"], e["args"]["bytes"]))
for k in cur:
    name = "live bytes" + (" " if k.startswith("[") else "") + k
    assert name in counters, (name, sorted(counters))
    points = counters[name]
    assert [ts for ts, _ in points] == sorted(ts for ts, _ in points), (name, points)
    assert max(v for _, v in points) == high[k], (name, max(v for _, v in points), high[k])
    assert points[-1][1] == cur[k], (name, points[-1], cur[k])
assert high[": phase"] >= 50 << 20, high
PY

# A scope entered on one ring and exited on another of the same kernel thread (its records
# after its exit hook) is one slice on that thread's track; a ring another thread takes
# ends the slices its last thread left open.
printf '%s\n' '{"type":"header","format":"memtrace-jsonl","schema_version":1,"source":"preload"}' \
  '{"type":"scope","id":1,"parent":0,"name":"dtor","path":"dtor"}' \
  '{"type":"scope","id":2,"parent":0,"name":"left","path":"left"}' \
  '{"type":"thread","thread":1,"tid":500,"name":"w"}' \
  '{"type":"scope_enter","t":10,"epoch":1,"thread":1,"scope":1,"outer":0,"mono_ns":1000}' \
  '{"type":"thread","thread":2,"tid":500,"name":"w"}' \
  '{"type":"scope_exit","t":10,"epoch":1,"thread":2,"scope":1,"outer":0,"mono_ns":5000}' \
  '{"type":"scope_enter","t":10,"epoch":1,"thread":2,"scope":2,"outer":0,"mono_ns":6000}' \
  '{"type":"thread","thread":2,"tid":501,"name":"v"}' \
  '{"type":"scope_enter","t":20,"epoch":2,"thread":2,"scope":1,"outer":0,"mono_ns":9000}' \
  '{"type":"scope_exit","t":20,"epoch":2,"thread":2,"scope":1,"outer":0,"mono_ns":9500}' \
  '{"type":"trailer","complete":true}' > "$dir/rings.jsonl"
"$memtrace" export --format=perfetto "$dir/rings.jsonl" -o "$dir/rings.json" 2> /dev/null || fail "export perfetto (rings)"
python3 - "$dir/rings.json" <<'PY' || fail "perfetto slices across one thread's rings"
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] in "BE"]
got = [(e["ph"], e["name"], e["tid"], round(e["ts"], 3)) for e in ev]
want = [("B", "dtor", 500, 0.0), ("E", "dtor", 500, 4.0), ("B", "left", 500, 5.0),
        ("E", "left", 500, 5.0), ("B", "dtor", 501, 8.0), ("E", "dtor", 501, 8.5)]
assert got == want, got
PY

# ---- errors.
"$memtrace" export "$dir/c.jsonl" 2> "$dir/e.txt"; [[ $? -eq 2 ]] || fail "export without --format must exit 2"
grep -q "which format" "$dir/e.txt" || fail "$(cat "$dir/e.txt")"
"$memtrace" export --format=svg "$dir/c.jsonl" 2> /dev/null; [[ $? -eq 2 ]] || fail "a bad --format must exit 2"
"$memtrace" export --format=pprof "$dir/c.jsonl" 2> /dev/null; [[ $? -eq 2 ]] || fail "pprof without -o must exit 2"
# An -o whose extension names another format's file is refused before anything is
# written, with the name to use instead; a name no format claims is the user's choice.
"$memtrace" export --format=pprof -o "$dir/p.json" "$dir/c.jsonl" 2> "$dir/e.txt"
[[ $? -eq 2 ]] || fail "pprof into .json must exit 2"
[[ ! -e "$dir/p.json" ]] || fail "pprof into .json wrote a file"
grep -qF "names JSON, but --format=pprof writes a gzip-compressed protobuf: name it $dir/p.pb.gz, or give --format=perfetto" \
  "$dir/e.txt" || fail "pprof into .json: $(cat "$dir/e.txt")"
"$memtrace" export --format=perfetto -o "$dir/t.pb.gz" "$dir/c.jsonl" 2> "$dir/e.txt"
[[ $? -eq 2 ]] || fail "perfetto into .pb.gz must exit 2"
"$memtrace" export --format=pprof -o "$dir/t.mtb.zst" "$dir/c.jsonl" 2> "$dir/e.txt"
[[ $? -eq 2 ]] || fail "pprof into a compressed capture's name must exit 2"
"$memtrace" export --format=perfetto -o "$dir/t.trace" "$dir/c.jsonl" 2> "$dir/e.txt" \
  || fail "perfetto into .trace: $(cat "$dir/e.txt")"
"$memtrace" export --format=folded -o /nonexistent/dir/x "$dir/c.jsonl" 2> "$dir/e.txt"; [[ $? -eq 2 ]] || fail "unwritable -o must exit 2"
grep -q "cannot write '/nonexistent/dir/x'" "$dir/e.txt" || fail "$(cat "$dir/e.txt")"
echo "PASS"
