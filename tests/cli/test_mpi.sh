#!/usr/bin/env bash
# MPI: `mpirun -n 3 tune run` runs the controller on rank 0 and trials on ranks
# 1 and 2. Checked: the trials' configs equal a local run's with the same seed,
# row by row; every trial finishes; reports are 1..n per trial; with
# --trials-per-rank 2 as well; and a job killed mid-sweep (SIGKILL to mpirun
# and its ranks) is continued by `mpirun ... tune resume` with every answered
# report kept. Skipped (77) without mpirun or a tune built without MPI.
# A plugin trainer's init runs on every worker rank before its trials
# (trainers are prepared where they run), so its state reaches them.
# Usage: test_mpi.sh TUNE_BINARY SOURCE_ROOT BUILD_ROOT
set -u
TUNE=$1
BUILD=${3:-}
command -v mpirun >/dev/null || { echo "mpirun is missing: skipped"; exit 77; }
command -v sqlite3 >/dev/null || { echo "sqlite3 is missing: skipped"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d /tmp/tune-mpi-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mpi() { timeout 120 mpirun -n 3 --oversubscribe "$@"; }

cat >"$tmp/c.json" <<JSON
{"name": "mpi", "metric": "val_accuracy", "num_samples": 40, "seed": 23,
 "param_space": {"lr": {"loguniform": [1e-5, 1e-2]}, "batch_size": {"choice": [16, 32, 64]},
                 "warmup_steps": {"randint": [0, 8]}},
 "scheduler": {"type": "asha", "max_t": 9, "grace_period": 1, "reduction_factor": 3},
 "trainer": {"type": "synthetic", "iterations": 9, "noise": 0.01}}
JSON
if ! mpi "$TUNE" run "$tmp/c.json" --storage "$tmp/mpi" --quiet >"$tmp/out" 2>&1; then
    if grep -q "built without MPI" "$tmp/out"; then echo "tune was built without MPI: skipped"; exit 77; fi
    echo "FAIL: mpirun tune run: $(cat "$tmp/out")"; exit 1
fi
"$TUNE" run "$tmp/c.json" --storage "$tmp/local" --quiet >/dev/null 2>&1 || { echo "FAIL: local run"; exit 1; }
fails=0
# Columns of results.csv: trial_id, status, training_iteration, config/..., metrics.
python3 - "$tmp/mpi/results.csv" "$tmp/local/results.csv" <<'PY' || fails=$((fails + 1))
import csv, sys
a, b = (list(csv.DictReader(open(p))) for p in sys.argv[1:3])
keys = [k for k in a[0] if k.startswith("config/")]
assert len(a) == len(b) == 40, (len(a), len(b))
for ra, rb in zip(a, b):
    assert ra["trial_id"] == rb["trial_id"]
    assert all(ra[k] == rb[k] for k in keys), (ra, rb)
    assert ra["status"] in ("TERMINATED", "STOPPED"), ra
print("configs: 40 rows equal to the local run's")
PY
db="$tmp/mpi/experiment.db"
bad=$(sqlite3 "$db" "SELECT count(*) FROM trials t WHERE t.training_iteration !=
    (SELECT count(*) FROM reports r WHERE r.trial_id = t.trial_id AND r.attempt = t.attempt)")
[ "$bad" = 0 ] || { echo "FAIL: $bad trials with gaps in their reports"; fails=$((fails + 1)); }

# Two trials at once per worker rank.
mpi "$TUNE" run "$tmp/c.json" --storage "$tmp/mpi2" --quiet --trials-per-rank 2 >"$tmp/out" 2>&1 ||
    { echo "FAIL: --trials-per-rank 2: $(cat "$tmp/out")"; fails=$((fails + 1)); }
n=$(sqlite3 "$tmp/mpi2/experiment.db" "SELECT count(*) FROM trials WHERE status IN ('TERMINATED', 'STOPPED')")
[ "$n" = 40 ] || { echo "FAIL: --trials-per-rank 2 finished $n trials"; fails=$((fails + 1)); }

# A lost job continues with `tune resume`, nothing answered lost.
sed -e 's/"noise": 0.01}/"noise": 0.01, "sleep_s": 0.05, "answer_log": "'"${tmp//\//\\/}"'\/answers.txt"}/' \
    -e 's/"num_samples": 40/"num_samples": 60/' "$tmp/c.json" >"$tmp/k.json"
setsid bash -c "exec timeout 120 mpirun -n 3 --oversubscribe '$TUNE' run '$tmp/k.json' --storage '$tmp/kill' --quiet" >/dev/null 2>&1 &
pid=$!
sleep 2
kill -KILL -- -$pid 2>/dev/null
wait $pid 2>/dev/null
pkill -KILL -f "$tmp/k.json" 2>/dev/null
sleep 0.5
before=$(sqlite3 "$tmp/kill/experiment.db" "SELECT count(*) FROM trials WHERE status IN ('TERMINATED', 'STOPPED')")
mpi "$TUNE" resume "$tmp/kill" --quiet >"$tmp/out" 2>&1 || { echo "FAIL: resume: $(cat "$tmp/out")"; fails=$((fails + 1)); }
db="$tmp/kill/experiment.db"
n=$(sqlite3 "$db" "SELECT count(*) FROM trials WHERE status IN ('TERMINATED', 'STOPPED')")
[ "$n" = 60 ] || { echo "FAIL: after resume $n of 60 trials finished"; fails=$((fails + 1)); }
sqlite3 -separator ' ' "$db" "SELECT trial_id, attempt, training_iteration FROM reports" | sort -u >"$tmp/stored.txt"
sort -u "$tmp/answers.txt" >"$tmp/answered.txt"
missing=$(comm -23 "$tmp/answered.txt" "$tmp/stored.txt" | wc -l)
[ "$missing" = 0 ] || { echo "FAIL: $missing answered reports missing"; fails=$((fails + 1)); }
echo "kill: $before trials had finished when the job was killed; resumed to $n; $(wc -l <"$tmp/answered.txt") answered reports all stored"
# The worker ranks prepare their trainer: the plugin's init gives every trial its offset.
plugin="$BUILD/tests/libtune_test_plugin.so"
if [ -f "$plugin" ]; then
    cat >"$tmp/p.json" <<JSON
{"name": "mpi-plugin", "metric": "val_accuracy", "seed": 3,
 "param_space": {"x": {"grid_search": [1, 2, 3, 4, 5, 6]}},
 "trainer": {"type": "plugin", "library": "$plugin", "symbol": "fixture_objective_state",
             "init_symbol": "fixture_init", "fini_symbol": "fixture_fini", "data": {"offset": 100}}}
JSON
    mpi "$TUNE" run "$tmp/p.json" --storage "$tmp/plugin" --quiet >"$tmp/out" 2>&1 ||
        { echo "FAIL: plugin under MPI: $(cat "$tmp/out")"; fails=$((fails + 1)); }
    got=$(sqlite3 "$tmp/plugin/experiment.db" "SELECT count(*) FROM reports r JOIN trials t
        ON r.trial_id = t.trial_id WHERE t.status = 'TERMINATED'" 2>/dev/null)
    right=$(sqlite3 "$tmp/plugin/experiment.db" "SELECT count(*) FROM reports
        WHERE json_extract(metrics, '\$.val_accuracy') > 100" 2>/dev/null)
    [ "${got:-0}" = 6 ] && [ "${right:-0}" = 6 ] ||
        { echo "FAIL: plugin under MPI: $got reports of finished trials, $right with the offset"; fails=$((fails + 1)); }
else
    echo "FAIL: $plugin is missing"; fails=$((fails + 1))
fi

[ "$fails" = 0 ] && echo "ok: MPI sweeps match the local run and survive a lost job"
[ "$fails" = 0 ]
