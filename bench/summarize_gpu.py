#!/usr/bin/env python3
"""summarize_gpu.py - bench/out/gpu-report.md from one scripts/gpu-check run.

    summarize_gpu.py RAW_DIR REPORT GPU_LINE REVISION SECONDS BUILD_WARNINGS

RAW_DIR holds tests.txt ("name exit-status" or "name skipped" lines), the
CUDA tests' output (test_cuda_*.txt, with their per-tensor error lines),
bench.jsonl (bench_bert_step_gpu and bench/torch_gpu_step.py lines) and
util.jsonl (bench/gpu_util.sh). The issue's goals are checked, not enforced:
at least PyTorch's throughput for bert-base and twice it for bert-tiny; with
8 concurrent bert-tiny trials at least 85% utilisation and 4x one trial's
throughput. Plain standard library: runs on any python3.
"""
import json
import os
import re
import sys

GOALS = {"tiny": 2.0, "base": 1.0}  # tune throughput / PyTorch throughput


def jsonl(raw, name):
    rows = []
    path = os.path.join(raw, name)
    if os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass
    return rows


def first_line(raw, name):
    path = os.path.join(raw, name + ".txt")
    if not os.path.exists(path):
        return "?"
    with open(path) as f:
        return f.readline().strip() or "?"


def tests_section(raw):
    out = ["\n## Tests\n\n| test | result |\n|---|---|\n"]
    path = os.path.join(raw, "tests.txt")
    for line in open(path) if os.path.exists(path) else []:
        parts = line.split()
        if len(parts) < 2:
            continue
        res = ("skipped" if parts[1] == "skipped"
               else "stopped at its time limit, no error before" if parts[1] == "timed-out"
               else "passed" if parts[1] == "0"
               else "SKIPPED, CUDA unusable: %s" % first_line(raw, parts[0]) if parts[1] == "77"
               else "FAILED (exit %s)" % parts[1])
        out.append("| %s | %s |\n" % (parts[0], res))
    for name in ("test_cuda_kernels", "test_cuda_model"):
        path = os.path.join(raw, name + ".txt")
        if not os.path.exists(path):
            continue
        lines = [l.rstrip() for l in open(path)
                 if re.match(r"\s+\S", l) or "Checks" in l or l.startswith("device")]
        out.append("\n<details><summary>%s: measured errors (%d lines)</summary>\n\n```\n%s\n```\n"
                   "</details>\n" % (name, len(lines), "\n".join(lines[:400])))
    return out


def steps_section(rows):
    tune = {(r["config"], r["precision"]): r for r in rows
            if r.get("engine") == "tune" and "median_ms" in r}
    peer = {(r["config"], r["precision"]): r for r in rows
            if r.get("engine") == "pytorch" and "median_ms" in r}
    out = ["\n## Training step (batch 32, sequence 128)\n\n",
           "| model | precision | tune ms | PyTorch ms | tune ex/s | PyTorch ex/s "
           "| tune / PyTorch | tune TFLOP/s | goal |\n|---|---|---|---|---|---|---|---|---|\n"]
    for cfg, goal in GOALS.items():
        for prec in ("fp32", "tf32"):
            t, p = tune.get((cfg, prec)), peer.get((cfg, prec))
            if not t:
                out.append("| bert-%s | %s | failed | | | | | | |\n" % (cfg, prec))
                continue
            if p:
                ratio = t["examples_per_s"] / p["examples_per_s"]
                verdict = "%s (>= %gx)" % ("met" if ratio >= goal else "NOT met", goal)
                cells = ("%.2f" % p["median_ms"], "%.0f" % p["examples_per_s"], "%.2fx" % ratio)
            else:
                verdict = ">= %gx: no peer figure" % goal
                cells = ("n/a", "n/a", "n/a")
            out.append("| bert-%s | %s | %.2f | %s | %.0f | %s | %s | %.1f | %s |\n"
                       % (cfg, prec, t["median_ms"], cells[0], t["examples_per_s"], cells[1],
                          cells[2], t["tflops"], verdict))
    skips = sorted({r["skipped"] for r in rows if "skipped" in r})
    if skips:
        out.append("\nPyTorch peer: %s\n" % "; ".join(skips))
    return out


def util_section(util):
    out = ["\n## Concurrent bert-tiny trials on one GPU (NVML utilisation every 100 ms)\n\n",
           "| trials | examples/s total | speed-up over 1 | utilisation mean % | median % "
           "| p10 % | samples |\n|---|---|---|---|---|---|---|\n"]
    for u in util:
        out.append("| %d | %.0f | %.2fx | %s | %s | %s | %d |\n"
                   % (u["trials"], u["examples_per_s"], u["speedup_vs_1"], u["util_mean"],
                      u["util_median"], u["util_p10"], u["samples"]))
    eight = [u for u in util if u["trials"] == 8]
    if eight:
        e = eight[0]
        ok_u = e["util_mean"] is not None and e["util_mean"] >= 85
        out.append("\nGoals at 8 trials: utilisation >= 85%%: %s; throughput >= 4x one trial: %s\n"
                   % ("met" if ok_u else "NOT met", "met" if e["speedup_vs_1"] >= 4 else "NOT met"))
    else:
        out.append("\nNo utilisation figures (see the raw output).\n")
    return out


def main():
    raw, report, gpu_line, rev, secs, warns = sys.argv[1:7]
    text = ["# GPU check\n\n",
            "- GPU: %s\n- revision %s; raw output in `%s`; %s s in all; %s build warning lines\n"
            % (gpu_line, rev, raw, secs, warns)]
    text += tests_section(raw)
    text += steps_section(jsonl(raw, "bench.jsonl"))
    text += util_section(jsonl(raw, "util.jsonl"))
    with open(report, "w") as f:
        f.write("".join(text))
    sys.stdout.write("".join(text))


if __name__ == "__main__":
    main()
