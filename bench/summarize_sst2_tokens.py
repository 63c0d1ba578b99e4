#!/usr/bin/env python3
"""Summarises bench/run_sst2_tokens.sh's JSON lines: per thread count, the
medians over repetitions of real (non-pad) and padded tokens/s of tune's step
(bench_bert_step --data) and of transformers' Trainer (bench/sst2_tokens.py)
on the same SST-2 batches, their ratio (tune ÷ transformers), and the median
CPU other processes used during the timed steps (foreign_cpu, in cores).

Usage: bench/summarize_sst2_tokens.py bench/out/sst2_tokens-<time>.jsonl
"""
import json
import statistics
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: summarize_sst2_tokens.py FILE.jsonl")
    runs = {}
    first = None
    with open(sys.argv[1]) as f:
        for line in f:
            d = json.loads(line)
            runs.setdefault((d["threads"], d["engine"]), []).append(d)
            first = first or d
    if not runs:
        sys.exit("no runs")
    print(f"{first['model']}, batch {first['batch']}, max_seq_len {first['max_seq_len']}, "
          f"{first['steps']} timed steps after {first['warmup']}: mean real length "
          f"{first['mean_real_len']:.1f} tokens, mean padded length "
          f"{first['mean_padded_len']:.1f} (dynamic padding)\n")
    print("| threads | engine | runs | real tokens/s | padded tokens/s | examples/s "
          "| median ms/step | foreign CPU (cores) |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    med = {}
    for (t, eng) in sorted(runs, key=lambda k: (k[0], k[1] != "tune")):
        rs = runs[(t, eng)]
        m = {k: statistics.median(r[k] for r in rs)
             for k in ("real_tokens_per_s", "padded_tokens_per_s", "examples_per_s",
                       "median_ms_per_step")}
        fc = [r["foreign_cpu"] for r in rs if "foreign_cpu" in r]
        med[(t, eng)] = m
        bad = [r for r in rs if r.get("order_ok") is False]
        name = "tune" if eng == "tune" else "transformers Trainer"
        print(f"| {t} | {name}{' (ORDER MISMATCH)' if bad else ''} | {len(rs)} "
              f"| {m['real_tokens_per_s']:.0f} | {m['padded_tokens_per_s']:.0f} "
              f"| {m['examples_per_s']:.1f} | {m['median_ms_per_step']:.0f} "
              f"| {statistics.median(fc) if fc else float('nan'):.2f} |")
    print()
    for t in sorted({k[0] for k in med}):
        if (t, "tune") in med and (t, "transformers") in med:
            r = med[(t, "tune")]["real_tokens_per_s"] / med[(t, "transformers")][
                "real_tokens_per_s"]
            print(f"{t} thread(s): tune ÷ transformers (real tokens/s, medians) = **{r:.2f}**")


if __name__ == "__main__":
    main()
