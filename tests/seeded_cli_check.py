#!/usr/bin/env python3
# Copyright 2026 The memtrace Authors.
#
# seeded_cli_check.py: compares the CLI's --json outputs on seeded_workload's captures with
# the truth the workload computed itself (tests/seeded_workload.cc). One thread, so every
# number must be equal, high-water marks and the peak's composition included.
#
#   seeded_cli_check.py MEMTRACE CAPTURE1 TRUTH1 CAPTURE2 TRUTH2
#
# Prints each mismatch and exits 1 if there is one.
import json
import subprocess
import sys

memtrace, capture1, truth1, capture2, truth2 = sys.argv[1:6]
failures = []
COUNTERS = ["allocated_count", "allocated_bytes", "freed_count", "freed_bytes",
            "live_count", "live_bytes", "high_water_bytes"]


def run(*args):
    out = subprocess.run([memtrace, *args], capture_output=True, text=True)
    if out.returncode != 0:
        failures.append(f"memtrace {' '.join(args)} exited {out.returncode}: {out.stderr}")
        return {}
    return json.loads(out.stdout)


def expect(what, got, want):
    if got != want:
        failures.append(f"{what}: memtrace says {got}, the workload {want}")


def expect_usage(what, got, want):
    for name in COUNTERS:
        expect(f"{what} {name}", got.get(name), want[name])
    # One thread: the peak is exact, its interval a point.
    expect(f"{what} high_water_low_bytes", got.get("high_water_low_bytes"),
           want["high_water_bytes"])
    expect(f"{what} high_water_high_bytes", got.get("high_water_high_bytes"),
           want["high_water_bytes"])


truth = json.load(open(truth1))
after = json.load(open(truth2))

summary = run("summary", "--json", capture1)
expect_usage("summary totals", summary.get("totals", {}), truth["totals"])
paths = {s["path"]: s["usage"] for s in summary.get("scopes", [])}
for path, usage in truth["scopes"].items():
    expect_usage(f"summary scope {path}", paths.get(path, {}), usage)

top = run("top", "--json", "--limit=100", capture1)
sites = {r["addr"]: r for r in top.get("rows", [])}
expect("top rows", sorted(sites), sorted(truth["sites"]))
for addr, usage in truth["sites"].items():
    expect_usage(f"top site {addr}", sites.get(addr, {}).get("usage", {}), usage)

peak = run("peak", "--json", capture1)
expect("peak live_bytes", peak.get("live_bytes"), truth["peak"]["live_bytes"])
expect("peak by_scope", {s["scope"]: s["live_bytes"] for s in peak.get("by_scope", [])},
       truth["peak"]["by_scope"])
scope_peaks = {s["scope"]: s["live_bytes"] for s in peak.get("scope_peaks", [])}
for path, usage in truth["scopes"].items():
    expect(f"peak of scope {path}", scope_peaks.get(path), usage["high_water_bytes"])

retention = run("retention", "--json", capture1)
rows = {r["scope"]: {k: r[k] for k in ("exits", "exits_retaining", "retained_blocks",
                                         "retained_bytes")}
        for r in retention.get("rows", [])}
expect("retention", rows, truth["retention"])

coverage = run("coverage", "--json", capture1)
for name, value in truth["coverage"].items():
    expect(f"coverage {name}", coverage.get(name), value)

diff = run("diff", "--json", capture1, capture2)
changes = {r["path"]: r for r in diff.get("rows", [])}
for path, before, later in [("TOTAL", truth["totals"], after["totals"])] + [
        (p, truth["scopes"][p], after["scopes"][p]) for p in truth["scopes"]]:
    row = changes.get(path, {})
    expect(f"diff {path} live_delta", row.get("live_delta"),
           later["live_bytes"] - before["live_bytes"])
    expect(f"diff {path} high_water_delta", row.get("high_water_delta"),
           later["high_water_bytes"] - before["high_water_bytes"])
    expect(f"diff {path} allocated_delta", row.get("allocated_delta"),
           later["allocated_bytes"] - before["allocated_bytes"])

for f in failures:
    print(f)
sys.exit(1 if failures else 0)
