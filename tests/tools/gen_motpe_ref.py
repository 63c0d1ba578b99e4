#!/usr/bin/env python3
"""gen_motpe_ref.py - reference splits, subset selections and weights for
tests/test_motpe.c from Optuna 5.0's own multi-objective TPE code.

For each small table of objective values (the sets below, also in
test_motpe.c), and each number n_below of good trials:
- the good set, from optuna.samplers._tpe.sampler._split_complete_trials_multi_objective
  on FrozenTrials made with optuna.trial.create_trial (Optuna 5.0: non-dominated
  ranks, the boundary rank cut by optuna._hypervolume.hssp._solve_hssp);
- the weights of the good trials in l(x) by hypervolume contribution.
  Optuna 5.0 weighs good trials uniformly and no longer has this function;
  the rule is that of Optuna 4.9's _calculate_weights_below_for_multi_objective
  (removed in optuna commit 2dfba0893, "Make the weights of good trials
  uniform"), restated in weights_below() with Optuna 5.0's own
  compute_hypervolume, _is_pareto_front and _get_reference_point.
And _solve_hssp itself on one front of three objectives, for every subset size.

Run with the venv of bench/hf_setup_venv.sh (Optuna 5.0):
  ~/.cache/tune-bench/hf-venv/bin/python tests/tools/gen_motpe_ref.py
and paste its output into test_motpe.c. Never run by meson.
"""
import numpy as np
import optuna
from optuna._hypervolume import compute_hypervolume
from optuna._hypervolume.hssp import _solve_hssp
from optuna.samplers._tpe.sampler import (EPS, _get_reference_point,
                                          _split_complete_trials_multi_objective)
from optuna.study._multi_objective import _is_pareto_front

# Each set: directions and the rows of objective values, in trial order.
SETS = {
    # both minimised: a duplicate (1, 2) on the front, a tie in f2 (4, 7), three ranks
    "min2": (["minimize", "minimize"],
             [(1, 5), (2, 3), (2, 3), (3, 2), (5, 1), (4, 4), (2, 6), (6, 1), (3, 5), (1.5, 4),
              (4.5, 1.5), (7, 7)]),
    # accuracy maximised, latency minimised: duplicates (0, 4), ties in accuracy
    "maxmin": (["maximize", "minimize"],
               [(0.9, 10), (0.8, 5), (0.9, 12), (0.7, 6), (0.9, 10), (0.95, 20), (0.85, 8),
                (0.6, 4), (0.95, 25), (0.5, 30)]),
    # three objectives: min, min, max; a duplicate (2, 7)
    "three": (["minimize", "minimize", "maximize"],
              [(1, 4, 3), (2, 2, 2), (3, 1, 4), (4, 3, 5), (2.5, 2.5, 3.5), (1.5, 3, 1),
               (3, 3, 3), (2, 2, 2), (0.5, 5, 0.5), (4, 4, 4), (5, 0.5, 1)]),
}

# One front of three objectives (minimised) for _solve_hssp: a repeat (rows 1 and 5).
FRONT3 = [(1, 6, 4), (2, 4, 5), (3, 3, 3), (4, 2, 6), (6, 1, 2), (2, 4, 5), (5, 5, 1),
          (1.5, 5, 5.5)]


def weights_below(lvals):
    """Optuna 4.9's hypervolume-contribution weights of the good trials (all feasible)."""
    n = len(lvals)
    w = np.ones(n)
    if n <= 1:
        return w
    ref = _get_reference_point(lvals)
    on_front = _is_pareto_front(lvals, assume_unique_lexsorted=False)
    front = lvals[on_front]
    hv = compute_hypervolume(front, ref, assume_pareto=True)
    if np.isinf(hv):
        return w
    contribs = np.zeros(n)
    contribs[on_front] = [
        hv - compute_hypervolume(np.delete(front, i, axis=0), ref, assume_pareto=True)
        for i in range(len(front))
    ]
    return np.maximum(contribs / max(np.max(contribs), EPS), EPS)


def main():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    print("/* tests/tools/gen_motpe_ref.py, Optuna %s */" % optuna.__version__)
    for name, (directions, rows) in SETS.items():
        study = optuna.create_study(directions=directions)
        trials = [optuna.trial.create_trial(values=list(r)) for r in rows]
        lvals = np.array(rows, dtype=float) * [-1.0 if d == "maximize" else 1.0
                                               for d in directions]
        print("static const struct split_ref ref_%s[] = {" % name)
        for n_below in range(1, len(rows)):
            below, _ = _split_complete_trials_multi_objective(trials, study, n_below)
            mask = [any(t is b for b in below) for t in trials]
            w = weights_below(lvals[np.array(mask)])
            print('    {%d, "%s", {%s}},' % (n_below, "".join("1" if m else "0" for m in mask),
                                            ", ".join("%.17g" % x for x in w)))
        print("};")
    y = np.array(FRONT3, dtype=float)
    ref = _get_reference_point(y)
    print("/* _solve_hssp on FRONT3, reference point (%s) */" % ", ".join("%.17g" % r for r in ref))
    print("static const char *const ref_hssp3[] = {")
    for k in range(1, len(FRONT3)):
        sel = set(_solve_hssp(y, np.arange(len(FRONT3)), k, ref).tolist())
        print('    "%s", /* k = %d */' % ("".join("1" if i in sel else "0"
                                                   for i in range(len(FRONT3))), k))
    print("};")


if __name__ == "__main__":
    main()
