#!/usr/bin/env python3
"""Summarise bench/run_search.sh's JSON lines as Markdown: median regret per
(problem, budget, searcher) over the seeds, tune's TPE against Optuna's (with a
Mann-Whitney U test and a bootstrap 95% interval of the ratio of medians:
with 20 seeds, two equivalent searchers' medians differ by chance), and the
time per suggestion with 1,000 finished trials against Optuna's.

Usage: summarize_search.py FILE.jsonl [MORE.jsonl ...] (lines of all files pooled)
"""
import json
import random
import statistics
import sys
from collections import defaultdict

rows = [json.loads(l) for f in sys.argv[1:] for l in open(f) if l.strip().startswith("{")]
try:
    from scipy.stats import mannwhitneyu
except ImportError:  # the table then goes without p-values
    mannwhitneyu = None


def ratio_interval(a, b, reps=2000):
    """Bootstrap 95% interval of median(a) / median(b), resampling each set (fixed seed)."""
    rnd = random.Random(12345)
    rs = []
    for _ in range(reps):
        mb = statistics.median(rnd.choices(b, k=len(b)))
        if mb > 0:
            rs.append(statistics.median(rnd.choices(a, k=len(a))) / mb)
    rs.sort()
    if len(rs) < 40:
        return "-"
    return f"{rs[int(0.025 * len(rs))]:.2f}-{rs[int(0.975 * len(rs)) - 1]:.2f}"


ORDER = ["random", "sobol", "lhs", "tpe", "tpe-mv", "gp",
         "optuna-random", "optuna-tpe", "optuna-tpe-mv"]
LABEL = {"random": "random", "sobol": "Sobol", "lhs": "LHS", "tpe": "TPE", "tpe-mv": "TPE mv",
         "gp": "GP", "optuna-random": "Optuna random", "optuna-tpe": "Optuna TPE",
         "optuna-tpe-mv": "Optuna TPE mv"}


def quartiles(xs):
    xs = sorted(xs)
    if len(xs) < 4:
        return statistics.median(xs), xs[0], xs[-1]
    q = statistics.quantiles(xs, n=4)
    return q[1], q[0], q[2]


def fmt(x):
    return f"{x:.3g}" if abs(x) >= 1e-3 or x == 0 else f"{x:.2e}"


reg = defaultdict(list)
for r in rows:
    if "regret" in r:
        reg[(r["problem"], r["budget"], r["searcher"])].append(r["regret"])
searchers = [s for s in ORDER if any(k[2] == s for k in reg)]
cases = sorted({(k[0], k[1]) for k in reg}, key=lambda c: (["branin", "hartmann6", "curve"].index(c[0]), c[1]))
if cases:
    counts = {s: min(len(v) for k, v in reg.items() if k[2] == s) for s in searchers}
    if len(set(counts.values())) == 1:
        over = f"{next(iter(counts.values()))} seeds"
    else:
        over = "the seeds (" + ", ".join(f"{LABEL[s]} {counts[s]}" for s in searchers) + ")"
    print(f"### Median regret over {over} (lower is better; curve: best possible "
          "final value minus the best found)\n")
    print("| problem | evals | " + " | ".join(LABEL[s] for s in searchers) +
          " | TPE / Optuna TPE | 95% interval | goal: TPE <= Optuna TPE | Mann-Whitney p |")
    print("|---|---|" + "---|" * len(searchers) + "---|---|---|---|")
    for prob, budget in cases:
        med = {s: statistics.median(reg[(prob, budget, s)]) for s in searchers
               if (prob, budget, s) in reg}
        cells = [fmt(med[s]) if s in med else "-" for s in searchers]
        ratio, ci, goal, p = "-", "-", "-", "-"
        if "tpe" in med and "optuna-tpe" in med and med["optuna-tpe"] > 0:
            ratio = f"{med['tpe'] / med['optuna-tpe']:.2f}"
            ci = ratio_interval(reg[(prob, budget, 'tpe')], reg[(prob, budget, 'optuna-tpe')])
            goal = "met" if med["tpe"] <= med["optuna-tpe"] else "NOT met"
            if mannwhitneyu:
                p = f"{mannwhitneyu(reg[(prob, budget, 'tpe')], reg[(prob, budget, 'optuna-tpe')], alternative='two-sided').pvalue:.2f}"
        print(f"| {prob} | {budget} | " + " | ".join(cells) + f" | {ratio} | {ci} | {goal} | {p} |")
    if mannwhitneyu:
        print("\np: two-sided Mann-Whitney U test of tune's TPE regrets against Optuna's TPE "
              "regrets; a large p says the two cannot be told apart at this number of seeds. "
              "95% interval: bootstrap interval of the ratio of medians (each set resampled).")
    print("\nQuartiles (q1 - q3) of the regret:\n")
    print("| problem | evals | " + " | ".join(LABEL[s] for s in searchers) + " |")
    print("|---|---|" + "---|" * len(searchers))
    for prob, budget in cases:
        cells = []
        for s in searchers:
            v = reg.get((prob, budget, s))
            if v:
                _, q1, q3 = quartiles(v)
                cells.append(f"{fmt(q1)} - {fmt(q3)}")
            else:
                cells.append("-")
        print(f"| {prob} | {budget} | " + " | ".join(cells) + " |")

tim = [r for r in rows if r.get("part") == "timing"]
if tim:
    print("\n### Time per suggestion with 1,000 finished trials, 4 parameters "
          "(trials 980-999; medians over runs)\n")
    print("| searcher | runs | wall ms (median of window) | CPU ms (median of window) "
          "| CPU vs Optuna TPE |")
    print("|---|---|---|---|---|")
    by = defaultdict(list)
    for r in tim:
        by[r["searcher"]].append(r)
    opt = by.get("optuna-tpe")
    opt_cpu = statistics.median([r["suggest_cpu_ms_median"] for r in opt]) if opt else None
    for s in ["tpe", "tpe-mv", "optuna-tpe"]:
        if s not in by:
            continue
        wall = statistics.median([r["suggest_ms_median"] for r in by[s]])
        cpu = statistics.median([r["suggest_cpu_ms_median"] for r in by[s]])
        ratio = f"1/{opt_cpu / cpu:.0f}" if opt_cpu and s != "optuna-tpe" else "1"
        print(f"| {LABEL[s]} | {len(by[s])} | {wall:.3f} | {cpu:.3f} | {ratio} |")
    if opt_cpu and "tpe" in by:
        cpu = statistics.median([r["suggest_cpu_ms_median"] for r in by["tpe"]])
        print(f"\nGoal (TPE at most 1/100 of Optuna's time): "
              f"{'met' if cpu <= opt_cpu / 100 else 'NOT met'} ({cpu:.3f} ms against "
              f"{opt_cpu:.1f} ms CPU).")
