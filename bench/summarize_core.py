#!/usr/bin/env python3
"""Summarise bench/run_core.sh's JSON lines as Markdown: medians and ratios to the peer."""
import json
import statistics
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def pick(**kw):
    return [r for r in rows if all(r.get(k) == v for k, v in kw.items())]


print("### Trivial objective throughput (medians over runs)\n")
print("| engine | storage | reports/trial | trials/s | µs/trial | µs/report | ratio to Optuna |")
print("|---|---|---|---|---|---|---|")
info = pick(bench="optuna_info")
opt_name = "Optuna %s" % info[0]["optuna"] if info else "Optuna"
opt_mem = med([r["trials_per_s"] for r in pick(bench="optuna", part="a")])
opt_sql = med([r["trials_per_s"] for r in pick(bench="optuna", part="c")])
for storage, reports in (("memory", 1), ("sqlite", 1), ("sqlite", 10)):
    rs = pick(bench="tune", part="overhead", storage=storage, reports_per_trial=reports)
    if not rs:
        continue
    tps = med([r["trials_per_s"] for r in rs])
    peer = opt_mem if storage == "memory" else opt_sql
    ratio = f"{tps / peer:.0f}x" if peer == peer and reports == 1 else "-"
    print(f"| tune | {storage} | {reports} | {tps:,.0f} | {med([r['us_per_trial'] for r in rs]):.2f} "
          f"| {med([r['us_per_report'] for r in rs]):.2f} | {ratio} |")
if opt_mem == opt_mem:
    print(f"| {opt_name} RandomSampler | memory | 1 | {opt_mem:,.0f} | {1e6 / opt_mem:.0f} | - | 1x |")
if opt_sql == opt_sql:
    print(f"| {opt_name} RandomSampler | sqlite | 1 | {opt_sql:,.1f} | {1e6 / opt_sql:.0f} | - | 1x |")

for r in pick(bench="tune", part="sleep"):
    print("\n### Bookkeeping: 10,000 trials x 0.1 s, 16 concurrent\n")
    print(f"wall {r['wall_s']:.2f} s against the ideal {r['ideal_s']} s: "
          f"{100 * (r['wall_s'] / r['ideal_s'] - 1):.2f}% over (Ray Tune's own figure: 14% over)")

curve = pick(bench="tune", part="asha_curve")
if curve:
    print("\n### ASHA on the 27-step synthetic curve, 500 trials, random search, seed 42\n")
    print("| engine | early stopping | steps | steps vs none | stopped | best value (noisy) "
          "| its true final | best true final among completed |")
    print("|---|---|---|---|---|---|---|---|")
    full = {r["scheduler"]: r for r in curve}
    base = full.get("fifo", {}).get("steps", 13500)
    for r in curve:
        print(f"| tune | {'ASHA rf 3' if r['scheduler'] == 'asha' else 'none'} | {r['steps']} "
              f"| {100 * r['steps'] / base:.1f}% | {r['stopped']} | {r['best_value']:.4f} "
              f"| {r['best_true_final']:.4f} | {r['best_true_among_completed']:.4f} |")
    for r in pick(bench="optuna", part="d"):
        if r.get("sampler") != "RandomSampler":
            continue
        print(f"| Optuna | {r['pruner']} | {r['total_steps']} "
              f"| {100 * r['steps_fraction_of_full']:.1f}% | {r['n_pruned']} | {r['best_value']:.4f} "
              f"| {r['best_trial_true_final']:.4f} | {r['best_true_final_among_completed']:.4f} |")
