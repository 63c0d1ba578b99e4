#!/usr/bin/env python3
"""Ray Tune's side of the ASHA sweep that bench/asha_sweep.c runs in tune.

N trials of the noise-free synthetic learning curve (trainers/synthetic.c,
tunep_synthetic_curve, written below with the same operations in the same
order, so both engines compute bit-identical values), up to I reports each,
under ASHAScheduler(grace_period=1, reduction_factor=4, max_t=I) on
val_accuracy (max), over the same space: lr loguniform(1e-6, 1e-1),
weight_decay uniform(0, 0.3), batch_size choice([16, 32, 64]),
warmup_steps randint(0, 11).

  ray_sweep.py [--trials N] [--iterations I] [--concurrency C] [--seed S]
               [--configs TUNE_LOG] [--log FILE] [--no-reuse-actors]

--configs takes the per-report log that `asha_sweep --log` writes and runs
exactly tune's configurations in tune's trial order (a grid over the config
index, which Ray's BasicVariantGenerator creates in order and the FIFO order
of pending trials starts in order). --log writes the same line format as
asha_sweep, "trial lr weight_decay batch_size warmup_steps iteration value
answer", from a thin subclass of ASHAScheduler that records each result and
the decision Ray's own code took on it.

Prints one JSON line: ray.init time, Tuner.fit() wall time, the time spent
computing the curve (each trial reports its cumulative objective seconds), the
reports the driver processed, and the overhead per report,
(wall - objective) / reports. Ray's defaults otherwise: results and
experiment state written under a storage path (a temporary folder here),
one CPU per trial. reuse_actors is on (Ray's advice for many short trials;
its default is off: one new worker process per trial).
"""
import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time


def curve(lr, wd, bs, warm, it):
    """tunep_synthetic_curve (trainers/synthetic.c), operation for operation, on
    the same libm: pow(x, 2) is written x * x (gcc's exact rewrite). Checked
    bit for bit against the C function on 200,000 random inputs, and every
    bench/run compares the values both engines reported."""
    if not lr > 0:
        lr = 1e-12
    if not bs > 0:
        bs = 1.0
    dl = math.log10(lr) - math.log10(3e-4)
    if bs < 32:
        p = math.log2(32.0 / bs)
        pen = 0.01 * (p * p)
    else:
        p = math.log2(bs / 32.0)
        pen = 0.015 * (p * p)
    asym = 0.93 - 0.06 * dl * dl - 0.4 * (wd - 0.05) * (wd - 0.05) - pen - 0.002 * math.fabs(warm - 3.0)
    if asym < 0.3:
        asym = 0.3
    k = 0.04 + 0.3 * min(1.0, math.sqrt(lr / 1e-3))
    return asym * (1.0 - 0.7 * math.exp(-k * float(it)))


def read_configs(path):
    """Trial id -> (lr, weight_decay, batch_size, warmup_steps) from an asha_sweep log."""
    configs = {}
    for line in open(path):
        f = line.split()
        if len(f) == 8:
            configs.setdefault(int(f[0]), (float(f[1]), float(f[2]), float(f[3]), float(f[4])))
    ids = sorted(configs)
    if ids != list(range(len(ids))):
        sys.exit(f"ray_sweep: {path}: trial ids are not 0..{len(ids) - 1}")
    return [configs[i] for i in ids]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--configs", help="asha_sweep --log output: run tune's configurations")
    ap.add_argument("--log", help="write every result and Ray's decision here")
    ap.add_argument("--no-reuse-actors", action="store_true",
                    help="Ray's default: a new worker process per trial")
    ap.add_argument("--cpus", type=int, default=os.cpu_count())
    a = ap.parse_args()

    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import numpy as np
    import ray
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler
    from ray.tune.search.basic_variant import BasicVariantGenerator

    iterations = a.iterations
    configs = read_configs(a.configs) if a.configs else None

    def objective(config):
        if configs is not None:
            lr, wd, bs, warm = configs[config["i"]]
        else:
            lr, wd = config["lr"], config["weight_decay"]
            bs, warm = float(config["batch_size"]), float(config["warmup_steps"])
        spent = 0.0
        for it in range(1, iterations + 1):
            t0 = time.perf_counter()
            v = curve(lr, wd, bs, warm, it)
            spent += time.perf_counter() - t0
            tune.report({"val_accuracy": v, "objective_s": spent})

    log = []

    class LoggingASHA(ASHAScheduler):
        """Ray's ASHA unchanged; records what it was given and what it decided."""

        def on_trial_result(self, controller, trial, result):
            decision = super().on_trial_result(controller, trial, result)
            log.append((trial.trial_id, dict(trial.config), result["training_iteration"],
                        result["val_accuracy"], decision))
            return decision

    sched_args = dict(time_attr="training_iteration", max_t=iterations, grace_period=1,
                      reduction_factor=4, brackets=1)
    scheduler = LoggingASHA(**sched_args) if a.log else ASHAScheduler(**sched_args)
    if configs is not None:
        space = {"i": tune.grid_search(list(range(len(configs))))}
        num_samples = 1
    else:
        space = {"lr": tune.loguniform(1e-6, 1e-1), "weight_decay": tune.uniform(0, 0.3),
                 "batch_size": tune.choice([16, 32, 64]), "warmup_steps": tune.randint(0, 11)}
        num_samples = a.trials
    np.random.seed(a.seed)  # ASHA's bracket draw (one bracket: no choice) uses numpy's global state

    t0 = time.perf_counter()
    ray.init(num_cpus=a.cpus, include_dashboard=False, logging_level="ERROR",
             log_to_driver=False, configure_logging=True)
    init_s = time.perf_counter() - t0
    storage = tempfile.mkdtemp(prefix="ray-sweep-")
    try:
        tuner = tune.Tuner(
            objective,
            param_space=space,
            tune_config=tune.TuneConfig(
                metric="val_accuracy", mode="max", scheduler=scheduler, num_samples=num_samples,
                reuse_actors=not a.no_reuse_actors,
                # What max_concurrent_trials does, on a generator that also takes a seed
                # (Ray ignores max_concurrent_trials when given a generator).
                search_alg=BasicVariantGenerator(max_concurrent=a.concurrency,
                                                 random_state=a.seed)),
            run_config=tune.RunConfig(name="ray_sweep", storage_path=storage, verbose=0))
        t1 = time.perf_counter()
        grid = tuner.fit()
        wall = time.perf_counter() - t1
        results = [r.metrics for r in grid]
        errors = sum(1 for r in grid if r.error)
    finally:
        shutil.rmtree(storage, ignore_errors=True)
        ray.shutdown()

    reports = sum(int(m.get("training_iteration", 0)) for m in results)
    objective_s = sum(float(m.get("objective_s", 0.0)) for m in results)
    ended = {}
    for m in results:
        k = str(int(m.get("training_iteration", 0)))
        ended[k] = ended.get(k, 0) + 1
    print(json.dumps({
        "bench": "ray", "part": "ray_sweep", "ray_version": ray.__version__,
        "python": sys.version.split()[0], "trials": len(results), "iterations": iterations,
        "concurrency": a.concurrency, "reuse_actors": not a.no_reuse_actors,
        "same_configs_as_tune": configs is not None, "errors": errors,
        "init_s": round(init_s, 4), "wall_s": round(wall, 4), "objective_s": round(objective_s, 6),
        "reports": reports, "us_per_report": round(1e6 * (wall - objective_s) / max(reports, 1), 2),
        "ended_at": dict(sorted(ended.items(), key=lambda kv: int(kv[0])))}), flush=True)

    if a.log:
        # Trials in the order Ray created them (its trial ids are "<run>_00000", ...);
        # with --configs the trial number is the tune trial the config came from.
        order = {}
        with open(a.log, "w") as f:
            for tid, cfg, it, v, decision in log:
                n = cfg["i"] if configs is not None else order.setdefault(tid, len(order))
                lr, wd, bs, warm = (configs[n] if configs is not None else
                                    (cfg["lr"], cfg["weight_decay"], cfg["batch_size"],
                                     cfg["warmup_steps"]))
                f.write(f"{n} {lr!r} {wd!r} {bs:.0f} {warm:.0f} {it} {v!r} "
                        f"{'stop' if decision == 'STOP' else 'continue'}\n")


if __name__ == "__main__":
    main()
