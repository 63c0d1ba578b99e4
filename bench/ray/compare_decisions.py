#!/usr/bin/env python3
"""Compares tune's and Ray Tune's ASHA decisions on the same configurations.

  compare_decisions.py TUNE_LOG RAY_LOG

Both logs have one line per report, "trial lr weight_decay batch_size
warmup_steps iteration value answer" (bench/asha_sweep --log and
bench/ray/ray_sweep.py --configs TUNE_LOG --log). Floats are compared as
numbers, bit for bit. Checks, per trial: the same configuration, the same
values at every iteration, the same answer (continue or stop) to every report,
and so the same last iteration; and that Ray processed the trials in tune's
order (decisions depend on the order in which results reach a rung).

Prints one JSON line (counts, and every mismatch up to 50), and exits 1 when
anything differs.
"""
import json
import sys


def load(path):
    """[(trial, config, iteration, value, answer)] in file order."""
    rows = []
    for n, line in enumerate(open(path), 1):
        f = line.split()
        if not f:
            continue
        if len(f) != 8 or f[7] not in ("continue", "stop"):
            sys.exit(f"compare_decisions: {path}:{n}: expected 8 fields ending in continue|stop")
        rows.append((int(f[0]), tuple(float(x) for x in f[1:5]), int(f[5]), float(f[6]), f[7]))
    return rows


def by_trial(rows):
    trials = {}
    for trial, cfg, it, v, ans in rows:
        t = trials.setdefault(trial, {"config": cfg, "reports": []})
        t["reports"].append((it, v, ans))
    return trials


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    tune_rows, ray_rows = load(sys.argv[1]), load(sys.argv[2])
    tune, ray = by_trial(tune_rows), by_trial(ray_rows)

    # The order in which Ray's scheduler saw the trials: each trial's first result.
    seen, ray_order = set(), []
    for trial, *_ in ray_rows:
        if trial not in seen:
            seen.add(trial)
            ray_order.append(trial)
    in_order = ray_order == sorted(ray_order)
    # One at a time, a trial's results arrive together: a trial that comes back after
    # another one started means two ran at once.
    interleaved, done, prev = False, set(), None
    for trial, *_ in ray_rows:
        if trial != prev:
            interleaved = interleaved or trial in done
            done.add(prev)
            prev = trial

    mismatches = []
    counts = {"trials_tune": len(tune), "trials_ray": len(ray), "reports_tune": len(tune_rows),
              "reports_ray": len(ray_rows), "config_diff": 0, "value_diff": 0, "answer_diff": 0,
              "last_iteration_diff": 0}
    for trial in sorted(set(tune) | set(ray)):
        t, r = tune.get(trial), ray.get(trial)
        if t is None or r is None:
            mismatches.append({"trial": trial, "missing_in": "tune" if t is None else "ray"})
            continue
        if t["config"] != r["config"]:
            counts["config_diff"] += 1
            mismatches.append({"trial": trial, "config_tune": t["config"], "config_ray": r["config"]})
        tr, rr = dict((it, (v, a)) for it, v, a in t["reports"]), \
            dict((it, (v, a)) for it, v, a in r["reports"])
        for it in sorted(set(tr) | set(rr)):
            tv, rv = tr.get(it), rr.get(it)
            if tv is None or rv is None:
                continue  # counted below as a different last iteration
            if tv[0] != rv[0]:
                counts["value_diff"] += 1
                mismatches.append({"trial": trial, "iteration": it, "value_tune": tv[0],
                                   "value_ray": rv[0]})
            if tv[1] != rv[1]:
                counts["answer_diff"] += 1
                mismatches.append({"trial": trial, "iteration": it, "answer_tune": tv[1],
                                   "answer_ray": rv[1], "value": tv[0]})
        lt, lr = t["reports"][-1][0], r["reports"][-1][0]
        if lt != lr:
            counts["last_iteration_diff"] += 1
            mismatches.append({"trial": trial, "last_iteration_tune": lt, "last_iteration_ray": lr})

    def stopped_at(trials):
        hist = {}
        for t in trials.values():
            k = str(t["reports"][-1][0])
            hist[k] = hist.get(k, 0) + 1
        return dict(sorted(hist.items(), key=lambda kv: int(kv[0])))

    identical = (not mismatches and in_order and len(tune) == len(ray) and not interleaved)
    print(json.dumps({"bench": "compare", "part": "asha_decisions", "identical": identical,
                      "ray_in_tune_order": in_order, "ray_trials_interleaved": interleaved,
                      **counts, "ended_at_tune": stopped_at(tune), "ended_at_ray": stopped_at(ray),
                      "mismatches": mismatches[:50], "mismatch_count": len(mismatches)}))
    sys.exit(0 if identical else 1)


if __name__ == "__main__":
    main()
