#!/usr/bin/env python3
"""Summarise bench/run_search.sh's JSON lines as Markdown: median regret per
(problem, budget, searcher) over the seeds, tune's TPE against Optuna's (with a
Mann-Whitney U test and a bootstrap 95% interval of the ratio of medians:
with 20 seeds, two equivalent searchers' medians differ by chance), tune's GP
against Optuna's GPSampler at 50 evaluations (medians, their ratio with a
bootstrap interval, time per trial), and the time per suggestion with 1,000
finished trials against Optuna's.

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


def ratio_interval_gp(a, b, reps=10000):
    """Bootstrap 95% interval (lower, upper) of median(a) / median(b): each engine's seeds
    resampled with replacement, independently (their seeds drive different generators),
    10,000 times with a fixed seed; None when b's median can be 0."""
    rnd = random.Random(20240917)
    rs = []
    for _ in range(reps):
        mb = statistics.median(rnd.choices(b, k=len(b)))
        ma = statistics.median(rnd.choices(a, k=len(a)))
        if mb <= 0:
            return None
        rs.append(ma / mb)
    rs.sort()
    return rs[int(0.025 * reps)], rs[int(0.975 * reps) - 1]


ORDER = ["random", "sobol", "lhs", "tpe", "tpe-mv", "gp",
         "optuna-random", "optuna-tpe", "optuna-tpe-mv", "optuna-gp"]
LABEL = {"random": "random", "sobol": "Sobol", "lhs": "LHS", "tpe": "TPE", "tpe-mv": "TPE mv",
         "gp": "GP", "optuna-random": "Optuna random", "optuna-tpe": "Optuna TPE",
         "optuna-tpe-mv": "Optuna TPE mv", "optuna-gp": "Optuna GP"}


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

# tune's GP against Optuna's GPSampler at 50 evaluations: regret and time per trial
per_trial = defaultdict(list)  # (problem, searcher) -> seconds per trial of each seed's run
for r in rows:
    if "regret" in r and r["budget"] == 50 and "seconds" in r:
        per_trial[(r["problem"], r["searcher"])].append(r["seconds"] / r["budget"])
gp_probs = [p for p in ["branin", "hartmann6", "curve"]
            if (p, 50, "gp") in reg and (p, 50, "optuna-gp") in reg]
if gp_probs:
    print("\n### GP against Optuna's GPSampler at 50 evaluations\n")
    print("| problem | seeds (tune, Optuna) | tune GP median regret | Optuna GP median regret "
          "| ratio | 95% interval | goal: lower end <= 1 | tune ms/trial | Optuna ms/trial "
          "| speed-up | goal: >= 5x |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for prob in gp_probs:
        a, b = reg[(prob, 50, "gp")], reg[(prob, 50, "optuna-gp")]
        ma, mb = statistics.median(a), statistics.median(b)
        ratio, ci, goal = "-", "-", "-"
        if mb > 0:
            ratio = f"{ma / mb:.2f}"
            iv = ratio_interval_gp(a, b)
            if iv:
                ci = f"{iv[0]:.2f}-{iv[1]:.2f}"
                goal = "met" if iv[0] <= 1.0 else "NOT met"
        ta, tb = per_trial.get((prob, "gp")), per_trial.get((prob, "optuna-gp"))
        mta = 1e3 * statistics.median(ta) if ta else None
        mtb = 1e3 * statistics.median(tb) if tb else None
        speed = f"{mtb / mta:.1f}x" if mta and mtb else "-"
        sgoal = ("met" if mtb / mta >= 5.0 else "NOT met") if mta and mtb else "-"
        print(f"| {prob} | {len(a)}, {len(b)} | {fmt(ma)} | {fmt(mb)} | {ratio} | {ci} | {goal} "
              f"| {f'{mta:.2f}' if mta else '-'} | {f'{mtb:.1f}' if mtb else '-'} | {speed} "
              f"| {sgoal} |")
    print("\nratio: tune's median regret / Optuna's; 95% interval: bootstrap of that ratio, "
          "each engine's seeds resampled (10,000 times, fixed seed). Time per trial: a seed's "
          "wall time for its 50 trials (ask, objective, tell) / 50, median over seeds.")

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
