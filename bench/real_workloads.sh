# Copyright 2026 The memtrace Authors.
#
# real_workloads.sh: the real-program workloads that bench/real_programs.sh and
# bench/settings_ab.sh time, sourced by both (not run on its own), and the helpers
# bench/preload_ab.sh shares with them. The caller sets
# $work (a scratch directory) and calls real_workloads_init once. Each run_WORKLOAD runs
# its program with the words given as a prefix ("env LD_PRELOAD=... ", "heaptrack -o F",
# or nothing), waits for it, and leaves stdout and stderr to the caller:
#   run_true    /bin/true: each tool's fixed cost (start, empty capture, exit)
#   run_python  python3, four threads: json + the sqlite3 module
#   run_sqlite  sqlite3 :memory: < bench/sqlite_workload.sql (200k inserts, index,
#               group by, vacuum)
#   run_redis   redis-server (port 6399, two I/O threads) under redis-benchmark
#               -n 50000 -c 20 -P 4, five commands; a clean shutdown ends it (and writes a
#               capture's trailer)
# timed WORKLOAD PREFIX...: one run, printed as "wall-seconds cpu-seconds", the CPU time
# (user + system) of everything the run started and waited for: the program, the tool's
# threads and processes, and the workload's clients, which are the same in every variant.
# median / fastest: bench/stats.sh, sourced below.
# cpu_speeds WHEN: on stderr, the time one fixed loop takes on each CPU this script may
# use, and a warning when the slowest is 15% or more slower than the fastest. On a shared
# VM the vCPUs can run at different speeds for minutes at a time (bench/README.md,
# "sqlite3's main thread, piece by piece"); a run's times then depend on where its
# threads land, and a traced run, which uses more CPUs, is hit more often.
# own_cpu_ms CAPTURE: memtrace's drainer and writer CPU time in ms, "D W", from the
# capture's trailer (memtrace_cpu_ns; its JSON text is stored as is in the binary
# encoding too), or "- -" for no capture or one without the field.

real_workloads_init() {
  cat > "$work/py.py" <<'EOF'
import json, threading, sqlite3
docs = [json.dumps({"id": i, "tags": ["t%d" % (i % 7)] * (i % 5), "v": list(range(i % 50))})
        for i in range(20000)]
def work(n):
    rows = [json.loads(d) for d in docs[n::4]]
    db = sqlite3.connect(":memory:")
    db.execute("create table t(id, v)")
    db.executemany("insert into t values (?, ?)", [(r["id"], str(r["v"])) for r in rows])
    db.execute("select count(*), sum(length(v)) from t group by id % 13").fetchall()
threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
for t in threads: t.start()
for t in threads: t.join()
EOF
}

run_true() { "$@" /bin/true; }
run_python() { "$@" /usr/bin/python3 "$work/py.py"; }
run_sqlite() { "$@" /usr/bin/sqlite3 :memory: < "$PWD/bench/sqlite_workload.sql" > /dev/null; }
run_redis() {
  "$@" /usr/bin/redis-server --port 6399 --save "" --appendonly no --io-threads 2 \
    --daemonize no > "$work/redis.log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do redis-cli -p 6399 ping > /dev/null 2>&1 && break; sleep 0.1; done
  redis-benchmark -p 6399 -q -n 50000 -c 20 -P 4 -t set,get,lpush,lpop,hset > /dev/null
  redis-cli -p 6399 shutdown nosave > /dev/null 2>&1 || true
  wait "$pid" || true
}

source "$PWD/bench/stats.sh"  # median, fastest

cpu_speeds() {
  python3 - "$1" >&2 <<'PY'
import os, sys, time
cpus = sorted(os.sched_getaffinity(0))
took = {}
for c in cpus:
    os.sched_setaffinity(0, {c})
    best = None
    for _ in range(3):  # the fastest of three: a preemption only ever adds time
        start = time.perf_counter()
        sum(range(2_000_000))
        t = time.perf_counter() - start
        best = t if best is None else min(best, t)
    took[c] = best
os.sched_setaffinity(0, set(cpus))
fast, slow = min(took.values()), max(took.values())
print("CPU speeds %s: %s" % (sys.argv[1], ", ".join("cpu%d %.0f ms" % (c, t * 1e3) for c, t in took.items())))
if slow >= fast * 1.15:
    print("  warning: the slowest CPU took %.0f%% longer than the fastest; the times of this run "
          "depend on where its threads land" % ((slow / fast - 1) * 100))
PY
}

own_cpu_ms() {
  if [[ ! -f "$1" ]]; then echo "- -"; return; fi
  grep -a -o '"memtrace_cpu_ns":{"drainer":[0-9]*,"writer":[0-9]*}' "$1" | tail -1 |
    tr -c '0-9' ' ' |
    awk 'NF == 2 {printf "%.1f %.1f\n", $1 / 1e6, $2 / 1e6; exit} END {if (NF != 2) print "- -"}'
}

timed() {
  local workload="$1"; shift
  local TIMEFORMAT='%3R %3U %3S'
  local report
  report=$({ time "run_$workload" "$@" > /dev/null 2>&1; } 2>&1)
  awk '{printf "%.3f %.3f\n", $1, $2 + $3}' <<< "$report"
}
