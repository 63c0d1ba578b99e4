#!/usr/bin/env bash
# tune's NSGA-II and multi-objective TPE against Optuna 5.0's NSGAIISampler and
# TPESampler on ZDT1 and ZDT2 (30 variables, 200 evaluations), interleaved seed
# by seed in one run: bench/moo_bench and bench/optuna_moo.py, each seed's tune
# run right before Optuna's with the same seed and sampler. Prints, per problem
# and sampler, the median hypervolume (reference point (11, 11)) with its range
# over the seeds, and the median over seeds of each run's median time per
# suggestion (wall and CPU), side by side.
# Usage: bench/run_moo.sh [BUILD_DIR] (default: build). SEEDS (default 20),
# EVALS (200), SEARCHERS (default "nsga2 tpe": tune's searchers; "tpe-uniform"
# is TPE with the good trials weighted 1 each, as Optuna 5.0; each is paired
# with Optuna's sampler of its kind, run once per seed).
# Writes bench/out/moo-<time>.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -d "$build" ] || { echo "build first: meson setup $build && ninja -C $build"; exit 2; }
ninja -C "$build" bench/moo_bench >/dev/null
mb=$build/bench/moo_bench
py=${PYTHON:-$(bench/hf_setup_venv.sh)} # Optuna from PyPI (PYTHON= another)
$py -c "import optuna" 2>/dev/null || { echo "Optuna missing from $py (bench/hf_setup_venv.sh)"; exit 2; }
mkdir -p bench/out
out=bench/out/moo-$(date -u +%Y%m%dT%H%M%SZ).jsonl
seeds=${SEEDS:-20}
evals=${EVALS:-200}
searchers=${SEARCHERS:-nsga2 tpe}
for s in $(seq 0 $((seeds - 1))); do
    for p in zdt1 zdt2; do
        samplers=""
        for t in $searchers; do
            "$mb" --problem $p --searcher "$t" --evals "$evals" --seeds 1 --seed0 "$s" >>"$out"
            o=${t%-uniform}
            case " $samplers " in *" $o "*) continue ;; esac
            samplers="$samplers $o"
            $py bench/optuna_moo.py --problem $p --sampler "$o" --evals "$evals" --seeds 1 \
                --seed0 "$s" >>"$out"
        done
    done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores" >&2
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
peer = {"nsga2": "NSGAIISampler", "tpe": "TPESampler", "tpe-uniform": "TPESampler"}
print("%-5s %-24s %5s %12s %23s %14s %14s" % ("prob", "tool", "seeds", "median HV", "HV range",
                                              "ms/suggest", "CPU ms/sugg."))
def line(p, label, r):
    hv = [x["hypervolume"] for x in r]
    med = (statistics.median(hv), statistics.median(x["suggest_ms_median"] for x in r),
           statistics.median(x["suggest_cpu_ms_median"] for x in r))
    print("%-5s %-24s %5d %12.4f %11.4f - %-9.4f %14.4f %14.4f" % (
        p, label, len(r), med[0], min(hv), max(hv), med[1], med[2]))
    return med
for p in ("zdt1", "zdt2"):
    for t in dict.fromkeys(x["sampler"] for x in rows if x["bench"] == "tune"):
        mine = [x for x in rows if x["problem"] == p and x["bench"] == "tune" and x["sampler"] == t]
        theirs = [x for x in rows if x["problem"] == p and x["bench"] == "optuna"
                  and x["sampler"] == peer[t]]
        if not mine:
            continue
        a = line(p, "tune " + t, mine)
        if not theirs:
            continue
        b = line(p, "optuna " + peer[t], theirs)
        print("%-5s tune %s / optuna %s: median HV ratio %.4f, time per suggestion %.1fx faster "
              "(CPU %.1fx)" % (p, t, peer[t], a[0] / b[0], b[1] / a[1], b[2] / a[2]))
print("raw: %s" % sys.argv[1])
PY
