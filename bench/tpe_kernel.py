#!/usr/bin/env python3
"""tpe_kernel.py - is tune's TPE the same search as Optuna 3.1's TPESampler?

The regret benchmark (bench/run_search.sh) compares medians over 20 seeds of
two noisy processes; its ratios swing from 0.7 to 2.6 between runs, so it can
neither show nor refute that two TPEs are the same. This compares the thing
that defines a sequential searcher instead: its transition kernel, the
distribution of the next suggestion given a history. Two searchers whose
kernels agree on every history produce trajectories, and so regrets, with the
same distribution.

Histories are real ones: Optuna's own TPE runs on Branin, Hartmann-6 and the
synthetic learning curve (bench/optuna_search.py's problems), cut after n
trials. From each cut, DRAWS next suggestions come from Optuna (one
TPESampler, DRAWS asks that are never told, so they stay RUNNING and, with
Optuna's default constant_liar=False, unseen) and DRAWS from tune
(`search_bench kernel`, independent streams). Per parameter: two-sample
Kolmogorov-Smirnov (continuous; log of lr) or chi-square on the counts
(integers, choices); per cut also the objective's value at the suggestion
(KS, and its mean with a standard error).

Under the hypothesis that the kernels are equal the p-values are uniform:
the summary gives how many fall below 0.05 and 0.01 against the expected
counts, the smallest with its Bonferroni bound, and a one-sided KS test for
an excess of small p-values (a difference anywhere shows as one). Counts
where both engines suggest one and the same value every time (the best
batch size, late in a run) agree exactly and are counted apart
("identical"), not as p = 1. For the objective at the suggestion the
summary also gives the largest |z| of the difference of means and a
chi-square test of all the z together.

Usage (Debian's python3, which has python3-optuna and python3-scipy):
  /usr/bin/python3 bench/tpe_kernel.py [--build build] [--draws 1000]
      [--seeds 0,1,2] [--cuts 10,25,50,100,200] [--sampler tpe|tpe-mv]
  /usr/bin/python3 bench/tpe_kernel.py --summarize FILE   (the summary of saved lines)
Prints one JSON line per test and the summary; ~25 min on 2 cores, nearly
all of it Optuna's.
"""
import argparse
import json
import math
import os
import subprocess
import sys

import numpy as np
import optuna
from scipy import stats

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import optuna_search as osr  # noqa: E402  (the problems, defined once)

PARAMS = {
    "branin": [("x0", "cont"), ("x1", "cont")],
    "hartmann6": [(f"x{j}", "cont") for j in range(6)],
    "curve": [("lr", "log"), ("weight_decay", "cont"), ("batch_size", "disc"), ("warmup", "disc")],
}


def run_optuna(problem, sampler, seed, n):
    """Optuna's own run: the trials it made (the histories to cut)."""
    maximise = problem == "curve"
    study = optuna.create_study(direction="maximize" if maximise else "minimize",
                                sampler=osr.make_sampler(sampler, seed))
    study.optimize(osr.objective(problem), n_trials=n)
    return study.trials


def optuna_draws(problem, sampler, history, draws, seed):
    maximise = problem == "curve"
    study = optuna.create_study(direction="maximize" if maximise else "minimize",
                                sampler=osr.make_sampler(sampler, seed))
    study.add_trials(history)
    f = osr.objective(problem)
    names = [p for p, _ in PARAMS[problem]]
    out = []
    for _ in range(draws):
        t = study.ask()  # never told: RUNNING, which Optuna's TPE leaves out by default
        value = f(t)
        out.append([t.params[p] for p in names] + [value])
    return np.array(out, dtype=float)


def tune_draws(exe, problem, sampler, history, draws, seed):
    names = [p for p, _ in PARAMS[problem]]
    text = "".join(" ".join(repr(float(t.params[p])) for p in names) + f" {t.value!r}\n"
                   for t in history)
    res = subprocess.run([exe, "kernel", "--searcher", sampler, "--problem", problem,
                          "--draws", str(draws), "--seed0", str(seed)],
                         input=text, capture_output=True, text=True, check=True)
    return np.array([[float(x) for x in line.split()] for line in res.stdout.splitlines()])


def compare(a, b, kind):
    """p-value of 'a and b come from one distribution'; None when both hold one
    and the same value throughout (nothing to test: they agree exactly)."""
    if kind == "log":
        a, b = np.log(a), np.log(b)
    if kind == "disc":
        cats = sorted(set(a) | set(b))
        if len(cats) < 2:
            return None
        table = np.array([[np.sum(a == c) for c in cats], [np.sum(b == c) for c in cats]])
        return float(stats.chi2_contingency(table)[1])
    return float(stats.ks_2samp(a, b).pvalue)


def summary(rows):
    """The verdict over all tests: excess of small p-values, and the objective's means."""
    pv = np.array([r["p"] for r in rows if r.get("p") is not None])
    z = np.array([(r["tune_mean"] - r["optuna_mean"]) / r["diff_se"] for r in rows
                  if r["param"] == "objective" and r["diff_se"] > 0])
    m = len(pv)
    return {"bench": "tpe_kernel", "summary": True, "sampler": rows[0]["sampler"], "tests": m,
            "identical": sum(r.get("p") is None for r in rows),
            "below_0.05": int(np.sum(pv < 0.05)), "expected_0.05": round(0.05 * m, 2),
            "below_0.01": int(np.sum(pv < 0.01)), "expected_0.01": round(0.01 * m, 2),
            "min_p": float(pv.min()), "bonferroni_min_p": float(min(1.0, pv.min() * m)),
            # one-sided: do small p-values come more often than under equal kernels?
            "excess_small_p_ks_p": float(stats.kstest(pv, "uniform", alternative="greater").pvalue),
            # objective at the next suggestion: (tune - Optuna) / its standard error per cut
            "objective_cuts": len(z), "objective_max_abs_z": float(np.abs(z).max()),
            "objective_mean_z": float(z.mean()),
            "objective_chi2_p": float(stats.chi2.sf(float(np.sum(z * z)), len(z)))}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--cuts", default="10,25,50,100,200")
    ap.add_argument("--sampler", default="tpe", choices=["tpe", "tpe-mv"])
    ap.add_argument("--problems", default="branin,hartmann6,curve")
    ap.add_argument("--summarize", metavar="FILE", help="only the summary of an earlier run's lines")
    args = ap.parse_args()
    if args.summarize:
        rows = [json.loads(l) for l in open(args.summarize) if '"summary"' not in l]
        print(json.dumps(summary(rows)))
        return
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    exe = os.path.join(args.build, "bench", "search_bench")
    cuts = [int(c) for c in args.cuts.split(",")]
    rows = []
    for problem in args.problems.split(","):
        for seed in [int(s) for s in args.seeds.split(",")]:
            trials = run_optuna(problem, args.sampler, seed, max(cuts))
            for n in cuts:
                hist = trials[:n]
                a = optuna_draws(problem, args.sampler, hist, args.draws, 1000 + seed)
                b = tune_draws(exe, problem, args.sampler, hist, args.draws, 1000 + seed)
                cols = PARAMS[problem] + [("objective", "cont")]
                for j, (name, kind) in enumerate(cols):
                    p = compare(a[:, j], b[:, j], kind)
                    row = {"bench": "tpe_kernel", "sampler": args.sampler, "problem": problem,
                           "seed": seed, "n": n, "param": name,
                           "test": "chi2" if kind == "disc" else "ks",
                           "p": None if p is None else round(p, 5)}
                    if name == "objective":
                        se = math.sqrt(a[:, j].var() / len(a) + b[:, j].var() / len(b))
                        row.update(optuna_mean=float(a[:, j].mean()),
                                   tune_mean=float(b[:, j].mean()), diff_se=se)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    print(json.dumps(summary(rows)), flush=True)

if __name__ == "__main__":
    main()
