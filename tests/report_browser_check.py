#!/usr/bin/env python3
# Copyright 2026 The memtrace Authors.
"""Checks for tests/report_browser_test.sh, with the standard library only.

  report_browser_check.py expected CAPTURE SUMMARY_JSON
      prints the number of series the report must draw, computed from `memtrace summary
      --json` and the capture's trailer (not from the report): the total, one per layer,
      up to 10 scopes plus "other scopes" beyond that, one per census entry (up to 8),
      and the resident set where the trailer's timeline sampled it.
  report_browser_check.py selftest DOM_FILE EXPECTED_SERIES VERDICT
      reads the page's <div id="selftest"> from chromium's --dump-dom and checks that it
      drew without script errors, both charts and the flame graph have a size, and it drew
      EXPECTED_SERIES series.
  report_browser_check.py axes CAPTURE SUMMARY_JSON DOM_FILE [one|two]
      checks the layer chart's axes: the resident set (the trailer's timeline) on a right
      axis of its own, scaled to its high-water mark, when that is more than twice the
      largest layer's or census entry's (from the summary and the trailer); otherwise one
      axis for all. With one or two, the capture must call for that many axes.
  report_browser_check.py duration CAPTURE DOM_FILE
      checks the duration the page states: from the header's start to the trailer's end.
  report_browser_check.py rss-scaled CAPTURE FACTOR OUT
      writes CAPTURE (JSON lines) to OUT with the trailer timeline's resident set
      multiplied by FACTOR.
  report_browser_check.py png PNG WIDTH HEIGHT RGB_HEX [ABSENT_RGB_HEX]
      decodes a screenshot (PNG filters and all) and checks its size, that it is not one
      colour, and that RGB_HEX covers a visible area (the banner's background), and that
      ABSENT_RGB_HEX does not appear at all.
Exit status 0 when the checks pass; otherwise 1 with the reason.
"""

import html
import json
import re
import struct
import sys
import zlib


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def expected(capture, summary_json):
    summary = json.load(open(summary_json))
    trailer = trailer_of(capture)
    census = len(trailer.get("census", [])) if trailer else 0
    scopes = len(summary["scopes"])
    drawn_scopes = min(scopes, 10) + (1 if scopes > 10 else 0)
    # The resident set, where the recorder sampled it (the trailer's timeline).
    resident = 0
    timeline = trailer.get("timeline") if trailer else None
    if timeline and summary["events"] > 0:
        rss = timeline["columns"].index("rss_bytes")
        resident = 1 if any(row[rss] > 0 for row in timeline["rows"]) else 0
        if trailer.get("sink", {}).get("events_past_limit", 0) > 0:
            resident += 1  # the sampled live bytes, drawn past the size limit's cut
    print(1 + len(summary["layers"]) + drawn_scopes + min(census, 8) + resident)


def trailer_of(capture):
    trailer = None
    with open(capture, "rb") as f:
        for line in f:
            if line.startswith(b'{"type":"trailer"'):
                trailer = json.loads(line)
    return trailer


def axes(capture, summary_json, dom_file, want=None):
    summary = json.load(open(summary_json))
    trailer = trailer_of(capture)
    timeline = (trailer or {}).get("timeline") or {}
    if "rss_bytes" not in timeline.get("columns", []) or not timeline.get("rows"):
        fail("%s has no resident set in its trailer's timeline to check the axes by" % capture)
    rss = timeline["columns"].index("rss_bytes")
    rss_max = max(row[rss] for row in timeline["rows"])
    beside = [layer["usage"]["high_water_bytes"] for layer in summary["layers"]]
    beside += [c["high_water_bytes"] for c in trailer.get("census", [])]
    left_max = max([1] + beside)
    chart = read_selftest(dom_file).get("layer_chart")
    if chart is None:
        fail("the page says nothing of the layer chart's axes")
    two = rss_max > 2 * left_max
    if want is not None and want != ("two" if two else "one"):
        fail("the capture's RSS %d and other lines %d want %s axes, the test %s" %
             (rss_max, left_max, "two" if two else "one", want))
    if two:
        if chart["right_max"] != rss_max or chart["left_max"] != left_max:
            fail("RSS %d is more than twice the largest other line (%d): expected a right "
                 "axis to %d and a left one to %d, the page drew %s" %
                 (rss_max, left_max, rss_max, left_max, chart))
    elif chart["right_max"] is not None or chart["left_max"] != max(left_max, rss_max):
        fail("RSS %d is within twice the largest other line (%d): expected one axis to %d, "
             "the page drew %s" % (rss_max, left_max, max(left_max, rss_max), chart))
    print("axes ok: RSS %d, other lines %d, page %s" % (rss_max, left_max, chart))


def duration(capture, dom_file):
    with open(capture, "rb") as f:
        header = json.loads(f.readline())
    want = trailer_of(capture)["finished_unix_ns"] - header["started_unix_ns"]
    got = read_selftest(dom_file).get("duration_ns")
    # The page's numbers are doubles: nanoseconds since 1970 keep about 256 ns.
    if got is None or abs(got - want) > 1000:
        fail("the page's duration is %s ns; the capture ran %d ns" % (got, want))
    print("duration ok: %d ns" % want)


def rss_scaled(capture, factor, out):
    with open(capture, "rb") as f, open(out, "wb") as o:
        for line in f:
            if line.startswith(b'{"type":"trailer"'):
                trailer = json.loads(line)
                timeline = trailer["timeline"]
                rss = timeline["columns"].index("rss_bytes")
                for row in timeline["rows"]:
                    row[rss] = int(row[rss] * float(factor))
                line = (json.dumps(trailer, separators=(",", ":")) + "\n").encode()
            o.write(line)


def read_selftest(dom_file):
    """The page's selftest block from chromium's --dump-dom; fails on script errors."""
    dom = open(dom_file, encoding="utf-8", errors="replace").read()
    # The last one: the page's script, also in the dump, names the element in a comment.
    found = re.findall(r'<div id="selftest">(\{.*?)</div>', dom, re.S)
    if not found:
        fail("the page wrote no selftest block: its script did not run to the end")
    st = json.loads(html.unescape(found[-1]))
    if not st["ok"] or st["errors"]:
        fail("script errors: %s" % st["errors"])
    return st


def selftest(dom_file, expected_series, verdict):
    st = read_selftest(dom_file)
    if st["verdict"] != verdict:
        fail("verdict %s, expected %s" % (st["verdict"], verdict))
    if st["series_drawn"] != int(expected_series) or st["series_expected"] != int(expected_series):
        fail("drew %d of %d series; the capture has %s" %
             (st["series_drawn"], st["series_expected"], expected_series))
    charts = {c["id"]: c for c in st["charts"]}
    for cid in ("chart-scopes", "chart-layers"):
        if cid not in charts or charts[cid]["w"] < 400 or charts[cid]["h"] < 100:
            fail("chart %s missing or too small: %s" % (cid, charts.get(cid)))
    flame = st["flame"] or {}
    if flame.get("w", 0) < 400 or flame.get("h", 0) < 20 or flame.get("frames", 0) < 2:
        fail("flame graph missing or empty: %s" % flame)
    # The functions' self weights add up to the stacks' weight: each stack has one leaf.
    fns = st.get("functions") or {}
    if fns.get("rows", 0) < 1 or fns.get("self_sum") != fns.get("weight"):
        fail("functions table: %s" % fns)
    for table in ("sites", "scopes", "layers", "retention"):
        if st["tables"].get(table, 0) < 1:
            fail("table %s has no rows: %s" % (table, st["tables"]))
        # Pages of 50: every row, but no more than 50 in the table at once.
        pages = st["table_pages"].get(table, {})
        rows = st["tables"][table]
        if pages.get("rows_drawn") != min(rows, 50) or pages.get("pages") != max(1, -(-rows // 50)):
            fail("table %s has %d rows, paged as %s" % (table, rows, pages))
    print("selftest ok: %s" % json.dumps(st))


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def decode_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("%s is not a PNG" % path)
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or color not in (2, 6) or interlace != 0:
                fail("unexpected PNG layout: depth %d colour type %d interlace %d" %
                     (depth, color, interlace))
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + ((a + b) >> 1)) & 255
            elif f == 4:
                line[i] = (line[i] + paeth(a, b, c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def png(path, width, height, present, absent=None):
    w, h, bpp, rows = decode_png(path)
    if (w, h) != (int(width), int(height)):
        fail("screenshot is %dx%d, expected %sx%s" % (w, h, width, height))
    counts = {}
    for row in rows[::2]:  # every other row is plenty, and twice as fast
        for i in range(0, len(row), bpp * 2):
            px = row[i:i + 3]
            counts[px] = counts.get(px, 0) + 1
    if len(counts) < 50:
        fail("screenshot has only %d colours: the page did not draw" % len(counts))
    want = bytes.fromhex(present)
    if counts.get(want, 0) < 2000:
        fail("colour #%s covers only %d sampled pixels" % (present, counts.get(want, 0)))
    if absent and counts.get(bytes.fromhex(absent), 0) > 0:
        fail("colour #%s must not appear (%d sampled pixels)" % (absent, counts[bytes.fromhex(absent)]))
    print("screenshot ok: %dx%d, %d colours, #%s on %d sampled pixels" %
          (w, h, len(counts), present, counts[want]))


if __name__ == "__main__":
    commands = {"expected": expected, "selftest": selftest, "axes": axes, "duration": duration,
                "rss-scaled": rss_scaled, "png": png}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        fail("usage: see the docstring")
    commands[sys.argv[1]](*sys.argv[2:])
