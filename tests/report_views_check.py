#!/usr/bin/env python3
# Copyright 2026 The memtrace Authors.
"""Captures and checks for tests/report_views_test.sh, with the standard library only.

  report_views_check.py make DIR
      writes DIR/new.jsonl and DIR/old.jsonl, two captures of three threads whose call
      sites 1 and 2 are two stacks that read the same (one innermost frame, two callers),
      and DIR/truth.json: what the report must show, computed here from the events the
      script wrote (per thread, per stack, per scope and per call-site name).
  report_views_check.py check DOM_FILE TRUTH_JSON WHAT [ARG]
      reads the page's <div id="selftest"> from chromium's --dump-dom and checks WHAT:
        thread T    the thread view of T is chosen: the chart by scope reaches T's
                    high-water mark and the call sites add up to T's bytes, and its
                    unfolded rows list its own stacks;
        other       the "other threads" view (the report made with --threads=1);
        stacks      all threads: the unfolded row lists both stacks with their own
                    numbers, which add up to the row;
        functions   all threads: the recursive function's callers and callees weigh each
                    stack once;
        compared    the "Compared with" tables show the growth from old to new.
Exit status 0 when the checks pass; otherwise 1 with the reason.
"""

import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_browser_check import fail, read_selftest  # noqa: E402  (beside this file)

THREADS = (1, 2, 3)
SCOPES = {1: "net", 2: "db"}
# site -> frames, innermost first. Sites 1 and 2 differ only in their caller; site 3 is a
# function that calls itself twice over (its callers and callees count each stack once).
SITES = {1: (0x401000, 0x402000), 2: (0x401000, 0x403000),
         3: (0x404000, 0x404000, 0x404000, 0x402000)}
SAME_NAME = "0x401000"  # how the page names sites 1 and 2 (no module lines: bare addresses)


def capture(path, seed, scale):
    """Writes a capture; returns the truth about it."""
    rng = random.Random(seed)
    lines = [
        '{"type":"header","format":"memtrace-jsonl","schema_version":1,"pid":7,"source":"runtime"}',
        '{"type":"layer","id":0,"name":"cpu"}',
    ]
    for sid, name in SCOPES.items():
        lines.append('{"type":"scope","id":%d,"parent":0,"name":"%s","path":"%s"}' % (sid, name, name))
    for site, frames in SITES.items():
        lines.append('{"type":"site","id":%d,"addr":"0x%x","frames":[%s]}' %
                     (site, frames[0], ",".join('"0x%x"' % f for f in frames)))
    live = {}  # ticket -> (thread, site, scope, size)
    ticket = 0
    t = 1000
    # Per thread: allocated bytes, live now, high-water of its own blocks; per
    # (thread, site): [allocated, allocations, live, live blocks].
    per_thread = {th: {"alloc": 0, "live": 0, "hw": 0} for th in THREADS}
    per_stack = {}
    others = {"live": 0, "hw": 0}  # threads 2 and 3 together (thread 1 allocates the most)
    # All threads: live bytes, the first moment they were highest, site 3's live bytes then.
    total = {"live": 0, "peak": 0, "site3": 0, "site3_at_peak": 0}
    for i in range(600):
        t += 1000
        th = THREADS[i % 3]
        if live and rng.random() < 0.4:
            # A release, by any thread, of a block picked at random.
            of = rng.choice(sorted(live))
            owner, site, scope, size = live.pop(of)
            ticket += 1
            lines.append('{"type":"free","t":%d,"epoch":%d,"thread":%d,"addr":"0x%x","layer":0,'
                         '"of":%d,"ticket":%d}' % (t, i + 1, th, 0x100000 + of * 64, of, ticket))
            per_thread[owner]["live"] -= size
            total["live"] -= size
            if site == 3:
                total["site3"] -= size
            if owner != 1:
                others["live"] -= size
            s = per_stack[(owner, site)]
            s[2] -= size
            s[3] -= 1
            continue
        site = 1 + (i // 3) % 3
        scope = 1 if site != 3 else 2
        size = rng.randint(1, 400) * scale * (4 if th == 1 else 1 if th == 2 else 2)
        ticket += 1
        lines.append('{"type":"alloc","t":%d,"epoch":%d,"thread":%d,"addr":"0x%x","size":%d,'
                     '"layer":0,"scope":%d,"site":%d,"ticket":%d}' %
                     (t, i + 1, th, 0x100000 + ticket * 64, size, scope, site, ticket))
        live[ticket] = (th, site, scope, size)
        p = per_thread[th]
        p["alloc"] += size
        p["live"] += size
        p["hw"] = max(p["hw"], p["live"])
        total["live"] += size
        if site == 3:
            total["site3"] += size
        if total["live"] > total["peak"]:
            total["peak"] = total["live"]
            total["site3_at_peak"] = total["site3"]
        if th != 1:
            others["live"] += size
            others["hw"] = max(others["hw"], others["live"])
        s = per_stack.setdefault((th, site), [0, 0, 0, 0])
        s[0] += size
        s[1] += 1
        s[2] += size
        s[3] += 1
    lines.append('{"type":"trailer","complete":true}')
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    by_scope = {name: {"live": 0, "alloc": 0} for name in SCOPES.values()}
    by_name = {}
    for (th, site), s in per_stack.items():
        name = SAME_NAME if site != 3 else "0x%x" % SITES[3][0]
        scope = SCOPES[1 if site != 3 else 2]
        by_scope[scope]["alloc"] += s[0]
        by_scope[scope]["live"] += s[2]
        n = by_name.setdefault(name, {"live": 0, "alloc": 0, "count": 0})
        n["alloc"] += s[0]
        n["live"] += s[2]
        n["count"] += s[1]
    return {
        "threads": {str(th): {"alloc": p["alloc"], "hw": p["hw"]} for th, p in per_thread.items()},
        "others": {"alloc": sum(per_thread[th]["alloc"] for th in THREADS if th != 1),
                   "hw": others["hw"]},
        "stacks": {"%d/%d" % k: v for k, v in per_stack.items()},
        "by_scope": by_scope,
        "by_name": by_name,
        "site3_at_peak": total["site3_at_peak"],
    }


def make(directory):
    new = capture(directory + "/new.jsonl", 7, 3)
    old = capture(directory + "/old.jsonl", 11, 2)
    truth = {"new": new, "old": old}
    with open(directory + "/truth.json", "w") as f:
        json.dump(truth, f)
    # The thread with the second most bytes: not the one a page would show first anyway.
    ranked = sorted(new["threads"], key=lambda th: -new["threads"][th]["alloc"])
    print(ranked[1])


# The site table's numbers, as the page reads them back: allocated, allocations, live,
# blocks live, temporaries.
ALLOC, COUNT, LIVE, BLOCKS = 0, 1, 2, 3


def check_rows_of(rows, stacks_truth, thread_filter):
    """The unfolded row of SAME_NAME lists sites 1 and 2 with their own numbers."""
    group = [r for r in rows if SAME_NAME + " [2 stacks]" in r["name"]]
    if len(group) != 1:
        fail("expected one row '%s [2 stacks]', found %s" % (SAME_NAME, [r["name"] for r in rows]))
    g = group[0]
    if len(g["stacks"]) != 2 or g["more"] != 0:
        fail("the row lists %d stacks (%d more), expected 2: %s" % (len(g["stacks"]), g["more"], g))
    want = []
    for site in (1, 2):
        total = [0, 0, 0, 0]
        for key, v in stacks_truth.items():
            th, s = map(int, key.split("/"))
            if s == site and thread_filter(th):
                total = [a + b for a, b in zip(total, v)]
        want.append(total)
    got = sorted(s[:4] for s in g["stacks"])
    if got != sorted(want):
        fail("the stacks show %s, the capture has %s" % (got, sorted(want)))
    for col in (ALLOC, COUNT, LIVE, BLOCKS):
        if g["v"][col] != sum(s[col] for s in g["stacks"]):
            fail("column %d of the row (%d) is not the sum of its stacks %s" %
                 (col, g["v"][col], g["stacks"]))


def check(dom_file, truth_file, what, arg=None):
    st = read_selftest(dom_file)
    truth = json.load(open(truth_file))
    new, old = truth["new"], truth["old"]
    rows = st["shown"]["sites"]
    if what in ("thread", "other"):
        want = new["threads"][arg] if what == "thread" else new["others"]
        name = "thread " + arg if what == "thread" else "other threads (2)"
        if st["view"] != name:
            fail("the page shows the view %r, expected %r" % (st["view"], name))
        if st["scope_chart"]["view"] != name or st["scope_chart"]["hw"] != want["hw"]:
            fail("the chart by scope: %s; the blocks of %s peak at %d bytes" %
                 (st["scope_chart"], name, want["hw"]))
        shown = sum(r["v"][ALLOC] for r in rows)
        if shown != want["alloc"]:
            fail("the call sites of %s add up to %d bytes allocated; it allocated %d" %
                 (name, shown, want["alloc"]))
        keep = (lambda th: th == int(arg)) if what == "thread" else (lambda th: th != 1)
        check_rows_of(rows, new["stacks"], keep)
    elif what == "stacks":
        if st["view"] != "all":
            fail("the page shows the view %r, expected all threads" % st["view"])
        shown = sum(r["v"][ALLOC] for r in rows)
        want = sum(v["alloc"] for v in new["threads"].values())
        if shown != want:
            fail("the call sites add up to %d bytes allocated, the capture to %d" % (shown, want))
        check_rows_of(rows, new["stacks"], lambda th: True)
    elif what == "compared":
        scopes = {r["name"]: r["v"] for r in st["shown"]["compared_scopes"]}
        for scope in SCOPES.values():
            if scope not in scopes:
                fail("no row for scope %s in %s" % (scope, list(scopes)))
            v = scopes[scope]  # live before, after, change; high-water x3; allocated x3
            b, a = old["by_scope"][scope], new["by_scope"][scope]
            if v[0:3] != [b["live"], a["live"], a["live"] - b["live"]] or \
               v[6:9] != [b["alloc"], a["alloc"], a["alloc"] - b["alloc"]]:
                fail("scope %s shows %s; live %d -> %d, allocated %d -> %d" %
                     (scope, v, b["live"], a["live"], b["alloc"], a["alloc"]))
        sites = {r["name"]: r["v"] for r in st["shown"]["compared_sites"]}
        for name in new["by_name"]:
            if name not in sites:
                fail("no row for call site %s in %s" % (name, list(sites)))
            v = sites[name]  # live before, after, change; allocated x3; allocations change
            b, a = old["by_name"][name], new["by_name"][name]
            if v != [b["live"], a["live"], a["live"] - b["live"], b["alloc"], a["alloc"],
                     a["alloc"] - b["alloc"], a["count"] - b["count"]]:
                fail("call site %s shows %s; the captures: before %s, after %s" % (name, v, b, a))
        # Sorted by growth in live bytes, largest first.
        changes = [r["v"][2] for r in st["shown"]["compared_sites"]]
        if changes != sorted(changes, reverse=True):
            fail("call sites not sorted by growth: %s" % changes)
    elif what == "functions":
        # All threads, weighed by the bytes live at the peak (the table's first weight): the
        # recursive function of site 3, each of its callers and callees, once per stack.
        live3 = new["site3_at_peak"]
        rec, outer = "0x%x" % SITES[3][0], "0x%x" % SITES[3][-1]
        sides = {s["name"]: s for s in st["functions"]["sides"]}
        if rec not in sides:
            fail("no function %s in %s" % (rec, list(sides)))
        got = sides[rec]
        want = {"total": live3, "callers": {outer: live3, rec: live3}, "callees": {rec: live3}}
        if {k: got[k] for k in want} != want:
            fail("function %s shows %s; its stacks hold %s" % (rec, got, want))
        for s in sides.values():
            for side in ("callers", "callees"):
                if any(w > s["total"] for w in s[side].values()):
                    fail("%s of %s weigh more than its total: %s" % (side, s["name"], s))
    else:
        fail("unknown check " + what)
    print("%s ok" % what)


if __name__ == "__main__":
    commands = {"make": make, "check": check}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        fail("usage: see the docstring")
    commands[sys.argv[1]](*sys.argv[2:])
