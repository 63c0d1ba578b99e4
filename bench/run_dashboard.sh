#!/usr/bin/env bash
# The dashboard's cost to the controller: one sweep shape run REPS times
# without and REPS times with `tune dashboard` serving it to a client that
# polls every 200 ms (GET /api/report as a page does, plus /api/trials, so
# both documents are rebuilt as often as the server allows), alternated
# (off, on, off, on, ...) so that drift on a shared machine hits both alike.
# The figure is the sweep's reports per second as the store records them
# (reports / span of their wall_time), so the dashboard's start-up is not in it.
# The dashboard runs at nice 10 (as `tune dashboard` sets itself); its CPU time is
# reported too.
# Usage: bench/run_dashboard.sh [BUILD_DIR] (default: build). TRIALS (1000),
# ITERATIONS (100), CONCURRENCY (4), SLEEP_S (0: trials that only report, so the
# controller is the bottleneck) and REPS (5) change the shape. Prints a
# Markdown table of medians and their ratio; raw lines in bench/out/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -x "$build/tune/tune" ] || { echo "build first: meson setup $build && ninja -C $build"; exit 2; }
tune=$(cd "$build/tune" && pwd)/tune
"$tune" dashboard --help >/dev/null 2>&1 || true
trials=${TRIALS:-1000}
iterations=${ITERATIONS:-100}
concurrency=${CONCURRENCY:-4}
reps=${REPS:-5}
mkdir -p bench/out
out=bench/out/dashboard-$(date -u +%Y%m%dT%H%M%SZ).tsv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/sweep.json" <<EOF
{"name": "dashboard_bench", "metric": "val_accuracy", "mode": "max",
 "num_samples": $trials, "seed": 1, "max_concurrent_trials": $concurrency,
 "param_space": {"lr": {"loguniform": [1e-5, 1e-2]}, "batch_size": {"choice": [16, 32, 64]}},
 "trainer": {"type": "synthetic", "iterations": $iterations, "sleep_s": ${SLEEP_S:-0}}}
EOF

# One sweep; $1 = on|off. Appends "mode reports reports_per_s polls rebuilds_seen" to $out.
one() {
    local mode=$1 dir=$tmp/exp-$1-$2 dash=
    "$tune" run "$tmp/sweep.json" --storage "$dir" --quiet >/dev/null 2>&1 &
    local run=$!
    if [ "$mode" = on ]; then
        while [ ! -f "$dir/experiment.db" ]; do sleep 0.01; done
        rm -f "$tmp/dash.log"
        "$tune" dashboard "$dir" --port 0 >"$tmp/dash.log" 2>&1 &
        dash=$!
        until grep -q http "$tmp/dash.log" 2>/dev/null; do sleep 0.01; done
        local url
        url=$(grep -o 'http://[^ ]*' "$tmp/dash.log")
        /usr/bin/python3 - "$url" "$run" >"$tmp/poll.txt" <<'PY' &
import os, sys, time, urllib.request, urllib.error
url, run = sys.argv[1], int(sys.argv[2])
polls = changed = 0
etag = None
while os.path.exists("/proc/%d" % run):
    t = time.time()
    req = urllib.request.Request(url + "api/report", headers={"If-None-Match": etag} if etag else {})
    try:
        with urllib.request.urlopen(req) as r:
            r.read()
            etag, changed = r.headers.get("ETag"), changed + 1
    except urllib.error.HTTPError as e:
        if e.code != 304:
            raise
    urllib.request.urlopen(url + "api/trials").read()
    polls += 1
    time.sleep(max(0.0, 0.2 - (time.time() - t)))
print(polls, changed)
PY
        local poller=$!
    fi
    wait "$run"
    local polls="0 0 0"
    if [ -n "$dash" ]; then
        wait "$poller"
        # The dashboard's CPU time (user + system, clock ticks) over the whole run.
        polls="$(cat "$tmp/poll.txt") $(awk '{print ($14 + $15) / 100}' "/proc/$dash/stat")"
        kill -INT "$dash"
        wait "$dash" || true
    fi
    /usr/bin/python3 - "$dir/experiment.db" "$mode" "$polls" >>"$out" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
n, t0, t1 = db.execute("SELECT count(*), min(wall_time), max(wall_time) FROM reports").fetchone()
print("%s\t%d\t%.1f\t%s" % (sys.argv[2], n, n / (t1 - t0), sys.argv[3].replace(" ", "\t")))
PY
    rm -rf "$dir"
}

echo "== dashboard: $trials trials x $iterations reports, $concurrency at once, $reps x off/on" >&2
for i in $(seq "$reps"); do
    one off "$i"
    one on "$i"
done
/usr/bin/python3 - "$out" "$trials" "$iterations" "$concurrency" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
off = [float(r[2]) for r in rows if r[0] == "off"]
on = [float(r[2]) for r in rows if r[0] == "on"]
polls = [int(r[3]) for r in rows if r[0] == "on"]
changed = [int(r[4]) for r in rows if r[0] == "on"]
cpu = [float(r[5]) for r in rows if r[0] == "on"]
m_off, m_on = statistics.median(off), statistics.median(on)
print("### The dashboard's cost: %s trials x %s reports, %s at once, polled every 200 ms"
      % tuple(sys.argv[2:5]))
print()
print("| | reports/s (median) | runs | each run |")
print("|---|---|---|---|")
print("| no dashboard | %.0f | %d | %s |" % (m_off, len(off), ", ".join("%.0f" % x for x in off)))
print("| dashboard, 2 GETs every 200 ms | %.0f | %d | %s |" % (m_on, len(on), ", ".join("%.0f" % x for x in on)))
print()
print("with/without: %.3f (median per run: %d polls, %d with new data, dashboard CPU %.2f s)"
      % (m_on / m_off, statistics.median(polls), statistics.median(changed), statistics.median(cpu)))
PY
echo "raw: $out" >&2
