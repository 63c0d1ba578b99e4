#!/usr/bin/env python3
"""optuna_search.py - Optuna's samplers on bench/search_bench.c's problems.

  quality --sampler random|tpe|tpe-mv|gp --problem branin|hartmann6|curve
          [--budgets 50,200] [--seeds 20] [--seed0 0]
  timing  [--history 1000] [--window 20]

Same problems, spaces and output fields as search_bench (one JSON line per
seed and budget: best value and regret after the first `budget` trials), with
TPESampler(seed=s) (multivariate=True for tpe-mv), GPSampler(seed=s) (its
defaults otherwise) or RandomSampler(seed=s).
curve is the 27-step synthetic learning curve of
../shared/bench/peers/optuna_overhead.py part d, noise-free final value,
maximised. timing: the 4-parameter space and trivial objective of
optuna_overhead.py part b; the time of ask() plus the 4 suggest calls for
trials 980..999 of a 1,000-trial TPESampler study (part b's window), wall
and this thread's CPU time (the machine is shared: wall also counts others).

Run with the venv of bench/hf_setup_venv.sh (gp needs its torch and scipy):
$(bench/hf_setup_venv.sh) bench/optuna_search.py ...
"""
import argparse
import json
import math
import os
import statistics
import time

# GPSampler's advice for its speed: one OpenMP thread, set before torch is imported
os.environ.setdefault("OMP_NUM_THREADS", "1")

import optuna

CATS = ["relu", "gelu", "tanh"]
BRANIN_MIN = 0.397887
HARTMANN6_MIN = -3.32237
H_ALPHA = [1.0, 1.2, 3.0, 3.2]
H_A = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
       [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]]
H_P = [[0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
       [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
       [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650],
       [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381]]


def branin(x0, x1):
    b, c, t = 5.1 / (4 * math.pi ** 2), 5 / math.pi, 1 / (8 * math.pi)
    return (x1 - b * x0 ** 2 + c * x0 - 6) ** 2 + 10 * (1 - t) * math.cos(x0) + 10


def hartmann6(x):
    return -sum(H_ALPHA[i] * math.exp(-sum(H_A[i][j] * (x[j] - H_P[i][j]) ** 2 for j in range(6)))
                for i in range(4))


def curve(lr, wd, bs, warm):
    """optuna_overhead.py part d's curve at step 27, without noise."""
    dl = math.log10(lr) - math.log10(3e-4)
    asym = 0.93 - 0.06 * dl * dl - 0.4 * (wd - 0.05) ** 2 \
        - {16: 0.01, 32: 0.0, 64: 0.015}[bs] - 0.002 * abs(warm - 3)
    asym = max(asym, 0.3)
    k = 0.04 + 0.3 * min(1.0, (lr / 1e-3) ** 0.5)
    return asym * (1.0 - 0.7 * math.exp(-k * 27))


def curve_best():
    """The same dense scan as search_bench.c: wd, bs, warm are separable (0.05, 32, 3)."""
    return max(curve(10 ** (-6 + 5 * i / 200000), 0.05, 32, 3) for i in range(200001))


def objective(problem):
    if problem == "branin":
        return lambda t: branin(t.suggest_float("x0", -5, 10), t.suggest_float("x1", 0, 15))
    if problem == "hartmann6":
        return lambda t: hartmann6([t.suggest_float(f"x{j}", 0, 1) for j in range(6)])
    return lambda t: curve(t.suggest_float("lr", 1e-6, 1e-1, log=True),
                           t.suggest_float("weight_decay", 0.0, 0.3),
                           t.suggest_categorical("batch_size", [16, 32, 64]),
                           t.suggest_int("warmup", 0, 10))


def make_sampler(name, seed):
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed, multivariate=name == "tpe-mv")


def quality(args):
    budgets = [int(b) for b in args.budgets.split(",")]
    maximise = args.problem == "curve"
    fmin = {"branin": BRANIN_MIN, "hartmann6": HARTMANN6_MIN}.get(args.problem)
    fbest = curve_best() if maximise else None
    for seed in range(args.seed0, args.seed0 + args.seeds):
        study = optuna.create_study(direction="maximize" if maximise else "minimize",
                                    sampler=make_sampler(args.sampler, seed))
        f = objective(args.problem)
        t0 = time.perf_counter()
        for i in range(max(budgets)):
            trial = study.ask()
            study.tell(trial, f(trial))
            if i + 1 in budgets:
                vals = [t.value for t in study.trials[:i + 1]]
                best = max(vals) if maximise else min(vals)
                regret = fbest - best if maximise else best - fmin
                print(json.dumps({"bench": "optuna", "searcher": "optuna-" + args.sampler,
                                  "problem": args.problem, "budget": i + 1, "seed": seed,
                                  "best": best, "regret": regret,
                                  "seconds": round(time.perf_counter() - t0, 4)}), flush=True)


def timing(args):
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=42))
    ms, cpu_ms = [], []
    for i in range(args.history):
        t0, c0 = time.perf_counter(), time.thread_time()
        trial = study.ask()
        x = trial.suggest_float("x", -10.0, 10.0)
        lr = trial.suggest_float("lr", 1e-5, 1e-1, log=True)
        act = trial.suggest_categorical("act", CATS)
        n = trial.suggest_int("n", 1, 64)
        c1, t1 = time.thread_time(), time.perf_counter()
        study.tell(trial, x ** 2 + (math.log10(lr) + 3.0) ** 2 + CATS.index(act)
                   + (n - 32) ** 2 / 1000.0)
        if i >= args.history - args.window:
            ms.append(1e3 * (t1 - t0))
            cpu_ms.append(1e3 * (c1 - c0))
    print(json.dumps({"bench": "optuna", "part": "timing", "searcher": "optuna-tpe",
                      "history_trials": args.history,
                      "window": [args.history - args.window, args.history],
                      "suggest_ms_mean": round(statistics.mean(ms), 4),
                      "suggest_ms_median": round(statistics.median(ms), 4),
                      "suggest_cpu_ms_mean": round(statistics.mean(cpu_ms), 4),
                      "suggest_cpu_ms_median": round(statistics.median(cpu_ms), 4),
                      "best_value": study.best_value}), flush=True)
    # the headline figure bench/summarize_run.py picks up (CPU time: the machine is shared)
    print(json.dumps({"bench": "optuna", "searcher": "optuna-tpe", "history": args.history,
                      "ms_per_suggest": round(statistics.median(cpu_ms), 4)}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["quality", "timing"])
    ap.add_argument("--sampler", default="tpe", choices=["random", "tpe", "tpe-mv", "gp"])
    ap.add_argument("--problem", default="branin", choices=["branin", "hartmann6", "curve"])
    ap.add_argument("--budgets", default="50,200")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--seed0", type=int, default=0)
    ap.add_argument("--history", type=int, default=1000)
    ap.add_argument("--window", type=int, default=20)
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # also the experimental-feature warnings
    if args.mode == "quality":
        quality(args)
    else:
        timing(args)


if __name__ == "__main__":
    main()
