#!/usr/bin/env python3
"""Writes bench/RESULTS.md from one bench/run: the headline table of ratios,
the machine and versions, the Ray Tune comparison, and each part's own
Markdown summary (bench/run_core.sh, run_search.sh, run_bert.sh; run_moo.sh's text
tables as they are) below.

  summarize_run.py --info RUN.jsonl [--ray RAY.jsonl] [--core CORE.jsonl --core-md CORE.md]
                   [--search SEARCH.jsonl --search-md SEARCH.md] [--moo MOO.jsonl --moo-md MOO.txt]
                   [--bert BERT.jsonl --bert-md BERT.md]
                   [--skipped "part: reason" ...]

Every figure is a median over the repetitions of one run, tune and its peer
measured interleaved (the machine is shared; only figures from one run compare).
Ratios are written as the peer's cost divided by tune's: "40x" means tune does
the same work 40 times faster. Stdlib only (Debian's python3 or any other).
"""
import argparse
import json
import os
import statistics
import sys

GOAL_RAY = 100.0  # the goal: tune's overhead per report at least 100x lower than Ray Tune's


def load(path):
    rows = []
    if path and os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    return rows


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def pick(rows, **kw):
    return [r for r in rows if all(r.get(k) == v for k, v in kw.items())]


def f(x, spec=".0f"):
    return "-" if x is None else format(x, spec)


def us(x):
    """A time in µs, in the unit that reads best."""
    if x is None:
        return "-"
    if x >= 1e6:
        return f"{x / 1e6:.2f} s"
    if x >= 1e3:
        return f"{x / 1e3:.1f} ms"
    if x >= 10:
        return f"{x:.0f} µs"
    return f"{x:.2f} µs"


def ratio(peer, tune):
    if peer is None or tune is None or tune <= 0:
        return "-"
    r = peer / tune
    return f"{r:,.0f}x" if r >= 10 else f"{r:.2f}x"


# ---- parts ------------------------------------------------------------------------

def core_rows(core):
    """Headline rows from bench/run_core.sh's lines."""
    out = []
    ver = next((r.get("optuna") for r in core if r.get("bench") == "optuna_info"), "?")
    for storage, opt_part, label in (("memory", "a", "in memory"), ("sqlite", "c", "SQLite store")):
        t = med([r["us_per_trial"] for r in pick(core, bench="tune", part="overhead",
                                                   storage=storage, reports_per_trial=1)])
        o = med([1e6 / r["trials_per_s"] for r in pick(core, bench="optuna", part=opt_part)])
        if t is not None or o is not None:
            out.append((f"Engine overhead per trial, {label} (trivial objective, random search)",
                        us(t), f"Optuna {ver} RandomSampler: {us(o)}", ratio(o, t), "-"))
    asha = {r["scheduler"]: r for r in pick(core, bench="tune", part="asha_curve")}
    sha = next((r for r in pick(core, bench="optuna", part="d")
                if r.get("sampler") == "RandomSampler" and r.get("pruner") ==
                "SuccessiveHalvingPruner"), None)
    hb = next((r for r in pick(core, bench="optuna", part="d")
               if r.get("sampler") == "RandomSampler" and r.get("pruner") == "HyperbandPruner"),
              None)
    if "asha" in asha:
        a = asha["asha"]
        full = asha.get("fifo", {}).get("steps", 13500)
        tune_txt = (f"{100 * a['steps'] / full:.1f}% of the steps, best trial's true final "
                    f"{a['best_true_final']:.4f}")
        peer = []
        for name, r in (("SuccessiveHalving", sha), ("Hyperband", hb)):
            if r:
                peer.append(f"{name}: {100 * r['steps_fraction_of_full']:.1f}%, "
                            f"{r['best_trial_true_final']:.4f}")
        out.append(("ASHA on the 27-step synthetic curve, 500 trials: steps used, quality "
                    "of the trial picked", tune_txt,
                    "Optuna " + "; ".join(peer) if peer else "not run",
                    ratio(sha["total_steps"], a["steps"]) + " (SH steps ÷ tune's)" if sha else "-",
                    "-"))
    return out


def bert_rows(bert):
    if not bert:
        return []
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import summarize_bert as sb  # noqa: E402 (the BERT summary's own selection rules)
    for r in bert:
        r.setdefault("_file", 0)
    infos = [r for r in bert if r.get("bench") == "run_info"]
    busy_max = max(float(i.get("busy_max", 0.15)) for i in infos) if infos else 0.15
    data = sb.collect(bert, busy_max)
    out = []
    for z in sb.SIZES:
        tb = pb = None
        for s, d in data.items():
            for eng in sb.ENGINES:
                rs = d["steps"].get((z, eng), [])
                v = sb.med_of(rs, "median_ms_per_step")
                if v is None:
                    continue
                mark = ", disturbed" if sb.disturbed(rs, d["busy_max"]) else ""
                if eng == "tune" and (tb is None or v < tb[0]):
                    tb = (v, s + mark, s)
                elif eng != "tune" and (pb is None or v < pb[0]):
                    pb = (v, f"{s}, {sb.TORCH_ENVS.get(eng[6:], eng[6:])}{mark}")
        if tb:
            goal = "-"
            if z in ("tiny", "mini") and pb:
                met = pb[0] / tb[0] >= 1 / sb.GOAL_RATIO
                goal = f"≥ {1 / sb.GOAL_RATIO:.0f}x: {'met' if met else 'NOT met'}"
            elif z == "small":
                d = data[tb[2]]
                fr = sb.peak_fractions(d, d["steps"][(z, "tune")])
                ok = sb.peak_goal_met(fr)
                if ok is not None:
                    goal = (f"≥ {sb.GOAL_PEAK:.0%} of SGEMM peak: {'met' if ok else 'NOT met'} "
                            f"({fr[0]:.0%} median ÷ median, {fr[1]:.0%} fastest ÷ fastest; "
                            f"median ÷ fastest {fr[2]:.0%})")
            out.append((f"BERT fine-tuning step, bert-{z}, batch 32 × 128, 2 threads "
                        "(best setting of each)", f"{tb[0]:.0f} ms ({tb[1]})",
                        f"PyTorch: {f(pb and pb[0])} ms ({pb[1] if pb else '-'})",
                        ratio(pb and pb[0], tb[0]), goal))
    return out


def search_rows(search):
    """TPE time per suggestion against Optuna's TPE, from bench/run_search.sh's lines:
    any line with a sampler/engine label and a per-suggestion time is matched by history."""
    tpe = {}
    for r in search:
        eng = r.get("engine") or r.get("bench")
        name = str(r.get("sampler") or r.get("searcher") or r.get("algorithm") or "").lower()
        if "tpe" not in name:
            continue
        ms = next((r[k] for k in ("ms_per_suggest", "ms_per_trial", "ms_per_suggestion",
                                  "sampling_ms_per_trial") if k in r), None)
        hist = r.get("history") or r.get("n_trials") or r.get("trials")
        if ms is None or eng is None:
            continue
        tpe.setdefault(hist, {}).setdefault("tune" if "tune" in str(eng) else "optuna",
                                             []).append(ms)
    out = []
    for hist in sorted(tpe, key=lambda h: (h is None, h)):
        d = tpe[hist]
        t, o = med(d.get("tune", [])), med(d.get("optuna", []))
        if t is not None and o is not None:
            out.append((f"TPE time per suggestion (history {hist})", f"{t:.3g} ms",
                        f"Optuna TPESampler: {o:.3g} ms", ratio(o, t), "-"))
    return out


def moo_rows(moo):
    """Several objectives: tune's NSGA-II and TPE against Optuna's sampler of the same kind,
    per problem: the ratio of median hypervolumes and of median times per suggestion."""
    peer = {"nsga2": "NSGAIISampler", "tpe": "TPESampler", "tpe-uniform": "TPESampler"}
    goal = {"nsga2": "time ≥ 100x, hypervolume ≥ Optuna's"}
    out = []
    for prob in dict.fromkeys(r["problem"] for r in moo):
        for t in dict.fromkeys(r["sampler"] for r in moo if r["bench"] == "tune"):
            mine = [r for r in moo if r["problem"] == prob and r["bench"] == "tune"
                    and r["sampler"] == t]
            theirs = [r for r in moo if r["problem"] == prob and r["bench"] == "optuna"
                      and r["sampler"] == peer.get(t)]
            if not mine or not theirs:
                continue
            hv_t, hv_o = med([r["hypervolume"] for r in mine]), med([r["hypervolume"] for r in theirs])
            ms_t = med([r["suggest_ms_median"] for r in mine])
            ms_o = med([r["suggest_ms_median"] for r in theirs])
            g = goal.get(t, "-")
            if g != "-":
                met = ms_o / ms_t >= 100 and hv_t >= hv_o
                g += ": met" if met else ": NOT met"
            out.append((f"{t} on {prob.upper()}, 200 evaluations, {len(mine)} seeds: median "
                        "hypervolume; time per suggestion",
                        f"{hv_t:.3f}; {ms_t:.3g} ms", f"Optuna {peer[t]}: {hv_o:.3f}; {ms_o:.3g} ms",
                        ratio(ms_o, ms_t), g))
    return out


def ray_summary(ray):
    """(headline rows, Markdown section) from bench/run's Ray part."""
    if not ray:
        return [], ""
    cmp_ = next(iter(pick(ray, bench="compare", part="asha_decisions")), None)
    ray_v = next((r.get("ray_version") for r in ray if r.get("bench") == "ray"), "?")
    lines, rows = [], []
    lines.append("## Ray Tune: the same ASHA sweep\n")
    lines.append(f"Ray Tune {ray_v} (PyPI, in a venv made by `bench/ray/setup_venv.sh`) and tune "
                 "run the same sweep: trials of the noise-free synthetic curve "
                 "(`trainers/synthetic.c`; bit-identical values in both), up to 10 reports each, "
                 "ASHA with grace 1, reduction factor 4, max_t 10 (rungs at 1 and 4), over lr "
                 "loguniform(1e-6, 1e-1), weight_decay uniform(0, 0.3), batch_size choice(16, 32, "
                 "64), warmup_steps randint(0, 11). tune: `bench/asha_sweep` (C API); Ray: "
                 "`bench/ray/ray_sweep.py` (function trainable, `tune.report`, Ray's "
                 "`ASHAScheduler`, `reuse_actors=True` unless noted, one CPU per trial, results "
                 "under a temporary `storage_path`). Overhead per report = (wall − time in the "
                 "objective) / reports; wall is `tune_study_run()` / `Tuner.fit()` alone (study "
                 "creation and `ray.init()` are listed apart).\n")
    lines.append("| engine | concurrency | storage | trials | reports | wall s | objective s "
                 "| overhead per report | Ray ÷ tune | runs |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    summary = {}
    for conc in sorted({r["concurrency"] for r in ray if r.get("part") == "ray_sweep"}):
        rr = [r for r in pick(ray, bench="ray", part="ray_sweep", concurrency=conc)
              if r.get("reuse_actors", True)]
        ray_us = med([r["us_per_report"] for r in rr])
        for storage in ("memory", "sqlite"):
            tt = pick(ray, bench="tune", part="ray_sweep", concurrency=conc, storage=storage)
            if not tt:
                continue
            t_us = med([r["us_per_report"] for r in tt])
            summary[(conc, storage)] = (t_us, ray_us)
            lines.append(f"| tune | {conc} | {'SQLite (experiment.db, WAL)' if storage == 'sqlite' else 'in memory'} "
                         f"| {tt[0]['trials']} | {f(med([r['reports'] for r in tt]))} "
                         f"| {f(med([r['wall_s'] for r in tt]), '.4f')} "
                         f"| {f(med([r['objective_s'] for r in tt]), '.5f')} | {us(t_us)} "
                         f"| {ratio(ray_us, t_us)} | {len(tt)} |")
        if rr:
            lines.append(f"| Ray Tune {ray_v} | {conc} | files under storage_path | {rr[0]['trials']} "
                         f"| {f(med([r['reports'] for r in rr]))} "
                         f"| {f(med([r['wall_s'] for r in rr]), '.2f')} "
                         f"| {f(med([r['objective_s'] for r in rr]), '.4f')} | {us(ray_us)} | 1x "
                         f"| {len(rr)} (ray.init {f(med([r['init_s'] for r in rr]), '.1f')} s) |")
    for r in pick(ray, bench="ray", part="ray_sweep", reuse_actors=False):
        lines.append(f"| Ray Tune {ray_v}, `reuse_actors=False` (Ray's default) | "
                     f"{r['concurrency']} | files under storage_path | {r['trials']} | "
                     f"{r['reports']} | {r['wall_s']:.2f} | {r['objective_s']:.4f} "
                     f"| {us(r['us_per_report'])} | - | 1 |")
    if cmp_:
        lines.append("")
        lines.append(f"**ASHA decisions, trials one at a time on the same configurations** "
                     f"(`max_concurrent_trials` 1 in both; Ray runs tune's {cmp_['trials_tune']} "
                     f"configurations in tune's trial order, `bench/ray/compare_decisions.py`): "
                     + ("**identical**: " if cmp_["identical"] else "**DIFFERENT**: ")
                     + f"{cmp_['reports_tune']} reports in tune, {cmp_['reports_ray']} in Ray; "
                     f"configurations differing {cmp_['config_diff']}, values differing "
                     f"{cmp_['value_diff']} (bit for bit), answers differing "
                     f"{cmp_['answer_diff']}, last iterations differing "
                     f"{cmp_['last_iteration_diff']}; Ray ran the trials in tune's order: "
                     f"{'yes' if cmp_['ray_in_tune_order'] else 'NO'}. Trials ending after 1, 4 "
                     f"and 10 reports: tune {json.dumps(cmp_['ended_at_tune'])}, Ray "
                     f"{json.dumps(cmp_['ended_at_ray'])}.")
        if cmp_["mismatches"]:
            lines.append("\nMismatches (first 50):\n")
            for m in cmp_["mismatches"]:
                lines.append(f"- `{json.dumps(m)}`")
    trials = next((r["trials"] for r in pick(ray, bench="tune", part="ray_sweep")), "?")
    for (conc, storage), (t_us, ray_us) in sorted(summary.items()):
        if ray_us is None:
            continue
        r = ray_us / t_us if t_us else None
        rows.append((f"Ray Tune sweep, {trials:,} trials × ≤ 10 reports, ASHA: overhead per "
                     f"report, {conc} at a time, tune "
                     f"{'in memory' if storage == 'memory' else 'with SQLite'}",
                     us(t_us), f"Ray Tune {ray_v}: {us(ray_us)}", ratio(ray_us, t_us),
                     f"≥ {GOAL_RAY:.0f}x: {'met' if r and r >= GOAL_RAY else 'NOT met'}"))
    if cmp_:
        rows.append((f"Ray Tune sweep: ASHA decisions on the same {cmp_['trials_tune']:,} "
                     "configurations, one at a time",
                     f"{cmp_['reports_tune']:,} reports", f"Ray: {cmp_['reports_ray']:,} reports",
                     "identical" if cmp_["identical"] else
                     f"{cmp_['mismatch_count']} mismatches",
                     f"identical: {'met' if cmp_['identical'] else 'NOT met'}"))
    return rows, "\n".join(lines) + "\n"


# ---- the document -----------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    for k in ("info", "ray", "core", "core-md", "search", "search-md", "moo", "moo-md", "bert",
              "bert-md"):
        ap.add_argument("--" + k)
    ap.add_argument("--skipped", action="append", default=[])
    a = ap.parse_args()
    info = (load(a.info) or [{}])[0]
    core, search, bert, ray = load(a.core), load(a.search), load(a.bert), load(a.ray)
    moo = load(a.moo)

    ray_rows, ray_md = ray_summary(ray)
    rows = core_rows(core) + search_rows(search) + moo_rows(moo) + bert_rows(bert) + ray_rows

    p = print
    p("# Benchmark results\n")
    p(f"Written by `bench/run` on {info.get('date', '?')} in {info.get('minutes', '?')} minutes "
      f"({info.get('mode', 'full')} run). Each comparison runs tune and its peer interleaved in "
      "the same run on the same machine; figures are medians over the repetitions. This machine "
      "is a shared 2-core VM: compare figures of one run, not across runs.\n")
    p(f"- machine: {info.get('cpu', '?')}; {info.get('cpus', '?')} CPUs "
      f"({info.get('cores', '?')} cores × {info.get('threads_per_core', '?')} threads per core); "
      f"{info.get('mem', '?')} memory; {info.get('os', '?')}, Linux {info.get('kernel', '?')}")
    if info.get("load"):
        p(f"- load average (1 min) when each part started, then at the end: {info['load']} "
          "(other processes' work; on an idle machine it stays below 1)")
    p(f"- {info.get('tune_version', 'tune ?')}, commit {info.get('commit', '?')}, buildtype "
      f"{info.get('buildtype', '?')}, {info.get('cc', '?')}; SQLite {info.get('sqlite', '?')}, "
      f"OpenBLAS {info.get('openblas', '?')}")
    p(f"- peers: Python {info.get('python', '?')} (bench/hf_setup_venv.sh, or PYTHON) with Optuna "
      f"{info.get('optuna', '?')}, PyTorch {info.get('torch', '?')}, NumPy "
      f"{info.get('numpy', '?')}; Ray {info.get('ray', '?')} on Python "
      f"{info.get('ray_python', '?')} (venv)")
    for s in a.skipped:
        p(f"- skipped: {s}")
    p("- not part of this run: the pretrained MiniLM fine-tuned by tune and by transformers "
      "(`bench/hf_reference.py`), in [RESULTS-pretrained.md](RESULTS-pretrained.md); the BERT "
      "step against PyTorch 2.15, in [RESULTS-bert-pypi.md](RESULTS-bert-pypi.md); the MiniLM "
      "sweep as Ray Tune + transformers and as `tune run` (`bench/run_hf_sweep.sh`) and tokens/s "
      "on real SST-2 batches (`bench/run_sst2_tokens.sh`), in [RESULTS-hf-sweep.md](RESULTS-hf-sweep.md)")
    p("\n## Summary\n")
    p("Ratio = the peer's cost ÷ tune's (how many times less tune spends).\n")
    p("| comparison | tune | peer | ratio | goal |")
    p("|---|---|---|---|---|")
    for r in rows:
        p("| " + " | ".join(r) + " |")
    if not rows:
        p("| (nothing measured) | | | | |")
    p("")
    if ray_md:
        p(ray_md)
    for title, md in (("Engine overhead and ASHA efficiency (`bench/run_core.sh`)", a.core_md),
                      ("Search: TPE and the other searchers (`bench/run_search.sh`)", a.search_md),
                      ("Several objectives (`bench/run_moo.sh`)", a.moo_md),
                      ("BERT training step (`bench/run_bert.sh`)", a.bert_md)):
        if md and os.path.exists(md) and os.path.getsize(md) > 0:
            p(f"## {title}\n")
            text = open(md).read().strip()
            # The parts' own titles become subsections of this document.
            text = "\n".join(("#" + l if l.startswith("## ") else l) for l in text.splitlines())
            if not md.endswith(".md"):  # plain text tables
                text = "```\n" + text + "\n```"
            p(text + "\n")


if __name__ == "__main__":
    main()
