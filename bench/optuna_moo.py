#!/usr/bin/env python3
"""optuna_moo.py - Optuna's NSGAIISampler or TPESampler on ZDT1 and ZDT2, beside bench/moo_bench.c.

  optuna_moo.py --problem zdt1|zdt2 [--sampler nsga2|tpe] [--evals 200] [--seeds 20]
                [--seed0 0] [--dim 30]

Same problems, space (dim uniform [0, 1] parameters), budget and output
fields as moo_bench: one JSON line per seed with the hypervolume of all
`evals` points bounded by the reference point (11, 11), computed by the
same two-objective sweep (an exact union of boxes), and the median and mean
time of one ask() (which draws the trial's parameters; the parameters are
then read with suggest_float, which returns the drawn values), wall and this
thread's CPU time. NSGAIISampler(seed=s) with its defaults (population 50), or
TPESampler(seed=s) with its defaults (Optuna 5.0 with several objectives:
univariate, 10 random trials, 24 candidates, ceil(0.1 n) good trials chosen by
non-dominated rank and hypervolume subset selection, weighted 1 each).
Run with the venv of bench/hf_setup_venv.sh (Optuna 5.0).
"""
import argparse
import json
import math
import statistics
import time

import optuna


def zdt(concave, x):
    g = 1 + 9 * sum(x[1:]) / (len(x) - 1)
    r = x[0] / g
    return x[0], g * (1 - r * r if concave else 1 - math.sqrt(r))


def hypervolume(points, ref):
    """The area dominated by points (both minimised) inside [., ref]: a sweep in f1."""
    inside = sorted(p for p in points if p[0] < ref[0] and p[1] < ref[1])
    hv, low = 0.0, ref[1]
    for f1, f2 in inside:
        if f2 < low:
            hv += (ref[0] - f1) * (low - f2)
            low = f2
    return hv


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", required=True, choices=["zdt1", "zdt2"])
    ap.add_argument("--sampler", default="nsga2", choices=["nsga2", "tpe"])
    ap.add_argument("--evals", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--seed0", type=int, default=0)
    ap.add_argument("--dim", type=int, default=30)
    a = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    concave = a.problem == "zdt2"
    dists = {"x%d" % j: optuna.distributions.FloatDistribution(0.0, 1.0) for j in range(a.dim)}
    for seed in range(a.seed0, a.seed0 + a.seeds):
        sampler = (optuna.samplers.TPESampler(seed=seed) if a.sampler == "tpe"
                   else optuna.samplers.NSGAIISampler(seed=seed))
        study = optuna.create_study(directions=["minimize", "minimize"], sampler=sampler)
        wall, cpu, pts = [], [], []
        for _ in range(a.evals):
            t0, c0 = time.perf_counter(), time.thread_time()
            trial = study.ask(dists)
            c1, t1 = time.thread_time(), time.perf_counter()
            wall.append(t1 - t0)
            cpu.append(c1 - c0)
            x = [trial.params["x%d" % j] for j in range(a.dim)]
            f = zdt(concave, x)
            study.tell(trial, list(f))
            pts.append(f)
        print(json.dumps({
            "bench": "optuna", "optuna": optuna.__version__, "sampler": type(sampler).__name__,
            "problem": a.problem, "dim": a.dim, "evals": a.evals, "seed": seed,
            "hypervolume": hypervolume(pts, (11.0, 11.0)),
            "suggest_ms_median": 1e3 * statistics.median(wall),
            "suggest_ms_mean": 1e3 * statistics.fmean(wall),
            "suggest_cpu_ms_median": 1e3 * statistics.median(cpu),
            "suggest_cpu_ms_mean": 1e3 * statistics.fmean(cpu)}), flush=True)


if __name__ == "__main__":
    main()
