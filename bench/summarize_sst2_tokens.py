#!/usr/bin/env python3
"""Summarises bench/run_sst2_tokens.sh's JSON lines: per thread count, the
medians over repetitions of real (non-pad) and padded tokens/s of tune's step
(bench_bert_step --data) and of transformers' Trainer (bench/sst2_tokens.py)
on the same SST-2 batches, their ratio (tune ÷ transformers), and the median
CPU other processes used during the timed steps (foreign_cpu, in cores). On a
shared machine the wall-clock figures depend on the share of the cores each
process got; real tokens per CPU second (tokens/s over the cores' worth of CPU
the process itself used, self_cpu) shows the work each engine does per token
whatever that share (at 2 threads it also counts OpenMP's and MKL's waiting).

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
          "| median ms/step | real tokens per CPU s | foreign CPU (cores) |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    med = {}
    for (t, eng) in sorted(runs, key=lambda k: (k[0], k[1] != "tune")):
        rs = runs[(t, eng)]
        m = {k: statistics.median(r[k] for r in rs)
             for k in ("real_tokens_per_s", "padded_tokens_per_s", "examples_per_s",
                       "median_ms_per_step")}
        fc = [r["foreign_cpu"] for r in rs if "foreign_cpu" in r]
        per_cpu = [r["real_tokens_per_s"] / r["self_cpu"] for r in rs if r.get("self_cpu")]
        m["per_cpu"] = statistics.median(per_cpu) if per_cpu else float("nan")
        med[(t, eng)] = m
        bad = [r for r in rs if r.get("order_ok") is False]
        name = "tune" if eng == "tune" else "transformers Trainer"
        print(f"| {t} | {name}{' (ORDER MISMATCH)' if bad else ''} | {len(rs)} "
              f"| {m['real_tokens_per_s']:.0f} | {m['padded_tokens_per_s']:.0f} "
              f"| {m['examples_per_s']:.1f} | {m['median_ms_per_step']:.0f} "
              f"| {m['per_cpu']:.0f} | {statistics.median(fc) if fc else float('nan'):.2f} |")
    print()
    for t in sorted({k[0] for k in med}):
        if (t, "tune") in med and (t, "transformers") in med:
            r = med[(t, "tune")]["real_tokens_per_s"] / med[(t, "transformers")][
                "real_tokens_per_s"]
            c = med[(t, "tune")]["per_cpu"] / med[(t, "transformers")]["per_cpu"]
            print(f"{t} thread(s): tune ÷ transformers, real tokens/s (medians) = **{r:.2f}**; "
                  f"real tokens per CPU second = **{c:.2f}**")


if __name__ == "__main__":
    main()
