#!/usr/bin/env bash
# The core engine's benchmarks, each run beside its peer in the same run
# (../shared/bench/peers/optuna_overhead.py), on this machine:
#   1. trivial-objective throughput, in memory and with SQLite, against Optuna parts a and c
#   2. Ray Tune's bookkeeping shape: 10,000 trials of 0.1 s, 16 at a time (ideal 62.5 s)
#   3. ASHA on the 27-step synthetic curve, 500 trials, against no early stopping,
#      and against Optuna's pruners on the same curve (part d)
# Usage: bench/run_core.sh [BUILD_DIR] (default: build). Writes bench/out/core-<time>.jsonl
# and prints a Markdown summary. Set SKIP_SLEEP=1 to skip part 2 (it takes ~63 s).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -x "$build/tune/tune" ] || { echo "build first: meson setup $build && ninja -C $build"; exit 2; }
ninja -C "$build" >/dev/null
peers=../shared/bench/peers
py=${PYTHON:-$(bench/hf_setup_venv.sh)} # Optuna from PyPI (PYTHON= another)
mkdir -p bench/out
out=bench/out/core-$(date -u +%Y%m%dT%H%M%SZ).jsonl
tmp=$(mktemp -d /tmp/tune-bench-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
reps=${REPS:-5}

echo "== 1. overhead: tune (C API) and Optuna (RandomSampler), $reps runs each, interleaved" >&2
for i in $(seq "$reps"); do
    "$build/bench/overhead" --trials 200000 >>"$out"
    rm -rf "$tmp/ov"; "$build/bench/overhead" --trials 20000 --storage "$tmp/ov" >>"$out"
    rm -rf "$tmp/ov"; "$build/bench/overhead" --trials 20000 --reports 10 --storage "$tmp/ov" >>"$out"
    if $py -c "import optuna" 2>/dev/null; then
        $py "$peers/optuna_overhead.py" --parts a,c --n-random 2000 2>/dev/null >>"$out" || true
    fi
done

if [ "${SKIP_SLEEP:-0}" != 1 ]; then
    echo "== 2. bookkeeping: 10,000 trials x 0.1 s, 16 concurrent (ideal 62.5 s)" >&2
    cat >"$tmp/sleep.json" <<'JSON'
{"name": "sleep", "metric": "val_accuracy", "num_samples": 10000, "seed": 1,
 "max_concurrent_trials": 16,
 "param_space": {"lr": {"loguniform": [1e-5, 1e-2]}},
 "trainer": {"type": "synthetic", "iterations": 1, "sleep_s": 0.1}}
JSON
    t0=$(date +%s.%N)
    "$build/tune/tune" run "$tmp/sleep.json" --storage "$tmp/sleep" --quiet
    t1=$(date +%s.%N)
    echo "{\"bench\": \"tune\", \"part\": \"sleep\", \"trials\": 10000, \"concurrency\": 16, \"wall_s\": $(echo "$t1 - $t0" | bc -l), \"ideal_s\": 62.5}" >>"$out"
fi

echo "== 3. ASHA on the 27-step synthetic curve, 500 trials (tune) and Optuna part d" >&2
for sched in asha fifo; do
    if [ $sched = asha ]; then s='{"type": "asha", "max_t": 27, "grace_period": 1, "reduction_factor": 3}'; else s='{"type": "fifo"}'; fi
    cat >"$tmp/$sched.json" <<JSON
{"name": "curve-$sched", "metric": "val_accuracy", "num_samples": 500, "seed": 42,
 "max_concurrent_trials": 1,
 "param_space": {"lr": {"loguniform": [1e-6, 1e-1]}, "weight_decay": {"uniform": [0, 0.3]},
                 "batch_size": {"choice": [16, 32, 64]}, "warmup_steps": {"randint": [0, 11]}},
 "scheduler": $s,
 "trainer": {"type": "synthetic", "iterations": 27, "report_true": true}}
JSON
    t0=$(date +%s.%N)
    "$build/tune/tune" run "$tmp/$sched.json" --storage "$tmp/$sched" --quiet
    t1=$(date +%s.%N)
    $py - "$tmp/$sched/results.csv" "$sched" "$(echo "$t1 - $t0" | bc -l)" >>"$out" <<'PY'
import csv, json, math, sys
def curve(lr, wd, bs, warm, step):  # trainers/synthetic.c, noise-free
    dl = math.log10(lr) - math.log10(3e-4)
    pen = 0.01 * math.log2(32 / bs) ** 2 if bs < 32 else 0.015 * math.log2(bs / 32) ** 2
    asym = max(0.93 - 0.06 * dl * dl - 0.4 * (wd - 0.05) ** 2 - pen - 0.002 * abs(warm - 3), 0.3)
    k = 0.04 + 0.3 * min(1.0, (lr / 1e-3) ** 0.5)
    return asym * (1 - 0.7 * math.exp(-k * step))
def final(r):
    return curve(float(r["config/lr"]), float(r["config/weight_decay"]),
                 float(r["config/batch_size"]), float(r["config/warmup_steps"]), 27)
rows = list(csv.DictReader(open(sys.argv[1])))
steps = sum(int(r["training_iteration"]) for r in rows)
best = max(rows, key=lambda r: float(r["val_accuracy"]))
done = [r for r in rows if r["status"] == "TERMINATED"]
print(json.dumps({"bench": "tune", "part": "asha_curve", "scheduler": sys.argv[2], "trials": len(rows),
    "steps": steps, "stopped": sum(r["status"] == "STOPPED" for r in rows),
    "best_value": float(best["val_accuracy"]), "best_true_final": final(best),
    "best_trial": int(best["trial_id"]), "best_iteration": int(best["training_iteration"]),
    "best_true_among_completed": max(final(r) for r in done),
    "best_true_overall": max(final(r) for r in rows),
    "wall_s": float(sys.argv[3])}))
PY
done
if $py -c "import optuna" 2>/dev/null; then
    $py "$peers/optuna_overhead.py" --parts d 2>/dev/null >>"$out" || true
fi

$py bench/summarize_core.py "$out"
echo "raw results: $out" >&2
