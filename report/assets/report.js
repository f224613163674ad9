// memtrace report: draws the page from the JSON in the element #memtrace-data.
//
// Inlined into every report by report/html_report.cc; plain browser JavaScript with no
// libraries, drawing SVG by hand. docs/report.md describes the data. After drawing, the
// page writes a JSON summary of what it drew (and any script error) into the element #selftest
// for tests/report_browser_test.sh.
"use strict";

(function () {
  const errors = [];
  window.addEventListener("error", (e) => {
    errors.push(String(e.message || e.error || "error") + (e.lineno ? " (line " + e.lineno + ")" : ""));
    writeSelftest();
  });
  const drawn = { series: new Set(), charts: [], layer_chart: null, flame: null, tables: {}, table_pages: {}, functions: null, scope_chart: null };

  // The SVG namespace, as the HTML parser assigns it: the page spells out no URL at all
  // (tests check that it holds none).
  const SVG = (() => { const d = document.createElement("div"); d.innerHTML = "<svg></svg>"; return d.firstChild.namespaceURI; })();
  const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
                   "#b07aa1", "#ff9da7", "#9c755f", "#86bcb6", "#a0cbe8", "#8cd17d"];
  const LAYER_COLORS = ["#1f5fbf", "#d9480f", "#2b8a3e", "#862e9c", "#c2255c", "#0b7285"];
  const CENSUS_COLORS = ["#5c940d", "#e67700", "#5f3dc4", "#0c8599"];

  // ---- formatting ---------------------------------------------------------------------
  function fmtBytes(b) {
    const neg = b < 0;
    let v = Math.abs(b);
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let u = 0;
    while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
    const s = u === 0 ? String(Math.round(v)) : v.toFixed(v >= 100 ? 0 : 1);
    return (neg ? "-" : "") + s + " " + units[u];
  }
  function fmtCount(n) { return Number(n).toLocaleString("en-US"); }
  function fmtNs(ns) {
    const a = Math.abs(ns);
    if (a >= 60e9) return (ns / 60e9).toFixed(1) + " min";
    if (a >= 1e9) return (ns / 1e9).toFixed(a >= 10e9 ? 1 : 2) + " s";
    if (a >= 1e6) return (ns / 1e6).toFixed(a >= 10e6 ? 0 : 1) + " ms";
    if (a >= 1e3) return (ns / 1e3).toFixed(0) + " \u00b5s";
    return Math.round(ns) + " ns";
  }
  function pct(part, whole) { return whole > 0 ? (100 * part / whole).toFixed(1) + "%" : "\u2013"; }

  // ---- DOM helpers --------------------------------------------------------------------
  function el(tag, attrs, ...kids) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") n.className = v;
      else if (k === "text") n.textContent = v;
      else if (k.startsWith("on")) n.addEventListener(k.slice(2), v);
      else n.setAttribute(k, v);
    }
    for (const k of kids) if (k != null) n.append(k);
    return n;
  }
  function svg(tag, attrs) {
    const n = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, v);
    return n;
  }
  function cut(shown, total, what, hint) {
    if (shown >= total) return null;
    return el("span", { class: "cut", text: "showing " + fmtCount(shown) + " of " + fmtCount(total) + " " + what + (hint ? " (" + hint + ")" : "") });
  }

  // ---- data ---------------------------------------------------------------------------
  const data = JSON.parse(document.getElementById("memtrace-data").textContent);
  const app = document.getElementById("app");
  const tl = data.timeline;
  const trailer = data.trailer;
  const header = data.header || {};

  function censusName(label) {
    if (trailer && Array.isArray(trailer.census)) {
      for (const c of trailer.census) if (c.label === label && c.name) return c.name;
    }
    return "census #" + label;
  }
  // Each series' key (for hiding it) and its place in the stack (its colour).
  function prepareTimeline(t, prefix) {
    t.series.forEach((s, i) => {
      s.index = prefix === "" ? i : prefix + i;
      s.stackPos = t.stack.series.indexOf(i);
      if (s.kind === "census") { const n = censusName(s.id); s.name = n.startsWith("census") ? n : "census: " + n; }
    });
  }
  prepareTimeline(tl, "");

  // The thread views (data.threads): the chart by scope and the call-site table follow the
  // one chosen. The page's address may choose one (#thread=ID or #thread=other) and unfold
  // every row that adds up stacks (#expand=all), so that a link shows a view.
  const views = data.threads ? data.threads.views : [];
  views.forEach((v, k) => prepareTimeline(v.timeline, "v" + k + ":"));
  const hash = new URLSearchParams(location.hash.slice(1));
  const viewState = { at: -1, listeners: [] };
  if (hash.has("thread")) {
    const want = hash.get("thread");
    viewState.at = views.findIndex((v) => (v.thread === null ? "other" : String(v.thread)) === want);
  }
  const currentView = () => viewState.at >= 0 ? views[viewState.at] : null;
  const expandAll = hash.get("expand") === "all";

  // "YYYY-MM-DD hh:mm:ss UTC" for a time in unix ns; "\u2013" when there is none.
  function utcTime(unixNs) {
    const d = new Date(Number(unixNs) / 1e6);
    return isNaN(d) ? "\u2013" : d.toISOString().replace("T", " ").slice(0, 19) + " UTC";
  }

  // ---- header, facts, banner ----------------------------------------------------------
  // How long the recording ran: from the sink's opening to its trailer, where both are
  // known; else from the first event to the last (0 when they share one epoch).
  function recordedNs() {
    const from = header.started_unix_ns, to = trailer && trailer.finished_unix_ns;
    return from && to && to > from ? to - from : tl.duration_ns;
  }

  function renderHeader() {
    const cap = data.capture;
    app.append(el("header", { class: "top" },
      el("h1", {}, el("span", { class: "brand", text: "memtrace" }), " report"),
      el("div", { class: "path", text: cap.path })));
    const started = header.started_unix_ns ? utcTime(header.started_unix_ns) : "\u2013";
    const facts = [
      ["pid", String(cap.pid)],
      ["source", header.source || "runtime"],
      ["started", started],
      ["duration", fmtNs(recordedNs())],
      ["events", fmtCount(cap.events)],
      ["peak live", fmtBytes(cap.totals.high_water_bytes) +
        (header.interposer && header.interposer.sample_interval_bytes > 0 ? " (estimate)" : peakBound(cap.totals))],
      ["allocated", fmtBytes(cap.totals.allocated_bytes)],
      ["allocations", fmtCount(cap.totals.allocated_count)],
      ["live at end", fmtBytes(cap.totals.live_bytes)],
      ["blocks live at end", fmtCount(cap.live_blocks)],
    ];
    app.append(el("div", { class: "facts" }, ...facts.map(([k, v]) =>
      el("div", { class: v.length > 12 ? "fact wide" : "fact" }, el("div", { class: "k", text: k }), el("div", { class: "v", text: v })))));
  }

  function counterList(obj) {
    const box = el("div", { class: "counters" });
    for (const [k, v] of Object.entries(obj || {})) {
      if (typeof v === "object") continue;
      const bad = typeof v === "number" && v !== 0 && !/rings|slots|fill|epochs|lag|recorded|applied|written|capacity|bytes/.test(k);
      box.append(el("span", { class: bad ? "nonzero" : "", text: k + " " + (typeof v === "number" ? fmtCount(v) : String(v)) }));
    }
    return box;
  }

  function renderBanner() {
    const v = data.capture.verdict;
    let title, text;
    // Recording filters (--min-size, --sample) left allocations out on purpose: "exact"
    // holds only for what they kept, and the banner says so beside it.
    const exactFor = data.capture.exact_for ? " " + data.capture.exact_for : "";
    if (v === "complete") {
      const exact = trailer && trailer.integrity && trailer.integrity.exact;
      title = "Capture complete";
      text = " \u2014 nothing was lost" + (exact === false ? " (matching was not exact; see the integrity counters)" : ", every release matched exactly" + exactFor) + ".";
    } else if (v === "partial" && trailer && trailer.salvaged) {
      const from = trailer.salvaged.from, cut = trailer.salvaged.cut;
      title = "PARTIAL capture (salvaged)";
      text = " \u2014 salvaged from " + from + ", which " + (cut ? "was cut off while it was written (" + cut + ")" : "ended without a trailer") +
        ": the numbers below are the records written before that; what came after, and what was lost, is not known.";
    } else if (v === "partial") {
      title = "PARTIAL capture";
      text = " \u2014 the trailer reports lost records: the numbers below are what the capture kept, not everything the program did.";
    } else if (v === "damaged") {
      title = "DAMAGED capture";
      text = " \u2014 its bytes differ from those its trailer's checksum was computed over: it was changed after it was written (a byte flipped on disk, a record edited). No number below can be trusted; record it again (memtrace verify says more).";
    } else if (v === "running") {
      title = "INCOMPLETE capture";
      text = " \u2014 still being written: the process writing it is running, and its trailer comes when that process exits. The numbers below cover the events written so far.";
    } else {
      title = "TRUNCATED capture";
      text = " \u2014 there is no trailer (the program or the sink stopped early): the numbers below cover only the events written before it stopped.";
    }
    const b = el("div", { class: "banner " + v, id: "integrity" }, el("strong", { text: title }), text);
    if (trailer) {
      const d = el("details", {}, el("summary", { text: "integrity counters" }));
      if (trailer.integrity) d.append(counterList(trailer.integrity));
      if (trailer.sink) d.append(el("div", { text: "sink" }), counterList(trailer.sink));
      const cpu = trailer.memtrace_cpu_ns;
      if (cpu) {
        d.append(el("div", { class: "own-cpu", text: "memtrace's own CPU: drainer " + fmtNs(cpu.drainer) +
          ", writer " + fmtNs(cpu.writer) + " (not counted: the hot path, on the program's threads)" }));
      }
      b.append(d);
    }
    if (data.capture.unmatched_releases > 0) {
      b.append(el("div", { text: fmtCount(data.capture.unmatched_releases) + " releases had no allocation in the capture." }));
    }
    if (trailer && trailer.prestart_freed > 0) {
      b.append(el("div", { class: "before-start", text: "Before memtrace started (the constructors of the program's libraries run before its own), " +
        fmtCount(trailer.prestart_freed) + " blocks (" + fmtBytes(trailer.prestart_freed_bytes || 0) +
        ") were allocated and released again without being recorded; they are not in these figures." }));
    }
    app.append(b);
    const statements = data.capture.filter_statements || [];
    if (statements.length > 0) {
      app.append(el("div", { class: "banner partial", id: "filters" }, el("strong", { text: "Filtered capture" }),
        " \u2014 the interposer left allocations out, as asked: " + statements.join("; ") + "."));
    }
    if (header.snapshot) {
      app.append(el("div", { class: "banner partial", id: "snapshot" }, el("strong", { text: "Snapshot" }),
        " \u2014 of pid " + header.pid + " at " + utcTime(header.snapshot.taken_unix_ns) + " (memtrace snapshot): its events are the " +
        fmtCount(header.snapshot.blocks) + " blocks live then, one allocation each; allocated, freed and high-water are the " +
        "process's own counts up to then."));
    }
    const interposer = header.interposer || {};
    if (interposer.sample_interval_bytes > 0) {
      app.append(el("div", { class: "banner partial" }, el("strong", { text: "Sampled capture" }),
        " \u2014 the interposer recorded a sample (one per " + fmtBytes(interposer.sample_interval_bytes) +
        " on average); sizes and counts are estimates of the whole program's, each recorded block weighing for those it stands for, as in memtrace summary."));
    }
  }

  function renderNav() {
    const links = [["timeline", "Live bytes over time"], ["peak", "Peak composition"], ["flame", "Flame graph"],
                   ["functions", "Functions"], ["sites", "Top sites"], ["scopes", "Scopes"], ["retention", "Retention"], ["leaks", "Leaks"]];
    if (data.baseline) links.push(["compared-scopes", "Compared"]);
    app.append(el("nav", { class: "toc" }, ...links.map(([id, t]) => el("a", { href: "#" + id, text: t }))));
  }

  // The thread selector, where more than one thread allocated.
  function renderThreads() {
    if (!views.length) return;
    const sel = el("select", { id: "thread-select", "aria-label": "thread" },
      el("option", { value: "-1", text: "all threads (" + fmtCount(data.threads.total) + ")" }),
      ...views.map((v, k) => el("option", { value: String(k), text: v.name + " \u2013 " + fmtBytes(v.allocated) + " allocated" })));
    sel.value = String(viewState.at);
    sel.addEventListener("change", () => {
      viewState.at = Number(sel.value);
      for (const f of viewState.listeners) f();
      writeSelftest();
    });
    app.append(el("div", { class: "controls threads" }, "threads ", sel,
      el("span", { class: "sub", text: "The chart by scope and the top call sites show the blocks the chosen thread allocated, wherever they were freed. " +
        "A thread is the ring its events came from: a later thread may reuse the ring of one that exited, and the kernel threads (tid) that had it are listed where the capture names them." +
        (views.some((v) => v.thread === null) ? " Beyond the " + (views.length - 1) + " threads that allocated the most, the rest are one view." : "") })));
  }

  function panel(id, title, sub) {
    const p = el("section", { class: "panel", id: id }, el("h2", { text: title }));
    if (sub) p.append(el("p", { class: "sub" }, ...[].concat(sub)));
    app.append(p);
    return p;
  }

  // A row of buttons under `p` choosing one of `choices` ([value, name] pairs), after
  // `label`; a click calls pick(value). Returns mark(value), which shows the current one.
  function choices(p, label, list, pick) {
    const seg = el("span", { class: "seg" });
    for (const [value, name] of list) {
      const b = el("button", { text: name, type: "button", "data-choice": value });
      b.addEventListener("click", () => pick(value));
      seg.append(b);
    }
    p.append(el("div", { class: "controls" }, label, seg));
    return (current) => {
      for (const b of seg.children) b.classList.toggle("on", b.getAttribute("data-choice") === current);
    };
  }

  // The two weights of the flame graph and the functions table.
  const kWeights = [["live", "bytes live at the peak"], ["alloc", "bytes allocated"]];
  // The layer chart's resident set gets a right axis when its high-water mark exceeds this
  // many times the largest other line's.
  const kOwnAxisRatio = 2;

  // ---- axes ---------------------------------------------------------------------------
  function niceStep(range, target) {
    const raw = range / Math.max(1, target);
    const mag = Math.pow(10, Math.floor(Math.log10(raw || 1)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * mag >= raw) return m * mag;
    return 10 * mag;
  }
  // Steps that are round in the unit the axis reads in (KiB, MiB, ...), labelled in it.
  function byteTicks(max) {
    let unit = 1;
    while (max / unit >= 1024 && unit < Math.pow(1024, 4)) unit *= 1024;
    const step = niceStep(max / unit, 5) * unit;
    const name = ["B", "KiB", "MiB", "GiB", "TiB"][Math.round(Math.log(unit) / Math.log(1024))];
    const ticks = [];
    for (let v = 0; v <= max * 1.0001; v += step) {
      ticks.push({ v: v, label: v === 0 ? "0" : String(Number((v / unit).toPrecision(4))) + " " + name });
    }
    return ticks;
  }
  function linearTicks(min, max, target) {
    const step = niceStep(max - min, target);
    const ticks = [];
    for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) ticks.push(v);
    return ticks;
  }

  // The last index with xs[i] <= x (-1 if none).
  function lastAtOrBefore(xs, x) {
    let lo = 0, hi = xs.length - 1, ans = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (xs[mid] <= x) { ans = mid; lo = mid + 1; } else hi = mid - 1;
    }
    return ans;
  }

  // ---- the time series charts ---------------------------------------------------------
  // Times are epoch starts: when most points share a time with another (bursts inside one
  // epoch), the event axis shows them and is the default.
  const totalSeries = tl.series.find((s) => s.kind === "total");
  const distinctTimes = new Set(totalSeries ? totalSeries.t : []).size;
  const coarseTime = totalSeries && distinctTimes * 3 < totalSeries.t.length;
  const state = { axis: tl.duration_ns > 0 && !coarseTime ? "t" : "e", hidden: new Set() };
  const xMaxOf = (axis) => axis === "t" ? Math.max(1, tl.duration_ns) : Math.max(1, tl.events);

  function colorOf(s) {
    if (s.kind === "total") return "#1d232b";
    if (s.kind === "layer") return LAYER_COLORS[layerIndex(s) % LAYER_COLORS.length];
    if (s.kind === "census") return CENSUS_COLORS[censusIndex(s) % CENSUS_COLORS.length];
    if (s.kind === "other") return "#b8c0cc";
    if (s.kind === "resident") return "#6c7a89";  // grey: no layer or census colour is
    if (s.kind === "sampled") return "#1d232b";
    return PALETTE[Math.max(0, s.stackPos) % PALETTE.length];
  }
  function layerIndex(s) { return tl.series.filter((x) => x.kind === "layer").indexOf(s); }
  function censusIndex(s) { return tl.series.filter((x) => x.kind === "census").indexOf(s); }

  // A step path through (xs[i], ys[i]) from x=0 (value 0) to xEnd.
  function stepPath(xs, ys, X, Y, xEnd) {
    let d = "M" + X(0).toFixed(1) + "," + Y(0).toFixed(1);
    let prev = 0;
    for (let i = 0; i < xs.length; i++) {
      const x = X(xs[i]).toFixed(1);
      d += "H" + x;
      if (ys[i] !== prev) d += "V" + Y(ys[i]).toFixed(1);
      prev = ys[i];
    }
    d += "H" + X(xEnd).toFixed(1);
    return d;
  }

  function makeChart(container, opts) {
    // opts: height, yMax, draw(g, X, Y, Y2), hover(x) -> {head, rows:[{name,color,value}]};
    // y2Max and y2Label: a second byte axis on the right, for Y2.
    const width = Math.max(560, container.clientWidth || 1000);
    const height = opts.height;
    const m = { l: 72, r: opts.y2Max ? 72 : 16, t: 14, b: 34 };
    const root = svg("svg", { viewBox: "0 0 " + width + " " + height, width: width, height: height, role: "img" });
    const xMax = xMaxOf(state.axis);
    const X = (x) => m.l + (width - m.l - m.r) * (x / xMax);
    const yMax = Math.max(1, opts.yMax) * 1.08;
    const yMin = Math.min(0, opts.yMin || 0);
    const Y = (y) => m.t + (height - m.t - m.b) * (1 - (y - yMin) / (yMax - yMin));
    const grid = svg("g", { class: "grid" }), axis = svg("g", { class: "axis" });
    for (const { v, label } of byteTicks(yMax)) {
      if (v > yMax) continue;
      grid.append(svg("line", { x1: m.l, x2: width - m.r, y1: Y(v), y2: Y(v) }));
      const t = svg("text", { x: m.l - 6, y: Y(v) + 4, "text-anchor": "end" });
      t.textContent = label;
      axis.append(t);
    }
    for (const v of linearTicks(0, xMax, Math.max(3, Math.floor(width / 110)))) {
      axis.append(svg("line", { x1: X(v), x2: X(v), y1: height - m.b, y2: height - m.b + 4 }));
      const t = svg("text", { x: X(v), y: height - m.b + 16, "text-anchor": "middle" });
      t.textContent = state.axis === "t" ? fmtNs(v) : fmtCount(Math.round(v));
      axis.append(t);
    }
    axis.append(svg("line", { x1: m.l, x2: width - m.r, y1: height - m.b, y2: height - m.b }));
    const label = svg("text", { x: width - m.r, y: height - 4, "text-anchor": "end" });
    label.textContent = state.axis === "t" ? "time since the first event" : "event";
    axis.append(label);
    let Y2 = null;
    if (opts.y2Max) {
      const y2Max = opts.y2Max * 1.08;
      Y2 = (y) => m.t + (height - m.t - m.b) * (1 - y / y2Max);
      for (const { v, label } of byteTicks(y2Max)) {
        if (v > y2Max) continue;
        axis.append(svg("line", { x1: width - m.r, x2: width - m.r + 4, y1: Y2(v), y2: Y2(v) }));
        const t = svg("text", { x: width - m.r + 6, y: Y2(v) + 4, "text-anchor": "start" });
        t.textContent = label;
        axis.append(t);
      }
      axis.append(svg("line", { x1: width - m.r, x2: width - m.r, y1: m.t, y2: height - m.b }));
      const name = svg("text", { x: width - 4, y: m.t - 2, "text-anchor": "end" });
      name.textContent = opts.y2Label;
      axis.append(name);
    }
    root.append(grid, axis);
    const g = svg("g", {});
    root.append(g);
    opts.draw(g, X, Y, Y2);

    const cursor = svg("line", { class: "cursor", y1: m.t, y2: height - m.b, visibility: "hidden" });
    root.append(cursor);
    const tip = el("div", { class: "tip" });
    container.append(root, tip);
    root.addEventListener("mousemove", (ev) => {
      const r = root.getBoundingClientRect();
      const px = (ev.clientX - r.left) * (width / r.width);
      if (px < m.l || px > width - m.r) { cursor.setAttribute("visibility", "hidden"); tip.style.display = "none"; return; }
      const x = (px - m.l) / (width - m.l - m.r) * xMax;
      cursor.setAttribute("x1", px); cursor.setAttribute("x2", px);
      cursor.setAttribute("visibility", "visible");
      const h = opts.hover(x);
      tip.replaceChildren(el("div", { class: "head", text: h.head }),
        ...h.rows.map((row) => el("div", { class: "row" },
          el("span", { class: "n" }, el("span", { class: "dot", style: "background:" + row.color }), row.name),
          el("span", { class: "val", text: row.value }))));
      tip.style.display = "block";
      const left = ev.clientX - r.left + 14;
      tip.style.left = Math.min(left, r.width - tip.offsetWidth - 4) + "px";
      tip.style.top = Math.max(0, ev.clientY - r.top - tip.offsetHeight / 2) + "px";
    });
    root.addEventListener("mouseleave", () => { cursor.setAttribute("visibility", "hidden"); tip.style.display = "none"; });
    drawn.charts.push({ id: container.id, w: Math.round(root.getBoundingClientRect().width), h: Math.round(root.getBoundingClientRect().height) });
    return { X, Y, root };
  }

  function xsOf(s) { return state.axis === "t" ? s.t : s.e; }

  function headAt(x) {
    return state.axis === "t" ? "at " + fmtNs(x) : "after event " + fmtCount(Math.round(x));
  }

  function hwMarker(g, s, X, Y, color, label, anchorRight) {
    if (!s.hw || s.hw[0] === 0) return;
    const x = X(state.axis === "t" ? s.hw[1] : s.hw[0]), y = Y(s.hw[2]);
    const grp = svg("g", { class: "hw" });
    grp.append(svg("line", { x1: x, x2: x, y1: y, y2: Y(0), stroke: color, "stroke-dasharray": "2 3", "stroke-width": 1 }));
    grp.append(svg("circle", { cx: x, cy: y, r: 3.5, fill: "#fff", stroke: color, "stroke-width": 2 }));
    if (label) {
      const right = anchorRight || x > X(xMaxOf(state.axis)) * 0.7;
      // Move the label down until it overlaps no label placed before it on this chart.
      const w = label.length * 6.3;
      const x0 = right ? x - 6 - w : x + 6;
      let ly = Math.max(12, y - 6);
      const boxes = g.labelBoxes || (g.labelBoxes = []);
      for (let tries = 0; tries < 20 && boxes.some((b) => x0 < b.x1 && x0 + w > b.x0 && Math.abs(ly - b.y) < 13); tries++) ly += 13;
      boxes.push({ x0: x0, x1: x0 + w, y: ly });
      const t = svg("text", { x: right ? x - 6 : x + 6, y: ly, "text-anchor": right ? "end" : "start", fill: color });
      t.textContent = label;
      grp.append(t);
    }
    g.append(grp);
  }

  function legend(container, list, onToggle) {
    const box = el("div", { class: "legend" });
    for (const s of list) {
      const item = el("span", { class: "item" + (state.hidden.has(s.index) ? " off" : ""), title: "click to hide or show" },
        el("span", { class: "sw" + (s.kind === "layer" || s.kind === "census" || s.kind === "total" || s.kind === "resident" || s.kind === "sampled" ? " line" : ""), style: "background:" + colorOf(s) }),
        s.name, el("span", { class: "hwv", text: "high-water " + fmtBytes(s.hw[2]) }));
      item.addEventListener("click", () => {
        if (state.hidden.has(s.index)) state.hidden.delete(s.index); else state.hidden.add(s.index);
        onToggle();
      });
      box.append(item);
    }
    container.append(box);
  }

  function renderTimeline() {
    const nScopes = tl.scopes_total;
    const sub = ["Live bytes after each event. ",
      tl.events_per_bucket > 1
        ? "Downsampled: " + fmtCount(tl.events) + " events in buckets of " + fmtCount(tl.events_per_bucket) +
          "; each bucket keeps its minimum, maximum and last value, so peaks survive. "
        : "Every event is drawn. ",
      "Times are the drainer's epochs (2 ms apart by default, up to 16 ms in a quiet spell)" +
        (coarseTime ? "; most points of this capture share their epoch with others, so the x axis shows events unless you choose time. " : ". ")];
    const c = cut(tl.scopes_drawn, nScopes, "scopes", "the rest are stacked as \u201cother scopes\u201d");
    if (c) sub.push(c);
    const c2 = cut(tl.census_drawn, tl.census_total, "census entries");
    if (c2) sub.push(" ", c2);
    const p = panel("timeline", "Live bytes over time", sub);
    const markAxis = choices(p, "x axis ", [["t", "time"], ["e", "events"]],
      (axis) => { state.axis = axis; draw(); });
    const body = el("div", {});
    p.append(body);

    const lines = tl.series.filter((s) => s.kind === "layer" || s.kind === "census" || s.kind === "resident" || s.kind === "sampled");
    const resident = lines.some((s) => s.kind === "resident");
    const sampled = lines.some((s) => s.kind === "sampled");

    function draw() {
      markAxis(state.axis);
      body.replaceChildren();
      drawn.series.clear();
      drawn.charts.length = 0;

      // Stacked by scope, with the total on top: the whole capture's, or a thread view's.
      const view = currentView();
      const src = view ? view.timeline : tl;
      const stackSeries = src.stack.series.map((i) => src.series[i]);
      const total = src.series.find((s) => s.kind === "total");
      drawn.scope_chart = { view: view ? view.name : "all", hw: total.hw[2] };
      body.append(el("h3", { text: "By scope (stacked) and total" + (view ? ": the blocks of " + view.name : "") }));
      const c1 = el("div", { class: "chart", id: "chart-scopes" });
      body.append(c1);
      const sx = state.axis === "t" ? src.stack.t : src.stack.e;
      const visible = stackSeries.filter((s) => !state.hidden.has(s.index));
      makeChart(c1, {
        height: 320,
        yMax: total.hw[2],
        draw(g, X, Y) {
          const xEnd = xMaxOf(state.axis);
          const base = new Array(sx.length).fill(0);
          for (const s of visible) {
            const vals = src.stack.v[s.stackPos];
            const top = vals.map((v, j) => base[j] + v);
            // Area: the step line of the top edge, back along the bottom edge.
            let d = stepPath(sx, top, X, Y, xEnd);
            const back = [];
            let prevY = Y(base[sx.length - 1] || 0).toFixed(1);
            back.push("V" + prevY);
            for (let j = sx.length - 1; j >= 0; j--) {
              back.push("H" + X(sx[j]).toFixed(1));
              const y = Y(j > 0 ? base[j - 1] : 0).toFixed(1);
              if (y !== prevY) back.push("V" + y);
              prevY = y;
            }
            back.push("H" + X(0).toFixed(1) + "Z");
            d += back.join("");
            g.append(svg("path", { d: d, fill: colorOf(s), "fill-opacity": 0.78, stroke: "none", "data-series": s.index }));
            drawn.series.add(s.index);
            for (let j = 0; j < top.length; j++) base[j] = top[j];
          }
          if (!state.hidden.has(total.index)) {
            g.append(svg("path", { d: stepPath(xsOf(total), total.v, X, Y, xEnd), fill: "none", stroke: colorOf(total), "stroke-width": 1.4, "data-series": total.index }));
            drawn.series.add(total.index);
            hwMarker(g, total, X, Y, "#c92a2a", (view ? "high-water of " + view.name + " " : "global high-water ") + fmtBytes(total.hw[2]));
          }
          // Scope marks only where they can be seen: 5% of the global peak or more.
          for (const s of visible) if (s.kind === "scope" && s.hw[2] >= 0.05 * total.hw[2]) hwMarker(g, s, X, Y, colorOf(s), null);
        },
        hover(x) {
          const rows = [];
          const j = lastAtOrBefore(sx, x);
          rows.push({ name: "total", color: colorOf(total), value: fmtBytes(valueAt(total, x)) });
          for (const s of stackSeries.slice().reverse()) {
            rows.push({ name: s.name, color: colorOf(s), value: fmtBytes(j >= 0 ? src.stack.v[s.stackPos][j] : 0) });
          }
          return { head: headAt(x), rows };
        },
      });
      legend(body, [total].concat(stackSeries), draw);

      // One line per layer and census entry.
      body.append(el("h3", { text: "By layer, and census (reported by the program)" +
        (resident ? ", beside the process's resident set (RSS, sampled by the recorder)" : "") +
        (sampled ? "; the size limit cut the events, and the recorder's samples of live bytes go on past the cut" : "") }));
      const c2 = el("div", { class: "chart", id: "chart-layers" });
      body.append(c2);
      const shown = lines.filter((s) => !state.hidden.has(s.index));
      // The resident set takes an axis of its own on the right where it is more than
      // kOwnAxisRatio times the largest line beside it (a small program's RSS is mostly
      // code and libraries): on one axis it would flatten every layer near zero.
      const onLeft = shown.filter((s) => s.kind !== "resident");
      const rss = shown.filter((s) => s.kind === "resident");
      const leftMax = Math.max(1, ...onLeft.map((s) => s.hw[2]));
      const rssMax = Math.max(0, ...rss.map((s) => s.hw[2]));
      const yMin = Math.min(0, ...shown.map((s) => Math.min(0, ...s.v)));
      // (Both axes start at zero: a census entry below it keeps one axis.)
      const ownAxis = onLeft.length > 0 && yMin === 0 && rssMax > kOwnAxisRatio * leftMax;
      const yMax = ownAxis ? leftMax : Math.max(leftMax, rssMax);
      drawn.layer_chart = { left_max: yMax, right_max: ownAxis ? rssMax : null };
      makeChart(c2, {
        height: 260,
        yMax: yMax,
        yMin: yMin,
        y2Max: ownAxis ? rssMax : 0,
        y2Label: "RSS \u2192",
        draw(g, X, Y, Y2) {
          const xEnd = xMaxOf(state.axis);
          const yOf = (s) => (ownAxis && s.kind === "resident" ? Y2 : Y);
          for (const s of shown) {
            const attrs = { d: stepPath(xsOf(s), s.v, X, yOf(s), xEnd), fill: "none", stroke: colorOf(s), "stroke-width": 1.6, "data-series": s.index };
            if (s.kind === "census") attrs["stroke-dasharray"] = "5 3";
            if (s.kind === "resident" || s.kind === "sampled") attrs["stroke-dasharray"] = "2 2";
            g.append(svg("path", attrs));
            drawn.series.add(s.index);
          }
          for (const s of shown) {
            const right = ownAxis && s.kind === "resident";
            hwMarker(g, s, X, yOf(s), colorOf(s), s.name + " " + fmtBytes(s.hw[2]) + (right ? " (right axis)" : ""));
          }
        },
        hover(x) {
          return { head: headAt(x), rows: lines.map((s) => ({ name: s.name, color: colorOf(s), value: fmtBytes(valueAt(s, x)) })) };
        },
      });
      legend(body, lines, draw);
      writeSelftest();
    }
    draw();
    viewState.listeners.push(draw);
    let width = p.clientWidth;
    window.addEventListener("resize", () => { if (Math.abs(p.clientWidth - width) > 40) { width = p.clientWidth; draw(); } });
  }

  function valueAt(s, x) {
    const i = lastAtOrBefore(xsOf(s), x);
    return i >= 0 ? s.v[i] : 0;
  }

  // ---- peak composition ---------------------------------------------------------------
  function bars(title, table, total) {
    const box = el("div", {}, el("h3", { text: title }));
    const c = cut(table.shown, table.total, "rows, the largest", "memtrace peak --limit=0 lists them all");
    if (c) box.append(c);
    const list = el("div", { class: "bars" });
    if (table.rows.length === 0) list.append(el("div", { class: "empty", text: "nothing was live" }));
    const max = table.rows.length ? table.rows[0][1] : 1;
    for (const [name, bytes] of table.rows) {
      list.append(el("div", { class: "bar", title: name },
        el("div", { class: "name" }, el("div", { class: "fill", style: "width:" + (100 * bytes / max).toFixed(1) + "%" }), el("span", { text: name })),
        el("div", { class: "num", text: fmtBytes(bytes) }),
        el("div", { class: "pct", text: pct(bytes, total) })));
    }
    box.append(list);
    return box;
  }

  // A high-water mark's interval (the capture's trailer): exact, the range that holds the
  // true peak, or none (a capture written before memtrace bounded peaks).
  function peakBound(u) {
    if (u.high_water_high_bytes === null || u.high_water_high_bytes === undefined) return " (no bound)";
    if (u.high_water_low_bytes === u.high_water_high_bytes) return " (exact)";
    return " (true peak " + fmtBytes(u.high_water_low_bytes) + " \u2013 " + fmtBytes(u.high_water_high_bytes) + ")";
  }

  function renderPeak() {
    const pk = data.peak;
    const p = panel("peak", "Peak composition",
      header.snapshot ? "What was live at the snapshot: " + fmtBytes(pk.live) + ". The process's high-water mark, " +
        fmtBytes(data.capture.totals.high_water_bytes) + ", came before it; what held it then is not in a snapshot." :
      pk.event > 0 ? "What held memory at the global high-water moment: " + fmtBytes(pk.live) + " live after event " +
        fmtCount(pk.event) + " (" + fmtNs(pk.t) + " after the first event)." +
        peakBound(data.capture.totals).replace(" (", " The true peak: ").replace(/\)$/, ".") : "The capture allocated nothing.");
    p.append(el("div", { class: "cols" }, bars("By scope", pk.by_scope, pk.live), bars("By call site", pk.by_site, pk.live)));
  }

  // ---- flame graph --------------------------------------------------------------------
  function renderFlame() {
    const fl = data.flame;
    const sub = [fl.has_stacks ? "Allocation call stacks, callers above callees. " :
      "This capture has no call stacks (only return addresses), so each site is one frame. ",
      "Click a frame to zoom in; click the top bar to zoom out. "];
    const c = cut(fl.sites_shown, fl.sites_total, "call stacks", "the rest as \u201c(other call stacks)\u201d");
    if (c) sub.push(c);
    const p = panel("flame", "Flame graph", sub);
    const metricState = { metric: "live", focus: null };
    const markWeight = choices(p, "weight ", kWeights,
      (m) => { metricState.metric = m; metricState.focus = null; draw(); });
    const box = el("div", { class: "flame", id: "flame-graph" });
    p.append(box);

    // The tree, merged by frame name from the outermost caller in.
    const root = { name: "all", live: 0, alloc: 0, kids: new Map(), parent: null };
    for (const st of fl.stacks) {
      let node = root;
      root.live += st.live; root.alloc += st.alloc;
      for (const f of st.f) {
        let k = node.kids.get(f);
        if (!k) { k = { name: fl.names[f], live: 0, alloc: 0, kids: new Map(), parent: node }; node.kids.set(f, k); }
        k.live += st.live; k.alloc += st.alloc;
        node = k;
      }
    }
    function hue(name) {
      let h = 0;
      for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
      return "hsl(" + (12 + h % 38) + "," + (62 + h % 20) + "%," + (58 + (h >> 8) % 14) + "%)";
    }
    function draw() {
      markWeight(metricState.metric);
      box.replaceChildren();
      const metric = metricState.metric;
      const focus = metricState.focus || root;
      if (focus[metric] <= 0) {
        box.append(el("div", { class: "empty", text: metric === "live" ? "Nothing was live at the peak." : "Nothing was allocated." }));
        drawn.flame = { w: 0, h: 0, frames: 0 };
        writeSelftest();
        return;
      }
      const width = Math.max(560, box.clientWidth || 1000);
      const rowH = 20;
      const rects = [];
      let depthMax = 0;
      // The focus's ancestors as full-width bars, then its subtree.
      const chain = [];
      for (let n = focus; n; n = n.parent) chain.unshift(n);
      chain.forEach((n, d) => rects.push({ n, x: 0, w: width, d }));
      (function layout(n, x, w, d) {
        depthMax = Math.max(depthMax, d);
        let cx = x;
        const kids = [...n.kids.values()].filter((k) => k[metric] > 0).sort((a, b) => b[metric] - a[metric]);
        for (const k of kids) {
          const kw = w * k[metric] / n[metric];
          if (kw >= 0.8) { rects.push({ n: k, x: cx, w: kw, d: d + 1 }); layout(k, cx, kw, d + 1); }
          cx += kw;
        }
      })(focus, 0, width, chain.length - 1);
      const height = (depthMax + 1) * rowH + 4;
      const root_ = svg("svg", { viewBox: "0 0 " + width + " " + height, width: width, height: height });
      const tip = el("div", { class: "tip" });
      for (const r of rects) {
        const g = svg("g", {});
        const rect = svg("rect", { x: r.x.toFixed(1), y: r.d * rowH, width: Math.max(0.5, r.w - 0.5).toFixed(1), height: rowH - 1, rx: 2,
          fill: r.n === root ? "#c9d3e0" : hue(r.n.name) });
        g.append(rect);
        if (r.w > 34) {
          const t = svg("text", { x: (r.x + 4).toFixed(1), y: r.d * rowH + 14 });
          const chars = Math.floor((r.w - 8) / 6.6);
          const label = r.n === root ? "all (" + fmtBytes(root[metric]) + ")" : r.n.name;
          t.textContent = label.length > chars ? label.slice(0, Math.max(1, chars - 1)) + "\u2026" : label;
          g.append(t);
        }
        g.addEventListener("click", () => { metricState.focus = r.n === focus ? r.n.parent : r.n; draw(); });
        g.addEventListener("mousemove", (ev) => {
          const b = box.getBoundingClientRect();
          tip.replaceChildren(el("div", { class: "head", text: r.n.name }),
            el("div", { class: "row" }, el("span", { text: metric === "live" ? "live at the peak" : "allocated" }), el("span", { class: "val", text: fmtBytes(r.n[metric]) })),
            el("div", { class: "row" }, el("span", { text: "share of all" }), el("span", { class: "val", text: pct(r.n[metric], root[metric]) })),
            el("div", { class: "row" }, el("span", { text: metric === "live" ? "allocated" : "live at the peak" }), el("span", { class: "val", text: fmtBytes(r.n[metric === "live" ? "alloc" : "live"]) })));
          tip.style.display = "block";
          tip.style.left = Math.min(ev.clientX - b.left + 12, b.width - tip.offsetWidth - 4) + "px";
          tip.style.top = (ev.clientY - b.top + 14) + "px";
        });
        g.addEventListener("mouseleave", () => { tip.style.display = "none"; });
        root_.append(g);
      }
      box.append(root_, tip);
      const bb = root_.getBoundingClientRect();
      drawn.flame = { w: Math.round(bb.width), h: Math.round(bb.height), frames: rects.length };
      writeSelftest();
    }
    draw();
  }

  // ---- functions: bottom-up, callers and callees ------------------------------------------
  // From the flame graph's stacks: each function's self weight (the stacks it is the
  // innermost frame of) and total weight (the stacks it is in, once each), largest self
  // first; a row's callers and callees are the frames next to it in those stacks.
  function renderFunctions() {
    const fl = data.flame;
    const p = panel("functions", "Functions (bottom-up)",
      ["Each function with the bytes of the call stacks it allocated in itself (self, the innermost frame) and of every stack it is on (total). ",
       "Click a row for its callers and callees. The stacks are the flame graph's."]);
    const state = { metric: "live", selected: -1 };
    const markWeight = choices(p, "weight ", kWeights, (m) => { state.metric = m; draw(); });
    const box = el("div", {});
    p.append(box);
    function stats(metric) {
      const fns = new Map();  // name index -> {self, total, callers: Map, callees: Map}
      const of = (f) => { let s = fns.get(f); if (!s) { s = { self: 0, total: 0, callers: new Map(), callees: new Map() }; fns.set(f, s); } return s; };
      let all = 0;
      for (const st of fl.stacks) {
        const w = st[metric];
        if (!w || !st.f.length) continue;
        all += w;
        // Once per stack, as the total: a recursive function is its own caller at every
        // level, and a stack's weight is no more of it for that.
        const seen = new Set(), pairs = new Set();
        const add = (m, g, key) => { if (!pairs.has(key)) { pairs.add(key); m.set(g, (m.get(g) || 0) + w); } };
        st.f.forEach((f, i) => {
          const s = of(f);
          if (!seen.has(f)) { s.total += w; seen.add(f); }
          if (i > 0) add(s.callers, st.f[i - 1], "r" + f + "," + st.f[i - 1]);
          if (i + 1 < st.f.length) add(s.callees, st.f[i + 1], "e" + f + "," + st.f[i + 1]);
        });
        of(st.f[st.f.length - 1]).self += w;
      }
      return { fns, all };
    }
    function draw() {
      markWeight(state.metric);
      const { fns, all } = stats(state.metric);
      const rows = [...fns.entries()].sort((a, b) => b[1].self - a[1].self || b[1].total - a[1].total);
      let selfSum = 0;
      for (const [, s] of rows) selfSum += s.self;
      const named = (m) => Object.fromEntries([...m.entries()].map(([g, w]) => [fl.names[g], w]));
      drawn.functions = { rows: rows.length, self_sum: selfSum, weight: all,
        sides: rows.slice(0, 20).map(([f, s]) => ({ name: fl.names[f], total: s.total, callers: named(s.callers), callees: named(s.callees) })) };
      box.replaceChildren();
      if (!rows.length) { box.append(el("div", { class: "empty", text: "No call stacks." })); writeSelftest(); return; }
      const tbody = el("tbody", {});
      for (const [f, s] of rows.slice(0, 200)) {
        const tr = el("tr", { class: f === state.selected ? "on" : "" },
          el("td", { class: "text", text: fl.names[f], title: fl.names[f] }),
          el("td", { text: fmtBytes(s.self) }), el("td", { text: pct(s.self, all) }),
          el("td", { text: fmtBytes(s.total) }), el("td", { text: pct(s.total, all) }));
        tr.addEventListener("click", () => { state.selected = state.selected === f ? -1 : f; draw(); });
        tbody.append(tr);
      }
      const head = el("tr", {}, el("th", { class: "text", text: "function" }), el("th", { text: "self" }), el("th", { text: "self %" }),
        el("th", { text: "total" }), el("th", { text: "total %" }));
      box.append(el("div", { class: "table-wrap" }, el("table", { class: "data" }, el("thead", {}, head), tbody)));
      if (rows.length > 200) box.append(el("p", { class: "sub", text: "The 200 functions with the most self bytes of " + fmtCount(rows.length) + "." }));
      const sel = fns.get(state.selected);
      if (sel) {
        const side = (title, m) => {
          const list = [...m.entries()].sort((a, b) => b[1] - a[1]);
          return el("div", {}, el("h3", { text: title + " of " + fl.names[state.selected] }),
            list.length ? el("table", { class: "data" }, el("tbody", {}, ...list.map(([g, w]) =>
              el("tr", {}, el("td", { class: "text", text: fl.names[g] }), el("td", { text: fmtBytes(w) }))))) :
              el("div", { class: "empty", text: "none in these stacks" }));
        };
        box.append(side("Callers", sel.callers), side("Callees", sel.callees));
      }
      writeSelftest();
    }
    draw();
  }

  // ---- tables -------------------------------------------------------------------------
  // columns: [title, kind] with kind "text", "bytes", "count", or "delta" and "dcount"
  // (signed changes: growth is marked).
  // The rows are paged, 50 at a time, and a filter keeps the rows whose text columns
  // contain what is typed (any case). A call-site row that adds up several stacks carries
  // them after its columns ({total, rows}: each stack's frames as indices into
  // data.stack_frames, then its allocated bytes, allocations, live bytes, live blocks and
  // temporaries) and unfolds to them. Returns load(t), which shows another table's rows.
  const kStackColumns = [0, 3, 4, 5, 6, 7];  // where a stack's fields go among the columns
  function table(id, title, sub, t, columns, emptyText) {
    const p = panel(id, title, sub);
    const cutBox = el("p", { class: "sub" });
    const empty = el("div", { class: "empty", text: emptyText });
    p.append(cutBox, empty);
    let rows = [];
    const pageSize = 50;
    let sortCol = -1, asc = false, page = 0, query = "";
    const expanded = new Set();
    const thead = el("thead", {}), tbody = el("tbody", {});
    const tr = el("tr", {});
    columns.forEach(([name, kind], i) => {
      const th = el("th", { class: kind === "text" ? "text" : "", text: name, title: "sort" });
      th.addEventListener("click", () => {
        asc = sortCol === i ? !asc : kind === "text";
        sortCol = i;
        rows.sort((a, b) => (a[i] < b[i] ? -1 : a[i] > b[i] ? 1 : 0) * (asc ? 1 : -1));
        for (const h of tr.children) h.classList.remove("sorted", "asc");
        th.classList.add("sorted");
        if (asc) th.classList.add("asc");
        page = 0;
        fill();
      });
      tr.append(th);
    });
    thead.append(tr);
    const filter = el("input", { type: "search", class: "filter", placeholder: "filter rows", "aria-label": "filter " + title });
    const prev = el("button", { type: "button", text: "\u2190 previous" });
    const next = el("button", { type: "button", text: "next \u2192" });
    const status = el("span", { class: "sub" });
    filter.addEventListener("input", () => { query = filter.value.toLowerCase(); page = 0; fill(); });
    prev.addEventListener("click", () => { page -= 1; fill(); });
    next.addEventListener("click", () => { page += 1; fill(); });
    const matches = (r) => columns.some(([, kind], i) => kind === "text" && String(r[i]).toLowerCase().includes(query));
    function cell(kind, v) {
      if (kind === "text") return el("td", { class: "text", title: v, text: v });
      const text = kind === "bytes" ? fmtBytes(v) : kind === "count" ? fmtCount(v) :
        kind === "delta" ? (v > 0 ? "+" : "") + fmtBytes(v) : (v > 0 ? "+" : "") + fmtCount(v);
      const change = kind === "delta" || kind === "dcount";
      return el("td", { class: change && v > 0 ? "grow" : change && v < 0 ? "shrink" : "", "data-v": String(v), text: text });
    }
    // The rows under a row that adds up stacks: each stack's frames from the first that
    // differs from the other stacks' (the ones before it are the row's name), and its counts.
    function stackRows(r) {
      const list = r[columns.length];
      const stacks = list.rows.map((st) => st[0]);
      let common = 0;
      while (stacks.every((f) => common < f.length - 1 && f[common] === stacks[0][common])) common++;
      const out = list.rows.map((st) => {
        const names = st[0].map((f) => data.stack_frames[f]);
        const shown = names.slice(common, common + 4).join(" \u2190 ") + (names.length > common + 4 ? " \u2190 \u2026" : "");
        const cells = columns.map(([, kind]) => kind === "text" ? el("td", { class: "text" }) : el("td", {}));
        cells[0] = el("td", { class: "text", title: names.join("\n"), text: "via " + shown });
        for (let j = 1; j < kStackColumns.length && j < st.length; j++) cells[kStackColumns[j]] = cell(columns[kStackColumns[j]][1], st[j]);
        return el("tr", { class: "stack" }, ...cells);
      });
      if (list.total > list.rows.length) {
        out.push(el("tr", { class: "more", "data-more": String(list.total - list.rows.length) },
          el("td", { colspan: String(columns.length), text: "\u2026 and " + fmtCount(list.total - list.rows.length) +
            " more stacks, not listed (the page lists the largest " + fmtCount(list.rows.length) + " of a row, and a bounded number in all)" })));
      }
      return out;
    }
    function fill() {
      const shown = query ? rows.filter(matches) : rows;
      const pages = Math.max(1, Math.ceil(shown.length / pageSize));
      page = Math.max(0, Math.min(page, pages - 1));
      const slice = shown.slice(page * pageSize, (page + 1) * pageSize);
      const trs = [];
      for (const r of slice) {
        const cells = columns.map(([, kind], i) => cell(kind, r[i]));
        const list = r[columns.length];
        if (!list) { trs.push(el("tr", {}, ...cells)); continue; }
        const open = expanded.has(r);
        const toggle = el("button", { type: "button", class: "unfold", text: open ? "\u25be" : "\u25b8",
          title: (open ? "fold" : "unfold") + " the " + fmtCount(list.total) + " stacks", "aria-expanded": String(open) });
        toggle.addEventListener("click", () => { if (expanded.has(r)) expanded.delete(r); else expanded.add(r); fill(); });
        cells[0].prepend(toggle);
        trs.push(el("tr", { class: "group" }, ...cells));
        if (open) trs.push(...stackRows(r));
      }
      tbody.replaceChildren(...trs);
      status.textContent = slice.length === 0 ? "no row matches" :
        "rows " + fmtCount(page * pageSize + 1) + "\u2013" + fmtCount(page * pageSize + slice.length) + " of " + fmtCount(shown.length) +
        (query ? " matching" : "");
      prev.disabled = page === 0;
      next.disabled = page >= pages - 1;
      drawn.table_pages[id] = { rows_drawn: slice.length, pages: pages };
    }
    const controls = el("div", { class: "controls" }, filter, prev, next, status);
    const wrap = el("div", { class: "table-wrap" }, el("table", { class: "data" }, thead, tbody));
    p.append(controls, wrap);
    function load(tt, hint) {
      rows = tt.rows.slice();
      expanded.clear();
      if (expandAll) for (const r of rows) if (r[columns.length]) expanded.add(r);
      sortCol = -1; page = 0;
      for (const h of tr.children) h.classList.remove("sorted", "asc");
      cutBox.replaceChildren();
      const c = cut(tt.shown, tt.total, "rows", hint || "--top=N keeps more");
      if (c) cutBox.append(c);
      drawn.tables[id] = tt.rows.length;
      const none = tt.rows.length === 0;
      empty.style.display = none ? "" : "none";
      controls.style.display = wrap.style.display = none ? "none" : "";
      fill();
    }
    load(t);
    return load;
  }

  function renderTables() {
    const T = data.tables;
    const siteCols = [["call site", "text"], ["scope", "text"], ["layer", "text"], ["allocated", "bytes"], ["allocations", "count"],
                      ["live at end", "bytes"], ["blocks live", "count"], ["temporaries", "count"]];
    const sitesSub = "By bytes allocated, per call site, scope and layer. Temporaries (heaptrack's, per thread) are blocks freed or reallocated by their thread's next allocator call, with no other allocation or release between. " +
      "A row marked [N stacks] adds up call stacks that read the same: \u25b8 unfolds them.";
    const loadSites = table("sites", "Top call sites", sitesSub, T.sites, siteCols, "No allocations.");
    if (views.length) {
      const h = el("h3", { class: "view-of" });
      document.getElementById("sites").insertBefore(h, document.getElementById("sites").children[1]);
      const show = () => {
        const v = currentView();
        h.textContent = v ? "The blocks of " + v.name + " (" + fmtBytes(v.allocated) + " allocated)" : "All threads";
        loadSites(v ? v.sites : T.sites, v ? "a thread view keeps its largest " + fmtCount(v.sites.shown) : null);
      };
      show();
      viewState.listeners.push(show);
    }
    renderUnresolved();
    const usageCols = (first) => [[first, "text"], ["live", "bytes"], ["blocks", "count"], ["high-water", "bytes"], ["peak bound", "text"], ["allocated", "bytes"],
                                  ["allocations", "count"], ["freed", "bytes"], ["frees", "count"]];
    table("scopes", "Scopes", "Every scope that allocated, by high-water mark; live is at the end of the capture.", T.scopes, usageCols("scope"), "No scopes allocated.");
    table("layers", "Layers", "Per allocator layer.", T.layers, usageCols("layer"), "No layers.");
    table("retention", "Retention", "For each scope, how many of its exits left memory allocated inside it still live, and how much (summed over exits): per-frame or per-request leaks.",
      T.retention, [["scope", "text"], ["exits", "count"], ["exits retaining", "count"], ["blocks kept", "count"], ["bytes kept", "bytes"]], "No scope exited.");
    table("leaks", "Leaks (live at the end)",
      data.capture.verdict === "complete" ? "Blocks still live when the capture ended, by call site, scope and layer." :
        "Blocks still live when the capture stopped. The capture is not complete, so some of these may have been freed later.",
      T.leaks, siteCols, "Nothing was live at the end of the capture.");
  }

  // "Compared with BASELINE": the growth since another capture, by scope and by call site
  // (analysis/difference.h, as `memtrace diff` and `diff --sites`).
  function renderBaseline() {
    const b = data.baseline;
    if (!b) return;
    const name = b.path.slice(b.path.lastIndexOf("/") + 1);
    const verdict = b.verdict === "complete" ? "" : " The baseline capture is " + b.verdict + ": its numbers are what it kept.";
    table("compared-scopes", "Compared with " + name + ": by scope",
      "Each scope, matched by path, in " + b.path + " (before) and this capture (after); TOTAL first, then the largest change in live bytes." + verdict,
      b.scopes, [["scope", "text"], ["live before", "bytes"], ["live after", "bytes"], ["live change", "delta"], ["high-water before", "bytes"],
                 ["high-water after", "bytes"], ["high-water change", "delta"], ["allocated before", "bytes"], ["allocated after", "bytes"], ["allocated change", "delta"]],
      "Neither capture has scopes.");
    table("compared-sites", "Compared with " + name + ": by call site",
      "Each call site, matched by name (the addresses of two runs differ), every scope and layer of a name added up; the largest growth in live bytes first, then in bytes allocated." + verdict,
      b.sites, [["call site", "text"], ["live before", "bytes"], ["live after", "bytes"], ["live change", "delta"], ["allocated before", "bytes"],
                ["allocated after", "bytes"], ["allocated change", "delta"], ["allocations change", "dcount"]],
      "Neither capture allocated.");
  }

  // Under the call sites: each module whose frames read "??", why, and what would name them.
  function renderUnresolved() {
    const mods = data.unresolved || [];
    const panelEl = document.getElementById("sites");
    if (!mods.length || !panelEl) return;
    const list = el("ul", {});
    for (const m of mods) {
      let what;
      if (m.why === "no_file") {
        what = "the file is not here (missing, unreadable or not ELF): run the report where it is, or put the file that ran at that path.";
      } else if (m.why === "other_build") {
        what = "the file at that path is not the build that ran (the capture's build id is " + m.build_id + "): put that build back at that path.";
      } else if (m.debug_file) {
        what = "the file has no symbols for them: install its debug information at " + m.debug_file + " (Debian: the package's -dbgsym, from the debian-debug archive).";
      } else {
        what = "the file has no symbols for them: build it with -g, or keep its symbols.";
      }
      if (m.debuginfod) {
        what += " debuginfod: " + m.debuginfod + ".";
      } else if (m.build_id && !m.debuginfod_servers) {
        what += " Or set DEBUGINFOD_URLS to a debuginfod server (Debian runs one at debuginfod.debian.net) to fetch it by its build id.";
      }
      list.append(el("li", { text: m.path + " (" + fmtCount(m.addresses) + " addresses): " + what }));
    }
    panelEl.append(el("div", { class: "sub", id: "unresolved" },
      el("p", { text: "Frames without a name (\u201c??\u201d) come from these modules. Symbols are read when the report is made, not when the capture was: once they are there, make the report again." }),
      list));
  }

  // ---- self test ----------------------------------------------------------------------
  // The rows a table shows on its page, read back from the page: each row's numbers, and
  // under a row unfolded its stacks' numbers and the count of stacks not listed.
  function shownRows(id) {
    const out = [];
    for (const tr of document.querySelectorAll("#" + id + " tbody tr")) {
      const nums = [...tr.querySelectorAll("td[data-v]")].map((td) => Number(td.getAttribute("data-v")));
      if (tr.classList.contains("stack")) { if (out.length) out[out.length - 1].stacks.push(nums); continue; }
      if (tr.classList.contains("more")) { if (out.length) out[out.length - 1].more = Number(tr.getAttribute("data-more")); continue; }
      out.push({ name: tr.querySelector("td").textContent, v: nums, stacks: [], more: 0 });
    }
    return out;
  }

  function writeSelftest() {
    let box = document.getElementById("selftest");
    if (!box) { box = el("div", { id: "selftest" }); document.body.append(box); }
    box.textContent = JSON.stringify({
      ok: errors.length === 0,
      errors: errors,
      verdict: data.capture.verdict,
      series_expected: tl.series.length,
      series_drawn: drawn.series.size,
      charts: drawn.charts,
      layer_chart: drawn.layer_chart,
      duration_ns: recordedNs(),
      flame: drawn.flame,
      tables: drawn.tables,
      table_pages: drawn.table_pages,
      functions: drawn.functions,
      view: currentView() ? currentView().name : "all",
      scope_chart: drawn.scope_chart,
      shown: { sites: shownRows("sites"), leaks: shownRows("leaks"),
               compared_scopes: shownRows("compared-scopes"), compared_sites: shownRows("compared-sites") },
    });
  }

  try {
    renderHeader();
    renderBanner();
    renderNav();
    renderThreads();
    renderTimeline();
    renderPeak();
    renderFlame();
    renderFunctions();
    renderTables();
    renderBaseline();
    app.append(el("footer", { text: "memtrace report \u00b7 format " + data.format + " v" + data.version + " \u00b7 self-contained: nothing on this page was loaded from elsewhere" }));
  } catch (e) {
    errors.push(String(e && e.stack || e));
    app.append(el("div", { class: "banner truncated", text: "The report failed to draw: " + e }));
  }
  writeSelftest();
})();
