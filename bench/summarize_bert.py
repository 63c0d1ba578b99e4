#!/usr/bin/env python3
"""Summarise bench/run_bert.sh's JSON lines as Markdown (stdlib only).

Headline: each engine's best median over every core setting and thread
environment measured, with the issue's goals (tune <= 1/2 of PyTorch's best
time for bert-tiny and bert-mini; bert-small >= 80% of the SGEMM peak of the
same setting). Then per OpenBLAS core setting: its SGEMM peak, every engine's
step, and where tune's step goes per kernel.

Figures are medians over repetitions of each run's median ms/step (of a job
run more than once because other processes disturbed it, the least disturbed
attempt counts, and disturbed repetitions count only when there is no other);
"min" is
the fastest single step seen. The SGEMM peak of a setting is the best GFLOP/s
of any timed repetition at 1024^3 or 2048^3 (2 threads, tune's GEMM path).

bert-small's goal compares like with like, twice: the median step's GFLOP/s
with the SGEMM's median (the better shape's median over runs), and the
fastest step's with the fastest SGEMM repetition (the peak); the goal is met
when both reach 80%. The headline also shows the mixed ratio, median step
over the fastest SGEMM repetition: it is lower by the SGEMM's own spread
(on the shared 2-core reference VM its best runs 4-13% above its median), so
it measures that noise as much as the step's efficiency.
"other CPU" is how many cores' worth of CPU other processes (and the
hypervisor, as steal) used while the run timed: near 0 on an idle machine;
above ~0.1 the figures are disturbed (OpenMP barriers wait for descheduled
threads), for both engines alike.

Usage: summarize_bert.py bench/out/bert-<time>.jsonl [more.jsonl ...]
(several files are summarised together, e.g. a quick run and a supplement)
"""
import json
import statistics
import sys

SIZES = ["tiny", "mini", "small", "medium", "base"]
ENGINES = ("tune", "torch-nt1", "torch-default")
GOAL_RATIO = 0.5   # tune time <= 0.5 x PyTorch's best, tiny and mini
GOAL_PEAK = 0.8    # bert-small GFLOP/s >= 0.8 x SGEMM peak
TORCH_ENVS = {"nt1": "OPENBLAS_NUM_THREADS=1", "default": "out of the box"}


def load(paths):
    """All JSON lines of the files, each tagged with its file's index (runs of
    different files are different jobs even where their labels agree)."""
    rows = []
    for i, path in enumerate(paths):
        for line in open(path):
            line = line.strip()
            if line.startswith("{"):
                try:
                    r = json.loads(line)
                except json.JSONDecodeError:
                    continue
                r["_file"] = i
                rows.append(r)
    return rows


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec=".0f", none="-"):
    return none if x is None else format(x, spec)


def span(xs):
    xs = [x for x in xs if x is not None]
    return f" ({min(xs):.0f}-{max(xs):.0f})" if len(xs) > 1 else ""


def engine_of(r):
    if r.get("bench") == "tune_bert_train_step":
        return "tune"
    if r.get("bench") == "torch_bert_train_step":
        return "torch-" + (r.get("torch_env") or "?")
    return None


def label(eng):
    return "tune" if eng == "tune" else "PyTorch, " + TORCH_ENVS.get(eng[6:], eng[6:])


def least_disturbed(rows):
    """Of the attempts at one job (same setting, repetition, size and engine), the one
    during which other processes used the least CPU; other lines pass through."""
    best, order = {}, []
    for r in rows:
        eng = engine_of(r)
        if eng:
            key = (r["_file"], r.get("setting"), r.get("rep"), r.get("config"), eng)
        elif r.get("bench") == "tune_sgemm":
            key = (r["_file"], r.get("setting"), r.get("rep"), r["shape"], "sgemm")
        else:
            key = id(r)
        if key not in best:
            order.append(key)
            best[key] = r
        elif (r.get("foreign_cpu") or 0.0) < (best[key].get("foreign_cpu") or 0.0):
            best[key] = r
    return [best[k] for k in order]


def quiet(rs, busy_max):
    """The runs during which other processes stayed under busy_max cores, if there are
    any; else all of them (the table then says "disturbed")."""
    q = [r for r in rs if (r.get("foreign_cpu") or 0.0) <= busy_max]
    return q or rs


def disturbed(rs, busy_max):
    return all((r.get("foreign_cpu") or 0.0) > busy_max for r in rs)


def collect(rows, busy_max):
    """{setting: {"sgemm": [...], "peak": x, "steps": {(size, engine): [rows]}}}, in run order;
    of several runs of one job, only the undisturbed ones count when there are any."""
    out = {}
    for r in least_disturbed(rows):
        s = r.get("setting")
        if s is None:
            continue
        d = out.setdefault(s, {"sgemm": [], "steps": {}, "rows": []})
        d["rows"].append(r)
        if r.get("bench") == "tune_sgemm":
            d["sgemm"].append(r)
        eng = engine_of(r)
        if eng:
            d["steps"].setdefault((r["config"], eng), []).append(r)
    for d in out.values():
        d["steps"] = {k: quiet(v, busy_max) for k, v in d["steps"].items()}
        by_shape = {}
        for r in d["sgemm"]:
            by_shape.setdefault(r["shape"], []).append(r)
        by_shape = {k: quiet(v, busy_max) for k, v in by_shape.items()}
        d["sgemm"] = [r for v in by_shape.values() for r in v]
        d["peak"] = max((r["gflops_best"] for r in d["sgemm"]), default=None)
        d["peak_median"] = max((med_of(v, "gflops_median") for v in by_shape.values()),
                               default=None)
        d["busy_max"] = busy_max
    return out


def med_of(rs, key):
    return med([r.get(key) for r in rs])


def peak_fractions(d, xs):
    """tune's share of the setting's SGEMM peak: (median step / median SGEMM,
    fastest step / fastest SGEMM, median step / fastest SGEMM); None where
    unknown. xs: the tune rows of one size in setting d."""
    gf = med_of(xs, "achieved_gflops")
    gflop = med_of(xs, "gflop_per_step")
    fastest = min((r["min_ms_per_step"] for r in xs), default=None)
    peak, peak_med = d["peak"], d["peak_median"]
    return (gf / peak_med if gf and peak_med else None,
            gflop / (fastest / 1e3) / peak if gflop and fastest and peak else None,
            gf / peak if gf and peak else None)


def peak_goal_met(fracs):
    """bert-small's goal, judged like for like: both consistent ratios >= GOAL_PEAK."""
    if fracs[0] is None or fracs[1] is None:
        return None
    return min(fracs[0], fracs[1]) >= GOAL_PEAK


def headline(data, sizes):
    print("\n### Headline: each engine at its best measured setting\n")
    print("| size | tune ms/step (core setting) | PyTorch ms/step (core setting, threads) "
          "| tune / PyTorch | tune GFLOP/s | % of SGEMM peak (same setting): median / median, "
          "best / best (median / best) | goal | met |")
    print("|---|---|---|---|---|---|---|---|")
    for z in sizes:
        tbest = pbest = None
        for s, d in data.items():
            for eng in ENGINES:
                v = med_of(d["steps"].get((z, eng), []), "median_ms_per_step")
                if v is None:
                    continue
                mark = ", disturbed" if disturbed(d["steps"][(z, eng)], d["busy_max"]) else ""
                if eng == "tune" and (tbest is None or v < tbest[0]):
                    tbest = (v, s, mark)
                elif eng != "tune" and (pbest is None or v < pbest[0]):
                    pbest = (v, f"{s}, {TORCH_ENVS.get(eng[6:], eng[6:])}{mark}")
        if not tbest:
            continue
        d = data[tbest[1]]
        ratio = tbest[0] / pbest[0] if pbest else None
        xs = d["steps"][(z, "tune")]
        gf = med_of(xs, "achieved_gflops")
        frac_med, frac_best, frac = fracs = peak_fractions(d, xs)
        if z in ("tiny", "mini"):
            goal = f"<= {GOAL_RATIO:.2f}x PyTorch"
            met = "-" if ratio is None else ("yes" if ratio <= GOAL_RATIO else "no")
        elif z == "small":
            goal = f">= {GOAL_PEAK:.0%} of SGEMM peak"
            ok = peak_goal_met(fracs)
            met = "-" if ok is None else ("yes" if ok else "no")
        else:
            goal, met = "-", "-"
        print(f"| {z} | {tbest[0]:.0f} ({tbest[1]}{tbest[2]}) | "
              f"{fmt(pbest and pbest[0])} ({pbest[1] if pbest else '-'}) | "
              f"{fmt(ratio, '.2f')}x | {fmt(gf, '.1f')} | {fmt(frac_med and 100 * frac_med)}%, "
              f"{fmt(frac_best and 100 * frac_best)}% ({fmt(frac and 100 * frac)}%) | "
              f"{goal} | {met} |")


def setting_tables(s, d, sizes):
    cores = sorted({r.get("blas_core") for r in d["rows"] if r.get("blas_core")})
    env_ct = next((r["env"].get("OPENBLAS_CORETYPE") for r in d["rows"] if "env" in r), None)
    isas = sorted({r.get("kernels_isa") for r in d["rows"] if r.get("kernels_isa")})
    print(f"\n### Core setting `{s}`: OPENBLAS_CORETYPE={env_ct or '(unset)'}; "
          f"OpenBLAS core used: {', '.join(cores) or '?'}; "
          f"tune's element-wise kernels: {', '.join(isas) or '?'}\n")
    sg, peak = d["sgemm"], d["peak"]
    if sg:
        print("SGEMM, tune's GEMM path (2 OpenMP threads x single-threaded OpenBLAS):\n")
        print("| shape | GFLOP/s best | GFLOP/s median (median over runs) | other CPU | runs |")
        print("|---|---|---|---|---|")
        for shape in sorted({r["shape"] for r in sg}, key=lambda x: int(x.split("x")[0])):
            xs = [r for r in sg if r["shape"] == shape]
            dist = " (disturbed)" if disturbed(xs, d["busy_max"]) else ""
            print(f"| {shape}{dist} | {max(r['gflops_best'] for r in xs):.1f} | "
                  f"{med_of(xs, 'gflops_median'):.1f} | {fmt(med_of(xs, 'foreign_cpu'), '.2f')} "
                  f"| {len(xs)} |")
        print(f"\nSGEMM peak of this setting: **{peak:.1f} GFLOP/s**\n")
    print("| size | engine | median ms/step | min ms | fwd+loss / bwd / AdamW ms | tokens/s "
          "| GFLOP/s | % of SGEMM peak | peak RSS MiB | other CPU | runs x steps | tune / this |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for z in sizes:
        tune_ms = med_of(d["steps"].get((z, "tune"), []), "median_ms_per_step")
        for eng in ENGINES:
            xs = d["steps"].get((z, eng))
            if not xs:
                continue
            ms = [r["median_ms_per_step"] for r in xs]
            gf = med_of(xs, "achieved_gflops")
            split = " / ".join(fmt(med_of(xs, k)) for k in
                               ("median_ms_forward_loss", "median_ms_backward",
                                "median_ms_adamw_step"))
            pct = f"{100 * gf / peak:.0f}%" if peak and gf else "-"
            rss = med_of(xs, "max_rss_kib")
            steps = sorted({r.get("steps") for r in xs})
            dist = " (disturbed)" if disturbed(xs, d["busy_max"]) else ""
            print(f"| {z} | {label(eng)}{dist} | **{med(ms):.0f}**{span(ms)} | "
                  f"{min(r['min_ms_per_step'] for r in xs):.0f} | {split} | "
                  f"{med_of(xs, 'tokens_per_s'):,.0f} | {gf:.1f} | {pct} | "
                  f"{fmt(rss and rss / 1024)} | {fmt(med_of(xs, 'foreign_cpu'), '.2f')} | "
                  f"{len(xs)} x {'/'.join(str(x) for x in steps)} | "
                  f"{fmt(tune_ms and tune_ms / med(ms), '.2f') if eng != 'tune' else ''} |")
    breakdown(d, sizes)


def breakdown(d, sizes):
    """tune's step per kernel: ms per step (share of the step) [GFLOP/s], median over runs."""
    per = {}
    for z in sizes:
        xs = [r for r in d["steps"].get((z, "tune"), []) if r.get("kernels")]
        if not xs:
            continue
        agg = {}
        for r in xs:
            seen = {}
            for k in r["kernels"]:
                what = k["kernel"] + (f" [{k['role']}]" if k.get("role") else "")
                e = seen.setdefault((k["phase"], what), [0.0, 0.0, 0.0])
                e[0] += k["ms_per_step"]
                e[1] += k["share"]
                e[2] += k["ms_per_step"] * k.get("gflops", 0.0)  # MFLOP per step
            u = r["unaccounted_ms_per_step"]
            seen[("(all)", "outside kernels")] = [u, u / r["median_ms_per_step"], 0.0]
            for key, e in seen.items():
                agg.setdefault(key, []).append(e)
        per[z] = agg
    if not per:
        return
    keys = []
    for agg in per.values():
        keys += [k for k in agg if k not in keys]
    order = {"forward": 0, "backward": 1, "adamw": 2, "(all)": 3}
    ref = per[next(iter(per))]
    keys.sort(key=lambda k: (order.get(k[0], 9), -(med([e[0] for e in ref.get(k, [])]) or 0)))
    print("\ntune's step per kernel (wrapped kernel table): ms per step (share of the step) "
          "[GFLOP/s of GEMM-carrying kernels], median over runs:\n")
    print("| phase | kernel | " + " | ".join(per) + " |")
    print("|---|---|" + "---|" * len(per))
    for key in keys:
        cells = []
        for agg in per.values():
            es = agg.get(key)
            if not es:
                cells.append("-")
                continue
            ms = med([e[0] for e in es])
            gf = med([e[2] / e[0] if e[0] else 0.0 for e in es])
            cells.append(f"{ms:.1f} ({100 * med([e[1] for e in es]):.0f}%)" +
                         (f" [{gf:.0f}]" if gf else ""))
        print(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + " |")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows = load(sys.argv[1:])
    infos = [r for r in rows if r.get("bench") == "run_info"]
    info = dict(infos[0]) if infos else {}
    if len(infos) > 1:
        info["date"] = ", ".join(i.get("date", "?") for i in infos)
        info["commit"] = ", ".join(sorted({i.get("commit", "?") for i in infos}))
        info["plan"] = ", ".join(i.get("plan", "?") for i in infos)
    torch_ver = next((r.get("torch") for r in rows if r.get("bench") == "torch_info"), None)
    busy_max = max(float(i.get("busy_max", 0.15)) for i in infos) if infos else 0.15
    data = collect(rows, busy_max)
    sizes = [z for z in SIZES if any(k[0] == z for d in data.values() for k in d["steps"])]

    print("## BERT fine-tuning step: tune vs PyTorch (CPU)\n")
    print(f"- machine: {info.get('cpu', '?')}, {info.get('nproc', '?')} CPUs; "
          f"{info.get('date', '?')}; commit {info.get('commit', '?')}, "
          f"buildtype {info.get('buildtype', '?')}, {info.get('cc', '?')}; "
          f"plan {info.get('plan', '?')}")
    print(f"- batch 32, seq 128, fp32, dropout 0.1, vocab 30522, 2 labels, "
          f"{info.get('threads', 2)} threads; PyTorch {torch_ver or 'not run'} "
          "(../shared/bench/peers/torch_bert_step.py)")
    print("- step = forward + loss, backward, AdamW + zero_grad; tune also clips the "
          "gradient norm at 1.0 (the peer script does not clip)")
    print("- GFLOP/s: matmul FLOPs only, train step = 3 x forward, forward = "
          "T*L*(8H^2 + 4HI + 4SH) + B*(2H^2 + 2HC), T = B*S (the peer's count)")
    imp = med([r.get("rss_after_import_kib") for r in rows])
    if imp:
        print(f"- peak RSS is getrusage ru_maxrss of the process; PyTorch's includes "
              f"~{imp / 1024:.0f} MiB already resident right after `import torch`")
    kept = least_disturbed(rows)
    fc = [r["foreign_cpu"] for r in kept if r.get("foreign_cpu") is not None]
    if fc:
        print(f"- other CPU (cores used by other processes while a run timed): median "
              f"{med(fc):.2f}, max {max(fc):.2f}; an idle machine gives ~0. Runs above "
              f"{busy_max} are \"disturbed\": {len(rows) - len(kept)} such attempt(s) were re-run "
              "and left out, and where a job has undisturbed repetitions only those count")
    if not data:
        return
    headline(data, sizes)
    for s, d in data.items():
        setting_tables(s, d, sizes)


if __name__ == "__main__":
    main()
