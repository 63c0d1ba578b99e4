#!/usr/bin/env bash
# results.csv and progress.csv as pandas reads them (docs/results.md): the
# exact columns with Ray's names, their types, and their values checked row by
# row against what the sweep did: a command program whose reports are known,
# one trial failing once and retried (max_failures 1), so that progress.csv
# holds both attempts. Needs pandas (Debian's python3-pandas, which
# scripts/setup --deps installs): without it the test is skipped (exit 77).
# Usage: test_results_schema.sh TUNE
set -u
tune=$1
py=
for p in /usr/bin/python3 python3; do
    if "$p" -c "import pandas" 2>/dev/null; then py=$p; break; fi
done
[ -n "$py" ] || { echo "SKIP: no python3 with pandas (apt-get install python3-pandas)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Trial k reports loss = 1 / (k + i) at iterations i = 1..3 and acc = 10 * i + k;
# trial 1's first attempt fails after two reports (a marker file says it ran).
cat >"$tmp/prog.sh" <<SH
#!/bin/sh
k=\$1
for i in 1 2 3; do
    loss=\$(awk "BEGIN { printf \\"%.17g\\", 1 / (\$k + \$i) }")
    echo "tune-report {\"loss\": \$loss, \"acc\": \$((10 * i + k))}"
    if [ "\$k" = 1 ] && [ \$i = 2 ] && [ ! -e "$tmp/failed-once" ]; then
        touch "$tmp/failed-once"; echo boom >&2; exit 1
    fi
done
SH
chmod +x "$tmp/prog.sh"
cat >"$tmp/cfg.json" <<JSON
{"name": "schema", "metric": "loss", "mode": "min", "num_samples": 1, "seed": 1,
 "max_concurrent_trials": 1, "max_failures": 1,
 "param_space": {"k": {"grid_search": [0, 1, 2]}, "opt": {"choice": ["adam"]}},
 "trainer": {"type": "command", "argv": ["$tmp/prog.sh", "{k}"]}}
JSON
"$tune" run "$tmp/cfg.json" --storage "$tmp/exp" --quiet >"$tmp/run.out" 2>&1 ||
    { echo "FAIL: the sweep failed: $(cat "$tmp/run.out")"; exit 1; }

"$py" - "$tmp/exp" <<'PY'
import datetime, ipaddress, math, os, re, socket, sys
import pandas as pd

exp = sys.argv[1]
r = pd.read_csv(os.path.join(exp, "results.csv"))
p = pd.read_csv(os.path.join(exp, "progress.csv"))
fails = []
def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        fails.append(what)

ray_cols = ["time_this_iter_s", "time_since_restore", "iterations_since_restore",
            "timestamp", "date", "done"]
check(list(r.columns) == ["trial_id", "status", "training_iteration", "config/k", "config/opt",
                          "loss", "acc", "time_total_s", "attempts", "error"] + ray_cols +
      ["pid", "hostname", "node_ip", "logdir"], "results.csv columns: %s" % list(r.columns))
check(list(p.columns) == ["trial_id", "training_iteration", "time_total_s", "loss", "acc",
                          "attempt"] + ray_cols + ["status", "config/k", "config/opt"],
      "progress.csv columns: %s" % list(p.columns))
for col, kind in [("trial_id", "i"), ("training_iteration", "i"), ("attempts", "i"),
                  ("iterations_since_restore", "i"), ("timestamp", "i"), ("pid", "i"),
                  ("done", "b"), ("time_total_s", "f"), ("time_this_iter_s", "f"),
                  ("time_since_restore", "f"), ("loss", "f"), ("acc", "i"), ("config/k", "i")]:
    check(r[col].dtype.kind == kind, "results.csv %s is of kind %s (%s)" % (col, kind, r[col].dtype))
for col, kind in [("trial_id", "i"), ("training_iteration", "i"), ("attempt", "i"),
                  ("iterations_since_restore", "i"), ("timestamp", "i"), ("done", "b"),
                  ("time_total_s", "f"), ("time_this_iter_s", "f"), ("time_since_restore", "f")]:
    check(p[col].dtype.kind == kind, "progress.csv %s is of kind %s (%s)" % (col, kind, p[col].dtype))

# results.csv, row by row
check(list(r["trial_id"]) == [0, 1, 2] and set(r["status"]) == {"TERMINATED"}, "three trials ended")
check(list(r["attempts"]) == [1, 2, 1], "trial 1 took two attempts: %s" % list(r["attempts"]))
check(r["error"].isna().all(), "no error left on trials that ended well")
check(list(r["training_iteration"]) == [3, 3, 3] and r["done"].all(), "done at iteration 3")
for _, t in r.iterrows():
    k = t["config/k"]
    check(math.isclose(t["loss"], 1 / (k + 3), rel_tol=1e-15) and t["acc"] == 30 + k,
          "trial %d: the last report's metrics" % k)
    when = datetime.datetime.fromtimestamp(t["timestamp"]).strftime("%Y-%m-%d_%H-%M-%S")
    check(t["date"] == when, "trial %d: date %s is Ray's format of timestamp" % (k, t["date"]))
    check(t["hostname"] == socket.gethostname(), "trial %d: hostname" % k)
    check(ipaddress.ip_address(t["node_ip"]).version == 4, "trial %d: node_ip %s" % (k, t["node_ip"]))
    check(t["pid"] > 0 and t["logdir"] == os.path.join(os.path.realpath(exp), "trials",
                                                       "trial_%06d" % k),
          "trial %d: pid, logdir %s" % (k, t["logdir"]))
    check(t["config/opt"] == "adam", "trial %d: config/opt" % k)

# progress.csv: every report of every attempt, with its trial's status and config
check(len(p) == 3 + 2 + 3 + 3, "11 reports: trial 1's failed attempt kept (%d rows)" % len(p))
t1 = p[p["trial_id"] == 1]
check(list(zip(t1["attempt"], t1["training_iteration"])) == [(1, 1), (1, 2), (2, 1), (2, 2), (2, 3)],
      "trial 1: attempt 1 iterations 1-2, attempt 2 iterations 1-3")
for (tid, att), g in p.groupby(["trial_id", "attempt"]):
    res = r[r["trial_id"] == tid].iloc[0]
    check((g["status"] == res["status"]).all() and (g["config/k"] == res["config/k"]).all() and
          (g["config/opt"] == "adam").all(), "trial %d: status and config on every row" % tid)
    n = len(g)
    check(list(g["training_iteration"]) == list(range(1, n + 1)) and
          list(g["iterations_since_restore"]) == list(range(1, n + 1)),
          "trial %d attempt %d: iterations count from 1 (no checkpoint)" % (tid, att))
    # Without a restore the clock runs from the attempt's start: the times add up.
    cum = g["time_this_iter_s"].cumsum()
    check(all(abs(a - b) < 1e-9 for a, b in zip(cum, g["time_total_s"])) and
          all(abs(a - b) < 1e-12 for a, b in zip(g["time_since_restore"], g["time_total_s"])),
          "trial %d attempt %d: time_total_s is the sum of time_this_iter_s" % (tid, att))
    final = att == res["attempts"]
    check(list(g["done"]) == [False] * (n - 1) + [final],
          "trial %d attempt %d: done on the final report only" % (tid, att))
    check(all(math.isclose(l, 1 / (tid + i), rel_tol=1e-15) for l, i in
              zip(g["loss"], g["training_iteration"])), "trial %d: loss by iteration" % tid)
    check(g["timestamp"].is_monotonic_increasing and (g["timestamp"] >= res["timestamp"] - 60).all(),
          "trial %d: timestamps" % tid)
sys.exit(1 if fails else 0)
PY
