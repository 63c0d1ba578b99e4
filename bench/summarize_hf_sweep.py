#!/usr/bin/env python3
"""Summarises bench/run_hf_sweep.sh's JSON lines: `tune run` against Ray Tune
driving transformers' Trainer on the same MiniLM / SST-2 ASHA sweep.

Each "side" line holds one run of one engine: its start (t0, time.time()),
its wall time to the end of the sweep, the load average at its start and end,
and every report (trial, iteration, val_accuracy, timestamp in whole seconds:
progress.csv's for tune, Ray's result timestamp for Ray). From those:
- best: the largest dev accuracy any report had;
- to within 1 pt: seconds from the start to the first report within 1 point
  (0.01) of that side's own best; "of both" uses the better of the two
  sides' bests of the same repetition (none: the side never got there);
- train / eval s per epoch: medians over the reports after each trial's first
  (whose time also holds the trial's setup) of the seconds spent training one
  epoch and evaluating (tune: from progress.csv's examples_per_s and
  time_this_iter_s, the evaluation's share also holding the report; Ray: the
  Trainer's epoch, on_epoch_begin to on_epoch_end, and its eval_runtime).
Prints a Markdown table per repetition and, with several, the medians.

Usage: bench/summarize_hf_sweep.py bench/out/hf_sweep-<time>.jsonl
"""
import json
import statistics
import sys


def first_within(reports, t0, target):
    times = [r["timestamp"] - t0 for r in reports if r["val_accuracy"] >= target - 1e-12]
    return max(0.0, min(times)) if times else None


def fmt(x, spec=".0f", none="never"):
    return none if x is None else format(x, spec)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: summarize_hf_sweep.py FILE.jsonl")
    sides, meta = {}, {}
    with open(sys.argv[1]) as f:
        for line in f:
            d = json.loads(line)
            if d.get("kind") == "meta":
                meta = d
            elif d.get("kind") == "side":
                sides.setdefault(d["rep"], {})[d["engine"]] = d
    if meta:
        print(f"Sweep: {meta.get('samples')} samples, ASHA grace 1, reduction factor 2, "
              f"max_t {meta.get('epochs')} epochs of {meta.get('max_train_examples')} SST-2 "
              f"examples, dev {meta.get('max_eval_examples') or 'all 872'}, max_seq_len "
              f"{meta.get('max_seq_len')}, {meta.get('concurrency')} trials at once of 1 thread "
              f"each; Ray {'runs tune' if meta.get('same_configs') else 'samples'}"
              f"{chr(39) + 's configurations' if meta.get('same_configs') else ' its own'}. "
              f"{meta.get('versions', '')}; environment: {meta.get('env', '?')}\n")
    ratios, diffs = [], []
    for rep in sorted(sides):
        s = sides[rep]
        best_both = max(d["best"] for d in s.values() if d["best"] is not None)
        print(f"| rep {rep} | wall to the end of the sweep (s) | to within 1 pt of own best (s) "
              f"| to within 1 pt of the best of both (s) | best dev accuracy | trials | reports "
              f"| train / eval s per epoch | load avg start → end |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for eng in ("tune", "ray"):
            if eng not in s:
                continue
            d = s[eng]
            own = first_within(d["reports"], d["t0"], d["best"] - 0.01) if d["best"] is not None else None
            both = first_within(d["reports"], d["t0"], best_both - 0.01)
            la0, la1 = d["load_start"], d["load_end"]
            name = "tune run" if eng == "tune" else "Ray Tune + transformers Trainer"
            err = f" ({d['errors']} errors)" if d.get("errors") else ""
            later = [r for r in d["reports"] if r["iteration"] > 1 and "train_s" in r]
            split = (f"{statistics.median(r['train_s'] for r in later):.0f} / "
                     f"{statistics.median(r['eval_s'] for r in later):.0f}" if later else "—")
            print(f"| {name}{err} | {d['wall_s']:.0f} | {fmt(own)} | {fmt(both)} "
                  f"| {fmt(d['best'], '.4f', '—')} | {d['trials']} | {len(d['reports'])} "
                  f"| {split} | {la0[0]:.2f} {la0[1]:.2f} {la0[2]:.2f} → {la1[0]:.2f} {la1[1]:.2f} "
                  f"{la1[2]:.2f} |")
        if "tune" in s and "ray" in s:
            r = s["tune"]["wall_s"] / s["ray"]["wall_s"]
            dd = 100 * (s["tune"]["best"] - s["ray"]["best"])
            ratios.append(r)
            diffs.append(dd)
            print(f"\ntune wall ÷ Ray wall: **{r:.2f}** (goal ≤ 0.5: "
                  f"{'met' if r <= 0.5 else 'not met'}); tune's best − Ray's best: "
                  f"**{dd:+.2f} points** (goal: at least Ray's − 1: "
                  f"{'met' if dd >= -1 else 'not met'})\n")
    bad = [(rep, d["order_mismatches"]) for rep in sides for d in sides[rep].values()
           if d.get("order_mismatches")]
    for rep, n in bad:
        print(f"rep {rep}: in {n} of Ray's reports the Trainer did not fetch tune's examples: "
              "the two sides did not train on the same data")
    if len(ratios) > 1:
        print(f"Medians over {len(ratios)} repetitions: wall ratio "
              f"{statistics.median(ratios):.2f}, accuracy difference "
              f"{statistics.median(diffs):+.2f} points")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
