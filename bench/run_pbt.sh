#!/usr/bin/env bash
# PBT against random search at equal compute on the synthetic learning curve
# (trainers/synthetic.c, the curve of ../shared/bench/peers/optuna_overhead.py
# part d, with its state carried in checkpoints): a population of 16 trials x
# 27 iterations under PBT against 16 random trials x 27 iterations (the same
# 432 iterations), 20 seeds. Scores are the noise-free true_accuracy of each
# sweep's best trial at its last iteration; prints medians and the win count.
#   bench/run_pbt.sh [BUILD_DIR]     (SEEDS=20)
set -euo pipefail
build=${1:-build}
tune="$build/tune/tune"
tmp=$(mktemp -d /tmp/tune-pbt-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
seeds=${SEEDS:-20}
mkdir -p bench/out
out="bench/out/pbt-$(date -u +%Y%m%dT%H%M%SZ).jsonl"
for seed in $(seq 1 "$seeds"); do
    for how in random pbt; do
        sched='{"type": "fifo"}'
        [ $how = pbt ] && sched='{"type": "pbt", "perturbation_interval": 3, "burn_in_period": 9,
            "hyperparam_mutations": {"lr": {"loguniform": [1e-5, 1e-1]},
                                     "weight_decay": {"uniform": [0, 0.3]},
                                     "batch_size": [16, 32, 64]}}'
        cat >"$tmp/c.json" <<JSON
{"name": "pbt-bench", "metric": "val_accuracy", "num_samples": 16, "seed": $seed,
 "max_concurrent_trials": 16,
 "param_space": {"lr": {"loguniform": [1e-5, 1e-1]}, "weight_decay": {"uniform": [0, 0.3]},
                 "batch_size": {"choice": [16, 32, 64]}, "warmup_steps": 3},
 "scheduler": $sched,
 "trainer": {"type": "synthetic", "iterations": 27, "noise": 0.005, "report_true": true}}
JSON
        rm -rf "$tmp/exp"
        "$tune" run "$tmp/c.json" --storage "$tmp/exp" --quiet >/dev/null 2>&1
        python3 - "$tmp/exp/results.csv" "$how" "$seed" >>"$out" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
best = max(rows, key=lambda r: float(r["val_accuracy"]))
iters = sum(int(r["training_iteration"]) for r in rows)
print(json.dumps({"searcher": sys.argv[2], "seed": int(sys.argv[3]),
                  "best_true": float(best["true_accuracy"]), "iterations": iters}))
PY
    done
done
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault(r["searcher"], {})[r["seed"]] = r
for k in ("random", "pbt"):
    v = [r["best_true"] for r in by[k].values()]
    it = [r["iterations"] for r in by[k].values()]
    print(f"{k:7s} median best true_accuracy {statistics.median(v):.4f}  (iterations per sweep {min(it)}-{max(it)})")
d = [by["pbt"][s]["best_true"] - by["random"][s]["best_true"] for s in by["pbt"]]
wins, ties = sum(x > 1e-12 for x in d), sum(abs(x) <= 1e-12 for x in d)
print(f"PBT - random, best true_accuracy: median {statistics.median(d):+.4f}; "
      f"ahead on {wins}, equal on {ties}, behind on {len(d) - wins - ties} of {len(d)} seeds")
PY
echo "raw: $out"
